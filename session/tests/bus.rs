//! [`BusPoller`] against a chain of the project's simulated board firmwares, in virtual
//! time: the poller's bytes reach every plugged board, the boards' replies go on the
//! simulator's line model (9600-baud byte slots, collisions), and each board found gets a
//! [`BoardSession`] on its virtual line, with its own link handshake, exactly as the relay
//! runs them.

#[path = "support/chain.rs"]
mod chain;

use chain::{Chain, FIRST};
use dgt_hil_sim::clock::Dgt3000;
use dgt_hil_sim::hands::{GameEnd, PlanOptions, plan_game};
use dgt_hil_sim::scenario::Scenario;
use dgt_protocol::{ClockSide, DgtSquare, Orientation, PieceCode};
use dgt_session::{AlertCode, BusEvent, BusPoller, BusTiming, Effect, LinkState, MoveState};
use shakmaty::Square;

#[test]
fn twelve_boards_are_found_and_each_gets_its_own_session() {
    let mut c = Chain::new(12);
    c.run(10_000);
    let want: Vec<u16> = (FIRST..FIRST + 12).collect();
    assert_eq!(c.found(), want, "stats {:?}", c.poller.stats());
    for a in &want {
        let per = &c.per[a];
        assert_eq!(per.session.link_state(), LinkState::Active, "board {a}");
        assert_eq!(per.session.serial(), Some(format!("{a:05}").as_str()));
        assert!(
            per.effects.iter().any(|(_, e)| matches!(e, Effect::GameStarted { .. })),
            "board {a}: the start position was read"
        );
    }
    let stats = c.poller.stats();
    // About 3.5 s of discovery, then a second or so of first turns (each board's power-up
    // listing, and a start tag a cycle): cycles of under half a second after.
    assert!(stats.cycles > 8, "{stats:?}");
    // Twelve changes polls (about 15 ms each) and a clock reading per board a second.
    assert!(stats.last_cycle_ms < 600, "{stats:?}");
    assert_eq!(c.events.iter().filter(|(_, e)| matches!(e, BusEvent::Gone { .. })).count(), 0);
}

#[test]
fn moves_and_presses_on_every_board_reach_their_own_session() {
    let mut c = Chain::new(6);
    for a in FIRST..FIRST + 6 {
        c.clock(a);
    }
    c.run(8_000);
    for a in FIRST..FIRST + 6 {
        c.play(a, Square::E2, Square::E4);
        c.press(a, ClockSide::Left);
    }
    c.run(1_500);
    for a in FIRST..FIRST + 6 {
        c.play(a, Square::E7, Square::E5);
        c.press(a, ClockSide::Right);
    }
    c.run(3_000);
    for a in FIRST..FIRST + 6 {
        let moves = c.confirmed(a);
        let ucis: Vec<&str> = moves.iter().map(|(u, _)| u.as_str()).collect();
        assert_eq!(ucis, ["e2e4", "e7e5"], "board {a}");
        assert!(moves.iter().all(|(_, clk)| clk.is_some()), "board {a}: {moves:?}");
    }
    let stats = c.poller.stats();
    assert_eq!(stats.timeouts, 0, "{stats:?}");
}

#[test]
fn a_board_off_the_chain_is_not_responding_and_back_it_resumes_with_its_moves() {
    let mut c = Chain::new(4);
    let away = FIRST + 2;
    c.clock(away);
    c.run(8_000);
    c.play(away, Square::E2, Square::E4);
    c.press(away, ClockSide::Left);
    c.run(1_500);
    assert_eq!(c.confirmed(away).len(), 1);
    // Off the chain: its session hears nothing; the others go on.
    c.plugged[usize::from(away - FIRST)] = false;
    c.run(4_000);
    assert!(c.events.iter().any(|(_, e)| matches!(e, BusEvent::Gone { address, .. } if *address == away)));
    assert_eq!(c.per[&away].session.link_state(), LinkState::NotResponding);
    assert!(c.alerts(away).contains(&AlertCode::NotResponding));
    for a in [FIRST, FIRST + 1, FIRST + 3] {
        assert_eq!(c.per[&a].session.link_state(), LinkState::Active, "board {a}");
    }
    // Two moves made while it is away (its firmware logs them), then it is put back.
    c.play(away, Square::E7, Square::E5);
    c.press(away, ClockSide::Right);
    c.run(1_000);
    c.play(away, Square::G1, Square::F3);
    c.press(away, ClockSide::Left);
    c.run(1_000);
    let now = c.now();
    c.fw(away).power_cycle(now);
    c.plugged[usize::from(away - FIRST)] = true;
    c.run(8_000);
    assert_eq!(c.per[&away].session.link_state(), LinkState::Active);
    assert!(c.alerts(away).contains(&AlertCode::BoardBack), "{:?}", c.alerts(away));
    let ucis: Vec<String> = c.confirmed(away).into_iter().map(|(u, _)| u).collect();
    assert_eq!(ucis, ["e2e4", "e7e5", "g1f3"]);
    // The two plies came from the board's event log (what its changes brought while no line
    // was open), not from a guess at the position.
    assert!(!c.alerts(away).contains(&AlertCode::MovesReconstructed), "{:?}", c.alerts(away));
}

