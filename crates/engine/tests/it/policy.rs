//! The safety policy against real parts: a real store (SQLite and PostgreSQL), a webhook
//! receiver and an SMTP sink on loopback (both tiny servers written here, speaking just enough
//! HTTP/1.1 and SMTP), and the engine's real turn loop with the in-process mock.
//!
//! - the policy table over every danger level × `requires_intervention`: actions, the stored
//!   event, the conversation's status, crisis text, the webhook payload and the email;
//! - channels that are down, refusing or slow: the event is still recorded, `notified_at` is
//!   None, the decision says why, and `apply` does not fail;
//! - crisis text per language with the fallback to English; values without `/safety`;
//! - a whole turn (valid reply, and fallback) followed by the policy, then a blocked conversation.

use bridle_engine::policy::{
    Action, CRISIS_DE, CRISIS_EN, SafetyConfig, SafetyDecision, SafetyPolicy, SmtpConfig,
};
use bridle_engine::store::{
    Conversation, ConversationStatus, MessageRole, NewConversation, NewMessage, Store,
};
use bridle_engine::{Config, Engine, EngineError};
use serde_json::{Value, json};
use std::collections::BTreeMap;
use std::net::SocketAddr;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};
use tokio::io::{AsyncBufReadExt, AsyncReadExt, AsyncWriteExt, BufReader};
use tokio::net::{TcpListener, TcpStream};

on_both_backends! {
    policy_table: sqlite_policy_table, postgres_policy_table;
    channels_down_never_lose_the_event: sqlite_channels_down_never_lose_the_event, postgres_channels_down_never_lose_the_event;
    one_channel_delivering_is_enough: sqlite_one_channel_delivering_is_enough, postgres_one_channel_delivering_is_enough;
    slow_webhook_is_bounded: sqlite_slow_webhook_is_bounded, postgres_slow_webhook_is_bounded;
    no_channel_configured: sqlite_no_channel_configured, postgres_no_channel_configured;
    crisis_text_follows_the_reply_language: sqlite_crisis_text_follows_the_reply_language, postgres_crisis_text_follows_the_reply_language;
    values_without_safety_do_nothing: sqlite_values_without_safety_do_nothing, postgres_values_without_safety_do_nothing;
    after_a_real_turn: sqlite_after_a_real_turn, postgres_after_a_real_turn;
}

// ---------------------------------------------------------------------------------------------
// Behaviours
// ---------------------------------------------------------------------------------------------

