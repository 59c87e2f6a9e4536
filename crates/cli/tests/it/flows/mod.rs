//! The applications' flows of shared specs 03–05 end to end ([`Flow`]: the real `bridle serve`
//! on SQLite or PostgreSQL, with `bridle mock-llm --script …` as its OpenAI-compatible
//! upstream), each through the native API, its server-sent events and the OpenAI-compatible
//! endpoint: a table chat that moves between pages (`table_chat.rs`), a question-card thread
//! from discovery through clarification to an answer (`question_cards.rs`), and a topic
//! analysis under the application's topic id (`topic.rs`), and replies that break a contract's
//! expression rules retried until they hold (`expr_rules.rs`). Each turn checks what the model was
//! sent (the mock's request log), what the client got, and what the store kept (admin view).

mod expr_rules;
mod question_cards;
mod table_chat;
mod topic;

use crate::{Running, spawn_listening};
use bridle_engine::store::{Conversation, Message, MessageRole};
use bridle_testkit::TestDatabase;
use eventsource_stream::Eventsource;
use futures::StreamExt;
use reqwest::StatusCode;
use reqwest::header::HeaderMap;
use serde::Deserialize;
use serde_json::{Value, json};
use std::ffi::OsStr;

pub const ADMIN: &str = "admin-flows-key-0000000";
pub const ADA: &str = "ada-flows-key-00000000000";
const UPSTREAM_KEY: &str = "sk-flows-upstream-7c1d";

/// Where the gateway keeps its conversations.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Backend {
    Sqlite,
    Postgres,
}

/// The mock's upstream and the gateway in front of it, for one flow.
#[derive(Debug)]
pub struct Flow {
    _mock: Running,
    mock_url: String,
    _gateway: Running,
    url: String,
    client: reqwest::Client,
    _dir: tempfile::TempDir,
    _database: Option<TestDatabase>,
}

/// One request the model received: the chat as the gateway sent it.
#[derive(Debug, Deserialize)]
pub struct SentChat {
    pub messages: Vec<SentMessage>,
    #[serde(default)]
    pub tools: Vec<Value>,
}

/// One message of a [`SentChat`].
#[derive(Debug, Deserialize)]
pub struct SentMessage {
    pub role: String,
    #[serde(default)]
    pub content: Option<String>,
}

impl SentChat {
    /// The system message.
    pub fn system(&self) -> &str {
        let first = &self.messages[0];
        assert_eq!(first.role, "system", "{:?}", self.messages);
        first.content.as_deref().unwrap_or_default()
    }

    /// The text of the last message (the user's message, or the feedback of a retry).
    pub fn last(&self) -> &str {
        self.messages
            .last()
            .and_then(|m| m.content.as_deref())
            .unwrap_or_default()
    }

    /// The texts of the messages after the system message, with their roles.
    pub fn chat(&self) -> Vec<(&str, &str)> {
        self.messages[1..]
            .iter()
            .map(|m| (m.role.as_str(), m.content.as_deref().unwrap_or_default()))
            .collect()
    }
}

/// One server-sent event of a streamed turn.
#[derive(Debug, Clone)]
pub struct Event {
    pub name: String,
    pub data: Value,
}

/// Everything stored about a conversation (`GET /admin/v1/conversations/{id}`).
#[derive(Debug, Deserialize)]
pub struct AdminView {
    pub conversation: Conversation,
    pub messages: Vec<Message>,
}

impl AdminView {
    /// The user messages, in order.
    pub fn users(&self) -> Vec<&Message> {
        self.messages
            .iter()
            .filter(|m| m.data.role == MessageRole::User)
            .collect()
    }

    /// The replies (attempts and fallbacks) of the turn of user message `turn` (0-based).
    pub fn replies(&self, turn: usize) -> Vec<&Message> {
        let turn_id = &self.users()[turn].data.turn_id;
        self.messages
            .iter()
            .filter(|m| m.data.role == MessageRole::Assistant && &m.data.turn_id == turn_id)
            .collect()
    }
}

/// An OpenAI-compatible completion: status, headers and body.
#[derive(Debug)]
pub struct Completion {
    pub headers: HeaderMap,
    pub body: Value,
}

impl Completion {
    /// The assistant's content, as a client sends it back in its next call's history.
    pub fn content(&self) -> &str {
        self.body["choices"][0]["message"]["content"]
            .as_str()
            .unwrap_or_else(|| panic!("no content: {}", self.body))
    }

