//! The web pages: `web/` at the repository root, embedded in the binary by `rust-embed`
//! (release builds carry the files; debug builds read them from disk, so page edits need no
//! rebuild). `GET /` is the chat page, `GET /admin` the admin console, `GET /assets/{*path}`
//! any file under `web/`.
//!
//! Every answer carries a strict Content-Security-Policy (scripts only from this origin, no
//! inline script, no plugins, no `<base>`, no framing), `X-Content-Type-Options: nosniff` and
//! `Referrer-Policy: no-referrer`. Files are revalidated (`Cache-Control: no-cache`) against a
//! strong `ETag` (the file's SHA-256): an unchanged file costs a 304.

use axum::extract::Path;
use axum::http::header::{
    CACHE_CONTROL, CONTENT_SECURITY_POLICY, CONTENT_TYPE, ETAG, IF_NONE_MATCH, REFERRER_POLICY,
    X_CONTENT_TYPE_OPTIONS, X_FRAME_OPTIONS,
};
use axum::http::{HeaderMap, HeaderValue, StatusCode};
use axum::response::{IntoResponse, Response};
use rust_embed::RustEmbed;

#[derive(RustEmbed)]
#[folder = "../../web/"]
struct Web;

/// The policy of every page: only this origin's scripts, styles and API; images and media
/// also from `https:` and `data:` (a model's reply may show them); nothing else.
pub const CSP: &str = "default-src 'none'; script-src 'self'; style-src 'self'; \
    img-src 'self' https: data:; media-src 'self' https: data:; connect-src 'self'; \
    font-src 'self'; manifest-src 'self'; object-src 'none'; base-uri 'none'; \
    form-action 'self'; frame-ancestors 'none'";

/// `GET /`: the chat page.
pub async fn chat(headers: HeaderMap) -> Response {
    serve_file("chat/index.html", &headers)
}

/// `GET /admin`: the admin console (a clear 404 while it is not there).
pub async fn admin(headers: HeaderMap) -> Response {
    serve_file("admin/index.html", &headers)
}

/// `GET /assets/{*path}`: a file under `web/`.
/// `/admin/` (a typed or bookmarked trailing slash): a permanent redirect to `/admin`.
pub async fn admin_slash() -> axum::response::Redirect {
    axum::response::Redirect::permanent("/admin")
}

pub async fn asset(Path(path): Path<String>, headers: HeaderMap) -> Response {
    if !is_clean(&path) {
        return not_found(&path);
    }
    serve_file(&path, &headers)
}

/// A relative path of plain segments: no `..`, `.`, empty segment, backslash or NUL.
fn is_clean(path: &str) -> bool {
    !path.is_empty()
        && !path.contains(['\\', '\0'])
        && path
            .split('/')
            .all(|segment| !segment.is_empty() && segment != "." && segment != "..")
}

/// The content type for a file name, by extension.
pub fn content_type(path: &str) -> &'static str {
    let extension = path.rsplit_once('.').map_or("", |(_, e)| e);
    match extension.to_ascii_lowercase().as_str() {
        "html" => "text/html; charset=utf-8",
        "js" | "mjs" => "text/javascript; charset=utf-8",
        "css" => "text/css; charset=utf-8",
        "json" => "application/json",
        "svg" => "image/svg+xml",
        "png" => "image/png",
        "jpg" | "jpeg" => "image/jpeg",
        "gif" => "image/gif",
        "webp" => "image/webp",
        "ico" => "image/x-icon",
        "woff2" => "font/woff2",
        "txt" | "md" => "text/plain; charset=utf-8",
        _ => "application/octet-stream",
    }
}

fn security_headers(headers: &mut HeaderMap) {
    headers.insert(CONTENT_SECURITY_POLICY, HeaderValue::from_static(CSP));
    headers.insert(X_CONTENT_TYPE_OPTIONS, HeaderValue::from_static("nosniff"));
    headers.insert(REFERRER_POLICY, HeaderValue::from_static("no-referrer"));
    headers.insert(X_FRAME_OPTIONS, HeaderValue::from_static("DENY"));
}

fn not_found(path: &str) -> Response {
    let body = if path == "admin/index.html" {
        "404: the admin console is not part of this build (web/admin/index.html is missing)\n"
            .to_owned()
    } else {
        format!("404: no web file {path:?}\n")
    };
    let mut response = (StatusCode::NOT_FOUND, body).into_response();
    response.headers_mut().insert(
        CONTENT_TYPE,
        HeaderValue::from_static("text/plain; charset=utf-8"),
    );
    response
        .headers_mut()
        .insert(CACHE_CONTROL, HeaderValue::from_static("no-store"));
    security_headers(response.headers_mut());
    response
}

fn serve_file(path: &str, request: &HeaderMap) -> Response {
    let Some(file) = Web::get(path) else {
        return not_found(path);
    };
    let etag = format!("\"{}\"", hex::encode(file.metadata.sha256_hash()));
    let unchanged = request
        .get(IF_NONE_MATCH)
        .and_then(|v| v.to_str().ok())
        .is_some_and(|v| {
            v.split(',')
                .any(|tag| tag.trim() == etag || tag.trim() == "*")
        });
    let mut response = if unchanged {
        StatusCode::NOT_MODIFIED.into_response()
    } else {
        let mut response = file.data.into_owned().into_response();
        response
            .headers_mut()
            .insert(CONTENT_TYPE, HeaderValue::from_static(content_type(path)));
        response
    };
    let headers = response.headers_mut();
    if let Ok(value) = HeaderValue::from_str(&etag) {
        headers.insert(ETAG, value);
    }
    headers.insert(CACHE_CONTROL, HeaderValue::from_static("no-cache"));
    security_headers(headers);
    response
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_plain_relative_paths_are_served() {
        for good in ["chat/app.js", "shared/dom.js", "a/b/c.css"] {
            assert!(is_clean(good), "{good}");
        }
        for bad in [
            "",
            "../Cargo.toml",
            "chat/../../x",
            "/etc/passwd",
            "chat//app.js",
            "./chat/app.js",
            "chat\\..\\x",
            "chat/\0",
        ] {
            assert!(!is_clean(bad), "{bad:?}");
        }
    }

    #[test]
    fn content_types_by_extension() {
        assert_eq!(
            content_type("chat/app.js"),
            "text/javascript; charset=utf-8"
        );
        assert_eq!(content_type("x/STYLE.CSS"), "text/css; charset=utf-8");
        assert_eq!(content_type("index.html"), "text/html; charset=utf-8");
        assert_eq!(content_type("logo.svg"), "image/svg+xml");
        assert_eq!(content_type("noext"), "application/octet-stream");
    }
}
