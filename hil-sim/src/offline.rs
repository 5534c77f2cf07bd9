//! Replays a scenario through the firmware model without a pty, with a host that puts the
//! board in a mode and asks for a dump (again after every reconnect). Used by the tests of
//! the hand-action generator, and handy to inspect what a profile does on the wire.

use dgt_protocol::{ClockSide, Command, Decoder, DgtSquare, Orientation, PieceCode};
use shakmaty::Color;

use crate::clock::Dgt3000;
use crate::firmware::{BoardConfig, Firmware};
use crate::hostport::Received;
use crate::scenario::{Action, Scenario, board_codes};

/// Applies one action to a firmware; returns the down time of a disconnect.
pub fn apply_action(
    fw: &mut Firmware,
    action: &Action,
    at: u64,
    orientation: Orientation,
    white_side: ClockSide,
) -> Option<u64> {
    let sq = |s| DgtSquare::from_square(s, orientation);
    let side = |c: Color| if c == Color::White { white_side } else { white_side.other() };
    match action {
        Action::Lift { square } => fw.set_piece(sq(*square), PieceCode::Empty, at),
        Action::Place { square, piece } => fw.set_piece(sq(*square), PieceCode::from_piece(*piece), at),
        Action::DropReport { square } => fw.drop_next_report(sq(*square)),
        Action::PressClock { color } => {
            fw.press_clock(side(*color), at);
        }
        Action::Button { button } => fw.press_button(*button, at),
        Action::StartClock => {
            if let Some(c) = fw.clock_mut() {
                c.start(at);
            }
        }
        Action::SetPosition { board } => fw.set_position(board_codes(board, orientation), at),
        Action::Disconnect { down_ms } => return Some(*down_ms),
        Action::Garbage { bytes } => fw.inject_raw(bytes),
        Action::SetSquare { square, piece, reported } => {
            fw.set_square_at_once(sq(*square), PieceCode::from_option(*piece), *reported, at)
        }
        Action::PuppetClock { left_s, right_s, time_per_move } => {
            if let Some(c) = fw.clock_mut() {
                c.make_puppet(*left_s, *right_s, *time_per_move, at);
            }
            fw.tick(at);
        }
        Action::ClockShows { side, seconds } => {
            if let Some(c) = fw.clock_mut() {
                c.advance(at);
                c.show(*side, *seconds);
            }
            fw.tick(at);
        }
        Action::ScriptedPress { side, display_s } => fw.scripted_presses(&[(*side, *display_s)], at),
        Action::ScriptedPress2 { presses } => fw.scripted_presses(presses, at),
        Action::ClockStart | Action::ClockStop => {
            if let Some(c) = fw.clock_mut() {
                if *action == Action::ClockStart { c.start(at) } else { c.stop(at) }
            }
            fw.tick(at);
        }
        Action::End => {}
    }
    None
}

/// What an offline replay produced.
#[derive(Debug)]
pub struct OfflineReplay {
    /// Everything the host decoded, with the virtual time it was sent.
    pub received: Vec<(u64, Received)>,
    /// Virtual times of the reconnects.
    pub reconnects: Vec<u64>,
    /// The firmware at the end.
    pub firmware: Firmware,
    /// A board dump the host asked for after the end (dumps stay right whatever was lost).
    pub final_dump: [u8; 64],
}

impl OfflineReplay {
    /// The board as the host would know it from dumps and field updates (board indices).
    pub fn host_view(&self) -> [u8; 64] {
        let mut board = [0u8; 64];
        for (_, r) in &self.received {
            match r {
                Received::BoardDump(d) => board = *d,
                Received::Field { index, raw } => board[usize::from(*index & 63)] = raw & 0x0F,
                _ => {}
            }
        }
        board
    }
}

/// Replays `scenario` on a firmware with `config`, the host using `mode` (e.g.
/// [`Command::SendUpdateNice`]) and asking for a dump at the start and after reconnects.
pub fn replay_offline(scenario: &Scenario, config: BoardConfig, mode: Command) -> OfflineReplay {
    let setup = &scenario.setup;
    let orientation = setup.orientation;
    let white_side = setup.clock.as_ref().map_or(ClockSide::Left, |c| c.white_side);
    let mut fw = Firmware::new(config, board_codes(&setup.position, orientation), 0);
    if let Some(c) = &setup.clock {
        fw.attach_clock(Some(Dgt3000::new(c.time_control.clone(), c.first_side, 0)));
    }
    let mut decoder: Decoder<256> = Decoder::new();
    let mut received = Vec::new();
    let mut reconnects = Vec::new();
    let host_hello = |fw: &mut Firmware, at: u64| {
        let mut buf = [0u8; 4];
        for c in [mode, Command::SendBoard] {
            if let Ok(n) = c.encode(&mut buf) {
                fw.receive(&buf[..n], at);
            }
        }
    };
    host_hello(&mut fw, 0);
    fw.rephase_scan(0);
    let mut drain = |fw: &mut Firmware, at: u64, online: bool, received: &mut Vec<(u64, Received)>| {
        let out = fw.take_output();
        if online {
            decoder.feed(&out, |d| received.push((at, Received::from_decoded(d))));
        }
    };
    drain(&mut fw, 0, true, &mut received);
    let mut offline_until: Option<u64> = None;
    let end = scenario.duration_ms() + 2_000;
    let mut next = 0usize;
    let mut now = 0u64;
    loop {
        let action_at = scenario.actions.get(next).map(|a| a.at_ms);
        let fw_at = fw.next_deadline(now).map(|t| t.max(now));
        let candidates = [action_at, fw_at, offline_until];
        let Some(t) = candidates.into_iter().flatten().min() else { break };
        if t > end {
            break;
        }
        now = t;
        if offline_until.is_some_and(|u| u <= now) {
            offline_until = None;
            fw.power_cycle(now);
            reconnects.push(now);
            host_hello(&mut fw, now);
        } else if action_at == Some(t) {
            let action = &scenario.actions[next].action;
            next += 1;
            if let Some(down) = apply_action(&mut fw, action, now, orientation, white_side) {
                offline_until = Some(now + down);
            }
        } else {
            fw.tick(now);
        }
        drain(&mut fw, now, offline_until.is_none(), &mut received);
        if fw.next_deadline(now).is_some_and(|d| d <= now) && action_at.is_none_or(|a| a > now) {
            // Guard against a deadline that does not move.
            now += 1;
        }
    }
    fw.receive(&[0x42], now + 1);
    let out = fw.take_output();
    let mut final_dump = [0u8; 64];
    decoder.feed(&out, |d| {
        if let Received::BoardDump(b) = Received::from_decoded(d) {
            final_dump = b;
        }
    });
    OfflineReplay { received, reconnects, firmware: fw, final_dump }
}
