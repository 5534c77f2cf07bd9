//! Hand scripts of an independent board emulator (`../shared/corpus/hand-scripts/`,
//! [`dgt_hil_sim::script`]) as jobs of the existing harnesses: played offline through the
//! firmware into the tracker ([`crate::offline::replay_job`]) at the script's own pace, or
//! through the real relay ([`crate::acceptance::run`]), and tabulated by the script's own
//! profile name (`clean`, `mixed-noclock`, `human-pace/fast`, ...), which the simulator's
//! [`Profile`] enum does not hold.
//!
//! ```no_run
//! use dgt_e2e_tests::offline::OfflineOptions;
//! use dgt_e2e_tests::scripts::{format_table, replay_script, tabulate};
//! let scripts = dgt_hil_sim::script::load_dir("../shared/corpus/hand-scripts".as_ref()).unwrap();
//! let outcomes: Vec<_> = scripts.iter().map(|s| replay_script(s, &OfflineOptions::default())).collect();
//! print!("{}", format_table(&tabulate(&outcomes)));
//! ```

use std::collections::BTreeMap;

use dgt_hil_sim::hands::Profile;
use dgt_hil_sim::script::HandScript;

use crate::acceptance::{EndPath, Job};
use crate::offline::{Failure, OfflineOptions, OfflineOutcome, replay_job};

/// The simulator's profile nearest to a script's (`Job` and `OfflineOutcome` need one; the
/// tables use the script's own name). Unknown names map to [`Profile::Mixed`].
pub fn nearest_profile(script_profile: &str) -> Profile {
    match script_profile {
        "clean" => Profile::Clean,
        "capture" => Profile::CaptureOrders,
        "castling" => Profile::CastlingOrders,
        "enpassant" => Profile::EnPassant,
        "promotion" => Profile::Promotion,
        "slide" => Profile::Slide,
        "adjust" => Profile::Adjust,
        "reorder" => Profile::Reorder,
        "fast" => Profile::Burst,
        "takeback" => Profile::Takeback,
        "dropped" => Profile::DroppedUpdates,
        "rotated" => Profile::Rotated,
        "noclock" => Profile::NoClock,
        _ => Profile::Mixed,
    }
}

/// A script as a job: labelled by its file name, its end shown on the board (the script
/// holds the result gesture when there is one).
pub fn job(script: &HandScript) -> Job {
    Job {
        label: script.name.clone(),
        scenario: script.to_scenario(),
        profile: nearest_profile(&script.profile),
        end: EndPath::Board,
    }
}

/// One script replayed offline.
#[derive(Clone, Debug)]
pub struct ScriptOutcome {
    /// The script's file name without `.json`.
    pub name: String,
    /// The script's profile label (see [`HandScript::label`]).
    pub profile: String,
    /// What the tracker made of it.
    pub outcome: OfflineOutcome,
}

/// Replays `script` through the firmware into the tracker, at the script's own pace unless
/// `opts.pace` says otherwise; `opts.end` is ignored (the script shows its own end).
pub fn replay_script(script: &HandScript, opts: &OfflineOptions) -> ScriptOutcome {
    let opts = OfflineOptions { end: EndPath::Board, ..*opts };
    ScriptOutcome {
        name: script.name.clone(),
        profile: script.label.clone(),
        outcome: replay_job(&job(script), &opts),
    }
}

/// One line of the table.
#[derive(Clone, Debug, Default)]
pub struct Row {
    /// Scripts.
    pub games: usize,
    /// Plies in them.
    pub plies: usize,
    /// Scripts exactly right (moves, `%clk`, result, no ghost).
    pub exact: usize,
    /// Scripts with at least one ghost (a confirmed move that was not played there).
    pub ghost_games: usize,
    /// Ghost moves.
    pub ghosts: usize,
    /// Scripts without a ghost but with plies never confirmed ([`Failure::Stalled`]).
    pub stalled_games: usize,
    /// Plies never confirmed in those.
    pub stalled_plies: usize,
    /// Scripts whose moves are all right but a `%clk` is not ([`Failure::Clock`]).
    pub clk_games: usize,
    /// Plies missing from the final confirmed line, in every script.
    pub missing: usize,
    /// `%clk` checked.
    pub clk_checked: usize,
    /// `%clk` absent on a ply confirmed right (the clock showed it).
    pub clk_absent: usize,
    /// `%clk` more than 1 s off on a ply confirmed right.
    pub clk_off: usize,
    /// `%clk` rightly left out (unobservable: two presses in one poll).
    pub clk_unseen: usize,
    /// Wrong results.
    pub results_wrong: usize,
    /// The first script that failed.
    pub first_fail: Option<String>,
}

