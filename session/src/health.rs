//! The board's battery and its clock: connected, battery sign, paused. Each alert is raised
//! once per change and cleared by its counterpart, never repeated while nothing changes.

use alloc::{format, vec::Vec};
use dgt_protocol::ClockTimes;

use crate::alert::{Alert, AlertCode, AlertLevel};

/// How long the clock of a live game may stay stopped before the operator is alerted (ms).
pub const CLOCK_PAUSE_ALERT_MS: u64 = 3_000;
/// How long the clock of a live game may run with nothing changing on its board before
/// the operator is alerted (ms).
pub const BOARD_IDLE_ALERT_MS: u64 = 120_000;
/// Below this battery charge (percent, not charging) the operator is alerted.
pub const BATTERY_LOW_BELOW: u8 = 20;
/// Above this charge (or when charging) a battery alert is cleared; the gap to
/// [`BATTERY_LOW_BELOW`] keeps a charge that wobbles around the limit from repeating alerts.
pub const BATTERY_OK_ABOVE: u8 = 25;

/// What the health alerts are based on.
#[derive(Debug)]
pub struct Health {
    /// The board's last battery charge, percent.
    pub battery: Option<u8>,
    battery_low: bool,
    /// The last battery reading was low (under [`BATTERY_LOW_BELOW`], not charging): a low
    /// reading is alerted only when the one before was low too, as line noise can form one
    /// valid report but not two in a row.
    low_reading: bool,
    /// A clock reading (or a clock version answer) arrived since start.
    clock_seen: bool,
    clock_lost: bool,
    clock_battery_low: bool,
    /// The last clock state from the tracker showed the clock running (D0); `None` before
    /// the first reading and while the board is away: a clock first seen stopped in a game
    /// under way (after a restart, after an outage) is a stop too.
    clock_running: Option<bool>,
    /// The clock was started (or a move confirmed) in the current game: a later stop is a
    /// pause, not a clock still being set up.
    clock_started: bool,
    /// The clock of the live game stopped at this time, and was not restarted since.
    clock_stopped_at: Option<u64>,
    clock_paused: bool,
    /// How long a stop lasts before `clock_paused` (ms).
    pause_after_ms: u64,
    /// Since when a live game's clock has run with nothing changing on the board.
    idle_from: Option<u64>,
    idle_alerted: bool,
    /// How long before `board_idle` (ms).
    idle_after_ms: u64,
}

impl Health {
    /// Nothing known yet; a stopped clock alerts after `pause_after_ms`, a board still while
    /// its clock runs after `idle_after_ms`.
    pub fn new(pause_after_ms: u64, idle_after_ms: u64) -> Health {
        Health {
            battery: None,
            battery_low: false,
            low_reading: false,
            clock_seen: false,
            clock_lost: false,
            clock_battery_low: false,
            clock_running: None,
            clock_started: false,
            clock_stopped_at: None,
            clock_paused: false,
            pause_after_ms,
            idle_from: None,
            idle_alerted: false,
            idle_after_ms,
        }
    }

    /// Something changed on the board at `now`: an idle stretch ends (`board_active` when it
    /// was alerted).
    pub fn board_changed(&mut self, n: u32, now: u64, out: &mut Vec<Alert>) {
        self.idle_from = self.idle_from.map(|_| now);
        if core::mem::take(&mut self.idle_alerted) {
            out.push(Alert::new(
                AlertCode::BoardActive,
                AlertLevel::Info,
                format!("Board {n}: the board changes again."),
            ));
        }
    }

    /// Raises `board_idle` when a live game's clock has run for [`BOARD_IDLE_ALERT_MS`] (as
    /// configured) with nothing changing on the board: a long think or players away, but
    /// also a board that does not report its moves (a loose cable, a chain connector), which
    /// nothing else would show. `running` names the colour whose clock runs.
    pub fn check_idle(
        &mut self,
        n: u32,
        live: bool,
        running: Option<shakmaty::Color>,
        now: u64,
        out: &mut Vec<Alert>,
    ) {
        let Some(color) = running.filter(|_| live) else {
            self.idle_from = None;
            return;
        };
        let from = *self.idle_from.get_or_insert(now);
        if self.idle_alerted || now.saturating_sub(from) < self.idle_after_ms {
            return;
        }
        self.idle_alerted = true;
        let who = if color == shakmaty::Color::White { "White" } else { "Black" };
        let minutes = now.saturating_sub(from) / 60_000;
        out.push(Alert::new(
            AlertCode::BoardIdle,
            AlertLevel::Warning,
            format!(
                "Board {n}: nothing on the board has changed for {minutes} minutes while {who}'s clock runs. A long \
                 think or players away; or the board does not report its moves: check its cable (on a chain, its \
                 connectors)."
            ),
        ));
    }

