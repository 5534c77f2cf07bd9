//! [`BusPoller`] against a chain of the project's simulated board firmwares, in virtual
//! time: the poller's bytes reach every plugged board, the boards' replies go on the
//! simulator's line model (9600-baud byte slots, collisions), and each board found gets a
//! [`BoardSession`] on its virtual line, with its own link handshake, exactly as the relay
//! runs them.

use std::collections::BTreeMap;

use dgt_hil_sim::chain::{COMMAND_WIRE_US, Line};
use dgt_hil_sim::clock::{Button, Dgt3000, TimeControl};
use dgt_hil_sim::firmware::{BoardConfig, Firmware, start_position};
use dgt_protocol::{ClockSide, DgtSquare, Orientation, PieceCode};
use dgt_session::{
    AlertCode, BoardSession, BusEvent, BusPoller, BusTiming, Effect, Link, LinkState, MoveState,
    SessionConfig,
};
use shakmaty::Square;

/// The first board's serial number (and bus address); the others count up.
const FIRST: u16 = 201;

/// One board's session and, while its handshake runs, its link.
struct Per {
    session: BoardSession,
    link: Option<Link>,
    effects: Vec<(u64, Effect)>,
}

struct Chain {
    now_us: u64,
    fws: Vec<Firmware>,
    plugged: Vec<bool>,
    line: Line,
    poller: BusPoller,
    config: SessionConfig,
    per: BTreeMap<u16, Per>,
    events: Vec<(u64, BusEvent)>,
    /// Line noise to put on the line: (time in microseconds, bytes).
    garbage: Vec<(u64, Vec<u8>)>,
}

impl Chain {
    fn new(n: usize) -> Chain {
        let fws = (0..n)
            .map(|i| {
                Firmware::new(BoardConfig::with_serial(u32::from(FIRST) + i as u32), start_position(), 0)
            })
            .collect();
        Chain {
            now_us: 0,
            fws,
            plugged: vec![true; n],
            line: Line::new(n + 1),
            poller: BusPoller::open(0, BusTiming::default()),
            config: SessionConfig::default(),
            per: BTreeMap::new(),
            events: Vec::new(),
            garbage: Vec::new(),
        }
    }

    fn now(&self) -> u64 {
        self.now_us / 1000
    }

    /// Bytes both ways on the line and the virtual lines, then deadlines, for 1 ms.
    fn step(&mut self) {
        let now = self.now();
        // The host's bytes reach every plugged board; their answers go on the line after the
        // command's wire time and a 3 ms response.
        let out = self.poller.take_output();
        for (i, fw) in self.fws.iter_mut().enumerate() {
            if !self.plugged[i] {
                continue;
            }
            if !out.is_empty() {
                fw.receive(&out, now);
                let reply_at = self.now_us + COMMAND_WIRE_US + 3_000;
                let single = fw.take_output();
                if !single.is_empty() {
                    self.line.schedule(i, reply_at, &single);
                }
                for t in fw.take_bus_output() {
                    self.line.schedule(i, reply_at + u64::from(t.delay_ms) * 1000, &t.bytes);
                }
            }
            fw.tick(now);
            let own = fw.take_output();
            if !own.is_empty() {
                self.line.schedule(i, self.now_us, &own);
            }
        }
        let noise = self.fws.len();
        while self.garbage.first().is_some_and(|(at, _)| *at <= self.now_us) {
            let (at, bytes) = self.garbage.remove(0);
            self.line.schedule(noise, at, &bytes);
        }
        let mut bytes = Vec::new();
        self.line.emit(self.now_us, &mut bytes);
        if !bytes.is_empty() {
            self.poller.on_bytes(now, &bytes);
        }
        if now >= self.poller.next_deadline() {
            self.poller.poll(now);
        }
        while let Some(e) = self.poller.next_event() {
            match &e {
                BusEvent::Found { address, .. } => {
                    let number = u32::from(*address - FIRST + 1);
                    let config = self.config;
                    let per = self.per.entry(*address).or_insert_with(|| Per {
                        session: BoardSession::new(number, None, config),
                        link: None,
                        effects: Vec::new(),
                    });
                    per.link = Some(Link::open(now, config.link));
                }
                BusEvent::Gone { address, reason } => {
                    if let Some(per) = self.per.get_mut(address) {
                        per.link = None;
                        per.session.on_port_lost(now, reason);
                    }
                }
            }
            self.events.push((now, e));
        }
        self.pump(now);
        self.now_us += 1_000;
    }

