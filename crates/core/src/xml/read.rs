//! [`read`]: an XML reply → the JSON value its contract's schema validates.
//!
//! Safe by construction: a DOCTYPE (and so any entity declaration) is a violation, never
//! processed; only the five predefined entities and character references are resolved; there
//! is nothing to fetch. Elements nest at most [`MAX_DEPTH`] deep and a document holds at most
//! [`MAX_NODES`] elements and attributes, so memory is bounded by the reply's size.
//!
//! Mapping, guided by the [`Shape`] the schema gives: attributes become `"@name"` members typed
//! by the schema; children become members by name, arrays when the schema says they repeat
//! (one occurrence too); a text-only element becomes a string (or the scalar its schema
//! names); CDATA is text; text beside attributes or children is `"#text"`. Elements,
//! attributes and text the shape does not keep are left out and reported as repairs (the
//! lenient reading of the protocol's forward compatibility). The value is the root element's
//! content; the root's name is checked.
//!
//! Cheap on the common path: the text between two pieces of markup is read in one step
//! ([`text_run`]), element and attribute names are matched as bytes and keyed with the
//! shape's own strings, and a JSON pointer is only built when a violation or repair names it.

use super::frame::{Frame, index_in, pointer, pointer_to, typed, typed_scalar};
use super::locate::locate;
use super::run::{Resolved, resolve_reference, text_run};
use super::shape::Shape;
use crate::repair_kind::RepairKind;
use crate::report::{Repair, Violation};
use crate::rule::Rule;
use quick_xml::Reader;
use quick_xml::events::{BytesStart, Event};
use serde_json::Value;
use std::borrow::Cow;

/// Deepest element nesting read.
pub const MAX_DEPTH: usize = 64;
/// Most elements and attributes in one document.
pub const MAX_NODES: usize = 100_000;

/// What reading produced: the value (None when the document could not be read at all), the
/// violations found on the way, and the repairs (text around the document, parts left out).
#[derive(Debug, Clone, PartialEq)]
pub struct XmlRead {
    /// The root element's content.
    pub value: Option<Value>,
    /// Why it cannot be read, or what is wrong in a readable one (a repeated single element).
    pub violations: Vec<Violation>,
    /// Changes made to read it.
    pub repairs: Vec<Repair>,
}

/// The shape of an element the schema does not describe.
static ANY: Shape = Shape::Any;

/// Reads `raw` (the reply) as a document whose root element is `root`.
pub fn read(raw: &str, root: &str, shape: &Shape) -> XmlRead {
    let mut repairs = Vec::new();
    let document = match locate(raw, root, &mut repairs) {
        Ok(document) => document,
        Err(violation) => return rejected(violation, repairs),
    };
    let mut state = State {
        repairs,
        violations: Vec::new(),
        nodes: 0,
    };
    match state.parse(document, root, shape) {
        Ok(value) => XmlRead {
            value: Some(value),
            violations: state.violations,
            repairs: state.repairs,
        },
        Err(violation) => rejected(violation, state.repairs),
    }
}

fn rejected(violation: Violation, repairs: Vec<Repair>) -> XmlRead {
    XmlRead {
        value: None,
        violations: vec![violation],
        repairs,
    }
}

struct State {
    repairs: Vec<Repair>,
    violations: Vec<Violation>,
    nodes: usize,
}

