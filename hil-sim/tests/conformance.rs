//! Conformance over a real pty: every single-board command of the fact sheet, sent by a
//! host that opens the board's path like a serial port, answered as the fact sheet says.

use std::path::PathBuf;
use std::time::Duration;

use dgt_hil_sim::clock::{Button, TimeControl};
use dgt_hil_sim::firmware::{BoardConfig, BoardMode, start_position};
use dgt_hil_sim::scenario::Action;
use dgt_hil_sim::{HostPort, Received, SimBoard, SimConfig};
use dgt_protocol::command::run_flags;
use dgt_protocol::{ClockCommand, ClockSide, ClockTime, Command, EeEvent, PieceCode};
use shakmaty::{Color, Piece, Role, Square};

fn temp_link(tag: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("dgt-sim-conf-{}-{tag}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("temp dir");
    dir.join("board")
}

fn spawn(tag: &str, speed: f64) -> (SimBoard, HostPort) {
    let config = SimConfig {
        board: BoardConfig { scan_period_ms: 0, ..BoardConfig::with_serial(1025) },
        link: Some(temp_link(tag)),
        speed,
        clock: Some((TimeControl::fischer(300, 2), ClockSide::Left)),
        ..SimConfig::default()
    };
    let board = SimBoard::spawn(config).expect("spawn");
    assert!(board.link().is_some_and(|l| l.exists()), "the stable link exists");
    let port = HostPort::open(&board.path()).expect("open the link like a serial port");
    (board, port)
}

/// Waits until the board has read the host's mode command (the host's bytes and the
/// test's hand actions travel different ways).
fn wait_mode(board: &SimBoard, mode: BoardMode) {
    for _ in 0..200 {
        if board.status().expect("status").mode == mode {
            return;
        }
        std::thread::sleep(Duration::from_millis(5));
    }
    panic!("the board never reached {mode:?}");
}

const SHORT: Duration = Duration::from_millis(400);
const LONG: Duration = Duration::from_secs(3);

fn times(got: &[Received]) -> Vec<dgt_protocol::ClockTimes> {
    got.iter().filter_map(|r| if let Received::Times(t) = r { Some(*t) } else { None }).collect()
}

fn acks(got: &[Received]) -> Vec<[u8; 4]> {
    got.iter().filter_map(|r| if let Received::Ack(a) = r { Some(*a) } else { None }).collect()
}

fn clock(cmd: ClockCommand) -> Command {
    Command::Clock(cmd)
}

#[test]
fn powers_up_in_bus_mode_and_answers_every_command() {
    let (board, mut port) = spawn("answers", 1.0);
    // Silent at power-up, in bus mode.
    assert!(port.read_for(SHORT).expect("read").is_empty());
    assert_eq!(board.status().expect("status").mode, BoardMode::Bus);

    // The first single-board command is answered and leaves the board idle.
    let got = port.query(Command::SendVersion, LONG, |r| matches!(r, Received::Version(..))).expect("io");
    assert_eq!(got, vec![Received::Version(1, 80)]);
    assert_eq!(board.status().expect("status").mode, BoardMode::Idle);

    let got = port
        .query(Command::ReturnSerialNumber, LONG, |r| matches!(r, Received::SerialNumber(_)))
        .expect("io");
    assert_eq!(got, vec![Received::SerialNumber(b"01025".to_vec())]);
    let got =
        port.query(Command::ReturnBusAddress, LONG, |r| matches!(r, Received::BusAddress(_))).expect("io");
    assert_eq!(got, vec![Received::BusAddress(1025)]);
    let got = port
        .query(Command::ReturnLongSerialNumber, LONG, |r| matches!(r, Received::LongSerialNumber(_)))
        .expect("io");
    assert_eq!(got, vec![Received::LongSerialNumber(b"0000001025".to_vec())]);
    let got = port.query(Command::SendTrademark, LONG, |r| matches!(r, Received::Trademark(_))).expect("io");
    let [Received::Trademark(text)] = got.as_slice() else { panic!("{got:?}") };
    assert!(text.starts_with(b"Digital Game Technology\r\nCopyright (c)"));
    let got =
        port.query(Command::SendBatteryStatus, LONG, |r| matches!(r, Received::Battery(_))).expect("io");
    let [Received::Battery(payload)] = got.as_slice() else { panic!("{got:?}") };
    assert_eq!((payload.len(), payload[0]), (9, 100));

    let got = port.query(Command::SendBoard, LONG, |r| matches!(r, Received::BoardDump(_))).expect("io");
    assert_eq!(got, vec![Received::BoardDump(start_position().map(PieceCode::code))]);

    let got = port.query(Command::SendClock, LONG, |r| matches!(r, Received::Times(_))).expect("io");
    let t = times(&got);
    assert_eq!(t.len(), 1);
    assert_eq!(t[0].left.time, ClockTime::from_seconds(300));
    assert!(t[0].left.flags.time_per_move);
    assert!(!t[0].status.running() && !t[0].status.no_clock());
    // SEND_CLK and SEND_BRD do not change the mode.
    assert_eq!(board.status().expect("status").mode, BoardMode::Idle);

    // The EEPROM dump: fixed size, power-up sequence, the start position tag, EOF last.
    port.send(Command::SendEeMoves).expect("send");
    let got = port.read_until(LONG, |g| g.contains(&Received::Ee(EeEvent::Eof))).expect("io");
    assert_eq!(got.first(), Some(&Received::EeMovesStart(0x1F03)));
    let events: Vec<EeEvent> =
        got.iter().filter_map(|r| if let Received::Ee(e) = r { Some(*e) } else { None }).collect();
    assert_eq!(events.last(), Some(&EeEvent::Eof));
    assert!(events.contains(&EeEvent::PowerUp));
    assert!(events.contains(&EeEvent::BeginPos));
    assert_eq!(events.iter().filter(|e| matches!(e, EeEvent::Field { .. })).count(), 32);

    // Unknown bytes are ignored; the board still answers afterwards.
    port.send_bytes(&[0x00, 0x3F, 0x50, 0x4E, 0x7F]).expect("send");
    assert!(port.read_for(SHORT).expect("io").is_empty());
    let got = port.query(Command::SendVersion, LONG, |r| matches!(r, Received::Version(..))).expect("io");
    assert_eq!(got, vec![Received::Version(1, 80)]);

    // Idle: nothing sent by itself when a piece moves; reset keeps it idle.
    board.act(Action::Lift { square: Square::E2 }).expect("act");
    assert!(port.read_for(SHORT).expect("io").is_empty());
    port.send(Command::Reset).expect("send");
    assert!(port.read_for(SHORT).expect("io").is_empty());
    board.shutdown().expect("shutdown");
}

#[test]
fn update_board_mode_sends_fields_but_no_clock_traffic() {
    let (board, mut port) = spawn("44", 4.0);
    port.send(Command::SendUpdateBoard).expect("send");
    port.send(clock(ClockCommand::Version)).expect("send");
    wait_mode(&board, BoardMode::UpdateBoard);
    board.act(Action::StartClock).expect("act");
    board.act(Action::Lift { square: Square::E2 }).expect("act");
    board
        .act(Action::Place { square: Square::E4, piece: Piece { color: Color::White, role: Role::Pawn } })
        .expect("act");
    let got = port.read_for(Duration::from_millis(800)).expect("io");
    assert_eq!(
        got,
        vec![
            Received::Field { index: 52, raw: 0 },
            Received::Field { index: 36, raw: PieceCode::WhitePawn.code() }
        ],
        "field updates only: no times, no ack, in 0x44"
    );
    assert_eq!(board.status().expect("status").stats.acks_suppressed, 1);
    board.shutdown().expect("shutdown");
}

#[test]
fn update_mode_sends_times_at_least_once_a_second_and_acks() {
    let (board, mut port) = spawn("43", 1.0);
    port.send(Command::SendUpdate).expect("send");
    port.send(clock(ClockCommand::Version)).expect("send");
    let got = port.read_for(Duration::from_millis(2_300)).expect("io");
    // A stopped clock: nothing changes, still at least once a second.
    let t = times(&got);
    assert!((3..=4).contains(&t.len()), "{} readings in 2.3 s: {got:?}", t.len());
    assert!(t.iter().all(|x| !x.status.running()));
    assert_eq!(acks(&got), vec![[0x10, 0x09, 0x20, 0x00]], "version ack of a DGT 3000 2.0");
    board.shutdown().expect("shutdown");
}

#[test]
fn update_nice_sends_times_only_on_change() {
    let (board, mut port) = spawn("4b", 4.0);
    port.send(Command::SendUpdateNice).expect("send");
    wait_mode(&board, BoardMode::UpdateNice);
    let got = port.read_for(Duration::from_millis(900)).expect("io");
    assert_eq!(times(&got).len(), 1, "one reading when the mode starts, then silence: {got:?}");
    board.act(Action::StartClock).expect("act");
    // 4x speed: about four display changes per real second.
    let got = port.read_for(Duration::from_millis(1_000)).expect("io");
    let t = times(&got);
    assert!((3..=6).contains(&t.len()), "{} readings: {got:?}", t.len());
    for pair in t.windows(2) {
        assert_ne!(pair[0], pair[1], "every reading differs from the previous one");
    }
    assert!(t.iter().all(|x| x.status.running() && !x.status.right_high()));
    // A press moves the lever: reported at once, D1 set, increment added.
    board.act(Action::PressClock { color: Color::White }).expect("act");
    let got = port.read_until(LONG, |g| times(g).iter().any(|x| x.status.right_high())).expect("io");
    let pressed = times(&got).into_iter().find(|x| x.status.right_high()).expect("a reading after the press");
    assert_eq!(pressed.running_side(), Some(ClockSide::Right));
    assert!(pressed.left.time.total_seconds() >= 300 - 2, "{pressed:?}");
    board.shutdown().expect("shutdown");
}

#[test]
fn clock_commands_are_acked_and_kept() {
    let (board, mut port) = spawn("clock", 4.0);
    port.send(Command::SendUpdateNice).expect("send");
    wait_mode(&board, BoardMode::UpdateNice);
    let ack_of = |sub: u8| move |r: &Received| matches!(r, Received::Ack(a) if a[1] == sub);
    port.query(clock(ClockCommand::ascii("HELLO", 0)), LONG, ack_of(0x0C)).expect("io");
    let st = board.status().expect("status");
    assert_eq!(st.clock.as_ref().and_then(|c| c.text.clone()).as_deref(), Some("HELLO   "));
    port.query(clock(ClockCommand::End), LONG, ack_of(0x03)).expect("io");
    assert_eq!(board.status().expect("status").clock.and_then(|c| c.text), None);
    port.query(clock(ClockCommand::Beep { units: 4 }), LONG, ack_of(0x0B)).expect("io");
    let t = |s| ClockTime::from_seconds(s);
    let got = port
        .query(clock(ClockCommand::set_and_run(t(600), t(1200), run_flags::RIGHT_RUNS)), LONG, ack_of(0x0A))
        .expect("io");
    assert_eq!(acks(&got).last(), Some(&[0x10, 0x0A, 0, 0]));
    let got =
        port.read_until(LONG, |g| times(g).iter().any(|x| x.right.time.total_seconds() < 1200)).expect("io");
    let last = *times(&got).last().expect("times");
    assert_eq!(last.left.time.total_seconds(), 600);
    assert!(last.status.running());
    // A key pressed on the clock: an auto ack.
    board.act(Action::Button { button: Button::Ok }).expect("act");
    let got = port.read_until(LONG, |g| !acks(g).is_empty()).expect("io");
    assert_eq!(acks(&got), vec![[0x10, 0x88, 0x41, 0x35]]);
    // Idle: clock commands are carried out but not acked.
    port.send(Command::Reset).expect("send");
    port.send(clock(ClockCommand::ascii("QUIET", 0))).expect("send");
    assert!(acks(&port.read_for(SHORT).expect("io")).is_empty());
    assert_eq!(board.status().expect("status").clock.and_then(|c| c.text).as_deref(), Some("QUIET   "));
    board.shutdown().expect("shutdown");
}

#[test]
fn a_bus_mode_byte_switches_to_bus_mode() {
    let (board, mut port) = spawn("bus", 4.0);
    port.send(Command::SendUpdateBoard).expect("send");
    wait_mode(&board, BoardMode::UpdateBoard);
    port.send_bytes(&[0x87, 0x08, 0x01, 0x10]).expect("send");
    wait_mode(&board, BoardMode::Bus);
    board.act(Action::Lift { square: Square::A2 }).expect("act");
    assert!(port.read_for(SHORT).expect("io").is_empty(), "bus mode: no single-board reports");
    board.shutdown().expect("shutdown");
}

#[test]
fn no_clock_reports_d5() {
    let config = SimConfig { link: Some(temp_link("noclock")), clock: None, ..SimConfig::default() };
    let board = SimBoard::spawn(config).expect("spawn");
    let mut port = HostPort::open(&board.path()).expect("open");
    port.send(Command::SendUpdateNice).expect("send");
    port.send(clock(ClockCommand::Version)).expect("send");
    let got = port.query(Command::SendClock, LONG, |r| matches!(r, Received::Times(_))).expect("io");
    let got = [got, port.read_for(SHORT).expect("io")].concat();
    assert!(times(&got).iter().all(|t| t.status.no_clock()));
    assert!(acks(&got).is_empty(), "no clock, no ack");
    board.shutdown().expect("shutdown");
}

#[test]
fn reconnect_moves_the_link_to_a_new_pty() {
    let (board, mut port) = spawn("reconnect", 4.0);
    let first = board.slave_path();
    port.send(Command::SendUpdateBoard).expect("send");
    assert!(port.read_for(SHORT).expect("io").is_empty());
    board.act(Action::Disconnect { down_ms: 400 }).expect("act");
    let err = port.read_for(LONG).expect_err("the old port goes away");
    assert_eq!(err.kind(), std::io::ErrorKind::UnexpectedEof);
    let mut tries = 0;
    let mut port = loop {
        std::thread::sleep(Duration::from_millis(50));
        if let Ok(p) = HostPort::open(&board.path()) {
            break p;
        }
        tries += 1;
        assert!(tries < 60, "the link comes back");
    };
    assert_ne!(board.slave_path(), first);
    // After the replug the board is back in bus mode: the host must set a mode again.
    assert_eq!(board.status().expect("status").mode, BoardMode::Bus);
    let got = port.query(Command::SendBoard, LONG, |r| matches!(r, Received::BoardDump(_))).expect("io");
    assert_eq!(got.len(), 1);
    assert_eq!(board.status().expect("status").reconnects, 1);
    board.shutdown().expect("shutdown");
}

#[test]
fn a_fleet_gets_distinct_links_and_serials() {
    let dir = std::env::temp_dir().join(format!("dgt-sim-conf-{}-fleet", std::process::id()));
    let template = SimConfig { speed: 4.0, ..SimConfig::default() };
    let boards = dgt_hil_sim::spawn_fleet(3, &template, Some(&dir)).expect("fleet");
    let mut serials = Vec::new();
    for (i, b) in boards.iter().enumerate() {
        assert_eq!(b.link(), Some(dir.join(format!("board-{:02}", i + 1)).as_path()));
        let mut port = HostPort::open(&b.path()).expect("open");
        let got = port
            .query(Command::ReturnSerialNumber, LONG, |r| matches!(r, Received::SerialNumber(_)))
            .expect("io");
        serials.extend(got);
    }
    assert_eq!(
        serials,
        ["12345", "12346", "12347"].map(|s| Received::SerialNumber(s.as_bytes().to_vec())).to_vec()
    );
    for b in boards {
        b.shutdown().expect("shutdown");
    }
    assert!(!dir.join("board-01").exists(), "links go away with their boards");
}

#[test]
fn a_paced_line_runs_at_9600_baud() {
    let config = SimConfig { link: Some(temp_link("paced")), line_rate: Some(960), ..SimConfig::default() };
    let board = SimBoard::spawn(config).expect("spawn");
    let mut port = HostPort::open(&board.path()).expect("open");
    let start = std::time::Instant::now();
    for _ in 0..10 {
        port.send(Command::SendBoard).expect("send");
    }
    let got = port
        .read_until(Duration::from_secs(5), |g| {
            g.iter().filter(|r| matches!(r, Received::BoardDump(_))).count() == 10
        })
        .expect("io");
    let took = start.elapsed();
    assert_eq!(got.iter().filter(|r| matches!(r, Received::BoardDump(_))).count(), 10);
    // 670 bytes at 960 bytes a second: about 0.7 s.
    assert!(took >= Duration::from_millis(600) && took < Duration::from_millis(2_500), "{took:?}");
    board.shutdown().expect("shutdown");
}

#[test]
fn a_bursty_link_holds_the_boards_output_back_and_keeps_it_whole() {
    use dgt_hil_sim::transport::Bursts;
    // Every burst held exactly 300 ms: nothing can come sooner, however loaded the machine.
    let config = SimConfig {
        link: Some(temp_link("bursts")),
        bursts: Some(Bursts { min_ms: 300, max_ms: 300, seed: 1 }),
        ..SimConfig::default()
    };
    let board = SimBoard::spawn(config).expect("spawn");
    let mut port = HostPort::open(&board.path()).expect("open");
    port.keep_raw(true);
    let start = std::time::Instant::now();
    for _ in 0..10 {
        port.send(Command::SendBoard).expect("send");
    }
    port.send(Command::ReturnSerialNumber).expect("send");
    let got =
        port.read_until(LONG, |g| g.iter().any(|r| matches!(r, Received::SerialNumber(_)))).expect("io");
    assert!(start.elapsed() >= Duration::from_millis(300), "{:?}", start.elapsed());
    // Every answer, in order, none cut: ten dumps of the start position, then the serial.
    let dumps: Vec<_> =
        got.iter().filter_map(|r| if let Received::BoardDump(d) = r { Some(*d) } else { None }).collect();
    assert_eq!(dumps.len(), 10, "{got:?}");
    assert!(dumps.iter().all(|d| *d == start_position().map(PieceCode::code)), "{dumps:?}");
    assert!(matches!(got.last(), Some(Received::SerialNumber(_))), "{got:?}");
    assert_eq!(port.raw_log().len(), 10 * 67 + 8, "no byte lost or added");
    board.shutdown().expect("shutdown");
}
