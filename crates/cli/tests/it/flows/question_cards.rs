//! Spec 04's thread from discovery through clarification to an answer: turn 1 in `discovery`
//! mode asks a question with lettered options (a card), turn 2 answers it by ids in
//! `clarification` mode and gets a multiple-choice card, turn 3 answers that with two options in
//! an ordinary mode and gets a reply whose lettered options stay text. Over server-sent events
//! each card is a `question_card` event with the card's own fields at the top level.

use super::{Backend, Event, Flow, SentChat, final_text, names, only, replies};
use bridle_core::cards::QuestionCard;
use serde_json::{Value, json};

const DISCOVERY: &str = "Thanks, a booking app it is.

Who will book through the app?

Knowing who books shapes the sign-up and the calendar.

(A) Customers booking for themselves — one person, one booking
(B) Staff booking on behalf of customers (recommended)
(C) Both customers and staff";

const CLARIFICATION: &str = "Good, staff will book for customers at the front desk.

Which reminders should customers get? Select all that apply.

1. Email the day before
2. Text message an hour before
3. A call from the front desk";

/// A normal reply: its options are not a card outside the card modes.
const ANSWER: &str = "Here is the plan: staff book from a calendar view, and customers get an email the day before and a text message an hour before.

Shall I start with the calendar or the reminders?

(A) The calendar
(B) The reminders";

/// What the model reads for the two answers (the native API's ids, or the OpenAI client's text).
const FIRST_ANSWER: &str = "Who will book through the app? — Staff booking on behalf of customers. mostly at the front desk";
const SECOND_ANSWER: &str =
    "Which reminders should customers get? — Email the day before; Text message an hour before";

const MODES: [&str; 3] = ["discovery", "clarification", "normal"];

fn script() -> [Value; 3] {
    [
        replies(&[DISCOVERY]),
        replies(&[CLARIFICATION]),
        replies(&[ANSWER]),
    ]
}

/// Each turn was prompted under its own mode: the card modes offer `present_question` and say
/// how to ask; the normal mode neither. The answers reached the model as readable text.
fn check_sent(sent: &[Vec<SentChat>]) {
    assert_eq!(sent.iter().map(Vec::len).collect::<Vec<_>>(), [1, 1, 1]);
    for (turn, mode) in MODES.iter().enumerate() {
        let chat = &sent[turn][0];
        let offered: Vec<&str> = chat
            .tools
            .iter()
            .filter_map(|t| t["function"]["name"].as_str())
            .collect();
        let card_mode = *mode != "normal";
        assert_eq!(
            offered == ["present_question"],
            card_mode,
            "{mode}: {offered:?}"
        );
        let told = format!("Conversation mode: {mode}.");
        assert_eq!(
            chat.system().contains(&told),
            card_mode,
            "{mode}: {}",
            chat.system()
        );
        assert!(card_mode || !chat.system().contains("Conversation mode:"));
    }
    assert_eq!(sent[1][0].last(), FIRST_ANSWER);
    assert_eq!(sent[2][0].last(), SECOND_ANSWER);
    // Earlier replies come back with their cards written as the model wrote them.
    let history = sent[2][0].chat();
    assert_eq!(history.len(), 5, "{history:?}");
    assert!(
        history[1].1.contains("Who will book through the app?"),
        "{history:?}"
    );
    assert!(
        history[1].1.starts_with("Thanks, a booking app it is."),
        "{history:?}"
    );
    assert!(
        history[1]
            .1
            .contains("\n(B) Staff booking on behalf of customers"),
        "{history:?}"
    );
    assert!(
        history[3]
            .1
            .contains("Which reminders should customers get?"),
        "{history:?}"
    );
}

/// The cards of each turn's value, read as spec 04's `QuestionCard`s.
fn cards(value: &Value) -> Vec<QuestionCard> {
    serde_json::from_value(value["question_cards"].clone()).unwrap()
}

/// The first card asks who books, the default option marked; the second takes several options.
fn check_cards(first: &[QuestionCard], second: &[QuestionCard], third: &[QuestionCard]) {
    assert_eq!(first.len(), 1);
    let who = &first[0];
    assert_eq!(who.question_text, "Who will book through the app?");
    assert_eq!(who.category.as_str(), "discovery");
    let labels: Vec<&str> = who.options.iter().map(|o| o.label.as_str()).collect();
    assert_eq!(
        labels,
        [
            "Customers booking for themselves",
            "Staff booking on behalf of customers",
            "Both customers and staff"
        ]
    );
    assert!(who.options[1].is_default);
    assert_eq!(who.max_selections, 1);
    assert_eq!(second.len(), 1);
    assert_eq!(second[0].category.as_str(), "clarification");
    assert_eq!(second[0].max_selections, 3);
    assert!(third.is_empty());
}

/// The user messages stored what the model read and, for answers, the ids; each its mode.
async fn check_stored(flow: &Flow, conversation: &str, answers: &[Value; 2]) {
    let view = flow.admin_view(conversation).await;
    let users = view.users();
    let modes: Vec<&str> = users
        .iter()
        .map(|m| m.data.context.as_ref().unwrap()["mode"].as_str().unwrap())
        .collect();
    assert_eq!(modes, MODES);
    assert_eq!(users[0].data.answer, None);
    assert_eq!(users[1].data.content, FIRST_ANSWER);
    assert_eq!(users[1].data.answer, Some(json!([answers[0]])));
    assert_eq!(users[2].data.content, SECOND_ANSWER);
    assert_eq!(users[2].data.answer, Some(json!([answers[1]])));
    for turn in 0..3 {
        let replies = view.replies(turn);
        assert_eq!(replies.len(), 1);
        assert!(replies[0].data.is_validated);
    }
}

