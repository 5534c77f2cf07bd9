//! [`BoardSession`] end to end against the project's simulated board firmware
//! (`dgt_hil_sim::Firmware`), in virtual time: the session's `Effect::Write` bytes go to
//! the firmware, the firmware's bytes go to `on_bytes`, and time jumps to the earlier of
//! the two deadlines. Every effect is checked as it comes (see [`Line`]).

use dgt_core::{EndReason, FenText, GameResult, GameState, StartKind, position_from_fen};
use dgt_hil_sim::clock::{Button, Dgt3000, TimeControl};
use dgt_hil_sim::firmware::{BoardConfig, Firmware, rotated, start_position};
use dgt_protocol::{
    Bwtime, ClockSide, ClockStatus, ClockTime, ClockTimes, Command, CommandParser, DgtSquare, FieldUpdate,
    HostInput, Message, Orientation, PieceCode, SideFlags, SideReading,
};
use dgt_session::{
    AdminError, AlertCode, AlertLevel, BoardSession, Effect, LinkState, MoveState, SavedGame, SessionConfig,
};
use shakmaty::uci::UciMove;
use shakmaty::{Chess, Position, Square};

/// The game the caller was told, rebuilt from the effects: every confirmed move must be
/// legal where it is played and carry the FEN after it, every takeback the FEN it goes
/// back to.
#[derive(Default)]
struct Line {
    start: Chess,
    plies: Vec<UciMove>,
}

impl Line {
    fn position(&self, plies: usize) -> Chess {
        let mut pos = self.start.clone();
        for uci in &self.plies[..plies] {
            let m = uci.to_move(&pos).expect("the line replays");
            pos.play_unchecked(m);
        }
        pos
    }

    fn check(&mut self, e: &Effect) {
        match e {
            Effect::GameStarted { start_fen, new_record: true, .. } => {
                self.start = match start_fen {
                    Some(fen) => position_from_fen(fen).expect("a start FEN the session wrote").0,
                    None => Chess::default(),
                };
                self.plies.clear();
            }
            Effect::Move { state: MoveState::Confirmed, info } => {
                let before = usize::from(info.ply) - 1;
                assert!(before <= self.plies.len(), "ply {} after {} plies", info.ply, self.plies.len());
                let mut pos = self.position(before);
                let m = info
                    .uci
                    .to_move(&pos)
                    .unwrap_or_else(|_| panic!("{} illegal at ply {}", info.uci, info.ply));
                pos.play_unchecked(m);
                assert_eq!(info.fen, FenText::of(&pos), "the FEN after ply {} {}", info.ply, info.uci);
                self.plies.truncate(before);
                self.plies.push(info.uci);
            }
            Effect::TakenBack { to_ply, fen } => {
                let to = usize::from(*to_ply);
                assert!(to <= self.plies.len(), "taken back to {to} of {}", self.plies.len());
                assert_eq!(*fen, FenText::of(&self.position(to)), "the FEN after ply {to}");
                self.plies.truncate(to);
            }
            _ => {}
        }
    }

    fn ucis(&self) -> Vec<String> {
        self.plies.iter().map(|u| u.to_string()).collect()
    }
}

/// A session and a simulated board on either end of a wire, in virtual time.
struct Rig {
    fw: Firmware,
    board: BoardSession,
    config: SessionConfig,
    now: u64,
    /// False while the board is unplugged: nothing moves between them.
    plugged: bool,
    /// Every effect, with the time it came, in order.
    effects: Vec<(u64, Effect)>,
    /// What the session wrote, decoded as the board reads it.
    written: Vec<(u64, Command)>,
    parser: CommandParser,
    line: Line,
    /// How the pieces stand on the simulated board (for [`Rig::play`]).
    orientation: Orientation,
    /// A clock press to make once the board has sent its event log, before the session's
    /// next write reaches it (see [`Rig::pump`]).
    press_after_log: Option<ClockSide>,
    /// The board was asked for its event log and has answered (it answers at once).
    log_sent: bool,
}

impl Rig {
    /// A board with `position` and the session's default timing, not connected yet.
    fn new(position: [PieceCode; 64]) -> Rig {
        Rig::with(position, SessionConfig::default())
    }

    fn with(position: [PieceCode; 64], config: SessionConfig) -> Rig {
        Rig {
            fw: Firmware::new(BoardConfig::default(), position, 0),
            board: BoardSession::new(1, None, config),
            config,
            now: 0,
            plugged: false,
            effects: Vec::new(),
            written: Vec::new(),
            parser: CommandParser::new(),
            line: Line::default(),
            orientation: Orientation::Normal,
            press_after_log: None,
            log_sent: false,
        }
    }

    /// Opens the port: the handshake runs on a link, which the session takes once the
    /// board answered.
    fn connect(&mut self) {
        let mut link = dgt_session::Link::open(self.now, self.config.link);
        for _ in 0..4 {
            let out = link.take_output();
            self.heard(&out);
            self.fw.receive(&out, self.now);
            link.on_bytes(self.now, &self.fw.take_output());
            if link.is_identified() {
                break;
            }
        }
        assert!(link.is_identified(), "the board answered the handshake");
        self.plugged = true;
        self.board.attach(self.now, link, "sim");
        self.pump();
    }

    /// The cable is pulled: the port reports it at once.
    fn unplug(&mut self) {
        self.plugged = false;
        self.board.on_port_lost(self.now, "unplugged");
        self.pump();
    }

    /// Records what the session wrote; true if it asked for the board's event log.
    fn heard(&mut self, bytes: &[u8]) -> bool {
        let mut asked_log = false;
        for &b in bytes {
            match self.parser.push(b) {
                Some(HostInput::Command(c)) => {
                    asked_log |= c == Command::SendEeMoves;
                    self.written.push((self.now, c));
                }
                Some(other) => panic!("the session wrote {other:?}"),
                None => {}
            }
        }
        asked_log
    }

    /// Moves bytes both ways until both sides are quiet. A press armed in
    /// `press_after_log` is made between the board's event log and the next write.
    fn pump(&mut self) {
        loop {
            let effects: Vec<Effect> = self.board.drain_effects().collect();
            let mut moved = false;
            for e in effects {
                self.line.check(&e);
                if let Effect::Write(bytes) = &e {
                    assert!(!bytes.is_empty(), "an empty write");
                    let asked_log = self.heard(bytes);
                    if self.plugged {
                        if self.log_sent
                            && let Some(side) = self.press_after_log.take()
                        {
                            self.fw.press_clock(side, self.now);
                        }
                        self.fw.receive(bytes, self.now);
                        self.log_sent |= asked_log;
                        moved = true;
                    }
                }
                self.effects.push((self.now, e));
            }
            if self.plugged {
                let out = self.fw.take_output();
                if !out.is_empty() {
                    self.board.on_bytes(self.now, &out);
                    moved = true;
                }
            }
            if !moved {
                break;
            }
        }
    }

    /// Runs both sides up to `end`, from deadline to deadline.
    fn run_until(&mut self, end: u64) {
        loop {
            self.pump();
            let session = self.board.next_deadline();
            let board = if self.plugged { self.fw.next_deadline(self.now) } else { None };
            let at = board.map_or(session, |b| b.min(session)).max(self.now);
            if at > end {
                break;
            }
            self.now = at;
            if self.plugged {
                self.fw.tick(at);
            }
            self.board.poll(at);
            assert!(self.board.next_deadline() > at, "the session is due again at {at}: a busy loop");
        }
        self.now = end;
        if self.plugged {
            self.fw.tick(end);
        }
        self.board.poll(end);
        self.pump();
    }

    fn wait(&mut self, ms: u64) {
        self.run_until(self.now + ms);
    }

    fn square(&self, name: &str) -> DgtSquare {
        let sq = Square::from_ascii(name.as_bytes()).expect("a square name");
        DgtSquare::from_square(sq, self.orientation)
    }

    /// Puts `piece` on `square` (or lifts what is there, with `Empty`).
    fn set(&mut self, square: &str, piece: PieceCode) {
        let sq = self.square(square);
        self.fw.set_piece(sq, piece, self.now);
    }