async fn policy_table(store: Arc<dyn Store>) {
    let webhook = WebhookSink::start(Answer::Status(204)).await;
    let smtp = SmtpSink::start(SmtpMode::Accept).await;
    let policy = SafetyPolicy::new(SafetyConfig {
        webhook_url: Some(webhook.url("/hooks/bridle")),
        smtp: Some(smtp.config(&["oncall@example.org", "Lead <lead@example.org>"])),
        admin_link: Some("https://admin.example/conversations/{conversation_id}".into()),
        ..SafetyConfig::default()
    })
    .unwrap();

    use Action::{Block, Log, Notify};
    // level, requires_intervention → actions, recorded event action, blocked
    type Row = (Value, bool, &'static [Action], Option<&'static str>, bool);
    let table: [Row; 8] = [
        (Value::Null, false, &[], None, false),
        (Value::Null, true, &[Notify], Some("notify"), false),
        (json!("warning"), false, &[Log], Some("log"), false),
        (json!("warning"), true, &[Notify], Some("notify"), false),
        (json!("critical"), false, &[Notify], Some("notify"), false),
        (json!("critical"), true, &[Notify], Some("notify"), false),
        (
            json!("emergency"),
            false,
            &[Notify, Block],
            Some("block"),
            true,
        ),
        (
            json!("emergency"),
            true,
            &[Notify, Block],
            Some("block"),
            true,
        ),
    ];
    for (level, intervention, actions, event_action, blocked) in table {
        let case = format!("{level} intervention={intervention}");
        let concerns = json!(["suicide", "self_harm"]);
        let value = reply(level.clone(), intervention, concerns.clone(), Some("en"));
        let (conversation, message_id) = conversation_with_reply(store.as_ref(), &value).await;
        let hooks_before = webhook.received().len();
        let mails_before = smtp.received().len();
        let started = now_ms();

        let decision = policy
            .apply(store.as_ref(), &conversation, message_id, &value)
            .await
            .unwrap();

        assert_eq!(
            decision,
            SafetyDecision {
                level: level.as_str().map(str::to_owned),
                actions: actions.to_vec(),
                blocked,
                crisis_resources: blocked.then(|| CRISIS_EN.to_owned()),
                notify_error: None,
            },
            "{case}"
        );
        let status = store
            .conversation(&conversation.id)
            .await
            .unwrap()
            .unwrap()
            .status;
        let expected_status = if blocked {
            ConversationStatus::Blocked
        } else {
            ConversationStatus::Active
        };
        assert_eq!(status, expected_status, "{case}");

        let events = store.safety_events(&conversation.id).await.unwrap();
        let notifies = actions.contains(&Notify);
        let level_name = level.as_str().unwrap_or("none");
        match event_action {
            None => assert!(events.is_empty(), "{case}: {events:?}"),
            Some(action) => {
                assert_eq!(events.len(), 1, "{case}: {events:?}");
                let event = &events[0].data;
                assert_eq!(event.conversation_id, conversation.id, "{case}");
                assert_eq!(event.message_id, Some(message_id), "{case}");
                assert_eq!(event.level, level_name, "{case}");
                assert_eq!(event.concerns, concerns, "{case}");
                assert_eq!(event.action, action, "{case}");
                match event.notified_at {
                    Some(at) => assert!(notifies && at >= started && at <= now_ms(), "{case}"),
                    None => assert!(!notifies, "{case}: notified_at missing"),
                }
            }
        }

        // The webhook got exactly the documented payload.
        let hooks = webhook.received();
        assert_eq!(hooks.len() - hooks_before, usize::from(notifies), "{case}");
        if notifies {
            let hook = hooks.last().unwrap();
            assert_eq!(hook.path, "/hooks/bridle");
            assert_eq!(hook.content_type, "application/json");
            let at = hook.body["at"].as_i64().unwrap();
            assert!(at >= started && at <= now_ms(), "{case}: {at}");
            assert_eq!(
                hook.body,
                json!({"event": "bridle.safety", "conversation_id": conversation.id,
                       "user_id": "ada", "message_id": message_id, "level": level_name,
                       "concerns": concerns, "action": event_action.unwrap(), "at": at}),
                "{case}"
            );
        }

        // The email reached both administrators with the right subject and body.
        let mails = smtp.received();
        assert_eq!(mails.len() - mails_before, usize::from(notifies), "{case}");
        if notifies {
            let mail = mails.last().unwrap();
            assert_eq!(mail.mail_from, "bridle@example.org");
            assert_eq!(mail.rcpt_to, ["oncall@example.org", "lead@example.org"]);
            assert_eq!(mail.header("From"), "Bridle <bridle@example.org>");
            assert_eq!(
                mail.header("To"),
                "oncall@example.org, Lead <lead@example.org>"
            );
            let subject = match (level_name, blocked) {
                ("none", _) => format!(
                    "[Bridle] safety intervention requested in conversation {}",
                    conversation.id
                ),
                (name, true) => format!(
                    "[Bridle] {name} safety event in conversation {} (blocked)",
                    conversation.id
                ),
                (name, false) => {
                    format!(
                        "[Bridle] {name} safety event in conversation {}",
                        conversation.id
                    )
                }
            };
            assert_eq!(mail.header("Subject"), subject, "{case}");
            let body = mail.body();
            for line in [
                format!("Level:        {level_name}"),
                "Concerns:     suicide, self_harm".to_owned(),
                format!("Action:       {}", event_action.unwrap()),
                format!("Conversation: {}", conversation.id),
                "User:         ada".to_owned(),
                format!("Message id:   {message_id}"),
                format!(
                    "Open:         https://admin.example/conversations/{}",
                    conversation.id
                ),
            ] {
                assert!(body.contains(&line), "{case}: {line:?} in\n{body}");
            }
            assert_eq!(
                body.contains("stays blocked until an administrator unblocks it"),
                blocked,
                "{case}"
            );
        }
    }
}

