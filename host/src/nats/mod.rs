//! Beyond one machine: venue relays publish their journals to a NATS JetStream stream,
//! and edges ([`edge`]) serve spectators from that stream.
//!
//! # Why the journal is the source
//! A venue relay's journal is already the durable, ordered record of every game. The
//! [`publish`] task follows the journals (woken after each fsync) and publishes each line
//! once JetStream has acknowledged the one before it. While the server is unreachable the
//! lines simply wait in the journal; nothing is queued in memory.
//!
//! # Why no duplicates
//! Each message carries a `Nats-Msg-Id` made of the relay's source id, the game (round,
//! board, start time) and the line's index in its journal, so a retry or a restart that
//! publishes a line again is dropped by the stream's de-duplication. The edge checks the
//! same index too, so a line older than the stream's de-duplication window is still applied
//! once.
//!
//! # Subjects
//! `dgt.<event>.<round>.<board>.<kind>`, `kind` being the record type (`game`, `move`,
//! `takeback`, `result`, `pairing`, `flip`); `<event>` is the event name reduced to
//! lower-case letters, digits and `-`.

pub mod edge;
pub mod live;
pub mod publish;

use std::time::Duration;

use async_nats::jetstream;
use serde::Deserialize;

use crate::invalid::Invalid;
use crate::record::{GameHeader, Record};

/// The stream's default name.
pub const DEFAULT_STREAM: &str = "DGT";
/// Every subject this relay publishes starts with it.
pub const SUBJECT_ROOT: &str = "dgt";
/// Header: the venue relay that published the line.
pub const SOURCE_HEADER: &str = "Dgt-Source";
/// Header: the game, as `<utc date><utc time>` digits of its first record.
pub const GAME_HEADER: &str = "Dgt-Game";
/// Header: the line's 0-based index in its journal.
pub const INDEX_HEADER: &str = "Dgt-Index";
/// How long the stream remembers message ids for de-duplication.
pub const DUPLICATE_WINDOW: Duration = Duration::from_secs(24 * 3600);

/// A NATS failure.
#[derive(Debug, thiserror::Error)]
pub enum NatsError {
    /// The connection could not be set up.
    #[error("cannot connect to NATS at {url}: {message}")]
    Connect {
        /// The server.
        url: String,
        /// Why.
        message: String,
    },
    /// A JetStream request failed (stream creation, publish, consumer).
    #[error("JetStream: {0}")]
    JetStream(String),
    /// A journal could not be read.
    #[error("{0}")]
    Store(#[from] crate::store::StoreError),
}

/// `[nats]` as written in the configuration file.
#[derive(Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct NatsSection {
    /// `nats://host:port`, or several comma-separated (a cluster).
    pub url: String,
    /// User name, with `password`.
    #[serde(default)]
    pub user: Option<String>,
    /// Password, with `user`.
    #[serde(default)]
    pub password: Option<String>,
    /// An authentication token (instead of user and password).
    #[serde(default)]
    pub token: Option<String>,
    /// The JetStream stream's name (default `DGT`).
    #[serde(default)]
    pub stream: Option<String>,
    /// This relay's name in the stream (letters, digits, `-`, `_`); default: a random id
    /// kept in the data folder, so a restarted relay is the same source.
    #[serde(default)]
    pub source: Option<String>,
}

/// How to reach the NATS server: checked settings.
#[derive(Clone, PartialEq, Eq)]
pub struct NatsSettings {
    /// The server(s), as `async-nats` takes them.
    pub url: String,
    /// Credentials, when the server wants them.
    pub auth: Auth,
    /// The stream's name.
    pub stream: String,
    /// This relay's source id, when fixed by the configuration.
    pub source: Option<String>,
}

/// Credentials.
#[derive(Clone, PartialEq, Eq)]
pub enum Auth {
    /// None.
    None,
    /// User and password.
    User(String, String),
    /// A token.
    Token(String),
}

impl std::fmt::Debug for NatsSettings {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        // Never the credentials.
        f.debug_struct("NatsSettings")
            .field("url", &self.url)
            .field("stream", &self.stream)
            .field("source", &self.source)
            .finish_non_exhaustive()
    }
}

/// Checks a name used as a stream name or source id: 1 to 64 letters, digits, `-`, `_`.
fn check_name(what: &'static str, s: &str) -> Result<(), Invalid> {
    if s.is_empty() || s.len() > 64 || !s.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'_')
    {
        return Err(Invalid::Malformed {
            what,
            value: s.to_owned(),
            form: "1 to 64 letters, digits, '-' or '_'",
        });
    }
    Ok(())
}

