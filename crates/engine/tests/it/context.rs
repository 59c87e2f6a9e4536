//! Context per message, over real HTTP against the mock LLM, on SQLite and PostgreSQL: a table
//! chat moves from the tables list to a table and back — each turn's prompt is built from the
//! context its message brought (the page's instructions, the application's state in a
//! "Application state" section), each turn is checked under its own page, and each user message
//! stores the context it ran under; a question-card thread moves from discovery to a normal
//! reply in one conversation.

use bridle_engine::answer::{Answers, CardAnswer};
use bridle_engine::store::{Message, MessageRole, Store, View};
use bridle_engine::{Config, Engine, EngineError, UserTurn};
use bridle_mock::{MockConfig, MockServer, Script};
use serde_json::{Map, Value, json};
use std::sync::Arc;

on_both_backends! {
    a_table_chat_moves_between_pages: sqlite_a_table_chat_moves_between_pages, postgres_a_table_chat_moves_between_pages;
    a_card_thread_changes_mode: sqlite_a_card_thread_changes_mode, postgres_a_card_thread_changes_mode;
    a_card_is_answered_by_its_ids: sqlite_a_card_is_answered_by_its_ids, postgres_a_card_is_answered_by_its_ids;
    a_topic_analysis_carries_the_applications_topic_id: sqlite_a_topic_analysis_carries_the_applications_topic_id, postgres_a_topic_analysis_carries_the_applications_topic_id;
}

