//! The venue relay's side: every journal line, once durable, to the JetStream stream.
//!
//! One task follows all journals. It is woken by [`crate::store::Appends`] (marked after
//! each fsync) and, for each journal that grew, publishes the lines past its cursor in
//! order, each after the previous one was acknowledged. The cursor (the game's stamp and
//! the index of the next line) is kept beside the journal in `game-M.nats`, written without
//! fsync: it is only a hint, since a line published again has the same message id and the
//! stream drops it. When the server is unreachable the task retries every second; the
//! journal holds everything meanwhile, so on reconnect exactly what the stream lacks is
//! sent.

use crate::store::StoreError;
use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use async_nats::jetstream;

use super::{GAME_HEADER, INDEX_HEADER, NatsError, NatsSettings, SOURCE_HEADER};
use crate::feed::{AlertCode, AlertLevel, AlertView, Delta, Hub};
use crate::record::Record;
use crate::shutdown::Listener;
use crate::store::Store;

/// A publish that is not acknowledged within this is retried.
const ACK_TIMEOUT: Duration = Duration::from_secs(5);
/// Pause between attempts while the server is unreachable.
const RETRY: Duration = Duration::from_secs(1);
/// At shutdown, how long the last lines may take to go out (the journal keeps them).
const FINAL_SYNC: Duration = Duration::from_secs(3);

/// Where one journal's publishing stands.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
struct Cursor {
    /// The game's stamp (see [`super::game_stamp`]); empty before its header was read.
    stamp: String,
    /// The index of the next line to publish.
    next: u64,
}

fn cursor_path(journal: &Path) -> PathBuf {
    journal.with_extension("nats")
}

fn load_cursor(journal: &Path) -> Cursor {
    let Ok(text) = std::fs::read_to_string(cursor_path(journal)) else { return Cursor::default() };
    let mut it = text.split_whitespace();
    match (it.next(), it.next().and_then(|n| n.parse().ok())) {
        (Some(stamp), Some(next)) => Cursor { stamp: stamp.to_owned(), next },
        _ => Cursor::default(),
    }
}

fn save_cursor(journal: &Path, c: &Cursor) {
    // Best effort, no fsync: a lost cursor only means lines published again, and dropped
    // by the stream as duplicates.
    if let Err(e) = std::fs::write(cursor_path(journal), format!("{} {}\n", c.stamp, c.next)) {
        tracing::debug!(error = %e, "cannot save the NATS cursor");
    }
}

/// The relay's source id: from the configuration, else kept in `DATA/nats-source`
/// (created with a random id on first use).
pub fn source_id(settings: &NatsSettings, data: &Path) -> Result<String, StoreError> {
    if let Some(s) = &settings.source {
        return Ok(s.clone());
    }
    let path = data.join("nats-source");
    if let Ok(text) = std::fs::read_to_string(&path) {
        let id = text.trim();
        if !id.is_empty()
            && id.len() <= 64
            && id.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'_')
        {
            return Ok(id.to_owned());
        }
    }
    let mut bytes = [0u8; 6];
    getrandom::fill(&mut bytes)
        .map_err(|e| StoreError::Io { path: path.clone(), source: std::io::Error::other(e.to_string()) })?;
    let id: String = bytes.iter().map(|b| format!("{b:02x}")).collect();
    crate::store::write_atomic(&path, &format!("{id}\n"))?;
    Ok(id)
}

/// The publisher task's state.
pub struct Publisher {
    store: Arc<Store>,
    hub: Arc<Hub>,
    settings: NatsSettings,
    source: String,
    /// The event name, for the subjects of forwarded live deltas.
    event: String,
    cursors: BTreeMap<(u32, u32), Cursor>,
    /// The last failure was reported to the operator.
    failing: bool,
}

impl std::fmt::Debug for Publisher {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Publisher").field("source", &self.source).finish_non_exhaustive()
    }
}

impl Publisher {
    /// A publisher for the journals of `store`, publishing as `source`; the hub's clock,
    /// status and alert deltas are forwarded too ([`super::live`]), under `event`.
    pub fn new(
        settings: NatsSettings,
        source: String,
        event: String,
        store: Arc<Store>,
        hub: Arc<Hub>,
    ) -> Publisher {
        Publisher { store, hub, settings, source, event, cursors: BTreeMap::new(), failing: false }
    }

    /// Publishes until `stop`, then once more for at most a few seconds.
    pub async fn run(mut self, mut stop: Listener) {
        let appends = self.store.appends();
        // Every journal on disk first: some may have grown while the relay was down, or
        // while it ran without NATS.
        let mut dirty: BTreeSet<(u32, u32)> = self.store.journals().into_iter().collect();
        let client = match super::connect(&self.settings, &format!("dgt-relay {}", self.source)).await {
            Ok((c, _)) => c,
            Err(e) => {
                self.report(Err(&e));
                return;
            }
        };
        let live = super::live::forward(
            client.clone(),
            Arc::clone(&self.hub),
            self.source.clone(),
            self.event.clone(),
            stop.clone(),
        );
        let forwarder = tokio::spawn(tracing::Instrument::instrument(live, tracing::info_span!("live")));
        let js = jetstream::new(client);
        let mut stream_ready = false;
        loop {
            for (key, created) in appends.take() {
                if created {
                    self.cursors.insert(key, Cursor::default());
                }
                dirty.insert(key);
            }
            // A sync in flight (a server that does not answer holds each message for
            // [`ACK_TIMEOUT`]) is dropped when the relay stops: the last sync below goes on
            // from the cursors, with the stop's time limit.
            let synced = tokio::select! {
                result = self.sync_all(&js, &mut stream_ready, &mut dirty) => Some(result),
                _ = stop.wait() => None,
            };
            let stopping = match synced {
                Some(result) => {
                    self.report(result.as_ref().map(|_| ()));
                    tokio::select! {
                        _ = appends.changed() => false,
                        _ = tokio::time::sleep(RETRY), if !dirty.is_empty() => false,
                        _ = stop.wait() => true,
                    }
                }
                None => true,
            };
            if stopping {
                for (key, _) in appends.take() {
                    dirty.insert(key);
                }
                let last = self.sync_all(&js, &mut stream_ready, &mut dirty);
                match tokio::time::timeout(FINAL_SYNC, last).await {
                    Ok(Ok(())) => tracing::info!("NATS: every journal line published"),
                    _ => tracing::warn!(
                        journals = dirty.len(),
                        "NATS: lines left unpublished at shutdown; they go out on the next start"
                    ),
                }
                let _ = forwarder.await;
                return;
            }
        }
    }

