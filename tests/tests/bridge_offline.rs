//! The relay box runs what the relay runs, and its bridge loses nothing and repeats
//! nothing, in virtual time and without I/O.
//!
//! A corpus game is replayed by the offline harness, which keeps the relay's side of the
//! serial line (the board's bytes with their times). The same bytes at the same times go
//! into a [`Device`] (the firmware's whole job, as the firmware runs it), whose frames
//! cross to a [`HostEnd`] whose effects go to a journal kept as the relay's board task
//! keeps it:
//! - over a clean line, the host's effects are the harness's, one for one (writes to the
//!   board aside): relay = harness = firmware;
//! - over a line with garbage both ways, a pulled cable and a host restarted twice, the
//!   journal holds exactly the game the harness confirmed, every confirmed move journaled
//!   once, and the garbage counted on both ends.

use dgt_bridge::wire::{GameStart, StartWire};
use dgt_bridge::{Device, DeviceConfig, Down, FrameDecoder, GameKey, GameLog, HostEnd, Up};
use dgt_core::ResumePly;
use dgt_e2e_tests::offline::{OfflineOptions, Wire, replay_through_tracker};
use dgt_hil_sim::hands::Profile;
use dgt_session::{Effect, MoveState};
use shakmaty::uci::UciMove;

/// What the relay's board task journals, game by game, as its `GameRecord` does.
#[derive(Debug, Default)]
struct Journal {
    games: Vec<JournalGame>,
    /// Records that did not fit the game (a move out of sequence): must stay empty.
    misfits: Vec<String>,
    /// Every confirmed move journaled: (ply, UCI, `%clk`).
    moves: Vec<(u16, String, Option<u32>)>,
}

#[derive(Debug, Default)]
struct JournalGame {
    start_fen: Option<String>,
    flipped: bool,
    moves: Vec<(String, Option<u32>, Option<u32>)>,
    result: Option<String>,
}

impl Journal {
    fn apply(&mut self, e: &Effect) {
        match e {
            Effect::GameStarted { start_fen, new_record: true, orientation, .. } => {
                self.games.push(JournalGame {
                    start_fen: start_fen.clone(),
                    flipped: *orientation == dgt_protocol::Orientation::Rotated,
                    ..JournalGame::default()
                });
            }
            Effect::Move { state: MoveState::Confirmed, info } => {
                self.moves.push((info.ply, info.uci.to_string(), info.clk));
                let Some(g) = self.games.last_mut() else {
                    self.misfits.push(format!("move {} before any game", info.ply));
                    return;
                };
                if usize::from(info.ply) != g.moves.len() + 1 {
                    self.misfits.push(format!("move {} {} with {} plies", info.ply, info.uci, g.moves.len()));
                    return;
                }
                g.moves.push((info.uci.to_string(), info.clk, info.emt));
            }
            Effect::TakenBack { to_ply, .. } => {
                if let Some(g) = self.games.last_mut() {
                    g.moves.truncate(usize::from(*to_ply));
                }
            }
            Effect::GameEnded { result, .. } => {
                if let Some(g) = self.games.last_mut() {
                    g.result = Some(result.as_pgn().to_owned());
                }
            }
            Effect::ResultCleared => {
                if let Some(g) = self.games.last_mut() {
                    g.result = None;
                }
            }
            Effect::Flipped { flipped } => {
                if let Some(g) = self.games.last_mut() {
                    g.flipped = *flipped;
                }
            }
            _ => {}
        }
    }

    /// The board task's current game, by its key (round = its place).
    fn key(&self) -> Option<GameKey> {
        (!self.games.is_empty()).then_some(GameKey { round: self.games.len() as u32, board: 1 })
    }

    /// What a restarted relay reads back from its journal for the bridge.
    fn mirror(&self) -> Option<GameLog> {
        let g = self.games.last()?;
        let kind = if g.start_fen.is_some() { StartWire::Fen } else { StartWire::Standard };
        let start = GameStart { rotated: g.flipped, kind, start_fen: g.start_fen.clone() };
        let mut log = GameLog::new(start, 0);
        log.key = self.key();
        for (uci, clk, emt) in &g.moves {
            let uci = UciMove::from_ascii(uci.as_bytes()).expect("journaled UCI");
            log.plies.push(ResumePly { uci, clk: *clk, emt: *emt });
        }
        log.result = g.result.as_deref().map(|r| {
            let r = match r {
                "1-0" => dgt_bridge::wire::ResultWire::WhiteWins,
                "0-1" => dgt_bridge::wire::ResultWire::BlackWins,
                _ => dgt_bridge::wire::ResultWire::Draw,
            };
            (r, dgt_bridge::wire::EndWire::Operator)
        });
        Some(log)
    }
}