    /// The checked value (`bridle.value`).
    pub fn value(&self) -> &Value {
        &self.body["bridle"]["value"]
    }

    /// The conversation the call was recorded as.
    pub fn conversation(&self) -> &str {
        self.headers["x-bridle-conversation"].to_str().unwrap()
    }
}

impl Flow {
    /// Starts `bridle mock-llm` with `turns` as its script (`{"attempts": […]}` each) and a
    /// gateway in front of it on `backend`.
    pub async fn start(backend: Backend, turns: Vec<Value>) -> Self {
        Self::start_with(backend, turns, &[], None).await
    }

    /// [`Flow::start`], with `mock_args` added to the mock's command line and the gateway given
    /// the contracts of `contracts` (`bridle --contracts DIR serve`) beside the built-in ones.
    /// No `turns`: no script, the mock draws its replies.
    pub async fn start_with(
        backend: Backend,
        turns: Vec<Value>,
        mock_args: &[&str],
        contracts: Option<&std::path::Path>,
    ) -> Self {
        let dir = tempfile::tempdir().unwrap();
        let script = dir.path().join("script.json");
        std::fs::write(&script, json!({ "turns": turns }).to_string()).unwrap();
        let mut args = vec![
            OsStr::new("mock-llm"),
            OsStr::new("--port"),
            OsStr::new("0"),
            OsStr::new("--require-api-key"),
            OsStr::new(UPSTREAM_KEY),
        ];
        // A script decides every reply; without one the mock draws (`--faults`, `--seed`).
        if !turns.is_empty() {
            args.extend([OsStr::new("--script"), script.as_os_str()]);
        }
        args.extend(mock_args.iter().map(OsStr::new));
        let (mock, mock_url) = spawn_listening(&args, &[]);
        let database = match backend {
            Backend::Sqlite => None,
            Backend::Postgres => Some(TestDatabase::create().await),
        };
        let upstream = format!("{mock_url}/v1");
        let data = dir.path().join("data");
        let mut envs = vec![
            ("BRIDLE_ADMIN_KEY", ADMIN),
            ("BRIDLE_USER_KEYS", "ada:ada-flows-key-00000000000"),
            ("BRIDLE__RETRY__DELAY_MS", "0"),
            ("BRIDLE__SERVER__LIMITS__ENABLED", "false"),
            ("OPENAI_BASE_URL", upstream.as_str()),
            ("OPENAI_API_KEY", UPSTREAM_KEY),
        ];
        if let Some(database) = &database {
            envs.push(("BRIDLE__STORE_URL", database.url.as_str()));
        }
        let mut args = Vec::new();
        if let Some(contracts) = contracts {
            args.extend([OsStr::new("--contracts"), contracts.as_os_str()]);
        }
        args.extend([
            OsStr::new("serve"),
            OsStr::new("--bind"),
            OsStr::new("127.0.0.1:0"),
            OsStr::new("--data-dir"),
            data.as_os_str(),
        ]);
        let (gateway, url) = spawn_listening(&args, &envs);
        let flow = Self {
            _mock: mock,
            mock_url,
            _gateway: gateway,
            url,
            client: reqwest::Client::new(),
            _dir: dir,
            _database: database,
        };
        let health = flow.get("/healthz", ADA).await;
        let expected = match backend {
            Backend::Sqlite => "sqlite",
            Backend::Postgres => "postgres",
        };
        assert_eq!(health["store"], expected, "{health}");
        flow
    }

    async fn get(&self, path: &str, key: &str) -> Value {
        let response = self
            .client
            .get(format!("{}{path}", self.url))
            .bearer_auth(key)
            .send()
            .await
            .unwrap();
        assert_eq!(response.status(), StatusCode::OK, "GET {path}");
        response.json().await.unwrap()
    }

    /// Starts a conversation under `contract` with `context`; its id.
    pub async fn create(&self, contract: &str, context: Value) -> String {
        let response = self
            .client
            .post(format!("{}/v1/conversations", self.url))
            .bearer_auth(ADA)
            .json(&json!({"contract": contract, "context": context}))
            .send()
            .await
            .unwrap();
        assert_eq!(response.status(), StatusCode::CREATED);
        let body: Value = response.json().await.unwrap();
        body["id"].as_str().unwrap().to_owned()
    }

