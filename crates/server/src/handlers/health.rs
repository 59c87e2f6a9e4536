//! `GET /healthz`: the server is up and its store answers.

use crate::AppState;
use crate::error::ApiError;
use axum::Json;
use axum::extract::State;
use serde_json::{Value, json};

pub async fn healthz(State(state): State<AppState>) -> Result<Json<Value>, ApiError> {
    state
        .engine
        .store()
        .conversation("00000000-0000-0000-0000-000000000000")
        .await?;
    Ok(Json(
        json!({"status": "ok", "store": state.engine.store().backend()}),
    ))
}
