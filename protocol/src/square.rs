//! Board squares as the DGT board numbers them, and their mapping to game squares.
//!
//! The board numbers its squares 0..63 in reading order as seen with the connector on the
//! player's left: index 0 is a8 when White sits there, 63 is h1. The board never renumbers
//! itself, so a board set up the other way round ("rotated", White at the connector's
//! right) reports every square turned by 180 degrees.

use shakmaty::Square;

/// A square index as the board sends it (0 = top-left seen from the connector side).
///
/// Kept distinct from [`shakmaty::Square`] so that a board index can never be mistaken for
/// a game square: converting needs an [`Orientation`].
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct DgtSquare(u8);

impl DgtSquare {
    /// All 64 board indices in wire order.
    pub const ALL: [DgtSquare; 64] = {
        let mut all = [DgtSquare(0); 64];
        let mut i = 0;
        while i < 64 {
            all[i] = DgtSquare(i as u8);
            i += 1;
        }
        all
    };

    /// The index if it is a valid board index (0..=63); the wire can carry up to 127.
    pub const fn new(index: u8) -> Option<DgtSquare> {
        if index < 64 { Some(DgtSquare(index)) } else { None }
    }

    /// The raw wire index.
    pub const fn index(self) -> u8 {
        self.0
    }

    /// The game square this board index stands for, given how the board is set up.
    pub fn to_square(self, orientation: Orientation) -> Square {
        let flipped = match orientation {
            Orientation::Normal => self.0 ^ 56,
            Orientation::Rotated => (self.0 ^ 56) ^ 63,
        };
        Square::new(u32::from(flipped))
    }

    /// The board index at which a game square is reported, given how the board is set up.
    pub fn from_square(square: Square, orientation: Orientation) -> DgtSquare {
        let a1_based = u8::from(square);
        match orientation {
            Orientation::Normal => DgtSquare(a1_based ^ 56),
            Orientation::Rotated => DgtSquare((a1_based ^ 63) ^ 56),
        }
    }
}

/// How the board sits relative to the players.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub enum Orientation {
    /// White sits with the connector on the left: index 0 is a8.
    #[default]
    Normal,
    /// White sits with the connector on the right: index 0 is h1.
    Rotated,
}

impl Orientation {
    /// The other orientation.
    pub const fn flipped(self) -> Orientation {
        match self {
            Orientation::Normal => Orientation::Rotated,
            Orientation::Rotated => Orientation::Normal,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn normal_orientation_matches_the_fact_sheet() {
        assert_eq!(DgtSquare(0).to_square(Orientation::Normal), Square::A8);
        assert_eq!(DgtSquare(7).to_square(Orientation::Normal), Square::H8);
        assert_eq!(DgtSquare(56).to_square(Orientation::Normal), Square::A1);
        assert_eq!(DgtSquare(63).to_square(Orientation::Normal), Square::H1);
    }

    #[test]
    fn rotated_board_turns_by_half_a_circle() {
        assert_eq!(DgtSquare(0).to_square(Orientation::Rotated), Square::H1);
        assert_eq!(DgtSquare(63).to_square(Orientation::Rotated), Square::A8);
        assert_eq!(DgtSquare(7).to_square(Orientation::Rotated), Square::A1);
    }

    #[test]
    fn conversions_are_inverse_in_both_orientations() {
        for orientation in [Orientation::Normal, Orientation::Rotated] {
            for sq in DgtSquare::ALL {
                assert_eq!(DgtSquare::from_square(sq.to_square(orientation), orientation), sq);
            }
        }
        assert_eq!(DgtSquare::new(64), None);
    }
}
