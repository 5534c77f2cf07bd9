//! An export-format checker for PGN, written from the 1994 standard and its 2001 clock
//! supplement, independent of the relay's writer (it shares no code with
//! `dgt_core::pgn`). [`check`] takes a whole file and returns every game's problems.
//!
//! What it holds the text to:
//! - LF newlines only; no tab or other control character anywhere (standard 8.1, 8.2).
//! - Tag pairs one per line, `[Name "value"]` with one space, left justified; names of
//!   letters, digits and `_` starting with an upper case letter; values escape only `\` and
//!   `"` (8.1.1, 7).
//! - The Seven Tag Roster first, in its order (`Event Site Date Round White Black Result`),
//!   then every other tag in ASCII order by tag name, none twice (8.1.1). `Date` is
//!   `YYYY.MM.DD` with `?` for unknown digits, `Result` one of the four termination markers
//!   or an arbiter's score as Lichess reads it (`0-0`, `1/2-0`, `0-1/2`).
//! - Exactly one empty line after the tags and after the movetext (8.1, 8.2.6).
//! - Movetext lines of less than 80 characters, no leading or trailing space, tokens
//!   separated by one space (8.2.1); a tag line may not be split, so it is held to the
//!   standard's 255-character line limit instead.
//! - Move numbers: each White move preceded by `N.`, a Black move by `N...` when it is the
//!   first move or follows a comment (8.2.2.2), numbers counting from the `FEN` tag's
//!   full-move field; every SAN legal from the start position (8.2.3).
//! - The game termination marker last, equal to the `Result` tag (8.2.6); `*` after an
//!   arbiter's score, which the standard has no marker for.
//! - `Termination "Unplayed"` (a forfeit, as Lichess reads it) only with a result and no
//!   move.
//! - `PlyCount`, when present, equal to the number of moves.
//! - `SetUp "1"` together with `FEN` (9.7).
//! - `TimeControl` present whenever a comment carries `[%clk` (supplement section 7);
//!   `WhiteClock`/`BlackClock` values are `h:mm:ss` (supplement section 6).

use shakmaty::fen::Fen;
use shakmaty::san::SanPlus;
use shakmaty::{CastlingMode, Chess, Color, Position};

/// The Seven Tag Roster, in order.
pub const ROSTER: [&str; 7] = ["Event", "Site", "Date", "Round", "White", "Black", "Result"];

/// The standard's game termination markers.
const MARKERS: [&str; 4] = ["1-0", "0-1", "1/2-1/2", "*"];

/// Arbiters' scores the standard has no marker for, in the `Result` tag as Lichess reads
/// them; the movetext then ends with `*`.
pub const ARBITER_SCORES: [&str; 3] = ["0-0", "1/2-0", "0-1/2"];

/// One game as the checker read it.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct CheckedGame {
    /// Tags in file order (name, unescaped value).
    pub tags: Vec<(String, String)>,
    /// The SAN moves.
    pub moves: Vec<String>,
    /// Problems found (empty: the game is in export format).
    pub problems: Vec<String>,
}

impl CheckedGame {
    /// A tag's value.
    pub fn tag(&self, name: &str) -> Option<&str> {
        self.tags.iter().find(|(n, _)| n == name).map(|(_, v)| v.as_str())
    }
}

/// Checks a PGN file; `Err` lists every problem with its game and line.
pub fn check_ok(text: &str) -> Result<Vec<CheckedGame>, String> {
    let games = check(text);
    let problems: Vec<String> = games
        .iter()
        .enumerate()
        .flat_map(|(i, g)| g.problems.iter().map(move |p| format!("game {}: {p}", i + 1)))
        .collect();
    if problems.is_empty() { Ok(games) } else { Err(problems.join("\n")) }
}

/// Reads every game of a file and lists what breaks the export format in each.
pub fn check(text: &str) -> Vec<CheckedGame> {
    let mut games = Vec::new();
    let mut file_problems = Vec::new();
    if text.contains('\r') {
        file_problems.push("carriage return in the file (export format uses LF newlines)".to_owned());
    }
    if !text.ends_with("\n\n") {
        file_problems.push("the file does not end with the game's empty line".to_owned());
    }
    let lines: Vec<&str> = text.split('\n').collect();
    let mut i = 0;
    while i < lines.len() {
        if lines[i].is_empty() && i + 1 == lines.len() {
            break;
        }
        let mut g = CheckedGame::default();
        i = read_game(&lines, i, &mut g);
        games.push(g);
    }
    if let Some(first) = games.first_mut() {
        first.problems.splice(0..0, file_problems);
    } else if !text.is_empty() {
        games.push(CheckedGame { problems: file_problems, ..CheckedGame::default() });
    }
    games
}

