//! Hand-and-clock scripts (`dgt-hand-script/1`, `../shared/corpus/hand-scripts/FORMAT.md`):
//! timed square changes and clock presses written by an independent board emulator, played
//! through this simulator's own firmware model and DGT 3000 model so that the relay meets
//! stimuli nobody on the project wrote.
//!
//! [`load`] reads and validates one script (typed errors naming the file), [`load_dir`] and
//! [`load_tree`] a folder of them; [`HandScript::to_scenario`] turns a script into a
//! [`Scenario`](crate::Scenario) with its [`GroundTruth`](crate::GroundTruth), which every
//! player runs unchanged: [`crate::SimBoard::run_scenario`] on a pty,
//! [`crate::spawn_fleet`], [`crate::offline::replay_offline`], the end-to-end harnesses.
//!
//! ```no_run
//! use dgt_hil_sim::firmware::BoardConfig;
//! use dgt_hil_sim::offline::replay_offline;
//! use dgt_protocol::Command;
//!
//! # fn main() -> Result<(), Box<dyn std::error::Error>> {
//! let script = dgt_hil_sim::script::load("../shared/corpus/hand-scripts/clean-s1-g000.json".as_ref())?;
//! let scenario = script.to_scenario(); // scenario.truth: the game a relay must publish
//! let wire = replay_offline(&scenario, BoardConfig::default(), Command::SendUpdateNice);
//! println!("{} messages, {} plies", wire.received.len(), script.truth.san.len());
//! let all = dgt_hil_sim::script::load_tree("../shared/corpus/hand-scripts".as_ref())?;
//! println!("{} scripts", all.len());
//! # Ok(())
//! # }
//! ```
//!
//! # The emulator's wire behaviour, as modelled
//!
//! - **Squares.** Every `set` with `reported: true` is one FIELD_UPDATE for that square with
//!   that code, sent at the step's time, in script order; `reported: false` sends nothing,
//!   while the board (dumps, the EEPROM log) holds the new code. The firmware's scan would
//!   merge changes made within one scan period (a lift and put-back on one square cancel
//!   out) and report them at the scan's instant in index order, which is not what the
//!   emulator's line carried; so a script's changes bypass the scan
//!   ([`crate::Firmware::set_square_at_once`]). [`Action::DropReport`](crate::Action) is not
//!   used: it swallows the next *scanned* change of a square, which need not be the one the
//!   script lost.
//! - **Squares are logical.** `start_codes` is indexed a1 = 0 .. h8 = 63 and `set` names game
//!   squares, on a rotated board too (the corpus's rotated scripts start from the normal
//!   array); the board's orientation maps them to wire indices (rotated: normal index ^ 63),
//!   as for every other scenario.
//! - **The clock is a puppet.** The script dictates every display (its countdown does not
//!   follow real time), so the DGT 3000 model is switched to puppet mode at time 0
//!   ([`crate::Dgt3000::make_puppet`]) with the script's two initial displays, and never
//!   counts by itself. `start` and `stop` set or clear status bit D0 with one BWTIME at once;
//!   a `segment` becomes one display change per whole second, each at its linear time
//!   within `dur_ms` (`from_s - k` at `k * dur_ms / (from_s - to_s)`), each sent as a BWTIME
//!   as the firmware does on a change in update mode; a `press` sets the presser's display,
//!   puts the lever down on that side and sends a BWTIME; a `press2` applies both presses
//!   and sends ONE BWTIME (the lever back where it started). `increment_display` sets the
//!   time-per-move bit (0x20) in both hours bytes.
//!
//! Decisions where FORMAT.md is silent:
//! - A segment may count below zero (`to_s` -54: the emulator's source clocks contradict
//!   each other there; the next press shows a positive time again): the display stops at
//!   0 (it cannot show less) and no flag is raised, as the script never says one fell.
//!   Each display change still comes at its linear time within the segment.
//! - A segment's changes due after the clock step that follows it (its end is rounded to
//!   the next press in the files: they differ by under a millisecond) are made just before
//!   that step, so the display always reaches `to_s` before the press. A segment with
//!   `from_s == to_s` changes nothing.
//! - Times: `dt_ms` accumulates as f64 and each step's time is rounded to whole virtual
//!   milliseconds; rounding never reorders steps (equal times keep script order).
//! - The players build the clock from the scenario's setup before the first action, with
//!   White's initial display on both sides (a time control cannot hold two different
//!   bases); when the script's initial displays differ, the puppet action at time 0 sends a
//!   second BWTIME at the same millisecond with the right ones.
//! - A press BWTIME is sent even if it reads as the one before (only possible for a
//!   `press2` that changes nothing): the script says one went out.
//! - The ground truth's time control is `?` (unknown: scripts do not state it) and each
//!   ply's `think_ms` is the time since the previous press (0 without a clock).

