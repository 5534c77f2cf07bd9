//! [`Remote`]: a board whose session runs on a relay box, as its board task sees it.
//!
//! The bridge's task (see [`super::run_bridge`]) reads the box's frames and hands them
//! here, in order; a [`HostEnd`] turns them into the session effects the board task
//! carries out exactly as a local session's (journal first, then feed, PGN, push), and
//! the messages for the box go back through the bridge's task. Operator actions cross to
//! the box and wait for its answer.

use std::time::Duration;

use dgt_bridge::convert::{admin_error, move_info};
use dgt_bridge::wire::{EndWire, GameStart, ResultWire, StartWire};
use dgt_bridge::{Action, Answer, DeviceHello, Down, GameKey, GameLog, HostEnd, Outcome, Up};
use dgt_core::MoveInfo;
use dgt_core::ResumePly;
use dgt_session::{AdminError, Effect, LinkState};
use shakmaty::uci::UciMove;
use tokio::sync::mpsc;

use crate::record::GameRecord;

/// How long an operator action waits for the box's answer.
pub const ACTION_TIMEOUT: Duration = Duration::from_secs(5);
/// How often the host end's timers are looked at.
const POLL_MS: u64 = 250;

/// A bridge handed to a board task: the box's frames, and a way back.
#[derive(Debug)]
pub struct BridgeAttached {
    /// The bridge's serial port, for the operator.
    pub path: String,
    /// The box's greeting.
    pub hello: DeviceHello,
    /// The box's frames, in order; closed when the bridge is lost.
    pub ups: mpsc::Receiver<Up>,
    /// Messages for the box.
    pub downs: mpsc::Sender<Down>,
}

/// Why an operator action on a bridged board did not happen.
#[derive(Debug, thiserror::Error)]
pub enum RemoteError {
    /// The box refused it, as a local session would have.
    #[error(transparent)]
    Refused(#[from] AdminError),
    /// The box is not connected, or did not answer.
    #[error("{0}")]
    Unreachable(String),
}

/// A board on a relay box. See the module docs.
#[derive(Debug)]
pub struct Remote {
    end: HostEnd,
    path: String,
    ups: Option<mpsc::Receiver<Up>>,
    downs: mpsc::Sender<Down>,
    next_poll: u64,
}

impl Remote {
    /// The board `number`, whose latest journaled game is `journal`, on the bridge `a`,
    /// at `now`: a resume is asked for at once.
    pub fn new(a: BridgeAttached, number: u32, journal: Option<&GameRecord>, now: u64) -> Remote {
        let mut r = Remote {
            end: HostEnd::new(number, a.hello, journal.map(game_log)),
            path: a.path,
            ups: Some(a.ups),
            downs: a.downs,
            next_poll: now,
        };
        r.send();
        r
    }

    /// The box's next frame; `None` once the bridge is lost (then pending for ever).
    pub async fn recv(&mut self) -> Option<Up> {
        match &mut self.ups {
            Some(ups) => ups.recv().await,
            None => std::future::pending().await,
        }
    }

    /// A frame from the box (`None`: the bridge was lost).
    pub fn take(&mut self, up: Option<Up>) {
        match up {
            Some(up) => {
                match &up {
                    Up::Record { seq, record } => tracing::trace!(path = %self.path, seq, ?record, "record"),
                    Up::Status(s) => tracing::trace!(path = %self.path, ?s, "status"),
                    Up::LineMove(m) => tracing::trace!(path = %self.path, ply = m.ply, "line move"),
                    other => tracing::debug!(path = %self.path, ?other, "from the relay box"),
                }
                let live = self.end.is_live();
                self.end.on_up(up);
                if live && !self.end.is_live() {
                    tracing::debug!(path = %self.path, stats = ?self.end.stats(), "resuming");
                }
            }
            None => {
                self.ups = None;
                self.end.lost();
            }
        }
        self.send();
    }

    /// The next effect for the board task.
    pub fn next_effect(&mut self) -> Option<Effect> {
        self.end.next_effect()
    }

    /// The board task applied what it was handed; `on_disk` when its journal has all of
    /// it, `key` its current game.
    pub fn applied(&mut self, key: Option<GameKey>, on_disk: bool) {
        self.end.applied(key, on_disk);
        self.send();
    }

