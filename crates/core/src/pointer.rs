//! [`PathPattern`]: a JSON pointer whose segments may be `*`, used by declared rules and
//! coercions to name places in a reply (`/content/form/fields/*/id`).
//!
//! A pattern is absolute (`/a/*/b`, matched from the root) or relative (`options/*/value`,
//! matched from a scope that another pattern found). `*` matches every element of an array and
//! every member of an object; `~0` and `~1` escape `~` and `/` as in RFC 6901.

use serde_json::Value;
use std::fmt;

/// One segment of a [`PathPattern`].
#[derive(Debug, Clone, PartialEq, Eq)]
enum Segment {
    Key(String),
    Any,
}

/// A JSON pointer with `*` wildcards.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PathPattern {
    source: String,
    segments: Vec<Segment>,
}

/// A pattern that could not be read.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("bad path pattern {pattern:?}: {reason}")]
pub struct PatternError {
    pattern: String,
    reason: &'static str,
}

impl PathPattern {
    /// Reads an absolute pattern (`""` is the root, otherwise it starts with `/`).
    pub fn absolute(source: &str) -> Result<Self, PatternError> {
        if !source.is_empty() && !source.starts_with('/') {
            return Err(PatternError {
                pattern: source.into(),
                reason: "an absolute path starts with '/'",
            });
        }
        Self::parse(source, source.strip_prefix('/').unwrap_or(source))
    }

    /// Reads a pattern relative to a scope (`options/*/value`; a leading `/` is accepted too).
    pub fn relative(source: &str) -> Result<Self, PatternError> {
        Self::parse(source, source.strip_prefix('/').unwrap_or(source))
    }

    fn parse(source: &str, body: &str) -> Result<Self, PatternError> {
        if body.is_empty() {
            return Ok(Self {
                source: source.into(),
                segments: Vec::new(),
            });
        }
        let mut segments = Vec::new();
        for raw in body.split('/') {
            if raw == "*" {
                segments.push(Segment::Any);
                continue;
            }
            let mut key = String::with_capacity(raw.len());
            let mut chars = raw.chars();
            while let Some(c) = chars.next() {
                if c == '~' {
                    match chars.next() {
                        Some('0') => key.push('~'),
                        Some('1') => key.push('/'),
                        _ => {
                            return Err(PatternError {
                                pattern: source.into(),
                                reason: "'~' must be followed by 0 or 1",
                            });
                        }
                    }
                } else {
                    key.push(c);
                }
            }
            segments.push(Segment::Key(key));
        }
        Ok(Self {
            source: source.into(),
            segments,
        })
    }

    /// The pattern as written.
    pub fn as_str(&self) -> &str {
        &self.source
    }

    /// How many segments the pattern has (`""` has none, `/a/*` two).
    pub(crate) fn depth(&self) -> usize {
        self.segments.len()
    }

    /// Whether segment `depth` matches the object member `key`, as [`Self::for_each_match`]
    /// decides it (`false` past the pattern's end).
    pub(crate) fn matches_key_at(&self, depth: usize, key: &str) -> bool {
        match self.segments.get(depth) {
            Some(Segment::Any) => true,
            Some(Segment::Key(k)) => k == key,
            None => false,
        }
    }

    /// Whether segment `depth` matches array element `index`, as [`Self::for_each_match`]
    /// decides it (a key segment is read as a number: `01` matches element 1).
    pub(crate) fn matches_index_at(&self, depth: usize, index: usize) -> bool {
        match self.segments.get(depth) {
            Some(Segment::Any) => true,
            Some(Segment::Key(k)) => k.parse::<usize>().ok() == Some(index),
            None => false,
        }
    }

