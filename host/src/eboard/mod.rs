//! DGT LiveChess's "EBoard API", so programs made for LiveChess (chess.com's DGT play,
//! Lichess's `/dgt` page, DgtAngel, livechess clients) use the boards this relay reads.
//!
//! Opt-in (`--eboard-api`, `eboard_api` in the configuration), on its own loopback port
//! (1982 by default, as LiveChess): a websocket at `/api/v1.0` speaking LiveChess's JSON
//! calls ([`wire`]), and the board list at `GET /api/v1.0/eboards` ([`api`]).
//!
//! Every board the relay reads with a known serial number is an eboard, each board of a
//! chain too. Each board task hands its board to its [`BoardFeed`] after every batch of its
//! session's effects: the raw boards the session read (one per physical change, a piece in
//! the air included; the session keeps them, the host reconstructs nothing), the clock, the
//! orientation and the confirmed moves. The [`Eboards`] registry keeps the latest of each
//! board and tells the connected clients what changed.
//!
//! # Why `san[]` is the relay's confirmed moves
//! LiveChess guesses moves from the positions after a client's `setup`. Here the moves are
//! the relay's judgement: a client that asks for moves gets the moves the relay confirmed
//! (on a clock press, or the board standing still without a clock), never a guess.

pub mod api;
pub mod wire;

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};

use dgt_core::ClockState;
use dgt_protocol::{BoardDump, DgtSquare, Orientation};
use dgt_session::LinkState;
use shakmaty::{Board, Color};
use tokio::sync::broadcast;

use crate::record::GameRecord;

/// The port LiveChess listens on.
pub const DEFAULT_PORT: u16 = 1982;
/// Changes a slow client may fall behind by before it is sent the whole board again.
const CHANGES_KEPT: usize = 1024;

/// One confirmed move, as the feed's `san[]` needs it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PlayedMove {
    /// SAN with check suffix.
    pub san: String,
    /// The FEN after it.
    pub fen: String,
}

/// The game the relay records on a board: its identity, start and confirmed moves.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct GameMoves {
    /// Round, date and time the record opened: a new game has a new one.
    pub id: (u32, String, String),
    /// The start position's FEN.
    pub start_fen: String,
    /// The confirmed moves.
    pub moves: Vec<PlayedMove>,
}

impl GameMoves {
    fn of(rec: &GameRecord) -> GameMoves {
        let h = &rec.header;
        GameMoves {
            id: (h.round, h.utc_date.clone(), h.utc_time.clone()),
            start_fen: h.start_fen.clone().unwrap_or_else(|| crate::record::START_FEN.to_owned()),
            moves: rec
                .moves
                .iter()
                .map(|m| PlayedMove { san: m.san.clone(), fen: m.fen.clone().unwrap_or_default() })
                .collect(),
        }
    }

    /// The FEN after `plies` moves.
    pub fn fen_after(&self, plies: usize) -> &str {
        match plies.checked_sub(1).and_then(|i| self.moves.get(i)) {
            Some(m) => &m.fen,
            None => &self.start_fen,
        }
    }
}

/// The clocks as LiveChess gives them.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ClockReading {
    /// White's time, seconds.
    pub white: u32,
    /// Black's time, seconds.
    pub black: u32,
    /// Whose clock runs.
    pub running: Option<Color>,
    /// When it was read, milliseconds since 1970.
    pub at_ms: u64,
}

/// One eboard as clients see it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Eboard {
    /// The relay's board number.
    pub number: u32,
    /// The board's serial number.
    pub serial: String,
    /// The port it is on.
    pub source: Option<String>,
    /// The link's state.
    pub link: LinkState,
    /// Battery charge, percent (boards on Bluetooth).
    pub battery: Option<u8>,
    /// The pieces on the board as a FEN's first field; `None` before the first reading
    /// (and for a board whose session runs on a relay box).
    pub board: Option<String>,
    /// The board is used rotated.
    pub flipped: bool,
    /// The clocks, once read.
    pub clock: Option<ClockReading>,
    /// The game the relay records on it.
    pub game: Arc<GameMoves>,
}

/// What changed on a board, as the feed tells it.
#[derive(Clone, Debug)]
pub enum Change {
    /// The pieces on the board (or its orientation).
    Board {
        /// The relay's board number.
        number: u32,
        /// The pieces, as a FEN's first field.
        board: String,
    },
    /// The clocks.
    Clock {
        /// The relay's board number.
        number: u32,
    },
    /// The game's confirmed moves.
    Game {
        /// The relay's board number.
        number: u32,
    },
}

impl Change {
    /// The board it is about.
    pub fn number(&self) -> u32 {
        match self {
            Change::Board { number, .. } | Change::Clock { number } | Change::Game { number } => *number,
        }
    }
}

/// Every eboard, and the changes clients follow. See the module docs.
#[derive(Debug)]
pub struct Eboards {
    boards: Mutex<BTreeMap<u32, Eboard>>,
    changes: broadcast::Sender<Change>,
}

impl Default for Eboards {
    fn default() -> Self {
        Eboards { boards: Mutex::default(), changes: broadcast::channel(CHANGES_KEPT).0 }
    }
}

impl Eboards {
    /// Every eboard, by board number.
    pub fn list(&self) -> Vec<Eboard> {
        self.boards.lock().unwrap_or_else(|p| p.into_inner()).values().cloned().collect()
    }

