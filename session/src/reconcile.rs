//! Reconciling a board that was away: its port was lost (unplugged, a cable pulled, the
//! device reset) and came back.
//!
//! Moves may have been made meanwhile. The reconnect dump alone shows only where the game
//! got to, and several move orders can lead there (`Nf3 Nf6 Nc3` and `Nc3 Nf6 Nf3`), or
//! more plies than the tracker searches. A board that kept its power logged every square
//! change in its EEPROM, so the relay asks for that log before the tracker sees anything
//! the board sent after coming back:
//!
//! 1. When the port is lost, [`Reconcile::new`] keeps the board as the tracker saw it. A
//!    port lost again before the board was reconciled ([`Reconcile::lost`]) keeps that
//!    board when only the log could tell what was played, and waits for a log covering
//!    both outages; when the tracker's one shortest line explained the reading, what was
//!    held is replayed at once (the clock presses the relay saw meanwhile are kept).
//! 2. When the port is back, the first board reading decides ([`Reconcile::intake`]): when
//!    the tracker explains it with at most one ply ([`needs_log`]), everything is fed as
//!    usual. Otherwise (more plies, several move orders, or none it searches) every board
//!    message is held and the event log (`49`) is asked for.
//! 3. With the log (or without it, when it does not come or does not reach back),
//!    [`Reconcile::finish`] says what to replay, and [`replay`] feeds it: the logged square
//!    changes since the kept board ([`changes_since`]) with synthetic times, then the held
//!    messages with their own spacing.
//!
//! The chess stays in the tracker; this is only a replay of what the board saw. A USB
//! board unplugged has no power and logs nothing: its changes come from the power-up
//! listing as one reading, and the tracker reconstructs them from the position as before.
//! Pure and synchronous, so the offline harness replays a game exactly as the relay does.

use alloc::{vec, vec::Vec};
use dgt_core::{Event, EventSink, Reading, Tracker, View};
use dgt_protocol::{
    BoardDump, Bwtime, ClockSide, ClockTime, ClockTimes, DgtSquare, EeEvent, FieldUpdate, Message,
    Orientation, PieceCode,
};
use shakmaty::{Color, Position};

/// After the port is back, how long the first board reading may take (ms).
pub const FIRST_READING_MS: u64 = 15_000;
/// How long the board may take to send its event log (ms): a full log is 7,936 bytes,
/// 8.3 s at 9600 baud.
pub const LOG_ANSWER_MS: u64 = 12_000;
/// Most board messages held while the log is read (a board sends under 200 a second).
pub const HELD_MAX: usize = 8_192;
/// While the log is read, how often a dump is asked for (ms), as the tracker does while
/// the board is unexplained.
pub const DUMP_EVERY_MS: u64 = 1_000;
/// The tracker's tick period used while replaying (ms), as the relay ticks.
const TICK_MS: u64 = 50;

/// A board being reconciled after its port was lost.
#[derive(Clone, Debug)]
pub struct Reconcile {
    kept: BoardDump,
    phase: Phase,
    held: Vec<(u64, Message<'static>)>,
    /// Most messages held (see [`Reconcile::hold_at_most`]).
    held_max: usize,
    /// Why the board is reconciled.
    kind: Kind,
}

/// Why a board is reconciled.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Kind {
    /// Its port was lost and came back.
    Outage,
    /// The program was restarted on its journal (see [`Reconcile::after_restart`]).
    Restart,
    /// The board is seen for the first time, with no game (see [`Reconcile::join`]).
    Join,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Phase {
    /// The port is gone.
    Away,
    /// The port is back; the first board reading is due by `until`.
    Back { until: u64 },
    /// The event log was asked for, for the reason `need`; due by `until`. A dump was last
    /// asked for at `dumped`; `clock` is set by a clock reading held since (a press wants a
    /// dump after it).
    ReadingLog { need: LogNeed, until: u64, dumped: u64, clock: bool },
}

/// Why the first reading after the port came back needs the board's event log.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum LogNeed {
    /// It does not: at most one ply, or no game.
    No,
    /// One shortest line of several plies explains it; the log confirms the order.
    ToConfirm,
    /// Several move orders explain it equally well: only the log can tell.
    Ambiguous,
    /// Nothing the tracker searches explains it (more plies, or hands still moving).
    Unexplained,
    /// A board seen for the first time shows a game under way ([`Reconcile::join`]).
    UnderWay,
}

/// What becomes of a reconciliation when the port is lost again.
#[derive(Debug)]
pub enum AfterLoss {
    /// Keep waiting with the board kept from the first loss, for a log that covers both
    /// outages: the held reading was one the tracker could only guess.
    Wait(Reconcile),
    /// Replay what was held now (the tracker's one shortest line; the clock presses the
    /// relay saw meanwhile are kept), then keep the board as it stands.
    Replay(Outcome),
}

