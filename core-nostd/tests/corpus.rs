//! The World Cup 2025 corpus replayed as clean synthetic board and clock events.
//!
//! Every game's moves are played on a simulated board with a simulated clock whose readings
//! come from the game's own `%clk` values. The tracker must confirm exactly the game's
//! moves with exactly its `%clk`; results that the board can show are checked: mate and
//! stalemate by the tracker itself, every other decided game through the kings-in-centre
//! signal (the board cannot know about a resignation otherwise). Games with an illegal move
//! that stood (known dirt) must stop at that move with a reported mismatch.

mod common;

use std::ops::ControlFlow;

use common::{Sim, SimClock};
use dgt_core::{Config, EndReason, Event, GameResult, PgnHeader, View};
use dgt_protocol::{ClockSide, Orientation};
use pgn_reader::{RawComment, RawTag, Reader, SanPlus, Visitor};
use shakmaty::{Chess, Color, KnownOutcome, Outcome, Position, Role, Square};

const CORPUS: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/../tests/data/worldcup2025-dgt-livechess.pgn");

#[derive(Default, Debug, Clone)]
struct Game {
    name: String,
    sans: Vec<SanPlus>,
    clk: Vec<Option<u32>>,
    emt: Vec<Option<u32>>,
    result: Option<GameResult>,
}

fn parse_hms(s: &str) -> Option<u32> {
    let mut parts = s.trim().split(':');
    let (h, m, sec) = (parts.next()?, parts.next()?, parts.next()?);
    Some(h.parse::<u32>().ok()? * 3600 + m.parse::<u32>().ok()? * 60 + sec.parse::<f64>().ok()? as u32)
}

fn command(comment: &str, name: &str) -> Option<u32> {
    let i = comment.find(name)?;
    let rest = &comment[i + name.len()..];
    let end = rest.find(']')?;
    parse_hms(&rest[..end])
}

struct Collect;

impl Visitor for Collect {
    type Tags = Game;
    type Movetext = Game;
    type Output = Game;

    fn begin_tags(&mut self) -> ControlFlow<Game, Game> {
        ControlFlow::Continue(Game::default())
    }

    fn tag(&mut self, g: &mut Game, name: &[u8], value: RawTag<'_>) -> ControlFlow<Game> {
        let v = value.decode_utf8_lossy().to_string();
        match name {
            b"White" => g.name = format!("{v}{}", g.name),
            b"Black" => g.name = format!("{} - {v}", g.name),
            b"Round" => g.name = format!("{} (round {v})", g.name),
            _ => {}
        }
        ControlFlow::Continue(())
    }

    fn begin_movetext(&mut self, g: Game) -> ControlFlow<Game, Game> {
        ControlFlow::Continue(g)
    }

    fn san(&mut self, g: &mut Game, san: SanPlus) -> ControlFlow<Game> {
        g.sans.push(san);
        g.clk.push(None);
        g.emt.push(None);
        ControlFlow::Continue(())
    }

    fn comment(&mut self, g: &mut Game, c: RawComment<'_>) -> ControlFlow<Game> {
        let text = String::from_utf8_lossy(c.as_bytes());
        if let Some(v) = command(&text, "[%clk ")
            && let Some(last) = g.clk.last_mut()
        {
            *last = Some(v);
        }
        if let Some(v) = command(&text, "[%emt ")
            && let Some(last) = g.emt.last_mut()
        {
            *last = Some(v);
        }
        ControlFlow::Continue(())
    }

    fn outcome(&mut self, g: &mut Game, outcome: Outcome) -> ControlFlow<Game> {
        g.result = match outcome {
            Outcome::Known(KnownOutcome::Decisive { winner: Color::White }) => Some(GameResult::WhiteWins),
            Outcome::Known(KnownOutcome::Decisive { winner: Color::Black }) => Some(GameResult::BlackWins),
            Outcome::Known(KnownOutcome::Draw) => Some(GameResult::Draw),
            Outcome::Unknown => None,
        };
        ControlFlow::Continue(())
    }

    fn end_game(&mut self, g: Game) -> Game {
        g
    }
}

fn read_corpus() -> Vec<Game> {
    let file = std::fs::File::open(CORPUS).expect("corpus file");
    let mut reader = Reader::new(file);
    let mut games = Vec::new();
    while let Some(g) = reader.read_game(&mut Collect).expect("read") {
        games.push(g);
    }
    games
}

/// The increment a game was played with: the most common `clk - (prev_clk - emt)`.
fn infer_increment(g: &Game) -> u32 {
    let mut hist = [0u32; 61];
    for i in 2..g.sans.len() {
        if let (Some(prev), Some(clk), Some(emt)) = (g.clk[i - 2], g.clk[i], g.emt[i]) {
            let v = i64::from(clk) - (i64::from(prev) - i64::from(emt));
            if (0..=60).contains(&v) {
                hist[v as usize] += 1;
            }
        }
    }
    (0..=60).max_by_key(|&v| (hist[v], std::cmp::Reverse(v))).unwrap_or(0) as u32
}

