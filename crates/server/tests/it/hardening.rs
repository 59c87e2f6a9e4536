//! The hostile paths of issue 28's audit, each over the app or a real loopback socket: junk
//! methods and paths against `/metrics`, HTTP/2 prior knowledge against the HTTP/1.1-only
//! listener, unlimited conversation creation, internals in error bodies, concurrent turns of one
//! conversation, the OpenAI endpoint's concurrency limit, inline schema names, query errors.

use crate::api::{ADA, ADMIN, Harness};
use crate::guards::{start, start_with};
use axum::body::Body;
use axum::http::{Request, StatusCode, header};
use serde_json::{Value, json};
use std::time::Duration;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;

/// Writes `request` on a fresh connection and reads until the server closes it (5 s at most).
async fn exchange(address: std::net::SocketAddr, request: &[u8]) -> Vec<u8> {
    let mut stream = TcpStream::connect(address).await.unwrap();
    stream.write_all(request).await.unwrap();
    let mut answer = Vec::new();
    let _ = tokio::time::timeout(Duration::from_secs(5), stream.read_to_end(&mut answer)).await;
    answer
}

#[tokio::test]
async fn junk_methods_and_paths_leave_metrics_small() {
    let server = start(64).await;
    // Thousands of requests with 200-byte random methods, to a real path and to junk paths,
    // pipelined on a few kept-alive connections.
    let mut seed = 0x9e37_79b9_u32;
    let mut next = move || {
        seed ^= seed << 13;
        seed ^= seed >> 17;
        seed ^= seed << 5;
        seed
    };
    for _ in 0..4 {
        let mut batch = String::new();
        for i in 0..500 {
            let method: String = (0..200)
                .map(|_| char::from(b'A' + (next() % 26) as u8))
                .collect();
            let path = if i % 2 == 0 {
                "/healthz".to_owned()
            } else {
                format!("/junk/{}", next())
            };
            batch.push_str(&format!("{method} {path} HTTP/1.1\r\nHost: x\r\n\r\n"));
            // Known methods to unknown paths, too.
            batch.push_str(&format!(
                "GET /nowhere/{} HTTP/1.1\r\nHost: x\r\n\r\n",
                next()
            ));
        }
        batch.push_str("GET /healthz HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n");
        let answer = exchange(server.address, batch.as_bytes()).await;
        assert!(!answer.is_empty(), "the server answered");
    }
    let text = reqwest::get(format!("http://{}/metrics", server.address))
        .await
        .unwrap()
        .text()
        .await
        .unwrap();
    assert!(
        text.len() < 64 * 1024,
        "/metrics grew to {} bytes:\n{}",
        text.len(),
        &text[..4096.min(text.len())]
    );
    assert!(
        text.contains(r#"bridle_http_requests_total{method="other",route="/healthz","#),
        "junk methods are counted as other:\n{text}"
    );
}

#[tokio::test]
async fn http2_prior_knowledge_is_refused_and_holds_no_slot() {
    // Two slots: two HTTP/2 connections that then idle must not lock everyone out.
    let server = start(2).await;
    const PREFACE: &[u8] = b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n";
    // A SETTINGS frame (empty), as a client sends right after the preface.
    const SETTINGS: &[u8] = &[0, 0, 0, 4, 0, 0, 0, 0, 0];
    let mut idle = Vec::new();
    for _ in 0..2 {
        let mut stream = TcpStream::connect(server.address).await.unwrap();
        stream.write_all(PREFACE).await.unwrap();
        stream.write_all(SETTINGS).await.unwrap();
        idle.push(stream);
    }
    for stream in &mut idle {
        let mut answer = Vec::new();
        let read = tokio::time::timeout(Duration::from_secs(3), stream.read_to_end(&mut answer));
        assert!(read.await.is_ok(), "an HTTP/2 connection was kept open");
        let text = String::from_utf8_lossy(&answer);
        assert!(
            answer.is_empty() || text.starts_with("HTTP/1.1 "),
            "not answered as HTTP/2: {text:?}"
        );
        // An HTTP/2 server answers the preface with a SETTINGS frame (type 4 in byte 3).
        assert!(!(answer.len() >= 9 && answer[3] == 4 && !text.starts_with("HTTP/")));
    }
    // The slots are free for an HTTP/1.1 client.
    let status = reqwest::get(format!("http://{}/healthz", server.address))
        .await
        .unwrap()
        .status();
    assert_eq!(status, reqwest::StatusCode::OK);
}

#[tokio::test]
async fn starting_conversations_is_rate_limited_and_their_context_capped() {
    let mut h = Harness::with_limits("", 3).await;
    let mut settings = (*h.state.settings).clone();
    settings.max_context_bytes = 1024;
    h.state.settings = std::sync::Arc::new(settings);
    // A prompt past the context limit: 422, nothing stored.
    let (status, body) = h
        .call(
            "POST",
            "/v1/conversations",
            Some(ADA),
            Some(json!({"contract": "selfhelp-response", "prompt": "x".repeat(2000)})),
        )
        .await;
    assert_eq!(status, StatusCode::UNPROCESSABLE_ENTITY, "{body}");
    assert!(body["error"]["message"].as_str().unwrap().contains("1024"));
    // The refused one counted: two more are admitted, the next is 429.
    for _ in 0..2 {
        h.conversation(ADA).await;
    }
    let (status, body) = h
        .call(
            "POST",
            "/v1/conversations",
            Some(ADA),
            Some(json!({"contract": "selfhelp-response"})),
        )
        .await;
    assert_eq!(status, StatusCode::TOO_MANY_REQUESTS, "{body}");
}

#[tokio::test]
async fn the_list_view_summarises_contexts_and_the_single_read_has_them() {
    let h = Harness::new().await;
    let prompt = "a long application prompt ".repeat(30);
    let (status, created) = h
        .call(
            "POST",
            "/v1/conversations",
            Some(ADA),
            Some(json!({"contract": "selfhelp-response", "context": {"page": "forms", "mode": "discovery"}, "prompt": prompt})),
        )
        .await;
    assert_eq!(status, StatusCode::CREATED, "{created}");
    let id = created["id"].as_str().unwrap();
    let (_, list) = h.call("GET", "/v1/conversations", Some(ADA), None).await;
    let item = &list["items"][0];
    assert!(item.get("context").is_none(), "{item}");
    // Keys in the stored object's order (sorted).
    assert_eq!(item["summary"], "mode: discovery · page: forms");
    assert!(!list.to_string().contains("application prompt"), "{list}");
    let (status, one) = h
        .call("GET", &format!("/v1/conversations/{id}"), Some(ADA), None)
        .await;
    assert_eq!(status, StatusCode::OK);
    assert_eq!(one["context"]["prompt"], prompt.as_str());
    assert_eq!(one["context"]["page"], "forms");
}

#[tokio::test]
async fn query_errors_keep_the_error_shape() {
    let h = Harness::new().await;
    for path in [
        "/v1/conversations?limit=abc",
        "/admin/v1/conversations?offset=-1",
        "/admin/v1/stats?from=yesterday",
    ] {
        let key = if path.starts_with("/admin") {
            ADMIN
        } else {
            ADA
        };
        let (status, body) = h.call("GET", path, Some(key), None).await;
        assert_eq!(status, StatusCode::BAD_REQUEST, "{path}: {body}");
        assert_eq!(body["error"]["code"], "bad_request", "{path}: {body}");
    }
}

/// An OpenAI upstream on a port nobody listens on, its key in the URL's query.
fn unreachable_upstream() -> String {
    let unused = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let port = unused.local_addr().unwrap().port();
    drop(unused);
    format!(
        "[providers.gone]\nkind = \"openai\"\nbase_url = \"http://127.0.0.1:{port}/v1?key=sk-query-secret\"\ntimeout_secs = 2\n\
         [models.gone]\nprovider = \"gone\"\nmodel = \"gpt-x\"\n"
    )
}

#[tokio::test]
async fn upstream_failures_reach_users_without_urls() {
    let h = Harness::with_config(&unreachable_upstream()).await;
    let (status, body) = h
        .call(
            "POST",
            "/v1/chat/completions",
            Some(ADA),
            Some(json!({"model": "gone", "messages": [{"role": "user", "content": "hi"}]})),
        )
        .await;
    assert_eq!(status, StatusCode::BAD_GATEWAY, "{body}");
    let text = body.to_string();
    assert!(
        !text.contains("127.0.0.1") && !text.contains("sk-query"),
        "{text}"
    );
    assert_eq!(body["error"]["message"], "the model could not be reached");
    // The same through a turn (the contract's fallback answers): the attempts' errors are
    // recorded for admins, minus the query.
    let id = h.conversation(ADA).await;
    let (status, body) = h
        .call(
            "POST",
            &format!("/v1/conversations/{id}/messages"),
            Some(ADA),
            Some(json!({"content": "hi", "model": "gone"})),
        )
        .await;
    assert_eq!(
        (status, &body["fallback"]),
        (StatusCode::OK, &json!(true)),
        "{body}"
    );
    let text = body.to_string();
    assert!(
        !text.contains("127.0.0.1") && !text.contains("sk-query"),
        "{text}"
    );
    let (_, record) = h
        .call(
            "GET",
            &format!("/admin/v1/conversations/{id}"),
            Some(ADMIN),
            None,
        )
        .await;
    let errors: Vec<&str> = record["messages"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|m| m["error"].as_str())
        .collect();
    assert_eq!(
        errors.len(),
        4,
        "three attempts and the fallback: {errors:?}"
    );
    for error in errors {
        assert!(
            error.contains("127.0.0.1"),
            "admins see the endpoint: {error}"
        );
        assert!(!error.contains("sk-query"), "{error}");
    }
}

#[tokio::test]
async fn an_exhausted_turn_never_shows_the_invalid_attempts() {
    // Every attempt says a mood outside the list; an inline schema has no fallback.
    let dir = tempfile::tempdir().unwrap();
    let script = dir.path().join("script.json");
    let invalid = json!({"reply": r#"{"mood": "INVALID-ATTEMPT-TEXT"}"#});
    let turn = json!({"attempts": [invalid, invalid, invalid, invalid, invalid]});
    std::fs::write(&script, json!({"turns": [turn]}).to_string()).unwrap();
    let h = Harness::with_config(&format!(
        "[providers.mock]\nkind = \"mock\"\nscript = {:?}\n",
        script.display().to_string()
    ))
    .await;
    let schema = json!({"type": "object", "properties": {"mood": {"type": "string", "enum": ["calm", "tense"]}}, "required": ["mood"]});
    let (status, body) = h
        .call(
            "POST",
            "/v1/chat/completions",
            Some(ADA),
            Some(json!({
                "model": "mock",
                "messages": [{"role": "user", "content": "hi"}],
                "response_format": {"type": "json_schema", "json_schema": {"name": "mood", "schema": schema}}
            })),
        )
        .await;
    // 422 `contract_unmet`: a status the OpenAI SDKs do not retry (each retry would run the
    // whole turn again), listing where the last attempt broke which rule.
    assert_eq!(status, StatusCode::UNPROCESSABLE_ENTITY, "{body}");
    assert_eq!(body["error"]["type"], "contract_unmet", "{body}");
    assert_eq!(body["error"]["code"], "contract_unmet", "{body}");
    assert_eq!(
        body["error"]["violations"],
        json!([{"path": "/mood", "rule": "enum"}]),
        "{body}"
    );
    let message = body["error"]["message"].as_str().unwrap();
    assert!(message.contains("no valid reply"), "{message}");
    assert!(!body.to_string().contains("INVALID-ATTEMPT"), "{body}");
}

#[tokio::test]
async fn a_native_turn_without_a_fallback_is_the_same_contract_unmet() {
    // A configured contract without a fallback; every attempt breaks it.
    let dir = tempfile::tempdir().unwrap();
    let contract = dir.path().join("contracts/mood");
    std::fs::create_dir_all(&contract).unwrap();
    std::fs::write(
        contract.join("manifest.toml"),
        "name = \"mood\"\nversion = \"1.0.0\"\nkind = \"json\"\nschema = \"schema.json\"\n",
    )
    .unwrap();
    let schema = json!({"type": "object", "properties": {"mood": {"enum": ["calm", "tense"]}}, "required": ["mood"]});
    std::fs::write(contract.join("schema.json"), schema.to_string()).unwrap();
    let invalid = json!({"reply": r#"{"mood": "INVALID-ATTEMPT-TEXT"}"#});
    let turn = json!({"attempts": [invalid, invalid]});
    let script = dir.path().join("script.json");
    std::fs::write(&script, json!({"turns": [turn, turn]}).to_string()).unwrap();
    let h = Harness::with_toml(
        &format!(
            "contracts_dirs = [{:?}]\n[retry]\ndelay_ms = 0\nmax_attempts = 2\n[providers.mock]\nkind = \"mock\"\nscript = {:?}\n",
            dir.path().join("contracts").display().to_string(),
            script.display().to_string()
        ),
        1000,
    )
    .await;
    let (status, body) = h
        .call(
            "POST",
            "/v1/conversations",
            Some(ADA),
            Some(json!({"contract": "mood"})),
        )
        .await;
    assert_eq!(status, StatusCode::CREATED, "{body}");
    let path = format!(
        "/v1/conversations/{}/messages",
        body["id"].as_str().unwrap()
    );
    // JSON: 422 `contract_unmet` with where the last attempt broke which rule, as on the OpenAI
    // endpoint — not a 502 a client would retry.
    let (status, body) = h
        .call(
            "POST",
            &path,
            Some(ADA),
            Some(json!({"content": "How am I?"})),
        )
        .await;
    assert_eq!(status, StatusCode::UNPROCESSABLE_ENTITY, "{body}");
    assert_eq!(body["error"]["code"], "contract_unmet", "{body}");
    assert_eq!(
        body["error"]["violations"],
        json!([{"path": "/mood", "rule": "enum"}]),
        "{body}"
    );
    assert!(!body.to_string().contains("INVALID-ATTEMPT"), "{body}");
    // Streamed: the stream's `error` event carries the same code.
    let request = Request::builder()
        .method("POST")
        .uri(&path)
        .header(header::AUTHORIZATION, format!("Bearer {ADA}"))
        .header(header::CONTENT_TYPE, "application/json")
        .header(header::ACCEPT, "text/event-stream")
        .body(Body::from(json!({"content": "And now?"}).to_string()))
        .unwrap();
    let (status, body) = h.raw(request).await;
    assert_eq!(status, StatusCode::OK);
    let text = body.as_str().unwrap();
    let error = text
        .split("\n\n")
        .find(|frame| frame.contains("event: error"))
        .unwrap_or_else(|| panic!("no error event in {text}"));
    let data: Value = serde_json::from_str(
        error
            .lines()
            .find_map(|l| l.strip_prefix("data:"))
            .unwrap()
            .trim(),
    )
    .unwrap();
    assert_eq!(data["code"], "contract_unmet", "{data}");
}

#[tokio::test]
async fn store_failures_reach_users_without_the_database_text() {
    let h = Harness::new().await;
    let id = h.conversation(ADA).await;
    // Break the schema under the running store: every read of messages fails.
    let db = h.database_path();
    let raw = rusqlite::Connection::open(&db).unwrap();
    raw.execute("ALTER TABLE messages RENAME TO messages_gone", [])
        .unwrap();
    drop(raw);
    let (status, body) = h
        .call(
            "GET",
            &format!("/v1/conversations/{id}/messages"),
            Some(ADA),
            None,
        )
        .await;
    assert!(status.is_server_error(), "{status} {body}");
    let text = body.to_string().to_lowercase();
    assert!(
        !text.contains("messages") && !text.contains("sql") && !text.contains("no such"),
        "{text}"
    );
    assert_eq!(body["error"]["type"], "server_error");
}

#[tokio::test]
async fn a_second_turn_of_a_conversation_under_way_is_refused_with_409() {
    let h = Harness::with_config("[providers.mock]\nkind = \"mock\"\nlatency_ms = 1500\n").await;
    let id = h.conversation(ADA).await;
    let path = format!("/v1/conversations/{id}/messages");
    let first = {
        let state = h.state.clone();
        let path = path.clone();
        tokio::spawn(async move {
            crate::api::call_app(
                &state,
                "POST",
                &path,
                Some(ADA),
                Some(json!({"content": "one"})),
            )
            .await
        })
    };
    while h.state.turns.is_empty() {
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    let (status, body) = h
        .call("POST", &path, Some(ADA), Some(json!({"content": "two"})))
        .await;
    assert_eq!(status, StatusCode::CONFLICT, "{body}");
    assert_eq!(body["error"]["code"], "turn_in_progress");
    let (status, body) = first.await.unwrap();
    assert_eq!(status, StatusCode::OK, "{body}");
    // Once the first has come, the conversation takes the next message.
    let (status, body) = h
        .call("POST", &path, Some(ADA), Some(json!({"content": "three"})))
        .await;
    assert_eq!(status, StatusCode::OK, "{body}");
}

#[tokio::test]
async fn openai_calls_hold_a_concurrent_conversation_slot() {
    let mut h =
        Harness::with_config("[providers.mock]\nkind = \"mock\"\nlatency_ms = 1500\n").await;
    let mut settings = (*h.state.settings).clone();
    settings.limits.concurrent_conversations = 1;
    h.state.settings = std::sync::Arc::new(settings);
    h.state.limiter = bridle_server::limits::build(&h.state.settings.limits).unwrap();
    let body = json!({"model": "mock", "messages": [{"role": "user", "content": "hi"}]});
    let first = {
        let (state, body) = (h.state.clone(), body.clone());
        tokio::spawn(async move {
            crate::api::call_app(
                &state,
                "POST",
                "/v1/chat/completions",
                Some(ADA),
                Some(body),
            )
            .await
        })
    };
    // The first call is under way once its slot is taken.
    tokio::time::sleep(Duration::from_millis(300)).await;
    let (status, answer) = h
        .call(
            "POST",
            "/v1/chat/completions",
            Some(ADA),
            Some(body.clone()),
        )
        .await;
    assert_eq!(status, StatusCode::TOO_MANY_REQUESTS, "{answer}");
    let (status, answer) = first.await.unwrap();
    assert_eq!(status, StatusCode::OK, "{answer}");
    let (status, answer) = h
        .call("POST", "/v1/chat/completions", Some(ADA), Some(body))
        .await;
    assert_eq!(status, StatusCode::OK, "the slot is free again: {answer}");
}

#[tokio::test]
async fn an_inline_schema_never_passes_for_a_loaded_contract() {
    let h = Harness::new().await;
    let schema = json!({"type": "object"});
    let call = |name: Value| {
        json!({
            "model": "mock",
            "messages": [{"role": "user", "content": "hi"}],
            "response_format": {"type": "json_schema", "json_schema": {"name": name, "schema": schema}}
        })
    };
    for bad in [
        json!("bad\r\nname"),
        json!(""),
        json!("x".repeat(65)),
        json!(7),
    ] {
        let (status, body) = h
            .call(
                "POST",
                "/v1/chat/completions",
                Some(ADA),
                Some(call(bad.clone())),
            )
            .await;
        assert_eq!(status, StatusCode::BAD_REQUEST, "{bad}: {body}");
    }
    let (status, body) = h
        .call(
            "POST",
            "/v1/chat/completions",
            Some(ADA),
            Some(call(json!("selfhelp-response"))),
        )
        .await;
    assert_eq!(status, StatusCode::OK, "{body}");
    let (_, listed) = h
        .call(
            "GET",
            "/admin/v1/conversations?contract=selfhelp-response",
            Some(ADMIN),
            None,
        )
        .await;
    assert_eq!(listed["total"], 0, "{listed}");
    let (_, listed) = h
        .call(
            "GET",
            "/admin/v1/conversations?contract=inline:selfhelp-response",
            Some(ADMIN),
            None,
        )
        .await;
    assert_eq!(listed["total"], 1, "{listed}");
    let (_, metrics) = h.call("GET", "/metrics", None, None).await;
    let metrics = metrics.as_str().unwrap();
    assert!(
        !metrics.contains(r#"contract="selfhelp-response""#),
        "{metrics}"
    );
    assert!(metrics.contains(r#"contract="inline""#), "{metrics}");
}

#[tokio::test]
async fn a_running_server_answers_readiness_with_a_write() {
    let server = start_with(Harness::new().await, 8).await;
    let answer = reqwest::get(format!("http://{}/readyz", server.address))
        .await
        .unwrap();
    assert_eq!(answer.status(), reqwest::StatusCode::OK);
    let body: Value = answer.json().await.unwrap();
    assert_eq!(body["writes"], "ok");
}

#[tokio::test]
async fn a_streamed_turn_holds_its_conversation_until_its_stream_ends() {
    use axum::body::Body;
    use axum::http::{Request, header};
    use http_body_util::BodyExt;
    use tower::ServiceExt;
    let h = Harness::with_config("[providers.mock]\nkind = \"mock\"\nlatency_ms = 1000\n").await;
    let id = h.conversation(ADA).await;
    let path = format!("/v1/conversations/{id}/messages");
    let request = Request::builder()
        .method("POST")
        .uri(&path)
        .header(header::AUTHORIZATION, format!("Bearer {ADA}"))
        .header(header::CONTENT_TYPE, "application/json")
        .header(header::ACCEPT, "text/event-stream")
        .body(Body::from(json!({"content": "one"}).to_string()))
        .unwrap();
    let streamed = bridle_server::app(h.state.clone())
        .oneshot(request)
        .await
        .unwrap();
    assert_eq!(streamed.status(), StatusCode::OK);
    // The answer's head has come; its turn still runs, and holds the conversation.
    let (status, body) = h
        .call("POST", &path, Some(ADA), Some(json!({"content": "two"})))
        .await;
    assert_eq!(status, StatusCode::CONFLICT, "{body}");
    let events = streamed.into_body().collect().await.unwrap().to_bytes();
    let events = String::from_utf8_lossy(&events);
    assert!(events.contains("event: message_complete"), "{events}");
    // The turn's task lets go of the conversation as it ends.
    for _ in 0..500 {
        if h.state.turns.is_empty() {
            break;
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    let (status, body) = h
        .call("POST", &path, Some(ADA), Some(json!({"content": "three"})))
        .await;
    assert_eq!(status, StatusCode::OK, "{body}");
}
