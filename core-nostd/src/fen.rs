//! FEN text without allocation, and the one FEN reader of the project.
//!
//! Every move event carries the position after it as FEN ([`FenText`]), so that nothing
//! downstream (the session, the host, the page) replays chess to know where a game stands.

use core::fmt;

use shakmaty::fen::Fen;
use shakmaty::{CastlingMode, Chess, EnPassantMode, FromSetup, Position};

/// Room for the longest FEN of a legal position: 71 placement characters, side, castling
/// (4), en passant (2), two counters and five spaces, with margin.
pub const FEN_MAX: usize = 100;

/// A FEN string held inline (no heap), `Copy` so that events stay plain values.
#[derive(Clone, Copy)]
pub struct FenText {
    len: u8,
    bytes: [u8; FEN_MAX],
}

impl FenText {
    /// The FEN of `pos` (en passant square only when a capture is legal, as in PGN).
    pub fn of(pos: &Chess) -> FenText {
        let mut t = FenText { len: 0, bytes: [0; FEN_MAX] };
        // Cannot fail: a legal position's FEN is shorter than FEN_MAX.
        let _ = fmt::write(&mut t, format_args!("{}", Fen::from_position(pos, EnPassantMode::Legal)));
        t
    }

    /// The text.
    pub fn as_str(&self) -> &str {
        // Only whole `&str`s are ever appended, so the bytes are UTF-8.
        core::str::from_utf8(&self.bytes[..usize::from(self.len)]).unwrap_or("")
    }
}

impl fmt::Write for FenText {
    fn write_str(&mut self, s: &str) -> fmt::Result {
        let at = usize::from(self.len);
        let end = at + s.len();
        if end > FEN_MAX {
            return Err(fmt::Error);
        }
        self.bytes[at..end].copy_from_slice(s.as_bytes());
        self.len = end as u8;
        Ok(())
    }
}

impl PartialEq for FenText {
    fn eq(&self, other: &Self) -> bool {
        self.as_str() == other.as_str()
    }
}

impl Eq for FenText {}

impl fmt::Debug for FenText {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Debug::fmt(self.as_str(), f)
    }
}

impl fmt::Display for FenText {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// Why a FEN was refused.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum FenError {
    /// Longer than any legal position's FEN.
    TooLong,
    /// Not FEN.
    Invalid,
    /// FEN of a position that cannot arise in chess (no king, pawns on the back rank, ...).
    Illegal,
}

impl fmt::Display for FenError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            FenError::TooLong => "FEN too long",
            FenError::Invalid => "invalid FEN",
            FenError::Illegal => "illegal position",
        })
    }
}

/// Reads a FEN into a legal position and its castling mode: Chess960 when the castling
/// rights need it (start positions, operator positions, journaled games).
pub fn position_from_fen(fen: &str) -> Result<(Chess, CastlingMode), FenError> {
    if fen.len() > FEN_MAX {
        return Err(FenError::TooLong);
    }
    let setup = Fen::from_ascii(fen.as_bytes()).map_err(|_| FenError::Invalid)?.into_setup();
    let mode = CastlingMode::detect(&setup);
    let pos = Chess::from_setup(setup, mode).map_err(|_| FenError::Illegal)?;
    Ok((pos, mode))
}

/// The castling mode a position needs: Chess960 when its castling rights are not the
/// standard ones.
pub fn castling_mode_of(pos: &Chess) -> CastlingMode {
    CastlingMode::detect(&pos.to_setup(EnPassantMode::Always))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_longest_fens_fit_and_read_back() {
        let start = FenText::of(&Chess::default());
        assert_eq!(start.as_str(), "rnbqkbnr/pppppppp/8/8/8/8/PPPPPPPP/RNBQKBNR w KQkq - 0 1");
        // Alternating pieces and one-square gaps give the longest placement.
        let long = "r1b1k1n1/1p1p1p1p/p1p1p1p1/n1b1q1r1/Q1N1B1R1/P1P1P1P1/1P1P1P1P/R1B1K1N1 w - - 99 999";
        let (pos, mode) = position_from_fen(long).unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(mode, CastlingMode::Standard);
        assert_eq!(FenText::of(&pos).as_str(), long);
        assert_eq!(position_from_fen("8/8/8/8/8/8/8/8 w - - 0 1").unwrap_err(), FenError::Illegal);
        assert_eq!(position_from_fen("nonsense").unwrap_err(), FenError::Invalid);
    }

    #[test]
    fn chess960_castling_rights_are_kept() {
        let fen = "bqnb1rkr/pp3ppp/3ppn2/2p5/5P2/P2P4/NPP1P1PP/BQ1BNRKR w HFhf - 2 9";
        let (pos, mode) = position_from_fen(fen).unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(mode, CastlingMode::Chess960);
        assert_eq!(castling_mode_of(&pos), CastlingMode::Chess960);
        assert_eq!(castling_mode_of(&Chess::default()), CastlingMode::Standard);
    }
}
