//! [`Broken`]: a reply whose JSON started but cannot be read whole, said in words a writer can
//! act on — where (line and column of the reply), what was expected there, and a quote of the
//! text around that place.
//!
//! Two shapes: the value breaks off ([`Broken::failed`]: `{"k": ["a"], ["b"]}` — a member name
//! was expected, `[` found), or it closes and more of the document follows
//! ([`Broken::closed_early`]: `{"k": "v"}, "k2": "w"}`). The streaming check builds the second
//! with the same function as the complete check, so both say exactly the same.

/// Characters quoted on each side of the place.
const QUOTE_SIDE: usize = 30;
/// Where the quote marks the place.
const HERE: &str = "⟨here⟩";

/// Where and how the reply's JSON breaks.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Broken {
    /// 1-based line of the reply.
    pub line: usize,
    /// 1-based column, in characters.
    pub column: usize,
    /// What is wrong, in words, with the place.
    pub message: String,
    /// The text around the place, `⟨here⟩` marking it, whitespace runs shown as one space.
    pub found: String,
}

impl Broken {
    /// The JSON of `text` cannot be read at byte `at`, where `expected` could have stood.
    pub(super) fn failed(text: &str, at: usize, expected: &str) -> Self {
        let (line, column) = line_column(text, at);
        let found = describe(text, at);
        Self {
            line,
            column,
            message: format!(
                "the JSON breaks at line {line}, column {column}: expected {expected}, found {found}"
            ),
            found: quote_around(text, at),
        }
    }

    /// The closing bracket at byte `closer` of `text` closes the whole JSON value, and more of
    /// the document follows it.
    pub(crate) fn closed_early(text: &str, closer: usize) -> Self {
        let (line, column) = line_column(text, closer);
        let bracket = text.get(closer..=closer).unwrap_or("}");
        Self {
            line,
            column,
            message: format!(
                "the '{bracket}' at line {line}, column {column} closes the whole JSON value, but more members or items follow it: a bracket before it is missing or one too many; send the whole value as one JSON document"
            ),
            found: quote_around(text, closer),
        }
    }
}

/// The 1-based line and character column of byte `at` of `text`.
pub(crate) fn line_column(text: &str, at: usize) -> (usize, usize) {
    let mut at = at.min(text.len());
    while !text.is_char_boundary(at) {
        at -= 1;
    }
    let before = &text[..at];
    let line_start = before.rfind('\n').map_or(0, |i| i + 1);
    let line = before.matches('\n').count() + 1;
    (line, before[line_start..].chars().count() + 1)
}

/// Up to [`QUOTE_SIDE`] characters on each side of byte `at`, the place marked.
pub(crate) fn quote_around(text: &str, at: usize) -> String {
    let mut at = at.min(text.len());
    while !text.is_char_boundary(at) {
        at -= 1;
    }
    let (before, after) = text.split_at(at);
    let mut left: Vec<char> = squeeze(before.chars().rev()).collect();
    let cut_left = left.len() > QUOTE_SIDE;
    left.truncate(QUOTE_SIDE);
    let mut out = String::new();
    if cut_left {
        out.push('…');
    }
    out.extend(left.into_iter().rev());
    out.push_str(HERE);
    let mut right = squeeze(after.chars());
    out.extend(right.by_ref().take(QUOTE_SIDE));
    if right.next().is_some() {
        out.push('…');
    }
    out
}

/// The characters of `chars` with each run of whitespace shown as one space; reads no more
/// than it is asked for (so quoting near the start of a huge reply stays cheap).
fn squeeze(chars: impl Iterator<Item = char>) -> impl Iterator<Item = char> {
    let mut space = false;
    chars.filter_map(move |c| {
        if c.is_whitespace() {
            let first = !space;
            space = true;
            first.then_some(' ')
        } else {
            space = false;
            Some(c)
        }
    })
}

/// What stands at byte `at`, in words: a bare word, or one character, quoted.
fn describe(text: &str, at: usize) -> String {
    let rest = text.get(at..).unwrap_or_default();
    let word: String = rest
        .chars()
        .take_while(|c| c.is_alphanumeric() || *c == '_')
        .take(20)
        .collect();
    match rest.chars().next() {
        None => "the end of the reply".to_owned(),
        Some(_) if !word.is_empty() => format!("'{word}'"),
        Some(c) if c.is_whitespace() => "a space".to_owned(),
        Some(c) => format!("'{c}'"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn places_are_lines_and_character_columns() {
        assert_eq!(line_column("abc", 0), (1, 1));
        assert_eq!(line_column("ab\ncd", 4), (2, 2));
        assert_eq!(line_column("é\né€x", 8), (2, 3));
        assert_eq!(
            line_column("é\né€x", 7),
            (2, 2),
            "inside a character: the one it is in"
        );
        assert_eq!(line_column("x", 99), (1, 2));
    }

    #[test]
    fn quotes_are_bounded_and_marked() {
        assert_eq!(
            quote_around("{\"a\": 1}, \"b\"", 7),
            "{\"a\": 1⟨here⟩}, \"b\""
        );
        assert_eq!(quote_around("[\n  1\n]\n, 2", 6), "[ 1 ⟨here⟩] , 2");
        let long = format!("{}X{}", "a".repeat(100), "b".repeat(100));
        let quote = quote_around(&long, 100);
        assert_eq!(
            quote,
            format!("…{}⟨here⟩X{}…", "a".repeat(30), "b".repeat(29))
        );
        assert_eq!(quote_around("é", 1), "⟨here⟩é");
    }

    #[test]
    fn messages_say_what_and_where() {
        let text = "{\"key\": [\"a\"], [\"b\"]}";
        let broken = Broken::failed(text, 15, "a member name in double quotes");
        assert_eq!(
            broken.message,
            "the JSON breaks at line 1, column 16: expected a member name in double quotes, found '['"
        );
        assert_eq!(broken.found, "{\"key\": [\"a\"], ⟨here⟩[\"b\"]}");
        let text = "{\"status\": ok}";
        let broken = Broken::failed(text, 11, "the member's value");
        assert!(broken.message.ends_with("found 'ok'"), "{}", broken.message);
        let text = "{\"key\": \"value\"}, \"key2\": \"value2\"}";
        let broken = Broken::closed_early(text, 15);
        assert_eq!((broken.line, broken.column), (1, 16));
        assert!(
            broken
                .message
                .starts_with("the '}' at line 1, column 16 closes the whole JSON value"),
            "{}",
            broken.message
        );
        assert_eq!(
            broken.found,
            "{\"key\": \"value\"⟨here⟩}, \"key2\": \"value2\"}"
        );
    }
}
