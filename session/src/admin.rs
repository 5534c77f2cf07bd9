//! What an operator may do to a board's game, checked by the core before anything changes.

use alloc::{format, string::String, string::ToString, vec::Vec};
use dgt_core::{
    FenError, GameResult, MoveInfo, Replay, ResumeError, ResumePly, Ruling, StartKind, View,
    position_from_fen,
};
use dgt_protocol::Orientation;
use shakmaty::uci::UciMove;

use crate::board::{BoardSession, PLIES};
use crate::effect::Effect;

/// Why an operator action was refused. Nothing changed.
#[derive(Debug, thiserror::Error, Clone, PartialEq, Eq)]
pub enum AdminError {
    /// The board has no game yet.
    #[error("no game on this board")]
    NoGame,
    /// A position the operator gave is not usable.
    #[error("{0}")]
    Fen(FenError),
    /// `from_ply` is outside the game.
    #[error("from_ply must be between 1 and {max}")]
    FromPly {
        /// The last ply that may be corrected from.
        max: usize,
    },
    /// The corrected game would not fit.
    #[error("a game holds at most {PLIES} plies")]
    TooLong,
    /// A move is not UCI.
    #[error("{0:?} is not a UCI move")]
    NotUci(String),
    /// A move is not legal where it is played.
    #[error("{uci} is not legal at ply {ply}")]
    Illegal {
        /// The ply (1-based).
        ply: usize,
        /// The move.
        uci: String,
    },
    /// The journaled moves before the correction do not replay.
    #[error("the game's earlier moves do not replay: {0}")]
    Journal(String),
}

impl BoardSession {
    /// The operator turns the board's orientation: tracking restarts from the game's
    /// position with the board the other way round. Returns the new orientation (rotated).
    pub fn flip(&mut self, now: u64) -> Result<bool, AdminError> {
        if self.game.is_none() {
            return Err(AdminError::NoGame);
        }
        self.flipped = !self.flipped;
        self.effects.push_back(Effect::Flipped { flipped: self.flipped });
        self.restart_tracker(now);
        self.flush();
        Ok(self.flipped)
    }

    /// The operator sets (`Some`) or clears (`None`) the result. Clearing lets the game go
    /// on from its last confirmed position.
    pub fn set_result(&mut self, now: u64, result: Option<GameResult>) -> Result<(), AdminError> {
        self.set_ruling(now, result.map(Ruling::played))
    }

    /// The operator rules the game (`Some`: a result, or a forfeit that leaves it unplayed)
    /// or clears its result (`None`).
    pub fn set_ruling(&mut self, now: u64, ruling: Option<Ruling>) -> Result<(), AdminError> {
        let Some(g) = &self.game else { return Err(AdminError::NoGame) };
        if ruling.is_none_or(|r| !r.unplayed) && g.result == ruling.map(|r| r.result) {
            return Ok(());
        }
        self.operator_result(now, ruling);
        self.flush();
        Ok(())
    }

    /// The operator starts a new game from `fen` (the standard start when `None`): its
    /// record opens at once ([`Effect::GameStarted`] with `new_record`), and tracking
    /// follows once the board shows the position.
    pub fn new_game(&mut self, now: u64, fen: Option<&str>) -> Result<(), AdminError> {
        let (pos, mode) = match fen {
            Some(f) => position_from_fen(f).map_err(AdminError::Fen)?,
            None => (shakmaty::Chess::default(), shakmaty::CastlingMode::Standard),
        };
        let start_fen = fen.map(|_| dgt_core::FenText::of(&pos).to_string());
        let orientation = if self.flipped { Orientation::Rotated } else { Orientation::Normal };
        let kind = if start_fen.is_some() { StartKind::Fen } else { StartKind::Standard };
        self.begin_line(start_fen.clone());
        self.effects.push_back(Effect::GameStarted {
            orientation,
            kind,
            start_fen: start_fen.clone(),
            new_record: true,
        });
        self.next_start_fen = start_fen;
        let t = self.t(now);
        self.tracker.reset(self.config.tracker);
        self.resuming = true;
        let mut events = Vec::new();
        self.tracker.start_from_position(pos, mode, None, t, &mut |e| events.push(e));
        // The game record exists already: the tracker's GameStarted (now, or when the board
        // shows the position) must not start another one.
        if events.iter().any(|e| matches!(e, dgt_core::Event::GameStarted { .. })) {
            self.resuming = false;
            events.retain(|e| !matches!(e, dgt_core::Event::GameStarted { .. }));
        }
        self.handle_events(now, events);
        self.request_dump();
        self.flush();
        Ok(())
    }

