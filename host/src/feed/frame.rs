//! A feed frame: one numbered delta as JSON, and as the websocket frame written to every
//! client.

use axum::extract::ws::Utf8Bytes;

use super::FEED_VERSION;

/// Deltas kept for slow receivers before they lag.
pub const RING: usize = 4096;

/// A serialised delta, shared by every receiver.
#[derive(Clone, Debug)]
pub struct Frame {
    /// Its sequence number.
    pub seq: u64,
    /// The board it is about (None: every subscriber gets it).
    pub board: Option<u32>,
    /// The JSON text: `{"v":1,"seq":N,` then the delta's fields.
    pub json: Utf8Bytes,
    /// The websocket text frame of `json`, as written to every client's socket.
    pub wire: axum::body::Bytes,
    /// Where the delta's fields start in `json` (after `"seq":N,`).
    rest: usize,
}

impl Frame {
    /// A frame with `seq` and `delta_json` (a JSON object, `{"type":...}`).
    pub(super) fn new(seq: u64, board: Option<u32>, delta_json: &str) -> Frame {
        let head = format!(r#"{{"v":{FEED_VERSION},"seq":{seq},"#);
        let rest = head.len();
        let json = head + delta_json.strip_prefix('{').unwrap_or(delta_json);
        let wire = super::wire::text(&json);
        Frame { seq, board, json: json.into(), wire, rest }
    }

    /// The same frame numbered `seq`: the sequence of a subscription to some boards, which
    /// counts that connection's deltas only (see `API.md`).
    pub fn renumbered(&self, seq: u64) -> Utf8Bytes {
        format!(r#"{{"v":{FEED_VERSION},"seq":{seq},{}"#, &self.json.as_str()[self.rest..]).into()
    }
}
