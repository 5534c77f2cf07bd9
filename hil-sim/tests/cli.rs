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
