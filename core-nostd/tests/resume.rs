//! `Tracker::resume`: a game restored with its history after a restart goes on as if the
//! tracker had followed it from the start.

mod common;

use common::{Sim, parse_uci, play_pressed};
use dgt_core::{
    Config, EndReason, Event, GameResult, GameState, Period, PgnHeader, ResumeError, ResumePly, StartKind,
    TimeControl, Tracker, View,
};
use dgt_protocol::{ClockSide, Orientation};
use shakmaty::{CastlingMode, Chess, Position, Square, uci::UciMove};

fn config() -> Config {
    let tc =
        TimeControl::with_periods(&[Period { moves: 0, seconds: 300, increment: 2, ..Period::default() }]);
    Config { time_control: tc, ..Config::default() }
}

fn clocked() -> Sim {
    let mut s = Sim::started(config(), Orientation::Normal).with_clock(300, ClockSide::Left);
    s.start_clock();
    s
}

/// The confirmed plies of a tracker, as a host would have journaled them.
fn journal(s: &Sim) -> Vec<ResumePly> {
    let mut out = Vec::new();
    s.tracker.for_each_move(View::Confirmed, |m| {
        out.push(ResumePly { uci: m.uci, clk: m.clk, emt: m.emt });
    });
    out
}

/// A new tracker (the program restarted) seeing the same board and clock as `s`, resumed
/// from `s`'s confirmed plies.
fn restarted(s: &Sim) -> Sim {
    let mut r = Sim::new(config());
    r.board = s.board.clone();
    r.clock = s.clock.clone();
    r.now = s.now + 5_000;
    r.send_clock();
    let now = r.now;
    let events = &mut r.events;
    r.tracker
        .resume(Chess::default(), CastlingMode::Standard, Orientation::Normal, journal(s), now, &mut |e| {
            events.push(e)
        })
        .expect("resume");
    r.dump();
    r
}

fn pgn(s: &Sim) -> String {
    let mut out = String::new();
    s.tracker.write_pgn(&PgnHeader::default(), &mut out).expect("pgn");
    out
}

fn movetext(s: &Sim) -> String {
    let mut out = String::new();
    s.tracker.write_movetext(&mut out).expect("movetext");
    out
}

fn takebacks(s: &Sim) -> Vec<u16> {
    s.events
        .iter()
        .filter_map(|e| match e {
            Event::Takeback { to_ply, .. } => Some(*to_ply),
            _ => None,
        })
        .collect()
}

#[test]
fn a_game_resumed_mid_way_goes_on_as_if_never_interrupted() {
    let mut a = clocked();
    let pos = play_pressed(&mut a, &Chess::default(), &["e2e4", "e7e5", "g1f3", "b8c6"]);
    let mut b = restarted(&a);
    assert_eq!(b.tracker.state(), GameState::Active);
    assert_eq!(b.tracker.start_kind(), StartKind::Standard);
    assert_eq!(b.tracker.ply_count(View::Confirmed), 4);
    assert_eq!(b.tracker.position(View::Confirmed).board(), pos.board());
    assert_eq!(b.count(|e| matches!(e, Event::GameStarted { .. } | Event::MoveConfirmed(_))), 0);
    assert_eq!(b.count(|e| matches!(e, Event::PositionMismatch { .. })), 0);
    assert_eq!(movetext(&b), movetext(&a));

    // The same hands on both boards from here.
    a.now = b.now;
    play_pressed(&mut a, &pos, &["f1b5", "a7a6"]);
    play_pressed(&mut b, &pos, &["f1b5", "a7a6"]);
    let plies: Vec<u16> = b
        .events
        .iter()
        .filter_map(|e| match e {
            Event::MoveConfirmed(m) => Some(m.ply),
            _ => None,
        })
        .collect();
    assert_eq!(plies, [5, 6], "ply numbers go on after the restored ones");
    assert_eq!(b.confirmed_ucis(), ["e2e4", "e7e5", "g1f3", "b8c6", "f1b5", "a7a6"]);
    // Same %clk and %emt (from the restored clocks), same tags: the same PGN.
    assert_eq!(pgn(&b), pgn(&a));
    assert!(pgn(&b).contains("3. Bb5 {[%clk 0:04:57] [%emt 0:00:03]} 3... a6"), "{}", pgn(&b));
}

