//! DGT LiveChess's EBoard API through the real `dgt-relay` process, with simulated boards
//! on real ptys: the conversations recorded from LiveChess's clients (chess.com, DgtAngel,
//! lichess-dgt-boards, livechess-go), answer by answer; a feed message on every physical
//! change; several boards and a chain of boards listed as several eboards; setup and flip.
#![allow(clippy::unwrap_used)]

mod common;

use std::path::PathBuf;
use std::time::{Duration, Instant};

use common::*;
use dgt_hil_sim::chain::SimChain;
use dgt_hil_sim::firmware::BoardConfig;
use dgt_hil_sim::{SimConfig, StartPolicy};
use futures_util::SinkExt;
use serde_json::{Value, json};
use tokio_tungstenite::tungstenite::Message;

const START: &str = "rnbqkbnr/pppppppp/8/8/8/8/PPPPPPPP/RNBQKBNR";
const START_FEN: &str = "rnbqkbnr/pppppppp/8/8/8/8/PPPPPPPP/RNBQKBNR w KQkq - 0 1";

/// A loopback port nobody listens on now.
fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port()
}

struct Api {
    ws: Ws,
}

impl Api {
    async fn connect(port: u16) -> Api {
        let (ws, _) =
            tokio_tungstenite::connect_async(format!("ws://127.0.0.1:{port}/api/v1.0")).await.unwrap();
        Api { ws }
    }

    async fn send(&mut self, text: &str) {
        self.ws.send(Message::Text(text.into())).await.unwrap();
    }

    async fn next(&mut self) -> Value {
        ws_next(&mut self.ws, Duration::from_secs(10)).await
    }

    /// Sends a call and returns its answer, checking the envelope LiveChess gives.
    async fn call(&mut self, text: &str) -> Value {
        self.send(text).await;
        let v = self.next().await;
        let id = serde_json::from_str::<Value>(text)
            .ok()
            .and_then(|c| c.get("id").cloned())
            .unwrap_or(Value::Null);
        assert_eq!(v["id"], id, "{v}");
        assert!(v["time"].as_u64().is_some_and(|t| t > 1_600_000_000_000), "time in ms since 1970: {v}");
        assert_eq!(v.as_object().unwrap().len(), 4, "response, id, param, time: {v}");
        v
    }
}

fn board_of<'a>(list: &'a Value, serial: &str) -> &'a Value {
    list.as_array()
        .unwrap()
        .iter()
        .find(|b| b["serialnr"] == serial)
        .unwrap_or_else(|| panic!("{serial} in {list}"))
}

fn start_relay(dir: &std::path::Path, port: u16, extra: &[&str]) -> Relay {
    let data = dir.join("data");
    let api = format!("127.0.0.1:{port}");
    let mut args = vec!["run", "--data", data.to_str().unwrap(), "--eboard-api", &api];
    args.extend_from_slice(extra);
    Relay::start(dir, &args)
}

