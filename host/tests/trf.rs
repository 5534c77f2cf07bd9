//! Pairings from a real TRF-16 report written by others (bbpPairings' test data, see
//! `data/PROVENANCE.md`): the relay's reader must find the same players, the same scores
//! and, for a round paired by bbpPairings, the same board order it publishes.

#![allow(clippy::unwrap_used)]

mod common;

use std::path::Path;
use std::time::Duration;

use common::{Relay, TOKEN, confirmed, http, sample_games, scenario, sim_board, tmpdir};
use dgt_hil_sim::StartPolicy;
use dgt_relay::trf::{Colour, Trf};

fn data(name: &str) -> String {
    std::fs::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/data").join(name)).unwrap()
}

/// The report with bbpPairings' round-15 pairs written into each player's round-15 columns
/// (opponent, colour, no result yet), as a pairing program exports a paired round.
fn report_with_round_15() -> (String, Vec<(u32, u32)>) {
    let pairs_text = data("bbp-issue7-round15.pairs");
    let mut lines = pairs_text.lines();
    let count: usize = lines.next().unwrap().parse().unwrap();
    let pairs: Vec<(u32, u32)> = lines
        .map(|l| {
            let (w, b) = l.split_once(' ').unwrap();
            (w.parse().unwrap(), b.parse().unwrap())
        })
        .collect();
    assert_eq!(pairs.len(), count);
    let trf = data("bbp-issue7.trf");
    let lines: Vec<String> = trf
        .split('\r')
        .map(|l| {
            if !l.starts_with("001") {
                return l.to_owned();
            }
            let rank: u32 = l[4..8].trim().parse().unwrap();
            let (opp, colour) = pairs
                .iter()
                .find_map(|&(w, b)| {
                    if w == rank {
                        Some((b, 'w'))
                    } else if b == rank {
                        Some((w, 'b'))
                    } else {
                        None
                    }
                })
                .unwrap_or((0, '-'));
            // Round 15's block starts at column 92 + 10 * 14.
            format!("{l:<231}{opp:>4} {colour}  ")
        })
        .collect();
    (lines.join("\r"), pairs)
}

#[test]
fn a_real_report_reads_with_its_scores() {
    let trf = Trf::parse(&data("bbp-issue7.trf")).unwrap();
    assert_eq!(trf.players.len(), 60);
    assert_eq!(trf.rounds(), 14);
    let first = trf.player(1).unwrap();
    assert_eq!((first.name.as_str(), first.rating), ("Test0001 Player0001", Some(2720)));
    assert_eq!(first.rounds[0].opponent, Some(31));
    assert_eq!(first.rounds[0].colour, Some(Colour::Black));
    // Every player's points column equals the results of its 14 rounds (forfeits too).
    for p in &trf.players {
        let points: f64 = p.points.as_deref().unwrap().parse().unwrap();
        assert_eq!(f64::from(p.half_points_before(15)) / 2.0, points, "player {}", p.start_rank);
    }
    // A played round pairs every player who had an opponent.
    let r14 = trf.pairings(14).unwrap();
    assert_eq!(r14.len(), 30);
}

#[test]
fn a_round_paired_by_bbppairings_keeps_its_board_order() {
    let (text, pairs) = report_with_round_15();
    let trf = Trf::parse(&text).unwrap();
    assert_eq!(trf.rounds(), 15);
    let boards = trf.pairings(15).unwrap();
    let ours: Vec<(u32, u32)> = boards.iter().map(|b| (b.white_rank, b.black_rank)).collect();
    assert_eq!(ours, pairs);
    assert_eq!(boards[0].board, 1);
    assert_eq!(boards[0].pairing.white.name, "Test0001 Player0001");
    assert_eq!(boards[0].pairing.white.elo, Some(2720));
}

fn white_of_board_1(v: &serde_json::Value) -> String {
    v[0]["pairing"]["white"]["name"].as_str().unwrap_or_default().to_owned()
}

