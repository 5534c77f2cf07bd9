//! Venue relays and spectator edges on a real NATS JetStream server: two venue relays
//! (simulated boards, boards 1-2 and 3-4 of one event) publish; two edges serve a
//! websocket client each. The server is killed mid-round and restarted, then a venue relay
//! is killed with SIGKILL and restarted. Afterwards each edge's client must have received
//! every confirmed move of every journal exactly once and in journal order, and each
//! edge's PGN over HTTP must be the game its journal tells. Then one edge is killed: a
//! client that reconnects to the other gets every game whole; and a new edge started last
//! catches up from the stream.
//!
//! Without `nats-server` the test says so and skips, unless `DGT_REQUIRE_NATS=1` (CI).

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use dgt_e2e_tests::feed::Recorder;
use dgt_e2e_tests::nats::{NatsServer, nats_binary, nats_required};
use dgt_e2e_tests::relay::{Relay, relay_binary};
use dgt_relay::record::Record;

/// Simulator speed: thinking time fast-forwarded, hands at their own pace.
const SPEED: &str = "50";

/// One game as its journal tells it.
#[derive(Debug)]
struct Game {
    /// Every Move record, in journal order (later takebacks included).
    sent: Vec<(u32, String)>,
    /// The moves that stand at the end (UCI).
    last: Vec<String>,
    /// Its PGN as an edge writes it.
    pgn: String,
}

/// Games keyed by (board, round).
type Games = BTreeMap<(u64, u64), Game>;

fn journals(data: &Path) -> Games {
    let mut out = Games::new();
    let Ok(rounds) = std::fs::read_dir(data) else { return out };
    for r in rounds.flatten() {
        let Ok(files) = std::fs::read_dir(r.path()) else { continue };
        for f in files.flatten() {
            let p = f.path();
            if p.extension().is_none_or(|e| e != "journal") {
                continue;
            }
            let text = std::fs::read_to_string(&p).unwrap_or_default();
            let mut moves = Vec::new();
            for line in text.lines() {
                if let Ok(Record::Move(m)) = serde_json::from_str::<Record>(line) {
                    moves.push((m.ply, m.uci));
                }
            }
            let Ok(Some(g)) = dgt_relay::store::replay(&p) else { continue };
            let key = (u64::from(g.header.board), u64::from(g.header.round));
            let last = g.moves.iter().map(|m| m.uci.clone()).collect();
            out.insert(key, Game { sent: moves, last, pgn: dgt_relay::pgn::write_game(&g, None) });
        }
    }
    out
}

fn seen(rec: &Recorder) -> BTreeMap<(u64, u64), Vec<(u32, String)>> {
    rec.with(|s| s.games.iter().map(|(k, g)| (*k, g.confirmed_sent.clone())).collect())
}

fn total_moves(rec: &Recorder) -> usize {
    rec.with(|s| s.games.values().map(|g| g.confirmed_sent.len()).sum())
}

fn venue_moves(v: &Relay) -> usize {
    v.json("/api/boards")
        .ok()
        .and_then(|b| {
            b.as_array().map(|a| a.iter().filter_map(|x| x["moves"].as_array().map(Vec::len)).sum())
        })
        .unwrap_or(0)
}

/// Waits until `done`, failing with `what` after `limit`.
fn wait_for(what: &str, limit: Duration, mut done: impl FnMut() -> bool) {
    let deadline = Instant::now() + limit;
    while !done() {
        assert!(Instant::now() < deadline, "timed out waiting for {what}");
        std::thread::sleep(Duration::from_millis(100));
    }
}

fn venue(bin: &Path, dir: &Path, first_board: u32, url: &str) -> Relay {
    let args: Vec<String> = [
        "demo",
        "--boards",
        "2",
        "--first-board",
        &first_board.to_string(),
        "--speed",
        SPEED,
        "--nats",
        url,
        "--data",
    ]
    .iter()
    .map(|s| (*s).to_owned())
    .chain([dir.join("data").display().to_string()])
    .collect();
    Relay::start(bin, dir, &args).expect("venue relay starts")
}