async fn channels_down_never_lose_the_event(store: Arc<dyn Store>) {
    let closed = closed_port().await;
    let refusing = SmtpSink::start(SmtpMode::RefuseRecipients).await;
    let failing_hook = WebhookSink::start(Answer::Status(500)).await;
    let configs = [
        // Nothing listens on either port.
        (
            format!("http://{closed}/hook"),
            SmtpConfig {
                port: closed.port(),
                ..refusing.config(&["oncall@example.org"])
            },
            ["webhook: cannot connect to 127.0.0.1", "email: 127.0.0.1"],
        ),
        // Both answer, and both refuse.
        (
            failing_hook.url("/hook"),
            refusing.config(&["oncall@example.org"]),
            [
                "webhook: 127.0.0.1:",
                "answered HTTP 500 Internal Server Error",
            ],
        ),
    ];
    for (webhook_url, smtp, expected_errors) in configs {
        let policy = SafetyPolicy::new(SafetyConfig {
            webhook_url: Some(webhook_url),
            smtp: Some(smtp),
            ..SafetyConfig::default()
        })
        .unwrap();
        for (level, action, blocked) in
            [("critical", "notify", false), ("emergency", "block", true)]
        {
            let value = reply(json!(level), true, json!(["violence"]), None);
            let (conversation, message_id) = conversation_with_reply(store.as_ref(), &value).await;
            let decision = policy
                .apply(store.as_ref(), &conversation, message_id, &value)
                .await
                .unwrap();
            let error = decision.notify_error.clone().unwrap();
            for expected in expected_errors {
                assert!(error.contains(expected), "{expected:?} in {error:?}");
            }
            assert!(
                error.contains("email: ") && error.contains("webhook: "),
                "{error}"
            );
            assert_eq!(decision.blocked, blocked);
            assert_eq!(decision.crisis_resources.is_some(), blocked);
            let events = store.safety_events(&conversation.id).await.unwrap();
            assert_eq!(events.len(), 1, "{events:?}");
            assert_eq!(events[0].data.action, action);
            assert_eq!(events[0].data.level, level);
            assert_eq!(events[0].data.notified_at, None);
            let status = store.conversation(&conversation.id).await.unwrap().unwrap();
            assert_eq!(status.status == ConversationStatus::Blocked, blocked);
        }
    }
    // The refusing sink saw the attempts (it refused the recipient, so nothing was delivered).
    assert!(refusing.received().is_empty());
    assert!(refusing.sessions() >= 2);
    assert_eq!(failing_hook.received().len(), 2);
}

async fn one_channel_delivering_is_enough(store: Arc<dyn Store>) {
    let smtp = SmtpSink::start(SmtpMode::Accept).await;
    let failing_hook = WebhookSink::start(Answer::Status(503)).await;
    let policy = SafetyPolicy::new(SafetyConfig {
        webhook_url: Some(failing_hook.url("/hook")),
        smtp: Some(smtp.config(&["oncall@example.org"])),
        ..SafetyConfig::default()
    })
    .unwrap();
    let value = reply(json!("critical"), true, json!(["harm_others"]), None);
    let (conversation, message_id) = conversation_with_reply(store.as_ref(), &value).await;
    let decision = policy
        .apply(store.as_ref(), &conversation, message_id, &value)
        .await
        .unwrap();
    // Administrators were reached by email; the webhook's failure is still reported.
    let error = decision.notify_error.unwrap();
    assert!(
        error.starts_with("webhook: ") && error.contains("503"),
        "{error}"
    );
    assert!(!error.contains("email"), "{error}");
    let events = store.safety_events(&conversation.id).await.unwrap();
    assert!(events[0].data.notified_at.is_some());
    assert_eq!(smtp.received().len(), 1);
}

