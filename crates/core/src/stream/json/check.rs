//! [`Checker`]: the [`Sink`] that watches a streaming JSON value for violations no
//! continuation can fix.
//!
//! It keeps, for each open container, the schema nodes that certainly apply to it (see
//! [`SchemaIndex`]) and which declared coercions may still reach it, and checks what the
//! [`Scanner`](super::scan::Scanner) settles:
//!
//! - a settled scalar: `type`, `enum`, `const` of the nodes that apply to it;
//! - a key followed by its `:`: `additionalProperties: false` (not judged when the node has
//!   `patternProperties`);
//! - a closed container: `type`, `required` (objects), and `enum`/`const` unless a coercion
//!   may change something inside it.
//!
//! Nothing is checked at or below a place a coercion's path pattern matches (a `wrap_string`
//! turns a string there into an object, a `rename_key` renames keys there). A violation is
//! confirmed, and worded, by the validator itself: the value in hand is validated against a
//! one-keyword schema made of the keyword that failed (in the contract's dialect), so the
//! rule, the message and the quote are what the complete check reports. That costs a schema
//! compilation, but only when something is about to be reported.

use super::partial::render;
use super::scan::{Proven, Scalar, Sink};
use super::schema::{NodeId, SchemaIndex, ty};
use crate::pointer::{PathPattern, child_pointer};
use crate::rule::{Rule, SchemaKeyword};
use crate::schema::Schema;
use serde_json::{Map, Value};
use std::borrow::Cow;
use std::ops::Range;

/// Where a container is, seen from its parent.
#[derive(Debug, Clone)]
enum Segment {
    /// Nothing read in it yet.
    None,
    /// The member whose key is at this span of the reply (quotes included).
    Key(Range<usize>),
    Index(usize),
}

/// One open container.
#[derive(Debug, Clone)]
struct Frame {
    /// Its nodes: `arena[nodes]`.
    nodes: Range<usize>,
    /// Coercions (bits) whose pattern matches its path so far and goes deeper.
    live: u64,
    /// At or below a place a coercion matches: nothing is checked here or below.
    coerced: bool,
    object: bool,
    /// Where its opening bracket is.
    start: usize,
    /// The member or item being read in it.
    current: Segment,
    /// `required` names seen (one bit per name of its nodes' lists, in order).
    seen: u64,
}

/// What applies to the value about to start (or the scalar being settled).
#[derive(Debug, Clone, Default)]
struct Next {
    nodes: Vec<NodeId>,
    live: u64,
    coerced: bool,
}

/// The early-abort checker. See the module docs.
#[derive(Debug)]
pub(super) struct Checker {
    index: std::sync::Arc<SchemaIndex>,
    coercions: Vec<PathPattern>,
    frames: Vec<Frame>,
    /// The node lists of the open frames, one after the other.
    arena: Vec<NodeId>,
    next: Next,
    /// False once a violation was reported (the reply is given up) or when nothing can be
    /// checked.
    enabled: bool,
}

impl Checker {
    /// A checker of replies to the schema `index` with coercions at `coercions`; `None` when
    /// there is nothing it could ever report.
    pub(super) fn new(
        index: std::sync::Arc<SchemaIndex>,
        coercions: Vec<PathPattern>,
    ) -> Option<Self> {
        if index.root.is_empty() || coercions.len() > 64 {
            return None;
        }
        let next = Next {
            nodes: index.root.clone(),
            live: coercions
                .iter()
                .enumerate()
                .filter(|(_, p)| p.depth() > 0)
                .fold(0, |bits, (i, _)| bits | 1 << i),
            coerced: coercions.iter().any(|p| p.depth() == 0),
        };
        Some(Self {
            index,
            coercions,
            frames: Vec::new(),
            arena: Vec::new(),
            next,
            enabled: true,
        })
    }

    /// What applies to the child `segment` of the innermost frame.
    fn descend(&mut self, segment: Child<'_>) {
        self.next.nodes.clear();
        self.next.live = 0;
        let Some(frame) = self.frames.last() else {
            return;
        };
        self.next.coerced = frame.coerced;
        if frame.coerced {
            return;
        }
        let depth = self.frames.len() - 1;
        for (i, pattern) in self.coercions.iter().enumerate() {
            if frame.live & (1 << i) == 0 {
                continue;
            }
            let matches = match segment {
                Child::Key(key) => pattern.matches_key_at(depth, key),
                Child::Index(index) => pattern.matches_index_at(depth, index),
            };
            if !matches {
                continue;
            }
            if pattern.depth() == depth + 1 {
                self.next.coerced = true;
            } else {
                self.next.live |= 1 << i;
            }
        }
        if self.next.coerced {
            return;
        }
        for &id in self.arena.get(frame.nodes.clone()).unwrap_or_default() {
            let node = self.index.node(id);
            let child = match segment {
                Child::Key(key) => node.member(key),
                Child::Index(index) => node.item(index),
            };
            let Some(child) = child else {
                continue;
            };
            for &applied in &self.index.node(child).applied {
                if !self.next.nodes.contains(&applied) {
                    self.next.nodes.push(applied);
                }
            }
        }
    }

