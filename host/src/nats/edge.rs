//! The edge: a relay with no boards that serves spectators from the JetStream stream.
//!
//! [`run`] reads the stream from its first message with an ordered consumer (a restarted
//! edge catches up from the start; after a failure it resumes after the last sequence it
//! applied) and hands each message to [`EdgeState`], which rebuilds the games and turns
//! every new line into the same feed deltas and PGN texts a venue relay produces.
//!
//! # Several venue relays, one tournament
//! Games are keyed by round and board number, whichever venue relay sent them. The first
//! source seen for a (round, board) owns it; lines from another source for the same game
//! are not applied and raise a `board_conflict` alert, since silently mixing two games
//! would corrupt both.

use std::collections::{BTreeMap, BTreeSet};
use std::sync::Arc;
use std::time::Duration;

use async_nats::jetstream;
use futures_util::StreamExt;

use super::{GAME_HEADER, INDEX_HEADER, NatsSettings, SOURCE_HEADER};
use crate::feed::Hub;
use crate::feed::{AlertCode, AlertLevel, AlertView, BoardStatus, BoardView, Delta, MoveState, MoveView};
use crate::record::{GameRecord, Record};
use crate::shutdown::Listener;
use crate::store::Store;
use crate::tournament::SharedTournament;

/// Where an edge puts what it reads from the stream: the feed, the PGN texts and the
/// tournament, as a venue relay's boards do.
#[derive(Clone, Debug)]
pub struct Outputs {
    /// The feed.
    pub hub: Arc<Hub>,
    /// The PGN texts (HTTP, the data folder, the push).
    pub store: Arc<Store>,
    /// The event and its rounds, as the venue relays' games name them.
    pub tournament: SharedTournament,
}

/// One message of the stream, as the edge needs it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Line {
    /// Round, from the subject.
    pub round: u32,
    /// Board, from the subject.
    pub board: u32,
    /// The venue relay that published it.
    pub source: String,
    /// The game's stamp.
    pub stamp: String,
    /// The line's index in its journal.
    pub index: u64,
    /// The record.
    pub record: Record,
}

impl Line {
    /// Reads a stream message; `None` for one that is not a journal line of ours.
    pub fn parse(subject: &str, headers: Option<&async_nats::HeaderMap>, payload: &[u8]) -> Option<Line> {
        let (round, board) = super::parse_subject(subject)?;
        let headers = headers?;
        let get = |name: &str| headers.get(name).map(|v| v.as_str().to_owned());
        Some(Line {
            round,
            board,
            source: get(SOURCE_HEADER)?,
            stamp: get(GAME_HEADER)?,
            index: get(INDEX_HEADER)?.parse().ok()?,
            record: serde_json::from_slice(payload).ok()?,
        })
    }
}

struct EdgeGame {
    source: String,
    stamp: String,
    /// The index of the next line expected.
    next: u64,
    rec: GameRecord,
}

impl EdgeGame {
    fn fen(&self) -> String {
        self.rec.fen()
    }

    fn view(&self) -> BoardView {
        let h = &self.rec.header;
        let mut v = BoardView::new(h.board, h.round);
        v.serial.clone_from(&h.serial);
        v.status = BoardStatus::Active;
        v.pairing = h.pairing.clone();
        v.start_fen.clone_from(&h.start_fen);
        v.fen = Some(self.fen());
        v.live_fen = v.fen.clone();
        v.moves = self.rec.moves.iter().map(MoveView::from).collect();
        v.result.clone_from(&self.rec.result);
        v.termination.clone_from(&self.rec.termination);
        v.flipped = h.flipped;
        v
    }
}

/// What applying one line changed.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Applied {
    /// Already applied (a line seen before): nothing to do.
    Duplicate,
    /// Not applied: the line belongs to a game this edge does not follow (no header seen,
    /// or an older game of the board).
    Ignored,
    /// Another source owns the game; `first` tells whether this conflict is new.
    Conflict {
        /// The source that owns the game.
        owner: String,
        /// True the first time this source conflicts on this game.
        first: bool,
    },
    /// Applied: the game's PGN changed; `deltas` go to the feed.
    Changed {
        /// The game's new PGN.
        pgn: String,
        /// Feed deltas (empty when the game is not the one the board shows).
        deltas: Vec<Delta>,
    },
}

