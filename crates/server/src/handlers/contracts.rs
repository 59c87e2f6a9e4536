//! `GET /v1/contracts`: the contracts a conversation can be started under (built-in and added),
//! so clients offer real choices instead of hard-coded names.

use crate::AppState;
use crate::auth::Caller;
use axum::Json;
use axum::extract::State;
use serde_json::{Value, json};

pub async fn list(State(state): State<AppState>, _caller: Caller) -> Json<Value> {
    let items: Vec<Value> = state
        .engine
        .contracts()
        .iter()
        .map(|c| {
            json!({
                "name": c.name(),
                "version": c.version().to_string(),
                "kind": c.kind().as_str(),
                "description": c.description(),
            })
        })
        .collect();
    Json(json!({ "items": items }))
}
