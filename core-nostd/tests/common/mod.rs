//! Test helpers: a simulated board and clock driven by "hand actions", feeding a tracker.
#![allow(dead_code)]

use dgt_core::{Config, Event, GameResult, MoveInfo, Tracker};
use dgt_protocol::{
    BoardDump, ClockSide, ClockStatus, ClockTime, ClockTimes, DgtSquare, FieldUpdate, Orientation, PieceCode,
    SideFlags, SideReading,
};
use shakmaty::{Board, Chess, Color, Move, Piece, Position, Role, Square, uci::UciMove};

/// True when the tests check [`Tracker::poll_at`] against a tracker ticked every millisecond
/// (`DGT_TICK_CHECK` set; slow).
fn tick_check() -> bool {
    std::env::var_os("DGT_TICK_CHECK").is_some()
}

/// A simulated DGT clock (times in seconds).
#[derive(Clone, Debug)]
pub struct SimClock {
    pub white: u32,
    pub black: u32,
    pub running: Option<Color>,
    /// The side whose lever is high when stopped.
    pub high: Color,
    pub white_side: ClockSide,
    pub white_flag: bool,
    pub black_flag: bool,
}

impl SimClock {
    pub fn new(white: u32, black: u32, white_side: ClockSide) -> SimClock {
        SimClock {
            white,
            black,
            running: None,
            high: Color::White,
            white_side,
            white_flag: false,
            black_flag: false,
        }
    }

    pub fn reading(&self) -> ClockTimes {
        let side = |c: Color| if c == Color::White { self.white_side } else { self.white_side.other() };
        let high_color = self.running.unwrap_or(self.high);
        let high_side = side(high_color);
        let mut status = 0u8;
        if self.running.is_some() {
            status |= 0x01;
        }
        if high_side == ClockSide::Right {
            status |= 0x02;
        }
        let reading = |secs: u32, flag: bool| SideReading {
            time: ClockTime::from_seconds(secs),
            flags: SideFlags { final_flag: flag, time_per_move: true, flag },
        };
        let w = reading(self.white, self.white_flag);
        let b = reading(self.black, self.black_flag);
        let (left, right) = if self.white_side == ClockSide::Left { (w, b) } else { (b, w) };
        ClockTimes { right, left, status: ClockStatus(status) }
    }
}

/// A simulated board, clock and tracker, with a list of everything the tracker said.
pub struct Sim {
    pub tracker: Tracker<600>,
    pub events: Vec<Event>,
    pub now: u64,
    /// How the board sits (what the pieces' squares map to on the wire).
    pub orientation: Orientation,
    /// What is physically on each game square.
    pub board: Board,
    pub clock: Option<SimClock>,
    /// Milliseconds between two consecutive field updates.
    pub step_ms: u64,
    /// Dump requests answered so far (the host answers each one with a dump).
    pub dumps_answered: usize,
    /// Milliseconds between a press's two clock readings, and after the second.
    pub press_step_ms: u64,
    /// Magic pieces on the board (codes no chess piece has), by game square.
    pub magic: Vec<(Square, PieceCode)>,
    /// Checks every wait against a copy of the tracker ticked every millisecond (see
    /// `check_nothing_due_before`); also on with `DGT_TICK_CHECK` set.
    pub check_ticks: bool,
}

fn code(p: Option<Piece>) -> PieceCode {
    PieceCode::from_option(p)
}

impl Sim {
    pub fn new(config: Config) -> Sim {
        Sim {
            tracker: Tracker::new(config),
            events: Vec::new(),
            now: 1_000,
            orientation: Orientation::Normal,
            board: Board::empty(),
            clock: None,
            step_ms: 40,
            dumps_answered: 0,
            press_step_ms: 10,
            magic: Vec::new(),
            check_ticks: tick_check(),
        }
    }

    /// A tracker with a start position on the board (via a dump), no clock.
    pub fn started(config: Config, orientation: Orientation) -> Sim {
        let mut s = Sim::new(config);
        s.orientation = orientation;
        s.board = Board::new();
        s.dump();
        s
    }

    /// Adds a clock with both sides at `secs`, lever high on White's side, stopped.
    pub fn with_clock(mut self, secs: u32, white_side: ClockSide) -> Sim {
        self.clock = Some(SimClock::new(secs, secs, white_side));
        self.send_clock();
        self
    }