    fn piece(&self, square: &str) -> PieceCode {
        self.fw.physical()[usize::from(self.square(square).index())]
    }

    /// A player makes a move by hand (captured piece off first, then lift and place), a
    /// quarter of a second per hand action, then the board stands still for `still` ms.
    fn play(&mut self, uci: &str, still: u64) {
        let (from, to) = (&uci[..2], &uci[2..4]);
        let piece = self.piece(from);
        if !self.piece(to).is_empty() {
            self.set(to, PieceCode::Empty);
            self.wait(250);
        }
        self.set(from, PieceCode::Empty);
        self.wait(250);
        self.set(to, piece);
        self.wait(still);
    }

    /// Plays `ucis`, each followed by `still` ms without a hand on the board.
    fn play_all(&mut self, ucis: &[&str], still: u64) {
        for u in ucis {
            self.play(u, still);
        }
    }

    /// Sends what the board says by itself (as if its firmware wrote it), at once.
    fn board_says(&mut self, m: &Message<'_>) {
        self.fw.inject_raw(&encode(m));
        self.pump();
    }

    /// Resumes a journaled game; the line starts from its plies.
    fn resume(&mut self, saved: &SavedGame) {
        self.line.plies =
            saved.plies.iter().map(|(u, _, _)| UciMove::from_ascii(u.as_bytes()).expect("uci")).collect();
        self.board.resume(self.now, saved);
        self.pump();
    }

    /// The non-write effects from index `from` on.
    fn told(&self, from: usize) -> Vec<Effect> {
        self.since(from).into_iter().filter(|e| !matches!(e, Effect::Write(_))).collect()
    }

    /// The plies the board shows (confirmed and provisional).
    fn live_plies(&self) -> usize {
        self.board.tracker().ply_count(dgt_core::View::Live)
    }

    fn game_starts(&self, from: usize) -> Vec<Effect> {
        self.since(from).into_iter().filter(|e| matches!(e, Effect::GameStarted { .. })).collect()
    }

    fn confirmed_moves(&self, from: usize) -> Vec<dgt_core::MoveInfo> {
        self.since(from)
            .into_iter()
            .filter_map(|e| match e {
                Effect::Move { state: MoveState::Confirmed, info } => Some(info),
                _ => None,
            })
            .collect()
    }

    /// The effects from index `from` on.
    fn since(&self, from: usize) -> Vec<Effect> {
        self.effects[from..].iter().map(|(_, e)| e.clone()).collect()
    }

    fn mark(&self) -> usize {
        self.effects.len()
    }

    /// The alerts raised, by code, oldest first.
    fn alerts(&self) -> Vec<AlertCode> {
        self.effects
            .iter()
            .filter_map(|(_, e)| match e {
                Effect::Alert(a) => Some(a.code),
                _ => None,
            })
            .collect()
    }

    /// The alerts among `codes`, oldest first.
    fn alerts_of(&self, codes: &[AlertCode]) -> Vec<AlertCode> {
        self.alerts().into_iter().filter(|c| codes.contains(c)).collect()
    }

    fn alert(&self, code: AlertCode) -> dgt_session::Alert {
        self.effects
            .iter()
            .find_map(|(_, e)| match e {
                Effect::Alert(a) if a.code == code => Some(a.clone()),
                _ => None,
            })
            .unwrap_or_else(|| panic!("no {code} alert"))
    }

    fn confirmed(&self) -> Vec<String> {
        self.line.ucis()
    }

    fn writes_of(&self, cmd: Command) -> usize {
        self.written.iter().filter(|(_, c)| *c == cmd).count()
    }
}

fn encode(m: &Message<'_>) -> Vec<u8> {
    let mut out = vec![0u8; m.encoded_len()];
    let n = m.encode(&mut out).expect("encodable");
    out.truncate(n);
    out
}

/// The position after `ucis` from the start.
fn after(ucis: &[&str]) -> Chess {
    let mut pos = Chess::default();
    for u in ucis {
        let m = UciMove::from_ascii(u.as_bytes()).expect("uci").to_move(&pos).expect("legal");
        pos.play_unchecked(m);
    }
    pos
}

/// `pos` as the pieces on a board set up normally (board-index order).
fn board_of(pos: &Chess) -> [PieceCode; 64] {
    let mut out = [PieceCode::Empty; 64];
    for sq in DgtSquare::ALL {
        out[usize::from(sq.index())] =
            PieceCode::from_option(pos.board().piece_at(sq.to_square(Orientation::Normal)));
    }
    out
}

/// A clock reading of 5 minutes a side with the status byte `status` (D0 running, D2
/// battery low, D5 no clock).
fn clock_reading(status: u8) -> Message<'static> {
    let side = SideReading { time: ClockTime::from_seconds(300), flags: SideFlags::default() };
    Message::Bwtime(Bwtime::Times(ClockTimes { right: side, left: side, status: ClockStatus(status) }))
}

fn battery(percent: u8, charging: bool) -> Vec<u8> {
    let payload = [percent, 0x7F, 0x7F, 0, 10, 0, 1, 0, if charging { 0x01 } else { 0x02 }];
    encode(&Message::Battery(dgt_protocol::Battery { payload: &payload }))
}

fn a_clock() -> Dgt3000 {
    Dgt3000::new(TimeControl::fischer(300, 2), ClockSide::Left, 0)
}

const CLOCK_HEALTH: [AlertCode; 4] =
    [AlertCode::ClockLost, AlertCode::ClockBack, AlertCode::ClockBatteryLow, AlertCode::ClockBatteryOk];
const CLOCK_PAUSE: [AlertCode; 2] = [AlertCode::ClockPaused, AlertCode::ClockRunning];

fn fen_after(ucis: &[&str]) -> FenText {
    FenText::of(&after(ucis))
}

// ----- the conversation ----------------------------------------------------------------

#[test]
fn attaching_asks_for_the_board_and_the_game_starts_from_its_dump() {
    let mut r = Rig::new(start_position());
    r.connect();
    r.wait(2_500);
    let writes: Vec<(u64, Vec<u8>)> = r
        .effects
        .iter()
        .filter_map(|(t, e)| match e {
            Effect::Write(b) => Some((*t, b.clone())),
            _ => None,
        })
        .collect();
    // Dump request, battery poll and clock version query; a keep-alive every second; the
    // version query again when the board (with no clock) did not answer it in 2 s. A
    // deadline at T is handled just after T (at T + 1 ms), after the bytes of T.
    assert_eq!(
        writes,
        [
            (0, vec![0x42, 0x4C, 0x2B, 0x03, 0x03, 0x09, 0x00]),
            (1, vec![0x45]),
            (1_001, vec![0x45]),
            (2_001, vec![0x45, 0x2B, 0x03, 0x03, 0x09, 0x00]),
        ]
    );
    assert_eq!(
        r.told(0),
        [
            Effect::Link(LinkState::Active),
            Effect::GameStarted {
                orientation: Orientation::Normal,
                kind: StartKind::Standard,
                start_fen: None,
                new_record: true
            },
            Effect::Battery(100),
        ]
    );
    assert_eq!(r.board.link_state(), LinkState::Active);
    assert_eq!(r.board.serial(), Some("12345"));
    assert_eq!(r.board.port(), Some("sim"));
}

#[test]
fn a_board_without_a_clock_is_told_once_the_version_query_is_given_up() {
    let mut r = Rig::new(start_position());
    r.connect();
    r.wait(30_000);
    // Three attempts, 2 s apart, then one alert; nothing more is sent to the clock.
    assert_eq!(r.writes_of(Command::Clock(dgt_protocol::ClockCommand::Version)), 3);
    assert_eq!(r.alerts(), [AlertCode::ClockCommand]);
    assert_eq!(r.alert(AlertCode::ClockCommand).level, AlertLevel::Warning);
}