mod convert;

use std::collections::BTreeMap;
use std::fmt;
use std::path::{Path, PathBuf};

use dgt_protocol::{ClockSide, PieceCode};
use serde::Deserialize;
use shakmaty::{Color, Square};

/// The `format` value this module reads.
pub const FORMAT: &str = "dgt-hand-script/1";

/// Why a script could not be used. Every variant names the file.
#[derive(Debug, thiserror::Error)]
pub enum ScriptError {
    /// The file or folder could not be read.
    #[error("cannot read {}: {source}", path.display())]
    Io {
        /// The path.
        path: PathBuf,
        /// Why.
        source: std::io::Error,
    },
    /// Not JSON, or not shaped as a script (a missing or mistyped field).
    #[error("{} is not a hand script: {source}", path.display())]
    Json {
        /// The path.
        path: PathBuf,
        /// Where and why.
        source: serde_json::Error,
    },
    /// The `format` field is not [`FORMAT`].
    #[error("{}: format {found:?}, expected {FORMAT:?}", path.display())]
    Format {
        /// The path.
        path: PathBuf,
        /// What the file says (empty when absent).
        found: String,
    },
    /// One step is wrong.
    #[error("{}: step {index}: {problem}", path.display())]
    Step {
        /// The path.
        path: PathBuf,
        /// 0-based index in `steps`.
        index: usize,
        /// What is wrong.
        problem: StepProblem,
    },
    /// `board.start_codes` or `clock` is wrong.
    #[error("{}: {why}", path.display())]
    Setup {
        /// The path.
        path: PathBuf,
        /// What is wrong.
        why: String,
    },
    /// The truth contradicts itself or the steps (lengths, FEN, presses and plies).
    #[error("{}: {why}", path.display())]
    Inconsistent {
        /// The path.
        path: PathBuf,
        /// What is wrong.
        why: String,
    },
}

/// What is wrong with one step.
#[derive(Clone, Debug, PartialEq, thiserror::Error)]
pub enum StepProblem {
    /// A `kind` FORMAT.md does not define.
    #[error("unknown step kind {0:?}")]
    UnknownKind(String),
    /// A field the kind needs is absent.
    #[error("missing field {0:?}")]
    Missing(&'static str),
    /// Not a square name like `e4`.
    #[error("bad square {0:?}")]
    BadSquare(String),
    /// A piece code outside 0..=12.
    #[error("piece code {0} is not 0..=12")]
    BadCode(i64),
    /// A negative or non-finite duration.
    #[error("{field} is {value}: times must be finite and not negative")]
    BadTime {
        /// The field.
        field: &'static str,
        /// Its value.
        value: f64,
    },
    /// Clock seconds below 0 or above the display's 9:59:59.
    #[error("{field} is {value}: clock seconds must be 0..=35999")]
    BadSeconds {
        /// The field.
        field: &'static str,
        /// Its value.
        value: i64,
    },
    /// A side that is not `left` or `right`.
    #[error("side {0:?} is not left or right")]
    BadSide(String),
    /// A `press2` without exactly two presses.
    #[error("press2 holds {0} presses, not 2")]
    Press2Count(usize),
}

/// One step's action (FORMAT.md's step kinds).
#[derive(Clone, Debug, PartialEq)]
pub enum StepKind {
    /// The clock starts: White's side runs.
    Start,
    /// The running side's display counts from `from_s` to `to_s` over `dur_ms`. The
    /// emulator writes negative ends where its source's clocks contradict each other (a
    /// countdown to -54 before a press showing 13): the display stops at 0.
    Segment {
        /// The running display.
        side: ClockSide,
        /// Seconds at the segment's start, as written.
        from_s: i64,
        /// Seconds at its end, as written (may be below 0).
        to_s: i64,
        /// Its length in milliseconds.
        dur_ms: f64,
    },
    /// A square now holds `code`.
    Set {
        /// The game square.
        square: Square,
        /// The DGT code (0 empty, 1..=12 pieces).
        code: PieceCode,
        /// False when the field update was lost.
        reported: bool,
    },
    /// One clock press.
    Press {
        /// The display pressed.
        side: ClockSide,
        /// What it shows after the press.
        display_s: u32,
    },
    /// Two presses one clock poll reports together.
    Press2 {
        /// (display pressed, what it shows after), in order.
        presses: [(ClockSide, u32); 2],
    },
    /// The clock is stopped after the game.
    Stop,
    /// A label for people.
    Note {
        /// The text.
        text: String,
    },
}

/// One step: the wait before it and what happens.
#[derive(Clone, Debug, PartialEq)]
pub struct Step {
    /// Milliseconds to wait before the step.
    pub dt_ms: f64,
    /// What happens.
    pub kind: StepKind,
}

/// The clock attached to the scripted board.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ScriptClock {
    /// White's display.
    pub white_side: ClockSide,
    /// The left display at the start, seconds.
    pub initial_left_s: u32,
    /// The right display at the start, seconds.
    pub initial_right_s: u32,
    /// The hours bytes carry the time-per-move bit.
    pub increment_display: bool,
}

