//! [`Shape`]: what the contract's JSON Schema says about each element of an XML reply, so the
//! reader can build the JSON value the schema validates — which children repeat (arrays),
//! which attributes are booleans or numbers, which elements are text. Types come from the
//! schema, never from the look of the text.
//!
//! Built once when the contract loads. `$ref`s inside the schema document (`#/…`) are
//! followed; a schema deeper than [`MAX_DEPTH`] (or recursive) reads as [`Shape::Any`] below
//! that depth.

use serde_json::{Map, Value};

/// Deepest schema nesting followed.
pub const MAX_DEPTH: usize = 32;

/// Most shape nodes built for one schema (a recursive schema with several recursive members
/// would otherwise grow exponentially with the depth).
pub const MAX_NODES: usize = 10_000;

/// A JSON scalar type a text or an attribute is read as.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Scalar {
    /// Kept as text.
    String,
    /// A JSON number (`1.5`, `2`).
    Number,
    /// A JSON integer.
    Integer,
    /// `true` / `false`.
    Boolean,
}

/// How one element (or the root) is read.
#[derive(Debug, Clone, PartialEq)]
pub enum Shape {
    /// An object: attributes as `"@name"`, children by name, text as `"#text"`.
    Object {
        /// Known members (`"@attr"`, `"child"`, `"#text"`), in the schema's order. A list:
        /// objects have few members, and a scan of a few short names beats hashing one.
        members: Vec<(String, Member)>,
        /// Members not listed are allowed (`additionalProperties` is not `false`).
        open: bool,
    },
    /// A text-only element, read as this scalar.
    Text(Scalar),
    /// The schema does not say: text when the element has neither attributes nor children,
    /// else an object of everything in it.
    Any,
}

/// A member of an object shape.
#[derive(Debug, Clone, PartialEq)]
pub struct Member {
    /// The schema makes it an array: every occurrence is an item, one occurrence too.
    pub repeated: bool,
    /// The shape of each occurrence.
    pub shape: Shape,
}

impl Shape {
    /// The shape the JSON Schema `root` gives its document.
    pub fn of(root: &Value) -> Self {
        Builder {
            root,
            nodes: std::cell::Cell::new(0),
        }
        .shape(root, 0)
    }

    /// The member `name` of an object shape, if the shape knows it.
    pub fn member(&self, name: &str) -> Option<&Member> {
        self.entry(name.as_bytes()).map(|(_, m)| m)
    }

    /// The member named `name` (the bytes read), with the shape's own spelling of the name
    /// (for keys).
    pub(crate) fn entry(&self, name: &[u8]) -> Option<(&str, &Member)> {
        match self {
            Self::Object { members, .. } => members
                .iter()
                .find(|(member, _)| member.as_bytes() == name)
                .map(|(member, m)| (member.as_str(), m)),
            _ => None,
        }
    }

    /// The member `"@" + name` (attribute `name`), found without building the key.
    pub(crate) fn attribute(&self, name: &[u8]) -> Option<(&str, &Member)> {
        match self {
            Self::Object { members, .. } => members
                .iter()
                .find(|(member, _)| member.as_bytes().strip_prefix(b"@") == Some(name))
                .map(|(member, m)| (member.as_str(), m)),
            _ => None,
        }
    }

    /// Whether a member the shape does not list is kept (open objects and [`Shape::Any`]).
    pub fn keeps_unknown(&self) -> bool {
        match self {
            Self::Object { open, .. } => *open,
            Self::Any => true,
            Self::Text(_) => false,
        }
    }
}

struct Builder<'a> {
    root: &'a Value,
    nodes: std::cell::Cell<usize>,
}

