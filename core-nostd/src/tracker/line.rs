//! The line of plies: provisional plies added and withdrawn, and confirmed (with their
//! `%clk`/`%emt`) when the finality rule says (see `finality`).

use shakmaty::{Chess, Color, Move, Position, san::SanPlus};

use super::explain::traces;
use super::record::{PlyRecord, to16};
use super::{MAX_PROVISIONAL, PlyMeta, Tracker};
use crate::board::placement_hash;
use crate::clock::Press;
use crate::event::{Event, EventSink, MoveInfo};
use crate::fen::FenText;

impl<const PLIES: usize> Tracker<PLIES> {
    /// The position after `k` plies of the record list (replayed).
    pub(super) fn position_at(&self, k: usize) -> Option<Chess> {
        let (mut pos, from) = if k >= self.confirmed {
            (self.confirmed_pos.clone(), self.confirmed)
        } else {
            (self.start.clone(), 0)
        };
        for rec in &self.records[from..k] {
            let m = rec.to_move(&pos)?;
            pos.play_unchecked(m);
        }
        Some(pos)
    }

    pub(super) fn extend<S: EventSink + ?Sized>(&mut self, moves: &[Move], now: u64, sink: &mut S) {
        for &m in moves {
            if self.records.len() - self.confirmed >= MAX_PROVISIONAL {
                if self.first_hidden() == Some(self.confirmed) {
                    // A guess is never confirmed: the oldest ply is one of several orders
                    // the board never told apart, so the line stops here, the operator
                    // told, until a reading settles the order (or the operator does).
                    self.alert_hidden_order(sink);
                    return;
                }
                // Proven by the plies that followed it (plies of an unknown order, kept
                // unconfirmed while the game went on). Its press, when the presses waiting
                // since the last confirmed ply begin with one by its mover, is that one.
                let press = self.take_first_waiting_press(self.confirmed_pos.turn());
                self.confirm_through(self.confirmed + 1, press.as_ref(), now, sink);
            }
            let mut after = self.tip.clone();
            after.play_unchecked(m);
            if self.records.push(PlyRecord::new(m, placement_hash(after.board()))).is_err() {
                if !self.full_reported {
                    self.full_reported = true;
                    sink.event(Event::CapacityFull);
                }
                return;
            }
            let at = self.stamp(now);
            let san = SanPlus::from_move(self.tip.clone(), m);
            let _ = self.meta.push(PlyMeta {
                seen: at,
                shown: at,
                joint: moves.len() > 1,
                san: Some(san),
                ..PlyMeta::default()
            });
            let info = MoveInfo {
                ply: self.records.len() as u16,
                color: self.tip.turn(),
                uci: m.to_uci(self.castling_mode),
                san,
                clk: None,
                emt: None,
                fen: FenText::of(&after),
            };
            self.tip = after;
            sink.event(Event::MoveProvisional(info));
        }
    }

    /// Withdraws provisional plies until `len` remain (never confirmed ones).
    pub(super) fn retract_to<S: EventSink + ?Sized>(&mut self, len: usize, sink: &mut S) {
        let len = len.max(self.confirmed);
        if self.records.len() <= len {
            return;
        }
        while self.records.len() > len {
            let ply = self.records.len() as u16;
            self.records.pop();
            self.meta.pop();
            let pos = self.position_at(self.records.len()).unwrap_or_else(|| self.tip.clone());
            sink.event(Event::MoveRetracted { ply, fen: FenText::of(&pos) });
            self.tip = pos;
        }
    }

    /// Completed moves of (White, Black) in the confirmed line, counted from the start
    /// position's move number (as time controls count them).
    pub(super) fn moves_made(&self) -> [u32; 2] {
        let pos = &self.confirmed_pos;
        let before = pos.fullmoves().get().saturating_sub(1);
        [before + u32::from(pos.turn() == Color::Black), before]
    }

    /// Who made the ply `upto` ends (index one past it) of the line after the last
    /// confirmed ply.
    pub(super) fn mover_of(&self, upto: usize) -> Color {
        let turn = self.confirmed_pos.turn();
        if upto.saturating_sub(self.confirmed + 1).is_multiple_of(2) { turn } else { !turn }
    }

    /// Index one past the last provisional ply made by `color`.
    pub(super) fn last_ply_by(&self, color: Color) -> Option<usize> {
        let mut turn = self.confirmed_pos.turn();
        let mut found = None;
        for i in self.confirmed..self.records.len() {
            if turn == color {
                found = Some(i + 1);
            }
            turn = !turn;
        }
        found
    }