/// What happens to the bridge line.
#[derive(Clone, Debug, Default)]
struct Faults {
    /// Garbage is put on the line both ways every this many ms (0: never).
    garbage_every_ms: u64,
    /// The cable is out: nothing crosses, either way.
    pulled: Option<(u64, u64)>,
    /// The host is killed and started again at these times.
    restarts: Vec<u64>,
    /// One byte of every this many writes of the device is changed on the way (0: none).
    corrupt_every: usize,
    /// An operator starts a new game on the box at this time, with a tool of their own (not
    /// through the journaling host, whose cable may be out then).
    new_game_at: Option<u64>,
}

/// The device, the line and the host, in virtual time.
struct Bench {
    device: Device,
    host: Option<HostEnd>,
    host_frames: FrameDecoder,
    journal: Journal,
    effects: Vec<Effect>,
    faults: Faults,
    next_garbage: u64,
    cable_out: bool,
    restarts: std::vec::IntoIter<u64>,
    next_restart: Option<u64>,
    /// A host without its device's greeting greets again at this time.
    greet_at: Option<u64>,
    writes: usize,
}

impl Bench {
    fn new(faults: Faults) -> Bench {
        let mut restarts = faults.restarts.clone().into_iter();
        let next_restart = restarts.next();
        Bench {
            device: Device::new(0, DeviceConfig::new("test-firmware 0", "offline")),
            host: None,
            host_frames: FrameDecoder::new(),
            journal: Journal::default(),
            effects: Vec::new(),
            next_garbage: faults.garbage_every_ms.max(1),
            faults,
            cable_out: false,
            restarts,
            next_restart,
            greet_at: None,
            writes: 0,
        }
    }

    /// Runs the device's deadlines before `t`, then carries the line at `t`.
    fn until(&mut self, t: u64) {
        loop {
            let d = self.device.next_deadline();
            if d >= t {
                break;
            }
            self.device.poll(d);
            self.line(d);
        }
        self.line(t);
    }

    /// The host's greeting, as a relay that opens the bridge sends it (again every second
    /// until the device answers).
    fn host_hello(&mut self, now: u64) {
        self.greet_at = Some(now + 1_000);
        let mut bytes = Vec::new();
        dgt_bridge::frame::encode(&Down::Hello { host: "test".into() }, &mut bytes).expect("frame");
        self.device.on_bridge_bytes(now, &bytes);
    }

    /// Carries bytes both ways at `now` until nothing moves.
    fn line(&mut self, now: u64) {
        if self.faults.new_game_at.is_some_and(|t| now >= t) {
            self.faults.new_game_at = None;
            let mut bytes = Vec::new();
            let action = dgt_bridge::Action::NewGame { fen: None };
            dgt_bridge::frame::encode(&Down::Action { id: 900, action }, &mut bytes).expect("frame");
            self.device.on_bridge_bytes(now, &bytes);
        }
        if self.faults.garbage_every_ms > 0 && now >= self.next_garbage {
            self.next_garbage = now + self.faults.garbage_every_ms;
            let garbage = [0x13u8, 0x00, 0xFF, 0x42, 0x07, 0x00, 0x99];
            self.device.on_bridge_bytes(now, &garbage);
            self.host_reads(&garbage);
        }
        let out = self.faults.pulled.is_some_and(|(a, b)| (a..b).contains(&now));
        if out != self.cable_out {
            self.cable_out = out;
            if let Some(h) = &mut self.host {
                if out {
                    // The relay sees the line fall silent.
                    h.lost();
                    self.drain_host();
                } else {
                    self.host_hello(now);
                }
            }
        }
        if self.next_restart.is_some_and(|r| now >= r) {
            self.next_restart = self.restarts.next();
            // Killed: what was in flight is lost; started again, it greets the device.
            self.host = None;
            self.host_frames = FrameDecoder::new();
            self.host_hello(now);
        }
        if self.host.is_none() && self.greet_at.is_some_and(|t| now >= t) && !self.cable_out {
            self.host_hello(now);
        }
        if let Some(h) = &mut self.host {
            h.poll(now);
            let downs = self.drain_host();
            if !self.cable_out && !downs.is_empty() {
                self.device.on_bridge_bytes(now, &downs);
            }
        }
        loop {
            let mut bytes = self.device.bridge_output().to_vec();
            if bytes.is_empty() {
                break;
            }
            self.device.bridge_written(bytes.len());
            self.writes += 1;
            if self.faults.corrupt_every > 0 && self.writes.is_multiple_of(self.faults.corrupt_every) {
                let i = bytes.len() / 2;
                bytes[i] ^= 0x5A;
            }
            if !self.cable_out {
                self.host_reads(&bytes);
            }
            let downs = self.drain_host();
            if !self.cable_out && !downs.is_empty() {
                self.device.on_bridge_bytes(now, &downs);
            }
        }
    }

