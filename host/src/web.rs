//! The pages, served from files embedded in the binary: the spectators' live page and the
//! operator's console.
//!
//! Both are plain HTML, ES modules and CSS (`web/` in this crate): there is no build step,
//! nothing is fetched from another site, and they work offline. They share `common.js`
//! (the feed client and the board drawing) and `style.css`.
//! - The live page (`index.html`, `app.js`), at [`PAGE_PATH`]: what spectators should see.
//!   It reads the websocket feed (`feed`) and the read routes of the HTTP layer
//!   (`/api/event`, `/api/rounds/N`, `/api/games/N/M`, the PGN); it shows no serial number,
//!   no path and no operator alert.
//! - The console (`console.html`, `console.js`, `console.css`), at [`CONSOLE_PATH`]: the
//!   operator's. It asks for the admin token, keeps it in the browser tab's session storage
//!   (never in a URL), and does everything through the admin API, showing its answers.
//!
//! # Where they live
//! `/` belongs to the host's plain index, which links to both. `/live` and `/console`
//! redirect to their folders. The pages find the feed and the API with URLs relative to
//! themselves (`../ws`, `../api/...`), so they also work when mounted elsewhere one level
//! deep.
//!
//! # Caching
//! Every response carries a strong `ETag` computed at compile time from the file's bytes and
//! `Cache-Control: no-cache`: browsers keep a copy but ask each time, and get a bodyless
//! `304 Not Modified` while the binary is the same. A new binary serves new files at once.
//!
//! Kept by hand rather than with tower-http's `ServeDir` or an embedding crate: the files are
//! a handful of `include_bytes!` constants (the relay is one binary, nothing to install
//! beside it), and the validator is a hash computed at compile time; `ServeDir` serves from
//! disk and an embedding crate would add a proc-macro build for what is twenty lines here.

use axum::Router;
use axum::http::{HeaderMap, HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Redirect, Response};
use axum::routing::get;

/// The path of the spectators' page.
pub const PAGE_PATH: &str = "/live/";
/// The path of the operator's console.
pub const CONSOLE_PATH: &str = "/console/";

/// The page's content security policy: its own scripts, styles and feed only; no inline
/// script. Framing is allowed on purpose, so broadcasters can embed the page.
pub const CONTENT_SECURITY_POLICY: &str = "default-src 'none'; script-src 'self'; style-src 'self'; \
     img-src 'self' data:; connect-src 'self'; base-uri 'none'; form-action 'none'";

/// The console's content security policy: the page's, and no framing at all, so no other
/// site can frame the operator's console under its own page (clickjacking).
pub const CONSOLE_CONTENT_SECURITY_POLICY: &str = "default-src 'none'; script-src 'self'; style-src 'self'; \
     img-src 'self' data:; connect-src 'self'; base-uri 'none'; form-action 'none'; frame-ancestors 'none'";

/// One embedded file and how to serve it.
#[derive(Clone, Copy, Debug)]
pub struct Asset {
    /// The file's bytes.
    pub body: &'static [u8],
    /// Its `Content-Type`.
    pub content_type: &'static str,
    /// A hash of `body`, the value of the `ETag` (computed at compile time).
    pub hash: u64,
    /// Whether it is an HTML page (which gets the content security policy).
    pub html: bool,
    /// Whether another site may frame it (the spectators' page, not the console).
    pub frameable: bool,
}

impl Asset {
    const fn new(body: &'static [u8], content_type: &'static str, html: bool) -> Asset {
        Asset { body, content_type, hash: fnv1a(body), html, frameable: true }
    }

    /// The operator's page: never framed.
    const fn unframed(self) -> Asset {
        Asset { frameable: false, ..self }
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
/// `style.css`, shared by both pages.
pub static STYLE_CSS: Asset =
    Asset::new(include_bytes!("../web/style.css"), "text/css; charset=utf-8", false);
/// `common.js`, the feed client and board drawing both pages use.
pub static COMMON_JS: Asset =
    Asset::new(include_bytes!("../web/common.js"), "text/javascript; charset=utf-8", false);
/// `console.html`, the operator's console.
pub static CONSOLE_HTML: Asset =
    Asset::new(include_bytes!("../web/console.html"), "text/html; charset=utf-8", true).unframed();
/// `console.js`.
pub static CONSOLE_JS: Asset =
    Asset::new(include_bytes!("../web/console.js"), "text/javascript; charset=utf-8", false);
/// `console.css`.
pub static CONSOLE_CSS: Asset =
    Asset::new(include_bytes!("../web/console.css"), "text/css; charset=utf-8", false);

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
        let policy = if asset.frameable { CONTENT_SECURITY_POLICY } else { CONSOLE_CONTENT_SECURITY_POLICY };
        headers.insert(header::CONTENT_SECURITY_POLICY, HeaderValue::from_static(policy));
        headers.insert(header::REFERRER_POLICY, HeaderValue::from_static("same-origin"));
    }
    if !asset.frameable {
        headers.insert(header::X_FRAME_OPTIONS, HeaderValue::from_static("DENY"));
    }
    if fresh {
        headers.remove(header::CONTENT_LENGTH);
    }
    response
}

