//! `dgt-relay demo`: simulated boards from `dgt-hil-sim` replaying corpus games on
//! pseudo-terminals. The relay opens them through the same serial code path as real
//! boards ([`crate::relay::Relay::add_port`]); nothing in the relay knows they are
//! simulated.
//!
//! Where there are no pseudo-terminals (Windows), or with `--in-process`, each board is on
//! an in-process link registered under a port name ([`crate::port::in_process`]): the
//! relay opens that name with the same port code; only the transport of the bytes differs
//! (channels instead of a tty, without a serial line's timing). Chosen over a loopback
//! socket or a named pipe because it needs no port number, no file and no extra code path
//! in the relay beyond opening the name.

use std::path::PathBuf;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use dgt_hil_sim::hands::{GameEnd, PlanOptions, plan_game};
use dgt_hil_sim::pgn::SourceGame;
use dgt_hil_sim::{BoardConfig, SimBoard, SimConfig, StartPolicy};

use crate::tournament::{MAX_TEXT, Pairing, Player, SharedTournament};

/// How long a finished game's last position stays on a demo board, in 200 ms steps (5 s).
const RESULT_PAUSE_STEPS: u32 = 25;

/// Demo settings.
#[derive(Clone, Debug)]
pub struct DemoOptions {
    /// Number of simulated boards.
    pub boards: u32,
    /// Virtual time speed factor of the simulator.
    pub speed: f64,
    /// First serial number (boards get consecutive ones).
    pub first_serial: u32,
    /// First board number (boards get consecutive ones).
    pub first_board: u32,
    /// Boards on in-process links instead of pseudo-terminals (see the module docs).
    pub in_process: bool,
}

/// The running simulated boards; dropping it stops them.
pub struct Demo {
    boards: Vec<Arc<SimBoard>>,
    /// The in-process links' port names, unregistered on stop.
    links: Vec<PathBuf>,
    stop: Arc<AtomicBool>,
    drivers: Vec<std::thread::JoinHandle<()>>,
}

impl std::fmt::Debug for Demo {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Demo").field("boards", &self.boards.len()).finish_non_exhaustive()
    }
}

fn player(game: &SourceGame, side: &str) -> Player {
    Player {
        name: game.tag(side).unwrap_or("?").chars().take(MAX_TEXT).collect(),
        fide_id: game.tag(&format!("{side}FideId")).and_then(|v| v.parse().ok()),
        title: game
            .tag(&format!("{side}Title"))
            .filter(|t| t.len() <= 8 && t.chars().all(|c| c.is_ascii_alphabetic()))
            .map(str::to_owned),
        elo: game.tag(&format!("{side}Elo")).and_then(|v| v.parse().ok()).filter(|&e| e > 0),
        federation: game
            .tag(&format!("{side}Fed"))
            .filter(|f| f.len() == 3 && f.chars().all(|c| c.is_ascii_uppercase()))
            .map(str::to_owned),
        team: game.tag(&format!("{side}Team")).map(|t| t.chars().take(MAX_TEXT).collect()),
    }
}

/// A board on a pseudo-terminal of its own.
#[cfg(unix)]
fn on_pty(config: SimConfig) -> Result<SimBoard, dgt_hil_sim::SimError> {
    SimBoard::spawn(config)
}

/// No pseudo-terminals here: the demo's boards go on in-process links instead.
#[cfg(not(unix))]
fn on_pty(_: SimConfig) -> Result<SimBoard, dgt_hil_sim::SimError> {
    let e = std::io::Error::new(std::io::ErrorKind::Unsupported, "this system has no pseudo-terminals");
    Err(dgt_hil_sim::SimError::Pty { what: "open", source: e })
}

