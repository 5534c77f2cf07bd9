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

use dgt_core::TimeControl;

use super::columns::{field, number};
use super::error::{Trf26ErrorKind, TrfError, TrfErrorKind};

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

fn err(line: usize, column: usize, kind: Trf26ErrorKind) -> TrfError {
    TrfError { line, column, kind: TrfErrorKind::Trf26(kind) }
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
    use super::*;

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
}
