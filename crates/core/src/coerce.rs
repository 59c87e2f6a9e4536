//! [`Coercion`]: declared, reported changes to a parsed reply that turn a form the application
//! accepts anyway into the contract's canonical form (e.g. suggestions given as plain strings
//! become `{"text": s}`). Off unless the manifest lists them; each one applied is a [`Repair`].

use crate::pointer::PathPattern;
use crate::repair_kind::RepairKind;
use crate::report::Repair;
use serde_json::{Map, Value};

/// One declared coercion.
#[derive(Debug, Clone, PartialEq)]
pub enum Coercion {
    /// A string at `path` becomes an object `{key: string}`.
    WrapString { path: PathPattern, key: String },
    /// In each object at `path`, member `from` is renamed `to` (only when `to` is absent).
    RenameKey {
        path: PathPattern,
        from: String,
        to: String,
    },
}

impl Coercion {
    /// The kind repairs it makes carry.
    pub fn kind(&self) -> RepairKind {
        match self {
            Self::WrapString { .. } => RepairKind::WrapString,
            Self::RenameKey { .. } => RepairKind::RenameKey,
        }
    }

    /// Where the coercion applies.
    pub(crate) fn path(&self) -> &PathPattern {
        match self {
            Self::WrapString { path, .. } | Self::RenameKey { path, .. } => path,
        }
    }

    fn applies_to(&self, value: &Value) -> bool {
        match self {
            Self::WrapString { .. } => value.is_string(),
            Self::RenameKey { from, to, .. } => value
                .as_object()
                .is_some_and(|map| map.contains_key(from) && !map.contains_key(to)),
        }
    }

    /// Applies the coercion everywhere it matches in `value`, reporting each change.
    pub fn apply(&self, value: &mut Value, repairs: &mut Vec<Repair>) {
        // Collect first (the matcher borrows immutably), then change each place.
        let mut places = Vec::new();
        self.path().for_each_match(value, "", |pointer, v| {
            if self.applies_to(v) {
                places.push(pointer.to_owned());
            }
        });
        for pointer in places {
            let Some(target) = value.pointer_mut(&pointer) else {
                continue;
            };
            match self {
                Self::WrapString { key, .. } => {
                    let text = target.take();
                    let mut object = Map::new();
                    object.insert(key.clone(), text);
                    *target = Value::Object(object);
                    repairs.push(Repair::at(
                        self.kind(),
                        &pointer,
                        format!("wrapped the string in an object as \"{key}\""),
                    ));
                }
                Self::RenameKey { from, to, .. } => {
                    if let Value::Object(map) = target
                        && let Some(v) = map.remove(from)
                    {
                        map.insert(to.clone(), v);
                        repairs.push(Repair::at(
                            self.kind(),
                            &pointer,
                            format!("renamed \"{from}\" to \"{to}\""),
                        ));
                    }
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn wrap_string_turns_plain_strings_into_objects() {
        let c = Coercion::WrapString {
            path: PathPattern::absolute("/s/*").unwrap(),
            key: "text".into(),
        };
        let mut v = json!({"s": ["a", {"text": "b"}, 3]});
        let mut repairs = Vec::new();
        c.apply(&mut v, &mut repairs);
        assert_eq!(v, json!({"s": [{"text": "a"}, {"text": "b"}, 3]}));
        assert_eq!(repairs.len(), 1);
        assert_eq!(repairs[0].kind.as_str(), "wrap_string");
        assert_eq!(repairs[0].path.as_deref(), Some("/s/0"));
    }

    #[test]
    fn rename_key_keeps_an_existing_target() {
        let c = Coercion::RenameKey {
            path: PathPattern::absolute("/s/*").unwrap(),
            from: "label".into(),
            to: "text".into(),
        };
        let mut v = json!({"s": [{"label": "a"}, {"label": "b", "text": "c"}]});
        let mut repairs = Vec::new();
        c.apply(&mut v, &mut repairs);
        assert_eq!(
            v,
            json!({"s": [{"text": "a"}, {"label": "b", "text": "c"}]})
        );
        assert_eq!(repairs.len(), 1);
    }

    #[test]
    fn nothing_matches_nothing_changes() {
        let c = Coercion::WrapString {
            path: PathPattern::absolute("/s/*").unwrap(),
            key: "text".into(),
        };
        let mut v = json!({"t": ["a"]});
        let mut repairs = Vec::new();
        c.apply(&mut v, &mut repairs);
        assert_eq!(v, json!({"t": ["a"]}));
        assert!(repairs.is_empty());
    }
}