    async fn sync_all(
        &mut self,
        js: &jetstream::Context,
        stream_ready: &mut bool,
        dirty: &mut BTreeSet<(u32, u32)>,
    ) -> Result<(), NatsError> {
        if dirty.is_empty() {
            return Ok(());
        }
        if !*stream_ready {
            super::ensure_stream(js, &self.settings.stream).await?;
            *stream_ready = true;
        }
        while let Some(&key) = dirty.first() {
            self.sync(js, key).await?;
            dirty.remove(&key);
        }
        Ok(())
    }

    /// Publishes the lines of one journal past its cursor.
    async fn sync(&mut self, js: &jetstream::Context, (round, board): (u32, u32)) -> Result<(), NatsError> {
        let path = self.store.journal_path(round, board);
        let cursor = self.cursors.entry((round, board)).or_insert_with(|| load_cursor(&path)).clone();
        let p = path.clone();
        let bytes = tokio::task::spawn_blocking(move || std::fs::read(&p))
            .await
            .map_err(|e| NatsError::JetStream(format!("journal read task: {e}")))?;
        let bytes = match bytes {
            Ok(b) => b,
            // Not created yet, or gone: nothing to publish.
            Err(_) => return Ok(()),
        };
        let mut lines = bytes.split_inclusive(|&b| b == b'\n').filter(|l| l.ends_with(b"\n"));
        let Some(first) = lines.next() else { return Ok(()) };
        let Ok(Record::Game(header)) = serde_json::from_slice::<Record>(first) else {
            tracing::warn!(path = %path.display(), "journal does not start with a game record; not published");
            return Ok(());
        };
        // The stamp tells a game from the one it replaced (an empty game started again).
        // Two games of one board and round started within the same second share it, so the
        // second one's lines would be taken for the first's and dropped as duplicates; the
        // relay only replaces a game that has no move yet, so nothing played is lost.
        let stamp = super::game_stamp(&header);
        let mut next = if cursor.stamp == stamp { cursor.next } else { 0 };
        let start = next;
        let mut result = Ok(());
        for (index, line) in std::iter::once(first).chain(lines).enumerate() {
            let index = index as u64;
            if index < next {
                continue;
            }
            let Ok(rec) = serde_json::from_slice::<Record>(line) else {
                // A line cut by a power loss: replay skips it, so do the edges.
                next = index + 1;
                continue;
            };
            let subject = super::subject(&header.event, round, board, &rec);
            let id = super::message_id(&self.source, round, board, &stamp, index);
            let payload = line.strip_suffix(b"\n").unwrap_or(line).to_vec();
            let msg = jetstream::message::PublishMessage::build()
                .payload(payload.into())
                .message_id(id)
                .header(SOURCE_HEADER, self.source.as_str())
                .header(GAME_HEADER, stamp.as_str())
                .header(INDEX_HEADER, index.to_string().as_str());
            let sent = async {
                let ack =
                    js.send_publish(subject, msg).await.map_err(|e| NatsError::JetStream(e.to_string()))?;
                ack.await.map_err(|e| NatsError::JetStream(e.to_string()))
            };
            match tokio::time::timeout(ACK_TIMEOUT, sent).await {
                Ok(Ok(_)) => next = index + 1,
                Ok(Err(e)) => {
                    result = Err(e);
                    break;
                }
                Err(_) => {
                    result = Err(NatsError::JetStream("publish not acknowledged in time".into()));
                    break;
                }
            }
        }
        let now = Cursor { stamp, next };
        if now != cursor {
            if next > start {
                tracing::debug!(round, board, lines = next - start, "published to NATS");
            }
            save_cursor(&path, &now);
            self.cursors.insert((round, board), now);
        }
        result
    }

    /// Tells the operator when publishing starts failing and when it works again.
    fn report(&mut self, result: Result<(), &NatsError>) {
        let (level, message) = match result {
            Ok(()) if self.failing => {
                self.failing = false;
                (
                    AlertLevel::Info,
                    "Publishing to NATS works again; the stream has every journal line.".to_owned(),
                )
            }
            Err(e) if !self.failing => {
                self.failing = true;
                (
                    AlertLevel::Warning,
                    format!(
                        "Cannot publish to NATS ({e}). The journal keeps every record; they are published when \
                         the server is back."
                    ),
                )
            }
            _ => return,
        };
        match level {
            AlertLevel::Info => tracing::info!("{message}"),
            _ => tracing::warn!("{message}"),
        }
        let alert = AlertView { code: AlertCode::Nats, level, message, squares: Vec::new() };
        self.hub.publish(Delta::Alert { board: None, alert });
    }
}
