//! The alert book: alerts as the hub keeps them, with an id, a time, and the operator's
//! state of each (resolved by a later alert, or acknowledged).

use serde::{Deserialize, Serialize};

pub use dgt_session::{AlertCode, AlertLevel};

/// An operator alert.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct AlertView {
    /// Stable machine-readable code (`position_mismatch`, `not_responding`, `storage`,
    /// `battery_low`, `clock_paused`, ...; the list is in `API.md`).
    pub code: AlertCode,
    /// Severity.
    pub level: AlertLevel,
    /// What happened and what to do, for a person.
    pub message: String,
    /// Squares involved, if any (`e4`...).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub squares: Vec<String>,
}

impl From<&dgt_session::Alert> for AlertView {
    fn from(a: &dgt_session::Alert) -> AlertView {
        AlertView {
            code: a.code,
            level: a.level,
            message: a.message.clone(),
            squares: a.squares.iter().map(ToString::to_string).collect(),
        }
    }
}

/// Alerts kept per board (and relay-wide) in the snapshot; the oldest that no longer needs the
/// operator goes first.
pub const MAX_ALERTS: usize = 20;

/// An alert as the hub keeps and sends it: what was raised ([`AlertView`]), with a stable
/// id, the wall-clock time it was published, and the operator's state of it: resolved by a
/// later alert ([`counterpart`]) or acknowledged ([`Hub::ack`](crate::feed::Hub::ack)).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct AlertEntry {
    /// Unique for the relay's data: ids grow by one from a start taken from the wall clock
    /// when the relay started, so an id is never reused across restarts.
    pub id: u64,
    /// When the relay published it, milliseconds since 1970 (UTC).
    pub at: u64,
    /// The alert.
    #[serde(flatten)]
    pub alert: AlertView,
    /// The ids of earlier alerts this one resolves (`board_back` resolves `not_responding`).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub clears: Vec<u64>,
    /// The id of the later alert that resolved this one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cleared_by: Option<u64>,
    /// When an operator acknowledged it, milliseconds since 1970.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub acked_at: Option<u64>,
}

impl std::ops::Deref for AlertEntry {
    type Target = AlertView;
    fn deref(&self) -> &AlertView {
        &self.alert
    }
}

impl AlertEntry {
    /// Still wants the operator: a warning or an error, neither resolved nor acknowledged.
    pub fn open(&self) -> bool {
        self.alert.level != AlertLevel::Info && self.cleared_by.is_none() && self.acked_at.is_none()
    }
}

/// The alert code an alert resolves, if it is the counterpart of a lasting condition
/// (`board_back` resolves `not_responding`, `battery_ok` resolves `battery_low`, ...). An
/// info `storage` or `push` alert resolves the earlier `storage` or `push` warnings and
/// errors about the same board (or the relay).
pub fn counterpart(code: AlertCode, level: AlertLevel) -> Option<AlertCode> {
    Some(match code {
        AlertCode::BoardBack => AlertCode::NotResponding,
        AlertCode::PositionRecovered => AlertCode::PositionMismatch,
        AlertCode::BatteryOk => AlertCode::BatteryLow,
        AlertCode::ClockBatteryOk => AlertCode::ClockBatteryLow,
        AlertCode::ClockBack => AlertCode::ClockLost,
        AlertCode::ClockRunning => AlertCode::ClockPaused,
        AlertCode::BoardActive => AlertCode::BoardIdle,
        AlertCode::PortIdentified => AlertCode::PortUnidentified,
        AlertCode::Storage | AlertCode::Push | AlertCode::PortUnopenable if level == AlertLevel::Info => code,
        _ => return None,
    })
}

/// Keeps at most [`MAX_ALERTS`] alerts: when over, the oldest that no longer needs the
/// operator (resolved, acknowledged or informational) goes first, else the oldest.
fn trim_alerts(alerts: &mut Vec<AlertEntry>) {
    while alerts.len() > MAX_ALERTS {
        let i = alerts.iter().position(|a| !a.open()).unwrap_or(0);
        alerts.remove(i);
    }
}

