//! `GET /healthz`: the server is up and its store answers.

use crate::AppState;
use crate::error::ApiError;
use axum::Json;
use axum::extract::State;
use serde_json::{Value, json};
use std::time::Duration;

/// How long the store may take to answer the health probe: a load balancer asks often and
/// must hear "down" quickly, not after the pool's own connect timeout.
const STORE_PROBE_TIMEOUT: Duration = Duration::from_secs(2);

pub async fn healthz(State(state): State<AppState>) -> Result<Json<Value>, ApiError> {
    let probe = state
        .engine
        .store()
        .conversation("00000000-0000-0000-0000-000000000000");
    match tokio::time::timeout(STORE_PROBE_TIMEOUT, probe).await {
        Ok(answer) => answer.map(drop)?,
        Err(_) => {
            return Err(ApiError::Unavailable(format!(
                "the store did not answer within {} s",
                STORE_PROBE_TIMEOUT.as_secs()
            )));
        }
    }
    Ok(Json(
        json!({"status": "ok", "store": state.engine.store().backend()}),
    ))
}