#[test]
fn a_takeback_goes_back_across_the_resume_point() {
    let mut a = clocked();
    let pos = play_pressed(&mut a, &Chess::default(), &["e2e4", "e7e5", "g1f3", "b8c6"]);
    let mut b = restarted(&a);
    play_pressed(&mut b, &pos, &["f1b5", "a7a6"]);
    assert_eq!(b.tracker.ply_count(View::Confirmed), 6);
    // The arbiter takes back a6, Bb5 and Nc6 (made before the restart), piece by piece.
    b.slide(Square::A6, Square::A7);
    b.wait(500);
    b.slide(Square::B5, Square::F1);
    b.wait(500);
    b.slide(Square::C6, Square::B8);
    b.wait(500);
    assert_eq!(takebacks(&b).last(), Some(&3), "{:?}", b.events);
    assert_eq!(b.confirmed_ucis(), ["e2e4", "e7e5", "g1f3"]);
    // The game goes on from there with the right numbers and clocks.
    let mut p = Chess::default();
    for u in ["e2e4", "e7e5", "g1f3"] {
        p.play_unchecked(parse_uci(&p, u));
    }
    if let Some(c) = &mut b.clock {
        c.running = Some(shakmaty::Color::Black);
        c.high = shakmaty::Color::Black;
    }
    b.send_clock();
    play_pressed(&mut b, &p, &["g8f6"]);
    assert_eq!(b.confirmed_ucis(), ["e2e4", "e7e5", "g1f3", "g8f6"]);
    let text = movetext(&b);
    assert!(text.starts_with("1. e4 {[%clk 0:04:59] [%emt 0:00:03]} 1... e5"), "{text}");
    assert!(text.contains("2... Nf6 {[%clk"), "{text}");
}

#[test]
fn a_takeback_of_every_ply_after_a_resume_is_not_a_new_game() {
    let mut a = clocked();
    play_pressed(&mut a, &Chess::default(), &["e2e4"]);
    let mut b = restarted(&a);
    b.slide(Square::E4, Square::E2);
    b.wait(1500);
    assert_eq!(takebacks(&b), [0]);
    assert_eq!(b.count(|e| matches!(e, Event::GameStarted { .. })), 0);
    assert_eq!(b.tracker.ply_count(View::Confirmed), 0);
}

#[test]
fn a_resumed_line_that_mates_ends_the_game() {
    let mut t: Tracker<600> = Tracker::default();
    let mut events = Vec::new();
    let plies = ["f2f3", "e7e5", "g2g4", "d8h4"].map(|u| ResumePly {
        uci: UciMove::from_ascii(u.as_bytes()).expect("uci"),
        clk: None,
        emt: None,
    });
    t.resume(Chess::default(), CastlingMode::Standard, Orientation::Normal, plies, 0, &mut |e| {
        events.push(e)
    })
    .expect("resume");
    assert_eq!(t.result(), Some((GameResult::BlackWins, EndReason::Checkmate)));
    assert!(
        events.contains(&Event::GameEnded { result: GameResult::BlackWins, reason: EndReason::Checkmate })
    );
    let mut text = String::new();
    t.write_movetext(&mut text).expect("movetext");
    assert_eq!(text, "1. f3 e5 2. g4 Qh4# 0-1");
}

#[test]
fn an_illegal_or_too_long_history_is_refused_and_leaves_the_tracker_idle() {
    let ply =
        |u: &str| ResumePly { uci: UciMove::from_ascii(u.as_bytes()).expect("uci"), clk: None, emt: None };
    let mut t: Tracker<600> = Tracker::default();
    let mut events = Vec::new();
    let r = t.resume(
        Chess::default(),
        CastlingMode::Standard,
        Orientation::Normal,
        [ply("e2e4"), ply("e2e4")],
        0,
        &mut |e| events.push(e),
    );
    assert_eq!(r, Err(ResumeError::IllegalMove { ply: 2 }));
    assert_eq!((t.state(), t.ply_count(View::Confirmed)), (GameState::Idle, 0));

    let mut small: Tracker<4> = Tracker::default();
    let five = ["g1f3", "g8f6", "f3g1", "f6g8", "g1f3"].map(ply);
    let r = small.resume(Chess::default(), CastlingMode::Standard, Orientation::Normal, five, 0, &mut |e| {
        events.push(e)
    });
    assert_eq!(r, Err(ResumeError::TooManyPlies));
    assert_eq!(small.state(), GameState::Idle);
    assert!(events.is_empty(), "{events:?}");
    // Four fit.
    let four = ["g1f3", "g8f6", "f3g1", "f6g8"].map(ply);
    small
        .resume(Chess::default(), CastlingMode::Standard, Orientation::Normal, four, 0, &mut |e| {
            events.push(e)
        })
        .expect("four plies fit");
    assert_eq!(small.ply_count(View::Confirmed), 4);
}

