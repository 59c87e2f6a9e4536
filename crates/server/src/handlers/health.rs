//! `GET /healthz` (liveness: the server is up and its store answers reads) and `GET /readyz`
//! (readiness: the store also takes a write now).
//!
//! They differ on purpose: a store that can read but not write (a full or read-only disk)
//! keeps `/healthz` at 200 — restarting the process would not help, and users can still read
//! their conversations — while `/readyz` answers 503 `store_unavailable`, so a balancer sends
//! new turns elsewhere until the disk has room again.

use super::bodies::HealthBody;
use crate::AppState;
use crate::error::ApiError;
use axum::Json;
use axum::extract::State;
use std::time::Duration;

/// How long the store may take to answer a probe: a load balancer asks often and must hear
/// "down" quickly, not after the pool's own connect timeout.
const STORE_PROBE_TIMEOUT: Duration = Duration::from_secs(2);

async fn probe<T>(
    what: &str,
    answer: impl Future<Output = Result<T, bridle_engine::store::StoreError>>,
) -> Result<(), ApiError> {
    match tokio::time::timeout(STORE_PROBE_TIMEOUT, answer).await {
        Ok(answer) => answer.map(drop).map_err(|e| {
            // Whatever the store said, the probe's answer is "unavailable".
            ApiError::Unavailable(format!("the store's {what} probe failed: {e}"))
        }),
        Err(_) => Err(ApiError::Unavailable(format!(
            "the store did not answer the {what} probe within {} s",
            STORE_PROBE_TIMEOUT.as_secs()
        ))),
    }
}

pub async fn healthz(State(state): State<AppState>) -> Result<Json<HealthBody>, ApiError> {
    let store = state.engine.store();
    probe(
        "read",
        store.conversation("00000000-0000-0000-0000-000000000000"),
    )
    .await?;
    Ok(Json(HealthBody {
        status: "ok",
        store: store.backend(),
        writes: None,
    }))
}

pub async fn readyz(State(state): State<AppState>) -> Result<Json<HealthBody>, ApiError> {
    let store = state.engine.store();
    probe(
        "read",
        store.conversation("00000000-0000-0000-0000-000000000000"),
    )
    .await?;
    probe("write", store.probe_write()).await?;
    Ok(Json(HealthBody {
        status: "ready",
        store: store.backend(),
        writes: Some("ok"),
    }))
}
