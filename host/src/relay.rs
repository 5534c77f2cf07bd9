//! Wiring: the registry of boards by serial number, port tasks, discovery, and the
//! server's lifetime.
//!
//! A port task runs [`crate::port::run_port`]. When the handshake identifies the board,
//! the registry maps the serial number to a board number (from the configuration, from a
//! journal of an earlier run, or the lowest free number) and the port goes to that board's
//! [`BoardTask`]. Every task is tracked so that shutdown can wait for all of them: the
//! boards flush their journals, then the PGN writer writes the last files.

use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::path::PathBuf;
use std::sync::atomic::AtomicU64;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use tokio::sync::mpsc;
use tokio::task::JoinSet;

use crate::board::{AdminCommand, AdminError};
use crate::board::{BoardInput, BoardTask, Services};
use crate::clock::Clock;
use crate::config::Config;
use crate::feed::{AlertCode, AlertLevel, AlertView, Delta, Hub};
use crate::port::{AttachTo, Attached, PortOptions};
use crate::shutdown::Shutdown;
use crate::store::{GameRecord, Store};
use crate::tournament::{Pairing, SharedTournament};

/// Input queue of one board task.
const BOARD_QUEUE: usize = 1024;

#[derive(Default)]
struct Registry {
    /// Serial number to board number.
    by_serial: HashMap<String, u32>,
    /// Board numbers reserved for a serial number by the configuration.
    reserved: BTreeSet<u32>,
    /// Running board tasks.
    actors: BTreeMap<u32, mpsc::Sender<BoardInput>>,
    /// Paths with a running port task.
    ports: BTreeSet<PathBuf>,
    /// Each port's state, by path.
    port_states: BTreeMap<String, crate::port::PortState>,
}

/// The running relay.
pub struct Relay {
    /// The feed.
    pub hub: Arc<Hub>,
    /// The data folder.
    pub store: Arc<Store>,
    /// Event and pairings.
    pub tournament: SharedTournament,
    /// The admin token.
    pub token: String,
    /// Most websocket subscribers at once.
    pub max_subscribers: usize,
    /// The limits of a feed client (per connection and per address).
    pub feed_limits: crate::feed::ClientLimits,
    registry: Mutex<Registry>,
    shutdown: Shutdown,
    /// Stopped after the boards, so the last PGN is written after the last move.
    writer_shutdown: Shutdown,
    tasks: Mutex<JoinSet<()>>,
    writer: Mutex<Option<tokio::task::JoinHandle<()>>>,
    /// The Lichess push and its status.
    pub push: Arc<crate::push::PushState>,
    next_port_id: Arc<AtomicU64>,
    /// The relay's clock: the time every session, the hub, the store, the push and the
    /// admin API are given.
    pub clock: Clock,
    /// Told when the broadcast delay changes: what waits may be due sooner.
    delay_changed: tokio::sync::Notify,
    session: dgt_session::SessionConfig,
    /// The EBoard API's boards, when it is on (`--eboard-api`).
    pub eboards: Option<Arc<crate::eboard::Eboards>>,
}

impl std::fmt::Debug for Relay {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Relay").finish_non_exhaustive()
    }
}