#[test]
fn garbage_on_the_line_loses_no_board_and_no_move() {
    let mut c = Chain::new(6);
    c.clock(FIRST);
    c.run(8_000);
    // Random bytes every 150 ms for 6 s, over the replies.
    let mut x: u64 = 0x2545_F491_4F6C_DD1D;
    let start = c.now_us;
    for k in 0..40u64 {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        let len = 1 + (x % 12) as usize;
        let bytes: Vec<u8> = (0..len).map(|i| (x >> (i * 5)) as u8).collect();
        c.garbage.push((start + k * 150_000 + x % 100_000, bytes));
    }
    c.play(FIRST, Square::D2, Square::D4);
    c.press(FIRST, ClockSide::Left);
    c.run(6_000);
    c.play(FIRST, Square::D7, Square::D5);
    c.press(FIRST, ClockSide::Right);
    c.run(3_000);
    let stats = c.poller.stats();
    assert!(stats.bad_checksums + stats.noise_bytes > 0, "{stats:?}");
    assert_eq!(c.events.iter().filter(|(_, e)| matches!(e, BusEvent::Gone { .. })).count(), 0, "{stats:?}");
    let ucis: Vec<String> = c.confirmed(FIRST).into_iter().map(|(u, _)| u).collect();
    assert_eq!(ucis, ["d2d4", "d7d5"], "{stats:?}");
}

/// Starts `scenario` on the board at `address` now, as the simulator starts a board's
/// scenario (its position and a new clock, set for the game), plays its actions in virtual
/// time, and returns what its ground truth says the relay must confirm.
fn play_planned(c: &mut Chain, address: u16, scenario: &Scenario) -> Vec<(String, Option<u32>)> {
    use dgt_hil_sim::offline::apply_action;
    use dgt_hil_sim::scenario::board_codes;
    let start = c.now();
    let setup = scenario.setup.clone();
    let white = setup.clock.as_ref().map_or(ClockSide::Left, |k| k.white_side);
    {
        let fw = c.fw(address);
        fw.set_position(board_codes(&setup.position, setup.orientation), start);
        if let Some(k) = &setup.clock {
            fw.attach_clock(Some(Dgt3000::new(k.time_control.clone(), k.first_side, start)));
        }
        fw.rephase_scan(start);
    }
    for a in &scenario.actions {
        while c.now() < start + a.at_ms {
            c.step();
        }
        let now = c.now();
        apply_action(c.fw(address), &a.action, now, setup.orientation, white);
    }
    scenario
        .truth
        .as_ref()
        .expect("a planned game has its truth")
        .moves
        .iter()
        .map(|m| (m.uci.clone(), if m.color == "white" { m.white_clock_s } else { m.black_clock_s }))
        .collect()
}

/// A planned game (the simulator's hands, clean) on one board of a chain of three, from
/// the scenario's own setup: every move and every `%clk` as the ground truth has them.
#[test]
fn a_planned_game_comes_out_exact_with_its_clock_times() {
    let pgn = "[Event \"t\"]\n[TimeControl \"300+2\"]\n[Result \"*\"]\n\n1. e4 e5 2. Nf3 Nc6 3. Bb5 a6 4. Ba4 Nf6 5. O-O Be7 *\n";
    let game = &dgt_hil_sim::pgn::parse_games(pgn)[0];
    let scenario = plan_game(game, &PlanOptions { start_delay_ms: 1_000, ..PlanOptions::default() });
    let mut c = Chain::new(3);
    c.run(6_000);
    let want = play_planned(&mut c, FIRST, &scenario);
    c.run(5_000);
    assert_eq!(c.confirmed(FIRST), want);
}

