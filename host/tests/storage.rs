//! The data folder under faults, through the real `dgt-relay` process: a journal torn by a
//! crash, a journal whose header is damaged, a second relay on the same folder, PGN files
//! that cannot be written and then can.
#![allow(clippy::unwrap_used)]

mod common;

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, Instant};

use common::*;
use dgt_hil_sim::StartPolicy;
use dgt_hil_sim::hands::{GameEnd, PlanOptions, plan_game};

fn run_args(link: &Path, data: &Path) -> Vec<String> {
    ["run", "--port", link.to_str().unwrap(), "--data", data.to_str().unwrap()].map(str::to_owned).to_vec()
}

fn start(dir: &Path, args: &[String]) -> Relay {
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    Relay::start(dir, &args)
}

/// The relay-wide alerts of a snapshot with this code.
fn relay_alerts(snapshot: &serde_json::Value, code: &str) -> Vec<serde_json::Value> {
    snapshot["alerts"].as_array().into_iter().flatten().filter(|a| a["code"] == code).cloned().collect()
}

/// A journal of round 1, board 1 (serial 777) with `moves` (UCI, SAN) from the start.
fn journal_text(moves: &[(&str, &str)]) -> String {
    let mut text = String::from(
        r#"{"t":"game","round":1,"board":1,"serial":"777","event":"E","site":"S","time_control":null,"utc_date":"2025.01.01","utc_time":"00:00:00","pairing":{"white":{"name":"A"},"black":{"name":"B"}},"start_fen":null,"flipped":false}"#,
    );
    text.push('\n');
    for (i, (uci, san)) in moves.iter().enumerate() {
        text += &format!(r#"{{"t":"move","ply":{},"san":"{san}","uci":"{uci}","clk":300}}"#, i + 1);
        text.push('\n');
    }
    text
}

/// Issue 15, recipe 3: moves journaled, the relay killed, the journal's last line cut in
/// half (a write torn by a power loss), the relay restarted: the fragment is cut off (kept
/// in `game-1.journal.torn`) and reported before anything is appended, the ply it held comes
/// back from the board, and the game goes on. Killed and restarted once more, every move is
/// still there (before, the next record was glued to the fragment, and every later one was
/// out of sequence at the next start: only the plies before the tear remained).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_torn_journal_tail_is_cut_off_and_no_move_is_lost_at_the_next_restarts() {
    let dir = tmpdir("torn-tail");
    let game = &sample_games()[0];
    let board = sim_board(&dir, 20301, 10.0);
    let data = dir.join("data");
    let args = run_args(&board.path(), &data);
    let mut relay = start(&dir, &args);
    relay.wait_boards("active", Duration::from_secs(10), |v| v[0]["status"] == "active");
    let _handle = board.start_scenario(scenario(game), StartPolicy::WhenHostListens).unwrap();
    relay.wait_boards("2 moves", Duration::from_secs(60), |v| confirmed(v, 1).len() >= 2);
    relay.kill9();

    let journal = data.join("round-1/game-1.journal");
    let whole = std::fs::read(&journal).unwrap();
    let last = whole[..whole.len() - 1].iter().rposition(|&b| b == b'\n').unwrap() + 1;
    let cut = last + (whole.len() - last) / 2;
    std::fs::write(&journal, &whole[..cut]).unwrap();

    let mut relay = start(&dir, &args);
    let (_ws, snapshot) = ws_connect(&relay).await;
    let storage = relay_alerts(&snapshot, "storage");
    assert_eq!(storage.len(), 1, "{snapshot}");
    assert_eq!(storage[0]["level"], "warning");
    assert!(storage[0]["message"].as_str().unwrap().contains("round-1/game-1.journal"), "{}", storage[0]);
    let torn = data.join("round-1/game-1.journal.torn");
    assert_eq!(std::fs::read(&torn).unwrap(), [&whole[last..cut], b"\n"].concat());
    assert_eq!(std::fs::read(&journal).unwrap()[..], whole[..last]);

    let v = relay.wait_boards("6 moves", Duration::from_secs(90), |v| confirmed(v, 1).len() >= 6);
    let before = confirmed(&v, 1);
    relay.kill9();
    // What the next start reads: every move published before the kill.
    let kept = dgt_relay::store::replay(&journal).unwrap().unwrap();
    let kept: Vec<&str> = kept.moves.iter().map(|m| m.san.as_str()).collect();
    assert!(kept.len() >= before.len(), "published {before:?}, journaled {kept:?}");
    assert_eq!(kept, source_sans(game)[..kept.len()]);
    let relay = start(&dir, &args);
    let v = relay
        .wait_boards("the journaled moves", Duration::from_secs(10), |v| confirmed(v, 1).len() >= kept.len());
    let after = confirmed(&v, 1);
    assert_eq!(after, source_sans(game)[..after.len()], "{}", relay.logs());
    let (_ws, snapshot) = ws_connect(&relay).await;
    assert_eq!(relay_alerts(&snapshot, "storage"), [] as [serde_json::Value; 0], "nothing torn this time");
}

