//! A chain of simulated boards on one pty, driven the way bus-mode software drives one:
//! broadcast discovery, addressed polls, a single-board command that every board obeys at
//! once, a board unplugged from the chain and put back.

use std::time::{Duration, Instant};

use dgt_hil_sim::firmware::BROADCAST_SPREAD_MS;
use dgt_hil_sim::{Action, BoardConfig, BusReceived, HostPort, SimChain, SimConfig};
use dgt_protocol::bus::{BROADCAST, BusReplyKind};
use dgt_protocol::ee::EeEvent;
use dgt_protocol::{BusCommand, BusCommandKind, EeEvents};
use shakmaty::Square;

fn chain(name: &str, n: usize) -> (SimChain, HostPort) {
    let link = std::env::temp_dir().join(format!("dgt-chain-{}-{name}", std::process::id()));
    let template = SimConfig { board: BoardConfig::with_serial(101), speed: 4.0, ..SimConfig::default() };
    let chain = SimChain::spawn(n, &template, Some(&link)).expect("chain");
    let port = HostPort::open(&chain.path()).expect("open");
    (chain, port)
}

fn replies(got: &[BusReceived], kind: BusReplyKind) -> Vec<(u16, Vec<u8>)> {
    got.iter()
        .filter_map(|r| match r {
            BusReceived::Reply { address, kind: k, data } if *k == kind.id() => {
                Some((*address, data.clone()))
            }
            _ => None,
        })
        .collect()
}

/// Sends `cmd` and waits for one reply of `kind` from its address; returns it and the time
/// from the command to the reply's last byte.
fn ask(port: &mut HostPort, cmd: BusCommand, kind: BusReplyKind) -> Option<(Vec<u8>, Duration)> {
    let sent = Instant::now();
    port.send_bus(cmd).expect("send");
    let got = port
        .read_bus_until(Duration::from_millis(500), |got| {
            replies(got, kind).iter().any(|(a, _)| *a == cmd.address)
        })
        .expect("io");
    let took = sent.elapsed();
    replies(&got, kind).into_iter().find(|(a, _)| *a == cmd.address).map(|(_, d)| (d, took))
}

#[test]
fn discovery_polls_and_replies_share_the_line() {
    let (chain, mut port) = chain("discover", 3);
    // Broadcast ping: every board answers within the 1.1 s spread.
    port.send_bus(BusCommand::new(BusCommandKind::Ping, BROADCAST)).expect("send");
    let got = port.read_bus_until(Duration::from_millis(u64::from(BROADCAST_SPREAD_MS) + 300), |_| false);
    let mut found: Vec<u16> =
        replies(&got.expect("io"), BusReplyKind::Ping).into_iter().map(|(a, _)| a).collect();
    found.sort_unstable();
    assert_eq!(found, [101, 102, 103], "line: {:?}", chain.stats());
    // Addressed polls: only that board answers, within the fact sheet's 80 ms.
    for address in [101u16, 102, 103] {
        let (data, took) =
            ask(&mut port, BusCommand::new(BusCommandKind::SendVersion, address), BusReplyKind::Version)
                .unwrap_or_else(|| panic!("version of {address}"));
        assert_eq!(data, [1, 80]);
        // 4 command bytes, the response time, 8 reply bytes: over 12 ms on a 9600-baud line.
        assert!(took >= Duration::from_millis(12) && took < Duration::from_millis(80), "{address}: {took:?}");
    }
    assert!(ask(&mut port, BusCommand::new(BusCommandKind::Ping, 104), BusReplyKind::Ping).is_none());
    // A dump is 70 bytes: about 73 ms of line time.
    let (dump, took) =
        ask(&mut port, BusCommand::new(BusCommandKind::SendBoard, 102), BusReplyKind::BoardDump)
            .expect("dump");
    assert_eq!(dump.len(), 64);
    assert!(took >= Duration::from_millis(70), "{took:?}");
    assert_eq!(chain.stats().collisions, 0);
    chain.shutdown().expect("shutdown");
}

#[test]
fn a_single_board_command_makes_every_board_talk_at_once() {
    let (chain, mut port) = chain("single", 3);
    // 0x45: every board answers its serial number within a few milliseconds of the others.
    port.send_bytes(&[0x45]).expect("send");
    let got = port.read_for(Duration::from_millis(400)).expect("io");
    let serials: Vec<_> = got
        .iter()
        .filter_map(|r| match r {
            dgt_hil_sim::Received::SerialNumber(s) => Some(String::from_utf8_lossy(s).into_owned()),
            _ => None,
        })
        .collect();
    assert!(chain.stats().collisions >= 1, "{:?}", chain.stats());
    assert!(serials.len() < 3, "three clean answers on a shared line: {serials:?}");
    // Back to bus mode (0x4A), and the boards answer one at a time again.
    port.send_bytes(&[0x4A]).expect("send");
    std::thread::sleep(Duration::from_millis(50));
    let _ = port.read_for(Duration::from_millis(100));
    assert!(ask(&mut port, BusCommand::new(BusCommandKind::Ping, 103), BusReplyKind::Ping).is_some());
    chain.shutdown().expect("shutdown");
}

#[test]
fn changes_follow_the_hands_and_an_unplugged_board_comes_back_with_its_log() {
    let (chain, mut port) = chain("unplug", 2);
    let changes = |port: &mut HostPort, address: u16| -> Option<Vec<EeEvent>> {
        ask(port, BusCommand::new(BusCommandKind::SendChanges, address), BusReplyKind::Update)
            .map(|(data, _)| EeEvents::new(&data).iter().collect())
    };
    let first = changes(&mut port, 102).expect("changes");
    assert!(first.contains(&EeEvent::PowerUp), "the first poll brings the power-up listing: {first:?}");
    assert_eq!(changes(&mut port, 102), Some(Vec::new()));
    let board = chain.board(1).expect("board 2");
    board.act(Action::Lift { square: Square::E2 }).expect("act");
    std::thread::sleep(Duration::from_millis(150));
    let lift = changes(&mut port, 102).expect("changes");
    assert!(matches!(lift.as_slice(), [EeEvent::Field { .. }]), "{lift:?}");
    // Unplugged: no answer; the other board goes on.
    board.unplug().expect("unplug");
    std::thread::sleep(Duration::from_millis(50));
    assert!(changes(&mut port, 102).is_none());
    assert!(changes(&mut port, 101).is_some());
    // A cable the scenario pulls meanwhile (back after 30 ms) does not plug it back: it is off
    // until plugged back by hand.
    board.act(Action::Disconnect { down_ms: 10 }).expect("act");
    std::thread::sleep(Duration::from_millis(150));
    assert!(changes(&mut port, 102).is_none(), "the scenario's reconnect plugged it back");
    board
        .act(Action::Place { square: Square::E4, piece: shakmaty::Piece::from_char('P').expect("P") })
        .expect("act");
    std::thread::sleep(Duration::from_millis(150));
    board.plug().expect("plug");
    std::thread::sleep(Duration::from_millis(50));
    let back = changes(&mut port, 102).expect("back");
    assert!(back.iter().any(|e| matches!(e, EeEvent::Field { piece, .. } if !piece.is_empty())), "{back:?}");
    assert!(back.contains(&EeEvent::PowerUp), "{back:?}");
    assert_eq!(board.status().expect("status").reconnects, 1);
    chain.shutdown().expect("shutdown");
}