    fn host_reads(&mut self, bytes: &[u8]) {
        let mut ups = Vec::new();
        self.host_frames.feed(bytes, |f: Result<Up, _>| {
            if let Ok(up) = f {
                ups.push(up);
            }
        });
        for up in ups {
            match (&mut self.host, up) {
                (Some(h), up) => h.on_up(up),
                (None, Up::Hello(hello)) => self.host = Some(HostEnd::new(1, hello, self.journal.mirror())),
                (None, _) => {}
            }
        }
    }

    /// The host's effects into the journal; its messages for the device, as bytes.
    fn drain_host(&mut self) -> Vec<u8> {
        let mut bytes = Vec::new();
        let Some(h) = &mut self.host else { return bytes };
        while let Some(e) = h.next_effect() {
            self.journal.apply(&e);
            self.effects.push(e);
        }
        h.applied(self.journal.key(), true);
        while let Some(d) = h.next_down() {
            dgt_bridge::frame::encode(&d, &mut bytes).expect("frame");
        }
        bytes
    }
}

/// What the harness's relay did: its effects (writes aside), its confirmed line, its result.
struct RelaySide {
    effects: Vec<Effect>,
    confirmed: Vec<(String, Option<u32>)>,
    result: Option<String>,
}

/// Replays a game, then its wire into the device and over the bridge.
fn through_the_bridge(game: usize, profile: Profile, seed: u64, faults: Faults) -> (Bench, RelaySide) {
    let games = dgt_e2e_tests::acceptance::worldcup().expect("World Cup games");
    let opts = OfflineOptions { keep_events: true, ..OfflineOptions::default() };
    let offline = replay_through_tracker(&games[game], profile, seed, &opts);
    assert!(offline.passed(), "the offline replay itself: {:?}", offline.why);
    assert!(
        offline.wire.iter().skip(1).all(|(_, w)| matches!(w, Wire::Bytes(_))),
        "one opening of the port (a pulled board cable is the board link's, not the bridge's)"
    );
    let mut bench = Bench::new(faults);
    for (at, w) in offline.wire.iter().skip(1) {
        bench.until(*at);
        if let Wire::Bytes(b) = w {
            bench.device.on_board_bytes(*at, b);
            // The trace holds the board's answers: what the device writes is not needed.
            bench.device.take_board_output();
            bench.line(*at);
        }
    }
    bench.until(offline.end_ms + 1);
    if let Some(t) = bench.faults.new_game_at {
        bench.until(t + 20_000);
    }
    let effects =
        offline.effects.into_iter().map(|(_, e)| e).filter(|e| !matches!(e, Effect::Write(_))).collect();
    (bench, RelaySide { effects, confirmed: offline.confirmed, result: offline.result })
}

#[test]
fn over_a_clean_line_the_host_gets_the_relays_effects_one_for_one() {
    for (game, profile) in [(4, Profile::Slide), (7, Profile::Takeback), (2, Profile::Burst)] {
        let (bench, relay) = through_the_bridge(game, profile, 1, Faults::default());
        assert!(relay.effects.iter().any(|e| matches!(e, Effect::Move { state: MoveState::Confirmed, .. })));
        // Clock readings are thinned on the bridge (see `dgt_bridge::device::CLOCK_EVERY_MS`);
        // everything else crosses one for one.
        let (relay_clocks, relay): (Vec<&Effect>, Vec<&Effect>) =
            relay.effects.iter().partition(|e| matches!(e, Effect::Clock(_)));
        let (host_clocks, host): (Vec<&Effect>, Vec<&Effect>) =
            bench.effects.iter().partition(|e| matches!(e, Effect::Clock(_)));
        for (i, (h, r)) in host.iter().zip(&relay).enumerate() {
            assert_eq!(h, r, "game {game} {profile:?}: effect {i} of {} (host, relay)", relay.len());
        }
        assert_eq!(host.len(), relay.len(), "game {game} {profile:?}: as many effects");
        // The host's readings are some of the relay's, in order, with every change of the
        // clock that runs, and the last one.
        let mut rest = relay_clocks.iter();
        assert!(
            host_clocks.iter().all(|h| rest.any(|r| r == h)),
            "game {game} {profile:?}: clock readings the relay never had"
        );
        let running = |cs: &[&Effect]| {
            let mut out: Vec<Option<shakmaty::Color>> = cs
                .iter()
                .filter_map(|e| match e {
                    Effect::Clock(c) => Some(c.running),
                    _ => None,
                })
                .collect();
            out.dedup();
            out
        };
        assert_eq!(
            running(&host_clocks),
            running(&relay_clocks),
            "game {game} {profile:?}: every change of the running clock"
        );
        assert_eq!(host_clocks.last(), relay_clocks.last(), "game {game} {profile:?}: the last reading");
        assert!(host_clocks.len() < relay_clocks.len(), "game {game} {profile:?}: readings thinned");
        let stats = bench.host.as_ref().expect("connected").stats();
        assert_eq!((stats.duplicates, stats.gaps, stats.unreadable), (0, 0, 0));
    }
}

