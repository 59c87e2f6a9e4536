//! [`TopicState`]: what a topic-analysis conversation remembers between turns (spec/05) —
//! the active subjects, the recent keywords and a running summary — updated from each valid
//! `<llmResponse>` and turned into the next `<llmQuery>`.
//!
//! Newest first and bounded: subjects and keywords mentioned again move to the front, the lists
//! keep at most [`KEPT_SUBJECTS`] / [`KEPT_KEYWORDS`] items (within the query's limits), and the
//! summary keeps its last [`SUMMARY_CHARS`] characters, cut at a sentence.

use super::query::{Query, QueryError, build};
use serde::{Deserialize, Serialize};
use serde_json::Value;

/// Subjects kept as active.
pub const KEPT_SUBJECTS: usize = 10;
/// Keywords kept as recent.
pub const KEPT_KEYWORDS: usize = 30;
/// Keywords below this confidence are not remembered (the protocol's own threshold).
pub const MIN_CONFIDENCE: f64 = 0.6;
/// Longest running summary, in characters.
pub const SUMMARY_CHARS: usize = 2000;

/// A conversation's topic state, stored as JSON with the conversation.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct TopicState {
    /// Subject names, most recently discussed first.
    pub active_subjects: Vec<String>,
    /// Keyword terms, most recent first.
    pub recent_keywords: Vec<String>,
    /// What the conversation has covered, oldest first, bounded.
    pub summary: String,
    /// Valid replies this state was built from.
    pub updates: u64,
}

impl TopicState {
    /// The state stored in `value` (an empty one when absent or unreadable).
    pub fn from_value(value: &Value) -> Self {
        serde_json::from_value(value.clone()).unwrap_or_default()
    }

    /// The state as JSON.
    pub fn to_value(&self) -> Value {
        serde_json::to_value(self).unwrap_or(Value::Null)
    }

    /// Takes in a valid `topic-analysis` value (`{response, analysis: {subject, summaryUpdate}}`).
    pub fn update(&mut self, reply: &Value) {
        let analysis = &reply["analysis"];
        let subjects = analysis["subject"]
            .as_array()
            .map_or(&[][..], Vec::as_slice);
        let mut names = Vec::new();
        let mut terms = Vec::new();
        for subject in subjects {
            if let Some(name) = subject["@name"].as_str().and_then(list_item) {
                names.push(name);
            }
            for keyword in subject["keyword"].as_array().map_or(&[][..], Vec::as_slice) {
                let confident = keyword["@confidence"]
                    .as_f64()
                    .is_some_and(|c| c >= MIN_CONFIDENCE);
                if let Some(term) = keyword["@term"].as_str().and_then(list_item)
                    && confident
                {
                    terms.push(term);
                }
            }
        }
        promote(&mut self.active_subjects, names, KEPT_SUBJECTS);
        promote(&mut self.recent_keywords, terms, KEPT_KEYWORDS);
        if let Some(update) = analysis["summaryUpdate"].as_str() {
            let update = update.split_whitespace().collect::<Vec<_>>().join(" ");
            if !update.is_empty() {
                if !self.summary.is_empty() {
                    self.summary.push(' ');
                }
                self.summary.push_str(&update);
                self.summary = keep_tail(&self.summary, SUMMARY_CHARS);
            }
        }
        self.updates += 1;
    }

    /// The `<llmQuery>` for the user's next `message`.
    pub fn query(
        &self,
        message: &str,
        topic_id: &str,
        message_count: u64,
    ) -> Result<String, QueryError> {
        build(&Query {
            message,
            topic_id,
            message_count,
            active_subjects: &self.active_subjects,
            recent_keywords: &self.recent_keywords,
        })
    }
}

/// A name fit for a comma-separated list: trimmed, commas turned into spaces; `None` if empty.
fn list_item(text: &str) -> Option<String> {
    let item = text.replace(',', " ").trim().to_owned();
    (!item.is_empty()).then_some(item)
}

/// `fresh` moved to the front of `list` (in their order, once each), the list cut to `max`.
fn promote(list: &mut Vec<String>, fresh: Vec<String>, max: usize) {
    let mut out: Vec<String> = Vec::with_capacity(max);
    for item in fresh.into_iter().chain(list.drain(..)) {
        if out.len() == max {
            break;
        }
        if !out.contains(&item) {
            out.push(item);
        }
    }
    *list = out;
}

/// The last `max` characters of `text`, starting at a sentence when one starts in that tail.
fn keep_tail(text: &str, max: usize) -> String {
    let count = text.chars().count();
    if count <= max {
        return text.to_owned();
    }
    let tail: String = text.chars().skip(count - max).collect();
    match tail.find(". ") {
        Some(at) if at + 2 < tail.len() => tail[at + 2..].to_owned(),
        _ => tail,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn reply(subjects: Value, summary: &str) -> Value {
        json!({"response": "ok", "analysis": {"subject": subjects, "summaryUpdate": summary}})
    }

    #[test]
    fn subjects_and_keywords_move_to_the_front_and_stay_bounded() {
        let mut state = TopicState::default();
        state.update(&reply(
            json!([{"@name": "garden-planning", "@description": "d", "@isNew": true,
                    "keyword": [{"@term": "raised-beds", "@confidence": 0.9},
                                {"@term": "maybe", "@confidence": 0.3}]}]),
            "The user wants a vegetable garden.",
        ));
        state.update(&reply(
            json!([{"@name": "composting", "@description": "d", "@isNew": true,
                    "keyword": [{"@term": "worms, red", "@confidence": 0.8}]},
                   {"@name": "garden-planning", "@description": "d", "@isNew": false}]),
            "  Composting   came up. ",
        ));
        assert_eq!(state.active_subjects, ["composting", "garden-planning"]);
        assert_eq!(state.recent_keywords, ["worms  red", "raised-beds"]);
        assert_eq!(
            state.summary,
            "The user wants a vegetable garden. Composting came up."
        );
        assert_eq!(state.updates, 2);
        let query = state.query("And tomatoes?", "conv-1", 5).unwrap();
        assert!(query.contains("<activeSubjects>composting, garden-planning</activeSubjects>"));
        assert!(query.contains("messageCount=\"5\""));

        for i in 0..50 {
            state.update(&reply(
                json!([{"@name": format!("s{i}"), "@description": "d", "@isNew": true}]),
                &format!("Sentence number {i} says something long enough to fill the summary. "),
            ));
        }
        assert_eq!(state.active_subjects.len(), KEPT_SUBJECTS);
        assert_eq!(state.active_subjects[0], "s49");
        assert!(state.summary.chars().count() <= SUMMARY_CHARS);
        assert!(
            state.summary.starts_with("Sentence number"),
            "{}",
            state.summary
        );
        assert!(state.summary.ends_with("summary."));
    }

    #[test]
    fn state_round_trips_and_tolerates_junk() {
        let mut state = TopicState::default();
        state.update(&reply(json!([]), "x."));
        assert_eq!(TopicState::from_value(&state.to_value()), state);
        assert_eq!(
            TopicState::from_value(&json!("junk")),
            TopicState::default()
        );
        assert_eq!(TopicState::from_value(&json!({})), TopicState::default());
    }
}