    pub fn dump(&mut self) {
        let mut d = BoardDump::EMPTY;
        for (sq, p) in self.board.iter() {
            d.set(DgtSquare::from_square(sq, self.orientation), PieceCode::from_piece(p));
        }
        for &(sq, c) in &self.magic {
            d.set(DgtSquare::from_square(sq, self.orientation), c);
        }
        let now = self.now;
        let events = &mut self.events;
        self.tracker.feed_dump(&d, now, &mut |e| events.push(e));
    }

    /// Sends a field update for a game square with what the board now holds there.
    pub fn put(&mut self, sq: Square, p: Option<Piece>) {
        self.put_code(sq, code(p));
    }

    pub fn put_code(&mut self, sq: Square, c: PieceCode) {
        self.board.discard_piece_at(sq);
        self.magic.retain(|&(m, _)| m != sq);
        if let Some(p) = c.piece() {
            self.board.set_piece_at(sq, p);
        } else if c.is_magic() {
            self.magic.push((sq, c));
        }
        self.now += self.step_ms;
        let u = FieldUpdate::new(DgtSquare::from_square(sq, self.orientation), c);
        let now = self.now;
        let events = &mut self.events;
        self.tracker.feed_field(u, now, &mut |e| events.push(e));
    }

    /// Changes a square on the board with its field update lost: only a dump shows it.
    pub fn put_unreported(&mut self, sq: Square, p: Option<Piece>) {
        self.board.discard_piece_at(sq);
        if let Some(p) = p {
            self.board.set_piece_at(sq, p);
        }
        self.now += self.step_ms;
    }

    /// Lifts the piece from a square; returns it.
    pub fn lift(&mut self, sq: Square) -> Option<Piece> {
        let p = self.board.piece_at(sq);
        self.put(sq, None);
        p
    }

    /// Moves a piece by hand, lift then place.
    pub fn slide(&mut self, from: Square, to: Square) {
        let p = self.lift(from);
        self.put(to, p);
    }

    /// Moves a piece by hand, its lift reported and its landing's report lost.
    pub fn slide_landing_unreported(&mut self, from: Square, to: Square) {
        let p = self.lift(from);
        self.put_unreported(to, p);
    }

    /// Lets time pass: the tracker is ticked at the moments it asks for
    /// ([`Tracker::poll_at`]), and at least every 50 ms, when the host answers the dump
    /// requests made meanwhile.
    pub fn wait(&mut self, ms: u64) {
        self.pass(ms, true);
    }

    /// Lets time pass like [`Sim::wait`], with the dump requests not answered meanwhile (a
    /// slow link): the next `wait` answers them.
    pub fn wait_without_dumps(&mut self, ms: u64) {
        self.pass(ms, false);
    }

    fn pass(&mut self, ms: u64, answer_dumps: bool) {
        let end = self.now + ms;
        while self.now < end {
            let next = (self.now + 50).min(end);
            let next = self.tracker.poll_at().filter(|&t| t > self.now).map_or(next, |t| t.min(next));
            if self.check_ticks {
                self.check_nothing_due_before(next);
            }
            self.now = next;
            let now = self.now;
            let events = &mut self.events;
            self.tracker.tick(now, &mut |e| events.push(e));
            if answer_dumps {
                self.answer_dump_requests();
            }
        }
    }

    /// A copy of the tracker ticked at every millisecond up to `next` says and does what
    /// the tracker ticked only at `next` does (nothing between the deadlines
    /// [`Tracker::poll_at`] gives), with `check_ticks`.
    fn check_nothing_due_before(&self, next: u64) {
        let mut every_ms = self.tracker.clone();
        let mut only_next = self.tracker.clone();
        let (mut a, mut b) = (Vec::new(), Vec::new());
        for t in self.now + 1..=next {
            every_ms.tick(t, &mut |e| a.push((t, e)));
        }
        only_next.tick(next, &mut |e| b.push((next, e)));
        assert_eq!(a, b, "ticking every millisecond from {} to {next} acts otherwise", self.now);
    }

