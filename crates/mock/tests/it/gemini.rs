//! The Gemini and Azure OpenAI front ends over HTTP: a contract reply from `generateContent`
//! and, streamed, from `streamGenerateContent?alt=sse` (the text's events, the last with its
//! `finishReason` and usage); a reply shaped by `responseSchema`; faults as Gemini's error body
//! with `Retry-After`; a broken stream without a `finishReason`; the key in `x-goog-api-key`
//! or Azure's `api-key`; Azure's deployment URL with its required `api-version`.

use crate::*;
use bridle_mock::{Fault, Script, ScriptTurn, Step};

fn contract_request() -> Value {
    json!({
        "systemInstruction": {"parts": [{"text": instructions()}]},
        "contents": [{"role": "user", "parts": [{"text": "I can't sleep."}]}]
    })
}

const PATH: &str = "/v1beta/models/gemini-mock:generateContent";
const STREAM_PATH: &str = "/v1beta/models/gemini-mock:streamGenerateContent?alt=sse";

fn scripted(step: Step) -> MockConfig {
    MockConfig {
        script: Some(Script {
            turns: vec![ScriptTurn {
                attempts: vec![step],
            }],
        }),
        ..MockConfig::default()
    }
}

#[tokio::test]
async fn a_contract_reply_comes_whole_and_streamed() {
    let server = start(MockConfig::default()).await;
    let reply = post(&server, PATH, &contract_request()).await;
    assert_eq!(reply.status, 200, "{:?}", reply.body);
    let candidate = &reply.body["candidates"][0];
    assert_eq!(candidate["finishReason"], "STOP");
    assert_eq!(candidate["content"]["role"], "model");
    let text = candidate["content"]["parts"][0]["text"].as_str().unwrap();
    assert!(selfhelp().check(text, &Context::new()).is_valid(), "{text}");
    assert!(
        reply.body["usageMetadata"]["promptTokenCount"]
            .as_u64()
            .unwrap()
            > 0
    );
    assert_eq!(reply.body["modelVersion"], "gemini-mock");

    let (events, clean) = stream(&server, STREAM_PATH, &contract_request()).await;
    assert!(clean);
    let mut streamed = String::new();
    for (i, event) in events.iter().enumerate() {
        let data: Value = serde_json::from_str(&event.data).unwrap();
        let candidate = &data["candidates"][0];
        let last = i + 1 == events.len();
        assert_eq!(candidate.get("finishReason").is_some(), last, "{data}");
        assert_eq!(data.get("usageMetadata").is_some(), last, "{data}");
        for part in candidate["content"]["parts"].as_array().unwrap() {
            streamed.push_str(part["text"].as_str().unwrap_or(""));
        }
    }
    assert_eq!(streamed, text, "the same request, the same reply");
}

#[tokio::test]
async fn a_response_schema_shapes_the_reply() {
    let server = start(MockConfig::default()).await;
    let mut body = json!({"contents": [{"parts": [{"text": "Rate Oslo."}]}],
        "generationConfig": {"responseMimeType": "application/json", "responseSchema":
            {"type": "OBJECT", "required": ["score"], "properties": {"score": {"type": "INTEGER", "minimum": 1, "maximum": 5},
             "note": {"type": "STRING", "nullable": true}}}}});
    let reply = post(&server, PATH, &body).await;
    let text = reply.body["candidates"][0]["content"]["parts"][0]["text"]
        .as_str()
        .unwrap();
    let value: Value = serde_json::from_str(text).unwrap();
    let score = value["score"].as_i64().unwrap();
    assert!((1..=5).contains(&score), "{value}");
    // Without the JSON mime type the schema is not asked for natively.
    body["generationConfig"]["responseMimeType"] = json!("text/plain");
    let reply = post(&server, PATH, &body).await;
    assert_eq!(reply.status, 200);
}

#[tokio::test]
async fn faults_are_gemini_error_bodies_and_broken_streams_have_no_finish() {
    let server = start(scripted(Step::Fault(Fault::Http429 {
        retry_after_secs: 3,
    })))
    .await;
    let reply = post(&server, PATH, &contract_request()).await;
    assert_eq!(reply.status, 429);
    assert_eq!(reply.retry_after.as_deref(), Some("3"));
    assert_eq!(reply.body["error"]["code"], 429);
    assert_eq!(reply.body["error"]["status"], "RESOURCE_EXHAUSTED");
    assert!(reply.body["error"]["message"].is_string());

    let server = start(scripted(Step::Fault(Fault::BrokenStream))).await;
    let (events, clean) = stream(&server, STREAM_PATH, &contract_request()).await;
    assert!(!clean, "the connection breaks off");
    assert!(
        events.iter().all(|e| !e.data.contains("finishReason")),
        "{events:?}"
    );
}

#[tokio::test]
async fn keys_paths_and_versions_are_checked() {
    let server = start(MockConfig {
        require_api_key: Some("k".into()),
        ..MockConfig::default()
    })
    .await;
    let body = contract_request().to_string();
    let refused = post_raw(&server, PATH, body.clone(), &[]).await;
    assert_eq!(refused.status, 401);
    assert_eq!(refused.body["error"]["status"], "UNAUTHENTICATED");
    let ok = post_raw(&server, PATH, body.clone(), &[("x-goog-api-key", "k")]).await;
    assert_eq!(ok.status, 200);
    let no_sse = "/v1beta/models/gemini-mock:streamGenerateContent";
    let reply = post_raw(&server, no_sse, body.clone(), &[("x-goog-api-key", "k")]).await;
    assert_eq!(reply.status, 400);
    assert!(
        reply.body["error"]["message"]
            .as_str()
            .unwrap()
            .contains("alt=sse")
    );
    let reply = post_raw(&server, "/v1beta/models/gemini-mock:countTokens", body, &[]).await;
    assert_eq!(reply.status, 404);

    // Azure: the deployment names the model; api-version is required; the key in api-key.
    let chat = json!({"messages": [{"role": "system", "content": instructions()},
                                   {"role": "user", "content": "I can't sleep."}]});
    let azure = "/openai/deployments/my-gpt/chat/completions";
    let reply = post_raw(&server, azure, chat.to_string(), &[("api-key", "k")]).await;
    assert_eq!(reply.status, 400);
    assert!(
        reply.body["error"]["message"]
            .as_str()
            .unwrap()
            .contains("api-version")
    );
    let versioned = format!("{azure}?api-version=2024-10-21");
    let reply = post_raw(&server, &versioned, chat.to_string(), &[("api-key", "k")]).await;
    assert_eq!(reply.status, 200, "{:?}", reply.body);
    assert_eq!(reply.body["model"], "my-gpt");
    let text = reply.body["choices"][0]["message"]["content"]
        .as_str()
        .unwrap();
    assert!(selfhelp().check(text, &Context::new()).is_valid());
    let logged = server.requests();
    assert_eq!(logged.last().unwrap().path, azure);
}
