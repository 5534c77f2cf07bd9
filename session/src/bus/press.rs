//! The clock readings a single board would have sent around a lever press the changes
//! logged.

use dgt_protocol::{ClockSide, ClockStatus, ClockTimes};

use super::line::VirtualLine;

/// D1 (which side is up), with D3/D4 turned with it as the clock turns them.
pub(super) fn lever_up(t: &mut ClockTimes, up: ClockSide) {
    if t.high_side() != up {
        t.status.0 ^= 0x1A;
    }
}

/// The readings a single board sends as a game's clock is set and started, before its
/// first press (by `side`, White's display): the clock as the arbiter set it (stopped, the
/// lever raised on `side`), then running. The tracker takes White's side from the lever of
/// a stopped clock, even after a running reading of the previous game. Built on `base`, a
/// reading of this game's clock (its displays may already show presses made since; only
/// the lever and the run state are the start's); a new game's clock shows no flag of the
/// previous game's. Sends them on `line` before the game's moves, and returns the running
/// one.
pub(super) fn game_start_readings(base: ClockTimes, side: ClockSide, line: &mut VirtualLine) -> ClockTimes {
    line.new_game = false;
    let mut t = base;
    t.status.0 &= !ClockStatus::REBUILT;
    for s in [&mut t.left, &mut t.right] {
        s.flags.flag = false;
        s.flags.final_flag = false;
    }
    let mut set = t;
    set.status.0 &= !0x01;
    lever_up(&mut set, side);
    line.times(set, false, true);
    t.status.0 |= 0x01;
    lever_up(&mut t, side);
    line.times(t, false, true);
    t
}

/// The readings a single board would have sent around a lever press the changes logged
/// (`side`'s display showed `time` as it stopped), built on the last reading `base`; sends
/// them on `line` and returns the last.
///
/// The press reading is `base` with the presser's display at the logged time and the lever
/// down on the presser's side (the clock is read right after, which brings the other
/// display up to date). It is marked [rebuilt](ClockStatus::rebuilt): only the presser's
/// display is the log's; the other one is the last reading's, which may be from before the
/// opponent's last press (a press the log skipped) or after it.
///
/// A press is the side to move stopping its own running clock: a single board would have
/// sent a reading of that (the clock running, the presser's side up) before the press.
/// When the last reading does not show it, that reading goes first. A press a real reading
/// already showed (the lever down on the presser's side, the presser's display at the
/// logged time) is not sent again, unless `replay` (a press that came before any reading,
/// built on the reading after it).
pub(super) fn press_readings(
    base: ClockTimes,
    side: ClockSide,
    time: dgt_protocol::ClockTime,
    line: &mut VirtualLine,
    replay: bool,
) -> ClockTimes {
    let mut t = base;
    let shown = match side {
        ClockSide::Left => t.left.time,
        ClockSide::Right => t.right.time,
    };
    if !replay && t.status.running() && t.high_side() == side.other() && shown == time {
        // A reading from after this press went out already (it came between the changes
        // and this press's packet): the session has seen the press; a second one would
        // turn the lever back and forth.
        return t;
    }
    t.status.0 &= !ClockStatus::REBUILT;
    if !t.status.running() || t.high_side() != side {
        t.status.0 |= 0x01;
        lever_up(&mut t, side);
        line.times(t, false, true);
    } else if replay {
        // `base` is a reading from after this press, the session's last one from before it
        // (or none, on a line just opened): the clock running for the presser goes first,
        // unless it just went out (a game's start readings).
        line.times(t, false, false);
    }
    match side {
        ClockSide::Left => t.left.time = time,
        ClockSide::Right => t.right.time = time,
    }
    lever_up(&mut t, side.other());
    t.status.0 |= ClockStatus::REBUILT;
    line.times(t, false, false);
    t
}
