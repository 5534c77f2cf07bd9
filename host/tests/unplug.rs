//! Unplugging a simulated board (real ptys) under the real `dgt-relay` process: the relay
//! notices the vanished device at once, reopens it when it is back, and loses no move,
//! also when more plies were made while it was away than the tracker can search.
#![allow(clippy::unwrap_used)]

mod common;

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use common::*;
use dgt_hil_sim::{Action, Scenario, StartPolicy, TimedAction};

/// Virtual time of the clock press that ends ply `ply` (1-based).
fn press_ms(s: &Scenario, ply: usize) -> u64 {
    let truth = s.truth.as_ref().unwrap();
    truth.moves[ply - 1].press_at_ms.unwrap()
}

/// Virtual time of the first action after `t`.
fn next_action_after(s: &Scenario, t: u64) -> u64 {
    s.actions.iter().map(|a| a.at_ms).find(|&at| at > t).unwrap()
}

/// The scenario with the cable pulled at `at_ms` for `down_ms` (virtual milliseconds).
fn with_unplug(mut s: Scenario, at_ms: u64, down_ms: u64) -> Scenario {
    let i = s.actions.iter().position(|a| a.at_ms > at_ms).unwrap_or(s.actions.len());
    s.actions.insert(i, TimedAction { at_ms, action: Action::Disconnect { down_ms } });
    s
}

/// Starts the relay on `link` with the default silence limit (5 s), so that anything
/// noticed sooner was noticed from the closed device.
fn relay_on(dir: &Path, link: &Path) -> Relay {
    let data = dir.join("data");
    Relay::start(dir, &["run", "--port", link.to_str().unwrap(), "--data", data.to_str().unwrap()])
}

/// Waits (polling every millisecond) until the board's link is gone: the moment of the
/// unplug, as the simulator removes the device node with the pty.
fn wait_link_gone(link: &Path, timeout: Duration) -> Instant {
    let deadline = Instant::now() + timeout;
    while std::fs::symlink_metadata(link).is_ok() {
        assert!(Instant::now() < deadline, "the board was never unplugged");
        std::thread::sleep(Duration::from_millis(1));
    }
    Instant::now()
}