fn engine(store: Arc<dyn Store>, server: &MockServer) -> Engine {
    let text = format!(
        "default_model = \"up\"\n[retry]\ndelay_ms = 0\nmax_attempts = 2\n\
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

/// A reply with a DATA_PROPOSAL: valid on `table_view`, not on the tables list.
const DATA_REPLY: &str = "I can add a row for the new application.\n\nDATA_PROPOSAL:\n\
    {\"operations\": [{\"action\": \"add\", \"data\": {\"Company\": \"Contoso\"}}]}";

fn object(value: Value) -> Map<String, Value> {
    match value {
        Value::Object(map) => map,
        other => panic!("not an object: {other}"),
    }
}

/// The system text of the `index`-th request the mock received.
fn system_text(server: &MockServer, index: usize) -> String {
    let requests = server.requests();
    requests[index].body["messages"][0]["content"]
        .as_str()
        .unwrap()
        .to_owned()
}

async fn user_messages(store: &dyn Store, conversation: &str) -> Vec<Message> {
    store
        .messages(conversation, View::Admin)
        .await
        .unwrap()
        .into_iter()
        .filter(|m| m.data.role == MessageRole::User)
        .collect()
}

async fn a_table_chat_moves_between_pages(store: Arc<dyn Store>) {
    // Turn 1 (table_view): the proposal is valid at once. Turn 2 (tables_list): the same
    // reply breaks the page's rules, and the retry is valid.
    let script = json!({"turns": [
        {"attempts": [{"reply": DATA_REPLY}]},
        {"attempts": [{"reply": DATA_REPLY}, {"valid": true}]},
        {"attempts": [{"reply": DATA_REPLY}]}
    ]});
    let server = MockServer::start(MockConfig {
        script: Some(Script::from_json(&script.to_string()).unwrap()),
        ..MockConfig::default()
    })
    .await
    .unwrap();
    let engine = engine(Arc::clone(&store), &server);
    let conversation = engine
        .start_conversation(
            "ada",
            "table-chat",
            json!({"page": "tables_list", "language": "en"}),
        )
        .await
        .unwrap();

    let table = object(json!({
        "page": "table_view",
        "app_state": {"table": {"id": 7, "name": "Job Applications",
            "columns": [{"column_id": 3, "name": "Company", "type": "text"}],
            "rows": [{"row_id": 17, "Company": "Northwind"}],
            "filters": [], "sort": {"column_id": 3, "direction": "asc"}}}
    }));
    let turn = UserTurn {
        content: "Add Contoso",
        model: None,
        context: Some(&table),
        answer: None,
        ids: None,
    };
    let first = engine.send_message(&conversation.id, &turn).await.unwrap();
    assert_eq!(first.attempts, 1, "a data proposal is valid on table_view");
    assert!(first.value["payload"].is_object(), "{}", first.value);
    let system = system_text(&server, 0);
    assert!(system.contains("## Application state"), "{system}");
    assert!(
        system.contains("\"row_id\": 17"),
        "the table's rows are in the prompt"
    );
    assert!(
        system.contains("DATA_PROPOSAL"),
        "table_view offers data proposals"
    );

    let list = object(json!({"page": "tables_list"}));
    let turn = UserTurn {
        content: "Back to my tables",
        model: None,
        context: Some(&list),
        answer: None,
        ids: None,
    };
    let second = engine.send_message(&conversation.id, &turn).await.unwrap();
    assert_eq!(
        second.attempts, 2,
        "a data proposal breaks the tables list's rules"
    );
    let system = system_text(&server, 1);
    assert!(
        !system.contains("## Application state"),
        "no state was sent this turn"
    );
    assert!(
        !system.contains("DATA_PROPOSAL:"),
        "the tables list offers no data proposals"
    );

    // Each user message keeps the context its turn ran under; the conversation's is unchanged.
    let users = user_messages(store.as_ref(), &conversation.id).await;
    assert_eq!(users.len(), 2);
    let mut expected = table.clone();
    expected.insert("language".into(), json!("en"));
    assert_eq!(users[0].data.context, Some(Value::Object(expected)));
    assert_eq!(
        users[1].data.context,
        Some(json!({"page": "tables_list", "language": "en"}))
    );
    let stored = store.conversation(&conversation.id).await.unwrap().unwrap();
    assert_eq!(
        stored.context,
        json!({"page": "tables_list", "language": "en"})
    );
}

async fn a_card_thread_changes_mode(store: Arc<dyn Store>) {
    let server = MockServer::start(MockConfig::default()).await.unwrap();
    let engine = engine(Arc::clone(&store), &server);
    let conversation = engine
        .start_conversation("ada", "question-cards", json!({"mode": "discovery"}))
        .await
        .unwrap();
    let first = engine
        .send(&conversation.id, "I want an app for my flat", None)
        .await
        .unwrap();
    let cards = first.value["question_cards"].as_array().unwrap();
    assert!(
        !cards.is_empty(),
        "discovery asks with cards: {}",
        first.value
    );

    let normal = object(json!({"mode": "normal"}));
    let turn = UserTurn {
        content: "Just tell me what to build",
        model: None,
        context: Some(&normal),
        answer: None,
        ids: None,
    };
    let second = engine.send_message(&conversation.id, &turn).await.unwrap();
    let cards = second.value["question_cards"].as_array();
    assert!(
        cards.is_none_or(Vec::is_empty),
        "a normal reply has no cards: {}",
        second.value
    );
    let users = user_messages(store.as_ref(), &conversation.id).await;
    assert_eq!(users[0].data.context, Some(json!({"mode": "discovery"})));
    assert_eq!(users[1].data.context, Some(json!({"mode": "normal"})));
}

async fn a_card_is_answered_by_its_ids(store: Arc<dyn Store>) {
    let server = MockServer::start(MockConfig::default()).await.unwrap();
    let engine = engine(Arc::clone(&store), &server);
    let conversation = engine
        .start_conversation("ada", "question-cards", json!({"mode": "discovery"}))
        .await
        .unwrap();
    let first = engine
        .send(&conversation.id, "I want an app for my flat", None)
        .await
        .unwrap();
    let card = &first.value["question_cards"][0];
    let question_id = card["question_id"].as_str().unwrap().to_owned();
    let option = &card["options"][0];

    // An answer the card did not ask for is refused, and nothing is stored or sent.
    let wrong = Answers::One(CardAnswer {
        question_id: question_id.clone(),
        option_ids: vec!["opt_99".into()],
        text: None,
    });
    let turn = UserTurn {
        answer: Some(&wrong),
        ..UserTurn::default()
    };
    let refused = engine.send_message(&conversation.id, &turn).await;
    assert!(
        matches!(refused, Err(EngineError::BadAnswer(_))),
        "{refused:?}"
    );
    assert_eq!(server.requests().len(), 1);

    let answer = Answers::One(CardAnswer {
        question_id: question_id.clone(),
        option_ids: vec![option["id"].as_str().unwrap().to_owned()],
        text: Some("and my cat".into()),
    });
    let turn = UserTurn {
        answer: Some(&answer),
        ..UserTurn::default()
    };
    engine.send_message(&conversation.id, &turn).await.unwrap();
    // The model reads the question and the chosen label; the message keeps the ids.
    let expected = format!(
        "{} — {}. and my cat",
        card["question_text"].as_str().unwrap(),
        option["label"].as_str().unwrap()
    );
    let sent = &server.requests()[1].body["messages"];
    let last = sent.as_array().unwrap().last().unwrap();
    assert_eq!(last["content"], expected.as_str());
    let users = user_messages(store.as_ref(), &conversation.id).await;
    assert_eq!(users[1].data.content, expected);
    assert_eq!(
        users[1].data.answer,
        Some(
            json!([{"question_id": question_id, "option_ids": [option["id"]], "text": "and my cat"}])
        )
    );
}

async fn a_topic_analysis_carries_the_applications_topic_id(store: Arc<dyn Store>) {
    let server = MockServer::start(MockConfig::default()).await.unwrap();
    let engine = engine(Arc::clone(&store), &server);
    let conversation = engine
        .start_conversation("ada", "topic-analysis", json!({"topic_id": "budget-2026"}))
        .await
        .unwrap();
    engine
        .send(&conversation.id, "Can I afford a bike?", None)
        .await
        .unwrap();
    // Without one, the conversation's id is the topic id.
    let other = engine
        .start_conversation("ada", "topic-analysis", json!({}))
        .await
        .unwrap();
    engine.send(&other.id, "And a helmet?", None).await.unwrap();
    let queries: Vec<String> = server
        .requests()
        .iter()
        .map(|r| {
            let messages = r.body["messages"].as_array().unwrap();
            messages.last().unwrap()["content"]
                .as_str()
                .unwrap()
                .to_owned()
        })
        .collect();
    assert!(
        queries[0].contains(r#"topicId="budget-2026""#),
        "{}",
        queries[0]
    );
    let own = format!(r#"topicId="{}""#, other.id);
    assert!(queries[1].contains(&own), "{}", queries[1]);
    for query in &queries {
        assert!(
            bridle_core::xml::query_check::check(query).is_empty(),
            "{query}"
        );
    }
}
