//! A chat the OpenAI-compatible endpoint's client sends whole (`Engine::complete_chat`), on
//! SQLite and PostgreSQL against the mock over HTTP: the client sends back each earlier reply
//! as the endpoint gave it — the checked value as JSON — and the model still reads it as the
//! contract's replies are written (regression: a table chat's history reached the model as
//! JSON); a topic analysis asks with spec 05's `<llmQuery>` under the application's topic id and
//! the state the chat's replies built, which the call's conversation keeps (regression: the
//! message went as plain text, the topic id was ignored and the state started empty). An
//! `<llmQuery>` the application built itself goes as written through this call and the native
//! API alike (regression: the native API wrapped it in a second query), and one that breaks the
//! query rules is refused with nothing stored.

use bridle_engine::providers::{ChatMessage, Role};
use bridle_engine::store::Store;
use bridle_engine::{ChatCall, Config, Engine, Passthrough};
use bridle_mock::{MockConfig, MockServer, Script};
use serde_json::{Map, Value, json};
use std::sync::Arc;

on_both_backends! {
    earlier_replies_sent_back_as_json_reach_the_model_as_written: sqlite_earlier_replies_sent_back_as_json_reach_the_model_as_written, postgres_earlier_replies_sent_back_as_json_reach_the_model_as_written;
    a_topic_chat_asks_under_the_applications_topic_id: sqlite_a_topic_chat_asks_under_the_applications_topic_id, postgres_a_topic_chat_asks_under_the_applications_topic_id;
    an_applications_own_query_goes_as_written_on_both_apis: sqlite_an_applications_own_query_goes_as_written_on_both_apis, postgres_an_applications_own_query_goes_as_written_on_both_apis;
}

async fn mock(replies: &[&str]) -> MockServer {
    let turns: Vec<Value> = replies
        .iter()
        .map(|r| json!({"attempts": [{"reply": r}]}))
        .collect();
    let script = json!({ "turns": turns });
    MockServer::start(MockConfig {
        script: Some(Script::from_json(&script.to_string()).unwrap()),
        ..MockConfig::default()
    })
    .await
    .unwrap()
}

fn engine(store: Arc<dyn Store>, server: &MockServer) -> Engine {
    let text = format!(
        "default_model = \"up\"\n[retry]\ndelay_ms = 0\n\
         [providers.up]\nkind = \"openai\"\nbase_url = \"{}/v1\"\n\
         [models.up]\nprovider = \"up\"\nmodel = \"upstream-model\"\n",
        server.url()
    );
    Engine::with_store(
        Config::from_toml(&text, &Default::default()).unwrap(),
        store,
    )
    .unwrap()
}

/// Calls `contract` with `chat` (role, text) and `context`; the value and the conversation's id.
async fn call(
    engine: &Engine,
    contract: &str,
    chat: &[(Role, &str)],
    context: Value,
) -> (Value, String) {
    let contracts = bridle_core::Contracts::builtin().unwrap();
    let contract = contracts.get(contract).unwrap();
    let messages: Vec<ChatMessage> = chat
        .iter()
        .map(|(role, text)| ChatMessage::new(*role, *text))
        .collect();
    let context: Map<String, Value> = serde_json::from_value(context).unwrap();
    let (conversation, outcome) = engine
        .complete_chat(ChatCall {
            user_id: "ada",
            contract: &contract,
            messages: &messages,
            model: None,
            context: &context,
            passthrough: &Passthrough::default(),
            ids: None,
        })
        .await
        .unwrap();
    (outcome.value, conversation.id)
}

/// The messages of the `index`-th request the mock received, as (role, text).
fn sent(server: &MockServer, index: usize) -> Vec<(String, String)> {
    let request = &server.requests()[index];
    request.body["messages"]
        .as_array()
        .unwrap()
        .iter()
        .map(|m| {
            (
                m["role"].as_str().unwrap().to_owned(),
                m["content"].as_str().unwrap_or_default().to_owned(),
            )
        })
        .collect()
}

const PROPOSAL: &str = "Here is the table.\n\nSCHEMA_PROPOSAL:\n{\"mode\": \"create\", \"table_name\": \"Jobs\", \"table_description\": \"Applications\", \"operations\": [{\"action\": \"add\", \"column\": {\"name\": \"Company\", \"type\": \"text\"}}], \"sample_rows\": [{\"Company\": \"A\"}, {\"Company\": \"B\"}]}";

