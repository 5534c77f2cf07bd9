//! [`GameLog`]: a game as a host journals it, built from the records both ends see: how it
//! started, its flip, White's clock display, its result, and its confirmed plies where
//! they are kept.
//!
//! The host keeps one as its mirror of what it journaled, plies and all, to tell which of
//! a resumed line's moves it has. The device keeps its current game's head only: the plies
//! are its session's own confirmed line ([`dgt_session::BoardSession::game_plies`]), not
//! a copy. For a host that has not seen the previous game's end, the device keeps that
//! game's log with its plies, which the session hands over when it begins the next game.
//! Both ends apply the same records with [`GameLog::apply`], so they cannot disagree on what
//! a record means.
//!
//! The SAN and the position after each ply are made again when a line is sent, by
//! replaying the moves from the start position ([`LineCursor`], the core's [`Replay`]).

use alloc::string::{String, ToString};
use alloc::vec::Vec;

use dgt_core::{FenText, Replay, ResumePly, position_from_fen};
use shakmaty::Chess;
use shakmaty::uci::UciMove;

use crate::convert::move_wire;
use crate::wire::{
    DisplayWire, EndWire, GameKey, GameStart, LineHead, MoveWire, Record, ResultWire, StartWire,
};

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
    /// Confirmed plies, where this log keeps them (empty for a device's current game).
    pub plies: Vec<ResumePly>,
    /// The record that started it (on the device; 0 on the host).
    pub started: u32,
    /// The last record that changed what a host journals of it (on the device).
    pub last_seq: u32,
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

/// The ply a move record tells, if its UCI reads.
pub fn ply_of(mv: &MoveWire) -> Option<ResumePly> {
    let uci = UciMove::from_ascii(mv.uci.as_bytes()).ok()?;
    Some(ResumePly { uci, clk: mv.clk, emt: mv.emt })
}

/// A hash of the first `n` of `plies` (moves and clock values), to tell whether a host's
/// journal holds the same line as the device.
pub fn line_hash(plies: &[ResumePly], n: usize) -> u32 {
    let mut h = Fnv::new();
    for p in plies.iter().take(n) {
        let mut uci = heapless::String::<8>::new();
        let _ = core::fmt::write(&mut uci, format_args!("{}", p.uci));
        h.bytes(uci.as_bytes());
        h.bytes(&p.clk.unwrap_or(u32::MAX).to_le_bytes());
        h.bytes(&p.emt.unwrap_or(u32::MAX).to_le_bytes());
    }
    h.0
}

/// The first ply of `plies` a host holding `have` plies with line hash `hash` is missing:
/// the next one when its plies are these, else the first (the host then replaces what
/// differs).
pub fn resume_from(plies: &[ResumePly], have: u16, hash: u32) -> u16 {
    let n = usize::from(have);
    if n <= plies.len() && line_hash(plies, n) == hash { have + 1 } else { 1 }
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
            last_seq: started,
        }
    }

    /// Applies a record of the game, plies included; returns true when it is one that a
    /// host journals. `GameStarted` with a new record is the caller's: it begins another log.
    pub fn apply(&mut self, record: &Record) -> bool {
        match record {
            Record::Move { confirmed: true, mv } => {
                let Some(ply) = ply_of(mv) else { return false };
                self.plies.truncate(usize::from(mv.ply).saturating_sub(1));
                self.plies.push(ply);
                true
            }
            Record::TakenBack { to_ply, .. } => {
                self.plies.truncate(usize::from(*to_ply));
                true
            }
            other => self.apply_head(other),
        }
    }

    /// Applies what a record changes of the game but its plies (a device's current game,
    /// whose plies are the session's); returns true when it is one that a host journals.
    pub fn apply_head(&mut self, record: &Record) -> bool {
        match record {
            Record::ClockSide(d) => self.white_clock = Some(*d),
            Record::GameEnded { result, reason } => self.result = Some((*result, *reason)),
            Record::ResultCleared => self.result = None,
            Record::Flipped { flipped } => self.flipped = *flipped,
            Record::Move { confirmed: true, .. } | Record::TakenBack { .. } => {}
            _ => return false,
        }
        true
    }

    /// The head of a line of this game of `plies` confirmed plies whose moves start at
    /// `from_ply`, from the position `fen`.
    pub fn head(&self, plies: usize, from_ply: u16, fen: String) -> LineHead {
        LineHead {
            key: self.key,
            start: self.start.clone(),
            flipped: self.flipped,
            white_clock: self.white_clock,
            result: self.result,
            plies: plies as u16,
            from_ply,
            fen,
        }
    }

    /// The start position.
    pub fn start_position(&self) -> Chess {
        match &self.start.start_fen {
            Some(fen) => position_from_fen(fen).map(|(pos, _)| pos).unwrap_or_default(),
            None => Chess::default(),
        }
    }
}