    /// When [`Remote::poll`] is next due.
    pub fn next_deadline(&self) -> u64 {
        self.next_poll
    }

    /// Runs what is due at `now` (a resume that got no answer is asked again).
    pub fn poll(&mut self, now: u64) {
        self.next_poll = now + POLL_MS;
        self.end.poll(now);
        self.send();
    }

    /// The bridge's serial port.
    pub fn path(&self) -> &str {
        &self.path
    }

    /// The board's serial number.
    pub fn serial(&self) -> Option<&str> {
        self.end.serial()
    }

    /// The box's link to its board (not responding while the bridge is lost).
    pub fn link_state(&self) -> LinkState {
        self.end.link_state()
    }

    /// True when the board is rotated.
    pub fn flipped(&self) -> bool {
        self.end.flipped()
    }

    /// The board's battery.
    pub fn battery(&self) -> Option<u8> {
        self.end.battery()
    }

    /// Has the box carry out an operator's action; its records come first, then the
    /// answer.
    pub async fn act(&mut self, action: Action) -> Result<Answer, RemoteError> {
        if self.ups.is_none() {
            return Err(RemoteError::Unreachable(format!(
                "the board's relay box is not connected (bridge {})",
                self.path
            )));
        }
        let id = self.end.request(action);
        self.send();
        let deadline = tokio::time::Instant::now() + ACTION_TIMEOUT;
        loop {
            if let Some(answer) = self.end.answer(id) {
                return match &answer.outcome {
                    Outcome::Done => Ok(answer),
                    Outcome::Refused(r) => Err(RemoteError::Refused(admin_error(r))),
                };
            }
            let up = tokio::time::timeout_at(deadline, self.recv()).await.map_err(|_| {
                RemoteError::Unreachable(format!(
                    "the board's relay box did not answer within {} s (bridge {})",
                    ACTION_TIMEOUT.as_secs(),
                    self.path
                ))
            })?;
            let lost = up.is_none();
            self.take(up);
            if lost {
                return Err(RemoteError::Unreachable(format!("the bridge {} was lost", self.path)));
            }
        }
    }

    /// A correction checked by the box, made on nothing.
    pub async fn check_correction(
        &mut self,
        from_ply: u16,
        moves: Vec<String>,
    ) -> Result<Vec<MoveInfo>, RemoteError> {
        let answer = self.act(Action::CheckCorrection { from_ply, moves }).await?;
        answer
            .checked
            .iter()
            .map(|m| move_info(m).map_err(|e| RemoteError::Unreachable(format!("the box's answer: {e}"))))
            .collect()
    }

    /// Hands the host end's messages to the bridge's task. A full queue drops them: the
    /// bridge is stuck, and a resume puts things right once it moves again.
    fn send(&mut self) {
        while let Some(d) = self.end.next_down() {
            if self.downs.try_send(d).is_err() {
                tracing::debug!(path = %self.path, "bridge queue full; message dropped");
            }
        }
    }
}

/// What a journaled game is to the bridge: the host's mirror for a resume.
pub fn game_log(rec: &GameRecord) -> GameLog {
    let kind = if rec.header.start_fen.is_some() { StartWire::Fen } else { StartWire::Standard };
    let start = GameStart { rotated: rec.header.flipped, kind, start_fen: rec.header.start_fen.clone() };
    let mut log = GameLog::new(start, 0);
    log.key = Some(GameKey { round: rec.header.round, board: rec.header.board });
    log.white_clock = rec.white_clock.map(|d| dgt_bridge::convert::display_wire(d.into()));
    for m in &rec.moves {
        // A journal line that does not read ends the mirror there: the box sends the rest.
        let Ok(uci) = UciMove::from_ascii(m.uci.as_bytes()) else { break };
        log.plies.push(ResumePly { uci, clk: m.clk, emt: m.emt });
    }
    log.result = rec.result.as_deref().and_then(|r| {
        let r = match r {
            "1-0" => ResultWire::WhiteWins,
            "0-1" => ResultWire::BlackWins,
            "1/2-1/2" => ResultWire::Draw,
            _ => return None,
        };
        let why = if rec.termination.as_deref() == Some("time forfeit") {
            EndWire::FlagFall
        } else {
            EndWire::Operator
        };
        Some((r, why))
    });
    log
}
