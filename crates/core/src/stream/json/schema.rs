//! [`SchemaIndex`]: what the streaming JSON reader needs to know of a contract's JSON Schema —
//! for each subschema it can reach with certainty, the keywords it checks early (`type`,
//! `enum`, `const`, `required`, `additionalProperties: false`) and where its members' and
//! items' subschemas are.
//!
//! A subschema is reached from the root through `properties`, `additionalProperties` (schema
//! form), `prefixItems`/`items` (and the draft-04…2019-09 array form of `items` with
//! `additionalItems`), local `$ref`s (`#` and `#/…` pointers) and `allOf` branches (which only
//! add constraints, so their keywords apply as surely as the node's own). In drafts before
//! 2019-09 a `$ref` makes its siblings ignored, as the validator does.
//!
//! Whatever cannot be resolved with certainty contributes nothing: a remote or anchor `$ref`,
//! a `$ref` under a nested `$id` (its base is not the document), `$dynamicRef` and
//! `$recursiveRef` targets, members that `patternProperties` might match, and everything under
//! `anyOf`/`oneOf`/`not`/`if`. Leaving a constraint out can only make the reader check less,
//! never fire where the complete check would not.

use crate::pointer::child_pointer;
use serde_json::{Map, Value};
use std::collections::HashMap;

/// Index of a node in [`SchemaIndex`].
pub(super) type NodeId = u32;

/// Most subschemas indexed for one schema; past it, subschemas contribute nothing.
const MAX_NODES: usize = 10_000;

/// The JSON Schema draft, as far as the index cares.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Draft {
    Four,
    Six,
    Seven,
    Y2019,
    Y2020,
}

impl Draft {
    /// The draft of [`crate::schema::Schema::draft_name`].
    pub(super) fn from_name(name: &str) -> Self {
        match name {
            "draft-04" => Self::Four,
            "draft-06" => Self::Six,
            "draft-07" => Self::Seven,
            "2019-09" => Self::Y2019,
            _ => Self::Y2020,
        }
    }

    /// Whether a `$ref` makes its sibling keywords ignored.
    fn ref_overrides(self) -> bool {
        matches!(self, Self::Four | Self::Six | Self::Seven)
    }
}

/// JSON types as bits of [`Node::types`].
pub(super) mod ty {
    pub(in crate::stream) const NULL: u8 = 1;
    pub(in crate::stream) const BOOLEAN: u8 = 2;
    pub(in crate::stream) const OBJECT: u8 = 4;
    pub(in crate::stream) const ARRAY: u8 = 8;
    pub(in crate::stream) const NUMBER: u8 = 16;
    pub(in crate::stream) const STRING: u8 = 32;
    pub(in crate::stream) const INTEGER: u8 = 64;

    /// The bit of a type name, 0 for a name JSON Schema does not know.
    pub(super) fn bit(name: &str) -> u8 {
        match name {
            "null" => NULL,
            "boolean" => BOOLEAN,
            "object" => OBJECT,
            "array" => ARRAY,
            "number" => NUMBER,
            "string" => STRING,
            "integer" => INTEGER,
            _ => 0,
        }
    }
}

/// What a node says about members its `properties` does not list.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Additional {
    /// Allowed, and nothing known about them.
    Open,
    /// `additionalProperties: false`.
    Forbidden,
    /// `additionalProperties` is this subschema.
    Schema(NodeId),
}

/// One subschema (a JSON object in the schema document).
#[derive(Debug, Clone)]
pub(super) struct Node {
    /// Bits of [`ty`] that `type` allows; 0 when there is no usable `type`.
    pub(super) types: u8,
    /// `type` as written (for the violation's message), when `types` is set.
    pub(super) type_keyword: Option<Value>,
    /// `enum` as written (an array).
    pub(super) enumeration: Option<Value>,
    /// `const` (drafts 06 and later).
    pub(super) constant: Option<Value>,
    /// `required`.
    pub(super) required: Vec<String>,
    /// `properties`: each name with its subschema (`None`: `true`, `false` or unresolved).
    pub(super) properties: HashMap<String, Option<NodeId>>,
    /// `patternProperties` is present: a member not in `properties` may match one of them.
    pub(super) patterns: bool,
    pub(super) additional: Additional,
    /// Subschemas of the first items (`prefixItems`, or `items` as an array).
    pub(super) prefix: Vec<Option<NodeId>>,
    /// Subschema of the items after `prefix`.
    pub(super) rest: Option<NodeId>,
    /// Other nodes that apply wherever this one does (its `$ref` target, `allOf` branches).
    links: Vec<NodeId>,
    /// Whether this node's own keywords apply (false for a draft-04…07 node with `$ref`).
    own: bool,
    /// The nodes whose keywords apply wherever this one does: itself (when `own`) and,
    /// transitively, its links.
    pub(super) applied: Vec<NodeId>,
}

