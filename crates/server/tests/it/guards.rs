//! The connection guards of `listen::serve` over a real loopback socket: clients that send
//! their headers or body too slowly are cut off while other clients are served, the connection
//! cap frees its slots, and shutdown stops accepting.

use crate::api::{ADA, Harness};
use bridle_server::listen::{self, Guards};
use bridle_server::{ServerSettings, app};
use std::sync::Arc;
use std::time::{Duration, Instant};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::oneshot;

/// A server on a loopback port with short deadlines; dropping `stop` shuts it down.
pub(crate) struct Running {
    pub(crate) address: std::net::SocketAddr,
    stop: Option<oneshot::Sender<()>>,
    task: tokio::task::JoinHandle<()>,
    _harness: Harness,
}

pub(crate) async fn start(max_connections: usize) -> Running {
    start_with(Harness::new().await, max_connections).await
}

/// Serves `harness`'s app on a loopback port, with the short deadlines of [`start`].
pub(crate) async fn start_with(mut harness: Harness, max_connections: usize) -> Running {
    harness.state.settings = Arc::new(ServerSettings {
        body_timeout_ms: 300,
        ..(*harness.state.settings).clone()
    });
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let address = listener.local_addr().unwrap();
    let guards = Guards {
        header_timeout: Duration::from_millis(300),
        max_connections,
        drain_timeout: Duration::from_secs(5),
    };
    let (stop, stopped) = oneshot::channel::<()>();
    let task = tokio::spawn(listen::serve(
        listener,
        app(harness.state.clone()),
        guards,
        async move {
            let _ = stopped.await;
        },
    ));
    Running {
        address,
        stop: Some(stop),
        task,
        _harness: harness,
    }
}

async fn healthz(address: std::net::SocketAddr) -> reqwest::StatusCode {
    reqwest::get(format!("http://{address}/healthz"))
        .await
        .unwrap()
        .status()
}

/// Reads until the server closes the connection (or 5 s pass); returns what it sent and when
/// it closed.
async fn until_closed(stream: &mut TcpStream) -> (String, Duration) {
    let started = Instant::now();
    let mut received = Vec::new();
    let read = tokio::time::timeout(Duration::from_secs(5), stream.read_to_end(&mut received));
    assert!(read.await.is_ok(), "the server kept the connection open");
    (
        String::from_utf8_lossy(&received).into_owned(),
        started.elapsed(),
    )
}

#[tokio::test]
async fn a_client_sending_its_headers_too_slowly_is_cut_off_while_others_are_served() {
    let server = start(64).await;
    let mut slow = TcpStream::connect(server.address).await.unwrap();
    slow.write_all(b"GET /healthz HTTP/1.1\r\nHost: bridle\r\nX-Slow: a")
        .await
        .unwrap();
    // Others are served meanwhile.
    assert_eq!(healthz(server.address).await, reqwest::StatusCode::OK);
    let (_, after) = until_closed(&mut slow).await;
    assert!(after < Duration::from_secs(3), "closed after {after:?}");
}

#[tokio::test]
async fn a_client_that_sends_nothing_is_cut_off() {
    let server = start(64).await;
    let mut idle = TcpStream::connect(server.address).await.unwrap();
    let (_, after) = until_closed(&mut idle).await;
    assert!(after < Duration::from_secs(3), "closed after {after:?}");
}

/// Sends one kept-alive `GET /healthz` on `stream` and reads its whole answer.
async fn keep_alive_healthz(stream: &mut TcpStream) {
    stream
        .write_all(b"GET /healthz HTTP/1.1\r\nHost: bridle\r\n\r\n")
        .await
        .unwrap();
    let mut answer = Vec::new();
    let mut chunk = [0_u8; 4096];
    loop {
        let n = tokio::time::timeout(Duration::from_secs(5), stream.read(&mut chunk))
            .await
            .expect("an answer")
            .unwrap();
        assert!(n > 0, "closed before answering");
        answer.extend_from_slice(&chunk[..n]);
        let text = String::from_utf8_lossy(&answer);
        if let Some((head, body)) = text.split_once("\r\n\r\n") {
            assert!(head.starts_with("HTTP/1.1 200"), "{head}");
            let length: usize = head
                .lines()
                .find_map(|l| {
                    l.to_ascii_lowercase()
                        .strip_prefix("content-length: ")
                        .map(|v| v.trim().parse().unwrap())
                })
                .expect("content-length");
            if body.len() >= length {
                return;
            }
        }
    }
}

