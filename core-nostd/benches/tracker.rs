//! Tracker benchmarks: board events per second replaying the World Cup corpus as clean
//! board and clock messages; the time from a clock press to the confirmed move (median and
//! p99); the tracker's size.

use std::hint::black_box;
use std::ops::ControlFlow;
use std::time::{Duration, Instant};

use criterion::{BatchSize, Criterion, Throughput};
use dgt_core::{Config, Event, Tracker};
use dgt_protocol::{
    BoardDump, ClockStatus, ClockTime, ClockTimes, DgtSquare, FieldUpdate, Orientation, PieceCode, SideFlags,
    SideReading,
};
use pgn_reader::{Reader, SanPlus, Visitor};
use shakmaty::{Board, CastlingSide, Chess, Color, Move, Piece, Position, Role, Square};

const CORPUS: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/../tests/data/worldcup2025-dgt-livechess.pgn");

#[derive(Clone, Copy)]
enum Input {
    Dump(BoardDump),
    Field(FieldUpdate),
    Clock(ClockTimes),
}

struct Sans;

impl Visitor for Sans {
    type Tags = ();
    type Movetext = Vec<SanPlus>;
    type Output = Vec<SanPlus>;
    fn begin_tags(&mut self) -> ControlFlow<Self::Output> {
        ControlFlow::Continue(())
    }
    fn begin_movetext(&mut self, _: ()) -> ControlFlow<Self::Output, Self::Movetext> {
        ControlFlow::Continue(Vec::new())
    }
    fn san(&mut self, m: &mut Vec<SanPlus>, san: SanPlus) -> ControlFlow<Self::Output> {
        m.push(san);
        ControlFlow::Continue(())
    }
    fn end_game(&mut self, m: Vec<SanPlus>) -> Vec<SanPlus> {
        m
    }
}

fn clock(white: u32, black: u32, running: Option<Color>) -> ClockTimes {
    let r = |s| SideReading { time: ClockTime::from_seconds(s), flags: SideFlags::default() };
    // White is the left display; the running side's lever is high.
    let mut status = 0;
    if running.is_some() {
        status |= 1;
    }
    if running == Some(Color::Black) {
        status |= 2;
    }
    ClockTimes { left: r(white), right: r(black), status: ClockStatus(status) }
}

fn field(sq: Square, p: Option<Piece>) -> Input {
    Input::Field(FieldUpdate::new(DgtSquare::from_square(sq, Orientation::Normal), PieceCode::from_option(p)))
}

/// The dump of a board set up the normal way round.
fn dump_of(board: &Board) -> BoardDump {
    let mut d = BoardDump::EMPTY;
    for (sq, p) in board.iter() {
        d.set(DgtSquare::from_square(sq, Orientation::Normal), PieceCode::from_piece(p));
    }
    d
}

/// One game as timed messages: a start dump, clock readings, and clean field updates.
fn game_inputs(sans: &[SanPlus]) -> Vec<(Input, u64)> {
    let mut out = Vec::new();
    let mut t = 0u64;
    out.push((Input::Dump(dump_of(&Board::new())), t));
    let (mut w, mut b) = (5400u32, 5400u32);
    out.push((Input::Clock(clock(w, b, None)), t));
    out.push((Input::Clock(clock(w, b, Some(Color::White))), t));
    let mut pos = Chess::default();
    for san in sans {
        let Ok(m) = san.san.to_move(&pos) else { break };
        let us = pos.turn();
        t += 1000;
        let (mine, theirs) = if us == Color::White { (&mut w, &mut b) } else { (&mut b, &mut w) };
        *mine = mine.saturating_sub(5);
        let _ = theirs;
        out.push((Input::Clock(clock(w, b, Some(us))), t));
        let piece = |role| Some(Piece { color: us, role });
        match m {
            Move::Normal { from, to, role, promotion, .. } => {
                out.push((field(from, None), t + 100));
                out.push((field(to, piece(promotion.unwrap_or(role))), t + 200));
            }
            Move::EnPassant { from, to } => {
                out.push((field(from, None), t + 100));
                out.push((field(to, piece(Role::Pawn)), t + 200));
                out.push((field(Square::from_coords(to.file(), from.rank()), None), t + 300));
            }
            Move::Castle { king, rook } => {
                let side = m.castling_side().unwrap_or(CastlingSide::KingSide);
                out.push((field(king, None), t + 100));
                out.push((field(side.king_to(us), piece(Role::King)), t + 150));
                out.push((field(rook, None), t + 200));
                out.push((field(side.rook_to(us), piece(Role::Rook)), t + 250));
            }
            Move::Put { .. } => {}
        }
        if us == Color::White {
            w += 30;
        } else {
            b += 30;
        }
        t += 400;
        out.push((Input::Clock(clock(w, b, Some(!us))), t));
        pos.play_unchecked(m);
    }
    out
}

