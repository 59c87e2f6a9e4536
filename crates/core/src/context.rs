//! [`Context`]: the per-request facts a contract may depend on (`page` for marker contracts,
//! `mode` for question cards, anything else the application passes as `KEY=VALUE`), and the
//! application's state (`app_state`, any JSON value) when it sent one — what expression rules
//! read as `context.app_state`.

use serde::{Deserialize, Serialize};
use serde_json::Value;
use std::collections::BTreeMap;
use std::sync::Arc;

/// Per-request facts, as string pairs, ordered so that everything built from them is
/// deterministic.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(transparent)]
pub struct Context {
    values: BTreeMap<String, String>,
    /// The application's state; not part of the pairs' serialised form.
    #[serde(skip)]
    app_state: Option<Arc<Value>>,
}

/// A `KEY=VALUE` pair that could not be read.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("context entry {0:?} must look like KEY=VALUE with a non-empty KEY")]
pub struct ContextPairError(pub String);

impl Context {
    /// An empty context.
    pub fn new() -> Self {
        Self::default()
    }

    /// Sets `key` to `value`, replacing an earlier value.
    pub fn insert(&mut self, key: impl Into<String>, value: impl Into<String>) {
        self.values.insert(key.into(), value.into());
    }

    /// Builder form of [`Context::insert`].
    #[must_use]
    pub fn with(mut self, key: impl Into<String>, value: impl Into<String>) -> Self {
        self.insert(key, value);
        self
    }

    /// Sets the application's state.
    pub fn set_app_state(&mut self, state: Value) {
        self.app_state = Some(Arc::new(state));
    }

    /// Builder form of [`Context::set_app_state`].
    #[must_use]
    pub fn with_app_state(mut self, state: Value) -> Self {
        self.set_app_state(state);
        self
    }

    /// The application's state, if it sent one.
    pub fn app_state(&self) -> Option<&Value> {
        self.app_state.as_deref()
    }

    /// The value of `key`, if set.
    pub fn get(&self, key: &str) -> Option<&str> {
        self.values.get(key).map(String::as_str)
    }

    /// Reads one `KEY=VALUE` pair (the value may contain `=`).
    pub fn insert_pair(&mut self, pair: &str) -> Result<(), ContextPairError> {
        match pair.split_once('=') {
            Some((key, value)) if !key.trim().is_empty() => {
                self.insert(key.trim(), value);
                Ok(())
            }
            _ => Err(ContextPairError(pair.to_owned())),
        }
    }

    /// All pairs, ordered by key.
    pub fn iter(&self) -> impl Iterator<Item = (&str, &str)> {
        self.values.iter().map(|(k, v)| (k.as_str(), v.as_str()))
    }

    /// True when no pair is set (the application's state aside).
    pub fn is_empty(&self) -> bool {
        self.values.is_empty()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pairs_are_read_and_validated() {
        let mut c = Context::new();
        c.insert_pair("page=table_view").unwrap();
        c.insert_pair("expr=a=b").unwrap();
        assert_eq!(c.get("page"), Some("table_view"));
        assert_eq!(c.get("expr"), Some("a=b"));
        assert!(c.insert_pair("novalue").is_err());
        assert!(c.insert_pair("=x").is_err());
    }
}
