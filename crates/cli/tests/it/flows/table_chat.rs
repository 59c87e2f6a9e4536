//! Spec 03's table chat between pages: turn 1 on `tables_list` (a schema proposal for a new
//! table), turn 2 on `table_view` with the table's schema, visible rows, filters and sort as the
//! application's state (a data proposal, valid there), turn 3 back on `tables_list` where every
//! attempt proposes rows — `payload_unavailable` each time, retried, then the fallback: the last
//! attempt's text with every marker section cut out and nothing structured.

use super::{Backend, Completion, Event, Flow, SentChat, final_text, names, only, replies};
use serde_json::{Value, json};

const CREATE: &str = r#"Here is a table for your job applications.

SCHEMA_PROPOSAL:
{"mode": "create", "reasoning": "One row per application", "table_name": "Job applications",
 "table_description": "Where I applied and how it stands",
 "operations": [{"action": "add", "column": {"name": "Company", "type": "text", "required": true}},
                {"action": "add", "column": {"name": "Status", "type": "select", "options": ["Applied", "Interview", "Offer"]}}],
 "sample_rows": [{"Company": "Northwind", "Status": "Applied"}, {"Company": "Fabrikam", "Status": "Interview"}]}"#;

const ROWS: &str = r#"I would add Contoso and move Northwind on to the interview stage.

DATA_PROPOSAL:
{"reasoning": "One new application, one status change",
 "operations": [{"action": "add", "data": {"Company": "Contoso", "Status": "Applied"}},
                {"action": "update", "row_id": 17, "changes": {"Status": "Interview"}}]}"#;

/// Rows proposed on the tables list, where no data proposal is offered: three times.
const MISPLACED: [&str; 3] = [
    "Adding Tailspin now.\n\nDATA_PROPOSAL:\n{\"operations\": [{\"action\": \"add\", \"data\": {\"Company\": \"Tailspin\"}}]}",
    "**DATA_PROPOSAL:** {\"operations\": [{\"action\": \"add\", \"data\": {\"Company\": \"Tailspin\"}}]}\nTailspin is on its way.",
    "Open Job applications to add Tailspin; I have the row ready.\n\nDATA_PROPOSAL:\n{\"operations\": [{\"action\": \"add\", \"data\": {\"Company\": \"Tailspin\"}}]}\n\nSUGGESTED_VALUES: [{\"label\": \"Open it\", \"value\": \"Open Job applications\"}, {\"label\": \"Not now\", \"value\": \"Not now\"}]",
];

/// What the user sees when the attempts run out: the last attempt's text, sections cut out.
const FALLBACK_TEXT: &str = "Open Job applications to add Tailspin; I have the row ready.";

/// Turn 1's application state: the user's tables.
fn tables(with_jobs: bool) -> Value {
    let mut list = vec![json!({"id": 3, "name": "Contacts", "row_count": 12})];
    if with_jobs {
        list.push(json!({"id": 7, "name": "Job applications", "row_count": 2}));
    }
    json!({ "tables": list })
}

/// Turn 2's application state: the current table's schema, visible rows, filters and sort.
fn table_view() -> Value {
    json!({"table": {
        "id": 7, "name": "Job applications", "row_count": 2,
        "columns": [{"column_id": "col_company", "name": "Company", "type": "text", "required": true},
                    {"column_id": "col_status", "name": "Status", "type": "select", "options": ["Applied", "Interview", "Offer"]}],
        "rows": [{"row_id": 17, "Company": "Northwind", "Status": "Applied"},
                 {"row_id": 18, "Company": "Fabrikam", "Status": "Interview"}],
        "filters": [{"column_id": "col_status", "op": "is_not", "value": "Offer"}],
        "sort": {"column_id": "col_company", "direction": "asc"}
    }})
}

