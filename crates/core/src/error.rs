//! [`ContractError`]: why a contract could not be loaded or found.

use crate::schema::SchemaError;

/// A contract that could not be loaded, or a name no loaded contract has.
#[derive(Debug, thiserror::Error)]
pub enum ContractError {
    /// A file the manifest names could not be read.
    #[error("{origin}: cannot read {file}: {source}")]
    Read {
        origin: String,
        file: String,
        source: std::io::Error,
    },
    /// `manifest.toml` is not valid TOML or has unknown/missing fields.
    #[error("{origin}: manifest.toml: {message}")]
    Manifest { origin: String, message: String },
    /// A schema or example file is not JSON.
    #[error("{origin}: {file} is not JSON: {message}")]
    NotJson {
        origin: String,
        file: String,
        message: String,
    },
    /// The JSON Schema does not compile.
    #[error("{origin}: {file}: {source}")]
    Schema {
        origin: String,
        file: String,
        source: SchemaError,
    },
    /// The manifest's content is wrong (name, version, kind, a rule, the example …).
    #[error("{origin}: {message}")]
    Invalid { origin: String, message: String },
    /// No loaded contract has this name.
    #[error("unknown contract {name:?} (known: {known})")]
    Unknown { name: String, known: String },
}