    /// Answers the tracker's dump requests, as the host does (here within a tick).
    fn answer_dump_requests(&mut self) {
        let asked = self.count(|e| matches!(e, Event::RequestBoardDump));
        if asked > self.dumps_answered {
            self.dumps_answered = asked;
            self.dump();
        }
    }

    pub fn send_clock(&mut self) {
        if let Some(c) = &self.clock {
            let r = c.reading();
            let now = self.now;
            let events = &mut self.events;
            self.tracker.feed_clock(&r, now, &mut |e| events.push(e));
        }
    }

    /// `color`'s time runs out: their display shows 0 with the flag, sent at once.
    pub fn flag_falls(&mut self, color: Color) {
        if let Some(c) = &mut self.clock {
            if color == Color::White {
                c.white = 0;
                c.white_flag = true;
            } else {
                c.black = 0;
                c.black_flag = true;
            }
        }
        self.send_clock();
    }

    /// Starts the clock with White's time running.
    pub fn start_clock(&mut self) {
        if let Some(c) = &mut self.clock {
            c.running = Some(c.high);
        }
        self.send_clock();
    }

    /// The running player presses: their display shows `secs_used` less (one reading while
    /// it runs), then the press adds `inc` and starts the other side.
    pub fn press(&mut self, secs_used: u32, inc: u32) {
        if let Some(c) = &mut self.clock {
            let mover = c.running.unwrap_or(c.high);
            let t = if mover == Color::White { &mut c.white } else { &mut c.black };
            *t = t.saturating_sub(secs_used);
        }
        self.now += self.press_step_ms;
        self.send_clock();
        if let Some(c) = &mut self.clock {
            let mover = c.running.unwrap_or(c.high);
            let t = if mover == Color::White { &mut c.white } else { &mut c.black };
            *t += inc;
            c.running = Some(!mover);
            c.high = !mover;
        }
        self.now += self.press_step_ms;
        self.send_clock();
    }

    /// The running player presses, then the other, both before the clock is read (a
    /// premoved pair): one reading, the lever back where it was, the first mover's display
    /// `secs_used` less and each plus `inc`; without an increment the second's display ran
    /// across a second.
    pub fn press_pair_in_one_reading(&mut self, secs_used: u32, inc: u32) {
        if let Some(c) = &mut self.clock {
            let first = c.running.unwrap_or(c.high);
            let (a, b) = if first == Color::White {
                (&mut c.white, &mut c.black)
            } else {
                (&mut c.black, &mut c.white)
            };
            *a = a.saturating_sub(secs_used) + inc;
            *b = (*b + inc).saturating_sub(u32::from(inc == 0));
            c.running = Some(first);
            c.high = first;
        }
        self.now += self.press_step_ms;
        self.send_clock();
    }

    /// Plays a move cleanly: "from" empty, then "to" (castling: king then rook; e.p.: the
    /// captured pawn last).
    pub fn play(&mut self, m: Move, turn: Color) {
        match m {
            Move::Normal { from, to, promotion, role, .. } => {
                self.lift(from);
                let piece = Piece { color: turn, role: promotion.unwrap_or(role) };
                self.put(to, Some(piece));
            }
            Move::EnPassant { from, to } => {
                self.slide(from, to);
                self.put(Square::from_coords(to.file(), from.rank()), None);
            }
            Move::Castle { king, rook } => {
                let side = m.castling_side().unwrap_or(shakmaty::CastlingSide::KingSide);
                self.lift(king);
                self.put(side.king_to(turn), Some(Piece { color: turn, role: Role::King }));
                self.lift(rook);
                self.put(side.rook_to(turn), Some(Piece { color: turn, role: Role::Rook }));
            }
            Move::Put { .. } => {}
        }
    }

    /// Plays a UCI move from a position; returns the new position.
    pub fn play_uci(&mut self, pos: &Chess, uci: &str) -> Chess {
        let m = parse_uci(pos, uci);
        self.play(m, pos.turn());
        let mut p = pos.clone();
        p.play_unchecked(m);
        p
    }

    pub fn confirmed_ucis(&self) -> Vec<String> {
        let mut out = Vec::new();
        self.tracker.for_each_move(dgt_core::View::Confirmed, |m| out.push(m.uci.to_string()));
        out
    }

