//! One shutdown signal that every task listens to (the mini-redis pattern).
//!
//! [`Shutdown::trigger`] is called once, by the signal handler or a test; every task holds
//! a [`Listener`] and selects on [`Listener::wait`] beside its own work, finishes what it
//! was doing (a journal append in flight is never cut short) and returns. The owner then
//! awaits the tasks, so "the process exited" means "everything was flushed".

use tokio::sync::watch;

/// The sending side: cloneable, triggers once.
#[derive(Clone, Debug)]
pub struct Shutdown {
    tx: watch::Sender<bool>,
}

/// A task's receiving side.
#[derive(Clone, Debug)]
pub struct Listener {
    rx: watch::Receiver<bool>,
}

impl Default for Shutdown {
    fn default() -> Self {
        Self::new()
    }
}

impl Shutdown {
    /// A signal not yet triggered.
    pub fn new() -> Shutdown {
        Shutdown { tx: watch::channel(false).0 }
    }

    /// Asks every listener to stop.
    pub fn trigger(&self) {
        self.tx.send_replace(true);
    }

    /// A new listener.
    pub fn listener(&self) -> Listener {
        Listener { rx: self.tx.subscribe() }
    }
}

impl Listener {
    /// True once shutdown was triggered.
    pub fn is_triggered(&self) -> bool {
        *self.rx.borrow()
    }

    /// Completes when shutdown is triggered (at once if it already was).
    pub async fn wait(&mut self) {
        // An error means the sender is gone, which also means "stop".
        let _ = self.rx.wait_for(|&stop| stop).await;
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