/// Where the kings go in the result gesture.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct SignalSquares {
    /// White's king's square.
    pub white_king: Square,
    /// Black's king's square.
    pub black_king: Square,
}

/// What a relay should publish for the script (the file's `truth`, the parts checkers use).
#[derive(Clone, Debug, PartialEq)]
pub struct ScriptTruth {
    /// SAN per ply.
    pub san: Vec<String>,
    /// UCI per ply.
    pub uci: Vec<String>,
    /// The mover's display right after each press (`None` without a clock).
    pub clk: Vec<Option<u32>>,
    /// False where no relay can know the ply's `%clk` (two presses one poll hid).
    pub clk_observable: Vec<bool>,
    /// The source PGN's `%clk` per ply.
    pub clk_pgn: Vec<Option<u32>>,
    /// The source game's result.
    pub result: String,
    /// The result a relay must end with (`*`: none can be known).
    pub expected_result: String,
    /// Every result a relay may end with.
    pub accept_results: Vec<String>,
    /// True when the script ends with the kings-in-centre gesture.
    pub result_signalled: bool,
    /// The gesture's squares, when signalled.
    pub result_signal_squares: Option<SignalSquares>,
    /// Handling labels per ply.
    pub events: Vec<Vec<String>>,
    /// How often each label was used.
    pub event_counts: BTreeMap<String, u32>,
    /// The start position.
    pub start_fen: String,
    /// The position after the last ply.
    pub final_fen: String,
    /// Source tags (White, Black, Event, Round, Date), when given.
    pub tags: BTreeMap<String, String>,
    /// Why the source game was cut short, if it was.
    pub truncated: Option<String>,
}

/// A validated hand script.
#[derive(Clone, Debug, PartialEq)]
pub struct HandScript {
    /// The file it came from.
    pub path: PathBuf,
    /// The file name without `.json`, e.g. `mixed-noclock-s1-g004`.
    pub name: String,
    /// The profile a table files it under: the file name before `-s<seed>-g<index>`
    /// (`mixed-noclock`), after the sub-folder for [`load_tree`] (`human-pace/clean`).
    pub label: String,
    /// The emulator's handling profile (`mixed` for `mixed-noclock-...` files too).
    pub profile: String,
    /// The emulator's seed, as written.
    pub seed: String,
    /// The source PGN's file name and 0-based game index.
    pub source: Option<(String, u64)>,
    /// White sits at the connector's right.
    pub rotated: bool,
    /// The board before the host connects, a1 = 0 .. h8 = 63.
    pub start_codes: [PieceCode; 64],
    /// The clock, or `None` without one.
    pub clock: Option<ScriptClock>,
    /// The steps in order.
    pub steps: Vec<Step>,
    /// What a relay should publish.
    pub truth: ScriptTruth,
    /// Who moves first (from `start_fen`).
    pub first_mover: Color,
}

// ----- the file as serde sees it --------------------------------------------------------

#[derive(Deserialize)]
struct FormatOnly {
    #[serde(default)]
    format: Option<String>,
}

/// A seed written as text or as a number.
#[derive(Deserialize)]
#[serde(untagged)]
enum RawSeed {
    Text(String),
    Number(serde_json::Number),
}