impl Node {
    fn empty() -> Self {
        Self {
            types: 0,
            type_keyword: None,
            enumeration: None,
            constant: None,
            required: Vec::new(),
            properties: HashMap::new(),
            patterns: false,
            additional: Additional::Open,
            prefix: Vec::new(),
            rest: None,
            links: Vec::new(),
            own: false,
            applied: Vec::new(),
        }
    }

    /// Whether the node checks anything by itself, or leads to members or items that may.
    fn says_something(&self) -> bool {
        self.types != 0
            || self.enumeration.is_some()
            || self.constant.is_some()
            || !self.required.is_empty()
            || !self.properties.is_empty()
            || self.additional != Additional::Open
            || !self.prefix.is_empty()
            || self.rest.is_some()
    }

    /// The subschema of member `key`, when it is certain.
    pub(super) fn member(&self, key: &str) -> Option<NodeId> {
        if let Some(child) = self.properties.get(key) {
            return *child;
        }
        if self.patterns {
            return None;
        }
        match self.additional {
            Additional::Schema(id) => Some(id),
            Additional::Open | Additional::Forbidden => None,
        }
    }

    /// Whether member `key` breaks `additionalProperties: false` (never judged when
    /// `patternProperties` might allow it).
    pub(super) fn forbids(&self, key: &str) -> bool {
        self.additional == Additional::Forbidden
            && !self.patterns
            && !self.properties.contains_key(key)
    }

    /// The subschema of item `index`, when it is certain.
    pub(super) fn item(&self, index: usize) -> Option<NodeId> {
        match self.prefix.get(index) {
            Some(child) => *child,
            None => self.rest,
        }
    }
}

/// The indexed schema.
#[derive(Debug, Clone)]
pub(crate) struct SchemaIndex {
    nodes: Vec<Node>,
    /// The nodes that apply to the root value.
    pub(super) root: Vec<NodeId>,
    /// The schema's `$schema`, for the one-keyword schemas that word a violation.
    pub(super) dialect: Option<Value>,
}

impl SchemaIndex {
    /// Indexes `schema`, a document of `draft`.
    pub(super) fn build(schema: &Value, draft: Draft) -> Self {
        let mut builder = Builder {
            root: schema,
            draft,
            ids: HashMap::new(),
            nodes: Vec::new(),
            queue: Vec::new(),
        };
        let root = builder.intern(String::new());
        while let Some((id, pointer)) = builder.queue.pop() {
            builder.fill(id, &pointer);
        }
        let mut nodes = builder.nodes;
        close_links(&mut nodes);
        let root = root
            .and_then(|id| nodes.get(id as usize))
            .map(|node| node.applied.clone())
            .unwrap_or_default();
        let mut index = Self {
            nodes,
            root,
            dialect: schema.get("$schema").cloned(),
        };
        if !index.root.iter().any(|&id| index.node(id).says_something()) {
            index.root.clear();
        }
        index
    }

    /// The node `id` (an empty one for an id this index did not make).
    pub(super) fn node(&self, id: NodeId) -> &Node {
        static EMPTY: std::sync::OnceLock<Node> = std::sync::OnceLock::new();
        self.nodes
            .get(id as usize)
            .unwrap_or_else(|| EMPTY.get_or_init(Node::empty))
    }
}

/// Fills each node's `applied` list: the node itself when its keywords apply, then what its
/// links apply, transitively, each node once (a `$ref` cycle ends where it started).
fn close_links(nodes: &mut [Node]) {
    let mut seen = vec![u32::MAX; nodes.len()];
    let mut todo = Vec::new();
    for start in 0..nodes.len() {
        let stamp = start as u32;
        let mut applied = Vec::new();
        todo.clear();
        todo.push(start as NodeId);
        while let Some(id) = todo.pop() {
            let Some(mark) = seen.get_mut(id as usize) else {
                continue;
            };
            if *mark == stamp {
                continue;
            }
            *mark = stamp;
            let Some(node) = nodes.get(id as usize) else {
                continue;
            };
            if node.own {
                applied.push(id);
            }
            todo.extend(node.links.iter().rev());
        }
        if let Some(node) = nodes.get_mut(start) {
            node.applied = applied;
        }
    }
}

