//! Persistence: an append-only journal per game, and PGN files in the LiveChess export
//! folder layout.
//!
//! ```text
//! DATA/round-N/game-M.journal   one JSON record a line, fsynced per append
//! DATA/round-N/game-M.pgn       the game, rewritten atomically (tmp + rename)
//! DATA/round-N/games.pgn        every game of the round, by board number
//! DATA/dgt-relay.lock           locked (flock) by the relay using the folder; its PID
//! ```
//!
//! # Why a journal and not a database
//! Nothing to install, and the only operation that must be durable is "append one record".
//! [`Journal::append`] writes one line and calls `fdatasync` before it returns; the board
//! module publishes a confirmed move only after that. A failed append (disk full, I/O
//! error, a file-size limit) truncates the file back to its previous length, so a torn
//! line never survives, and returns the error: the caller keeps the record and retries.
//!
//! # What opening the folder repairs, and what it leaves alone
//! [`Store::open`] replays every journal. Only complete lines were ever published, so:
//! - a tail that is no complete record (a write cut by a crash or a power loss, or bytes
//!   added by something else) is cut off before anything is appended, as Redis does with a
//!   truncated append-only file, and kept in `game-M.journal.torn` beside the journal.
//!   Otherwise the next record would be glued to the fragment, and every record after it
//!   would be out of sequence at the next start. (A record glued that way by an older
//!   version is still read.)
//! - a journal whose first record (the game's header) is damaged, or names another game,
//!   is not loaded and is left exactly as it is, for the operator.
//! - a journal cut before its header was complete held nothing that was published: it is
//!   moved to its `.torn` file.
//!
//! Each is logged and reported as a [`Notice`], which the relay raises as a relay-wide
//! `storage` alert. A line in the middle that does not parse is skipped with a warning.
//!
//! # Why a lock
//! Two relays on one folder would each rewrite `games.pgn` from their own view and append
//! to the same journals. The folder's lock file is locked (`flock`, which the kernel
//! releases when the process ends, even by SIGKILL) for as long as the [`Store`] lives; a
//! second relay is refused with an error naming the folder and the holder's PID.
//!
//! # Why the PGN files are written by one task
//! Two boards of one round finishing a move at once would otherwise race on `games.pgn`.
//! [`Store::set_pgn`] records which games changed; [`run_pgn_writer`] coalesces them
//! and rewrites each changed game and its round file from the texts held in memory.

use std::collections::{BTreeMap, BTreeSet};
use std::fs::{self, File, OpenOptions, TryLockError};
use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, MutexGuard};

use dgt_session::AlertLevel;
use tokio::sync::Notify;

mod journal;

pub use journal::{Appends, Journal, MAX_RECORD, replay, torn_path};

use journal::{load_journal, reopen_append, shown_path};

use crate::clock::Clock;
pub use crate::record::{GameHeader, GameRecord, JournalMove, Record};
use crate::shutdown::Listener;

/// The data folder's lock file (see the module docs).
pub const LOCK_FILE: &str = "dgt-relay.lock";

/// A storage failure.
#[derive(Debug, thiserror::Error)]
pub enum StoreError {
    /// An I/O error on a file.
    #[error("{path}: {source}")]
    Io {
        /// The file.
        path: PathBuf,
        /// The error.
        source: std::io::Error,
    },
    /// A record could not be serialised.
    #[error("cannot serialise a journal record: {0}")]
    Encode(#[from] serde_json::Error),
    /// A blocking task failed.
    #[error("storage task failed: {0}")]
    Task(String),
    /// Another process holds the data folder's lock.
    #[error(
        "the data folder {} is in use by another dgt-relay ({}); stop that one first, or give this one \
         another data folder",
        folder.display(),
        pid.map_or_else(|| "PID unknown".to_owned(), |p| format!("PID {p}"))
    )]
    Locked {
        /// The folder.
        folder: PathBuf,
        /// The holder's PID, as it wrote it in the lock file.
        pid: Option<u32>,
    },
}

