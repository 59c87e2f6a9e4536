//! [`StringKind`]: what kind of text a property name asks for, and the small vocabulary the
//! generator draws realistic strings from — short supportive sentences for `content`, phrases
//! for `title`/`label`, snake_case slugs for `id`/`value`, `/assets/…` paths for `url`, and
//! values for each `format` the generator knows.

use rand::RngExt;
use rand::rngs::StdRng;
use rand::seq::IndexedRandom;

const SENTENCES: &[&str] = &[
    "Thanks for sharing that with me.",
    "Let's take this one step at a time.",
    "Here is a short overview of what you asked about.",
    "A few small changes can make a real difference.",
    "Try to notice what helps you feel calmer during the day.",
    "You can come back to this whenever you like.",
    "Here are some ideas you could try this week.",
    "Writing down what you noticed often makes the next step clearer.",
    "A regular evening routine helps many people sleep better.",
    "Short breaks during the day can lower your stress level.",
    "It is normal for progress to take a little time.",
    "Let me know which of these options fits you best.",
    "A slow breath in and a longer breath out can help you relax.",
    "Setting one small goal for tomorrow is a good place to start.",
    "We can look at this together in more detail if you want.",
    "Many people find a short walk helps them clear their head.",
];

/// Whether a property named `name` holds a reply's main text for the user.
pub(crate) fn is_main_text(name: &str) -> bool {
    matches!(name, "content" | "message" | "response" | "text")
}

const PHRASES: &[&str] = &[
    "Getting started",
    "Your evening routine",
    "Next steps",
    "A quick check-in",
    "Breathing exercise",
    "Sleep habits",
    "Daily reflection",
    "Tell me more",
    "Show me an example",
    "What should I try first?",
    "How did you sleep last night?",
    "Small goals for this week",
    "Ways to relax",
    "How are you feeling today?",
];

const SLUGS: &[&str] = &[
    "sleep_quality",
    "energy_level",
    "mood",
    "stress",
    "daily_goal",
    "evening_routine",
    "focus",
    "breathing",
    "reflection",
    "next_step",
    "morning_walk",
    "screen_time",
    "relaxation",
    "gratitude",
];

const WORDS: &[&str] = &[
    "calm", "routine", "balance", "rest", "focus", "progress", "habit", "walk", "breath",
];

/// What kind of text a property asks for, judged by its name.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum StringKind {
    /// A snake_case identifier, unique within its array (`id`, `value`, `key`, `topic`).
    Slug,
    /// A site path to a file (`url`, `src`, `image`).
    Path,
    /// An e-mail address.
    Email,
    /// The reply's language code.
    Language,
    /// The requested model's name.
    Model,
    /// A sentence (`content`, `text`, `message`, `description`).
    Sentence,
    /// A short phrase (`title`, `label`, `caption`, `question`).
    Phrase,
    /// A timestamp (`created_at`, `date`).
    Timestamp,
    /// A semantic version.
    Version,
    /// A colour in hex.
    Color,
    /// Nothing recognisable: a word or a phrase.
    Other,
}

impl StringKind {
    /// The kind for a property `name` (`helpText`, `current_topic`, `image_url`, …): the last
    /// word of the name that means something decides (`topics_covered` → a slug).
    pub(crate) fn for_name(name: Option<&str>) -> Self {
        let Some(name) = name else {
            return Self::Other;
        };
        let name = snake(name);
        if matches!(name.as_str(), "lang" | "locale") {
            return Self::Language;
        }
        name.rsplit('_')
            .map(Self::for_word)
            .find(|kind| *kind != Self::Other)
            .unwrap_or(Self::Other)
    }

    fn for_word(word: &str) -> Self {
        match word {
            "id" | "key" | "slug" | "value" | "topic" | "code" | "topics" | "tag" | "tags" => {
                Self::Slug
            }
            "url" | "uri" | "href" | "src" | "link" | "image" | "path" | "avatar" => Self::Path,
            "email" => Self::Email,
            "language" | "locale" => Self::Language,
            "model" => Self::Model,
            "content" | "text" | "message" | "body" | "description" | "summary" | "answer"
            | "explanation" | "reason" | "details" | "comment" | "note" | "notes"
            | "instructions" | "feedback" | "reply" => Self::Sentence,
            "title" | "heading" | "label" | "caption" | "question" | "subject" | "headline"
            | "placeholder" | "alt" | "name" | "button" | "prompt" | "milestones" => Self::Phrase,
            "at" | "date" | "timestamp" => Self::Timestamp,
            "version" => Self::Version,
            "color" | "colour" => Self::Color,
            _ => Self::Other,
        }
    }

    /// True for the kinds whose values should differ within one array.
    pub(crate) fn is_slug(self) -> bool {
        self == Self::Slug
    }
}

/// True for arrays of buttons or choices, whose texts are short labels, not sentences.
pub(crate) fn is_button_list(name: &str) -> bool {
    let name = snake(name);
    [
        "suggestion",
        "button",
        "repl",
        "action",
        "choice",
        "chip",
        "option",
    ]
    .iter()
    .any(|w| name.contains(w))
}

/// True for arrays that are empty in most replies (`detected_concerns`, `errors`).
pub(crate) fn is_usually_empty(name: &str) -> bool {
    let name = snake(name);
    [
        "concern",
        "error",
        "warning",
        "issue",
        "problem",
        "violation",
        "flag",
    ]
    .iter()
    .any(|w| name.contains(w))
}

