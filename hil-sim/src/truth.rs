//! The ground truth of a replay: what a perfect relay must report for it.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

/// How the clock was set for the replay.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct ClockTruth {
    /// The time control in PGN's standard form.
    pub time_control: String,
    /// `"left"` or `"right"`: the display White used.
    pub white_side: String,
    /// True when the time control was inferred from the game's clock comments (the
    /// `TimeControl` tag was missing or not in standard form).
    pub inferred: bool,
}

/// One ply of the replay.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct PlyTruth {
    /// 1 for White's first move.
    pub ply: u32,
    /// `"white"` or `"black"`.
    pub color: String,
    /// The move in SAN, as the source game has it (with check marks).
    pub san: String,
    /// The move in UCI.
    pub uci: String,
    /// `%clk` of the source game, whole seconds.
    pub source_clk_s: Option<u32>,
    /// `%emt` of the source game, whole seconds.
    pub source_emt_s: Option<u32>,
    /// Virtual milliseconds from the scenario start at which the mover pressed the clock
    /// (`None` without a clock, or when the press came late: see `events`).
    pub press_at_ms: Option<u64>,
    /// Virtual milliseconds the mover took, from the opponent's press to their own.
    pub think_ms: u64,
    /// White's display after the press, whole seconds (with a clock).
    pub white_clock_s: Option<u32>,
    /// Black's display after the press, whole seconds (with a clock).
    pub black_clock_s: Option<u32>,
    /// Noise and faults used on this ply.
    pub events: Vec<String>,
    /// False when no relay can know this ply's `%clk` (two presses one clock poll hid, in
    /// a hand script): a relay is right to give none, wrong to give another ply's value.
    #[serde(default = "observable")]
    pub clk_observable: bool,
}

fn observable() -> bool {
    true
}

/// Everything a replay must produce, written as JSON.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct GroundTruth {
    /// Tags of the source game.
    pub tags: BTreeMap<String, String>,
    /// The position the game starts from.
    pub start_fen: String,
    /// The noise profile.
    pub profile: String,
    /// The seed.
    pub seed: u64,
    /// `"normal"` or `"rotated"`.
    pub orientation: String,
    /// The clock, or `None` for a board without one.
    pub clock: Option<ClockTruth>,
    /// The moves, in order.
    pub moves: Vec<PlyTruth>,
    /// `1-0`, `0-1`, `1/2-1/2` or `*`.
    pub result: String,
    /// How the end was shown: `checkmate`, `stalemate`, `resignation` (clock stopped),
    /// `flag_fall`, `kings_in_centre`, or `none`.
    pub end: String,
    /// FEN of the position after the last move.
    pub final_fen: String,
    /// Board FEN of what physically stands on the board when the scenario ends (after any
    /// end gesture).
    pub final_board: String,
    /// How often each kind of noise or fault was used.
    pub events_used: BTreeMap<String, u32>,
    /// Why the source game was cut short, if it was (an illegal move in the source).
    pub truncated: Option<String>,
    /// Virtual length of the scenario in milliseconds.
    pub duration_ms: u64,
    /// The result a relay must end with, when the replay states it (hand scripts; `*`: no
    /// result can be known); `None`: derived from `end` and `result`.
    #[serde(default)]
    pub expected_result: Option<String>,
    /// Every result a relay may end with besides the expected one (a hand script's
    /// `accept_results`, e.g. `*` or a draw by insufficient material); empty: only that one.
    #[serde(default)]
    pub accept_results: Vec<String>,
}

impl GroundTruth {
    /// The SAN moves, in order.
    pub fn san_moves(&self) -> Vec<&str> {
        self.moves.iter().map(|m| m.san.as_str()).collect()
    }

    /// Serialises as pretty JSON.
    pub fn to_json(&self) -> String {
        serde_json::to_string_pretty(self).unwrap_or_else(|e| format!("{{\"error\": \"{e}\"}}"))
    }
}
