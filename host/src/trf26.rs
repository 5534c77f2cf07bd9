//! What FIDE's Tournament Report File version 2026 (TRF-26, applied since 2025-09-01) adds
//! to TRF-16, read beside the player lines [`crate::trf`] reads (the `001` lines did not
//! change):
//!
//! - `222`, the encoded time control from column 5: periods `M/S`, `M/S+I`, `S`, `S+I`
//!   (moves, seconds, increment seconds) joined by `:` (`5400+30`, `40/6000+30:900+30`),
//!   or Armageddon's two sides `W300-B240`. It is the PGN standard's own form, so it becomes
//!   the games' `TimeControl` as it is.
//! - `202` and `212`, the tie-breaks used to break ties and to define the standings
//!   (comma-separated FIDE codes: `BH/C1,BH,SB`), kept for the round files.
//! - `310`, one line per team, replacing `013`: pairing number 5-7, name 9-40, nickname
//!   42-46, strength factor 48-53, match points 55-60, game points 62-67, rank 69-71, then
//!   the members' start ranks in four columns every five from 74 (74-77, 79-82 ... 139-142).
//!   `013` (name 5-36, members every five columns from 37) is still read when a report has
//!   no `310`.
//!
//! A report has no board numbers: board order stays the pairing program's (see
//! [`crate::trf`]). Every error names its line and column.

use dgt_core::{TimeControl, TimeControlError};

use crate::trf::{TrfError, TrfErrorKind};

/// The TRF-26 records of a report.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Trf26 {
    /// `222`, if given.
    pub time_control: Option<EncodedTimeControl>,
    /// `202`: the tie-breaks that break ties, in order.
    pub tie_breaks: Vec<String>,
    /// `212`: the tie-breaks that define the standings (`PTS` among them), in order.
    pub standings: Vec<String>,
    /// `310` lines (or `013` lines when there is no `310`), in file order.
    pub teams: Vec<Team>,
}

/// Tag `222`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum EncodedTimeControl {
    /// The same time control for both players.
    Both(TimeControl),
    /// Armageddon: White's and Black's (`W300-B240`).
    Armageddon {
        /// White's time control.
        white: TimeControl,
        /// Black's time control.
        black: TimeControl,
    },
}

impl EncodedTimeControl {
    /// The PGN `TimeControl` value. An Armageddon game has none the standard can write
    /// (each side has its own), so `None`: the clocks' `WhiteClock`/`BlackClock` say it.
    pub fn pgn(&self) -> Option<String> {
        match self {
            EncodedTimeControl::Both(tc) => Some(tc.to_string()),
            EncodedTimeControl::Armageddon { .. } => None,
        }
    }
}

/// A team of a team event.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Team {
    /// Team pairing number (`310` columns 5-7; the order of `013` lines).
    pub number: u32,
    /// Name (`WhiteTeam`/`BlackTeam`).
    pub name: String,
    /// Nickname (five letters), if given.
    pub nickname: Option<String>,
    /// Match points as written (`7.5`), if given.
    pub match_points: Option<String>,
    /// Game points as written, if given.
    pub game_points: Option<String>,
    /// Rank, if given.
    pub rank: Option<u32>,
    /// Members' start ranks, in the team's board order.
    pub members: Vec<u32>,
    /// The line it is on.
    pub line: usize,
    /// Read from a `013` line (phased out): dropped when the report also has `310` lines.
    pub legacy: bool,
}

/// What is wrong in a TRF-26 record.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum Trf26ErrorKind {
    /// `222` is not an encoded time control.
    #[error(
        "time control {value:?} (222) is not M/S, M/S+I, S or S+I periods joined by ':', or W..-B..: {reason}"
    )]
    TimeControl {
        /// The text.
        value: String,
        /// Why.
        reason: TimeControlError,
    },
    /// A tie-break list holds an empty or malformed code.
    #[error("tie-break {0:?} is not a FIDE tie-break code (letters, digits, / - .)")]
    TieBreak(String),
    /// A team line has no name.
    #[error("the team has no name")]
    NoTeamName,
    /// Two teams share a pairing number.
    #[error("team number {0} is given twice")]
    DuplicateTeam(u32),
    /// A team names a start rank no player has.
    #[error("team member {0} is not a player of this report")]
    UnknownMember(u32),
    /// A player is in two teams.
    #[error("player {0} is in two teams")]
    MemberTwice(u32),
}

fn err(line: usize, column: usize, kind: Trf26ErrorKind) -> TrfError {
    TrfError { line, column, kind: TrfErrorKind::Trf26(kind) }
}

/// Characters `from..=to` (1-based) of a line, trimmed; empty when the line is shorter.
fn field(chars: &[char], from: usize, to: usize) -> String {
    let end = to.min(chars.len());
    if from > end {
        return String::new();
    }
    chars[from - 1..end].iter().collect::<String>().trim().to_owned()
}

