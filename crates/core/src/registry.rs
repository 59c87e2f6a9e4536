//! [`Contracts`]: the set of loaded contracts, by name — the built-in ones embedded in the
//! binary from `contracts/`, plus any directories the user adds (a later one replaces a
//! contract of the same name, so a built-in can be customised).

use crate::contract::Contract;
use crate::error::ContractError;
use crate::manifest::{ContractFiles, load};
use include_dir::{Dir, include_dir};
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;

static BUILTIN: Dir<'static> = include_dir!("$CARGO_MANIFEST_DIR/../../contracts");

/// Loaded contracts by name.
#[derive(Debug, Clone, Default)]
pub struct Contracts {
    by_name: BTreeMap<String, Arc<Contract>>,
}

struct Embedded<'a> {
    name: &'a str,
    dir: &'a Dir<'a>,
}

impl ContractFiles for Embedded<'_> {
    fn origin(&self) -> String {
        format!("builtin:{}", self.name)
    }

    fn read(&self, file: &str) -> Result<Vec<u8>, std::io::Error> {
        let path = self.dir.path().join(file);
        self.dir
            .get_file(&path)
            .map(|f| f.contents().to_vec())
            .ok_or_else(|| {
                std::io::Error::new(std::io::ErrorKind::NotFound, "no such embedded file")
            })
    }
}

struct OnDisk<'a> {
    dir: &'a Path,
}

impl ContractFiles for OnDisk<'_> {
    fn origin(&self) -> String {
        self.dir.display().to_string()
    }

    fn read(&self, file: &str) -> Result<Vec<u8>, std::io::Error> {
        std::fs::read(self.dir.join(file))
    }
}

impl Contracts {
    /// No contracts.
    pub fn new() -> Self {
        Self::default()
    }

    /// The contracts built into this binary.
    pub fn builtin() -> Result<Self, ContractError> {
        let mut set = Self::new();
        // Like `load_dir`: a directory without a manifest (yet) is not a contract.
        for dir in BUILTIN
            .dirs()
            .filter(|d| d.get_file(d.path().join("manifest.toml")).is_some())
        {
            let name = dir
                .path()
                .file_name()
                .and_then(|n| n.to_str())
                .unwrap_or_default();
            set.insert(load(&Embedded { name, dir })?);
        }
        Ok(set)
    }

    /// Adds the contracts of `path`: either one contract (a directory with `manifest.toml`) or a
    /// directory whose subdirectories are contracts. Returns the names loaded.
    pub fn load_dir(&mut self, path: &Path) -> Result<Vec<String>, ContractError> {
        let unreadable = |source: std::io::Error| ContractError::Read {
            origin: path.display().to_string(),
            file: String::new(),
            source,
        };
        if path.join("manifest.toml").is_file() {
            let contract = load(&OnDisk { dir: path })?;
            let name = contract.name().to_owned();
            self.insert(contract);
            return Ok(vec![name]);
        }
        let mut dirs: Vec<PathBuf> = std::fs::read_dir(path)
            .map_err(unreadable)?
            .filter_map(Result::ok)
            .map(|entry| entry.path())
            .filter(|p| p.join("manifest.toml").is_file())
            .collect();
        dirs.sort();
        if dirs.is_empty() {
            return Err(ContractError::Invalid {
                origin: path.display().to_string(),
                message: "no manifest.toml here nor in any subdirectory".into(),
            });
        }
        let mut names = Vec::new();
        for dir in dirs {
            let contract = load(&OnDisk { dir: &dir })?;
            names.push(contract.name().to_owned());
            self.insert(contract);
        }
        Ok(names)
    }

    /// Adds (or replaces) one contract.
    pub fn insert(&mut self, contract: Contract) {
        self.by_name
            .insert(contract.name().to_owned(), Arc::new(contract));
    }

    /// The contract named `name`.
    pub fn get(&self, name: &str) -> Result<Arc<Contract>, ContractError> {
        self.by_name
            .get(name)
            .cloned()
            .ok_or_else(|| ContractError::Unknown {
                name: name.to_owned(),
                known: self.by_name.keys().cloned().collect::<Vec<_>>().join(", "),
            })
    }

    /// All contracts, ordered by name.
    pub fn iter(&self) -> impl Iterator<Item = &Arc<Contract>> {
        self.by_name.values()
    }

    /// Number of contracts.
    pub fn len(&self) -> usize {
        self.by_name.len()
    }

    /// True when there are none.
    pub fn is_empty(&self) -> bool {
        self.by_name.is_empty()
    }
}