/// Reads one game from line `i`; returns the index of the line after its empty line.
fn read_game(lines: &[&str], mut i: usize, g: &mut CheckedGame) -> usize {
    let start_line = i + 1;
    let p = |line: usize, msg: String| format!("line {line}: {msg}");
    let mut problems = Vec::new();
    // Tags.
    while i < lines.len() && lines[i].starts_with('[') {
        let line = lines[i];
        if line.chars().count() > 255 {
            problems.push(p(i + 1, "tag line longer than 255 characters".into()));
        }
        match parse_tag(line) {
            Ok((n, v)) => g.tags.push((n, v)),
            Err(e) => problems.push(p(i + 1, e)),
        }
        i += 1;
    }
    if g.tags.is_empty() {
        problems.push(p(i + 1, "a game must start with its tag pairs".into()));
    }
    if i >= lines.len() || !lines[i].is_empty() {
        problems.push(p(i + 1, "one empty line must follow the tag pairs".into()));
    } else {
        i += 1;
    }
    // Movetext, up to the empty line.
    let mut movetext = Vec::new();
    while i < lines.len() && !lines[i].is_empty() {
        let line = lines[i];
        if line.chars().count() >= 80 {
            problems.push(p(
                i + 1,
                format!("movetext line of {} characters (less than 80)", line.chars().count()),
            ));
        }
        if line.starts_with(' ') || line.ends_with(' ') || line.contains("  ") {
            problems.push(p(i + 1, "movetext tokens are separated by exactly one space".into()));
        }
        if line.starts_with('[') {
            problems.push(p(i + 1, "a tag pair inside the movetext".into()));
        }
        movetext.push(line);
        i += 1;
    }
    if movetext.is_empty() {
        problems.push(p(i + 1, "no movetext (at least the termination marker)".into()));
    }
    if i >= lines.len() {
        problems.push(p(i, "the game does not end with an empty line".into()));
    } else {
        i += 1;
        // A second empty line between games is not export format.
        if i < lines.len() && lines[i].is_empty() && i + 1 < lines.len() {
            problems.push(p(i + 1, "more than one empty line after the game".into()));
        }
    }
    check_tags(g, &mut problems, start_line);
    check_movetext(g, &movetext.join("\n"), &mut problems);
    g.problems.extend(problems);
    i
}

fn parse_tag(line: &str) -> Result<(String, String), String> {
    let inner = line
        .strip_prefix('[')
        .and_then(|l| l.strip_suffix(']'))
        .ok_or_else(|| format!("tag line {line:?} is not `[Name \"value\"]` on a line of its own"))?;
    let (name, rest) = inner.split_once(' ').ok_or_else(|| format!("tag line {line:?} has no space"))?;
    if !name.starts_with(|c: char| c.is_ascii_uppercase())
        || !name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_')
    {
        return Err(format!("tag name {name:?} is not a capitalised name of letters, digits and _"));
    }
    let body = rest
        .strip_prefix('"')
        .and_then(|r| r.strip_suffix('"'))
        .ok_or_else(|| format!("tag {name}: the value must be one quoted string after one space"))?;
    let mut value = String::new();
    let mut chars = body.chars();
    while let Some(c) = chars.next() {
        match c {
            '\\' => match chars.next() {
                Some(e @ ('\\' | '"')) => value.push(e),
                other => return Err(format!("tag {name}: bad escape \\{other:?}")),
            },
            '"' => return Err(format!("tag {name}: unescaped quote in the value")),
            c if c.is_control() => return Err(format!("tag {name}: control character in the value")),
            c => value.push(c),
        }
    }
    Ok((name.to_owned(), value))
}

