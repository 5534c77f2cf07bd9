//! Positions in events, and the one FEN reader of the project.
//!
//! Every move event carries the position after it ([`FenText`]), so that nothing downstream
//! (the session, the host, the page) replays chess to know where a game stands.

use core::fmt;

use shakmaty::fen::{Fen, LossyFenError};
use shakmaty::{
    Bitboard, Board, ByColor, ByRole, CastlingMode, Chess, Color, EnPassantMode, FromSetup, Position, Setup,
    Square,
};

/// Longest FEN accepted from outside (a legal position's is under 100 characters).
pub const FEN_MAX: usize = 100;

/// The position after a move: a compact copy (bitboards, side to move, castling rooks, en
/// passant square, counters), `Copy` so that events stay plain values and cheap to make.
/// Its `Display` writes the FEN, with shakmaty's writer, only when someone asks.
#[derive(Clone, Copy, PartialEq, Eq)]
pub struct FenText {
    by_role: ByRole<Bitboard>,
    by_color: ByColor<Bitboard>,
    turn: Color,
    castling_rights: Bitboard,
    ep_square: Option<Square>,
    halfmoves: u32,
    fullmoves: u32,
}

impl FenText {
    /// The position `pos` (en passant square only when a capture is legal, as in PGN).
    pub fn of(pos: &Chess) -> FenText {
        let setup = pos.to_setup(EnPassantMode::Legal);
        let (by_role, by_color) = setup.board.into_bitboards();
        FenText {
            by_role,
            by_color,
            turn: setup.turn,
            castling_rights: setup.castling_rights,
            ep_square: setup.ep_square,
            halfmoves: setup.halfmoves,
            fullmoves: setup.fullmoves.get(),
        }
    }

    /// The position as a shakmaty setup.
    pub fn setup(&self) -> Setup {
        let mut setup = Setup::empty();
        setup.board = Board::try_from_bitboards(self.by_role, self.by_color).unwrap_or_default();
        setup.turn = self.turn;
        setup.castling_rights = self.castling_rights;
        setup.ep_square = self.ep_square;
        setup.halfmoves = self.halfmoves;
        setup.fullmoves = core::num::NonZeroU32::new(self.fullmoves).unwrap_or(core::num::NonZeroU32::MIN);
        setup
    }
}

impl fmt::Display for FenText {
    /// The FEN.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let fen = Fen::try_from_setup(self.setup()).unwrap_or_else(LossyFenError::ignore);
        fmt::Display::fmt(&fen, f)
    }
}

impl fmt::Debug for FenText {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "\"{self}\"")
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
        let mut text = Text::default();
        fmt::write(&mut text, format_args!("{start}")).unwrap();
        assert_eq!(text.0.as_str(), "rnbqkbnr/pppppppp/8/8/8/8/PPPPPPPP/RNBQKBNR w KQkq - 0 1");
        // Alternating pieces and one-square gaps give the longest placement.
        let long = "r1b1k1n1/1p1p1p1p/p1p1p1p1/n1b1q1r1/Q1N1B1R1/P1P1P1P1/1P1P1P1P/R1B1K1N1 w - - 99 999";
        let (pos, mode) = position_from_fen(long).unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(mode, CastlingMode::Standard);
        let mut text = Text::default();
        fmt::write(&mut text, format_args!("{}", FenText::of(&pos))).unwrap();
        assert_eq!(text.0.as_str(), long);
        assert_eq!(position_from_fen("8/8/8/8/8/8/8/8 w - - 0 1").unwrap_err(), FenError::Illegal);
        assert_eq!(position_from_fen("nonsense").unwrap_err(), FenError::Invalid);
    }

    /// A text buffer for the no_std tests.
    #[derive(Default)]
    struct Text(heapless::String<128>);

    impl fmt::Write for Text {
        fn write_str(&mut self, s: &str) -> fmt::Result {
            self.0.push_str(s).map_err(|_| fmt::Error)
        }
    }

    #[test]
    fn chess960_castling_rights_are_kept() {
        let fen = "bqnb1rkr/pp3ppp/3ppn2/2p5/5P2/P2P4/NPP1P1PP/BQ1BNRKR w HFhf - 2 9";
        let (pos, mode) = position_from_fen(fen).unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(mode, CastlingMode::Chess960);
        assert_eq!(castling_mode_of(&pos), CastlingMode::Chess960);
        assert_eq!(castling_mode_of(&Chess::default()), CastlingMode::Standard);
        // Written back (X-FEN: KQkq where the outermost rooks are meant) and read again: the
        // same position, castling rights and mode.
        let mut text = Text::default();
        fmt::write(&mut text, format_args!("{}", FenText::of(&pos))).unwrap();
        let (again, mode) = position_from_fen(text.0.as_str()).unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(mode, CastlingMode::Chess960);
        assert_eq!(FenText::of(&again), FenText::of(&pos));
    }
}
