//! [`Pending`]: a write under way that the store may still hold back, so that the next write
//! can take it along into the same transaction ([`crate::TurnWrites::record_after`]).

use crate::StoreError;
use futures::future::BoxFuture;
use std::any::Any;
use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};

/// A write under way ([`crate::TurnWrites::open_turn`]): resolves to the stored row's id once it
/// is committed. Dropping it does not undo or stop the write: one the store still holds back is
/// sent to the database then.
pub struct Pending<T> {
    future: BoxFuture<'static, Result<T, StoreError>>,
    /// What the store that made it holds back for the next write, if anything.
    held: Option<Arc<dyn Any + Send + Sync>>,
}

impl<T> Pending<T> {
    /// A write that `future` completes.
    pub fn new(future: impl Future<Output = Result<T, StoreError>> + Send + 'static) -> Self {
        Self {
            future: Box::pin(future),
            held: None,
        }
    }

    /// A write that `future` completes unless the store takes `held` back first (then it is the
    /// taker's to write, and `future` is not awaited).
    pub(crate) fn holding(
        future: impl Future<Output = Result<T, StoreError>> + Send + 'static,
        held: Arc<dyn Any + Send + Sync>,
    ) -> Self {
        Self {
            future: Box::pin(future),
            held: Some(held),
        }
    }

    /// The same write with its future wrapped by `wrap` (to run it in a tracing span, say);
    /// what the store holds back stays with it, so the next write can still take it along.
    pub fn wrapped<F>(
        self,
        wrap: impl FnOnce(BoxFuture<'static, Result<T, StoreError>>) -> F,
    ) -> Self
    where
        F: Future<Output = Result<T, StoreError>> + Send + 'static,
    {
        Self {
            future: Box::pin(wrap(self.future)),
            held: self.held,
        }
    }

    /// What the store holds back, when it is an `H`.
    pub(crate) fn held<H: Any + Send + Sync>(&self) -> Option<Arc<H>> {
        self.held.clone()?.downcast().ok()
    }
}

impl<T> Future for Pending<T> {
    type Output = Result<T, StoreError>;

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        self.get_mut().future.as_mut().poll(cx)
    }
}

impl<T> std::fmt::Debug for Pending<T> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Pending")
            .field("held", &self.held.is_some())
            .finish_non_exhaustive()
    }
}