/// Keeps a new alert with id `id` in `list`, stamped `at` (ms since 1970): the earlier
/// alerts of the list it resolves are marked, and the list is trimmed.
pub(super) fn raise(list: &mut Vec<AlertEntry>, id: u64, alert: AlertView, at: u64) -> AlertEntry {
    let mut clears = Vec::new();
    if let Some(code) = counterpart(alert.code, alert.level) {
        for a in list.iter_mut() {
            if a.alert.code == code && a.alert.level != AlertLevel::Info && a.cleared_by.is_none() {
                a.cleared_by = Some(id);
                clears.push(a.id);
            }
        }
    }
    let entry = AlertEntry { id, at, alert, clears, cleared_by: None, acked_at: None };
    list.push(entry.clone());
    trim_alerts(list);
    entry
}

/// Keeps the alert `id` of a standing condition in `list` in place of the condition's
/// previous alert `old` (see [`Hub::publish_condition`](crate::feed::Hub::publish_condition)),
/// which it resolves when that one still wanted the operator.
pub(super) fn supersede(
    list: &mut Vec<AlertEntry>,
    old: Option<u64>,
    id: u64,
    alert: AlertView,
    at: u64,
) -> AlertEntry {
    let mut clears = Vec::new();
    if let Some(i) = old.and_then(|o| list.iter().position(|a| a.id == o)) {
        let previous = list.remove(i);
        if previous.alert.level != AlertLevel::Info && previous.cleared_by.is_none() {
            clears.push(previous.id);
        }
    }
    let entry = AlertEntry { id, at, alert, clears, cleared_by: None, acked_at: None };
    list.push(entry.clone());
    trim_alerts(list);
    entry
}

/// Keeps a copy of an alert already kept elsewhere (the spectators' delayed copy of the
/// operator's book): the alerts it clears are marked, and the list is trimmed.
pub(super) fn keep(list: &mut Vec<AlertEntry>, entry: AlertEntry) {
    for a in list.iter_mut().filter(|a| entry.clears.contains(&a.id)) {
        a.cleared_by = Some(entry.id);
    }
    list.push(entry);
    trim_alerts(list);
}

/// Marks alert `id` of `list` acknowledged at `at`, if it is there and was not yet.
pub(super) fn acknowledge(list: &mut [AlertEntry], id: u64, at: u64) {
    if let Some(a) = list.iter_mut().find(|a| a.id == id) {
        a.acked_at.get_or_insert(at);
    }
}

