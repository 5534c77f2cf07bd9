//! The broadcast delay through the real relay on a simulated board: every public output
//! (the websocket feed, `/api/boards`, `/api/games`, `/pgn`, the round folder and its
//! `index.json`, the stand-in Lichess push) shows each move and the result no earlier than
//! the delay after the operator's view had it, then shows all of it; the admin route reads
//! and sets the delay with typed errors.
#![allow(clippy::unwrap_used)]

mod common;
mod lichess;

use std::collections::BTreeMap;
use std::path::Path;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use dgt_hil_sim::StartPolicy;
use dgt_hil_sim::hands::{GameEnd, PlanOptions, plan_game};
use lichess::StandIn;

const ROUND: &str = "DelayRd1";
const LICHESS_TOKEN: &str = "lip_standin_token";
const DELAY: Duration = Duration::from_secs(3);
const PLIES: usize = 10;

/// What one output showed of board 1, and when: the request's start and the answer's end.
#[derive(Clone, Debug)]
struct Seen {
    asked: Instant,
    got: Instant,
    plies: usize,
    result: Option<String>,
    /// The board's alerts (the outputs that carry alerts; 0 elsewhere).
    alerts: usize,
}

fn bearer() -> String {
    format!("Bearer {}", common::TOKEN)
}

/// Moves and result of a PGN game text (none when absent).
fn from_pgn(text: Option<String>) -> (usize, Option<String>) {
    let Some(text) = text.filter(|t| !t.trim().is_empty()) else { return (0, None) };
    let g = lichess::validate(&text).unwrap();
    (g.moves.len(), Some(g.result).filter(|r| r != "*"))
}

fn from_view(b: Option<&serde_json::Value>) -> (usize, Option<String>) {
    let Some(b) = b else { return (0, None) };
    (b["moves"].as_array().map_or(0, Vec::len), b["result"].as_str().map(str::to_owned))
}

fn alerts_of(b: Option<&serde_json::Value>) -> usize {
    b.and_then(|b| b["alerts"].as_array()).map_or(0, Vec::len)
}

fn board_one(boards: &serde_json::Value) -> Option<&serde_json::Value> {
    boards.as_array().and_then(|a| a.iter().find(|b| b["board"] == 1))
}

/// Reads every output once, each stamped.
fn observe(
    relay: &common::Relay,
    data: &Path,
    standin: &StandIn,
    log: &mut BTreeMap<&'static str, Vec<Seen>>,
) {
    let alerts = std::cell::Cell::new(0);
    let mut look = |name: &'static str, f: &mut dyn FnMut() -> (usize, Option<String>)| {
        let asked = Instant::now();
        alerts.set(0);
        let (plies, result) = f();
        let alerts = alerts.get();
        log.entry(name).or_default().push(Seen { asked, got: Instant::now(), plies, result, alerts });
    };
    look("operator", &mut || {
        let (s, body) =
            common::http(relay.addr, "GET", "/api/admin/boards", &[("Authorization", &bearer())], "");
        assert_eq!(s, 200, "{body}");
        let v: serde_json::Value = serde_json::from_str(&body).unwrap();
        alerts.set(alerts_of(board_one(&v["boards"])));
        from_view(board_one(&v["boards"]))
    });
    look("api/boards", &mut || {
        let boards = relay.json("/api/boards");
        alerts.set(alerts_of(board_one(&boards)));
        from_view(board_one(&boards))
    });
    look("api/games", &mut || {
        let (s, body) = relay.get("/api/games/1/1");
        if s == 404 {
            return (0, None);
        }
        let v: serde_json::Value = serde_json::from_str(&body).unwrap();
        (v["moves"].as_array().map_or(0, Vec::len), v["result"].as_str().map(str::to_owned))
    });
    look("api/rounds", &mut || {
        let (s, body) = relay.get("/api/rounds/1");
        if s == 404 {
            return (0, None);
        }
        let v: serde_json::Value = serde_json::from_str(&body).unwrap();
        let g = &v["games"][0];
        (g["plies"].as_u64().unwrap_or(0) as usize, g["result"].as_str().map(str::to_owned))
    });
    look("pgn", &mut || {
        let (s, body) = relay.get("/pgn/1/1");
        from_pgn((s == 200).then_some(body))
    });
    look("folder", &mut || from_pgn(std::fs::read_to_string(data.join("round-1/game-1.pgn")).ok()));
    look("index.json", &mut || {
        let text = std::fs::read_to_string(data.join("round-1/index.json")).ok();
        let v: serde_json::Value = text.and_then(|t| serde_json::from_str(&t).ok()).unwrap_or_default();
        (0, v["pairings"][0]["result"].as_str().filter(|r| *r != "*").map(str::to_owned))
    });
    look("lichess", &mut || {
        let games = standin.games();
        games
            .values()
            .next()
            .map_or((0, None), |g| (g.moves.len(), Some(g.result.clone()).filter(|r| r != "*")))
    });
}

