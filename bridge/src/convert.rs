//! Between the session's types and the wire's: [`record_of`] on the device, [`effect_of`]
//! on the host. Every field crosses; text the host cannot read back (a UCI move, a SAN, a
//! FEN) makes the record unusable, and it is refused rather than taken in part.

use alloc::string::{String, ToString};
use alloc::vec::Vec;

use dgt_core::{
    ClockState, EndReason, FenError, FenText, GameResult, MoveInfo, StartKind, position_from_fen,
};
use dgt_protocol::{ClockSide, Orientation};
use dgt_session::{AdminError, Alert, Effect, LinkState, MoveState};
use shakmaty::san::SanPlus;
use shakmaty::uci::UciMove;
use shakmaty::{Color, Square};

use crate::wire::{
    AlertWire, ClockWire, DisplayWire, EndWire, FenWire, GameStart, LinkWire, MoveWire, Record, Refusal,
    ResultWire, StartWire,
};

/// Why a record from the device cannot be taken.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum Unreadable {
    /// A UCI move that does not read.
    #[error("move {0:?} is not UCI")]
    Uci(String),
    /// A SAN that does not read.
    #[error("move {0:?} is not SAN")]
    San(String),
    /// A position that does not read.
    #[error("position {0:?}: {1}")]
    Fen(String, FenError),
    /// A square outside the board.
    #[error("square {0} is outside the board")]
    Square(u8),
}

/// The record for a session effect; `None` for bytes to write to the board.
pub fn record_of(effect: &Effect) -> Option<Record> {
    Some(match effect {
        Effect::Write(_) => return None,
        Effect::Link(s) => Record::Link(match s {
            LinkState::Offline => LinkWire::Offline,
            LinkState::Active => LinkWire::Active,
            LinkState::NotResponding => LinkWire::NotResponding,
        }),
        Effect::GameStarted { orientation, kind, start_fen, new_record } => Record::GameStarted {
            start: GameStart {
                rotated: *orientation == Orientation::Rotated,
                kind: match kind {
                    StartKind::Standard => StartWire::Standard,
                    StartKind::Chess960(n) => StartWire::Chess960(*n),
                    StartKind::Fen => StartWire::Fen,
                },
                start_fen: start_fen.clone(),
            },
            new_record: *new_record,
        },
        Effect::Move { state, info } => {
            Record::Move { confirmed: *state == MoveState::Confirmed, mv: move_wire(info) }
        }
        Effect::Retracted { ply, fen } => Record::Retracted { ply: *ply, fen: fen.to_string() },
        Effect::TakenBack { to_ply, fen } => Record::TakenBack { to_ply: *to_ply, fen: fen.to_string() },
        Effect::ClockSide(side) => Record::ClockSide(display_wire(*side)),
        Effect::Clock(c) => Record::Clock(ClockWire {
            white: c.white,
            black: c.black,
            white_running: c.running.map(Color::is_white),
            white_flag: c.white_flag,
            black_flag: c.black_flag,
        }),
        Effect::GameEnded { result, reason } => {
            Record::GameEnded { result: result_wire(*result), reason: end_wire(*reason) }
        }
        Effect::ResultCleared => Record::ResultCleared,
        Effect::Flipped { flipped } => Record::Flipped { flipped: *flipped },
        Effect::Battery(p) => Record::Battery(*p),
        Effect::Alert(a) => Record::Alert(AlertWire {
            code: a.code,
            level: a.level,
            message: a.message.clone(),
            squares: a.squares.iter().map(|s| u8::from(*s)).collect(),
        }),
    })
}

/// A move as the wire carries it.
pub fn move_wire(info: &MoveInfo) -> MoveWire {
    MoveWire {
        ply: info.ply,
        white: info.color.is_white(),
        uci: info.uci.to_string(),
        san: info.san.to_string(),
        clk: info.clk,
        emt: info.emt,
        fen: info.fen.to_string(),
    }
}

