//! The HTTP side of the push: one request on its own connection, and Lichess's answer.
//!
//! One request a second to one host needs no pool: each push opens a connection (TLS by
//! rustls with Mozilla's roots compiled in, so no system store is needed), sends one
//! HTTP/1.1 request through hyper's client connection and closes it.

use std::collections::BTreeMap;
use std::sync::Arc;

use futures_util::future::BoxFuture;

use http_body_util::{BodyExt, Full, Limited};
use hyper::body::Bytes;
use tokio::io::{AsyncRead, AsyncWrite};

use super::settings::LichessSettings;

/// A byte stream a request goes on.
pub trait Conn: AsyncRead + AsyncWrite + Unpin + Send + 'static {}
impl<T: AsyncRead + AsyncWrite + Unpin + Send + 'static> Conn for T {}

/// Opens the stream to `host`:`port` that a request goes on (TLS comes on top): a TCP
/// connection, or in tests a pipe to a stand-in server.
pub type Connect =
    Arc<dyn Fn(String, u16) -> BoxFuture<'static, std::io::Result<Box<dyn Conn>>> + Send + Sync>;

/// A TCP connection (no Nagle delay: one request, then its answer).
pub fn tcp() -> Connect {
    Arc::new(|host, port| {
        Box::pin(async move {
            let tcp = tokio::net::TcpStream::connect((host.as_str(), port)).await?;
            let _ = tcp.set_nodelay(true);
            Ok(Box::new(tcp) as Box<dyn Conn>)
        })
    })
}

/// The largest answer read.
const MAX_ANSWER: usize = 1 << 20;

/// Why a push failed.
#[derive(Debug, thiserror::Error)]
pub enum PushError {
    /// The endpoint takes no connection (the network or the server is down): retried, and
    /// probed meanwhile.
    #[error("network: {0}")]
    Unreachable(String),
    /// A TLS failure, a broken connection, a timeout: retried.
    #[error("network: {0}")]
    Network(String),
    /// 429 or 5xx: retried.
    #[error("HTTP {status}: {message}")]
    Busy {
        /// The status.
        status: u16,
        /// The answer's error text, or its start.
        message: String,
        /// `Retry-After`, seconds.
        retry_after: Option<u64>,
    },
    /// Another refusal (400, 401, 403, 404...): not retried until the next change.
    #[error("HTTP {status}: {message}")]
    Refused {
        /// The status.
        status: u16,
        /// Lichess's `error` text, or the answer's start.
        message: String,
    },
}

impl PushError {
    pub(super) fn retried(&self) -> bool {
        !matches!(self, PushError::Refused { .. })
    }
}

/// One game of Lichess's answer.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct GameAnswer {
    /// The game's tags as Lichess read them.
    pub tags: BTreeMap<String, String>,
    /// `Ok(moves)` or `Err(Lichess's error)`.
    pub outcome: Result<u64, String>,
}

impl GameAnswer {
    /// `Round 1.3 (White - Black)`, to name the game to a person.
    pub fn name(&self) -> String {
        let t = |k: &str| self.tags.get(k).map_or("?", String::as_str);
        format!("round {} board {} ({} - {})", t("Round"), t("Board"), t("White"), t("Black"))
    }

    /// The `Board` tag (else the part after the dot of `Round`).
    pub fn board(&self) -> Option<u32> {
        self.tags.get("Board").and_then(|b| b.parse().ok()).or_else(|| {
            self.tags.get("Round").and_then(|r| r.split_once('.')).and_then(|(_, b)| b.parse().ok())
        })
    }
}

/// An answer that is not what Lichess answers a push with.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum BadAnswer {
    /// Not JSON.
    #[error("answer is not JSON: {0}")]
    NotJson(String),
    /// JSON without the `games` list.
    #[error("answer has no games list")]
    NoGames,
}

/// Reads Lichess's push answer.
pub fn parse_answer(body: &[u8]) -> Result<Vec<GameAnswer>, BadAnswer> {
    let v: serde_json::Value = serde_json::from_slice(body).map_err(|e| BadAnswer::NotJson(e.to_string()))?;
    let games = v.get("games").and_then(|g| g.as_array()).ok_or(BadAnswer::NoGames)?;
    let mut out = Vec::with_capacity(games.len());
    for g in games {
        let tags = g
            .get("tags")
            .and_then(|t| t.as_object())
            .map(|o| o.iter().filter_map(|(k, v)| Some((k.clone(), v.as_str()?.to_owned()))).collect())
            .unwrap_or_default();
        let outcome = match (g.get("error").and_then(|e| e.as_str()), g.get("moves").and_then(|m| m.as_u64()))
        {
            (Some(e), _) => Err(e.to_owned()),
            (None, Some(m)) => Ok(m),
            (None, None) => Err("no moves count and no error in the answer".to_owned()),
        };
        out.push(GameAnswer { tags, outcome });
    }
    Ok(out)
}

/// The HTTP side: one request on its own connection.
pub(super) struct Client {
    settings: LichessSettings,
    connect: Connect,
    tls: Option<Arc<tokio_rustls::rustls::ClientConfig>>,
}