/// What to do with a board message while a board is reconciled.
#[derive(Debug, PartialEq, Eq)]
pub enum Intake {
    /// Nothing happened while the board was away: reconciling is over; feed these messages
    /// (stamped with their times), oldest first.
    Feed(Vec<(u64, Message<'static>)>),
    /// Kept for [`Reconcile::finish`].
    Held,
    /// Kept; the board changed while it was away: ask for its event log now.
    AskLog,
    /// Too many messages waited for the log: finish without it.
    Overflow,
}

/// What [`replay`] feeds the tracker at the end of a reconciliation.
#[derive(Clone, Debug)]
pub struct Outcome {
    /// The board the tracker knew when the port was lost.
    pub kept: BoardDump,
    /// The square changes logged since then (`None`: the log was not had, or does not
    /// reach back to the kept board).
    pub steps: Option<LogChanges>,
    /// Board messages received since the port came back, with their times.
    pub held: Vec<(u64, Message<'static>)>,
    /// Why the log was wanted ([`LogNeed::No`] when it was not asked for). Without the log's
    /// changes, [`LogNeed::ToConfirm`] and [`LogNeed::Ambiguous`] mean the moves made while
    /// the board was away are the tracker's reconstruction from the position: the operator
    /// is told.
    pub need: LogNeed,
    /// White's clock display, when the replay tells it (a game joined from its start).
    pub white_side: Option<ClockSide>,
}

impl Reconcile {
    /// Keeps the board as the tracker saw it when the port was lost.
    pub fn new(kept: BoardDump) -> Reconcile {
        Reconcile { kept, phase: Phase::Away, held: Vec::new(), held_max: HELD_MAX, kind: Kind::Outage }
    }

    /// Keeps `kept`, the journal's last position, for a game resumed after a restart of
    /// the program. Any change from it is read from the board's event log, even a single
    /// ply: nobody saw its press, which the log holds with the presser's time (the mover's
    /// `%clk`), and its move may have been confirmed by the program that stopped before the
    /// journal had it. An unplugged cable leaves a single ply to the board's readings
    /// instead, sparing the 8 s the log takes at 9600 baud in the middle of a game.
    pub fn after_restart(kept: BoardDump) -> Reconcile {
        Reconcile { kind: Kind::Restart, ..Reconcile::new(kept) }
    }

    /// A board seen for the first time with no game: when its first dump is not a start
    /// position, a game may be under way, begun before the relay looked (the relay came up
    /// in the middle of a round, or the board joined it late). Its event log has the game
    /// from the start position on, with the presses it logged: read and replayed from the
    /// last start position it shows, the game is relayed from its first move, its plies with
    /// the `%clk` of their logged presses. A log that shows no start position, or a clock
    /// read stopped (a game over, or not begun), leaves the board to the tracker as it
    /// stands.
    pub fn join() -> Reconcile {
        Reconcile { kind: Kind::Join, ..Reconcile::new(start_dump(dgt_protocol::Orientation::Normal)) }
    }

    /// Holds at most `messages` board messages while the log is awaited (a device with
    /// little memory; [`HELD_MAX`] otherwise). Past it, or when the allocator refuses more
    /// room, the reconciliation finishes without the log ([`Intake::Overflow`]): the
    /// tracker then reconstructs from the board's position, and the program never aborts.
    pub fn hold_at_most(self, messages: usize) -> Reconcile {
        Reconcile { held_max: messages.clamp(1, HELD_MAX), ..self }
    }

    /// No more is held: the reconciliation finishes without the log. The message that
    /// found no room is kept all the same (it is replayed with the others), unless the
    /// allocator refuses even that.
    fn overflow(&mut self, now: u64, msg: Message<'static>) -> Intake {
        if self.held.try_reserve(1).is_ok() {
            self.held.push((now, msg));
        }
        Intake::Overflow
    }

    /// True for a board seen for the first time ([`Reconcile::join`]).
    pub fn joining(&self) -> bool {
        self.kind == Kind::Join
    }

    /// The port is back at `now`.
    pub fn attached(&mut self, now: u64) {
        self.phase = Phase::Back { until: now + FIRST_READING_MS };
        self.held.clear();
    }

    /// True while the port is gone.
    pub fn is_away(&self) -> bool {
        self.phase == Phase::Away
    }

    /// True once the event log was asked for.
    pub fn reading_log(&self) -> bool {
        matches!(self.phase, Phase::ReadingLog { .. })
    }

    /// A board message (dump, field update, clock times) received at `now`. `needs_log`
    /// judges a dump against the tracker (see [`needs_log`]): the first after the port came
    /// back, and when the tracker can explain it alone, the log is not read (reading it
    /// holds the board's messages for about 8 s); later ones while the log is read, for
    /// [`Reconcile::lost`].
    pub fn intake(
        &mut self,
        msg: Message<'static>,
        now: u64,
        needs_log: impl Fn(&BoardDump) -> LogNeed,
    ) -> Intake {
        match self.phase {
            Phase::Away => Intake::Feed(vec![(now, msg)]),
            Phase::Back { .. } => {
                let dump = match &msg {
                    Message::BoardDump(d) => Some(*d),
                    _ => None,
                };
                if self.held.len() >= self.held_max || self.held.try_reserve(1).is_err() {
                    return self.overflow(now, msg);
                }
                self.held.push((now, msg));
                let need = match dump {
                    None => return Intake::Held,
                    Some(d) if d == self.kept => LogNeed::No,
                    Some(d) if self.kind == Kind::Join => {
                        let start = [Orientation::Normal, Orientation::Rotated].map(start_dump);
                        // The start position, or it with pieces in the hands (being set up or
                        // adjusted), is no game under way.
                        if start.iter().any(|s| only_lifted_from(&d, s)) || !has_two_kings(&d) {
                            LogNeed::No
                        } else {
                            LogNeed::UnderWay
                        }
                    }
                    Some(d) => match needs_log(&d) {
                        LogNeed::No if self.kind == Kind::Restart => LogNeed::ToConfirm,
                        need => need,
                    },
                };
                if need == LogNeed::No {
                    return Intake::Feed(core::mem::take(&mut self.held));
                }
                self.phase =
                    Phase::ReadingLog { need, until: now + LOG_ANSWER_MS, dumped: now, clock: false };
                Intake::AskLog
            }
            Phase::ReadingLog { .. }
                if self.held.len() >= self.held_max || self.held.try_reserve(1).is_err() =>
            {
                self.overflow(now, msg)
            }
            Phase::ReadingLog { ref mut clock, ref mut need, .. } => {
                *clock |= matches!(msg, Message::Bwtime(_));
                // The first reading the tracker can explain decides (the first one may have
                // caught hands moving); later ones are reached through it when replayed.
                if *need == LogNeed::Unexplained
                    && let Message::BoardDump(d) = &msg
                {
                    *need = match needs_log(d) {
                        LogNeed::No => LogNeed::ToConfirm,
                        other => other,
                    };
                }
                if self.held.len() >= self.held_max || self.held.try_reserve(1).is_err() {
                    return self.overflow(now, msg);
                }
                self.held.push((now, msg));
                Intake::Held
            }
        }
    }

    /// When [`Reconcile::overdue`] or [`Reconcile::wants_dump`] next turns true (a held
    /// clock reading wants a dump at once).
    pub fn deadline(&self) -> Option<u64> {
        match self.phase {
            Phase::Away => None,
            Phase::Back { until } => Some(until),
            Phase::ReadingLog { until, dumped, clock, .. } => {
                Some(until.min(if clock { dumped } else { dumped + DUMP_EVERY_MS }))
            }
        }
    }

    /// True when what was awaited (the first reading, the log) is overdue at `now`.
    pub fn overdue(&self, now: u64) -> bool {
        match self.phase {
            Phase::Away => false,
            Phase::Back { until } | Phase::ReadingLog { until, .. } => now >= until,
        }
    }

    /// True when a board dump should be asked for now: while the log is read, after each
    /// clock reading and at least once a second, so that the held messages carry dumps as
    /// the tracker would have asked for them (it checks plies read together against a
    /// dump taken after the press).
    pub fn wants_dump(&mut self, now: u64) -> bool {
        match &mut self.phase {
            Phase::ReadingLog { dumped, clock, .. } if *clock || now >= *dumped + DUMP_EVERY_MS => {
                *dumped = now;
                *clock = false;
                true
            }
            _ => false,
        }
    }

    /// The port was lost again before the board was reconciled.
    pub fn lost(mut self) -> AfterLoss {
        match self.phase {
            Phase::ReadingLog { need: LogNeed::ToConfirm, .. } => AfterLoss::Replay(self.finish(None)),
            _ => {
                self.phase = Phase::Away;
                self.held.clear();
                AfterLoss::Wait(self)
            }
        }
    }

    /// Ends the reconciliation, with the board's event log when it came.
    pub fn finish(self, log: Option<&[EeEvent]>) -> Outcome {
        let need = match self.phase {
            Phase::ReadingLog { need, .. } => need,
            _ => LogNeed::No,
        };
        if self.kind == Kind::Join {
            return self.finish_join(log, need);
        }
        let steps = log.and_then(|log| changes_since(log, &self.kept));
        Outcome { kept: self.kept, steps, held: self.held, need, white_side: None }
    }

    /// A game found under way ([`Reconcile::join`]): replayed from the last start position
    /// the log shows (either way round), White's display the first press logged after it
    /// (White's lever is up as the game begins: the first lever move the board logs is
    /// White's). Without such a start, or with the clock read stopped, nothing is replayed.
    fn finish_join(self, log: Option<&[EeEvent]>, need: LogNeed) -> Outcome {
        let stopped = self
            .held
            .iter()
            .rev()
            .find_map(|(_, m)| match m {
                Message::Bwtime(dgt_protocol::Bwtime::Times(t)) if !t.status.no_clock() => {
                    Some(!t.status.running())
                }
                _ => None,
            })
            .unwrap_or(false);
        let best = log.filter(|_| !stopped).and_then(|log| {
            [Orientation::Normal, Orientation::Rotated]
                .into_iter()
                .filter_map(|o| Some((start_dump(o), changes_since(log, &start_dump(o))?)))
                // The later start leaves fewer changes after it.
                .min_by_key(|(_, c)| c.steps.len())
        });
        match best {
            Some((kept, steps)) => {
                let white_side = steps.logged.first().map(|p| p.side);
                Outcome { kept, steps: Some(steps), held: self.held, need, white_side }
            }
            None => {
                Outcome { kept: self.kept, steps: None, held: self.held, need: LogNeed::No, white_side: None }
            }
        }
    }
}

/// Whether `dump` alone tells what was played while the board was away. More than one
/// ply does not (the shortest line is only the likeliest: a rook that went b6 then b7
/// reads as one that went b7), nor do several move orders or none the tracker searches.
pub fn needs_log<const N: usize>(tracker: &Tracker<N>, dump: &BoardDump) -> LogNeed {
    match tracker.explain(dump) {
        Reading::NoGame | Reading::AtTip | Reading::Explained { plies: 0 | 1 } => LogNeed::No,
        Reading::Explained { .. } => LogNeed::ToConfirm,
        Reading::Ambiguous => LogNeed::Ambiguous,
        Reading::Unexplained => LogNeed::Unexplained,
    }
}

/// Feeds the tracker an [`Outcome`], starting at tracker time `start_ms`: the logged
/// changes with synthetic times (a lever press logged in between ends a move; see
/// [`LogChanges::presses`] for the last one), then the
/// held messages, shifted so they come after the replayed ones but keep their own
/// spacing. The tracker is ticked every [`TICK_MS`] meanwhile. Returns the tracker's time
/// at the end (the caller's clock must not go back behind it) and what the tracker said,
/// less its requests for a dump (the caller asks for one afresh: the board may have moved
/// on since).
pub fn replay<const N: usize>(
    tracker: &mut Tracker<N>,
    outcome: &Outcome,
    start_ms: u64,
) -> (u64, Vec<Event>) {
    let cfg = *tracker.config();
    let settle = u64::from(cfg.timing.settle_ms);
    let mut events: Vec<Event> = Vec::new();
    let mut t = start_ms;
    let mut sink = |e: Event| {
        if !matches!(e, Event::RequestBoardDump) {
            events.push(e);
        }
    };
    if let Some(changes) = &outcome.steps {
        tracker.feed_dump(&outcome.kept, t, &mut sink);
        if let Some(side) = outcome.white_side
            && tracker.white_clock_side().is_none()
        {
            tracker.set_white_clock_side(side);
        }
        let before = tracker.ply_count(View::Live);
        let mut logged = changes.logged.iter().peekable();
        // A logged press that found no ply of its presser yet, with the plies there were
        // then: the board logs a square when it scans it, so a press made between the
        // scans logs before the landing of its move. It is that move's when the next ply
        // to appear is the presser's.
        let mut waiting: Option<(&LoggedPress, usize)> = None;
        for (i, step) in changes.steps.iter().enumerate() {
            // The presses logged before this change end the moves before it: once the
            // tracker has settled them, each confirms its presser's ply with its time.
            while let Some(p) = logged.next_if(|p| p.after <= i) {
                let to = t + settle + 100;
                advance(tracker, &mut t, to, &mut sink);
                settle_waiting(tracker, &mut waiting, t, &mut sink);
                waiting = (!tracker.confirm_logged_press(p.side, p.time, t, &mut sink))
                    .then(|| (p, tracker.ply_count(View::Live)));
            }
            let gap = match step.gap {
                Gap::Quick => 40,
                Gap::Normal => settle + 50,
                Gap::Press => settle + u64::from(cfg.timing.chain_confirm_ms) + 100,
            };
            let to = t + gap;
            advance(tracker, &mut t, to, &mut sink);
            settle_waiting(tracker, &mut waiting, t, &mut sink);
            tracker.feed_field(FieldUpdate::new(step.square, step.piece), t, &mut sink);
            settle_waiting(tracker, &mut waiting, t, &mut sink);
        }
        let to = t + settle + 100;
        advance(tracker, &mut t, to, &mut sink);
        settle_waiting(tracker, &mut waiting, t, &mut sink);
        for p in logged {
            tracker.confirm_logged_press(p.side, p.time, t, &mut sink);
        }
        // Every logged move followed by another is over, and the last one too when the log
        // holds a press for each: confirmed now, so that a held press is not taken for
        // theirs (their own presses were made while the relay did not listen). Otherwise the
        // last one's press may be among the held messages, and is left to it.
        let live = tracker.ply_count(View::Live);
        let logged = live.saturating_sub(before);
        let over = if changes.presses() >= logged { live } else { live.saturating_sub(1) };
        tracker.confirm_plies(over, t, &mut sink);
    }
    let logged = outcome.steps.as_ref().map_or(&[][..], |c| &c.logged[..]);
    let fresh = first_fresh_reading(&outcome.held, logged);
    let shift = outcome.held.first().map_or(0, |(first, _)| t.saturating_sub(*first));
    for (i, (at, msg)) in outcome.held.iter().enumerate() {
        if i < fresh && matches!(msg, Message::Bwtime(Bwtime::Times(_))) {
            continue;
        }
        advance(tracker, &mut t, at + shift, &mut sink);
        tracker.feed(msg, t, &mut sink);
    }
    (t, events)
}

/// Where the held clock readings stop being older than the log: the index of the held
/// reading that shows the last press both held and logged (0 when none is).
///
/// The board answers late (a slow link, the log's 8 s at 9600 baud), so it may take the
/// request for its log after presses whose readings the relay already holds: those
/// presses are in the log and were replayed from it, with their `%clk`. The held readings
/// from before such a press would show it again as a new one, for the presser's next ply.
/// The held presses (a lever moved while the clock ran; the presser's display after it)
/// that were logged are the first ones, equal to the log's last ones: the longest such
/// run is taken, and the readings before the one showing its last press are dropped
/// (that reading is the clock as the log left it).
fn first_fresh_reading(held: &[(u64, Message<'static>)], logged: &[LoggedPress]) -> usize {
    let mut presses: Vec<(usize, LoggedPress)> = Vec::new();
    let mut prev: Option<ClockTimes> = None;
    for (i, (_, msg)) in held.iter().enumerate() {
        let Message::Bwtime(Bwtime::Times(r)) = msg else { continue };
        if r.status.no_clock() {
            continue;
        }
        if let Some(p) = prev
            && p.high_side() != r.high_side()
            && r.status.running()
        {
            let side = p.high_side();
            presses.push((i, LoggedPress { after: 0, side, time: r.side(side).time }));
        }
        prev = Some(*r);
    }
    let same = |a: &LoggedPress, b: &LoggedPress| a.side == b.side && a.time == b.time;
    (1..=presses.len().min(logged.len()))
        .rev()
        .find(|&k| presses[..k].iter().zip(&logged[logged.len() - k..]).all(|((_, h), l)| same(h, l)))
        .map_or(0, |k| presses[k - 1].0)
}

/// A logged press waiting for its move (see [`replay`]): once plies appeared after the
/// `live` there were at the press, the first of them is its move when it is the presser's.
/// It may have appeared together with the reply, when the reply's first change was on the
/// square the move landed on: the board overwrote the landing's event. Otherwise, one ply
/// that is not the presser's, or more, end the wait.
fn settle_waiting<const N: usize, S: EventSink>(
    tracker: &mut Tracker<N>,
    waiting: &mut Option<(&LoggedPress, usize)>,
    t: u64,
    sink: &mut S,
) {
    let Some((p, live)) = *waiting else { return };
    let now_live = tracker.ply_count(View::Live);
    if now_live > live && now_live <= live + 2 && first_new_is_pressers(tracker, p, live) {
        tracker.confirm_logged_press(p.side, p.time, t, sink);
        *waiting = None;
    } else if now_live > live + 1
        || (now_live == live + 1 && tracker.confirm_logged_press(p.side, p.time, t, sink))
    {
        *waiting = None;
    }
}

/// True when the first ply after the `live` plies there were at a logged press is the
/// presser's (known once White's clock display is certain).
fn first_new_is_pressers<const N: usize>(tracker: &Tracker<N>, p: &LoggedPress, live: usize) -> bool {
    let Some(white) = tracker.white_clock_side() else { return false };
    let presser = if p.side == white { Color::White } else { Color::Black };
    let now_live = tracker.ply_count(View::Live);
    let tip_turn = tracker.position(View::Live).turn();
    let first = if (now_live - live) % 2 == 1 { !tip_turn } else { tip_turn };
    first == presser
}

/// Ticks the tracker every [`TICK_MS`] from `*t` up to `to`, and at `to`.
fn advance<const N: usize, S: EventSink>(tracker: &mut Tracker<N>, t: &mut u64, to: u64, sink: &mut S) {
    while *t + TICK_MS < to {
        *t += TICK_MS;
        tracker.tick(*t, sink);
    }
    *t = to.max(*t);
    tracker.tick(*t, sink);
}

/// The pause before a replayed square change, as the log suggests it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Gap {
    /// Under about 250 ms after the previous change (the log's quick bit).
    Quick,
    /// A change on its own.
    Normal,
    /// A clock lever moved (or the board was powered up) since the previous change: a move
    /// ended there.
    Press,
}

/// One square change from a board's event log.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Step {
    /// The square, by board index.
    pub square: DgtSquare,
    /// Its new content.
    pub piece: PieceCode,
    /// The pause before it.
    pub gap: Gap,
}

/// What a board's event log shows since the tracker lost the board.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct LogChanges {
    /// The square changes, oldest first.
    pub steps: Vec<Step>,
    /// The clock lever moves, with the time the presser's display showed (a press before
    /// the first change is the kept board's own last move's).
    pub logged: Vec<LoggedPress>,
}

impl LogChanges {
    /// Lever moves logged after the first change: as many as the moves the changes make
    /// means every one of them was pressed before the log was read.
    pub fn presses(&self) -> usize {
        self.logged.iter().filter(|p| p.after > 0).count()
    }
}

/// A clock press in a board's event log: the board logs the halted side's time when the
/// lever moves, which is the presser's `%clk`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct LoggedPress {
    /// How many of [`LogChanges::steps`] came before it.
    pub after: usize,
    /// The presser's display.
    pub side: ClockSide,
    /// What it showed.
    pub time: ClockTime,
}

/// The square changes a board's EEPROM event log holds since the board last showed
/// `known`, oldest first; `None` when the log never shows `known` (it does not reach back
/// to a power-up, or the board was changed in a way it did not log) or nothing changed
/// since.
///
/// The log is replayed from its first power-up: a power-up means an empty board, then the
/// power-up sequence lists every occupied square in index order, and every later field
/// event is a change. The last point where the replayed board equals `known` is where the
/// tracker's knowledge ends. A later power-up (the board unplugged and replugged) restates
/// the whole board: what differs from the replay is a change made while the board had no
/// power, reported as such.
///
/// The board overwrites its last field event when the same square changes again next
/// ("if only one piece keeps changing"): a capture whose landing was scanned after the
/// press, then taken off by the reply's capture on the same square, leaves no event with
/// the board `known`. So a point just before a field event on the one square where the
/// replayed board differs from `known` is taken as well (that event may have overwritten
/// `known`'s): the tracker saw `known`, so the board stood so. The later of the two kinds
/// of points wins. After it, a square emptied again had a piece land on it in between
/// whose event was overwritten the same way: the piece lifted last and not put down since,
/// which is put back into the steps (a recapture that leaves the square as it was would
/// otherwise show only two pieces gone).
pub fn changes_since(log: &[EeEvent], known: &BoardDump) -> Option<LogChanges> {
    // Find the last point where the board equals `known` (the replay starts after it).
    let mut state: [Option<PieceCode>; 64] = [None; 64];
    let mut differ = 64usize;
    let mut matched: Option<usize> = None;
    for (i, e) in log.iter().enumerate() {
        if differ == 1
            && let EeEvent::Field { square, .. } = *e
            && state[usize::from(square.index())].is_some_and(|p| p != known.piece(square))
        {
            // `known`, but for this square, whose event `known`'s may have been overwritten by.
            matched = Some(i);
        }
        match *e {
            // A start tag (bus mode's `SET_START_GAME`) is followed by every piece, as a
            // power-up is.
            EeEvent::PowerUp | EeEvent::StartTag => {
                state = [Some(PieceCode::Empty); 64];
                differ = DgtSquare::ALL.iter().filter(|sq| !known.piece(**sq).is_empty()).count();
                if differ == 0 {
                    matched = Some(i + 1);
                }
            }
            EeEvent::Field { square, piece, .. } => {
                let k = usize::from(square.index());
                let want = known.piece(square);
                let was = state[k] == Some(want);
                state[k] = Some(piece);
                match (was, piece == want) {
                    (true, false) => differ += 1,
                    (false, true) => differ -= 1,
                    _ => {}
                }
                if differ == 0 {
                    matched = Some(i + 1);
                }
            }
            _ => {}
        }
    }
    let start = matched?;
    // Replay from there.
    let mut cur = [PieceCode::Empty; 64];
    for sq in DgtSquare::ALL {
        cur[usize::from(sq.index())] = known.piece(sq);
    }
    let mut steps = Vec::new();
    let mut press = false;
    let mut logged = Vec::new();
    // Pieces taken off a square and not put down since, with where from, oldest first.
    let mut lifted: Vec<(DgtSquare, PieceCode)> = Vec::new();
    // A power-up sequence being read: the board it lists and the last square listed.
    let mut block: Option<([PieceCode; 64], Option<u8>)> = None;
    for e in &log[start..] {
        if let Some((board, last)) = &mut block {
            if let EeEvent::Field { square, piece, .. } = *e
                && !piece.is_empty()
                && last.is_none_or(|l| square.index() > l)
            {
                board[usize::from(square.index())] = piece;
                *last = Some(square.index());
                continue;
            }
            let board = *board;
            block = None;
            restate(&mut cur, &board, &mut steps);
            press = false;
            lifted.clear();
        }
        match *e {
            EeEvent::PowerUp | EeEvent::StartTag => block = Some(([PieceCode::Empty; 64], None)),
            EeEvent::Time { side, time } => {
                press = true;
                logged.push(LoggedPress { after: steps.len(), side, time });
            }
            EeEvent::Field { square, piece, quick } => {
                let k = usize::from(square.index());
                let mut gap = || {
                    if core::mem::take(&mut press) {
                        Gap::Press
                    } else if quick {
                        Gap::Quick
                    } else {
                        Gap::Normal
                    }
                };
                if cur[k] != piece {
                    if piece.is_empty() {
                        lifted.push((square, cur[k]));
                    } else if let Some(j) = lifted.iter().rposition(|(_, p)| *p == piece) {
                        lifted.remove(j);
                    }
                    cur[k] = piece;
                    steps.push(Step { square, piece, gap: gap() });
                } else if piece.is_empty()
                    && let Some(j) = lifted.iter().rposition(|(q, _)| *q != square)
                {
                    // Emptied again: a piece landed here in between, and its event was
                    // overwritten by this one (the board overwrites its last field event
                    // when the same square changes next: a capture on the square of the
                    // last landing, its piece taken off first). The piece lifted last and
                    // not put down since is the one that landed.
                    let (_, landed) = lifted.remove(j);
                    steps.push(Step { square, piece: landed, gap: gap() });
                    lifted.push((square, landed));
                    steps.push(Step { square, piece, gap: Gap::Normal });
                }
            }
            _ => {}
        }
    }
    if let Some((board, _)) = block {
        restate(&mut cur, &board, &mut steps);
    }
    (!steps.is_empty()).then_some(LogChanges { steps, logged })
}

/// The changes from `cur` to `board` (a power-up's listing): lifts first, then placements.
fn restate(cur: &mut [PieceCode; 64], board: &[PieceCode; 64], steps: &mut Vec<Step>) {
    let mut first = true;
    for lifts in [true, false] {
        for sq in DgtSquare::ALL {
            let k = usize::from(sq.index());
            if cur[k] != board[k] && board[k].is_empty() == lifts {
                cur[k] = board[k];
                let gap = if core::mem::take(&mut first) { Gap::Press } else { Gap::Quick };
                steps.push(Step { square: sq, piece: board[k], gap });
            }
        }
    }
}

/// The standard start position as a board dump, `orientation` round.
fn start_dump(orientation: Orientation) -> BoardDump {
    let mut d = BoardDump::EMPTY;
    for (sq, piece) in shakmaty::Board::new().iter() {
        d.set(DgtSquare::from_square(sq, orientation), PieceCode::from_piece(piece));
    }
    d
}

/// Every piece on `d` stands where `from` has the same piece: `from` with pieces lifted (or
/// `from` itself). A board showing its start position so is not a game under way.
fn only_lifted_from(d: &BoardDump, from: &BoardDump) -> bool {
    DgtSquare::ALL.iter().all(|sq| d.piece(*sq) == PieceCode::Empty || d.piece(*sq) == from.piece(*sq))
}

/// Both kings are on the board (a board being set up, or emptied, is no game).
fn has_two_kings(d: &BoardDump) -> bool {
    let count = |p: PieceCode| DgtSquare::ALL.iter().filter(|sq| d.piece(**sq) == p).count();
    count(PieceCode::WhiteKing) == 1 && count(PieceCode::BlackKing) == 1
}

#[cfg(test)]
mod tests {
    use super::*;
    use dgt_protocol::Orientation;

