//! The message template of an expression rule: text with `{this.end}`, `{reply.total}` or
//! `{context.page}` placeholders, each replaced by the JSON value found there (strings quoted,
//! long values cut), or `absent`. `{{` and `}}` write a brace. Read at load: a placeholder that
//! is not a variable followed by member names or indexes is a load error.
//!
//! Hand-written: the placeholders are plain paths, not expressions, so that a message can never
//! cost more than a lookup.

use serde_json::Value;

/// The longest template accepted, in characters.
pub const MAX_MESSAGE_CHARS: usize = 300;
/// The most characters a placeholder's value takes in the message.
const VALUE_CHARS: usize = 60;

/// One piece of a template.
#[derive(Debug, Clone, PartialEq)]
enum Piece {
    Text(String),
    /// A variable (`this`, `reply`, `context`) and the member names / indexes under it.
    Value(String, Vec<String>),
}

/// A message template, read.
#[derive(Debug, Clone, PartialEq)]
pub struct Template {
    pieces: Vec<Piece>,
}

impl Template {
    /// Reads `source`; the error says what is wrong, in words.
    pub fn parse(source: &str) -> Result<Self, String> {
        if source.chars().count() > MAX_MESSAGE_CHARS {
            return Err(format!(
                "message is longer than {MAX_MESSAGE_CHARS} characters"
            ));
        }
        let mut pieces = Vec::new();
        let mut text = String::new();
        let mut chars = source.chars().peekable();
        while let Some(c) = chars.next() {
            match c {
                '{' if chars.peek() == Some(&'{') => {
                    chars.next();
                    text.push('{');
                }
                '}' if chars.peek() == Some(&'}') => {
                    chars.next();
                    text.push('}');
                }
                '{' => {
                    let inner: String = chars.by_ref().take_while(|&c| c != '}').collect();
                    if !text.is_empty() {
                        pieces.push(Piece::Text(std::mem::take(&mut text)));
                    }
                    pieces.push(placeholder(&inner)?);
                }
                '}' => return Err("message has a '}' without '{' (write '}}')".into()),
                c => text.push(c),
            }
        }
        if !text.is_empty() {
            pieces.push(Piece::Text(text));
        }
        Ok(Self { pieces })
    }

    /// The message with each placeholder replaced; `lookup` finds a variable's value.
    pub fn render<'v>(&self, lookup: impl Fn(&str) -> Option<&'v Value>) -> String {
        let mut out = String::new();
        for piece in &self.pieces {
            match piece {
                Piece::Text(text) => out.push_str(text),
                Piece::Value(var, path) => {
                    let found = path.iter().try_fold(lookup(var), |at, key| step(at?, key));
                    match found.flatten() {
                        Some(value) => {
                            out.push_str(&crate::schema::cut(&value.to_string(), VALUE_CHARS))
                        }
                        None => out.push_str("absent"),
                    }
                }
            }
        }
        out
    }

    /// The template with its placeholders written as they were, for the prompt.
    pub fn source_text(&self) -> String {
        let mut out = String::new();
        for piece in &self.pieces {
            match piece {
                Piece::Text(text) => out.push_str(text),
                Piece::Value(var, path) => {
                    out.push('{');
                    out.push_str(var);
                    for key in path {
                        out.push('.');
                        out.push_str(key);
                    }
                    out.push('}');
                }
            }
        }
        out
    }
}

fn step<'v>(at: &'v Value, key: &str) -> Option<Option<&'v Value>> {
    Some(match at {
        Value::Object(map) => map.get(key),
        Value::Array(items) => key.parse::<usize>().ok().and_then(|i| items.get(i)),
        _ => None,
    })
}

fn placeholder(inner: &str) -> Result<Piece, String> {
    let mut parts = inner.trim().split('.');
    let var = parts.next().unwrap_or_default();
    if !super::VARIABLES.contains(&var) {
        return Err(format!(
            "message placeholder {{{inner}}} must start with this, reply or context"
        ));
    }
    let path: Vec<String> = parts.map(str::to_owned).collect();
    if path.iter().any(|key| {
        key.is_empty()
            || !key
                .chars()
                .all(|c| c.is_alphanumeric() || c == '_' || c == '-')
    }) {
        return Err(format!(
            "message placeholder {{{inner}}} must be a variable and member names or indexes joined by '.'"
        ));
    }
    Ok(Piece::Value(var.to_owned(), path))
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn placeholders_are_replaced_by_the_values_found() {
        let t =
            Template::parse("end {this.end} before start {this.start}; {this.x} {{ok}}").unwrap();
        let this = json!({"end": "2024-01-01", "start": "2024-02-01"});
        let got = t.render(|var| (var == "this").then_some(&this));
        assert_eq!(
            got,
            "end \"2024-01-01\" before start \"2024-02-01\"; absent {ok}"
        );
        assert_eq!(
            t.source_text(),
            "end {this.end} before start {this.start}; {this.x} {ok}"
        );
        let list = json!({"items": [{"a": 1}]});
        let t = Template::parse("{reply.items.0.a}").unwrap();
        assert_eq!(t.render(|_| Some(&list)), "1");
    }

    #[test]
    fn bad_placeholders_are_refused() {
        assert!(Template::parse("{other.x}").is_err());
        assert!(Template::parse("{this.a b}").is_err());
        assert!(Template::parse("{this..a}").is_err());
        assert!(Template::parse("a } b").is_err());
        assert!(Template::parse(&"x".repeat(301)).is_err());
    }
}
