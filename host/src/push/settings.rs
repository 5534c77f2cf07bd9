//! The `[lichess]` section: where to push, with which token, in what time.

use std::path::PathBuf;
use std::time::Duration;

use serde::{Deserialize, Serialize};

use crate::invalid::{Invalid, in_range};

/// A request's default limit, connection and answer included.
pub const REQUEST_TIMEOUT: Duration = Duration::from_secs(20);
/// The default Lichess.
pub const DEFAULT_URL: &str = "https://lichess.org";

/// The `[lichess]` section as written.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct LichessSection {
    /// The broadcast round id (8 letters and digits).
    pub round: String,
    /// A file holding the API token (scope `study:write`); else `LICHESS_TOKEN`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub token_file: Option<PathBuf>,
    /// Lichess's address.
    #[serde(default = "default_url")]
    pub url: String,
    /// A request's time limit, seconds (1..=120, default 20).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub timeout_s: Option<u64>,
    /// The relay round pushed there; without it, the event's current round.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub relay_round: Option<u32>,
    /// Relay rounds with a Lichess round of their own (`{ 2 = "EfGh5678" }`).
    #[serde(default, skip_serializing_if = "std::collections::BTreeMap::is_empty")]
    pub rounds: std::collections::BTreeMap<String, String>,
}

fn default_url() -> String {
    DEFAULT_URL.to_owned()
}

/// Where requests go.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Endpoint {
    /// TLS or not.
    pub https: bool,
    /// Host name or address.
    pub host: String,
    /// Port.
    pub port: u16,
    /// Path prefix without the final `/` (usually empty).
    pub base: String,
}

impl Endpoint {
    /// Reads `http://host[:port][/path]` or `https://...`.
    pub fn parse(url: &str) -> Result<Endpoint, Invalid> {
        let bad = || Invalid::Malformed {
            what: "url",
            value: url.to_owned(),
            form: "http://HOST[:PORT] or https://HOST[:PORT]",
        };
        let (https, rest) = if let Some(r) = url.strip_prefix("https://") {
            (true, r)
        } else if let Some(r) = url.strip_prefix("http://") {
            (false, r)
        } else {
            return Err(bad());
        };
        let (authority, path) = rest.split_once('/').map_or((rest, ""), |(a, p)| (a, p));
        let (host, port) = match authority.rsplit_once(':') {
            Some((h, p)) if !h.ends_with(']') || h.starts_with('[') => {
                (h, p.parse::<u16>().map_err(|_| bad())?)
            }
            _ => (authority, if https { 443 } else { 80 }),
        };
        let host = host.trim_start_matches('[').trim_end_matches(']');
        let host_ok = !host.is_empty()
            && host.len() <= 253
            && host.bytes().all(|b| b.is_ascii_alphanumeric() || b"-.:".contains(&b));
        let path_ok =
            path.len() <= 200 && path.bytes().all(|b| b.is_ascii_graphic() && b != b'?' && b != b'#');
        if !host_ok || !path_ok {
            return Err(bad());
        }
        let base = path.trim_end_matches('/');
        Ok(Endpoint {
            https,
            host: host.to_owned(),
            port,
            base: if base.is_empty() { String::new() } else { format!("/{base}") },
        })
    }
}

/// The checked `[lichess]` settings, with the token read.
#[derive(Clone, PartialEq, Eq)]
pub struct LichessSettings {
    /// The broadcast round id.
    pub round: String,
    /// Where to push.
    pub endpoint: Endpoint,
    /// The API token.
    pub token: String,
    /// A request's time limit.
    pub timeout: Duration,
    /// The relay round pushed; `None`: the event's current round.
    pub relay_round: Option<u32>,
    /// Relay rounds with a Lichess round of their own.
    pub rounds: std::collections::BTreeMap<u32, String>,
}

impl std::fmt::Debug for LichessSettings {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        // Never the token.
        f.debug_struct("LichessSettings")
            .field("round", &self.round)
            .field("endpoint", &self.endpoint)
            .finish_non_exhaustive()
    }
}

