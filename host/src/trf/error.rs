//! Why a report was refused, and where: TRF-16's faults and TRF-26's records' alike.

use std::fmt;

use dgt_core::TimeControlError;

use crate::invalid::Invalid;

/// Why a report was refused, with where.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub struct TrfError {
    /// 1-based line; 0 when the fault is the report's as a whole (no such round, not text).
    pub line: usize,
    /// 1-based column (characters).
    pub column: usize,
    /// What is wrong.
    pub kind: TrfErrorKind,
}

impl fmt::Display for TrfError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.line == 0 {
            write!(f, "TRF report: {}", self.kind)
        } else {
            write!(f, "TRF line {}, column {}: {}", self.line, self.column, self.kind)
        }
    }
}

/// What is wrong in a report.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum TrfErrorKind {
    /// A number field holds something else.
    #[error("{field} {value:?} is not a number")]
    NotANumber {
        /// The field.
        field: &'static str,
        /// Its text.
        value: String,
    },
    /// Two players have the same start rank.
    #[error("start rank {0} is given twice")]
    DuplicateRank(u32),
    /// A round column names a start rank no player has.
    #[error("opponent {0} is not a player of this report")]
    UnknownOpponent(u32),
    /// A colour other than `w`, `b`, `-`.
    #[error("colour {0:?} is not w, b or -")]
    BadColour(char),
    /// A result other than the format's codes.
    #[error("result {0:?} is not one of 1 = 0 + - W D L H F U Z")]
    BadResult(char),
    /// Two players' columns for a round disagree (A names B but B names someone else, or
    /// both are White).
    #[error(
        "round {round}: player {player}'s opponent {opponent} does not name them back with the other colour"
    )]
    Inconsistent {
        /// The round.
        round: u32,
        /// One player's start rank.
        player: u32,
        /// The opponent it names.
        opponent: u32,
    },
    /// A player line ends before a round's columns that its opponent's line names it in,
    /// or in the middle of a round's columns.
    #[error("the line ends before round {0}'s opponent and colour (a truncated line?)")]
    Truncated(u32),
    /// A field fails the relay's own checks (a name too long, a strange title).
    #[error(transparent)]
    Invalid(Invalid),
    /// The file has no player, is too large, or is not text.
    #[error("{0}")]
    File(String),
    /// The round asked for has no pairing in the report.
    #[error("round {0} has no pairings in this report")]
    NoSuchRound(u32),
    /// A TRF-26 record is wrong (see [`super::v26`]).
    #[error(transparent)]
    Trf26(Trf26ErrorKind),
}

/// What is wrong in a TRF-26 record.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum Trf26ErrorKind {
    /// `222` is not an encoded time control.
    #[error(
        "time control {value:?} (222) is not M/S, M/S+I, S or S+I periods joined by ':', or W..-B..: {reason}"
    )]
    TimeControl {
        /// The text.
        value: String,
        /// Why.
        reason: TimeControlError,
    },
    /// A tie-break list holds an empty or malformed code.
    #[error("tie-break {0:?} is not a FIDE tie-break code (letters, digits, / - .)")]
    TieBreak(String),
    /// A team line has no name.
    #[error("the team has no name")]
    NoTeamName,
    /// Two teams share a pairing number.
    #[error("team number {0} is given twice")]
    DuplicateTeam(u32),
    /// A team names a start rank no player has.
    #[error("team member {0} is not a player of this report")]
    UnknownMember(u32),
    /// A player is in two teams.
    #[error("player {0} is in two teams")]
    MemberTwice(u32),
}