/// Issue 15, recipe 9: a journal whose first record is damaged is not loaded, a relay-wide
/// `storage` error names it, and the file is left byte for byte as it was.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_journal_with_a_damaged_header_is_reported_and_left_untouched() {
    let dir = tmpdir("damaged-header");
    let data = dir.join("data");
    std::fs::create_dir_all(data.join("round-1")).unwrap();
    let good = journal_text(&[("e2e4", "e4"), ("e7e5", "e5")]);
    let damaged = good.replacen("\"round\":1", "\"rou\u{1}", 1);
    let journal = data.join("round-1/game-1.journal");
    std::fs::write(&journal, &damaged).unwrap();
    let args = run_args(&dir.join("no-board"), &data);
    let mut relay = start(&dir, &args);
    let (_ws, snapshot) = ws_connect(&relay).await;
    let storage = relay_alerts(&snapshot, "storage");
    assert_eq!(storage.len(), 1, "{snapshot}");
    assert_eq!((&storage[0]["level"], &storage[0]["board"]), (&"error".into(), &serde_json::Value::Null));
    assert!(storage[0]["message"].as_str().unwrap().contains("round-1/game-1.journal"), "{}", storage[0]);
    assert!(relay.json("/api/boards").as_array().unwrap().is_empty());
    assert!(relay.terminate().success());
    assert_eq!(std::fs::read_to_string(&journal).unwrap(), damaged);
}

/// Issue 15, recipe 6: a second relay on a data folder in use is refused at once, naming
/// the folder and the first relay's PID, and writes nothing there; once the first is gone
/// (even by SIGKILL) the folder opens.
#[test]
fn a_second_relay_on_the_same_data_folder_is_refused() {
    let dir = tmpdir("two-relays");
    let data = dir.join("data");
    std::fs::create_dir_all(data.join("round-1")).unwrap();
    std::fs::write(data.join("round-1/game-1.journal"), journal_text(&[("e2e4", "e4")])).unwrap();
    let args = run_args(&dir.join("no-board"), &data);
    let mut first = start(&dir, &args);
    let games = data.join("round-1/games.pgn");
    let deadline = Instant::now() + Duration::from_secs(10);
    while !games.exists() {
        assert!(Instant::now() < deadline, "the first relay wrote no PGN");
        std::thread::sleep(Duration::from_millis(20));
    }
    let written = std::fs::read(&games).unwrap();
    let modified = std::fs::metadata(&games).unwrap().modified().unwrap();

    let err_path = dir.join("second-stderr.log");
    let mut second = Command::new(relay_bin())
        .args(&args)
        .args(["--listen", "127.0.0.1:0"])
        .env("DGT_RELAY_TOKEN", TOKEN)
        .stdout(std::process::Stdio::null())
        .stderr(std::fs::File::create(&err_path).unwrap())
        .spawn()
        .unwrap();
    let deadline = Instant::now() + Duration::from_secs(10);
    let status = loop {
        if let Some(s) = second.try_wait().unwrap() {
            break Some(s);
        }
        if Instant::now() > deadline {
            let _ = second.kill();
            let _ = second.wait();
            break None;
        }
        std::thread::sleep(Duration::from_millis(20));
    };
    let stderr = std::fs::read_to_string(&err_path).unwrap();
    assert!(status.is_some_and(|s| !s.success()), "the second relay ran on the folder: {stderr}");
    assert!(stderr.contains(&data.display().to_string()), "{stderr}");
    assert!(stderr.contains(&format!("PID {}", first.child.id())), "{stderr}");
    assert_eq!(std::fs::read(&games).unwrap(), written);
    assert_eq!(std::fs::metadata(&games).unwrap().modified().unwrap(), modified);

    first.kill9();
    let second = start(&dir, &args);
    // The relay can answer before the board that resumes the journal has read it.
    let deadline = Instant::now() + Duration::from_secs(10);
    let mut moves = confirmed(&second.json("/api/boards"), 1);
    while moves.is_empty() && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(20));
        moves = confirmed(&second.json("/api/boards"), 1);
    }
    assert_eq!(moves, ["e4"]);
}