/// `helpText` → `help_text`; `Image-URL` → `image_url`.
pub(crate) fn snake(name: &str) -> String {
    let mut out = String::with_capacity(name.len() + 4);
    let mut previous_lower = false;
    for c in name.chars() {
        if c.is_uppercase() {
            if previous_lower {
                out.push('_');
            }
            out.extend(c.to_lowercase());
            previous_lower = false;
        } else if c == '-' || c == ' ' {
            out.push('_');
            previous_lower = false;
        } else {
            out.push(c);
            previous_lower = c.is_lowercase() || c.is_ascii_digit();
        }
    }
    out
}

fn pick(rng: &mut StdRng, list: &[&'static str]) -> &'static str {
    list.choose(rng).copied().unwrap_or("ok")
}

/// A sentence.
pub(crate) fn sentence(rng: &mut StdRng) -> &'static str {
    pick(rng, SENTENCES)
}

/// A short phrase.
pub(crate) fn phrase(rng: &mut StdRng) -> &'static str {
    pick(rng, PHRASES)
}

/// A snake_case slug.
pub(crate) fn slug(rng: &mut StdRng) -> &'static str {
    pick(rng, SLUGS)
}

/// A single lowercase word.
pub(crate) fn word(rng: &mut StdRng) -> &'static str {
    pick(rng, WORDS)
}

/// One to three sentences of plain conversational text.
pub(crate) fn paragraph(rng: &mut StdRng) -> String {
    let count = rng.random_range(1..=3usize);
    let mut chosen: Vec<&str> = Vec::with_capacity(count);
    while chosen.len() < count {
        let s = sentence(rng);
        if !chosen.contains(&s) {
            chosen.push(s);
        }
    }
    chosen.join(" ")
}

/// A site path to an asset: `/assets/evening-routine.png`.
pub(crate) fn asset_path(rng: &mut StdRng, hint: &str) -> String {
    let ext = if hint.contains("video") {
        "mp4"
    } else if hint.contains("audio") || hint.contains("sound") {
        "mp3"
    } else {
        "png"
    };
    format!("/assets/{}.{ext}", slug(rng).replace('_', "-"))
}

/// A value in JSON Schema `format` `name`, or `None` for a format the generator does not know.
pub(crate) fn format_value(rng: &mut StdRng, format: &str, name: &str) -> Option<String> {
    let day = rng.random_range(1..=28u32);
    let month = rng.random_range(1..=12u32);
    let hour = rng.random_range(7..=20u32);
    let minute = rng.random_range(0..4u32) * 15;
    Some(match format {
        "date" => format!("2025-{month:02}-{day:02}"),
        "date-time" => format!("2025-{month:02}-{day:02}T{hour:02}:{minute:02}:00Z"),
        "time" => format!("{hour:02}:{minute:02}:00Z"),
        "duration" => format!("PT{}M", rng.random_range(1..=60u32)),
        "email" | "idn-email" => format!("{}@example.com", word(rng)),
        "hostname" | "idn-hostname" => "example.com".to_owned(),
        "ipv4" => format!("192.0.2.{}", rng.random_range(1..=254u32)),
        "ipv6" => format!("2001:db8::{:x}", rng.random_range(1..=0xffffu32)),
        "uri" | "iri" | "url" => format!("https://example.com{}", asset_path(rng, name)),
        "uri-reference" | "iri-reference" => asset_path(rng, name),
        "uri-template" => "https://example.com/items/{id}".to_owned(),
        "json-pointer" => "/items/0".to_owned(),
        "relative-json-pointer" => "0/name".to_owned(),
        "regex" => "^[a-z]+$".to_owned(),
        "uuid" => uuid(rng),
        _ => return None,
    })
}

/// A random (version 4 layout) UUID drawn from `rng`.
fn uuid(rng: &mut StdRng) -> String {
    let high: u64 = rng.random();
    let low: u64 = rng.random();
    let high = (high & 0xffff_ffff_ffff_0fff) | 0x0000_0000_0000_4000;
    let low = (low & 0x3fff_ffff_ffff_ffff) | 0x8000_0000_0000_0000;
    format!(
        "{:08x}-{:04x}-{:04x}-{:04x}-{:012x}",
        high >> 32,
        (high >> 16) & 0xffff,
        high & 0xffff,
        low >> 48,
        low & 0xffff_ffff_ffff
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use rand::SeedableRng;

    #[test]
    fn names_map_to_kinds() {
        let rows = [
            ("id", StringKind::Slug),
            ("current_topic", StringKind::Slug),
            ("url", StringKind::Path),
            ("imageUrl", StringKind::Path),
            ("language", StringKind::Language),
            ("model", StringKind::Model),
            ("content", StringKind::Sentence),
            ("helpText", StringKind::Sentence),
            ("safety_message", StringKind::Sentence),
            ("submit_label", StringKind::Phrase),
            ("created_at", StringKind::Timestamp),
            ("topics_covered", StringKind::Slug),
            ("milestones_reached", StringKind::Phrase),
            ("zebra", StringKind::Other),
        ];
        for (name, kind) in rows {
            assert_eq!(StringKind::for_name(Some(name)), kind, "{name}");
        }
        assert_eq!(StringKind::for_name(None), StringKind::Other);
    }

    #[test]
    fn snake_case_of_names() {
        assert_eq!(snake("helpText"), "help_text");
        assert_eq!(snake("Image-URL"), "image_url");
        assert_eq!(snake("already_snake"), "already_snake");
    }

    #[test]
    fn formats_look_right() {
        let mut rng = StdRng::seed_from_u64(7);
        let uuid = format_value(&mut rng, "uuid", "").unwrap();
        assert_eq!(uuid.len(), 36);
        assert_eq!(uuid.as_bytes()[14], b'4');
        assert!(
            format_value(&mut rng, "uri", "video")
                .unwrap()
                .starts_with("https://example.com/assets/")
        );
        assert!(format_value(&mut rng, "nonsense", "").is_none());
    }
}
