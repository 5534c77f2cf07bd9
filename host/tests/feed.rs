//! The websocket fan-out in process: a hub, its writers and real websocket clients on
//! loopback. Every client gets every frame it subscribed to, in order and without a gap
//! (a subscription to some boards numbered on its own), while a client that reads nothing
//! is resynchronised and then dropped without holding the others back; at shutdown every
//! client gets the closing frame.
#![allow(clippy::unwrap_used)]

use std::sync::Arc;
use std::time::Duration;

use axum::extract::{Request, State};
use dgt_relay::clock::Clock;
use dgt_relay::feed::{AlertCode, AlertLevel, AlertView, ClientLimits, Delta, Hub, MoveState, MoveView};
use dgt_relay::shutdown::Shutdown;
use futures_util::{SinkExt, StreamExt};
use tokio_tungstenite::tungstenite::Message;

type Ws = tokio_tungstenite::WebSocketStream<tokio_tungstenite::MaybeTlsStream<tokio::net::TcpStream>>;

/// Serves `/ws` of `hub` on a loopback port, with the relay's HTTP server.
async fn serve(hub: Arc<Hub>, stop: &Shutdown) -> std::net::SocketAddr {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    let stop = stop.listener();
    let app = axum::Router::new()
        .route(
            "/ws",
            axum::routing::get(
                |State((hub, stop)): State<(Arc<Hub>, dgt_relay::shutdown::Listener)>, req: Request| async move {
                    dgt_relay::http::feed_upgrade(req, hub, stop, ClientLimits::default())
                },
            ),
        )
        .with_state((hub, stop.clone()));
    let limits = dgt_relay::server::ServerLimits::default();
    let conns = dgt_relay::server::Connections::new(limits.max_connections);
    tokio::spawn(dgt_relay::server::serve(listener, app, limits, conns, stop));
    addr
}

async fn connect(addr: std::net::SocketAddr) -> Ws {
    tokio_tungstenite::connect_async(format!("ws://{addr}/ws")).await.unwrap().0
}

async fn next(ws: &mut Ws) -> serde_json::Value {
    loop {
        match tokio::time::timeout(Duration::from_secs(20), ws.next()).await.unwrap().unwrap().unwrap() {
            Message::Text(t) => return serde_json::from_str(t.as_str()).unwrap(),
            Message::Close(c) => {
                return serde_json::json!({ "type": "closed", "code": c.map(|c| u16::from(c.code)) });
            }
            _ => {}
        }
    }
}

fn mv(board: u32, ply: u32) -> Delta {
    let mv = MoveView { ply, san: "Nf3".into(), uci: "g1f3".into(), clk: None, emt: None, at: None };
    Delta::Move { board, state: MoveState::Provisional, mv, fen: None }
}

/// A frame of 8 KB, so that a client that reads nothing fills its socket's buffers.
fn bulky(i: usize) -> Delta {
    let message = format!("{i} {}", "x".repeat(8000));
    Delta::Alert {
        board: None,
        alert: AlertView { code: AlertCode::Storage, level: AlertLevel::Info, message, squares: vec![] },
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_client_gets_its_frames_in_order_and_a_client_that_reads_nothing_holds_no_one_back() {
    let hub = Arc::new(Hub::new(1, Clock::system()));
    let stop = Shutdown::new();
    let addr = serve(Arc::clone(&hub), &stop).await;
    let mut all = connect(addr).await;
    let mut some = connect(addr).await;
    let mut idle = connect(addr).await;
    for ws in [&mut all, &mut some, &mut idle] {
        assert_eq!(next(ws).await["type"], "snapshot");
    }
    some.send(Message::text(r#"{"type":"subscribe","boards":[2]}"#)).await.unwrap();
    let snap = next(&mut some).await;
    assert_eq!(snap["type"], "snapshot");
    let from = snap["seq"].as_u64().unwrap();

    // Moves on three boards, and bulky frames that the idle client's socket cannot hold.
    // (A real sleep: the clients are real sockets, read by other tasks.)
    let publisher = {
        let hub = Arc::clone(&hub);
        tokio::task::spawn_blocking(move || {
            for i in 0..12_000usize {
                hub.publish(if i % 2 == 0 { mv(1 + (i as u32 / 2) % 3, i as u32) } else { bulky(i) });
                // At a pace the reading clients keep up with.
                if i % 100 == 99 {
                    std::thread::sleep(Duration::from_millis(5));
                }
            }
        })
    };
    // Both reading clients are read at once, each in its own task.
    let reading_all = tokio::spawn(async move {
        let mut last = None;
        for _ in 0..12_000 {
            let f = next(&mut all).await;
            assert_ne!(f["type"], "snapshot", "the reading client never lagged");
            let seq = f["seq"].as_u64().unwrap();
            assert!(last.is_none_or(|l| seq == l + 1), "a gap or a repeat at {seq}");
            last = Some(seq);
        }
        all
    });
    // The subscription to board 2: its moves (and the relay-wide frames, which every
    // client gets), numbered from its snapshot on.
    let reading_some = tokio::spawn(async move {
        let mut expect = from;
        let mut moves = 0;
        while moves < 2_000 {
            let f = next(&mut some).await;
            let what = (f["type"].as_str().map(str::to_owned), f["board"].as_u64());
            let ok =
                matches!(&what, (Some(t), Some(2)) if t == "move") || what == (Some("alert".into()), None);
            assert!(ok, "{what:?}");
            moves += usize::from(what.1 == Some(2));
            expect += 1;
            assert_eq!(f["seq"].as_u64(), Some(expect));
        }
        some
    });
    publisher.await.unwrap();
    let mut all = reading_all.await.unwrap();
    let mut some = reading_some.await.unwrap();
    // The idle client lagged, was resynchronised, and was dropped in the end; it holds
    // nothing up. Reading it now shows frames up to a resync or the end, never a gap.
    let mut closed = false;
    let mut seq = None;
    for _ in 0..20_000 {
        let f = match tokio::time::timeout(Duration::from_secs(10), idle.next()).await {
            Ok(Some(Ok(Message::Text(t)))) => serde_json::from_str::<serde_json::Value>(t.as_str()).unwrap(),
            Ok(Some(Ok(_))) => continue,
            _ => {
                closed = true;
                break;
            }
        };
        match f["type"].as_str() {
            Some("snapshot") => seq = f["seq"].as_u64(),
            Some("error") => assert_eq!(f["code"], "too_slow"),
            _ => {
                let s = f["seq"].as_u64().unwrap();
                assert!(seq.is_none_or(|p| s == p + 1), "a gap after {seq:?}: {s}");
                seq = Some(s);
            }
        }
    }
    assert!(closed, "the idle client was dropped");

    // Shutdown: the others get the closing frame.
    stop.trigger();
    for ws in [&mut all, &mut some] {
        let mut code = None;
        while code.is_none() {
            let f = next(ws).await;
            if f["type"] == "closed" {
                code = f["code"].as_u64();
            }
        }
        assert_eq!(code, Some(1001));
    }
}
