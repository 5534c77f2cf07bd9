//! [`Replay`]: a line of plies made again from a start position, as the tracker reports
//! moves: the mover, the SAN with its suffix, the position after. For what holds a line
//! without a tracker's search (a journaled game sent again, a correction checked before it
//! is made), at the cost of a position rather than a second tracker.

use shakmaty::san::SanPlus;
use shakmaty::{Chess, Position};

use crate::event::MoveInfo;
use crate::fen::FenText;
use crate::tracker::ResumePly;

/// A line being made again. See the module docs.
#[derive(Clone, Debug)]
pub struct Replay {
    pos: Chess,
    ply: u16,
}

impl Replay {
    /// A line from `start`, before its first ply.
    pub fn new(start: Chess) -> Replay {
        Replay { pos: start, ply: 0 }
    }

    /// The position now.
    pub fn position(&self) -> &Chess {
        &self.pos
    }

    /// Plies played so far.
    pub fn plies(&self) -> u16 {
        self.ply
    }

    /// Plays `ply`: the move as the tracker would have reported it, or `None` (and nothing
    /// changes) when it is not legal here.
    pub fn play(&mut self, ply: ResumePly) -> Option<MoveInfo> {
        let m = ply.uci.to_move(&self.pos).ok()?;
        let color = self.pos.turn();
        let san = SanPlus::from_move_and_play_unchecked(&mut self.pos, m);
        self.ply += 1;
        Some(MoveInfo {
            ply: self.ply,
            color,
            uci: ply.uci,
            san,
            clk: ply.clk,
            emt: ply.emt,
            fen: FenText::of(&self.pos),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use shakmaty::uci::UciMove;

    fn ply(uci: &str) -> ResumePly {
        ResumePly {
            uci: UciMove::from_ascii(uci.as_bytes()).unwrap_or(UciMove::Null),
            clk: Some(60),
            emt: None,
        }
    }

    #[test]
    fn a_line_is_made_again_and_an_illegal_ply_changes_nothing() {
        let mut r = Replay::new(Chess::default());
        let e4 = r.play(ply("e2e4")).expect("legal");
        assert_eq!((e4.ply, e4.color.is_white(), e4.clk), (1, true, Some(60)));
        assert!(r.play(ply("e2e4")).is_none(), "no pawn on e2 any more");
        assert_eq!(r.plies(), 1);
        let f5 = r.play(ply("f7f5")).expect("legal");
        let mut san = heapless::String::<8>::new();
        let _ = core::fmt::write(&mut san, format_args!("{}", f5.san));
        assert_eq!(san.as_str(), "f5");
    }
}