    /// A simulated board's firmware (every change scanned at once) with the start position.
    fn firmware() -> dgt_hil_sim::Firmware {
        let config = dgt_hil_sim::BoardConfig {
            scan_period_ms: 0,
            clock_poll_ms: 0,
            ..dgt_hil_sim::BoardConfig::default()
        };
        dgt_hil_sim::Firmware::new(config, dgt_hil_sim::firmware::start_position(), 0)
    }

    fn sq(i: u8) -> DgtSquare {
        DgtSquare::new(i).unwrap()
    }

    /// Plays `ucis` by hand on the firmware (lift, capture, place), a second apart.
    fn play(fw: &mut dgt_hil_sim::Firmware, ucis: &[&str], t: &mut u64) {
        for u in ucis {
            let (from, to) = (&u[..2], &u[2..4]);
            let idx = |s: &str| {
                DgtSquare::from_square(
                    shakmaty::Square::from_ascii(s.as_bytes()).unwrap(),
                    Orientation::Normal,
                )
            };
            let piece = fw.physical()[usize::from(idx(from).index())];
            *t += 1000;
            fw.set_piece(idx(from), PieceCode::Empty, *t);
            fw.set_piece(idx(to), piece, *t + 100);
        }
    }

    fn dump_of_codes(codes: &[PieceCode; 64]) -> BoardDump {
        let mut d = BoardDump::EMPTY;
        for s in DgtSquare::ALL {
            d.set(s, codes[usize::from(s.index())]);
        }
        d
    }

