//! The real `dgt-relay` process against simulated boards on real pseudo-terminals.
#![allow(clippy::unwrap_used)]

mod common;

use std::time::{Duration, Instant};

use common::*;
use dgt_hil_sim::{Action, StartPolicy};
use futures_util::{SinkExt, StreamExt};
use tokio_tungstenite::tungstenite::Message;

const SPEED: f64 = 40.0;

/// The SAN tokens of a PGN's movetext (numbers, comments and the result left out).
fn movetext_tokens(pgn: &str) -> Vec<String> {
    let movetext = pgn.lines().filter(|l| !l.starts_with('[')).collect::<Vec<_>>().join(" ");
    let mut out = Vec::new();
    let mut depth = 0;
    for t in movetext.split_whitespace() {
        if t.starts_with('{') {
            depth += 1;
        }
        if depth == 0 && !t.ends_with('.') && !["*", "1-0", "0-1", "1/2-1/2"].contains(&t) {
            out.push(t.to_owned());
        }
        if t.ends_with('}') {
            depth -= 1;
        }
    }
    out
}

fn ws_url(r: &Relay) -> String {
    format!("ws://{}/ws", r.addr)
}

async fn next_json<S>(ws: &mut S, timeout: Duration) -> serde_json::Value
where
    S: StreamExt<Item = Result<Message, tokio_tungstenite::tungstenite::Error>> + Unpin,
{
    loop {
        let msg = tokio::time::timeout(timeout, ws.next())
            .await
            .expect("websocket frame in time")
            .unwrap()
            .unwrap();
        if let Message::Text(t) = msg {
            return serde_json::from_str(t.as_str()).unwrap();
        }
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn handshake_then_moves_reach_the_websocket_and_the_pgn() {
    let dir = tmpdir("moves");
    let games = sample_games();
    let game = &games[0];
    let board = sim_board(&dir, 20001, SPEED);
    let link = board.path();
    let data = dir.join("data");
    let relay =
        Relay::start(&dir, &["run", "--port", link.to_str().unwrap(), "--data", data.to_str().unwrap()]);

    // Handshake: the board is identified by its serial number and becomes active.
    relay.wait_boards("board active", Duration::from_secs(10), |v| {
        v[0]["serial"] == "20001" && v[0]["status"] == "active"
    });
    let logs = relay.logs();
    assert!(logs.contains("board identified"), "{logs}");

    let (mut ws, _) = tokio_tungstenite::connect_async(ws_url(&relay)).await.unwrap();
    let snap = next_json(&mut ws, Duration::from_secs(5)).await;
    assert_eq!((snap["v"].as_u64(), snap["type"].as_str()), (Some(1), Some("snapshot")));
    let mut seq = snap["seq"].as_u64().unwrap();

    let handle = board.start_scenario(scenario(game), StartPolicy::WhenHostListens).unwrap();
    let want = source_sans(game);
    let n = want.len().min(12);
    let mut got = Vec::new();
    let deadline = Instant::now() + Duration::from_secs(60);
    while got.len() < n {
        assert!(Instant::now() < deadline, "only {got:?} arrived\n{}", relay.logs());
        let f = next_json(&mut ws, Duration::from_secs(30)).await;
        if let Some(s) = f["seq"].as_u64() {
            assert_eq!(s, seq + 1, "sequence numbers are contiguous: {f}");
            seq = s;
        }
        if f["type"] == "move" && f["state"] == "confirmed" {
            assert_eq!(f["move"]["ply"].as_u64(), Some(got.len() as u64 + 1), "{f}");
            got.push(f["move"]["san"].as_str().unwrap().to_owned());
        }
    }
    assert_eq!(got, want[..n]);
    // The same moves are in the game's PGN over HTTP and on disk.
    let (status, pgn) = relay.get("/pgn/1/1");
    assert_eq!(status, 200);
    assert!(pgn.contains("[Round \"1.1\"]") && pgn.contains("[Board \"1\"]"), "{pgn}");
    let tokens = movetext_tokens(&pgn);
    for san in &got {
        assert!(tokens.contains(san), "{san} in {pgn}");
    }
    let (status, round) = relay.get("/pgn/1");
    assert_eq!(status, 200);
    assert!(round.contains("[Round \"1.1\"]"));
    drop(handle);
    let mut relay = relay;
    assert!(relay.terminate().success());
    let on_disk = std::fs::read_to_string(data.join("round-1/game-1.pgn")).unwrap();
    assert!(movetext_tokens(&on_disk).contains(&got[n - 1]), "{on_disk}");
    assert!(data.join("round-1/games.pgn").exists());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_unplugged_board_comes_back_and_no_move_is_lost() {
    let dir = tmpdir("replug");
    let games = sample_games();
    let game = &games[0];
    // Slower, so that only a ply or two happen while the cable is out.
    let speed = 10.0;
    let board = sim_board(&dir, 20002, speed);
    let link = board.path();
    let data = dir.join("data");
    std::fs::write(dir.join("relay.toml"), "silence_ms = 1000\n").unwrap();
    let relay = Relay::start(
        &dir,
        &[
            "run",
            "--config",
            dir.join("relay.toml").to_str().unwrap(),
            "--port",
            link.to_str().unwrap(),
            "--data",
            data.to_str().unwrap(),
        ],
    );
    relay.wait_boards("active", Duration::from_secs(10), |v| v[0]["status"] == "active");
    let _handle = board.start_scenario(scenario(game), StartPolicy::WhenHostListens).unwrap();
    relay.wait_boards("4 moves", Duration::from_secs(60), |v| confirmed(v, 1).len() >= 4);
    board.act(Action::Disconnect { down_ms: 500 * speed as u64 }).unwrap();
    relay.wait_boards("not responding", Duration::from_secs(10), |v| {
        v[0]["alerts"].to_string().contains("not_responding")
    });
    let v = relay.wait_boards("back with more moves", Duration::from_secs(60), |v| {
        v[0]["status"] == "active" && confirmed(v, 1).len() >= 12
    });
    let want = source_sans(game);
    let got = confirmed(&v, 1);
    assert_eq!(got, want[..got.len()], "{}", relay.logs());
    let alerts = v[0]["alerts"].to_string();
    assert!(alerts.contains("not_responding"), "{alerts}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sigkill_then_restart_keeps_every_confirmed_move_and_the_game_goes_on() {
    let dir = tmpdir("sigkill");
    let games = sample_games();
    let game = &games[0];
    let board = sim_board(&dir, 20003, SPEED / 2.0);
    let link = board.path();
    let data = dir.join("data");
    let args = ["run", "--port", link.to_str().unwrap(), "--data", data.to_str().unwrap()];
    let mut relay = Relay::start(&dir, &args);
    relay.wait_boards("active", Duration::from_secs(10), |v| v[0]["status"] == "active");
    let _handle = board.start_scenario(scenario(game), StartPolicy::WhenHostListens).unwrap();
    let before = relay.wait_boards("6 moves", Duration::from_secs(60), |v| confirmed(v, 1).len() >= 6);
    let before = confirmed(&before, 1);
    relay.kill9();
    let relay = Relay::start(&dir, &args);
    // Every move confirmed before the kill is back at once, from the journal.
    let after = relay.json("/api/boards");
    let recovered = confirmed(&after, 1);
    assert!(recovered.len() >= before.len(), "before {before:?}, after {recovered:?}");
    assert_eq!(recovered[..before.len()], before[..]);
    // And the live game continues on the same board.
    let target = recovered.len() + 4;
    let v = relay
        .wait_boards("moves after restart", Duration::from_secs(60), |v| confirmed(v, 1).len() >= target);
    let want = source_sans(game);
    let got = confirmed(&v, 1);
    assert_eq!(got, want[..got.len()], "{}", relay.logs());
    let (_, pgn) = relay.get("/pgn/1/1");
    assert!(movetext_tokens(&pgn).contains(&got[target - 1]), "{pgn}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_slow_client_does_not_delay_a_fast_one() {
    let dir = tmpdir("slow");
    let games = sample_games();
    let game = &games[0];
    let board = sim_board(&dir, 20004, SPEED);
    let link = board.path();
    let data = dir.join("data");
    let relay =
        Relay::start(&dir, &["run", "--port", link.to_str().unwrap(), "--data", data.to_str().unwrap()]);
    relay.wait_boards("active", Duration::from_secs(10), |v| v[0]["status"] == "active");
    // The slow client: connects and never reads another frame, and asks for many
    // snapshots so its socket buffers fill up.
    let (mut slow, _) = tokio_tungstenite::connect_async(ws_url(&relay)).await.unwrap();
    for _ in 0..2000 {
        if tokio::time::timeout(Duration::from_millis(50), slow.send(Message::text(r#"{"type":"resync"}"#)))
            .await
            .is_err()
        {
            break;
        }
    }
    let (mut fast, _) = tokio_tungstenite::connect_async(ws_url(&relay)).await.unwrap();
    let snap = next_json(&mut fast, Duration::from_secs(5)).await;
    assert_eq!(snap["type"], "snapshot");
    let _handle = board.start_scenario(scenario(game), StartPolicy::WhenHostListens).unwrap();
    let mut confirmed_moves = 0;
    let deadline = Instant::now() + Duration::from_secs(60);
    while confirmed_moves < 8 {
        assert!(
            Instant::now() < deadline,
            "fast client starved\n{:?}\n{}\n{:?}",
            relay.get("/api/boards"),
            relay.logs(),
            board.status()
        );
        let f = next_json(&mut fast, Duration::from_secs(20)).await;
        if f["type"] == "move" && f["state"] == "confirmed" {
            confirmed_moves += 1;
        }
    }
    // The feed and HTTP stay responsive while the slow client sits there.
    let t = Instant::now();
    let (status, _) = relay.get("/health");
    assert_eq!(status, 200);
    // A liveness bound, not a latency figure: a server stuck behind the slow client never answers.
    assert!(t.elapsed() < Duration::from_secs(10), "{:?}", t.elapsed());
    drop(slow);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn bad_websocket_messages_get_an_error_frame() {
    let dir = tmpdir("badws");
    let relay = Relay::start(
        &dir,
        &["run", "--port", "/dev/ttyUSB-absent-for-test", "--data", dir.join("d").to_str().unwrap()],
    );
    let (mut ws, _) = tokio_tungstenite::connect_async(ws_url(&relay)).await.unwrap();
    assert_eq!(next_json(&mut ws, Duration::from_secs(5)).await["type"], "snapshot");
    for bad in ["not json", r#"{"type":"subscribe","boards":"some"}"#, r#"{"type":"launch"}"#, "[1,2]"] {
        ws.send(Message::text(bad)).await.unwrap();
        let f = next_json(&mut ws, Duration::from_secs(5)).await;
        assert_eq!(
            (f["type"].as_str(), f["code"].as_str()),
            (Some("error"), Some("bad_message")),
            "{bad}: {f}"
        );
    }
    ws.send(Message::binary(vec![1, 2, 3])).await.unwrap();
    assert_eq!(next_json(&mut ws, Duration::from_secs(5)).await["type"], "error");
    // Oversized: the connection is closed by the server, others are unaffected.
    let (mut big, _) = tokio_tungstenite::connect_async(ws_url(&relay)).await.unwrap();
    let _ = next_json(&mut big, Duration::from_secs(5)).await;
    let _ = big.send(Message::text("x".repeat(100_000))).await;
    let closed = tokio::time::timeout(Duration::from_secs(5), async {
        loop {
            match big.next().await {
                None | Some(Err(_)) | Some(Ok(Message::Close(_))) => return true,
                Some(Ok(_)) => {}
            }
        }
    })
    .await;
    assert_eq!(closed, Ok(true));
    // The well-behaved connection still works.
    ws.send(Message::text(r#"{"type":"ping"}"#)).await.unwrap();
    assert_eq!(next_json(&mut ws, Duration::from_secs(5)).await["type"], "pong");
    ws.send(Message::text(r#"{"type":"subscribe","boards":[3]}"#)).await.unwrap();
    let s = next_json(&mut ws, Duration::from_secs(5)).await;
    assert_eq!(s["type"], "snapshot");
    // The missing port is reported, not fatal.
    let (status, _) = relay.get("/health");
    assert_eq!(status, 200);
    assert!(relay.logs().contains("cannot open port"));
}

#[test]
fn admin_calls_need_the_token_and_bodies_are_bounded() {
    let dir = tmpdir("admin");
    let relay = Relay::start(
        &dir,
        &["run", "--port", "/dev/ttyUSB-absent-for-test", "--data", dir.join("d").to_str().unwrap()],
    );
    let body = r#"{"round":2,"boards":[{"board":1,"white":{"name":"A, B"},"black":{"name":"C, D"}}]}"#;
    for headers in
        [&[][..], &[("Authorization", "Bearer wrong-token-0123456789")][..], &[("Authorization", TOKEN)][..]]
    {
        let (status, _) = http(relay.addr, "POST", "/api/admin/pairings", headers, body);
        assert_eq!(status, 401, "{headers:?}");
        let (status, _) = http(relay.addr, "POST", "/api/admin/boards/1/flip", headers, "{}");
        assert_eq!(status, 401);
    }
    let auth = format!("Bearer {TOKEN}");
    let ok = [("Authorization", auth.as_str())];
    let (status, text) = http(relay.addr, "POST", "/api/admin/pairings", &ok, body);
    assert_eq!(status, 200, "{text}");
    // A board that never connected: the command names the problem.
    let (status, _) = http(relay.addr, "POST", "/api/admin/boards/1/result", &ok, r#"{"result":"1-0"}"#);
    assert_eq!(status, 404);
    let (status, _) = http(relay.addr, "POST", "/api/admin/boards/1/result", &ok, r#"{"result":"2-0"}"#);
    assert_eq!(status, 422);
    let (status, _) = http(
        relay.addr,
        "POST",
        "/api/admin/pairings",
        &ok,
        &format!(r#"{{"round":1,"x":"{}"}}"#, "y".repeat(100_000)),
    );
    assert_eq!(status, 413);
    // Refusals made before a handler runs (a JSON typo, a missing field, a path that is no
    // number) are the documented JSON too.
    for (method, path, body, want) in [
        ("POST", "/api/admin/pairings", r#"{"round":2,"boards":[}"#, 400),
        ("POST", "/api/admin/boards/1/correct", r#"{"moves":[]}"#, 422),
        ("POST", "/api/admin/boards/x/flip", "{}", 400),
        ("PUT", "/api/admin/rounds/2", r#"{"lichess_round":"short"}"#, 422),
        ("POST", "/api/admin/rounds/5/finish", "{}", 409),
    ] {
        let (status, text) = http(relay.addr, method, path, &ok, body);
        assert_eq!(status, want, "{path}: {text}");
        let v: serde_json::Value =
            serde_json::from_str(&text).unwrap_or_else(|e| panic!("{path}: {e}: {text}"));
        assert!(v["error"].as_str().is_some_and(|e| !e.is_empty()), "{path}: {text}");
    }
    // Rounds: round 2 (live since the pairings above) gets a Lichess round of its own.
    let (status, text) =
        http(relay.addr, "PUT", "/api/admin/rounds/2", &ok, r#"{"lichess_round":"EfGh5678"}"#);
    assert_eq!(status, 200, "{text}");
    let (status, text) = http(relay.addr, "GET", "/api/admin/rounds", &ok, "");
    assert_eq!(status, 200, "{text}");
    let v: serde_json::Value = serde_json::from_str(&text).unwrap();
    assert_eq!(v["live"], 2, "{v}");
    let two = v["rounds"].as_array().unwrap().iter().find(|r| r["round"] == 2).cloned().unwrap();
    assert_eq!(
        (two["state"].as_str(), two["lichess_round"].as_str()),
        (Some("live"), Some("EfGh5678")),
        "{v}"
    );
    assert_eq!(two["pairings"][0]["white"]["name"], "A, B", "{v}");
    let (status, text) = http(relay.addr, "POST", "/api/admin/rounds/2/finish", &ok, "{}");
    assert_eq!(status, 200, "{text}");
    let (status, text) = http(relay.addr, "POST", "/api/admin/rounds/3/start", &ok, "{}");
    assert_eq!(status, 200, "{text}");
    assert!(text.contains(r#""state":"live""#), "{text}");
    // The port that cannot be opened is shown with its state, alerted, and /health is degraded.
    let deadline = std::time::Instant::now() + Duration::from_secs(10);
    let v = loop {
        let (status, text) = http(relay.addr, "GET", "/api/admin/boards", &ok, "");
        assert_eq!(status, 200, "{text}");
        let v: serde_json::Value = serde_json::from_str(&text).unwrap();
        if v["ports"][0]["state"] == "not_found" || std::time::Instant::now() > deadline {
            break v;
        }
        std::thread::sleep(Duration::from_millis(50));
    };
    assert_eq!(v["ports"][0]["path"], "/dev/ttyUSB-absent-for-test", "{v}");
    assert_eq!(v["ports"][0]["state"], "not_found", "{v}");
    let alert = v["alerts"].as_array().unwrap().iter().find(|a| a["code"] == "port_unopenable").cloned();
    let message = alert.as_ref().and_then(|a| a["message"].as_str()).unwrap_or_default();
    assert!(message.contains("/dev/ttyUSB-absent-for-test cannot be opened: it does not exist"), "{v}");
    let health = relay.json("/health");
    assert_eq!(
        (health["status"].as_str(), health["ports_down"].as_u64()),
        (Some("degraded"), Some(1)),
        "{health}"
    );
    // Reads need no token.
    let (status, _) = relay.get("/api/boards");
    assert_eq!(status, 200);
}

#[test]
fn a_bad_config_names_the_line_and_exits() {
    let dir = tmpdir("badcfg");
    let cfg = dir.join("relay.toml");
    std::fs::write(&cfg, "listen = \"127.0.0.1:0\"\n\n[[board]]\nnumber = 1\n[[board]]\nnumber = 1\n")
        .unwrap();
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_dgt-relay"))
        .args(["run", "--config", cfg.to_str().unwrap(), "--port", "/dev/null"])
        .output()
        .unwrap();
    assert!(!out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("relay.toml:6:") && err.contains("board 1 is listed twice"), "{err}");
    std::fs::write(&cfg, "[event]\nround = \"three\"\n").unwrap();
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_dgt-relay"))
        .args(["check-config", cfg.to_str().unwrap()])
        .output()
        .unwrap();
    assert!(!out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("relay.toml:2:"), "{err}");
}

/// Waits until the board's PGN file satisfies `f`, then returns it.
fn pgn_file_when(path: &std::path::Path, f: impl Fn(&str) -> bool) -> String {
    let deadline = Instant::now() + Duration::from_secs(5);
    loop {
        let pgn = std::fs::read_to_string(path).unwrap_or_default();
        if f(&pgn) {
            return pgn;
        }
        assert!(Instant::now() < deadline, "{pgn}");
        std::thread::sleep(Duration::from_millis(50));
    }
}

#[test]
fn arbiter_scores_and_forfeits_from_the_api_reach_the_pgn() {
    let dir = tmpdir("rulings");
    let games = sample_games();
    let board = sim_board(&dir, 20006, SPEED);
    let link = board.path();
    let data = dir.join("data");
    let relay =
        Relay::start(&dir, &["run", "--port", link.to_str().unwrap(), "--data", data.to_str().unwrap()]);
    relay.wait_boards("active", Duration::from_secs(10), |v| v[0]["status"] == "active");
    let _handle = board.start_scenario(scenario(&games[0]), StartPolicy::WhenHostListens).unwrap();
    relay.wait_boards("2 moves", Duration::from_secs(60), |v| confirmed(v, 1).len() >= 2);
    let auth = format!("Bearer {TOKEN}");
    let ok = [("Authorization", auth.as_str())];
    let file = data.join("round-1/game-1.pgn");
    // Half a point to White, none to Black: the Result tag as Lichess reads it, `*` last.
    let (status, text) = http(relay.addr, "POST", "/api/admin/boards/1/result", &ok, r#"{"result":"½-0"}"#);
    assert_eq!(status, 200, "{text}");
    assert_eq!(relay.json("/api/boards/1")["result"], "1/2-0");
    let pgn = pgn_file_when(&file, |p| p.contains("[Result \"1/2-0\"]"));
    assert!(
        pgn.ends_with(" *\n\n") && pgn.contains("[PlyCount \"") && !pgn.contains("[PlyCount \"0\"]"),
        "{pgn}"
    );
    // A forfeit: the moves the board recorded are not shown as played.
    let (status, text) = http(relay.addr, "POST", "/api/admin/boards/1/result", &ok, r#"{"result":"-+"}"#);
    assert_eq!(status, 200, "{text}");
    let pgn = pgn_file_when(&file, |p| p.contains("[Termination \"Unplayed\"]"));
    assert!(pgn.contains("[Result \"0-1\"]") && pgn.contains("[PlyCount \"0\"]"), "{pgn}");
    assert!(pgn.ends_with("\n\n0-1\n\n"), "{pgn}");
    let v = relay.json("/api/boards/1");
    assert_eq!((v["result"].as_str(), v["termination"].as_str()), (Some("0-1"), Some("Unplayed")), "{v}");
    // A result no arbiter writes is refused with the list of those they do.
    let (status, text) = http(relay.addr, "POST", "/api/admin/boards/1/result", &ok, r#"{"result":"1-1"}"#);
    assert_eq!(status, 422, "{text}");
    assert!(text.contains("1/2-0") && text.contains("+-"), "{text}");
}

/// A Chess960 event: a board set up in a 960 start position starts its game there, castles
/// as the board shows it, and its PGN has `Variant`, `SetUp` and `FEN` from the first
/// publication on.
#[test]
fn a_chess960_game_from_the_board_is_published_with_its_start_position() {
    let dir = tmpdir("c960");
    let fen = "rknnbbqr/pppppppp/8/8/8/8/PPPPPPPP/RKNNBBQR w KQkq - 0 1";
    let pgn = format!(
        "[Event \"960\"]\n[White \"A\"]\n[Black \"B\"]\n[Result \"*\"]\n[Variant \"Chess960\"]\n\
         [SetUp \"1\"]\n[FEN \"{fen}\"]\n\n1. Nb3 Nb6 2. Ne3 Ne6 3. O-O-O O-O-O 4. d4 d5 *\n\n"
    );
    let games = dgt_hil_sim::pgn::parse_games(&pgn);
    assert_eq!(games[0].moves.len(), 8, "{:?}", games[0].truncated);
    let config = dir.join("relay.toml");
    std::fs::write(&config, "[event]\nchess960 = true\n").unwrap();
    let board = sim_board(&dir, 20007, SPEED);
    let link = board.path();
    let data = dir.join("data");
    let relay = Relay::start(
        &dir,
        &[
            "run",
            "--config",
            config.to_str().unwrap(),
            "--port",
            link.to_str().unwrap(),
            "--data",
            data.to_str().unwrap(),
        ],
    );
    relay.wait_boards("active", Duration::from_secs(10), |v| v[0]["status"] == "active");
    let _handle = board.start_scenario(scenario(&games[0]), StartPolicy::WhenHostListens).unwrap();
    let file = data.join("round-1/game-1.pgn");
    // The first publication with a move already names the start position.
    let first = pgn_file_when(&file, |p| p.contains("[PlyCount \"1\"]") || p.contains("[PlyCount \"2\"]"));
    assert!(
        first.contains("[Variant \"Chess960\"]") && first.contains(&format!("[FEN \"{fen}\"]")),
        "{first}"
    );
    relay.wait_boards("8 moves", Duration::from_secs(60), |v| confirmed(v, 1).len() >= 8);
    let last = pgn_file_when(&file, |p| p.contains("[PlyCount \"8\"]"));
    assert!(last.contains("3. O-O-O {") && last.contains("3... O-O-O"), "{last}");
    assert!(last.contains("[SetUp \"1\"]"), "{last}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn admin_pairing_and_result_reach_the_pgn_and_the_feed() {
    let dir = tmpdir("admin-live");
    let games = sample_games();
    let board = sim_board(&dir, 20005, SPEED);
    let link = board.path();
    let data = dir.join("data");
    let relay =
        Relay::start(&dir, &["run", "--port", link.to_str().unwrap(), "--data", data.to_str().unwrap()]);
    relay.wait_boards("active", Duration::from_secs(10), |v| v[0]["status"] == "active");
    let _handle = board.start_scenario(scenario(&games[0]), StartPolicy::WhenHostListens).unwrap();
    relay.wait_boards("2 moves", Duration::from_secs(60), |v| confirmed(v, 1).len() >= 2);
    let auth = format!("Bearer {TOKEN}");
    let ok = [("Authorization", auth.as_str())];
    let body = r#"{"round":1,"boards":[{"board":1,"white":{"name":"Moss, M","fide_id":1234567,"title":"IM"},"black":{"name":"Tufteland, V"}}]}"#;
    let (status, text) = http(relay.addr, "POST", "/api/admin/pairings", &ok, body);
    assert_eq!(status, 200, "{text}");
    let (status, text) =
        http(relay.addr, "POST", "/api/admin/boards/1/result", &ok, r#"{"result":"1/2-1/2"}"#);
    assert_eq!(status, 200, "{text}");
    let v = relay.json("/api/boards/1");
    assert_eq!(
        (v["result"].as_str(), v["pairing"]["white"]["name"].as_str()),
        (Some("1/2-1/2"), Some("Moss, M"))
    );
    // The PGN file follows (written by the background writer).
    let deadline = Instant::now() + Duration::from_secs(5);
    loop {
        let pgn = std::fs::read_to_string(data.join("round-1/game-1.pgn")).unwrap_or_default();
        if pgn.contains("[White \"Moss, M\"]") && pgn.contains("[Result \"1/2-1/2\"]") {
            assert!(
                pgn.contains("[WhiteFideId \"1234567\"]") && pgn.contains("[WhiteTitle \"IM\"]"),
                "{pgn}"
            );
            assert!(pgn.trim_end().ends_with("1/2-1/2"), "{pgn}");
            break;
        }
        assert!(Instant::now() < deadline, "{pgn}");
        std::thread::sleep(Duration::from_millis(50));
    }
    // Bad FEN and illegal corrections are refused with a reason.
    let (status, text) =
        http(relay.addr, "POST", "/api/admin/boards/1/start-fen", &ok, r#"{"fen":"not a fen"}"#);
    assert_eq!(status, 422, "{text}");
    let (status, text) =
        http(relay.addr, "POST", "/api/admin/boards/1/correct", &ok, r#"{"from_ply":1,"moves":["e2e5"]}"#);
    assert_eq!(status, 422, "{text}");
    assert!(text.contains("not legal"), "{text}");
}
