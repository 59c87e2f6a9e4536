//! [`TcpProxy`]: a loopback TCP relay to a real server that a test can cut and restore, to put
//! a database outage (a restart, a network cut) between Bridle and the database without
//! touching the database server other tests share.

use std::net::SocketAddr;
use std::sync::{Arc, Mutex};
use tokio::net::{TcpListener, TcpStream};
use tokio::task::JoinHandle;

/// A relay from a local port to `target`.
#[derive(Debug)]
pub struct TcpProxy {
    address: SocketAddr,
    target: SocketAddr,
    tasks: Arc<Mutex<Vec<JoinHandle<()>>>>,
    acceptor: Option<JoinHandle<()>>,
}

impl TcpProxy {
    /// Starts relaying a fresh loopback port to `target`.
    pub async fn start(target: SocketAddr) -> Self {
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let address = listener.local_addr().unwrap();
        let mut proxy = Self {
            address,
            target,
            tasks: Arc::default(),
            acceptor: None,
        };
        proxy.acceptor = Some(proxy.accept(listener));
        proxy
    }

    /// The address clients connect to.
    pub fn address(&self) -> SocketAddr {
        self.address
    }

    /// The outage: stops accepting (new connections are refused) and resets every relayed
    /// connection, as a database restart does.
    pub fn cut(&mut self) {
        if let Some(acceptor) = self.acceptor.take() {
            acceptor.abort();
        }
        for task in self.tasks.lock().unwrap().drain(..) {
            task.abort();
        }
    }

    /// The end of the outage: accepts again on the same port.
    pub async fn restore(&mut self) {
        if self.acceptor.is_some() {
            return;
        }
        // The port was just released; binding it again may need a moment.
        let listener = loop {
            match TcpListener::bind(self.address).await {
                Ok(listener) => break listener,
                Err(_) => tokio::time::sleep(std::time::Duration::from_millis(20)).await,
            }
        };
        self.acceptor = Some(self.accept(listener));
    }

    fn accept(&self, listener: TcpListener) -> JoinHandle<()> {
        let (target, tasks) = (self.target, Arc::clone(&self.tasks));
        tokio::spawn(async move {
            while let Ok((mut client, _)) = listener.accept().await {
                let relay = tokio::spawn(async move {
                    if let Ok(mut server) = TcpStream::connect(target).await {
                        let _ = tokio::io::copy_bidirectional(&mut client, &mut server).await;
                    }
                });
                let mut tasks = tasks.lock().unwrap();
                tasks.retain(|t| !t.is_finished());
                tasks.push(relay);
            }
        })
    }
}

impl Drop for TcpProxy {
    fn drop(&mut self) {
        self.cut();
    }
}
