//! The compact record of one ply in the game's line.

use shakmaty::{Chess, Move, Position, Role, Square};

/// Marks a missing `%clk`/`%emt` in a [`PlyRecord`].
const NONE16: u16 = u16::MAX;

/// One ply, compactly: 12 bytes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct PlyRecord {
    from: u8,
    to: u8,
    /// 0 normal, 1 en passant, 2 castling (from = king, to = rook).
    kind: u8,
    /// Promotion role as `Role as u8`, 0 for none.
    promo: u8,
    pub(super) clk: u16,
    pub(super) emt: u16,
    /// Placement fingerprint after the ply.
    pub(super) hash: u32,
}

impl PlyRecord {
    pub(super) fn new(m: Move, hash: u32) -> PlyRecord {
        let (from, to, kind, promo) = match m {
            Move::Normal { from, to, promotion, .. } => (from, to, 0, promotion.map_or(0, |r| r as u8)),
            Move::EnPassant { from, to } => (from, to, 1, 0),
            Move::Castle { king, rook } => (king, rook, 2, 0),
            Move::Put { to, .. } => (to, to, 3, 0),
        };
        PlyRecord { from: u8::from(from), to: u8::from(to), kind, promo, clk: NONE16, emt: NONE16, hash }
    }

    /// True when `m` is this ply's move.
    pub(crate) fn same_move(self, m: Move) -> bool {
        let other = PlyRecord::new(m, self.hash);
        (other.from, other.to, other.kind, other.promo) == (self.from, self.to, self.kind, self.promo)
    }

    /// The move in the position before it.
    pub(crate) fn to_move(self, pos: &Chess) -> Option<Move> {
        let from = Square::new(u32::from(self.from & 63));
        let to = Square::new(u32::from(self.to & 63));
        match self.kind {
            0 => Some(Move::Normal {
                role: pos.board().role_at(from)?,
                from,
                capture: pos.board().role_at(to),
                to,
                promotion: Role::ALL.into_iter().find(|r| *r as u8 == self.promo),
            }),
            1 => Some(Move::EnPassant { from, to }),
            2 => Some(Move::Castle { king: from, rook: to }),
            _ => None,
        }
    }

    pub(crate) fn clk(self) -> Option<u32> {
        (self.clk != NONE16).then_some(u32::from(self.clk))
    }

    pub(crate) fn emt(self) -> Option<u32> {
        (self.emt != NONE16).then_some(u32::from(self.emt))
    }
}

pub(super) fn to16(v: Option<u32>) -> u16 {
    v.map_or(NONE16, |v| v.min(u32::from(NONE16 - 1)) as u16)
}
