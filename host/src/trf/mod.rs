//! Pairings from a FIDE Tournament Report File (TRF-16), as Swiss-Manager, Vega, JaVaFo and
//! bbpPairings write it.
//!
//! A report has one `001` line per player, in fixed columns (1-based, FIDE handbook C.04
//! Annex 2): start rank 5-8, sex 10, title 11-13, name 15-47, FIDE rating 49-52, federation
//! 54-56, FIDE number 58-68, birth date 70-79, points 81-84, rank 86-89; then for round `r`
//! a block of ten columns from `92 + 10 (r - 1)`: the opponent's start rank (four columns,
//! `0000` for none), the colour (`w`, `b`, `-`) two columns after, the result two after
//! that (`1 = 0 + - W D L H F U Z`, blank while the game is unplayed). Lines may end with
//! CR (the format's own rule), CR LF or LF. Other line types are kept out of the way.
//!
//! A round's pairings are the pairs whose white player's round column names the black
//! player, and the other way round. Their board order is the one pairing programs publish
//! (FIDE C.04.2; bbpPairings' `sortResults`): the higher-placed player's score before the
//! round, highest first; then the other player's score; then the higher-placed player's
//! start rank, lowest first; where a pair's higher-placed player is the one with more
//! points, or the smaller start rank among equals. Byes have no board.

mod columns;
mod error;
pub mod v26;

use std::fmt;

pub use error::{Trf26ErrorKind, TrfError, TrfErrorKind};

use crate::invalid::Invalid;
use crate::tournament::{MAX_TEXT, Pairing, Player};
use columns::{field, number};

/// The largest report read (bytes).
pub const MAX_TRF_BYTES: usize = 4 << 20;

/// A player's colour in a round.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Colour {
    /// `w`
    White,
    /// `b`
    Black,
}

/// One round's columns of a player.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct RoundEntry {
    /// The opponent's start rank; `None` for `0000` or blank (a bye, not paired).
    pub opponent: Option<u32>,
    /// The scheduled colour; `None` for `-` or blank.
    pub colour: Option<Colour>,
    /// The result code, `None` while unplayed.
    pub result: Option<char>,
}

impl RoundEntry {
    /// Points the result is worth (byes as the format's defaults: `H` a half, `F` and `U`
    /// a win, `Z` nothing), in half points.
    pub fn half_points(&self) -> u32 {
        match self.result {
            Some('1' | '+' | 'W' | 'F' | 'U') => 2,
            Some('=' | 'D' | 'H') => 1,
            _ => 0,
        }
    }
}

/// A player of the report.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct TrfPlayer {
    /// Start rank (pairing number), 1..=9999.
    pub start_rank: u32,
    /// `m` or `w`/`f`, if given.
    pub sex: Option<char>,
    /// FIDE title (`GM`, `WIM`...), if any.
    pub title: Option<String>,
    /// "Lastname, Firstname".
    pub name: String,
    /// FIDE rating, if rated.
    pub rating: Option<u32>,
    /// FIDE federation (`NOR`), if given.
    pub federation: Option<String>,
    /// FIDE id, if known.
    pub fide_id: Option<u64>,
    /// Tournament points as written (`10.5`).
    pub points: Option<String>,
    /// Round columns, round 1 first.
    pub rounds: Vec<RoundEntry>,
    /// The line it is on.
    pub line: usize,
    /// The line's length, characters.
    pub columns: usize,
}

impl TrfPlayer {
    /// The player as the relay's pairing holds it.
    pub fn to_player(&self) -> Player {
        Player {
            name: self.name.clone(),
            fide_id: self.fide_id,
            title: self.title.clone(),
            elo: self.rating,
            federation: self.federation.clone(),
            team: None,
        }
    }

    /// Half points scored in the rounds before `round`.
    pub fn half_points_before(&self, round: u32) -> u32 {
        self.rounds.iter().take(round.saturating_sub(1) as usize).map(RoundEntry::half_points).sum()
    }

    fn round(&self, round: u32) -> Option<&RoundEntry> {
        self.rounds.get((round as usize).checked_sub(1)?)
    }
}