/// The relay stalled for 1.7 s now and then (a loaded machine) while a planned game is
/// played on a chain of four: it wakes on its timer past the reply deadline with the reply
/// waiting unread. That is no silence of the board: no board is gone, no reply is taken
/// for a timeout, and the game comes out exact with its clock times. (The late check timed
/// the reply out; after three stalls the board was gone and back, and its session
/// reconciled in the middle of the game.)
#[test]
fn a_relay_stalled_past_its_reply_deadlines_loses_no_board_and_no_clock_time() {
    let pgn = "[Event \"t\"]\n[TimeControl \"300+2\"]\n[Result \"*\"]\n\n1. e4 e5 2. Nf3 Nc6 3. Bb5 a6 4. Ba4 Nf6 5. O-O Be7 *\n";
    let game = &dgt_hil_sim::pgn::parse_games(pgn)[0];
    let scenario = plan_game(game, &PlanOptions { start_delay_ms: 1_000, ..PlanOptions::default() });
    let mut c = Chain::new(4);
    c.stalls = (0..12).map(|k| (8_003 + k * 4_111, 1_700)).collect();
    c.run(6_000);
    let want = play_planned(&mut c, FIRST, &scenario);
    c.run(5_000);
    assert_eq!(c.confirmed(FIRST), want);
    assert_eq!(c.events.iter().filter(|(_, e)| matches!(e, BusEvent::Gone { .. })).count(), 0);
    let stats = c.poller.stats();
    assert_eq!(stats.timeouts, 0, "{stats:?}");
}

/// Two games in a row on one board of a chain, the second set up as the simulator sets up
/// a board's next game: the start position and a new clock put out at once, the clock
/// started and the first move pressed before the poller reads that clock (its readings are
/// rare here, as a board's are on a long chain), the first game left with the other side's
/// lever up. Each new game must learn White's side from its own clock, not from the last
/// reading of the game before; the third is played on the board turned round.
#[test]
fn a_second_game_on_a_board_takes_its_clock_from_its_own_clock() {
    let pgn = "[Event \"t\"]\n[TimeControl \"300+2\"]\n[Result \"1/2-1/2\"]\n\n1. e4 e5 2. Nf3 Nc6 3. Bb5 a6 4. Ba4 1/2-1/2\n\n\
               [Event \"t\"]\n[TimeControl \"180+2\"]\n[Result \"1/2-1/2\"]\n\n1. d4 d5 2. c4 e6 3. Nc3 Nf6 4. Bg5 Be7 1/2-1/2\n";
    let games = dgt_hil_sim::pgn::parse_games(pgn);
    let opts = PlanOptions {
        start_delay_ms: 50,
        end: GameEnd::KingsInCentre,
        default_think_ms: (100, 300),
        ..PlanOptions::default()
    };
    let first = plan_game(&games[0], &opts);
    let second = plan_game(&games[1], &opts);
    // The third is the second on the board turned round: White's display is the right one.
    let mut third = second.clone();
    third.setup.orientation = Orientation::Rotated;
    if let Some(k) = third.setup.clock.as_mut() {
        k.white_side = ClockSide::Right;
        k.first_side = ClockSide::Right;
    }
    let mut c = Chain::new(3);
    c.poller = BusPoller::open(0, BusTiming { clock_period_ms: 60_000, ..BusTiming::default() });
    c.run(6_000);
    let mut want = play_planned(&mut c, FIRST, &first);
    c.run(4_000);
    want.extend(play_planned(&mut c, FIRST, &second));
    c.run(4_000);
    want.extend(play_planned(&mut c, FIRST, &third));
    c.run(5_000);
    assert_eq!(c.confirmed(FIRST), want);
}

/// The display of `side` on the clock of the board at `address`, in seconds.
fn display(c: &Chain, address: u16, side: ClockSide) -> u32 {
    let clock = c.fws[usize::from(address - FIRST)].clock().expect("a clock");
    let t = clock.reading();
    match side {
        ClockSide::Left => t.left.time.total_seconds(),
        ClockSide::Right => t.right.time.total_seconds(),
    }
}

