//! The EBoard API's JSON, as LiveChess writes and reads it.
//!
//! A client sends `{"call": NAME, "id": N, "param": …}`; `param` may be absent, `null` or
//! `{}` where a call needs none (clients send all three). Answers:
//! - to a call: `{"response": "call", "id": N, "param": RESULT, "time": MS}`;
//! - on a feed: `{"response": "feed", "id": FEED, "param": {…}, "time": MS}`, with the id the
//!   client chose when subscribing;
//! - a refusal: `{"response": "error", "id": N, "param": {"message": WHY}, "time": MS}`
//!   (`id` is `null` when the frame had none).

use serde_json::{Map, Value, json};
use shakmaty::Color;

use super::{ClockReading, Eboard};
use dgt_session::LinkState;

/// The largest frame a client may send (bytes).
pub const MAX_FRAME: usize = 64 * 1024;

/// A client's call, read leniently.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Call {
    /// `eboards`: the board list.
    Eboards,
    /// `subscribe` to the `eboardevent` feed of a board.
    Subscribe {
        /// The feed id the client chose.
        feed: i64,
        /// The board's serial number.
        serial: String,
    },
    /// `unsubscribe` (a call of its own, or a feed's method): the feed ends.
    Unsubscribe {
        /// The feed id.
        feed: i64,
    },
    /// `call` with method `setup`: moves are told from this position on.
    Setup {
        /// The feed id.
        feed: i64,
        /// The position.
        fen: String,
    },
    /// `call` with method `flip`: the board's orientation.
    Flip {
        /// The feed id.
        feed: i64,
        /// Rotated or not; `None` turns it.
        flip: Option<bool>,
    },
}

/// Why a frame was refused, with the call's id when it had one.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Refusal {
    /// The call's id.
    pub id: Option<i64>,
    /// What is wrong.
    pub message: String,
}

fn refuse(id: Option<i64>, message: impl Into<String>) -> Refusal {
    Refusal { id, message: message.into() }
}

/// Reads a text frame: the call's id and the call.
pub fn parse(text: &str) -> Result<(i64, Call), Refusal> {
    let v: Value = serde_json::from_str(text).map_err(|e| refuse(None, format!("not JSON: {e}")))?;
    let Some(obj) = v.as_object() else { return Err(refuse(None, "a call is a JSON object")) };
    let Some(id) = obj.get("id").and_then(Value::as_i64) else {
        return Err(refuse(None, "the call has no integer \"id\""));
    };
    let Some(name) = obj.get("call").and_then(Value::as_str) else {
        return Err(refuse(Some(id), "the call has no \"call\" name"));
    };
    let param = obj.get("param").filter(|p| !p.is_null());
    let call = match name {
        "eboards" => Call::Eboards,
        "subscribe" => {
            let p = param.ok_or_else(|| refuse(Some(id), "subscribe needs a param"))?;
            let feed_name = p.get("feed").and_then(Value::as_str).unwrap_or("");
            if feed_name != "eboardevent" {
                return Err(refuse(Some(id), format!("unknown feed {feed_name:?} (only \"eboardevent\")")));
            }
            let feed = feed_id(p, id)?;
            let serial = p
                .get("param")
                .and_then(|q| q.get("serialnr"))
                .and_then(serial_text)
                .ok_or_else(|| refuse(Some(id), "subscribe needs param.param.serialnr"))?;
            Call::Subscribe { feed, serial }
        }
        "unsubscribe" => {
            let p = param.ok_or_else(|| refuse(Some(id), "unsubscribe needs the feed's id"))?;
            Call::Unsubscribe { feed: feed_id(p, id)? }
        }
        "call" => {
            let p = param
                .ok_or_else(|| refuse(Some(id), "call needs a param with the feed's id and a method"))?;
            let feed = feed_id(p, id)?;
            let args = p.get("param");
            match p.get("method").and_then(Value::as_str) {
                Some("setup") => {
                    let fen = args
                        .and_then(|a| a.get("fen"))
                        .and_then(Value::as_str)
                        .ok_or_else(|| refuse(Some(id), "setup needs param.param.fen"))?;
                    Call::Setup { feed, fen: fen.to_owned() }
                }
                Some("flip") => {
                    Call::Flip { feed, flip: args.and_then(|a| a.get("flip")).and_then(Value::as_bool) }
                }
                Some("unsubscribe") => Call::Unsubscribe { feed },
                Some(m) => return Err(refuse(Some(id), format!("unknown method {m:?}"))),
                None => return Err(refuse(Some(id), "call needs a method")),
            }
        }
        other => return Err(refuse(Some(id), format!("unknown call {other:?}"))),
    };
    Ok((id, call))
}

/// A serial number, given as a string or a number.
fn serial_text(v: &Value) -> Option<String> {
    match v {
        Value::String(s) if s.len() <= 64 => Some(s.clone()),
        Value::Number(n) => Some(n.to_string()),
        _ => None,
    }
}

