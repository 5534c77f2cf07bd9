//! Simulated DGT e-boards and DGT 3000 clocks on pseudo-terminals, indistinguishable from
//! hardware at the serial line, replaying real games with human handling and faults.
//!
//! - [`firmware`]: the board's firmware as the serial line sees it (pure, virtual time):
//!   modes, answers to every command, scanning, EEPROM events, the clock relay.
//! - [`clock`]: the DGT 3000 (times, lever, Fischer/delay/Bronstein, periods, flag, keys).
//! - [`pgn`]: source games read with pgn-reader, `%clk`/`%emt`, time-control inference.
//! - [`hands`]: the hand-action generator: game + noise profile + seed -> timed actions and
//!   ground truth ([`hands::plan_game`], a pure function).
//! - [`scenario`], [`truth`]: what a replay is made of and what it must produce.
//! - [`script`]: hand-and-clock scripts of an independent board emulator, read and turned
//!   into scenarios with their ground truth; the clock becomes the script's puppet.
//! - [`offline`]: a scenario played through the firmware without a pty (for tests).
//! - [`pty`], [`sim`]: boards on real ptys with stable links, one thread each
//!   ([`SimBoard`], [`sim::spawn_fleet`]); or on an in-process link to a host in the same
//!   process ([`SimBoard::spawn_in_process`], [`HostEnd`]), where there are no ptys (Windows).
//!   Ptys, chains and [`HostPort`] are Unix only.
//! - [`chain`]: boards daisy-chained on one pty for bus mode ([`SimChain`]): a shared line
//!   with 9600-baud timing, the boards' response times and collisions.
//! - [`hostport`]: the host's end (open a path like a serial port, decode what comes back).
//! - [`transport`]: the link from the board to the host, transparent or bursty (a Bluetooth
//!   serial link, a USB adapter's latency timer), for ptys and offline replays alike.
//!
//! ```no_run
//! use std::time::Duration;
//! use dgt_hil_sim::hands::{PlanOptions, Profile, plan_game};
//! use dgt_hil_sim::{SimBoard, SimConfig, StartPolicy};
//!
//! # fn main() -> Result<(), Box<dyn std::error::Error>> {
//! let games = dgt_hil_sim::pgn::read_games("games.pgn".as_ref())?;
//! let board = SimBoard::spawn(SimConfig { link: Some("/tmp/dgt-board".into()), speed: 20.0, ..SimConfig::default() })?;
//! println!("open {}", board.path().display());
//! let scenario = plan_game(&games[0], &PlanOptions { profile: Profile::Mixed, seed: 7, ..PlanOptions::default() });
//! let report = board.run_scenario(scenario, StartPolicy::WhenHostListens, Duration::from_secs(3600))?;
//! println!("{}", report.truth.map(|t| t.to_json()).unwrap_or_default());
//! board.shutdown()?;
//! # Ok(())
//! # }
//! ```

//!
//! A hand script of an independent board emulator (`dgt-hand-script/1`) plays the same way,
//! its truth included:
//!
//! ```no_run
//! # use std::time::Duration;
//! # use dgt_hil_sim::{SimBoard, SimConfig, StartPolicy};
//! # fn main() -> Result<(), Box<dyn std::error::Error>> {
//! let script = dgt_hil_sim::script::load("../shared/corpus/hand-scripts/clean-s1-g000.json".as_ref())?;
//! let board = SimBoard::spawn(SimConfig::default())?;
//! let report = board.run_scenario(script.to_scenario(), StartPolicy::WhenHostListens, Duration::from_secs(600))?;
//! assert_eq!(report.truth.map(|t| t.moves.len()), Some(script.plies()));
//! # Ok(())
//! # }
//! ```

#[cfg(unix)]
pub mod chain;
pub mod clock;
pub mod firmware;
pub mod hands;
pub mod hostport;
pub mod offline;
pub mod pgn;
#[cfg(unix)]
pub mod pty;
pub mod rng;
pub mod scenario;
pub mod script;
pub mod sim;
pub mod timemap;
pub mod transport;
pub mod truth;

#[cfg(unix)]
pub use chain::SimChain;
pub use clock::{Bonus, Button, Dgt3000, Period, TimeControl};
pub use firmware::{BoardConfig, BoardMode, Firmware};
#[cfg(unix)]
pub use hostport::HostPort;
pub use hostport::{BusReceived, Received};
pub use scenario::{Action, ClockSetup, Scenario, Setup, TimedAction};
#[cfg(unix)]
pub use sim::spawn_fleet;
pub use sim::{
    BoardStatus, HostEnd, ScenarioHandle, ScenarioReport, SimBoard, SimConfig, StartPolicy, VirtualTime,
};
pub use truth::GroundTruth;

/// Everything that can go wrong in the simulator.
#[derive(Debug, thiserror::Error)]
pub enum SimError {
    /// A time control text that is not in PGN's standard form: the text and why.
    #[error("time control {0}")]
    TimeControl(String),
    /// A pty could not be made.
    #[error("cannot create a pseudo-terminal ({what})")]
    Pty {
        /// The step that failed.
        what: &'static str,
        /// Why.
        source: std::io::Error,
    },
    /// A link (or its folder) could not be created.
    #[error("cannot create {}", path.display())]
    Link {
        /// The path.
        path: std::path::PathBuf,
        /// Why.
        source: std::io::Error,
    },
    /// The board's thread has stopped.
    #[error("the simulated board has stopped")]
    BoardGone,
    /// A file could not be read.
    #[error("cannot read {}", path.display())]
    Io {
        /// The path.
        path: std::path::PathBuf,
        /// Why.
        source: std::io::Error,
    },
    /// A PGN file holds no usable game.
    #[error("{} is not a usable PGN file: {why}", path.display())]
    BadPgn {
        /// The path.
        path: std::path::PathBuf,
        /// Why.
        why: String,
    },
    /// An unknown noise profile name.
    #[error("unknown profile {0:?}; known profiles: {1}")]
    Profile(String, String),
    /// Waiting took too long.
    #[error("timed out")]
    Timeout,
}