/// The session effect a record tells; `None` for records that are not effects (the
/// board's identity).
pub fn effect_of(record: &Record) -> Result<Option<Effect>, Unreadable> {
    Ok(Some(match record {
        Record::Board { .. } => return Ok(None),
        Record::Link(l) => Effect::Link(match l {
            LinkWire::Offline => LinkState::Offline,
            LinkWire::Active => LinkState::Active,
            LinkWire::NotResponding => LinkState::NotResponding,
        }),
        Record::GameStarted { start, new_record } => Effect::GameStarted {
            orientation: if start.rotated { Orientation::Rotated } else { Orientation::Normal },
            kind: match start.kind {
                StartWire::Standard => StartKind::Standard,
                StartWire::Chess960(n) => StartKind::Chess960(n),
                StartWire::Fen => StartKind::Fen,
            },
            start_fen: start.start_fen.clone(),
            new_record: *new_record,
        },
        Record::Move { confirmed, mv } => Effect::Move {
            state: if *confirmed { MoveState::Confirmed } else { MoveState::Provisional },
            info: move_info(mv)?,
        },
        Record::Retracted { ply, fen } => Effect::Retracted { ply: *ply, fen: fen_text(fen)? },
        Record::TakenBack { to_ply, fen } => Effect::TakenBack { to_ply: *to_ply, fen: fen_text(fen)? },
        Record::ClockSide(d) => Effect::ClockSide(clock_side(*d)),
        Record::Clock(c) => Effect::Clock(ClockState {
            white: c.white,
            black: c.black,
            running: c.white_running.map(Color::from_white),
            white_flag: c.white_flag,
            black_flag: c.black_flag,
        }),
        Record::GameEnded { result, reason } => {
            Effect::GameEnded { result: game_result(*result), reason: end_reason(*reason) }
        }
        Record::ResultCleared => Effect::ResultCleared,
        Record::Flipped { flipped } => Effect::Flipped { flipped: *flipped },
        Record::Battery(p) => Effect::Battery(*p),
        Record::Alert(a) => {
            let mut alert = Alert::new(a.code, a.level, a.message.clone());
            alert.squares = a
                .squares
                .iter()
                .map(|s| Square::try_from(*s).map_err(|_| Unreadable::Square(*s)))
                .collect::<Result<Vec<_>, _>>()?;
            Effect::Alert(alert)
        }
    }))
}

/// A move from the wire, every text read back.
pub fn move_info(mv: &MoveWire) -> Result<MoveInfo, Unreadable> {
    Ok(MoveInfo {
        ply: mv.ply,
        color: Color::from_white(mv.white),
        uci: UciMove::from_ascii(mv.uci.as_bytes()).map_err(|_| Unreadable::Uci(mv.uci.clone()))?,
        san: SanPlus::from_ascii(mv.san.as_bytes()).map_err(|_| Unreadable::San(mv.san.clone()))?,
        clk: mv.clk,
        emt: mv.emt,
        fen: fen_text(&mv.fen)?,
    })
}

/// A position from the wire.
pub fn fen_text(fen: &str) -> Result<FenText, Unreadable> {
    let (pos, _) = position_from_fen(fen).map_err(|e| Unreadable::Fen(fen.to_string(), e))?;
    Ok(FenText::of(&pos))
}

/// A clock display on the wire.
pub fn display_wire(side: ClockSide) -> DisplayWire {
    match side {
        ClockSide::Left => DisplayWire::Left,
        ClockSide::Right => DisplayWire::Right,
    }
}

/// A clock display from the wire.
pub fn clock_side(d: DisplayWire) -> ClockSide {
    match d {
        DisplayWire::Left => ClockSide::Left,
        DisplayWire::Right => ClockSide::Right,
    }
}

/// A result on the wire.
pub fn result_wire(r: GameResult) -> ResultWire {
    match r {
        GameResult::WhiteWins => ResultWire::WhiteWins,
        GameResult::BlackWins => ResultWire::BlackWins,
        GameResult::Draw => ResultWire::Draw,
        GameResult::BothLose => ResultWire::BothLose,
        GameResult::WhiteHalf => ResultWire::WhiteHalf,
        GameResult::BlackHalf => ResultWire::BlackHalf,
    }
}

/// A result from the wire.
pub fn game_result(r: ResultWire) -> GameResult {
    match r {
        ResultWire::WhiteWins => GameResult::WhiteWins,
        ResultWire::BlackWins => GameResult::BlackWins,
        ResultWire::Draw => GameResult::Draw,
        ResultWire::BothLose => GameResult::BothLose,
        ResultWire::WhiteHalf => GameResult::WhiteHalf,
        ResultWire::BlackHalf => GameResult::BlackHalf,
    }
}

fn end_wire(r: EndReason) -> EndWire {
    match r {
        EndReason::Checkmate => EndWire::Checkmate,
        EndReason::Stalemate => EndWire::Stalemate,
        EndReason::KingsInCentre => EndWire::KingsInCentre,
        EndReason::MagicPiece => EndWire::MagicPiece,
        EndReason::FlagFall => EndWire::FlagFall,
        EndReason::Operator => EndWire::Operator,
        EndReason::Unplayed => EndWire::Unplayed,
    }
}

