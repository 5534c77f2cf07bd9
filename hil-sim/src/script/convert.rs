//! A hand script turned into a [`Scenario`] and its [`GroundTruth`] (see the parent
//! module for how the emulator's wire behaviour is modelled).

use std::collections::VecDeque;

use dgt_protocol::{ClockSide, Orientation, PieceCode};
use shakmaty::{Board, CastlingMode, Chess, Color, Position, Square};

use super::{HandScript, StepKind};
use crate::clock::{Bonus, Period, TimeControl};
use crate::scenario::{Action, ClockSetup, Scenario, Setup, TimedAction};
use crate::truth::{ClockTruth, GroundTruth, PlyTruth};

/// Virtual milliseconds of an accumulated script time.
fn ms(t: f64) -> u64 {
    t.max(0.0).round() as u64
}

fn board_of(codes: &[PieceCode; 64]) -> Board {
    let mut board = Board::empty();
    for (i, code) in codes.iter().enumerate() {
        if let Some(piece) = code.piece() {
            board.set_piece_at(Square::new(i as u32), piece);
        }
    }
    board
}

/// What a display shows for a script's seconds (never below 0 nor above 9:59:59).
fn shown_seconds(value: i64) -> u32 {
    value.clamp(0, 35_999) as u32
}

fn side_name(side: ClockSide) -> String {
    if side == ClockSide::Left { "left".into() } else { "right".into() }
}

impl HandScript {
    /// The board's orientation.
    pub fn orientation(&self) -> Orientation {
        if self.rotated { Orientation::Rotated } else { Orientation::Normal }
    }

    /// The board before the first step, in game squares.
    pub fn start_board(&self) -> Board {
        board_of(&self.start_codes)
    }

    /// The board after the last step (after the result gesture when there is one).
    pub fn final_board(&self) -> Board {
        let mut codes = self.start_codes;
        for step in &self.steps {
            if let StepKind::Set { square, code, .. } = step.kind {
                codes[usize::from(square)] = code;
            }
        }
        board_of(&codes)
    }

    /// How the end is shown, in [`GroundTruth::end`]'s words: `kings_in_centre` when
    /// signalled, `checkmate` or `stalemate` when the final position shows it, else `none`.
    pub fn end(&self) -> &'static str {
        if self.truth.result_signalled {
            return "kings_in_centre";
        }
        let pos = self
            .truth
            .final_fen
            .parse::<shakmaty::fen::Fen>()
            .ok()
            .and_then(|f| f.into_position::<Chess>(CastlingMode::Standard).ok());
        match pos {
            Some(p) if p.is_checkmate() => "checkmate",
            Some(p) if p.is_stalemate() => "stalemate",
            _ => "none",
        }
    }

    /// The scenario every player runs, with its ground truth: see the parent module.
    pub fn to_scenario(&self) -> Scenario {
        let mut b = Builder::new(self);
        if let Some(c) = self.clock {
            b.push(
                0,
                Action::PuppetClock {
                    left_s: c.initial_left_s,
                    right_s: c.initial_right_s,
                    time_per_move: c.increment_display,
                },
            );
        }
        let mut t = 0.0f64;
        for step in &self.steps {
            t += step.dt_ms;
            b.step(t, &step.kind);
        }
        b.flush_countdown(t, true);
        let end_at = b.last_at;
        b.push(end_at, Action::End);
        let plies = if self.clock.is_some() { std::mem::take(&mut b.plies) } else { self.unclocked_plies() };
        let truth = self.ground_truth(plies, end_at);
        let setup = Setup {
            orientation: self.orientation(),
            clock: self.clock.map(|c| {
                let white_s =
                    if c.white_side == ClockSide::Left { c.initial_left_s } else { c.initial_right_s };
                // Only what the clock shows before the puppet action at time 0 (see the
                // parent module): White's display on both sides, the increment bit.
                let bonus = if c.increment_display { Bonus::Fischer(1000) } else { Bonus::None };
                let time_control = TimeControl {
                    periods: vec![Period { moves: None, base_ms: u64::from(white_s) * 1000, bonus }],
                };
                ClockSetup { time_control, white_side: c.white_side, first_side: c.white_side }
            }),
            position: self.start_board(),
        };
        Scenario { setup, actions: b.actions, truth: Some(truth) }
    }

    fn ground_truth(&self, moves: Vec<PlyTruth>, duration_ms: u64) -> GroundTruth {
        let t = &self.truth;
        GroundTruth {
            tags: t.tags.clone(),
            start_fen: t.start_fen.clone(),
            profile: self.label.clone(),
            seed: self.seed.parse().unwrap_or(0),
            orientation: if self.rotated { "rotated".into() } else { "normal".into() },
            clock: self.clock.map(|c| ClockTruth {
                time_control: "?".into(),
                white_side: side_name(c.white_side),
                inferred: true,
            }),
            moves,
            result: t.result.clone(),
            end: self.end().into(),
            final_fen: t.final_fen.clone(),
            final_board: self.final_board().to_string(),
            events_used: t.event_counts.clone(),
            truncated: t.truncated.clone(),
            duration_ms,
            expected_result: Some(t.expected_result.clone()),
            accept_results: t.accept_results.clone(),
        }
    }
}