/// Issue 15, recipe 11: the relay-wide `storage` error raised when the PGN files cannot be
/// written is followed on the feed by its `storage` info once they are written again, and
/// is cleared: a client connecting after that sees the info, not the error.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_pgn_write_failure_and_its_recovery_both_reach_the_feed() {
    let dir = tmpdir("pgn-recovery");
    let data = dir.join("data");
    std::fs::create_dir_all(data.join("round-1")).unwrap();
    std::fs::write(data.join("round-1/game-1.journal"), journal_text(&[("e2e4", "e4")])).unwrap();
    // A folder where the game's PGN file goes: renaming the written file onto it fails.
    let blocker: PathBuf = data.join("round-1/game-1.pgn");
    std::fs::create_dir_all(blocker.join("in-the-way")).unwrap();
    let args = run_args(&dir.join("no-board"), &data);
    let relay = start(&dir, &args);
    let (mut ws, snapshot) = ws_connect(&relay).await;
    let deadline = Instant::now() + Duration::from_secs(10);
    let mut alerts: Vec<serde_json::Value> = relay_alerts(&snapshot, "storage");
    while alerts.is_empty() {
        let f = ws_next(&mut ws, deadline.saturating_duration_since(Instant::now())).await;
        if f["type"] == "alert" && f["alert"]["code"] == "storage" {
            assert_eq!(f["board"], serde_json::Value::Null, "{f}");
            alerts.push(f["alert"].clone());
        }
    }
    assert_eq!(alerts[0]["level"], "error", "{alerts:?}");
    std::fs::remove_dir_all(&blocker).unwrap();
    let deadline = Instant::now() + Duration::from_secs(10);
    loop {
        let f = ws_next(&mut ws, deadline.saturating_duration_since(Instant::now())).await;
        if f["type"] == "alert" && f["alert"]["code"] == "storage" {
            assert_eq!(
                (&f["board"], &f["alert"]["level"]),
                (&serde_json::Value::Null, &"info".into()),
                "{f}"
            );
            break;
        }
    }
    // A client that connects now is not shown the error: it was cleared.
    let (_, snapshot) = ws_connect(&relay).await;
    // (The relay's port is a path with no device: its own alert is another matter.)
    let levels: Vec<&serde_json::Value> = snapshot["alerts"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|a| a["code"] == "storage")
        .map(|a| &a["level"])
        .collect();
    assert_eq!(levels, [&"info".into()] as [&serde_json::Value; 1], "{snapshot}");
    assert!(std::fs::read_to_string(&blocker).unwrap().contains("1. e4"));
}

/// `%clk` of each confirmed move of board 1 in `/api/boards`, against the clock's display
/// after each press in the scenario's truth (within a second): `(ply, got, shown)` for
/// every difference.
fn clk_errors(
    boards: &serde_json::Value,
    truth: &dgt_hil_sim::GroundTruth,
) -> Vec<(usize, Option<u64>, u32)> {
    let moves = boards[0]["moves"].as_array().cloned().unwrap_or_default();
    moves
        .iter()
        .enumerate()
        .filter_map(|(i, m)| {
            let t = &truth.moves[i];
            let shown = if t.color == "white" { t.white_clock_s } else { t.black_clock_s }?;
            let got = m["clk"].as_u64();
            (got.is_none_or(|g| g.abs_diff(u64::from(shown)) > 1)).then_some((i + 1, got, shown))
        })
        .collect()
}