/// Something [`Store::open`] found wrong in a journal, and what it did about it (see the
/// module docs). The relay raises each as a relay-wide `storage` alert.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Notice {
    /// `Error`: a game was not loaded; `Warning`: a journal was repaired.
    pub level: AlertLevel,
    /// The journal.
    pub path: PathBuf,
    /// What happened and what to do, for the operator.
    pub message: String,
}

pub(super) fn io_err(path: &Path) -> impl FnOnce(std::io::Error) -> StoreError + '_ {
    move |source| StoreError::Io { path: path.to_owned(), source }
}

pub(super) fn sync_dir(dir: &Path) {
    // Directory fsync makes a new file's name durable; not every platform allows it.
    if let Ok(d) = File::open(dir) {
        let _ = d.sync_all();
    }
}

/// Writes `text` to `path` atomically: a temporary file beside it, fsync, rename.
pub fn write_atomic(path: &Path, text: &str) -> Result<(), StoreError> {
    let tmp = path.with_extension("pgn.tmp");
    let r = (|| {
        let mut f = File::create(&tmp)?;
        f.write_all(text.as_bytes())?;
        f.sync_data()?;
        fs::rename(&tmp, path)
    })();
    if r.is_err() {
        let _ = fs::remove_file(&tmp);
    }
    r.map_err(io_err(path))
}

struct Texts {
    /// PGN text per (round, board).
    games: BTreeMap<(u32, u32), String>,
    dirty: BTreeSet<(u32, u32)>,
}

/// The data folder, locked for as long as this lives.
pub struct Store {
    root: PathBuf,
    texts: Mutex<Texts>,
    notify: Notify,
    notices: Vec<Notice>,
    /// The lock file, locked (see the module docs).
    _lock: File,
    /// Counts PGN changes, for readers other than the file writer (the Lichess push).
    changes: tokio::sync::watch::Sender<u64>,
    appends: Arc<Appends>,
    /// The broadcast delay of the PGN texts (see [`crate::delay`]).
    delay: crate::delay::Delay,
    /// The relay's clock, for the delay.
    clock: Clock,
    /// PGN texts waiting for the delay: (round, board, text).
    pending: Mutex<crate::delay::DelayLine<(u32, u32, String)>>,
}

impl std::fmt::Debug for Store {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Store").field("root", &self.root).finish_non_exhaustive()
    }
}

impl Store {
    /// Opens (creating) the data folder, locks it, and replays every journal in it,
    /// repairing torn tails (see the module docs and [`Store::notices`]). Fails with
    /// [`StoreError::Locked`] when another process uses the folder.
    pub fn open(root: &Path, clock: Clock) -> Result<(Store, Vec<GameRecord>), StoreError> {
        fs::create_dir_all(root).map_err(io_err(root))?;
        let lock = lock_folder(root)?;
        let mut games = Vec::new();
        let mut notices = Vec::new();
        let mut rounds: Vec<(u32, PathBuf)> = Vec::new();
        for entry in fs::read_dir(root).map_err(io_err(root))?.flatten() {
            if let Some(round) = round_of(&entry.file_name()) {
                rounds.push((round, entry.path()));
            }
        }
        rounds.sort();
        for (round, dir) in rounds {
            let mut journals: Vec<(u32, PathBuf)> = Vec::new();
            for e in fs::read_dir(&dir).map_err(io_err(&dir))?.flatten() {
                if let Some(board) = board_of(&e.file_name()) {
                    journals.push((board, e.path()));
                }
            }
            journals.sort();
            for (board, path) in journals {
                let shown = shown_path(root, &path);
                let mut notice = |level: AlertLevel, message: String| {
                    match level {
                        AlertLevel::Error => tracing::error!(path = %path.display(), "{message}"),
                        _ => tracing::warn!(path = %path.display(), "{message}"),
                    }
                    notices.push(Notice { level, path: path.clone(), message });
                };
                if let Some(g) = load_journal(&path, &shown, round, board, &mut notice) {
                    games.push(g);
                }
            }
        }
        games.sort_by_key(|g| (g.header.round, g.header.board));
        let store = Store {
            root: root.to_owned(),
            texts: Mutex::new(Texts { games: BTreeMap::new(), dirty: BTreeSet::new() }),
            notify: Notify::new(),
            notices,
            _lock: lock,
            changes: tokio::sync::watch::channel(0).0,
            appends: Arc::default(),
            delay: crate::delay::Delay::default(),
            pending: Mutex::default(),
            clock,
        };
        Ok((store, games))
    }