/// Why a game ended, from the wire.
pub fn end_reason(r: EndWire) -> EndReason {
    match r {
        EndWire::Checkmate => EndReason::Checkmate,
        EndWire::Stalemate => EndReason::Stalemate,
        EndWire::KingsInCentre => EndReason::KingsInCentre,
        EndWire::MagicPiece => EndReason::MagicPiece,
        EndWire::FlagFall => EndReason::FlagFall,
        EndWire::Operator => EndReason::Operator,
        EndWire::Unplayed => EndReason::Unplayed,
    }
}

/// A refusal on the wire.
pub fn refusal_of(e: &AdminError) -> Refusal {
    match e {
        AdminError::NoGame => Refusal::NoGame,
        AdminError::Fen(f) => Refusal::Fen(match f {
            FenError::TooLong => FenWire::TooLong,
            FenError::Invalid => FenWire::Invalid,
            FenError::Illegal => FenWire::Illegal,
        }),
        AdminError::FromPly { max } => Refusal::FromPly { max: *max as u32 },
        AdminError::TooLong => Refusal::TooLong,
        AdminError::NotUci(s) => Refusal::NotUci(s.clone()),
        AdminError::Illegal { ply, uci } => Refusal::Illegal { ply: *ply as u32, uci: uci.clone() },
        AdminError::Journal(s) => Refusal::Journal(s.clone()),
    }
}

/// The session's refusal a wire refusal tells.
pub fn admin_error(r: &Refusal) -> AdminError {
    match r {
        Refusal::NoGame => AdminError::NoGame,
        Refusal::Fen(f) => AdminError::Fen(match f {
            FenWire::TooLong => FenError::TooLong,
            FenWire::Invalid => FenError::Invalid,
            FenWire::Illegal => FenError::Illegal,
        }),
        Refusal::FromPly { max } => AdminError::FromPly { max: *max as usize },
        Refusal::TooLong => AdminError::TooLong,
        Refusal::NotUci(s) => AdminError::NotUci(s.clone()),
        Refusal::Illegal { ply, uci } => AdminError::Illegal { ply: *ply as usize, uci: uci.clone() },
        Refusal::Journal(s) => AdminError::Journal(s.clone()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use dgt_session::{AlertCode, AlertLevel};

    fn sample_move() -> MoveInfo {
        let pos = shakmaty::Chess::default();
        let uci = UciMove::from_ascii(b"g1f3").unwrap();
        let m = uci.to_move(&pos).unwrap();
        let mut after = pos.clone();
        let san = SanPlus::from_move_and_play_unchecked(&mut after, m);
        MoveInfo {
            ply: 1,
            color: Color::White,
            uci,
            san,
            clk: Some(5399),
            emt: Some(1),
            fen: FenText::of(&after),
        }
    }

    #[test]
    fn every_effect_but_writes_crosses_and_comes_back_equal() {
        let mut alert = Alert::new(AlertCode::PositionMismatch, AlertLevel::Warning, "check e4".into());
        alert.squares = alloc::vec![Square::E4, Square::H8];
        let effects = [
            Effect::Link(LinkState::NotResponding),
            Effect::GameStarted {
                orientation: Orientation::Rotated,
                kind: StartKind::Chess960(518),
                start_fen: Some("rnbqkbnr/pppppppp/8/8/8/8/PPPPPPPP/RNBQKBNR w KQkq - 0 1".into()),
                new_record: true,
            },
            Effect::Move { state: MoveState::Provisional, info: sample_move() },
            Effect::Move { state: MoveState::Confirmed, info: sample_move() },
            Effect::Retracted { ply: 1, fen: FenText::of(&shakmaty::Chess::default()) },
            Effect::TakenBack { to_ply: 0, fen: FenText::of(&shakmaty::Chess::default()) },
            Effect::ClockSide(ClockSide::Right),
            Effect::Clock(ClockState {
                white: Some(10),
                black: None,
                running: Some(Color::Black),
                white_flag: false,
                black_flag: true,
            }),
            Effect::GameEnded { result: GameResult::Draw, reason: EndReason::KingsInCentre },
            Effect::ResultCleared,
            Effect::Flipped { flipped: true },
            Effect::Battery(42),
            Effect::Alert(alert),
        ];
        for e in effects {
            let record = record_of(&e).unwrap();
            assert_eq!(effect_of(&record).unwrap(), Some(e));
        }
        assert_eq!(record_of(&Effect::Write(alloc::vec![0x42])), None);
    }

    #[test]
    fn unreadable_text_refuses_the_record() {
        let mut mv = move_wire(&sample_move());
        mv.fen = "not a position".into();
        assert!(matches!(effect_of(&Record::Move { confirmed: true, mv }), Err(Unreadable::Fen(..))));
        let mut mv = move_wire(&sample_move());
        mv.uci = "z9".into();
        assert!(matches!(move_info(&mv), Err(Unreadable::Uci(_))));
    }
}