/// Every file served, by path.
pub static ROUTES: [(&str, &Asset); 11] = [
    ("/live/", &INDEX_HTML),
    ("/live/index.html", &INDEX_HTML),
    ("/live/app.js", &APP_JS),
    ("/live/common.js", &COMMON_JS),
    ("/live/style.css", &STYLE_CSS),
    ("/console/", &CONSOLE_HTML),
    ("/console/index.html", &CONSOLE_HTML),
    ("/console/console.js", &CONSOLE_JS),
    ("/console/common.js", &COMMON_JS),
    ("/console/style.css", &STYLE_CSS),
    ("/console/console.css", &CONSOLE_CSS),
];

/// The routes of the pages: `/live` and `/console` (redirects) and the files of
/// [`ROUTES`]. Stateless, so it merges into a router of any state type.
pub fn router<S: Clone + Send + Sync + 'static>() -> Router<S> {
    let mut r = Router::new()
        .route("/live", get(|| async { Redirect::permanent(PAGE_PATH) }))
        .route("/console", get(|| async { Redirect::permanent(CONSOLE_PATH) }));
    for (path, asset) in ROUTES {
        r = r.route(path, get(move |h: HeaderMap| async move { respond(asset, &h) }));
    }
    r
}

#[cfg(test)]
mod tests {
    use super::*;
    use tokio::io::{AsyncReadExt, AsyncWriteExt};

    #[test]
    fn assets_are_embedded_and_reference_each_other() {
        let html = std::str::from_utf8(INDEX_HTML.body).unwrap();
        assert!(html.contains(r#"src="app.js""#) && html.contains(r#"href="style.css""#));
        let console = std::str::from_utf8(CONSOLE_HTML.body).unwrap();
        assert!(console.contains(r#"src="console.js""#) && console.contains(r#"href="console.css""#));
        assert!(std::str::from_utf8(COMMON_JS.body).unwrap().contains("new WebSocket("));
        for js in [&APP_JS, &CONSOLE_JS] {
            assert!(std::str::from_utf8(js.body).unwrap().contains("from './common.js'"));
        }
        assert!(!STYLE_CSS.body.is_empty());
        assert_ne!(APP_JS.hash, STYLE_CSS.hash);
    }

    #[test]
    fn the_console_keeps_the_token_out_of_urls_and_the_live_page_has_no_operator_data() {
        let console = std::str::from_utf8(CONSOLE_JS.body).unwrap();
        assert!(console.contains("sessionStorage"));
        assert!(!console.contains("localStorage"), "the token stays in the tab's session");
        let live = std::str::from_utf8(APP_JS.body).unwrap();
        for operator_only in ["serial", ".port", "alerts", "api/admin"] {
            assert!(!live.contains(operator_only), "{operator_only} in the live page's script");
        }
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
        let console = get_raw(addr, "/console/").await;
        assert!(
            console.starts_with("HTTP/1.1 200") && console.contains("content-security-policy"),
            "{console}"
        );
        // The console is never framed; the spectators' page may be embedded.
        for path in ["/console/", "/console/index.html"] {
            let console = get_raw(addr, path).await.to_ascii_lowercase();
            assert!(console.contains("frame-ancestors 'none'"), "{console}");
            assert!(console.contains("x-frame-options: deny"), "{console}");
        }
        assert!(!page.contains("frame-ancestors") && !page.to_ascii_lowercase().contains("x-frame-options"));
        for (path, _) in ROUTES {
            assert!(get_raw(addr, path).await.starts_with("HTTP/1.1 200"), "{path}");
        }
        let redirect = get_raw(addr, "/console").await;
        assert!(redirect.to_ascii_lowercase().contains("location: /console/"), "{redirect}");
        server.abort();
    }
}