/// Issue 15's fault suite, a full disk: the relay runs under a 3,000-byte file-size limit
/// (`prlimit`, no root needed), which its journal reaches after a dozen moves. From then on
/// the confirmed moves wait in memory behind a `storage` error and none is published; the
/// limit lifted, they are journaled and published in order, a `storage` info says so, and
/// the game ends exact (moves, clocks, result) with every move in the journal. (A file-size limit reached by a write
/// is SIGXFSZ, which killed the relay before it caught it.)
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_full_disk_holds_the_moves_back_and_loses_none() {
    let dir = tmpdir("full-disk");
    let game = &sample_games()[0];
    // Ended on the board (kings in the centre), so that the relay can know the result.
    let options = PlanOptions { start_delay_ms: 500, end: GameEnd::KingsInCentre, ..PlanOptions::default() };
    let plan = plan_game(game, &options);
    let truth = plan.truth.clone().unwrap();
    let board = dgt_hil_sim::SimBoard::spawn(dgt_hil_sim::SimConfig {
        board: dgt_hil_sim::BoardConfig::with_serial(20302),
        link: Some(dir.join("board-20302")),
        speed: 20.0,
        hand_speed: 3.0,
        ..dgt_hil_sim::SimConfig::default()
    })
    .unwrap();
    let data = dir.join("data");
    let args = run_args(&board.path(), &data);
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    let mut relay = Relay::start_under(&dir, &["prlimit", "--fsize=3000:unlimited", "--"], &args);
    relay.wait_boards("active", Duration::from_secs(10), |v| v[0]["status"] == "active");
    let (mut ws, _) = ws_connect(&relay).await;
    let _handle = board.start_scenario(plan, StartPolicy::WhenHostListens).unwrap();

    // The journal reaches the limit: an error, and the moves stop being published.
    let deadline = Instant::now() + Duration::from_secs(90);
    loop {
        let f = ws_next(&mut ws, deadline.saturating_duration_since(Instant::now())).await;
        if f["type"] == "alert" && f["alert"]["code"] == "storage" {
            assert_eq!((&f["board"], &f["alert"]["level"]), (&1.into(), &"error".into()), "{f}");
            break;
        }
    }
    let published = confirmed(&relay.json("/api/boards"), 1);
    let journal = data.join("round-1/game-1.journal");
    let on_disk = dgt_relay::store::replay(&journal).unwrap().unwrap().moves.len();
    assert_eq!(published.len(), on_disk, "only journaled moves are published");
    std::thread::sleep(Duration::from_secs(6));
    let v = relay.json("/api/boards");
    assert_eq!(confirmed(&v, 1), published, "nothing published while the disk is full");
    assert!(std::fs::metadata(&journal).unwrap().len() <= 3_000);

    // Space again: everything waiting is written and published, in order.
    let pid = relay.child.id().to_string();
    let lifted =
        Command::new("prlimit").args(["--pid", &pid, "--fsize=unlimited:unlimited"]).status().unwrap();
    assert!(lifted.success());
    let deadline = Instant::now() + Duration::from_secs(10);
    loop {
        let f = ws_next(&mut ws, deadline.saturating_duration_since(Instant::now())).await;
        if f["type"] == "alert" && f["alert"]["code"] == "storage" {
            assert_eq!((&f["board"], &f["alert"]["level"]), (&1.into(), &"info".into()), "{f}");
            break;
        }
    }
    // The whole game, its clocks and its result.
    let want = truth.moves.len();
    let v = relay.wait_boards("the game's end", Duration::from_secs(90), |v| {
        confirmed(v, 1).len() >= want && v[0]["result"] == truth.result.as_str()
    });
    let got = confirmed(&v, 1);
    assert_eq!(got, source_sans(game));
    assert_eq!(clk_errors(&v, &truth), []);
    relay.kill9();
    let kept = dgt_relay::store::replay(&journal).unwrap().unwrap();
    assert!(kept.moves.len() >= got.len(), "journaled {} of {} published", kept.moves.len(), got.len());
}
