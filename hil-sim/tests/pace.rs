//! Accelerated replays stay honest: thinking time between moves is fast-forwarded, a
//! move's hand sequence (first lift to clock press, the stillness after it) and the end
//! gesture run at the hand speed, and the virtual time of every action stays the same.

mod common;

use std::time::{Duration, Instant};

use dgt_hil_sim::clock::TimeControl;
use dgt_hil_sim::firmware::BoardConfig;
use dgt_hil_sim::hands::{GameEnd, PlanOptions, Profile, plan_game};
use dgt_hil_sim::scenario::{Action, ClockSetup, HAND_SETTLE_MS, Scenario, Setup, TimedAction};
use dgt_hil_sim::{HostPort, Received, SimBoard, SimConfig, StartPolicy};
use dgt_protocol::{ClockSide, Command, DgtSquare, Orientation};
use shakmaty::{Board, Color, Piece, Role, Square};

fn inside(spans: &[(u64, u64)], t: u64) -> bool {
    spans.iter().any(|&(a, b)| a <= t && t < b)
}

#[test]
fn hand_spans_cover_every_gesture_and_press_and_leave_thinking_time_out() {
    for (k, game) in common::short_worldcup_games(6, 90).iter().enumerate() {
        for profile in [Profile::Clean, Profile::Mixed] {
            let opts = PlanOptions {
                profile,
                seed: k as u64,
                end: GameEnd::KingsInCentre,
                ..PlanOptions::default()
            };
            let s = plan_game(game, &opts);
            let truth = s.truth.clone().expect("truth");
            let spans = s.hand_spans();
            assert!(spans.windows(2).all(|w| w[0].1 < w[1].0), "sorted, disjoint, apart: {spans:?}");
            let hand: Vec<u64> = s.actions.iter().filter(|a| a.action.is_hand()).map(|a| a.at_ms).collect();
            for &t in &hand {
                assert!(inside(&spans, t), "hand action at {t} outside {spans:?}");
            }
            // Between two hand actions: the whole pause at hand speed when short (inside a
            // gesture), else its first HAND_SETTLE_MS only (thinking is fast-forwarded).
            // The last press (made on the planner's clock even without a clock), and the
            // last hand action up to it: the end gesture's pause starts there.
            let last_press = opts.start_delay_ms + truth.moves.iter().map(|m| m.think_ms).sum::<u64>();
            let end_gesture_from = (truth.end == "kings_in_centre")
                .then(|| hand.iter().copied().filter(|&t| t <= last_press).max())
                .flatten();
            for w in hand.windows(2) {
                let (a, b) = (w[0], w[1]);
                let gap = b - a;
                let end_pause = end_gesture_from.is_some_and(|e| a >= e);
                for t in [a + gap / 4, a + gap / 2, b - 1] {
                    let want = end_pause || gap <= HAND_SETTLE_MS || t < a + HAND_SETTLE_MS;
                    assert_eq!(inside(&spans, t), want, "{profile} game {k}: {t} between {a} and {b}");
                }
            }
            // The pause before the end gesture is a few seconds of game time.
            if let Some(e) = end_gesture_from {
                let first = hand.iter().find(|&&t| t > e).expect("the gesture");
                assert!(first - e >= 3_500, "the kings come {} ms after the last press", first - e);
            }
            // At one speed everywhere, the real time is the virtual time over the speed.
            let d = s.real_duration(50.0, 50.0).as_secs_f64();
            assert!((d - s.duration_ms() as f64 / 50_000.0).abs() < 1e-6);
            let slow = s.real_duration(50.0, 2.0).as_secs_f64();
            let hand_ms: u64 = spans.iter().map(|(a, b)| b - a).sum();
            let want = (s.duration_ms() - hand_ms) as f64 / 50_000.0 + hand_ms as f64 / 2_000.0;
            assert!((slow - want).abs() < 1e-6, "{slow} {want}");
        }
    }
}

fn index(sq: Square) -> u8 {
    DgtSquare::from_square(sq, Orientation::Normal).index()
}