    /// Confirms provisional plies until `upto` are confirmed.
    pub(super) fn confirm_through<S: EventSink + ?Sized>(
        &mut self,
        upto: usize,
        press: Option<&Press>,
        now: u64,
        sink: &mut S,
    ) {
        let upto = upto.min(self.records.len());
        self.phys.line_moved_on();
        // The press belongs to the last ply of the presser within the range.
        let press_ply = press.and_then(|p| {
            let mut turn = self.confirmed_pos.turn();
            let mut last = None;
            for i in self.confirmed..upto {
                if turn == p.by {
                    last = Some(i);
                }
                turn = !turn;
            }
            last
        });
        while self.confirmed < upto {
            let i = self.confirmed;
            let pos = self.confirmed_pos.clone();
            let Some(m) = self.records[i].to_move(&pos) else { break };
            let color = pos.turn();
            let move_number = pos.fullmoves().get();
            let seen = self.meta.first().map_or(self.stamp(now), |m| m.seen);
            // A press confirming the range: its reading shows the clocks as they were when
            // the range ended (a later one may show the mover's next move already).
            let reading = press.map(|p| p.reading).or_else(|| self.clocks.current(&self.config, now));
            // The mover's display: a press's reading is read with the sides it was made with.
            let side = match press {
                Some(p) if p.by == color => p.side,
                Some(p) => p.side.other(),
                None => self.clocks.side_of(&self.config, color),
            };
            let (clk, emt) = match (press, reading) {
                (Some(p), _) if press_ply == Some(i) && p.one_of_several => {
                    self.clocks.unknown(color);
                    (None, None)
                }
                (Some(p), _) if press_ply == Some(i) => {
                    let clk = p.reading.side(side).time.total_seconds();
                    (Some(clk), self.clocks.account(&self.config, color, move_number, clk, p.jump))
                }
                (_, Some(r)) => {
                    // No press of its own was seen (it came while the board was away, or
                    // was forgotten, or the move ended the game): the clock shows this
                    // ply's `%clk` only when the mover has not moved since, and their time
                    // has not run since the move: stopped at their press, started by the
                    // press now confirming, or still running from before the move (no reply
                    // on the board) and read within a second of it. Otherwise it is not
                    // knowable, and none is written rather than a wrong one. A press's
                    // reading shows the clock at the press: the mover has moved again when
                    // a ply of theirs came before the pressed one, whatever the board shows
                    // by now.
                    let moved_again = match (press, press_ply) {
                        (Some(_), Some(pressed)) => i + 2 <= pressed,
                        _ => i + 2 < self.records.len(),
                    };
                    let replied = i + 1 < self.records.len();
                    let ran = r.status.running()
                        && r.running_side() == Some(side)
                        && press.is_none_or(|p| p.by == color)
                        && (replied
                            || self.clocks.last_ms.abs_diff(seen.ms)
                                > u64::from(self.config.timing.clock_fresh_ms));
                    // A reading rebuilt from a board's event log (a chain) measured the
                    // presser's display only: the mover's is a guess.
                    if moved_again || ran || !r.status.measured(side) {
                        self.clocks.unknown(color);
                        (None, None)
                    } else {
                        let clk = r.side(side).time.total_seconds();
                        (Some(clk), self.clocks.account(&self.config, color, move_number, clk, None))
                    }
                }
                (_, None) => {
                    let ms = seen.ms.saturating_sub(self.last_confirmed_seen.ms);
                    (None, Some(((ms + 500) / 1000) as u32))
                }
            };
            self.records[i].clk = to16(clk);
            self.records[i].emt = to16(emt);
            self.clocks.ply_confirmed(color, press.is_some() && press_ply == Some(i));
            let info = MoveInfo {
                ply: (i + 1) as u16,
                color,
                uci: m.to_uci(self.castling_mode),
                san: self
                    .meta
                    .first()
                    .and_then(|meta| meta.san)
                    .unwrap_or_else(|| SanPlus::from_move(pos, m)),
                clk,
                emt,
                fen: FenText::of(&{
                    let mut after = self.confirmed_pos.clone();
                    after.play_unchecked(m);
                    after
                }),
            };
            self.confirmed_pos.play_unchecked(m);
            self.phys.landings_explained(traces(m), seen.ms);
            self.confirmed += 1;
            if !self.meta.is_empty() {
                self.meta.remove(0);
            }
            self.last_confirmed_seen = seen;
            self.clocks.fix_mapping();
            sink.event(Event::MoveConfirmed(info));
            if self.check_position_end(sink) {
                return;
            }
        }
    }
}
