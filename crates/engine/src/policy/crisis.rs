//! Crisis resources and the blocked-conversation notice, per language: built-in English and
//! German texts, merged with the configured ones; a reply's language picks the text (exact tag,
//! then its primary subtag, then English).

use std::collections::BTreeMap;

/// The language used when a reply names none, or one without a text.
pub const FALLBACK_LANGUAGE: &str = "en";

/// Built-in crisis resources in English.
pub const CRISIS_EN: &str = "\
If you are in danger right now or thinking about ending your life, please get help immediately:
- Call your local emergency number: 112 in Europe and many other countries, 911 in the US and Canada.
- In the US you can call or text 988 (Suicide & Crisis Lifeline); in the UK and Ireland, Samaritans answer day and night on 116 123.
- Anywhere else, https://findahelpline.com lists free, confidential crisis lines near you.
You do not have to get through this alone. Reaching out to someone you trust can help too.";

/// Built-in crisis resources in German.
pub const CRISIS_DE: &str = "\
Wenn Sie gerade in Gefahr sind oder daran denken, sich das Leben zu nehmen, holen Sie sich bitte sofort Hilfe:
- Rufen Sie den Notruf an: 112 (in Deutschland, Österreich, der Schweiz und der ganzen EU).
- Die TelefonSeelsorge in Deutschland ist rund um die Uhr kostenlos und anonym erreichbar: 0800 111 0 111 oder 0800 111 0 222. In Österreich erreichen Sie die Telefonseelsorge unter 142, in der Schweiz Die Dargebotene Hand unter 143.
- Weitere Krisentelefone in Ihrer Nähe finden Sie unter https://findahelpline.com.
Sie müssen das nicht allein durchstehen. Auch ein Gespräch mit einem Menschen, dem Sie vertrauen, kann helfen.";

/// Built-in notice for a blocked conversation in English.
pub const BLOCKED_EN: &str =
    "This conversation has been paused for your safety and cannot continue right now.";

/// Built-in notice for a blocked conversation in German.
pub const BLOCKED_DE: &str =
    "Dieses Gespräch wurde zu Ihrer Sicherheit pausiert und kann gerade nicht fortgesetzt werden.";

/// Texts per normalised language tag; always has [`FALLBACK_LANGUAGE`] for crisis texts.
#[derive(Debug, Clone)]
pub(crate) struct CrisisTexts {
    crisis: BTreeMap<String, String>,
    blocked_notice: BTreeMap<String, String>,
}

impl CrisisTexts {
    /// Built-in texts with the configured ones (already normalised) laid over them.
    pub fn new(crisis: BTreeMap<String, String>, blocked_notice: BTreeMap<String, String>) -> Self {
        let mut all_crisis = builtin(&[("en", CRISIS_EN), ("de", CRISIS_DE)]);
        all_crisis.extend(crisis);
        let mut all_notices = builtin(&[("en", BLOCKED_EN), ("de", BLOCKED_DE)]);
        all_notices.extend(blocked_notice);
        Self {
            crisis: all_crisis,
            blocked_notice: all_notices,
        }
    }

    /// The language whose crisis text a reply in `language` gets.
    pub fn resolve(&self, language: Option<&str>) -> &str {
        let Some(tag) = language.and_then(normalize_language) else {
            return FALLBACK_LANGUAGE;
        };
        if let Some((key, _)) = self.crisis.get_key_value(&tag) {
            return key;
        }
        let primary = tag.split('-').next().unwrap_or_default();
        match self.crisis.get_key_value(primary) {
            Some((key, _)) => key,
            None => FALLBACK_LANGUAGE,
        }
    }

    /// Crisis resources for a reply in `language`.
    pub fn crisis(&self, language: Option<&str>) -> &str {
        let key = self.resolve(language);
        self.crisis
            .get(key)
            .or_else(|| self.crisis.get(FALLBACK_LANGUAGE))
            .map_or(CRISIS_EN, String::as_str)
    }

    /// The answer to a message in a blocked conversation: the notice in the resolved language
    /// (when there is one in that language — never one in another language), then the crisis
    /// resources.
    pub fn blocked_answer(&self, language: Option<&str>) -> String {
        let key = self.resolve(language);
        let crisis = self.crisis(language);
        match self.blocked_notice.get(key) {
            Some(notice) => format!("{notice}\n\n{crisis}"),
            None => crisis.to_owned(),
        }
    }
}

