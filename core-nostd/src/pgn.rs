//! The PGN writer: the export format in one place, streamed into any `core::fmt::Write`,
//! no allocation.
//!
//! [`write_game`] lays out a game from data the caller gives it: the tags
//! ([`PgnHeader`], [`GameText`]) and the plies ([`PgnPly`], from any iterator). The
//! tracker's [`Tracker::write_pgn`] is one caller (its own confirmed moves); a host that
//! publishes only what it journaled is another (its journal's moves, as SAN text).
//!
//! The rules kept here: the Seven Tag Roster first and in order, then every other tag
//! (`Board`, the caller's extra tags, `TimeControl`, `WhiteClock`/`BlackClock`, the live
//! `Clock`, `UTCDate`/`UTCTime`, `Mode`, `Variant`, `SetUp`/`FEN`, `Termination`,
//! `PlyCount`) in ASCII order by tag name, sorted as they are written without allocating;
//! `TimeControl` (`?` if unknown) whenever a move carries `%clk`; tag values escaped; move numbers, and `N...` for Black after a comment or at the start;
//! one comment per move `{[%clk 1:59:01] [%emt 0:00:59]}`; lines under 80 characters;
//! the result at the end (`*` for the arbiter's `0-0`, `1/2-0`, `0-1/2`, which only the
//! `Result` tag carries, as Lichess reads them); an unplayed game (`Termination
//! "Unplayed"`) without moves; a blank line after the tags and after the game.

use core::fmt::{self, Write};

use shakmaty::{Chess, Color, EnPassantMode, Position, fen::Fen, san::SanPlus};

use crate::config::TimeControl;
use crate::event::{ClockState, GameResult, StartKind, UNPLAYED};
use crate::tracker::{GameState, Tracker};

/// Seconds as `h:mm:ss`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Hms(pub u32);

impl fmt::Display for Hms {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}:{:02}:{:02}", self.0 / 3600, (self.0 / 60) % 60, self.0 % 60)
    }
}

/// What the caller knows about a game that the board cannot tell: the tags.
///
/// Unknown roster values default to `?` (and `????.??.??` for the date), as the standard
/// asks. Values are escaped when written.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct PgnHeader<'a> {
    /// `Event`
    pub event: &'a str,
    /// `Site`
    pub site: &'a str,
    /// `Date` (`YYYY.MM.DD`).
    pub date: &'a str,
    /// `Round` (`r.b` for broadcasts).
    pub round: &'a str,
    /// `White`
    pub white: &'a str,
    /// `Black`
    pub black: &'a str,
    /// `Board` (the board number in the round).
    pub board: Option<&'a str>,
    /// `TimeControl`; when `None`, [`GameText::time_control`] is written.
    pub time_control: Option<&'a str>,
    /// `UTCDate` of the game start.
    pub utc_date: Option<&'a str>,
    /// `UTCTime` of the game start.
    pub utc_time: Option<&'a str>,
    /// `Mode` (`OTB`).
    pub mode: Option<&'a str>,
}

impl Default for PgnHeader<'_> {
    fn default() -> Self {
        PgnHeader {
            event: "?",
            site: "?",
            date: "????.??.??",
            round: "?",
            white: "?",
            black: "?",
            board: None,
            time_control: None,
            utc_date: None,
            utc_time: None,
            mode: Some("OTB"),
        }
    }
}

/// What a game's record knows beyond its moves: start, result, clocks, extra tags.
#[derive(Clone, Copy, Debug)]
pub struct GameText<'a> {
    /// The start position: the first move's number and colour, and the `FEN` tag.
    pub start: &'a Chess,
    /// Writes `SetUp "1"` and `FEN` (the game did not start from the standard position).
    pub set_up: bool,
    /// `Variant` (`Chess960`), if any.
    pub variant: Option<&'a str>,
    /// The result; `None` while the game goes on (`*`).
    pub result: Option<GameResult>,
    /// `Termination` (`normal`, `time forfeit`, `Unplayed`), once over. An unplayed game
    /// (a forfeit) is written without its moves: none of them counts.
    pub termination: Option<&'a str>,
    /// `TimeControl` when the header gives none.
    pub time_control: Option<TimeControl>,
    /// Each colour's time at the start (White, Black), seconds: `WhiteClock`/`BlackClock`.
    pub initial_clocks: [Option<u32>; 2],
    /// The clocks now, for the live `Clock` tag (`W/1:34:56`); `None` writes no tag.
    pub live_clock: Option<ClockState>,
    /// More tags (name, value): players' titles and FIDE ids, `GameId`... Written among the
    /// writer's own in ASCII order by name. Names must be letters, digits and `_`, and not
    /// a roster or an own tag name given a value; others are left out.
    pub extra_tags: &'a [(&'a str, &'a str)],
}

