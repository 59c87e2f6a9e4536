//! [`CardAnswer`]: a user's answer to a question card of the previous reply — which question,
//! which options, and any free text — as the native API takes it instead of a typed message
//! (`{"answer": {"question_id", "option_ids", "text"}}`, or a list for several cards). It is
//! checked against the cards that reply showed ([`read_answers`]: a known question, known
//! options, at most `max_selections` of them, something chosen or written) and sent to the
//! model as readable text; the user's message stores the ids beside that text.

use crate::engine::EngineError;
use bridle_core::cards::QuestionCard;
use serde::{Deserialize, Serialize};
use serde_json::Value;

/// Most cards one message answers.
const MAX_ANSWERS: usize = 10;
/// Longest free text of one answer, in characters.
pub(crate) const MAX_TEXT_CHARS: usize = 4000;

/// The answer to one question card.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct CardAnswer {
    /// The card's `question_id`.
    pub question_id: String,
    /// The chosen options' ids (`opt_1`, …), in the order chosen.
    #[serde(default)]
    pub option_ids: Vec<String>,
    /// The user's own words, beside or instead of the options.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub text: Option<String>,
}

/// One answer or several (one per card of the reply).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(untagged)]
pub enum Answers {
    /// `{"question_id", …}`.
    One(CardAnswer),
    /// `[{"question_id", …}, …]`.
    Many(Vec<CardAnswer>),
}

impl Answers {
    /// The answers as a list.
    pub fn as_slice(&self) -> &[CardAnswer] {
        match self {
            Self::One(one) => std::slice::from_ref(one),
            Self::Many(many) => many,
        }
    }
}

/// The cards a reply's value shows (`question_cards`), those that can be read.
pub(crate) fn shown_cards(value: &Value) -> Vec<QuestionCard> {
    value
        .get("question_cards")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .filter_map(|card| serde_json::from_value(card.clone()).ok())
        .collect()
}

/// Checks `answers` against the `shown` cards and writes them as the text the model reads:
/// per answer, the question, the chosen labels and the free text. `max_text_chars` caps each
/// free text.
pub(crate) fn read_answers(
    answers: &[CardAnswer],
    shown: &[QuestionCard],
    max_text_chars: usize,
) -> Result<String, EngineError> {
    let refuse = |why: String| Err(EngineError::BadAnswer(why));
    if answers.is_empty() || answers.len() > MAX_ANSWERS {
        return refuse(format!("answer 1 to {MAX_ANSWERS} cards"));
    }
    let mut lines = Vec::with_capacity(answers.len());
    for (i, answer) in answers.iter().enumerate() {
        if answers[..i]
            .iter()
            .any(|a| a.question_id == answer.question_id)
        {
            return refuse(format!(
                "question {:?} is answered twice",
                cut(&answer.question_id)
            ));
        }
        let Some(card) = shown.iter().find(|c| c.question_id == answer.question_id) else {
            return refuse(format!(
                "question {:?} is not one of the cards of the last reply",
                cut(&answer.question_id)
            ));
        };
        let mut labels = Vec::with_capacity(answer.option_ids.len());
        for (j, id) in answer.option_ids.iter().enumerate() {
            if answer.option_ids[..j].contains(id) {
                return refuse(format!("option {:?} is chosen twice", cut(id)));
            }
            let Some(option) = card.options.iter().find(|o| &o.id == id) else {
                return refuse(format!(
                    "option {:?} is not an option of question {:?}",
                    cut(id),
                    card.question_id
                ));
            };
            labels.push(option.label.as_str());
        }
        let max = usize::try_from(card.max_selections).unwrap_or(usize::MAX);
        if labels.len() > max {
            return refuse(format!(
                "question {:?} takes at most {max} option(s); {} were chosen",
                card.question_id,
                labels.len()
            ));
        }
        let text = answer
            .text
            .as_deref()
            .map(str::trim)
            .filter(|t| !t.is_empty());
        if text.is_some() && !card.allow_free_text {
            return refuse(format!(
                "question {:?} takes no free text",
                card.question_id
            ));
        }
        if let Some(text) = text
            && text.chars().count() > max_text_chars
        {
            return refuse(format!(
                "the free text has more than {max_text_chars} characters"
            ));
        }
        if labels.is_empty() && text.is_none() {
            return refuse(format!(
                "the answer to question {:?} chooses no option and has no text",
                card.question_id
            ));
        }
        let mut line = format!("{} — ", card.question_text);
        line.push_str(&labels.join("; "));
        if let Some(text) = text {
            if !labels.is_empty() {
                line.push_str(". ");
            }
            line.push_str(text);
        }
        lines.push(line);
    }
    Ok(lines.join("\n"))
}

/// An id as an error message quotes it: at most 80 characters.
fn cut(id: &str) -> String {
    id.chars().take(80).collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn cards() -> Vec<QuestionCard> {
        shown_cards(&json!({"message": "", "question_cards": [
            {"question_id": "q_1", "question_text": "Who uses it?", "category": "discovery",
             "options": [{"id": "opt_1", "label": "Only me"}, {"id": "opt_2", "label": "My family"}],
             "allow_free_text": true, "max_selections": 1},
            {"question_id": "q_2", "question_text": "Which platforms?", "category": "discovery",
             "options": [{"id": "opt_1", "label": "iOS"}, {"id": "opt_2", "label": "Android"},
                         {"id": "opt_3", "label": "Web"}],
             "allow_free_text": true, "max_selections": 2}
        ]}))
    }

    fn answer(question: &str, options: &[&str], text: Option<&str>) -> CardAnswer {
        CardAnswer {
            question_id: question.into(),
            option_ids: options.iter().map(|o| (*o).to_owned()).collect(),
            text: text.map(str::to_owned),
        }
    }

    #[test]
    fn answers_are_read_as_the_question_and_the_chosen_labels() {
        let text = read_answers(
            &[
                answer("q_1", &["opt_2"], None),
                answer("q_2", &["opt_3", "opt_1"], Some("and a watch app")),
            ],
            &cards(),
            100,
        )
        .unwrap();
        assert_eq!(
            text,
            "Who uses it? — My family\nWhich platforms? — Web; iOS. and a watch app"
        );
        let own_words = read_answers(&[answer("q_1", &[], Some("My flatmates"))], &cards(), 100);
        assert_eq!(own_words.unwrap(), "Who uses it? — My flatmates");
    }

    #[test]
    fn answers_the_cards_did_not_ask_for_are_refused() {
        let cases = [
            (
                vec![answer("q_9", &["opt_1"], None)],
                "not one of the cards",
            ),
            (vec![answer("q_1", &["opt_7"], None)], "not an option"),
            (vec![answer("q_1", &["opt_1", "opt_2"], None)], "at most 1"),
            (
                vec![answer("q_2", &["opt_1", "opt_1"], None)],
                "chosen twice",
            ),
            (
                vec![answer("q_1", &[], Some("  "))],
                "no option and has no text",
            ),
            (
                vec![answer("q_1", &[], Some(&"x".repeat(101)))],
                "more than 100",
            ),
            (
                vec![
                    answer("q_1", &["opt_1"], None),
                    answer("q_1", &["opt_2"], None),
                ],
                "answered twice",
            ),
            (Vec::new(), "answer 1 to"),
        ];
        for (answers, expected) in cases {
            let error = read_answers(&answers, &cards(), 100)
                .unwrap_err()
                .to_string();
            assert!(error.contains(expected), "{expected}: {error}");
        }
    }
}