/// A read report.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Trf {
    /// Tournament name (`012`), if given.
    pub name: Option<String>,
    /// City (`022`), if given.
    pub city: Option<String>,
    /// Start date (`042`), as written (`2026/11/27`), if given.
    pub start_date: Option<String>,
    /// End date (`052`), as written, if given.
    pub end_date: Option<String>,
    /// Players by start rank.
    pub players: Vec<TrfPlayer>,
    /// The TRF-26 records: time control, tie-breaks, teams.
    pub trf26: v26::Trf26,
}

/// One board of a round.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct BoardPairing {
    /// Board number, from 1.
    pub board: u32,
    /// White's start rank.
    pub white_rank: u32,
    /// Black's start rank.
    pub black_rank: u32,
    /// The players.
    pub pairing: Pairing,
}

/// The characters of Windows-1252 at bytes 0x80..=0x9F (the rest of its upper half is
/// Latin-1); `None` where it has none.
const CP1252_HIGH: [Option<char>; 32] = [
    Some('€'),
    None,
    Some('‚'),
    Some('ƒ'),
    Some('„'),
    Some('…'),
    Some('†'),
    Some('‡'),
    Some('ˆ'),
    Some('‰'),
    Some('Š'),
    Some('‹'),
    Some('Œ'),
    None,
    Some('Ž'),
    None,
    None,
    Some('‘'),
    Some('’'),
    Some('“'),
    Some('”'),
    Some('•'),
    Some('–'),
    Some('—'),
    Some('˜'),
    Some('™'),
    Some('š'),
    Some('›'),
    Some('œ'),
    None,
    Some('ž'),
    Some('Ÿ'),
];

/// A report's text: UTF-8 when it is valid UTF-8, else Windows-1252, the encoding of the
/// pairing programs that do not write UTF-8 (Swiss-Manager, Vega). A byte Windows-1252
/// leaves undefined is refused with its line and column.
pub fn decode(bytes: &[u8]) -> Result<std::borrow::Cow<'_, str>, TrfError> {
    if let Ok(text) = std::str::from_utf8(bytes) {
        return Ok(std::borrow::Cow::Borrowed(text));
    }
    let mut out = String::with_capacity(bytes.len() + bytes.len() / 8);
    let (mut line, mut column) = (1, 0);
    let mut previous = 0u8;
    for &b in bytes {
        column += 1;
        let c = match b {
            0x80..=0x9F => CP1252_HIGH[usize::from(b - 0x80)].ok_or(TrfError {
                line,
                column,
                kind: TrfErrorKind::File(format!(
                    "byte 0x{b:02X} is neither UTF-8 nor Windows-1252 (not a text file?)"
                )),
            })?,
            _ => char::from(b),
        };
        // CR, LF and CR LF each end one line.
        if b == b'\r' || (b == b'\n' && previous != b'\r') {
            line += 1;
        }
        if b == b'\r' || b == b'\n' {
            column = 0;
        }
        previous = b;
        out.push(c);
    }
    Ok(std::borrow::Cow::Owned(out))
}

impl Trf {
    /// Reads a report given as bytes, in UTF-8 or Windows-1252 (see [`decode`]).
    pub fn parse_bytes(bytes: &[u8]) -> Result<Trf, TrfError> {
        if bytes.len() > MAX_TRF_BYTES {
            let m = format!("the file is over {MAX_TRF_BYTES} bytes");
            return Err(TrfError { line: 0, column: 0, kind: TrfErrorKind::File(m) });
        }
        Trf::parse(&decode(bytes)?)
    }

