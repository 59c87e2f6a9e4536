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

use super::shape::{Member, Scalar, Shape};
use crate::report::{Repair, Violation};
use crate::schema::cut;
use quick_xml::Reader;
use quick_xml::events::{BytesStart, Event};
use serde_json::{Map, Number, Value};

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

/// One open element.
struct Frame<'s> {
    /// JSON pointer of the element's value.
    path: String,
    name: String,
    shape: &'s Shape,
    members: Map<String, Value>,
    text: String,
    /// Kept (false: inside an element the shape leaves out; read only for well-formedness).
    kept: bool,
}

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

/// The document inside `raw`: without a byte-order mark, a code fence, or text before the
/// root's start tag and after its end tag (each a reported repair).
fn locate<'a>(raw: &'a str, root: &str, repairs: &mut Vec<Repair>) -> Result<&'a str, Violation> {
    let text = raw.strip_prefix('\u{feff}').unwrap_or(raw).trim();
    let open = format!("<{root}");
    let Some(root_start) = find_start_tag(text, &open) else {
        return Err(Violation::new(
            "",
            "not_xml",
            format!("the reply contains no <{root}> document; send only the XML"),
        )
        .with_found(cut(text, 60)));
    };
    // A declaration or DOCTYPE before the root belongs to the document: the parser reads the
    // encoding from the one and refuses the other.
    let prolog = ["<?xml", "<!DOCTYPE", "<!doctype"]
        .iter()
        .filter_map(|mark| text[..root_start].find(mark))
        .min();
    let start = prolog.unwrap_or(root_start);
    let close = format!("</{root}>");
    let end = text
        .rfind(&close)
        .filter(|&end| end >= start)
        .map_or(text.len(), |end| end + close.len());
    let (before, after) = (&text[..start], &text[end..]);
    if !before.trim().is_empty() || !after.trim().is_empty() {
        let fenced = before.trim_end().ends_with("```xml")
            || before.trim_end().ends_with("```")
            || after.trim_start().starts_with("```");
        let prose = strip_fence_marks(before).trim().is_empty()
            && strip_fence_marks(after).trim().is_empty();
        if fenced {
            repairs.push(Repair::text(
                "code_fence",
                1,
                "removed the code fence around the XML",
            ));
        }
        if !prose {
            repairs.push(Repair::text(
                "surrounding_prose",
                1,
                "removed the text before and after the XML document",
            ));
        }
    }
    Ok(&text[start..end])
}

/// The first `<root` that is a whole tag name (`<root>`, `<root `, `<root/`).
fn find_start_tag(text: &str, open: &str) -> Option<usize> {
    let mut from = 0;
    while let Some(found) = text[from..].find(open) {
        let at = from + found;
        match text[at + open.len()..].chars().next() {
            Some('>' | '/' | ' ' | '\t' | '\n' | '\r') => return Some(at),
            _ => from = at + open.len(),
        }
    }
    None
}

fn strip_fence_marks(text: &str) -> String {
    text.replace("```xml", "").replace("```", "")
}

struct State {
    repairs: Vec<Repair>,
    violations: Vec<Violation>,
    nodes: usize,
}