impl Client {
    pub(super) fn new(settings: LichessSettings, connect: Connect) -> Client {
        let tls = settings.endpoint.https.then(|| {
            let mut roots = tokio_rustls::rustls::RootCertStore::empty();
            roots.extend(webpki_roots::TLS_SERVER_ROOTS.iter().cloned());
            let provider = Arc::new(tokio_rustls::rustls::crypto::ring::default_provider());
            let mut cfg = tokio_rustls::rustls::ClientConfig::builder_with_provider(provider)
                .with_safe_default_protocol_versions()
                .map(|b| b.with_root_certificates(roots).with_no_client_auth())
                // The ring provider supports the default versions; this cannot fail.
                .unwrap_or_else(|e| panic!("TLS configuration: {e}"));
            cfg.alpn_protocols = vec![b"http/1.1".to_vec()];
            Arc::new(cfg)
        });
        Client { settings, connect, tls }
    }

    /// Whether the endpoint takes a connection now (no request is sent): a probe while
    /// pushes fail for want of the network.
    pub(super) async fn reachable(&self, limit: std::time::Duration) -> bool {
        let e = &self.settings.endpoint;
        matches!(tokio::time::timeout(limit, (self.connect)(e.host.clone(), e.port)).await, Ok(Ok(_)))
    }

    /// Pushes one request's games; the answer per game.
    pub(super) async fn push(&self, round: &str, pgn: String) -> Result<Vec<GameAnswer>, PushError> {
        let e = &self.settings.endpoint;
        let path = format!("{}/api/broadcast/round/{round}/push", e.base);
        let host = if e.port == if e.https { 443 } else { 80 } {
            e.host.clone()
        } else if e.host.contains(':') {
            format!("[{}]:{}", e.host, e.port)
        } else {
            format!("{}:{}", e.host, e.port)
        };
        let request = hyper::Request::post(path)
            .header(hyper::header::HOST, host)
            .header(hyper::header::AUTHORIZATION, format!("Bearer {}", self.settings.token))
            .header(hyper::header::CONTENT_TYPE, "text/plain; charset=utf-8")
            .header(hyper::header::USER_AGENT, concat!("dgt-relay/", env!("CARGO_PKG_VERSION")))
            .header(hyper::header::ACCEPT, "application/json")
            .body(Full::new(Bytes::from(pgn)))
            .map_err(|err| PushError::Network(err.to_string()))?;
        let limit = self.settings.timeout;
        let (status, retry_after, body) = tokio::time::timeout(limit, self.send(request))
            .await
            .map_err(|_| PushError::Network(format!("no answer within {} s", limit.as_secs())))??;
        let message = || {
            serde_json::from_slice::<serde_json::Value>(&body)
                .ok()
                .and_then(|v| v.get("error").and_then(|e| e.as_str()).map(str::to_owned))
                .unwrap_or_else(|| String::from_utf8_lossy(&body).chars().take(200).collect())
        };
        match status {
            200..=299 => {
                parse_answer(&body).map_err(|e| PushError::Refused { status, message: e.to_string() })
            }
            429 | 500..=599 => Err(PushError::Busy { status, message: message(), retry_after }),
            _ => Err(PushError::Refused { status, message: message() }),
        }
    }

    async fn send(
        &self,
        request: hyper::Request<Full<Bytes>>,
    ) -> Result<(u16, Option<u64>, Bytes), PushError> {
        let e = &self.settings.endpoint;
        let net = |what: &str, err: &dyn std::fmt::Display| PushError::Network(format!("{what}: {err}"));
        let tcp = (self.connect)(e.host.clone(), e.port)
            .await
            .map_err(|err| PushError::Unreachable(format!("connect to {}:{}: {err}", e.host, e.port)))?;
        match &self.tls {
            Some(cfg) => {
                let name = tokio_rustls::rustls::pki_types::ServerName::try_from(e.host.clone())
                    .map_err(|err| net("server name", &err))?;
                let tls = tokio_rustls::TlsConnector::from(Arc::clone(cfg))
                    .connect(name, tcp)
                    .await
                    .map_err(|err| net("TLS", &err))?;
                exchange(tls, request).await
            }
            None => exchange(tcp, request).await,
        }
    }
}

async fn exchange<S>(
    io: S,
    request: hyper::Request<Full<Bytes>>,
) -> Result<(u16, Option<u64>, Bytes), PushError>
where
    S: AsyncRead + AsyncWrite + Unpin + Send + 'static,
{
    let net = |what: &str, err: &dyn std::fmt::Display| PushError::Network(format!("{what}: {err}"));
    let (mut sender, conn) = hyper::client::conn::http1::handshake(hyper_util::rt::TokioIo::new(io))
        .await
        .map_err(|err| net("HTTP", &err))?;
    let conn = tokio::spawn(async move {
        let _ = conn.await;
    });
    let result = async {
        let response = sender.send_request(request).await.map_err(|err| net("HTTP", &err))?;
        let status = response.status().as_u16();
        let retry_after = response
            .headers()
            .get(hyper::header::RETRY_AFTER)
            .and_then(|v| v.to_str().ok())
            .and_then(|v| v.trim().parse::<u64>().ok());
        let body = Limited::new(response.into_body(), MAX_ANSWER)
            .collect()
            .await
            .map_err(|err| net("reading the answer", &err))?
            .to_bytes();
        Ok((status, retry_after, body))
    }
    .await;
    conn.abort();
    result
}
