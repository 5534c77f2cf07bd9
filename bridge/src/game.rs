//! [`GameLog`]: a game as a host journals it, built from the records both ends see.
//!
//! The device keeps one for its current game (and for the previous one until the host has
//! it all): that is the bounded buffer a resume is served from. The host keeps one as its
//! mirror of what it journaled, to tell which of a resumed line's moves it has. Both apply
//! the same records with [`GameLog::apply`], so the two cannot disagree on what a record
//! means.
//!
//! A ply takes 12 bytes (UCI move, `%clk`, `%emt`): a 600-ply game 7 KiB. The SAN and the
//! position after each ply are made again, when a line is sent, by replaying the moves
//! from the start position ([`LineCursor`], the core's [`Replay`]).

use alloc::string::{String, ToString};
use alloc::vec::Vec;

use dgt_core::{FenText, Replay, ResumePly, position_from_fen};
use shakmaty::Chess;
use shakmaty::uci::UciMove;

use crate::convert::move_wire;

use crate::wire::{
    DisplayWire, EndWire, GameKey, GameStart, LineHead, MoveWire, Record, ResultWire, StartWire,
};

/// `%clk`/`%emt` not known.
const NONE: u32 = u32::MAX;
/// Plies a game log grows by.
const GROWTH: usize = 64;

/// One confirmed ply, compactly.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Ply {
    /// The move.
    pub uci: UciMove,
    clk: u32,
    emt: u32,
}

impl Ply {
    /// A ply with its clock values.
    pub fn new(uci: UciMove, clk: Option<u32>, emt: Option<u32>) -> Ply {
        Ply { uci, clk: clk.unwrap_or(NONE), emt: emt.unwrap_or(NONE) }
    }

    /// The ply a move record tells, if its UCI reads.
    pub fn of(mv: &MoveWire) -> Option<Ply> {
        let uci = UciMove::from_ascii(mv.uci.as_bytes()).ok()?;
        Some(Ply::new(uci, mv.clk, mv.emt))
    }

    /// `%clk`, seconds.
    pub fn clk(&self) -> Option<u32> {
        (self.clk != NONE).then_some(self.clk)
    }

    /// `%emt`, seconds.
    pub fn emt(&self) -> Option<u32> {
        (self.emt != NONE).then_some(self.emt)
    }
}

/// A game as a host journals it. See the module docs.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct GameLog {
    /// The host's name for it, once the host told it.
    pub key: Option<GameKey>,
    /// How it started.
    pub start: GameStart,
    /// Rotated now.
    pub flipped: bool,
    /// White's clock display, once certain.
    pub white_clock: Option<DisplayWire>,
    /// The result, when over.
    pub result: Option<(ResultWire, EndWire)>,
    /// Confirmed plies.
    pub plies: Vec<Ply>,
    /// The record that started it (on the device; 0 on the host).
    pub started: u32,
}

/// FNV-1a, 32 bits: small, with no table, enough to tell two lines apart.
struct Fnv(u32);

impl Fnv {
    fn new() -> Fnv {
        Fnv(0x811c_9dc5)
    }

    fn bytes(&mut self, bytes: &[u8]) {
        for b in bytes {
            self.0 = (self.0 ^ u32::from(*b)).wrapping_mul(0x0100_0193);
        }
    }
}

impl GameLog {
    /// A game that has just started.
    pub fn new(start: GameStart, started: u32) -> GameLog {
        GameLog {
            key: None,
            flipped: start.rotated,
            start,
            white_clock: None,
            result: None,
            plies: Vec::new(),
            started,
        }
    }

    /// Applies a record of the game; returns true when it is one that a host journals.
    /// `GameStarted` with a new record is the caller's: it begins another log.
    pub fn apply(&mut self, record: &Record) -> bool {
        match record {
            Record::Move { confirmed: true, mv } => {
                let Some(ply) = Ply::of(mv) else { return false };
                self.plies.truncate(usize::from(mv.ply).saturating_sub(1));
                if self.plies.len() == self.plies.capacity() {
                    // A few plies at a time rather than doubling: on a device the spare half
                    // of a doubled buffer is memory another board's worth of RAM.
                    self.plies.reserve_exact(GROWTH);
                }
                self.plies.push(ply);
            }
            Record::TakenBack { to_ply, .. } => self.plies.truncate(usize::from(*to_ply)),
            Record::ClockSide(d) => self.white_clock = Some(*d),
            Record::GameEnded { result, reason } => self.result = Some((*result, *reason)),
            Record::ResultCleared => self.result = None,
            Record::Flipped { flipped } => self.flipped = *flipped,
            _ => return false,
        }
        true
    }

    /// A hash of the first `n` plies (moves and clock values), to tell whether a host's
    /// journal holds the same line as the device.
    pub fn line_hash(&self, n: usize) -> u32 {
        let mut h = Fnv::new();
        for p in self.plies.iter().take(n) {
            let mut uci = heapless::String::<8>::new();
            let _ = core::fmt::write(&mut uci, format_args!("{}", p.uci));
            h.bytes(uci.as_bytes());
            h.bytes(&p.clk.to_le_bytes());
            h.bytes(&p.emt.to_le_bytes());
        }
        h.0
    }

    /// The head of a line of this game whose moves start at `from_ply`, from the position
    /// `fen`.
    pub fn head(&self, from_ply: u16, fen: String) -> LineHead {
        LineHead {
            key: self.key,
            start: self.start.clone(),
            flipped: self.flipped,
            white_clock: self.white_clock,
            result: self.result,
            plies: self.plies.len() as u16,
            from_ply,
            fen,
        }
    }