fn edge(bin: &Path, dir: &Path, url: &str) -> Relay {
    let args = vec![
        "edge".into(),
        "--nats".into(),
        url.to_owned(),
        "--data".into(),
        dir.join("data").display().to_string(),
    ];
    Relay::start(bin, dir, &args).expect("edge starts")
}

#[test]
fn two_venues_two_edges_lose_and_duplicate_nothing_when_nats_or_a_venue_dies() {
    let Some(nats_bin) = nats_binary() else {
        assert!(!nats_required(), "DGT_REQUIRE_NATS=1 but nats-server is not installed");
        println!(
            "SKIPPED: nats-server is not installed (apt-get install nats-server); set DGT_REQUIRE_NATS=1 to fail instead"
        );
        return;
    };
    let bin = relay_binary(false).unwrap_or_else(|e| panic!("{e:#}"));
    let root: PathBuf = dgt_e2e_tests::acceptance::work_dir("nats");
    let _ = std::fs::remove_dir_all(&root);
    let mut nats = NatsServer::start(&nats_bin, &root.join("nats")).expect("nats-server starts");
    let url = nats.url();
    let rt = tokio::runtime::Runtime::new().expect("runtime");

    // Edges and their clients first: every move then reaches the clients as a delta.
    let edges = [edge(&bin, &root.join("edge-a"), &url), edge(&bin, &root.join("edge-b"), &url)];
    let clients: Vec<Recorder> =
        edges.iter().map(|e| Recorder::start(rt.handle(), e.addr).expect("websocket client")).collect();
    let mut v1 = venue(&bin, &root.join("venue-1"), 1, &url);
    let mut v2 = venue(&bin, &root.join("venue-2"), 3, &url);

    wait_for("moves on the edges", Duration::from_secs(30), || clients.iter().all(|c| total_moves(c) >= 10));

    // The server dies mid-round; the venues go on journaling.
    nats.kill();
    let before = venue_moves(&v1) + venue_moves(&v2);
    wait_for("moves while NATS is down", Duration::from_secs(20), || {
        venue_moves(&v1) + venue_moves(&v2) >= before + 4
    });
    let edge_before = total_moves(&clients[0]);
    nats.restart().expect("nats-server restarts");
    wait_for("edges after the restart", Duration::from_secs(20), || {
        clients.iter().all(|c| total_moves(c) >= edge_before + 4)
    });

    // A venue relay is killed outright and started again on its data folder.
    let _ = v1.child.kill();
    let _ = v1.child.wait();
    v1 = venue(&bin, &root.join("venue-1"), 1, &url);
    let restarted = venue_moves(&v1);
    wait_for("moves after the venue restart", Duration::from_secs(25), || venue_moves(&v1) >= restarted + 4);

    // Clean stops: the last lines go out.
    v1.terminate();
    v2.terminate();
    let mut truth = journals(&root.join("venue-1/data"));
    truth.extend(journals(&root.join("venue-2/data")));
    assert!(
        truth.keys().any(|(b, _)| *b <= 2) && truth.keys().any(|(b, _)| *b >= 3),
        "both venues played: {truth:?}"
    );
    let expected: BTreeMap<(u64, u64), Vec<(u32, String)>> =
        truth.iter().map(|(k, g)| (*k, g.sent.clone())).filter(|(_, m)| !m.is_empty()).collect();
    println!(
        "journals: {} games, {} confirmed moves; NATS down from {before} venue moves, venue 1 restarted at {restarted}",
        expected.len(),
        expected.values().map(Vec::len).sum::<usize>()
    );
    for (name, c) in ["edge-a", "edge-b"].iter().zip(&clients) {
        // Converged when the client has as many moves as the journals; then exact.
        let want: usize = expected.values().map(Vec::len).sum();
        wait_for(&format!("{name} to catch up"), Duration::from_secs(20), || total_moves(c) >= want);
        let got: BTreeMap<_, _> = seen(c).into_iter().filter(|(_, m)| !m.is_empty()).collect();
        assert_eq!(got, expected, "{name}: confirmed moves as received differ from the journals");
        assert!(c.with(|s| s.problems.is_empty()), "{name}: {:?}", c.with(|s| s.problems.clone()));
    }
    for (name, e) in ["edge-a", "edge-b"].iter().zip(&edges) {
        // Clock readings are not journaled: they come as forwarded live deltas.
        let boards = e.json("/api/boards").expect("edge boards");
        let clocks = boards.as_array().map_or(0, |a| a.iter().filter(|b| !b["clock"].is_null()).count());
        assert!(clocks > 0, "{name}: no board shows a clock: {boards}");
        for ((board, round), g) in &truth {
            let (status, body) = e.get(&format!("/pgn/{round}/{board}")).expect("PGN over HTTP");
            assert_eq!(status, 200, "{name}: /pgn/{round}/{board}");
            assert_eq!(body, g.pgn, "{name}: /pgn/{round}/{board} differs from the journal's game");
        }
    }

    // An edge dies: its viewers reconnect to the other one and resynchronise from its
    // snapshot, which has every board's latest game whole.
    let [mut edge_a, edge_b] = edges;
    let _ = edge_a.child.kill();
    let _ = edge_a.child.wait();
    let again = Recorder::start(rt.handle(), edge_b.addr).expect("reconnect to edge-b");
    wait_for("edge-b's snapshot", Duration::from_secs(10), || again.with(|s| s.snapshots >= 1));
    let mut latest: BTreeMap<u64, u64> = BTreeMap::new();
    for (board, round) in truth.keys() {
        let r = latest.entry(*board).or_insert(*round);
        *r = (*r).max(*round);
    }
    for (board, round) in latest {
        let want = &truth[&(board, round)].last;
        let got: Vec<String> = again
            .with(|s| s.games.get(&(board, round)).map(|g| g.moves.iter().map(|m| m.uci.clone()).collect()))
            .unwrap_or_default();
        assert_eq!(&got, want, "board {board} round {round} after reconnecting to edge-b");
    }

    // A new edge catches up from the stream's start.
    let edge_c = edge(&bin, &root.join("edge-c"), &url);
    wait_for("edge-c to catch up", Duration::from_secs(20), || {
        truth.iter().all(|((board, round), g)| {
            edge_c
                .get(&format!("/pgn/{round}/{board}"))
                .is_ok_and(|(status, body)| status == 200 && body == g.pgn)
        })
    });
    drop((edge_a, edge_b, edge_c));
    drop(nats);
    let _ = std::fs::remove_dir_all(&root);
}

