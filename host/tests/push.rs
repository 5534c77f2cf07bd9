//! The Lichess push against a stand-in of lila's push endpoint (`lichess/mod.rs`): large
//! rounds split, refused games alerted with Lichess's text, failures retried with the latest
//! state (the pusher in process, on tokio's paused clock, the stand-in behind an in-memory
//! connection); and a whole round played on simulated boards through the real relay
//! reaching it with every game accepted, with a clean and with a failing server.
#![allow(clippy::unwrap_used)]

mod broadcaster;
mod common;
mod lichess;

use std::sync::Arc;
use std::time::{Duration, Instant};

use dgt_relay::clock::Clock;

use dgt_hil_sim::hands::{GameEnd, PlanOptions, plan_game};
use dgt_hil_sim::pgn::SourceGame;
use dgt_hil_sim::{SimBoard, StartPolicy};
use dgt_relay::feed::{AlertLevel, Hub};
use dgt_relay::push::{LichessSection, PushContext, PushState};
use dgt_relay::record::{GameHeader, GameRecord, JournalMove};
use dgt_relay::shutdown::Shutdown;
use dgt_relay::store::Store;
use dgt_relay::tournament::{Pairing, Player};
use dgt_relay::tournament::{SharedTournament, Tournament};
use lichess::{Fail, StandIn};

const ROUND: &str = "TestRnd1";
const TOKEN: &str = "lip_standin_token";

fn settings(dir: &std::path::Path, url: &str, timeout_s: u64) -> dgt_relay::push::LichessSettings {
    let file = dir.join("lichess-token");
    std::fs::write(&file, format!("{TOKEN}\n")).unwrap();
    LichessSection {
        round: ROUND.into(),
        token_file: Some(file),
        url: url.into(),
        timeout_s: Some(timeout_s),
        relay_round: None,
        rounds: Default::default(),
    }
    .settings()
    .unwrap()
}

fn record(board: u32, sans: &[&str], result: Option<&str>) -> GameRecord {
    let mut g = GameRecord::new(GameHeader {
        round: 1,
        board,
        serial: None,
        event: "Push test".into(),
        site: "Here".into(),
        time_control: Some("300+2".into()),
        utc_date: "2025.11.21".into(),
        utc_time: "12:00:00".into(),
        pairing: Pairing {
            white: Player { name: format!("White {board}"), ..Player::default() },
            black: Player { name: format!("Black {board}"), ..Player::default() },
        },
        start_fen: None,
        flipped: false,
    });
    g.moves = sans
        .iter()
        .enumerate()
        .map(|(i, s)| JournalMove {
            ply: i as u32 + 1,
            san: (*s).into(),
            uci: String::new(),
            clk: Some(300 - i as u32),
            emt: Some(3),
            fen: None,
        })
        .collect();
    g.result = result.map(str::to_owned);
    g.termination = result.map(|_| "normal".to_owned());
    g
}

struct InProcess {
    store: Arc<Store>,
    hub: Arc<Hub>,
    push: Arc<PushState>,
    stop: Shutdown,
}

/// A pusher in this process, on the relay's clock (tokio's, paused by these tests), whose
/// requests go to `standin` through an in-memory connection.
fn start_pusher(dir: &std::path::Path, standin: &StandIn, timeout_s: u64) -> InProcess {
    start_pusher_on(dir, standin, timeout_s, standin.connector())
}

/// [`start_pusher`] with its own way to connect.
fn start_pusher_on(
    dir: &std::path::Path,
    standin: &StandIn,
    timeout_s: u64,
    connect: dgt_relay::push::Connect,
) -> InProcess {
    let clock = Clock::system();
    let (store, _) = Store::open(&dir.join("data"), clock.clone()).unwrap();
    let store = Arc::new(store);
    let hub = Arc::new(Hub::new(1, clock.clone()));
    let tournament = SharedTournament::new(Tournament::default());
    let push = Arc::new(PushState::default());
    let stop = Shutdown::new();
    let ctx =
        PushContext { connect, ..PushContext::new(Arc::clone(&store), tournament, Arc::clone(&hub), clock) };
    push.start(settings(dir, &standin.url(), timeout_s), ctx, stop.listener());
    InProcess { store, hub, push, stop }
}

