//! The latency side of finality: a press that finds the board settled on the presser's
//! move confirms it in the very `feed` call that carries the press (no tick, no waiting),
//! which is what the relay's press-to-client latency bar needs. A press that finds the
//! board possibly mid-gesture waits, but only briefly.

mod common;

use common::Sim;
use dgt_core::{Config, Event};
use dgt_protocol::{Bwtime, ClockSide, Message, Orientation};
use shakmaty::{Chess, Color};

fn clocked() -> Sim {
    let mut s = Sim::started(Config::default(), Orientation::Normal).with_clock(300, ClockSide::Left);
    s.start_clock();
    s
}

/// The mover presses: one reading while their time runs (`secs_used` less), then the
/// reading after the press (the lever flipped). Returns the events emitted by the `feed`
/// call that carried the press alone.
fn press_feed(s: &mut Sim, secs_used: u32) -> Vec<Event> {
    let Some(c) = s.clock.as_mut() else { panic!("no clock") };
    let mover = c.running.unwrap_or(c.high);
    let t = if mover == Color::White { &mut c.white } else { &mut c.black };
    *t = t.saturating_sub(secs_used);
    s.now += 10;
    s.send_clock();
    let Some(c) = s.clock.as_mut() else { panic!("no clock") };
    c.running = Some(!mover);
    c.high = !mover;
    let reading = c.reading();
    s.now += 10;
    let mut out = Vec::new();
    let now = s.now;
    s.tracker.feed(&Message::Bwtime(Bwtime::Times(reading)), now, &mut |e| out.push(e));
    s.events.extend(out.iter().cloned());
    out
}

fn confirmed_in(events: &[Event]) -> Vec<String> {
    events
        .iter()
        .filter_map(|e| match e {
            Event::MoveConfirmed(m) => Some(m.uci.to_string()),
            _ => None,
        })
        .collect()
}

/// Plays `ucis` with a press after each, the board quiet for `quiet_ms` before each press;
/// returns what each press's own `feed` call confirmed.
fn play_with_quiet_presses(s: &mut Sim, ucis: &[&str], quiet_ms: u64) -> Vec<Vec<String>> {
    let mut pos = Chess::default();
    let mut out = Vec::new();
    for u in ucis {
        pos = s.play_uci(&pos, u);
        s.wait(quiet_ms);
        assert!(
            confirmed_in(&s.events).len() < s.tracker.ply_count(dgt_core::View::Live),
            "not before the press"
        );
        out.push(confirmed_in(&press_feed(s, 2)));
    }
    out
}

#[test]
fn pawn_push_confirms_in_the_feed_call_of_the_press() {
    let mut s = clocked();
    let got = play_with_quiet_presses(&mut s, &["e2e4"], 250);
    assert_eq!(got, [vec!["e2e4".to_string()]], "{:?}", s.events);
}

#[test]
fn single_pawn_step_that_could_go_on_confirms_at_once_after_a_quiet_board() {
    // e2e3 could be a passing state of e2e4; after the board has been still for a scan
    // period and the longest rest of a sliding hand, it is not.
    let mut s = clocked();
    let cfg = *s.tracker.config();
    let quiet = u64::from(cfg.timing.press_stable_ms + cfg.timing.slide_pause_ms);
    let got = play_with_quiet_presses(&mut s, &["e2e3", "e7e6"], quiet);
    assert_eq!(got, [vec!["e2e3".to_string()], vec!["e7e6".to_string()]], "{:?}", s.events);
}

#[test]
fn queen_move_that_could_go_further_confirms_in_the_feed_call_of_the_press() {
    let mut s = clocked();
    let cfg = *s.tracker.config();
    let quiet = u64::from(cfg.timing.press_stable_ms + cfg.timing.slide_pause_ms);
    // 1. e4 e5 2. Qf3: the queen could have gone on to g4 or h5.
    let got = play_with_quiet_presses(&mut s, &["e2e4", "e7e5", "d1f3"], quiet);
    assert_eq!(got.last(), Some(&vec!["d1f3".to_string()]), "{:?}", s.events);
    assert_eq!(s.confirmed_ucis(), ["e2e4", "e7e5", "d1f3"]);
}

#[test]
fn queen_move_pressed_soon_after_it_landed_waits_one_scan_only() {
    let mut s = clocked();
    let mut pos = Chess::default();
    for u in ["e2e4", "e7e5"] {
        pos = s.play_uci(&pos, u);
        s.wait(700);
        press_feed(&mut s, 2);
    }
    assert_eq!(s.confirmed_ucis(), ["e2e4", "e7e5"]);
    s.play_uci(&pos, "d1f3");
    s.wait(100);
    // The board changed a moment ago: the queen may be on her way to g4 or h5.
    assert!(confirmed_in(&press_feed(&mut s, 2)).is_empty());
    let stable = u64::from(s.tracker.config().timing.press_stable_ms);
    s.wait(stable);
    assert_eq!(s.confirmed_ucis(), ["e2e4", "e7e5", "d1f3"], "{:?}", s.events);
}
