//! Streams over HTTP: scripted pieces, the piece size, pacing, writes re-cut inside characters,
//! broken streams with all of it, and the request log saying whether the client read a stream
//! to its end or went away.

use crate::*;
use bridle_mock::{Fault, LoggedRequest, Script, ScriptTurn, Step, StreamEnd};
use std::time::{Duration, Instant};

fn script(turns: Vec<Step>) -> Script {
    Script {
        turns: turns
            .into_iter()
            .map(|step| ScriptTurn {
                attempts: vec![step],
            })
            .collect(),
    }
}

fn pieces(parts: &[&str]) -> Step {
    Step::Pieces(parts.iter().map(|p| (*p).to_owned()).collect())
}

fn openai_stream(user: &str) -> Value {
    json!({"model": "gpt-mock", "stream": true, "messages": [{"role": "user", "content": user}]})
}

fn anthropic_stream(user: &str) -> Value {
    json!({"model": "claude-mock", "max_tokens": 100, "stream": true,
           "messages": [{"role": "user", "content": user}]})
}

/// The `delta.content` texts of OpenAI events.
fn openai_deltas(events: &[Event]) -> Vec<String> {
    events
        .iter()
        .filter(|e| e.data != "[DONE]")
        .filter_map(|e| {
            data(e)["choices"][0]["delta"]["content"]
                .as_str()
                .map(str::to_owned)
        })
        .filter(|text| !text.is_empty())
        .collect()
}

/// The `text_delta` texts of Anthropic events.
fn anthropic_deltas(events: &[Event]) -> Vec<String> {
    events
        .iter()
        .filter(|e| e.name.as_deref() == Some("content_block_delta"))
        .filter_map(|e| data(e)["delta"]["text"].as_str().map(str::to_owned))
        .collect()
}

