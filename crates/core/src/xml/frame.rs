//! [`Frame`]: one open element while [`read`](super::read()) walks a document — its name, its
//! shape, the members read so far and its text — and the pieces that turn a frame into JSON.
//!
//! Nothing here allocates on the common path beyond the value itself: a frame's JSON pointer
//! is built only when a violation or repair needs it ([`pointer`]), a known element's name is
//! borrowed from the shape, and text stays borrowed from the document while it is one piece.

use super::shape::{Member, Scalar, Shape};
use serde_json::{Map, Number, Value};
use std::borrow::Cow;
use std::fmt::Write as _;

/// One open element.
pub(super) struct Frame<'s, 'a> {
    /// The element's name: the shape's spelling when the shape knows it (so the key costs no
    /// decoding), else the name as read.
    pub name: Cow<'s, str>,
    /// Its index in the parent's array when its member repeats (the pointer's last segment).
    pub index: Option<usize>,
    pub shape: &'s Shape,
    pub members: Map<String, Value>,
    pub text: Text<'a>,
    /// Kept (false: inside an element the shape leaves out; read only for well-formedness).
    pub kept: bool,
}

impl<'s> Frame<'s, '_> {
    /// A frame with nothing read yet.
    pub fn new(name: Cow<'s, str>, index: Option<usize>, shape: &'s Shape, kept: bool) -> Self {
        Self {
            name,
            index,
            shape,
            members: Map::new(),
            text: Text::default(),
            kept,
        }
    }
}

/// The index a new occurrence of `member` (named `name`) gets among the members `parent` has
/// read: `Some` only for members that repeat.
pub(super) fn index_in(
    parent: &Frame<'_, '_>,
    name: &str,
    member: Option<&Member>,
) -> Option<usize> {
    if !member.is_some_and(|m| m.repeated) {
        return None;
    }
    let count = parent
        .members
        .get(name)
        .and_then(Value::as_array)
        .map_or(0, Vec::len);
    Some(count)
}

/// The JSON pointer of the last of `stack` and `then` (the root frame is the empty pointer).
pub(super) fn pointer<'f, 's: 'f, 'a: 'f>(
    stack: &'f [Frame<'s, 'a>],
    then: Option<&'f Frame<'s, 'a>>,
) -> String {
    let mut out = String::new();
    for frame in stack.iter().chain(then).skip(1) {
        out.push('/');
        out.push_str(&escape_pointer(&frame.name));
        if let Some(index) = frame.index {
            let _ = write!(out, "/{index}");
        }
    }
    out
}

/// `base` followed by the segment `name`.
pub(super) fn pointer_to(base: &str, name: &str) -> String {
    format!("{base}/{}", escape_pointer(name))
}

fn escape_pointer(segment: &str) -> Cow<'_, str> {
    if segment.contains(['~', '/']) {
        segment.replace('~', "~0").replace('/', "~1").into()
    } else {
        segment.into()
    }
}

/// The text of an element as it arrives in pieces (text, references, CDATA). The value is
/// the text trimmed, so whitespace before the first other character is dropped as it comes;
/// the text stays borrowed from the document while it is one piece.
#[derive(Default)]
pub(super) struct Text<'a>(Cow<'a, str>);

impl<'a> Text<'a> {
    /// Appends `piece`.
    pub fn push(&mut self, piece: Cow<'a, str>) {
        if self.blank() {
            self.0 = piece;
        } else {
            self.0.to_mut().push_str(&piece);
        }
    }

    /// Appends `c`.
    pub fn push_char(&mut self, c: char) {
        if self.blank() {
            self.0 = Cow::Owned(c.to_string());
        } else {
            self.0.to_mut().push(c);
        }
    }

    /// Only whitespace so far (which trimming would remove).
    fn blank(&self) -> bool {
        self.0.trim_start().is_empty()
    }

    /// The text, trimmed; moved, not copied, when it was built in pieces.
    pub fn into_trimmed(self) -> String {
        match self.0 {
            Cow::Borrowed(text) => text.trim().to_owned(),
            Cow::Owned(mut text) => {
                text.truncate(text.trim_end().len());
                let start = text.len() - text.trim_start().len();
                text.drain(..start);
                text
            }
        }
    }
}

/// `text` read as the shape's scalar; text that is not one stays a string (the schema then
/// reports the type, with the text quoted).
pub(super) fn typed(text: Cow<'_, str>, shape: &Shape) -> Value {
    match shape {
        Shape::Text(scalar) => typed_scalar(text, *scalar),
        _ => Value::String(text.into_owned()),
    }
}

pub(super) fn typed_scalar(text: Cow<'_, str>, scalar: Scalar) -> Value {
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
    parsed.unwrap_or_else(|| Value::String(text.into_owned()))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn pieces(parts: &[&str]) -> String {
        let mut text = Text::default();
        for part in parts {
            text.push(Cow::Borrowed(part));
        }
        text.into_trimmed()
    }

    #[test]
    fn text_in_pieces_is_the_trimmed_concatenation() {
        for parts in [
            &["  a ", "b  "][..],
            &["\n  ", " \t", "x"],
            &["  ", ""],
            &[""],
            &[" a", "  ", "b "],
            &["\u{a0}", "é "],
        ] {
            assert_eq!(pieces(parts), parts.concat().trim(), "{parts:?}");
        }
        let mut text = Text::default();
        text.push_char(' ');
        text.push_char('x');
        text.push(Cow::Borrowed(" y "));
        text.push_char(' ');
        assert_eq!(text.into_trimmed(), "x y");
    }

    #[test]
    fn pointers_escape_and_index() {
        let shape = Shape::Any;
        let stack = [
            Frame::new(Cow::Borrowed("root"), None, &shape, true),
            Frame::new(Cow::Borrowed("a/b~"), Some(2), &shape, true),
        ];
        let leaf = Frame::new(Cow::Borrowed("c"), None, &shape, true);
        assert_eq!(pointer(&stack[..1], None), "");
        assert_eq!(pointer(&stack, Some(&leaf)), "/a~1b~0/2/c");
        assert_eq!(pointer_to("/x", "@a/b"), "/x/@a~1b");
    }

    #[test]
    fn scalars_follow_the_schema() {
        let number = |t: &str| typed_scalar(Cow::Borrowed(t), Scalar::Number);
        assert_eq!(number(" 2 "), Value::from(2));
        assert_eq!(number("0.5"), Value::from(0.5));
        assert_eq!(number(" x "), Value::from(" x "));
        assert_eq!(
            typed_scalar(Cow::Borrowed("true"), Scalar::Boolean),
            Value::Bool(true)
        );
        assert_eq!(typed(Cow::Borrowed(" 1 "), &Shape::Any), Value::from(" 1 "));
    }
}