impl Relay {
    /// Opens the data folder, replays journals, resumes unfinished games and starts the PGN
    /// writer, all on `clock`. Ports are added with [`Relay::add_port`] and
    /// [`Relay::discover`].
    pub fn start(config: &Config, clock: Clock) -> Result<Arc<Relay>, crate::store::StoreError> {
        let (store, games) = Store::open(&config.data, clock.clone())?;
        let store = Arc::new(store);
        let hub = Arc::new(Hub::new(config.tournament.live_round(), clock.clone()));
        // Before anything is published, so that no recovered move escapes the delay.
        let _ = hub.delay().set(u64::from(config.delay_s));
        let _ = store.delay().set(u64::from(config.delay_s));
        // What opening the folder repaired or left alone, for the operator.
        for n in store.notices() {
            let alert = AlertView {
                code: AlertCode::Storage,
                level: n.level,
                message: n.message.clone(),
                squares: Vec::new(),
            };
            hub.publish(Delta::Alert { board: None, alert });
        }
        let mut registry = Registry::default();
        for b in &config.boards {
            if let Some(s) = &b.serial {
                registry.by_serial.insert(s.clone(), b.number);
                registry.reserved.insert(b.number);
            }
        }
        let relay = Arc::new(Relay {
            hub: Arc::clone(&hub),
            store: Arc::clone(&store),
            tournament: SharedTournament::new(config.tournament.clone()),
            token: config.token.clone().unwrap_or_default(),
            max_subscribers: config.max_subscribers,
            feed_limits: crate::feed::ClientLimits::for_address(config.feed_per_address),
            registry: Mutex::new(registry),
            shutdown: Shutdown::new(),
            writer_shutdown: Shutdown::new(),
            tasks: Mutex::new(JoinSet::new()),
            writer: Mutex::new(None),
            push: Arc::default(),
            next_port_id: Arc::new(AtomicU64::new(1)),
            clock,
            delay_changed: tokio::sync::Notify::new(),
            session: dgt_session::SessionConfig {
                link: dgt_session::LinkTiming {
                    battery_poll_ms: config.battery_poll_ms,
                    ..dgt_session::LinkTiming::with_silence(config.silence_ms)
                },
                tracker: dgt_core::Config { chess960: config.chess960, ..dgt_core::Config::default() },
                ..dgt_session::SessionConfig::default()
            },
            eboards: config.eboard_api.map(|_| Arc::default()),
        });
        let report_hub = Arc::clone(&hub);
        let report = move |r: Result<(), &crate::store::StoreError>| {
            let (level, message) = match r {
                Ok(()) => (AlertLevel::Info, "PGN files are written again.".to_owned()),
                Err(e) => (
                    AlertLevel::Error,
                    format!(
                        "Cannot write PGN files ({e}). Free disk space or fix the data folder; writing is retried \
                         every second."
                    ),
                ),
            };
            let alert = AlertView { code: AlertCode::Storage, level, message, squares: Vec::new() };
            report_hub.publish_condition("pgn", alert);
        };
        let pgn_writer =
            crate::store::run_pgn_writer(Arc::clone(&store), report, relay.writer_shutdown.listener());
        // tournament.json and round-N/index.json beside the PGN files, stopped with them.
        let export = crate::export::run_export(
            Arc::clone(&store),
            relay.tournament.clone(),
            relay.writer_shutdown.listener(),
        );
        // Journal lines to NATS JetStream, stopped with the PGN writer so the last moves go
        // out too.
        let publisher = match &config.nats {
            Some(settings) => {
                let source = crate::nats::publish::source_id(settings, &config.data)?;
                tracing::info!(url = %settings.url, stream = %settings.stream, %source, "publishing to NATS");
                let p = crate::nats::publish::Publisher::new(
                    settings.clone(),
                    source,
                    config.tournament.event.name.clone(),
                    Arc::clone(&store),
                    Arc::clone(&hub),
                );
                Some(p.run(relay.writer_shutdown.listener()))
            }
            None => None,
        };
        let writer = tokio::spawn(async move {
            let publish = async move {
                if let Some(p) = publisher {
                    tracing::Instrument::instrument(p, tracing::info_span!("nats")).await;
                }
            };
            tokio::join!(pgn_writer, export, publish);
        });
        *relay.writer.lock().unwrap_or_else(|p| p.into_inner()) = Some(writer);
        #[cfg(unix)]
        relay.catch_file_size_signal();
        if let Some(lichess) = &config.lichess {
            // Stopped with the PGN writer, so the last moves are pushed too.
            let ctx = crate::push::PushContext::new(
                Arc::clone(&store),
                relay.tournament.clone(),
                Arc::clone(&hub),
                relay.clock.clone(),
            );
            relay.push.start(lichess.clone(), ctx, relay.writer_shutdown.listener());
        }
        relay.release_delayed();
        relay.recover(games);
        Ok(relay)
    }

    /// The broadcast delay, seconds.
    pub fn delay(&self) -> u32 {
        self.hub.delay().seconds()
    }

    /// Sets the broadcast delay of everything public (see [`crate::delay`]).
    pub fn set_delay(&self, seconds: u64) -> Result<(), crate::invalid::Invalid> {
        self.hub.delay().set(seconds)?;
        self.store.delay().set(seconds)?;
        tracing::info!(seconds, "broadcast delay set");
        // A shorter delay releases what has waited long enough now, and what waits may be
        // due sooner.
        self.hub.release();
        self.store.release_pgn();
        self.delay_changed.notify_one();
        Ok(())
    }

