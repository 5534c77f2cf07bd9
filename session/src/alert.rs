//! What the operator is told: typed codes, levels and a message that says what to do.

use alloc::{string::String, vec::Vec};
use serde::{Deserialize, Serialize};
use shakmaty::Square;

/// How urgent an alert is.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum AlertLevel {
    /// Informational (a board came back).
    Info,
    /// The operator should look (a misplaced piece).
    Warning,
    /// Something is wrong and needs action (disk full, board lost).
    Error,
}

/// The relay's alert vocabulary, serialised as the stable strings clients match on.
/// Board sessions raise most of them; the host raises [`AlertCode::Storage`].
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum AlertCode {
    /// The board stopped answering or its port went away.
    NotResponding,
    /// A board that was not responding is back.
    BoardBack,
    /// No legal sequence explains the board; `squares` differ.
    PositionMismatch,
    /// The board is explained again after a mismatch.
    PositionRecovered,
    /// Moves made while the board was away were reconstructed from its position alone.
    MovesReconstructed,
    /// The board reached its position by more than one order of moves and did not show
    /// which: the moves from a ply on are kept unconfirmed.
    MoveOrderUnknown,
    /// A journaled game could not be resumed.
    Resume,
    /// The game reached the tracker's ply capacity.
    Capacity,
    /// The board's battery is low.
    BatteryLow,
    /// The board's battery is fine again.
    BatteryOk,
    /// The clock is not connected to the board any more.
    ClockLost,
    /// The clock is connected again.
    ClockBack,
    /// The clock shows its battery-low sign.
    ClockBatteryLow,
    /// The clock's battery-low sign is gone.
    ClockBatteryOk,
    /// The clock of a live game stayed stopped.
    ClockPaused,
    /// The clock of a live game runs again.
    ClockRunning,
    /// A clock command was not acknowledged.
    ClockCommand,
    /// The game was ended by a result shown on the board (a magic piece, the kings in the
    /// centre): what the board showed, and how to undo it if it was a misreading.
    ResultFromBoard,
    /// The journal or the PGN files cannot be written (raised by the host).
    Storage,
    /// Lichess refused a pushed game or the push, or pushing keeps failing (raised by the
    /// host's Lichess push).
    Push,
    /// Publishing to NATS JetStream fails, or works again (raised by the host's publisher).
    Nats,
    /// Two venue relays claim the same board of the same round (raised by an edge).
    BoardConflict,
    /// Nothing on a port could be identified: no board answered as one board, nor as a
    /// chain in DGT's bus mode (raised by the host; relay-wide).
    PortUnidentified,
    /// A port that could not be identified carries one board or a chain now.
    PortIdentified,
    /// A live game's clock runs and nothing on its board has changed for minutes: a long
    /// think, players away, or a board that does not report its moves.
    BoardIdle,
    /// The board of an idle game changes again.
    BoardActive,
    /// A relay box's bridge: frames of another protocol version refused, damaged frames
    /// skipped, the box not answering (raised by the host's bridge).
    Bridge,
    /// A configured port cannot be opened (missing, permission denied, busy), or (an info)
    /// opens again (raised by the host; relay-wide).
    PortUnopenable,
}

impl AlertCode {
    /// Every code, in declaration order: for the feed's schema check and the clients' docs.
    /// A test keeps it whole (its match stops compiling when a code is added).
    pub const ALL: [AlertCode; 28] = [
        AlertCode::NotResponding,
        AlertCode::BoardBack,
        AlertCode::PositionMismatch,
        AlertCode::PositionRecovered,
        AlertCode::MovesReconstructed,
        AlertCode::MoveOrderUnknown,
        AlertCode::Resume,
        AlertCode::Capacity,
        AlertCode::BatteryLow,
        AlertCode::BatteryOk,
        AlertCode::ClockLost,
        AlertCode::ClockBack,
        AlertCode::ClockBatteryLow,
        AlertCode::ClockBatteryOk,
        AlertCode::ClockPaused,
        AlertCode::ClockRunning,
        AlertCode::ClockCommand,
        AlertCode::ResultFromBoard,
        AlertCode::Storage,
        AlertCode::Push,
        AlertCode::Nats,
        AlertCode::BoardConflict,
        AlertCode::PortUnidentified,
        AlertCode::PortIdentified,
        AlertCode::BoardIdle,
        AlertCode::BoardActive,
        AlertCode::Bridge,
        AlertCode::PortUnopenable,
    ];