/// An alert delta as sent: the alert with its id, time and state.
#[derive(Serialize)]
#[serde(tag = "type", rename = "alert")]
pub(super) struct AlertFrame<'a> {
    pub(super) board: Option<u32>,
    pub(super) alert: &'a AlertEntry,
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::feed::{Delta, Hub};

    #[test]
    fn the_feed_schema_lists_every_alert_code() {
        let schema: serde_json::Value =
            serde_json::from_str(include_str!("../../schema/feed.schema.json")).unwrap();
        let listed: Vec<&str> = schema["$defs"]["alert_code"]["enum"]
            .as_array()
            .unwrap()
            .iter()
            .map(|v| v.as_str().unwrap())
            .collect();
        let codes: Vec<&str> = AlertCode::ALL.into_iter().map(AlertCode::as_str).collect();
        let mut a = listed.clone();
        let mut b = codes.clone();
        a.sort_unstable();
        b.sort_unstable();
        assert_eq!(a, b, "host/schema/feed.schema.json $defs.alert_code");
    }

    fn alert(code: AlertCode, level: AlertLevel) -> Delta {
        Delta::Alert {
            board: Some(1),
            alert: AlertView { code, level, message: code.to_string(), squares: Vec::new() },
        }
    }

    #[test]
    fn a_board_back_resolves_its_not_responding_and_an_ack_is_kept_and_sent_once() {
        let hub = Hub::new(1, crate::clock::Clock::manual(1_764_000_000_000));
        hub.publish(alert(AlertCode::NotResponding, AlertLevel::Error));
        hub.publish(alert(AlertCode::NotResponding, AlertLevel::Error));
        hub.publish(alert(AlertCode::BatteryLow, AlertLevel::Warning));
        let (_, mut rx) = hub.subscribe();
        hub.publish(alert(AlertCode::BoardBack, AlertLevel::Info));
        let frame: serde_json::Value = serde_json::from_str(rx.try_recv().unwrap().json.as_str()).unwrap();
        let alerts = hub.board(1).unwrap().alerts;
        let back = alerts[3].id;
        assert_eq!(frame["alert"]["id"], back);
        assert_eq!(frame["alert"]["clears"], serde_json::json!([alerts[0].id, alerts[1].id]));
        assert!(frame["alert"]["at"].as_u64().unwrap() > 0);
        // Both unplug alerts resolved, the battery still open.
        let open: Vec<AlertCode> = alerts.iter().filter(|a| a.open()).map(|a| a.code).collect();
        assert_eq!(open, [AlertCode::BatteryLow]);
        assert_eq!(
            (alerts[0].cleared_by, alerts[1].cleared_by, alerts[2].cleared_by),
            (Some(back), Some(back), None)
        );
        // Acknowledged: kept, sent as one `alert_ack`, and a second ack sends nothing.
        let battery = alerts[2].id;
        let (board, acked) = hub.ack(battery).unwrap();
        assert_eq!(board, Some(1));
        assert!(acked.acked_at.is_some() && !acked.open());
        let frame: serde_json::Value = serde_json::from_str(rx.try_recv().unwrap().json.as_str()).unwrap();
        assert_eq!((frame["type"].as_str(), frame["id"].as_u64()), (Some("alert_ack"), Some(battery)));
        assert_eq!(hub.ack(battery).unwrap().1.acked_at, acked.acked_at);
        assert!(rx.try_recv().is_err(), "no second alert_ack");
        assert!(hub.ack(12345).is_none(), "an unknown id");
        assert!(hub.board(1).unwrap().alerts.iter().all(|a| !a.open()));
    }

    #[test]
    fn a_full_alert_list_drops_what_no_longer_needs_the_operator_first() {
        let hub = Hub::new(1, crate::clock::Clock::manual(1_764_000_000_000));
        hub.publish(alert(AlertCode::PositionMismatch, AlertLevel::Warning));
        let first = hub.board(1).unwrap().alerts[0].id;
        for _ in 0..MAX_ALERTS {
            hub.publish(alert(AlertCode::BatteryOk, AlertLevel::Info));
        }
        let alerts = hub.board(1).unwrap().alerts;
        assert_eq!(alerts.len(), MAX_ALERTS);
        assert_eq!(alerts[0].id, first, "the open mismatch is kept; an info alert went");
    }

    /// Issue 15, recipe 11: a condition's info clears its error from what snapshots show;
    /// other relay-wide alerts stay, and connected clients get every alert as it comes.
    #[test]
    fn a_resolved_condition_is_cleared_from_snapshots() {
        let hub = Hub::new(1, crate::clock::Clock::manual(1_764_000_000_000));
        let (_, mut rx) = hub.subscribe();
        let alert = |level, message: &str| AlertView {
            code: AlertCode::Storage,
            level,
            message: message.into(),
            squares: Vec::new(),
        };
        hub.publish(Delta::Alert { board: None, alert: alert(AlertLevel::Warning, "journal repaired") });
        hub.publish_condition("pgn", alert(AlertLevel::Error, "cannot write PGN"));
        let messages =
            |hub: &Hub| hub.relay_alerts().into_iter().map(|a| a.alert.message).collect::<Vec<_>>();
        assert_eq!(messages(&hub), ["journal repaired", "cannot write PGN"]);
        hub.publish_condition("pgn", alert(AlertLevel::Info, "PGN written again"));
        assert_eq!(messages(&hub), ["journal repaired", "PGN written again"]);
        assert_eq!(hub.admin_relay_alerts().len(), 2);
        let frames: Vec<String> =
            std::iter::from_fn(|| rx.try_recv().ok()).map(|f| f.json.to_string()).collect();
        assert_eq!(frames.len(), 3, "{frames:?}");
        assert!(frames[1].contains("cannot write PGN") && frames[2].contains("PGN written again"));
    }
}
