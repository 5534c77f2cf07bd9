//! The relay and the offline harness run the same code: a game replayed by the offline
//! harness gives a trace of what reached the relay's side of the serial line (port opened,
//! bytes, port lost, with times); the same trace played at the same times into the relay's
//! own port handshake and board task (tokio's paused clock, a pipe for the port) gives
//! exactly the same effects, writes included.

use std::sync::Arc;

use dgt_e2e_tests::offline::{OfflineOptions, Wire, replay_through_tracker};
use dgt_hil_sim::hands::Profile;
use dgt_relay::board::{BoardInput, BoardTask, Services};
use dgt_relay::clock::Clock;
use dgt_relay::feed::Hub;
use dgt_relay::port::{Attached, identify};
use dgt_relay::shutdown::Shutdown;
use dgt_relay::store::Store;
use dgt_relay::tournament::SharedTournament;
use dgt_session::{Effect, SessionConfig};
use tokio::io::AsyncWriteExt;
use tokio::sync::{mpsc, oneshot};

/// Plays `wire` into a board task in paused time; returns its effects.
async fn relay_effects(wire: &[(u64, Wire)], end_ms: u64, name: &str) -> Vec<(u64, Effect)> {
    let dir = std::env::temp_dir().join(format!("dgt-same-code-{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    // The relay's clock on tokio's paused time.
    let clock = Clock::system();
    let (store, _) = Store::open(&dir, clock.clone()).expect("data folder");
    let (tap, mut effects) = mpsc::unbounded_channel();
    let svc = Services {
        hub: Arc::new(Hub::new(1, clock.clone())),
        store: Arc::new(store),
        tournament: SharedTournament::default(),
        clock: clock.clone(),
        session: SessionConfig::default(),
        tap: Some(tap),
        eboards: None,
    };
    let shutdown = Shutdown::new();
    let (tx, rx) = mpsc::channel(16);
    let board = tokio::spawn(BoardTask::new(1, None, svc, None).run(rx, shutdown.listener()));
    let mut board_end: Option<tokio::io::DuplexStream> = None;
    for (at, event) in wire {
        tokio::time::sleep_until(clock.at(*at)).await;
        match event {
            Wire::Opened => {
                // The port task: the handshake on the relay's end, then the board task.
                // What the relay writes waits unread in the pipe (the trace holds the board's
                // answers); the pipe holds a whole game's commands.
                let (relay_end, far) = tokio::io::duplex(1 << 20);
                board_end = Some(far);
                let tx = tx.clone();
                let mut stop = shutdown.listener();
                let clock = clock.clone();
                tokio::spawn(async move {
                    let mut io = relay_end;
                    let timing = SessionConfig::default().link;
                    if let Ok(link) = identify(&mut io, &clock, timing, &mut stop).await {
                        let (released, _back) = oneshot::channel();
                        let port =
                            Attached { port_id: 1, path: "offline".into(), io: Box::new(io), link, released };
                        let _ = tx.send(BoardInput::Attach(Box::new(port))).await;
                    }
                });
            }
            Wire::Bytes(bytes) => {
                if let Some(w) = &mut board_end {
                    w.write_all(bytes).await.expect("pipe");
                }
            }
            Wire::Lost => board_end = None,
        }
    }
    // Until the harness stopped (its last instant included), then stop.
    tokio::time::sleep_until(clock.at(end_ms + 1)).await;
    shutdown.trigger();
    board.await.expect("board task");
    let _ = std::fs::remove_dir_all(&dir);
    let mut out = Vec::new();
    while let Ok((_, at, e)) = effects.try_recv() {
        out.push((at, e));
    }
    out
}

/// Replays one planned game offline, then the same wire into the relay, and compares.
async fn same_effects(game: usize, profile: Profile, seed: u64) {
    let games = dgt_e2e_tests::acceptance::worldcup().expect("World Cup games");
    let opts = OfflineOptions { keep_events: true, ..OfflineOptions::default() };
    let offline = replay_through_tracker(&games[game], profile, seed, &opts);
    assert!(offline.passed(), "the offline replay itself: {:?}", offline.why);
    assert!(offline.effects.iter().any(|(_, e)| matches!(e, Effect::Move { .. })), "a game was played");
    let relay = relay_effects(&offline.wire, offline.end_ms, &format!("{game}-{profile:?}")).await;
    let relay: Vec<_> = relay.into_iter().filter(|(t, _)| *t <= offline.end_ms).collect();
    if let Ok(range) = std::env::var("SAME_CODE_DEBUG") {
        let (a, b) = range
            .split_once("..")
            .and_then(|(a, b)| Some((a.parse().ok()?, b.parse().ok()?)))
            .unwrap_or((0, 6));
        for w in offline.wire.iter().filter(|(t, _)| (a..b).contains(t)) {
            eprintln!("wire    {w:?}");
        }
        for e in relay.iter().filter(|(t, _)| (a..b).contains(t)) {
            eprintln!("relay   {e:?}");
        }
        for e in offline.effects.iter().filter(|(t, _)| (a..b).contains(t)) {
            eprintln!("offline {e:?}");
        }
    }
    for (i, (r, o)) in relay.iter().zip(&offline.effects).enumerate() {
        assert_eq!(r, o, "effect {i} of {} (relay, offline)", offline.effects.len());
    }
    assert_eq!(relay.len(), offline.effects.len(), "as many effects");
}

#[tokio::test(start_paused = true)]
async fn a_game_with_mixed_handling_gives_the_same_effects_in_the_relay() {
    same_effects(4, Profile::Mixed, 1).await;
}

#[tokio::test(start_paused = true)]
async fn a_game_with_unplugged_cables_gives_the_same_effects_in_the_relay() {
    same_effects(11, Profile::Disconnect, 1).await;
}
