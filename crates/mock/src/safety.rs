//! [`Assessment`]: the mock's reading of how worrying the user's message is, and
//! [`SafetyMode`], whether a generated `safety` object (spec/01's `selfhelp-response`) follows
//! it or is drawn at random like every other value.
//!
//! The reading is a small word list, in English, German, French and Spanish: crisis words
//! (suicide, ending one's life) make an `emergency`; self-harm, harming others, abuse or violence
//! at home a `critical`; distress (anxious, hopeless, panic, can't sleep, …) a `warning`;
//! anything else is safe. A phrase matches whole words, case-insensitively, so "skill myself"
//! is not "kill myself". It is a demo's stand-in for a model's judgement, never a safety tool.

use serde::{Deserialize, Serialize};
use serde_json::Value;

/// How the mock fills a `safety` object.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum SafetyMode {
    /// From the user's message ([`Assessment::of`]).
    #[default]
    Message,
    /// Drawn at random from the schema, like every other value (for tests of the policy).
    Random,
}

/// A danger level of spec/01, lowest first.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum Level {
    /// Sensitive topic or general distress.
    Warning,
    /// Possible risk.
    Critical,
    /// Imminent danger.
    Emergency,
}

impl Level {
    fn as_str(self) -> &'static str {
        match self {
            Self::Warning => "warning",
            Self::Critical => "critical",
            Self::Emergency => "emergency",
        }
    }
}

/// What the message gives away: the highest level found and the concern categories.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Assessment {
    /// `None`: nothing worrying.
    pub level: Option<Level>,
    /// Concern categories of spec/01, each once, in the order found.
    pub concerns: Vec<&'static str>,
}

/// Phrases (lowercase, words separated by single spaces) with their level and concern.
const PHRASES: &[(&str, Level, Option<&str>)] = &[
    // Crisis: emergency.
    ("kill myself", Level::Emergency, Some("suicide")),
    ("end my life", Level::Emergency, Some("suicide")),
    ("take my own life", Level::Emergency, Some("suicide")),
    ("suicide", Level::Emergency, Some("suicide")),
    ("suicidal", Level::Emergency, Some("suicide")),
    ("want to die", Level::Emergency, Some("suicide")),
    ("don t want to live", Level::Emergency, Some("suicide")),
    ("mich umbringen", Level::Emergency, Some("suicide")),
    ("suizid", Level::Emergency, Some("suicide")),
    ("nicht mehr leben", Level::Emergency, Some("suicide")),
    ("me suicider", Level::Emergency, Some("suicide")),
    ("mettre fin à mes jours", Level::Emergency, Some("suicide")),
    ("suicidarme", Level::Emergency, Some("suicide")),
    ("quitarme la vida", Level::Emergency, Some("suicide")),
    // Possible risk: critical.
    ("hurt myself", Level::Critical, Some("self_harm")),
    ("harm myself", Level::Critical, Some("self_harm")),
    ("cut myself", Level::Critical, Some("self_harm")),
    ("self harm", Level::Critical, Some("self_harm")),
    ("mich verletzen", Level::Critical, Some("self_harm")),
    ("ritzen", Level::Critical, Some("self_harm")),
    ("me faire du mal", Level::Critical, Some("self_harm")),
    ("hacerme daño", Level::Critical, Some("self_harm")),
    ("hurt someone", Level::Critical, Some("harm_others")),
    ("kill him", Level::Critical, Some("harm_others")),
    ("kill her", Level::Critical, Some("harm_others")),
    ("hits me", Level::Critical, Some("domestic_violence")),
    ("beats me", Level::Critical, Some("domestic_violence")),
    ("schlägt mich", Level::Critical, Some("domestic_violence")),
    ("me frappe", Level::Critical, Some("domestic_violence")),
    ("me pega", Level::Critical, Some("domestic_violence")),
    ("overdose", Level::Critical, Some("substance_abuse")),
    // Distress: warning.
    ("stop eating", Level::Warning, Some("eating_disorder")),
    ("drinking too much", Level::Warning, Some("substance_abuse")),
    ("hopeless", Level::Warning, None),
    ("anxious", Level::Warning, None),
    ("anxiety", Level::Warning, None),
    ("panic", Level::Warning, None),
    ("depressed", Level::Warning, None),
    ("lonely", Level::Warning, None),
    ("worthless", Level::Warning, None),
    ("can t sleep", Level::Warning, None),
    ("hoffnungslos", Level::Warning, None),
    ("angst", Level::Warning, None),
    ("einsam", Level::Warning, None),
    ("deprimiert", Level::Warning, None),
    ("désespéré", Level::Warning, None),
    ("angoisse", Level::Warning, None),
    ("déprimé", Level::Warning, None),
    ("ansiedad", Level::Warning, None),
    ("deprimido", Level::Warning, None),
    ("sin esperanza", Level::Warning, None),
];