/// Lays the steps out in virtual time.
struct Builder<'a> {
    script: &'a HandScript,
    actions: Vec<TimedAction>,
    last_at: u64,
    /// Countdown changes not made yet: (script time, display, seconds).
    countdown: VecDeque<(f64, ClockSide, u32)>,
    /// Left and right displays as the script has set them so far.
    displays: [u32; 2],
    plies: Vec<PlyTruth>,
    last_press_at: u64,
}

impl<'a> Builder<'a> {
    fn new(script: &'a HandScript) -> Builder<'a> {
        let displays = script.clock.map_or([0, 0], |c| [c.initial_left_s, c.initial_right_s]);
        Builder {
            script,
            actions: Vec::new(),
            last_at: 0,
            countdown: VecDeque::new(),
            displays,
            plies: Vec::new(),
            last_press_at: 0,
        }
    }

    fn push(&mut self, at_ms: u64, action: Action) {
        // Script times only grow and rounding keeps their order; never step back anyway.
        let at_ms = at_ms.max(self.last_at);
        self.last_at = at_ms;
        self.actions.push(TimedAction { at_ms, action });
    }

    fn display(&mut self, side: ClockSide) -> &mut u32 {
        &mut self.displays[usize::from(side == ClockSide::Right)]
    }

    /// Makes the countdown changes due by script time `t` (all of them, at `t` at the
    /// latest, when a clock step follows: it ends the segment).
    fn flush_countdown(&mut self, t: f64, all: bool) {
        while let Some(&(at, side, seconds)) = self.countdown.front() {
            if at > t && !all {
                break;
            }
            self.countdown.pop_front();
            self.push(ms(at.min(t)), Action::ClockShows { side, seconds });
        }
    }

    fn step(&mut self, t: f64, kind: &StepKind) {
        let clock_step = !matches!(kind, StepKind::Set { .. } | StepKind::Note { .. });
        self.flush_countdown(t, clock_step);
        match *kind {
            StepKind::Start => self.push(ms(t), Action::ClockStart),
            StepKind::Stop => self.push(ms(t), Action::ClockStop),
            StepKind::Note { .. } => {}
            StepKind::Segment { side, from_s, to_s, dur_ms } => {
                let n = from_s.abs_diff(to_s);
                let mut shown = *self.display(side);
                for k in 1..=n {
                    let value = if to_s < from_s { from_s - k as i64 } else { from_s + k as i64 };
                    let seconds = shown_seconds(value);
                    if seconds != shown {
                        shown = seconds;
                        self.countdown.push_back((t + dur_ms * k as f64 / n as f64, side, seconds));
                    }
                }
                *self.display(side) = shown;
            }
            StepKind::Set { square, code, reported } => {
                self.push(ms(t), Action::SetSquare { square, piece: code.piece(), reported })
            }
            StepKind::Press { side, display_s } => {
                self.push(ms(t), Action::ScriptedPress { side, display_s });
                self.ply(ms(t), side, display_s);
            }
            StepKind::Press2 { presses } => {
                self.push(ms(t), Action::ScriptedPress2 { presses });
                for (side, display_s) in presses {
                    self.ply(ms(t), side, display_s);
                }
            }
        }
    }

    /// The truth of the ply a press ends.
    fn ply(&mut self, at: u64, side: ClockSide, display_s: u32) {
        *self.display(side) = display_s;
        let i = self.plies.len();
        let (s, t) = (self.script, &self.script.truth);
        if i >= s.plies() {
            return;
        }
        let white_side = s.clock.map_or(ClockSide::Left, |c| c.white_side);
        let white = self.displays[usize::from(white_side == ClockSide::Right)];
        let black = self.displays[usize::from(white_side == ClockSide::Left)];
        self.plies.push(PlyTruth {
            ply: i as u32 + 1,
            color: color_name(s.mover(i)),
            san: t.san[i].clone(),
            uci: t.uci[i].clone(),
            source_clk_s: t.clk_pgn[i],
            source_emt_s: None,
            press_at_ms: Some(at),
            think_ms: at - self.last_press_at,
            white_clock_s: Some(white),
            black_clock_s: Some(black),
            events: t.events[i].clone(),
            clk_observable: t.clk_observable[i],
        });
        self.last_press_at = at;
    }
}

fn color_name(c: Color) -> String {
    if c == Color::White { "white".into() } else { "black".into() }
}

impl HandScript {
    /// The plies' truth without a clock (no presses: nothing times them).
    fn unclocked_plies(&self) -> Vec<PlyTruth> {
        let t = &self.truth;
        (0..self.plies())
            .map(|i| PlyTruth {
                ply: i as u32 + 1,
                color: color_name(self.mover(i)),
                san: t.san[i].clone(),
                uci: t.uci[i].clone(),
                source_clk_s: t.clk_pgn[i],
                source_emt_s: None,
                press_at_ms: None,
                think_ms: 0,
                white_clock_s: None,
                black_clock_s: None,
                events: t.events[i].clone(),
                clk_observable: t.clk_observable[i],
            })
            .collect()
    }
}
