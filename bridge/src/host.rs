//! [`HostEnd`]: the host's end of a bridge, sans-IO: the device's messages in, the
//! session effects they stand for out, in order and exactly once, and the messages for the
//! device.
//!
//! # Exactly once
//! The host keeps a [`GameLog`] mirror of what it was told of the current game (what its
//! journal holds, or will once the disk takes it). When it (re)connects it sends
//! [`Resume`] with that game's key, length and [`crate::game::line_hash`]; records are ignored
//! until the device's [`Up::Synced`]. The lines that come are *absolute*: a move at ply
//! `p` the mirror holds already is skipped, a different one replaces what follows it
//! (a takeback, then the move), and the line's end truncates a longer mirror and sets the
//! result. So a line sent twice, or one that overlaps what the journal had, changes
//! nothing more than once. Live records after `Synced` are numbered: one not after the
//! last is a duplicate and dropped; a gap (a frame lost on the line) is not guessed
//! across: the host resumes.
//!
//! # Acknowledgements
//! The board task tells [`HostEnd::applied`] when what it was handed is on disk; the device
//! learns it ([`Down::Ack`]) with the game's key, which is how a resume after a restart
//! of the host finds the game again.

use alloc::collections::VecDeque;
use alloc::string::String;
use alloc::vec::Vec;

use alloc::format;

use dgt_session::{Alert, AlertCode, AlertLevel, Effect, LinkState};

use crate::convert::{Unreadable, effect_of};
use crate::game::{GameLog, line_hash, ply_of};
use crate::wire::{
    Action, DeviceHello, DeviceStatus, Down, GameKey, LineHead, LinkWire, MoveWire, Outcome, Record, Resume,
    Up,
};

/// Counts of what the host end refused or repaired.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct HostStats {
    /// Records dropped because they were not after the last one taken.
    pub duplicates: u32,
    /// Gaps in the numbering, each answered by a resume.
    pub gaps: u32,
    /// Records or line moves whose text did not read, dropped (and resumed).
    pub unreadable: u32,
    /// Resumes asked for.
    pub resumes: u32,
}

/// The answer to an operator's action.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Answer {
    /// How it ended.
    pub outcome: Outcome,
    /// The checked moves, for [`Action::CheckCorrection`].
    pub checked: Vec<MoveWire>,
}

/// A resume not answered within this is asked for again (its request, or a frame of its
/// answer, was lost on the line).
pub const RESUME_TIMEOUT_MS: u64 = 3_000;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Sync {
    /// A resume was asked for; records wait for its `Synced`.
    Waiting,
    /// Records are taken after this one.
    Live { last: u32 },
}

/// A line being received.
#[derive(Debug)]
struct LineIn {
    head: LineHead,
    next: u16,
    /// The position after the last ply received (before `next`).
    fen: String,
}

/// The host's end. See the module docs.
#[derive(Debug)]
pub struct HostEnd {
    board: u32,
    mirror: Option<GameLog>,
    sync: Sync,
    /// When the resume under way was first seen by [`HostEnd::poll`].
    waiting_since: Option<u64>,
    line: Option<LineIn>,
    /// Effects for the board task, each with the record it completes (0: none).
    effects: VecDeque<(Option<Effect>, u32)>,
    out: VecDeque<Down>,
    /// The last record whose effects were all handed out.
    handed: u32,
    acked: u32,
    next_id: u16,
    answers: Vec<(u16, Answer)>,
    checked: Vec<(u16, MoveWire)>,
    hello: DeviceHello,
    status: Option<DeviceStatus>,
    serial: Option<String>,
    link: LinkState,
    flipped: bool,
    battery: Option<u8>,
    stats: HostStats,
    last_unreadable: Option<Unreadable>,
    /// The bridge was lost and the operator told; the next resume tells them it is back.
    away: bool,
}

impl HostEnd {
    /// The end for board `board` on a device that greeted with `hello`, whose journal holds
    /// `journal` (its latest game, if any): a resume is asked for at once.
    pub fn new(board: u32, hello: DeviceHello, journal: Option<GameLog>) -> HostEnd {
        let flipped = journal.as_ref().is_some_and(|g| g.flipped);
        let mut h = HostEnd {
            board,
            mirror: journal,
            sync: Sync::Waiting,
            waiting_since: None,
            line: None,
            effects: VecDeque::new(),
            out: VecDeque::new(),
            handed: 0,
            acked: 0,
            next_id: 1,
            answers: Vec::new(),
            checked: Vec::new(),
            serial: hello.board.clone(),
            hello,
            status: None,
            link: LinkState::Offline,
            flipped,
            battery: None,
            stats: HostStats::default(),
            last_unreadable: None,
            away: false,
        };
        h.resume();
        h
    }

    /// The next message for the device.
    pub fn next_down(&mut self) -> Option<Down> {
        self.out.pop_front()
    }

    /// The next effect for the board task, in order.
    pub fn next_effect(&mut self) -> Option<Effect> {
        while let Some((effect, seq)) = self.effects.pop_front() {
            self.handed = self.handed.max(seq);
            if effect.is_some() {
                return effect;
            }
        }
        None
    }

