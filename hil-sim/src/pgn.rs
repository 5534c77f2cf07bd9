//! Reading source games with pgn-reader: moves (checked with shakmaty), `%clk`/`%emt`
//! comments, tags, result; and the time control a replay should use.

use std::collections::BTreeMap;
use std::ops::ControlFlow;
use std::path::Path;

use pgn_reader::{Outcome, RawComment, RawTag, Reader, SanPlus, Skip, Visitor};
use shakmaty::fen::Fen;
use shakmaty::san::San;
use shakmaty::uci::UciMove;
use shakmaty::{CastlingMode, Chess, Color, Move, Position};

use crate::SimError;
use crate::clock::TimeControl;

/// One move of a source game.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SourceMove {
    /// The move.
    pub mv: Move,
    /// SAN with check marks, as shakmaty writes it.
    pub san: String,
    /// UCI.
    pub uci: String,
    /// `%clk` in whole seconds.
    pub clk_s: Option<u32>,
    /// `%emt` in whole seconds.
    pub emt_s: Option<u32>,
}

/// A game read from PGN.
#[derive(Clone, Debug)]
pub struct SourceGame {
    /// Position in the file (0-based).
    pub index: usize,
    /// Tags.
    pub tags: BTreeMap<String, String>,
    /// The start position.
    pub start: Chess,
    /// The legal moves, in order.
    pub moves: Vec<SourceMove>,
    /// `1-0`, `0-1`, `1/2-1/2` or `*`.
    pub result: String,
    /// Why the movetext was cut short (an illegal or unreadable move), if it was.
    pub truncated: Option<String>,
}

impl SourceGame {
    /// The position after all moves.
    pub fn final_position(&self) -> Chess {
        let mut pos = self.start.clone();
        for m in &self.moves {
            pos.play_unchecked(m.mv);
        }
        pos
    }

    /// A tag's value.
    pub fn tag(&self, name: &str) -> Option<&str> {
        self.tags.get(name).map(String::as_str)
    }

    /// The time control for a replay: the `TimeControl` tag when it is in standard form and
    /// agrees with the first clock readings, otherwise one inferred from the `%clk`/`%emt`
    /// comments (World Cup files carry the classical text even on tie-breaks). Games
    /// without clock comments get 90 min + 30 s. The flag says whether it was inferred.
    pub fn time_control(&self) -> (TimeControl, bool) {
        let inferred = self.infer_time_control();
        if let Some(tc) = self.tag("TimeControl").and_then(|t| TimeControl::parse(t).ok()) {
            let base = tc.periods.first().map_or(0, |p| p.base_ms / 1000);
            let first_clk = self.moves.first().and_then(|m| m.clk_s).map(u64::from);
            let plausible =
                first_clk.is_none_or(|c| c <= base + tc.first_increment_s() + 60 && c + 600 >= base);
            if plausible {
                return (tc, false);
            }
        }
        match inferred {
            Some(tc) => (tc, true),
            None => (TimeControl::fischer(5400, 30), true),
        }
    }

    fn infer_time_control(&self) -> Option<TimeControl> {
        let mut prev: [Option<u32>; 2] = [None, None];
        let mut incs: BTreeMap<i64, u32> = BTreeMap::new();
        let mut rises: BTreeMap<i64, u32> = BTreeMap::new();
        let mut first: [Option<(u32, Option<u32>)>; 2] = [None, None];
        let mut turn = self.start.turn();
        for m in &self.moves {
            let c = usize::from(turn == Color::Black);
            if let Some(clk) = m.clk_s {
                if first[c].is_none() {
                    first[c] = Some((clk, m.emt_s));
                }
                if let Some(p) = prev[c] {
                    let rise = i64::from(clk) - i64::from(p);
                    if rise > 0 {
                        *rises.entry(rise).or_default() += 1;
                    }
                    if let Some(emt) = m.emt_s {
                        let inc = rise + i64::from(emt);
                        if (0..=60).contains(&inc) {
                            *incs.entry(inc).or_default() += 1;
                        }
                    }
                }
                prev[c] = Some(clk);
            }
            turn = !turn;
        }
        let mode = |m: &BTreeMap<i64, u32>| m.iter().max_by_key(|(_, n)| **n).map(|(v, _)| *v);
        let inc = if incs.values().sum::<u32>() >= 3 {
            mode(&incs).unwrap_or(0)
        } else {
            mode(&rises).filter(|r| *r <= 60).unwrap_or(0)
        };
        let base = first
            .iter()
            .flatten()
            .map(|(clk, emt)| i64::from(*clk) + i64::from(emt.unwrap_or(0)) - inc)
            .max()?;
        Some(TimeControl::fischer(base.clamp(1, 35_999) as u64, inc as u64))
    }
}