fn builtin(texts: &[(&str, &str)]) -> BTreeMap<String, String> {
    texts
        .iter()
        .map(|(language, text)| ((*language).to_owned(), (*text).to_owned()))
        .collect()
}

/// A language tag in the form texts are keyed by: trimmed, lowercase, `_` → `-`
/// (`de_AT` → `de-at`). None when it is not shaped like a BCP 47 tag (letters, digits and
/// hyphens; subtags of 1–8 characters, the first one letters only).
pub(crate) fn normalize_language(tag: &str) -> Option<String> {
    let tag = tag.trim().to_ascii_lowercase().replace('_', "-");
    let mut subtags = tag.split('-');
    let primary = subtags.next()?;
    let primary_ok =
        (1..=8).contains(&primary.len()) && primary.bytes().all(|b| b.is_ascii_lowercase());
    let rest_ok =
        subtags.all(|s| (1..=8).contains(&s.len()) && s.bytes().all(|b| b.is_ascii_alphanumeric()));
    (primary_ok && rest_ok).then_some(tag)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn texts() -> CrisisTexts {
        CrisisTexts::new(
            BTreeMap::from([
                ("fr".to_owned(), "Appelez le 112.".to_owned()),
                ("pt-br".to_owned(), "Ligue 188.".to_owned()),
            ]),
            BTreeMap::from([("fr".to_owned(), "Conversation suspendue.".to_owned())]),
        )
    }

    #[test]
    fn languages_resolve_exact_then_primary_then_english() {
        let texts = texts();
        let cases = [
            (None, "en"),
            (Some("en"), "en"),
            (Some("EN-us"), "en"),
            (Some("de"), "de"),
            (Some("de_AT"), "de"),
            (Some(" de-CH "), "de"),
            (Some("fr-CA"), "fr"),
            (Some("pt-BR"), "pt-br"),
            (Some("pt"), "en"),
            (Some("ja"), "en"),
            (Some(""), "en"),
            (Some("not a tag"), "en"),
            (Some("123"), "en"),
        ];
        for (language, expected) in cases {
            assert_eq!(texts.resolve(language), expected, "{language:?}");
        }
        assert_eq!(texts.crisis(Some("fr")), "Appelez le 112.");
        assert_eq!(texts.crisis(Some("de")), CRISIS_DE);
        assert_eq!(texts.crisis(Some("ja")), CRISIS_EN);
    }

    #[test]
    fn builtin_texts_name_emergency_numbers_and_a_crisis_line() {
        for text in [CRISIS_EN, CRISIS_DE] {
            assert!(
                text.contains("112") && text.contains("findahelpline.com"),
                "{text}"
            );
        }
        assert!(CRISIS_EN.contains("911") && CRISIS_EN.contains("local emergency number"));
        assert!(CRISIS_DE.contains("TelefonSeelsorge"));
    }

    #[test]
    fn configured_texts_replace_builtin_ones() {
        let texts = CrisisTexts::new(
            BTreeMap::from([("en".to_owned(), "Call 000.".to_owned())]),
            BTreeMap::new(),
        );
        assert_eq!(texts.crisis(None), "Call 000.");
        assert_eq!(texts.crisis(Some("de")), CRISIS_DE);
    }

    #[test]
    fn blocked_answer_never_mixes_languages() {
        let texts = texts();
        assert_eq!(
            texts.blocked_answer(None),
            format!("{BLOCKED_EN}\n\n{CRISIS_EN}")
        );
        assert_eq!(
            texts.blocked_answer(Some("de-DE")),
            format!("{BLOCKED_DE}\n\n{CRISIS_DE}")
        );
        assert_eq!(
            texts.blocked_answer(Some("fr")),
            "Conversation suspendue.\n\nAppelez le 112."
        );
        // Portuguese has crisis text but no notice: the crisis text alone, not an English notice.
        assert_eq!(texts.blocked_answer(Some("pt-BR")), "Ligue 188.");
    }

    #[test]
    fn tags_normalise() {
        assert_eq!(normalize_language("de_AT").as_deref(), Some("de-at"));
        assert_eq!(
            normalize_language("zh-Hant-TW").as_deref(),
            Some("zh-hant-tw")
        );
        assert_eq!(normalize_language("-en"), None);
        assert_eq!(normalize_language("en-"), None);
        assert_eq!(normalize_language("toolongprimary"), None);
    }
}