/// How the stream of the log's entry `index` ended, polled until it is there (a stream's end
/// is logged when the server notices it).
async fn stream_end(server: &MockServer, index: usize) -> StreamEnd {
    let deadline = Instant::now() + Duration::from_secs(10);
    loop {
        let logged: Vec<LoggedRequest> = server.requests();
        if let Some(end) = logged.get(index).and_then(|l| l.answer.stream) {
            return end;
        }
        assert!(
            Instant::now() < deadline,
            "no stream end logged: {logged:?}"
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

/// The request log as `GET /_mock/requests` serves it.
async fn http_log(server: &MockServer) -> Vec<Value> {
    let log: Value = reqwest::get(format!("{}/_mock/requests", server.url()))
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    log.as_array().unwrap().clone()
}

#[tokio::test]
async fn a_pieces_step_streams_exactly_those_deltas_and_is_whole_unstreamed() {
    let parts = ["SUGG", "ESTED_VALUES: [\"a\"]"];
    let server = start(MockConfig::new().with_script(script(vec![
        pieces(&parts),
        pieces(&parts),
        pieces(&["Hé", "llo 🙂"]),
    ])))
    .await;
    let (events, clean) = stream(&server, "/v1/chat/completions", &openai_stream("one")).await;
    assert!(clean);
    assert_eq!(openai_deltas(&events), parts);
    assert_eq!(events.last().map(|e| e.data.as_str()), Some("[DONE]"));

    let whole = post(
        &server,
        "/v1/chat/completions",
        &openai_body(json!([{"role": "user", "content": "two"}])),
    )
    .await;
    assert_eq!(
        whole.body["choices"][0]["message"]["content"],
        "SUGGESTED_VALUES: [\"a\"]"
    );

    let (events, clean) = stream(&server, "/v1/messages", &anthropic_stream("three")).await;
    assert!(clean);
    assert_eq!(anthropic_deltas(&events), ["Hé", "llo 🙂"]);

    // Read to the end: logged as completed, every frame sent (role, two deltas, finish,
    // [DONE]); in the HTTP log too, where the unstreamed answer has no stream.
    let end = stream_end(&server, 0).await;
    assert_eq!(
        end,
        StreamEnd {
            frames_sent: 5,
            frames_total: 5,
            completed: true
        }
    );
    let end = stream_end(&server, 2).await;
    assert_eq!((end.frames_total, end.completed), (events.len(), true));
    let log = http_log(&server).await;
    assert_eq!(
        log[0]["answer"]["stream"],
        json!({"frames_sent": 5, "frames_total": 5, "completed": true})
    );
    assert!(log[1]["answer"].get("stream").is_none(), "not streamed");
}

#[tokio::test]
async fn the_piece_size_sets_the_deltas_of_both_formats() {
    let server = start(MockConfig::new().with_seed(3).with_stream_piece_chars(2)).await;
    let (events, clean) = stream(&server, "/v1/chat/completions", &openai_stream("hi")).await;
    assert!(clean);
    let deltas = openai_deltas(&events);
    assert!(deltas.len() > 3);
    assert!(deltas.iter().all(|d| d.chars().count() <= 2), "{deltas:?}");
    assert!(
        deltas[..deltas.len() - 1]
            .iter()
            .all(|d| d.chars().count() == 2)
    );

    let (events, clean) = stream(&server, "/v1/messages", &anthropic_stream("hi")).await;
    assert!(clean);
    let deltas = anthropic_deltas(&events);
    assert!(deltas.len() > 3);
    assert!(
        deltas[..deltas.len() - 1]
            .iter()
            .all(|d| d.chars().count() == 2),
        "{deltas:?}"
    );
}

#[tokio::test]
async fn writes_of_a_few_bytes_split_characters_and_the_content_stays_exact() {
    let text = ["héllo wörld ", "🙂 ünïcödé — ok"];
    for path in ["/v1/chat/completions", "/v1/messages"] {
        let server = start(
            MockConfig::new()
                .with_stream_chunk_bytes(3)
                .with_script(script(vec![pieces(&text)])),
        )
        .await;
        let body = if path == "/v1/messages" {
            anthropic_stream("hi")
        } else {
            openai_stream("hi")
        };
        let (chunks, clean) = stream_chunks(&server, path, &body).await;
        assert!(clean, "{path}");
        assert!(chunks.len() > 20, "{path}: {} reads", chunks.len());
        assert!(
            chunks.iter().all(|c| !c.is_empty() && c.len() <= 3),
            "{path}"
        );
        assert!(
            chunks.iter().any(|c| std::str::from_utf8(c).is_err()),
            "{path}: some read ends inside a character"
        );
        let events = events(&chunks.concat());
        let deltas = if path == "/v1/messages" {
            anthropic_deltas(&events)
        } else {
            openai_deltas(&events)
        };
        assert_eq!(deltas, text, "{path}");
        assert!(stream_end(&server, 0).await.completed, "{path}");
    }
}

#[tokio::test]
async fn the_interval_paces_the_frames_of_both_formats() {
    let interval = 30;
    let server = start(
        MockConfig::new()
            .with_stream_interval_ms(interval)
            .with_script(script(vec![
                pieces(&["a", "b", "c", "d", "e"]),
                pieces(&["a", "b", "c"]),
            ])),
    )
    .await;
    for (index, (path, body)) in [
        ("/v1/chat/completions", openai_stream("one")),
        ("/v1/messages", anthropic_stream("two")),
    ]
    .into_iter()
    .enumerate()
    {
        let started = Instant::now();
        let (events, clean) = stream(&server, path, &body).await;
        let elapsed = started.elapsed();
        assert!(clean);
        let end = stream_end(&server, index).await;
        assert_eq!((end.frames_total, end.completed), (events.len(), true));
        let least = Duration::from_millis(interval * (events.len() as u64 - 1));
        assert!(elapsed >= least, "{path}: {elapsed:?} < {least:?}");
    }
}

#[tokio::test]
async fn a_client_that_leaves_mid_stream_is_logged_as_not_completed() {
    let many: Vec<String> = (0..40).map(|i| format!("piece {i}. ")).collect();
    let server = start(
        MockConfig::new()
            .with_stream_interval_ms(25)
            .with_script(script(vec![Step::Pieces(many.clone()), Step::Pieces(many)])),
    )
    .await;
    for (index, (path, body)) in [
        ("/v1/chat/completions", openai_stream("one")),
        ("/v1/messages", anthropic_stream("two")),
    ]
    .into_iter()
    .enumerate()
    {
        let response = reqwest::Client::new()
            .post(format!("{}{path}", server.url()))
            .json(&body)
            .send()
            .await
            .unwrap();
        let mut bytes = response.bytes_stream();
        let first = bytes.next().await.unwrap().unwrap();
        assert!(!first.is_empty());
        drop(bytes);
        let end = stream_end(&server, index).await;
        assert!(!end.completed, "{path}: {end:?}");
        assert!(end.frames_sent < end.frames_total, "{path}: {end:?}");
        assert!(end.frames_total > 40, "{path}: {end:?}");
        let log = http_log(&server).await;
        assert_eq!(log[index]["answer"]["stream"]["completed"], false, "{path}");
    }
}

#[tokio::test]
async fn a_broken_stream_still_breaks_off_with_every_knob_set() {
    let server = start(
        MockConfig::new()
            .with_fault_rate(1.0)
            .with_faults(vec![Fault::BrokenStream])
            .with_stream_piece_chars(2)
            .with_stream_interval_ms(2)
            .with_stream_chunk_bytes(7),
    )
    .await;
    let mut body = openai_body(
        json!([{"role": "system", "content": instructions()}, {"role": "user", "content": "hi"}]),
    );
    body["stream"] = json!(true);
    let (chunks, clean) = stream_chunks(&server, "/v1/chat/completions", &body).await;
    assert!(!clean, "the connection breaks");
    assert!(chunks.iter().all(|c| c.len() <= 7));
    let events = events(&chunks.concat());
    assert!(events.len() > 3, "some deltas arrive first");
    assert!(events.iter().all(|e| e.data != "[DONE]"));
    let deltas = openai_deltas(&events);
    assert!(deltas.iter().all(|d| d.chars().count() <= 2), "{deltas:?}");

    let anthropic = json!({"model": "c", "max_tokens": 10, "stream": true, "system": instructions(),
                           "messages": [{"role": "user", "content": "hi"}]});
    let (events, clean) = stream(&server, "/v1/messages", &anthropic).await;
    assert!(!clean && events.len() > 3);
    assert!(
        events
            .iter()
            .all(|e| e.name.as_deref() != Some("message_stop"))
    );

    for index in 0..2 {
        let logged = &server.requests()[index];
        assert_eq!(logged.answer.fault, Some(Fault::BrokenStream));
        let end = stream_end(&server, index).await;
        assert_eq!(
            end.frames_sent, end.frames_total,
            "every planned frame, then the cut"
        );
    }
}