    /// Calls `visit(pointer, value)` for every place in `root` the pattern matches, in document
    /// order. `base` is the pointer of `root` itself (empty for the whole reply).
    pub fn for_each_match<'v>(
        &self,
        root: &'v Value,
        base: &str,
        mut visit: impl FnMut(&str, &'v Value),
    ) {
        // Depth-first with an explicit stack so that deep replies cannot exhaust the call stack.
        let mut stack: Vec<(usize, &'v Value, String)> = vec![(0, root, base.to_owned())];
        while let Some((depth, value, pointer)) = stack.pop() {
            let Some(segment) = self.segments.get(depth) else {
                visit(&pointer, value);
                continue;
            };
            match (segment, value) {
                (Segment::Key(key), Value::Object(map)) => {
                    if let Some(child) = map.get(key) {
                        stack.push((depth + 1, child, child_pointer(&pointer, key)));
                    }
                }
                (Segment::Key(key), Value::Array(items)) => {
                    if let Some(child) = key.parse::<usize>().ok().and_then(|i| items.get(i)) {
                        stack.push((depth + 1, child, child_pointer(&pointer, key)));
                    }
                }
                (Segment::Any, Value::Object(map)) => {
                    for (key, child) in map.iter().rev() {
                        stack.push((depth + 1, child, child_pointer(&pointer, key)));
                    }
                }
                (Segment::Any, Value::Array(items)) => {
                    for (index, child) in items.iter().enumerate().rev() {
                        stack.push((
                            depth + 1,
                            child,
                            child_pointer(&pointer, &index.to_string()),
                        ));
                    }
                }
                _ => {}
            }
        }
    }

    /// Every pointer the pattern matches in `root`, in document order.
    pub fn matches(&self, root: &Value) -> Vec<String> {
        let mut found = Vec::new();
        self.for_each_match(root, "", |pointer, _| found.push(pointer.to_owned()));
        found
    }
}

impl fmt::Display for PathPattern {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.source)
    }
}

/// `parent` + `/` + `key`, with `~` and `/` escaped as RFC 6901 says.
pub fn child_pointer(parent: &str, key: &str) -> String {
    let mut out = String::with_capacity(parent.len() + key.len() + 1);
    out.push_str(parent);
    out.push('/');
    for c in key.chars() {
        match c {
            '~' => out.push_str("~0"),
            '/' => out.push_str("~1"),
            c => out.push(c),
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn matches_wildcards_in_document_order() {
        let v = json!({"f": [{"id": "a"}, {"id": "b"}, {"x": 1}], "g": {"p": {"id": "c"}, "q": {"id": "d"}}});
        let p = PathPattern::absolute("/f/*/id").unwrap();
        assert_eq!(p.matches(&v), vec!["/f/0/id", "/f/1/id"]);
        let p = PathPattern::absolute("/g/*/id").unwrap();
        assert_eq!(p.matches(&v), vec!["/g/p/id", "/g/q/id"]);
        let p = PathPattern::absolute("/f/1").unwrap();
        assert_eq!(p.matches(&v), vec!["/f/1"]);
        assert_eq!(PathPattern::absolute("").unwrap().matches(&v), vec![""]);
    }

    #[test]
    fn escapes_follow_rfc6901() {
        let v = json!({"a/b": {"c~d": 1}});
        let p = PathPattern::absolute("/a~1b/c~0d").unwrap();
        assert_eq!(p.matches(&v), vec!["/a~1b/c~0d"]);
        assert!(PathPattern::absolute("/a~2").is_err());
        assert!(PathPattern::absolute("a").is_err());
    }

    #[test]
    fn relative_patterns_match_under_a_base() {
        let v = json!({"options": [{"value": 1}, {"value": 2}]});
        let p = PathPattern::relative("options/*/value").unwrap();
        let mut seen = Vec::new();
        p.for_each_match(&v, "/f/0", |ptr, val| {
            seen.push((ptr.to_owned(), val.clone()))
        });
        assert_eq!(
            seen,
            vec![
                ("/f/0/options/0/value".into(), json!(1)),
                ("/f/0/options/1/value".into(), json!(2))
            ]
        );
    }

    #[test]
    fn missing_and_mismatched_paths_match_nothing() {
        let v = json!({"a": "text"});
        assert!(
            PathPattern::absolute("/a/*")
                .unwrap()
                .matches(&v)
                .is_empty()
        );
        assert!(
            PathPattern::absolute("/b/c")
                .unwrap()
                .matches(&v)
                .is_empty()
        );
    }
}
