//! The feed's views: what a client, `/api/boards` and the operator's console see of a
//! board, and the deltas that change it. Each [`Delta`] is one feed frame type; its serde
//! form is the feed's JSON (`host/schema/feed.schema.json`).

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use super::alerts::{AlertEntry, AlertView};
use crate::tournament::Pairing;

/// A board's connection state, as LiveChess names them where they overlap.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum BoardStatus {
    /// Known (from the configuration or a journal) but never seen since start.
    Offline,
    /// Port open, handshake in progress.
    Connecting,
    /// Handshake done; events flow.
    Active,
    /// Silence or an I/O error: the session is reopening the port.
    NotResponding,
}

/// Whether a move may still change.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum MoveState {
    /// Shown on the board, not yet certain; may be retracted. Never in PGN.
    Provisional,
    /// Certain, journaled and in the PGN.
    Confirmed,
}

/// One ply.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct MoveView {
    /// 1-based ply number.
    pub ply: u32,
    /// SAN with check suffix.
    pub san: String,
    /// UCI.
    pub uci: String,
    /// The mover's clock after the move, seconds (`%clk`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub clk: Option<u32>,
    /// Time used on the move, seconds (`%emt`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub emt: Option<u32>,
    /// When the relay published the move, milliseconds since 1970 (UTC), stamped by the
    /// hub ([`Hub::publish`](crate::feed::Hub::publish)); absent for moves recovered from a journal at start (journals
    /// keep no wall-clock time per move).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub at: Option<u64>,
}

impl From<&crate::record::JournalMove> for MoveView {
    fn from(m: &crate::record::JournalMove) -> MoveView {
        MoveView { ply: m.ply, san: m.san.clone(), uci: m.uci.clone(), clk: m.clk, emt: m.emt, at: None }
    }
}

impl From<&dgt_core::MoveInfo> for MoveView {
    fn from(m: &dgt_core::MoveInfo) -> MoveView {
        MoveView {
            ply: u32::from(m.ply),
            san: m.san.to_string(),
            uci: m.uci.to_string(),
            clk: m.clk,
            emt: m.emt,
            at: None,
        }
    }
}

/// Which side's clock runs.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Side {
    /// White.
    White,
    /// Black.
    Black,
}

/// Both clocks.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct ClockView {
    /// White's time, seconds.
    pub white: Option<u32>,
    /// Black's time, seconds.
    pub black: Option<u32>,
    /// Whose clock runs; null when stopped.
    pub running: Option<Side>,
}

/// Everything about one board and its current game.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct BoardView {
    /// Board number.
    pub board: u32,
    /// The e-board's serial number, once known.
    pub serial: Option<String>,
    /// The serial port it was last seen on: in the operator's views only (spectators'
    /// views leave it out).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub port: Option<String>,
    /// Connection state.
    pub status: BoardStatus,
    /// Round of the current game.
    pub round: u32,
    /// Players.
    pub pairing: Pairing,
    /// Start position when not the standard one.
    pub start_fen: Option<String>,
    /// Position after the confirmed moves (FEN), when known.
    pub fen: Option<String>,
    /// Position after the provisional moves too (FEN): what the board shows.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub live_fen: Option<String>,
    /// Confirmed moves.
    pub moves: Vec<MoveView>,
    /// Provisional moves after the confirmed ones.
    pub provisional: Vec<MoveView>,
    /// Clocks, when a clock is attached.
    pub clock: Option<ClockView>,
    /// The result, once the game is over (`1-0`, `0-1`, `1/2-1/2`).
    pub result: Option<String>,
    /// The PGN `Termination`, when over.
    pub termination: Option<String>,
    /// The board is used rotated (White at the connector's right).
    pub flipped: bool,
    /// The board's last reported battery charge, percent (Bluetooth boards); absent when
    /// the board never reported one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub battery: Option<u8>,
    /// The latest alerts, oldest first.
    pub alerts: Vec<AlertEntry>,
}

impl BoardView {
    /// A board with no game yet.
    pub fn new(board: u32, round: u32) -> BoardView {
        BoardView {
            board,
            serial: None,
            port: None,
            status: BoardStatus::Offline,
            round,
            pairing: Pairing::default(),
            start_fen: None,
            fen: None,
            live_fen: None,
            moves: Vec::new(),
            provisional: Vec::new(),
            clock: None,
            result: None,
            termination: None,
            flipped: false,
            battery: None,
            alerts: Vec::new(),
        }
    }
}

