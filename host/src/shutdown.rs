//! One shutdown signal that every task listens to (the mini-redis pattern, on tokio-util's
//! `CancellationToken`).
//!
//! [`Shutdown::trigger`] is called once, by the signal handler or a test; every task holds
//! a [`Listener`] and selects on [`Listener::wait`] beside its own work, finishes what it
//! was doing (a journal append in flight is never cut short) and returns. The owner then
//! awaits the tasks, so "the process exited" means "everything was flushed".

use tokio_util::sync::CancellationToken;

/// The sending side: cloneable, triggers once.
#[derive(Clone, Debug, Default)]
pub struct Shutdown {
    token: CancellationToken,
}

/// A task's receiving side.
#[derive(Clone, Debug)]
pub struct Listener {
    token: CancellationToken,
}

impl Shutdown {
    /// A signal not yet triggered.
    pub fn new() -> Shutdown {
        Shutdown::default()
    }

    /// Asks every listener to stop.
    pub fn trigger(&self) {
        self.token.cancel();
    }

    /// A new listener.
    pub fn listener(&self) -> Listener {
        Listener { token: self.token.clone() }
    }
}

impl Listener {
    /// True once shutdown was triggered.
    pub fn is_triggered(&self) -> bool {
        self.token.is_cancelled()
    }

    /// Completes when shutdown is triggered (at once if it already was).
    pub async fn wait(&mut self) {
        self.token.cancelled().await;
    }
}

/// Completes on SIGINT or SIGTERM (Ctrl-C only where SIGTERM does not exist).
pub async fn signal() -> std::io::Result<&'static str> {
    #[cfg(unix)]
    {
        use tokio::signal::unix::{SignalKind, signal};
        let mut term = signal(SignalKind::terminate())?;
        let mut int = signal(SignalKind::interrupt())?;
        tokio::select! {
            _ = term.recv() => Ok("SIGTERM"),
            _ = int.recv() => Ok("SIGINT"),
        }
    }
    #[cfg(not(unix))]
    {
        tokio::signal::ctrl_c().await?;
        Ok("Ctrl-C")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn listeners_see_the_trigger_even_when_late() {
        let s = Shutdown::new();
        let mut early = s.listener();
        assert!(!early.is_triggered());
        s.trigger();
        early.wait().await;
        let mut late = s.listener();
        assert!(late.is_triggered());
        late.wait().await;
    }
}
