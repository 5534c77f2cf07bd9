//! A websocket client of the relay's `/ws` feed that keeps, per board and round, what a
//! viewer was shown: the confirmed moves (with retractions and board replacements
//! applied), every confirmed move ever sent (to find ghosts that were later withdrawn),
//! results, and sequence-number or protocol problems. Every frame can also be written to
//! a file with the time it arrived ([`Recorder::start_logged`]), to line up what the relay
//! published (provisional moves, retractions, mismatches) with its log.

use std::collections::BTreeMap;
use std::net::SocketAddr;
use std::sync::{Arc, Mutex};

use futures_util::StreamExt;
use serde_json::Value;
use tokio_tungstenite::tungstenite::Message;

/// One move as the feed showed it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct FeedMove {
    /// 1-based ply.
    pub ply: u32,
    /// UCI.
    pub uci: String,
    /// SAN.
    pub san: String,
    /// `%clk`, seconds.
    pub clk: Option<u64>,
    /// `%emt`, seconds.
    pub emt: Option<u64>,
}

/// One game (a board in a round) as the feed showed it.
#[derive(Clone, Debug, Default)]
pub struct FeedGame {
    /// The confirmed moves now.
    pub moves: Vec<FeedMove>,
    /// Every confirmed move delta received, in order (ply, uci).
    pub confirmed_sent: Vec<(u32, String)>,
    /// Confirmed moves withdrawn by a `retract` with state `confirmed`.
    pub confirmed_retracted: u32,
    /// The result now.
    pub result: Option<String>,
    /// The termination now.
    pub termination: Option<String>,
}

/// Everything the feed showed.
#[derive(Clone, Debug, Default)]
pub struct FeedState {
    /// Games by (board, round).
    pub games: BTreeMap<(u64, u64), FeedGame>,
    /// The current round of each board.
    pub round_of: BTreeMap<u64, u64>,
    /// The serial number of each board.
    pub serial_of: BTreeMap<u64, String>,
    /// Each board's status changes (`active`, `not_responding`, ...), in order.
    pub statuses: BTreeMap<u64, Vec<String>>,
    /// Frames received.
    pub frames: u64,
    /// Snapshots received (the first one included).
    pub snapshots: u64,
    /// Problems: sequence gaps, malformed frames, deltas for unknown boards.
    pub problems: Vec<String>,
    /// Last sequence number.
    pub seq: Option<u64>,
    /// True once the connection closed.
    pub closed: bool,
}

impl FeedState {
    /// The board number of a serial, if the feed has seen it.
    pub fn board_of_serial(&self, serial: &str) -> Option<u64> {
        self.serial_of.iter().find(|(_, s)| s.as_str() == serial).map(|(b, _)| *b)
    }

    fn game(&mut self, board: u64) -> &mut FeedGame {
        let round = self.round_of.get(&board).copied().unwrap_or(1);
        self.games.entry((board, round)).or_default()
    }

    fn apply_view(&mut self, view: &Value) {
        let Some(board) = view["board"].as_u64() else {
            self.problems.push(format!("board view without a number: {view}"));
            return;
        };
        let round = view["round"].as_u64().unwrap_or(1);
        self.round_of.insert(board, round);
        if let Some(s) = view["serial"].as_str() {
            self.serial_of.insert(board, s.to_owned());
        }
        let moves: Vec<FeedMove> =
            view["moves"].as_array().map(|a| a.iter().filter_map(parse_move).collect()).unwrap_or_default();
        let g = self.games.entry((board, round)).or_default();
        g.moves = moves;
        g.result = view["result"].as_str().map(str::to_owned);
        g.termination = view["termination"].as_str().map(str::to_owned);
    }

