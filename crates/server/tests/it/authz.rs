//! The authz matrix: every route of the route table × every kind of caller (no key, a wrong
//! key, the owning user, another user, an admin), one expected status per cell. The route list
//! is read from the table in `routes.rs`, so a route added without a row here fails the test.
//! Beyond the status, every cell checks what leaks: errors have the JSON error shape, and no
//! user ever receives an admin-only field or the other user's conversation.

use crate::api::{ADA, ADMIN, BOB, Harness};
use axum::http::StatusCode;
use serde_json::{Value, json};
use std::collections::BTreeSet;

const WRONG: &str = "wrong-key-0000000000000000";

/// The callers, in the order of each row's expected statuses.
const CALLERS: [(&str, Option<&str>); 5] = [
    ("no key", None),
    ("wrong key", Some(WRONG)),
    ("owner ada", Some(ADA)),
    ("other user bob", Some(BOB)),
    ("admin", Some(ADMIN)),
];

/// Fields only admins may ever see.
const ADMIN_ONLY: [&str; 5] = [
    "request_payload",
    "raw_response",
    "violations",
    "repairs_applied",
    "safety_events",
];

struct Row {
    method: &'static str,
    /// The route as the table writes it; `{id}` is Ada's conversation, or for replay one of
    /// its attempts.
    path: &'static str,
    body: Option<fn() -> Value>,
    /// no key, wrong key, ada (owner), bob, admin.
    expect: [u16; 5],
}

fn send_body() -> Value {
    json!({"content": "hello"})
}

fn create_body() -> Value {
    json!({"contract": "selfhelp-response"})
}

fn completion_body() -> Value {
    json!({"model": "mock", "messages": [{"role": "user", "content": "hi"}]})
}

fn rows() -> Vec<Row> {
    const PUBLIC: [u16; 5] = [200; 5];
    const USERS: [u16; 5] = [401, 401, 200, 200, 200];
    const ADMINS: [u16; 5] = [401, 401, 403, 403, 200];
    let row = |method, path, body, expect| Row {
        method,
        path,
        body,
        expect,
    };
    vec![
        row("GET", "/healthz", None, PUBLIC),
        row("GET", "/readyz", None, PUBLIC),
        row("GET", "/metrics", None, PUBLIC),
        row(
            "POST",
            "/v1/conversations",
            Some(create_body as fn() -> Value),
            [401, 401, 201, 201, 201],
        ),
        row("GET", "/v1/conversations", None, USERS),
        row(
            "GET",
            "/v1/conversations/{id}",
            None,
            [401, 401, 200, 404, 200],
        ),
        row("GET", "/v1/contracts", None, USERS),
        // Only the owner speaks in a conversation; admins read it but may not write to it.
        row(
            "POST",
            "/v1/conversations/{id}/messages",
            Some(send_body),
            [401, 401, 200, 404, 403],
        ),
        row(
            "GET",
            "/v1/conversations/{id}/messages",
            None,
            [401, 401, 200, 404, 200],
        ),
        row("POST", "/v1/chat/completions", Some(completion_body), USERS),
        row("GET", "/v1/models", None, USERS),
        row("GET", "/admin/v1/conversations", None, ADMINS),
        row("GET", "/admin/v1/conversations/{id}", None, ADMINS),
        row("POST", "/admin/v1/conversations/{id}/unblock", None, ADMINS),
        row("POST", "/admin/v1/messages/{id}/replay", None, ADMINS),
        row("GET", "/admin/v1/stats", None, ADMINS),
        // The pages and their files are public; the key is entered in the page.
        row("GET", "/", None, PUBLIC),
        row("GET", "/admin", None, PUBLIC),
        row("GET", "/admin/", None, [308; 5]),
        row("GET", "/assets/{*path}", None, PUBLIC),
    ]
}

/// `(method, path)` of every row of the table in `routes.rs`'s documentation.
fn documented_routes() -> BTreeSet<(String, String)> {
    include_str!("../../src/routes.rs")
        .lines()
        .filter_map(|line| {
            let cells: Vec<&str> = line
                .strip_prefix("/// |")?
                .split('|')
                .map(str::trim)
                .collect();
            let path = cells.get(1)?.strip_prefix('`')?.strip_suffix('`')?;
            Some((cells[0].to_owned(), path.to_owned()))
        })
        .collect()
}

#[test]
fn the_matrix_covers_every_route_in_the_table() {
    let documented = documented_routes();
    assert!(documented.len() >= 18, "{documented:?}");
    let covered: BTreeSet<(String, String)> = rows()
        .iter()
        .map(|r| (r.method.to_owned(), r.path.to_owned()))
        .collect();
    assert_eq!(covered, documented, "every route needs a row in the matrix");
}

#[tokio::test]
async fn every_route_for_every_caller() {
    let h = Harness::new().await;
    let ada = h.conversation(ADA).await;
    let bob = h.conversation(BOB).await;
    let (status, reply) = h
        .call(
            "POST",
            &format!("/v1/conversations/{ada}/messages"),
            Some(ADA),
            Some(send_body()),
        )
        .await;
    assert_eq!(status, StatusCode::OK, "{reply}");
    let (_, detail) = h
        .call(
            "GET",
            &format!("/admin/v1/conversations/{ada}"),
            Some(ADMIN),
            None,
        )
        .await;
    let attempt = detail["messages"]
        .as_array()
        .unwrap()
        .iter()
        .find(|m| m["role"] == "assistant")
        .expect("an attempt")["id"]
        .to_string();

    let mut cells = 0;
    for row in rows() {
        let id = if row.path.contains("/messages/{id}/") {
            attempt.as_str()
        } else {
            ada.as_str()
        };
        let path = row
            .path
            .replace("{id}", id)
            .replace("{*path}", "shared/dom.js");
        // Static files hold code, not anyone's data: only their status is checked.
        let data =
            !row.path.starts_with("/assets/") && !matches!(row.path, "/" | "/admin" | "/admin/");
        for ((who, key), expected) in CALLERS.iter().zip(row.expect) {
            let (status, body) = h.call(row.method, &path, *key, row.body.map(|b| b())).await;
            let cell = format!("{} {} as {who}", row.method, row.path);
            assert_eq!(status.as_u16(), expected, "{cell}: {body}");
            if status.is_redirection() {
                cells += 1;
                continue;
            }
            if !status.is_success() {
                assert!(
                    body["error"]["message"].is_string() && body["error"]["code"].is_string(),
                    "{cell}: error body {body}"
                );
                assert!(!body.to_string().contains(&bob) || *key == Some(BOB));
            }
            if !status.is_success() {
                // An error may echo the id the caller sent, nothing more.
                cells += 1;
                continue;
            }
            if !data {
                cells += 1;
                continue;
            }
            let text = body.to_string();
            if matches!(*key, Some(ADA) | Some(BOB)) {
                for field in ADMIN_ONLY {
                    assert!(!text.contains(field), "{cell} shows {field}: {text}");
                }
            }
            if *key == Some(BOB) {
                assert!(!text.contains(&ada), "{cell} shows Ada's conversation");
            }
            if *key == Some(ADA) {
                assert!(!text.contains(&bob), "{cell} shows Bob's conversation");
            }
            cells += 1;
        }
    }
    assert_eq!(cells, rows().len() * CALLERS.len());
}