    /// The eboard with this serial number.
    pub fn by_serial(&self, serial: &str) -> Option<Eboard> {
        self.boards.lock().unwrap_or_else(|p| p.into_inner()).values().find(|b| b.serial == serial).cloned()
    }

    /// The eboard with this board number.
    pub fn by_number(&self, number: u32) -> Option<Eboard> {
        self.boards.lock().unwrap_or_else(|p| p.into_inner()).get(&number).cloned()
    }

    /// Changes from now on.
    pub fn follow(&self) -> broadcast::Receiver<Change> {
        self.changes.subscribe()
    }

    fn store(&self, board: Eboard) {
        self.boards.lock().unwrap_or_else(|p| p.into_inner()).insert(board.number, board);
    }

    fn tell(&self, change: Change) {
        // No client: nothing to tell.
        let _ = self.changes.send(change);
    }
}

/// What a board task knows of its board after a batch of effects.
#[derive(Debug)]
pub struct Reading<'a> {
    /// The serial number, once known.
    pub serial: Option<&'a str>,
    /// The port.
    pub port: Option<&'a str>,
    /// The link's state.
    pub link: LinkState,
    /// Battery charge, percent.
    pub battery: Option<u8>,
    /// Rotated.
    pub flipped: bool,
    /// The raw boards the session read since the last reading, oldest first.
    pub raw: &'a [BoardDump],
    /// The clocks as last read.
    pub clock: Option<&'a ClockState>,
    /// The game being recorded.
    pub game: Option<&'a GameRecord>,
    /// Now, milliseconds since 1970.
    pub now_ms: u64,
}

/// One board task's link to the registry: publishes what changed on its board.
#[derive(Debug)]
pub struct BoardFeed {
    number: u32,
    eboards: Arc<Eboards>,
    /// The last raw board read, for a change of orientation.
    last_raw: Option<BoardDump>,
    last: Option<Eboard>,
}

impl BoardFeed {
    /// The feed of board `number`.
    pub fn new(number: u32, eboards: Arc<Eboards>) -> BoardFeed {
        BoardFeed { number, eboards, last_raw: None, last: None }
    }

    /// Publishes what changed since the last reading.
    pub fn update(&mut self, r: &Reading<'_>) {
        let Some(serial) = r.serial else { return };
        let prev = self.last.as_ref();
        let mut boards: Vec<String> = r.raw.iter().map(|d| placement(d, r.flipped)).collect();
        if let Some(last) = r.raw.last() {
            self.last_raw = Some(*last);
        } else if prev.is_some_and(|p| p.flipped != r.flipped)
            && let Some(raw) = self.last_raw
        {
            // Turned: the same pieces, seen the other way round.
            boards.push(placement(&raw, r.flipped));
        }
        let clock = match r.clock {
            Some(c) => match (c.white, c.black) {
                (Some(white), Some(black)) => {
                    let same = prev
                        .and_then(|p| p.clock)
                        .filter(|p| (p.white, p.black, p.running) == (white, black, c.running));
                    same.or(Some(ClockReading { white, black, running: c.running, at_ms: r.now_ms }))
                }
                _ => None,
            },
            None => None,
        };
        let game = match (r.game, prev) {
            (Some(g), Some(p)) if same_game(&p.game, g) => Arc::clone(&p.game),
            (Some(g), _) => Arc::new(GameMoves::of(g)),
            (None, _) => Arc::new(GameMoves::default()),
        };
        let board = Eboard {
            number: self.number,
            serial: serial.to_owned(),
            source: r.port.map(str::to_owned),
            link: r.link,
            battery: r.battery,
            board: boards.last().cloned().or_else(|| prev.and_then(|p| p.board.clone())),
            flipped: r.flipped,
            clock,
            game,
        };
        if prev == Some(&board) {
            return;
        }
        let clock_changed = prev.is_some_and(|p| p.clock != board.clock);
        let game_changed = prev.is_some_and(|p| !Arc::ptr_eq(&p.game, &board.game));
        self.eboards.store(board.clone());
        self.last = Some(board);
        let n = self.number;
        for b in boards {
            self.eboards.tell(Change::Board { number: n, board: b });
        }
        if clock_changed {
            self.eboards.tell(Change::Clock { number: n });
        }
        if game_changed {
            self.eboards.tell(Change::Game { number: n });
        }
    }
}

/// The game record holds the same moves as `moves`.
fn same_game(moves: &GameMoves, rec: &GameRecord) -> bool {
    let h = &rec.header;
    moves.id.0 == h.round
        && moves.id.1 == h.utc_date
        && moves.id.2 == h.utc_time
        && moves.moves.len() == rec.moves.len()
        && moves.moves.last().map(|m| m.fen.as_str())
            == rec.moves.last().map(|m| m.fen.as_deref().unwrap_or(""))
}

/// The pieces of a raw board as a FEN's first field, White at the bottom (a rotated board's
/// squares turned).
pub fn placement(raw: &BoardDump, flipped: bool) -> String {
    let orientation = if flipped { Orientation::Rotated } else { Orientation::Normal };
    let mut board = Board::empty();
    for i in 0..64u8 {
        let Some(sq) = DgtSquare::new(i) else { continue };
        if let Some(piece) = raw.piece(sq).piece() {
            board.set_piece_at(sq.to_square(orientation), piece);
        }
    }
    board.to_string()
}