/// A changes packet garbled on the line whose 7-bit checksum still passes (one in 128
/// does): its press is a time event no board writes. Taken as it came, the press was lost,
/// and with the reply pressed before the next clock reading, White's move took Black's
/// display of before. The packet is asked again (`REPEAT_CHANGES`), as one with a bad
/// checksum is.
#[test]
fn a_garbled_press_that_passes_the_checksum_is_asked_again() {
    let mut c = Chain::new(3);
    c.clock(FIRST);
    c.run(8_000);
    c.play(FIRST, Square::E2, Square::E4);
    c.run(500);
    c.garble_press.push(FIRST);
    c.press(FIRST, ClockSide::Left);
    let white = display(&c, FIRST, ClockSide::Left);
    // The reply comes the moment the garbled packet has left the board: before the clock is
    // read again.
    let mut waited = 0;
    while !c.garble_press.is_empty() {
        c.step();
        waited += 1;
        assert!(waited < 2_000, "the changes were not polled");
    }
    let now = c.now();
    let sq = |s| DgtSquare::from_square(s, Orientation::Normal);
    c.fw(FIRST).set_square_at_once(sq(Square::E7), PieceCode::Empty, true, now);
    c.fw(FIRST).set_square_at_once(sq(Square::E5), PieceCode::BlackPawn, true, now);
    c.press(FIRST, ClockSide::Right);
    let black = display(&c, FIRST, ClockSide::Right);
    c.run(3_000);
    let moves = c.confirmed(FIRST);
    assert_eq!(
        moves,
        [("e2e4".to_owned(), Some(white)), ("e7e5".to_owned(), Some(black))],
        "stats {:?}",
        c.poller.stats()
    );
    assert!(c.poller.stats().bad_checksums > 0, "{:?}", c.poller.stats());
}

/// A burst of play a changes packet brings whole (the board was not polled meanwhile): 1.
/// d4 Nf6 pressed within a scan period, so the board logged both presses before the scan's
/// four field events (in square order), then 2. Nf3 a scan later. A single board's session
/// would have seen the presses, the first scan and the later one apart in time; on the
/// virtual line what follows a press, and a later scan's change after a press, come later
/// by [`BusTiming::press_gap_ms`], so the tracker sees 1... Nf6 stand before 2. Nf3 (at once,
/// the two orders of White's moves were alike to it: the move order was unknown from ply 1
/// and no ply had its `%clk`).
#[test]
fn a_burst_read_in_one_packet_keeps_its_plies_apart() {
    let mut c = Chain::new(3);
    c.clock(FIRST);
    c.run(8_000);
    let i = usize::from(FIRST - FIRST);
    // Off the line for under a second (not gone): its changes wait for it.
    c.plugged[i] = false;
    let now = c.now();
    c.fw(FIRST).rephase_scan(now);
    let burst = [(Square::D2, Square::D4, ClockSide::Left), (Square::G8, Square::F6, ClockSide::Right)];
    let mut want = Vec::new();
    for (from, to, side) in burst {
        let piece =
            c.fws[i].physical()[usize::from(DgtSquare::from_square(from, Orientation::Normal).index())];
        c.set(FIRST, from, PieceCode::Empty);
        c.run(30);
        c.set(FIRST, to, piece);
        c.run(30);
        c.press(FIRST, side);
        want.push((format!("{from}{to}"), Some(display(&c, FIRST, side))));
        c.run(30);
    }
    c.run(300);
    c.play(FIRST, Square::G1, Square::F3);
    c.press(FIRST, ClockSide::Left);
    want.push(("g1f3".to_owned(), Some(display(&c, FIRST, ClockSide::Left))));
    c.run(20);
    c.plugged[i] = true;
    c.run(4_000);
    for (t, e) in &c.per[&FIRST].effects {
        if *t > 8_000 && !matches!(e, Effect::Write(_)) {
            println!("{t} {}", format!("{e:?}").chars().take(150).collect::<String>());
        }
    }
    assert!(!c.events.iter().any(|(_, e)| matches!(e, BusEvent::Gone { .. })), "the board was gone");
    assert!(!c.alerts(FIRST).contains(&AlertCode::MoveOrderUnknown), "{:?}", c.alerts(FIRST));
    assert_eq!(c.confirmed(FIRST), want);
}

