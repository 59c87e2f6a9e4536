//! [`Manifest`]: the raw, serde-read form of a contract's `manifest.toml`, and [`load`], which
//! turns it and the files it names into a validated [`Contract`].
//!
//! ```toml
//! name = "selfhelp-response"        # lowercase letters, digits, '-', '_', '.'
//! version = "1.0.0"                 # semantic version
//! kind = "json"                   # or "xml" (then [xml] root = "ElementName"), "markers"
//!                                   # (then [markers], see crate::markers::manifest), or "text"
//!                                   # (with [cards] tool = false|true for question cards)
//! description = "…"
//! schema = "schema.json"            # the root JSON Schema
//! schemas = ["defs.json"]           # other files `$ref` may point to (optional)
//! example = "example.json"          # one valid reply, shown in the prompt (optional)
//! instructions = "…"                # contract-specific guidance for the prompt (optional)
//! max_bytes = 4194304               # largest reply accepted (optional)
//! formats = "assert"                # or "annotate": `format` checked or not (optional)
//!
//! [state]                           # what the conversation keeps from valid replies (optional)
//! kind = "topic"                    # spec/05 topic state, fed into the next <llmQuery>
//!
//! [[rules]]
//! kind = "unique"                   # or "less_than", "implies", "expr"
//! path = "/content/form/fields/*/id"
//!
//! [[rules]]
//! kind = "expr"                     # a CEL expression (crate::expr)
//! name = "end-after-start"
//! path = "/bookings/*"
//! expr = "this.end > this.start"
//! message = "end {this.end} must come after start {this.start}"
//!
//! [[coercions]]
//! kind = "wrap_string"              # or "rename_key"
//! path = "/content/suggestions/*"
//! key = "text"
//!
//! [fallback]                        # the reply when attempts run out (optional)
//! reply = "fallback.json"           # a valid reply of the contract, checked at load (an
//!                                   # xml contract may name an .xml document)
//! # or, for markers and text contracts: the last attempt's text, nothing structured
//! # kind = "last_text"
//! # sentence = "Sorry, …"           # the text when no attempt's text can be read
//! [[fallback.carry]]                # copied from the attempts: the most severe one wins
//! path = "/safety"
//! rank = "/safety/danger_level"
//! order = ["warning", "critical", "emergency"]
//! ```

use crate::coerce::Coercion;
use crate::contract::{Contract, Kind, Limits};
use crate::error::ContractError;
use crate::fallback::{Carry, Fallback, FallbackReply};
use crate::pointer::PathPattern;
use crate::rules::{Condition, DeclaredRule};
use crate::schema::{Formats, Schema, SchemaOptions};
use serde::Deserialize;
use serde_json::Value;

/// The manifest as written.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Manifest {
    name: String,
    version: String,
    kind: String,
    #[serde(default)]
    description: String,
    schema: String,
    #[serde(default)]
    schemas: Vec<String>,
    example: Option<String>,
    #[serde(default)]
    instructions: String,
    max_bytes: Option<usize>,
    /// Whether the schemas' `format` keywords are checked (default: asserted).
    #[serde(default)]
    formats: Formats,
    #[serde(default)]
    rules: Vec<RuleSpec>,
    #[serde(default)]
    coercions: Vec<CoercionSpec>,
    fallback: Option<FallbackSpec>,
    xml: Option<XmlManifest>,
    markers: Option<crate::markers::manifest::MarkersManifest>,
    state: Option<StateManifest>,
    cards: Option<CardsManifest>,
}

/// `[cards]` of a `text` contract: question cards in discovery and clarification modes.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct CardsManifest {
    /// Also offer the `present_question` tool to providers with tool use.
    #[serde(default)]
    tool: bool,
}

/// `[state]`: what the conversation keeps from valid replies.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct StateManifest {
    /// `topic`: the topic state of spec/05 (an `xml` contract with `topic-analysis`'s shape).
    kind: String,
}

/// `[xml]` of an `xml` contract.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct XmlManifest {
    /// The root element's name.
    root: String,
}

/// `[fallback]`: the reply when the attempts run out.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct FallbackSpec {
    /// Where the reply comes from (default: a template file).
    #[serde(default)]
    kind: FallbackKindSpec,
    /// `template`: the file holding the reply (JSON; an `.xml` document for an xml contract).
    reply: Option<String>,
    /// `last_text`: the reply's text when no attempt left any.
    sentence: Option<String>,
    #[serde(default)]
    carry: Vec<CarrySpec>,
}