struct Replay {
    sim: Sim,
    /// Plies played before stopping (the illegal ply index, for dirty games).
    illegal_at: Option<usize>,
    played: Vec<String>,
    final_pos: Chess,
}

/// Replays one game; returns the simulation for checking.
fn replay(g: &Game, gesture: bool) -> Replay {
    let inc = infer_increment(g);
    let first = |color_idx: usize| {
        let clk = g.clk.get(color_idx).copied().flatten().unwrap_or(600);
        let emt = g.emt.get(color_idx).copied().flatten().unwrap_or(0);
        (clk + emt).saturating_sub(inc)
    };
    let mut sim = Sim::started(Config::default(), Orientation::Normal);
    sim.clock = Some(SimClock::new(first(0), first(1), ClockSide::Left));
    sim.send_clock();
    sim.now += 500;
    sim.start_clock();
    let mut pos = Chess::default();
    let mut played = Vec::new();
    let mut prev_clk = [first(0), first(1)];
    let mut illegal_at = None;
    for (i, san) in g.sans.iter().enumerate() {
        let color = pos.turn();
        let ci = usize::from(color == Color::Black);
        let Ok(m) = san.san.to_move(&pos) else {
            illegal_at = Some(i);
            break;
        };
        // The clock while the mover thinks: what they will have before the press.
        let clk = g.clk[i].unwrap_or_else(|| (prev_clk[ci] + inc).saturating_sub(g.emt[i].unwrap_or(1)));
        let pre = match g.emt[i] {
            Some(e) if e <= prev_clk[ci] => prev_clk[ci] - e,
            _ => clk.saturating_sub(inc),
        };
        if let Some(c) = &mut sim.clock {
            if color == Color::White { c.white = pre } else { c.black = pre }
        }
        sim.now += 700;
        sim.send_clock();
        sim.now += 300;
        sim.play(m, color);
        sim.now += 100;
        if let Some(c) = &mut sim.clock {
            if color == Color::White {
                c.white = clk
            } else {
                c.black = clk
            }
            c.running = Some(!color);
            c.high = !color;
        }
        sim.send_clock();
        prev_clk[ci] = clk;
        played.push(m.to_uci(shakmaty::CastlingMode::Standard).to_string());
        pos.play_unchecked(m);
        sim.wait(100);
    }
    // A press on a piece that could still be sliding on confirms once the board has had a
    // scan's worth of time (settle_ms) to show where it stopped.
    sim.wait(300);
    if let Some(i) = illegal_at {
        // Play the illegal move as a hand would: lift the piece, put it where the PGN says.
        let san = g.sans[i].san;
        if let shakmaty::san::San::Normal { role, to, .. } = san {
            let from = (pos.board().by_role(role) & pos.us()).into_iter().find(|sq| sq.distance(to) <= 2);
            if let Some(from) = from {
                let p = sim.lift(from);
                sim.put(to, p);
            }
        }
        sim.wait(3000);
    } else if gesture
        && sim.tracker.result().is_none()
        && let Some(r) = g.result
    {
        kings_to_centre(&mut sim, r);
        // The signal is left standing (it ends the game after the quiet time).
        sim.wait(2_500);
    }
    Replay { sim, illegal_at, played, final_pos: pos }
}

/// The DGT result signal: both kings on the centre squares.
fn kings_to_centre(sim: &mut Sim, r: GameResult) {
    let (w, b) = match r {
        GameResult::WhiteWins => (Square::E4, Square::D5),
        GameResult::BlackWins => (Square::D4, Square::E5),
        GameResult::Draw => (Square::E4, Square::E5),
        other => panic!("the kings signal only 1-0, 0-1 and 1/2-1/2, not {other}"),
    };
    let wk = sim.board.king_of(Color::White);
    let bk = sim.board.king_of(Color::Black);
    if let Some(k) = wk {
        sim.lift(k);
    }
    if let Some(k) = bk {
        sim.lift(k);
    }
    for sq in [w, b] {
        if sim.board.piece_at(sq).is_some() {
            sim.lift(sq);
        }
    }
    sim.put(w, Some(shakmaty::Piece { color: Color::White, role: Role::King }));
    sim.put(b, Some(shakmaty::Piece { color: Color::Black, role: Role::King }));
}