/// A board back on the chain after a short power loss (not gone) sends its power-up, the
/// listing of its pieces, and two plies made since, in one changes packet. The listing names
/// each piece once and no empty square: the move's lift ends it, and the move goes out as
/// field updates (taken for more of the listing, it was dropped: Black's press came without
/// its move, which the tracker found only with White's next, from the dump).
#[test]
fn a_move_after_a_power_up_in_the_same_packet_is_not_taken_for_its_listing() {
    let mut c = Chain::new(3);
    c.clock(FIRST);
    c.run(8_000);
    c.play(FIRST, Square::E2, Square::E4);
    c.press(FIRST, ClockSide::Left);
    let mut want = vec![("e2e4".to_owned(), Some(display(&c, FIRST, ClockSide::Left)))];
    c.run(1_500);
    let i = usize::from(FIRST - FIRST);
    c.plugged[i] = false;
    c.run(20);
    let now = c.now();
    c.fw(FIRST).power_cycle(now);
    c.play(FIRST, Square::E7, Square::E5);
    c.press(FIRST, ClockSide::Right);
    want.push(("e7e5".to_owned(), Some(display(&c, FIRST, ClockSide::Right))));
    c.run(50);
    c.play(FIRST, Square::G1, Square::F3);
    c.press(FIRST, ClockSide::Left);
    want.push(("g1f3".to_owned(), Some(display(&c, FIRST, ClockSide::Left))));
    c.run(20);
    c.plugged[i] = true;
    c.run(4_000);
    assert!(!c.events.iter().any(|(_, e)| matches!(e, BusEvent::Gone { .. })), "the board was gone");
    assert_eq!(c.confirmed(FIRST), want, "{:?}", c.alerts(FIRST));
    // Black's press confirmed its move before White's next was seen, as on a single board
    // (with the move dropped, the two plies came to light together from the dump).
    let effects = &c.per[&FIRST].effects;
    let at = |f: &dyn Fn(&Effect) -> bool| effects.iter().position(|(_, e)| f(e));
    let black_confirmed =
        at(&|e| matches!(e, Effect::Move { state: MoveState::Confirmed, info } if info.ply == 2));
    let white_seen = at(&|e| matches!(e, Effect::Move { info, .. } if info.ply == 3));
    assert!(
        black_confirmed < white_seen,
        "e7e5 confirmed at effect {black_confirmed:?}, g1f3 seen at {white_seen:?}"
    );
}

/// A board whose first two plies, pressed, are made as its line opens, before its session
/// has read a dump: its session gets the board before them first, from the event log (the
/// power-up's listing and the changes since), then the plies, as a single board's session
/// has the board from the handshake. (Forwarded with no dump, the session let the presses go
/// by and the dump started the game with the move on the board: the tracker took Black's
/// press for White's, and every ply the other side's display. Read first, the dump showed
/// two plies made and no game started at all.)
#[test]
fn a_new_lines_first_dump_is_the_board_before_its_first_changes() {
    let mut c = Chain::new(3);
    c.clock(FIRST);
    let mut waited = 0;
    while !c.per.contains_key(&FIRST) {
        c.step();
        waited += 1;
        assert!(waited < 20_000, "the board was not found");
    }
    // 1. e4 e5, both pressed, before the board's next turn.
    let sq = |s| DgtSquare::from_square(s, Orientation::Normal);
    let mut want = Vec::new();
    for (from, to, piece, side) in [
        (Square::E2, Square::E4, PieceCode::WhitePawn, ClockSide::Left),
        (Square::E7, Square::E5, PieceCode::BlackPawn, ClockSide::Right),
    ] {
        let now = c.now();
        c.fw(FIRST).set_square_at_once(sq(from), PieceCode::Empty, true, now);
        c.fw(FIRST).set_square_at_once(sq(to), piece, true, now);
        c.press(FIRST, side);
        want.push((format!("{from}{to}"), Some(display(&c, FIRST, side))));
    }
    c.run(2_000);
    c.play(FIRST, Square::G1, Square::F3);
    c.press(FIRST, ClockSide::Left);
    want.push(("g1f3".to_owned(), Some(display(&c, FIRST, ClockSide::Left))));
    c.run(3_000);
    assert_eq!(c.confirmed(FIRST), want);
}