    fn apply(known: &BoardDump, steps: &[Step]) -> BoardDump {
        let mut d = *known;
        for s in steps {
            d.set(s.square, s.piece);
        }
        d
    }

    #[test]
    fn the_event_log_replays_from_where_the_tracker_lost_the_board() {
        let mut fw = firmware();
        let mut t = 0;
        play(&mut fw, &["e2e4", "e7e5"], &mut t);
        // The port is lost here; six plies are made, the board is replugged (power-up),
        // and one more ply follows.
        let known = dump_of_codes(fw.physical());
        play(&mut fw, &["g1f3", "b8c6", "f1b5", "a7a6", "b5c6", "d7c6"], &mut t);
        fw.power_cycle(t + 500);
        play(&mut fw, &["e1g1"], &mut t);
        let changes = changes_since(&fw.ee_events(), &known).unwrap();
        assert_eq!(changes.presses(), 0, "no clock: no press");
        let steps = changes.steps;
        assert_eq!(apply(&known, &steps), dump_of_codes(fw.physical()));
        // Move by move from the lost point: Ng1 lifted first; the power-up restates the
        // same board and adds nothing; a capture is two changes (lift, replace).
        assert_eq!(steps[0], Step { square: sq(62), piece: PieceCode::Empty, gap: Gap::Normal });
        assert_eq!(steps.len(), 6 * 2 + 2, "{steps:?}");
        // Nothing since the known board: nothing to replay.
        assert_eq!(changes_since(&fw.ee_events(), &dump_of_codes(fw.physical())), None);
    }