    /// Applies one frame.
    pub fn apply(&mut self, f: &Value) {
        self.frames += 1;
        let kind = f["type"].as_str().unwrap_or("");
        if kind == "snapshot" {
            self.snapshots += 1;
            self.seq = f["seq"].as_u64();
            for v in f["boards"].as_array().into_iter().flatten() {
                self.apply_view(v);
            }
            return;
        }
        if let Some(s) = f["seq"].as_u64() {
            if let Some(prev) = self.seq
                && s != prev + 1
            {
                self.problems.push(format!("sequence gap: {prev} then {s}"));
            }
            self.seq = Some(s);
        }
        let board = f["board"].as_u64();
        match (kind, board) {
            ("move", Some(b)) if f["state"] == "confirmed" => {
                let Some(m) = parse_move(&f["move"]) else {
                    self.problems.push(format!("bad move frame {f}"));
                    return;
                };
                let g = self.game(b);
                let keep = (m.ply as usize).saturating_sub(1);
                if keep > g.moves.len() {
                    let n = g.moves.len();
                    self.problems.push(format!("board {b}: confirmed ply {} after {n} moves", m.ply));
                    return;
                }
                g.confirmed_sent.push((m.ply, m.uci.clone()));
                g.moves.truncate(keep);
                g.moves.push(m);
            }
            ("retract", Some(b)) if f["state"] == "confirmed" => {
                let from = f["from_ply"].as_u64().unwrap_or(1) as usize;
                let g = self.game(b);
                let keep = from.saturating_sub(1);
                if keep < g.moves.len() {
                    g.confirmed_retracted += (g.moves.len() - keep) as u32;
                    g.moves.truncate(keep);
                }
            }
            ("result", Some(b)) => {
                let (r, t) =
                    (f["result"].as_str().map(str::to_owned), f["termination"].as_str().map(str::to_owned));
                let g = self.game(b);
                g.result = r;
                g.termination = t;
            }
            ("board", _) => self.apply_view(&f["view"]),
            ("status", Some(b)) => {
                if let Some(s) = f["serial"].as_str() {
                    self.serial_of.insert(b, s.to_owned());
                }
                if let Some(s) = f["status"].as_str() {
                    self.statuses.entry(b).or_default().push(s.to_owned());
                }
            }
            ("error", _) => self.problems.push(format!("error frame {f}")),
            _ => {}
        }
    }
}

fn parse_move(m: &Value) -> Option<FeedMove> {
    Some(FeedMove {
        ply: u32::try_from(m["ply"].as_u64()?).ok()?,
        uci: m["uci"].as_str()?.to_owned(),
        san: m["san"].as_str().unwrap_or("").to_owned(),
        clk: m["clk"].as_u64(),
        emt: m["emt"].as_u64(),
    })
}

/// A recording websocket client, running on a tokio runtime.
#[derive(Clone, Debug)]
pub struct Recorder {
    /// What it saw.
    pub state: Arc<Mutex<FeedState>>,
}

impl Recorder {
    /// Connects to `ws://addr/ws` and records every frame in a task of `rt`.
    pub fn start(rt: &tokio::runtime::Handle, addr: SocketAddr) -> anyhow::Result<Recorder> {
        Recorder::start_logged(rt, addr, None)
    }

    /// As [`Recorder::start`], and writes every frame to `log` (when given), one line each:
    /// the UTC time it arrived (seconds since 1970, as the relay's log can be read with
    /// microseconds), then the frame.
    pub fn start_logged(
        rt: &tokio::runtime::Handle,
        addr: SocketAddr,
        log: Option<&std::path::Path>,
    ) -> anyhow::Result<Recorder> {
        use std::io::Write;
        let mut log = match log {
            Some(p) => Some(std::io::BufWriter::new(std::fs::File::create(p)?)),
            None => None,
        };
        let state = Arc::new(Mutex::new(FeedState::default()));
        let url = format!("ws://{addr}/ws");
        let (ws, _) = rt.block_on(tokio_tungstenite::connect_async(url))?;
        let st = Arc::clone(&state);
        rt.spawn(async move {
            let (_tx, mut rx) = ws.split();
            while let Some(msg) = rx.next().await {
                match msg {
                    Ok(Message::Text(t)) => {
                        if let Some(w) = log.as_mut() {
                            let at = std::time::SystemTime::now()
                                .duration_since(std::time::UNIX_EPOCH)
                                .map_or(0.0, |d| d.as_secs_f64());
                            // A log that cannot be written is given up, not the feed.
                            if writeln!(w, "{at:.6} {}", t.as_str()).and_then(|()| w.flush()).is_err() {
                                log = None;
                            }
                        }
                        let v: Value = match serde_json::from_str(t.as_str()) {
                            Ok(v) => v,
                            Err(e) => {
                                if let Ok(mut s) = st.lock() {
                                    s.problems.push(format!("not JSON: {e}"));
                                }
                                continue;
                            }
                        };
                        if let Ok(mut s) = st.lock() {
                            s.apply(&v);
                        }
                    }
                    Ok(Message::Close(_)) | Err(_) => break,
                    Ok(_) => {}
                }
            }
            if let Ok(mut s) = st.lock() {
                s.closed = true;
            }
        });
        Ok(Recorder { state })
    }

    /// Runs `f` on the state.
    pub fn with<T>(&self, f: impl FnOnce(&FeedState) -> T) -> T {
        match self.state.lock() {
            Ok(s) => f(&s),
            Err(p) => f(&p.into_inner()),
        }
    }
}
