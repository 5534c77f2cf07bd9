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
use std::io::{BufRead, BufReader, Read, Seek, SeekFrom, Write};
use std::os::unix::fs::FileExt;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, MutexGuard};

use dgt_session::AlertLevel;
use tokio::sync::Notify;

pub use crate::record::{GameHeader, GameRecord, JournalMove, Record};
use crate::shutdown::Listener;

/// The longest journal line read back (bytes); longer lines are skipped.
pub const MAX_RECORD: usize = 64 * 1024;

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

fn io_err(path: &Path) -> impl FnOnce(std::io::Error) -> StoreError + '_ {
    move |source| StoreError::Io { path: path.to_owned(), source }
}

/// Which journals grew since a reader last looked: the NATS publisher's wake-up. Marked
/// after the fsync only, so a reader never sees a record before it is durable.
#[derive(Debug, Default)]
pub struct Appends {
    /// (round, board) -> the journal was created anew (truncated) since the last look.
    dirty: Mutex<BTreeMap<(u32, u32), bool>>,
    notify: Notify,
}

impl Appends {
    fn mark(&self, key: (u32, u32), created: bool) {
        *self.dirty.lock().unwrap_or_else(|p| p.into_inner()).entry(key).or_insert(false) |= created;
        self.notify.notify_one();
    }

    /// Takes the journals marked since the last call, with their "created anew" flag.
    pub fn take(&self) -> BTreeMap<(u32, u32), bool> {
        std::mem::take(&mut *self.dirty.lock().unwrap_or_else(|p| p.into_inner()))
    }

    /// Waits until a journal is marked (returns at once if one was marked meanwhile).
    pub async fn changed(&self) {
        self.notify.notified().await;
    }
}

/// An open journal, appended to by one board task.
#[derive(Debug)]
pub struct Journal {
    path: PathBuf,
    file: Arc<File>,
    key: (u32, u32),
    appends: Arc<Appends>,
}

impl Journal {
    /// The file.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Appends one record and waits until it is on disk (`fdatasync`). On failure the file
    /// is cut back to its previous length and the error returned: nothing half-written
    /// stays, and the caller still holds the record.
    pub async fn append(&self, rec: &Record) -> Result<(), StoreError> {
        let mut line = serde_json::to_vec(rec)?;
        line.push(b'\n');
        let file = Arc::clone(&self.file);
        let path = self.path.clone();
        tokio::task::spawn_blocking(move || append_sync(&file, &path, &line))
            .await
            .map_err(|e| StoreError::Task(e.to_string()))??;
        self.appends.mark(self.key, false);
        Ok(())
    }
}

fn append_sync(file: &File, path: &Path, line: &[u8]) -> Result<(), StoreError> {
    let before = file.metadata().map_err(io_err(path))?.len();
    let result = (|| {
        let mut f = file;
        // A file that does not end a line (written to by something else since it was
        // opened): the record starts a line of its own rather than be glued to the bytes.
        let mut last = [0u8];
        if before > 0 && matches!(file.read_at(&mut last, before - 1), Ok(1)) && last[0] != b'\n' {
            f.write_all(b"\n")?;
        }
        f.write_all(line)?;
        f.sync_data()
    })();
    if let Err(e) = result {
        // Best effort: the error that matters is the write's.
        let _ = file.set_len(before);
        return Err(StoreError::Io { path: path.to_owned(), source: e });
    }
    Ok(())
}