    /// Releases public changes as their delay passes, until shutdown: it wakes when the
    /// next change is due, and when the delay changes.
    fn release_delayed(self: &Arc<Self>) {
        if tokio::runtime::Handle::try_current().is_err() {
            return;
        }
        let relay = Arc::clone(self);
        let mut stop = self.shutdown.listener();
        self.spawn(async move {
            loop {
                let next = [relay.hub.next_due(), relay.store.next_pgn_due()].into_iter().flatten().min();
                tokio::select! {
                    _ = sleep_until_opt(next) => {}
                    _ = relay.delay_changed.notified() => {}
                    _ = stop.wait() => return,
                }
                relay.hub.release();
                relay.store.release_pgn();
            }
        });
    }

    /// A file-size limit (`ulimit -f`, systemd's `LimitFSIZE=`) reached by a write sends
    /// SIGXFSZ, which by default kills the process. With a handler the write fails with
    /// `EFBIG` instead, and is handled like a full disk: the journal's records wait in
    /// memory with a `storage` alert, and are written once the limit allows.
    /// Windows has no such signal: a write past a quota fails with an error of its own.
    #[cfg(unix)]
    fn catch_file_size_signal(&self) {
        use tokio::signal::unix::{SignalKind, signal};
        if tokio::runtime::Handle::try_current().is_err() {
            return;
        }
        let kind = SignalKind::from_raw(nix::sys::signal::Signal::SIGXFSZ as i32);
        let mut sig = match signal(kind) {
            Ok(s) => s,
            Err(e) => {
                tracing::warn!(error = %e, "cannot catch SIGXFSZ: a file-size limit would stop the relay");
                return;
            }
        };
        let mut stop = self.shutdown.listener();
        self.spawn(async move {
            loop {
                tokio::select! {
                    got = sig.recv() => {
                        if got.is_none() {
                            return;
                        }
                        tracing::warn!("a file reached the process's file-size limit (SIGXFSZ); its write failed");
                    }
                    _ = stop.wait() => return,
                }
            }
        });
    }

    /// Serves the feed, PGN and tournament from a NATS stream (`dgt-relay edge`), until
    /// shutdown.
    pub fn follow_stream(&self, opts: crate::nats::edge::EdgeOptions) -> tokio::task::JoinHandle<()> {
        let outputs = crate::nats::edge::Outputs {
            hub: Arc::clone(&self.hub),
            store: Arc::clone(&self.store),
            tournament: self.tournament.clone(),
        };
        tokio::spawn(crate::nats::edge::run(opts, outputs, self.shutdown.listener()))
    }

    /// The shutdown signal every task listens to.
    pub fn shutdown(&self) -> &Shutdown {
        &self.shutdown
    }

    fn spawn(&self, fut: impl std::future::Future<Output = ()> + Send + 'static) {
        self.tasks.lock().unwrap_or_else(|p| p.into_inner()).spawn(fut);
    }

    fn services(&self) -> Services {
        Services {
            hub: Arc::clone(&self.hub),
            store: Arc::clone(&self.store),
            tournament: self.tournament.clone(),
            clock: self.clock.clone(),
            session: self.session,
            tap: None,
            eboards: self.eboards.clone(),
        }
    }

    /// Publishes every journaled game's PGN; resumes the latest game of each board in its
    /// task.
    fn recover(&self, games: Vec<GameRecord>) {
        let mut latest: BTreeMap<u32, GameRecord> = BTreeMap::new();
        for g in games {
            let text = crate::pgn::write_game(&g, None);
            self.store.set_pgn(g.header.round, g.header.board, text);
            let newer = latest.get(&g.header.board).is_none_or(|old| {
                (g.header.round, g.header.utc_date.as_str(), g.header.utc_time.as_str())
                    >= (old.header.round, old.header.utc_date.as_str(), old.header.utc_time.as_str())
            });
            if newer {
                latest.insert(g.header.board, g);
            }
        }
        for (board, g) in latest {
            if let Some(serial) = &g.header.serial {
                let mut reg = self.registry.lock().unwrap_or_else(|p| p.into_inner());
                reg.by_serial.entry(serial.clone()).or_insert(board);
            }
            tracing::info!(
                board,
                round = g.header.round,
                moves = g.moves.len(),
                finished = g.result.is_some(),
                "game recovered"
            );
            let serial = g.header.serial.clone();
            self.spawn_actor(board, serial, Some(g));
        }
    }

