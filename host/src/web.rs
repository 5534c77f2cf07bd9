//! The live page for operators and spectators, served from files embedded in the binary.
//!
//! The page (`web/index.html`, `web/app.js`, `web/style.css` in this crate) is plain HTML,
//! an ES module and CSS: there is no build step, nothing is fetched from another site, and
//! it works offline. It reads the websocket feed ([`crate::feed`]) at `/ws` and links to the
//! PGN routes of [`crate::http`].
//!
//! # Where it lives
//! `/` already belongs to the host's plain index, so the page is at [`PAGE_PATH`] (`/live/`);
//! `/live` redirects there. The page finds the feed and the PGN with URLs relative to
//! itself (`../ws`, `../pgn/...`), so it also works when mounted elsewhere one level deep.
//!
//! # Caching
//! Every response carries a strong `ETag` computed at compile time from the file's bytes and
//! `Cache-Control: no-cache`: browsers keep a copy but ask each time, and get a bodyless
//! `304 Not Modified` while the binary is the same. A new binary serves new files at once.

use axum::Router;
use axum::http::{HeaderMap, HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Redirect, Response};
use axum::routing::get;

/// The path of the page.
pub const PAGE_PATH: &str = "/live/";

/// The page's content security policy: its own scripts, styles and feed only; no inline
/// script. Framing is allowed on purpose, so broadcasters can embed the page.
pub const CONTENT_SECURITY_POLICY: &str = "default-src 'none'; script-src 'self'; style-src 'self'; \
     img-src 'self' data:; connect-src 'self'; base-uri 'none'; form-action 'none'";

/// One embedded file and how to serve it.
#[derive(Clone, Copy, Debug)]
pub struct Asset {
    /// The file's bytes.
    pub body: &'static [u8],
    /// Its `Content-Type`.
    pub content_type: &'static str,
    /// A hash of `body`, the value of the `ETag` (computed at compile time).
    pub hash: u64,
    /// Whether it is the HTML page (which gets the content security policy).
    pub html: bool,
}

impl Asset {
    const fn new(body: &'static [u8], content_type: &'static str, html: bool) -> Asset {
        Asset { body, content_type, hash: fnv1a(body), html }
    }

    /// The `ETag` header value: the hash in quotes (a strong validator).
    pub fn etag(&self) -> String {
        format!("\"{:016x}\"", self.hash)
    }
}

/// FNV-1a, 64 bits: enough to tell two versions of a file apart.
const fn fnv1a(bytes: &[u8]) -> u64 {
    let mut hash: u64 = 0xcbf2_9ce4_8422_2325;
    let mut i = 0;
    while i < bytes.len() {
        hash ^= bytes[i] as u64;
        hash = hash.wrapping_mul(0x0000_0100_0000_01b3);
        i += 1;
    }
    hash
}

/// `index.html`.
pub static INDEX_HTML: Asset =
    Asset::new(include_bytes!("../web/index.html"), "text/html; charset=utf-8", true);
/// `app.js`, an ES module.
pub static APP_JS: Asset =
    Asset::new(include_bytes!("../web/app.js"), "text/javascript; charset=utf-8", false);
/// `style.css`.
pub static STYLE_CSS: Asset =
    Asset::new(include_bytes!("../web/style.css"), "text/css; charset=utf-8", false);

/// Whether an `If-None-Match` header value names `etag` (or is `*`).
fn matches_etag(value: &str, etag: &str) -> bool {
    value
        .split(',')
        .map(str::trim)
        .any(|tag| tag == "*" || tag == etag || tag.strip_prefix("W/") == Some(etag))
}

/// The response for `asset`: `304` when the request's `If-None-Match` names its `ETag`,
/// else `200` with the body; both with the caching and security headers.
pub fn respond(asset: &Asset, request: &HeaderMap) -> Response {
    let etag = asset.etag();
    let fresh = request
        .get_all(header::IF_NONE_MATCH)
        .iter()
        .filter_map(|v| v.to_str().ok())
        .any(|v| matches_etag(v, &etag));
    let mut response =
        if fresh { StatusCode::NOT_MODIFIED.into_response() } else { asset.body.into_response() };
    let headers = response.headers_mut();
    headers.insert(header::CONTENT_TYPE, HeaderValue::from_static(asset.content_type));
    headers.insert(header::CACHE_CONTROL, HeaderValue::from_static("no-cache"));
    headers.insert(header::X_CONTENT_TYPE_OPTIONS, HeaderValue::from_static("nosniff"));
    if let Ok(v) = HeaderValue::from_str(&etag) {
        headers.insert(header::ETAG, v);
    }
    if asset.html {
        headers.insert(header::CONTENT_SECURITY_POLICY, HeaderValue::from_static(CONTENT_SECURITY_POLICY));
        headers.insert(header::REFERRER_POLICY, HeaderValue::from_static("same-origin"));
    }
    if fresh {
        headers.remove(header::CONTENT_LENGTH);
    }
    response
}