#[test]
fn moves_are_confirmed_by_quiet_time_without_a_clock() {
    let mut r = Rig::new(start_position());
    r.connect();
    r.play_all(&["e2e4", "e7e5", "g1f3"], 3_000);
    assert_eq!(r.confirmed(), ["e2e4", "e7e5", "g1f3"]);
    // Each one provisional first, then confirmed; no clock values.
    let moves: Vec<(MoveState, u16)> = r
        .since(0)
        .into_iter()
        .filter_map(|e| match e {
            Effect::Move { state, info } => Some((state, info.ply)),
            _ => None,
        })
        .collect();
    use MoveState::{Confirmed, Provisional};
    assert_eq!(
        moves,
        [
            (Provisional, 1),
            (Confirmed, 1),
            (Provisional, 2),
            (Confirmed, 2),
            (Provisional, 3),
            (Confirmed, 3)
        ]
    );
    assert!(r.confirmed_moves(0).iter().all(|m| m.clk.is_none()));
    assert_eq!(r.confirmed_moves(0)[2].fen, fen_after(&["e2e4", "e7e5", "g1f3"]));
}

#[test]
fn a_clock_press_confirms_the_move_before_the_clock_changes() {
    let mut r = Rig::new(start_position());
    r.fw.attach_clock(Some(a_clock()));
    r.connect();
    r.wait(1_000);
    r.fw.press_button(Button::Run, r.now);
    r.wait(1_000);
    r.play("e2e4", 300);
    let mark = r.mark();
    r.fw.press_clock(ClockSide::Left, r.now);
    r.pump();
    // The press's reading: the move it confirms, then the clocks with Black's running.
    let told = r.told(mark);
    // White's display first (once a game), for the journal.
    let [
        Effect::ClockSide(ClockSide::Left),
        Effect::Move { state: MoveState::Confirmed, info },
        Effect::Clock(clock),
    ] = &told[..]
    else {
        panic!("{told:?}")
    };
    assert_eq!((info.ply, info.uci.to_string().as_str()), (1, "e2e4"));
    assert_eq!(info.fen, fen_after(&["e2e4"]));
    // 5 minutes, a second and a half used, 2 s added.
    assert_eq!(info.clk, Some(301));
    assert_eq!((clock.white, clock.running), (Some(301), Some(shakmaty::Color::Black)));
}

// ----- the board's battery and its clock ------------------------------------------------

#[test]
fn battery_alerts_have_hysteresis_and_the_charge_is_told_when_it_changes() {
    let mut config = SessionConfig::default();
    config.link.battery_poll_ms = 1_000;
    let mut r = Rig::with(start_position(), config);
    r.fw.set_battery_percent(Some(50));
    r.connect();
    r.wait(3_000);
    assert_eq!(r.alerts_of(&[AlertCode::BatteryLow, AlertCode::BatteryOk]), []);
    for (percent, charging) in
        [(19, false), (18, false), (15, false), (22, false), (24, true), (19, false), (26, false)]
    {
        // The board answers the polls with this charge; a charging board says so by itself.
        r.fw.set_battery_percent(Some(percent));
        if charging {
            r.fw.inject_raw(&battery(percent, charging));
        }
        r.wait(3_000);
    }
    // Low once for 19, 18 and 15; 22 is not enough to clear it, charging is; low again,
    // cleared by a charge over 25 %.
    assert_eq!(
        r.alerts_of(&[AlertCode::BatteryLow, AlertCode::BatteryOk]),
        [AlertCode::BatteryLow, AlertCode::BatteryOk, AlertCode::BatteryLow, AlertCode::BatteryOk]
    );
    let low = r.alert(AlertCode::BatteryLow);
    assert_eq!(low.level, AlertLevel::Warning);
    assert!(low.message.contains("19 %") && low.message.contains("charge or swap"), "{}", low.message);
    let ok = r.alert(AlertCode::BatteryOk);
    assert_eq!(ok.level, AlertLevel::Info);
    assert!(ok.message.contains("24 % and charging"), "{}", ok.message);
    // Issue 27, recipe 8: one low report among good ones (line noise that formed a valid
    // report) raises nothing; a low charge is alerted on its second reading.
    r.fw.set_battery_percent(Some(60));
    r.wait(3_000);
    let before = r.alerts_of(&[AlertCode::BatteryLow]).len();
    r.fw.inject_raw(&battery(3, false));
    r.wait(3_000);
    assert_eq!(r.alerts_of(&[AlertCode::BatteryLow]).len(), before, "one noisy reading");
    assert_eq!(r.board.battery(), Some(60));
    // Polled every second, told only when the charge changed.
    let told: Vec<u8> = r
        .since(0)
        .into_iter()
        .filter_map(|e| match e {
            Effect::Battery(p) => Some(p),
            _ => None,
        })
        .collect();
    assert_eq!(told, [50, 19, 18, 15, 22, 24, 19, 26, 60, 3, 60]);
    assert!(r.writes_of(Command::SendBatteryStatus) > 20);
    assert_eq!(r.board.battery(), Some(60));
}

#[test]
fn clock_battery_and_connection_alerts_come_once_per_change() {
    // A board without a clock: its first reading says so, and no clock was ever seen.
    let mut r = Rig::new(start_position());
    r.connect();
    r.wait(500);
    assert_eq!(r.alerts_of(&CLOCK_HEALTH), []);
    // Stopped, battery low, running with battery low, gone twice, back with battery low,
    // battery fine.
    for status in [0x00, 0x04, 0x05, 0x20, 0x20, 0x04, 0x00] {
        r.board_says(&clock_reading(status));
        r.wait(200);
    }
    assert_eq!(
        r.alerts_of(&CLOCK_HEALTH),
        [AlertCode::ClockBatteryLow, AlertCode::ClockLost, AlertCode::ClockBack, AlertCode::ClockBatteryOk]
    );
    assert_eq!(r.alert(AlertCode::ClockLost).level, AlertLevel::Warning);
    assert_eq!(r.alert(AlertCode::ClockBack).level, AlertLevel::Info);
}

#[test]
fn a_clock_unplugged_and_plugged_back_is_told_once_each_way() {
    let mut r = Rig::new(start_position());
    r.fw.attach_clock(Some(a_clock()));
    r.connect();
    r.wait(1_000);
    assert_eq!(r.alerts(), []);
    r.fw.clock_mut().unwrap().set_battery_low(true);
    r.wait(1_000);
    r.fw.attach_clock(None);
    r.wait(5_000);
    let mut clock = a_clock();
    clock.set_battery_low(true);
    r.fw.attach_clock(Some(clock));
    r.wait(1_000);
    r.fw.clock_mut().unwrap().set_battery_low(false);
    r.wait(1_000);
    assert_eq!(
        r.alerts(),
        [AlertCode::ClockBatteryLow, AlertCode::ClockLost, AlertCode::ClockBack, AlertCode::ClockBatteryOk]
    );
}