    /// Sends `body` (`{"content" | "answer", "context"?}`) to `conversation` through the native
    /// API; the answer's body, after checking it is a 200.
    pub async fn send(&self, conversation: &str, body: &Value) -> Value {
        let response = self
            .client
            .post(format!(
                "{}/v1/conversations/{conversation}/messages",
                self.url
            ))
            .bearer_auth(ADA)
            .json(body)
            .send()
            .await
            .unwrap();
        let status = response.status();
        let answer: Value = response.json().await.unwrap();
        assert_eq!(status, StatusCode::OK, "{body} → {answer}");
        answer
    }

    /// Sends `body` to `conversation` with `Accept: text/event-stream`; every event of the turn.
    pub async fn stream(&self, conversation: &str, body: &Value) -> Vec<Event> {
        let response = self
            .client
            .post(format!(
                "{}/v1/conversations/{conversation}/messages",
                self.url
            ))
            .bearer_auth(ADA)
            .header("accept", "text/event-stream")
            .json(body)
            .send()
            .await
            .unwrap();
        assert_eq!(response.status(), StatusCode::OK, "{body}");
        let mut events = Vec::new();
        let mut stream = response.bytes_stream().eventsource();
        while let Some(event) = stream.next().await {
            let event = event.unwrap();
            events.push(Event {
                data: serde_json::from_str(&event.data).unwrap(),
                name: event.event,
            });
        }
        events
    }

    /// Calls `/v1/chat/completions` under `contract` with `context` in `x-bridle-context` and
    /// `messages` as the chat (the client keeps the history).
    pub async fn complete(
        &self,
        contract: &str,
        context: &Value,
        messages: &[Value],
    ) -> Completion {
        let response = self
            .client
            .post(format!("{}/v1/chat/completions", self.url))
            .bearer_auth(ADA)
            .header("x-bridle-contract", contract)
            .header("x-bridle-context", context.to_string())
            .json(&json!({"messages": messages}))
            .send()
            .await
            .unwrap();
        let status = response.status();
        let headers = response.headers().clone();
        let body: Value = response.json().await.unwrap();
        assert_eq!(status, StatusCode::OK, "{body}");
        Completion { headers, body }
    }

    /// Everything stored about `conversation`, as the admin sees it.
    pub async fn admin_view(&self, conversation: &str) -> AdminView {
        let body = self
            .get(&format!("/admin/v1/conversations/{conversation}"), ADMIN)
            .await;
        serde_json::from_value(body).unwrap()
    }

    /// The mock's request log since the last call (then cleared), in order.
    pub async fn mock_log(&self) -> Vec<bridle_mock::LoggedRequest> {
        let url = format!("{}/_mock/requests", self.mock_url);
        let log = self
            .client
            .get(&url)
            .send()
            .await
            .unwrap()
            .json()
            .await
            .unwrap();
        let cleared = self.client.delete(&url).send().await.unwrap();
        assert!(cleared.status().is_success());
        log
    }

    /// The chats the model received since the last call (the mock's request log, then
    /// cleared), in order.
    pub async fn sent(&self) -> Vec<SentChat> {
        self.mock_log()
            .await
            .into_iter()
            .map(|entry| {
                assert_eq!(entry.path, "/v1/chat/completions");
                assert_eq!(entry.answer.status, 200, "{entry:?}");
                serde_json::from_value(entry.body).unwrap()
            })
            .collect()
    }
}

/// The names of `events`, in order, with runs of `text_delta` and `partial` shown once.
pub fn names(events: &[Event]) -> Vec<&str> {
    let mut names: Vec<&str> = Vec::new();
    for event in events {
        let repeat = matches!(event.name.as_str(), "text_delta" | "partial");
        if !(repeat && names.last() == Some(&event.name.as_str())) {
            names.push(&event.name);
        }
    }
    names
}

/// The `data` of the one event named `name`.
pub fn only<'a>(events: &'a [Event], name: &str) -> &'a Value {
    let found: Vec<&Event> = events.iter().filter(|e| e.name == name).collect();
    assert_eq!(found.len(), 1, "{name} in {:?}", names(events));
    &found[0].data
}

/// The text of every `text_delta` of `events` after the last `attempt_started`.
pub fn final_text(events: &[Event]) -> String {
    let start = events
        .iter()
        .rposition(|e| e.name == "attempt_started")
        .unwrap();
    events[start..]
        .iter()
        .filter(|e| e.name == "text_delta")
        .map(|e| e.data["text"].as_str().unwrap())
        .collect()
}

/// A script turn whose attempts are these literal replies.
pub fn replies(texts: &[&str]) -> Value {
    let attempts: Vec<Value> = texts.iter().map(|t| json!({ "reply": t })).collect();
    json!({ "attempts": attempts })
}