/// Follows the websocket feed in its own thread: board 1's confirmed plies and result
/// after every frame, stamped on arrival.
fn follow_feed(addr: std::net::SocketAddr, log: Arc<Mutex<Vec<Seen>>>, until: Instant) {
    let rt = tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap();
    rt.block_on(async {
        let (mut ws, _) = tokio_tungstenite::connect_async(format!("ws://{addr}/ws")).await.unwrap();
        let snap = common::ws_next(&mut ws, Duration::from_secs(5)).await;
        assert_eq!(snap["type"], "snapshot", "{snap}");
        let (mut plies, mut result) = from_view(board_one(&snap["boards"]));
        let mut alerts = alerts_of(board_one(&snap["boards"]));
        while Instant::now() < until {
            let f = match tokio::time::timeout(
                Duration::from_millis(500),
                common::ws_next(&mut ws, until.saturating_duration_since(Instant::now())),
            )
            .await
            {
                Ok(f) => f,
                Err(_) => continue,
            };
            if f["board"] != 1 {
                continue;
            }
            match f["type"].as_str() {
                Some("move") if f["state"] == "confirmed" => {
                    plies = f["move"]["ply"].as_u64().unwrap() as usize
                }
                Some("retract") if f["state"] == "confirmed" => {
                    plies = f["from_ply"].as_u64().unwrap() as usize - 1
                }
                Some("result") => result = f["result"].as_str().map(str::to_owned),
                Some("alert") => alerts += 1,
                Some("board") => {
                    (plies, result) = from_view(Some(&f["view"]));
                    alerts = alerts_of(Some(&f["view"]));
                }
                _ => continue,
            }
            let now = Instant::now();
            log.lock().unwrap().push(Seen { asked: now, got: now, plies, result: result.clone(), alerts });
            if plies == PLIES && result.is_some() && alerts >= 1 {
                return;
            }
        }
    });
}

/// The start of the operator's last look that did not yet show `shown`: the live relay had
/// it only after that moment.
fn live_after(operator: &[Seen], shown: impl Fn(&Seen) -> bool) -> Instant {
    operator.iter().filter(|s| !shown(s)).map(|s| s.asked).max().unwrap()
}