    /// What opening the folder found wrong in its journals, and what it did about it.
    pub fn notices(&self) -> &[Notice] {
        &self.notices
    }

    fn lock(&self) -> MutexGuard<'_, Texts> {
        self.texts.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// The data folder.
    pub fn root(&self) -> &Path {
        &self.root
    }

    /// The journals' growth, for readers that follow them (the NATS publisher).
    pub fn appends(&self) -> Arc<Appends> {
        Arc::clone(&self.appends)
    }

    /// Where a game's journal lives.
    pub fn journal_path(&self, round: u32, board: u32) -> PathBuf {
        self.root.join(format!("round-{round}")).join(format!("game-{board}.journal"))
    }

    /// Every journal in the data folder, as (round, board).
    pub fn journals(&self) -> Vec<(u32, u32)> {
        let mut out = Vec::new();
        let Ok(rounds) = fs::read_dir(&self.root) else { return out };
        for entry in rounds.flatten() {
            let Some(round) = round_of(&entry.file_name()) else { continue };
            let Ok(games) = fs::read_dir(entry.path()) else { continue };
            out.extend(games.flatten().filter_map(|e| board_of(&e.file_name())).map(|board| (round, board)));
        }
        out.sort_unstable();
        out
    }

    /// True when a journal exists for this game.
    pub fn has_journal(&self, round: u32, board: u32) -> bool {
        self.journal_path(round, board).exists()
    }

    /// Starts a game's journal (replacing any file there) with its first record, durably.
    pub async fn create_journal(&self, header: &GameHeader) -> Result<Journal, StoreError> {
        let path = self.journal_path(header.round, header.board);
        let p = path.clone();
        let file = tokio::task::spawn_blocking(move || -> Result<File, StoreError> {
            let dir = p.parent().map(Path::to_owned).unwrap_or_default();
            fs::create_dir_all(&dir).map_err(io_err(&dir))?;
            let f =
                OpenOptions::new().create(true).write(true).truncate(true).open(&p).map_err(io_err(&p))?;
            sync_dir(&dir);
            Ok(f)
        })
        .await
        .map_err(|e| StoreError::Task(e.to_string()))??;
        let file = reopen_append(file, &path)?;
        let key = (header.round, header.board);
        self.appends.mark(key, true);
        let j = Journal { path, file: Arc::new(file), key, appends: Arc::clone(&self.appends) };
        j.append(&Record::Game(header.clone())).await?;
        Ok(j)
    }

    /// Reopens an existing journal for appending (a game resumed after a restart; its tail
    /// was repaired by [`Store::open`]).
    pub fn open_journal(&self, round: u32, board: u32) -> Result<Journal, StoreError> {
        let path = self.journal_path(round, board);
        let file = OpenOptions::new().read(true).append(true).open(&path).map_err(io_err(&path))?;
        Ok(Journal { path, file: Arc::new(file), key: (round, board), appends: Arc::clone(&self.appends) })
    }

    /// Sets a game's PGN text: at once, or with a broadcast delay once the delay has
    /// passed ([`Store::release_pgn`]). Everything that reads the texts (the files, `/pgn`,
    /// the round folder's index, the Lichess push) is public, so all of them lag alike.
    pub fn set_pgn(&self, round: u32, board: u32, text: String) {
        {
            let mut pending = self.pending.lock().unwrap_or_else(|p| p.into_inner());
            if self.delay.seconds() > 0 || !pending.is_empty() {
                pending.push(self.clock.now(), (round, board, text));
                drop(pending);
                // With the delay back to zero, what waited goes first, then this.
                self.release_pgn();
                return;
            }
        }
        self.publish_pgn(round, board, text);
    }