#[test]
fn the_relay_takes_pairings_from_a_report_on_the_command_line_and_by_upload() {
    let dir = tmpdir("trf");
    let (text, _) = report_with_round_15();
    let file = dir.join("round15.trf");
    std::fs::write(&file, &text).unwrap();
    let board = sim_board(&dir, 20301, 40.0);
    let data = dir.join("data");
    let args = ["run", "--trf", file.to_str().unwrap(), "--round", "15"];
    let relay = Relay::start(
        &dir,
        &[&args[..], &["--port", board.path().to_str().unwrap(), "--data", data.to_str().unwrap()]].concat(),
    );
    let v = relay.wait_boards("board 1 paired from the report", Duration::from_secs(10), |v| {
        v[0]["status"] == "active" && white_of_board_1(v) == "Test0001 Player0001"
    });
    assert_eq!(v[0]["round"], 15, "{v}");
    assert_eq!(v[0]["pairing"]["black"]["name"], "Test0015 Player0015", "{v}");
    assert_eq!(v[0]["pairing"]["white"]["elo"], 2720, "{v}");

    // Upload: round 14 of the report as it was (CR line ends), padded past the 64 KiB of a
    // JSON body with lines the format does not define.
    let path = "/api/admin/pairings/trf?round=14";
    let mut upload = data_report();
    upload.push_str(&"\rXXZ padding line that readers skip".repeat(2500));
    assert!(upload.len() > 64 * 1024);
    let (status, body) = http(relay.addr, "POST", path, &[], &upload);
    assert_eq!(status, 401, "{body}");
    let auth = format!("Bearer {TOKEN}");
    let (status, body) = http(relay.addr, "POST", path, &[("Authorization", &auth)], &upload);
    assert_eq!(status, 200, "{body}");
    let answer: serde_json::Value = serde_json::from_str(&body).unwrap();
    assert_eq!(answer["boards"].as_array().unwrap().len(), 30, "{answer}");
    let trf = Trf::parse(&data_report()).unwrap();
    let first = trf.pairings(14).unwrap().remove(0).pairing.white.name;
    assert_eq!(answer["boards"][0]["white"], first.as_str(), "{answer}");
    relay.wait_boards("board 1 paired from the upload", Duration::from_secs(10), |v| {
        white_of_board_1(v) == first
    });

    // A broken report: 422 naming the line and column; nothing changes.
    let broken = data_report().replacen("   31 b 1", "   31 x 1", 1);
    let (status, body) = http(relay.addr, "POST", path, &[("Authorization", &auth)], &broken);
    assert_eq!(status, 422, "{body}");
    assert!(body.contains("TRF line 2, column 97: colour 'x'"), "{body}");
    let (status, body) = http(
        relay.addr,
        "POST",
        "/api/admin/pairings/trf?round=16",
        &[("Authorization", &auth)],
        &data_report(),
    );
    assert_eq!(status, 422, "{body}");
    assert!(body.contains("round 16 has no pairings"), "{body}");
    assert_eq!(white_of_board_1(&relay.json("/api/boards")), first);
}

fn data_report() -> String {
    data("bbp-issue7.trf")
}

/// POSTs `body` as it is (bytes that need not be UTF-8); the status and the answer's text.
fn post_bytes(addr: std::net::SocketAddr, path: &str, body: &[u8]) -> (u16, String) {
    use std::io::{Read, Write};
    let mut s = std::net::TcpStream::connect(addr).unwrap();
    s.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
    let head = format!(
        "POST {path} HTTP/1.1\r\nHost: {addr}\r\nAuthorization: Bearer {TOKEN}\r\nContent-Type: text/plain\r\n\
         Content-Length: {}\r\nConnection: close\r\n\r\n",
        body.len()
    );
    s.write_all(head.as_bytes()).unwrap();
    s.write_all(body).unwrap();
    let mut answer = String::new();
    s.read_to_string(&mut answer).unwrap();
    let status = answer.split(' ').nth(1).and_then(|c| c.parse().ok()).unwrap_or(0);
    (status, answer.split_once("\r\n\r\n").map_or(String::new(), |(_, b)| b.to_owned()))
}