fn not_responding(v: &serde_json::Value) -> Option<String> {
    v[0]["alerts"]
        .as_array()?
        .iter()
        .find(|a| a["code"] == "not_responding")
        .map(|a| a["message"].as_str().unwrap_or_default().to_owned())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_unplug_between_two_moves_is_noticed_at_once_and_no_move_is_lost() {
    let dir = tmpdir("unplug-quick");
    let games = sample_games();
    let game = &games[0];
    let speed = 10.0;
    let board = sim_board(&dir, 20101, speed);
    let link: PathBuf = board.path();
    let relay = relay_on(&dir, &link);
    relay.wait_boards("active", Duration::from_secs(10), |v| v[0]["status"] == "active");

    // A ply after which the next hand moves at least 20 s (game time) later: the cable is
    // out for 3 s of that, between two moves.
    let plan = scenario(game);
    let k = (4..plan.truth.as_ref().unwrap().moves.len())
        .find(|&k| next_action_after(&plan, press_ms(&plan, k)) >= press_ms(&plan, k) + 20_000)
        .expect("a slow move in the game");
    let at = press_ms(&plan, k) + 2_000;
    let plan = with_unplug(plan, at, 3_000);
    let _handle = board.start_scenario(plan, StartPolicy::WhenHostListens).unwrap();

    let unplugged = tokio::task::spawn_blocking({
        let link = link.clone();
        move || wait_link_gone(&link, Duration::from_secs(120))
    })
    .await
    .unwrap();
    let v = relay.wait_boards("not responding", Duration::from_secs(10), |v| not_responding(v).is_some());
    let noticed = unplugged.elapsed();
    eprintln!("unplug noticed after {} ms", noticed.as_millis());
    // The silence limit is 5 s: this was seen from the device, not from the silence.
    assert!(noticed < Duration::from_secs(2), "noticed after {noticed:?}\n{}", relay.logs());
    let message = not_responding(&v).unwrap();
    assert!(message.contains("went away"), "{message}");
    assert_eq!(confirmed(&v, 1).len(), k, "the unplug came after ply {k}: {v}");

    // Back by itself, and the game goes on with every move.
    let v = relay.wait_boards("back with more moves", Duration::from_secs(90), |v| {
        v[0]["status"] == "active" && confirmed(v, 1).len() >= k + 4
    });
    let got = confirmed(&v, 1);
    assert_eq!(got, source_sans(game)[..got.len()], "{}", relay.logs());
    assert!(v[0]["alerts"].to_string().contains("board_back"), "{v}");
    assert_eq!(board.status().unwrap().reconnects, 1);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn moves_made_while_unplugged_are_replayed_from_the_boards_event_log() {
    let dir = tmpdir("unplug-long");
    let games = sample_games();
    let game = &games[0];
    let speed = 20.0;
    let board = sim_board(&dir, 20102, speed);
    let link: PathBuf = board.path();
    let relay = relay_on(&dir, &link);
    relay.wait_boards("active", Duration::from_secs(10), |v| v[0]["status"] == "active");

    // Unplugged a second after ply 4, plugged back a second after ply 10: six plies were
    // made meanwhile, twice what the tracker searches from a dump.
    let (k, away) = (4, 6);
    let plan = scenario(game);
    let at = press_ms(&plan, k) + 1_000;
    let down = press_ms(&plan, k + away) + 1_000 - at;
    let plan = with_unplug(plan, at, down);
    let _handle = board.start_scenario(plan, StartPolicy::WhenHostListens).unwrap();

    relay.wait_boards("not responding", Duration::from_secs(60), |v| not_responding(v).is_some());
    let v = relay.wait_boards("the plies made while away, and more", Duration::from_secs(90), |v| {
        v[0]["status"] == "active" && confirmed(v, 1).len() >= k + away + 2
    });
    let got = confirmed(&v, 1);
    assert_eq!(got, source_sans(game)[..got.len()], "{}", relay.logs());
    let logs = relay.logs();
    assert!(logs.contains("replayed the square changes from the board's event log"), "{logs}");
    assert_eq!(board.status().unwrap().reconnects, 1);
}

/// Nf3 Nc6 Nc3 and Nc3 Nc6 Nf3 leave the same board: made while the board was unplugged,
/// only the board's event log tells which was played, and the relay reads it.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_transposition_made_while_unplugged_comes_out_in_the_order_played() {
    for (n, order) in ["2. Nf3 Nc6 3. Nc3", "2. Nc3 Nc6 3. Nf3"].into_iter().enumerate() {
        let dir = tmpdir(&format!("unplug-transposed-{n}"));
        let pgn = format!(
            "[Event \"T\"]\n[White \"A\"]\n[Black \"B\"]\n[Result \"*\"]\n\n1. e4 {{[%clk 0:10:00]}} \
             e5 {{[%clk 0:10:00]}} {order} Nf6 4. d3 Bc5 5. Be2 d6 *\n"
        );
        let games = dgt_hil_sim::pgn::parse_games(&pgn);
        let game = &games[0];
        let board = sim_board(&dir, 20103 + n as u32, 20.0);
        let link: PathBuf = board.path();
        let relay = relay_on(&dir, &link);
        relay.wait_boards("active", Duration::from_secs(10), |v| v[0]["status"] == "active");
        // Unplugged after ply 2, plugged back after ply 5.
        let plan = scenario(game);
        let at = press_ms(&plan, 2) + 300;
        let down = press_ms(&plan, 5) + 300 - at;
        let plan = with_unplug(plan, at, down);
        let _handle = board.start_scenario(plan, StartPolicy::WhenHostListens).unwrap();
        let v = relay.wait_boards("the whole game", Duration::from_secs(90), |v| confirmed(v, 1).len() >= 9);
        let got = confirmed(&v, 1);
        assert_eq!(got, source_sans(game)[..got.len()], "{order}\n{}", relay.logs());
        assert!(relay.logs().contains("reading its event log"), "{}", relay.logs());
    }
}

/// Issue 15, recipe 11: one outage is told once each way. One unplug gives exactly one
/// `not_responding` and one `board_back` on the feed (a port that cannot be reopened while
/// the board is away is only logged), and nothing more once the board is back.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn one_unplug_gives_one_not_responding_and_one_board_back() {
    let dir = tmpdir("unplug-once");
    let games = sample_games();
    let board = sim_board(&dir, 20104, 10.0);
    let link: PathBuf = board.path();
    let relay = relay_on(&dir, &link);
    relay.wait_boards("active", Duration::from_secs(10), |v| v[0]["status"] == "active");
    let (mut ws, _) = ws_connect(&relay).await;
    let _handle = board.start_scenario(scenario(&games[0]), StartPolicy::WhenHostListens).unwrap();
    relay.wait_boards("4 moves", Duration::from_secs(60), |v| confirmed(v, 1).len() >= 4);
    // Out for 3 s of real time: the relay tries the port again and again meanwhile.
    board.act(Action::Disconnect { down_ms: 30_000 }).unwrap();
    let mut seen: Vec<String> = Vec::new();
    let mut back_at = None;
    let deadline = Instant::now() + Duration::from_secs(40);
    // Until 8 s after the board is back.
    while back_at.is_none_or(|t: Instant| t.elapsed() < Duration::from_secs(8)) {
        let left = deadline.saturating_duration_since(Instant::now());
        assert!(!left.is_zero(), "the board was not back in time: {seen:?}");
        let Ok(f) = tokio::time::timeout(Duration::from_millis(500), ws_next(&mut ws, left)).await else {
            continue;
        };
        if f["type"] == "alert" && f["board"] == 1 {
            let code = f["alert"]["code"].as_str().unwrap().to_owned();
            if code == "board_back" {
                back_at.get_or_insert_with(Instant::now);
            }
            seen.push(code);
        }
    }
    let count = |code: &str| seen.iter().filter(|c| *c == code).count();
    assert_eq!((count("not_responding"), count("board_back")), (1, 1), "{seen:?}\n{}", relay.logs());
    assert_eq!(board.status().unwrap().reconnects, 1);
}