impl NatsSettings {
    /// Settings for a server URL with no credentials (`dgt-relay edge --nats URL`).
    pub fn from_url(url: &str) -> Result<NatsSettings, Invalid> {
        NatsSection {
            url: url.to_owned(),
            user: None,
            password: None,
            token: None,
            stream: None,
            source: None,
        }
        .settings()
    }
}

impl NatsSection {
    /// Checks the section.
    pub fn settings(&self) -> Result<NatsSettings, Invalid> {
        let url = self.url.trim();
        let ok_scheme =
            |u: &str| ["nats://", "tls://"].iter().any(|p| u.starts_with(p)) || !u.contains("://");
        let each_ok = url.split(',').all(|u| !u.is_empty() && ok_scheme(u));
        if url.is_empty() || url.len() > 1000 || !each_ok || url.chars().any(char::is_whitespace) {
            return Err(Invalid::Malformed {
                what: "nats url",
                value: url.to_owned(),
                form: "nats://host:port (or a comma-separated list)",
            });
        }
        // Credentials in a URL would be logged with it, and async-nats takes them only from
        // the options: they belong in `user`/`password` or `token`.
        let has_credentials = |u: &str| {
            u.split_once("://").map_or(u, |(_, rest)| rest).split('/').next().is_some_and(|a| a.contains('@'))
        };
        if url.split(',').any(has_credentials) {
            let hidden: Vec<String> = url
                .split(',')
                .map(|u| match u.split_once("://") {
                    Some((scheme, rest)) => match rest.rsplit_once('@') {
                        Some((_, host)) => format!("{scheme}://***@{host}"),
                        None => u.to_owned(),
                    },
                    None => {
                        u.rsplit_once('@').map_or_else(|| u.to_owned(), |(_, host)| format!("***@{host}"))
                    }
                })
                .collect();
            return Err(Invalid::Malformed {
                what: "nats url",
                value: hidden.join(","),
                form: "nats://host:port with no credentials (give them as [nats] user and password, or token)",
            });
        }
        let auth = match (&self.user, &self.password, &self.token) {
            (None, None, None) => Auth::None,
            (Some(u), Some(p), None) => Auth::User(u.clone(), p.clone()),
            (None, None, Some(t)) => Auth::Token(t.clone()),
            _ => return Err(Invalid::Rule("nats: give user and password together, or token alone")),
        };
        let stream = self.stream.clone().unwrap_or_else(|| DEFAULT_STREAM.to_owned());
        check_name("nats stream", &stream)?;
        if let Some(s) = &self.source {
            check_name("nats source", s)?;
        }
        Ok(NatsSettings { url: url.to_owned(), auth, stream, source: self.source.clone() })
    }
}

/// A connection and the count of its (re)connections, which a consumer watches to
/// re-subscribe after the server came back.
pub type Connection = (async_nats::Client, tokio::sync::watch::Receiver<u64>);

/// Connects, retrying in the background for as long as the process runs: a server that is
/// down at start or goes away later is waited for, never fatal.
pub async fn connect(settings: &NatsSettings, name: &str) -> Result<Connection, NatsError> {
    let (connected, watch) = tokio::sync::watch::channel(0u64);
    let mut opts = async_nats::ConnectOptions::new()
        .event_callback(move |event| {
            match &event {
                async_nats::Event::Connected => {
                    tracing::info!("NATS connected");
                    connected.send_modify(|n| *n += 1);
                }
                async_nats::Event::Disconnected => tracing::warn!("NATS disconnected; reconnecting"),
                other => tracing::debug!(event = %other, "NATS event"),
            }
            std::future::ready(())
        })
        .name(name)
        .retry_on_initial_connect()
        .max_reconnects(None)
        .connection_timeout(Duration::from_secs(2))
        // Quick first retries (a server restart), then every 2 s at most.
        .reconnect_delay_callback(|attempts| Duration::from_millis((attempts as u64 * 100).min(2000)));
    match &settings.auth {
        Auth::None => {}
        Auth::User(u, p) => opts = opts.user_and_password(u.clone(), p.clone()),
        Auth::Token(t) => opts = opts.token(t.clone()),
    }
    // A cluster is given as a comma-separated list of servers.
    let servers: Vec<&str> = settings.url.split(',').map(str::trim).filter(|s| !s.is_empty()).collect();
    let client = opts
        .connect(servers)
        .await
        .map_err(|e| NatsError::Connect { url: settings.url.clone(), message: e.to_string() })?;
    Ok((client, watch))
}