    /// The virtual lines: link or session output to the poller, the poller's answers back,
    /// until all are quiet.
    fn pump(&mut self, now: u64) {
        for _ in 0..8 {
            let mut moved = false;
            for (address, per) in self.per.iter_mut() {
                if let Some(link) = per.link.as_mut() {
                    link.poll(now);
                    let out = link.take_output();
                    if !out.is_empty() {
                        self.poller.line_input(*address, &out);
                        moved = true;
                    }
                    let back = self.poller.take_line_output(*address);
                    if !back.is_empty() {
                        link.on_bytes(now, &back);
                        moved = true;
                    }
                    if link.is_identified() {
                        let link = per.link.take().expect("the link");
                        per.session.attach(now, link, "bus");
                        moved = true;
                    }
                    continue;
                }
                if per.session.link_state() == LinkState::Active {
                    let back = self.poller.take_line_output(*address);
                    if !back.is_empty() {
                        per.session.on_bytes(now, &back);
                        moved = true;
                    }
                }
                if now >= per.session.next_deadline() {
                    per.session.poll(now);
                }
                for e in per.session.drain_effects() {
                    if let Effect::Write(bytes) = &e {
                        self.poller.line_input(*address, bytes);
                        moved = true;
                    }
                    per.effects.push((now, e));
                }
            }
            if !moved {
                break;
            }
        }
    }

    fn run(&mut self, ms: u64) {
        let end = self.now_us + ms * 1000;
        while self.now_us < end {
            self.step();
        }
    }

    fn fw(&mut self, address: u16) -> &mut Firmware {
        &mut self.fws[usize::from(address - FIRST)]
    }

    fn set(&mut self, address: u16, square: Square, piece: PieceCode) {
        let now = self.now();
        self.fw(address).set_piece(DgtSquare::from_square(square, Orientation::Normal), piece, now);
    }

    /// A move by hand: lift, 300 ms, place, 300 ms.
    fn play(&mut self, address: u16, from: Square, to: Square) {
        let piece = self.fws[usize::from(address - FIRST)].physical()
            [usize::from(DgtSquare::from_square(from, Orientation::Normal).index())];
        self.set(address, from, PieceCode::Empty);
        self.run(300);
        self.set(address, to, piece);
        self.run(300);
    }

    fn press(&mut self, address: u16, side: ClockSide) {
        let now = self.now();
        self.fw(address).press_clock(side, now);
    }

    fn confirmed(&self, address: u16) -> Vec<(String, Option<u32>)> {
        let Some(per) = self.per.get(&address) else { return Vec::new() };
        per.effects
            .iter()
            .filter_map(|(_, e)| match e {
                Effect::Move { state: MoveState::Confirmed, info } => Some((info.uci.to_string(), info.clk)),
                _ => None,
            })
            .collect()
    }

    fn found(&self) -> Vec<u16> {
        let mut v: Vec<u16> = self
            .events
            .iter()
            .filter_map(|(_, e)| match e {
                BusEvent::Found { address, .. } => Some(*address),
                _ => None,
            })
            .collect();
        v.sort_unstable();
        v.dedup();
        v
    }

    fn alerts(&self, address: u16) -> Vec<AlertCode> {
        self.per[&address]
            .effects
            .iter()
            .filter_map(|(_, e)| match e {
                Effect::Alert(a) => Some(a.code),
                _ => None,
            })
            .collect()
    }

    /// Attaches a clock (5 min + 2 s) to a board and starts it.
    fn clock(&mut self, address: u16) {
        let now = self.now();
        let fw = self.fw(address);
        fw.attach_clock(Some(Dgt3000::new(TimeControl::fischer(300, 2), ClockSide::Left, now)));
        fw.press_button(Button::Run, now);
    }
}

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
    assert!(stats.cycles > 10, "{stats:?}");
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

/// A planned game (the simulator's hands, clean) on one board of a chain of three, from
/// the scenario's own setup: every move and every `%clk` as the ground truth has them.
#[test]
fn a_planned_game_comes_out_exact_with_its_clock_times() {
    use dgt_hil_sim::hands::{PlanOptions, plan_game};
    use dgt_hil_sim::offline::apply_action;
    use dgt_hil_sim::scenario::board_codes;
    let pgn = "[Event \"t\"]\n[TimeControl \"300+2\"]\n[Result \"*\"]\n\n1. e4 e5 2. Nf3 Nc6 3. Bb5 a6 4. Ba4 Nf6 5. O-O Be7 *\n";
    let game = &dgt_hil_sim::pgn::parse_games(pgn)[0];
    let scenario = plan_game(game, &PlanOptions { start_delay_ms: 1_000, ..PlanOptions::default() });
    let truth = scenario.truth.clone().expect("truth");
    let mut c = Chain::new(3);
    c.run(6_000);
    // The scenario starts now on board FIRST, as the simulator starts it when the relay
    // polls the board.
    let start = c.now();
    let setup = scenario.setup.clone();
    let white = setup.clock.as_ref().map_or(ClockSide::Left, |k| k.white_side);
    {
        let fw = c.fw(FIRST);
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
        apply_action(c.fw(FIRST), &a.action, now, setup.orientation, white);
    }
    c.run(5_000);
    let got = c.confirmed(FIRST);
    let want: Vec<(String, Option<u32>)> = truth
        .moves
        .iter()
        .map(|m| (m.uci.clone(), if m.color == "white" { m.white_clock_s } else { m.black_clock_s }))
        .collect();
    assert_eq!(got, want);
}