#[tokio::test]
async fn an_idle_kept_alive_connection_is_closed_after_the_header_timeout_and_frees_its_slot() {
    // One slot: while the idle connection holds it, no one else is served.
    let server = start(1).await;
    let mut kept = TcpStream::connect(server.address).await.unwrap();
    // hyper's header deadline also runs while a kept-alive connection waits for its next
    // request. Requests closer together than it keep the connection open…
    let started = Instant::now();
    for _ in 0..5 {
        keep_alive_healthz(&mut kept).await;
        tokio::time::sleep(Duration::from_millis(150)).await;
    }
    assert!(started.elapsed() > Duration::from_millis(700));
    keep_alive_healthz(&mut kept).await;
    // …and once it waits past it, the server closes it, and the slot serves another client.
    let (rest, after) = until_closed(&mut kept).await;
    assert_eq!(rest, "", "nothing more was sent");
    // The deadline runs from the end of the last answer, a moment before this client has
    // read it: allow that moment.
    assert!(
        after >= Duration::from_millis(200),
        "closed after {after:?}"
    );
    assert_eq!(healthz(server.address).await, reqwest::StatusCode::OK);
}

#[tokio::test]
async fn a_body_that_stops_arriving_ends_the_request() {
    let server = start(64).await;
    let mut slow = TcpStream::connect(server.address).await.unwrap();
    let head = format!(
        "POST /v1/conversations HTTP/1.1\r\nHost: bridle\r\nAuthorization: Bearer {ADA}\r\n\
         Content-Type: application/json\r\nContent-Length: 100\r\n\r\n{{\"contract\""
    );
    slow.write_all(head.as_bytes()).await.unwrap();
    let (answer, after) = until_closed(&mut slow).await;
    assert!(answer.starts_with("HTTP/1.1 408"), "{answer}");
    assert!(
        answer.contains("\"request_timeout\""),
        "an API error body: {answer}"
    );
    assert!(after < Duration::from_secs(3), "answered after {after:?}");
    assert_eq!(healthz(server.address).await, reqwest::StatusCode::OK);
}

#[tokio::test]
async fn a_body_trickling_in_forever_ends_the_request() {
    // A byte every 100 ms: never a pause as long as the body deadline (300 ms), but the whole
    // body never arrives within it.
    let server = start(64).await;
    let mut slow = TcpStream::connect(server.address).await.unwrap();
    let head = format!(
        "POST /v1/conversations HTTP/1.1\r\nHost: bridle\r\nAuthorization: Bearer {ADA}\r\n\
         Content-Type: application/json\r\nContent-Length: 1000\r\n\r\n"
    );
    slow.write_all(head.as_bytes()).await.unwrap();
    let started = Instant::now();
    let mut answer = Vec::new();
    let mut chunk = [0_u8; 4096];
    // Trickle until the server answers (or 5 s pass: the deadline did not hold).
    while started.elapsed() < Duration::from_secs(5) {
        if slow.write_all(b" ").await.is_err() {
            break;
        }
        match tokio::time::timeout(Duration::from_millis(100), slow.read(&mut chunk)).await {
            Ok(Ok(0)) | Ok(Err(_)) => break,
            Ok(Ok(n)) => answer.extend_from_slice(&chunk[..n]),
            Err(_) => {}
        }
        if !answer.is_empty() {
            break;
        }
    }
    let answer = String::from_utf8_lossy(&answer);
    assert!(
        answer.starts_with("HTTP/1.1 408"),
        "still open after {:?}: {answer}",
        started.elapsed()
    );
    assert!(answer.contains("\"request_timeout\""), "{answer}");
}