impl State {
    fn parse<'s, 'a>(
        &mut self,
        document: &'a str,
        root: &'s str,
        shape: &'s Shape,
    ) -> Result<Value, Violation> {
        let mut reader = Reader::from_str(document);
        let config = reader.config_mut();
        config.check_end_names = true;
        config.expand_empty_elements = false;
        let mut stack: Vec<Frame<'s, 'a>> = Vec::with_capacity(8);
        let mut value = None;
        loop {
            let event = reader
                .read_event()
                .map_err(|e| syntax(&e.to_string(), document, reader.error_position(), &stack))?;
            let mut markup = false;
            match event {
                Event::DocType(_) => {
                    return Err(Violation::new(
                        "",
                        Rule::XmlDoctype,
                        "a DOCTYPE or entity declaration is not accepted; send the document without one",
                    ));
                }
                Event::Decl(decl) => {
                    if let Some(Ok(encoding)) = decl.encoding() {
                        let encoding = String::from_utf8_lossy(&encoding).to_ascii_lowercase();
                        if encoding != "utf-8" && encoding != "utf8" {
                            return Err(Violation::new(
                                "",
                                Rule::XmlEncoding,
                                format!(
                                    "the document declares encoding {encoding:?}; only UTF-8 is accepted"
                                ),
                            ));
                        }
                    }
                }
                Event::Start(start) => {
                    let frame = self.open(&start, &stack, root, shape, value.is_some())?;
                    stack.push(frame);
                    markup = true;
                }
                Event::Empty(start) => {
                    let frame = self.open(&start, &stack, root, shape, value.is_some())?;
                    self.close(frame, &mut stack, &mut value);
                    markup = true;
                }
                Event::End(_) => {
                    if let Some(frame) = stack.pop() {
                        self.close(frame, &mut stack, &mut value);
                    }
                    markup = true;
                }
                Event::Text(text) => {
                    let decoded = text.xml10_content().map_err(|e| {
                        syntax(&e.to_string(), document, reader.buffer_position(), &stack)
                    })?;
                    push_text(&mut stack, decoded, document, reader.buffer_position())?;
                }
                Event::CData(data) => {
                    let decoded = data.decode().map_err(|e| {
                        syntax(&e.to_string(), document, reader.buffer_position(), &stack)
                    })?;
                    push_text(&mut stack, decoded, document, reader.buffer_position())?;
                    markup = true;
                }
                Event::GeneralRef(reference) => {
                    let at = reader.buffer_position();
                    match resolve_reference(&reference) {
                        Ok(Resolved::Text(text)) => {
                            push_text(&mut stack, Cow::Borrowed(text), document, at)?;
                        }
                        Ok(Resolved::Char(c)) => push_char(&mut stack, c, document, at)?,
                        Err(message) => {
                            return Err(Violation::new(
                                pointer(&stack, None),
                                Rule::XmlEntity,
                                message,
                            ));
                        }
                    }
                }
                Event::Comment(_) | Event::PI(_) => markup = true,
                Event::Eof => break,
            }
            // The text after markup inside the root, read in one step when it is plain.
            if markup && let Some(frame) = stack.last_mut() {
                text_run(&mut reader, document, frame);
            }
        }
        if let Some(open) = stack.last() {
            return Err(Violation::new(
                pointer(&stack, None),
                Rule::Truncated,
                format!(
                    "the document ends inside <{}>: the reply was cut off; send the whole document",
                    open.name
                ),
            )
            .with_found(tail(document)));
        }
        value.ok_or_else(|| {
            Violation::new(
                "",
                Rule::NotXml,
                format!("the reply contains no <{root}> element"),
            )
        })
    }