    /// A battery report. Returns true when the charge changed. A low charge is alerted on
    /// its second reading in a row.
    pub fn battery(&mut self, n: u32, percent: u8, charging: bool, out: &mut Vec<Alert>) -> bool {
        let changed = self.battery != Some(percent);
        self.battery = Some(percent);
        let low = percent < BATTERY_LOW_BELOW && !charging;
        let confirmed = low && self.low_reading;
        self.low_reading = low;
        if !self.battery_low && confirmed {
            self.battery_low = true;
            out.push(Alert::new(
                AlertCode::BatteryLow,
                AlertLevel::Warning,
                format!(
                    "Board {n}: its battery is at {percent} %; charge or swap the board's battery before it runs \
                     out."
                ),
            ));
        } else if self.battery_low && (percent > BATTERY_OK_ABOVE || charging) {
            self.battery_low = false;
            let how = if charging { " and charging" } else { "" };
            out.push(Alert::new(
                AlertCode::BatteryOk,
                AlertLevel::Info,
                format!("Board {n}: its battery is at {percent} %{how}."),
            ));
        }
        changed
    }

    /// A clock answered the version command.
    pub fn clock_found(&mut self) {
        self.clock_seen = true;
    }

    /// The clock's own state from a reading: connected or not (D5), battery-low sign (D2).
    pub fn clock_reading(&mut self, n: u32, t: &ClockTimes, out: &mut Vec<Alert>) {
        if t.status.no_clock() {
            if self.clock_seen && !self.clock_lost {
                self.clock_lost = true;
                self.clock_running = None;
                self.clock_stopped_at = None;
                out.push(Alert::new(
                    AlertCode::ClockLost,
                    AlertLevel::Warning,
                    format!(
                        "Board {n}: the clock is not connected to the board any more; check the clock's cable and \
                         that it is switched on. Moves are still recorded, without clock times."
                    ),
                ));
            }
            return;
        }
        self.clock_seen = true;
        if self.clock_lost {
            self.clock_lost = false;
            out.push(Alert::new(
                AlertCode::ClockBack,
                AlertLevel::Info,
                format!("Board {n}: the clock is connected again."),
            ));
        }
        let low = t.status.battery_low();
        if low != self.clock_battery_low {
            self.clock_battery_low = low;
            out.push(if low {
                Alert::new(
                    AlertCode::ClockBatteryLow,
                    AlertLevel::Warning,
                    format!(
                        "Board {n}: the clock shows its battery-low sign; replace the clock's batteries at the next \
                         break, or swap the clock."
                    ),
                )
            } else {
                Alert::new(
                    AlertCode::ClockBatteryOk,
                    AlertLevel::Info,
                    format!("Board {n}: the clock's battery-low sign is gone."),
                )
            });
        }
    }

    /// The clock runs (D0) or not, as the tracker reports it; `live`: a game is under way.
    /// A stop during a live game starts the pause timer ([`Health::check_pause`]), a restart
    /// clears it.
    pub fn clock_run_state(&mut self, n: u32, running: bool, live: bool, now: u64, out: &mut Vec<Alert>) {
        let was_running = self.clock_running.replace(running);
        if running {
            self.clock_stopped_at = None;
            if live && was_running != Some(true) {
                self.clock_started = true;
            }
            if self.clock_paused {
                self.clock_paused = false;
                out.push(Alert::new(
                    AlertCode::ClockRunning,
                    AlertLevel::Info,
                    format!("Board {n}: the clock runs again."),
                ));
            }
        } else if was_running != Some(false) && live && self.clock_started && self.clock_stopped_at.is_none()
        {
            self.clock_stopped_at = Some(now);
        }
    }

    /// Moves are being made: the game is under way, whatever the clock did before.
    pub fn moves_made(&mut self) {
        self.clock_started = true;
    }

    /// Raises `clock_paused` when the clock of a live game stayed stopped long enough.
    pub fn check_pause(&mut self, n: u32, live: bool, now: u64, out: &mut Vec<Alert>) {
        let Some(since) = self.clock_stopped_at else { return };
        if !live {
            self.clock_stopped_at = None;
            return;
        }
        if now.saturating_sub(since) >= self.pause_after_ms {
            self.clock_stopped_at = None;
            if !self.clock_paused {
                self.clock_paused = true;
                out.push(Alert::new(
                    AlertCode::ClockPaused,
                    AlertLevel::Warning,
                    format!(
                        "The clock is stopped on board {n}: restart it, or if the game is over set its result in the console (open board {n}, Set result)."
                    ),
                ));
            }
        }
    }

    /// When [`Health::check_idle`] may next raise an alert: the session wakes for it, as
    /// nothing else may come (a still board sends nothing).
    pub fn idle_deadline(&self) -> Option<u64> {
        self.idle_from.filter(|_| !self.idle_alerted).map(|t| t + self.idle_after_ms)
    }

    /// When [`Health::check_pause`] may next raise an alert.
    pub fn pause_deadline(&self) -> Option<u64> {
        self.clock_stopped_at.map(|t| t + self.pause_after_ms)
    }

    /// No clock reading comes while the board is away: its own alert says enough. The
    /// clock is unknown until its next reading.
    pub fn board_away(&mut self) {
        self.clock_stopped_at = None;
        self.clock_running = None;
    }

    /// A game started or ended: pause tracking starts afresh.
    pub fn reset_pause(&mut self) {
        self.clock_started = false;
        self.clock_stopped_at = None;
        self.clock_paused = false;
    }
}