/// Longest message read, in characters (the rest is not looked at).
const MAX_CHARS: usize = 4000;

impl Assessment {
    /// The assessment of `message`.
    pub fn of(message: &str) -> Self {
        let words = format!(" {} ", normalise(message));
        let mut found = Self::default();
        for (phrase, level, concern) in PHRASES {
            if !words.contains(&format!(" {phrase} ")) {
                continue;
            }
            found.level = found.level.max(Some(*level));
            if let Some(concern) = concern
                && !found.concerns.contains(concern)
            {
                found.concerns.push(concern);
            }
        }
        found
    }

    /// `safety` set to this assessment when it holds spec/01's safety object (other values
    /// are left alone). The message is a short supportive sentence when there is a concern.
    pub fn apply(&self, value: &mut Value) {
        let Some(slot) = value.pointer_mut("/safety") else {
            return;
        };
        if serde_json::from_value::<Safety>(slot.clone()).is_err() {
            return;
        }
        let severe = self.level >= Some(Level::Critical);
        let safety = Safety {
            is_safe: !severe,
            danger_level: self.level.map(|l| l.as_str().to_owned()),
            detected_concerns: self.concerns.iter().map(|c| (*c).to_owned()).collect(),
            requires_intervention: severe,
            safety_message: self.level.map(|_| SUPPORTIVE.to_owned()),
        };
        if let Ok(new) = serde_json::to_value(safety) {
            *slot = new;
        }
    }
}

/// The `safety_message` of a message with a concern.
const SUPPORTIVE: &str =
    "Thank you for telling me. You don't have to go through this alone; support is available.";

/// spec/01's safety object.
#[derive(Debug, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
struct Safety {
    is_safe: bool,
    danger_level: Option<String>,
    detected_concerns: Vec<String>,
    requires_intervention: bool,
    #[serde(default)]
    safety_message: Option<String>,
}

/// Lowercase words of `text` (letters and digits), separated by single spaces.
fn normalise(text: &str) -> String {
    text.chars()
        .take(MAX_CHARS)
        .flat_map(char::to_lowercase)
        .map(|c| if c.is_alphanumeric() { c } else { ' ' })
        .collect::<String>()
        .split_whitespace()
        .collect::<Vec<_>>()
        .join(" ")
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn crisis_words_are_an_emergency_in_several_languages() {
        for message in [
            "I want to kill myself",
            "Ich will mich umbringen.",
            "Je veux me suicider",
            "Quiero suicidarme",
            "SUICIDE is on my mind",
        ] {
            let found = Assessment::of(message);
            assert_eq!(found.level, Some(Level::Emergency), "{message}");
            assert_eq!(found.concerns, ["suicide"], "{message}");
        }
    }

    #[test]
    fn worry_words_are_a_warning_and_the_highest_level_wins() {
        assert_eq!(
            Assessment::of("I'm anxious and can't sleep before exams").level,
            Some(Level::Warning)
        );
        let both = Assessment::of("I feel hopeless and I hurt myself yesterday");
        assert_eq!(both.level, Some(Level::Critical));
        assert_eq!(both.concerns, ["self_harm"]);
    }

    #[test]
    fn ordinary_messages_are_safe_and_words_match_whole() {
        for message in [
            "message 7",
            "How do I save for a bike?",
            "I want to skill myself up",
            "",
        ] {
            assert_eq!(Assessment::of(message), Assessment::default(), "{message}");
        }
    }

    #[test]
    fn apply_sets_a_consistent_safety_object_and_leaves_other_values() {
        let mut value = json!({"safety": {"is_safe": true, "danger_level": "emergency", "detected_concerns": ["terrorism"], "requires_intervention": true, "safety_message": null}});
        Assessment::of("hello").apply(&mut value);
        assert_eq!(
            value["safety"],
            json!({"is_safe": true, "danger_level": null, "detected_concerns": [], "requires_intervention": false, "safety_message": null})
        );
        Assessment::of("I want to end my life").apply(&mut value);
        assert_eq!(value["safety"]["is_safe"], false);
        assert_eq!(value["safety"]["danger_level"], "emergency");
        assert_eq!(value["safety"]["requires_intervention"], true);
        assert!(value["safety"]["safety_message"].is_string());
        let mut other = json!({"safety": "fine"});
        Assessment::of("kill myself").apply(&mut other);
        assert_eq!(other, json!({"safety": "fine"}));
    }
}