/// The recorded conversations, answer by answer: the board list in each envelope form, a
/// subscription with its initial feed message, refusals in LiveChess's error shape, and a
/// bad frame that closes no client.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn recorded_client_conversations_get_livechess_answers() {
    let dir = tmpdir("eboard-conversation");
    let board = sim_board(&dir, 20301, 10.0);
    let link: PathBuf = board.path();
    let port = free_port();
    let relay = start_relay(&dir, port, &["--port", link.to_str().unwrap()]);
    relay.wait_boards("active", Duration::from_secs(10), |v| v[0]["status"] == "active");

    let mut chesscom = Api::connect(port).await;
    // chess.com: no param at all.
    let list = chesscom.call(r#"{"id":1,"call":"eboards"}"#).await;
    assert_eq!(list["response"], "call");
    let b = board_of(&list["param"], "20301");
    let keys: Vec<&str> = b.as_object().unwrap().keys().map(String::as_str).collect();
    assert_eq!(keys.len(), 8, "{b}");
    for k in ["serialnr", "source", "state", "battery", "comment", "board", "flipped", "clock"] {
        assert!(keys.contains(&k), "{k} in {b}");
    }
    assert_eq!(b["source"], link.to_str().unwrap());
    assert_eq!(b["state"], "ACTIVE");
    // A string with a percent sign, or null without a battery.
    assert!(b["battery"].is_null() || b["battery"].as_str().is_some_and(|s| s.ends_with('%')), "{b}");
    // null, or the clock as LiveChess gives it (the simulated board has a DGT 3000).
    assert!(b["clock"].is_null() || b["clock"].as_object().is_some_and(|c| c.len() == 4), "{b}");
    assert_eq!(b["comment"], Value::Null);
    assert_eq!(b["board"], START);
    assert_eq!(b["flipped"], false);
    // DgtAngel: param null; lichess-dgt-boards' other form: {}.
    for (id, text) in
        [(7, r#"{"call": "eboards","id": 7,"param": null}"#), (8, r#"{"call":"eboards","id":8,"param":{}}"#)]
    {
        let v = chesscom.call(text).await;
        assert_eq!((v["response"].as_str(), v["id"].as_i64()), (Some("call"), Some(id)));
        assert_eq!(board_of(&v["param"], "20301")["board"], START);
    }
    // The same list over REST (livechess-go).
    let (status, body) =
        http(format!("127.0.0.1:{port}").parse().unwrap(), "GET", "/api/v1.0/eboards", &[], "");
    assert_eq!(status, 200, "{body}");
    let rest: Value = serde_json::from_str(&body).unwrap();
    assert_eq!(board_of(&rest, "20301"), b);

    // A second client sends garbage and a binary frame, then goes away rudely.
    let mut rude = Api::connect(port).await;
    let v = rude.call("{\"id\": 3, \"call\"").await;
    assert_eq!(v["response"], "error");
    assert!(v["param"]["message"].as_str().unwrap().contains("JSON"), "{v}");
    rude.ws.send(Message::Binary(vec![0xff, 0x00].into())).await.unwrap();
    assert_eq!(rude.next().await["response"], "error");
    let v = rude.call(r#"{"id":4,"call":"sources"}"#).await;
    assert_eq!(v["response"], "error", "an unknown call: {v}");
    assert_eq!(v["id"], 4);
    assert!(v["param"]["message"].as_str().unwrap().contains("sources"), "{v}");
    let v = rude.call(r#"{"id":5,"call":"subscribe","param":{"feed":"eboardevent","id":1,"param":{"serialnr":"99999"}}}"#).await;
    assert_eq!(v["response"], "error", "an unknown board: {v}");
    drop(rude);

    // chess.com's subscription, as recorded: the answer is null, a feed message follows at
    // once with the board and a null clock.
    let v = chesscom.call(r#"{"id":2,"call":"subscribe","param":{"feed":"eboardevent","id":1,"param":{"serialnr":"20301"}}}"#).await;
    assert_eq!(v, json!({"response":"call","id":2,"param":null,"time":v["time"]}));
    let f = chesscom.next().await;
    assert_eq!(f["response"], "feed");
    assert_eq!(f["id"], 1);
    assert_eq!(f["param"], json!({"serialnr":"20301","flipped":false,"board":START,"clock":b["clock"]}));
    // The first client still answers after the other's bad frames.
    let v = chesscom.call(r#"{"id":3,"call":"eboards"}"#).await;
    assert_eq!(v["response"], "call");
    // A call on a feed that does not exist.
    let v = chesscom.call(r#"{"id":4,"call":"call","param":{"id":9,"method":"setup","param":{"fen":"8/8/8/8/8/8/8/8 w - - 0 1"}}}"#).await;
    assert_eq!(v["response"], "error", "{v}");
    let v = chesscom
        .call(r#"{"id":5,"call":"call","param":{"id":1,"method":"setup","param":{"fen":"not a fen"}}}"#)
        .await;
    assert_eq!(v["response"], "error", "{v}");
    let _ = std::fs::remove_dir_all(&dir);
}

/// Pieces on a FEN's first field.
fn pieces(placement: &str) -> usize {
    placement.chars().filter(char::is_ascii_alphabetic).count()
}

/// Two single boards and a chain of two: four eboards. One board's game is played: a feed
/// message for each physical change (pieces in the air too), `san[]` from the relay's
/// confirmed moves after `setup`, then `flip`.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_board_and_every_change_is_fed_and_setup_gives_the_relays_moves() {
    let dir = tmpdir("eboard-feed");
    let games = sample_games();
    let game = &games[0];
    let played = sim_board(&dir, 20401, 10.0);
    let idle = sim_board(&dir, 20402, 10.0);
    let template = SimConfig { board: BoardConfig::with_serial(12401), speed: 10.0, ..SimConfig::default() };
    let chain = SimChain::spawn(2, &template, Some(&dir.join("chain"))).unwrap();
    let port = free_port();
    let (p1, p2, bus) = (played.path(), idle.path(), chain.path());
    let relay = start_relay(
        &dir,
        port,
        &["--port", p1.to_str().unwrap(), "--port", p2.to_str().unwrap(), "--bus", bus.to_str().unwrap()],
    );
    relay.wait_boards("four boards active", Duration::from_secs(30), |v| {
        v.as_array().is_some_and(|a| a.len() == 4 && a.iter().all(|b| b["status"] == "active"))
    });

    let rest: std::net::SocketAddr = format!("127.0.0.1:{port}").parse().unwrap();
    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        let (_, body) = http(rest, "GET", "/api/v1.0/eboards", &[], "");
        let v: Value = serde_json::from_str(&body).unwrap();
        if v.as_array().is_some_and(|a| a.len() == 4 && a.iter().all(|b| b["board"].is_string())) {
            break;
        }
        assert!(Instant::now() < deadline, "every board read: {v}");
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    let mut api = Api::connect(port).await;
    let list = api.call(r#"{"id":1,"call":"eboards","param":null}"#).await["param"].clone();
    assert_eq!(list.as_array().unwrap().len(), 4, "{list}");
    for serial in ["20401", "20402", "12401", "12402"] {
        assert_eq!(board_of(&list, serial)["state"], "ACTIVE", "{list}");
        assert_eq!(board_of(&list, serial)["board"], START, "{list}");
    }
    for serial in ["12401", "12402"] {
        let source = board_of(&list, serial)["source"].as_str().unwrap();
        assert!(source.starts_with(bus.to_str().unwrap()), "a chained board's port: {list}");
    }

    // Feeds on the played board and on an idle one; the setup of the start position on the
    // played board.
    api.call(
        r#"{"id":2,"call":"subscribe","param":{"feed":"eboardevent","id":10,"param":{"serialnr":"20401"}}}"#,
    )
    .await;
    assert_eq!(api.next().await["id"], 10);
    api.call(
        r#"{"id":3,"call":"subscribe","param":{"feed":"eboardevent","id":11,"param":{"serialnr":"12402"}}}"#,
    )
    .await;
    assert_eq!(api.next().await["param"]["serialnr"], "12402");
    let setup = format!(
        r#"{{"id":4,"call":"call","param":{{"id":10,"method":"setup","param":{{"fen":"{START_FEN}"}}}}}}"#
    );
    let v = api.call(&setup).await;
    assert_eq!(v["response"], "call", "{v}");
    let f = api.next().await;
    assert_eq!((f["id"].as_i64(), f["param"]["start"].as_str()), (Some(10), Some(START_FEN)), "{f}");
    assert_eq!(f["param"]["san"], json!([]));

    let _h = played.start_scenario(scenario(game), StartPolicy::WhenHostListens).unwrap();
    let want = source_sans(game);
    let plies = 8;
    let mut boards: Vec<String> = vec![START.to_owned()];
    let mut san: Vec<String> = Vec::new();
    let deadline = Instant::now() + Duration::from_secs(120);
    while san.len() < plies {
        assert!(Instant::now() < deadline, "{san:?} after {} boards\n{}", boards.len(), relay.logs());
        let f = api.next().await;
        assert_eq!(f["response"], "feed", "{f}");
        if f["id"] == 11 {
            // The idle chained board: its clock may be read, its pieces never move.
            assert_eq!(f["param"]["serialnr"], "12402", "{f}");
            assert!(f["param"].get("board").is_none_or(|b| b == START), "{f}");
            continue;
        }
        assert_eq!(f["id"], 10, "{f}");
        let p = &f["param"];
        assert_eq!(p["serialnr"], "20401");
        assert_eq!(p["start"], START_FEN, "every message after setup has start: {f}");
        if let Some(b) = p["board"].as_str() {
            assert_ne!(Some(b), boards.last().map(String::as_str), "one message per change: {f}");
            boards.push(b.to_owned());
        }
        let now: Vec<String> =
            p["san"].as_array().unwrap().iter().map(|s| s.as_str().unwrap().to_owned()).collect();
        assert!(now.len() >= san.len() || now.len() + 1 == san.len(), "{now:?} after {san:?}");
        assert_eq!(now[..], want[..now.len()], "the relay's confirmed moves");
        san = now;
    }
    // Each move is a lift and a place at least: the piece in the air is a board of its own.
    assert!(boards.len() > 2 * plies, "{} boards for {plies} plies: {boards:?}", boards.len());
    assert!(
        boards.windows(2).any(|w| pieces(&w[1]) + 1 == pieces(&w[0]) && pieces(&w[0]) == 32),
        "a piece in the air before the first capture: {boards:?}"
    );
    let all = relay.json("/api/boards");
    let number =
        all.as_array().unwrap().iter().find(|b| b["serial"] == "20401").unwrap()["board"].as_u64().unwrap();
    let relay_sans = confirmed(&all, number);
    assert!(relay_sans.starts_with(&san), "{relay_sans:?} vs {san:?}");

    // Flip: the board is turned; its feed says so with the board seen the other way round.
    let before = api.call(r#"{"id":5,"call":"eboards"}"#).await;
    let shown = board_of(&before["param"], "20401")["board"].as_str().unwrap().to_owned();
    let v =
        api.call(r#"{"id":6,"call":"call","param":{"id":10,"method":"flip","param":{"flip":true}}}"#).await;
    assert_eq!(v["response"], "call", "{v}");
    let turned = loop {
        let f = api.next().await;
        if f["param"]["flipped"] == true && f["param"]["board"].is_string() {
            break f;
        }
    };
    let rotated: String = shown.chars().rev().collect();
    let board = turned["param"]["board"].as_str().unwrap();
    assert_eq!(
        board.replace(|c: char| c.is_ascii_digit(), ""),
        rotated.replace(|c: char| c.is_ascii_digit(), "")
    );
    let after = api.call(r#"{"id":7,"call":"eboards"}"#).await;
    assert_eq!(board_of(&after["param"], "20401")["flipped"], true);
    drop(chain);
    let _ = std::fs::remove_dir_all(&dir);
}