async fn slow_webhook_is_bounded(store: Arc<dyn Store>) {
    let hanging = WebhookSink::start(Answer::Hang).await;
    let policy = SafetyPolicy::new(SafetyConfig {
        webhook_url: Some(hanging.url("/hook")),
        webhook_timeout_secs: 0.3,
        ..SafetyConfig::default()
    })
    .unwrap();
    let value = reply(json!("emergency"), true, json!(["suicide"]), Some("de"));
    let (conversation, message_id) = conversation_with_reply(store.as_ref(), &value).await;
    let started = Instant::now();
    let decision = policy
        .apply(store.as_ref(), &conversation, message_id, &value)
        .await
        .unwrap();
    assert!(
        started.elapsed() < Duration::from_secs(5),
        "{:?}",
        started.elapsed()
    );
    let error = decision.notify_error.unwrap();
    assert!(error.contains("did not answer within 300ms"), "{error}");
    assert!(decision.blocked);
    assert_eq!(decision.crisis_resources.as_deref(), Some(CRISIS_DE));
    let events = store.safety_events(&conversation.id).await.unwrap();
    assert_eq!((events.len(), events[0].data.notified_at), (1, None));
}

async fn no_channel_configured(store: Arc<dyn Store>) {
    let policy = SafetyPolicy::new(SafetyConfig::default()).unwrap();
    let value = reply(json!("critical"), true, json!(["suicide"]), None);
    let (conversation, message_id) = conversation_with_reply(store.as_ref(), &value).await;
    let decision = policy
        .apply(store.as_ref(), &conversation, message_id, &value)
        .await
        .unwrap();
    assert_eq!(decision.actions, [Action::Notify]);
    assert!(
        decision
            .notify_error
            .unwrap()
            .contains("no notification channel is configured")
    );
    let events = store.safety_events(&conversation.id).await.unwrap();
    assert_eq!(events.len(), 1);
    assert_eq!(events[0].data.notified_at, None);
}

async fn crisis_text_follows_the_reply_language(store: Arc<dyn Store>) {
    let policy = SafetyPolicy::new(SafetyConfig {
        crisis: BTreeMap::from([("fr".into(), "Appelez le 112 ou le 3114.".into())]),
        ..SafetyConfig::default()
    })
    .unwrap();
    for (language, expected) in [
        (Some("en"), CRISIS_EN),
        (Some("de"), CRISIS_DE),
        (Some("de-AT"), CRISIS_DE),
        (Some("fr-CA"), "Appelez le 112 ou le 3114."),
        (Some("ja"), CRISIS_EN),
        (None, CRISIS_EN),
    ] {
        let value = reply(json!("emergency"), true, json!(["suicide"]), language);
        let (conversation, message_id) = conversation_with_reply(store.as_ref(), &value).await;
        let decision = policy
            .apply(store.as_ref(), &conversation, message_id, &value)
            .await
            .unwrap();
        assert_eq!(
            decision.crisis_resources.as_deref(),
            Some(expected),
            "{language:?}"
        );
        let answer = policy.blocked_answer(language);
        assert!(answer.ends_with(expected), "{language:?}: {answer}");
    }
    assert!(
        policy
            .blocked_answer(Some("de"))
            .starts_with("Dieses Gespräch wurde")
    );
    assert!(
        policy
            .blocked_answer(None)
            .starts_with("This conversation has been paused")
    );
    // French has crisis text but no notice of its own: no English sentence in front of it.
    assert_eq!(
        policy.blocked_answer(Some("fr")),
        "Appelez le 112 ou le 3114."
    );
}

async fn values_without_safety_do_nothing(store: Arc<dyn Store>) {
    let webhook = WebhookSink::start(Answer::Status(200)).await;
    let policy = SafetyPolicy::new(SafetyConfig {
        webhook_url: Some(webhook.url("/hook")),
        ..SafetyConfig::default()
    })
    .unwrap();
    for value in [
        json!({"ticket": "printer on fire", "priority": "high"}),
        json!({"safety": null}),
        json!({"safety": "emergency"}),
        json!("plain text"),
        Value::Null,
    ] {
        let (conversation, message_id) = conversation_with_reply(store.as_ref(), &value).await;
        let decision = policy
            .apply(store.as_ref(), &conversation, message_id, &value)
            .await
            .unwrap();
        assert_eq!(decision, SafetyDecision::default(), "{value}");
        assert!(decision.is_noop());
        assert!(
            store
                .safety_events(&conversation.id)
                .await
                .unwrap()
                .is_empty()
        );
    }
    assert!(webhook.received().is_empty());
}