impl State {
    fn parse<'s>(
        &mut self,
        document: &str,
        root: &str,
        shape: &'s Shape,
    ) -> Result<Value, Violation> {
        let mut reader = Reader::from_str(document);
        let config = reader.config_mut();
        config.check_end_names = true;
        config.expand_empty_elements = false;
        let mut stack: Vec<Frame<'s>> = Vec::new();
        let mut value = None;
        loop {
            let event = reader.read_event().map_err(|e| {
                syntax(
                    &e.to_string(),
                    document,
                    reader.error_position(),
                    stack.last(),
                )
            })?;
            match event {
                Event::DocType(_) => {
                    return Err(Violation::new(
                        "",
                        "xml_doctype",
                        "a DOCTYPE or entity declaration is not accepted; send the document without one",
                    ));
                }
                Event::Decl(decl) => {
                    if let Some(Ok(encoding)) = decl.encoding() {
                        let encoding = String::from_utf8_lossy(&encoding).to_ascii_lowercase();
                        if encoding != "utf-8" && encoding != "utf8" {
                            return Err(Violation::new(
                                "",
                                "xml_encoding",
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
                }
                Event::Empty(start) => {
                    let frame = self.open(&start, &stack, root, shape, value.is_some())?;
                    self.close(frame, &mut stack, &mut value);
                }
                Event::End(_) => {
                    if let Some(frame) = stack.pop() {
                        self.close(frame, &mut stack, &mut value);
                    }
                }
                Event::Text(text) => {
                    let decoded = text.xml10_content().map_err(|e| {
                        syntax(
                            &e.to_string(),
                            document,
                            reader.buffer_position(),
                            stack.last(),
                        )
                    })?;
                    push_text(&mut stack, &decoded, document, reader.buffer_position())?;
                }
                Event::CData(data) => {
                    let decoded = data.decode().map_err(|e| {
                        syntax(
                            &e.to_string(),
                            document,
                            reader.buffer_position(),
                            stack.last(),
                        )
                    })?;
                    push_text(&mut stack, &decoded, document, reader.buffer_position())?;
                }
                Event::GeneralRef(reference) => {
                    let resolved = resolve_reference(&reference).map_err(|message| {
                        Violation::new(
                            stack.last().map_or("", |f| f.path.as_str()),
                            "xml_entity",
                            message,
                        )
                    })?;
                    push_text(&mut stack, &resolved, document, reader.buffer_position())?;
                }
                Event::Comment(_) | Event::PI(_) => {}
                Event::Eof => break,
            }
        }
        if let Some(open) = stack.last() {
            return Err(Violation::new(
                open.path.clone(),
                "truncated",
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
                "not_xml",
                format!("the reply contains no <{root}> element"),
            )
        })
    }

    /// A frame for a start tag, with its attributes read.
    fn open<'s>(
        &mut self,
        start: &BytesStart<'_>,
        stack: &[Frame<'s>],
        root: &str,
        root_shape: &'s Shape,
        root_done: bool,
    ) -> Result<Frame<'s>, Violation> {
        let name = String::from_utf8_lossy(start.name().as_ref()).into_owned();
        self.count(stack.last())?;
        if stack.len() >= MAX_DEPTH {
            return Err(Violation::new(
                stack.last().map_or("", |f| f.path.as_str()),
                "xml_depth",
                format!("elements nest more than {MAX_DEPTH} deep"),
            ));
        }
        let (path, shape, kept) = match stack.last() {
            None => {
                if root_done {
                    return Err(Violation::new(
                        "",
                        "xml_syntax",
                        format!("a second top-level element <{name}> follows the document"),
                    ));
                }
                if name != root {
                    return Err(Violation::new(
                        "",
                        "root",
                        format!("the root element must be <{root}>, found <{name}>"),
                    ));
                }
                (String::new(), root_shape, true)
            }
            Some(parent) => {
                let member = parent.shape.member(&name);
                let kept = parent.kept && (member.is_some() || parent.shape.keeps_unknown());
                let path = child_path(parent, &name, member);
                if parent.kept && !kept {
                    self.repairs.push(Repair::at(
                        "ignored_element",
                        path.clone(),
                        format!("left out <{name}>, which the contract does not know"),
                    ));
                }
                let shape = member.map_or(&ANY, |m| &m.shape);
                (path, shape, kept)
            }
        };
        let mut frame = Frame {
            path,
            name,
            shape,
            members: Map::new(),
            text: String::new(),
            kept,
        };
        for attribute in start.attributes() {
            let attribute = attribute.map_err(|e| {
                Violation::new(
                    frame.path.clone(),
                    "xml_syntax",
                    format!("bad attribute: {e}"),
                )
            })?;
            self.count(Some(&frame))?;
            let key = format!("@{}", String::from_utf8_lossy(attribute.key.as_ref()));
            let text = attribute
                .normalized_value(quick_xml::XmlVersion::Implicit1_0)
                .map_err(|e| {
                Violation::new(
                    format!("{}/{}", frame.path, escape_pointer(&key)),
                    "xml_entity",
                    format!("attribute {key}: {e}; only &lt; &gt; &amp; &quot; &apos; and character references are accepted"),
                )
            })?;
            if !frame.kept {
                continue;
            }
            match frame.shape.member(&key) {
                Some(member) => {
                    let value = typed(&text, &member.shape);
                    frame.members.insert(key, value);
                }
                None if frame.shape.keeps_unknown() => {
                    frame.members.insert(key, Value::String(text.into_owned()));
                }
                None => self.repairs.push(Repair::at(
                    "ignored_attribute",
                    format!("{}/{}", frame.path, escape_pointer(&key)),
                    format!("left out attribute {key}, which the contract does not know"),
                )),
            }
        }
        Ok(frame)
    }

    fn count(&mut self, at: Option<&Frame<'_>>) -> Result<(), Violation> {
        self.nodes += 1;
        if self.nodes > MAX_NODES {
            return Err(Violation::new(
                at.map_or("", |f| f.path.as_str()),
                "xml_size",
                format!("the document has more than {MAX_NODES} elements and attributes"),
            ));
        }
        Ok(())
    }

    /// Finishes `frame` and puts its value into its parent (or makes it the document's).
    fn close(&mut self, frame: Frame<'_>, stack: &mut [Frame<'_>], value: &mut Option<Value>) {
        if !frame.kept {
            return;
        }
        let Frame {
            path,
            name,
            shape,
            mut members,
            text,
            ..
        } = frame;
        let text = text.trim();
        let element = match shape {
            // Its attributes and children were left out (and reported) as they came.
            Shape::Text(scalar) => typed_scalar(text, *scalar),
            Shape::Any if members.is_empty() => Value::String(text.to_owned()),
            Shape::Object { .. } | Shape::Any => {
                if !text.is_empty() {
                    if shape.member("#text").is_some() || shape.keeps_unknown() {
                        let typed = match shape.member("#text") {
                            Some(member) => typed(text, &member.shape),
                            None => Value::String(text.to_owned()),
                        };
                        members.insert("#text".into(), typed);
                    } else {
                        self.repairs.push(Repair::at(
                            "ignored_text",
                            path.clone(),
                            format!("left out the text inside <{name}>, which the contract does not take"),
                        ));
                    }
                }
                Value::Object(members)
            }
        };
        let Some(parent) = stack.last_mut() else {
            *value = Some(element);
            return;
        };
        let repeated = parent.shape.member(&name).is_some_and(|m| m.repeated);
        if repeated {
            match parent
                .members
                .entry(name)
                .or_insert_with(|| Value::Array(Vec::new()))
            {
                Value::Array(items) => items.push(element),
                other => *other = Value::Array(vec![element]),
            }
        } else if parent.members.contains_key(&name) {
            self.violations.push(Violation::new(
                path,
                "xml_repeated",
                format!("<{name}> appears more than once; the contract allows exactly one"),
            ));
        } else {
            parent.members.insert(name, element);
        }
    }
}

/// The JSON pointer of child `name` of `parent`: with the index it will get when it repeats.
fn child_path(parent: &Frame<'_>, name: &str, member: Option<&Member>) -> String {
    let escaped = escape_pointer(name);
    if member.is_some_and(|m| m.repeated) {
        let index = parent
            .members
            .get(name)
            .and_then(Value::as_array)
            .map_or(0, Vec::len);
        format!("{}/{escaped}/{index}", parent.path)
    } else {
        format!("{}/{escaped}", parent.path)
    }
}

fn escape_pointer(segment: &str) -> std::borrow::Cow<'_, str> {
    if segment.contains(['~', '/']) {
        segment.replace('~', "~0").replace('/', "~1").into()
    } else {
        segment.into()
    }
}

