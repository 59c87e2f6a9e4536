//! [`serve`]: the accept loop that serves the app over HTTP/1.1, with the guards `axum::serve`
//! leaves out for a server on the open network:
//!
//! - HTTP/1.1 only, through hyper's HTTP/1 connection itself: HTTP/2 (and TLS) is for the
//!   proxy in front. The version-sniffing "auto" builder served HTTP/2 prior-knowledge
//!   connections even when told HTTP/1 only (its `serve_connection_with_upgrades` ignores
//!   that), and an HTTP/2 connection escaped every guard below: idle ones were never closed,
//!   so `max_connections` of them locked everyone out. An HTTP/2 preface now gets HTTP/1's
//!   answer to a version it does not speak, and the connection is closed. Upgrades
//!   (`Upgrade: h2c`, WebSocket) are not served: no route uses them;
//! - a deadline for a new connection's request headers ([`Guards::header_timeout`]): a client
//!   that sends nothing, or its headers a byte at a time ("slowloris"), is cut off instead of
//!   holding a connection for ever. hyper's own deadline needs a timer, which `axum::serve`
//!   does not give it, and starts only with the first byte, so the first byte has a deadline
//!   of its own here. hyper's
//!   deadline also runs while a kept-alive connection waits for its next request, so an idle
//!   connection is closed after the same time and frees its [`Guards::max_connections`] slot
//!   (a request in progress, and a response still streaming, are never cut by it);
//! - at most [`Guards::max_connections`] open connections: past it, new connections wait in the
//!   kernel's backlog instead of exhausting file descriptors;
//! - `TCP_NODELAY` on every connection (small JSON answers and SSE events go out at once);
//! - graceful shutdown: on the signal, no new connections; open ones finish their requests,
//!   for at most [`Guards::drain_timeout`].
//!
//! A body sent too slowly is the router's concern (`RequestBodyTimeoutLayer` in `routes.rs`).

use axum::Router;
use hyper::server::conn::http1::Builder;
use hyper_util::rt::{TokioIo, TokioTimer};
use hyper_util::server::graceful::GracefulShutdown;
use hyper_util::service::TowerToHyperService;
use std::future::Future;
use std::sync::Arc;
use std::time::Duration;
use tokio::net::TcpListener;
use tokio::sync::Semaphore;

/// How long accepting pauses after an error (too many open files, …) before trying again.
const ACCEPT_BACKOFF: Duration = Duration::from_millis(50);

/// The connection guards.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Guards {
    /// Longest time a client may take to send a request's headers.
    pub header_timeout: Duration,
    /// Most connections open at once.
    pub max_connections: usize,
    /// Longest wait for open connections at shutdown.
    pub drain_timeout: Duration,
}

/// Serves `app` on `listener` until `shutdown` completes, then drains open connections.
pub async fn serve(
    listener: TcpListener,
    app: Router,
    guards: Guards,
    shutdown: impl Future<Output = ()>,
) {
    let mut builder = Builder::new();
    builder
        .timer(TokioTimer::new())
        .header_read_timeout(guards.header_timeout);
    let graceful = GracefulShutdown::new();
    let slots = Arc::new(Semaphore::new(guards.max_connections));
    tokio::pin!(shutdown);
    loop {
        let slot = tokio::select! {
            slot = Arc::clone(&slots).acquire_owned() => match slot {
                Ok(slot) => slot,
                Err(_) => break,
            },
            () = &mut shutdown => break,
        };
        let stream = tokio::select! {
            accepted = listener.accept() => match accepted {
                Ok((stream, _)) => stream,
                Err(error) => {
                    tracing::warn!(%error, "accepting a connection failed");
                    tokio::time::sleep(ACCEPT_BACKOFF).await;
                    continue;
                }
            },
            () = &mut shutdown => break,
        };
        if let Err(error) = stream.set_nodelay(true) {
            tracing::debug!(%error, "TCP_NODELAY could not be set");
        }
        let service = TowerToHyperService::new(app.clone());
        let builder = builder.clone();
        let watcher = graceful.watcher();
        let header_timeout = guards.header_timeout;
        tokio::spawn(async move {
            // The first byte has a deadline too (hyper's starts with it).
            let mut first = [0_u8; 1];
            match tokio::time::timeout(header_timeout, stream.peek(&mut first)).await {
                Ok(Ok(0)) => return,
                Ok(Ok(_)) => {}
                Ok(Err(error)) => {
                    tracing::debug!(%error, "connection failed before its first request");
                    return;
                }
                Err(_) => {
                    tracing::debug!("connection sent nothing within {header_timeout:?}");
                    return;
                }
            }
            let connection = builder.serve_connection(TokioIo::new(stream), service);
            if let Err(error) = watcher.watch(connection).await {
                tracing::debug!(%error, "connection ended with an error");
            }
            drop(slot);
        });
    }
    drop(listener);
    if tokio::time::timeout(guards.drain_timeout, graceful.shutdown())
        .await
        .is_err()
    {
        tracing::warn!(
            "open connections did not finish within {:?}",
            guards.drain_timeout
        );
    }
}