    /// The JSON pointer of the innermost `depth` frames' current members (all of them: the
    /// value being settled; one fewer: the innermost container).
    fn pointer(&self, raw: &str, depth: usize) -> String {
        let mut out = String::new();
        for frame in self.frames.iter().take(depth) {
            match &frame.current {
                Segment::Key(span) => {
                    let key = decode_key(raw, span.clone()).unwrap_or_default();
                    out = child_pointer(&out, &key);
                }
                Segment::Index(index) => out = child_pointer(&out, &index.to_string()),
                Segment::None => {}
            }
        }
        out
    }

    /// The violations of `keyword` by `instance` at `path`, as the validator words them against
    /// the one-keyword schema `keywords` (in the contract's dialect); empty when the validator
    /// finds none after all.
    fn confirm(
        &self,
        keyword: SchemaKeyword,
        mut keywords: Map<String, Value>,
        instance: &Value,
        path: &str,
    ) -> Proven {
        if let Some(dialect) = &self.index.dialect {
            keywords.insert("$schema".into(), dialect.clone());
        }
        let Ok(one) = Schema::compile(Value::Object(keywords), &[]) else {
            return Vec::new();
        };
        one.violations(instance)
            .into_iter()
            .filter(|v| v.rule == Rule::Schema(keyword) && v.path.is_empty())
            .map(|mut v| {
                v.path = path.to_owned();
                v
            })
            .collect()
    }

    /// [`Checker::confirm`] of one keyword worth `value`.
    fn confirm_one(
        &self,
        keyword: SchemaKeyword,
        value: &Value,
        instance: &Value,
        path: &str,
    ) -> Proven {
        let mut keywords = Map::new();
        keywords.insert(keyword.as_str().to_owned(), value.clone());
        self.confirm(keyword, keywords, instance, path)
    }

    /// The member `key` (its key at `key_end`) of the object `frame`, which `node` forbids:
    /// confirmed on the object so far plus that member.
    fn extra_member(
        &self,
        raw: &str,
        frame: &Frame,
        key_end: usize,
        key: &str,
        node: &super::schema::Node,
    ) -> Proven {
        let so_far = render(raw, frame.start, key_end)
            .and_then(|text| serde_json::from_str::<Value>(&text).ok());
        let Some(Value::Object(mut object)) = so_far else {
            return Vec::new();
        };
        object.insert(key.to_owned(), Value::Null);
        // `{}`, not `true`: draft-04 knows no boolean schemas.
        let names = node
            .properties
            .keys()
            .map(|name| (name.clone(), Value::Object(Map::new())));
        let mut keywords = Map::new();
        keywords.insert("properties".into(), Value::Object(names.collect()));
        let additional = SchemaKeyword::AdditionalProperties;
        keywords.insert(additional.as_str().into(), Value::Bool(false));
        let path = self.pointer(raw, self.frames.len().saturating_sub(1));
        self.confirm(additional, keywords, &Value::Object(object), &path)
    }

    /// Ends checking when `proven` holds something.
    fn report(&mut self, proven: Proven) -> Result<(), Proven> {
        if proven.is_empty() {
            return Ok(());
        }
        self.enabled = false;
        Err(proven)
    }

    /// The `type`, `enum` and `const` violations of `instance` (of JSON type `kind`, one of
    /// [`ty`]'s bits) by `nodes`; `integral` says a number is written without fraction or
    /// exponent.
    fn check_value(
        &self,
        nodes: &[NodeId],
        kind: u8,
        integral: bool,
        instance: &mut Lazy<'_>,
        path: &dyn Fn() -> String,
        with_contents: bool,
    ) -> Proven {
        let mut proven = Vec::new();
        for &id in nodes {
            let node = self.index.node(id);
            let type_ok = node.types == 0
                || node.types & kind != 0
                || (kind == ty::NUMBER && integral && node.types & ty::INTEGER != 0);
            if !type_ok && let (Some(keyword), Some(value)) = (&node.type_keyword, instance.get()) {
                proven.extend(self.confirm_one(SchemaKeyword::Type, keyword, value, &path()));
            }
            if !with_contents {
                continue;
            }
            if let Some(options) = &node.enumeration
                && let Some(value) = instance.get()
                && !options.as_array().is_some_and(|o| o.contains(value))
            {
                proven.extend(self.confirm_one(SchemaKeyword::Enum, options, value, &path()));
            }
            if let Some(constant) = &node.constant
                && let Some(value) = instance.get()
                && constant != value
            {
                proven.extend(self.confirm_one(SchemaKeyword::Const, constant, value, &path()));
            }
        }
        proven
    }

    /// The nodes of `frame`.
    fn nodes_of(&self, frame: &Frame) -> &[NodeId] {
        self.arena.get(frame.nodes.clone()).unwrap_or_default()
    }
}

/// A member or an item, as [`Checker::descend`] takes it.
#[derive(Debug, Clone, Copy)]
enum Child<'a> {
    Key(&'a str),
    Index(usize),
}

/// A value decoded on first need (most settled values are never looked at).
struct Lazy<'a> {
    make: &'a dyn Fn() -> Option<Value>,
    value: Option<Option<Value>>,
}