    /// Reads a report.
    pub fn parse(text: &str) -> Result<Trf, TrfError> {
        let file_err = |m: &str| TrfError { line: 0, column: 0, kind: TrfErrorKind::File(m.to_owned()) };
        if text.len() > MAX_TRF_BYTES {
            return Err(file_err(&format!("the file is over {MAX_TRF_BYTES} bytes")));
        }
        let mut trf = Trf::default();
        // CR alone (the format's rule), CR LF and LF all end a line.
        let text = text.strip_prefix('\u{feff}').unwrap_or(text);
        let text = text.replace("\r\n", "\n");
        let lines = text.split(['\n', '\r']);
        for (i, raw) in lines.enumerate() {
            let line = i + 1;
            let chars: Vec<char> = raw.chars().collect();
            if let Some(c) = chars.iter().position(|c| c.is_control() && *c != '\t') {
                return Err(TrfError {
                    line,
                    column: c + 1,
                    kind: TrfErrorKind::File("a control character (not a text file?)".into()),
                });
            }
            let kind = field(&chars, 1, 3);
            match kind.as_str() {
                "001" => trf.players.push(read_player(&chars, line)?),
                "012" => trf.name = Some(field(&chars, 5, chars.len())).filter(|s| !s.is_empty()),
                "022" => trf.city = Some(field(&chars, 5, chars.len())).filter(|s| !s.is_empty()),
                "042" => trf.start_date = Some(field(&chars, 5, chars.len())).filter(|s| !s.is_empty()),
                "052" => trf.end_date = Some(field(&chars, 5, chars.len())).filter(|s| !s.is_empty()),
                other => {
                    trf.trf26.read_line(other, &chars, line)?;
                }
            }
        }
        if trf.players.is_empty() {
            return Err(file_err("no player line (001) in the file"));
        }
        trf.players.sort_by_key(|p| p.start_rank);
        for w in trf.players.windows(2) {
            if w[0].start_rank == w[1].start_rank {
                return Err(TrfError {
                    line: w[1].line.max(w[0].line),
                    column: 5,
                    kind: TrfErrorKind::DuplicateRank(w[1].start_rank),
                });
            }
        }
        let ranks: Vec<u32> = trf.players.iter().map(|p| p.start_rank).collect();
        trf.trf26.finish(|rank| ranks.binary_search(&rank).is_ok())?;
        for p in &trf.players {
            for (r, e) in p.rounds.iter().enumerate() {
                if let Some(o) = e.opponent
                    && trf.player(o).is_none()
                {
                    return Err(TrfError {
                        line: p.line,
                        column: 92 + 10 * r,
                        kind: TrfErrorKind::UnknownOpponent(o),
                    });
                }
            }
        }
        Ok(trf)
    }

    /// The player with this start rank.
    pub fn player(&self, start_rank: u32) -> Option<&TrfPlayer> {
        self.players.binary_search_by_key(&start_rank, |p| p.start_rank).ok().map(|i| &self.players[i])
    }

    /// The rounds that have at least one pairing.
    pub fn rounds(&self) -> u32 {
        self.players
            .iter()
            .filter_map(|p| p.rounds.iter().rposition(|e| e.opponent.is_some()))
            .max()
            .map_or(0, |r| r as u32 + 1)
    }

    /// Round `round`'s boards in the order pairing programs publish them (module docs).
    pub fn pairings(&self, round: u32) -> Result<Vec<BoardPairing>, TrfError> {
        let mut pairs: Vec<(&TrfPlayer, &TrfPlayer)> = Vec::new();
        let column = 92 + 10 * (round as usize).saturating_sub(1);
        for p in &self.players {
            let Some(e) = p.round(round) else { continue };
            let Some(o) = e.opponent else { continue };
            let inconsistent = || TrfError {
                line: p.line,
                column,
                kind: TrfErrorKind::Inconsistent { round, player: p.start_rank, opponent: o },
            };
            let opp = self.player(o).ok_or_else(inconsistent)?;
            // The opponent's line is the one at fault when it ends before this round.
            let back = opp.round(round).copied().ok_or(TrfError {
                line: opp.line,
                column: opp.columns + 1,
                kind: TrfErrorKind::Truncated(round),
            })?;
            if back.opponent != Some(p.start_rank) {
                return Err(inconsistent());
            }
            match (e.colour, back.colour) {
                (Some(Colour::White), Some(Colour::Black)) => pairs.push((p, opp)),
                (Some(Colour::Black), Some(Colour::White)) => {}
                _ => return Err(inconsistent()),
            }
        }
        if pairs.is_empty() {
            // No line is at fault: the report has no such round.
            return Err(TrfError { line: 0, column: 0, kind: TrfErrorKind::NoSuchRound(round) });
        }
        // (score, start rank): the higher-placed player has more points, then the smaller rank.
        let place = |p: &TrfPlayer| (std::cmp::Reverse(p.half_points_before(round)), p.start_rank);
        pairs.sort_by_key(|(w, b)| {
            let (hi, lo) = if place(w) <= place(b) { (w, b) } else { (b, w) };
            (
                std::cmp::Reverse(hi.half_points_before(round)),
                std::cmp::Reverse(lo.half_points_before(round)),
                hi.start_rank,
            )
        });
        let mut out = Vec::with_capacity(pairs.len());
        for (i, (w, b)) in pairs.into_iter().enumerate() {
            let player = |p: &TrfPlayer| Player {
                team: self.trf26.team_of(p.start_rank).map(|t| t.name.clone()),
                ..p.to_player()
            };
            let pairing = Pairing { white: player(w), black: player(b) };
            for p in [w, b] {
                p.to_player().check().map_err(|m| TrfError {
                    line: p.line,
                    column: 15,
                    kind: TrfErrorKind::Invalid(m),
                })?;
            }
            out.push(BoardPairing {
                board: i as u32 + 1,
                white_rank: w.start_rank,
                black_rank: b.start_rank,
                pairing,
            });
        }
        Ok(out)
    }
}