/// Text written as one string or as a list of them.
#[derive(Deserialize)]
#[serde(untagged)]
enum RawText {
    One(String),
    Many(Vec<String>),
}

#[derive(Deserialize)]
struct RawScript {
    #[serde(default)]
    source: Option<RawSource>,
    profile: String,
    #[serde(default)]
    seed: Option<RawSeed>,
    board: RawBoard,
    clock: Option<RawClock>,
    steps: Vec<RawStep>,
    truth: RawTruth,
}

#[derive(Deserialize)]
struct RawSource {
    pgn: String,
    game_index: u64,
}

#[derive(Deserialize)]
struct RawBoard {
    #[serde(default)]
    rotated: bool,
    start_codes: Vec<i64>,
}

#[derive(Deserialize)]
struct RawInitial {
    left: i64,
    right: i64,
}

#[derive(Deserialize)]
struct RawClock {
    white_side: String,
    initial_s: RawInitial,
    #[serde(default)]
    increment_display: bool,
}

#[derive(Deserialize)]
struct RawPress {
    side: Option<String>,
    display_s: Option<i64>,
}

#[derive(Deserialize)]
struct RawStep {
    dt_ms: f64,
    kind: String,
    side: Option<String>,
    from_s: Option<i64>,
    to_s: Option<i64>,
    dur_ms: Option<f64>,
    square: Option<String>,
    code: Option<i64>,
    reported: Option<bool>,
    display_s: Option<i64>,
    presses: Option<Vec<RawPress>>,
    text: Option<String>,
}

#[derive(Deserialize)]
struct RawSignalSquares {
    white_king: String,
    black_king: String,
}

#[derive(Deserialize)]
struct RawTruth {
    san: Vec<String>,
    uci: Vec<String>,
    #[serde(default)]
    clk: Vec<Option<u32>>,
    #[serde(default)]
    clk_observable: Vec<bool>,
    #[serde(default)]
    clk_pgn: Vec<Option<u32>>,
    result: String,
    expected_result: String,
    #[serde(default)]
    accept_results: Vec<String>,
    #[serde(default)]
    result_signalled: bool,
    #[serde(default)]
    result_signal_squares: Option<RawSignalSquares>,
    #[serde(default)]
    events: Vec<Vec<String>>,
    #[serde(default)]
    event_counts: BTreeMap<String, u32>,
    start_fen: String,
    final_fen: String,
    #[serde(default)]
    white: Option<String>,
    #[serde(default)]
    black: Option<String>,
    #[serde(default)]
    event: Option<String>,
    #[serde(default)]
    round: Option<String>,
    #[serde(default)]
    date: Option<String>,
    #[serde(default)]
    truncated_pgn_error: Option<RawText>,
}

// ----- loading ----------------------------------------------------------------------------

/// Reads and validates one script.
pub fn load(path: &Path) -> Result<HandScript, ScriptError> {
    let text = std::fs::read_to_string(path)
        .map_err(|source| ScriptError::Io { path: path.to_path_buf(), source })?;
    parse(&text, path)
}

/// Every `*.json` script directly in `dir` (not in sub-folders), sorted by file name.
pub fn load_dir(dir: &Path) -> Result<Vec<HandScript>, ScriptError> {
    script_files(dir, false)?.iter().map(|(p, prefix)| load(p).map(|s| s.with_prefix(prefix))).collect()
}

/// Every `*.json` script in `dir` and its sub-folders, sorted by path; the label of a
/// script in a sub-folder starts with that folder (`human-pace/clean`).
pub fn load_tree(dir: &Path) -> Result<Vec<HandScript>, ScriptError> {
    script_files(dir, true)?.iter().map(|(p, prefix)| load(p).map(|s| s.with_prefix(prefix))).collect()
}

/// The `*.json` files in `dir` (and its sub-folders when `recursive`), sorted by path, each
/// with its folder relative to `dir` as a label prefix (`""` or `"human-pace/"`).
pub fn script_files(dir: &Path, recursive: bool) -> Result<Vec<(PathBuf, String)>, ScriptError> {
    let mut out = Vec::new();
    let mut folders = vec![(dir.to_path_buf(), String::new())];
    while let Some((folder, prefix)) = folders.pop() {
        let io = |source| ScriptError::Io { path: folder.clone(), source };
        for entry in std::fs::read_dir(&folder).map_err(io)? {
            let path = entry.map_err(io)?.path();
            let name = path.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default();
            if path.is_dir() {
                if recursive {
                    folders.push((path, format!("{prefix}{name}/")));
                }
            } else if name.ends_with(".json") {
                out.push((path, prefix.clone()));
            }
        }
    }
    out.sort();
    Ok(out)
}