struct Builder<'a> {
    root: &'a Value,
    draft: Draft,
    ids: HashMap<String, NodeId>,
    nodes: Vec<Node>,
    /// Nodes made but not yet filled, with their pointers.
    queue: Vec<(NodeId, String)>,
}

impl Builder<'_> {
    /// The node of the subschema at `pointer`, made (and queued for filling) on first sight;
    /// `None` for a boolean schema, a missing one, or past [`MAX_NODES`].
    fn intern(&mut self, pointer: String) -> Option<NodeId> {
        if !self.root.pointer(&pointer).is_some_and(Value::is_object) {
            return None;
        }
        if let Some(&id) = self.ids.get(&pointer) {
            return Some(id);
        }
        if self.nodes.len() >= MAX_NODES {
            return None;
        }
        let id = NodeId::try_from(self.nodes.len()).ok()?;
        self.nodes.push(Node::empty());
        self.ids.insert(pointer.clone(), id);
        self.queue.push((id, pointer));
        Some(id)
    }

    fn fill(&mut self, id: NodeId, pointer: &str) {
        let Some(schema) = self.root.pointer(pointer).and_then(Value::as_object) else {
            return;
        };
        let mut node = Node::empty();
        let reference = schema.get("$ref").and_then(Value::as_str);
        node.own = !(reference.is_some() && self.draft.ref_overrides());
        if let Some(target) = reference.and_then(|r| self.resolve(pointer, r)) {
            node.links.extend(self.intern(target));
        }
        if node.own {
            self.read_keywords(schema, pointer, &mut node);
        }
        if let Some(slot) = self.nodes.get_mut(id as usize) {
            *slot = node;
        }
    }

    /// Reads the keywords of a node whose own keywords apply.
    fn read_keywords(&mut self, schema: &Map<String, Value>, pointer: &str, node: &mut Node) {
        let sub = |keyword: &str| child_pointer(pointer, keyword);
        if let Some(Value::Array(branches)) = schema.get("allOf") {
            for i in 0..branches.len() {
                let at = child_pointer(&sub("allOf"), &i.to_string());
                node.links.extend(self.intern(at));
            }
        }
        if let Some(types) = schema.get("type") {
            let mask = match types {
                Value::String(name) => Some(ty::bit(name)),
                Value::Array(names) => names.iter().try_fold(0u8, |mask, name| {
                    let bit = name.as_str().map_or(0, ty::bit);
                    (bit != 0).then_some(mask | bit)
                }),
                _ => None,
            }
            .unwrap_or(0);
            if mask != 0 {
                node.types = mask;
                node.type_keyword = Some(types.clone());
            }
        }
        if let Some(options @ Value::Array(_)) = schema.get("enum") {
            node.enumeration = Some(options.clone());
        }
        if self.draft != Draft::Four {
            node.constant = schema.get("const").cloned();
        }
        if let Some(Value::Array(names)) = schema.get("required") {
            node.required = names
                .iter()
                .filter_map(|n| n.as_str().map(str::to_owned))
                .collect();
        }
        if let Some(Value::Object(properties)) = schema.get("properties") {
            let base = sub("properties");
            for name in properties.keys() {
                let child = self.intern(child_pointer(&base, name));
                node.properties.insert(name.clone(), child);
            }
        }
        node.patterns = schema.contains_key("patternProperties");
        node.additional = match schema.get("additionalProperties") {
            Some(Value::Bool(false)) => Additional::Forbidden,
            Some(Value::Object(_)) => self
                .intern(sub("additionalProperties"))
                .map_or(Additional::Open, Additional::Schema),
            _ => Additional::Open,
        };
        self.read_items(schema, pointer, node);
    }

    /// `prefixItems` and `items` (2020-12), or `items` and `additionalItems` (earlier drafts).
    fn read_items(&mut self, schema: &Map<String, Value>, pointer: &str, node: &mut Node) {
        let (prefix_keyword, rest_keyword) = if self.draft == Draft::Y2020 {
            ("prefixItems", "items")
        } else {
            ("items", "additionalItems")
        };
        if let Some(Value::Array(items)) = schema.get(prefix_keyword) {
            let base = child_pointer(pointer, prefix_keyword);
            for i in 0..items.len() {
                let child = self.intern(child_pointer(&base, &i.to_string()));
                node.prefix.push(child);
            }
            if schema.get(rest_keyword).is_some_and(Value::is_object) {
                node.rest = self.intern(child_pointer(pointer, rest_keyword));
            }
        } else if schema.get("items").is_some_and(Value::is_object) {
            // Every item (in 2020-12 also when `prefixItems` is absent).
            node.rest = self.intern(child_pointer(pointer, "items"));
        }
    }

    /// The pointer a `$ref` written in the node at `from` leads to, when it is certainly in
    /// this document: `#` or `#/…` (not percent-encoded), with no `$id` on the way that would
    /// change the base.
    fn resolve(&self, from: &str, reference: &str) -> Option<String> {
        let fragment = reference.strip_prefix('#')?;
        if !(fragment.is_empty() || fragment.starts_with('/')) || fragment.contains('%') {
            return None;
        }
        if self.has_nested_id(from) || self.has_nested_id(fragment) {
            return None;
        }
        self.root.pointer(fragment)?;
        Some(fragment.to_owned())
    }

    /// Whether an object on the way from the root to `pointer` (the root excluded, the end
    /// included) declares an `$id` (`id` in draft-04), so that a `$ref` there has another base.
    fn has_nested_id(&self, pointer: &str) -> bool {
        let id_keyword = if self.draft == Draft::Four {
            "id"
        } else {
            "$id"
        };
        let mut at = self.root;
        for token in pointer.split('/').skip(1) {
            let token = token.replace("~1", "/").replace("~0", "~");
            let next = match at {
                Value::Object(map) => map.get(&token),
                Value::Array(items) => token.parse::<usize>().ok().and_then(|i| items.get(i)),
                _ => None,
            };
            let Some(next) = next else {
                return true;
            };
            if next.get(id_keyword).is_some_and(Value::is_string) {
                return true;
            }
            at = next;
        }
        false
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    /// The index of `schema` (draft from its `$schema`, else 2020-12).
    fn index(schema: Value) -> SchemaIndex {
        let draft = match schema.get("$schema").and_then(Value::as_str) {
            Some(uri) if uri.contains("draft-04") => Draft::Four,
            Some(uri) if uri.contains("draft-07") => Draft::Seven,
            Some(uri) if uri.contains("2019-09") => Draft::Y2019,
            _ => Draft::Y2020,
        };
        SchemaIndex::build(&schema, draft)
    }

    /// Follows `path` (member names, or `#n` for item n) from the root; returns the `type`s
    /// of the nodes that apply there (those without one left out), or `None` when no node
    /// certainly applies.
    fn types_at(index: &SchemaIndex, path: &[&str]) -> Option<Vec<u8>> {
        let mut set = index.root.clone();
        for segment in path {
            let mut next = Vec::new();
            for &id in &set {
                let node = index.node(id);
                let child = match segment.strip_prefix('#') {
                    Some(n) => node.item(n.parse().ok()?),
                    None => node.member(segment),
                };
                for applied in child
                    .map(|c| index.node(c).applied.clone())
                    .unwrap_or_default()
                {
                    if !next.contains(&applied) {
                        next.push(applied);
                    }
                }
            }
            set = next;
        }
        let types = set
            .iter()
            .map(|&id| index.node(id).types)
            .filter(|&t| t != 0);
        (!set.is_empty()).then(|| types.collect())
    }

    #[test]
    fn subschemas_are_found_where_they_are_certain() {
        use ty::*;
        let schema = json!({
            "type": "object",
            "properties": {
                "a": {"type": "string"},
                "list": {"type": "array", "items": {"$ref": "#/$defs/item"}},
                "pair": {"prefixItems": [{"type": "integer"}, {"type": "null"}], "items": {"type": "boolean"}},
                "free": {"additionalProperties": {"type": "number"}},
                "pat": {"patternProperties": {"^x": {"type": "string"}}, "additionalProperties": {"type": "null"}, "properties": {"k": {"type": "array"}}},
                "both": {"allOf": [{"type": "object"}, {"$ref": "#/$defs/item"}]},
                "remote": {"$ref": "https://example.com/s.json"},
                "anchor": {"$ref": "#node"},
                "nested": {"$id": "https://example.com/n.json", "properties": {"r": {"$ref": "#/$defs/item"}}},
                "dyn": {"$dynamicRef": "#meta", "type": "string"},
                "either": {"anyOf": [{"type": "string"}]}
            },
            "$defs": {"item": {"type": ["object", "null"], "properties": {"self": {"$ref": "#/$defs/item"}}}}
        });
        let idx = index(schema);
        for (path, want) in [
            (&[][..], Some(vec![OBJECT])),
            (&["a"][..], Some(vec![STRING])),
            (&["list", "#3"][..], Some(vec![OBJECT | NULL])),
            (
                &["list", "#0", "self", "self"][..],
                Some(vec![OBJECT | NULL]),
            ),
            (&["pair", "#0"][..], Some(vec![INTEGER])),
            (&["pair", "#1"][..], Some(vec![NULL])),
            (&["pair", "#2"][..], Some(vec![BOOLEAN])),
            (&["free", "anything"][..], Some(vec![NUMBER])),
            (&["pat", "k"][..], Some(vec![ARRAY])),
            (&["pat", "y"][..], None),
            (&["both"][..], Some(vec![OBJECT, OBJECT | NULL])),
            (&["remote"][..], Some(vec![])),
            (&["anchor"][..], Some(vec![])),
            (&["nested", "r"][..], Some(vec![])),
            (&["dyn"][..], Some(vec![STRING])),
            (&["either"][..], Some(vec![])),
            (&["unknown"][..], None),
        ] {
            assert_eq!(types_at(&idx, path), want, "{path:?}");
        }
    }

    #[test]
    fn drafts_decide_refs_siblings_and_item_forms() {
        use ty::*;
        // draft-07: a $ref's siblings are ignored; `items` as an array is the prefix form.
        let d7 = index(json!({
            "$schema": "http://json-schema.org/draft-07/schema#",
            "properties": {
                "r": {"$ref": "#/definitions/s", "type": "integer"},
                "t": {"items": [{"type": "string"}], "additionalItems": {"type": "null"}},
                "p": {"prefixItems": [{"type": "string"}]}
            },
            "definitions": {"s": {"type": "string"}}
        }));
        assert_eq!(types_at(&d7, &["r"]), Some(vec![STRING]));
        assert_eq!(types_at(&d7, &["t", "#0"]), Some(vec![STRING]));
        assert_eq!(types_at(&d7, &["t", "#1"]), Some(vec![NULL]));
        assert_eq!(types_at(&d7, &["p", "#0"]), None);
        // 2019-09: siblings of a $ref apply too.
        let d2019 = index(json!({
            "$schema": "https://json-schema.org/draft/2019-09/schema",
            "properties": {"r": {"$ref": "#/$defs/s", "type": "integer"}},
            "$defs": {"s": {"type": "string"}}
        }));
        assert_eq!(types_at(&d2019, &["r"]), Some(vec![INTEGER, STRING]));
        // draft-04 knows no `const`.
        let d4 = index(
            json!({"$schema": "http://json-schema.org/draft-04/schema#", "const": 1, "type": "object"}),
        );
        assert!(d4.node(d4.root[0]).constant.is_none());
    }

    #[test]
    fn cycles_and_empty_schemas_end() {
        let looped = index(json!({"$ref": "#", "type": "array", "items": {"$ref": "#"}}));
        assert_eq!(types_at(&looped, &["#0", "#5"]), Some(vec![ty::ARRAY]));
        assert!(index(json!({})).root.is_empty());
        assert!(index(json!(true)).root.is_empty());
        assert!(index(json!({"description": "anything"})).root.is_empty());
        let unknown_type = index(json!({"type": ["string", "strnig"]}));
        assert!(unknown_type.root.is_empty());
    }

    #[test]
    fn members_outside_properties() {
        let idx = index(json!({
            "properties": {"a": {}},
            "additionalProperties": false
        }));
        let root = idx.node(idx.root[0]);
        assert!(!root.forbids("a"));
        assert!(root.forbids("b"));
        let with_patterns = index(json!({
            "properties": {"a": {}},
            "patternProperties": {"^b": {}},
            "additionalProperties": false
        }));
        assert!(!with_patterns.node(with_patterns.root[0]).forbids("zzz"));
    }
}