impl Row {
    fn add(&mut self, name: &str, o: &OfflineOutcome) {
        self.games += 1;
        self.plies += o.plies;
        self.exact += usize::from(o.passed());
        self.ghost_games += usize::from(!o.ghosts.is_empty());
        self.ghosts += o.ghosts.len();
        if o.failure() == Some(Failure::Stalled) {
            self.stalled_games += 1;
            self.stalled_plies += o.missing;
        }
        self.clk_games += usize::from(o.failure() == Some(Failure::Clock));
        self.missing += o.missing;
        self.clk_checked += o.clk_checked;
        self.clk_absent += o.clk_absent;
        self.clk_off += o.clk_off;
        self.clk_unseen += o.clk_unseen;
        self.results_wrong += usize::from(o.result_wrong());
        if !o.passed() && self.first_fail.is_none() {
            self.first_fail = Some(name.to_string());
        }
    }
}

/// The table by profile label, with a `TOTAL` line.
pub fn tabulate(outcomes: &[ScriptOutcome]) -> BTreeMap<String, Row> {
    let mut rows: BTreeMap<String, Row> = BTreeMap::new();
    let mut total = Row::default();
    for s in outcomes {
        rows.entry(s.profile.clone()).or_default().add(&s.name, &s.outcome);
        total.add(&s.name, &s.outcome);
    }
    rows.insert("TOTAL".into(), total);
    rows
}

/// The table as text: per profile, games exact, games with a wrong move (ghost) and how
/// many, games stalled (no ghost, plies never confirmed) and how many plies, games right
/// but for a `%clk`, then the `%clk` counts over plies confirmed right (checked, absent,
/// more than 1 s off, rightly hidden) and wrong results.
pub fn format_table(rows: &BTreeMap<String, Row>) -> String {
    let mut s = format!(
        "{:<22} {:>5} {:>6} {:>5} {:>5} {:>7} {:>7} {:>7} {:>7} {:>7} {:>7} {:>7} {:>6} {:>6}  first failure\n",
        "profile",
        "games",
        "plies",
        "exact",
        "wrong",
        "(moves)",
        "stalled",
        "(plies)",
        "clk bad",
        "clk chk",
        "clk abs",
        "clk off",
        "hidden",
        "result"
    );
    for (name, r) in rows.iter().filter(|(n, _)| n.as_str() != "TOTAL").chain(rows.get_key_value("TOTAL")) {
        s.push_str(&format!(
            "{:<22} {:>5} {:>6} {:>5} {:>5} {:>7} {:>7} {:>7} {:>7} {:>7} {:>7} {:>7} {:>6} {:>6}  {}\n",
            name,
            r.games,
            r.plies,
            r.exact,
            r.ghost_games,
            r.ghosts,
            r.stalled_games,
            r.stalled_plies,
            r.clk_games,
            r.clk_checked,
            r.clk_absent,
            r.clk_off,
            r.clk_unseen,
            r.results_wrong,
            r.first_fail.as_deref().unwrap_or("")
        ));
    }
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_script_profile_has_a_nearest_simulator_profile() {
        assert_eq!(nearest_profile("fast"), Profile::Burst);
        assert_eq!(nearest_profile("dropped"), Profile::DroppedUpdates);
        assert_eq!(nearest_profile("mixed"), Profile::Mixed);
        assert_eq!(nearest_profile("something new"), Profile::Mixed);
    }
}