    /// Removes a game that holds no move (an empty game whose board moved on to another
    /// round): its journal, and its PGN text, file and place in the round's files; a round
    /// left with no game loses its folder's files. A text waiting for the broadcast delay
    /// goes too (an empty game tells nothing).
    pub async fn remove_game(&self, round: u32, board: u32) -> Result<(), StoreError> {
        let path = self.journal_path(round, board);
        let p = path.clone();
        tokio::task::spawn_blocking(move || match fs::remove_file(&p) {
            Err(e) if e.kind() != std::io::ErrorKind::NotFound => Err(io_err(&p)(e)),
            _ => {
                if let Some(dir) = p.parent() {
                    sync_dir(dir);
                }
                Ok(())
            }
        })
        .await
        .map_err(|e| StoreError::Task(e.to_string()))??;
        {
            let mut pending = self.pending.lock().unwrap_or_else(|p| p.into_inner());
            pending.retain(|(r, b, _)| (*r, *b) != (round, board));
            let mut t = self.lock();
            t.games.remove(&(round, board));
            t.dirty.insert((round, board));
        }
        self.notify.notify_one();
        self.changes.send_modify(|n| *n += 1);
        Ok(())
    }

    /// The broadcast delay of the PGN texts.
    pub fn delay(&self) -> &crate::delay::Delay {
        &self.delay
    }

    /// Publishes the PGN texts that have waited out the delay by now.
    pub fn release_pgn(&self) {
        // Published under the queue's lock, so two releases cannot swap texts.
        let mut pending = self.pending.lock().unwrap_or_else(|p| p.into_inner());
        for (round, board, text) in pending.release(self.clock.now(), self.delay.get()) {
            self.publish_pgn(round, board, text);
        }
    }

    /// When the next waiting PGN text is due, if one waits.
    pub fn next_pgn_due(&self) -> Option<tokio::time::Instant> {
        self.pending.lock().unwrap_or_else(|p| p.into_inner()).next_due(self.delay.get())
    }

    /// Makes a game's text public; the same text again changes nothing (no file is
    /// rewritten, no reader woken).
    fn publish_pgn(&self, round: u32, board: u32, text: String) {
        let mut t = self.lock();
        if t.games.get(&(round, board)) == Some(&text) {
            return;
        }
        t.games.insert((round, board), text);
        t.dirty.insert((round, board));
        drop(t);
        self.notify.notify_one();
        self.changes.send_modify(|n| *n += 1);
    }

    /// Wakes what follows the PGN (the push, the index files) for a change of the event
    /// itself: a round started or finished, a round's Lichess id.
    pub fn touch(&self) {
        self.changes.send_modify(|n| *n += 1);
    }

    /// Wakes on every PGN change (changes made meanwhile are seen as one).
    pub fn subscribe(&self) -> tokio::sync::watch::Receiver<u64> {
        self.changes.subscribe()
    }

    /// A game's PGN.
    pub fn game_pgn(&self, round: u32, board: u32) -> Option<String> {
        self.lock().games.get(&(round, board)).cloned()
    }

    /// A round's combined PGN (games by board number), if the round has games.
    pub fn round_pgn(&self, round: u32) -> Option<String> {
        let t = self.lock();
        let mut it = t.games.range((round, 0)..=(round, u32::MAX)).peekable();
        it.peek()?;
        Some(it.map(|(_, text)| text.as_str()).collect())
    }

    /// Rounds with at least one game.
    pub fn rounds(&self) -> Vec<u32> {
        let t = self.lock();
        let set: BTreeSet<u32> = t.games.keys().map(|(r, _)| *r).collect();
        set.into_iter().collect()
    }

    /// Games of a round (board numbers).
    pub fn games(&self, round: u32) -> Vec<u32> {
        self.lock().games.range((round, 0)..=(round, u32::MAX)).map(|((_, b), _)| *b).collect()
    }