#[test]
fn a_stopped_clock_alerts_only_while_the_game_is_live() {
    let pause = SessionConfig::default().clock_pause_ms;
    let mut r = Rig::new([PieceCode::Empty; 64]);
    r.fw.attach_clock(Some(a_clock()));
    r.connect();
    // Before any game (an empty board): the clock is started and stopped, nothing said.
    r.fw.press_button(Button::Run, r.now);
    r.wait(1_000);
    r.fw.press_button(Button::Run, r.now);
    r.wait(pause * 2);
    assert_eq!(r.alerts_of(&CLOCK_PAUSE), []);
    // The game starts; the clock is started, then stopped.
    r.fw.set_position(start_position(), r.now);
    r.wait(1_000);
    assert_eq!(r.game_starts(0).len(), 1);
    r.fw.press_button(Button::Run, r.now);
    r.wait(2_000);
    r.fw.press_button(Button::Run, r.now);
    let stopped = r.now;
    // Not at once: a stop shorter than the limit is not a pause.
    r.wait(pause - 500);
    assert_eq!(r.alerts_of(&CLOCK_PAUSE), []);
    r.wait(1_000);
    assert_eq!(r.alerts_of(&CLOCK_PAUSE), [AlertCode::ClockPaused]);
    let at = r
        .effects
        .iter()
        .find(|(_, e)| matches!(e, Effect::Alert(a) if a.code == AlertCode::ClockPaused))
        .unwrap()
        .0;
    assert!(at >= stopped + pause && at <= stopped + pause + 1, "paused at {at}, stopped at {stopped}");
    let alert = r.alert(AlertCode::ClockPaused);
    assert_eq!(alert.level, AlertLevel::Warning);
    assert!(
        alert.message.contains("board 1") && alert.message.contains("set its result in the console"),
        "{alert:?}"
    );
    // Raised once.
    r.wait(pause * 2);
    assert_eq!(r.alerts_of(&CLOCK_PAUSE), [AlertCode::ClockPaused]);
    r.fw.press_button(Button::Run, r.now);
    r.wait(500);
    assert_eq!(r.alerts_of(&CLOCK_PAUSE), [AlertCode::ClockPaused, AlertCode::ClockRunning]);
    assert_eq!(r.alert(AlertCode::ClockRunning).level, AlertLevel::Info);
    // A short stop (restarted in time) says nothing.
    r.fw.press_button(Button::Run, r.now);
    r.wait(pause / 2);
    r.fw.press_button(Button::Run, r.now);
    r.wait(pause * 2);
    assert_eq!(r.alerts_of(&CLOCK_PAUSE), [AlertCode::ClockPaused, AlertCode::ClockRunning]);
    // The game is over: stopping the clock afterwards is normal.
    r.board.set_result(r.now, Some(GameResult::WhiteWins)).unwrap();
    r.fw.press_button(Button::Run, r.now);
    r.wait(pause * 2);
    assert_eq!(r.alerts_of(&CLOCK_PAUSE), [AlertCode::ClockPaused, AlertCode::ClockRunning]);
}

/// Issue 27, recipe 8: a game resumed after a restart whose clock is found stopped: the
/// pause is alerted as any other, and cleared when the clock runs again.
#[test]
fn a_stopped_clock_found_after_a_restart_is_a_pause() {
    let pause = SessionConfig::default().clock_pause_ms;
    let ucis = ["e2e4", "e7e5", "d2d4", "d7d5"];
    let saved = SavedGame {
        plies: ucis.iter().map(|u| (u.to_string(), None, None)).collect(),
        ..SavedGame::default()
    };
    let mut r = Rig::new(board_of(&after(&ucis)));
    r.fw.attach_clock(Some(a_clock()));
    r.resume(&saved);
    r.connect();
    r.wait(pause + 3_000);
    assert_eq!(r.alerts_of(&CLOCK_PAUSE), [AlertCode::ClockPaused]);
    r.fw.press_button(Button::Run, r.now);
    r.wait(1_000);
    assert_eq!(r.alerts_of(&CLOCK_PAUSE), [AlertCode::ClockPaused, AlertCode::ClockRunning]);
}

// ----- the port lost and back -----------------------------------------------------------

#[test]
fn a_lost_port_is_told_once_and_its_return_too() {
    let mut r = Rig::new(start_position());
    r.connect();
    r.play("e2e4", 3_000);
    let mark = r.mark();
    r.unplug();
    r.wait(20_000);
    let told = r.told(mark);
    assert!(
        matches!(&told[..], [Effect::Link(LinkState::NotResponding), Effect::Alert(a)]
        if a.code == AlertCode::NotResponding && a.level == AlertLevel::Error
            && a.message.contains("unplugged") && a.message.contains("12345")),
        "{told:?}"
    );
    assert_eq!(r.board.link_state(), LinkState::NotResponding);
    // Back on the same port, the same board.
    r.fw.take_output();
    let mark = r.mark();
    r.connect();
    let told = r.told(mark);
    assert!(
        matches!(&told[..], [Effect::Link(LinkState::Active), Effect::Alert(a), ..]
        if a.code == AlertCode::BoardBack && a.level == AlertLevel::Info && a.message.contains("sim")),
        "{told:?}"
    );
    r.play("e7e5", 3_000);
    assert_eq!(r.confirmed(), ["e2e4", "e7e5"]);
    assert_eq!(
        r.alerts_of(&[AlertCode::NotResponding, AlertCode::BoardBack]),
        [AlertCode::NotResponding, AlertCode::BoardBack]
    );
}

#[test]
fn a_board_that_stops_answering_is_lost_after_the_silence_limit() {
    let mut r = Rig::new(start_position());
    r.connect();
    r.wait(1_000);
    // The board hangs: the port stays open, nothing comes back.
    r.plugged = false;
    let hung = r.now;
    r.wait(20_000);
    let (at, alert) = r
        .effects
        .iter()
        .find_map(|(t, e)| match e {
            Effect::Alert(a) if a.code == AlertCode::NotResponding => Some((*t, a.clone())),
            _ => None,
        })
        .expect("not responding");
    let timing = SessionConfig::default().link;
    assert!(at > hung && at <= hung + timing.silence_ms + timing.keepalive_ms, "lost at {at}");
    assert!(alert.message.contains("no data"), "{}", alert.message);
    assert_eq!(r.alerts_of(&[AlertCode::NotResponding]).len(), 1);
    assert!(r.effects.iter().any(|(_, e)| *e == Effect::Link(LinkState::NotResponding)));
}

/// Moves made while the board was away that two move orders explain, and a board whose
/// memory shows nothing of them: the relay goes on from the position and tells the
/// operator where to check.
#[test]
fn a_reconstruction_without_the_boards_log_is_flagged_to_the_operator() {
    let mut r = Rig::new(start_position());
    r.connect();
    r.play_all(&["e2e4", "e7e5"], 3_000);
    assert_eq!(r.live_plies(), 2);
    r.unplug();
    r.wait(5_000);
    // A USB board has no power while unplugged: it comes back with Nf3 Nc6 Nc3 played,
    // and a memory that begins at its power-up (the simulator's memory would keep the
    // moves; a fresh firmware has none of them).
    let moved = after(&["e2e4", "e7e5", "g1f3", "b8c6", "b1c3"]);
    r.fw = Firmware::new(BoardConfig::default(), board_of(&moved), r.now);
    let mark = r.mark();
    r.connect();
    // The relay asks for the board's memory before it believes the position, and tells
    // the operator after it came.
    let asked = r.since(mark).iter().position(|e| matches!(e, Effect::Write(b) if b.contains(&0x49)));
    let alerted = r
        .since(mark)
        .iter()
        .position(|e| matches!(e, Effect::Alert(a) if a.code == AlertCode::MovesReconstructed));
    assert!(asked.is_some() && asked < alerted, "asked at {asked:?}, alerted at {alerted:?}");
    assert_eq!(r.writes_of(Command::SendEeMoves), 1);
    let alert = r.alert(AlertCode::MovesReconstructed);
    assert_eq!(alert.level, AlertLevel::Warning);
    assert!(alert.message.contains("from ply 3"), "{}", alert.message);
    assert_eq!(r.live_plies(), 5);
    r.wait(5_000);
    assert_eq!(r.confirmed().len(), 5);
    assert_eq!(r.line.position(5).board(), moved.board());
    assert_eq!(r.alerts_of(&[AlertCode::MovesReconstructed]).len(), 1);
}

#[test]
fn the_event_log_of_a_board_back_gives_the_moves_in_the_order_played() {
    let mut r = Rig::new(start_position());
    r.connect();
    r.play_all(&["e2e4", "e7e5"], 3_000);
    r.unplug();
    // A Bluetooth board out of range keeps its power and logs the moves made meanwhile.
    r.play_all(&["b1c3", "b8c6", "g1f3"], 2_000);
    r.fw.take_output();
    r.connect();
    r.wait(5_000);
    assert_eq!(r.writes_of(Command::SendEeMoves), 1);
    assert_eq!(r.confirmed(), ["e2e4", "e7e5", "b1c3", "b8c6", "g1f3"]);
    assert_eq!(r.alerts_of(&[AlertCode::MovesReconstructed, AlertCode::PositionMismatch]), []);
}