async fn after_a_real_turn(store: Arc<dyn Store>) {
    let dir = tempfile::tempdir().unwrap();
    let emergency = reply(json!("emergency"), true, json!(["suicide"]), Some("de"));
    // Turn 1 (first conversation): a valid emergency reply. Turn 2 (second conversation): three
    // broken replies, one readable with a critical assessment → the fallback keeps it.
    let broken_critical = json!({"type": "response", "safety": {"is_safe": false,
        "danger_level": "critical", "detected_concerns": ["self_harm"],
        "requires_intervention": true, "safety_message": null},
        "content": {"text_blocks": []}, "metadata": {"model": "m"}});
    let steps = json!({"turns": [
        {"attempts": [{"reply": emergency.to_string()}]},
        {"attempts": [{"reply": "no JSON here"}, {"reply": broken_critical.to_string()},
                      {"reply": "still no JSON"}]},
    ]});
    let path = dir.path().join("script.json");
    std::fs::write(&path, steps.to_string()).unwrap();
    let smtp = SmtpSink::start(SmtpMode::Accept).await;
    let mut config = Config::from_toml(
        &format!(
            "[retry]\ndelay_ms = 0\n[providers.mock]\nkind = \"mock\"\nscript = {:?}\n",
            path.display().to_string()
        ),
        &Default::default(),
    )
    .unwrap();
    // The engine applies its own policy after every turn.
    config.safety = SafetyConfig {
        smtp: Some(smtp.config(&["oncall@example.org"])),
        ..SafetyConfig::default()
    };
    let engine = Engine::with_store(config, Arc::clone(&store)).unwrap();
    let policy = engine.policy();

    let first = engine
        .start_conversation("ada", "selfhelp-response", json!({}))
        .await
        .unwrap();
    let outcome = engine
        .send(&first.id, "Ich kann nicht mehr.", None)
        .await
        .unwrap();
    assert!(!outcome.fallback);
    let decision = outcome.safety.clone().unwrap();
    assert_eq!(decision.actions, [Action::Notify, Action::Block]);
    assert_eq!(decision.crisis_resources.as_deref(), Some(CRISIS_DE));
    assert_eq!(decision.notify_error, None);
    // The engine refuses further messages; the application answers with the blocked text.
    match engine.send(&first.id, "Hallo?", None).await {
        Err(EngineError::Blocked(id)) => assert_eq!(id, first.id),
        other => panic!("expected Blocked, got {other:?}"),
    }
    assert!(policy.blocked_answer(Some("de")).contains("0800 111 0 111"));

    let second = engine
        .start_conversation("bob", "selfhelp-response", json!({}))
        .await
        .unwrap();
    let outcome = engine.send(&second.id, "…", None).await.unwrap();
    assert!(outcome.fallback);
    let decision = outcome.safety.clone().unwrap();
    assert_eq!(decision.level.as_deref(), Some("critical"));
    assert_eq!(decision.actions, [Action::Notify]);
    let events = store.safety_events(&second.id).await.unwrap();
    assert_eq!(events.len(), 1);
    assert_eq!(events[0].data.message_id, Some(outcome.message_id));
    assert_eq!(events[0].data.concerns, json!(["self_harm"]));
    assert!(events[0].data.notified_at.is_some());
    let mails = smtp.received();
    assert_eq!(mails.len(), 2);
    assert!(
        mails[1]
            .header("Subject")
            .starts_with("[Bridle] critical safety event")
    );
}