/// Issue 27, recipe 7: a report in Windows-1252 uploaded as it is reads as its letters, and
/// the board's empty game moves to the uploaded round without leaving anything in the old
/// round's folder.
#[test]
fn a_windows_1252_upload_reads_as_its_letters_leaves_no_empty_game_behind_and_short_names_are_alerts() {
    let dir = tmpdir("trf1252");
    let board = sim_board(&dir, 20311, 40.0);
    let data_dir = dir.join("data");
    let relay = Relay::start(
        &dir,
        &["run", "--port", board.path().to_str().unwrap(), "--data", data_dir.to_str().unwrap()],
    );
    relay.wait_boards("board active", Duration::from_secs(10), |v| v[0]["status"] == "active");
    let round_1 = data_dir.join("round-1");
    let deadline = std::time::Instant::now() + Duration::from_secs(10);
    while !round_1.join("game-1.pgn").exists() {
        assert!(std::time::Instant::now() < deadline, "no game in round 1: {}", relay.logs());
        std::thread::sleep(Duration::from_millis(50));
    }
    // Board 1's White of round 14, renamed with letters outside ASCII, in the same columns.
    let report = data_report();
    let first = Trf::parse(&report).unwrap().pairings(14).unwrap().remove(0).pairing.white.name;
    let renamed = report.replacen(&format!("{first:<33}"), &format!("{:<33}", "Müller, Jérôme"), 1);
    let bytes: Vec<u8> = renamed
        .chars()
        .map(|c| match c {
            'ü' => 0xFC,
            'é' => 0xE9,
            'ô' => 0xF4,
            c => u8::try_from(u32::from(c)).unwrap(),
        })
        .collect();
    let (status, body) = post_bytes(relay.addr, "/api/admin/pairings/trf?round=14", &bytes);
    assert_eq!(status, 200, "{body}");
    let answer: serde_json::Value = serde_json::from_str(&body).unwrap();
    assert_eq!(answer["boards"][0]["white"], "Müller, Jérôme", "{answer}");
    relay.wait_boards("board 1 in round 14", Duration::from_secs(10), |v| {
        v[0]["round"] == 14 && white_of_board_1(v) == "Müller, Jérôme"
    });
    let deadline = std::time::Instant::now() + Duration::from_secs(10);
    while !data_dir.join("round-14/game-1.pgn").exists() {
        assert!(std::time::Instant::now() < deadline, "no game in round 14: {}", relay.logs());
        std::thread::sleep(Duration::from_millis(50));
    }
    // The PGN writer runs on changes: give it its second, then look.
    std::thread::sleep(Duration::from_millis(1500));
    let left: Vec<_> = std::fs::read_dir(&round_1).map_or_else(
        |_| Vec::new(),
        |d| d.flatten().map(|e| e.file_name().to_string_lossy().into_owned()).collect(),
    );
    assert!(left.is_empty(), "round 1 keeps {left:?}");
    assert_eq!(relay.get("/pgn/1").0, 404);
    let pgn = std::fs::read_to_string(data_dir.join("round-14/game-1.pgn")).unwrap();
    assert!(pgn.contains("[White \"Müller, Jérôme\"]"), "{pgn}");

    // Issue 27, recipe 8: a name the PGN and the push replace is an operator alert.
    let auth = format!("Bearer {TOKEN}");
    let body = r#"{"round":14,"boards":[{"board":1,"white":{"name":"M"},"black":{"name":"Ding, Liren"}}]}"#;
    let (status, answer) = http(relay.addr, "POST", "/api/admin/pairings", &[("Authorization", &auth)], body);
    assert_eq!(status, 200, "{answer}");
    let deadline = std::time::Instant::now() + Duration::from_secs(10);
    loop {
        let (_, text) = http(relay.addr, "GET", "/api/admin/boards", &[("Authorization", &auth)], "");
        let v: serde_json::Value = serde_json::from_str(&text).unwrap();
        let alerts = v["boards"][0]["alerts"].as_array().cloned().unwrap_or_default();
        if let Some(a) = alerts.iter().find(|a| a["code"] == "push" && a["level"] == "warning") {
            let message = a["message"].as_str().unwrap();
            assert!(message.contains("\"M\"") && message.contains("Board 1 White"), "{message}");
            break;
        }
        assert!(std::time::Instant::now() < deadline, "no alert: {alerts:?}");
        std::thread::sleep(Duration::from_millis(50));
    }
}

/// A two-board team match as TRF-26 writes it (FIDE handbook, TRF-26): the encoded time
/// control (222), tie-breaks (202, 212), the player lines and the teams (310), CR line ends.
fn team_match_report() -> String {
    let player = |rank: u32, name: &str, fed: &str, id: u64, round1: &str| {
        format!("001 {rank:>4} mGM  {name:<33} 2700 {fed:<3} {id:>11} 1990/01/01  0.0 {rank:>4}  {round1}")
    };
    let team = |n: u32, name: &str, members: [u32; 2]| {
        format!(
            "310 {n:>3} {name:<32} {:<5} {:>6} {:>6} {:>6} {:>3}  {:>4} {:>4}",
            "", "", "", "", "", members[0], members[1]
        )
    };
    [
        "012 Team match".to_owned(),
        "222 40/6000+30:900+30".to_owned(),
        "202 MPvGP,BH/C1".to_owned(),
        "212 PTS,MPvGP".to_owned(),
        player(1, "Carlsen, Magnus", "NOR", 1503014, "   3 w  "),
        player(2, "Tari, Aryan", "NOR", 1510045, "   4 b  "),
        player(3, "Gukesh, D", "IND", 46616543, "   1 b  "),
        player(4, "Erigaisi, Arjun", "IND", 35009192, "   2 w  "),
        team(1, "Norway", [1, 2]),
        team(2, "India", [3, 4]),
    ]
    .join("\r")
        + "\r"
}