    /// exd5 with the pawn on d5 last, then ...Qxd5 taking it off first: the board overwrites
    /// the event of d5 holding the pawn (the same square changed again next), so the log
    /// never shows the board after exd5. The point just before the overwriting event is
    /// where the tracker's board was.
    #[test]
    fn a_known_board_whose_last_event_the_board_overwrote_is_found() {
        let mut fw = firmware();
        let (e2, e4, d7, d5, d8) = (sq(52), sq(36), sq(11), sq(27), sq(3));
        let set = |fw: &mut dgt_hil_sim::Firmware, at: u64, square: DgtSquare, piece: PieceCode| {
            fw.set_piece(square, piece, at);
        };
        set(&mut fw, 1_000, e2, PieceCode::Empty);
        set(&mut fw, 1_100, e4, PieceCode::WhitePawn);
        set(&mut fw, 2_000, d7, PieceCode::Empty);
        set(&mut fw, 2_100, d5, PieceCode::BlackPawn);
        // exd5: the captured pawn off, the e-pawn lifted, put on d5.
        set(&mut fw, 3_000, d5, PieceCode::Empty);
        set(&mut fw, 3_100, e4, PieceCode::Empty);
        set(&mut fw, 3_200, d5, PieceCode::WhitePawn);
        let known = dump_of_codes(fw.physical());
        // ...Qxd5: the pawn off d5 first (overwriting d5's last event), the queen over.
        set(&mut fw, 4_000, d5, PieceCode::Empty);
        set(&mut fw, 4_100, d8, PieceCode::Empty);
        set(&mut fw, 4_200, d5, PieceCode::BlackQueen);
        let log = fw.ee_events();
        assert!(
            !log.contains(&EeEvent::Field { square: d5, piece: PieceCode::WhitePawn, quick: false })
                && !log.contains(&EeEvent::Field { square: d5, piece: PieceCode::WhitePawn, quick: true }),
            "the board kept no event of the pawn on d5"
        );
        let steps = changes_since(&log, &known).expect("the known board is found").steps;
        assert_eq!(apply(&known, &steps), dump_of_codes(fw.physical()));
        assert_eq!(steps.len(), 3, "{steps:?}");
    }

    #[test]
    fn a_change_made_without_power_comes_from_the_power_up_listing() {
        let start = dgt_hil_sim::firmware::start_position();
        let fields = |board: &[PieceCode; 64]| {
            DgtSquare::ALL
                .into_iter()
                .filter(|s| !board[usize::from(s.index())].is_empty())
                .map(|s| EeEvent::Field { square: s, piece: board[usize::from(s.index())], quick: true })
                .collect::<Vec<_>>()
        };
        let mut after = start;
        after[36] = after[52];
        after[52] = PieceCode::Empty;
        let mut log = vec![EeEvent::Nop, EeEvent::PowerUp];
        log.extend(fields(&start));
        log.push(EeEvent::BeginPos);
        log.push(EeEvent::PowerUp);
        log.extend(fields(&after));
        let steps = changes_since(&log, &dump_of_codes(&start)).unwrap().steps;
        assert_eq!(
            steps,
            [
                Step { square: sq(52), piece: PieceCode::Empty, gap: Gap::Press },
                Step { square: sq(36), piece: PieceCode::WhitePawn, gap: Gap::Quick }
            ]
        );
        // A log that does not reach back to a power-up cannot be placed.
        assert_eq!(changes_since(&log[log.len() - 10..], &dump_of_codes(&start)), None);
    }