    fn spawn_actor(
        &self,
        board: u32,
        serial: Option<String>,
        resume: Option<GameRecord>,
    ) -> mpsc::Sender<BoardInput> {
        let (tx, rx) = mpsc::channel(BOARD_QUEUE);
        self.registry.lock().unwrap_or_else(|p| p.into_inner()).actors.insert(board, tx.clone());
        let actor = BoardTask::new(board, serial, self.services(), resume);
        let stop = self.shutdown.listener();
        let span = tracing::info_span!("board", n = board);
        self.spawn(tracing::Instrument::instrument(actor.run(rx, stop), span));
        tx
    }

    /// The board task for a serial number, creating the board if it is new.
    pub fn board_for_serial(&self, serial: &str) -> (u32, mpsc::Sender<BoardInput>) {
        let (number, existing) = {
            let mut reg = self.registry.lock().unwrap_or_else(|p| p.into_inner());
            let number = match reg.by_serial.get(serial) {
                Some(n) => *n,
                None => {
                    let n = (1..)
                        .find(|n| {
                            !reg.reserved.contains(n)
                                && !reg.actors.contains_key(n)
                                && !reg.by_serial.values().any(|v| v == n)
                        })
                        .unwrap_or(u32::MAX);
                    reg.by_serial.insert(serial.to_owned(), n);
                    n
                }
            };
            (number, reg.actors.get(&number).cloned())
        };
        match existing {
            Some(tx) => (number, tx),
            None => (number, self.spawn_actor(number, Some(serial.to_owned()), None)),
        }
    }

    /// The board task of a board number, if that board exists.
    pub fn board(&self, number: u32) -> Option<mpsc::Sender<BoardInput>> {
        self.registry.lock().unwrap_or_else(|p| p.into_inner()).actors.get(&number).cloned()
    }

    /// Sends an admin command to a board and waits for its answer.
    pub async fn admin(&self, number: u32, cmd: AdminCommand) -> Result<(), AdminError> {
        let tx = self.board(number).ok_or(AdminError::NoBoard)?;
        let (reply, rx) = tokio::sync::oneshot::channel();
        tx.send(BoardInput::Admin(cmd, reply)).await.map_err(|_| AdminError::Gone)?;
        rx.await.map_err(|_| AdminError::Gone)?
    }

    /// Pairs `boards` in round `round` (the live one when `None`), which becomes the live
    /// round; boards not named keep their players (the admin API's pairings). Connected
    /// boards take their players at once (see [`AdminCommand::Pairing`]). Returns the live
    /// round and what the boards refused.
    pub async fn merge_pairings(
        &self,
        round: Option<u32>,
        boards: Vec<(u32, Pairing)>,
    ) -> (u32, Vec<String>) {
        let (live, changed) = {
            let mut t = self.tournament.lock();
            let changed = t.merge_pairings(round, boards);
            (t.live_round(), changed)
        };
        (live, self.tell_boards(live, changed).await)
    }

    /// Makes `boards` the whole pairing of round `round`, which becomes the live round (a
    /// pairing file's round): boards it leaves out have no players. Returns what the boards
    /// refused.
    pub async fn replace_pairings(&self, round: u32, boards: Vec<(u32, Pairing)>) -> Vec<String> {
        let changed = self.tournament.lock().replace_pairings(round, boards);
        self.tell_boards(round, changed).await
    }

    /// Starts round `round`: its pairings (or, when it has none, the current round's) go
    /// to the boards, whose next game belongs to it, and the push follows it. Returns what
    /// the boards refused.
    pub async fn start_round(&self, round: u32) -> Vec<String> {
        let stored = self.tournament.lock().round(round).map(|r| r.pairings.clone()).unwrap_or_default();
        if stored.is_empty() {
            self.merge_pairings(Some(round), Vec::new()).await.1
        } else {
            self.replace_pairings(round, stored.into_iter().collect()).await
        }
    }