fn number(
    chars: &[char],
    line: usize,
    (from, to): (usize, usize),
    name: &'static str,
) -> Result<Option<u32>, TrfError> {
    let text = field(chars, from, to);
    if text.is_empty() {
        return Ok(None);
    }
    text.parse().map(Some).map_err(|_| TrfError {
        line,
        column: from,
        kind: TrfErrorKind::NotANumber { field: name, value: text },
    })
}

/// A points field (`1111.5`) as written, checked.
fn points(
    chars: &[char],
    line: usize,
    (from, to): (usize, usize),
    name: &'static str,
) -> Result<Option<String>, TrfError> {
    let text = field(chars, from, to);
    if text.is_empty() {
        return Ok(None);
    }
    match text.parse::<f64>() {
        Ok(p) if p >= 0.0 => Ok(Some(text)),
        _ => {
            Err(TrfError { line, column: from, kind: TrfErrorKind::NotANumber { field: name, value: text } })
        }
    }
}

impl Trf26 {
    /// Reads one line if it is a TRF-26 record (`kind` its first three characters);
    /// `Ok(false)` for other lines.
    pub fn read_line(&mut self, kind: &str, chars: &[char], line: usize) -> Result<bool, TrfError> {
        match kind {
            "222" => self.time_control = Some(time_control(chars, line)?),
            "202" => self.tie_breaks = tie_breaks(chars, line)?,
            "212" => self.standings = tie_breaks(chars, line)?,
            "310" => self.teams.push(team_310(chars, line)?),
            "013" => {
                let number = self.teams.iter().filter(|t| t.legacy).count() as u32 + 1;
                self.teams.push(team_013(chars, line, number)?);
            }
            _ => return Ok(false),
        }
        Ok(true)
    }

    /// Checks the teams against the players once the whole file is read (`is_player`: a
    /// start rank has a `001` line). `013` lines give way to `310` lines.
    pub fn finish(&mut self, is_player: impl Fn(u32) -> bool) -> Result<(), TrfError> {
        if self.teams.iter().any(|t| !t.legacy) {
            self.teams.retain(|t| !t.legacy);
        }
        let mut numbers = std::collections::BTreeSet::new();
        let mut members = std::collections::BTreeSet::new();
        for t in &self.teams {
            let number_column = if t.legacy { 1 } else { 5 };
            if !numbers.insert(t.number) {
                return Err(err(t.line, number_column, Trf26ErrorKind::DuplicateTeam(t.number)));
            }
            let first = if t.legacy { 37 } else { 74 };
            for (i, &m) in t.members.iter().enumerate() {
                let column = first + 5 * i;
                if !is_player(m) {
                    return Err(err(t.line, column, Trf26ErrorKind::UnknownMember(m)));
                }
                if !members.insert(m) {
                    return Err(err(t.line, column, Trf26ErrorKind::MemberTwice(m)));
                }
            }
        }
        Ok(())
    }

    /// The team of the player with this start rank.
    pub fn team_of(&self, start_rank: u32) -> Option<&Team> {
        self.teams.iter().find(|t| t.members.contains(&start_rank))
    }
}

fn time_control(chars: &[char], line: usize) -> Result<EncodedTimeControl, TrfError> {
    let value = field(chars, 5, chars.len());
    let bad = |reason| err(line, 5, Trf26ErrorKind::TimeControl { value: value.clone(), reason });
    let parse = |s: &str| s.parse::<TimeControl>().map_err(bad);
    match value.strip_prefix('W').and_then(|v| v.split_once("-B")) {
        Some((white, black)) => {
            Ok(EncodedTimeControl::Armageddon { white: parse(white)?, black: parse(black)? })
        }
        None => Ok(EncodedTimeControl::Both(parse(&value)?)),
    }
}

fn tie_breaks(chars: &[char], line: usize) -> Result<Vec<String>, TrfError> {
    let mut out = Vec::new();
    let mut column = 5;
    let text: String = chars.iter().skip(4).collect();
    for item in text.split(',') {
        let code = item.trim();
        let ok = !code.is_empty()
            && code.len() <= 16
            && code.chars().all(|c| c.is_ascii_alphanumeric() || matches!(c, '/' | '-' | '.' | '#'));
        if !ok {
            let at = column + item.chars().take_while(|c| c.is_whitespace()).count();
            return Err(err(line, at, Trf26ErrorKind::TieBreak(code.to_owned())));
        }
        out.push(code.to_owned());
        column += item.chars().count() + 1;
    }
    Ok(out)
}

/// Members' start ranks in four columns every five from `first` until the line ends.
fn members(chars: &[char], line: usize, first: usize) -> Result<Vec<u32>, TrfError> {
    let mut out = Vec::new();
    let mut from = first;
    while from <= chars.len() {
        if let Some(rank) = number(chars, line, (from, from + 3), "team member")?
            && rank > 0
        {
            out.push(rank);
        }
        from += 5;
    }
    Ok(out)
}