/// Creates the stream if it is missing (file storage: it survives a server restart).
pub async fn ensure_stream(
    js: &jetstream::Context,
    name: &str,
) -> Result<jetstream::stream::Stream, NatsError> {
    js.get_or_create_stream(jetstream::stream::Config {
        name: name.to_owned(),
        subjects: vec![format!("{SUBJECT_ROOT}.>")],
        storage: jetstream::stream::StorageType::File,
        duplicate_window: DUPLICATE_WINDOW,
        ..Default::default()
    })
    .await
    .map_err(|e| NatsError::JetStream(format!("stream {name}: {e}")))
}

/// An event name as one subject token: lower-case ASCII letters and digits, every other
/// run of characters one `-`; `event` when nothing is left.
pub fn event_token(name: &str) -> String {
    let mut out = String::new();
    for c in name.chars() {
        if c.is_ascii_alphanumeric() {
            out.push(c.to_ascii_lowercase());
        } else if !out.is_empty() && !out.ends_with('-') {
            out.push('-');
        }
        if out.len() >= 64 {
            break;
        }
    }
    let t = out.trim_end_matches('-');
    if t.is_empty() { "event".to_owned() } else { t.to_owned() }
}

/// A game's id within its board and round: the digits of its start date and time.
pub fn game_stamp(h: &GameHeader) -> String {
    h.utc_date.chars().chain(h.utc_time.chars()).filter(char::is_ascii_digit).collect()
}

/// The record type as a subject token.
pub fn kind(rec: &Record) -> &'static str {
    match rec {
        Record::Game(_) => "game",
        Record::Move(_) => "move",
        Record::Takeback { .. } => "takeback",
        Record::Result { .. } => "result",
        Record::Pairing { .. } => "pairing",
        Record::Flip { .. } => "flip",
        Record::ClockSide { .. } => "clock_side",
    }
}

/// The subject of one line.
pub fn subject(event: &str, round: u32, board: u32, rec: &Record) -> String {
    format!("{SUBJECT_ROOT}.{}.{round}.{board}.{}", event_token(event), kind(rec))
}

/// The message id of one line: the same line always gets the same id.
pub fn message_id(source: &str, round: u32, board: u32, stamp: &str, index: u64) -> String {
    format!("{source}.{round}.{board}.{stamp}.{index}")
}

/// The (round, board) a subject names, if it is one of ours.
pub fn parse_subject(subject: &str) -> Option<(u32, u32)> {
    let mut parts = subject.split('.');
    if parts.next()? != SUBJECT_ROOT {
        return None;
    }
    let _event = parts.next()?;
    let round = parts.next()?.parse().ok()?;
    let board = parts.next()?.parse().ok()?;
    Some((round, board))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn event_names_become_one_subject_token() {
        assert_eq!(event_token("Open A 2025"), "open-a-2025");
        assert_eq!(event_token("  Ürs. Cup!! "), "rs-cup");
        assert_eq!(event_token("..."), "event");
        assert!(!event_token(&"x.".repeat(200)).contains('.'));
    }

    #[test]
    fn subjects_round_trip() {
        let rec = Record::Takeback { from_ply: 3 };
        let s = subject("Club Open", 2, 17, &rec);
        assert_eq!(s, "dgt.club-open.2.17.takeback");
        assert_eq!(parse_subject(&s), Some((2, 17)));
        assert_eq!(parse_subject("other.a.1.2.move"), None);
        assert_eq!(parse_subject("dgt.a.x.2.move"), None);
    }

    #[test]
    fn settings_are_checked() {
        let ok = NatsSettings::from_url("nats://127.0.0.1:4222").unwrap();
        assert_eq!((ok.stream.as_str(), ok.auth == Auth::None), ("DGT", true));
        assert!(NatsSettings::from_url("http://x").is_err());
        assert!(NatsSettings::from_url("nats://a:1,nats://b:2,nats://c:3").is_ok());
        assert!(NatsSettings::from_url("nats://a:1,,nats://b:2").is_err());
        assert!(NatsSettings::from_url("").is_err());
        let half = NatsSection {
            url: "nats://h:1".into(),
            user: Some("u".into()),
            password: None,
            token: None,
            stream: None,
            source: None,
        };
        assert!(half.settings().is_err());
        // Issue 27, recipe 8: credentials in the URL are refused, and the error hides them.
        for url in ["nats://venue:s3cret@127.0.0.1:4222", "nats://a:1,tls://tok3n@b:2", "venue:s3cret@h:1"] {
            let e = NatsSettings::from_url(url).unwrap_err().to_string();
            assert!(!e.contains("s3cret") && !e.contains("tok3n") && e.contains("***@"), "{e}");
            assert!(e.contains("user and password, or token"), "{e}");
        }
        assert!(NatsSettings::from_url("nats://h:1/path@x").is_ok(), "an @ past the host is no credential");
        let bad_source = NatsSection { user: None, source: Some("a.b".into()), ..half };
        assert!(bad_source.settings().is_err());
    }
}