#[test]
fn every_public_output_lags_by_the_delay_and_the_operator_sees_it_live() {
    const SPEED: f64 = 5.0;
    let dir = common::tmpdir("delay");
    let standin = StandIn::start_in_thread(ROUND, LICHESS_TOKEN);
    let head = format!("delay_s = {}\n\n[event]\nname = \"Delay test\"\nround = 1\n", DELAY.as_secs());
    let config = common::config_with_push(&dir, &head, ROUND, LICHESS_TOKEN, &standin.url());
    let mut game = common::sample_games().remove(0);
    game.moves.truncate(PLIES);
    for m in &mut game.moves {
        m.clk_s = None;
        m.emt_s = None;
    }
    game.result = "1-0".into();
    game.tags.insert("Result".into(), "1-0".into());
    let plan = plan_game(
        &game,
        &PlanOptions {
            end: GameEnd::KingsInCentre,
            start_delay_ms: 500,
            default_think_ms: (1_000, 3_000),
            ..PlanOptions::default()
        },
    );
    let board = common::sim_board(&dir, 20501, SPEED);
    let data = dir.join("data");
    let port = board.path().display().to_string();
    let cfg = config.display().to_string();
    let data_arg = data.display().to_string();
    let relay = common::Relay::start(&dir, &["run", "--config", &cfg, "--port", &port, "--data", &data_arg]);
    let (s, body) = common::http(relay.addr, "GET", "/api/admin/delay", &[("Authorization", &bearer())], "");
    assert_eq!(
        (s, serde_json::from_str::<serde_json::Value>(&body).unwrap()["delay_s"].as_u64()),
        (200, Some(3))
    );
    relay.wait_boards("board active", Duration::from_secs(15), |v| {
        board_one(v).is_some_and(|b| b["status"] == "active")
    });
    let until = Instant::now() + Duration::from_secs(90);
    let feed_log = Arc::new(Mutex::new(Vec::new()));
    let feed = {
        let log = Arc::clone(&feed_log);
        let addr = relay.addr;
        std::thread::spawn(move || follow_feed(addr, log, until))
    };
    let play = board.start_scenario(plan, StartPolicy::WhenHostListens).unwrap();
    let mut log: BTreeMap<&'static str, Vec<Seen>> = BTreeMap::new();
    let done = |log: &BTreeMap<&'static str, Vec<Seen>>| {
        let alerts = |name| log.get(name).and_then(|s: &Vec<Seen>| s.last()).map_or(0, |s| s.alerts);
        log.len() == 8
            && alerts("api/boards") >= 1
            && alerts("api/boards") == alerts("operator")
            && log.iter().all(|(name, seen)| {
                seen.last().is_some_and(|s| {
                    (*name == "index.json" || s.plies == PLIES) && s.result.as_deref() == Some("1-0")
                })
            })
    };
    while !done(&log) {
        assert!(
            Instant::now() < until,
            "timed out: {:?}\n{}",
            log.iter().map(|(k, v)| (k, v.last())).collect::<Vec<_>>(),
            relay.logs()
        );
        observe(&relay, &data, &standin, &mut log);
        std::thread::sleep(Duration::from_millis(40));
    }
    play.wait(Duration::from_secs(30)).unwrap();
    // The feed reaches the end too.
    while !feed_log
        .lock()
        .unwrap()
        .last()
        .is_some_and(|s| s.plies == PLIES && s.result.is_some() && s.alerts >= 1)
    {
        assert!(
            Instant::now() < until,
            "the feed did not show the whole game: {:?}",
            feed_log.lock().unwrap().last()
        );
        std::thread::sleep(Duration::from_millis(40));
    }
    feed.join().unwrap();
    log.insert("websocket", std::mem::take(&mut *feed_log.lock().unwrap()));
    let operator = log.remove("operator").unwrap();
    let mut checked = 0;
    let mut checked_alerts = 0;
    for (name, seen) in &log {
        for ply in 1..=PLIES {
            if *name == "index.json" {
                break;
            }
            let live = live_after(&operator, |s| s.plies >= ply);
            let first = seen.iter().find(|s| s.plies >= ply).unwrap();
            assert!(
                first.got >= live + DELAY,
                "{name}: ply {ply} shown {:?} after it was live",
                first.got - live
            );
            checked += 1;
        }
        let live = live_after(&operator, |s| s.result.is_some());
        let first = seen.iter().find(|s| s.result.is_some()).unwrap();
        assert!(
            first.got >= live + DELAY,
            "{name}: the result shown {:?} after it was live",
            first.got - live
        );
        // The board's alerts (the result from the board's kings, a stopped clock) wait
        // with the game.
        for k in 1..=operator.last().unwrap().alerts {
            if !matches!(*name, "api/boards" | "websocket") {
                break;
            }
            let live = live_after(&operator, |s| s.alerts >= k);
            let first = seen.iter().find(|s| s.alerts >= k).unwrap();
            assert!(
                first.got >= live + DELAY,
                "{name}: alert {k} shown {:?} after it was live",
                first.got - live
            );
            checked_alerts += 1;
        }
        // Self-consistent: the result never comes before the last move.
        if *name != "index.json" {
            assert!(seen.iter().all(|s| s.result.is_none() || s.plies == PLIES), "{name}: {seen:?}");
        }
    }
    // Seven outputs show moves (index.json shows the result only).
    assert_eq!(checked, 7 * PLIES);
    assert!(checked_alerts >= 2, "the board's alerts were sampled on the feed and /api/boards");

    // The admin route: typed errors, and the delay goes back to zero.
    let auth = [("Authorization", bearer())];
    let auth: Vec<(&str, &str)> = auth.iter().map(|(k, v)| (*k, v.as_str())).collect();
    assert_eq!(common::http(relay.addr, "GET", "/api/admin/delay", &[], "").0, 401);
    let (s, body) = common::http(relay.addr, "PUT", "/api/admin/delay", &auth, r#"{"delay_s":3601}"#);
    assert_eq!(s, 422, "{body}");
    assert!(body.contains("3600"), "{body}");
    let (s, body) = common::http(relay.addr, "PUT", "/api/admin/delay", &auth, r#"{"delay_s":0}"#);
    assert_eq!(s, 200, "{body}");
    let (_, body) = common::http(relay.addr, "GET", "/api/admin/delay", &auth, "");
    assert_eq!(serde_json::from_str::<serde_json::Value>(&body).unwrap()["delay_s"], 0);
}

#[test]
fn the_delay_is_checked_with_its_line() {
    let cfg = dgt_relay::config::Config::parse("relay.toml", "delay_s = 900\n").unwrap();
    assert_eq!(cfg.delay_s, 900);
    assert_eq!(dgt_relay::config::Config::parse("relay.toml", "").unwrap().delay_s, 0);
    let e = dgt_relay::config::Config::parse("relay.toml", "discover = false\ndelay_s = 3601\n")
        .unwrap_err()
        .to_string();
    assert!(e.starts_with("relay.toml:2: ") && e.contains("3600"), "{e}");
}