/// The confirmed moves of a game from a ply on, made again one at a time by a [`Replay`]
/// from the start position (the SAN and the position after each).
#[derive(Clone, Debug)]
pub struct LineCursor {
    replay: Replay,
}

impl LineCursor {
    /// A cursor at `from_ply` (1-based) of the game `log` whose plies are `plies`: the plies
    /// before are replayed now.
    pub fn new(log: &GameLog, plies: &[ResumePly], from_ply: u16) -> LineCursor {
        let mut c = LineCursor { replay: Replay::new(log.start_position()) };
        let skip = usize::from(from_ply.max(1) - 1).min(plies.len());
        while usize::from(c.replay.plies()) < skip {
            if c.next_move(plies).is_none() {
                break;
            }
        }
        c
    }

    /// The position before the next ply, as FEN.
    pub fn fen(&self) -> String {
        FenText::of(self.replay.position()).to_string()
    }

    /// The next move of `plies`, or `None` at the end (or at a ply that does not replay,
    /// which a session never confirms).
    pub fn next_move(&mut self, plies: &[ResumePly]) -> Option<MoveWire> {
        let ply = plies.get(usize::from(self.replay.plies()))?;
        let info = self.replay.play(*ply)?;
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
        assert_eq!(g.plies[2].clk, None);
        // The head alone leaves the plies to their owner.
        let mut head = standard();
        assert!(head.apply_head(&mv(1, "e2e4", None)));
        assert!(head.apply_head(&Record::Flipped { flipped: true }));
        assert!(head.plies.is_empty() && head.flipped);
    }

    #[test]
    fn a_line_is_made_again_with_san_and_positions() {
        let mut g = standard();
        for (i, u) in ["e2e4", "e7e5", "g1f3", "b8c6", "f1b5"].iter().enumerate() {
            g.apply(&mv(i as u16 + 1, u, Some(60 - i as u32)));
        }
        let mut c = LineCursor::new(&g, &g.plies, 4);
        assert_eq!(c.fen(), "rnbqkbnr/pppp1ppp/8/4p3/4P3/5N2/PPPP1PPP/RNBQKB1R b KQkq - 1 2");
        let m = c.next_move(&g.plies).unwrap();
        assert_eq!((m.ply, m.white, m.san.as_str(), m.clk), (4, false, "Nc6", Some(57)));
        let m = c.next_move(&g.plies).unwrap();
        assert_eq!((m.ply, m.san.as_str()), (5, "Bb5"));
        assert_eq!(m.fen, "r1bqkbnr/pppp1ppp/2n5/1B2p3/4P3/5N2/PPPP1PPP/RNBQK2R b KQkq - 3 3");
        assert!(c.next_move(&g.plies).is_none());
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
        assert_eq!(resume_from(&g.plies, 2, line_hash(&host.plies, 2)), 3);
        assert_eq!(resume_from(&g.plies, 0, line_hash(&host.plies, 0)), 1);
        // Another clock value, another line: everything is sent again.
        let mut other = standard();
        other.apply(&mv(1, "d2d4", Some(89)));
        assert_eq!(resume_from(&g.plies, 1, line_hash(&other.plies, 1)), 1);
        // More plies than the device has: everything again.
        assert_eq!(resume_from(&[], 2, line_hash(&host.plies, 2)), 1);
    }
}