/// One change. Each variant is one feed frame type (`"type"` in JSON).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum Delta {
    /// A move, provisional or confirmed. A confirmed move at ply `p` replaces any move at
    /// `p` or later; a provisional one replaces provisional moves from `p` on. `fen` is the
    /// position after it.
    Move {
        /// Board number.
        board: u32,
        /// Provisional or confirmed.
        state: MoveState,
        /// The move.
        #[serde(rename = "move")]
        mv: MoveView,
        /// The position after the move (confirmed, or the board's with the provisional
        /// moves).
        #[serde(default, skip_serializing_if = "Option::is_none")]
        fen: Option<String>,
    },
    /// Moves from `from_ply` on are withdrawn (a provisional move the board no longer shows,
    /// or confirmed moves taken back).
    Retract {
        /// Board number.
        board: u32,
        /// Which list.
        state: MoveState,
        /// First withdrawn ply.
        from_ply: u32,
        /// The position after the remaining moves of that list (confirmed; or confirmed and
        /// provisional).
        #[serde(default, skip_serializing_if = "Option::is_none")]
        fen: Option<String>,
    },
    /// The clocks changed.
    Clock {
        /// Board number.
        board: u32,
        /// The clocks.
        clock: ClockView,
    },
    /// The connection state changed.
    Status {
        /// Board number.
        board: u32,
        /// New state.
        status: BoardStatus,
        /// Serial number.
        serial: Option<String>,
        /// Port (left out of the spectators' feed).
        #[serde(default, skip_serializing_if = "Option::is_none")]
        port: Option<String>,
    },
    /// An operator alert; `board` is null for relay-wide alerts. The hub gives it an id and
    /// a time, and sends it as an [`AlertEntry`].
    Alert {
        /// Board number, if about one board.
        board: Option<u32>,
        /// The alert.
        alert: AlertView,
    },
    /// An operator acknowledged an alert ([`Hub::ack`](crate::feed::Hub::ack)).
    AlertAck {
        /// The alert's board (null: relay-wide).
        board: Option<u32>,
        /// The alert's id.
        id: u64,
        /// When, milliseconds since 1970.
        acked_at: u64,
    },
    /// The game ended (or the operator set or cleared a result: null clears).
    Result {
        /// Board number.
        board: u32,
        /// `1-0`, `0-1`, `1/2-1/2` or null.
        result: Option<String>,
        /// PGN `Termination`.
        termination: Option<String>,
    },
    /// The whole board was replaced: a new game, new pairing, flip, start position or a
    /// corrected move.
    Board {
        /// The new state.
        view: Box<BoardView>,
    },
}

impl Delta {
    /// The board the delta is about, if any.
    pub fn board(&self) -> Option<u32> {
        match self {
            Delta::Move { board, .. }
            | Delta::Retract { board, .. }
            | Delta::Clock { board, .. }
            | Delta::Status { board, .. }
            | Delta::Result { board, .. } => Some(*board),
            Delta::Alert { board, .. } | Delta::AlertAck { board, .. } => *board,
            Delta::Board { view } => Some(view.board),
        }
    }

    /// Applies the delta to the boards. Alerts and acknowledgements are the hub's own
    /// state ([`Hub::publish`](crate::feed::Hub::publish) keeps them), so they are not applied here.
    pub(super) fn apply(&self, boards: &mut BTreeMap<u32, BoardView>, round: u32) {
        if matches!(self, Delta::Alert { .. } | Delta::AlertAck { .. }) {
            return;
        }
        let Some(n) = self.board() else { return };
        let view = boards.entry(n).or_insert_with(|| BoardView::new(n, round));
        match self {
            Delta::Move { state: MoveState::Confirmed, mv, fen, .. } => {
                view.moves.retain(|m| m.ply < mv.ply);
                view.moves.push(mv.clone());
                view.provisional.retain(|m| m.ply > mv.ply);
                if fen.is_some() {
                    view.fen.clone_from(fen);
                    if view.provisional.is_empty() {
                        view.live_fen.clone_from(fen);
                    }
                }
            }
            Delta::Move { state: MoveState::Provisional, mv, fen, .. } => {
                view.provisional.retain(|m| m.ply < mv.ply);
                view.provisional.push(mv.clone());
                if fen.is_some() {
                    view.live_fen.clone_from(fen);
                }
            }
            Delta::Retract { state: MoveState::Provisional, from_ply, fen, .. } => {
                view.provisional.retain(|m| m.ply < *from_ply);
                if fen.is_some() {
                    view.live_fen.clone_from(fen);
                }
            }
            Delta::Retract { state: MoveState::Confirmed, from_ply, fen, .. } => {
                view.moves.retain(|m| m.ply < *from_ply);
                view.provisional.clear();
                if fen.is_some() {
                    view.fen.clone_from(fen);
                    view.live_fen.clone_from(fen);
                }
            }
            Delta::Clock { clock, .. } => view.clock = Some(*clock),
            Delta::Status { status, serial, port, .. } => {
                view.status = *status;
                if serial.is_some() {
                    view.serial.clone_from(serial);
                }
                if port.is_some() {
                    view.port.clone_from(port);
                }
            }
            Delta::Alert { .. } | Delta::AlertAck { .. } => {}
            Delta::Result { result, termination, .. } => {
                view.result.clone_from(result);
                view.termination.clone_from(termination);
            }
            Delta::Board { view: new } => *view = (**new).clone(),
        }
    }
}

/// A consistent copy of every board at one sequence number.
#[derive(Clone, Debug, Serialize)]
pub struct Snapshot {
    /// The sequence number of the last delta included.
    pub seq: u64,
    /// Boards by number.
    pub boards: Vec<BoardView>,
}