#[test]
fn policy_config_reads_from_toml() {
    use figment::providers::{Format, Toml};
    let config: SafetyConfig = figment::Figment::new()
        .merge(Toml::string(
            r#"
            webhook_url = "https://ops.example/hooks/bridle"
            webhook_timeout_secs = 5
            admin_link = "https://admin.example/conversations/{conversation_id}"
            [crisis]
            fr = "Appelez le 112."
            [smtp]
            host = "127.0.0.1"
            port = 25
            from = "Bridle <bridle@example.org>"
            to = ["oncall@example.org"]
            starttls = false
            "#,
        ))
        .extract()
        .unwrap();
    assert!(SafetyPolicy::new(config).is_ok());
}

// ---------------------------------------------------------------------------------------------
// Helpers
// ---------------------------------------------------------------------------------------------

/// A `selfhelp-response` reply with the given assessment.
fn reply(level: Value, intervention: bool, concerns: Value, language: Option<&str>) -> Value {
    let unsafe_level = matches!(level.as_str(), Some("critical" | "emergency"));
    let mut metadata = json!({"model": "mock", "tokens_used": 10});
    if let Some(language) = language {
        metadata["language"] = json!(language);
    }
    json!({
        "type": "response",
        "safety": {"is_safe": !unsafe_level, "danger_level": level,
                   "detected_concerns": concerns, "requires_intervention": intervention,
                   "safety_message": null},
        "content": {"text_blocks": [{"type": "text", "content": "I hear you."}],
                    "form": null, "media": [], "suggestions": []},
        "progress": null,
        "metadata": metadata
    })
}

/// A new conversation of `ada` with one stored reply carrying `value`; its id.
async fn conversation_with_reply(store: &dyn Store, value: &Value) -> (Conversation, i64) {
    let conversation = store
        .create_conversation(&NewConversation {
            user_id: "ada".into(),
            contract: "selfhelp-response".into(),
            context: json!({}),
        })
        .await
        .unwrap();
    let message_id = store
        .record_message(&NewMessage {
            conversation_id: conversation.id.clone(),
            turn_id: uuid::Uuid::now_v7().to_string(),
            role: MessageRole::Assistant,
            content: value.to_string(),
            value: Some(value.clone()),
            is_validated: true,
            is_fallback: false,
            attempt: Some(1),
            contract: "selfhelp-response".into(),
            contract_version: "1.0.0".into(),
            request_payload: None,
            raw_response: None,
            violations: Vec::new(),
            repairs: Vec::new(),
            provider: Some("mock".into()),
            model: Some("mock".into()),
            tokens_in: None,
            tokens_out: None,
            latency_ms: None,
            error: None,
            interrupted: None,
            route: None,
            context: None,
            answer: None,
            request_id: None,
            trace_id: None,
        })
        .await
        .unwrap();
    (conversation, message_id)
}

fn now_ms() -> i64 {
    bridle_engine::store::now_ms()
}

/// A loopback port nothing listens on.
async fn closed_port() -> SocketAddr {
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    listener.local_addr().unwrap()
}

/// Reads one CRLF-terminated line (without the terminator); None at end of stream.
async fn read_line<R: tokio::io::AsyncBufRead + Unpin>(reader: &mut R) -> Option<String> {
    let mut line = String::new();
    match reader.read_line(&mut line).await {
        Ok(0) | Err(_) => None,
        Ok(_) => Some(line.trim_end_matches(['\r', '\n']).to_owned()),
    }
}

// --- webhook receiver -------------------------------------------------------------------------

#[derive(Debug, Clone, Copy)]
enum Answer {
    Status(u16),
    /// Read the request, never answer.
    Hang,
}

#[derive(Debug, Clone)]
struct Hook {
    path: String,
    content_type: String,
    body: Value,
}

/// An HTTP/1.1 server on loopback that records every POSTed JSON body.
struct WebhookSink {
    addr: SocketAddr,
    received: Arc<Mutex<Vec<Hook>>>,
    task: tokio::task::JoinHandle<()>,
}

