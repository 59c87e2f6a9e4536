//! Spec 05's topic analysis under the application's topic id (context `topic_id`): each user
//! message reaches the model as an `<llmQuery>` with that `topicId`, the running state (active
//! subjects, recent keywords, summary) carries from turn to turn, and a turn whose attempts all
//! fail ends in the minimal fallback analysis, which leaves the state as it was.

use super::{Backend, Event, Flow, SentChat, names, only, replies};
use serde_json::{Value, json};

const TOPIC: &str = "family-planning-2025";

const FIRST: &str = r#"<llmResponse>
  <response>Many families start with a 529 plan; how much depends on the children's ages and the costs you expect.</response>
  <analysis>
    <subject name="college-savings" description="Saving for the children's university costs" isNew="true">
      <keyword term="529-plan" confidence="0.95" />
      <keyword term="tuition" confidence="0.9" />
      <keyword term="inflation" confidence="0.5" />
    </subject>
    <summaryUpdate>The user asked how much to save for college. A 529 plan was suggested.</summaryUpdate>
  </analysis>
</llmResponse>"#;

const SECOND: &str = r#"<llmResponse>
  <response>A 529 plan grows tax-free when spent on education; a savings account is more flexible.</response>
  <analysis>
    <subject name="tax-advantages" description="How the tax treatment of savings accounts differs" isNew="true">
      <keyword term="tax-free-growth" confidence="0.9" />
      <keyword term="flexibility" confidence="0.7" />
    </subject>
    <subject name="college-savings" description="Saving for the children's university costs" isNew="false">
      <keyword term="529-plan" confidence="0.9" />
    </subject>
    <summaryUpdate>The 529 plan was compared with a savings account.</summaryUpdate>
  </analysis>
</llmResponse>"#;

/// Three replies without their analysis: the third turn's attempts all fail.
const BROKEN: [&str; 3] = [
    "<llmResponse><response>The money can go to a sibling.</response></llmResponse>",
    "<llmResponse><response>It can go to a sibling, or be withdrawn.</response></llmResponse>",
    "<llmResponse><response>You can change the beneficiary to a sibling.</response></llmResponse>",
];

const FOURTH: &str = r#"<llmResponse>
  <response>Glad it helped.</response>
  <analysis>
    <summaryUpdate>The user closed the subject.</summaryUpdate>
  </analysis>
</llmResponse>"#;

const MESSAGES: [&str; 4] = [
    "How much should we save for college?",
    "Is a 529 plan better than a savings account?",
    "What if the kids don't go to college?",
    "Thanks, that helps",
];

/// The `messageCount`s of a stored conversation's four queries (the fallback is not history).
const STORED_COUNTS: [u32; 4] = [1, 3, 5, 6];

fn script() -> [Value; 4] {
    [
        replies(&[FIRST]),
        replies(&[SECOND]),
        replies(&BROKEN),
        replies(&[FOURTH]),
    ]
}

/// The text between `<tag>` and `</tag>` in `xml` (empty when the element is absent or empty).
fn element<'a>(xml: &'a str, tag: &str) -> &'a str {
    let open = format!("<{tag}>");
    let close = format!("</{tag}>");
    match (xml.find(&open), xml.find(&close)) {
        (Some(start), Some(end)) => &xml[start + open.len()..end],
        _ => "",
    }
}