#[test]
fn a_fast_board_thinks_fast_and_moves_its_hands_at_the_hand_speed() {
    let at = |at_ms, action| TimedAction { at_ms, action };
    let pawn = |color| Piece { color, role: Role::Pawn };
    // Two moves: 10 s and 29 s of thinking, lift-place-press 400 ms apart each.
    let scenario = Scenario {
        setup: Setup {
            orientation: Orientation::Normal,
            clock: Some(ClockSetup {
                time_control: TimeControl::fischer(300, 2),
                white_side: ClockSide::Left,
                first_side: ClockSide::Left,
            }),
            position: Board::default(),
        },
        actions: vec![
            at(0, Action::StartClock),
            at(10_000, Action::Lift { square: Square::E2 }),
            at(10_400, Action::Place { square: Square::E4, piece: pawn(Color::White) }),
            at(10_800, Action::PressClock { color: Color::White }),
            at(40_000, Action::Lift { square: Square::E7 }),
            at(40_400, Action::Place { square: Square::E5, piece: pawn(Color::Black) }),
            at(40_800, Action::PressClock { color: Color::Black }),
            at(41_800, Action::End),
        ],
        truth: None,
    };
    // x1000 with hands at x10: 4.6 s of hands (the clock's start and 1 s after it, two
    // moves with 1 s after each press) in 460 ms, 37.2 s of thinking in 37 ms.
    let expected = scenario.real_duration(1_000.0, 10.0);
    assert!(expected.abs_diff(Duration::from_micros(497_200)) < Duration::from_micros(10), "{expected:?}");
    let dir = std::env::temp_dir().join(format!("dgt-sim-pace-{}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("dir");
    let board = SimBoard::spawn(SimConfig {
        board: BoardConfig { scan_period_ms: 0, ..BoardConfig::with_serial(4242) },
        link: Some(dir.join("board")),
        speed: 1_000.0,
        hand_speed: 10.0,
        ..SimConfig::default()
    })
    .expect("spawn");
    let mut port = HostPort::open(&board.path()).expect("open");
    let handle = board.start_scenario(scenario, StartPolicy::WhenHostListens).expect("start");
    port.send(Command::SendUpdateNice).expect("send");
    let mut seen: Vec<(u8, Instant)> = Vec::new();
    let deadline = Instant::now() + Duration::from_secs(20);
    while seen.len() < 4 && Instant::now() < deadline {
        let got = port
            .read_until(Duration::from_millis(50), |r| r.iter().any(|m| matches!(m, Received::Field { .. })));
        let now = Instant::now();
        for m in got.expect("read") {
            if let Received::Field { index, .. } = m {
                seen.push((index, now));
            }
        }
    }
    let order: Vec<u8> = seen.iter().map(|s| s.0).collect();
    assert_eq!(order, [Square::E2, Square::E4, Square::E7, Square::E5].map(index), "{seen:?}");
    let gap = |i: usize, j: usize| seen[j].1.duration_since(seen[i].1);
    // The place comes 400 ms of game time after the lift: 40 ms at x10 (0.4 ms at x1000).
    assert!(gap(0, 1) >= Duration::from_millis(35), "lift to place {:?}", gap(0, 1));
    assert!(gap(2, 3) >= Duration::from_millis(35), "lift to place {:?}", gap(2, 3));
    // From one lift to the next: the gesture, the press and 1 s of stillness at x10, the
    // other 28.2 s at x1000 (3 s if everything went at the hand speed).
    assert!(gap(0, 2) >= Duration::from_millis(170), "move to move {:?}", gap(0, 2));
    assert!(gap(0, 2) < Duration::from_millis(1_500), "thinking was not fast-forwarded: {:?}", gap(0, 2));
    let report = handle.wait(Duration::from_secs(20)).expect("report");
    assert!(report.completed);
    // The clock ran on game time: Black pressed 30 s after White (2 s added),
    // whatever the real time was.
    let clock = board.status().expect("status").clock.expect("clock");
    assert_eq!((clock.right.remaining_ms, clock.left.moves, clock.right.moves), (272_000, 1, 1), "{clock:?}");
    board.shutdown().expect("shutdown");
    let _ = std::fs::remove_dir_all(&dir);
}