    /// Every port with its state, by path.
    pub fn port_states(&self) -> BTreeMap<String, crate::port::PortState> {
        self.registry.lock().unwrap_or_else(|p| p.into_inner()).port_states.clone()
    }

    /// The live round's boards whose game has no result: board, players and move count,
    /// for the operator to decide on before the round is finished.
    pub fn unfinished_games(&self) -> Vec<(u32, Pairing, usize)> {
        let live = self.tournament.lock().live_round();
        self.hub
            .boards()
            .into_iter()
            .filter(|b| b.round == live && b.result.is_none() && !b.moves.is_empty())
            .map(|b| (b.board, b.pairing, b.moves.len()))
            .collect()
    }

    /// Tells the connected boards their players in round `round`; returns their refusals.
    async fn tell_boards(&self, round: u32, changed: BTreeMap<u32, Pairing>) -> Vec<String> {
        self.hub.set_round(round);
        let mut refused = Vec::new();
        for (n, pairing) in changed {
            if self.board(n).is_some()
                && let Err(e) =
                    self.admin(n, AdminCommand::Pairing { round, pairing: Box::new(pairing) }).await
            {
                refused.push(format!("board {n}: {e}"));
            }
        }
        refused
    }

    /// Starts a port task for `path` unless one runs. Discovered ports stop when their
    /// device node disappears; configured ones are retried forever.
    pub fn add_port(self: &Arc<Self>, path: PathBuf, discovered: bool) {
        self.add_port_as(path, discovered, crate::port::LineKind::Detect);
    }

    /// Starts a port task for `path` as a chain of boards in DGT's bus mode (`--bus`),
    /// without the single-board handshake, unless one runs.
    pub fn add_bus_port(self: &Arc<Self>, path: PathBuf) {
        self.add_port_as(path, false, crate::port::LineKind::Bus);
    }

    fn add_port_as(self: &Arc<Self>, path: PathBuf, discovered: bool, line: crate::port::LineKind) {
        {
            let mut reg = self.registry.lock().unwrap_or_else(|p| p.into_inner());
            if !reg.ports.insert(path.clone()) {
                return;
            }
        }
        let opts = PortOptions {
            timing: self.session.link,
            line,
            exit_when_missing: discovered,
            ..PortOptions::default()
        };
        let span = tracing::info_span!("port", path = %path.display());
        let stop = self.shutdown.listener();
        let relay = Arc::clone(self);
        let ids = Arc::clone(&self.next_port_id);
        let clock = self.clock.clone();
        self.spawn(tracing::Instrument::instrument(
            async move {
                crate::port::run_port(path.clone(), Arc::clone(&relay), clock, ids, stop, opts).await;
                relay.registry.lock().unwrap_or_else(|p| p.into_inner()).ports.remove(&path);
            },
            span,
        ));
    }

    /// Starts the task of a relay box's bridge on `path` (`--bridge`; see
    /// [`crate::bridge`]); a box silent for `silence` makes its board not responding.
    pub fn add_bridge(self: &Arc<Self>, path: PathBuf, silence: Duration) {
        let span = tracing::info_span!("bridge", path = %path.display());
        let run = crate::bridge::run_bridge(
            path,
            Arc::clone(self),
            self.clock.clone(),
            self.shutdown.listener(),
            silence,
        );
        self.spawn(tracing::Instrument::instrument(run, span));
    }

    /// True when a port task runs for `path`.
    pub fn has_port(&self, path: &std::path::Path) -> bool {
        self.registry.lock().unwrap_or_else(|p| p.into_inner()).ports.contains(path)
    }

    /// Looks for new DGT boards (USB devices with a DGT vendor id, Bluetooth RFCOMM ports)
    /// every two seconds until shutdown.
    pub fn discover(self: &Arc<Self>) {
        let relay = Arc::clone(self);
        let mut stop = self.shutdown.listener();
        self.spawn(async move {
            loop {
                for (p, kind) in crate::port::discover_ports() {
                    if !relay.has_port(&p) {
                        tracing::info!(path = %p.display(), ?kind, "serial device found");
                    }
                    relay.add_port(p, true);
                }
                tokio::select! {
                    _ = tokio::time::sleep(Duration::from_secs(2)) => {}
                    _ = stop.wait() => return,
                }
            }
        });
    }