/// The answer to the first card: option B, with a remark.
fn first_answer(card: &QuestionCard) -> Value {
    json!({"question_id": card.question_id, "option_ids": [card.options[1].id], "text": "mostly at the front desk"})
}

/// The answer to the second card: its first two options.
fn second_answer(card: &QuestionCard) -> Value {
    json!({"question_id": card.question_id, "option_ids": [card.options[0].id, card.options[1].id]})
}

async fn native(flow: &Flow) {
    let id = flow
        .create("question-cards", json!({"mode": "discovery"}))
        .await;
    let first = flow
        .send(&id, &json!({"content": "I want to build a booking app"}))
        .await;
    let sent_first = flow.sent().await;
    let first_cards = cards(&first["value"]);
    let answer_one = first_answer(&first_cards[0]);
    let second = flow
        .send(
            &id,
            &json!({"answer": answer_one, "context": {"mode": "clarification"}}),
        )
        .await;
    let sent_second = flow.sent().await;
    let second_cards = cards(&second["value"]);
    let answer_two = second_answer(&second_cards[0]);
    let third = flow
        .send(
            &id,
            &json!({"answer": answer_two, "context": {"mode": "normal"}}),
        )
        .await;
    check_sent(&[sent_first, sent_second, flow.sent().await]);
    check_cards(&first_cards, &second_cards, &cards(&third["value"]));
    assert_eq!(third["value"]["message"], ANSWER);
    assert_eq!(first["value"]["message"], "Thanks, a booking app it is.");
    check_stored(flow, &id, &[answer_one, answer_two]).await;
}

/// The `question_card` events of a turn: each the card itself (spec 04), in the value's order.
fn card_events(events: &[Event], value: &Value) -> Vec<QuestionCard> {
    let carried: Vec<QuestionCard> = events
        .iter()
        .filter(|e| e.name == "question_card")
        .map(|e| serde_json::from_value(e.data.clone()).unwrap())
        .collect();
    assert_eq!(carried, cards(value));
    for event in events.iter().filter(|e| e.name == "question_card") {
        assert!(event.data.get("card").is_none(), "{}", event.data);
        assert_eq!(
            event.data["metadata"]["phase"], event.data["category"],
            "{}",
            event.data
        );
    }
    carried
}

async fn streamed(flow: &Flow) {
    let id = flow
        .create("question-cards", json!({"mode": "discovery"}))
        .await;
    let first = flow
        .stream(&id, &json!({"content": "I want to build a booking app"}))
        .await;
    let sent_first = flow.sent().await;
    assert_eq!(
        names(&first),
        [
            "attempt_started",
            "text_delta",
            "question_card",
            "message_complete"
        ]
    );
    let first_value = &only(&first, "message_complete")["value"];
    let first_cards = card_events(&first, first_value);
    // The card's text never went out as text.
    assert_eq!(final_text(&first).trim(), "Thanks, a booking app it is.");
    let answer_one = first_answer(&first_cards[0]);
    let second = flow
        .stream(
            &id,
            &json!({"answer": answer_one, "context": {"mode": "clarification"}}),
        )
        .await;
    let sent_second = flow.sent().await;
    let second_cards = card_events(&second, &only(&second, "message_complete")["value"]);
    assert_eq!(
        second_cards[0].metadata.as_ref().unwrap()["phase"],
        "clarification"
    );
    let answer_two = second_answer(&second_cards[0]);
    let third = flow
        .stream(
            &id,
            &json!({"answer": answer_two, "context": {"mode": "normal"}}),
        )
        .await;
    check_sent(&[sent_first, sent_second, flow.sent().await]);
    assert_eq!(
        names(&third),
        ["attempt_started", "text_delta", "message_complete"]
    );
    assert_eq!(final_text(&third), ANSWER);
    let third_value = &only(&third, "message_complete")["value"];
    check_cards(
        &first_cards,
        &second_cards,
        &card_events(&third, third_value),
    );
    check_stored(flow, &id, &[answer_one, answer_two]).await;
}

async fn openai(flow: &Flow) {
    let user_turns = ["I want to build a booking app", FIRST_ANSWER, SECOND_ANSWER];
    let mut history: Vec<Value> = Vec::new();
    let mut sent = Vec::new();
    let mut values = Vec::new();
    for (content, mode) in user_turns.into_iter().zip(MODES) {
        history.push(json!({"role": "user", "content": content}));
        let completion = flow
            .complete("question-cards", &json!({ "mode": mode }), &history)
            .await;
        history.push(json!({"role": "assistant", "content": completion.content()}));
        sent.push(flow.sent().await);
        let content: Value = serde_json::from_str(completion.content()).unwrap();
        assert_eq!(&content, completion.value());
        let view = flow.admin_view(completion.conversation()).await;
        let stored = view.users()[0].data.context.clone().unwrap();
        assert_eq!(stored, json!({"mode": mode, "source": "openai"}));
        values.push(content);
    }
    check_sent(&sent);
    check_cards(&cards(&values[0]), &cards(&values[1]), &cards(&values[2]));
}

async fn run(backend: Backend) {
    let mut all = Vec::new();
    for _ in 0..3 {
        all.extend(script());
    }
    let flow = Flow::start(backend, all).await;
    native(&flow).await;
    streamed(&flow).await;
    openai(&flow).await;
}

#[tokio::test]
async fn discovery_clarification_then_an_answer_on_sqlite() {
    run(Backend::Sqlite).await;
}

#[tokio::test]
async fn discovery_clarification_then_an_answer_on_postgres() {
    run(Backend::Postgres).await;
}