    /// Checks a correction as [`BoardSession::correct`] would, without changing anything:
    /// the corrected moves from `from_ply` on (with SAN and the position after each), or why
    /// the correction would be refused. The operator's console asks this before sending.
    pub fn check_correction(
        &self,
        _now: u64,
        from_ply: usize,
        moves: &[String],
    ) -> Result<Vec<MoveInfo>, AdminError> {
        self.corrected(from_ply, moves).map(|(checked, _)| checked)
    }

    /// The game's plies with the confirmed moves from `from_ply` on replaced by `moves`,
    /// replayed from the start position (a [`Replay`]: no second tracker): the corrected
    /// moves and the whole line; or why that is refused.
    fn corrected(
        &self,
        from_ply: usize,
        moves: &[String],
    ) -> Result<(Vec<MoveInfo>, Vec<ResumePly>), AdminError> {
        let Some(g) = &self.game else { return Err(AdminError::NoGame) };
        let have = g.plies.len();
        if from_ply == 0 || from_ply > have + 1 {
            return Err(AdminError::FromPly { max: have + 1 });
        }
        if from_ply - 1 + moves.len() > PLIES {
            return Err(AdminError::TooLong);
        }
        // One allocation of the line's exact length: growing a copy of a long game's plies
        // would hold the old and a doubled buffer at once, more than a relay box's heap may
        // have in one piece.
        let mut plies: Vec<ResumePly> = Vec::with_capacity(from_ply - 1 + moves.len());
        plies.extend_from_slice(&g.plies[..from_ply - 1]);
        for text in moves {
            let uci = UciMove::from_ascii(text.as_bytes()).map_err(|_| AdminError::NotUci(text.clone()))?;
            plies.push(ResumePly { uci, clk: None, emt: None });
        }
        let (start, _) = g.start().map_err(|e| AdminError::Journal(e.to_string()))?;
        let mut replay = Replay::new(start);
        let mut checked = Vec::new();
        for (i, p) in plies.iter().enumerate() {
            let ply = i + 1;
            match replay.play(*p) {
                Some(m) if ply >= from_ply => checked.push(m),
                Some(_) => {}
                None if ply >= from_ply => {
                    return Err(AdminError::Illegal { ply, uci: moves[ply - from_ply].clone() });
                }
                None => return Err(AdminError::Journal(format!("ply {ply} is not legal"))),
            }
        }
        Ok((checked, plies))
    }

    /// The operator replaces the confirmed moves from `from_ply` (1-based) on with `moves`
    /// (UCI). The corrected line is checked first (an illegal move refuses the whole
    /// correction); then the tracker is restarted in place on it. The corrected plies have
    /// no clock values.
    pub fn correct(&mut self, now: u64, from_ply: usize, moves: &[String]) -> Result<(), AdminError> {
        let (_, plies) = self.corrected(from_ply, moves)?;
        let Some(g) = &self.game else { return Err(AdminError::NoGame) };
        let (start, mode) = g.start().map_err(|e| AdminError::Journal(e.to_string()))?;
        let orientation = if self.flipped { Orientation::Rotated } else { Orientation::Normal };
        let t = self.t(now);
        self.tracker.reset(self.config.tracker);
        let mut events = Vec::new();
        let resumed =
            self.tracker.resume(start, mode, orientation, plies.iter().copied(), t, &mut |e| events.push(e));
        if let Err(e) = resumed {
            // The replay took the line, the tracker did not: it goes on with the old line.
            self.restart_tracker(now);
            self.flush();
            return Err(match e {
                ResumeError::IllegalMove { ply } => AdminError::Journal(format!("ply {ply} is not legal")),
                ResumeError::TooManyPlies => AdminError::TooLong,
            });
        }
        // Accepted: the corrected line replaces the old one from `from_ply` on.
        self.resuming = false;
        let to_ply = from_ply - 1;
        let mut fen = None;
        self.tracker.for_each_move(View::Confirmed, |m| {
            if usize::from(m.ply) == to_ply {
                fen = Some(m.fen);
            }
        });
        let fen = fen.unwrap_or_else(|| dgt_core::FenText::of(self.tracker.start_position()));
        self.effects.push_back(Effect::TakenBack { to_ply: to_ply as u16, fen });
        for info in self.confirmed_from(from_ply) {
            self.effects.push_back(Effect::Move { state: crate::effect::MoveState::Confirmed, info });
        }
        let over = self.game.as_mut().and_then(|g| {
            g.plies = plies;
            g.result
        });
        self.end_if_over(over, &mut events);
        self.handle_events(now, events);
        self.request_dump();
        self.flush();
        Ok(())
    }
}