impl<'a> GameText<'a> {
    /// A game from `start` with nothing else known yet.
    pub fn new(start: &'a Chess) -> Self {
        GameText {
            start,
            set_up: false,
            variant: None,
            result: None,
            termination: None,
            time_control: None,
            initial_clocks: [None; 2],
            live_clock: None,
            extra_tags: &[],
        }
    }
}

/// One ply as written: its SAN (any `Display`: a [`SanPlus`] or journaled text) and its
/// clock comment values.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct PgnPly<S> {
    /// The move in SAN, with its check suffix.
    pub san: S,
    /// The mover's clock after the move, seconds (`%clk`).
    pub clk: Option<u32>,
    /// Time spent on the move, seconds (`%emt`).
    pub emt: Option<u32>,
}

/// Writes a tag value with `\` and `"` escaped and control characters as spaces.
struct Escaped<'a>(&'a str);

impl fmt::Display for Escaped<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for c in self.0.chars() {
            match c {
                '\\' => f.write_str("\\\\")?,
                '"' => f.write_str("\\\"")?,
                c if c.is_control() => f.write_char(' ')?,
                c => f.write_char(c)?,
            }
        }
        Ok(())
    }
}

fn tag<W: Write>(w: &mut W, name: &str, value: impl fmt::Display) -> fmt::Result {
    writeln!(w, "[{name} \"{value}\"]")
}

fn valid_tag_name(name: &str) -> bool {
    !name.is_empty() && name.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'_')
}

/// The Seven Tag Roster, in its order (standard 8.1.1).
pub const SEVEN_TAG_ROSTER: [&str; 7] = ["Event", "Site", "Date", "Round", "White", "Black", "Result"];

/// A tag value as the writer holds it until its turn comes.
enum Value<'a> {
    /// Caller's text, escaped.
    Text(&'a str),
    /// The writer's own text, written as is.
    Plain(&'a str),
    /// `h:mm:ss`.
    Hms(u32),
    /// A count.
    Count(usize),
    /// A time control in the standard's form.
    Tc(TimeControl),
    /// The start position's FEN.
    Fen(&'a Chess),
    /// The live clock (`W/1:34:56`).
    Clock(heapless::String<24>),
}

impl fmt::Display for Value<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Value::Text(s) => Escaped(s).fmt(f),
            Value::Plain(s) => f.write_str(s),
            Value::Hms(t) => Hms(*t).fmt(f),
            Value::Count(n) => n.fmt(f),
            Value::Tc(tc) => tc.fmt(f),
            Value::Fen(pos) => Fen::from_position(*pos, EnPassantMode::Legal).fmt(f),
            Value::Clock(s) => f.write_str(s),
        }
    }
}