    /// Writes every dirty game and its round file now; returns the first error.
    pub fn flush_pgn(&self) -> Result<(), StoreError> {
        let (dirty, snapshot) = {
            let mut t = self.lock();
            let dirty = std::mem::take(&mut t.dirty);
            let rounds: BTreeSet<u32> = dirty.iter().map(|(r, _)| *r).collect();
            let snapshot: BTreeMap<(u32, u32), String> = t
                .games
                .iter()
                .filter(|((r, _), _)| rounds.contains(r))
                .map(|(k, v)| (*k, v.clone()))
                .collect();
            (dirty, snapshot)
        };
        let mut first_err = None;
        let mut failed = BTreeSet::new();
        for &(round, board) in &dirty {
            let dir = self.root.join(format!("round-{round}"));
            let file = dir.join(format!("game-{board}.pgn"));
            let r = match snapshot.get(&(round, board)) {
                Some(text) => {
                    fs::create_dir_all(&dir).map_err(io_err(&dir)).and_then(|()| write_atomic(&file, text))
                }
                // A removed game.
                None => remove_if_there(&file),
            };
            if let Err(e) = r {
                failed.insert((round, board));
                first_err.get_or_insert(e);
            }
        }
        let rounds: BTreeSet<u32> = dirty.iter().map(|(r, _)| *r).collect();
        for round in rounds {
            let dir = self.root.join(format!("round-{round}"));
            let mut games = snapshot.range((round, 0)..=(round, u32::MAX)).peekable();
            if games.peek().is_none() {
                // No game left: no round files, and no folder when nothing else is in it.
                let r = remove_if_there(&dir.join("games.pgn")).and(remove_if_there(&dir.join("index.json")));
                if let Err(e) = r {
                    failed.extend(dirty.iter().filter(|(r, _)| *r == round));
                    first_err.get_or_insert(e);
                }
                let _ = fs::remove_dir(&dir);
                continue;
            }
            let text: String = games.map(|(_, t)| t.as_str()).collect();
            if let Err(e) = write_atomic(&dir.join("games.pgn"), &text) {
                failed.extend(dirty.iter().filter(|(r, _)| *r == round));
                first_err.get_or_insert(e);
            }
        }
        if !failed.is_empty() {
            self.lock().dirty.extend(failed);
        }
        first_err.map_or(Ok(()), Err)
    }
}

/// Removes a file; one that is not there is fine.
fn remove_if_there(path: &Path) -> Result<(), StoreError> {
    match fs::remove_file(path) {
        Err(e) if e.kind() != std::io::ErrorKind::NotFound => Err(io_err(path)(e)),
        _ => Ok(()),
    }
}

/// The round of a folder named `round-N`.
fn round_of(name: &std::ffi::OsStr) -> Option<u32> {
    name.to_str()?.strip_prefix("round-")?.parse().ok()
}

/// The board of a journal named `game-M.journal`.
fn board_of(name: &std::ffi::OsStr) -> Option<u32> {
    name.to_str()?.strip_prefix("game-")?.strip_suffix(".journal")?.parse().ok()
}

/// Locks the data folder's lock file and writes this process's PID in it.
fn lock_folder(root: &Path) -> Result<File, StoreError> {
    let path = root.join(LOCK_FILE);
    let file = OpenOptions::new()
        .read(true)
        .write(true)
        .create(true)
        .truncate(false)
        .open(&path)
        .map_err(io_err(&path))?;
    match file.try_lock() {
        Ok(()) => {}
        Err(TryLockError::WouldBlock) => {
            let pid = fs::read_to_string(&path).ok().and_then(|s| s.trim().parse().ok());
            return Err(StoreError::Locked { folder: root.to_owned(), pid });
        }
        Err(TryLockError::Error(e)) => return Err(StoreError::Io { path, source: e }),
    }
    let written = (|| {
        file.set_len(0)?;
        (&file).write_all(format!("{}\n", std::process::id()).as_bytes())?;
        file.sync_data()
    })();
    written.map_err(io_err(&path))?;
    Ok(file)
}