fn team_310(chars: &[char], line: usize) -> Result<Team, TrfError> {
    let team_number =
        number(chars, line, (5, 7), "team number")?.filter(|&n| n > 0).ok_or_else(|| TrfError {
            line,
            column: 5,
            kind: TrfErrorKind::NotANumber { field: "team number", value: field(chars, 5, 7) },
        })?;
    let name = field(chars, 9, 40);
    if name.is_empty() {
        return Err(err(line, 9, Trf26ErrorKind::NoTeamName));
    }
    Ok(Team {
        number: team_number,
        name,
        nickname: Some(field(chars, 42, 46)).filter(|s| !s.is_empty()),
        match_points: points(chars, line, (55, 60), "match points")?,
        game_points: points(chars, line, (62, 67), "game points")?,
        rank: number(chars, line, (69, 71), "team rank")?,
        members: members(chars, line, 74)?,
        line,
        legacy: false,
    })
}

fn team_013(chars: &[char], line: usize, number: u32) -> Result<Team, TrfError> {
    let name = field(chars, 5, 36);
    if name.is_empty() {
        return Err(err(line, 5, Trf26ErrorKind::NoTeamName));
    }
    Ok(Team {
        number,
        name,
        nickname: None,
        match_points: None,
        game_points: None,
        rank: None,
        members: members(chars, line, 37)?,
        line,
        legacy: true,
    })
}

#[cfg(test)]
mod tests {
    use crate::trf::{Trf, TrfErrorKind};

    use super::*;

    /// A `001` line in the report's columns (FIDE TRF-26, player section).
    fn player(rank: u32, name: &str, fed: &str, id: u64, round1: &str) -> String {
        format!("001 {rank:>4} mGM  {name:<33} 2700 {fed:<3} {id:>11} 1990/01/01  1.0 {rank:>4}  {round1}")
    }

    /// A `310` line in the report's columns (FIDE TRF-26, team section).
    fn team(number: u32, name: &str, nick: &str, mp: &str, gp: &str, rank: u32, members: &[u32]) -> String {
        let mut l = format!("310 {number:>3} {name:<32} {nick:<5} {:>6} {mp:>6} {gp:>6} {rank:>3} ", "");
        for m in members {
            l.push_str(&format!(" {m:>4}"));
        }
        l
    }

    /// A team match of two boards, Norway against India, as TRF-26 writes it.
    fn team_report() -> Vec<String> {
        vec![
            "012 Olympiad 2026".to_owned(),
            "022 Tashkent".to_owned(),
            "042 2026/09/10".to_owned(),
            "222 40/6000+30:900+30".to_owned(),
            "202 MPvGP,BH/C1,SB".to_owned(),
            "212 PTS, MPvGP, BH/C1".to_owned(),
            "### a comment line".to_owned(),
            player(1, "Carlsen, Magnus", "NOR", 1503014, "   3 w 1"),
            player(2, "Tari, Aryan", "NOR", 1510045, "   4 b 0"),
            player(3, "Gukesh, D", "IND", 46616543, "   1 b 0"),
            player(4, "Erigaisi, Arjun", "IND", 35009192, "   2 w 1"),
            team(1, "Norway", "NOR", "1.0", "1.0", 1, &[1, 2]),
            team(2, "India", "IND", "1.0", "1.0", 1, &[3, 4]),
        ]
    }

    fn parse(lines: &[String]) -> Result<Trf, crate::trf::TrfError> {
        // TRF-26 ends lines with CR; the reader takes CR, CR LF and LF alike.
        Trf::parse(&(lines.join("\r") + "\r"))
    }

    #[test]
    fn a_team_report_gives_the_time_control_tie_breaks_and_teams() {
        let trf = parse(&team_report()).unwrap();
        let t = &trf.trf26;
        let tc = t.time_control.as_ref().unwrap();
        assert_eq!(tc.pgn().as_deref(), Some("40/6000+30:900+30"));
        assert_eq!(t.tie_breaks, ["MPvGP", "BH/C1", "SB"]);
        assert_eq!(t.standings, ["PTS", "MPvGP", "BH/C1"]);
        assert_eq!(t.teams.len(), 2);
        let india = &t.teams[1];
        assert_eq!(
            (india.number, india.name.as_str(), india.nickname.as_deref(), india.members.as_slice()),
            (2, "India", Some("IND"), &[3, 4][..])
        );
        assert_eq!((india.match_points.as_deref(), india.rank), (Some("1.0"), Some(1)));
        // The round's boards carry each player's team.
        let boards = trf.pairings(1).unwrap();
        let teams: Vec<_> = boards
            .iter()
            .map(|b| (b.pairing.white.team.clone().unwrap(), b.pairing.black.team.clone().unwrap()))
            .collect();
        assert!(teams.contains(&("Norway".into(), "India".into())), "{teams:?}");
        assert!(teams.contains(&("India".into(), "Norway".into())), "{teams:?}");
        assert_eq!(boards[0].pairing.white.federation.as_deref(), Some("NOR"));
    }