/// Reads every game of a PGN file.
pub fn read_games(path: &Path) -> Result<Vec<SourceGame>, SimError> {
    let file =
        std::fs::File::open(path).map_err(|source| SimError::Io { path: path.to_path_buf(), source })?;
    let games = read_from(file).map_err(|source| SimError::Io { path: path.to_path_buf(), source })?;
    if games.is_empty() {
        return Err(SimError::BadPgn { path: path.to_path_buf(), why: "no game in the file".into() });
    }
    if games.iter().all(|g| g.moves.is_empty()) {
        let why = games
            .iter()
            .find_map(|g| g.truncated.clone())
            .unwrap_or_else(|| "no move found in it (is it PGN?)".into());
        return Err(SimError::BadPgn { path: path.to_path_buf(), why });
    }
    Ok(games)
}

/// Reads every game from PGN text.
pub fn parse_games(text: &str) -> Vec<SourceGame> {
    read_from(text.as_bytes()).unwrap_or_default()
}

fn read_from<R: std::io::Read>(input: R) -> std::io::Result<Vec<SourceGame>> {
    let mut reader = Reader::new(input);
    let mut visitor = GameVisitor { index: 0 };
    let mut games = Vec::new();
    while let Some(game) = reader.read_game(&mut visitor)? {
        games.push(game);
        visitor.index += 1;
    }
    Ok(games)
}

struct GameVisitor {
    index: usize,
}

struct Movetext {
    game: SourceGame,
    pos: Chess,
    dead: bool,
}

impl Visitor for GameVisitor {
    type Tags = BTreeMap<String, String>;
    type Movetext = Movetext;
    type Output = SourceGame;

    fn begin_tags(&mut self) -> ControlFlow<Self::Output, Self::Tags> {
        ControlFlow::Continue(BTreeMap::new())
    }

    fn tag(&mut self, tags: &mut Self::Tags, name: &[u8], value: RawTag<'_>) -> ControlFlow<Self::Output> {
        tags.insert(String::from_utf8_lossy(name).into_owned(), value.decode_utf8_lossy().into_owned());
        ControlFlow::Continue(())
    }

    fn begin_movetext(&mut self, tags: Self::Tags) -> ControlFlow<Self::Output, Self::Movetext> {
        let mut truncated = None;
        let start = match tags.get("FEN") {
            Some(fen) => match Fen::from_ascii(fen.as_bytes())
                .map_err(|e| e.to_string())
                .and_then(|f| f.into_position::<Chess>(CastlingMode::Chess960).map_err(|e| e.to_string()))
            {
                Ok(pos) => pos,
                Err(e) => {
                    truncated = Some(format!("bad FEN tag: {e}"));
                    Chess::default()
                }
            },
            None => Chess::default(),
        };
        let result = tags.get("Result").cloned().unwrap_or_else(|| "*".into());
        let dead = truncated.is_some();
        let game = SourceGame {
            index: self.index,
            tags,
            start: start.clone(),
            moves: Vec::new(),
            result,
            truncated,
        };
        ControlFlow::Continue(Movetext { game, pos: start, dead })
    }

    fn san(&mut self, m: &mut Self::Movetext, san_plus: SanPlus) -> ControlFlow<Self::Output> {
        if m.dead {
            return ControlFlow::Continue(());
        }
        match san_plus.san.to_move(&m.pos) {
            Ok(mv) => {
                let san = SanPlus::from_move(m.pos.clone(), mv).to_string();
                let uci = UciMove::from_move(mv, CastlingMode::Standard).to_string();
                m.pos.play_unchecked(mv);
                m.game.moves.push(SourceMove { mv, san, uci, clk_s: None, emt_s: None });
            }
            Err(e) => {
                let ply = m.game.moves.len() + 1;
                m.game.truncated = Some(format!("move {} at ply {ply} is {e}", san_plus.san));
                m.dead = true;
            }
        }
        ControlFlow::Continue(())
    }