    /// What the tracker confirmed, as UCI, in order.
    fn confirmed(events: &[Event]) -> Vec<String> {
        events
            .iter()
            .filter_map(|e| match e {
                Event::MoveConfirmed(m) => Some(m.uci.to_string()),
                _ => None,
            })
            .collect()
    }

    /// Lets `until` pass on `tracker` at its own deadlines, answering each dump it asks
    /// for with `board` (the board standing still), as the session does.
    fn settle(tracker: &mut Tracker<64>, board: &BoardDump, from: u64, until: u64, events: &mut Vec<Event>) {
        let mut t = from;
        loop {
            let mut asked = false;
            tracker.tick(t, &mut |e| match e {
                Event::RequestBoardDump => asked = true,
                e => events.push(e),
            });
            if asked {
                tracker.feed_dump(board, t + 50, &mut |e| events.push(e));
            }
            match tracker.poll_at() {
                Some(next) if next <= until => t = next.max(t + 1),
                _ => break,
            }
        }
    }

    /// A tracker that saw the start position and `ucis` (each confirmed by quiet time),
    /// and the firmware showing the same.
    fn game_after(ucis: &[&str], t: &mut u64) -> (Tracker<64>, dgt_hil_sim::Firmware, Vec<Event>) {
        let mut fw = firmware();
        let mut tracker = Tracker::<64>::new(dgt_core::Config::default());
        let mut events = Vec::new();
        tracker.feed_dump(&dump_of_codes(fw.physical()), *t, &mut |e| events.push(e));
        for u in ucis {
            play(&mut fw, &[u], t);
            tracker.feed_dump(&dump_of_codes(fw.physical()), *t + 200, &mut |e| events.push(e));
            *t += 5_000;
            tracker.tick(*t, &mut |e| events.push(e));
        }
        (tracker, fw, events)
    }

    #[test]
    fn the_same_board_after_the_reconnect_ends_the_reconciling_at_once() {
        let mut t = 0;
        let (tracker, fw, _) = game_after(&["e2e4"], &mut t);
        let mut r = Reconcile::new(tracker.board());
        let clock = Message::FieldUpdate(FieldUpdate::new(sq(0), PieceCode::WhiteRook));
        assert_eq!(
            r.intake(clock, 1, |_| LogNeed::Unexplained),
            Intake::Feed(vec![(1, clock)]),
            "fed as is while the port is gone"
        );
        r.attached(10);
        assert_eq!(r.intake(clock, 11, |_| LogNeed::Unexplained), Intake::Held);
        let dump = Message::BoardDump(dump_of_codes(fw.physical()));
        assert_eq!(r.intake(dump, 12, |_| LogNeed::Unexplained), Intake::Feed(vec![(11, clock), (12, dump)]));
    }

    #[test]
    fn a_reconcile_that_may_hold_few_messages_finishes_without_the_log_and_loses_none() {
        let mut t = 0;
        let (tracker, mut fw, _) = game_after(&["e2e4", "e7e5"], &mut t);
        let mut r = Reconcile::new(tracker.board()).hold_at_most(3);
        play(&mut fw, &["g1f3", "b8c6", "b1c3"], &mut t);
        t += 1_000;
        fw.power_cycle(t);
        r.attached(t);
        let back = Message::BoardDump(dump_of_codes(fw.physical()));
        assert_eq!(r.intake(back, t, |d| needs_log(&tracker, d)), Intake::AskLog);
        let clock = Message::FieldUpdate(FieldUpdate::new(sq(0), PieceCode::WhiteRook));
        assert_eq!(r.intake(clock, t + 1, |_| LogNeed::Unexplained), Intake::Held);
        assert_eq!(r.intake(back, t + 2, |_| LogNeed::Unexplained), Intake::Held);
        // The fourth finds no room: finish without the log, the fourth kept all the same.
        assert_eq!(r.intake(clock, t + 3, |_| LogNeed::Unexplained), Intake::Overflow);
        let out = r.finish(None);
        assert!(out.steps.is_none());
        assert_eq!(out.held.iter().map(|(at, _)| *at).collect::<Vec<_>>(), [t, t + 1, t + 2, t + 3]);
    }

    #[test]
    fn moves_that_transpose_while_away_are_replayed_in_the_order_played() {
        // Both orders leave the same board: only the board's log tells them apart.
        for line in [["g1f3", "b8c6", "b1c3"], ["b1c3", "b8c6", "g1f3"]] {
            let mut t = 0;
            let (mut tracker, mut fw, mut events) = game_after(&["e2e4", "e7e5"], &mut t);
            let mut r = Reconcile::new(tracker.board());
            play(&mut fw, &line, &mut t);
            t += 1_000;
            fw.power_cycle(t);
            r.attached(t);
            let back = Message::BoardDump(dump_of_codes(fw.physical()));
            assert_eq!(r.intake(back, t, |d| needs_log(&tracker, d)), Intake::AskLog);
            assert!(r.reading_log() && !r.overdue(t + 1) && r.overdue(t + LOG_ANSWER_MS));
            // A move made while the log is read is held and replayed after the log.
            play(&mut fw, &["g8f6"], &mut t);
            let later = Message::BoardDump(dump_of_codes(fw.physical()));
            assert_eq!(r.intake(later, t + 200, |_| LogNeed::Unexplained), Intake::Held);
            let log = fw.ee_events();
            let (end, said) = replay(&mut tracker, &r.finish(Some(&log)), t + 300);
            events.extend(said);
            settle(&mut tracker, &dump_of_codes(fw.physical()), end, end + 10_000, &mut events);
            let mut want = vec!["e2e4", "e7e5"];
            want.extend(line);
            want.push("g8f6");
            assert_eq!(confirmed(&events), want);
        }
    }

    /// A 5+2 clock, White on the left. The relay sees 1. e4 e5 and their presses, then the
    /// port is lost while 2. Nf3 Nc6 are played and pressed. Returns the tracker, what it
    /// said, the board's event log, and each presser's display after each press.
    fn clocked_game_with_two_plies_away() -> (Tracker<64>, Vec<Event>, Vec<EeEvent>, Vec<Option<u32>>, u64) {
        use dgt_hil_sim::clock::{Dgt3000, TimeControl};
        let mut fw = firmware();
        fw.attach_clock(Some(Dgt3000::new(TimeControl::fischer(300, 2), ClockSide::Left, 0)));
        let mut tracker = Tracker::<64>::new(dgt_core::Config::default());
        let mut events = Vec::new();
        let mut t = 0;
        tracker.feed_dump(&dump_of_codes(fw.physical()), t, &mut |e| events.push(e));
        let reading = |fw: &dgt_hil_sim::Firmware| fw.clock().map(|c| c.reading()).expect("a clock");
        tracker.feed_clock(&reading(&fw), t, &mut |e| events.push(e));
        t += 1_000;
        if let Some(c) = fw.clock_mut() {
            c.start(t);
        }
        tracker.feed_clock(&reading(&fw), t, &mut |e| events.push(e));
        let mut shown = Vec::new();
        for (i, u) in ["e2e4", "e7e5", "g1f3", "b8c6"].into_iter().enumerate() {
            let side = if i % 2 == 0 { ClockSide::Left } else { ClockSide::Right };
            play(&mut fw, &[u], &mut t);
            t += 2_000;
            if i < 2 {
                // A running clock reports every second.
                tracker.feed_clock(&reading(&fw), t - 500, &mut |e| events.push(e));
            }
            fw.press_clock(side, t);
            shown.push(fw.clock().map(|c| c.view(side).display_s));
            if i < 2 {
                // Seen by the relay: the board, then the clock.
                tracker.feed_dump(&dump_of_codes(fw.physical()), t - 1_500, &mut |e| events.push(e));
                tracker.feed_clock(&reading(&fw), t, &mut |e| events.push(e));
                tracker.tick(t + 1_000, &mut |e| events.push(e));
            }
            if i == 1 {
                tracker.board_away(t + 1_000);
            }
        }
        (tracker, events, fw.ee_events(), shown, t + 1_000)
    }