impl Builder<'_> {
    /// Follows `$ref`s within the document (`#`, `#/path`), at most `MAX_DEPTH` times.
    fn resolve<'s>(&'s self, mut schema: &'s Value) -> &'s Value {
        for _ in 0..MAX_DEPTH {
            let Some(reference) = schema.get("$ref").and_then(Value::as_str) else {
                return schema;
            };
            let Some(pointer) = reference.strip_prefix('#') else {
                return schema;
            };
            match self.root.pointer(pointer) {
                Some(target) => schema = target,
                None => return schema,
            }
        }
        schema
    }

    fn shape(&self, schema: &Value, depth: usize) -> Shape {
        self.nodes.set(self.nodes.get() + 1);
        if depth > MAX_DEPTH || self.nodes.get() > MAX_NODES {
            return Shape::Any;
        }
        let schema = self.resolve(schema);
        match main_type(schema) {
            Some("object") => self.object(schema, depth),
            Some("string") => Shape::Text(Scalar::String),
            Some("number") => Shape::Text(Scalar::Number),
            Some("integer") => Shape::Text(Scalar::Integer),
            Some("boolean") => Shape::Text(Scalar::Boolean),
            _ if schema.get("properties").is_some() => self.object(schema, depth),
            _ => Shape::Any,
        }
    }

    fn object(&self, schema: &Value, depth: usize) -> Shape {
        let empty = Map::new();
        let properties = schema
            .get("properties")
            .and_then(Value::as_object)
            .unwrap_or(&empty);
        let members = properties
            .iter()
            .map(|(name, property)| (name.clone(), self.member(property, depth + 1)))
            .collect();
        let open = !matches!(schema.get("additionalProperties"), Some(Value::Bool(false)));
        Shape::Object { members, open }
    }

    fn member(&self, schema: &Value, depth: usize) -> Member {
        let schema = self.resolve(schema);
        if main_type(schema) == Some("array") {
            let items = schema.get("items").unwrap_or(&Value::Bool(true));
            Member {
                repeated: true,
                shape: self.shape(items, depth + 1),
            }
        } else {
            Member {
                repeated: false,
                shape: self.shape(schema, depth),
            }
        }
    }
}

/// The schema's `type`: the string, or the first non-`null` entry of a list.
fn main_type(schema: &Value) -> Option<&str> {
    match schema.get("type")? {
        Value::String(name) => Some(name),
        Value::Array(names) => names
            .iter()
            .filter_map(Value::as_str)
            .find(|n| *n != "null"),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn arrays_attributes_and_refs_are_read_from_the_schema() {
        let schema = json!({
            "type": "object",
            "additionalProperties": false,
            "properties": {
                "item": {"type": "array", "items": {"$ref": "#/$defs/item"}},
                "note": {"type": "string"}
            },
            "$defs": {"item": {"type": "object", "properties": {
                "@on": {"type": "boolean"}, "@weight": {"type": ["number", "null"]}
            }}}
        });
        let shape = Shape::of(&schema);
        assert!(!shape.keeps_unknown());
        let item = shape.member("item").unwrap();
        assert!(item.repeated);
        assert_eq!(
            item.shape.member("@on").unwrap().shape,
            Shape::Text(Scalar::Boolean)
        );
        assert_eq!(
            item.shape.member("@weight").unwrap().shape,
            Shape::Text(Scalar::Number)
        );
        assert_eq!(
            shape.member("note").unwrap().shape,
            Shape::Text(Scalar::String)
        );
    }

    #[test]
    fn recursive_schemas_end_in_any() {
        let schema = json!({"type": "object", "properties": {"child": {"$ref": "#"}}});
        let mut shape = Shape::of(&schema);
        let mut depth = 0;
        while let Some(member) = shape.member("child") {
            shape = member.shape.clone();
            depth += 1;
        }
        assert_eq!(shape, Shape::Any);
        assert!(depth <= MAX_DEPTH + 1, "{depth}");
    }

    #[test]
    fn branching_recursion_is_bounded() {
        let schema = json!({"type": "object", "properties": {
            "a": {"$ref": "#"}, "b": {"$ref": "#"}, "c": {"type": "array", "items": {"$ref": "#"}}
        }});
        // 3^32 nodes if unbounded; this returns at once.
        let shape = Shape::of(&schema);
        assert!(shape.member("a").is_some());
    }
}