/// Writes the tags after the roster in ASCII order by tag name (standard 8.1.1), without
/// allocating: each round picks the smallest name above the last one written, so a name
/// given twice is written once (the writer's own tags first, then `extra` in its order).
fn write_sorted_tags<W: Write>(
    w: &mut W,
    own: &[Option<(&str, Value<'_>)>],
    extra: &[(&str, &str)],
) -> fmt::Result {
    let extra = extra.iter().filter(|(n, _)| valid_tag_name(n) && !SEVEN_TAG_ROSTER.contains(n));
    let mut last: Option<&str> = None;
    loop {
        let mut best: Option<(&str, Either<'_, '_>)> = None;
        let own = own.iter().flatten().map(|(n, v)| (*n, Either::Own(v)));
        for (name, value) in own.chain(extra.clone().map(|(n, v)| (*n, Either::Extra(v)))) {
            if last.is_some_and(|l| name <= l) {
                continue;
            }
            if best.as_ref().is_none_or(|(b, _)| name < *b) {
                best = Some((name, value));
            }
        }
        let Some((name, value)) = best else { return Ok(()) };
        match value {
            Either::Own(v) => tag(w, name, v)?,
            Either::Extra(v) => tag(w, name, Escaped(v))?,
        }
        last = Some(name);
    }
}

/// A tag value of the writer's or of the caller's.
enum Either<'v, 'a> {
    Own(&'v Value<'a>),
    Extra(&'v str),
}

/// Writes the live `Clock` tag value: `W/1:34:56` while White's clock runs, `B/…` while
/// Black's does, `N/…` when stopped (the time of `to_move`). Writes nothing when that time
/// is unknown.
pub fn write_clock_value<W: Write>(clock: &ClockState, to_move: Color, w: &mut W) -> fmt::Result {
    let (letter, color) = match clock.running {
        Some(Color::White) => ('W', Color::White),
        Some(Color::Black) => ('B', Color::Black),
        None => ('N', to_move),
    };
    let t = match color {
        Color::White => clock.white,
        Color::Black => clock.black,
    };
    match t {
        Some(t) => write!(w, "{letter}/{}", Hms(t)),
        None => Ok(()),
    }
}

/// Writes tokens separated by spaces, breaking lines before they reach 80 characters.
struct Wrapper<'w, W: Write> {
    w: &'w mut W,
    col: usize,
}

/// Longest movetext line, in characters.
const MAX_LINE: usize = 79;

impl<W: Write> Wrapper<'_, W> {
    fn token(&mut self, t: &str) -> fmt::Result {
        let len = t.chars().count();
        if self.col > 0 && self.col + 1 + len > MAX_LINE {
            self.w.write_char('\n')?;
            self.col = 0;
        } else if self.col > 0 {
            self.w.write_char(' ')?;
            self.col += 1;
        }
        self.w.write_str(t)?;
        self.col += len;
        Ok(())
    }

    fn display(&mut self, d: impl fmt::Display) -> fmt::Result {
        let mut s: heapless::String<64> = heapless::String::new();
        write!(s, "{d}")?;
        self.token(&s)
    }
}

/// Writes one game in the export format: tags, a blank line, the movetext, a blank line.
///
/// Tags: the Seven Tag Roster first and in order, then every other tag in ASCII order by
/// tag name (standard 8.1.1). `TimeControl` is written whenever it is known, and as `?`
/// when it is not but a move carries `%clk` (2001 supplement, section 7).
///
/// `moves` are the plies from `game.start`, in order; their count is the `PlyCount` and,
/// with the start's side to move, says whose time a stopped live clock shows. The iterator
/// is cloned once to see whether any ply carries a clock.
pub fn write_game<W, I, S>(header: &PgnHeader<'_>, game: &GameText<'_>, moves: I, w: &mut W) -> fmt::Result
where
    W: Write,
    I: IntoIterator<Item = PgnPly<S>>,
    I::IntoIter: ExactSizeIterator + Clone,
    S: fmt::Display,
{
    let over = game.result.is_some();
    let unplayed = over && game.termination == Some(UNPLAYED);
    let moves = moves.into_iter().take(if unplayed { 0 } else { usize::MAX });
    let plies = moves.len();
    let result = game.result.map_or("*", GameResult::as_pgn);
    let roster = [header.event, header.site, header.date, header.round, header.white, header.black];
    for (name, value) in SEVEN_TAG_ROSTER.iter().zip(roster) {
        tag(w, name, Escaped(value))?;
    }
    tag(w, "Result", result)?;
    let time_control = match (header.time_control, game.time_control) {
        (Some(tc), _) => Some(Value::Text(tc)),
        (None, Some(tc)) => Some(Value::Tc(tc)),
        (None, None) if moves.clone().any(|p| p.clk.is_some()) => Some(Value::Plain("?")),
        (None, None) => None,
    };
    let mut clock: heapless::String<24> = heapless::String::new();
    if game.result.is_none()
        && let Some(c) = &game.live_clock
    {
        let to_move = if plies.is_multiple_of(2) { game.start.turn() } else { !game.start.turn() };
        write_clock_value(c, to_move, &mut clock)?;
    }
    let own = [
        header.board.map(|b| ("Board", Value::Text(b))),
        time_control.map(|tc| ("TimeControl", tc)),
        game.initial_clocks[0].map(|t| ("WhiteClock", Value::Hms(t))),
        game.initial_clocks[1].map(|t| ("BlackClock", Value::Hms(t))),
        (!clock.is_empty()).then(|| ("Clock", Value::Clock(clock))),
        header.utc_date.map(|d| ("UTCDate", Value::Text(d))),
        header.utc_time.map(|t| ("UTCTime", Value::Text(t))),
        header.mode.map(|m| ("Mode", Value::Text(m))),
        game.variant.map(|v| ("Variant", Value::Text(v))),
        game.set_up.then_some(("SetUp", Value::Plain("1"))),
        game.set_up.then_some(("FEN", Value::Fen(game.start))),
        game.termination.filter(|_| over).map(|t| ("Termination", Value::Text(t))),
        Some(("PlyCount", Value::Count(plies))),
    ];
    write_sorted_tags(w, &own, game.extra_tags)?;
    w.write_char('\n')?;
    write_movetext(game.start, moves, game.result, w)?;
    w.write_str("\n\n")
}

/// Writes the movetext alone (plies from `start`, one comment per ply, the termination
/// marker: the result, or `*` for an arbiter's score the standard has no marker for)
/// wrapped under 80 characters, without a trailing newline.
pub fn write_movetext<W, I, S>(start: &Chess, moves: I, result: Option<GameResult>, w: &mut W) -> fmt::Result
where
    W: Write,
    I: IntoIterator<Item = PgnPly<S>>,
    S: fmt::Display,
{
    let mut out = Wrapper { w, col: 0 };
    let mut number = start.fullmoves().get();
    let mut turn = start.turn();
    let mut need_number = true;
    for ply in moves {
        match turn {
            Color::White => out.display(format_args!("{number}."))?,
            Color::Black if need_number => out.display(format_args!("{number}..."))?,
            Color::Black => {}
        }
        out.display(&ply.san)?;
        // After a comment, Black's move carries its number again.
        need_number = true;
        match (ply.clk, ply.emt) {
            (Some(c), Some(e)) => out.display(format_args!("{{[%clk {}] [%emt {}]}}", Hms(c), Hms(e)))?,
            (Some(c), None) => out.display(format_args!("{{[%clk {}]}}", Hms(c)))?,
            (None, Some(e)) => out.display(format_args!("{{[%emt {}]}}", Hms(e)))?,
            (None, None) => need_number = false,
        }
        if turn == Color::Black {
            number += 1;
        }
        turn = !turn;
    }
    out.token(result.map_or("*", GameResult::movetext_marker))
}

/// The confirmed plies of a tracker, replayed from its start position.
#[derive(Clone)]
struct ConfirmedPlies<'t, const PLIES: usize> {
    tracker: &'t Tracker<PLIES>,
    pos: Chess,
    next: usize,
    end: usize,
}

