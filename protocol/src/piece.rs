//! Piece codes as the board reports them in dumps, field updates and EEPROM events.

use shakmaty::{Color, Piece, Role};

/// What the board reports for one square: a chess piece, empty, or one of the three
/// "magic" pieces DGT defines for signalling results.
///
/// Note DGT's order R, N, B, K, Q: the king (5/11) comes before the queen (6/12).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Default)]
#[repr(u8)]
pub enum PieceCode {
    /// 0x00: nothing on the square.
    #[default]
    Empty = 0x00,
    /// 0x01
    WhitePawn = 0x01,
    /// 0x02
    WhiteRook = 0x02,
    /// 0x03
    WhiteKnight = 0x03,
    /// 0x04
    WhiteBishop = 0x04,
    /// 0x05
    WhiteKing = 0x05,
    /// 0x06
    WhiteQueen = 0x06,
    /// 0x07
    BlackPawn = 0x07,
    /// 0x08
    BlackRook = 0x08,
    /// 0x09
    BlackKnight = 0x09,
    /// 0x0A
    BlackBishop = 0x0A,
    /// 0x0B
    BlackKing = 0x0B,
    /// 0x0C
    BlackQueen = 0x0C,
    /// 0x0D: "magic piece 1", a draw signal.
    MagicDraw = 0x0D,
    /// 0x0E: "magic piece 2", a White win signal.
    MagicWhiteWins = 0x0E,
    /// 0x0F: "magic piece 3", a Black win signal.
    MagicBlackWins = 0x0F,
}

impl PieceCode {
    /// Decodes the low nibble of a wire byte; the high bits (the undocumented "S bit") are
    /// the caller's to keep. Every 4-bit value is a valid code, so this is total.
    pub const fn from_nibble(byte: u8) -> PieceCode {
        match byte & 0x0F {
            0x00 => PieceCode::Empty,
            0x01 => PieceCode::WhitePawn,
            0x02 => PieceCode::WhiteRook,
            0x03 => PieceCode::WhiteKnight,
            0x04 => PieceCode::WhiteBishop,
            0x05 => PieceCode::WhiteKing,
            0x06 => PieceCode::WhiteQueen,
            0x07 => PieceCode::BlackPawn,
            0x08 => PieceCode::BlackRook,
            0x09 => PieceCode::BlackKnight,
            0x0A => PieceCode::BlackBishop,
            0x0B => PieceCode::BlackKing,
            0x0C => PieceCode::BlackQueen,
            0x0D => PieceCode::MagicDraw,
            0x0E => PieceCode::MagicWhiteWins,
            _ => PieceCode::MagicBlackWins,
        }
    }

    /// The wire value.
    pub const fn code(self) -> u8 {
        self as u8
    }

    /// The chess piece, if this is one (not empty and not a magic piece).
    pub const fn piece(self) -> Option<Piece> {
        let (color, role) = match self {
            PieceCode::WhitePawn => (Color::White, Role::Pawn),
            PieceCode::WhiteRook => (Color::White, Role::Rook),
            PieceCode::WhiteKnight => (Color::White, Role::Knight),
            PieceCode::WhiteBishop => (Color::White, Role::Bishop),
            PieceCode::WhiteKing => (Color::White, Role::King),
            PieceCode::WhiteQueen => (Color::White, Role::Queen),
            PieceCode::BlackPawn => (Color::Black, Role::Pawn),
            PieceCode::BlackRook => (Color::Black, Role::Rook),
            PieceCode::BlackKnight => (Color::Black, Role::Knight),
            PieceCode::BlackBishop => (Color::Black, Role::Bishop),
            PieceCode::BlackKing => (Color::Black, Role::King),
            PieceCode::BlackQueen => (Color::Black, Role::Queen),
            _ => return None,
        };
        Some(Piece { color, role })
    }

    /// The code the board uses for a chess piece.
    pub const fn from_piece(piece: Piece) -> PieceCode {
        match (piece.color, piece.role) {
            (Color::White, Role::Pawn) => PieceCode::WhitePawn,
            (Color::White, Role::Rook) => PieceCode::WhiteRook,
            (Color::White, Role::Knight) => PieceCode::WhiteKnight,
            (Color::White, Role::Bishop) => PieceCode::WhiteBishop,
            (Color::White, Role::King) => PieceCode::WhiteKing,
            (Color::White, Role::Queen) => PieceCode::WhiteQueen,
            (Color::Black, Role::Pawn) => PieceCode::BlackPawn,
            (Color::Black, Role::Rook) => PieceCode::BlackRook,
            (Color::Black, Role::Knight) => PieceCode::BlackKnight,
            (Color::Black, Role::Bishop) => PieceCode::BlackBishop,
            (Color::Black, Role::King) => PieceCode::BlackKing,
            (Color::Black, Role::Queen) => PieceCode::BlackQueen,
        }
    }

    /// The code for an optional piece (`None` is an empty square).
    pub const fn from_option(piece: Option<Piece>) -> PieceCode {
        match piece {
            Some(p) => PieceCode::from_piece(p),
            None => PieceCode::Empty,
        }
    }

    /// True for the three result-signalling magic pieces (0x0D..=0x0F).
    pub const fn is_magic(self) -> bool {
        matches!(self, PieceCode::MagicDraw | PieceCode::MagicWhiteWins | PieceCode::MagicBlackWins)
    }

    /// True when the square is empty.
    pub const fn is_empty(self) -> bool {
        matches!(self, PieceCode::Empty)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_nibble_round_trips() {
        for b in 0u8..16 {
            assert_eq!(PieceCode::from_nibble(b).code(), b);
        }
        assert_eq!(PieceCode::from_nibble(0x35), PieceCode::WhiteKing);
    }

    #[test]
    fn king_comes_before_queen() {
        assert_eq!(PieceCode::from_nibble(5).piece(), Some(Piece { color: Color::White, role: Role::King }));
        assert_eq!(
            PieceCode::from_nibble(0x0C).piece(),
            Some(Piece { color: Color::Black, role: Role::Queen })
        );
        assert_eq!(PieceCode::MagicDraw.piece(), None);
    }

    #[test]
    fn chess_pieces_round_trip_through_shakmaty() {
        for b in 1u8..=12 {
            let code = PieceCode::from_nibble(b);
            let piece = code.piece().expect("1..=12 are chess pieces");
            assert_eq!(PieceCode::from_piece(piece), code);
        }
    }
}