    fn comment(&mut self, m: &mut Self::Movetext, comment: RawComment<'_>) -> ControlFlow<Self::Output> {
        if m.dead {
            return ControlFlow::Continue(());
        }
        if let Some(last) = m.game.moves.last_mut() {
            let text = String::from_utf8_lossy(comment.as_bytes());
            if let Some(s) = command_seconds(&text, "%clk") {
                last.clk_s = Some(s);
            }
            if let Some(s) = command_seconds(&text, "%emt") {
                last.emt_s = Some(s);
            }
        }
        ControlFlow::Continue(())
    }

    fn begin_variation(&mut self, _m: &mut Self::Movetext) -> ControlFlow<Self::Output, Skip> {
        ControlFlow::Continue(Skip(true))
    }

    fn outcome(&mut self, m: &mut Self::Movetext, outcome: Outcome) -> ControlFlow<Self::Output> {
        m.game.result = outcome.to_string();
        ControlFlow::Continue(())
    }

    fn end_game(&mut self, m: Self::Movetext) -> Self::Output {
        m.game
    }
}

/// The seconds of `[%cmd h:mm:ss]` in a comment (fractions dropped).
fn command_seconds(text: &str, cmd: &str) -> Option<u32> {
    let at = text.find(cmd)? + cmd.len();
    let rest = text[at..].trim_start();
    let end = rest.find(|c: char| !(c.is_ascii_digit() || c == ':' || c == '.')).unwrap_or(rest.len());
    let mut total = 0u32;
    for part in rest[..end].split(':') {
        let whole = part.split('.').next()?;
        total = total.checked_mul(60)?.checked_add(whole.parse::<u32>().ok()?)?;
    }
    Some(total)
}

/// SAN of a move in a position (without check marks).
pub fn san_of(pos: &Chess, mv: Move) -> String {
    San::from_move(pos, mv).to_string()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_livechess_double_comments_and_infers_the_time_control() {
        let pgn = "[Event \"x\"]\n[Result \"0-1\"]\n[TimeControl \": 90 minutes\"]\n\n\
                   1. e4 {[%clk 00:05:03]} {[%emt 00:00:02]} Nf6 {[%clk 00:05:05]} {[%emt 00:00:02]} \
                   2. e5 {[%clk 00:05:01]} {[%emt 00:00:05]} Nd5 {[%clk 00:05:07]} {[%emt 00:00:01]} \
                   3. d4 {[%clk 0:05:01]} {[%emt 0:00:03]} 0-1\n";
        let games = parse_games(pgn);
        assert_eq!(games.len(), 1);
        let g = &games[0];
        assert_eq!(g.moves.len(), 5);
        assert_eq!(g.moves[0].clk_s, Some(303));
        assert_eq!(g.moves[3].emt_s, Some(1));
        assert_eq!(g.moves[1].uci, "g8f6");
        assert_eq!(g.result, "0-1");
        let (tc, inferred) = g.time_control();
        assert!(inferred);
        assert_eq!(tc.to_string(), "304+3", "the larger of the two sides' starting estimates");
    }

    #[test]
    fn an_illegal_move_cuts_the_game_short() {
        let games = parse_games("1. e4 e5 2. Ke3 Nc6 *\n");
        assert_eq!(games[0].moves.len(), 2);
        assert!(games[0].truncated.as_deref().is_some_and(|t| t.contains("ply 3")));
    }

    #[test]
    fn standard_time_control_tags_are_used() {
        let games = parse_games("[TimeControl \"40/7200:3600\"]\n\n1. e4 {[%clk 1:59:58]} e5 *\n");
        let (tc, inferred) = games[0].time_control();
        assert!(!inferred);
        assert_eq!(tc.to_string(), "40/7200:3600");
    }
}