async fn earlier_replies_sent_back_as_json_reach_the_model_as_written(store: Arc<dyn Store>) {
    let server = mock(&[PROPOSAL, "Done."]).await;
    let engine = engine(store, &server);
    let page = json!({"page": "tables_list"});
    let (value, _) = call(
        &engine,
        "table-chat",
        &[(Role::User, "A table")],
        page.clone(),
    )
    .await;
    let as_given = value.to_string();
    let chat = [
        (Role::User, "A table"),
        (Role::Assistant, as_given.as_str()),
        (Role::User, "Thanks"),
    ];
    call(&engine, "table-chat", &chat, page).await;
    let second = sent(&server, 1);
    let (role, reply) = &second[2];
    assert_eq!(role, "assistant");
    assert!(reply.starts_with("Here is the table."), "{reply}");
    assert!(reply.contains("SCHEMA_PROPOSAL:"), "{reply}");
    // The earlier proposal is listed among the conversation's payloads, as in a stored one.
    assert!(second[0].1.contains("schema_proposal"), "{}", second[0].1);
}

const ANALYSIS: &str = r#"<llmResponse><response>Start with a 529 plan.</response><analysis><subject name="college-savings" description="Saving for college costs" isNew="true"><keyword term="529-plan" confidence="0.9"/></subject><summaryUpdate>Savings for college were discussed.</summaryUpdate></analysis></llmResponse>"#;

async fn a_topic_chat_asks_under_the_applications_topic_id(store: Arc<dyn Store>) {
    let server = mock(&[ANALYSIS, ANALYSIS]).await;
    let engine = engine(Arc::clone(&store), &server);
    let topic = json!({"topic_id": "family-2025"});
    let (value, _) = call(
        &engine,
        "topic-analysis",
        &[(Role::User, "How much?")],
        topic.clone(),
    )
    .await;
    let first = sent(&server, 0);
    assert!(
        first[1]
            .1
            .contains(r#"<context topicId="family-2025" messageCount="1""#),
        "{}",
        first[1].1
    );
    let as_given = value.to_string();
    let chat = [
        (Role::User, "How much?"),
        (Role::Assistant, as_given.as_str()),
        (Role::User, "And later?"),
    ];
    let (_, id) = call(&engine, "topic-analysis", &chat, topic).await;
    let second = sent(&server, 1);
    assert!(
        second[0]
            .1
            .contains("Summary of the conversation so far: Savings for college were discussed."),
        "{}",
        second[0].1
    );
    assert!(second[2].1.starts_with("<llmResponse>"), "{}", second[2].1);
    let query = &second[3].1;
    assert!(query.contains(r#"messageCount="3""#), "{query}");
    assert!(
        query.contains("<activeSubjects>college-savings</activeSubjects>"),
        "{query}"
    );
    assert!(
        query.contains("<recentKeywords>529-plan</recentKeywords>"),
        "{query}"
    );
    // The call's conversation keeps the state its chat built, with this reply taken in.
    let conversation = store.conversation(&id).await.unwrap().unwrap();
    assert_eq!(
        conversation.state["topic"]["updates"], 2,
        "{}",
        conversation.state
    );
    assert_eq!(
        conversation.state["topic"]["active_subjects"],
        json!(["college-savings"])
    );
}

const OWN_QUERY: &str = r#"<llmQuery><userMessage>How much?</userMessage><context topicId="family-2025" messageCount="7"/></llmQuery>"#;

async fn an_applications_own_query_goes_as_written_on_both_apis(store: Arc<dyn Store>) {
    let server = mock(&[ANALYSIS, ANALYSIS]).await;
    let engine = engine(Arc::clone(&store), &server);
    call(
        &engine,
        "topic-analysis",
        &[(Role::User, OWN_QUERY)],
        json!({}),
    )
    .await;
    assert_eq!(sent(&server, 0)[1].1, OWN_QUERY);
    let conversation = engine
        .start_conversation("ada", "topic-analysis", json!({}))
        .await
        .unwrap();
    engine
        .send(&conversation.id, OWN_QUERY, None)
        .await
        .unwrap();
    assert_eq!(sent(&server, 1).last().unwrap().1, OWN_QUERY);
    // A query without its <userMessage> is refused before anything is stored or sent.
    let broken = r#"<llmQuery><context topicId="t" messageCount="1"/></llmQuery>"#;
    let refused = engine.send(&conversation.id, broken, None).await;
    match refused {
        Err(bridle_engine::EngineError::BadMessage(message)) => {
            assert!(message.contains("breaks the query rules"), "{message}");
        }
        other => panic!("{other:?}"),
    }
    assert_eq!(server.requests().len(), 2);
    let stored = store
        .messages(&conversation.id, bridle_engine::store::View::Admin)
        .await
        .unwrap();
    assert_eq!(stored.len(), 2, "the refused message left nothing behind");
}