fn feed(tracker: &mut Tracker<600>, input: &Input, now: u64, sink: &mut impl FnMut(Event)) {
    match input {
        Input::Dump(d) => tracker.feed_dump(d, now, sink),
        Input::Field(f) => tracker.feed_field(*f, now, sink),
        Input::Clock(c) => tracker.feed_clock(c, now, sink),
    }
}

/// Replays every game through a new tracker, ticking it when it asks
/// ([`Tracker::poll_at`]); returns the moves confirmed.
fn replay(games: &[Vec<(Input, u64)>]) -> usize {
    let mut confirmed = 0usize;
    for g in games {
        let mut tracker: Tracker<600> = Tracker::new(Config::default());
        let mut sink = |e: Event| {
            if matches!(e, Event::MoveConfirmed(_)) {
                confirmed += 1;
            }
        };
        for (input, now) in g {
            while let Some(due) = tracker.poll_at().filter(|&t| t < *now) {
                tracker.tick(due, &mut sink);
            }
            feed(&mut tracker, input, *now, &mut sink);
        }
        black_box(&tracker);
    }
    confirmed
}

/// The floor of any tracker: each game's moves played and written as SAN and as a
/// position, what every confirmed move's event carries (no board to match, no search).
fn replay_floor(games: &[Vec<SanPlus>]) -> usize {
    let mut plies = 0;
    for sans in games {
        let mut pos = Chess::default();
        for san in sans {
            let Ok(m) = san.san.to_move(&pos) else { break };
            black_box(shakmaty::san::SanPlus::from_move(pos.clone(), m));
            pos.play_unchecked(m);
            black_box(dgt_core::FenText::of(&pos));
            plies += 1;
        }
    }
    plies
}

/// Messages a second of `f` over `events` messages: the best of `rounds` runs.
fn rate(events: usize, rounds: usize, mut f: impl FnMut()) -> f64 {
    let mut best = Duration::MAX;
    for _ in 0..rounds {
        let start = Instant::now();
        f();
        best = best.min(start.elapsed());
    }
    events as f64 / best.as_secs_f64()
}

/// A tracker with White's move on the board (provisional) and the press reading to feed.
fn before_press(games: &[Vec<(Input, u64)>], plies: usize) -> (Tracker<600>, ClockTimes, u64) {
    let g = &games[0];
    let mut tracker: Tracker<600> = Tracker::new(Config::default());
    let mut sink = |_e: Event| {};
    let mut clocks_seen = 0;
    for (i, (input, now)) in g.iter().enumerate() {
        if let Input::Clock(c) = input {
            // Readings: 2 at the start, then 2 per ply (running, press).
            clocks_seen += 1;
            if clocks_seen == 2 + 2 * plies + 2 {
                return (tracker, *c, *now);
            }
        }
        feed(&mut tracker, input, *now, &mut sink);
        let _ = i;
    }
    panic!("game too short");
}

/// A tracker that saw the start, a running clock, and ten plies read in one piece by a busy
/// relay (all at once, each lift reported, each landing lost, a press after each), and the
/// dump of the board ten plies on (1. e4 e5 2. Nf3 Nc6 3. Bc4 Bc5 4. c3 Nf6 5. d3 d6).
/// Reading it runs the catch-up search over so many move orders that it spends its whole
/// budget and gives up: the most one dump can cost. Returns the tracker, the dump and its
/// time.
fn before_catch_up() -> (Tracker<600>, BoardDump, u64) {
    let mut tracker: Tracker<600> = Tracker::new(Config::default());
    let mut sink = |_e: Event| {};
    tracker.feed_dump(&dump_of(&Board::new()), 0, &mut sink);
    tracker.feed_clock(&clock(5400, 5400, None), 0, &mut sink);
    tracker.feed_clock(&clock(5400, 5400, Some(Color::White)), 10, &mut sink);
    let mut pos = Chess::default();
    let mut t = 10;
    for uci in ["e2e4", "e7e5", "g1f3", "b8c6", "f1c4", "f8c5", "c2c3", "g8f6", "d2d3", "d7d6"] {
        let m = uci.parse::<shakmaty::uci::UciMove>().expect("uci").to_move(&pos).expect("legal");
        if let Some(from) = m.from() {
            let lift = FieldUpdate::new(DgtSquare::from_square(from, Orientation::Normal), PieceCode::Empty);
            tracker.feed_field(lift, t, &mut sink);
        }
        pos.play_unchecked(m);
        t += 5;
        tracker.feed_clock(&clock(5400, 5400, Some(pos.turn())), t, &mut sink);
    }
    (tracker, dump_of(pos.board()), t + 50)
}