impl WebhookSink {
    async fn start(answer: Answer) -> Self {
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        let received = Arc::new(Mutex::new(Vec::new()));
        let log = Arc::clone(&received);
        let task = tokio::spawn(async move {
            while let Ok((stream, _)) = listener.accept().await {
                let log = Arc::clone(&log);
                tokio::spawn(async move {
                    if let Some(hook) = read_request(stream, answer).await {
                        log.lock().unwrap().push(hook);
                    }
                });
            }
        });
        Self {
            addr,
            received,
            task,
        }
    }

    fn url(&self, path: &str) -> String {
        format!("http://{}{path}", self.addr)
    }

    fn received(&self) -> Vec<Hook> {
        self.received.lock().unwrap().clone()
    }
}

impl Drop for WebhookSink {
    fn drop(&mut self) {
        self.task.abort();
    }
}

async fn read_request(stream: TcpStream, answer: Answer) -> Option<Hook> {
    let mut reader = BufReader::new(stream);
    let request_line = read_line(&mut reader).await?;
    let mut parts = request_line.split(' ');
    let (method, path) = (parts.next()?.to_owned(), parts.next()?.to_owned());
    let mut length = 0;
    let mut content_type = String::new();
    loop {
        let line = read_line(&mut reader).await?;
        if line.is_empty() {
            break;
        }
        let (name, value) = line.split_once(':')?;
        match name.trim().to_ascii_lowercase().as_str() {
            "content-length" => length = value.trim().parse().ok()?,
            "content-type" => content_type = value.trim().to_owned(),
            _ => {}
        }
    }
    let mut body = vec![0; length];
    reader.read_exact(&mut body).await.ok()?;
    let status = match answer {
        Answer::Status(status) => status,
        Answer::Hang => {
            tokio::time::sleep(Duration::from_secs(30)).await;
            return None;
        }
    };
    let reason = match status {
        200 => "OK",
        204 => "No Content",
        500 => "Internal Server Error",
        503 => "Service Unavailable",
        _ => "Whatever",
    };
    let response =
        format!("HTTP/1.1 {status} {reason}\r\ncontent-length: 0\r\nconnection: close\r\n\r\n");
    let mut stream = reader.into_inner();
    stream.write_all(response.as_bytes()).await.ok()?;
    stream.shutdown().await.ok()?;
    assert_eq!(method, "POST");
    Some(Hook {
        path,
        content_type,
        body: serde_json::from_slice(&body).ok()?,
    })
}

// --- SMTP sink ------------------------------------------------------------------------------

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum SmtpMode {
    Accept,
    /// Answer every RCPT with 550.
    RefuseRecipients,
}

#[derive(Debug, Clone)]
struct Mail {
    mail_from: String,
    rcpt_to: Vec<String>,
    /// The message as sent (dot-unstuffed), CRLF line ends.
    data: String,
}

impl Mail {
    /// The unfolded value of header `name`.
    fn header(&self, name: &str) -> String {
        let (head, _) = self.data.split_once("\r\n\r\n").unwrap();
        let unfolded = head.replace("\r\n ", " ").replace("\r\n\t", " ");
        unfolded
            .lines()
            .find_map(|line| {
                let (key, value) = line.split_once(':')?;
                key.eq_ignore_ascii_case(name)
                    .then(|| value.trim().to_owned())
            })
            .unwrap_or_default()
    }

    /// The body, decoded from its transfer encoding (7bit or quoted-printable).
    fn body(&self) -> String {
        let (_, body) = self.data.split_once("\r\n\r\n").unwrap();
        let encoding = self
            .header("Content-Transfer-Encoding")
            .to_ascii_lowercase();
        let text = match encoding.as_str() {
            "quoted-printable" => decode_quoted_printable(body),
            "" | "7bit" | "8bit" => body.to_owned(),
            other => panic!("unexpected transfer encoding {other}"),
        };
        text.replace("\r\n", "\n")
    }
}

fn decode_quoted_printable(text: &str) -> String {
    let bytes = text.replace("=\r\n", "").into_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        if bytes[i] == b'=' && i + 2 < bytes.len() {
            let hex = std::str::from_utf8(&bytes[i + 1..i + 3]).unwrap();
            out.push(u8::from_str_radix(hex, 16).unwrap());
            i += 3;
        } else {
            out.push(bytes[i]);
            i += 1;
        }
    }
    String::from_utf8(out).unwrap()
}