#[tokio::test]
async fn connections_past_the_cap_wait_for_a_free_slot() {
    let server = start(2).await;
    // Two idle connections take both slots until the header deadline frees them.
    let _first = TcpStream::connect(server.address).await.unwrap();
    let _second = TcpStream::connect(server.address).await.unwrap();
    let started = Instant::now();
    assert_eq!(healthz(server.address).await, reqwest::StatusCode::OK);
    assert!(
        started.elapsed() >= Duration::from_millis(200),
        "served at once ({:?}): the cap did not hold",
        started.elapsed()
    );
}

#[tokio::test]
async fn shutdown_stops_accepting_and_ends_the_server() {
    let mut server = start(64).await;
    assert_eq!(healthz(server.address).await, reqwest::StatusCode::OK);
    drop(server.stop.take());
    tokio::time::timeout(Duration::from_secs(5), &mut server.task)
        .await
        .expect("the server ends after the signal")
        .unwrap();
    assert!(TcpStream::connect(server.address).await.is_err());
}

/// Sends `request` raw and returns the status line and body the server answered with.
async fn raw_exchange(address: std::net::SocketAddr, request: &[u8]) -> (String, String) {
    let mut stream = TcpStream::connect(address).await.unwrap();
    // A server may answer and close before reading everything: a failed write is fine.
    let _ = stream.write_all(request).await;
    let (answer, _) = until_closed(&mut stream).await;
    let status = answer.lines().next().unwrap_or_default().to_owned();
    let body = answer
        .split_once("\r\n\r\n")
        .map(|(_, b)| b.to_owned())
        .unwrap_or_default();
    (status, body)
}

#[tokio::test]
async fn hostile_requests_get_clear_4xx_and_others_are_still_served() {
    let server = start(64).await;
    let path = "/v1/conversations";
    let request = |headers: &str, body: &str| {
        format!(
            "POST {path} HTTP/1.1\r\nhost: x\r\nconnection: close\r\nauthorization: Bearer {ADA}\r\n{headers}content-length: {}\r\n\r\n{body}",
            body.len()
        )
    };
    let huge_header = format!("x-junk: {}\r\n", "a".repeat(512 * 1024));
    let many_headers: String = (0..500).map(|i| format!("x-h{i}: v\r\n")).collect();
    let cases: Vec<(&str, String, &str)> = vec![
        (
            "wrong content type",
            request(
                "content-type: text/plain\r\n",
                r#"{"contract":"table-chat"}"#,
            ),
            " 415 ",
        ),
        (
            "no content type",
            request("", r#"{"contract":"table-chat"}"#),
            " 415 ",
        ),
        (
            "invalid JSON",
            request("content-type: application/json\r\n", r#"{"contract":"#),
            " 400 ",
        ),
        (
            "binary junk",
            request(
                "content-type: application/json\r\n",
                "\u{0}\u{1}\u{7f}\u{fffd}garbage",
            ),
            " 400 ",
        ),
        ("a header of 512 KiB", request(&huge_header, "{}"), " 431 "),
        ("500 headers", request(&many_headers, "{}"), " 431 "),
        (
            "a declared body past the limit",
            format!(
                "POST {path} HTTP/1.1\r\nhost: x\r\nconnection: close\r\nauthorization: Bearer {ADA}\r\ncontent-type: application/json\r\ncontent-length: 100000000\r\n\r\n{{"
            ),
            " 413 ",
        ),
    ];
    for (what, request, expected) in cases {
        let (status, body) = raw_exchange(server.address, request.as_bytes()).await;
        assert!(status.contains(expected), "{what}: {status} {body}");
        if !expected.contains("431") {
            let error: serde_json::Value = serde_json::from_str(&body)
                .unwrap_or_else(|e| panic!("{what}: not a JSON error body ({e}): {body}"));
            assert!(error["error"]["message"].is_string(), "{what}: {body}");
        }
        assert_eq!(healthz(server.address).await, reqwest::StatusCode::OK);
    }
}