/// The games as the stream tells them, keyed by (round, board).
#[derive(Default)]
pub struct EdgeState {
    games: BTreeMap<(u32, u32), EdgeGame>,
    /// The round each board shows: its latest.
    shown: BTreeMap<u32, u32>,
    /// Conflicts already reported, as (round, board, source).
    conflicts: BTreeSet<(u32, u32, String)>,
}

impl std::fmt::Debug for EdgeState {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("EdgeState").field("games", &self.games.len()).finish_non_exhaustive()
    }
}

impl EdgeState {
    /// The game header of (round, board), if known.
    pub fn header(&self, round: u32, board: u32) -> Option<&crate::record::GameHeader> {
        self.games.get(&(round, board)).map(|g| &g.rec.header)
    }

    /// The venue relay whose game board `board` shows.
    pub fn owner(&self, board: u32) -> Option<&str> {
        let round = self.shown.get(&board)?;
        self.games.get(&(*round, board)).map(|g| g.source.as_str())
    }

    /// The latest round of any game.
    pub fn latest_round(&self) -> Option<u32> {
        self.shown.values().max().copied()
    }

    /// Applies one line.
    pub fn apply(&mut self, line: Line) -> Applied {
        let key = (line.round, line.board);
        let is_header = matches!(line.record, Record::Game(_));
        match self.games.get(&key) {
            Some(g) if g.source != line.source => {
                let first = self.conflicts.insert((line.round, line.board, line.source.clone()));
                return Applied::Conflict { owner: g.source.clone(), first };
            }
            Some(g) if g.stamp == line.stamp && line.index < g.next => return Applied::Duplicate,
            Some(g) if g.stamp != line.stamp && !is_header => return Applied::Ignored,
            None if !is_header => return Applied::Ignored,
            _ => {}
        }
        let shows = self.shown.get(&line.board).is_none_or(|&r| r <= line.round);
        let delta = match line.record {
            Record::Game(header) => {
                if header.round != line.round || header.board != line.board {
                    return Applied::Ignored;
                }
                let g = EdgeGame {
                    source: line.source,
                    stamp: line.stamp,
                    next: line.index + 1,
                    rec: GameRecord::new(header),
                };
                let delta = Delta::Board { view: Box::new(g.view()) };
                self.games.insert(key, g);
                delta
            }
            rec => {
                let Some(g) = self.games.get_mut(&key) else { return Applied::Ignored };
                g.next = line.index + 1;
                if !g.rec.apply(&rec) {
                    tracing::warn!(
                        round = line.round,
                        board = line.board,
                        ?rec,
                        "line does not fit the game"
                    );
                    return Applied::Ignored;
                }
                let board = line.board;
                match rec {
                    Record::Move(m) => Delta::Move {
                        board,
                        state: MoveState::Confirmed,
                        mv: MoveView::from(&m),
                        fen: Some(g.fen()),
                    },
                    Record::Takeback { from_ply } => {
                        Delta::Retract { board, state: MoveState::Confirmed, from_ply, fen: Some(g.fen()) }
                    }
                    Record::Result { result, termination } => Delta::Result { board, result, termination },
                    Record::Pairing { .. }
                    | Record::Flip { .. }
                    | Record::Game(_)
                    | Record::ClockSide { .. } => Delta::Board { view: Box::new(g.view()) },
                }
            }
        };
        let Some(g) = self.games.get(&key) else { return Applied::Ignored };
        let pgn = crate::pgn::write_game(&g.rec, None);
        let mut deltas = Vec::new();
        if shows {
            let newly_shown = self.shown.insert(line.board, line.round) != Some(line.round);
            // A board that moves on to a new round is shown whole.
            deltas.push(if newly_shown { Delta::Board { view: Box::new(g.view()) } } else { delta });
        }
        Applied::Changed { pgn, deltas }
    }
}

