//! The embedded web pages: `/`, `/admin` and `/assets/{*path}` — content types, the security
//! headers of every answer, revalidation by ETag, and paths outside `web/` refused.

use crate::api::Harness;
use axum::body::{Body, Bytes};
use axum::http::{HeaderMap, Request, StatusCode, header};
use http_body_util::BodyExt;
use std::path::{Path, PathBuf};
use tower::ServiceExt;

async fn get(
    h: &Harness,
    path: &str,
    extra: &[(header::HeaderName, &str)],
) -> (StatusCode, HeaderMap, Bytes) {
    let mut request = Request::builder().method("GET").uri(path);
    for (name, value) in extra {
        request = request.header(name, *value);
    }
    let response = bridle_server::app(h.state.clone())
        .oneshot(request.body(Body::empty()).unwrap())
        .await
        .unwrap();
    let status = response.status();
    let headers = response.headers().clone();
    let body = response.into_body().collect().await.unwrap().to_bytes();
    (status, headers, body)
}

fn header_of<'a>(headers: &'a HeaderMap, name: &header::HeaderName) -> &'a str {
    headers
        .get(name)
        .and_then(|v| v.to_str().ok())
        .unwrap_or("")
}

fn assert_secured(headers: &HeaderMap, what: &str) {
    let csp = header_of(headers, &header::CONTENT_SECURITY_POLICY);
    for directive in [
        "default-src 'none'",
        "script-src 'self'",
        "object-src 'none'",
        "base-uri 'none'",
        "frame-ancestors 'none'",
        "img-src 'self' https: data:",
        "media-src 'self' https: data:",
    ] {
        assert!(
            csp.contains(directive),
            "{what}: CSP lacks {directive:?}: {csp}"
        );
    }
    assert!(
        !csp.contains("unsafe-inline") && !csp.contains("unsafe-eval"),
        "{what}: {csp}"
    );
    assert_eq!(
        header_of(headers, &header::X_CONTENT_TYPE_OPTIONS),
        "nosniff",
        "{what}"
    );
    assert_eq!(
        header_of(headers, &header::REFERRER_POLICY),
        "no-referrer",
        "{what}"
    );
}

fn web_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../web")
}