fn read_player(chars: &[char], line: usize) -> Result<TrfPlayer, TrfError> {
    let start_rank: u32 = number(chars, line, (5, 8), "start rank")?.ok_or(TrfError {
        line,
        column: 5,
        kind: TrfErrorKind::NotANumber { field: "start rank", value: String::new() },
    })?;
    let name = field(chars, 15, 47);
    if name.chars().count() > MAX_TEXT {
        let too_long = Invalid::TooLong { what: "player name", max: MAX_TEXT };
        return Err(TrfError { line, column: 15, kind: TrfErrorKind::Invalid(too_long) });
    }
    let title = match field(chars, 11, 13).to_ascii_lowercase().as_str() {
        // Older reports abbreviate: g, m, f, c and the women's wg, wm, wf, wc.
        "g" => "GM".to_owned(),
        "m" => "IM".to_owned(),
        "f" => "FM".to_owned(),
        "c" => "CM".to_owned(),
        "wg" => "WGM".to_owned(),
        "wm" => "WIM".to_owned(),
        "wf" => "WFM".to_owned(),
        "wc" => "WCM".to_owned(),
        t => t.to_ascii_uppercase(),
    };
    let federation = field(chars, 54, 56);
    let mut p = TrfPlayer {
        start_rank,
        sex: chars.get(9).copied().filter(|c| !c.is_whitespace()),
        title: (!title.is_empty()).then_some(title),
        name,
        rating: number::<u32>(chars, line, (49, 52), "FIDE rating")?.filter(|&r| r > 0),
        federation: (!federation.is_empty()).then_some(federation),
        fide_id: number::<u64>(chars, line, (58, 68), "FIDE number")?.filter(|&id| id > 0),
        points: Some(field(chars, 81, 84)).filter(|s| !s.is_empty()),
        rounds: Vec::new(),
        line,
        columns: chars.len(),
    };
    let mut start = 92;
    while start <= chars.len() {
        let opponent: Option<u32> = number(chars, line, (start, start + 3), "opponent")?.filter(|&o| o > 0);
        if opponent.is_some() && chars.len() < start + 5 {
            // Cut within a round's columns: no colour for a named opponent.
            let round = (start - 92) / 10 + 1;
            return Err(TrfError {
                line,
                column: chars.len() + 1,
                kind: TrfErrorKind::Truncated(round as u32),
            });
        }
        let colour = match chars.get(start + 4).copied().unwrap_or(' ') {
            'w' | 'W' => Some(Colour::White),
            'b' | 'B' => Some(Colour::Black),
            '-' | ' ' => None,
            c => return Err(TrfError { line, column: start + 5, kind: TrfErrorKind::BadColour(c) }),
        };
        let result = match chars.get(start + 6).copied().unwrap_or(' ') {
            ' ' => None,
            c @ ('1' | '=' | '0' | '+' | '-' | 'W' | 'D' | 'L' | 'H' | 'F' | 'U' | 'Z') => Some(c),
            c => return Err(TrfError { line, column: start + 7, kind: TrfErrorKind::BadResult(c) }),
        };
        p.rounds.push(RoundEntry { opponent, colour, result });
        start += 10;
    }
    Ok(p)
}

