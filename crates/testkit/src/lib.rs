//! Test support shared by Bridle's test suites (never shipped): a PostgreSQL database of its
//! own per test, on the server the environment names (`BRIDLE_TEST_POSTGRES_URL`, default the
//! local `postgres://postgres@127.0.0.1:5432/test`).

#![allow(clippy::unwrap_used, clippy::expect_used)]

mod proxy;

pub use proxy::TcpProxy;
use sqlx::{AssertSqlSafe, Connection, Executor, PgConnection};
use std::net::SocketAddr;

/// The administrative database URL tests connect to first.
pub const DEFAULT_POSTGRES_URL: &str = "postgres://postgres@127.0.0.1:5432/test";

/// The PostgreSQL server tests use (`BRIDLE_TEST_POSTGRES_URL` or [`DEFAULT_POSTGRES_URL`]).
pub fn postgres_url() -> String {
    std::env::var("BRIDLE_TEST_POSTGRES_URL").unwrap_or_else(|_| DEFAULT_POSTGRES_URL.to_owned())
}

/// A PostgreSQL database of its own for one test, dropped (`WITH (FORCE)`) when this is dropped.
#[derive(Debug)]
pub struct TestDatabase {
    admin_url: String,
    name: String,
    /// The URL of the new database.
    pub url: String,
}

impl TestDatabase {
    /// Creates a database with a fresh name.
    pub async fn create() -> Self {
        let admin_url = postgres_url();
        let name = format!("bridle_test_{}", uuid::Uuid::now_v7().simple());
        let mut admin = PgConnection::connect(&admin_url).await.unwrap();
        // A database name cannot be a bound parameter; this one is generated above.
        admin
            .execute(AssertSqlSafe(format!("CREATE DATABASE {name}")))
            .await
            .unwrap();
        admin.close().await.unwrap();
        let url = with_database(&admin_url, &name);
        Self {
            admin_url,
            name,
            url,
        }
    }
}

impl TestDatabase {
    /// The transaction that wrote each message of the turn `turn_id` (the row's `xmin`), in id
    /// order: rows written by one transaction share it, rows of two transactions never do (as
    /// long as nothing updated them since).
    pub async fn message_writers(&self, turn_id: &str) -> Vec<String> {
        let mut db = PgConnection::connect(&self.url).await.unwrap();
        let writers =
            sqlx::query_scalar("SELECT xmin::text FROM messages WHERE turn_id = $1 ORDER BY id")
                .bind(turn_id)
                .fetch_all(&mut db)
                .await
                .unwrap();
        db.close().await.unwrap();
        writers
    }
}

impl Drop for TestDatabase {
    fn drop(&mut self) {
        // `Drop` cannot await, and may run while the test's runtime unwinds: drop the database
        // from a thread with a runtime of its own.
        let admin_url = self.admin_url.clone();
        let sql = format!("DROP DATABASE IF EXISTS {} WITH (FORCE)", self.name);
        let dropped = std::thread::spawn(move || -> Result<(), String> {
            let runtime = tokio::runtime::Builder::new_current_thread()
                .enable_all()
                .build()
                .map_err(|e| e.to_string())?;
            runtime
                .block_on(async {
                    let mut admin = PgConnection::connect(&admin_url).await?;
                    admin.execute(AssertSqlSafe(sql)).await?;
                    admin.close().await
                })
                .map_err(|e| e.to_string())
        })
        .join()
        .unwrap_or_else(|_| Err("the cleanup thread panicked".to_owned()));
        if let Err(error) = dropped {
            if std::thread::panicking() {
                eprintln!("could not drop test database {}: {error}", self.name);
            } else {
                panic!("could not drop test database {}: {error}", self.name);
            }
        }
    }
}

/// `url` with its database replaced by `database` (query parameters kept).
/// `url` with its host and port replaced by `address` (user, database and query kept).
pub fn with_address(url: &str, address: SocketAddr) -> String {
    let authority = url.find("://").map_or(0, |i| i + 3);
    let rest = &url[authority..];
    let end = rest.find(['/', '?']).unwrap_or(rest.len());
    let host_start = rest[..end].rfind('@').map_or(0, |i| i + 1);
    format!(
        "{}{}{address}{}",
        &url[..authority],
        &rest[..host_start],
        &rest[end..]
    )
}

/// The `host:port` a PostgreSQL URL names (port 5432 when it names none).
pub fn server_address(url: &str) -> SocketAddr {
    use std::net::ToSocketAddrs;
    let authority = url.find("://").map_or(0, |i| i + 3);
    let rest = &url[authority..];
    let end = rest.find(['/', '?']).unwrap_or(rest.len());
    let host = &rest[..end];
    let host = host.rfind('@').map_or(host, |i| &host[i + 1..]);
    let host = if host.contains(':') {
        host.to_owned()
    } else {
        format!("{host}:5432")
    };
    host.to_socket_addrs().unwrap().next().unwrap()
}

fn with_database(url: &str, database: &str) -> String {
    let (base, query) = url
        .split_once('?')
        .map_or((url, None), |(base, query)| (base, Some(query)));
    let authority = base.find("://").map_or(0, |i| i + 3);
    let server = base[authority..]
        .find('/')
        .map_or(base, |i| &base[..authority + i]);
    match query {
        Some(query) => format!("{server}/{database}?{query}"),
        None => format!("{server}/{database}"),
    }
}

#[cfg(test)]
mod tests {
    use super::{SocketAddr, server_address, with_address, with_database};

    #[test]
    fn with_address_replaces_only_host_and_port() {
        let to: SocketAddr = "127.0.0.1:6000".parse().unwrap();
        assert_eq!(
            with_address("postgres://postgres@127.0.0.1:5432/x?a=b", to),
            "postgres://postgres@127.0.0.1:6000/x?a=b"
        );
        assert_eq!(
            with_address("postgres://h/x", to),
            "postgres://127.0.0.1:6000/x"
        );
        assert_eq!(
            server_address("postgres://u:p@127.0.0.1/x"),
            "127.0.0.1:5432".parse::<SocketAddr>().unwrap()
        );
    }

    #[test]
    fn with_database_replaces_only_the_database() {
        for (url, expected) in [
            (
                "postgres://postgres@127.0.0.1:5432/test",
                "postgres://postgres@127.0.0.1:5432/x",
            ),
            (
                "postgres://u:p@h/test?sslmode=disable",
                "postgres://u:p@h/x?sslmode=disable",
            ),
            ("postgresql://h:5432", "postgresql://h:5432/x"),
        ] {
            assert_eq!(with_database(url, "x"), expected);
        }
    }
}