/// True when `path` is a folder, or a file whose first non-blank byte opens a JSON object:
/// what the CLI's `--script` takes for hand scripts (anything else is a command file).
pub fn looks_like_script(path: &Path) -> bool {
    if path.is_dir() {
        return true;
    }
    std::fs::read(path).is_ok_and(|b| b.iter().find(|c| !c.is_ascii_whitespace()) == Some(&b'{'))
}

/// Parses and validates a script's text; `path` names it in errors and sets its name.
pub fn parse(text: &str, path: &Path) -> Result<HandScript, ScriptError> {
    let json = |source| ScriptError::Json { path: path.to_path_buf(), source };
    let format = serde_json::from_str::<FormatOnly>(text).map_err(json)?.format.unwrap_or_default();
    if format != FORMAT {
        return Err(ScriptError::Format { path: path.to_path_buf(), found: format });
    }
    let raw: RawScript = serde_json::from_str(text).map_err(json)?;
    validate(raw, path)
}

impl HandScript {
    fn with_prefix(mut self, prefix: &str) -> HandScript {
        self.label = format!("{prefix}{}", self.label);
        self
    }

    /// Number of plies the script plays.
    pub fn plies(&self) -> usize {
        self.truth.san.len()
    }

    /// Who makes ply `ply` (0-based).
    pub fn mover(&self, ply: usize) -> Color {
        if ply.is_multiple_of(2) { self.first_mover } else { !self.first_mover }
    }
}

/// The file-name part before `-s<digits>-g<digits>`, if the name has that shape.
fn profile_of_name(name: &str) -> Option<&str> {
    let (head, game) = name.rsplit_once("-g")?;
    let (profile, seed) = head.rsplit_once("-s")?;
    let digits = |s: &str| !s.is_empty() && s.bytes().all(|b| b.is_ascii_digit());
    (digits(game) && digits(seed) && !profile.is_empty()).then_some(profile)
}

struct Problems<'a> {
    path: &'a Path,
}

impl Problems<'_> {
    fn step(&self, index: usize, problem: StepProblem) -> ScriptError {
        ScriptError::Step { path: self.path.to_path_buf(), index, problem }
    }
    fn setup(&self, why: String) -> ScriptError {
        ScriptError::Setup { path: self.path.to_path_buf(), why }
    }
    fn inconsistent(&self, why: String) -> ScriptError {
        ScriptError::Inconsistent { path: self.path.to_path_buf(), why }
    }
}

fn side_of(text: &str) -> Option<ClockSide> {
    match text {
        "left" => Some(ClockSide::Left),
        "right" => Some(ClockSide::Right),
        _ => None,
    }
}

fn code_of(code: i64) -> Option<PieceCode> {
    (0..=12).contains(&code).then(|| PieceCode::from_nibble(code as u8))
}

fn seconds(field: &'static str, value: i64) -> Result<u32, StepProblem> {
    u32::try_from(value).ok().filter(|s| *s <= 35_999).ok_or(StepProblem::BadSeconds { field, value })
}

fn time(field: &'static str, value: f64) -> Result<f64, StepProblem> {
    if value.is_finite() && value >= 0.0 { Ok(value) } else { Err(StepProblem::BadTime { field, value }) }
}

