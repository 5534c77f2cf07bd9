//! The PGN writer: export format, streamed into any `core::fmt::Write`, no allocation.

use core::fmt::{self, Write};

use shakmaty::{Color, EnPassantMode, Position, fen::Fen, san::SanPlus};

use crate::event::StartKind;
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
    /// `TimeControl`; when `None`, the tracker's configured time control is written.
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

impl<const PLIES: usize> Tracker<PLIES> {
    /// Writes the game (confirmed moves only) as an export-format PGN: the seven tag roster,
    /// then `Board`, `TimeControl`, `WhiteClock`/`BlackClock`, `Clock` while live,
    /// `UTCDate`/`UTCTime`, `Mode`, `FEN`/`SetUp`, `Termination`, `PlyCount`; one
    /// `{[%clk …] [%emt …]}` comment per move; lines under 80 characters; a blank line
    /// after the tags and after the game.
    pub fn write_pgn<W: Write>(&self, header: &PgnHeader<'_>, w: &mut W) -> fmt::Result {
        let result = self.result.map_or("*", |(r, _)| r.as_pgn());
        tag(w, "Event", Escaped(header.event))?;
        tag(w, "Site", Escaped(header.site))?;
        tag(w, "Date", Escaped(header.date))?;
        tag(w, "Round", Escaped(header.round))?;
        tag(w, "White", Escaped(header.white))?;
        tag(w, "Black", Escaped(header.black))?;
        tag(w, "Result", result)?;
        if let Some(b) = header.board {
            tag(w, "Board", Escaped(b))?;
        }
        match (header.time_control, self.config.time_control) {
            (Some(tc), _) => tag(w, "TimeControl", Escaped(tc))?,
            (None, Some(tc)) => tag(w, "TimeControl", tc)?,
            (None, None) => {}
        }
        if let Some(t) = self.clocks.initial[0] {
            tag(w, "WhiteClock", Hms(t))?;
        }
        if let Some(t) = self.clocks.initial[1] {
            tag(w, "BlackClock", Hms(t))?;
        }
        if self.state == GameState::Active && self.clocks.last.is_some() {
            let mut s: heapless::String<16> = heapless::String::new();
            self.write_clock_tag(&mut s)?;
            tag(w, "Clock", s.as_str())?;
        }
        if let Some(d) = header.utc_date {
            tag(w, "UTCDate", Escaped(d))?;
        }
        if let Some(t) = header.utc_time {
            tag(w, "UTCTime", Escaped(t))?;
        }
        if let Some(m) = header.mode {
            tag(w, "Mode", Escaped(m))?;
        }
        if let StartKind::Chess960(_) = self.kind {
            tag(w, "Variant", "Chess960")?;
        }
        if self.kind != StartKind::Standard {
            tag(w, "FEN", Fen::from_position(&self.start, EnPassantMode::Legal))?;
            tag(w, "SetUp", "1")?;
        }
        if let Some((_, reason)) = self.result {
            tag(w, "Termination", reason.termination())?;
        }
        tag(w, "PlyCount", self.confirmed)?;
        w.write_char('\n')?;
        self.write_movetext(w)?;
        w.write_str("\n\n")
    }

    /// Writes the movetext (confirmed moves, comments, result) wrapped under 80 characters,
    /// without a trailing newline.
    pub fn write_movetext<W: Write>(&self, w: &mut W) -> fmt::Result {
        let mut out = Wrapper { w, col: 0 };
        let mut pos = self.start.clone();
        let mut need_number = true;
        for rec in self.records.iter().take(self.confirmed) {
            let Some(m) = rec.to_move(&pos) else { break };
            let n = pos.fullmoves().get();
            match pos.turn() {
                Color::White => out.display(format_args!("{n}."))?,
                Color::Black if need_number => out.display(format_args!("{n}..."))?,
                Color::Black => {}
            }
            out.display(SanPlus::from_move_and_play_unchecked(&mut pos, m))?;
            need_number = false;
            match (rec.clk(), rec.emt()) {
                (Some(c), Some(e)) => out.display(format_args!("{{[%clk {}] [%emt {}]}}", Hms(c), Hms(e)))?,
                (Some(c), None) => out.display(format_args!("{{[%clk {}]}}", Hms(c)))?,
                (None, Some(e)) => out.display(format_args!("{{[%emt {}]}}", Hms(e)))?,
                (None, None) => continue,
            }
            // After a comment, Black's move carries its number again.
            need_number = true;
        }
        out.token(self.result.map_or("*", |(r, _)| r.as_pgn()))
    }
}
