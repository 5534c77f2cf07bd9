//! The clock readings a single board would have sent around a lever press the changes
//! logged.

use dgt_protocol::{ClockSide, ClockTimes};

use super::line::VirtualLine;

/// The readings a single board would have sent around a lever press the changes logged
/// (`side`'s display showed `time` as it stopped), built on the last reading `base`; sends
/// them on `line` and returns the last.
///
/// The press reading is `base` with the presser's display at the logged time and the lever
/// down on the presser's side (the clock is read right after, which brings the other
/// display up to date).
///
/// A press is the side to move stopping its own running clock: a single board would have
/// sent a reading of that (the clock running, the presser's side up) before the press.
/// When the last reading does not show it, or when a game may have begun since the last
/// press, that reading goes first, even if it repeats the last one: the tracker learns
/// White's side from the lever of a game's first running reading, which must not be a
/// press, and the last reading may have come before the session saw the game begin (a start
/// position is taken once it stood still). When a game may have begun, the clock as the
/// arbiter set it (stopped, the presser's lever up) goes before that: a single board sends
/// it, and the tracker takes a stopped clock's lever for White's side even after a running
/// reading of the previous game. A new game's clock shows no flag of the previous game's. A press a real reading already showed (the lever down on the presser's side,
/// the presser's display at the logged time) is not sent again, unless `replay` (a press
/// that came before any reading, built on the reading after it).
pub(super) fn press_readings(
    base: ClockTimes,
    side: ClockSide,
    time: dgt_protocol::ClockTime,
    line: &mut VirtualLine,
    replay: bool,
) -> ClockTimes {
    // D1 (which side is up), with D3/D4 turned with it as the clock turns them.
    let lever_up = |t: &mut ClockTimes, up: ClockSide| {
        if t.high_side() != up {
            t.status.0 ^= 0x1A;
        }
    };
    let mut t = base;
    let shown = match side {
        ClockSide::Left => t.left.time,
        ClockSide::Right => t.right.time,
    };
    if !replay && t.status.running() && t.high_side() == side.other() && shown == time {
        // A reading from after this press went out already (it came between the changes
        // and this press's packet): the session has seen the press; a second one would
        // turn the lever back and forth.
        line.new_game = false;
        return t;
    }
    let new_game = core::mem::take(&mut line.new_game);
    if new_game {
        for s in [&mut t.left, &mut t.right] {
            s.flags.flag = false;
            s.flags.final_flag = false;
        }
        // The clock as the arbiter set it before starting it: stopped, the lever raised on
        // the side to move (a single board sends that reading before the clock runs).
        let mut set = t;
        set.status.0 &= !0x01;
        lever_up(&mut set, side);
        line.times(set, false, true);
    }
    if new_game || !t.status.running() || t.high_side() != side {
        t.status.0 |= 0x01;
        lever_up(&mut t, side);
        line.times(t, false, true);
    }
    match side {
        ClockSide::Left => t.left.time = time,
        ClockSide::Right => t.right.time = time,
    }
    lever_up(&mut t, side.other());
    line.times(t, false, false);
    t
}