fn step_of(raw: RawStep) -> Result<Step, StepProblem> {
    let dt_ms = time("dt_ms", raw.dt_ms)?;
    let side = |s: &Option<String>| -> Result<ClockSide, StepProblem> {
        let s = s.as_deref().ok_or(StepProblem::Missing("side"))?;
        side_of(s).ok_or_else(|| StepProblem::BadSide(s.to_string()))
    };
    let need_i = |v: Option<i64>, f: &'static str| v.ok_or(StepProblem::Missing(f));
    let kind = match raw.kind.as_str() {
        "start" => StepKind::Start,
        "stop" => StepKind::Stop,
        "note" => StepKind::Note { text: raw.text.unwrap_or_default() },
        "segment" => StepKind::Segment {
            side: side(&raw.side)?,
            from_s: need_i(raw.from_s, "from_s")?,
            to_s: need_i(raw.to_s, "to_s")?,
            dur_ms: time("dur_ms", raw.dur_ms.ok_or(StepProblem::Missing("dur_ms"))?)?,
        },
        "set" => {
            let name = raw.square.ok_or(StepProblem::Missing("square"))?;
            let square = name.parse::<Square>().map_err(|_| StepProblem::BadSquare(name.clone()))?;
            let code = need_i(raw.code, "code")?;
            StepKind::Set {
                square,
                code: code_of(code).ok_or(StepProblem::BadCode(code))?,
                reported: raw.reported.ok_or(StepProblem::Missing("reported"))?,
            }
        }
        "press" => StepKind::Press {
            side: side(&raw.side)?,
            display_s: seconds("display_s", need_i(raw.display_s, "display_s")?)?,
        },
        "press2" => {
            let presses = raw.presses.ok_or(StepProblem::Missing("presses"))?;
            let mut out = Vec::with_capacity(2);
            for p in &presses {
                out.push((side(&p.side)?, seconds("display_s", need_i(p.display_s, "display_s")?)?));
            }
            match out[..] {
                [a, b] => StepKind::Press2 { presses: [a, b] },
                _ => return Err(StepProblem::Press2Count(out.len())),
            }
        }
        other => return Err(StepProblem::UnknownKind(other.to_string())),
    };
    Ok(Step { dt_ms, kind })
}

fn validate(raw: RawScript, path: &Path) -> Result<HandScript, ScriptError> {
    let p = Problems { path };
    if raw.board.start_codes.len() != 64 {
        return Err(p.setup(format!("board.start_codes holds {} codes, not 64", raw.board.start_codes.len())));
    }
    let mut start_codes = [PieceCode::Empty; 64];
    for (i, &c) in raw.board.start_codes.iter().enumerate() {
        start_codes[i] =
            code_of(c).ok_or_else(|| p.setup(format!("board.start_codes[{i}] is {c}, not 0..=12")))?;
    }
    let clock = match raw.clock {
        None => None,
        Some(c) => {
            let white_side = side_of(&c.white_side).ok_or_else(|| {
                p.setup(format!("clock.white_side {:?} is not left or right", c.white_side))
            })?;
            let secs = |v: i64, f: &str| {
                u32::try_from(v)
                    .ok()
                    .filter(|s| *s <= 35_999)
                    .ok_or_else(|| p.setup(format!("clock.initial_s.{f} is {v}, not 0..=35999")))
            };
            Some(ScriptClock {
                white_side,
                initial_left_s: secs(c.initial_s.left, "left")?,
                initial_right_s: secs(c.initial_s.right, "right")?,
                increment_display: c.increment_display,
            })
        }
    };
    let steps = raw
        .steps
        .into_iter()
        .enumerate()
        .map(|(i, s)| step_of(s).map_err(|e| p.step(i, e)))
        .collect::<Result<Vec<_>, _>>()?;
    let truth = truth_of(raw.truth, &p)?;
    let first_mover = truth
        .start_fen
        .parse::<shakmaty::fen::Fen>()
        .map_err(|e| p.inconsistent(format!("truth.start_fen {:?}: {e}", truth.start_fen)))?
        .as_setup()
        .turn;
    let name = path.file_stem().map(|s| s.to_string_lossy().into_owned()).unwrap_or_default();
    let label = profile_of_name(&name).unwrap_or(&raw.profile).to_string();
    let seed = match raw.seed {
        Some(RawSeed::Text(s)) => s,
        Some(RawSeed::Number(n)) => n.to_string(),
        None => String::new(),
    };
    let script = HandScript {
        path: path.to_path_buf(),
        name,
        label,
        profile: raw.profile,
        seed,
        source: raw.source.map(|s| (s.pgn, s.game_index)),
        rotated: raw.board.rotated,
        start_codes,
        clock,
        steps,
        truth,
        first_mover,
    };
    check_presses(&script, &p)?;
    Ok(script)
}