/// Waits (on tokio's clock) until `f` holds, for at most `timeout`.
async fn wait_for(what: &str, timeout: Duration, mut f: impl FnMut() -> bool) {
    let deadline = tokio::time::Instant::now() + timeout;
    while !f() {
        assert!(tokio::time::Instant::now() < deadline, "timed out waiting for {what}");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

fn set(p: &InProcess, g: &GameRecord) {
    p.store.set_pgn(1, g.header.board, dgt_relay::pgn::write_game(g, None));
}

#[test]
fn the_stand_in_validates_as_lichess_does() {
    let ok = dgt_relay::pgn::write_game(&record(1, &["e4", "e5", "Nf3"], None), None);
    assert_eq!(lichess::validate(&ok).unwrap().moves, ["e4", "e5", "Nf3"]);
    // A last king move to a centre square (the DGT result gesture) is dropped.
    let kings = dgt_relay::pgn::write_game(&record(1, &["e4", "e5", "Kd4"], Some("1-0")), None);
    assert_eq!(lichess::validate(&kings).unwrap().moves, ["e4", "e5"]);
    // Anywhere else, or not a king, an illegal move refuses the game.
    for bad in [&["e4", "Kd4", "Nf3"][..], &["e4", "e5", "Ke3"], &["e4", "e5", "Qd4"]] {
        let text = dgt_relay::pgn::write_game(&record(1, bad, None), None);
        assert!(lichess::validate(&text).unwrap_err().1.contains("Illegal move"), "{bad:?}");
    }
    let two = format!("{ok}{kings}");
    assert_eq!(lichess::split(&two).len(), 2);
}

#[test]
fn the_stand_in_accepts_arbiter_scores_forfeits_teams_and_chess960() {
    for score in ["0-0", "1/2-0", "0-1/2"] {
        let text = dgt_relay::pgn::write_game(&record(1, &["e4", "e5"], Some(score)), None);
        let b = lichess::validate(&text).unwrap();
        // Lichess scores the game from the `Result` tag.
        assert_eq!((b.tags["Result"].as_str(), b.moves.len()), (score, 2), "{text}");
    }
    let mut forfeit = record(2, &["e4", "e5"], Some("1-0"));
    forfeit.termination = Some(dgt_core::UNPLAYED.into());
    forfeit.header.pairing.white.team = Some("Norway".into());
    forfeit.header.pairing.white.federation = Some("NOR".into());
    forfeit.header.pairing.black.fide_id = Some(8603006);
    let text = dgt_relay::pgn::write_game(&forfeit, None);
    let b = lichess::validate(&text).unwrap();
    assert!(b.moves.is_empty(), "{text}");
    assert_eq!(b.tags["Termination"], "Unplayed");
    assert_eq!((b.tags["WhiteTeam"].as_str(), b.tags["BlackFideId"].as_str()), ("Norway", "8603006"));
    let mut c960 = record(3, &["g3", "g6", "Ne3"], None);
    c960.header.start_fen = Some("bbqnnrkr/pppppppp/8/8/8/8/PPPPPPPP/BBQNNRKR w HFhf - 0 1".into());
    let text = dgt_relay::pgn::write_game(&c960, None);
    let b = lichess::validate(&text).unwrap();
    assert_eq!((b.tags["Variant"].as_str(), b.moves.len()), ("Chess960", 3), "{text}");
}

#[tokio::test(start_paused = true)]
async fn a_large_round_is_split_and_refused_games_are_alerted() {
    let dir = common::tmpdir("push-large");
    let standin = StandIn::in_memory(ROUND, TOKEN);
    let p = start_pusher(&dir, &standin, 5);
    for b in 1..=150 {
        set(&p, &record(b, &["e4", "e5", "Nf3"], None));
    }
    wait_for("150 games", Duration::from_secs(20), || standin.games().len() == 150).await;
    let reqs = standin.requests();
    assert_eq!(reqs.iter().map(|r| r.games).collect::<Vec<_>>()[..2], [100, 50]);
    assert!(reqs.windows(2).all(|w| w[1].at - w[0].at >= Duration::from_millis(950)), "{reqs:?}");
    wait_for("status", Duration::from_secs(5), || p.push.status().games_accepted == 150).await;

    // A game Lichess refuses: an alert with its text, once; accepted again: an info alert.
    let before = standin.requests().len();
    let bad = record(8, &["e4", "e5", "Ke3"], None);
    set(&p, &bad);
    wait_for("refusal", Duration::from_secs(10), || !standin.refused().is_empty()).await;
    wait_for("alert", Duration::from_secs(5), || {
        p.hub
            .relay_alerts()
            .iter()
            .any(|a| a.level == AlertLevel::Error && a.message.contains("Illegal move Ke3"))
    })
    .await;
    let alert = p.hub.relay_alerts().into_iter().find(|a| a.message.contains("Illegal move")).unwrap();
    assert_eq!(serde_json::to_value(alert.code).unwrap(), "push");
    assert!(alert.message.contains("board 8"), "{}", alert.message);
    let status = p.push.status();
    assert_eq!((status.games_accepted, status.games_refused.len()), (149, 1), "{status:?}");
    // Both requests of the round went (100 + 50), the second a second after the first.
    assert_eq!(standin.requests().len(), before + 2);
    set(&p, &record(8, &["e4", "e5", "Ke2"], None));
    wait_for("accepted again", Duration::from_secs(10), || {
        p.hub.relay_alerts().iter().any(|a| a.level == AlertLevel::Info && a.message.contains("accepts"))
    })
    .await;
    assert_eq!(standin.games().values().filter(|g| g.moves.last().is_some_and(|m| m == "Ke2")).count(), 1);
    let refusals =
        p.hub.relay_alerts().iter().filter(|a| a.message.contains("Lichess refused round 1.8")).count();
    assert_eq!(refusals, 1);
    p.stop.trigger();
    p.push.join().await;
}

#[tokio::test(start_paused = true)]
async fn failures_are_retried_with_the_latest_moves_and_nothing_is_lost() {
    let dir = common::tmpdir("push-fail");
    let standin = StandIn::in_memory(ROUND, TOKEN);
    standin.fail_next(&[Fail::ServerError, Fail::TooMany, Fail::Stall(Duration::from_secs(3)), Fail::Drop]);
    let p = start_pusher(&dir, &standin, 1);
    let line = ["d4", "d5", "c4", "e6", "Nc3", "Nf6", "Bg5", "Be7"];
    // Moves keep coming while the server fails.
    for n in 1..=line.len() {
        set(&p, &record(1, &line[..n], None));
        set(&p, &record(2, &line[..n.min(4)], None));
        tokio::time::sleep(Duration::from_millis(400)).await;
    }
    set(&p, &record(1, &line, Some("1/2-1/2")));
    wait_for("the final state", Duration::from_secs(60), || {
        standin.games().values().any(|g| g.moves.len() == line.len() && g.result == "1/2-1/2")
    })
    .await;
    let answered: Vec<u16> = standin.requests().iter().map(|r| r.answered).collect();
    assert_eq!(answered[..4], [500, 429, 0, 0], "{answered:?}");
    assert_eq!(answered.last(), Some(&200));
    let games = standin.games();
    assert_eq!(games.len(), 2);
    let by_board = |b: &str| games.values().find(|g| g.tags["Board"] == b).unwrap().clone();
    assert_eq!(by_board("1").moves, line);
    assert_eq!(by_board("2").moves, line[..4]);
    wait_for("status", Duration::from_secs(5), || p.push.status().failures_in_a_row == 0).await;
    let status = p.push.status();
    assert!(status.last_success.is_some() && status.last_error.is_some(), "{status:?}");
    // Three failures in a row raised a warning, the success an info.
    let alerts = p.hub.relay_alerts();
    assert!(
        alerts.iter().any(|a| a.level == AlertLevel::Warning && a.message.contains("fails")),
        "{alerts:?}"
    );
    assert!(alerts.iter().any(|a| a.message.contains("works again")), "{alerts:?}");
    // Retries waited: no two requests less than a second apart.
    let reqs = standin.requests();
    assert!(reqs.windows(2).all(|w| w[1].at - w[0].at >= Duration::from_millis(950)), "{reqs:?}");
    p.stop.trigger();
    p.push.join().await;
}

/// Issue 27, recipe 8: after a long outage (no connection for ten minutes, the backoff at
/// its minute), the push goes within [`PROBE_EVERY`] of the endpoint taking connections
/// again, not a whole backoff later.
#[tokio::test(start_paused = true)]
async fn after_a_long_outage_the_push_goes_soon_after_the_endpoint_is_back() {
    use std::sync::atomic::{AtomicBool, Ordering};
    let dir = common::tmpdir("push-probe");
    let standin = StandIn::in_memory(ROUND, TOKEN);
    let down = Arc::new(AtomicBool::new(true));
    let connect: dgt_relay::push::Connect = {
        let (inner, down) = (standin.connector(), Arc::clone(&down));
        Arc::new(move |host, port| {
            if down.load(Ordering::SeqCst) {
                Box::pin(async { Err(std::io::Error::new(std::io::ErrorKind::ConnectionRefused, "down")) })
            } else {
                inner(host, port)
            }
        })
    };
    let p = start_pusher_on(&dir, &standin, 1, connect);
    set(&p, &record(1, &["e4", "e5"], None));
    tokio::time::sleep(Duration::from_secs(600)).await;
    wait_for("the backoff at its longest", Duration::from_secs(5), || p.push.status().failures_in_a_row >= 8)
        .await;
    assert!(standin.requests().is_empty());
    down.store(false, Ordering::SeqCst);
    let back = tokio::time::Instant::now();
    wait_for("the push after the outage", Duration::from_secs(120), || !standin.games().is_empty()).await;
    let took = back.elapsed();
    assert!(
        took <= dgt_relay::push::PROBE_EVERY + Duration::from_secs(1),
        "pushed {took:?} after the endpoint was back"
    );
    p.stop.trigger();
    p.push.join().await;
}

#[tokio::test(start_paused = true)]
async fn a_wrong_token_is_an_alert_and_not_retried_in_a_loop() {
    let dir = common::tmpdir("push-token");
    let standin = StandIn::in_memory(ROUND, "another-token");
    let p = start_pusher(&dir, &standin, 5);
    set(&p, &record(1, &["e4"], None));
    wait_for("alert", Duration::from_secs(10), || {
        p.hub
            .relay_alerts()
            .iter()
            .any(|a| a.message.contains("refused the push") && a.message.contains("401"))
    })
    .await;
    tokio::time::sleep(Duration::from_secs(2)).await;
    assert_eq!(standin.requests().len(), 1);
    // The next change tries again.
    set(&p, &record(1, &["e4", "e5"], None));
    wait_for("second try", Duration::from_secs(5), || standin.requests().len() == 2).await;
    p.stop.trigger();
    p.push.join().await;
}

/// The first `plies` moves of a sample game, ended by the kings in the centre with `result`.
fn short_game(g: &SourceGame, plies: usize, result: &str) -> dgt_hil_sim::Scenario {
    let mut g = g.clone();
    g.moves.truncate(plies);
    for m in &mut g.moves {
        m.clk_s = None;
        m.emt_s = None;
    }
    g.result = result.into();
    g.tags.insert("Result".into(), result.into());
    let opts = PlanOptions {
        end: GameEnd::KingsInCentre,
        start_delay_ms: 500,
        default_think_ms: (1_000, 3_000),
        ..PlanOptions::default()
    };
    plan_game(&g, &opts)
}

fn round_through_the_relay(name: &str, failures: &[Fail]) {
    const SPEED: f64 = 20.0;
    let dir = common::tmpdir(name);
    let standin = StandIn::start_in_thread(ROUND, TOKEN);
    standin.fail_next(failures);
    let head = "[event]\nname = \"Push test\"\nround = 1\n";
    let config = common::config_with_push(&dir, head, ROUND, TOKEN, &standin.url());
    let games = common::sample_games();
    let plan = [(&games[0], 14, "1-0"), (&games[1], 11, "1/2-1/2")];
    let boards: Vec<SimBoard> =
        (0..plan.len()).map(|i| common::sim_board(&dir, 20401 + i as u32, SPEED)).collect();
    let data = dir.join("data");
    let mut args = vec!["run".to_owned(), "--config".into(), config.display().to_string()];
    for b in &boards {
        args.extend(["--port".to_owned(), b.path().display().to_string()]);
    }
    args.extend(["--data".to_owned(), data.display().to_string()]);
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    let relay = common::Relay::start(&dir, &args);
    let v = relay.wait_boards("boards active", Duration::from_secs(15), |v| {
        v.as_array().is_some_and(|a| a.len() == plan.len() && a.iter().all(|b| b["status"] == "active"))
    });
    // The relay numbers boards as they connect: board number to the plan's entry.
    let plan_of = |board: usize| -> (&SourceGame, usize, &str) {
        let b = v.as_array().unwrap().iter().find(|b| b["board"] == board).unwrap();
        let serial: usize = b["serial"].as_str().unwrap().parse().unwrap();
        plan[serial - 20401]
    };
    let handles: Vec<_> = boards
        .iter()
        .zip(&plan)
        .map(|(b, (g, plies, result))| {
            b.start_scenario(short_game(g, *plies, result), StartPolicy::WhenHostListens).unwrap()
        })
        .collect();
    for h in &handles {
        h.wait(Duration::from_secs(120)).unwrap();
    }
    // Every game with its moves and result reaches the broadcast, as the relay's own PGN has it.
    let deadline = Instant::now() + Duration::from_secs(60);
    loop {
        let got = standin.games();
        let done = (1..=plan.len()).all(|board| {
            let (g, plies, result) = plan_of(board);
            got.values().any(|b| {
                b.tags.get("Board").map(String::as_str) == Some(&board.to_string())
                    && b.moves == g.moves[..plies].iter().map(|m| m.san.clone()).collect::<Vec<_>>()
                    && b.result == result
            })
        });
        if done {
            break;
        }
        assert!(Instant::now() < deadline, "the broadcast has {got:#?}\nrelay: {}", relay.logs());
        std::thread::sleep(Duration::from_millis(100));
    }
    let (_, round_pgn) = relay.get("/pgn/1");
    for text in lichess::split(&round_pgn) {
        let g = lichess::validate(&text).unwrap();
        assert_eq!(standin.games()[&g.tags["GameId"]].moves, g.moves);
    }
    assert!(standin.refused().is_empty());
    let reqs = standin.requests();
    assert!(reqs.iter().all(|r| r.games <= 100));
    assert!(reqs.windows(2).all(|w| w[1].at - w[0].at >= Duration::from_millis(950)), "{reqs:?}");
    let answered: Vec<u16> = reqs.iter().map(|r| r.answered).collect();
    assert_eq!(answered.iter().filter(|&&a| a != 200).count(), failures.len(), "{answered:?}");
    let health = relay.json("/health");
    let push = &health["push"];
    assert_eq!(push["enabled"], true, "{health}");
    let status = relay.json("/api/push");
    assert_eq!(status["games_accepted"], plan.len(), "{status}");
    assert!(status["last_success"].is_u64(), "{status}");
    assert_eq!(status["lichess_round"], ROUND, "{status}");
    // No kings-in-centre "move" and no provisional move was ever pushed: every version the
    // broadcast received holds a prefix of its source game's moves, nothing more.
    for version in standin.history() {
        let board: usize = version.tags["Board"].parse().unwrap();
        let (g, plies, _) = plan_of(board);
        let line: Vec<String> = g.moves[..plies].iter().map(|m| m.san.clone()).collect();
        assert!(line.starts_with(&version.sent), "board {board} was sent {:?}", version.sent);
    }
    let mut relay = relay;
    assert!(relay.terminate().success());
    // The data folder too is what the Lichess Broadcaster app uploads, every game accepted.
    let round_dir = data.join("round-1");
    assert!(broadcaster::folder_accepted(&round_dir));
    let uploaded = lichess::split(&broadcaster::upload_text(&round_dir));
    assert_eq!(uploaded.len(), plan.len());
    for text in uploaded {
        lichess::validate(&text).unwrap();
    }
    let index: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(round_dir.join("index.json")).unwrap()).unwrap();
    assert_eq!(index["pairings"].as_array().unwrap().len(), plan.len(), "{index}");
    let t: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(data.join("tournament.json")).unwrap()).unwrap();
    assert_eq!(t["rounds"][0]["count"], plan.len(), "{t}");
    assert_eq!(t["rounds"][0]["live"], 0, "{t}");
}

