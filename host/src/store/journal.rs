//! The journals: one append-only file of records per game, fsynced per append, and how a
//! journal is read back and repaired at start (see the module docs of [`super`]).

use std::collections::BTreeMap;
use std::fs::{self, File, OpenOptions};
use std::io::{BufRead, BufReader, Read, Seek, SeekFrom, Write};
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

use dgt_session::AlertLevel;
use tokio::sync::Notify;

use super::{StoreError, io_err, sync_dir};
use crate::record::{GameRecord, Record};

/// The longest journal line read back (bytes); longer lines are skipped.
pub const MAX_RECORD: usize = 64 * 1024;

/// Which journals grew since a reader last looked: the NATS publisher's wake-up. Marked
/// after the fsync only, so a reader never sees a record before it is durable.
#[derive(Debug, Default)]
pub struct Appends {
    /// (round, board) -> the journal was created anew (truncated) since the last look.
    dirty: Mutex<BTreeMap<(u32, u32), bool>>,
    notify: Notify,
}

impl Appends {
    pub(super) fn mark(&self, key: (u32, u32), created: bool) {
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
    pub(super) path: PathBuf,
    pub(super) file: Arc<File>,
    pub(super) key: (u32, u32),
    pub(super) appends: Arc<Appends>,
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
        if before > 0 && matches!(read_at(file, &mut last, before - 1), Ok(1)) && last[0] != b'\n' {
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

/// Reads at an offset without moving the file's cursor on Unix; on Windows the cursor moves,
/// which an append-only handle ignores (every write goes to the end).
fn read_at(file: &File, buf: &mut [u8], offset: u64) -> std::io::Result<usize> {
    #[cfg(unix)]
    return std::os::unix::fs::FileExt::read_at(file, buf, offset);
    #[cfg(windows)]
    return std::os::windows::fs::FileExt::seek_read(file, buf, offset);
}

pub(super) fn reopen_append(file: File, path: &Path) -> Result<File, StoreError> {
    drop(file);
    OpenOptions::new().read(true).append(true).open(path).map_err(io_err(path))
}

/// `round-N/game-M.journal`, as the operator knows it.
pub(super) fn shown_path(root: &Path, path: &Path) -> String {
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
pub(super) fn load_journal(
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

/// Replays one journal file, without changing it (see [`super::Store::open`] for what a relay
/// starting on the folder does with it): the game, if its first line is a readable header.
pub fn replay(path: &Path) -> Result<Option<GameRecord>, StoreError> {
    read_journal(path).map(|r| r.game)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::record::{GameHeader, JournalMove};
    use crate::store::Store;
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
        let (store, games) = Store::open(&dir, crate::clock::Clock::system()).unwrap();
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
        let (_, games) = Store::open(&dir, crate::clock::Clock::system()).unwrap();
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
        let (store, _) = Store::open(&dir, crate::clock::Clock::system()).unwrap();
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

        let (store, games) = Store::open(&dir, crate::clock::Clock::system()).unwrap();
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
        let (store, games) = Store::open(&dir, crate::clock::Clock::system()).unwrap();
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
        let (store, _) = Store::open(&dir, crate::clock::Clock::system()).unwrap();
        let j = store.create_journal(&header(1, 2)).await.unwrap();
        j.append(&mv(1)).await.unwrap();
        append_raw(j.path(), b"not a record\n");
        j.append(&mv(2)).await.unwrap();
        let good = fs::read(j.path()).unwrap();
        append_raw(j.path(), b"\x00\x00garbage\n{\"t\":\"mo");
        drop((j, store));
        let (store, games) = Store::open(&dir, crate::clock::Clock::system()).unwrap();
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
        let (store, games) = Store::open(&dir, crate::clock::Clock::system()).unwrap();
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
        let (store, games) = Store::open(&dir, crate::clock::Clock::system()).unwrap();
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
        let (store, games) = Store::open(&dir, crate::clock::Clock::system()).unwrap();
        assert!(games.is_empty());
        assert!(!path.exists() && !dir.join("round-1/game-2.journal").exists());
        assert_eq!(fs::read(torn_path(&path)).unwrap(), b"{\"t\":\"game\",\"round\":1,\"boa\n");
        assert_eq!(store.notices().len(), 1);
        assert_eq!(store.notices()[0].level, AlertLevel::Warning);
        let _ = fs::remove_dir_all(&dir);
    }

    /// Issue 15, recipe 6: a second relay on the same folder is refused, with the folder
    /// and the first one's PID; once the first is gone the folder opens.

    #[tokio::test]
    async fn a_full_disk_is_an_error_and_leaves_no_torn_line() {
        let dir = tmpdir("full");
        let (store, _) = Store::open(&dir, crate::clock::Clock::system()).unwrap();
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
        let (_, games) = Store::open(&dir, crate::clock::Clock::system()).unwrap();
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
        let (_, games) = Store::open(&dir, crate::clock::Clock::system()).unwrap();
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
}