/// `[fallback] kind`.
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "snake_case")]
enum FallbackKindSpec {
    /// The reply in the file `reply`.
    #[default]
    Template,
    /// The last readable attempt's text, nothing structured (`markers` and `text` contracts).
    LastText,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct CarrySpec {
    path: String,
    rank: Option<String>,
    #[serde(default)]
    order: Vec<toml::Value>,
}

#[derive(Debug, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case", deny_unknown_fields)]
enum RuleSpec {
    Unique {
        path: String,
        scope: Option<String>,
        message: Option<String>,
    },
    LessThan {
        scope: String,
        lesser: String,
        greater: String,
        #[serde(default)]
        allow_equal: bool,
        message: Option<String>,
    },
    Implies {
        scope: Option<String>,
        when: ConditionSpec,
        then: ConditionSpec,
        message: Option<String>,
    },
    Expr {
        name: String,
        #[serde(default)]
        path: String,
        expr: String,
        message: Option<String>,
    },
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct ConditionSpec {
    path: String,
    equals: Option<toml::Value>,
    one_of: Option<Vec<toml::Value>>,
    present: Option<bool>,
}

#[derive(Debug, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case", deny_unknown_fields)]
enum CoercionSpec {
    WrapString {
        path: String,
        key: String,
    },
    RenameKey {
        path: String,
        from: String,
        to: String,
    },
}

/// Reads files of one contract (a directory on disk, or one embedded in the binary).
pub trait ContractFiles {
    /// Where the contract comes from, for messages (`builtin:NAME` or a directory path).
    fn origin(&self) -> String;
    /// The bytes of `file`, a path relative to the contract's directory.
    fn read(&self, file: &str) -> Result<Vec<u8>, std::io::Error>;
}

/// The default and largest reply size accepted: 4 MiB unless the manifest says otherwise.
pub const DEFAULT_MAX_BYTES: usize = 4 * 1024 * 1024;

/// Reads `manifest.toml` and everything it names from `files`, and builds the contract.
pub fn load(files: &dyn ContractFiles) -> Result<Contract, ContractError> {
    let origin = files.origin();
    let text = read_text(files, "manifest.toml")?;
    let manifest: Manifest = toml::from_str(&text).map_err(|e| ContractError::Manifest {
        origin: origin.clone(),
        message: e.to_string(),
    })?;
    let invalid = |message: String| ContractError::Invalid {
        origin: origin.clone(),
        message,
    };

    if !valid_name(&manifest.name) {
        return Err(invalid(format!(
            "name {:?} must be 1-64 characters of lowercase letters, digits, '-', '_' or '.'",
            manifest.name
        )));
    }
    let version = semver::Version::parse(&manifest.version).map_err(|e| {
        invalid(format!(
            "version {:?} is not a semantic version: {e}",
            manifest.version
        ))
    })?;
    let kind = match manifest.kind.as_str() {
        "json" => Kind::Json,
        "xml" => Kind::Xml,
        "markers" => Kind::Markers,
        "text" => Kind::Text,
        other => {
            return Err(invalid(format!(
                "kind {other:?} is not supported by this build (known kinds: json, xml, markers, text)"
            )));
        }
    };
    let xml = match (kind, &manifest.xml) {
        (Kind::Xml, Some(spec)) => {
            if !valid_xml_name(&spec.root) {
                return Err(invalid(format!(
                    "[xml] root {:?} is not an XML element name",
                    spec.root
                )));
            }
            Some(spec.root.clone())
        }
        (Kind::Xml, None) => {
            return Err(invalid(
                "an xml contract needs [xml] root = \"ElementName\"".into(),
            ));
        }
        (_, Some(_)) => return Err(invalid("[xml] is only for kind = \"xml\"".into())),
        (_, None) => None,
    };
    let schema_options = SchemaOptions {
        formats: manifest.formats,
        ..SchemaOptions::default()
    };
    let markers = match (kind, manifest.markers) {
        (Kind::Markers, spec) => Some(crate::markers::manifest::load(
            spec.unwrap_or_default(),
            files,
            &schema_options,
        )?),
        (_, Some(_)) => {
            return Err(invalid("[markers] is only for kind = \"markers\"".into()));
        }
        (_, None) => None,
    };

    let cards = match (kind, &manifest.cards) {
        (Kind::Text, Some(spec)) => Some(crate::contract::CardSpec { tool: spec.tool }),
        (_, Some(_)) => return Err(invalid("[cards] is only for kind = \"text\"".into())),
        (_, None) => None,
    };
    let mut resources = Vec::new();
    for file in &manifest.schemas {
        resources.push((format!("json-schema:///{file}"), read_json(files, file)?));
    }
    let (root, schema_text) = read_json_text(files, &manifest.schema)?;
    let schema = Schema::compile_with(root, &resources, &schema_options).map_err(|source| {
        ContractError::Schema {
            origin: origin.clone(),
            file: manifest.schema.clone(),
            source,
        }
    })?;
    let mut warnings = crate::contract::warnings_of(&manifest.schema, &schema);
    if let Some(spec) = &markers {
        for payload in &spec.payloads {
            let file = format!("payload {}", payload.name);
            warnings.extend(crate::contract::warnings_of(&file, &payload.schema));
        }
    }

    let rules = manifest
        .rules
        .into_iter()
        .map(|r| rule(r).map_err(&invalid))
        .collect::<Result<Vec<_>, _>>()?;
    let mut expr_names = std::collections::HashSet::new();
    for declared in &rules {
        if let DeclaredRule::Expr(e) = declared
            && !expr_names.insert(e.name())
        {
            return Err(invalid(format!(
                "two expr rules are named {:?}; names must be unique",
                e.name()
            )));
        }
    }
    let coercions = manifest
        .coercions
        .into_iter()
        .map(|c| coercion(c).map_err(&invalid))
        .collect::<Result<Vec<_>, _>>()?;
    let xml = xml.map(|root| crate::contract::XmlSpec {
        root,
        shape: crate::xml::Shape::of(schema.raw()),
    });
    let (example, example_text) = match (&manifest.example, &xml) {
        (Some(file), None) if markers.is_some() => {
            let text = read_text(files, file)?;
            let spec = markers
                .as_ref()
                .ok_or_else(|| invalid("no [markers]".into()))?;
            let read = crate::markers::read(&text, spec, &crate::Context::new());
            if let Some(first) = read.violations.first() {
                return Err(invalid(format!(
                    "the example {file} cannot be read: {}",
                    first.message
                )));
            }
            (Some(read.value), Some(text.trim().to_owned()))
        }
        (Some(file), None) if kind == Kind::Text => {
            let text = read_text(files, file)?;
            let context = crate::Context::new().with("mode", "discovery");
            let value = crate::text::read(&text, cards.is_some(), &context);
            (Some(value), Some(text.trim().to_owned()))
        }
        (Some(file), None) => {
            let (value, text) = read_json_text(files, file)?;
            (Some(value), Some(text))
        }
        (Some(file), Some(spec)) => {
            let text = read_text(files, file)?;
            let read = crate::xml::read(&text, &spec.root, &spec.shape);
            match (read.value, read.violations.first()) {
                (Some(value), None) => (Some(value), Some(text.trim().to_owned())),
                (_, first) => {
                    return Err(invalid(format!(
                        "the example {file} cannot be read: {}",
                        first.map_or("no value", |v| v.message.as_str())
                    )));
                }
            }
        }
        (None, _) => (None, None),
    };
    let state = match manifest.state.as_ref().map(|s| s.kind.as_str()) {
        None => None,
        Some("topic") if kind == Kind::Xml => Some(crate::contract::StateKind::Topic),
        Some(other) => {
            return Err(invalid(format!(
                "[state] kind {other:?} is not supported (known: \"topic\", for xml contracts)"
            )));
        }
    };
    let fallback = match manifest.fallback {
        Some(spec) => Some(fallback(files, spec, kind, xml.as_ref()).map_err(&invalid)?),
        None => None,
    };
    let limits = Limits {
        max_bytes: manifest.max_bytes.unwrap_or(DEFAULT_MAX_BYTES),
    };
    if limits.max_bytes == 0 {
        return Err(invalid("max_bytes must be greater than 0".into()));
    }

    let contract = Contract {
        name: manifest.name,
        version,
        kind,
        description: manifest.description,
        origin: origin.clone(),
        schema,
        rules,
        coercions,
        example,
        schema_text,
        example_text,
        fallback,
        guidance: manifest.instructions.trim().to_owned(),
        limits,
        xml,
        markers,
        state,
        cards,
        stream_index: std::sync::OnceLock::new(),
        instructions: std::sync::OnceLock::new(),
        warnings,
    };
    if let Some(example) = &contract.example {
        let broken = contract.validate(example);
        if let Some(first) = broken.first() {
            return Err(invalid(format!(
                "the example does not meet the contract: at {} ({}): {}",
                crate::schema::display_pointer(&first.path),
                first.rule,
                first.message
            )));
        }
    }
    // The fallback meets the contract: alone, and built from the example (a last text).
    let example: Vec<&Value> = contract.example.iter().collect();
    for attempts in [&[][..], &example[..]] {
        let Some(reply) = contract.fallback(attempts) else {
            break;
        };
        let broken = contract.validate(&reply);
        if let Some(first) = broken.first() {
            return Err(invalid(format!(
                "the fallback reply does not meet the contract: at {} ({}): {}",
                crate::schema::display_pointer(&first.path),
                first.rule,
                first.message
            )));
        }
    }
    Ok(contract)
}

fn fallback(
    files: &dyn ContractFiles,
    spec: FallbackSpec,
    kind: Kind,
    xml: Option<&crate::contract::XmlSpec>,
) -> Result<Fallback, String> {
    let reply = match (spec.kind, spec.reply, spec.sentence) {
        (FallbackKindSpec::Template, Some(file), None) => match xml {
            Some(xml) if file.ends_with(".xml") => {
                let text = read_text(files, &file).map_err(|e| e.to_string())?;
                let read = crate::xml::read(&text, &xml.root, &xml.shape);
                match (read.value, read.violations.first()) {
                    (Some(value), None) => FallbackReply::Template(value),
                    (_, first) => {
                        return Err(format!(
                            "the fallback reply {file} cannot be read: {}",
                            first.map_or("no value", |v| v.message.as_str())
                        ));
                    }
                }
            }
            _ => FallbackReply::Template(read_json(files, &file).map_err(|e| e.to_string())?),
        },
        (FallbackKindSpec::LastText, None, Some(sentence))
            if matches!(kind, Kind::Markers | Kind::Text) =>
        {
            let sentence = sentence.trim();
            if sentence.is_empty() {
                return Err("[fallback] sentence must not be empty".into());
            }
            FallbackReply::LastText {
                sentence: sentence.to_owned(),
            }
        }
        (FallbackKindSpec::LastText, None, Some(_)) => {
            return Err(
                "[fallback] kind = \"last_text\" is for markers and text contracts only".into(),
            );
        }
        (FallbackKindSpec::Template, _, _) => {
            return Err("[fallback] needs reply = \"FILE\" (and no sentence)".into());
        }
        (FallbackKindSpec::LastText, _, _) => {
            return Err(
                "[fallback] kind = \"last_text\" needs sentence = \"…\" (and no reply)".into(),
            );
        }
    };
    let mut carry = Vec::new();
    for c in spec.carry {
        crate::fallback::check_path(&c.path)?;
        if let Some(rank) = &c.rank {
            crate::fallback::check_path(rank)?;
        }
        let order = c
            .order
            .into_iter()
            .map(|v| serde_json::to_value(v).map_err(|e| e.to_string()))
            .collect::<Result<Vec<_>, _>>()?;
        carry.push(Carry {
            path: c.path,
            rank: c.rank,
            order,
        });
    }
    Ok(Fallback { reply, carry })
}

fn valid_name(name: &str) -> bool {
    (1..=64).contains(&name.len())
        && name.bytes().all(|b| {
            b.is_ascii_lowercase() || b.is_ascii_digit() || matches!(b, b'-' | b'_' | b'.')
        })
        && name.as_bytes()[0].is_ascii_alphanumeric()
}

/// Only plain relative paths inside the contract's directory may be named.
fn check_file_name(files: &dyn ContractFiles, file: &str) -> Result<(), ContractError> {
    let bad = file.is_empty()
        || file.starts_with('/')
        || file.contains('\\')
        || file.split('/').any(|part| part == ".." || part.is_empty());
    if bad {
        return Err(ContractError::Invalid {
            origin: files.origin(),
            message: format!(
                "file name {file:?} must be a relative path inside the contract's directory"
            ),
        });
    }
    Ok(())
}

pub(crate) fn read_text(files: &dyn ContractFiles, file: &str) -> Result<String, ContractError> {
    check_file_name(files, file)?;
    let bytes = files.read(file).map_err(|source| ContractError::Read {
        origin: files.origin(),
        file: file.to_owned(),
        source,
    })?;
    String::from_utf8(bytes).map_err(|e| ContractError::Invalid {
        origin: files.origin(),
        message: format!(
            "{file} is not UTF-8 text (invalid byte at offset {})",
            e.utf8_error().valid_up_to()
        ),
    })
}

/// An XML element name without a namespace prefix: a letter or `_`, then letters, digits,
/// `-`, `_`, `.`.
fn valid_xml_name(name: &str) -> bool {
    let mut chars = name.chars();
    chars
        .next()
        .is_some_and(|c| c.is_ascii_alphabetic() || c == '_')
        && chars.all(|c| c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.'))
}

fn read_json(files: &dyn ContractFiles, file: &str) -> Result<Value, ContractError> {
    read_json_text(files, file).map(|(value, _)| value)
}

/// The parsed file and its compact text in the author's key order.
pub(crate) fn read_json_text(
    files: &dyn ContractFiles,
    file: &str,
) -> Result<(Value, String), ContractError> {
    let text = read_text(files, file)?;
    let value = serde_json::from_str(&text).map_err(|e| ContractError::NotJson {
        origin: files.origin(),
        file: file.to_owned(),
        message: e.to_string(),
    })?;
    Ok((value, crate::instructions::minify(&text)))
}

fn pattern(source: &str, absolute: bool) -> Result<PathPattern, String> {
    let parsed = if absolute {
        PathPattern::absolute(source)
    } else {
        PathPattern::relative(source)
    };
    parsed.map_err(|e| e.to_string())
}

fn rule(spec: RuleSpec) -> Result<DeclaredRule, String> {
    Ok(match spec {
        RuleSpec::Expr {
            name,
            path,
            expr,
            message,
        } => DeclaredRule::Expr(Box::new(crate::expr::ExprRule::compile(
            &name,
            &path,
            &expr,
            message.as_deref(),
        )?)),
        RuleSpec::Unique {
            path,
            scope,
            message,
        } => DeclaredRule::Unique {
            path: pattern(&path, scope.is_none())?,
            scope: scope.as_deref().map(|s| pattern(s, true)).transpose()?,
            note: message,
        },
        RuleSpec::LessThan {
            scope,
            lesser,
            greater,
            allow_equal,
            message,
        } => {
            if lesser.is_empty() || greater.is_empty() || lesser == greater {
                return Err(format!(
                    "less_than needs two different member names, got {lesser:?} and {greater:?}"
                ));
            }
            DeclaredRule::LessThan {
                scope: pattern(&scope, true)?,
                lesser,
                greater,
                allow_equal,
                note: message,
            }
        }
        RuleSpec::Implies {
            scope,
            when,
            then,
            message,
        } => {
            let absolute = scope.is_none();
            let (when_path, when) = condition(when, absolute)?;
            let (then_path, then) = condition(then, absolute)?;
            DeclaredRule::Implies {
                scope: scope.as_deref().map(|s| pattern(s, true)).transpose()?,
                when_path,
                when,
                then_path,
                then,
                note: message,
            }
        }
    })
}

fn condition(spec: ConditionSpec, absolute: bool) -> Result<(PathPattern, Condition), String> {
    let path = pattern(&spec.path, absolute)?;
    if path.as_str().split('/').any(|s| s == "*") {
        return Err(format!(
            "condition path {:?} must name one place (no '*'); use a scope",
            spec.path
        ));
    }
    let to_json = |v: toml::Value| serde_json::to_value(v).map_err(|e| e.to_string());
    let condition = match (spec.equals, spec.one_of, spec.present) {
        (Some(v), None, None) => Condition::Equals(to_json(v)?),
        (None, Some(list), None) if !list.is_empty() => {
            Condition::OneOf(list.into_iter().map(to_json).collect::<Result<_, _>>()?)
        }
        (None, None, Some(present)) => Condition::Present(present),
        _ => {
            return Err(format!(
                "condition on {:?} must set exactly one of equals, one_of (non-empty) or present",
                spec.path
            ));
        }
    };
    Ok((path, condition))
}

fn coercion(spec: CoercionSpec) -> Result<Coercion, String> {
    Ok(match spec {
        CoercionSpec::WrapString { path, key } => {
            if key.is_empty() {
                return Err("wrap_string needs a non-empty key".into());
            }
            Coercion::WrapString {
                path: pattern(&path, true)?,
                key,
            }
        }
        CoercionSpec::RenameKey { path, from, to } => {
            if from.is_empty() || to.is_empty() || from == to {
                return Err(format!(
                    "rename_key needs two different non-empty names, got {from:?} and {to:?}"
                ));
            }
            Coercion::RenameKey {
                path: pattern(&path, true)?,
                from,
                to,
            }
        }
    })
}