/// Issue 27, recipe 5: SIGTERM while a push hangs on an endpoint that never answers
/// (`timeout_s = 60`): the push in flight is dropped, the last push gets the stop's short
/// time limit, and the relay exits at once with every journaled move on disk.
#[test]
fn sigterm_during_a_hanging_push_exits_at_once_with_the_journal_flushed() {
    let dir = common::tmpdir("hangingpush");
    // An endpoint that takes connections and never answers.
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let url = format!("http://{}", listener.local_addr().unwrap());
    let accepted = Arc::new(std::sync::atomic::AtomicUsize::new(0));
    {
        let accepted = Arc::clone(&accepted);
        std::thread::spawn(move || {
            let mut held = Vec::new();
            for stream in listener.incoming().flatten() {
                accepted.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
                held.push(stream);
            }
        });
    }
    let head = "[event]\nname = \"Hanging push\"\nround = 1\n";
    let config = common::config_with_push(&dir, head, ROUND, TOKEN, &url);
    let text = std::fs::read_to_string(&config).unwrap().replace("timeout_s = 1\n", "timeout_s = 60\n");
    std::fs::write(&config, text).unwrap();
    let board = common::sim_board(&dir, 20451, 20.0);
    let data = dir.join("data");
    let (cfg, port, data_arg) =
        (config.display().to_string(), board.path().display().to_string(), data.display().to_string());
    let mut relay =
        common::Relay::start(&dir, &["run", "--config", &cfg, "--port", &port, "--data", &data_arg]);
    relay.wait_boards("board active", Duration::from_secs(15), |v| {
        v.as_array().is_some_and(|a| a.iter().any(|b| b["status"] == "active"))
    });
    let games = common::sample_games();
    let play = board.start_scenario(short_game(&games[0], 8, "1-0"), StartPolicy::WhenHostListens).unwrap();
    play.wait(Duration::from_secs(60)).unwrap();
    let v = relay.wait_boards("the game relayed", Duration::from_secs(20), |v| {
        v.as_array().is_some_and(|a| a.iter().any(|b| b["moves"].as_array().is_some_and(|m| m.len() == 8)))
    });
    let n = v.as_array().unwrap().iter().find(|b| b["moves"].as_array().unwrap().len() == 8).unwrap()["board"]
        .as_u64()
        .unwrap() as u32;
    let deadline = Instant::now() + Duration::from_secs(10);
    while accepted.load(std::sync::atomic::Ordering::SeqCst) == 0 {
        assert!(Instant::now() < deadline, "no push reached the endpoint: {}", relay.logs());
        std::thread::sleep(Duration::from_millis(20));
    }
    // A push is in flight, held by the endpoint for up to 60 s.
    std::thread::sleep(Duration::from_millis(300));
    let t0 = Instant::now();
    assert!(relay.terminate().success(), "{}", relay.logs());
    let took = t0.elapsed();
    eprintln!("stopped {took:?} after SIGTERM");
    let logs = relay.logs();
    assert!(logs.contains("push in flight dropped"), "{logs}");
    assert!(logs.contains("journals and PGN flushed"), "{logs}");
    let journal = dgt_relay::store::replay(&data.join(format!("round-1/game-{n}.journal"))).unwrap().unwrap();
    assert_eq!(journal.moves.len(), 8);
}