/// The three turns: what the user writes and the context the page sends with it.
fn turns() -> [(&'static str, Value); 3] {
    [
        (
            "I want to track my job applications",
            json!({"page": "tables_list", "app_state": tables(false)}),
        ),
        (
            "Add Contoso and move Northwind to Interview",
            json!({"page": "table_view", "app_state": table_view()}),
        ),
        (
            "Also add Tailspin to my job applications",
            json!({"page": "tables_list", "app_state": tables(true)}),
        ),
    ]
}

/// The script of one run of the flow.
fn script() -> [Value; 3] {
    [replies(&[CREATE]), replies(&[ROWS]), replies(&MISPLACED)]
}

/// The prompt of each turn was built from that turn's page and application state.
fn check_prompts(sent: &[Vec<SentChat>; 3]) {
    let [first, second, third] = sent;
    assert_eq!(
        (first.len(), second.len(), third.len()),
        (1, 1, 3),
        "one attempt, one attempt, three attempts"
    );
    let (list, view, back) = (first[0].system(), second[0].system(), third[0].system());
    assert!(list.contains("## Page: tables_list"), "{list}");
    assert!(!list.contains("### DATA_PROPOSAL"), "{list}");
    assert!(list.contains(r#""name": "Contacts""#), "{list}");
    assert!(!list.contains(r#""row_id": 17"#), "{list}");
    assert!(view.contains("## Page: table_view"), "{view}");
    assert!(view.contains("### DATA_PROPOSAL"), "{view}");
    assert!(view.contains("open_filters"), "{view}");
    for fact in [
        r#""column_id": "col_status""#,
        r#""row_id": 17"#,
        r#""op": "is_not""#,
        r#""direction": "asc""#,
    ] {
        assert!(view.contains(fact), "{fact} in {view}");
    }
    assert!(back.contains("## Page: tables_list"), "{back}");
    assert!(!back.contains("### DATA_PROPOSAL"), "{back}");
    assert!(!back.contains(r#""row_id": 17"#), "{back}");
    assert!(back.contains(r#""name": "Job applications""#), "{back}");
    // Each retry shows the model its bad reply and says what was wrong with it.
    for (n, retry) in third.iter().enumerate().skip(1) {
        let chat = retry.chat();
        let (role, bad) = chat[chat.len() - 2];
        assert_eq!((role, bad), ("assistant", MISPLACED[n - 1]));
        assert!(retry.last().contains("DATA_PROPOSAL"), "{}", retry.last());
        assert!(retry.last().contains("tables_list"), "{}", retry.last());
    }
}

/// Each reply the model gave earlier reached it again as it writes replies: text with marker
/// sections, never as the JSON value.
fn check_history(sent: &[Vec<SentChat>; 3]) {
    let second = sent[1][0].chat();
    assert_eq!(second.len(), 3, "{second:?}");
    assert_eq!(second[0], ("user", turns()[0].0));
    assert_eq!(second[1].0, "assistant");
    assert!(
        second[1]
            .1
            .starts_with("Here is a table for your job applications."),
        "{}",
        second[1].1
    );
    assert!(second[1].1.contains("SCHEMA_PROPOSAL:"), "{}", second[1].1);
    let third = sent[2][0].chat();
    assert_eq!(third.len(), 5, "{third:?}");
    assert!(third[3].1.contains("DATA_PROPOSAL:"), "{}", third[3].1);
    assert_eq!(third[4], ("user", turns()[2].0));
}

/// The value of the fallback: the text alone.
fn fallback_value() -> Value {
    json!({"message": FALLBACK_TEXT, "suggested_values": null, "suggested_actions": null, "payload": null})
}

/// What the store kept of a conversation that ran the three turns: each user message with the
/// context it was sent with, the three rejected attempts and the fallback.
async fn check_stored(flow: &Flow, conversation: &str, base: &Value) {
    let view = flow.admin_view(conversation).await;
    let contexts: Vec<Value> = view
        .users()
        .iter()
        .map(|m| m.data.context.clone().unwrap())
        .collect();
    let expected: Vec<Value> = turns()
        .into_iter()
        .map(|(_, context)| merge(base, &context))
        .collect();
    assert_eq!(contexts, expected);
    let third = view.replies(2);
    assert_eq!(third.len(), 4, "three attempts and the fallback");
    for attempt in &third[..3] {
        assert!(!attempt.data.is_validated && !attempt.data.is_fallback);
        assert_eq!(
            attempt.data.violations[0].rule.as_str(),
            "payload_unavailable"
        );
    }
    let fallback = &third[3].data;
    assert!(fallback.is_fallback && !fallback.is_validated);
    assert_eq!(fallback.value.as_ref(), Some(&fallback_value()));
    for turn in [0, 1] {
        let replies = view.replies(turn);
        assert_eq!(replies.len(), 1);
        assert!(replies[0].data.is_validated);
    }
}

/// `context` merged over `base`, key by key.
fn merge(base: &Value, context: &Value) -> Value {
    let mut merged = base.as_object().cloned().unwrap_or_default();
    merged.extend(context.as_object().cloned().unwrap_or_default());
    Value::Object(merged)
}

async fn native(flow: &Flow) {
    let base = json!({"language": "en"});
    let id = flow.create("table-chat", base.clone()).await;
    let mut sent = Vec::new();
    let mut answers = Vec::new();
    for (content, context) in turns() {
        answers.push(
            flow.send(&id, &json!({"content": content, "context": context}))
                .await,
        );
        sent.push(flow.sent().await);
    }
    let sent: [Vec<SentChat>; 3] = sent.try_into().unwrap();
    check_prompts(&sent);
    check_history(&sent);
    let first = &answers[0]["value"];
    assert_eq!(first["payload"]["type"], "schema_proposal", "{first}");
    assert_eq!(first["payload"]["data"]["table_name"], "Job applications");
    assert_eq!(
        first["message"],
        "Here is a table for your job applications."
    );
    let second = &answers[1]["value"];
    assert_eq!(second["payload"]["type"], "data_proposal", "{second}");
    assert_eq!(
        second["payload"]["data"]["operations"][1]["row_id"], 17,
        "{second}"
    );
    let third = &answers[2];
    assert_eq!(third["fallback"], true, "{third}");
    assert_eq!(third["attempts"], 3, "{third}");
    assert_eq!(third["value"], fallback_value());
    check_stored(flow, &id, &base).await;
}

async fn streamed(flow: &Flow) {
    let id = flow.create("table-chat", json!({})).await;
    let mut sent = Vec::new();
    let mut turns_events: Vec<Vec<Event>> = Vec::new();
    for (content, context) in turns() {
        turns_events.push(
            flow.stream(&id, &json!({"content": content, "context": context}))
                .await,
        );
        sent.push(flow.sent().await);
    }
    let sent: [Vec<SentChat>; 3] = sent.try_into().unwrap();
    check_prompts(&sent);
    check_history(&sent);
    let [first, second, third]: [Vec<Event>; 3] = turns_events.try_into().unwrap();
    assert_eq!(
        names(&first),
        [
            "attempt_started",
            "text_delta",
            "payload",
            "message_complete"
        ]
    );
    assert_eq!(only(&first, "payload")["type"], "schema_proposal");
    assert_eq!(
        final_text(&first).trim(),
        "Here is a table for your job applications."
    );
    assert_eq!(only(&second, "payload")["type"], "data_proposal");
    assert_eq!(
        only(&second, "payload")["data"]["operations"][0]["data"]["Company"],
        "Contoso"
    );
    // Three attempts thrown away, then the fallback; no marker ever reached the client's text.
    let failed: Vec<&Event> = third
        .iter()
        .filter(|e| e.name == "attempt_failed")
        .collect();
    assert_eq!(failed.len(), 3, "{:?}", names(&third));
    for event in &failed {
        assert_eq!(event.data["reason"], "invalid");
        assert_eq!(event.data["violations"][0]["rule"], "payload_unavailable");
    }
    assert!(
        third
            .iter()
            .all(|e| e.name != "payload" && e.name != "suggestions")
    );
    for event in third.iter().filter(|e| e.name == "text_delta") {
        let text = event.data["text"].as_str().unwrap();
        assert!(!text.contains("PROPOSAL") && !text.contains('{'), "{text}");
    }
    let complete = only(&third, "message_complete");
    assert_eq!(complete["fallback"], true);
    assert_eq!(complete["value"], fallback_value());
    assert_eq!(third.last().unwrap().name, "message_complete");
    check_stored(flow, &id, &json!({})).await;
}

async fn openai(flow: &Flow) {
    let mut history: Vec<Value> = Vec::new();
    let mut sent = Vec::new();
    let mut completions: Vec<Completion> = Vec::new();
    for (content, context) in turns() {
        history.push(json!({"role": "user", "content": content}));
        let completion = flow.complete("table-chat", &context, &history).await;
        history.push(json!({"role": "assistant", "content": completion.content()}));
        sent.push(flow.sent().await);
        completions.push(completion);
    }
    let sent: [Vec<SentChat>; 3] = sent.try_into().unwrap();
    check_prompts(&sent);
    check_history(&sent);
    assert_eq!(completions[0].value()["payload"]["type"], "schema_proposal");
    assert_eq!(completions[1].value()["payload"]["type"], "data_proposal");
    let third = &completions[2];
    assert_eq!(third.headers["x-bridle-fallback"], "true");
    assert_eq!(third.headers["x-bridle-attempts"], "3");
    assert_eq!(*third.value(), fallback_value());
    let content: Value = serde_json::from_str(third.content()).unwrap();
    assert_eq!(content, fallback_value());
    // Each call is recorded with the context it was sent with.
    for (completion, (_, context)) in completions.iter().zip(turns()) {
        let view = flow.admin_view(completion.conversation()).await;
        let stored = view.users()[0].data.context.clone().unwrap();
        assert_eq!(stored, merge(&context, &json!({"source": "openai"})));
        assert_eq!(view.conversation.user_id, "ada");
    }
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
async fn a_table_chat_moves_between_pages_on_sqlite() {
    run(Backend::Sqlite).await;
}

#[tokio::test]
async fn a_table_chat_moves_between_pages_on_postgres() {
    run(Backend::Postgres).await;
}