/// A burst whose two presses one changes packet brings, and whose field events the next
/// one brings with no press between: 1. d4 Nf6 pressed within a scan period (the board logs
/// both presses before the scan's four changes, in square order), then 2. Nf3 a scan later,
/// read together with them. The later scan's changes go out [`BusTiming::press_gap_ms`]
/// after the others, so the tracker sees 1... Nf6 stand before 2. Nf3 (at once, the two
/// orders of White's moves were alike to it: the move order was unknown from ply 1).
#[test]
fn a_burst_whose_presses_came_first_keeps_its_plies_apart() {
    let mut c = Chain::new(3);
    c.clock(FIRST);
    c.run(8_000);
    let i = usize::from(FIRST - FIRST);
    let sq = |s| DgtSquare::from_square(s, Orientation::Normal);
    // The presses, alone in a packet.
    c.plugged[i] = false;
    c.run(50);
    c.press(FIRST, ClockSide::Left);
    let white = display(&c, FIRST, ClockSide::Left);
    c.run(50);
    c.press(FIRST, ClockSide::Right);
    let black = display(&c, FIRST, ClockSide::Right);
    c.plugged[i] = true;
    let seen = c.per[&FIRST].effects.len();
    let mut waited = 0;
    while !c.per[&FIRST].effects[seen..].iter().any(|(_, e)| matches!(e, Effect::Clock(_))) {
        c.step();
        waited += 1;
        assert!(waited < 2_000, "the presses were not read");
    }
    // The scan's changes, and a later scan's, in the next packet.
    c.plugged[i] = false;
    let now = c.now();
    for (s, piece) in [
        (Square::G8, PieceCode::Empty),
        (Square::F6, PieceCode::BlackKnight),
        (Square::D4, PieceCode::WhitePawn),
        (Square::D2, PieceCode::Empty),
    ] {
        c.fw(FIRST).set_square_at_once(sq(s), piece, true, now);
    }
    c.run(300);
    let now = c.now();
    c.fw(FIRST).set_square_at_once(sq(Square::G1), PieceCode::Empty, true, now);
    c.run(300);
    let now = c.now();
    c.fw(FIRST).set_square_at_once(sq(Square::F3), PieceCode::WhiteKnight, true, now);
    c.plugged[i] = true;
    c.run(300);
    c.press(FIRST, ClockSide::Left);
    let want = vec![
        ("d2d4".to_owned(), Some(white)),
        ("g8f6".to_owned(), Some(black)),
        ("g1f3".to_owned(), Some(display(&c, FIRST, ClockSide::Left))),
    ];
    c.run(4_000);
    assert!(!c.events.iter().any(|(_, e)| matches!(e, BusEvent::Gone { .. })), "the board was gone");
    assert!(!c.alerts(FIRST).contains(&AlertCode::MoveOrderUnknown), "{:?}", c.alerts(FIRST));
    // 1. d4's `%clk` is the tracker's to bind (both presses came before either move was
    // seen, and no dump can show the board between them now): not asserted here.
    let mut got = c.confirmed(FIRST);
    if let Some(first) = got.first_mut() {
        first.1 = Some(white);
    }
    assert_eq!(got, want);
}

/// Issue 27, recipe 4 (`dgt-sim --bus --boards 6` on the sample round: board 10002's
/// White thought 53 minutes over 1. c4, and the relay told nothing): a chain board in the
/// start position whose clock runs and nothing moves. The clock as set goes to the session
/// once, not before every reading (which stopped and restarted the clock each second), so
/// the session sees the clock run and the board stay still, and says so.
#[test]
fn a_still_board_on_a_chain_whose_clock_runs_is_told() {
    let mut c = Chain::new(2);
    c.clock(FIRST);
    c.run(10_000 + dgt_session::SessionConfig::default().board_idle_ms);
    let stops = c.per[&FIRST]
        .effects
        .iter()
        .filter(|(_, e)| matches!(e, Effect::Clock(k) if k.running.is_none()))
        .count();
    assert!(stops <= 2, "the clock stopped {stops} times");
    assert_eq!(c.alerts(FIRST), [AlertCode::BoardIdle]);
    assert!(!c.alerts(FIRST + 1).contains(&AlertCode::BoardIdle), "no clock runs there");
}