    /// The stable string (`not_responding`, ...), as serialised.
    pub fn as_str(self) -> &'static str {
        match self {
            AlertCode::NotResponding => "not_responding",
            AlertCode::BoardBack => "board_back",
            AlertCode::PositionMismatch => "position_mismatch",
            AlertCode::PositionRecovered => "position_recovered",
            AlertCode::MovesReconstructed => "moves_reconstructed",
            AlertCode::MoveOrderUnknown => "move_order_unknown",
            AlertCode::Resume => "resume",
            AlertCode::Capacity => "capacity",
            AlertCode::BatteryLow => "battery_low",
            AlertCode::BatteryOk => "battery_ok",
            AlertCode::ClockLost => "clock_lost",
            AlertCode::ClockBack => "clock_back",
            AlertCode::ClockBatteryLow => "clock_battery_low",
            AlertCode::ClockBatteryOk => "clock_battery_ok",
            AlertCode::ClockPaused => "clock_paused",
            AlertCode::ClockRunning => "clock_running",
            AlertCode::ClockCommand => "clock_command",
            AlertCode::ResultFromBoard => "result_from_board",
            AlertCode::Storage => "storage",
            AlertCode::Push => "push",
            AlertCode::Nats => "nats",
            AlertCode::BoardConflict => "board_conflict",
            AlertCode::PortUnidentified => "port_unidentified",
            AlertCode::PortIdentified => "port_identified",
            AlertCode::BoardIdle => "board_idle",
            AlertCode::BoardActive => "board_active",
            AlertCode::Bridge => "bridge",
            AlertCode::PortUnopenable => "port_unopenable",
        }
    }
}

impl core::fmt::Display for AlertCode {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.write_str(self.as_str())
    }
}

/// One alert about one board.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Alert {
    /// What it is about.
    pub code: AlertCode,
    /// How urgent.
    pub level: AlertLevel,
    /// What happened and what to do, for a person.
    pub message: String,
    /// Squares involved, if any.
    pub squares: Vec<Square>,
}

impl Alert {
    /// An alert without squares.
    pub fn new(code: AlertCode, level: AlertLevel, message: String) -> Alert {
        Alert { code, level, message, squares: Vec::new() }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// `ALL` holds every code once: a new code must be given a place here (the match stops
    /// compiling), and that place must be its place in `ALL`.
    #[test]
    fn all_holds_every_code_once() {
        for (i, code) in AlertCode::ALL.into_iter().enumerate() {
            let place = match code {
                AlertCode::NotResponding => 0,
                AlertCode::BoardBack => 1,
                AlertCode::PositionMismatch => 2,
                AlertCode::PositionRecovered => 3,
                AlertCode::MovesReconstructed => 4,
                AlertCode::MoveOrderUnknown => 5,
                AlertCode::Resume => 6,
                AlertCode::Capacity => 7,
                AlertCode::BatteryLow => 8,
                AlertCode::BatteryOk => 9,
                AlertCode::ClockLost => 10,
                AlertCode::ClockBack => 11,
                AlertCode::ClockBatteryLow => 12,
                AlertCode::ClockBatteryOk => 13,
                AlertCode::ClockPaused => 14,
                AlertCode::ClockRunning => 15,
                AlertCode::ClockCommand => 16,
                AlertCode::ResultFromBoard => 17,
                AlertCode::Storage => 18,
                AlertCode::Push => 19,
                AlertCode::Nats => 20,
                AlertCode::BoardConflict => 21,
                AlertCode::PortUnidentified => 22,
                AlertCode::PortIdentified => 23,
                AlertCode::BoardIdle => 24,
                AlertCode::BoardActive => 25,
                AlertCode::Bridge => 26,
                AlertCode::PortUnopenable => 27,
            };
            assert_eq!(place, i, "{code}");
        }
    }

    #[test]
    fn codes_serialise_as_the_strings_clients_match_on() {
        for code in [
            AlertCode::NotResponding,
            AlertCode::MovesReconstructed,
            AlertCode::MoveOrderUnknown,
            AlertCode::ClockBatteryOk,
            AlertCode::ResultFromBoard,
        ] {
            assert_eq!(serde_json::to_string(&code).unwrap(), format!("\"{}\"", code.as_str()));
            assert_eq!(serde_json::from_str::<AlertCode>(&format!("\"{code}\"")).unwrap(), code);
        }
        assert_eq!(serde_json::to_string(&AlertLevel::Warning).unwrap(), "\"warning\"");
    }
}