impl LichessSection {
    /// Checks the section and reads the token (`token_file`, else `LICHESS_TOKEN`).
    pub fn settings(&self) -> Result<LichessSettings, Invalid> {
        crate::tournament::check_lichess_round(&self.round)?;
        let mut rounds = std::collections::BTreeMap::new();
        for (relay_round, id) in &self.rounds {
            let n = relay_round.parse::<u32>().map_err(|_| Invalid::Malformed {
                what: "lichess rounds key",
                value: relay_round.clone(),
                form: "a relay round number",
            })?;
            in_range("lichess rounds key", u64::from(n), 1, u64::from(crate::tournament::MAX_ROUND))?;
            crate::tournament::check_lichess_round(id)?;
            rounds.insert(n, id.clone());
        }
        let endpoint = Endpoint::parse(&self.url)?;
        let token = match &self.token_file {
            Some(path) => std::fs::read_to_string(path)
                .map_err(|e| Invalid::Unusable {
                    what: "lichess token_file",
                    value: path.display().to_string(),
                    why: e.to_string(),
                })?
                .trim()
                .to_owned(),
            None => std::env::var("LICHESS_TOKEN").map_err(|_| {
                Invalid::Rule(
                    "the [lichess] section needs token_file or the LICHESS_TOKEN environment variable",
                )
            })?,
        };
        if token.is_empty() || token.len() > 400 || !token.bytes().all(|b| b.is_ascii_graphic()) {
            return Err(Invalid::Secret {
                what: "the Lichess token",
                form: "1 to 400 printable ASCII characters",
            });
        }
        let timeout = match self.timeout_s {
            Some(t) => {
                in_range("lichess timeout_s", t, 1, 120)?;
                Duration::from_secs(t)
            }
            None => REQUEST_TIMEOUT,
        };
        if let Some(r) = self.relay_round {
            in_range("lichess relay_round", u64::from(r), 1, u64::from(crate::tournament::MAX_ROUND))?;
        }
        Ok(LichessSettings {
            round: self.round.clone(),
            endpoint,
            token,
            timeout,
            relay_round: self.relay_round,
            rounds,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn endpoints() {
        let e = Endpoint::parse("https://lichess.org").unwrap();
        assert_eq!((e.https, e.host.as_str(), e.port, e.base.as_str()), (true, "lichess.org", 443, ""));
        let e = Endpoint::parse("http://127.0.0.1:9000/lila/").unwrap();
        assert_eq!((e.https, e.host.as_str(), e.port, e.base.as_str()), (false, "127.0.0.1", 9000, "/lila"));
        let e = Endpoint::parse("http://[::1]:9000").unwrap();
        assert_eq!((e.host.as_str(), e.port), ("::1", 9000));
        for bad in ["ftp://x", "https://", "http://a b", "http://x:99999", "lichess.org", "http://x/?q"] {
            assert!(Endpoint::parse(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn sections_are_checked_and_the_token_read() {
        let dir = std::env::temp_dir().join(format!("dgt-relay-push-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let file = dir.join("token");
        std::fs::write(&file, "lip_secret\n").unwrap();
        let s = LichessSection {
            round: "AbCd1234".into(),
            token_file: Some(file.clone()),
            url: default_url(),
            timeout_s: None,
            relay_round: None,
            rounds: [("2".to_owned(), "EfGh5678".to_owned())].into(),
        };
        let settings = s.settings().unwrap();
        assert_eq!(settings.rounds.get(&2).map(String::as_str), Some("EfGh5678"));
        let bad_key =
            LichessSection { rounds: [("two".to_owned(), "EfGh5678".to_owned())].into(), ..s.clone() };
        assert!(bad_key.settings().unwrap_err().to_string().contains("relay round number"));
        assert_eq!(settings.token, "lip_secret");
        assert!(!format!("{settings:?}").contains("lip_secret"));
        let bad = LichessSection { round: "short".into(), ..s.clone() };
        assert!(bad.settings().unwrap_err().to_string().contains("8-character"));
        let missing = LichessSection { token_file: Some(dir.join("none")), ..s };
        assert!(missing.settings().unwrap_err().to_string().contains("token_file"));
        let _ = std::fs::remove_dir_all(&dir);
    }
}