impl Demo {
    /// Spawns the boards; returns them with the port paths (ptys, or in-process links'
    /// names) the relay should open.
    pub fn start(
        games: Vec<SourceGame>,
        opts: &DemoOptions,
        tournament: SharedTournament,
    ) -> Result<(Demo, Vec<PathBuf>), dgt_hil_sim::SimError> {
        let games: Arc<Vec<SourceGame>> =
            Arc::new(games.into_iter().filter(|g| !g.moves.is_empty()).collect());
        let stop = Arc::new(AtomicBool::new(false));
        let mut boards = Vec::new();
        let mut paths = Vec::new();
        let mut drivers = Vec::new();
        let mut links = Vec::new();
        for i in 0..opts.boards {
            let config = SimConfig {
                board: BoardConfig::with_serial(opts.first_serial + i),
                speed: opts.speed,
                ..SimConfig::default()
            };
            let board = if opts.in_process {
                let name = PathBuf::from(format!("simulated-board-{}", opts.first_board + i));
                let (board, end) = SimBoard::spawn_in_process(config, &name.to_string_lossy())?;
                crate::port::in_process::register(&name, end)
                    .map_err(|e| dgt_hil_sim::SimError::Pty { what: "spawn link thread", source: e })?;
                links.push(name.clone());
                paths.push(name);
                board
            } else {
                let board = on_pty(config)?;
                paths.push(board.path());
                board
            };
            let board = Arc::new(board);
            let (b, games, stop, tournament) =
                (Arc::clone(&board), Arc::clone(&games), Arc::clone(&stop), tournament.clone());
            let number = opts.first_board + i;
            let n_boards = opts.boards as usize;
            let driver = std::thread::Builder::new()
                .name(format!("demo board {number}"))
                .spawn(move || {
                    let mut k = i as usize;
                    // The players the demo gave this board last: once the operator pairs the
                    // board (by hand, from a report, by starting a round), theirs stay.
                    let mut given = Pairing::default();
                    while !stop.load(Ordering::Relaxed) && !games.is_empty() {
                        let game = &games[k % games.len()];
                        let pairing = Pairing { white: player(game, "White"), black: player(game, "Black") };
                        {
                            let mut t = tournament.lock();
                            if t.pairing(number) == given {
                                t.set_pairing(number, pairing.clone());
                                given = pairing;
                            }
                        }
                        // Games end as broadcasts see them end: checkmate and stalemate on
                        // the board, any other result with the kings in the centre.
                        let plan = PlanOptions {
                            seed: k as u64,
                            end: GameEnd::KingsInCentre,
                            ..PlanOptions::default()
                        };
                        let scenario = plan_game(game, &plan);
                        let Ok(handle) = b.start_scenario(scenario, StartPolicy::WhenHostListens) else {
                            return;
                        };
                        loop {
                            if stop.load(Ordering::Relaxed) {
                                return;
                            }
                            match handle.wait(Duration::from_millis(200)) {
                                Ok(_) => break,
                                Err(dgt_hil_sim::SimError::Timeout) => {}
                                Err(_) => return,
                            }
                        }
                        // The final position (the kings in the centre) stays on the board for
                        // a few real seconds, longer than the relay's quiet time, as an arbiter
                        // leaves it before setting up the next game: the result is seen at any
                        // speed.
                        for _ in 0..RESULT_PAUSE_STEPS {
                            if stop.load(Ordering::Relaxed) {
                                return;
                            }
                            std::thread::sleep(Duration::from_millis(200));
                        }
                        k += n_boards;
                    }
                })
                .map_err(|e| dgt_hil_sim::SimError::Pty { what: "spawn demo driver", source: e })?;
            boards.push(board);
            drivers.push(driver);
        }
        Ok((Demo { boards, links, stop, drivers }, paths))
    }

    /// Stops the drivers and the boards.
    pub fn stop(self) {
        self.stop.store(true, Ordering::Relaxed);
        for d in self.drivers {
            let _ = d.join();
        }
        drop(self.boards);
        for name in &self.links {
            crate::port::in_process::unregister(name);
        }
    }
}