#[test]
fn two_venues_claiming_one_board_raise_a_conflict_alert_on_the_edge() {
    let Some(nats_bin) = nats_binary() else {
        assert!(!nats_required(), "DGT_REQUIRE_NATS=1 but nats-server is not installed");
        println!(
            "SKIPPED: nats-server is not installed (apt-get install nats-server); set DGT_REQUIRE_NATS=1 to fail instead"
        );
        return;
    };
    let bin = relay_binary(false).unwrap_or_else(|e| panic!("{e:#}"));
    let root: PathBuf = dgt_e2e_tests::acceptance::work_dir("nats-conflict");
    let _ = std::fs::remove_dir_all(&root);
    let nats = NatsServer::start(&nats_bin, &root.join("nats")).expect("nats-server starts");
    let url = nats.url();
    let e = edge(&bin, &root.join("edge"), &url);
    // Both venues number their boards from 1.
    let v1 = venue(&bin, &root.join("venue-1"), 1, &url);
    let v2 = venue(&bin, &root.join("venue-2"), 1, &url);
    wait_for("a board_conflict alert", Duration::from_secs(30), || {
        e.json("/api/boards").ok().is_some_and(|b| {
            b.as_array().is_some_and(|a| {
                a.iter().any(|v| {
                    v["alerts"].as_array().is_some_and(|al| al.iter().any(|x| x["code"] == "board_conflict"))
                })
            })
        })
    });
    drop((v1, v2, e, nats));
    let _ = std::fs::remove_dir_all(&root);
}