fn push_text(
    stack: &mut [Frame<'_>],
    text: &str,
    document: &str,
    position: u64,
) -> Result<(), Violation> {
    match stack.last_mut() {
        Some(frame) => {
            if frame.kept {
                frame.text.push_str(text);
            }
            Ok(())
        }
        None if text.trim().is_empty() => Ok(()),
        None => Err(syntax(
            "text outside the root element",
            document,
            position,
            None,
        )),
    }
}

/// `&name;` or `&#…;` → its text. Only the predefined entities and character references exist
/// here: with DOCTYPEs refused, no other entity can be declared.
fn resolve_reference(reference: &quick_xml::events::BytesRef<'_>) -> Result<String, String> {
    if reference.is_char_ref() {
        return match reference.resolve_char_ref() {
            Ok(Some(c)) => Ok(c.to_string()),
            Ok(None) => Err("a character reference names no character".into()),
            Err(e) => Err(format!("bad character reference: {e}")),
        };
    }
    let name = reference
        .decode()
        .map_err(|e| format!("bad entity reference: {e}"))?;
    quick_xml::escape::resolve_predefined_entity(&name)
        .map(str::to_owned)
        .ok_or_else(|| {
            format!("undefined entity &{name};: only &lt; &gt; &amp; &quot; &apos; and character references are accepted")
        })
}

/// `text` read as the shape's scalar; text that is not one stays a string (the schema then
/// reports the type, with the text quoted).
fn typed(text: &str, shape: &Shape) -> Value {
    match shape {
        Shape::Text(scalar) => typed_scalar(text, *scalar),
        _ => Value::String(text.to_owned()),
    }
}

fn typed_scalar(text: &str, scalar: Scalar) -> Value {
    let trimmed = text.trim();
    let parsed = match scalar {
        Scalar::String => None,
        Scalar::Boolean => match trimmed {
            "true" => Some(Value::Bool(true)),
            "false" => Some(Value::Bool(false)),
            _ => None,
        },
        Scalar::Integer => trimmed.parse::<i64>().ok().map(Value::from),
        Scalar::Number => trimmed.parse::<i64>().ok().map(Value::from).or_else(|| {
            trimmed
                .parse::<f64>()
                .ok()
                .and_then(Number::from_f64)
                .map(Value::Number)
        }),
    };
    parsed.unwrap_or_else(|| Value::String(text.to_owned()))
}

fn syntax(message: &str, document: &str, position: u64, open: Option<&Frame<'_>>) -> Violation {
    let at = usize::try_from(position)
        .unwrap_or(usize::MAX)
        .min(document.len());
    let at = (0..=at)
        .rev()
        .find(|&i| document.is_char_boundary(i))
        .unwrap_or(0);
    Violation::new(
        open.map_or("", |f| f.path.as_str()),
        "xml_syntax",
        format!("the XML is not well-formed at byte {at}: {message}"),
    )
    .with_found(cut(&document[at..], 60))
}

fn tail(text: &str) -> String {
    let start = text.len().saturating_sub(60);
    let start = (start..=text.len())
        .find(|&i| text.is_char_boundary(i))
        .unwrap_or(text.len());
    text[start..].to_owned()
}
