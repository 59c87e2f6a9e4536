//! Closing a connection without any HTTP response, for [`Fault::Reset`](crate::Fault::Reset).
//!
//! An axum handler cannot drop its connection, and a response whose body fails is too late:
//! the status line and headers are out by then. So the mock listens through
//! [`ResettableListener`], whose connections are [`Resettable`]: each hands the handler a
//! [`ResetHandle`] (as its `ConnectInfo`). Once the handler has pulled it, the connection
//! writes nothing more — hyper's first write of the response fails, so not one byte of it
//! reaches the client — reads end, and the socket is closed with a TCP reset (`SO_LINGER` 0)
//! when hyper drops it.

use axum::extract::connect_info::Connected;
use axum::serve::{IncomingStream, Listener};
use std::io;
use std::net::SocketAddr;
use std::pin::Pin;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::task::{Context, Poll};
use std::time::Duration;
use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};
use tokio::net::{TcpListener, TcpStream};

/// Pause after a failed accept (too many open files, …) before trying again.
const ACCEPT_RETRY: Duration = Duration::from_millis(50);

/// A TCP listener whose connections can be reset by the handler serving them.
#[derive(Debug)]
pub(crate) struct ResettableListener(pub(crate) TcpListener);

impl Listener for ResettableListener {
    type Io = Resettable;
    type Addr = SocketAddr;

    async fn accept(&mut self) -> (Self::Io, Self::Addr) {
        loop {
            match self.0.accept().await {
                Ok((stream, addr)) => {
                    let io = Resettable {
                        stream,
                        cut: Arc::new(AtomicBool::new(false)),
                    };
                    return (io, addr);
                }
                Err(e) => {
                    tracing::warn!(error = %e, "mock: accepting a connection failed");
                    tokio::time::sleep(ACCEPT_RETRY).await;
                }
            }
        }
    }

    fn local_addr(&self) -> io::Result<Self::Addr> {
        self.0.local_addr()
    }
}

/// One accepted connection; dead once its [`ResetHandle`] was pulled.
#[derive(Debug)]
pub(crate) struct Resettable {
    stream: TcpStream,
    cut: Arc<AtomicBool>,
}

impl Resettable {
    fn is_cut(&self) -> bool {
        self.cut.load(Ordering::SeqCst)
    }
}

fn reset_error() -> io::Error {
    io::Error::new(
        io::ErrorKind::ConnectionReset,
        "mock: the connection is reset (reset fault)",
    )
}

impl AsyncRead for Resettable {
    fn poll_read(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        let this = self.get_mut();
        if this.is_cut() {
            return Poll::Ready(Ok(()));
        }
        Pin::new(&mut this.stream).poll_read(cx, buf)
    }
}

impl AsyncWrite for Resettable {
    fn poll_write(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<io::Result<usize>> {
        let this = self.get_mut();
        if this.is_cut() {
            return Poll::Ready(Err(reset_error()));
        }
        Pin::new(&mut this.stream).poll_write(cx, buf)
    }

    fn poll_flush(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        let this = self.get_mut();
        if this.is_cut() {
            return Poll::Ready(Err(reset_error()));
        }
        Pin::new(&mut this.stream).poll_flush(cx)
    }

    fn poll_shutdown(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        let this = self.get_mut();
        if this.is_cut() {
            return Poll::Ready(Err(reset_error()));
        }
        Pin::new(&mut this.stream).poll_shutdown(cx)
    }
}

impl Drop for Resettable {
    fn drop(&mut self) {
        if self.is_cut() {
            // Linger 0: the close sends a TCP reset at once. (Deprecated in tokio because a
            // non-zero linger blocks the thread on close; zero never does.)
            #[allow(deprecated)]
            let _ = self.stream.set_linger(Some(Duration::ZERO));
        }
    }
}

/// Given to the handler of each request (`ConnectInfo`): [`ResetHandle::reset`] kills the
/// connection the request came on.
#[derive(Debug, Clone)]
pub(crate) struct ResetHandle(Arc<AtomicBool>);

impl ResetHandle {
    /// From now on the connection writes nothing; it closes when hyper gives up on it.
    pub(crate) fn reset(&self) {
        self.0.store(true, Ordering::SeqCst);
    }
}

impl Connected<IncomingStream<'_, ResettableListener>> for ResetHandle {
    fn connect_info(stream: IncomingStream<'_, ResettableListener>) -> Self {
        Self(Arc::clone(&stream.io().cut))
    }
}