    #[test]
    fn the_encoded_time_controls_of_the_specification() {
        let tc = |text: &str| time_control(&format!("222 {text}").chars().collect::<Vec<_>>(), 1);
        // 90'+30" from move 1.
        assert_eq!(tc("5400+30").unwrap().pgn().as_deref(), Some("5400+30"));
        // 100' for 40 moves, then 15', 30" from move 1.
        assert_eq!(tc("40/6000+30:900+30").unwrap().pgn().as_deref(), Some("40/6000+30:900+30"));
        assert_eq!(tc("40/7200:3600").unwrap().pgn().as_deref(), Some("40/7200:3600"));
        // Armageddon: White 5', Black 4'.
        let armageddon = tc("W300-B240").unwrap();
        assert_eq!(
            armageddon,
            EncodedTimeControl::Armageddon { white: "300".parse().unwrap(), black: "240".parse().unwrap() }
        );
        assert_eq!(armageddon.pgn(), None);
        for bad in ["", "90 min", "40/", "W300", "5400+30:x"] {
            let e = tc(bad).unwrap_err();
            assert_eq!((e.line, e.column), (1, 5), "{bad:?}");
            assert!(e.to_string().contains("222"), "{e}");
        }
    }

    #[test]
    fn errors_name_the_line_and_column() {
        let with = |i: usize, l: &str| {
            let mut r = team_report();
            r[i] = l.to_owned();
            parse(&r).unwrap_err()
        };
        let e = with(3, "222 ninety minutes");
        assert_eq!((e.line, e.column), (4, 5), "{e}");
        let e = with(4, "202 BH,, SB");
        assert_eq!((e.line, e.column), (5, 8), "{e}");
        assert!(matches!(e.kind, TrfErrorKind::Trf26(Trf26ErrorKind::TieBreak(_))), "{e}");
        // A member no player line has: the member's own columns.
        let e = with(12, &team(2, "India", "IND", "1.0", "1.0", 1, &[3, 9]));
        assert_eq!(
            (e.line, e.column, e.kind),
            (13, 79, TrfErrorKind::Trf26(Trf26ErrorKind::UnknownMember(9)))
        );
        let e = with(12, &team(2, "India", "IND", "1.0", "1.0", 1, &[3, 2]));
        assert_eq!((e.line, e.column), (13, 79), "{e}");
        assert!(e.to_string().contains("player 2 is in two teams"), "{e}");
        let e = with(12, &team(1, "India", "IND", "1.0", "1.0", 1, &[3, 4]));
        assert_eq!((e.line, e.column), (13, 5), "{e}");
        let e = with(12, &team(2, "", "IND", "1.0", "1.0", 1, &[3, 4]));
        assert_eq!((e.line, e.column), (13, 9), "{e}");
        let e = with(12, &team(2, "India", "IND", "x", "1.0", 1, &[3, 4]));
        assert_eq!((e.line, e.column), (13, 55), "{e}");
        assert!(e.to_string().starts_with("TRF line 13, column 55:"), "{e}");
    }

    #[test]
    fn a_trf16_report_with_013_teams_still_reads_and_310_wins_over_013() {
        let mut r: Vec<String> =
            team_report().into_iter().filter(|l| !l.starts_with("310") && !l.starts_with("222")).collect();
        r.push(format!("013 {:<32}{:>4} {:>4}", "Norway", 1, 2));
        r.push(format!("013 {:<32}{:>4} {:>4}", "India", 3, 4));
        let trf = parse(&r).unwrap();
        assert_eq!(trf.trf26.time_control, None);
        let names: Vec<_> =
            trf.trf26.teams.iter().map(|t| (t.number, t.name.as_str(), t.members.clone())).collect();
        assert_eq!(names, [(1, "Norway", vec![1, 2]), (2, "India", vec![3, 4])]);
        assert_eq!(
            trf.pairings(1).unwrap()[0].pairing.black.team.as_deref().map(|t| t == "Norway" || t == "India"),
            Some(true)
        );
        // Both kinds: the 310 lines are the teams.
        r.push(team(7, "Team Norway", "NOR", "", "", 1, &[1, 2]));
        let trf = parse(&r).unwrap();
        assert_eq!(trf.trf26.teams.len(), 1);
        assert_eq!(trf.trf26.team_of(2).map(|t| t.name.as_str()), Some("Team Norway"));
        assert_eq!(trf.trf26.team_of(3), None);
    }
}
