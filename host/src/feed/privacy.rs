//! What spectators must not see: the data folder, the boards' device paths and other
//! absolute paths in alert messages, and the boards' ports.

use super::alerts::{AlertEntry, AlertView};
use super::views::{BoardView, Delta};

/// Roots of absolute paths that are left out of spectators' views wherever they appear
/// (a path under another root is left out when the hub was told of it, see
/// [`Hub::hide_path`], or when it is a board's port).
const PATH_ROOTS: [&str; 15] = [
    "/dev/", "/var/", "/home/", "/tmp/", "/etc/", "/srv/", "/opt/", "/mnt/", "/media/", "/run/", "/root/",
    "/usr/", "/proc/", "/sys/", "/data/",
];

/// What spectators must not see: the data folder, the boards' device paths and other
/// absolute paths, replaced in the text of alerts; ports are left out of board views.
#[derive(Clone, Debug, Default)]
pub struct Private {
    /// Known paths and what they are replaced with, longest first.
    paths: Vec<(String, &'static str)>,
}

impl Private {
    /// Hides `path` (replaced by `with`) from now on. Paths shorter than 2 characters are
    /// ignored; a relative path is hidden where a `/` follows it (`relay-data/round-1/...`).
    pub fn add(&mut self, path: &str, with: &'static str) {
        let path = path.trim_end_matches('/');
        if path.chars().count() < 2 || self.paths.iter().any(|(p, _)| p == path) {
            return;
        }
        self.paths.push((path.to_owned(), with));
        self.paths.sort_by_key(|(p, _)| std::cmp::Reverse(p.len()));
    }

    /// `text` with every hidden path replaced.
    pub fn redact(&self, text: &str) -> String {
        let mut out = text.to_owned();
        for (path, with) in &self.paths {
            if path.starts_with('/') {
                out = out.replace(path.as_str(), with);
            } else {
                out = out.replace(&format!("{path}/"), &format!("{with}/"));
            }
        }
        redact_absolute_paths(&out)
    }

    /// An alert as spectators see it.
    pub fn alert(&self, a: &AlertView) -> AlertView {
        AlertView { message: self.redact(&a.message), ..a.clone() }
    }

    /// A kept alert as spectators see it.
    pub fn entry(&self, a: &AlertEntry) -> AlertEntry {
        AlertEntry { alert: self.alert(&a.alert), ..a.clone() }
    }

    /// A board as spectators see it: no port, alerts redacted.
    pub fn view(&self, v: &BoardView) -> BoardView {
        BoardView { port: None, alerts: v.alerts.iter().map(|a| self.entry(a)).collect(), ..v.clone() }
    }

    /// A delta as spectators see it.
    pub(super) fn delta<'a>(&self, d: &'a Delta) -> std::borrow::Cow<'a, Delta> {
        use std::borrow::Cow;
        match d {
            Delta::Status { board, status, serial, port: Some(_) } => Cow::Owned(Delta::Status {
                board: *board,
                status: *status,
                serial: serial.clone(),
                port: None,
            }),
            Delta::Board { view } => Cow::Owned(Delta::Board { view: Box::new(self.view(view)) }),
            other => Cow::Borrowed(other),
        }
    }
}