fn check_tags(g: &CheckedGame, problems: &mut Vec<String>, line: usize) {
    let names: Vec<&str> = g.tags.iter().map(|(n, _)| n.as_str()).collect();
    if names.len() < 7 || names[..7] != ROSTER {
        problems
            .push(format!("line {line}: the Seven Tag Roster must come first, in order; tags are {names:?}"));
    }
    let rest = names.get(7..).unwrap_or(&[]);
    for w in rest.windows(2) {
        if w[0].as_bytes() >= w[1].as_bytes() {
            problems.push(format!(
                "tags after the roster must be in ASCII order by name, none twice: {} before {}",
                w[0], w[1]
            ));
        }
    }
    for r in ROSTER {
        if rest.contains(&r) {
            problems.push(format!("roster tag {r} given twice"));
        }
    }
    if let Some(d) = g.tag("Date") {
        let ok = d.len() == 10
            && d.char_indices()
                .all(|(i, c)| if i == 4 || i == 7 { c == '.' } else { c.is_ascii_digit() || c == '?' });
        if !ok {
            problems.push(format!("Date {d:?} is not YYYY.MM.DD"));
        }
    }
    if let Some(r) = g.tag("Result")
        && !MARKERS.contains(&r)
        && !ARBITER_SCORES.contains(&r)
    {
        problems.push(format!("Result {r:?} is not a termination marker"));
    }
    for name in ["WhiteClock", "BlackClock"] {
        if let Some(v) = g.tag(name)
            && !is_hms(v)
        {
            problems.push(format!("{name} {v:?} is not h:mm:ss"));
        }
    }
    if g.tag("SetUp").is_some() != g.tag("FEN").is_some() {
        problems.push("SetUp and FEN go together".to_owned());
    }
}

fn is_hms(v: &str) -> bool {
    let parts: Vec<&str> = v.split(':').collect();
    parts.len() == 3
        && !parts[0].is_empty()
        && parts.iter().all(|p| p.chars().all(|c| c.is_ascii_digit()))
        && parts[1].len() == 2
        && parts[2].len() == 2
}

/// Movetext tokens: comments kept whole (they may span lines).
fn tokens(text: &str) -> Result<Vec<String>, String> {
    let mut out = Vec::new();
    let mut chars = text.chars().peekable();
    while let Some(&c) = chars.peek() {
        if c == ' ' || c == '\n' {
            chars.next();
            continue;
        }
        let mut t = String::new();
        if c == '{' {
            for c in chars.by_ref() {
                t.push(c);
                if c == '}' {
                    break;
                }
            }
            if !t.ends_with('}') {
                return Err("unterminated comment".into());
            }
            if t[1..t.len() - 1].contains('{') {
                return Err("`{` inside a comment".into());
            }
        } else {
            while let Some(&c) = chars.peek() {
                if c == ' ' || c == '\n' || c == '{' {
                    break;
                }
                t.push(c);
                chars.next();
            }
        }
        out.push(t);
    }
    Ok(out)
}