    /// A frame for a start tag, with its attributes read.
    fn open<'s, 'a>(
        &mut self,
        start: &BytesStart<'_>,
        stack: &[Frame<'s, 'a>],
        root: &'s str,
        root_shape: &'s Shape,
        root_done: bool,
    ) -> Result<Frame<'s, 'a>, Violation> {
        let qname = start.name();
        let raw_name = qname.as_ref();
        self.count(stack, None)?;
        if stack.len() >= MAX_DEPTH {
            return Err(Violation::new(
                pointer(stack, None),
                Rule::XmlDepth,
                format!("elements nest more than {MAX_DEPTH} deep"),
            ));
        }
        let mut frame = match stack.last() {
            None => {
                let found = || String::from_utf8_lossy(raw_name);
                if root_done {
                    return Err(Violation::new(
                        "",
                        Rule::XmlSyntax,
                        format!(
                            "a second top-level element <{}> follows the document",
                            found()
                        ),
                    ));
                }
                if raw_name != root.as_bytes() {
                    return Err(Violation::new(
                        "",
                        Rule::Root,
                        format!("the root element must be <{root}>, found <{}>", found()),
                    ));
                }
                Frame::new(Cow::Borrowed(root), None, root_shape, true)
            }
            Some(parent) => {
                let entry = parent.shape.entry(raw_name);
                let member = entry.map(|(_, m)| m);
                let kept = parent.kept && (member.is_some() || parent.shape.keeps_unknown());
                let name = match entry {
                    Some((name, _)) => Cow::Borrowed(name),
                    None => Cow::Owned(String::from_utf8_lossy(raw_name).into_owned()),
                };
                let index = index_in(parent, &name, member);
                let shape = member.map_or(&ANY, |m| &m.shape);
                let frame = Frame::new(name, index, shape, kept);
                if parent.kept && !kept {
                    self.repairs.push(Repair::at(
                        RepairKind::IgnoredElement,
                        pointer(stack, Some(&frame)),
                        format!(
                            "left out <{}>, which the contract does not know",
                            frame.name
                        ),
                    ));
                }
                frame
            }
        };
        for attribute in start.attributes() {
            let attribute = attribute.map_err(|e| {
                Violation::new(
                    pointer(stack, Some(&frame)),
                    Rule::XmlSyntax,
                    format!("bad attribute: {e}"),
                )
            })?;
            self.count(stack, Some(&frame))?;
            let key = attribute.key.as_ref();
            let named = || format!("@{}", String::from_utf8_lossy(key));
            let text = attribute
                .normalized_value(quick_xml::XmlVersion::Implicit1_0)
                .map_err(|e| {
                    let key = named();
                    Violation::new(
                        pointer_to(&pointer(stack, Some(&frame)), &key),
                        Rule::XmlEntity,
                        format!("attribute {key}: {e}; only &lt; &gt; &amp; &quot; &apos; and character references are accepted"),
                    )
                })?;
            if !frame.kept {
                continue;
            }
            match frame.shape.attribute(key) {
                Some((name, member)) => {
                    let value = typed(text, &member.shape);
                    frame.members.insert(name.to_owned(), value);
                }
                None if frame.shape.keeps_unknown() => {
                    frame
                        .members
                        .insert(named(), Value::String(text.into_owned()));
                }
                None => {
                    let key = named();
                    self.repairs.push(Repair::at(
                        RepairKind::IgnoredAttribute,
                        pointer_to(&pointer(stack, Some(&frame)), &key),
                        format!("left out attribute {key}, which the contract does not know"),
                    ));
                }
            }
        }
        Ok(frame)
    }

    /// Counts one more node; `stack` and `then` say where (for the violation).
    fn count(
        &mut self,
        stack: &[Frame<'_, '_>],
        then: Option<&Frame<'_, '_>>,
    ) -> Result<(), Violation> {
        self.nodes += 1;
        if self.nodes > MAX_NODES {
            return Err(Violation::new(
                pointer(stack, then),
                Rule::XmlSize,
                format!("the document has more than {MAX_NODES} elements and attributes"),
            ));
        }
        Ok(())
    }