impl<'a> Lazy<'a> {
    fn new(make: &'a dyn Fn() -> Option<Value>) -> Self {
        Self { make, value: None }
    }

    fn get(&mut self) -> Option<&Value> {
        let make = self.make;
        self.value.get_or_insert_with(make).as_ref()
    }
}

/// The key written at `span` (quotes included), unescaped.
fn decode_key(raw: &str, span: Range<usize>) -> Option<Cow<'_, str>> {
    let text = raw.get(span)?;
    let inner = text.get(1..text.len().checked_sub(1)?)?;
    if inner.contains('\\') {
        serde_json::from_str::<String>(text).ok().map(Cow::Owned)
    } else {
        Some(Cow::Borrowed(inner))
    }
}

impl Sink for Checker {
    fn item(&mut self, index: usize) {
        if !self.enabled {
            return;
        }
        if let Some(frame) = self.frames.last_mut() {
            frame.current = Segment::Index(index);
        }
        self.descend(Child::Index(index));
    }

    fn key(&mut self, raw: &str, span: Range<usize>) -> Result<(), Proven> {
        if !self.enabled {
            return Ok(());
        }
        let Some(top) = self.frames.last_mut() else {
            return Ok(());
        };
        top.current = Segment::Key(span.clone());
        let frame = top.clone();
        self.next.nodes.clear();
        self.next.live = 0;
        self.next.coerced = frame.coerced;
        if frame.coerced || (frame.nodes.is_empty() && frame.live == 0) {
            return Ok(());
        }
        let Some(key) = decode_key(raw, span.clone()) else {
            return Ok(());
        };
        let mut seen = frame.seen;
        let mut bit = 0;
        let mut proven = Vec::new();
        for &id in self.nodes_of(&frame) {
            let node = self.index.node(id);
            for name in &node.required {
                if bit < 64 && *name == key {
                    seen |= 1 << bit;
                }
                bit += 1;
            }
            if node.forbids(&key) {
                proven.extend(self.extra_member(raw, &frame, span.end, &key, node));
            }
        }
        if let Some(top) = self.frames.last_mut() {
            top.seen = seen;
        }
        self.descend(Child::Key(&key));
        self.report(proven)
    }

    fn open(&mut self, at: usize, object: bool) {
        if !self.enabled {
            return;
        }
        let from = self.arena.len();
        self.arena.extend_from_slice(&self.next.nodes);
        self.frames.push(Frame {
            nodes: from..self.arena.len(),
            live: self.next.live,
            coerced: self.next.coerced,
            object,
            start: at,
            current: Segment::None,
            seen: 0,
        });
        self.next.nodes.clear();
    }

    fn scalar(&mut self, raw: &str, span: Range<usize>, kind: Scalar) -> Result<(), Proven> {
        if !self.enabled || self.next.coerced || self.next.nodes.is_empty() {
            return Ok(());
        }
        let text = raw.get(span).unwrap_or_default();
        let (bit, integral) = match kind {
            Scalar::String => (ty::STRING, false),
            Scalar::Number => (ty::NUMBER, !text.contains(['.', 'e', 'E'])),
            Scalar::Bool => (ty::BOOLEAN, false),
            Scalar::Null => (ty::NULL, false),
        };
        let make = || serde_json::from_str::<Value>(text).ok();
        let mut instance = Lazy::new(&make);
        let depth = self.frames.len();
        let path = || self.pointer(raw, depth);
        let proven = self.check_value(&self.next.nodes, bit, integral, &mut instance, &path, true);
        self.report(proven)
    }

    fn close(&mut self, raw: &str, end: usize) -> Result<(), Proven> {
        if !self.enabled {
            return Ok(());
        }
        let Some(frame) = self.frames.last().cloned() else {
            return Ok(());
        };
        let mut proven = Vec::new();
        if !frame.coerced && !frame.nodes.is_empty() {
            let make = || {
                render(raw, frame.start, end)
                    .and_then(|text| serde_json::from_str::<Value>(&text).ok())
            };
            let mut instance = Lazy::new(&make);
            let depth = self.frames.len() - 1;
            let path = || self.pointer(raw, depth);
            let bit = if frame.object { ty::OBJECT } else { ty::ARRAY };
            let nodes = self.nodes_of(&frame);
            proven = self.check_value(nodes, bit, false, &mut instance, &path, frame.live == 0);
            if frame.object {
                let mut bit = 0;
                for &id in nodes {
                    let node = self.index.node(id);
                    let from = bit;
                    bit += node.required.len();
                    let missing = (from..bit).any(|b| b >= 64 || frame.seen & (1 << b) == 0);
                    if !missing {
                        continue;
                    }
                    if let Some(object) = instance.get() {
                        let names = node.required.iter().cloned().map(Value::String);
                        let names = Value::Array(names.collect());
                        proven.extend(self.confirm_one(
                            SchemaKeyword::Required,
                            &names,
                            object,
                            &path(),
                        ));
                    }
                }
            }
        }
        self.frames.pop();
        self.arena.truncate(frame.nodes.start);
        self.report(proven)
    }
}