#[test]
fn world_cup_corpus_replays_exactly() {
    let games = read_corpus();
    assert_eq!(games.len(), 273, "corpus size");
    let mut dirty = Vec::new();
    let (mut plies, mut clk_checked, mut emt_checked, mut emt_close) = (0usize, 0usize, 0usize, 0usize);
    let mut by_reason = std::collections::BTreeMap::<String, usize>::new();
    for (gi, g) in games.iter().enumerate() {
        let r = replay(g, true);
        let sim = &r.sim;
        assert_eq!(sim.confirmed_events(), r.played, "game {gi} {}: confirmed events", g.name);
        if let Some(i) = r.illegal_at {
            // Known dirt: an illegal move stood. It must never be recorded; the tracker
            // reports the board (or, when the placement equals an earlier position of the
            // game, takes back to it: the board alone cannot tell those apart).
            let mismatch = sim.events.iter().any(|e| matches!(e, Event::PositionMismatch { .. }));
            let takeback = sim.events.iter().find_map(|e| match e {
                Event::Takeback { to_ply, .. } => Some(*to_ply),
                _ => None,
            });
            assert!(mismatch || takeback.is_some(), "game {gi}: the illegal move must be reported");
            let what = match takeback {
                Some(p) => format!("read as a takeback to ply {p} (same placement)"),
                None => "reported as a position mismatch".to_string(),
            };
            dirty.push(format!("game {gi} {}: ply {} {} is illegal; {what}", g.name, i + 1, g.sans[i]));
            continue;
        }
        let confirmed = sim.confirmed_ucis();
        assert_eq!(confirmed, r.played, "game {gi} {}: moves", g.name);
        let mut infos = Vec::new();
        sim.tracker.for_each_move(View::Confirmed, |m| infos.push(*m));
        for (i, m) in infos.iter().enumerate() {
            if let Some(expect) = g.clk[i] {
                assert_eq!(m.clk, Some(expect), "game {gi} {}: %clk of ply {}", g.name, i + 1);
                clk_checked += 1;
            }
            if let (Some(expect), Some(got)) = (g.emt[i], m.emt) {
                emt_checked += 1;
                if expect.abs_diff(got) <= 1 {
                    emt_close += 1;
                }
            }
        }
        plies += infos.len();
        // Results the board can show.
        let pos = &r.final_pos;
        let got = sim.tracker.result();
        if pos.is_checkmate() || pos.is_stalemate() {
            let reason = got.map(|x| x.1);
            assert!(
                matches!(reason, Some(EndReason::Checkmate | EndReason::Stalemate)),
                "game {gi} {}: ends on the board: {got:?}",
                g.name
            );
        } else if g.result.is_some() {
            assert_eq!(got.map(|x| x.1), Some(EndReason::KingsInCentre), "game {gi} {}", g.name);
        } else {
            assert_eq!(got, None, "game {gi} {}: unfinished", g.name);
        }
        assert_eq!(got.map(|x| x.0), g.result, "game {gi} {}: result", g.name);
        *by_reason.entry(format!("{:?}", got.map(|x| x.1))).or_default() += 1;
        // No king move of the result signal may be recorded.
        assert_eq!(sim.tracker.ply_count(View::Confirmed), g.sans.len(), "game {gi}: ply count");

        // The PGN reads back to the same moves and result.
        let mut pgn = String::new();
        sim.tracker.write_pgn(&PgnHeader::default(), &mut pgn).expect("write pgn");
        assert!(pgn.lines().all(|l| l.chars().count() < 80), "game {gi}: long line in\n{pgn}");
        let back = Reader::new(pgn.as_bytes()).read_game(&mut Collect).expect("read back").expect("a game");
        let mut p = Chess::default();
        let mut back_ucis = Vec::new();
        for s in &back.sans {
            let m = s.san.to_move(&p).expect("PGN move legal");
            back_ucis.push(m.to_uci(shakmaty::CastlingMode::Standard).to_string());
            p.play_unchecked(m);
        }
        assert!(back_ucis == r.played, "game {gi}: PGN moves differ");
        assert_eq!(back.result, g.result, "game {gi}: PGN result");
        for i in 0..back.clk.len() {
            if g.clk[i].is_some() {
                assert_eq!(back.clk[i], g.clk[i], "game {gi}: PGN %clk ply {}", i + 1);
            }
        }
    }
    println!("corpus: {} games, {plies} plies confirmed, {clk_checked} %clk values exact", games.len());
    println!(
        "%emt within 1 s of LiveChess's on {emt_close}/{emt_checked} plies ({:.1} %)",
        100.0 * emt_close as f64 / emt_checked.max(1) as f64
    );
    println!("results by reason: {by_reason:?}");
    println!("dirty games (an illegal move stood; never recorded): {}", dirty.len());
    for d in &dirty {
        println!("  {d}");
    }
    assert!(emt_close * 100 >= emt_checked * 93, "%emt agreement below 93 %");
}