fn main() {
    println!("size_of::<Tracker<600>>() = {} bytes", std::mem::size_of::<Tracker<600>>());
    let file = std::fs::File::open(CORPUS).expect("corpus");
    let mut reader = Reader::new(file);
    let mut games = Vec::new();
    let mut sans = Vec::new();
    while let Some(g) = reader.read_game(&mut Sans).expect("read") {
        games.push(game_inputs(&g));
        sans.push(g);
    }
    let events: usize = games.iter().map(Vec::len).sum();
    let fields = games.iter().flatten().filter(|(i, _)| matches!(i, Input::Field(_))).count();
    println!("corpus: {} games, {events} board and clock messages ({fields} field updates)", games.len());

    // Press-to-confirm latency, measured directly for percentiles.
    let (base, press, now) = before_press(&games, 20);
    let mut samples = Vec::with_capacity(20_000);
    for _ in 0..20_000 {
        let mut t = base.clone();
        let mut n = 0;
        let start = Instant::now();
        t.feed_clock(&press, now, &mut |e: Event| {
            if matches!(e, Event::MoveConfirmed(_)) {
                n += 1;
            }
        });
        samples.push(start.elapsed());
        assert_eq!(n, 1, "the press confirms one move");
    }
    samples.sort();
    let pct = |p: f64| samples[((samples.len() as f64 - 1.0) * p) as usize];
    println!(
        "press -> confirmed move: median {:?}, p99 {:?}, max {:?}",
        pct(0.5),
        pct(0.99),
        samples.last().copied().unwrap_or(Duration::ZERO)
    );
    // The catch-up search at its budget, as a ratio to the press floor above.
    let (ahead, dump, at) = before_catch_up();
    let mut catch_up = Vec::with_capacity(50);
    for _ in 0..50 {
        let mut t = ahead.clone();
        let start = Instant::now();
        t.feed_dump(&dump, at, &mut |e: Event| {
            black_box(e);
        });
        catch_up.push(start.elapsed());
    }
    catch_up.sort();
    let median = catch_up[catch_up.len() / 2];
    println!(
        "dump ten plies ahead, catch-up search at its budget: median {median:?}, max {:?} ({:.0}x the press median)",
        catch_up.last().copied().unwrap_or(Duration::ZERO),
        median.as_secs_f64() / pct(0.5).as_secs_f64()
    );
    let confirmed = replay(&games);
    println!("one replay: {confirmed} moves confirmed");
    // Throughput as a ratio to the floor measured in the same run (SAN and position per
    // move, no tracking), interleaved so that the machine's load falls alike on each.
    let rounds = 7;
    let (mut tracker_rates, mut floor_rates) = (Vec::new(), Vec::new());
    for _ in 0..rounds {
        tracker_rates.push(rate(events, 1, || {
            black_box(replay(&games));
        }));
        floor_rates.push(rate(events, 1, || {
            black_box(replay_floor(&sans));
        }));
    }
    let median = |v: &mut Vec<f64>| {
        v.sort_by(f64::total_cmp);
        v.get(v.len() / 2).copied().unwrap_or(0.0)
    };
    let (t, f) = (median(&mut tracker_rates), median(&mut floor_rates));
    println!(
        "replay: {:.2} M messages/s (median of {rounds} interleaved runs); the floor (SAN and position per move) \
         {:.2} M/s over the same messages: {:.2}x the floor",
        t / 1e6,
        f / 1e6,
        t / f
    );

    let mut c = Criterion::default().configure_from_args();
    let mut group = c.benchmark_group("tracker");
    group.throughput(Throughput::Elements(events as u64));
    group.sample_size(10);
    group.bench_function("replay_corpus_messages", |b| b.iter(|| black_box(replay(&games))));
    group.finish();
    let mut group = c.benchmark_group("confirm");
    group.bench_function("press_to_confirmed_move", |b| {
        b.iter_batched(
            || base.clone(),
            |mut t| {
                t.feed_clock(&press, now, &mut |e: Event| {
                    black_box(e);
                });
                t
            },
            BatchSize::SmallInput,
        )
    });
    group.finish();
    c.final_summary();
}
