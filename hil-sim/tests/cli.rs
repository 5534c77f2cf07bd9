//! The `dgt-sim` binary: clear errors, and a replay that writes its ground truth.

mod common;

use std::process::Command;

use dgt_hil_sim::GroundTruth;

fn dgt_sim(args: &[&str]) -> std::process::Output {
    Command::new(env!("CARGO_BIN_EXE_dgt-sim")).args(args).env_remove("RUST_BACKTRACE").output().expect("run")
}

fn stderr(o: &std::process::Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

#[test]
fn bad_inputs_get_one_clear_line() {
    let pgn = common::corpus("livechess-2.2.5-sample-round.pgn");
    let pgn = pgn.to_str().expect("utf-8 path");
    let o = dgt_sim(&["--pgn", pgn, "--profile", "sloppy"]);
    assert_eq!(o.status.code(), Some(2));
    assert!(
        stderr(&o).starts_with("dgt-sim: unknown profile \"sloppy\"; known profiles: clean,"),
        "{}",
        stderr(&o)
    );

    let o = dgt_sim(&["--pgn", "/nonexistent/games.pgn"]);
    assert_eq!(o.status.code(), Some(2));
    assert!(stderr(&o).contains("cannot read /nonexistent/games.pgn"), "{}", stderr(&o));

    let dir = std::env::temp_dir().join(format!("dgt-sim-cli-{}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("dir");
    let bad = dir.join("bad.pgn");
    std::fs::write(&bad, "this is not chess\n").expect("write");
    let o = dgt_sim(&["--pgn", bad.to_str().expect("utf-8")]);
    assert_eq!(o.status.code(), Some(2));
    assert!(stderr(&o).contains("is not a usable PGN file"), "{}", stderr(&o));

    let blocker = dir.join("file");
    std::fs::write(&blocker, "x").expect("write");
    let links = blocker.join("links");
    let o = dgt_sim(&["--pgn", pgn, "--links", links.to_str().expect("utf-8")]);
    assert_eq!(o.status.code(), Some(2));
    assert!(stderr(&o).contains(&format!("cannot create {}", links.display())), "{}", stderr(&o));
    assert_eq!(stderr(&o).lines().count(), 1);
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn a_replay_writes_ground_truth_equal_to_the_source() {
    let pgn = common::corpus("livechess-2.2.5-sample-round.pgn");
    let dir = std::env::temp_dir().join(format!("dgt-sim-cli-run-{}", std::process::id()));
    let truth_dir = dir.join("truth");
    let o = dgt_sim(&[
        "--boards",
        "2",
        "--pgn",
        pgn.to_str().expect("utf-8"),
        "--profile",
        "mixed",
        "--seed",
        "7",
        "--speed",
        "5000",
        "--hand-speed",
        "5000",
        "--no-wait",
        "--games-per-board",
        "1",
        "--links",
        dir.join("links").to_str().expect("utf-8"),
        "--truth",
        truth_dir.to_str().expect("utf-8"),
    ]);
    assert!(o.status.success(), "{}", stderr(&o));
    let stdout = String::from_utf8_lossy(&o.stdout);
    assert!(stdout.contains("board-01 /dev/pts/"), "{stdout}");
    let games = common::corpus_games("livechess-2.2.5-sample-round.pgn");
    let mut files: Vec<_> =
        std::fs::read_dir(&truth_dir).expect("truth dir").flatten().map(|e| e.path()).collect();
    files.sort();
    assert_eq!(files.len(), 2);
    for (i, f) in files.iter().enumerate() {
        let truth: GroundTruth =
            serde_json::from_str(&std::fs::read_to_string(f).expect("read")).expect("json");
        let sans: Vec<&str> = games[i].moves.iter().map(|m| m.san.as_str()).collect();
        assert_eq!(truth.san_moves(), sans);
        assert_eq!(truth.profile, "mixed");
        assert_eq!(truth.result, games[i].result);
    }
    assert!(!dir.join("links/board-01").exists(), "links are removed at the end");
    let _ = std::fs::remove_dir_all(&dir);
}

/// A two-ply hand script (`dgt-hand-script/1`).
const TINY_SCRIPT: &str = r#"{"format": "dgt-hand-script/1", "profile": "clean", "seed": "1",
 "board": {"rotated": false, "start_codes": [2,3,4,6,5,4,3,2, 1,1,1,1,1,1,1,1, 0,0,0,0,0,0,0,0,
   0,0,0,0,0,0,0,0, 0,0,0,0,0,0,0,0, 0,0,0,0,0,0,0,0, 7,7,7,7,7,7,7,7, 8,9,10,12,11,10,9,8]},
 "clock": {"white_side": "left", "initial_s": {"left": 300, "right": 300}, "increment_display": true},
 "steps": [{"dt_ms": 0, "kind": "start"},
   {"dt_ms": 0, "kind": "segment", "side": "left", "from_s": 300, "to_s": 299, "dur_ms": 80},
   {"dt_ms": 40, "kind": "set", "square": "e2", "code": 0, "reported": true},
   {"dt_ms": 20, "kind": "set", "square": "e4", "code": 1, "reported": true},
   {"dt_ms": 20, "kind": "press", "side": "left", "display_s": 302},
   {"dt_ms": 50, "kind": "set", "square": "e7", "code": 0, "reported": false},
   {"dt_ms": 20, "kind": "set", "square": "e5", "code": 7, "reported": true},
   {"dt_ms": 20, "kind": "press", "side": "right", "display_s": 303},
   {"dt_ms": 100, "kind": "stop"}],
 "truth": {"san": ["e4", "e5"], "uci": ["e2e4", "e7e5"], "clk": [302, 303], "clk_observable": [true, true],
   "result": "*", "expected_result": "*", "accept_results": ["*"], "result_signalled": false,
   "start_fen": "rnbqkbnr/pppppppp/8/8/8/8/PPPPPPPP/RNBQKBNR w KQkq - 0 1",
   "final_fen": "rnbqkbnr/pppp1ppp/8/4p3/4P3/8/PPPP1PPP/RNBQKBNR w KQkq - 0 2"}}"#;

#[test]
fn a_hand_script_replays_on_its_own_board() {
    let dir = std::env::temp_dir().join(format!("dgt-sim-cli-script-{}", std::process::id()));
    let scripts = dir.join("scripts");
    std::fs::create_dir_all(&scripts).expect("dir");
    std::fs::write(scripts.join("clean-s1-g0.json"), TINY_SCRIPT).expect("write");
    std::fs::write(scripts.join("clean-s1-g1.json"), TINY_SCRIPT).expect("write");
    let truth_dir = dir.join("truth");
    let o = dgt_sim(&[
        "--script",
        scripts.to_str().expect("utf-8"),
        "--no-wait",
        "--links",
        dir.join("links").to_str().expect("utf-8"),
        "--truth",
        truth_dir.to_str().expect("utf-8"),
    ]);
    assert!(o.status.success(), "{}", stderr(&o));
    let stdout = String::from_utf8_lossy(&o.stdout);
    assert!(stdout.contains("board-02 /dev/pts/"), "{stdout}");
    assert!(stdout.contains("script clean-s1-g1 done (2 plies, *, none)"), "{stdout}");
    let text =
        std::fs::read_to_string(truth_dir.join("board-01-clean-s1-g0-r0.json")).expect("truth written");
    let truth: GroundTruth = serde_json::from_str(&text).expect("truth JSON");
    assert_eq!(truth.san_moves(), ["e4", "e5"]);
    assert_eq!(truth.moves[1].black_clock_s, Some(303));
    assert_eq!(truth.expected_result.as_deref(), Some("*"));

    // A broken script: one line naming the file, exit code 2.
    let bad = dir.join("bad.json");
    std::fs::write(&bad, TINY_SCRIPT.replace("\"set\", \"square\": \"e2\"", "\"set\", \"square\": \"z2\""))
        .expect("write");
    let o = dgt_sim(&["--script", bad.to_str().expect("utf-8"), "--no-wait"]);
    assert_eq!(o.status.code(), Some(2));
    assert!(stderr(&o).contains("bad.json: step 2: bad square \"z2\""), "{}", stderr(&o));
    assert_eq!(stderr(&o).lines().count(), 1);
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn bus_puts_the_boards_on_one_chain_that_answers_a_broadcast_ping() {
    use dgt_protocol::bus::{BROADCAST, BusReplyKind};
    use dgt_protocol::{BusCommand, BusCommandKind};
    use std::io::{BufRead, BufReader};
    use std::process::Stdio;
    use std::time::Duration;

    let pgn = common::corpus("livechess-2.2.5-sample-round.pgn");
    let dir = std::env::temp_dir().join(format!("dgt-sim-cli-bus-{}", std::process::id()));
    let link = dir.join("chain");
    let mut child = Command::new(env!("CARGO_BIN_EXE_dgt-sim"))
        .args(["--bus", "--boards", "3", "--serial", "501", "--pgn", pgn.to_str().expect("utf-8")])
        .args(["--link", link.to_str().expect("utf-8"), "--keep"])
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .expect("spawn");
    let mut lines = BufReader::new(child.stdout.take().expect("stdout")).lines();
    let first = lines.next().and_then(Result::ok).unwrap_or_default();
    assert!(first.starts_with("bus of 3 boards: /dev/pts/"), "{first}");
    let board = lines.next().and_then(Result::ok).unwrap_or_default();
    assert!(board.contains("serial 00501, bus address 501"), "{board}");
    let mut port = dgt_hil_sim::HostPort::open(&link).expect("open the chain");
    port.send_bus(BusCommand::new(BusCommandKind::Ping, BROADCAST)).expect("send");
    let got = port.read_bus_until(Duration::from_millis(1_500), |_| false).expect("io");
    let mut found: Vec<u16> = got
        .iter()
        .filter_map(|r| match r {
            dgt_hil_sim::BusReceived::Reply { address, kind, .. } if *kind == BusReplyKind::Ping.id() => {
                Some(*address)
            }
            _ => None,
        })
        .collect();
    found.sort_unstable();
    assert_eq!(found, [501, 502, 503]);
    let _ = Command::new("kill").args(["-TERM", &child.id().to_string()]).status();
    let status = child.wait().expect("wait");
    assert!(status.success(), "{status:?}");
    assert!(!link.exists(), "the chain's link is removed at the end");
    let _ = std::fs::remove_dir_all(&dir);
}