    /// Replays `log` on the tracker; returns every confirmed ply with its `%clk`.
    fn replay_log(
        tracker: &mut Tracker<64>,
        events: &mut Vec<Event>,
        log: &[EeEvent],
        t: u64,
    ) -> Vec<(String, Option<u32>)> {
        let changes = changes_since(log, &tracker.board()).expect("changes");
        let outcome = Outcome {
            kept: tracker.board(),
            steps: Some(changes),
            held: Vec::new(),
            need: LogNeed::ToConfirm,
            white_side: None,
        };
        let (end, said) = replay(tracker, &outcome, t);
        events.extend(said);
        tracker.tick(end + 10_000, &mut |e| events.push(e));
        events
            .iter()
            .filter_map(|e| match e {
                Event::MoveConfirmed(m) => Some((m.uci.to_string(), m.clk)),
                _ => None,
            })
            .collect()
    }

    fn with_clocks(shown: Vec<Option<u32>>) -> Vec<(String, Option<u32>)> {
        ["e2e4", "e7e5", "g1f3", "b8c6"].iter().map(|u| u.to_string()).zip(shown).collect()
    }

    #[test]
    fn presses_logged_while_away_give_their_plies_the_clock_time() {
        // The board logs each presser's display when its lever moves: those are the plies'
        // `%clk`.
        let (mut tracker, mut events, log, shown, t) = clocked_game_with_two_plies_away();
        let changes = changes_since(&log, &tracker.board()).expect("changes");
        // Black's press for e5 comes after the kept board (the relay saw it); then one
        // after each move made while away.
        let after: Vec<usize> = changes.logged.iter().map(|p| p.after).collect();
        assert_eq!(after, [0, 2, 4], "{:?}", changes.logged);
        assert_eq!(replay_log(&mut tracker, &mut events, &log, t), with_clocks(shown));
    }

    #[test]
    fn a_press_logged_before_the_landing_of_its_move_is_that_moves() {
        // The board logs a square when it scans it: White's press for Nf3, made between two
        // scans, is logged before the knight's landing on f3.
        let (mut tracker, mut events, mut log, shown, t) = clocked_game_with_two_plies_away();
        let f3 = DgtSquare::from_square(shakmaty::Square::F3, Orientation::Normal);
        let landing = log
            .iter()
            .position(|e| matches!(e, EeEvent::Field { square, .. } if *square == f3))
            .expect("Nf3 logged");
        assert!(matches!(log[landing + 1], EeEvent::Time { side: ClockSide::Left, .. }), "{log:?}");
        log.swap(landing, landing + 1);
        assert_eq!(replay_log(&mut tracker, &mut events, &log, t), with_clocks(shown));
    }

    /// A 5+2 clock, White on the left, started; the relay sees `ucis` played and pressed,
    /// then loses the board. Returns the tracker, what it said, the firmware, each
    /// presser's display after each press, and the time.
    fn clocked_until_away(
        ucis: &[&str],
    ) -> (Tracker<64>, Vec<Event>, dgt_hil_sim::Firmware, Vec<Option<u32>>, u64) {
        use dgt_hil_sim::clock::{Dgt3000, TimeControl};
        let mut fw = firmware();
        fw.attach_clock(Some(Dgt3000::new(TimeControl::fischer(300, 2), ClockSide::Left, 0)));
        let mut tracker = Tracker::<64>::new(dgt_core::Config::default());
        let mut events = Vec::new();
        let mut t = 0;
        let reading = |fw: &dgt_hil_sim::Firmware| fw.clock().map(|c| c.reading()).expect("a clock");
        tracker.feed_dump(&dump_of_codes(fw.physical()), t, &mut |e| events.push(e));
        t += 1_000;
        if let Some(c) = fw.clock_mut() {
            c.start(t);
        }
        tracker.feed_clock(&reading(&fw), t, &mut |e| events.push(e));
        let mut shown = Vec::new();
        for (i, u) in ucis.iter().enumerate() {
            let side = if i % 2 == 0 { ClockSide::Left } else { ClockSide::Right };
            play(&mut fw, &[u], &mut t);
            t += 2_000;
            tracker.feed_clock(&reading(&fw), t - 500, &mut |e| events.push(e));
            fw.press_clock(side, t);
            shown.push(fw.clock().map(|c| c.view(side).display_s));
            tracker.feed_dump(&dump_of_codes(fw.physical()), t - 1_500, &mut |e| events.push(e));
            tracker.feed_clock(&reading(&fw), t, &mut |e| events.push(e));
            tracker.tick(t + 1_000, &mut |e| events.push(e));
        }
        tracker.board_away(t + 1_000);
        (tracker, events, fw, shown, t + 1_000)
    }

    fn idx(name: &str) -> DgtSquare {
        DgtSquare::from_square(
            shakmaty::Square::from_ascii(name.as_bytes()).expect("a square"),
            Orientation::Normal,
        )
    }

    /// A capture made while the board was away, by hand: the captured piece off `to`, the
    /// mover's piece off `from`; the press (logged before the landing when `press_first`:
    /// the press came between two scans), and the landing on `to`.
    fn capture(
        fw: &mut dgt_hil_sim::Firmware,
        t: &mut u64,
        from: &str,
        to: &str,
        side: ClockSide,
        press_first: bool,
    ) -> Option<u32> {
        *t += 3_000;
        let piece = fw.physical()[usize::from(idx(from).index())];
        fw.set_piece(idx(to), PieceCode::Empty, *t);
        fw.set_piece(idx(from), PieceCode::Empty, *t + 100);
        if press_first {
            fw.press_clock(side, *t + 500);
            fw.set_piece(idx(to), piece, *t + 510);
        } else {
            fw.set_piece(idx(to), piece, *t + 200);
            fw.press_clock(side, *t + 800);
        }
        fw.clock().map(|c| c.view(side).display_s)
    }

    /// exd5 pressed between two scans (its press logged before the pawn's landing), then
    /// ...Qxd5 taking the pawn off d5 first: the board overwrites the landing's event, so
    /// the log shows d5 emptied twice. White's press, logged before, is still exd5's, and
    /// Black's is Qxd5's.
    #[test]
    fn a_press_whose_landing_the_board_overwrote_is_still_its_moves() {
        let (mut tracker, mut events, mut fw, mut shown, mut t) = clocked_until_away(&["e2e4", "d7d5"]);
        shown.push(capture(&mut fw, &mut t, "e4", "d5", ClockSide::Left, true));
        shown.push(capture(&mut fw, &mut t, "d8", "d5", ClockSide::Right, false));
        let log = fw.ee_events();
        let on_d5 = |piece| {
            log.iter().any(|e| matches!(e, EeEvent::Field { square, piece: p, .. } if *square == idx("d5") && *p == piece))
        };
        assert!(!on_d5(PieceCode::WhitePawn), "the landing on d5 was overwritten: {log:?}");
        let want: Vec<(String, Option<u32>)> =
            ["e2e4", "d7d5", "e4d5", "d8d5"].iter().map(|u| u.to_string()).zip(shown).collect();
        assert_eq!(replay_log(&mut tracker, &mut events, &log, t + 2_000), want);
    }