/// A game journaled by an earlier run (4 plies), then the relay restarts: the arbiter
/// takes back the last ply, made before the restart, and the game goes on.
#[test]
fn a_resumed_game_takes_back_a_move_made_before_the_restart() {
    let ucis = ["e2e4", "e7e5", "d2d4", "d7d5"];
    let saved = SavedGame {
        plies: ucis.iter().map(|u| (u.to_string(), None, None)).collect(),
        ..SavedGame::default()
    };
    let mut r = Rig::new(board_of(&after(&ucis)));
    r.resume(&saved);
    r.connect();
    r.wait(3_000);
    // The arbiter puts ...d5 back: the board shows the position after 3 plies.
    let mark = r.mark();
    r.set("d5", PieceCode::Empty);
    r.wait(250);
    r.set("d7", PieceCode::BlackPawn);
    r.wait(3_000);
    assert!(
        r.since(mark).contains(&Effect::TakenBack { to_ply: 3, fen: fen_after(&ucis[..3]) }),
        "{:?}",
        r.told(mark)
    );
    assert_eq!(r.confirmed(), ucis[..3]);
    // Black plays ...c5 instead: it is ply 4, confirmed by quiet time (no clock).
    let mark = r.mark();
    r.play("c7c5", 3_000);
    let moves = r.confirmed_moves(mark);
    assert_eq!(moves.len(), 1);
    assert_eq!((moves[0].ply, moves[0].san.to_string().as_str(), moves[0].clk), (4, "c5", None));
    assert_eq!(r.confirmed(), ["e2e4", "e7e5", "d2d4", "c7c5"]);
    // The record was there before: no game started.
    assert_eq!(r.game_starts(0), []);
}

// ----- a restart of the program ----------------------------------------------------------

/// A player makes `uci` and presses their side of the clock; the presser's display after
/// the press (their `%clk`).
fn play_and_press(r: &mut Rig, uci: &str, side: ClockSide) -> u32 {
    r.play(uci, 300);
    r.fw.press_clock(side, r.now);
    r.pump();
    r.wait(700);
    r.fw.clock().expect("a clock").view(side).display_s
}

/// What a caller journaled from the effects so far: the confirmed plies with their clocks,
/// and White's clock display.
fn journaled(r: &Rig) -> SavedGame {
    let mut saved = SavedGame::default();
    for (_, e) in &r.effects {
        match e {
            Effect::Move { state: MoveState::Confirmed, info } => {
                saved.plies.truncate(usize::from(info.ply) - 1);
                saved.plies.push((info.uci.to_string(), info.clk, info.emt));
            }
            Effect::ClockSide(side) => saved.white_clock = Some(*side),
            _ => {}
        }
    }
    saved
}

/// A clocked game on the rig, the clock started.
fn clocked_rig() -> Rig {
    let mut r = Rig::new(start_position());
    r.fw.attach_clock(Some(a_clock()));
    r.connect();
    r.wait(1_000);
    r.fw.press_button(Button::Run, r.now);
    r.wait(1_000);
    r
}

/// The program is killed: nothing reads the port any more (the board goes on by itself),
/// and a new session will be started.
fn kill(r: &mut Rig) {
    r.plugged = false;
    r.board = BoardSession::new(1, None, r.config);
}

/// White's display is told once, before the first move confirmed with it, so that a journal
/// that has the move has the side too.
#[test]
fn whites_clock_display_is_told_once_before_the_first_move_confirmed_with_it() {
    let mut r = clocked_rig();
    play_and_press(&mut r, "e2e4", ClockSide::Left);
    play_and_press(&mut r, "e7e5", ClockSide::Right);
    let told: Vec<Effect> = r
        .told(0)
        .into_iter()
        .filter(|e| matches!(e, Effect::ClockSide(_) | Effect::Move { state: MoveState::Confirmed, .. }))
        .collect();
    assert!(
        matches!(&told[..], [Effect::ClockSide(ClockSide::Left), Effect::Move { .. }, Effect::Move { .. }]),
        "{told:?}"
    );
    assert_eq!(journaled(&r).white_clock, Some(ClockSide::Left));
}

/// Issue 15, recipe 1: the program is killed after e4 e5 were journaled; White plays Nf3 and
/// presses while it is down, so the restarted session's first clock reading shows Black's
/// side running while its journal says White is to move. From that lever it read the sides
/// the wrong way round, and every later `%clk` carried the opponent's time. With White's
/// display journaled and given back, the clocks and every `%clk` are right.
#[test]
fn a_game_resumed_while_the_other_clock_runs_keeps_the_clock_sides() {
    let mut r = clocked_rig();
    let mut shown = vec![
        play_and_press(&mut r, "e2e4", ClockSide::Left),
        play_and_press(&mut r, "e7e5", ClockSide::Right),
    ];
    let saved = journaled(&r);
    assert_eq!(saved.white_clock, Some(ClockSide::Left));
    kill(&mut r);
    shown.push(play_and_press(&mut r, "g1f3", ClockSide::Left));
    r.wait(500);
    r.fw.take_output();
    r.resume(&saved);
    r.connect();
    r.wait(3_000);
    shown.push(play_and_press(&mut r, "b8c6", ClockSide::Right));
    shown.push(play_and_press(&mut r, "f1b5", ClockSide::Left));
    r.wait(3_000);
    assert_eq!(r.confirmed(), ["e2e4", "e7e5", "g1f3", "b8c6", "f1b5"]);
    let clks: Vec<Option<u32>> = journaled(&r).plies.iter().map(|(_, clk, _)| *clk).collect();
    assert_eq!(clks, shown.iter().map(|&s| Some(s)).collect::<Vec<_>>());
    let clock = r.board.tracker().clocks();
    let view = |side| r.fw.clock().expect("a clock").view(side).display_s;
    assert_eq!(
        (clock.white, clock.black, clock.running),
        (Some(view(ClockSide::Left)), Some(view(ClockSide::Right)), Some(shakmaty::Color::Black))
    );
}

/// Issue 15, recipe 4: the program is down while four plies are made (more than a board
/// reading can tell apart: Nc3 and Nf3 in either order). The restarted session keeps the
/// journal's last position as the board, as after an unplugged cable, reads the board's
/// event log, and replays it: every ply in the order played, each with its press's `%clk`;
/// no mismatch, no reconstruction.
#[test]
fn a_game_resumed_after_a_restart_gets_the_moves_made_meanwhile_from_the_boards_log() {
    let mut r = clocked_rig();
    let mut shown = vec![
        play_and_press(&mut r, "e2e4", ClockSide::Left),
        play_and_press(&mut r, "e7e5", ClockSide::Right),
    ];
    let saved = journaled(&r);
    kill(&mut r);
    for (uci, side) in [
        ("b1c3", ClockSide::Left),
        ("b8c6", ClockSide::Right),
        ("g1f3", ClockSide::Left),
        ("g8f6", ClockSide::Right),
    ] {
        shown.push(play_and_press(&mut r, uci, side));
    }
    r.wait(2_000);
    r.fw.take_output();
    let mark = r.mark();
    r.resume(&saved);
    r.connect();
    r.wait(15_000);
    assert_eq!(r.writes_of(Command::SendEeMoves), 1);
    assert_eq!(r.confirmed(), ["e2e4", "e7e5", "b1c3", "b8c6", "g1f3", "g8f6"]);
    let clks: Vec<Option<u32>> = journaled(&r).plies.iter().map(|(_, clk, _)| *clk).collect();
    assert_eq!(clks, shown.iter().map(|&s| Some(s)).collect::<Vec<_>>());
    assert_eq!(
        r.alerts_of(&[AlertCode::PositionMismatch, AlertCode::MovesReconstructed, AlertCode::NotResponding]),
        []
    );
    assert_eq!(r.game_starts(mark), []);
}