/// Applies one line to the edge's outputs: PGN first (HTTP is never behind the feed), then
/// the feed.
fn apply_to(out: &Outputs, state: &mut EdgeState, line: Line) {
    let (round, board, source) = (line.round, line.board, line.source.clone());
    match state.apply(line) {
        Applied::Duplicate | Applied::Ignored => {}
        Applied::Conflict { owner, first } => {
            if first {
                let message = format!(
                    "Board {board} of round {round} is claimed by two venue relays ({owner} and {source}); only \
                     {owner}'s game is shown. Give each venue relay its own board numbers."
                );
                tracing::error!("{message}");
                let alert = AlertView {
                    code: AlertCode::BoardConflict,
                    level: AlertLevel::Error,
                    message,
                    squares: Vec::new(),
                };
                out.hub.publish(Delta::Alert { board: Some(board), alert });
            }
        }
        Applied::Changed { pgn, deltas } => {
            if let Some(h) = state.header(round, board) {
                let mut t = out.tournament.lock();
                if t.live_round() < round || t.event.name != h.event {
                    t.event.name.clone_from(&h.event);
                    t.event.site.clone_from(&h.site);
                    t.event.time_control.clone_from(&h.time_control);
                    let live = t.live_round().max(round);
                    t.start_round(live);
                }
                t.round_mut(round).pairings.insert(board, h.pairing.clone());
            }
            if let Some(r) = state.latest_round() {
                out.hub.set_round(r);
            }
            out.store.set_pgn(round, board, pgn);
            for d in deltas {
                out.hub.publish(d);
            }
        }
    }
}

/// Applies a venue's forwarded clock, status or alert delta to a board that venue owns
/// (relay-wide alerts always).
fn apply_live(out: &Outputs, state: &EdgeState, source: &str, delta: Delta) {
    if let Some(board) = delta.board()
        && state.owner(board) != Some(source)
    {
        return;
    }
    match delta {
        Delta::Clock { board, clock } => {
            out.hub.clock_reading(board, clock);
        }
        d @ (Delta::Status { .. } | Delta::Alert { .. }) => {
            out.hub.publish(d);
        }
        _ => {}
    }
}

/// Options of `dgt-relay edge`.
#[derive(Clone, Debug)]
pub struct EdgeOptions {
    /// The server and stream.
    pub nats: NatsSettings,
    /// Only this event (its subject token), else every event in the stream.
    pub event: Option<String>,
}

/// Follows the stream into `out` until `stop`.
pub async fn run(opts: EdgeOptions, out: Outputs, mut stop: Listener) {
    let (client, mut connected) = match super::connect(&opts.nats, "dgt-relay edge").await {
        Ok(c) => c,
        Err(e) => {
            tracing::error!(error = %e, "edge: no NATS connection");
            return;
        }
    };
    let js = jetstream::new(client);
    let filter = match &opts.event {
        Some(e) => format!("{}.{}.>", super::SUBJECT_ROOT, super::event_token(e)),
        None => format!("{}.>", super::SUBJECT_ROOT),
    };
    let mut state = EdgeState::default();
    let mut last_seq = 0u64;
    let mut failing = false;
    loop {
        connected.mark_unchanged();
        let reading = follow(&js, &opts.nats.stream, &filter, &out, &mut state, &mut last_seq);
        let result = tokio::select! {
            r = reading => r,
            _ = stop.wait() => return,
            // A new connection (the server restarted): the consumer may be gone with it,
            // so it is created again after the last line applied.
            _ = async {
                if connected.changed().await.is_err() {
                    // The client is gone: only a stream failure or stop ends this round.
                    std::future::pending::<()>().await;
                }
            } => {
                tracing::info!(last_seq, "edge: reconnected; resuming the stream");
                failing = false;
                continue;
            }
        };
        if let Err(e) = result {
            if !failing {
                tracing::warn!(error = %e, last_seq, "edge: stream unavailable; retrying");
            }
            failing = true;
        }
        tokio::select! {
            _ = tokio::time::sleep(Duration::from_secs(1)) => {}
            _ = stop.wait() => return,
        }
    }
}