#[test]
fn a_trf26_team_report_gives_the_games_their_teams_and_time_control() {
    let dir = tmpdir("trf26");
    let file = dir.join("team.trf");
    std::fs::write(&file, team_match_report()).unwrap();
    let board = sim_board(&dir, 20302, 40.0);
    let data = dir.join("data");
    let args = ["run", "--trf", file.to_str().unwrap(), "--round", "1", "--port"];
    let relay = Relay::start(
        &dir,
        &[&args[..], &[board.path().to_str().unwrap(), "--data", data.to_str().unwrap()]].concat(),
    );
    relay.wait_boards("active", Duration::from_secs(10), |v| v[0]["status"] == "active");
    assert_eq!(relay.json("/api/event")["time_control"], "40/6000+30:900+30");
    // The same report uploaded: the same pairings, and the event's time control.
    let auth = format!("Bearer {TOKEN}");
    let path = "/api/admin/pairings/trf?round=1";
    let report = team_match_report().replace("222 40/6000+30:900+30", "222 5400+30");
    let (status, body) = http(relay.addr, "POST", path, &[("Authorization", &auth)], &report);
    assert_eq!(status, 200, "{body}");
    assert_eq!(relay.json("/api/event")["time_control"], "5400+30");
    let v = relay.wait_boards("board 1 paired", Duration::from_secs(10), |v| {
        v[0]["pairing"]["white"]["team"].is_string()
    });
    let teams = (&v[0]["pairing"]["white"]["team"], &v[0]["pairing"]["black"]["team"]);
    assert!(teams.0 != teams.1 && (teams.0 == "Norway" || teams.0 == "India"), "{v}");
    // A game on the board: its PGN has the teams, federations and the report's time control.
    let games = sample_games();
    let _handle = board.start_scenario(scenario(&games[0]), StartPolicy::WhenHostListens).unwrap();
    relay.wait_boards("2 moves", Duration::from_secs(60), |v| confirmed(v, 1).len() >= 2);
    let file = data.join("round-1/game-1.pgn");
    let deadline = std::time::Instant::now() + Duration::from_secs(5);
    let pgn = loop {
        let pgn = std::fs::read_to_string(&file).unwrap_or_default();
        if pgn.contains("[WhiteTeam ") || std::time::Instant::now() > deadline {
            break pgn;
        }
        std::thread::sleep(Duration::from_millis(50));
    };
    for tag in ["[WhiteTeam \"", "[BlackTeam \"", "[WhiteFed \"", "[TimeControl \"40/6000+30:900+30\"]"] {
        assert!(pgn.contains(tag), "{tag}\n{pgn}");
    }
    // The report's tie-breaks (202, 212) are in the round files' tournament.json.
    let deadline = std::time::Instant::now() + Duration::from_secs(10);
    let tournament = loop {
        let text = std::fs::read_to_string(data.join("tournament.json")).unwrap_or_default();
        let v: serde_json::Value = serde_json::from_str(&text).unwrap_or_default();
        if v.get("standings").is_some() || std::time::Instant::now() > deadline {
            break v;
        }
        std::thread::sleep(Duration::from_millis(100));
    };
    assert_eq!(tournament["tiebreaks"], serde_json::json!(["MPvGP", "BH/C1"]), "{tournament}");
    assert_eq!(tournament["standings"], serde_json::json!(["PTS", "MPvGP"]), "{tournament}");
    // A broken 310 line: 422 with its line and column.
    let broken = team_match_report().replace("  3    4\r", "  3    9\r");
    let (status, body) = http(relay.addr, "POST", path, &[("Authorization", &auth)], &broken);
    assert_eq!(status, 422, "{body}");
    assert!(body.contains("TRF line 10, column 79: team member 9"), "{body}");
}