#[tokio::test]
async fn the_chat_page_is_served_at_the_root_with_a_strict_policy() {
    let h = Harness::new().await;
    let (status, headers, body) = get(&h, "/", &[]).await;
    assert_eq!(status, StatusCode::OK);
    assert_eq!(
        header_of(&headers, &header::CONTENT_TYPE),
        "text/html; charset=utf-8"
    );
    assert_secured(&headers, "/");
    let html = String::from_utf8(body.to_vec()).unwrap();
    assert!(
        html.contains(r#"<script type="module" src="/assets/chat/app.js"></script>"#),
        "{html}"
    );
    assert!(html.contains(r#"id="signin""#));
}

#[tokio::test]
async fn assets_have_their_content_type_and_are_revalidated_by_etag() {
    let h = Harness::new().await;
    for (path, content_type) in [
        ("/assets/chat/app.js", "text/javascript; charset=utf-8"),
        ("/assets/shared/api.js", "text/javascript; charset=utf-8"),
        ("/assets/shared/base.css", "text/css; charset=utf-8"),
        ("/assets/chat/index.html", "text/html; charset=utf-8"),
    ] {
        let (status, headers, body) = get(&h, path, &[]).await;
        assert_eq!(status, StatusCode::OK, "{path}");
        assert_eq!(
            header_of(&headers, &header::CONTENT_TYPE),
            content_type,
            "{path}"
        );
        assert_eq!(
            header_of(&headers, &header::CACHE_CONTROL),
            "no-cache",
            "{path}"
        );
        assert_secured(&headers, path);
        let on_disk = std::fs::read(web_dir().join(path.trim_start_matches("/assets/"))).unwrap();
        assert_eq!(
            body.as_ref(),
            on_disk.as_slice(),
            "{path} is the file under web/"
        );

        let etag = header_of(&headers, &header::ETAG).to_owned();
        assert!(etag.starts_with('"') && etag.len() == 66, "{path}: {etag}");
        let (status, again, body) = get(&h, path, &[(header::IF_NONE_MATCH, &etag)]).await;
        assert_eq!(status, StatusCode::NOT_MODIFIED, "{path}");
        assert!(body.is_empty());
        assert_eq!(header_of(&again, &header::ETAG), etag);
        let (status, _, _) = get(&h, path, &[(header::IF_NONE_MATCH, "\"stale\"")]).await;
        assert_eq!(
            status,
            StatusCode::OK,
            "{path}: a different tag gets the file"
        );
    }
}

#[tokio::test]
async fn paths_outside_web_and_missing_files_are_404() {
    let h = Harness::new().await;
    for path in [
        "/assets/chat/missing.js",
        "/assets/../Cargo.toml",
        "/assets/%2e%2e/Cargo.toml",
        "/assets/chat/%2e%2e/%2e%2e/Cargo.toml",
        "/assets/chat%2f..%2f..%2fCargo.toml",
        "/assets/%2fetc%2fpasswd",
        "/assets/chat//app.js",
    ] {
        let (status, headers, body) = get(&h, path, &[]).await;
        assert_eq!(status, StatusCode::NOT_FOUND, "{path}");
        assert_secured(&headers, path);
        let text = String::from_utf8_lossy(&body);
        assert!(
            !text.contains("[workspace]") && !text.contains("root:"),
            "{path}: {text}"
        );
    }
    let (_, headers, body) = get(&h, "/assets/chat/missing.js", &[]).await;
    assert_eq!(
        header_of(&headers, &header::CONTENT_TYPE),
        "text/plain; charset=utf-8"
    );
    assert!(String::from_utf8_lossy(&body).contains("no web file"));
}

#[tokio::test]
async fn the_admin_page_is_served_or_says_clearly_that_it_is_missing() {
    let h = Harness::new().await;
    let (status, headers, body) = get(&h, "/admin", &[]).await;
    assert_secured(&headers, "/admin");
    let text = String::from_utf8_lossy(&body);
    if web_dir().join("admin/index.html").exists() {
        assert_eq!(status, StatusCode::OK);
        assert_eq!(
            header_of(&headers, &header::CONTENT_TYPE),
            "text/html; charset=utf-8"
        );
    } else {
        assert_eq!(status, StatusCode::NOT_FOUND);
        assert!(text.contains("admin console"), "{text}");
    }
}

#[tokio::test]
async fn pages_need_no_key_but_the_api_still_does() {
    let h = Harness::new().await;
    let (status, _, _) = get(&h, "/assets/shared/dom.js", &[]).await;
    assert_eq!(status, StatusCode::OK);
    let (status, _, _) = get(&h, "/v1/conversations", &[]).await;
    assert_eq!(status, StatusCode::UNAUTHORIZED);
}

/// Every HTML file under web/ loads its scripts from files: no inline script, no event-handler
/// attribute, no inline style (the policy would block them, so the page would break).
#[test]
fn no_html_page_relies_on_inline_script_or_style() {
    fn walk(dir: &Path, out: &mut Vec<PathBuf>) {
        for entry in std::fs::read_dir(dir).unwrap() {
            let path = entry.unwrap().path();
            if path.is_dir() {
                walk(&path, out);
            } else if path.extension().is_some_and(|e| e == "html") {
                out.push(path);
            }
        }
    }
    let mut pages = Vec::new();
    walk(&web_dir(), &mut pages);
    assert!(!pages.is_empty());
    for page in pages {
        let html = std::fs::read_to_string(&page).unwrap().to_ascii_lowercase();
        for (i, _) in html.match_indices("<script") {
            let tag = &html[i..i + html[i..].find('>').unwrap()];
            assert!(
                tag.contains(" src="),
                "{}: inline <script>: {tag}",
                page.display()
            );
        }
        for attribute in [
            " onclick=",
            " onload=",
            " onerror=",
            " onsubmit=",
            " style=",
            "javascript:",
        ] {
            assert!(!html.contains(attribute), "{}: {attribute}", page.display());
        }
        assert!(
            !html.contains("<style"),
            "{}: inline <style>",
            page.display()
        );
    }
}