    /// What was handed out is applied; `on_disk` when the journal has all of it, and `key`
    /// the board task's current game: the device is told.
    pub fn applied(&mut self, key: Option<GameKey>, on_disk: bool) {
        if let Some(m) = &mut self.mirror
            && key.is_some()
        {
            m.key = key;
        }
        if on_disk && self.effects.is_empty() && self.handed > self.acked {
            self.acked = self.handed;
            self.out.push_back(Down::Ack { seq: self.handed, key });
        }
    }

    /// Asks for an operator's action; its answer comes to [`HostEnd::answer`].
    pub fn request(&mut self, action: Action) -> u16 {
        let id = self.next_id;
        self.next_id = self.next_id.wrapping_add(1).max(1);
        self.out.push_back(Down::Action { id, action });
        id
    }

    /// The answer to action `id`, once it came.
    pub fn answer(&mut self, id: u16) -> Option<Answer> {
        let i = self.answers.iter().position(|(a, _)| *a == id)?;
        Some(self.answers.swap_remove(i).1)
    }

    /// The device's last greeting.
    pub fn hello(&self) -> &DeviceHello {
        &self.hello
    }

    /// The device's last status.
    pub fn status(&self) -> Option<DeviceStatus> {
        self.status
    }

    /// The board's serial number, once the device told it.
    pub fn serial(&self) -> Option<&str> {
        self.serial.as_deref()
    }

    /// The device's link to its board, as it last told it.
    pub fn link_state(&self) -> LinkState {
        self.link
    }

    /// True when the board is rotated.
    pub fn flipped(&self) -> bool {
        self.flipped
    }

    /// The board's battery, percent.
    pub fn battery(&self) -> Option<u8> {
        self.battery
    }

    /// What was refused or repaired.
    pub fn stats(&self) -> HostStats {
        self.stats
    }

    /// Why the last unreadable record was refused.
    pub fn last_unreadable(&self) -> Option<&Unreadable> {
        self.last_unreadable.as_ref()
    }

    /// True once records are taken live (the last resume is done).
    pub fn is_live(&self) -> bool {
        matches!(self.sync, Sync::Live { .. })
    }

    /// The bridge is gone: the board is not heard, and the operator is told. A resume is
    /// asked for when it is back.
    pub fn lost(&mut self) {
        self.line = None;
        self.sync = Sync::Waiting;
        self.out.clear();
        if self.link != LinkState::NotResponding {
            self.link = LinkState::NotResponding;
            self.effects.push_back((Some(Effect::Link(LinkState::NotResponding)), 0));
        }
        if !self.away {
            self.away = true;
            let message = format!(
                "Board {}: its relay box does not answer on the bridge. The box keeps the game; what was played \
                 meanwhile comes when the bridge is back. Check the box's cable and power.",
                self.board
            );
            let alert = Alert::new(AlertCode::NotResponding, AlertLevel::Error, message);
            self.effects.push_back((Some(Effect::Alert(alert)), 0));
        }
    }

    /// Runs what is due at `now`: a resume that got no answer is asked for again.
    pub fn poll(&mut self, now: u64) {
        if self.sync != Sync::Waiting {
            return;
        }
        match self.waiting_since {
            None => self.waiting_since = Some(now),
            Some(t) if now >= t + RESUME_TIMEOUT_MS => {
                self.resume();
                self.waiting_since = Some(now);
            }
            Some(_) => {}
        }
    }

    /// Asks the device for what the host is missing.
    pub fn resume(&mut self) {
        self.stats.resumes += 1;
        self.sync = Sync::Waiting;
        self.waiting_since = None;
        self.line = None;
        let r = match &self.mirror {
            Some(m) => Resume {
                board: self.board,
                key: m.key,
                plies: m.plies.len() as u16,
                hash: line_hash(&m.plies, m.plies.len()),
            },
            None => Resume { board: self.board, ..Resume::default() },
        };
        self.out.push_back(Down::Resume(r));
    }

    /// A message from the device.
    pub fn on_up(&mut self, up: Up) {
        match up {
            Up::Hello(h) => {
                // The device restarted, or answers a greeting: its numbers may have begun
                // again, so nothing is taken until a resume.
                if let Some(b) = &h.board {
                    self.serial = Some(b.clone());
                }
                self.hello = h;
                self.handed = 0;
                self.acked = 0;
                self.resume();
            }
            Up::Record { seq, record } => self.record(seq, record),
            Up::Line(head) => {
                if self.sync == Sync::Waiting {
                    self.end_line();
                    self.begin_line(head);
                }
            }
            Up::LineMove(mv) => {
                if self.sync == Sync::Waiting {
                    self.line_move(mv);
                }
            }
            Up::Synced { seq } => {
                if self.sync == Sync::Waiting {
                    self.end_line();
                    self.sync = Sync::Live { last: seq };
                    if self.away {
                        self.away = false;
                        let message = format!(
                            "Board {}: its relay box is back on the bridge; the game is brought up to date.",
                            self.board
                        );
                        let alert = Alert::new(AlertCode::BoardBack, AlertLevel::Info, message);
                        self.effects.push_back((Some(Effect::Alert(alert)), 0));
                    }
                    self.effects.push_back((None, seq));
                }
            }
            Up::Done { id, outcome } => {
                let checked =
                    self.checked.extract_if(.., |(a, _)| *a == id).map(|(_, m)| m).collect::<Vec<_>>();
                self.answers.push((id, Answer { outcome, checked }));
            }
            Up::Checked { id, mv } => self.checked.push((id, mv)),
            Up::Status(s) => self.status = Some(s),
        }
    }