    /// Finishes `frame` and puts its value into its parent (or makes it the document's).
    fn close(
        &mut self,
        mut frame: Frame<'_, '_>,
        stack: &mut [Frame<'_, '_>],
        value: &mut Option<Value>,
    ) {
        if !frame.kept {
            return;
        }
        let text = std::mem::take(&mut frame.text).into_trimmed();
        let shape = frame.shape;
        let element = match shape {
            // Its attributes and children were left out (and reported) as they came.
            Shape::Text(scalar) => typed_scalar(Cow::Owned(text), *scalar),
            Shape::Any if frame.members.is_empty() => Value::String(text),
            Shape::Object { .. } | Shape::Any => {
                if !text.is_empty() {
                    match shape.member("#text") {
                        Some(member) => {
                            let typed = typed(Cow::Owned(text), &member.shape);
                            frame.members.insert("#text".into(), typed);
                        }
                        None if shape.keeps_unknown() => {
                            frame.members.insert("#text".into(), Value::String(text));
                        }
                        None => self.repairs.push(Repair::at(
                            RepairKind::IgnoredText,
                            pointer(stack, Some(&frame)),
                            format!(
                                "left out the text inside <{}>, which the contract does not take",
                                frame.name
                            ),
                        )),
                    }
                }
                Value::Object(std::mem::take(&mut frame.members))
            }
        };
        if stack.is_empty() {
            *value = Some(element);
            return;
        }
        let repeated = frame.index.is_some();
        let duplicate = !repeated
            && stack
                .last()
                .is_some_and(|parent| parent.members.contains_key(frame.name.as_ref()));
        if duplicate {
            self.violations.push(Violation::new(
                pointer(stack, Some(&frame)),
                Rule::XmlRepeated,
                format!(
                    "<{}> appears more than once; the contract allows exactly one",
                    frame.name
                ),
            ));
            return;
        }
        let Some(parent) = stack.last_mut() else {
            return;
        };
        if !repeated {
            parent.members.insert(frame.name.into_owned(), element);
            return;
        }
        match parent.members.get_mut(frame.name.as_ref()) {
            Some(Value::Array(items)) => items.push(element),
            Some(other) => *other = Value::Array(vec![element]),
            None => {
                parent
                    .members
                    .insert(frame.name.into_owned(), Value::Array(first(element)));
            }
        }
    }
}

/// A new array holding `element`, with room for the few more a repeated element usually has.
fn first(element: Value) -> Vec<Value> {
    let mut items = Vec::with_capacity(4);
    items.push(element);
    items
}

/// Appends a piece of text to the open element; outside the root only whitespace may stand.
fn push_text<'a>(
    stack: &mut [Frame<'_, 'a>],
    text: Cow<'a, str>,
    document: &str,
    position: u64,
) -> Result<(), Violation> {
    match stack.last_mut() {
        Some(frame) => {
            if frame.kept {
                frame.text.push(text);
            }
            Ok(())
        }
        None if text.trim().is_empty() => Ok(()),
        None => Err(outside(document, position)),
    }
}

/// [`push_text`] for one character (a character reference).
fn push_char(
    stack: &mut [Frame<'_, '_>],
    c: char,
    document: &str,
    position: u64,
) -> Result<(), Violation> {
    match stack.last_mut() {
        Some(frame) => {
            if frame.kept {
                frame.text.push_char(c);
            }
            Ok(())
        }
        None if c.is_whitespace() => Ok(()),
        None => Err(outside(document, position)),
    }
}

fn outside(document: &str, position: u64) -> Violation {
    syntax("text outside the root element", document, position, &[])
}

fn syntax(message: &str, document: &str, position: u64, stack: &[Frame<'_, '_>]) -> Violation {
    let at = usize::try_from(position)
        .unwrap_or(usize::MAX)
        .min(document.len());
    let at = (0..=at)
        .rev()
        .find(|&i| document.is_char_boundary(i))
        .unwrap_or(0);
    let (line, column) = crate::repair::line_column(document, at);
    Violation::new(
        pointer(stack, None),
        Rule::XmlSyntax,
        format!(
            "the XML is not well-formed at line {line}, column {column} of the document: {message}"
        ),
    )
    .with_found(crate::repair::quote_around(document, at))
}

fn tail(text: &str) -> String {
    let start = text.len().saturating_sub(60);
    let start = (start..=text.len())
        .find(|&i| text.is_char_boundary(i))
        .unwrap_or(text.len());
    text[start..].to_owned()
}