fn feed_id(p: &Value, id: i64) -> Result<i64, Refusal> {
    p.get("id")
        .and_then(Value::as_i64)
        .ok_or_else(|| refuse(Some(id), "the param needs the feed's integer \"id\""))
}

/// The answer to call `id`.
pub fn reply(id: i64, param: Value, time: u64) -> String {
    json!({"response": "call", "id": id, "param": param, "time": time}).to_string()
}

/// A message on feed `feed`.
pub fn feed(feed: i64, param: Value, time: u64) -> String {
    json!({"response": "feed", "id": feed, "param": param, "time": time}).to_string()
}

/// A refusal.
pub fn error(r: &Refusal, time: u64) -> String {
    json!({"response": "error", "id": r.id, "param": {"message": r.message}, "time": time}).to_string()
}

/// LiveChess's name of a board's state.
fn state(link: LinkState) -> Value {
    match link {
        LinkState::Active => "ACTIVE".into(),
        LinkState::NotResponding => "NOTRESPONDING".into(),
        LinkState::Offline => Value::Null,
    }
}

/// The clocks: seconds, `run` true while White's runs, false while Black's, null when
/// stopped; `time` when read.
pub fn clock(c: Option<&ClockReading>) -> Value {
    match c {
        Some(c) => json!({
            "white": c.white,
            "black": c.black,
            "run": c.running.map(|r| r == Color::White),
            "time": c.at_ms,
        }),
        None => Value::Null,
    }
}

/// One entry of the board list.
pub fn eboard(b: &Eboard) -> Value {
    json!({
        "serialnr": b.serial,
        "source": b.source,
        "state": state(b.link),
        "battery": b.battery.map(|p| format!("{p}%")),
        "comment": Value::Null,
        "board": b.board,
        "flipped": b.flipped,
        "clock": clock(b.clock.as_ref()),
    })
}

/// What a feed message holds beside the serial number and the orientation.
#[derive(Clone, Debug, Default)]
pub struct FeedParts<'a> {
    /// The pieces, when they changed.
    pub board: Option<&'a str>,
    /// The clocks, when they changed (`Some(None)`: told as `null`).
    pub clock: Option<Option<&'a ClockReading>>,
    /// After a `setup`: its position and the moves confirmed from it.
    pub moves: Option<(&'a str, Vec<&'a str>)>,
}

/// A feed message's `param`.
pub fn feed_param(b: &Eboard, parts: FeedParts<'_>) -> Value {
    let mut m = Map::new();
    m.insert("serialnr".into(), b.serial.clone().into());
    m.insert("flipped".into(), b.flipped.into());
    if let Some(board) = parts.board {
        m.insert("board".into(), board.into());
    }
    if let Some(c) = parts.clock {
        m.insert("clock".into(), clock(c));
    }
    if let Some((start, san)) = parts.moves {
        m.insert("start".into(), start.into());
        m.insert("san".into(), san.into());
    }
    Value::Object(m)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_three_forms_of_no_param_are_one_call() {
        for text in [
            r#"{"id":1,"call":"eboards"}"#,
            r#"{"call": "eboards","id": 7,"param": null}"#,
            r#"{"call":"eboards","id":3,"param":{}}"#,
        ] {
            assert!(matches!(parse(text), Ok((_, Call::Eboards))), "{text}");
        }
    }

    #[test]
    fn calls_are_read_as_the_clients_send_them() {
        let sub = r#"{ "call": "subscribe", "id": 999, "param": { "feed": "eboardevent","id": 2,"param": {"serialnr": "23946"}}}"#;
        assert_eq!(parse(sub), Ok((999, Call::Subscribe { feed: 2, serial: "23946".into() })));
        let setup = r#"{"id":3,"call":"call","param":{"id":1,"method":"setup","param":{"fen":"8/8/8/8/8/8/8/8 w - - 0 1"}}}"#;
        assert_eq!(parse(setup), Ok((3, Call::Setup { feed: 1, fen: "8/8/8/8/8/8/8/8 w - - 0 1".into() })));
        let flip = r#"{"id":4,"call":"call","param":{"id":7,"method":"flip","param":{"flip":true}}}"#;
        assert_eq!(parse(flip), Ok((4, Call::Flip { feed: 7, flip: Some(true) })));
    }

    #[test]
    fn bad_frames_are_refused_with_the_id_when_there_is_one() {
        assert_eq!(parse("{not json").map_err(|r| r.id), Err(None));
        assert_eq!(parse(r#"{"call":"eboards"}"#).map_err(|r| r.id), Err(None));
        let unknown = parse(r#"{"id":5,"call":"sources"}"#).unwrap_err();
        assert_eq!(unknown.id, Some(5));
        assert!(unknown.message.contains("sources"), "{}", unknown.message);
        assert_eq!(parse(r#"{"id":6,"call":"subscribe"}"#).map_err(|r| r.id), Err(Some(6)));
        let e: Value = serde_json::from_str(&error(&unknown, 9)).unwrap();
        assert_eq!(e, json!({"response":"error","id":5,"param":{"message":unknown.message},"time":9}));
    }
}