/// The four turns' queries and prompts: the application's topic id every time, the state of
/// the turns before (the fallback changed nothing), the running summary in the system prompt.
/// `counts` are the queries' `messageCount`s: the messages of the history sent, this one
/// included (a stored conversation's history holds validated replies only, not the fallback;
/// an OpenAI client sends back what it got).
fn check_sent(sent: &[Vec<SentChat>], counts: [u32; 4]) {
    assert_eq!(sent.iter().map(Vec::len).collect::<Vec<_>>(), [1, 1, 3, 1]);
    let queries: Vec<&str> = sent.iter().map(|turn| turn[0].last()).collect();
    for (n, query) in queries.iter().enumerate() {
        assert!(query.starts_with("<llmQuery>"), "{query}");
        assert!(query.contains(&format!(r#"topicId="{TOPIC}""#)), "{query}");
        assert!(
            query.contains(&format!(r#"messageCount="{}""#, counts[n])),
            "{query}"
        );
        let message = element(query, "userMessage").replace("&apos;", "'");
        assert_eq!(message, MESSAGES[n], "{query}");
    }
    assert_eq!(element(queries[0], "activeSubjects"), "");
    assert_eq!(element(queries[1], "activeSubjects"), "college-savings");
    assert_eq!(element(queries[1], "recentKeywords"), "529-plan, tuition");
    let after_second = "tax-advantages, college-savings";
    assert_eq!(element(queries[2], "activeSubjects"), after_second);
    assert_eq!(
        element(queries[2], "recentKeywords"),
        "tax-free-growth, flexibility, 529-plan, tuition"
    );
    // The fallback left the state as it was.
    for tag in ["activeSubjects", "recentKeywords"] {
        assert_eq!(element(queries[3], tag), element(queries[2], tag));
    }
    assert!(!sent[0][0].system().contains("Summary of the conversation"));
    let summary = "Summary of the conversation so far: The user asked how much to save for college. A 529 plan was suggested. The 529 plan was compared with a savings account.";
    assert!(
        sent[2][0].system().contains(summary),
        "{}",
        sent[2][0].system()
    );
    assert!(
        sent[3][0].system().contains(summary),
        "{}",
        sent[3][0].system()
    );
    // Earlier replies come back as the XML the model writes, not as their JSON value.
    let history = sent[1][0].chat();
    assert!(
        history[1].1.trim_start().starts_with("<llmResponse>"),
        "{history:?}"
    );
}

/// The fallback's value: the latest reply's answer, no subject, no summary update.
fn fallback() -> Value {
    json!({"response": "You can change the beneficiary to a sibling.", "analysis": {"summaryUpdate": ""}})
}

/// What the store kept: the topic id with every user message, three rejected attempts and the
/// fallback in turn 3, and the state built from the valid replies only.
async fn check_stored(flow: &Flow, conversation: &str) {
    let view = flow.admin_view(conversation).await;
    for user in view.users() {
        assert_eq!(user.data.context.as_ref().unwrap()["topic_id"], TOPIC);
    }
    let third = view.replies(2);
    assert_eq!(third.len(), 4);
    assert!(third[..3].iter().all(|m| !m.data.is_validated));
    assert!(third[3].data.is_fallback && !third[3].data.is_validated);
    assert_eq!(third[3].data.value.as_ref(), Some(&fallback()));
    let topic = &view.conversation.state["topic"];
    assert_eq!(
        topic["active_subjects"],
        json!(["tax-advantages", "college-savings"])
    );
    assert_eq!(topic["updates"], 3, "{topic}");
}

async fn native(flow: &Flow) {
    let id = flow
        .create("topic-analysis", json!({"topic_id": TOPIC}))
        .await;
    let mut sent = Vec::new();
    let mut answers = Vec::new();
    for message in MESSAGES {
        answers.push(flow.send(&id, &json!({ "content": message })).await);
        sent.push(flow.sent().await);
    }
    check_sent(&sent, STORED_COUNTS);
    assert_eq!(
        answers[1]["value"]["analysis"]["subject"][0]["@name"],
        "tax-advantages"
    );
    assert_eq!(answers[2]["fallback"], true);
    assert_eq!(answers[2]["value"], fallback());
    assert_eq!(answers[3]["value"]["response"], "Glad it helped.");
    check_stored(flow, &id).await;
}

async fn streamed(flow: &Flow) {
    // This time the topic id comes with each message rather than with the conversation.
    let id = flow.create("topic-analysis", json!({})).await;
    let mut sent = Vec::new();
    let mut turns: Vec<Vec<Event>> = Vec::new();
    for message in MESSAGES {
        let body = json!({"content": message, "context": {"topic_id": TOPIC}});
        turns.push(flow.stream(&id, &body).await);
        sent.push(flow.sent().await);
    }
    check_sent(&sent, STORED_COUNTS);
    let first = names(&turns[0]);
    assert_eq!(first.first(), Some(&"attempt_started"));
    assert!(first.contains(&"partial"), "{first:?}");
    assert_eq!(first.last(), Some(&"message_complete"));
    let third = &turns[2];
    assert_eq!(
        third.iter().filter(|e| e.name == "attempt_failed").count(),
        3
    );
    let complete = only(third, "message_complete");
    assert_eq!(complete["fallback"], true);
    assert_eq!(complete["value"], fallback());
    check_stored(flow, &id).await;
}

async fn openai(flow: &Flow) {
    let context = json!({ "topic_id": TOPIC });
    let mut history: Vec<Value> = Vec::new();
    let mut sent = Vec::new();
    let mut completions = Vec::new();
    for message in MESSAGES {
        history.push(json!({"role": "user", "content": message}));
        let completion = flow.complete("topic-analysis", &context, &history).await;
        history.push(json!({"role": "assistant", "content": completion.content()}));
        sent.push(flow.sent().await);
        completions.push(completion);
    }
    check_sent(&sent, [1, 3, 5, 7]);
    assert_eq!(completions[2].headers["x-bridle-fallback"], "true");
    assert_eq!(*completions[2].value(), fallback());
    // Each call is a conversation of its own; its state starts from the chat it was sent.
    let last = flow.admin_view(completions[3].conversation()).await;
    let topic = &last.conversation.state["topic"];
    assert_eq!(
        topic["active_subjects"],
        json!(["tax-advantages", "college-savings"])
    );
    // An application that writes its own <llmQuery> has it sent as it wrote it.
    let own = "<llmQuery><userMessage>And for twins?</userMessage><context topicId=\"app-42\" messageCount=\"1\"/></llmQuery>";
    flow.complete(
        "topic-analysis",
        &context,
        &[json!({"role": "user", "content": own})],
    )
    .await;
    assert_eq!(flow.sent().await[0].last(), own);
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
async fn a_topic_analysis_under_the_applications_topic_id_on_sqlite() {
    run(Backend::Sqlite).await;
}

#[tokio::test]
async fn a_topic_analysis_under_the_applications_topic_id_on_postgres() {
    run(Backend::Postgres).await;
}