/// Reads the stream from `last_seq + 1` until a failure.
async fn follow(
    js: &jetstream::Context,
    stream: &str,
    filter: &str,
    out: &Outputs,
    state: &mut EdgeState,
    last_seq: &mut u64,
) -> Result<(), super::NatsError> {
    let err = |e: &dyn std::fmt::Display| super::NatsError::JetStream(e.to_string());
    let stream = super::ensure_stream(js, stream).await?;
    let deliver_policy = match *last_seq {
        0 => jetstream::consumer::DeliverPolicy::All,
        n => jetstream::consumer::DeliverPolicy::ByStartSequence { start_sequence: n + 1 },
    };
    let consumer = stream
        .create_consumer(jetstream::consumer::pull::OrderedConfig {
            filter_subject: filter.to_owned(),
            deliver_policy,
            ..Default::default()
        })
        .await
        .map_err(|e| err(&e))?;
    let mut messages = consumer.messages().await.map_err(|e| err(&e))?;
    tracing::info!(from = *last_seq + 1, %filter, "edge: following the stream");
    loop {
        let msg = match messages.next().await {
            Some(Ok(m)) => m,
            Some(Err(e)) => return Err(err(&e)),
            None => return Err(err(&"the stream's consumer ended")),
        };
        let seq = msg.info().map(|i| i.stream_sequence).map_err(|e| err(&e))?;
        if seq <= *last_seq {
            continue;
        }
        *last_seq = seq;
        if let Some((source, delta)) = super::live::parse(msg.headers.as_ref(), &msg.payload) {
            apply_live(out, state, &source, delta);
            continue;
        }
        match Line::parse(msg.subject.as_str(), msg.headers.as_ref(), &msg.payload) {
            Some(line) => apply_to(out, state, line),
            None => {
                tracing::debug!(subject = %msg.subject, seq, "edge: message skipped (not a journal line)")
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::record::{GameHeader, JournalMove};
    use crate::tournament::Pairing;

    fn header(round: u32, board: u32) -> Record {
        Record::Game(GameHeader {
            round,
            board,
            serial: None,
            event: "E".into(),
            site: "S".into(),
            time_control: None,
            utc_date: "2025.01.01".into(),
            utc_time: "10:00:00".into(),
            pairing: Pairing::default(),
            start_fen: None,
            flipped: false,
        })
    }

    fn mv(ply: u32) -> Record {
        Record::Move(JournalMove {
            ply,
            san: format!("m{ply}"),
            uci: "e2e4".into(),
            clk: None,
            emt: None,
            fen: None,
        })
    }

    fn line(source: &str, round: u32, board: u32, index: u64, record: Record) -> Line {
        Line { round, board, source: source.into(), stamp: "20250101100000".into(), index, record }
    }

    #[test]
    fn lines_apply_once_and_in_order() {
        let mut s = EdgeState::default();
        assert!(matches!(s.apply(line("a", 1, 1, 0, header(1, 1))), Applied::Changed { .. }));
        assert!(matches!(s.apply(line("a", 1, 1, 1, mv(1))), Applied::Changed { .. }));
        assert_eq!(s.apply(line("a", 1, 1, 1, mv(1))), Applied::Duplicate);
        assert_eq!(s.apply(line("a", 1, 1, 0, header(1, 1))), Applied::Duplicate);
        let Applied::Changed { deltas, .. } = s.apply(line("a", 1, 1, 2, mv(2))) else { panic!() };
        assert!(matches!(&deltas[..], [Delta::Move { mv, .. }] if mv.ply == 2));
        // A line before any header of its game is not applied.
        assert_eq!(s.apply(line("a", 1, 2, 1, mv(1))), Applied::Ignored);
    }

    #[test]
    fn a_second_source_on_the_same_board_is_a_conflict_once() {
        let mut s = EdgeState::default();
        s.apply(line("a", 1, 3, 0, header(1, 3)));
        assert_eq!(
            s.apply(line("b", 1, 3, 0, header(1, 3))),
            Applied::Conflict { owner: "a".into(), first: true }
        );
        assert_eq!(s.apply(line("b", 1, 3, 1, mv(1))), Applied::Conflict { owner: "a".into(), first: false });
        // Other boards of the other source are fine: one tournament.
        assert!(matches!(s.apply(line("b", 1, 4, 0, header(1, 4))), Applied::Changed { .. }));
    }

    #[test]
    fn a_board_shows_its_latest_round() {
        let mut s = EdgeState::default();
        s.apply(line("a", 2, 1, 0, header(2, 1)));
        let Applied::Changed { deltas, .. } = s.apply(line("a", 1, 1, 0, header(1, 1))) else { panic!() };
        assert!(deltas.is_empty(), "an older round's game changes its PGN only");
        assert_eq!(s.latest_round(), Some(2));
    }
}