impl<const PLIES: usize> Iterator for ConfirmedPlies<'_, PLIES> {
    type Item = PgnPly<SanPlus>;

    fn next(&mut self) -> Option<Self::Item> {
        if self.next >= self.end {
            return None;
        }
        let rec = self.tracker.records[self.next];
        let Some(m) = rec.to_move(&self.pos) else {
            self.end = self.next;
            return None;
        };
        self.next += 1;
        Some(PgnPly {
            san: SanPlus::from_move_and_play_unchecked(&mut self.pos, m),
            clk: rec.clk(),
            emt: rec.emt(),
        })
    }

    fn size_hint(&self) -> (usize, Option<usize>) {
        let n = self.end - self.next;
        (n, Some(n))
    }
}

impl<const PLIES: usize> ExactSizeIterator for ConfirmedPlies<'_, PLIES> {}

impl<const PLIES: usize> Tracker<PLIES> {
    fn confirmed_plies(&self) -> ConfirmedPlies<'_, PLIES> {
        ConfirmedPlies { tracker: self, pos: self.start.clone(), next: 0, end: self.confirmed }
    }

    /// Writes the game (confirmed moves only) with [`write_game`]: the tracker supplies the
    /// start position, result, `Termination`, configured time control, start clocks and
    /// (while the game runs) the live `Clock`.
    pub fn write_pgn<W: Write>(&self, header: &PgnHeader<'_>, w: &mut W) -> fmt::Result {
        let game = GameText {
            start: &self.start,
            set_up: self.kind != StartKind::Standard,
            variant: matches!(self.kind, StartKind::Chess960(_)).then_some("Chess960"),
            result: self.result.map(|(r, _)| r),
            termination: self.result.map(|(_, reason)| reason.termination()),
            time_control: self.config.time_control.or_else(|| self.inferred_time_control()),
            initial_clocks: self.clocks.initial,
            live_clock: (self.state == GameState::Active && self.clocks.last.is_some())
                .then(|| self.clocks()),
            extra_tags: &[],
        };
        write_game(header, &game, self.confirmed_plies(), w)
    }

    /// The time control the clock showed, when none is configured: both sides' starting
    /// time (the same for both) and the increment seen at presses (`300+3`). `None` before
    /// the clock was read or pressed.
    pub fn inferred_time_control(&self) -> Option<TimeControl> {
        let [Some(white), Some(black)] = self.clocks.initial else { return None };
        if white != black || white == 0 || self.clocks.presses == 0 {
            return None;
        }
        Some(TimeControl::fischer(white, self.clocks.increment(&self.config, 1)))
    }

    /// Writes the movetext (confirmed moves, comments, result) wrapped under 80 characters,
    /// without a trailing newline.
    pub fn write_movetext<W: Write>(&self, w: &mut W) -> fmt::Result {
        write_movetext(&self.start, self.confirmed_plies(), self.result.map(|(r, _)| r), w)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn tags(text: &str) -> heapless::Vec<&str, 32> {
        text.lines().filter_map(|l| l.strip_prefix('[')).filter_map(|l| l.split(' ').next()).collect()
    }

    #[test]
    fn tags_after_the_roster_are_in_ascii_order_once_each() {
        let start = Chess::default();
        let extra = [
            ("WhiteFideId", "1"),
            ("Annotator", "x"),
            ("Board", "99"),
            ("Event", "dup"),
            ("bad name", "x"),
            ("ZZ", "\"q\""),
            ("Annotator", "second"),
        ];
        let game = GameText { extra_tags: &extra, ..GameText::new(&start) };
        let header = PgnHeader { board: Some("4"), ..PgnHeader::default() };
        let plies = [PgnPly { san: "e4", clk: Some(10), emt: None }];
        let mut out: heapless::String<1024> = heapless::String::new();
        write_game(&header, &game, plies, &mut out).unwrap();
        assert_eq!(
            &tags(&out)[..],
            [
                "Event",
                "Site",
                "Date",
                "Round",
                "White",
                "Black",
                "Result",
                "Annotator",
                "Board",
                "Mode",
                "PlyCount",
                "TimeControl",
                "WhiteFideId",
                "ZZ"
            ]
        );
        // The writer's own tag wins over an extra of the same name, the first extra over a
        // later one; values are escaped; an unknown time control with %clk is `?`.
        assert!(out.contains("[Board \"4\"]\n"));
        assert!(out.contains("[Annotator \"x\"]\n"));
        assert!(out.contains("[ZZ \"\\\"q\\\"\"]\n"));
        assert!(out.contains("[TimeControl \"?\"]\n"));
        assert!(out.ends_with("\n\n1. e4 {[%clk 0:00:10]} *\n\n"), "{out}");
    }

    fn game_with(result: GameResult, termination: Option<&str>) -> heapless::String<1024> {
        let start = Chess::default();
        let game = GameText { result: Some(result), termination, ..GameText::new(&start) };
        let plies = [PgnPly { san: "e4", clk: None, emt: None }, PgnPly { san: "e5", clk: None, emt: None }];
        let mut out = heapless::String::new();
        write_game(&PgnHeader::default(), &game, plies, &mut out).unwrap();
        out
    }

    #[test]
    fn arbiter_scores_are_in_the_result_tag_and_the_movetext_ends_with_a_star() {
        for (result, tag) in [
            (GameResult::BothLose, "0-0"),
            (GameResult::WhiteHalf, "1/2-0"),
            (GameResult::BlackHalf, "0-1/2"),
        ] {
            let out = game_with(result, Some("normal"));
            let tag_line = out.lines().find(|l| l.starts_with("[Result "));
            assert_eq!(tag_line.and_then(|l| l.split('"').nth(1)), Some(tag), "{out}");
            assert!(out.ends_with("\n\n1. e4 e5 *\n\n"), "{out}");
        }
        let out = game_with(GameResult::Draw, Some("normal"));
        assert!(out.ends_with("1. e4 e5 1/2-1/2\n\n"), "{out}");
    }

    #[test]
    fn an_unplayed_game_has_no_moves() {
        let out = game_with(GameResult::WhiteWins, Some(UNPLAYED));
        assert!(out.contains("[Termination \"Unplayed\"]\n"), "{out}");
        assert!(out.contains("[PlyCount \"0\"]\n"), "{out}");
        assert!(out.ends_with("\n\n1-0\n\n"), "{out}");
        let out = game_with(GameResult::BothLose, Some(UNPLAYED));
        assert!(out.contains("[Result \"0-0\"]\n"), "{out}");
        assert!(out.ends_with("\n\n*\n\n"), "{out}");
    }
}