#[test]
fn an_operator_position_resumes_with_its_start_and_numbers() {
    let fen = "8/8/2k5/8/8/5K2/4P3/8 b - - 0 30";
    let start: Chess = shakmaty::fen::Fen::from_ascii(fen.as_bytes())
        .expect("fen")
        .into_position(CastlingMode::Standard)
        .expect("legal");
    let mut t: Tracker<600> = Tracker::default();
    let plies = ["c6d5", "e2e4"].map(|u| ResumePly {
        uci: UciMove::from_ascii(u.as_bytes()).expect("uci"),
        clk: Some(60),
        emt: Some(1),
    });
    t.resume(start, CastlingMode::Standard, Orientation::Rotated, plies, 0, &mut |_| {}).expect("resume");
    assert_eq!(t.start_kind(), StartKind::Fen);
    assert_eq!(t.orientation(), Orientation::Rotated);
    let mut text = String::new();
    t.write_pgn(&PgnHeader::default(), &mut text).expect("pgn");
    // ASCII order by tag name: FEN, then SetUp.
    assert!(text.contains("[FEN \"8/8/2k5/8/8/5K2/4P3/8 b - - 0 30\"]\n"), "{text}");
    assert!(text.contains("[SetUp \"1\"]\n"), "{text}");
    assert!(text.find("[FEN").expect("FEN") < text.find("[SetUp").expect("SetUp"), "{text}");
    assert!(text.contains("[PlyCount \"2\"]"), "{text}");
    let movetext = text.split("\n\n").nth(1).expect("movetext").replace('\n', " ");
    assert_eq!(
        movetext,
        "30... Kd5 {[%clk 0:01:00] [%emt 0:00:01]} 31. e4+ {[%clk 0:01:00] [%emt 0:00:01]} *"
    );
}

/// A restart while White's move stands pressed but is not journaled yet (the program died
/// between the press and the journal's write): the clock runs Black's side, the journal says
/// White is to move. A resumed game that learns the sides from that lever reads them the
/// wrong way round, and every later `%clk` would carry the opponent's time; the side the
/// tracker told before, given back, keeps them right.
#[test]
fn a_resumed_game_keeps_the_clock_sides_it_was_given() {
    let mut a = clocked();
    let pos = play_pressed(&mut a, &Chess::default(), &["e2e4", "e7e5", "g1f3", "b8c6"]);
    assert_eq!(a.tracker.white_clock_side(), Some(ClockSide::Left));
    let journaled = journal(&a);
    // White moves and presses; the program dies before the move reaches the journal.
    play_pressed(&mut a, &pos, &["f1b5"]);
    let (white, black) = a.clock.as_ref().map(|c| (c.white, c.black)).expect("a clock");
    assert_ne!(white, black);
    let clocks_after_restart = |side: Option<ClockSide>| {
        let mut r = Sim::new(config());
        r.board = a.board.clone();
        r.clock = a.clock.clone();
        r.now = a.now + 5_000;
        let now = r.now;
        let events = &mut r.events;
        r.tracker
            .resume(
                Chess::default(),
                CastlingMode::Standard,
                Orientation::Normal,
                journaled.clone(),
                now,
                &mut |e| events.push(e),
            )
            .expect("resume");
        if let Some(s) = side {
            r.tracker.set_white_clock_side(s);
        }
        r.send_clock();
        r.dump();
        let c = r.tracker.clocks();
        (c.white, c.black, r.tracker.white_clock_side())
    };
    // Learned from the lever: the wrong way round.
    assert_eq!(clocks_after_restart(None), (Some(black), Some(white), None));
    // Given back: right, and fixed for the rest of the game.
    assert_eq!(
        clocks_after_restart(Some(ClockSide::Left)),
        (Some(white), Some(black), Some(ClockSide::Left))
    );
}

/// `Tracker::reset` makes a used tracker what `Tracker::new` makes, field for field (the
/// debug form names every field), and a game restored on it goes on as on a new one.
#[test]
fn a_reset_tracker_is_a_new_one() {
    let mut s = clocked();
    play_pressed(&mut s, &Chess::default(), &["e2e4", "e7e5", "g1f3"]);
    assert_ne!(format!("{:?}", s.tracker), format!("{:?}", Tracker::<600>::new(config())));
    let mut reset = s.tracker.clone();
    reset.reset(config());
    assert_eq!(format!("{reset:?}"), format!("{:?}", Tracker::<600>::new(config())));
    let mut r = restarted(&s);
    let mut again = restarted(&s);
    again.tracker = reset;
    let now = again.now;
    again
        .tracker
        .resume(Chess::default(), CastlingMode::Standard, Orientation::Normal, journal(&s), now, &mut |_| {})
        .expect("resume");
    r.dump();
    again.dump();
    assert_eq!(movetext(&again), movetext(&r));
}
