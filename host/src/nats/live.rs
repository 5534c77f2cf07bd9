//! What is not journaled but spectators still see: clock readings, board connection states
//! and alerts. A venue relay forwards these feed deltas as they happen; an edge applies
//! them to the boards that venue owns.
//!
//! # Why plain NATS publishes
//! They are sent with a core NATS publish on the stream's subjects: the stream keeps them
//! (an edge that starts later still sees the latest state), but nothing is retried or
//! acknowledged. A clock reading lost while the server is down is replaced by the next
//! one, and moves, results and pairings never take this path: they come from the journal.

use async_nats::HeaderMap;

use super::SOURCE_HEADER;
use crate::feed::{Delta, Hub};
use crate::shutdown::Listener;

/// Header marking a forwarded feed delta (its value: the delta's type).
pub const LIVE_HEADER: &str = "Dgt-Live";

/// The subject kind of a delta that is forwarded, `None` for the others.
fn live_kind(delta: &Delta) -> Option<&'static str> {
    match delta {
        Delta::Clock { .. } => Some("clock"),
        Delta::Status { .. } => Some("status"),
        Delta::Alert { .. } => Some("alert"),
        _ => None,
    }
}

/// Forwards the hub's clock, status and alert deltas until `stop`. Relay-wide alerts go to
/// board 0.
pub async fn forward(
    client: async_nats::Client,
    hub: std::sync::Arc<Hub>,
    source: String,
    event: String,
    mut stop: Listener,
) {
    let (_, mut rx) = hub.subscribe();
    let event = super::event_token(&event);
    loop {
        let frame = tokio::select! {
            f = rx.recv() => f,
            _ = stop.wait() => return,
        };
        let frame = match frame {
            Ok(f) => f,
            // Skipped readings are replaced by later ones.
            Err(tokio::sync::broadcast::error::RecvError::Lagged(_)) => continue,
            Err(tokio::sync::broadcast::error::RecvError::Closed) => return,
        };
        let Ok(delta) = serde_json::from_str::<Delta>(frame.json.as_str()) else { continue };
        let Some(kind) = live_kind(&delta) else { continue };
        let board = delta.board().unwrap_or(0);
        let round = hub.board(board).map_or_else(|| hub.round(), |v| v.round);
        let subject = format!("{}.{event}.{round}.{board}.{kind}", super::SUBJECT_ROOT);
        let mut headers = HeaderMap::new();
        headers.insert(SOURCE_HEADER, source.as_str());
        headers.insert(LIVE_HEADER, kind);
        let payload = bytes_of(&delta);
        if let Err(e) = client.publish_with_headers(subject, headers, payload.into()).await {
            tracing::debug!(error = %e, "live delta not forwarded");
        }
    }
}

fn bytes_of(delta: &Delta) -> Vec<u8> {
    serde_json::to_vec(delta).unwrap_or_default()
}

/// A forwarded delta read from the stream: its source and the delta.
pub fn parse(headers: Option<&HeaderMap>, payload: &[u8]) -> Option<(String, Delta)> {
    let headers = headers?;
    headers.get(LIVE_HEADER)?;
    let source = headers.get(SOURCE_HEADER)?.as_str().to_owned();
    let delta: Delta = serde_json::from_slice(payload).ok()?;
    live_kind(&delta)?;
    Some((source, delta))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::feed::{AlertCode, AlertLevel, AlertView, BoardStatus};

    #[test]
    fn only_clock_status_and_alert_deltas_are_forwarded_and_read_back() {
        let status = Delta::Status { board: 3, status: BoardStatus::NotResponding, serial: None, port: None };
        let mut h = HeaderMap::new();
        h.insert(SOURCE_HEADER, "hall-a");
        h.insert(LIVE_HEADER, "status");
        assert_eq!(parse(Some(&h), &bytes_of(&status)), Some(("hall-a".to_owned(), status.clone())));
        let alert = Delta::Alert {
            board: None,
            alert: AlertView {
                code: AlertCode::Storage,
                level: AlertLevel::Error,
                message: "m".into(),
                squares: vec![],
            },
        };
        assert!(parse(Some(&h), &bytes_of(&alert)).is_some());
        let result = Delta::Result { board: 1, result: None, termination: None };
        assert_eq!(parse(Some(&h), &bytes_of(&result)), None, "results come from the journal only");
        assert_eq!(parse(None, &bytes_of(&status)), None);
    }
}