    fn record(&mut self, seq: u32, record: Record) {
        let Sync::Live { last } = self.sync else { return };
        if seq <= last {
            self.stats.duplicates += 1;
            return;
        }
        if seq != last + 1 {
            self.stats.gaps += 1;
            self.resume();
            return;
        }
        self.sync = Sync::Live { last: seq };
        if !self.take(record, seq) {
            self.resume();
        }
    }

    /// Applies a record: the mirror, the device's state, the effect. False when its text
    /// did not read (nothing was taken).
    fn take(&mut self, record: Record, seq: u32) -> bool {
        let effect = match effect_of(&record) {
            Ok(e) => e,
            Err(why) => {
                self.stats.unreadable += 1;
                self.last_unreadable = Some(why);
                return false;
            }
        };
        match &record {
            Record::GameStarted { start, new_record: true } => {
                self.flipped = start.rotated;
                self.mirror = Some(GameLog::new(start.clone(), 0));
            }
            Record::GameStarted { start, new_record: false } => self.flipped = start.rotated,
            Record::Board { serial } => self.serial = Some(serial.clone()),
            Record::Link(l) => {
                self.link = match l {
                    LinkWire::Offline => LinkState::Offline,
                    LinkWire::Active => LinkState::Active,
                    LinkWire::NotResponding => LinkState::NotResponding,
                }
            }
            Record::Battery(b) => self.battery = Some(*b),
            Record::Flipped { flipped } => self.flipped = *flipped,
            _ => {}
        }
        if let Some(m) = &mut self.mirror {
            m.apply(&record);
        }
        self.effects.push_back((effect, seq));
        true
    }

    fn begin_line(&mut self, head: LineHead) {
        let same = head.key.is_some() && self.mirror.as_ref().is_some_and(|m| m.key == head.key);
        if !same {
            self.take(Record::GameStarted { start: head.start.clone(), new_record: true }, 0);
        }
        let m = self.mirror.as_ref();
        let flipped = m.map(|m| m.flipped);
        let white_clock = m.and_then(|m| m.white_clock);
        if flipped != Some(head.flipped) {
            self.take(Record::Flipped { flipped: head.flipped }, 0);
        }
        if let Some(d) = head.white_clock
            && white_clock != Some(d)
        {
            self.take(Record::ClockSide(d), 0);
        }
        self.line = Some(LineIn { next: head.from_ply, fen: head.fen.clone(), head });
    }

    fn line_move(&mut self, mv: MoveWire) {
        let Some(line) = &mut self.line else { return };
        let have = self.mirror.as_ref().map_or(0, |m| m.plies.len());
        let p = usize::from(mv.ply);
        if mv.ply != line.next || p > have + 1 {
            // Not the line announced, or one that leaves a hole in the journal: ask again.
            self.stats.gaps += 1;
            self.resume();
            return;
        }
        line.next += 1;
        let fen_before = core::mem::replace(&mut line.fen, mv.fen.clone());
        let held = self.mirror.as_ref().and_then(|m| m.plies.get(p - 1).copied());
        match held {
            Some(h) if Some(h) == ply_of(&mv) => {}
            Some(_) => {
                let to_ply = mv.ply - 1;
                if !self.take(Record::TakenBack { to_ply, fen: fen_before }, 0)
                    || !self.take(Record::Move { confirmed: true, mv }, 0)
                {
                    self.resume();
                }
            }
            None => {
                if !self.take(Record::Move { confirmed: true, mv }, 0) {
                    self.resume();
                }
            }
        }
    }

    /// The end of a line: a longer journal is cut back to it, and its result set.
    fn end_line(&mut self) {
        let Some(line) = self.line.take() else { return };
        let have = self.mirror.as_ref().map_or(0, |m| m.plies.len());
        if have > usize::from(line.head.plies) {
            self.take(Record::TakenBack { to_ply: line.head.plies, fen: line.fen }, 0);
        }
        let result = self.mirror.as_ref().and_then(|m| m.result);
        match (line.head.result, result) {
            (Some((r, why)), old) if old.map(|o| o.0) != Some(r) => {
                self.take(Record::GameEnded { result: r, reason: why }, 0);
            }
            (None, Some(_)) => {
                self.take(Record::ResultCleared, 0);
            }
            _ => {}
        }
    }
}
