//! TRF-26 reports read whole (written from FIDE's TRF-26 specification): the time control
//! (222), the tie-breaks (202, 212) and the teams (310, or 013 without them) reach the
//! report's players and rounds, and a wrong record is refused naming its line and column.

use dgt_relay::trf::{Trf, Trf26ErrorKind, TrfError, TrfErrorKind};

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

fn parse(lines: &[String]) -> Result<Trf, TrfError> {
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
    assert_eq!((e.line, e.column, e.kind), (13, 79, TrfErrorKind::Trf26(Trf26ErrorKind::UnknownMember(9))));
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