/// The same with the clock paused before the restart (as after a game's last move, or an
/// arbiter's stop): it reports nothing by itself, so the log is replayed before any clock
/// reading. The presses it holds still give their `%clk`.
#[test]
fn presses_in_the_log_give_their_clk_before_the_restarted_session_read_the_clock() {
    let mut r = clocked_rig();
    let mut shown = vec![
        play_and_press(&mut r, "e2e4", ClockSide::Left),
        play_and_press(&mut r, "e7e5", ClockSide::Right),
    ];
    let saved = journaled(&r);
    kill(&mut r);
    for (uci, side) in [("g1f3", ClockSide::Left), ("b8c6", ClockSide::Right), ("f1b5", ClockSide::Left)] {
        shown.push(play_and_press(&mut r, uci, side));
    }
    r.fw.press_button(Button::Run, r.now);
    r.wait(2_000);
    r.fw.take_output();
    r.resume(&saved);
    r.connect();
    r.wait(5_000);
    assert_eq!(r.confirmed(), ["e2e4", "e7e5", "g1f3", "b8c6", "f1b5"]);
    let clks: Vec<Option<u32>> = journaled(&r).plies.iter().map(|(_, clk, _)| *clk).collect();
    assert_eq!(clks, shown.iter().map(|&s| Some(s)).collect::<Vec<_>>());
}

/// The restarted session reads the board's log, and the last ply made while it was down is
/// pressed right after the board sent it, before the session's next request: the log has
/// the ply and no press, the clock readings that follow show the press. The ply gets the
/// mover's stopped display as its `%clk`, as any press seen live.
#[test]
fn a_press_between_the_log_and_the_first_clock_reading_gives_its_clk() {
    let mut r = clocked_rig();
    let mut shown = vec![
        play_and_press(&mut r, "e2e4", ClockSide::Left),
        play_and_press(&mut r, "e7e5", ClockSide::Right),
    ];
    let saved = journaled(&r);
    kill(&mut r);
    r.play("g1f3", 2_000);
    r.fw.take_output();
    r.resume(&saved);
    // The log says Nf3 and no press; White presses right after the board sent it.
    r.press_after_log = Some(ClockSide::Left);
    r.connect();
    assert_eq!(r.press_after_log, None, "the press was made");
    let clock = r.fw.clock().expect("a clock");
    assert!(clock.is_running() && clock.active_side() == ClockSide::Right, "Black's clock runs");
    shown.push(clock.view(ClockSide::Left).display_s);
    r.wait(3_000);
    shown.push(play_and_press(&mut r, "b8c6", ClockSide::Right));
    r.wait(3_000);
    assert_eq!(r.confirmed(), ["e2e4", "e7e5", "g1f3", "b8c6"]);
    let clks: Vec<Option<u32>> = journaled(&r).plies.iter().map(|(_, clk, _)| *clk).collect();
    assert_eq!(clks, shown.iter().map(|&s| Some(s)).collect::<Vec<_>>());
}

/// The last ply made while the program was down is pressed at the instant its piece lands:
/// the board logs the press before the landing (it logs a square when it scans it). The
/// restarted session's readings all show the opponent's clock running.
#[test]
fn a_press_logged_before_its_landing_while_down_gives_its_clk() {
    let mut r = clocked_rig();
    let mut shown = vec![
        play_and_press(&mut r, "e2e4", ClockSide::Left),
        play_and_press(&mut r, "e7e5", ClockSide::Right),
    ];
    let saved = journaled(&r);
    kill(&mut r);
    r.set("g1", PieceCode::Empty);
    r.wait(250);
    r.set("f3", PieceCode::WhiteKnight);
    r.fw.press_clock(ClockSide::Left, r.now);
    shown.push(r.fw.clock().expect("a clock").view(ClockSide::Left).display_s);
    r.wait(2_000);
    r.fw.take_output();
    r.resume(&saved);
    r.connect();
    r.wait(3_000);
    shown.push(play_and_press(&mut r, "b8c6", ClockSide::Right));
    r.wait(3_000);
    assert_eq!(r.confirmed(), ["e2e4", "e7e5", "g1f3", "b8c6"]);
    let clks: Vec<Option<u32>> = journaled(&r).plies.iter().map(|(_, clk, _)| *clk).collect();
    assert_eq!(clks, shown.iter().map(|&s| Some(s)).collect::<Vec<_>>());
}

/// A restart while the board's memory does not reach back to the journal's last position
/// (a USB board powered off meanwhile): the moves come from the position, and the operator
/// is told where to check, as after an unplugged cable.
#[test]
fn a_resumed_game_whose_board_forgot_the_moves_is_reconstructed_and_flagged() {
    let ucis = ["e2e4", "e7e5"];
    let saved = SavedGame {
        plies: ucis.iter().map(|u| (u.to_string(), None, None)).collect(),
        ..SavedGame::default()
    };
    let moved = after(&["e2e4", "e7e5", "g1f3", "b8c6", "b1c3"]);
    let mut r = Rig::new(board_of(&moved));
    r.resume(&saved);
    r.connect();
    r.wait(20_000);
    assert_eq!(r.writes_of(Command::SendEeMoves), 1);
    let alert = r.alert(AlertCode::MovesReconstructed);
    assert!(alert.message.contains("from ply 3"), "{}", alert.message);
    assert_eq!(r.confirmed().len(), 5);
    assert_eq!(r.line.position(5).board(), moved.board());
}

// ----- the operator ---------------------------------------------------------------------

#[test]
fn operator_actions_need_a_game() {
    let mut board = BoardSession::new(1, None, SessionConfig::default());
    assert_eq!(board.flip(0), Err(AdminError::NoGame));
    assert_eq!(board.set_result(0, Some(GameResult::Draw)), Err(AdminError::NoGame));
    assert_eq!(board.correct(0, 1, &["e2e4".to_string()]), Err(AdminError::NoGame));
    assert_eq!(board.drain_effects().count(), 0);
}

#[test]
fn flip_restarts_tracking_with_the_board_turned() {
    let mut r = Rig::new(start_position());
    r.connect();
    r.play("e2e4", 3_000);
    // The arbiter turns the board round and tells the relay.
    let turned = rotated(r.fw.physical());
    r.fw.set_position(turned, r.now);
    r.orientation = Orientation::Rotated;
    let mark = r.mark();
    assert_eq!(r.board.flip(r.now), Ok(true));
    r.pump();
    assert_eq!(r.told(mark).first(), Some(&Effect::Flipped { flipped: true }));
    assert!(r.board.flipped());
    r.wait(3_000);
    r.play("e7e5", 3_000);
    assert_eq!(r.confirmed(), ["e2e4", "e7e5"]);
    assert_eq!(r.alerts_of(&[AlertCode::PositionMismatch]), []);
    assert_eq!(r.game_starts(mark), []);
}

#[test]
fn an_operator_result_ends_the_game_and_clearing_it_goes_on() {
    let mut r = Rig::new(start_position());
    r.connect();
    // The board has no clock: the version query is given up (and told) first.
    r.wait(6_010);
    assert_eq!(r.alerts(), [AlertCode::ClockCommand]);
    r.play("e2e4", 3_000);
    // ...e5 is on the board, not yet certain.
    r.play("e7e5", 500);
    assert_eq!(r.live_plies(), 2);
    let mark = r.mark();
    r.board.set_result(r.now, Some(GameResult::WhiteWins)).unwrap();
    r.pump();
    assert_eq!(
        r.told(mark),
        [
            Effect::Retracted { ply: 2, fen: fen_after(&["e2e4"]) },
            Effect::GameEnded { result: GameResult::WhiteWins, reason: EndReason::Operator },
        ]
    );
    // Setting it again changes nothing; the board is not followed any more.
    let mark = r.mark();
    r.board.set_result(r.now, Some(GameResult::WhiteWins)).unwrap();
    r.wait(5_000);
    assert_eq!(r.told(mark), []);
    assert_eq!(r.confirmed(), ["e2e4"]);
    // The same score ruled a forfeit afterwards: told again, as unplayed.
    let mark = r.mark();
    let forfeit = dgt_core::Ruling { result: GameResult::WhiteWins, unplayed: true };
    r.board.set_ruling(r.now, Some(forfeit)).unwrap();
    r.pump();
    assert_eq!(
        r.told(mark),
        [Effect::GameEnded { result: GameResult::WhiteWins, reason: EndReason::Unplayed }]
    );
    // An arbiter's score replaces it.
    let mark = r.mark();
    r.board.set_ruling(r.now, Some("1/2-0".parse().unwrap())).unwrap();
    r.pump();
    assert_eq!(
        r.told(mark),
        [Effect::GameEnded { result: GameResult::WhiteHalf, reason: EndReason::Operator }]
    );
    // Cleared: the game goes on from its last confirmed move, and the board shows ...e5.
    let mark = r.mark();
    r.board.set_result(r.now, None).unwrap();
    r.pump();
    assert_eq!(r.told(mark).first(), Some(&Effect::ResultCleared));
    r.wait(3_000);
    r.play("g1f3", 3_000);
    assert_eq!(r.confirmed(), ["e2e4", "e7e5", "g1f3"]);
    assert_eq!(r.game_starts(mark), []);
}