/// Writes PGN files as games change, until shutdown; then writes what is left. A failure is
/// logged and given to `report` once (the relay raises an operator alert), its recovery too
/// (`Ok`); the files are retried on the next change or after a second.
pub async fn run_pgn_writer(store: Arc<Store>, report: impl Fn(Result<(), &StoreError>), mut stop: Listener) {
    let mut failing = false;
    loop {
        let stopping = tokio::select! {
            _ = store.notify.notified() => false,
            _ = tokio::time::sleep(std::time::Duration::from_secs(1)), if failing => false,
            _ = stop.wait() => true,
        };
        let s = Arc::clone(&store);
        let result = tokio::task::spawn_blocking(move || s.flush_pgn())
            .await
            .unwrap_or_else(|e| Err(StoreError::Task(e.to_string())));
        match result {
            Ok(()) => {
                if failing {
                    tracing::info!("PGN files written again");
                    failing = false;
                    report(Ok(()));
                }
            }
            Err(e) => {
                if !failing {
                    tracing::error!(error = %e, "cannot write PGN files");
                    report(Err(&e));
                }
                failing = true;
            }
        }
        if stopping {
            return;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn tmpdir(name: &str) -> PathBuf {
        let d = std::env::temp_dir().join(format!("dgt-relay-store-{name}-{}", std::process::id()));
        let _ = fs::remove_dir_all(&d);
        d
    }

    #[test]
    fn the_data_folder_is_locked_while_a_store_has_it() {
        let dir = tmpdir("lock");
        let (store, _) = Store::open(&dir, Clock::system()).unwrap();
        let err = Store::open(&dir, Clock::system()).unwrap_err();
        assert!(
            matches!(&err, StoreError::Locked { pid: Some(p), .. } if *p == std::process::id()),
            "{err:?}"
        );
        let text = err.to_string();
        assert!(text.contains(&dir.display().to_string()), "{text}");
        assert!(text.contains(&format!("PID {}", std::process::id())), "{text}");
        drop(store);
        let (_again, _) = Store::open(&dir, Clock::system()).unwrap();
        let _ = fs::remove_dir_all(&dir);
    }

    #[test]
    fn pgn_files_follow_the_livechess_layout() {
        let dir = tmpdir("pgn");
        let (store, _) = Store::open(&dir, Clock::system()).unwrap();
        store.set_pgn(2, 10, "game ten\n\n".into());
        store.set_pgn(2, 9, "game nine\n\n".into());
        store.flush_pgn().unwrap();
        assert_eq!(fs::read_to_string(dir.join("round-2/game-10.pgn")).unwrap(), "game ten\n\n");
        assert_eq!(fs::read_to_string(dir.join("round-2/games.pgn")).unwrap(), "game nine\n\ngame ten\n\n");
        assert_eq!(store.round_pgn(2).unwrap(), "game nine\n\ngame ten\n\n");
        assert!(store.round_pgn(3).is_none());
        assert!(!dir.join("round-2/games.pgn.tmp").exists());
        let _ = fs::remove_dir_all(&dir);
    }

    #[test]
    fn with_a_delay_a_games_text_is_public_once_the_delay_has_passed() {
        let dir = tmpdir("delay");
        let clock = Clock::manual(1_764_000_000_000);
        let (store, _) = Store::open(&dir, clock.clone()).unwrap();
        store.delay().set(60).unwrap();
        store.set_pgn(1, 1, "e4\n\n".into());
        clock.advance(std::time::Duration::from_secs(30));
        store.set_pgn(1, 1, "e4 e5\n\n".into());
        assert!(store.game_pgn(1, 1).is_none());
        assert_eq!(store.next_pgn_due(), Some(clock.now() + std::time::Duration::from_secs(30)));
        clock.advance(std::time::Duration::from_secs(30));
        store.release_pgn();
        assert_eq!(store.game_pgn(1, 1).as_deref(), Some("e4\n\n"));
        clock.advance(std::time::Duration::from_secs(30));
        store.release_pgn();
        assert_eq!(store.game_pgn(1, 1).as_deref(), Some("e4 e5\n\n"));
        assert!(store.next_pgn_due().is_none());
        let _ = fs::remove_dir_all(&dir);
    }
}