fn check_movetext(g: &mut CheckedGame, text: &str, problems: &mut Vec<String>) {
    let toks = match tokens(text) {
        Ok(t) => t,
        Err(e) => {
            problems.push(e);
            return;
        }
    };
    let mut pos: Chess = Chess::default();
    if let Some(fen) = g.tag("FEN") {
        match fen.parse::<Fen>().ok().and_then(|f| f.into_position(CastlingMode::Chess960).ok()) {
            Some(p) => pos = p,
            None => {
                problems.push(format!("FEN {fen:?} is not a legal position"));
                return;
            }
        }
    }
    let Some((last, body)) = toks.split_last() else { return };
    let result = g.tag("Result").unwrap_or("").to_owned();
    let marker = if ARBITER_SCORES.contains(&result.as_str()) { "*" } else { result.as_str() };
    if last != marker {
        problems.push(format!("the movetext ends with {last:?}, not the Result tag's {result:?}"));
    }
    let mut need_black_number = true;
    let mut pending_number: Option<String> = None;
    let mut saw_clk = false;
    for t in body {
        if t.starts_with('{') {
            saw_clk |= t.contains("[%clk ");
            need_black_number = true;
            continue;
        }
        if t.ends_with('.') && t.starts_with(|c: char| c.is_ascii_digit()) {
            if pending_number.is_some() {
                problems.push(format!("two move numbers in a row at {t:?}"));
            }
            pending_number = Some(t.clone());
            continue;
        }
        let n = pos.fullmoves().get();
        let number = pending_number.take();
        match pos.turn() {
            Color::White if number.as_deref() != Some(&format!("{n}.")) => {
                problems.push(format!("White's move {t:?} must be preceded by `{n}.`, got {number:?}"));
            }
            Color::Black if need_black_number && number.as_deref() != Some(&format!("{n}...")) => {
                problems.push(format!("Black's move {t:?} must be preceded by `{n}...`, got {number:?}"));
            }
            Color::Black if !need_black_number && number.is_some() => {
                problems.push(format!("Black's move {t:?} after White's takes no number in export format"));
            }
            _ => {}
        }
        let played = t.parse::<SanPlus>().ok().and_then(|san| san.san.to_move(&pos).ok()).map(|m| {
            let mut next = pos.clone();
            next.play_unchecked(m);
            (m, next)
        });
        match played {
            Some((m, next)) => {
                let canonical = SanPlus::from_move(pos.clone(), m).to_string();
                if canonical != *t {
                    problems.push(format!("move {t:?} is not in canonical SAN ({canonical})"));
                }
                pos = next;
                g.moves.push(t.clone());
            }
            None => {
                problems.push(format!("{t:?} is not a legal move in SAN"));
                return;
            }
        }
        need_black_number = false;
    }
    if pending_number.is_some() {
        problems.push("a move number before the termination marker".into());
    }
    if let Some(pc) = g.tag("PlyCount")
        && pc != g.moves.len().to_string()
    {
        problems.push(format!("PlyCount {pc} but {} moves", g.moves.len()));
    }
    if g.tag("Termination") == Some("Unplayed") && (!body.is_empty() || result == "*") {
        problems.push("an unplayed game has a result and no move".into());
    }
    if saw_clk && g.tag("TimeControl").is_none() {
        problems.push("moves carry [%clk] but there is no TimeControl tag (supplement 7)".into());
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const GOOD: &str = "[Event \"A \\\"B\\\"\"]\n[Site \"?\"]\n[Date \"2025.??.??\"]\n[Round \"1.2\"]\n\
        [White \"W\"]\n[Black \"B\"]\n[Result \"1-0\"]\n[Board \"2\"]\n[PlyCount \"3\"]\n[TimeControl \"300+2\"]\n\n\
        1. e4 {[%clk 0:04:59]} 1... e5 2. Qh5 1-0\n\n";

    #[test]
    fn a_good_game_passes() {
        let games = check_ok(GOOD).unwrap();
        assert_eq!(games[0].moves, ["e4", "e5", "Qh5"]);
        assert_eq!(games[0].tag("Event"), Some("A \"B\""));
    }

    #[test]
    fn arbiter_scores_and_unplayed_games_pass() {
        let score = GOOD.replace("\"1-0\"", "\"1/2-0\"").replace("Qh5 1-0", "Qh5 *");
        check_ok(&score).unwrap();
        let unplayed = "[Event \"E\"]\n[Site \"?\"]\n[Date \"????.??.??\"]\n[Round \"1.1\"]\n[White \"W\"]\n\
            [Black \"B\"]\n[Result \"1-0\"]\n[PlyCount \"0\"]\n[Termination \"Unplayed\"]\n\n1-0\n\n";
        check_ok(unplayed).unwrap();
    }

    #[test]
    fn each_rule_is_enforced() {
        let cases: [(&str, String); 17] = [
            ("crlf", GOOD.replace('\n', "\r\n")),
            ("order", GOOD.replace("[Board \"2\"]\n[PlyCount \"3\"]", "[PlyCount \"3\"]\n[Board \"2\"]")),
            (
                "roster order",
                GOOD.replace("[Site \"?\"]\n[Date \"2025.??.??\"]", "[Date \"2025.??.??\"]\n[Site \"?\"]"),
            ),
            ("duplicate", GOOD.replace("[Board \"2\"]", "[Board \"2\"]\n[Board \"2\"]")),
            ("no blank after tags", GOOD.replace("\"]\n\n1.", "\"]\n1.")),
            ("two blanks after game", format!("{GOOD}\n{GOOD}")),
            ("long line", GOOD.replace("1-0\n\n", &format!("{}1-0\n\n", "{x} ".repeat(20)))),
            ("number", GOOD.replace("1... e5", "e5")),
            ("black number after move", GOOD.replace("2. Qh5", "2. Qh5 2... Nc6").replace("3\"]", "4\"]")),
            ("result", GOOD.replace("Qh5 1-0", "Qh5 0-1")),
            ("plycount", GOOD.replace("[PlyCount \"3\"]", "[PlyCount \"4\"]")),
            ("timecontrol", GOOD.replace("\n[TimeControl \"300+2\"]", "")),
            ("escape", GOOD.replace("A \\\"B\\\"", "A \"B\"")),
            ("illegal", GOOD.replace("Qh5", "Qh6")),
            ("arbiter score marker", GOOD.replace("\"1-0\"", "\"0-0\"")),
            ("unknown score", GOOD.replace("\"1-0\"", "\"1-1\"").replace("Qh5 1-0", "Qh5 1-1")),
            ("unplayed with moves", GOOD.replace("[TimeControl", "[Termination \"Unplayed\"]\n[TimeControl")),
        ];
        for (name, text) in cases {
            assert!(check_ok(&text).is_err(), "{name} passed:\n{text}");
        }
    }
}