#[test]
fn a_corrupted_piece_byte_on_the_line_ends_no_game() {
    let mut r = Rig::new(start_position());
    r.connect();
    r.play("e2e4", 3_000);
    assert_eq!(r.confirmed(), ["e2e4"]);
    // The recipe: a4 reads 7F (masked 0F: the black-wins magic piece), then 00 at
    // the board's next scan.
    let mark = r.mark();
    r.fw.inject_raw(&[0x8E, 0x00, 0x05, 0x20, 0x7F]);
    r.pump();
    r.wait(40);
    r.fw.inject_raw(&[0x8E, 0x00, 0x05, 0x20, 0x00]);
    r.pump();
    r.wait(3_000);
    assert!(!r.told(mark).iter().any(|e| matches!(e, Effect::GameEnded { .. })), "{:?}", r.told(mark));
    assert_eq!(r.alerts_of(&[AlertCode::ResultFromBoard]), []);
    r.play("e7e5", 3_000);
    assert_eq!(r.confirmed(), ["e2e4", "e7e5"]);
}

/// Issue 27, recipe 2, without a later update for the square (a real board sends none: its
/// square did not change): Black's e5 landing read with one bit flipped (07 -> 0F, the
/// black-wins magic piece), or a byte above 0x0F alone. The board's dump shows no such
/// piece: no result, and the game goes on.
#[test]
fn one_unconfirmed_magic_byte_ends_no_game() {
    for bytes in
        [&[0x8E, 0x00, 0x05, 0x0C, 0x00, 0x8E, 0x00, 0x05, 0x1C, 0x0F][..], &[0x8E, 0x00, 0x05, 0x20, 0x7F]]
    {
        let mut r = Rig::new(start_position());
        r.connect();
        r.play("e2e4", 3_000);
        let mark = r.mark();
        r.fw.inject_raw(bytes);
        r.pump();
        r.wait(5_000);
        assert!(
            !r.told(mark).iter().any(|e| matches!(e, Effect::GameEnded { .. })),
            "{bytes:02X?}: {:?}",
            r.told(mark)
        );
        assert_eq!(r.alerts_of(&[AlertCode::ResultFromBoard]), [], "{bytes:02X?}");
        r.play("e7e5", 3_000);
        r.play("g1f3", 3_000);
        assert_eq!(r.confirmed(), ["e2e4", "e7e5", "g1f3"], "{bytes:02X?}");
    }
}

#[test]
fn a_magic_piece_that_stands_ends_the_game_with_an_alert_saying_how_to_undo_it() {
    let mut r = Rig::new(start_position());
    r.connect();
    r.play("e2e4", 3_000);
    let mark = r.mark();
    r.set("d4", PieceCode::MagicBlackWins);
    r.wait(1_000);
    assert!(!r.told(mark).iter().any(|e| matches!(e, Effect::GameEnded { .. })), "not yet");
    r.wait(2_000);
    assert!(
        r.told(mark)
            .contains(&Effect::GameEnded { result: GameResult::BlackWins, reason: EndReason::MagicPiece }),
        "{:?}",
        r.told(mark)
    );
    let a = r.alert(AlertCode::ResultFromBoard);
    assert_eq!(a.level, AlertLevel::Warning);
    assert_eq!(a.squares, [Square::D4]);
    assert!(a.message.contains("magic piece (0F) on d4"), "{}", a.message);
    assert!(
        a.message.contains("0-1") && a.message.contains("open board 1, choose \"no result (clear)\""),
        "{}",
        a.message
    );
}

#[test]
fn kings_in_the_centre_end_the_game_with_an_alert_naming_their_squares() {
    let mut r = Rig::new(start_position());
    r.connect();
    r.play_all(&["e2e4", "e7e5"], 3_000);
    r.set("e1", PieceCode::Empty);
    r.wait(200);
    r.set("d5", PieceCode::WhiteKing);
    r.wait(200);
    r.set("e8", PieceCode::Empty);
    r.wait(200);
    r.set("d4", PieceCode::BlackKing);
    r.wait(3_000);
    assert_eq!(r.board.tracker().result(), Some((GameResult::Draw, EndReason::KingsInCentre)));
    assert_eq!(r.alerts_of(&[AlertCode::ResultFromBoard]), [AlertCode::ResultFromBoard]);
    let a = r.alert(AlertCode::ResultFromBoard);
    assert_eq!(a.squares, [Square::D5, Square::D4]);
    assert!(a.message.contains("the white king on d5 and the black king on d4"), "{}", a.message);
    assert!(a.message.contains("1/2-1/2"), "{}", a.message);
}

#[test]
fn a_finished_game_stays_finished_after_a_flip_or_a_correction() {
    let mut r = Rig::new(start_position());
    r.connect();
    r.play_all(&["e2e4", "e7e5"], 3_000);
    r.board.set_result(r.now, Some(GameResult::WhiteWins)).unwrap();
    r.pump();
    let mark = r.mark();
    // The operator turns the board there and back, and takes ply 2 out of the record.
    r.board.flip(r.now).unwrap();
    r.board.flip(r.now).unwrap();
    r.board.correct(r.now, 2, &[]).unwrap();
    r.wait(1_000);
    assert_eq!(r.confirmed(), ["e2e4"]);
    // Pieces moved after the result are no moves of the game.
    r.play("g1f3", 3_000);
    let moves: Vec<Effect> = r.since(mark).into_iter().filter(|e| matches!(e, Effect::Move { .. })).collect();
    assert_eq!(moves, []);
    assert_eq!(r.board.tracker().state(), GameState::Over);
    assert_eq!(r.confirmed(), ["e2e4"]);
    // Cleared, the game goes on from its record: the board shows ...e5 and Nf3 since.
    r.board.set_result(r.now, None).unwrap();
    r.wait(6_000);
    assert_eq!(r.confirmed(), ["e2e4", "e7e5", "g1f3"]);
}

#[test]
fn a_new_game_from_a_position_opens_its_record_at_once() {
    let mut r = Rig::new(start_position());
    r.connect();
    r.play("e2e4", 3_000);
    let fen = "4k3/8/8/8/8/8/4P3/4K3 w - - 0 1";
    let start = position_from_fen(fen).unwrap().0;
    assert!(matches!(r.board.new_game(r.now, Some("not a fen")), Err(AdminError::Fen(_))));
    let mark = r.mark();
    r.board.new_game(r.now, Some(fen)).unwrap();
    r.pump();
    let told = r.told(mark);
    assert_eq!(
        told.first(),
        Some(&Effect::GameStarted {
            orientation: Orientation::Normal,
            kind: StartKind::Fen,
            start_fen: Some(FenText::of(&start).to_string()),
            new_record: true,
        }),
        "{told:?}"
    );
    // The arbiter sets the position up: the record exists already, no other one opens
    // (the game is on, in the record opened for it).
    r.fw.set_position(board_of(&start), r.now);
    r.wait(3_000);
    let started = |new_record| Effect::GameStarted {
        orientation: Orientation::Normal,
        kind: StartKind::Fen,
        start_fen: Some(FenText::of(&start).to_string()),
        new_record,
    };
    assert_eq!(r.game_starts(mark), [started(true), started(false)]);
    r.play("e2e4", 3_000);
    let moves = r.confirmed_moves(mark);
    assert_eq!(moves.len(), 1);
    assert_eq!((moves[0].ply, moves[0].san.to_string().as_str()), (1, "e4"));
    assert_eq!(r.confirmed(), ["e2e4"]);
    // The game goes on from its own start after a restart of the tracker.
    r.board.set_result(r.now, Some(GameResult::Draw)).unwrap();
    r.board.set_result(r.now, None).unwrap();
    r.wait(1_000);
    r.play("e8d7", 3_000);
    assert_eq!(r.confirmed(), ["e2e4", "e8d7"]);
    assert_eq!(r.game_starts(mark).len(), 2);
    assert_eq!(r.alerts_of(&[AlertCode::Resume, AlertCode::PositionMismatch]), []);
}