#[test]
fn garbage_a_pulled_cable_and_host_restarts_lose_nothing_and_repeat_nothing() {
    for (game, profile) in [(4, Profile::Garbage), (9, Profile::Clean)] {
        let faults = Faults {
            garbage_every_ms: 7_000,
            pulled: Some((95_000, 104_000)),
            restarts: vec![40_000, 160_000, 161_000],
            corrupt_every: 97,
            new_game_at: None,
        };
        let (bench, RelaySide { effects: relay, confirmed, result }) =
            through_the_bridge(game, profile, 3, faults);
        let j = &bench.journal;
        eprintln!(
            "game {game}: host {:?} {:?} live {:?}, device {:?}",
            bench.host.as_ref().map(|h| h.stats()),
            bench.host_frames.stats(),
            bench.host.as_ref().map(|h| h.is_live()),
            bench.device.status(0)
        );
        assert!(j.misfits.is_empty(), "game {game}: records that did not fit: {:?}", j.misfits);
        assert_eq!(j.games.len(), 1, "game {game}: one game journaled");
        let line: Vec<(String, Option<u32>)> =
            j.games[0].moves.iter().map(|(u, c, _)| (u.clone(), *c)).collect();
        assert_eq!(line, confirmed, "game {game}: the journal's moves and clocks are the relay's");
        assert_eq!(j.games[0].result, result, "game {game}: result");
        let relay_moves: Vec<(u16, String, Option<u32>)> = relay
            .iter()
            .filter_map(|e| match e {
                Effect::Move { state: MoveState::Confirmed, info } => {
                    Some((info.ply, info.uci.to_string(), info.clk))
                }
                _ => None,
            })
            .collect();
        assert_eq!(j.moves, relay_moves, "game {game}: every confirmed move journaled once, in order");
        let dev = bench.device.status(0);
        assert!(dev.bad_frames >= 10, "game {game}: the device counted the garbage ({dev:?})");
        assert!(bench.host_frames.stats().bad >= 1, "game {game}: the host counted the garbage");
        let host = bench.host.expect("connected").stats();
        assert!(host.resumes >= 1 && host.gaps >= 1, "game {game}: lost frames were resumed ({host:?})");
    }
}

/// The game's end happens while the host is away, then the next game starts: back, the host
/// gets the end of its game (the box kept that game's plies for it) and the new game, once.
#[test]
fn a_host_away_across_the_end_of_a_game_gets_its_end_and_the_next_game() {
    let games = dgt_e2e_tests::acceptance::worldcup().expect("World Cup games");
    let opts = OfflineOptions { keep_events: true, ..OfflineOptions::default() };
    let end = replay_through_tracker(&games[9], Profile::Clean, 5, &opts).end_ms;
    let faults = Faults {
        pulled: Some((end - 60_000, end + 8_000)),
        new_game_at: Some(end + 2_000),
        ..Faults::default()
    };
    let (bench, RelaySide { confirmed, result, .. }) = through_the_bridge(9, Profile::Clean, 5, faults);
    let j = &bench.journal;
    assert!(j.misfits.is_empty(), "records that did not fit: {:?}", j.misfits);
    assert_eq!(j.games.len(), 2, "the game, then the operator's new one: {j:?}");
    let line: Vec<(String, Option<u32>)> = j.games[0].moves.iter().map(|(u, c, _)| (u.clone(), *c)).collect();
    assert_eq!(line, confirmed, "the first game whole, its last moves from the box's keeping");
    assert_eq!(j.games[0].result, result, "its result");
    assert!(result.is_some(), "the game ended on the board");
    assert!(j.games[1].moves.is_empty() && j.games[1].result.is_none(), "the new game, empty");
    let moves = j.moves.len();
    assert_eq!(moves, confirmed.len(), "every move journaled once");
}