    /// While away: exd6 and cxd6, the landing of exd6 overwritten as above. d6 holds a
    /// black pawn before and after, so the board alone shows two pawns gone from e5 and c7.
    /// The log's second emptying of d6 says a piece stood there in between: the pawn lifted
    /// from e5, which makes both plies plain.
    #[test]
    fn a_recapture_that_restores_the_square_is_read_through_the_overwritten_landing() {
        let (mut tracker, mut events, mut fw, mut shown, mut t) =
            clocked_until_away(&["d2d4", "e7e5", "d4e5", "d7d6"]);
        shown.push(capture(&mut fw, &mut t, "e5", "d6", ClockSide::Left, true));
        shown.push(capture(&mut fw, &mut t, "c7", "d6", ClockSide::Right, false));
        let want: Vec<(String, Option<u32>)> = ["d2d4", "e7e5", "d4e5", "d7d6", "e5d6", "c7d6"]
            .iter()
            .map(|u| u.to_string())
            .zip(shown)
            .collect();
        assert_eq!(replay_log(&mut tracker, &mut events, &fw.ee_events(), t + 2_000), want);
    }

    /// A board first seen with 1. Nf3 on it, its press made just after that first look:
    /// the press reaches the relay while the log is read, and the board logged it before
    /// it sent the log (its answers lag its state). The log's replay gives Nf3 that press;
    /// the held reading showing it is the same press, not one for White's next ply.
    #[test]
    fn a_press_both_logged_and_held_while_joining_is_counted_once() {
        use dgt_hil_sim::clock::{Dgt3000, TimeControl};
        let mut fw = firmware();
        fw.attach_clock(Some(Dgt3000::new(TimeControl::fischer(300, 2), ClockSide::Left, 0)));
        let reading = |fw: &mut dgt_hil_sim::Firmware, at: u64| {
            let clock = fw.clock_mut().expect("a clock");
            clock.advance(at);
            Message::Bwtime(dgt_protocol::Bwtime::Times(clock.reading()))
        };
        let mut t = 1_000;
        if let Some(c) = fw.clock_mut() {
            c.start(t);
        }
        play(&mut fw, &["g1f3"], &mut t);
        let mut tracker = Tracker::<64>::new(dgt_core::Config::default());
        let mut r = Reconcile::join();
        r.attached(t + 200);
        let first = Message::BoardDump(dump_of_codes(fw.physical()));
        assert_eq!(r.intake(first, t + 200, |d| needs_log(&tracker, d)), Intake::AskLog);
        assert_eq!(r.intake(reading(&mut fw, t + 200), t + 200, |_| LogNeed::No), Intake::Held);
        t += 1_000;
        fw.press_clock(ClockSide::Left, t);
        let mut shown = vec![fw.clock().map(|c| c.view(ClockSide::Left).display_s)];
        assert_eq!(r.intake(reading(&mut fw, t), t, |_| LogNeed::No), Intake::Held);
        // The board took the request after the press: its log holds it.
        let log = fw.ee_events();
        assert!(log.iter().any(|e| matches!(e, EeEvent::Time { side: ClockSide::Left, .. })), "{log:?}");
        let (end, mut events) = replay(&mut tracker, &r.finish(Some(&log)), t + 8_000);
        // The game went on while the log was read (8 s at 9600 baud): 1... d5 2. g3, each
        // pressed just after its landing, after a different think. The board's reports of
        // them queued behind the log and come in one burst after it.
        let mut burst = Vec::new();
        for (u, side, think) in [("d7d5", ClockSide::Right, 2_000), ("g2g3", ClockSide::Left, 5_000)] {
            t += think;
            let (from, to) = (idx(&u[..2]), idx(&u[2..]));
            let piece = fw.physical()[usize::from(from.index())];
            for (square, piece) in [(from, PieceCode::Empty), (to, piece)] {
                t += 40;
                fw.set_piece(square, piece, t);
                burst.push(Message::FieldUpdate(FieldUpdate::new(square, piece)));
            }
            t += 20;
            fw.press_clock(side, t);
            shown.push(fw.clock().map(|c| c.view(side).display_s));
            burst.push(reading(&mut fw, t));
        }
        for msg in &burst {
            tracker.feed(msg, end, &mut |e| events.push(e));
        }
        settle(&mut tracker, &dump_of_codes(fw.physical()), end, end + 5_000, &mut events);
        let clocks: Vec<(String, Option<u32>)> = events
            .iter()
            .filter_map(|e| match e {
                Event::MoveConfirmed(m) => Some((m.uci.to_string(), m.clk)),
                _ => None,
            })
            .collect();
        let want: Vec<(String, Option<u32>)> =
            ["g1f3", "d7d5", "g2g3"].iter().map(|u| u.to_string()).zip(shown).collect();
        assert_eq!(clocks, want);
    }

    #[test]
    fn without_a_log_everything_held_is_fed_in_order() {
        let mut t = 0;
        let (mut tracker, mut fw, mut events) = game_after(&["e2e4", "e7e5"], &mut t);
        let mut r = Reconcile::new(tracker.board());
        assert!(r.is_away());
        play(&mut fw, &["g1f3"], &mut t);
        r.attached(t);
        assert_eq!(
            r.intake(Message::BoardDump(dump_of_codes(fw.physical())), t, |_| LogNeed::Unexplained),
            Intake::AskLog
        );
        let outcome = r.finish(None);
        assert!(outcome.steps.is_none() && outcome.held.len() == 1);
        let (end, said) = replay(&mut tracker, &outcome, t + 10);
        events.extend(said);
        settle(&mut tracker, &dump_of_codes(fw.physical()), end, end + 10_000, &mut events);
        assert_eq!(confirmed(&events), ["e2e4", "e7e5", "g1f3"]);
    }

    #[test]
    fn a_second_loss_waits_for_the_log_unless_one_line_explained_a_reading() {
        let kept = dump_of_codes(&dgt_hil_sim::firmware::start_position());
        let mut other = kept;
        other.set(sq(52), PieceCode::Empty);
        let reading = Message::BoardDump(other);
        let back = |need: LogNeed| {
            let mut r = Reconcile::new(kept);
            r.attached(0);
            assert_eq!(r.intake(reading, 1, |_| need), Intake::AskLog);
            r
        };
        // Only the log can tell: the kept board stays and what was held is dropped.
        for need in [LogNeed::Ambiguous, LogNeed::Unexplained] {
            match back(need).lost() {
                AfterLoss::Wait(r) => assert!(r.is_away() && r.held.is_empty() && r.kept == kept),
                AfterLoss::Replay(o) => panic!("{need:?} replayed {o:?}"),
            }
        }
        // One line explained it: replayed now, with what was held.
        assert!(matches!(back(LogNeed::ToConfirm).lost(), AfterLoss::Replay(o) if o.held.len() == 1));
        // The first reading caught hands moving; a later one is explained: that one decides.
        let mut r = back(LogNeed::Unexplained);
        assert_eq!(r.intake(reading, 2, |_| LogNeed::ToConfirm), Intake::Held);
        assert_eq!(r.intake(reading, 3, |_| LogNeed::Unexplained), Intake::Held);
        assert!(matches!(r.lost(), AfterLoss::Replay(o) if o.held.len() == 3));
        // Lost before any reading came back: still waiting, nothing held.
        let mut r = Reconcile::new(kept);
        r.attached(0);
        assert!(matches!(r.lost(), AfterLoss::Wait(r) if r.is_away()));
    }
}