    pub fn confirmed_events(&self) -> Vec<String> {
        self.event_ucis(|e| match e {
            Event::MoveConfirmed(m) => Some(m),
            _ => None,
        })
    }

    /// Every provisional ply the tracker announced, in order (retracted ones too).
    pub fn provisional_events(&self) -> Vec<String> {
        self.event_ucis(|e| match e {
            Event::MoveProvisional(m) => Some(m),
            _ => None,
        })
    }

    /// The moves of the events `pick` selects, in order.
    fn event_ucis(&self, pick: impl Fn(&Event) -> Option<&MoveInfo>) -> Vec<String> {
        self.events.iter().filter_map(pick).map(|m| m.uci.to_string()).collect()
    }

    /// The `%clk` of each confirmed ply, in order.
    pub fn confirmed_clks(&self) -> Vec<Option<u32>> {
        let mut out = Vec::new();
        self.tracker.for_each_move(dgt_core::View::Confirmed, |m| out.push(m.clk));
        out
    }

    pub fn count<F: Fn(&Event) -> bool>(&self, f: F) -> usize {
        self.events.iter().filter(|e| f(e)).count()
    }

    pub fn result(&self) -> Option<GameResult> {
        self.tracker.result().map(|r| r.0)
    }

    /// The move events in short: `+5 e7d6` provisional, `=5 e7d6` confirmed, `-5` retracted.
    pub fn move_log(&self) -> Vec<String> {
        self.events
            .iter()
            .filter_map(|e| match e {
                Event::MoveProvisional(m) => Some(format!("+{} {}", m.ply, m.uci)),
                Event::MoveConfirmed(m) => Some(format!("={} {} {:?}", m.ply, m.uci, m.clk)),
                Event::MoveRetracted { ply, .. } => Some(format!("-{ply}")),
                Event::Takeback { to_ply, .. } => Some(format!("takeback to {to_ply}")),
                Event::RequestBoardDump => Some("dump?".into()),
                _ => None,
            })
            .collect()
    }

    pub fn clear_events(&mut self) {
        self.events.clear();
    }
}

pub fn parse_uci(pos: &Chess, uci: &str) -> Move {
    let m = UciMove::from_ascii(uci.as_bytes()).ok().and_then(|u| u.to_move(pos).ok());
    match m {
        Some(m) => m,
        None => panic!("illegal test move {uci}"),
    }
}

pub fn piece(color: Color, role: Role) -> Option<Piece> {
    Some(Piece { color, role })
}

/// A started game with a 5-minute clock, White on `white_side`, the clock running.
pub fn clocked(orientation: Orientation, white_side: ClockSide) -> Sim {
    let mut s = Sim::started(Config::default(), orientation).with_clock(300, white_side);
    s.start_clock();
    s
}

/// Plays moves cleanly with a press after each.
pub fn play_pressed(s: &mut Sim, pos: &Chess, ucis: &[&str]) -> Chess {
    let mut p = pos.clone();
    for u in ucis {
        p = s.play_uci(&p, u);
        s.wait(200);
        s.press(3, 2);
        // A piece that could still be sliding on is confirmed once the board has had a
        // scan's worth of time after the press (settle_ms) to show where it stopped.
        s.wait(350);
    }
    p
}

/// A game from an operator FEN (the board already showing it), with a running clock of
/// `clock_secs` a side when given (White's display on the left, the side to move running).
pub fn from_fen(fen: &str, config: Config, clock_secs: Option<u32>) -> (Sim, Chess) {
    let setup = shakmaty::fen::Fen::from_ascii(fen.as_bytes()).expect("fen").into_setup();
    let pos: Chess = setup.position(shakmaty::CastlingMode::Standard).expect("legal");
    let mut s = Sim::new(config);
    s.board = pos.board().clone();
    s.dump();
    let events = &mut s.events;
    s.tracker
        .start_from_fen(fen.as_bytes(), Some(Orientation::Normal), s.now, &mut |e| events.push(e))
        .expect("start");
    if let Some(secs) = clock_secs {
        let mut c = SimClock::new(secs, secs, ClockSide::Left);
        c.high = pos.turn();
        s.clock = Some(c);
        s.send_clock();
        s.start_clock();
    }
    (s, pos)
}