fn truth_of(t: RawTruth, p: &Problems<'_>) -> Result<ScriptTruth, ScriptError> {
    let plies = t.san.len();
    let check_len = |what: &str, len: usize| {
        if len == plies || len == 0 {
            Ok(())
        } else {
            Err(p.inconsistent(format!("truth.{what} has {len} entries for {plies} plies")))
        }
    };
    if t.uci.len() != plies {
        return Err(p.inconsistent(format!("truth.uci has {} entries for {plies} plies", t.uci.len())));
    }
    check_len("clk", t.clk.len())?;
    check_len("clk_observable", t.clk_observable.len())?;
    check_len("clk_pgn", t.clk_pgn.len())?;
    check_len("events", t.events.len())?;
    let square = |s: &str| {
        s.parse::<Square>()
            .map_err(|_| p.inconsistent(format!("truth.result_signal_squares: bad square {s:?}")))
    };
    let result_signal_squares = match &t.result_signal_squares {
        Some(s) => {
            Some(SignalSquares { white_king: square(&s.white_king)?, black_king: square(&s.black_king)? })
        }
        None => None,
    };
    let mut tags = BTreeMap::new();
    for (k, v) in
        [("White", t.white), ("Black", t.black), ("Event", t.event), ("Round", t.round), ("Date", t.date)]
    {
        if let Some(v) = v {
            tags.insert(k.to_string(), v);
        }
    }
    tags.insert("Result".into(), t.result.clone());
    Ok(ScriptTruth {
        clk: if t.clk.is_empty() { vec![None; plies] } else { t.clk },
        clk_observable: if t.clk_observable.is_empty() { vec![true; plies] } else { t.clk_observable },
        clk_pgn: if t.clk_pgn.is_empty() { vec![None; plies] } else { t.clk_pgn },
        events: if t.events.is_empty() { vec![Vec::new(); plies] } else { t.events },
        san: t.san,
        uci: t.uci,
        result: t.result,
        expected_result: t.expected_result,
        accept_results: t.accept_results,
        result_signalled: t.result_signalled,
        result_signal_squares,
        event_counts: t.event_counts,
        start_fen: t.start_fen,
        final_fen: t.final_fen,
        tags,
        truncated: t.truncated_pgn_error.map(|t| match t {
            RawText::One(s) => s,
            RawText::Many(v) => v.join("; "),
        }),
    })
}

/// With a clock, one press per ply, by the mover's display, showing the truth's `clk`;
/// without one, no clock steps at all.
fn check_presses(s: &HandScript, p: &Problems<'_>) -> Result<(), ScriptError> {
    let mut ply = 0usize;
    for (index, step) in s.steps.iter().enumerate() {
        let presses: &[(ClockSide, u32)] = match &step.kind {
            StepKind::Press { side, display_s } => &[(*side, *display_s)],
            StepKind::Press2 { presses } => presses,
            StepKind::Start | StepKind::Stop | StepKind::Segment { .. } if s.clock.is_none() => {
                return Err(p.inconsistent(format!("step {index}: a clock step without a clock")));
            }
            _ => continue,
        };
        let Some(clock) = s.clock else {
            return Err(p.inconsistent(format!("step {index}: a clock press without a clock")));
        };
        for &(side, display_s) in presses {
            let mover = s.mover(ply);
            let mover_side = if mover == Color::White { clock.white_side } else { clock.white_side.other() };
            if ply >= s.plies() {
                return Err(
                    p.inconsistent(format!("step {index}: more presses than the {} plies", s.plies()))
                );
            }
            if side != mover_side {
                return Err(p.inconsistent(format!(
                    "step {index}: ply {} is {mover:?}'s, pressed on the {side:?} display",
                    ply + 1
                )));
            }
            if let Some(clk) = s.truth.clk[ply]
                && clk != display_s
            {
                return Err(p.inconsistent(format!(
                    "step {index}: ply {} shows {display_s} after the press, truth.clk says {clk}",
                    ply + 1
                )));
            }
            ply += 1;
        }
    }
    if s.clock.is_some() && ply != s.plies() {
        return Err(p.inconsistent(format!("{ply} clock presses for {} plies", s.plies())));
    }
    Ok(())
}

impl fmt::Display for HandScript {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{} ({} plies, {} steps)", self.name, self.plies(), self.steps.len())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn profile_names_come_from_file_names() {
        assert_eq!(profile_of_name("mixed-noclock-s1-g004"), Some("mixed-noclock"));
        assert_eq!(profile_of_name("clean-s12-g0"), Some("clean"));
        assert_eq!(profile_of_name("clean"), None);
        assert_eq!(profile_of_name("x-sa-g1"), None);
    }
}