/// Replaces absolute paths under the usual filesystem roots ([`PATH_ROOTS`]) with
/// `<path>`: from the root to the end of the word (a space, a quote, a bracket, a comma
/// or a colon followed by a space).
fn redact_absolute_paths(text: &str) -> String {
    let bytes = text.as_bytes();
    let mut out = String::with_capacity(text.len());
    let mut i = 0;
    let mut copied = 0;
    while i < bytes.len() {
        let starts_word = i == 0
            || !(bytes[i - 1].is_ascii_alphanumeric() || matches!(bytes[i - 1], b'/' | b'.' | b'_' | b'-'));
        if bytes[i] == b'/' && starts_word && PATH_ROOTS.iter().any(|r| text[i..].starts_with(r)) {
            let mut end = i;
            while end < bytes.len() {
                let c = bytes[end];
                let colon_end = c == b':' && bytes.get(end + 1).is_none_or(|n| n.is_ascii_whitespace());
                if c.is_ascii_whitespace()
                    || matches!(c, b'"' | b'\'' | b'(' | b')' | b',' | b';' | b'`')
                    || colon_end
                {
                    break;
                }
                end += 1;
            }
            out.push_str(&text[copied..i]);
            out.push_str("<path>");
            copied = end;
            i = end;
        } else {
            i += 1;
        }
    }
    out.push_str(&text[copied..]);
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::feed::{AlertCode, AlertLevel, BoardStatus, Hub};

    #[test]
    fn spectators_see_no_paths_and_the_operator_does() {
        let hub = Hub::new(1, crate::clock::Clock::manual(1_764_000_000_000));
        hub.hide_path(std::path::Path::new("/srv/relay/data"), "<data folder>");
        hub.hide_path(std::path::Path::new("relay-data"), "<data folder>");
        let (_, mut rx) = hub.subscribe();
        hub.publish(Delta::Status {
            board: 1,
            status: BoardStatus::Active,
            serial: Some("24518".into()),
            port: Some("/dev/ttyUSB0".into()),
        });
        let alert = |message: &str| AlertView {
            code: AlertCode::Storage,
            level: AlertLevel::Error,
            message: message.into(),
            squares: Vec::new(),
        };
        hub.publish(Delta::Alert {
            board: Some(1),
            alert: alert(
                "Cannot write the journal (/srv/relay/data/round-1/game-1.journal: No space left on device).",
            ),
        });
        hub.publish(Delta::Alert {
            board: None,
            alert: alert("Cannot write PGN files (relay-data/round-1/games.pgn: Permission denied); board on /dev/ttyUSB0."),
        });
        hub.publish(Delta::Alert {
            board: Some(1),
            alert: alert("Board 1 (24518) is not responding: I/O error: gone (/media/x y)."),
        });
        let mut view = BoardView::new(2, 1);
        view.port = Some("/home/op/sim/board-2".into());
        hub.publish(Delta::Board { view: Box::new(view) });
        let frames: Vec<String> =
            std::iter::from_fn(|| rx.try_recv().ok()).map(|f| f.json.to_string()).collect();
        let public = format!(
            "{}{}{}",
            frames.join("\n"),
            serde_json::to_string(&hub.public_boards()).unwrap(),
            serde_json::to_string(&hub.relay_alerts()).unwrap()
        );
        for secret in ["/dev/", "/srv/", "relay-data", "/home/", "/media/", "ttyUSB0", "\"port\""] {
            assert!(!public.contains(secret), "{secret} in {public}");
        }
        assert!(public.contains("<data folder>/round-1/game-1.journal: No space left"), "{public}");
        assert!(public.contains("I/O error: gone (<path> y)"), "{public}");
        assert!(public.contains("24518"), "serial numbers are fine");
        let (snap, _) = hub.subscribe();
        assert!(!serde_json::to_string(&snap).unwrap().contains("/home/"));
        // The operator's views keep everything.
        assert_eq!(hub.board(1).unwrap().port.as_deref(), Some("/dev/ttyUSB0"));
        assert_eq!(hub.board(2).unwrap().port.as_deref(), Some("/home/op/sim/board-2"));
        assert!(hub.admin_relay_alerts()[0].message.contains("relay-data/round-1"));
        assert!(serde_json::to_string(&hub.boards()).unwrap().contains("/srv/relay/data"));
    }

    #[test]
    fn absolute_paths_are_found_in_words_only() {
        assert_eq!(redact_absolute_paths("open /dev/ttyUSB0: busy"), "open <path>: busy");
        assert_eq!(redact_absolute_paths("/var/lib/x:1: bad"), "<path>: bad");
        assert_eq!(redact_absolute_paths("\"/tmp/a b\""), "\"<path> b\"");
        assert_eq!(
            redact_absolute_paths("I/O error; POST /api/admin/boards/1/result"),
            "I/O error; POST /api/admin/boards/1/result"
        );
        assert_eq!(redact_absolute_paths("a/dev/x and /dev"), "a/dev/x and /dev");
        assert_eq!(redact_absolute_paths("é /home/é/x"), "é <path>");
    }
}