fn sync_dir(dir: &Path) {
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
    pub fn open(root: &Path) -> Result<(Store, Vec<GameRecord>), StoreError> {
        fs::create_dir_all(root).map_err(io_err(root))?;
        let lock = lock_folder(root)?;
        let mut games = Vec::new();
        let mut notices = Vec::new();
        let mut rounds: Vec<(u32, PathBuf)> = Vec::new();
        for entry in fs::read_dir(root).map_err(io_err(root))?.flatten() {
            let name = entry.file_name();
            if let Some(round) =
                name.to_str().and_then(|n| n.strip_prefix("round-")).and_then(|n| n.parse::<u32>().ok())
            {
                rounds.push((round, entry.path()));
            }
        }
        rounds.sort();
        for (round, dir) in rounds {
            let mut journals: Vec<(u32, PathBuf)> = Vec::new();
            for e in fs::read_dir(&dir).map_err(io_err(&dir))?.flatten() {
                let n = e.file_name();
                if let Some(board) = n
                    .to_str()
                    .and_then(|n| n.strip_prefix("game-"))
                    .and_then(|n| n.strip_suffix(".journal"))
                    .and_then(|n| n.parse::<u32>().ok())
                {
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
            let name = entry.file_name();
            let Some(round) =
                name.to_str().and_then(|n| n.strip_prefix("round-")).and_then(|n| n.parse::<u32>().ok())
            else {
                continue;
            };
            let Ok(games) = fs::read_dir(entry.path()) else { continue };
            for e in games.flatten() {
                let n = e.file_name();
                if let Some(board) = n
                    .to_str()
                    .and_then(|n| n.strip_prefix("game-"))
                    .and_then(|n| n.strip_suffix(".journal"))
                    .and_then(|n| n.parse::<u32>().ok())
                {
                    out.push((round, board));
                }
            }
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
                pending.push(std::time::Instant::now(), (round, board, text));
                drop(pending);
                // With the delay back to zero, what waited goes first, then this.
                self.release_pgn(std::time::Instant::now());
                return;
            }
        }
        self.publish_pgn(round, board, text);
    }

    /// The broadcast delay of the PGN texts.
    pub fn delay(&self) -> &crate::delay::Delay {
        &self.delay
    }

    /// Publishes the PGN texts that have waited out the delay at `now`.
    pub fn release_pgn(&self, now: std::time::Instant) {
        // Published under the queue's lock, so two releases cannot swap texts.
        let mut pending = self.pending.lock().unwrap_or_else(|p| p.into_inner());
        for (round, board, text) in pending.release(now, self.delay.get()) {
            self.publish_pgn(round, board, text);
        }
    }

    /// When the next waiting PGN text is due, if one waits.
    pub fn next_pgn_due(&self) -> Option<std::time::Instant> {
        self.pending.lock().unwrap_or_else(|p| p.into_inner()).next_due(self.delay.get())
    }

    fn publish_pgn(&self, round: u32, board: u32, text: String) {
        let mut t = self.lock();
        t.games.insert((round, board), text);
        t.dirty.insert((round, board));
        drop(t);
        self.notify.notify_one();
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
            let r = fs::create_dir_all(&dir).map_err(io_err(&dir)).and_then(|()| {
                let text = snapshot.get(&(round, board)).map_or("", String::as_str);
                write_atomic(&dir.join(format!("game-{board}.pgn")), text)
            });
            if let Err(e) = r {
                failed.insert((round, board));
                first_err.get_or_insert(e);
            }
        }
        let rounds: BTreeSet<u32> = dirty.iter().map(|(r, _)| *r).collect();
        for round in rounds {
            let dir = self.root.join(format!("round-{round}"));
            let text: String =
                snapshot.range((round, 0)..=(round, u32::MAX)).map(|(_, t)| t.as_str()).collect();
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

fn reopen_append(file: File, path: &Path) -> Result<File, StoreError> {
    drop(file);
    OpenOptions::new().read(true).append(true).open(path).map_err(io_err(path))
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

/// `round-N/game-M.journal`, as the operator knows it.
fn shown_path(root: &Path, path: &Path) -> String {
    path.strip_prefix(root).unwrap_or(path).display().to_string()
}

/// Where what was cut from a journal is kept.
pub fn torn_path(journal: &Path) -> PathBuf {
    let mut name = journal.file_name().map(std::ffi::OsString::from).unwrap_or_default();
    name.push(".torn");
    journal.with_file_name(name)
}

/// Loads one journal at `path` (`shown` to the operator), expected to hold round `round`,
/// board `board`: repairs its tail, or leaves it alone, as the module docs say; tells
/// `notice` what it did.
fn load_journal(
    path: &Path,
    shown: &str,
    round: u32,
    board: u32,
    notice: &mut impl FnMut(AlertLevel, String),
) -> Option<GameRecord> {
    let read = match read_journal(path) {
        Ok(r) => r,
        Err(e) => {
            notice(
                AlertLevel::Error,
                format!("The journal {shown} cannot be read ({e}); its game is not loaded."),
            );
            return None;
        }
    };
    let torn = torn_path(path);
    let torn_name = torn.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default();
    if read.len == 0 {
        // Created, then the program stopped before its first record: nothing was in it.
        tracing::warn!(path = %path.display(), "empty journal removed");
        let _ = fs::remove_file(path);
        return None;
    }
    if read.damaged_header {
        notice(
            AlertLevel::Error,
            format!(
                "The journal {shown} does not begin with a readable game header: its game is not loaded, and the \
                 file is left as it is. Repair or move it, then restart the relay; meanwhile a new game on board \
                 {board} goes to the next round."
            ),
        );
        return None;
    }
    let Some(game) = read.game else {
        // The header itself was cut short: the game never had a record, nothing was published.
        match cut_tail(path, 0, &torn).and_then(|()| fs::remove_file(path).map_err(io_err(path))) {
            Ok(()) => notice(
                AlertLevel::Warning,
                format!(
                    "The journal {shown} held only an incomplete header ({} bytes, a write cut by a crash or a power \
                     loss); nothing of it was published. It was removed and its bytes kept in {torn_name}.",
                    read.len
                ),
            ),
            Err(e) => notice(
                AlertLevel::Error,
                format!(
                    "The journal {shown} holds only an incomplete header and cannot be moved aside ({e})."
                ),
            ),
        }
        return None;
    };
    if game.header.round != round || game.header.board != board {
        notice(
            AlertLevel::Error,
            format!(
                "The journal {shown} holds round {} board {}, not the game its name says: it is not loaded, and \
                 the file is left as it is. Move it, then restart the relay.",
                game.header.round, game.header.board
            ),
        );
        return None;
    }
    if read.good_end < read.len {
        let cut = read.len - read.good_end;
        match cut_tail(path, read.good_end, &torn) {
            Ok(()) => notice(
                AlertLevel::Warning,
                format!(
                    "The journal {shown} ended with {cut} bytes that are no complete record (a write cut by a crash \
                     or a power loss, or bytes added to it): they were cut off, so that new records start on a line \
                     of their own, and kept in {torn_name}. Only complete records were ever published; the game goes \
                     on from its last one and the board is reconciled with it."
                ),
            ),
            Err(e) => {
                // Appending after the fragment would glue the next record to it.
                notice(
                    AlertLevel::Error,
                    format!(
                        "The journal {shown} ends with {cut} bytes that are no complete record and cannot be cut off \
                         ({e}): its game is not resumed. Free the disk or fix the file's permissions, then restart."
                    ),
                );
                return None;
            }
        }
    }
    Some(game)
}

/// What [`read_journal`] found.
#[derive(Debug)]
struct ReadJournal {
    /// The game, when its first line is a complete game header.
    game: Option<GameRecord>,
    /// The file's length.
    len: u64,
    /// Where the last complete, readable record ends.
    good_end: u64,
    /// The first line is complete and is not a game header.
    damaged_header: bool,
}

/// A journal line: a record, or a record glued to the fragment of an earlier write cut
/// short (written by a version that appended after a torn tail), which is logged.
fn parse_line(line: &[u8], path: &Path, n: usize) -> Option<Record> {
    if let Ok(r) = serde_json::from_slice(line) {
        return Some(r);
    }
    let tag = br#"{"t":""#;
    let at = line.windows(tag.len()).rposition(|w| w == tag).filter(|&at| at > 0)?;
    let r = serde_json::from_slice(&line[at..]).ok()?;
    tracing::warn!(path = %path.display(), line = n, fragment = at, "record glued to a torn write; read");
    Some(r)
}

/// Reads one journal file (see [`load_journal`]).
fn read_journal(path: &Path) -> Result<ReadJournal, StoreError> {
    let f = File::open(path).map_err(io_err(path))?;
    let len = f.metadata().map_err(io_err(path))?.len();
    let mut reader = BufReader::new(f);
    let mut out = ReadJournal { game: None, len, good_end: 0, damaged_header: false };
    let mut line = Vec::new();
    let mut n = 0usize;
    let mut offset = 0u64;
    loop {
        line.clear();
        let read =
            (&mut reader).take(MAX_RECORD as u64 + 1).read_until(b'\n', &mut line).map_err(io_err(path))?;
        if read == 0 {
            break;
        }
        n += 1;
        offset += read as u64;
        if line.len() > MAX_RECORD {
            // Skip the rest of the over-long line.
            let mut sink = Vec::new();
            offset += reader.read_until(b'\n', &mut sink).map_err(io_err(path))? as u64;
            tracing::warn!(path = %path.display(), line = n, "journal line too long; skipped");
            if out.game.is_none() {
                out.damaged_header = sink.last() == Some(&b'\n');
                break;
            }
            continue;
        }
        if line.last() != Some(&b'\n') {
            // The last line, incomplete: a tail to cut.
            tracing::warn!(path = %path.display(), line = n, "journal line incomplete");
            continue;
        }
        let rec = parse_line(&line, path, n);
        let Some(game) = &mut out.game else {
            match rec {
                Some(Record::Game(h)) => {
                    out.game = Some(GameRecord::new(h));
                    out.good_end = offset;
                }
                _ => out.damaged_header = true,
            }
            if out.damaged_header {
                break;
            }
            continue;
        };
        match rec {
            Some(rec) => {
                out.good_end = offset;
                if !game.apply(&rec) {
                    tracing::warn!(path = %path.display(), line = n, "journal record out of sequence; skipped");
                }
            }
            None => tracing::warn!(path = %path.display(), line = n, "journal line unreadable; skipped"),
        }
    }
    Ok(out)
}

/// Cuts `path` back to `keep` bytes, appending what was cut to `torn` first (durably).
fn cut_tail(path: &Path, keep: u64, torn: &Path) -> Result<(), StoreError> {
    let mut f = OpenOptions::new().read(true).write(true).open(path).map_err(io_err(path))?;
    let mut tail = Vec::new();
    f.seek(SeekFrom::Start(keep)).and_then(|_| f.read_to_end(&mut tail)).map_err(io_err(path))?;
    let kept = (|| {
        let mut t = OpenOptions::new().create(true).append(true).open(torn)?;
        t.write_all(&tail)?;
        if !tail.ends_with(b"\n") {
            t.write_all(b"\n")?;
        }
        t.sync_all()
    })();
    kept.map_err(io_err(torn))?;
    f.set_len(keep).and_then(|()| f.sync_all()).map_err(io_err(path))?;
    if let Some(dir) = path.parent() {
        sync_dir(dir);
    }
    Ok(())
}

/// Replays one journal file, without changing it (see [`Store::open`] for what a relay
/// starting on the folder does with it): the game, if its first line is a readable header.
pub fn replay(path: &Path) -> Result<Option<GameRecord>, StoreError> {
    read_journal(path).map(|r| r.game)
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
    use crate::tournament::Pairing;

    fn tmpdir(name: &str) -> PathBuf {
        let d = std::env::temp_dir().join(format!("dgt-relay-store-{name}-{}", std::process::id()));
        let _ = fs::remove_dir_all(&d);
        d
    }

    fn header(round: u32, board: u32) -> GameHeader {
        GameHeader {
            round,
            board,
            serial: Some("777".into()),
            event: "E".into(),
            site: "S".into(),
            time_control: None,
            utc_date: "2025.01.01".into(),
            utc_time: "00:00:00".into(),
            pairing: Pairing::default(),
            start_fen: None,
            flipped: false,
        }
    }

    fn mv(ply: u32) -> Record {
        Record::Move(JournalMove {
            ply,
            san: format!("m{ply}"),
            uci: "e2e4".into(),
            clk: Some(60),
            emt: None,
            fen: None,
        })
    }

    fn append_raw(path: &Path, bytes: &[u8]) {
        let mut f = OpenOptions::new().append(true).open(path).unwrap();
        f.write_all(bytes).unwrap();
    }

    fn sans(g: &GameRecord) -> Vec<&str> {
        g.moves.iter().map(|m| m.san.as_str()).collect()
    }

    #[tokio::test]
    async fn journal_round_trip_with_a_torn_tail() {
        let dir = tmpdir("journal");
        let (store, games) = Store::open(&dir).unwrap();
        assert!(games.is_empty());
        let j = store.create_journal(&header(1, 3)).await.unwrap();
        for ply in 1..=3 {
            j.append(&mv(ply)).await.unwrap();
        }
        j.append(&Record::Takeback { from_ply: 3 }).await.unwrap();
        j.append(&Record::Result { result: Some("1-0".into()), termination: Some("normal".into()) })
            .await
            .unwrap();
        // A write cut short by a crash.
        append_raw(j.path(), br#"{"t":"move","ply":3,"san""#);
        drop(store);
        let (_, games) = Store::open(&dir).unwrap();
        assert_eq!(games.len(), 1);
        let g = &games[0];
        assert_eq!((g.header.round, g.header.board, g.moves.len()), (1, 3, 2));
        assert_eq!(g.result.as_deref(), Some("1-0"));
        let _ = fs::remove_dir_all(&dir);
    }

    /// Issue 15, recipe 3: e4 e5 journaled, the last line torn by a crash, a restart that
    /// appends Nf3, then another restart. The fragment is cut off (and kept beside the
    /// journal) before anything is appended, so Nf3 starts a line of its own and the next
    /// start reads all three plies; before, Nf3 was glued to the fragment and lost, and
    /// every later record was out of sequence.
    #[tokio::test]
    async fn a_torn_tail_is_cut_off_before_the_next_append_and_kept_beside_the_journal() {
        let dir = tmpdir("torn");
        let (store, _) = Store::open(&dir).unwrap();
        let j = store.create_journal(&header(1, 1)).await.unwrap();
        j.append(&mv(1)).await.unwrap();
        j.append(&mv(2)).await.unwrap();
        drop((j, store));
        // The last line cut in half.
        let path = dir.join("round-1/game-1.journal");
        let whole = fs::read(&path).unwrap();
        let last_start = whole[..whole.len() - 1].iter().rposition(|&b| b == b'\n').unwrap() + 1;
        let cut = last_start + (whole.len() - last_start) / 2;
        fs::write(&path, &whole[..cut]).unwrap();

        let (store, games) = Store::open(&dir).unwrap();
        assert_eq!(sans(&games[0]), ["m1"]);
        assert_eq!(fs::read(&path).unwrap(), whole[..last_start], "cut back to the last complete record");
        assert_eq!(fs::read(torn_path(&path)).unwrap(), [&whole[last_start..cut], b"\n"].concat());
        let notice = &store.notices()[0];
        assert_eq!((notice.level, notice.path.as_path()), (AlertLevel::Warning, path.as_path()));
        assert!(
            notice.message.contains("round-1/game-1.journal") && notice.message.contains(".torn"),
            "{notice:?}"
        );
        // The game goes on: ply 2 again, then ply 3.
        let j = store.open_journal(1, 1).unwrap();
        j.append(&mv(2)).await.unwrap();
        j.append(&mv(3)).await.unwrap();
        drop((j, store));
        let (store, games) = Store::open(&dir).unwrap();
        assert_eq!(sans(&games[0]), ["m1", "m2", "m3"]);
        assert!(store.notices().is_empty(), "{:?}", store.notices());
        let _ = fs::remove_dir_all(&dir);
    }

    /// Garbage after the last record (a complete line that is no record, then bytes without
    /// a newline) is cut off the same way; an unreadable line in the middle is skipped and
    /// kept.
    #[tokio::test]
    async fn garbage_at_the_tail_is_cut_off_and_a_bad_line_inside_is_kept() {
        let dir = tmpdir("garbage");
        let (store, _) = Store::open(&dir).unwrap();
        let j = store.create_journal(&header(1, 2)).await.unwrap();
        j.append(&mv(1)).await.unwrap();
        append_raw(j.path(), b"not a record\n");
        j.append(&mv(2)).await.unwrap();
        let good = fs::read(j.path()).unwrap();
        append_raw(j.path(), b"\x00\x00garbage\n{\"t\":\"mo");
        drop((j, store));
        let (store, games) = Store::open(&dir).unwrap();
        assert_eq!(sans(&games[0]), ["m1", "m2"]);
        let path = dir.join("round-1/game-2.journal");
        assert_eq!(fs::read(&path).unwrap(), good);
        assert_eq!(fs::read(torn_path(&path)).unwrap(), b"\x00\x00garbage\n{\"t\":\"mo\n");
        assert_eq!(store.notices().len(), 1);
        let _ = fs::remove_dir_all(&dir);
    }

    /// A journal written by a version that appended after a torn tail: the record glued to
    /// the fragment is read, and the records after it are in sequence.
    #[test]
    fn a_record_glued_to_a_torn_write_by_an_older_version_is_read() {
        let dir = tmpdir("glued");
        fs::create_dir_all(dir.join("round-1")).unwrap();
        let line = |r: &Record| serde_json::to_string(r).unwrap();
        let text = format!(
            "{}\n{}\n{}{}\n{}\n",
            line(&Record::Game(header(1, 4))),
            line(&mv(1)),
            r#"{"t":"move","ply":2,"sa"#,
            line(&mv(2)),
            line(&mv(3)),
        );
        fs::write(dir.join("round-1/game-4.journal"), &text).unwrap();
        let (store, games) = Store::open(&dir).unwrap();
        assert_eq!(sans(&games[0]), ["m1", "m2", "m3"]);
        assert!(store.notices().is_empty());
        assert_eq!(fs::read_to_string(dir.join("round-1/game-4.journal")).unwrap(), text);
        let _ = fs::remove_dir_all(&dir);
    }

    /// Issue 15, recipe 9: a journal whose header is damaged is reported (a relay-wide
    /// storage alert, by the relay) and left exactly as it is; the others load.
    #[test]
    fn a_journal_with_a_damaged_header_is_reported_and_left_untouched() {
        let dir = tmpdir("header");
        fs::create_dir_all(dir.join("round-1")).unwrap();
        let damaged =
            format!("{{\"t\":\"game\",\"round\":1,\"bo\x01\n{}\n", serde_json::to_string(&mv(1)).unwrap());
        let path = dir.join("round-1/game-5.journal");
        fs::write(&path, &damaged).unwrap();
        let fine = format!("{}\n", serde_json::to_string(&Record::Game(header(1, 6))).unwrap());
        fs::write(dir.join("round-1/game-6.journal"), &fine).unwrap();
        // Another game's header under this name: also left alone.
        fs::write(dir.join("round-1/game-7.journal"), &fine).unwrap();
        let (store, games) = Store::open(&dir).unwrap();
        assert_eq!(games.iter().map(|g| g.header.board).collect::<Vec<_>>(), [6]);
        let notices = store.notices();
        assert_eq!(notices.len(), 2, "{notices:?}");
        assert_eq!((notices[0].level, notices[0].path.as_path()), (AlertLevel::Error, path.as_path()));
        assert!(notices[0].message.contains("round-1/game-5.journal"), "{}", notices[0].message);
        assert!(notices[1].message.contains("round-1/game-7.journal"), "{}", notices[1].message);
        assert_eq!(fs::read_to_string(&path).unwrap(), damaged);
        assert_eq!(fs::read_to_string(dir.join("round-1/game-7.journal")).unwrap(), fine);
        assert!(!torn_path(&path).exists());
        let _ = fs::remove_dir_all(&dir);
    }

    /// A journal cut before its header was complete held nothing that was published: it
    /// is moved aside, and an empty one (created, never written) is removed.
    #[test]
    fn a_journal_torn_in_its_header_is_moved_aside() {
        let dir = tmpdir("torn-header");
        fs::create_dir_all(dir.join("round-1")).unwrap();
        let path = dir.join("round-1/game-1.journal");
        fs::write(&path, br#"{"t":"game","round":1,"boa"#).unwrap();
        fs::write(dir.join("round-1/game-2.journal"), b"").unwrap();
        let (store, games) = Store::open(&dir).unwrap();
        assert!(games.is_empty());
        assert!(!path.exists() && !dir.join("round-1/game-2.journal").exists());
        assert_eq!(fs::read(torn_path(&path)).unwrap(), b"{\"t\":\"game\",\"round\":1,\"boa\n");
        assert_eq!(store.notices().len(), 1);
        assert_eq!(store.notices()[0].level, AlertLevel::Warning);
        let _ = fs::remove_dir_all(&dir);
    }

    /// Issue 15, recipe 6: a second relay on the same folder is refused, with the folder
    /// and the first one's PID; once the first is gone the folder opens.
    #[test]
    fn the_data_folder_is_locked_while_a_store_has_it() {
        let dir = tmpdir("lock");
        let (store, _) = Store::open(&dir).unwrap();
        let err = Store::open(&dir).unwrap_err();
        assert!(
            matches!(&err, StoreError::Locked { pid: Some(p), .. } if *p == std::process::id()),
            "{err:?}"
        );
        let text = err.to_string();
        assert!(text.contains(&dir.display().to_string()), "{text}");
        assert!(text.contains(&format!("PID {}", std::process::id())), "{text}");
        drop(store);
        let (_again, _) = Store::open(&dir).unwrap();
        let _ = fs::remove_dir_all(&dir);
    }

    #[tokio::test]
    async fn a_full_disk_is_an_error_and_leaves_no_torn_line() {
        let dir = tmpdir("full");
        let (store, _) = Store::open(&dir).unwrap();
        let j = store.create_journal(&header(1, 1)).await.unwrap();
        j.append(&mv(1)).await.unwrap();
        // Swap the file for /dev/full under the same handle's path: a new handle writes
        // there, as a full disk would refuse it.
        let full = Journal {
            path: j.path().to_owned(),
            file: Arc::new(OpenOptions::new().append(true).open("/dev/full").unwrap()),
            key: (1, 1),
            appends: store.appends(),
        };
        let err = full.append(&mv(2)).await.unwrap_err();
        assert!(err.to_string().contains("No space"), "{err}");
        // The real journal is intact and the retry succeeds.
        j.append(&mv(2)).await.unwrap();
        drop(store);
        let (_, games) = Store::open(&dir).unwrap();
        assert_eq!(games[0].moves.len(), 2);
        let _ = fs::remove_dir_all(&dir);
    }

    /// A journal as written before the header had its own type: every line must still
    /// load, and writing the parsed records back must give the same bytes.
    #[test]
    fn journals_in_the_current_format_load_and_round_trip() {
        let lines = [
            r#"{"t":"game","round":2,"board":5,"serial":"12345","event":"Open","site":"Town","time_control":"5400+30","utc_date":"2025.03.04","utc_time":"10:00:00","pairing":{"white":{"name":"Carlsen, Magnus","fide_id":1503014,"title":"GM"},"black":{"name":""}},"start_fen":"8/8/8/8/8/8/8/K1k5 b - - 0 30","flipped":true}"#,
            r#"{"t":"move","ply":1,"san":"Kb2","uci":"c1b2","clk":5400,"fen":"8/8/8/8/8/8/1k6/K7 w - - 1 31"}"#,
            r#"{"t":"pairing","pairing":{"white":{"name":"A"},"black":{"name":"B","fide_id":7}}}"#,
            r#"{"t":"flip","flipped":false}"#,
            r#"{"t":"clock_side","white":"right"}"#,
            r#"{"t":"result","result":"1/2-1/2","termination":"normal"}"#,
        ];
        // Unknown or absent optional values are written as null.
        let bare = r#"{"t":"game","round":1,"board":1,"serial":null,"event":"","site":"","time_control":null,"utc_date":"","utc_time":"","pairing":{"white":{"name":""},"black":{"name":""}},"start_fen":null,"flipped":false}"#;
        for line in lines.iter().chain([&bare]) {
            let rec: Record = serde_json::from_str(line).unwrap();
            assert_eq!(serde_json::to_string(&rec).unwrap(), *line);
        }
        let dir = tmpdir("format");
        fs::create_dir_all(dir.join("round-2")).unwrap();
        fs::write(dir.join("round-2/game-5.journal"), lines.join("\n") + "\n").unwrap();
        let (_, games) = Store::open(&dir).unwrap();
        assert_eq!(games.len(), 1);
        let g = &games[0];
        let expected = GameHeader {
            round: 2,
            board: 5,
            serial: Some("12345".into()),
            event: "Open".into(),
            site: "Town".into(),
            time_control: Some("5400+30".into()),
            utc_date: "2025.03.04".into(),
            utc_time: "10:00:00".into(),
            // As changed by the later records.
            pairing: serde_json::from_str(r#"{"white":{"name":"A"},"black":{"name":"B","fide_id":7}}"#)
                .unwrap(),
            start_fen: Some("8/8/8/8/8/8/8/K1k5 b - - 0 30".into()),
            flipped: false,
        };
        assert_eq!(g.header, expected);
        assert_eq!((g.moves.len(), g.result.as_deref()), (1, Some("1/2-1/2")));
        assert_eq!(g.white_clock, Some(crate::record::ClockDisplay::Right));
        let _ = fs::remove_dir_all(&dir);
    }

    #[test]
    fn pgn_files_follow_the_livechess_layout() {
        let dir = tmpdir("pgn");
        let (store, _) = Store::open(&dir).unwrap();
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
}