    /// Stops every task and waits for them: boards flush their journals, then the last PGN
    /// files are written.
    pub async fn stop(&self) {
        self.shutdown.trigger();
        loop {
            let next = {
                let mut tasks = self.tasks.lock().unwrap_or_else(|p| p.into_inner());
                if tasks.is_empty() {
                    break;
                }
                // Take the set out to await it without holding the lock.
                std::mem::take(&mut *tasks)
            };
            let mut set = next;
            while set.join_next().await.is_some() {}
        }
        self.writer_shutdown.trigger();
        let writer = self.writer.lock().unwrap_or_else(|p| p.into_inner()).take();
        if let Some(w) = writer {
            let _ = w.await;
        }
        self.push.join().await;
    }
}

impl crate::bridge::BridgeTo for Relay {
    async fn attach_bridge(&self, serial: &str, bridge: crate::bridge::BridgeAttached) -> Option<u32> {
        let (number, tx) = self.board_for_serial(serial);
        tx.send(BoardInput::Bridge(bridge)).await.ok().map(|()| number)
    }

    fn bridge_alert(&self, board: Option<u32>, level: AlertLevel, message: String) {
        let alert = AlertView { code: AlertCode::Bridge, level, message, squares: Vec::new() };
        self.hub.publish(Delta::Alert { board, alert });
    }
}

impl AttachTo for Relay {
    async fn attach(&self, serial: &str, port: Attached) -> bool {
        let (number, tx) = self.board_for_serial(serial);
        tracing::info!(%serial, board = number, "board identified");
        tx.send(BoardInput::Attach(Box::new(port))).await.is_ok()
    }

    fn port_state(&self, path: &str, state: crate::port::PortState) {
        use crate::port::PortState;
        let was_down = {
            let mut reg = self.registry.lock().unwrap_or_else(|p| p.into_inner());
            let old = reg.port_states.insert(path.to_owned(), state.clone());
            if old.as_ref() == Some(&state) {
                return;
            }
            old.is_some_and(|o| o.is_down())
        };
        let (level, message) = match &state {
            PortState::NotFound(e) => (
                AlertLevel::Error,
                format!(
                    "Port {path} cannot be opened: it does not exist ({e}). Plug the board in, or correct the port \
                     in the configuration; the relay keeps trying."
                ),
            ),
            PortState::PermissionDenied(e) => (
                AlertLevel::Error,
                format!(
                    "Port {path} cannot be opened: permission denied ({e}). Add the relay's user to the dialout \
                     group (sudo usermod -aG dialout USER, then log in again); the relay keeps trying."
                ),
            ),
            PortState::Unopenable(e) => (
                AlertLevel::Error,
                format!(
                    "Port {path} cannot be opened ({e}). Close the program that holds it, or check that it is a \
                     serial port; the relay keeps trying."
                ),
            ),
            _ if was_down => (AlertLevel::Info, format!("Port {path} is open again.")),
            _ => return,
        };
        tracing::warn!(port = path, %message, "port state");
        let alert = AlertView { code: AlertCode::PortUnopenable, level, message, squares: Vec::new() };
        self.hub.publish_condition(&format!("open {path}"), alert);
    }

    fn port_status(&self, path: &str, status: Result<String, String>) {
        let (code, level, message) = match status {
            Ok(what) => (AlertCode::PortIdentified, AlertLevel::Info, format!("Port {path}: {what} found.")),
            Err(why) => (
                AlertCode::PortUnidentified,
                AlertLevel::Warning,
                format!(
                    "Port {path}: {why}. Check the cable and the boards' power (on a chain, every connector); the \
                     relay keeps trying."
                ),
            ),
        };
        tracing::warn!(port = path, %message, "port status");
        let alert = AlertView { code, level, message, squares: Vec::new() };
        self.hub.publish_condition(&format!("port {path}"), alert);
    }
}

/// Sleeps until `t`; forever without one.
async fn sleep_until_opt(t: Option<tokio::time::Instant>) {
    match t {
        Some(t) => tokio::time::sleep_until(t).await,
        None => std::future::pending().await,
    }
}