    /// The first ply a host holding `plies` plies with line hash `hash` is missing: the
    /// next one when its plies are this game's, else the first (the host then replaces
    /// what differs).
    pub fn resume_from(&self, plies: u16, hash: u32) -> u16 {
        let n = usize::from(plies);
        if n <= self.plies.len() && self.line_hash(n) == hash { plies + 1 } else { 1 }
    }

    /// The start position.
    pub fn start_position(&self) -> Chess {
        match &self.start.start_fen {
            Some(fen) => position_from_fen(fen).map(|(pos, _)| pos).unwrap_or_default(),
            None => Chess::default(),
        }
    }
}

/// The confirmed moves of a [`GameLog`] from a ply on, made again one at a time by a
/// [`Replay`] from the start position (the SAN and the position after each).
#[derive(Clone, Debug)]
pub struct LineCursor {
    replay: Replay,
}

impl LineCursor {
    /// A cursor at `from_ply` (1-based) of `log`: the plies before are replayed now.
    pub fn new(log: &GameLog, from_ply: u16) -> LineCursor {
        let mut c = LineCursor { replay: Replay::new(log.start_position()) };
        let skip = usize::from(from_ply.max(1) - 1).min(log.plies.len());
        while usize::from(c.replay.plies()) < skip {
            if c.next_move(log).is_none() {
                break;
            }
        }
        c
    }

    /// The position before the next ply, as FEN.
    pub fn fen(&self) -> String {
        FenText::of(self.replay.position()).to_string()
    }

    /// The next move, or `None` at the end (or at a ply that does not replay, which a
    /// session never confirms).
    pub fn next_move(&mut self, log: &GameLog) -> Option<MoveWire> {
        let ply = log.plies.get(usize::from(self.replay.plies()))?;
        let info = self.replay.play(ResumePly { uci: ply.uci, clk: ply.clk(), emt: ply.emt() })?;
        Some(move_wire(&info))
    }
}

impl StartWire {
    /// True for a start that is not the standard one.
    pub fn is_custom(self) -> bool {
        !matches!(self, StartWire::Standard)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn mv(ply: u16, uci: &str, clk: Option<u32>) -> Record {
        Record::Move {
            confirmed: true,
            mv: MoveWire {
                ply,
                white: ply % 2 == 1,
                uci: uci.into(),
                san: String::new(),
                clk,
                emt: None,
                fen: String::new(),
            },
        }
    }

    fn standard() -> GameLog {
        GameLog::new(GameStart { rotated: false, kind: StartWire::Standard, start_fen: None }, 1)
    }

    #[test]
    fn records_make_the_journal_line() {
        let mut g = standard();
        for (i, u) in ["e2e4", "e7e5", "g1f3"].iter().enumerate() {
            assert!(g.apply(&mv(i as u16 + 1, u, Some(100))));
        }
        assert!(g.apply(&Record::TakenBack { to_ply: 2, fen: String::new() }));
        assert!(g.apply(&mv(3, "b1c3", None)));
        assert!(!g.apply(&Record::Battery(50)));
        assert_eq!(g.plies.len(), 3);
        assert_eq!(g.plies[2].uci.to_string(), "b1c3");
        assert_eq!(g.plies[2].clk(), None);
    }

    #[test]
    fn a_line_is_made_again_with_san_and_positions() {
        let mut g = standard();
        for (i, u) in ["e2e4", "e7e5", "g1f3", "b8c6", "f1b5"].iter().enumerate() {
            g.apply(&mv(i as u16 + 1, u, Some(60 - i as u32)));
        }
        let mut c = LineCursor::new(&g, 4);
        assert_eq!(c.fen(), "rnbqkbnr/pppp1ppp/8/4p3/4P3/5N2/PPPP1PPP/RNBQKB1R b KQkq - 1 2");
        let m = c.next_move(&g).unwrap();
        assert_eq!((m.ply, m.white, m.san.as_str(), m.clk), (4, false, "Nc6", Some(57)));
        let m = c.next_move(&g).unwrap();
        assert_eq!((m.ply, m.san.as_str()), (5, "Bb5"));
        assert_eq!(m.fen, "r1bqkbnr/pppp1ppp/2n5/1B2p3/4P3/5N2/PPPP1PPP/RNBQK2R b KQkq - 3 3");
        assert!(c.next_move(&g).is_none());
    }

    #[test]
    fn a_host_with_the_same_first_plies_resumes_after_them() {
        let mut g = standard();
        for (i, u) in ["d2d4", "d7d5", "c2c4"].iter().enumerate() {
            g.apply(&mv(i as u16 + 1, u, Some(90)));
        }
        let mut host = standard();
        for (i, u) in ["d2d4", "d7d5"].iter().enumerate() {
            host.apply(&mv(i as u16 + 1, u, Some(90)));
        }
        assert_eq!(g.resume_from(2, host.line_hash(2)), 3);
        assert_eq!(g.resume_from(0, host.line_hash(0)), 1);
        // Another clock value, another line: everything is sent again.
        let mut other = standard();
        other.apply(&mv(1, "d2d4", Some(89)));
        assert_eq!(g.resume_from(1, other.line_hash(1)), 1);
        // More plies than the device has: everything again.
        assert_eq!(standard().resume_from(2, host.line_hash(2)), 1);
    }
}