/// An SMTP server on loopback that speaks just enough of RFC 5321 for one client at a time
/// and records every message it accepts.
struct SmtpSink {
    addr: SocketAddr,
    received: Arc<Mutex<Vec<Mail>>>,
    sessions: Arc<Mutex<usize>>,
    task: tokio::task::JoinHandle<()>,
}

impl SmtpSink {
    async fn start(mode: SmtpMode) -> Self {
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        let received = Arc::new(Mutex::new(Vec::new()));
        let sessions = Arc::new(Mutex::new(0));
        let (log, count) = (Arc::clone(&received), Arc::clone(&sessions));
        let task = tokio::spawn(async move {
            while let Ok((stream, _)) = listener.accept().await {
                *count.lock().unwrap() += 1;
                let log = Arc::clone(&log);
                tokio::spawn(async move { smtp_session(stream, mode, log).await });
            }
        });
        Self {
            addr,
            received,
            sessions,
            task,
        }
    }

    fn config(&self, to: &[&str]) -> SmtpConfig {
        SmtpConfig {
            host: "127.0.0.1".into(),
            port: self.addr.port(),
            from: "Bridle <bridle@example.org>".into(),
            to: to.iter().map(|s| (*s).to_owned()).collect(),
            starttls: false,
            username: None,
            password: None,
            timeout_secs: 5.0,
        }
    }

    fn received(&self) -> Vec<Mail> {
        self.received.lock().unwrap().clone()
    }

    fn sessions(&self) -> usize {
        *self.sessions.lock().unwrap()
    }
}

impl Drop for SmtpSink {
    fn drop(&mut self) {
        self.task.abort();
    }
}

async fn smtp_session(stream: TcpStream, mode: SmtpMode, log: Arc<Mutex<Vec<Mail>>>) {
    let (read, mut write) = stream.into_split();
    let mut reader = BufReader::new(read);
    let mut say = async |text: &str| write.write_all(format!("{text}\r\n").as_bytes()).await;
    if say("220 sink.test ESMTP ready").await.is_err() {
        return;
    }
    let mut mail_from = String::new();
    let mut rcpt_to = Vec::new();
    while let Some(line) = read_line(&mut reader).await {
        let upper = line.to_ascii_uppercase();
        let answer = if upper.starts_with("EHLO") || upper.starts_with("HELO") {
            "250 sink.test".to_owned()
        } else if upper.starts_with("MAIL FROM:") {
            mail_from = address(&line);
            rcpt_to.clear();
            "250 2.1.0 OK".to_owned()
        } else if upper.starts_with("RCPT TO:") {
            if mode == SmtpMode::RefuseRecipients {
                "550 5.1.1 no such mailbox here".to_owned()
            } else {
                rcpt_to.push(address(&line));
                "250 2.1.5 OK".to_owned()
            }
        } else if upper == "DATA" {
            if say("354 end with <CRLF>.<CRLF>").await.is_err() {
                return;
            }
            let mut data = String::new();
            loop {
                let Some(line) = read_line(&mut reader).await else {
                    return;
                };
                if line == "." {
                    break;
                }
                let line = line.strip_prefix('.').unwrap_or(&line);
                data.push_str(line);
                data.push_str("\r\n");
            }
            log.lock().unwrap().push(Mail {
                mail_from: mail_from.clone(),
                rcpt_to: rcpt_to.clone(),
                data,
            });
            "250 2.0.0 queued".to_owned()
        } else if upper == "QUIT" {
            let _ = say("221 2.0.0 bye").await;
            return;
        } else {
            "250 OK".to_owned()
        };
        if say(&answer).await.is_err() {
            return;
        }
    }
}

/// The address between `<` and `>` of a MAIL/RCPT command.
fn address(line: &str) -> String {
    let start = line.find('<').map_or(0, |i| i + 1);
    let end = line[start..].find('>').map_or(line.len(), |i| start + i);
    line[start..end].to_owned()
}