#[test]
fn a_round_on_simulated_boards_reaches_a_clean_server() {
    round_through_the_relay("push-relay-clean", &[]);
}

#[test]
fn a_round_on_simulated_boards_reaches_a_failing_server() {
    round_through_the_relay(
        "push-relay-failing",
        &[
            Fail::ServerError,
            Fail::Stall(Duration::from_secs(2)),
            Fail::TooMany,
            Fail::Drop,
            Fail::ServerError,
        ],
    );
}

#[test]
fn the_lichess_section_is_checked_with_its_line() {
    let dir = common::tmpdir("push-config");
    let token = dir.join("t");
    std::fs::write(&token, "lip_x").unwrap();
    let ok = format!("[lichess]\nround = \"AbCd1234\"\ntoken_file = \"{}\"\n", token.display());
    let cfg = dgt_relay::config::Config::parse("relay.toml", &ok).unwrap();
    let l = cfg.lichess.unwrap();
    assert_eq!(
        (l.round.as_str(), l.endpoint.host.as_str(), l.endpoint.https),
        ("AbCd1234", "lichess.org", true)
    );
    let bad = format!(
        "listen = \"127.0.0.1:1\"\n\n[lichess]\nround = \"x\"\ntoken_file = \"{}\"\n",
        token.display()
    );
    let e = dgt_relay::config::Config::parse("relay.toml", &bad).unwrap_err().to_string();
    assert!(e.starts_with("relay.toml:3: ") || e.starts_with("relay.toml:4: "), "{e}");
    assert!(e.contains("8-character round id"), "{e}");
    let fixed = dgt_relay::config::Config::parse("relay.toml", &format!("{ok}relay_round = 2\n")).unwrap();
    assert_eq!(fixed.lichess.unwrap().relay_round, Some(2));
    assert!(dgt_relay::config::Config::parse("relay.toml", &format!("{ok}relay_round = 0\n")).is_err());
    let unknown = ok.replace("round =", "rund =");
    assert!(dgt_relay::config::Config::parse("relay.toml", &unknown).is_err());
}