#[test]
fn a_correction_replaces_the_moves_from_a_ply() {
    let mut r = Rig::new(start_position());
    r.connect();
    r.play_all(&["e2e4", "e7e5", "g1f3"], 3_000);
    // The knight went to c3, not f3: the arbiter puts it there and corrects ply 3.
    r.fw.set_position(board_of(&after(&["e2e4", "e7e5", "b1c3"])), r.now);
    let mark = r.mark();
    r.board.correct(r.now, 3, &["b1c3".to_string()]).unwrap();
    r.pump();
    let told = r.told(mark);
    let [Effect::TakenBack { to_ply: 2, fen }, Effect::Move { state: MoveState::Confirmed, info }, ..] =
        &told[..]
    else {
        panic!("{told:?}")
    };
    assert_eq!(*fen, fen_after(&["e2e4", "e7e5"]));
    assert_eq!((info.ply, info.uci.to_string().as_str(), info.clk, info.emt), (3, "b1c3", None, None));
    assert_eq!(info.fen, fen_after(&["e2e4", "e7e5", "b1c3"]));
    r.wait(3_000);
    assert_eq!(r.confirmed(), ["e2e4", "e7e5", "b1c3"]);
    r.play("b8c6", 3_000);
    assert_eq!(r.confirmed(), ["e2e4", "e7e5", "b1c3", "b8c6"]);
    assert_eq!(r.alerts_of(&[AlertCode::PositionMismatch]), []);
    // Refused, and nothing changes: an illegal move, a ply out of range, no UCI.
    let mark = r.mark();
    let moves = |m: &[&str]| m.iter().map(|s| s.to_string()).collect::<Vec<_>>();
    assert_eq!(
        r.board.correct(r.now, 2, &moves(&["e7e5", "e1e3"])),
        Err(AdminError::Illegal { ply: 3, uci: "e1e3".into() })
    );
    assert_eq!(r.board.correct(r.now, 0, &moves(&["e2e4"])), Err(AdminError::FromPly { max: 5 }));
    assert_eq!(r.board.correct(r.now, 6, &moves(&["g1f3"])), Err(AdminError::FromPly { max: 5 }));
    assert_eq!(r.board.correct(r.now, 1, &moves(&["e2"])), Err(AdminError::NotUci("e2".into())));
    r.pump();
    assert_eq!(r.told(mark), []);
    r.wait(3_000);
    assert_eq!(r.confirmed(), ["e2e4", "e7e5", "b1c3", "b8c6"]);
    assert_eq!(r.told(mark), []);
}

#[test]
fn a_correction_can_be_checked_without_changing_anything() {
    let mut r = Rig::new(start_position());
    r.connect();
    r.play_all(&["e2e4", "e7e5", "g1f3"], 3_000);
    let moves = |m: &[&str]| m.iter().map(|s| s.to_string()).collect::<Vec<_>>();
    let mark = r.mark();
    let checked = r.board.check_correction(r.now, 3, &moves(&["b1c3", "b8c6"])).unwrap();
    let told: Vec<(u16, String, String)> =
        checked.iter().map(|m| (m.ply, m.uci.to_string(), m.san.to_string())).collect();
    assert_eq!(told, [(3, "b1c3".into(), "Nc3".into()), (4, "b8c6".into(), "Nc6".into())]);
    assert_eq!(checked[1].fen, fen_after(&["e2e4", "e7e5", "b1c3", "b8c6"]));
    // The same refusals as `correct`.
    assert_eq!(
        r.board.check_correction(r.now, 2, &moves(&["e7e5", "e1e3"])),
        Err(AdminError::Illegal { ply: 3, uci: "e1e3".into() })
    );
    assert_eq!(r.board.check_correction(r.now, 5, &moves(&["g1f3"])), Err(AdminError::FromPly { max: 4 }));
    r.pump();
    assert_eq!(r.told(mark), []);
    assert_eq!(r.confirmed(), ["e2e4", "e7e5", "g1f3"]);
}

/// Issue 27, recipe 4 as the relay met it: a game whose clock was started in the start
/// position and nothing moves (a long first think, or a board that reports nothing).
#[test]
fn a_board_still_from_its_start_while_the_clock_runs_is_told() {
    let idle = SessionConfig::default().board_idle_ms;
    let mut r = clocked_rig();
    assert_eq!(r.game_starts(0).len(), 1);
    r.wait(idle + 5_000);
    assert_eq!(r.alerts_of(&[AlertCode::BoardIdle]), [AlertCode::BoardIdle]);
}

/// Issue 27 (a board of a chain relayed nothing, with no alert): a live game whose clock
/// runs while nothing on the board changes raises `board_idle` after two minutes, once,
/// and `board_active` when the board changes; a stopped clock counts nothing.
#[test]
fn a_board_still_for_minutes_while_its_clock_runs_is_told() {
    const IDLE: [AlertCode; 2] = [AlertCode::BoardIdle, AlertCode::BoardActive];
    let idle = SessionConfig::default().board_idle_ms;
    let mut r = clocked_rig();
    play_and_press(&mut r, "e2e4", ClockSide::Left);
    r.wait(idle - 5_000);
    assert_eq!(r.alerts_of(&IDLE), []);
    r.wait(10_000);
    assert_eq!(r.alerts_of(&IDLE), [AlertCode::BoardIdle]);
    let alert = r.alert(AlertCode::BoardIdle);
    assert_eq!(alert.level, AlertLevel::Warning);
    assert!(alert.message.contains("Black's clock runs"), "{alert:?}");
    r.wait(idle);
    assert_eq!(r.alerts_of(&IDLE), [AlertCode::BoardIdle], "raised once");
    play_and_press(&mut r, "e7e5", ClockSide::Right);
    assert_eq!(r.alerts_of(&IDLE), [AlertCode::BoardIdle, AlertCode::BoardActive]);
    // The clock stopped: no idle time counts.
    r.fw.press_button(Button::Run, r.now);
    r.wait(idle * 2);
    assert_eq!(r.alerts_of(&IDLE), [AlertCode::BoardIdle, AlertCode::BoardActive]);
}

#[test]
fn every_raw_board_is_kept_for_a_watcher_even_when_several_arrive_in_one_read() {
    let mut r = Rig::new(start_position());
    r.connect();
    assert_eq!(r.board.take_raw_boards().count(), 0, "nothing is kept unless watched");
    r.board.watch_raw_boards();
    let first: Vec<_> = r.board.take_raw_boards().collect();
    assert_eq!(first.len(), 1, "watching starts with the board as it stands");
    assert_eq!(first[0].raw, board_of(&Chess::default()).map(PieceCode::code));
    // A lift and a place in the same read of the port: two raw boards, in order.
    let (e2, e4) = (r.square("e2"), r.square("e4"));
    let mut bytes = encode(&Message::FieldUpdate(FieldUpdate::new(e2, PieceCode::Empty)));
    bytes.extend(encode(&Message::FieldUpdate(FieldUpdate::new(e4, PieceCode::WhitePawn))));
    r.board.on_bytes(r.now, &bytes);
    let seen: Vec<_> = r.board.take_raw_boards().collect();
    assert_eq!(seen.len(), 2, "{seen:?}");
    assert_eq!(seen[0].piece(e2), PieceCode::Empty);
    assert_eq!(seen[0].piece(e4), PieceCode::Empty, "the pawn in the air");
    assert_eq!(seen[1].piece(e4), PieceCode::WhitePawn);
    assert_eq!(r.board.raw_board(), Some(seen[1]));
    assert_eq!(r.board.take_raw_boards().count(), 0, "taken once");
}
