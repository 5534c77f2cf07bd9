//! Operator alerts of the real `dgt-relay` process: battery, clock battery, clock
//! connection and clock pauses, caused on simulated boards and seen on a websocket client
//! and in `/api/boards`.
#![allow(clippy::unwrap_used)]

mod common;

use std::path::Path;
use std::time::{Duration, Instant};

use common::*;
use dgt_hil_sim::{Action, BoardConfig, Button, SimBoard, SimConfig, TimeControl};
use dgt_protocol::ClockSide;
use futures_util::StreamExt;
use tokio_tungstenite::tungstenite::Message;

type Ws = tokio_tungstenite::WebSocketStream<tokio_tungstenite::MaybeTlsStream<tokio::net::TcpStream>>;

async fn connect(r: &Relay) -> Ws {
    let (mut ws, _) = tokio_tungstenite::connect_async(format!("ws://{}/ws", r.addr)).await.unwrap();
    assert_eq!(next_frame(&mut ws, Duration::from_secs(5)).await["type"], "snapshot");
    ws
}

async fn next_frame(ws: &mut Ws, timeout: Duration) -> serde_json::Value {
    loop {
        let msg = tokio::time::timeout(timeout, ws.next()).await.expect("a frame in time").unwrap().unwrap();
        if let Message::Text(t) = msg {
            return serde_json::from_str(t.as_str()).unwrap();
        }
    }
}

/// Reads frames until an alert with `code` arrives; returns it and the alert codes seen on
/// the way.
async fn wait_alert(ws: &mut Ws, code: &str, timeout: Duration) -> (serde_json::Value, Vec<String>) {
    let deadline = Instant::now() + timeout;
    let mut seen = Vec::new();
    loop {
        let left = deadline.saturating_duration_since(Instant::now());
        assert!(!left.is_zero(), "no {code} alert within {timeout:?}; saw {seen:?}");
        let f = next_frame(ws, left).await;
        if f["type"] == "alert" {
            let c = f["alert"]["code"].as_str().unwrap_or_default().to_owned();
            if c == code {
                assert_eq!(f["board"], 1, "{f}");
                return (f, seen);
            }
            seen.push(c);
        }
    }
}

/// The codes of board 1's alerts in `/api/boards`, oldest first.
fn codes(boards: &serde_json::Value) -> Vec<String> {
    boards[0]["alerts"]
        .as_array()
        .map(|a| a.iter().filter_map(|a| a["code"].as_str().map(str::to_owned)).collect())
        .unwrap_or_default()
}

fn count(boards: &serde_json::Value, code: &str) -> usize {
    codes(boards).iter().filter(|c| *c == code).count()
}