/// The routes of the page: `/live` (redirect), `/live/` (the page), `/live/app.js` and
/// `/live/style.css`. Stateless, so it merges into a router of any state type.
pub fn router<S: Clone + Send + Sync + 'static>() -> Router<S> {
    Router::new()
        .route("/live", get(|| async { Redirect::permanent(PAGE_PATH) }))
        .route(PAGE_PATH, get(|h: HeaderMap| async move { respond(&INDEX_HTML, &h) }))
        .route("/live/index.html", get(|h: HeaderMap| async move { respond(&INDEX_HTML, &h) }))
        .route("/live/app.js", get(|h: HeaderMap| async move { respond(&APP_JS, &h) }))
        .route("/live/style.css", get(|h: HeaderMap| async move { respond(&STYLE_CSS, &h) }))
}

#[cfg(test)]
mod tests {
    use super::*;
    use tokio::io::{AsyncReadExt, AsyncWriteExt};

    #[test]
    fn assets_are_embedded_and_reference_each_other() {
        let html = std::str::from_utf8(INDEX_HTML.body).unwrap();
        assert!(html.contains(r#"src="app.js""#) && html.contains(r#"href="style.css""#));
        assert!(std::str::from_utf8(APP_JS.body).unwrap().contains("new WebSocket("));
        assert!(!STYLE_CSS.body.is_empty());
        assert_ne!(APP_JS.hash, STYLE_CSS.hash);
    }

    #[test]
    fn etag_match_answers_not_modified() {
        let mut h = HeaderMap::new();
        let r = respond(&APP_JS, &h);
        assert_eq!(r.status(), StatusCode::OK);
        assert_eq!(r.headers()[header::CONTENT_TYPE], "text/javascript; charset=utf-8");
        assert_eq!(r.headers()[header::CACHE_CONTROL], "no-cache");
        assert!(r.headers().get(header::CONTENT_SECURITY_POLICY).is_none());
        let etag = r.headers()[header::ETAG].clone();
        h.insert(
            header::IF_NONE_MATCH,
            HeaderValue::from_str(&format!("\"x\", W/{}", etag.to_str().unwrap())).unwrap(),
        );
        assert_eq!(respond(&APP_JS, &h).status(), StatusCode::NOT_MODIFIED);
        h.insert(header::IF_NONE_MATCH, HeaderValue::from_static("\"0000000000000000\""));
        assert_eq!(respond(&APP_JS, &h).status(), StatusCode::OK);
        let page = respond(&INDEX_HTML, &HeaderMap::new());
        assert!(
            page.headers()[header::CONTENT_SECURITY_POLICY].to_str().unwrap().contains("script-src 'self'")
        );
    }

    async fn get_raw(addr: std::net::SocketAddr, path: &str) -> String {
        let mut s = tokio::net::TcpStream::connect(addr).await.unwrap();
        let req = format!("GET {path} HTTP/1.1\r\nHost: {addr}\r\nConnection: close\r\n\r\n");
        s.write_all(req.as_bytes()).await.unwrap();
        let mut out = String::new();
        s.read_to_string(&mut out).await.unwrap();
        out
    }

    #[tokio::test]
    async fn routes_serve_the_page_and_assets() {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        let app: Router = router();
        let server = tokio::spawn(async move { axum::serve(listener, app).await });
        let page = get_raw(addr, "/live/").await;
        assert!(page.starts_with("HTTP/1.1 200"), "{page}");
        assert!(page.to_ascii_lowercase().contains("content-type: text/html; charset=utf-8"));
        assert!(page.contains("<!doctype html>"));
        let css = get_raw(addr, "/live/style.css").await;
        assert!(css.to_ascii_lowercase().contains("content-type: text/css; charset=utf-8"), "{css}");
        let redirect = get_raw(addr, "/live").await;
        assert!(
            redirect.starts_with("HTTP/1.1 308")
                && redirect.to_ascii_lowercase().contains("location: /live/")
        );
        assert!(get_raw(addr, "/live/nope.js").await.starts_with("HTTP/1.1 404"));
        server.abort();
    }
}