impl fmt::Display for BoardPairing {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "board {}: {} - {}", self.board, self.pairing.white.name, self.pairing.black.name)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A line in the report's columns: rank, title, name, rating, federation, FIDE id,
    /// points, then round blocks.
    fn line(rank: u32, title: &str, name: &str, rating: u32, fed: &str, id: u64, rounds: &[&str]) -> String {
        let mut l = format!(
            "001 {rank:>4} m{title:<3} {name:<33} {rating:>4} {fed:<3} {id:>11} 1990/01/01  0.0 {rank:>4}"
        );
        for r in rounds {
            l.push_str("  ");
            l.push_str(r);
        }
        l
    }

    fn small() -> String {
        [
            "012 Club Open".to_owned(),
            line(1, "GM", "Carlsen, Magnus", 2837, "NOR", 1503014, &["   3 w 1", "   2 b  "]),
            line(2, "", "Doe, Jane", 1900, "ENG", 0, &["   4 b =", "   1 w  "]),
            line(3, "IM", "Roe, Richard", 2400, "USA", 2000001, &["   1 b 0", "   4 w  "]),
            line(4, "", "Poe, Edgar", 0, "", 0, &["   2 w =", "   3 b  "]),
        ]
        .join("\r")
    }

    #[test]
    fn players_and_a_round_in_board_order() {
        let trf = Trf::parse(&small()).unwrap();
        assert_eq!(trf.name.as_deref(), Some("Club Open"));
        let p = trf.player(1).unwrap();
        assert_eq!(
            (p.title.as_deref(), p.name.as_str(), p.rating, p.federation.as_deref(), p.fide_id),
            (Some("GM"), "Carlsen, Magnus", Some(2837), Some("NOR"), Some(1503014))
        );
        assert_eq!(trf.player(4).unwrap().rating, None);
        let old_style = small().replacen("mIM ", "mm  ", 1).replacen("mGM ", "mwg ", 1);
        let t = Trf::parse(&old_style).unwrap();
        assert_eq!(t.player(3).unwrap().title.as_deref(), Some("IM"));
        assert_eq!(t.player(1).unwrap().title.as_deref(), Some("WGM"));
        assert_eq!(trf.rounds(), 2);
        let r2 = trf.pairings(2).unwrap();
        // Before round 2: 1 has 1 point, 2 and 4 a half, 3 nothing. Board 1 is the pair of
        // the leader; board 2: 4 (a half) against 3.
        let order: Vec<(u32, u32)> = r2.iter().map(|b| (b.white_rank, b.black_rank)).collect();
        assert_eq!(order, [(2, 1), (3, 4)]);
        assert_eq!(r2[0].pairing.black.elo, Some(2837));
        let r1 = trf.pairings(1).unwrap();
        assert_eq!(r1.iter().map(|b| (b.white_rank, b.black_rank)).collect::<Vec<_>>(), [(1, 3), (4, 2)]);
        // Line endings: LF and CR LF too.
        assert_eq!(Trf::parse(&small().replace('\r', "\n")).unwrap(), trf);
        assert_eq!(Trf::parse(&small().replace('\r', "\r\n")).unwrap().pairings(2).unwrap(), r2);
    }

    #[test]
    fn bad_reports_name_line_and_column() {
        let cases = [
            (small().replacen("   3 w 1", "   3 x 1", 1), 2, 97, "colour 'x'"),
            (small().replacen("   3 w 1", "   3 w ?", 1), 2, 99, "result '?'"),
            (small().replacen("   3 w 1", "  3a w 1", 1), 2, 92, "opponent \"3a\""),
            (small().replacen("   3 w 1", "   9 w 1", 1), 2, 92, "opponent 9"),
            (small().replacen("001    2", "001    1", 1), 3, 5, "start rank 1 is given twice"),
            (small().replacen(" 2837 ", " 28x7 ", 1), 2, 49, "FIDE rating"),
            (small().replacen("   2 b  ", "   3 b  ", 1), 2, 102, "round 2"),
        ];
        for (text, line, column, what) in cases {
            let e = Trf::parse(&text).and_then(|t| t.pairings(2)).unwrap_err();
            assert_eq!((e.line, e.column), (line, column), "{what}: {e}");
            assert!(e.to_string().contains(what), "{what}: {e}");
            assert!(e.to_string().starts_with(&format!("TRF line {line}, column {column}: ")), "{e}");
        }
        // Faults of the report as a whole name no line or column.
        let e = Trf::parse(&small()).unwrap().pairings(3).unwrap_err();
        assert_eq!(e.kind, TrfErrorKind::NoSuchRound(3));
        assert_eq!(e.to_string(), "TRF report: round 3 has no pairings in this report");
        let e = Trf::parse("nothing here").unwrap_err();
        assert_eq!(e.to_string(), "TRF report: no player line (001) in the file");
        // CR LF is one line break: a fault on the third line is line 3.
        let crlf = small().replace('\r', "\r\n").replacen("   2 b  ", "   3 b  ", 1);
        let e = Trf::parse(&crlf).and_then(|t| t.pairings(2)).unwrap_err();
        assert_eq!(e.line, 2, "{e}");
        let e = Trf::parse(&small().replace('\r', "\r\n").replacen("001    2", "001    1", 1)).unwrap_err();
        assert_eq!(e.line, 3, "{e}");
    }

    #[test]
    fn the_event_name_and_dates_are_read() {
        let text = format!("042 2026/11/27\r\n052 2026/11/29\r\n{}", small().replace('\r', "\r\n"));
        let trf = Trf::parse(&text).unwrap();
        assert_eq!(trf.name.as_deref(), Some("Club Open"));
        assert_eq!(
            (trf.start_date.as_deref(), trf.end_date.as_deref()),
            (Some("2026/11/27"), Some("2026/11/29"))
        );
    }

    /// Issue 27, recipe 7: a report written in Windows-1252 reads as its letters; a byte
    /// that is in neither encoding is refused where it is; CR LF ends one line.
    #[test]
    fn a_windows_1252_report_reads_as_its_letters() {
        let text = small().replacen(&format!("{:<33}", "Doe, Jane"), &format!("{:<33}", "Müller, Jérôme"), 1);
        let text = text.replace('\r', "\r\n");
        let bytes: Vec<u8> = text
            .chars()
            .map(|c| match c {
                'ü' => 0xFC,
                'é' => 0xE9,
                'ô' => 0xF4,
                c => u8::try_from(u32::from(c)).unwrap(),
            })
            .collect();
        assert!(std::str::from_utf8(&bytes).is_err());
        let trf = Trf::parse_bytes(&bytes).unwrap();
        assert_eq!(trf.player(2).unwrap().name, "Müller, Jérôme");
        assert_eq!(trf, Trf::parse_bytes(text.as_bytes()).unwrap(), "the same report in UTF-8");
        assert_eq!(decode(&[b'a', 0x80, 0x9F]).unwrap(), "a€Ÿ");
        let mut bad = bytes.clone();
        let at = bad.iter().position(|b| *b == 0xFC).unwrap();
        bad[at] = 0x81;
        let e = Trf::parse_bytes(&bad).unwrap_err();
        assert_eq!((e.line, e.column), (3, 16), "{e}");
        assert!(e.to_string().contains("0x81"), "{e}");
        // Line numbers count CR LF once.
        let e = Trf::parse(&small().replacen("   3 w 1", "   3 x 1", 1).replace('\r', "\r\n")).unwrap_err();
        assert_eq!((e.line, e.column), (2, 97), "{e}");
    }

    /// Issue 27, recipe 7: names with bidirectional or zero-width characters are refused.
    #[test]
    fn names_with_invisible_format_characters_are_refused() {
        for (name, code) in
            [("Doe, \u{202E}enaJ", 0x202E), ("Doe,\u{200B} Jane", 0x200B), ("\u{2066}Doe", 0x2066)]
        {
            let text = small().replacen(&format!("{:<33}", "Doe, Jane"), &format!("{name:<33}"), 1);
            let e = Trf::parse(&text).unwrap().pairings(1).unwrap_err();
            assert_eq!((e.line, e.column), (3, 15), "{e}");
            assert_eq!(e.kind, TrfErrorKind::Invalid(Invalid::FormatCharacter { what: "player name", code }));
        }
    }

    /// Issue 27, recipe 7: a truncated player line is blamed, not its opponent's.
    #[test]
    fn a_truncated_player_line_is_blamed() {
        // Player 2 (line 3) cut after round 1: its round 2 opponent (1, line 2) names it.
        let cut = small().replacen("   4 b =  ", "   4 b =", 1).replacen("   1 w  ", "", 1);
        let e = Trf::parse(&cut).unwrap().pairings(2).unwrap_err();
        assert_eq!((e.line, e.kind.clone()), (3, TrfErrorKind::Truncated(2)), "{e}");
        // Cut within round 2's columns: the line itself.
        let cut = small().replacen("   1 w  ", "   1", 1);
        let e = Trf::parse(&cut).unwrap_err();
        assert_eq!((e.line, e.kind.clone()), (3, TrfErrorKind::Truncated(2)), "{e}");
    }
}