fn start_relay(dir: &Path, board: &SimBoard, config: &str) -> Relay {
    let cfg = dir.join("relay.toml");
    std::fs::write(&cfg, config).unwrap();
    let link = board.path();
    let data = dir.join("data");
    Relay::start(
        dir,
        &[
            "run",
            "--config",
            cfg.to_str().unwrap(),
            "--port",
            link.to_str().unwrap(),
            "--data",
            data.to_str().unwrap(),
        ],
    )
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn battery_and_clock_health_alerts_reach_the_feed_and_the_api() {
    let dir = tmpdir("alerts-health");
    let board = SimBoard::spawn(SimConfig {
        board: BoardConfig { battery_percent: Some(15), ..BoardConfig::with_serial(20101) },
        link: Some(dir.join("board-20101")),
        speed: 10.0,
        ..SimConfig::default()
    })
    .unwrap();
    let relay = start_relay(&dir, &board, "battery_poll_ms = 1000\n");
    let mut ws = connect(&relay).await;

    // The first request goes with the handshake: the charge is known at once; low on the
    // second reading too, it is alerted.
    let (low, _) = wait_alert(&mut ws, "battery_low", Duration::from_secs(10)).await;
    assert_eq!(low["alert"]["level"], "warning");
    let message = low["alert"]["message"].as_str().unwrap();
    assert!(message.contains("15 %") && message.contains("charge or swap the board's battery"), "{message}");
    let v = relay.wait_boards("battery 15", Duration::from_secs(5), |v| v[0]["battery"] == 15);
    assert_eq!(count(&v, "battery_low"), 1);

    // Within the hysteresis band: polled again (the new charge shows), no new alert.
    board.set_battery(Some(22)).unwrap();
    relay.wait_boards("battery 22", Duration::from_secs(10), |v| v[0]["battery"] == 22);
    std::thread::sleep(Duration::from_millis(2500));
    let v = relay.json("/api/boards");
    assert_eq!((count(&v, "battery_low"), count(&v, "battery_ok")), (1, 0), "{v}");

    board.set_battery(Some(80)).unwrap();
    let (ok, seen) = wait_alert(&mut ws, "battery_ok", Duration::from_secs(10)).await;
    assert!(!seen.contains(&"battery_low".to_owned()), "{seen:?}");
    assert!(ok["alert"]["message"].as_str().unwrap().contains("80 %"), "{ok}");
    relay.wait_boards("battery 80", Duration::from_secs(5), |v| v[0]["battery"] == 80);

    // The clock's battery-low sign (status D2), once per change.
    board.set_clock_battery_low(true).unwrap();
    wait_alert(&mut ws, "clock_battery_low", Duration::from_secs(10)).await;
    board.set_clock_battery_low(false).unwrap();
    wait_alert(&mut ws, "clock_battery_ok", Duration::from_secs(10)).await;

    // The clock is unplugged (status D5) and plugged back in.
    board.set_clock(None).unwrap();
    let (lost, _) = wait_alert(&mut ws, "clock_lost", Duration::from_secs(10)).await;
    assert_eq!(lost["alert"]["level"], "warning");
    board.set_clock(Some((TimeControl::fischer(5400, 30), ClockSide::Left))).unwrap();
    wait_alert(&mut ws, "clock_back", Duration::from_secs(10)).await;

    let v = relay.json("/api/boards");
    for code in ["battery_ok", "clock_battery_low", "clock_battery_ok", "clock_lost", "clock_back"] {
        assert_eq!(count(&v, code), 1, "{code}: {:?}", codes(&v));
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_clock_stopped_during_a_live_game_alerts_the_operator() {
    let dir = tmpdir("alerts-pause");
    // The board starts with the pieces on their squares: a game starts at once. Its clock
    // is set and stopped.
    let board = sim_board(&dir, 20102, 10.0);
    let relay = start_relay(&dir, &board, "");
    relay.wait_boards("a game", Duration::from_secs(10), |v| {
        v[0]["status"] == "active" && v[0]["fen"].is_string()
    });
    let mut ws = connect(&relay).await;

    board.act(Action::StartClock).unwrap();
    relay.wait_boards("clock running", Duration::from_secs(10), |v| v[0]["clock"]["running"] == "white");
    board.act(Action::Button { button: Button::Run }).unwrap();
    let stopped = Instant::now();
    let (paused, _) = wait_alert(&mut ws, "clock_paused", Duration::from_secs(10)).await;
    assert!(stopped.elapsed() >= Duration::from_millis(2500), "alerted after {:?}", stopped.elapsed());
    assert_eq!(paused["alert"]["level"], "warning");
    assert_eq!(
        paused["alert"]["message"],
        "The clock is stopped on board 1: restart it, or if the game is over set its result in the console (open board 1, Set result)."
    );
    board.act(Action::Button { button: Button::Run }).unwrap();
    let (_, seen) = wait_alert(&mut ws, "clock_running", Duration::from_secs(10)).await;
    assert!(seen.is_empty(), "{seen:?}");

    // After the result, a stopped clock is expected: no alert.
    let auth = format!("Bearer {TOKEN}");
    let (status, text) = http(
        relay.addr,
        "POST",
        "/api/admin/boards/1/result",
        &[("Authorization", &auth)],
        r#"{"result":"1-0"}"#,
    );
    assert_eq!(status, 200, "{text}");
    board.act(Action::Button { button: Button::Run }).unwrap();
    relay.wait_boards("clock stopped", Duration::from_secs(10), |v| v[0]["clock"]["running"].is_null());
    std::thread::sleep(Duration::from_secs(4));
    let v = relay.json("/api/boards");
    assert_eq!((count(&v, "clock_paused"), count(&v, "clock_running")), (1, 1), "{:?}", codes(&v));
}

/// Issue 34: a port where nothing answers (neither one board nor a chain in bus mode) raises
/// a relay-wide `port_unidentified` alert naming the port, once while nothing changes.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_port_nothing_answers_on_is_told_to_the_operator() {
    let dir = tmpdir("port-unidentified");
    let silent = dgt_hil_sim::pty::Pty::open().unwrap();
    let path = silent.slave_path().display().to_string();
    let relay = Relay::start(&dir, &["run", "--port", &path]);
    let (mut ws, _) = ws_connect(&relay).await;
    let deadline = Instant::now() + Duration::from_secs(30);
    let alert = loop {
        let left = deadline.saturating_duration_since(Instant::now());
        assert!(!left.is_zero(), "no port_unidentified alert\n{}", relay.logs());
        let f = ws_next(&mut ws, left).await;
        if f["type"] == "alert" && f["alert"]["code"] == "port_unidentified" {
            break f;
        }
    };
    assert!(alert["board"].is_null(), "{alert}");
    assert_eq!(alert["alert"]["level"], "warning");
    // The port's path is the operator's (spectators see `<port>`).
    let message = alert["alert"]["message"].as_str().unwrap_or_default();
    assert!(message.contains("no board answered") && message.contains("bus mode"), "{message}");
    // Raised once while nothing changes (the port is tried again meanwhile).
    let quiet_until = Instant::now() + Duration::from_secs(8);
    while let Some(left) = quiet_until.checked_duration_since(Instant::now()) {
        match tokio::time::timeout(left, futures_util::StreamExt::next(&mut ws)).await {
            Ok(Some(Ok(Message::Text(t)))) => {
                let f: serde_json::Value = serde_json::from_str(t.as_str()).unwrap();
                assert!(f["alert"]["code"] != "port_unidentified", "raised again: {f}");
            }
            Ok(_) => {}
            Err(_) => break,
        }
    }
    drop(silent);
    let _ = std::fs::remove_dir_all(&dir);
}
