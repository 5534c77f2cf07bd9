//! The PGN export text of one game, from its journaled record.
//!
//! The moves, their SAN and clock values come from the tracker (through the journal); the
//! export layout (tag order, escaping, move numbers, comments, line length) is the core's
//! single writer, [`dgt_core::pgn::write_game`]. This module only maps the journaled
//! [`GameRecord`] to its inputs: `Round "r.b"`, `Board`, a stable `GameId`, the players
//! (`Board 3 White` while unpaired) with their titles, FIDE ids, ratings, federations
//! (`WhiteFed`, as LiveChess and pgn4web write them) and teams (`WhiteTeam`, which Lichess's
//! team table reads),
//! `UTCDate`/`UTCTime`, `Mode "OTB"`, `SetUp`/`FEN`, the live `Clock` while the game runs,
//! `Termination`, and the clock settings read back from the moves' clock values
//! (`WhiteClock`/`BlackClock`, and `TimeControl` when none is configured). Writing it from
//! the journal, not from live state, guarantees the published PGN never holds a move the
//! journal does not.

use dgt_core::pgn::{GameText, PgnHeader, PgnPly};
use dgt_core::{ClockState, GameResult};
use shakmaty::{CastlingMode, Chess, Color, Position};

use crate::record::GameRecord;

/// A side's name as Lichess keeps it: the player's name, or `Board 3 White` when the board
/// is not paired (Lichess drops a game whose sides have no name longer than one character
/// and no FIDE id; `?` would be dropped).
pub fn player_name(name: &str, board: u32, side: &str) -> String {
    let name = name.trim();
    if name.chars().count() > 1 { name.to_owned() } else { format!("Board {board} {side}") }
}

/// The `GameId` tag: the same for a board's game in a round whatever happens to it (moves
/// corrected, the e-board swapped, players paired later), different across events, rounds
/// and boards. `r2b5-` and eight hex digits of a 64-bit FNV-1a hash of the event's name.
pub fn game_id(event: &str, round: u32, board: u32) -> String {
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    for b in event.bytes() {
        h ^= u64::from(b);
        h = h.wrapping_mul(0x0100_0000_01b3);
    }
    format!("r{round}b{board}-{:08x}", (h >> 32) ^ (h & 0xffff_ffff))
}

/// What the clock showed at the start and gave at each press, read back from the journaled
/// `%clk`/`%emt` pairs. The tracker's `%emt` is clock arithmetic: the mover's previous
/// display plus what the clock credited (increment, new-period time) minus the new display.
/// So `credited = emt + clk - previous clk`; the most frequent small credit (under 60 s,
/// ties to the larger value, as the tracker counts) is the increment, and the first move's
/// `clk + emt - increment` is its side's starting display.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct ClockSettings {
    /// Starting display of White and Black, seconds.
    pub initial: [Option<u32>; 2],
    /// Increment, seconds.
    pub increment: Option<u32>,
}

impl ClockSettings {
    /// Reads the settings from a game's moves; `white_first` says whose move ply 1 is.
    pub fn infer(moves: &[crate::record::JournalMove], white_first: bool) -> ClockSettings {
        let mut seen = [0u32; 60];
        for (i, m) in moves.iter().enumerate().skip(2) {
            if let (Some(clk), Some(emt), Some(prev)) = (m.clk, m.emt, moves[i - 2].clk) {
                let credited = i64::from(emt) + i64::from(clk) - i64::from(prev);
                if let Ok(c) = usize::try_from(credited)
                    && c < seen.len()
                {
                    seen[c] += 1;
                }
            }
        }
        let increment =
            (0..seen.len()).filter(|&c| seen[c] > 0).max_by_key(|&c| (seen[c], c)).map(|c| c as u32);
        let mut initial = [None; 2];
        if let Some(inc) = increment {
            for (i, m) in moves.iter().take(2).enumerate() {
                let side = usize::from((i % 2 == 1) == white_first);
                if let (Some(clk), Some(emt)) = (m.clk, m.emt) {
                    initial[side] = (clk + emt).checked_sub(inc);
                }
            }
        }
        ClockSettings { initial, increment }
    }

    /// `300+3` when both sides started with the same time and the increment is known.
    pub fn time_control(&self) -> Option<dgt_core::TimeControl> {
        match (self.initial, self.increment) {
            ([Some(w), Some(b)], Some(inc)) if w == b && w > 0 => {
                Some(dgt_core::TimeControl::fischer(w, inc))
            }
            _ => None,
        }
    }
}

/// The clock as the `Clock` tag shows it: the times and the running side.
fn shown(c: &ClockState) -> ClockState {
    ClockState { white: c.white, black: c.black, running: c.running, ..ClockState::default() }
}

/// The UTC date (`yyyy.mm.dd`) and time (`hh:mm:ss`) of seconds since 1970, as PGN writes
/// them.
pub fn utc_date_time(secs: u64) -> (String, String) {
    let t = i64::try_from(secs)
        .ok()
        .and_then(|s| time::OffsetDateTime::from_unix_timestamp(s).ok())
        .unwrap_or(time::OffsetDateTime::UNIX_EPOCH);
    (
        format!("{:04}.{:02}.{:02}", t.year(), u8::from(t.month()), t.day()),
        format!("{:02}:{:02}:{:02}", t.hour(), t.minute(), t.second()),
    )
}

/// Writes the game. `live_clock` adds the `Clock` tag while the game runs.
pub fn write_game(g: &GameRecord, live_clock: Option<&ClockState>) -> String {
    // A start FEN that does not parse (a damaged journal) numbers the moves from 1.
    let start = match &g.header.start_fen {
        Some(fen) => dgt_core::position_from_fen(fen).ok(),
        None => None,
    };
    let (start, mode) = start.unwrap_or((Chess::default(), CastlingMode::Standard));
    let h = &g.header;
    let round = format!("{}.{}", h.round, h.board);
    let board = h.board.to_string();
    let players = [&h.pairing.white, &h.pairing.black];
    let names = [("White", &h.pairing.white), ("Black", &h.pairing.black)]
        .map(|(side, p)| player_name(&p.name, h.board, side));
    let ids = players.map(|p| p.fide_id.map(|id| id.to_string()));
    let elos = players.map(|p| p.elo.map(|e| e.to_string()));
    let game_id = game_id(&h.event, h.round, h.board);
    let mut extra: Vec<(&str, &str)> = vec![("GameId", &game_id)];
    let tag_names = [
        ["WhiteTitle", "WhiteFideId", "WhiteElo", "WhiteFed", "WhiteTeam"],
        ["BlackTitle", "BlackFideId", "BlackElo", "BlackFed", "BlackTeam"],
    ];
    for (i, [title, fide_id, elo, fed, team]) in tag_names.into_iter().enumerate() {
        let p = players[i];
        let known = [(title, p.title.as_deref()), (fide_id, ids[i].as_deref()), (elo, elos[i].as_deref())];
        let more = [(fed, p.federation.as_deref()), (team, p.team.as_deref())];
        extra.extend(known.into_iter().chain(more).filter_map(|(name, v)| Some((name, v?))));
    }
    let header = PgnHeader {
        event: or_unknown(&h.event),
        site: or_unknown(&h.site),
        date: if h.utc_date.is_empty() { "????.??.??" } else { &h.utc_date },
        round: &round,
        white: &names[0],
        black: &names[1],
        board: Some(&board),
        time_control: h.time_control.as_deref(),
        utc_date: Some(&h.utc_date),
        utc_time: Some(&h.utc_time),
        mode: Some("OTB"),
    };
    let result: Option<GameResult> = g.result.as_deref().and_then(|r| r.parse().ok());
    // An unplayed game's moves (if the board recorded any) are not written: neither are
    // the clock settings read from them.
    let unplayed = result.is_some() && g.termination.as_deref() == Some(dgt_core::UNPLAYED);
    let clocks = if unplayed {
        ClockSettings::default()
    } else {
        ClockSettings::infer(&g.moves, start.turn() == Color::White)
    };
    let game = GameText {
        set_up: h.start_fen.is_some(),
        variant: (mode == CastlingMode::Chess960).then_some("Chess960"),
        result,
        termination: g.termination.as_deref(),
        time_control: clocks.time_control(),
        initial_clocks: clocks.initial,
        live_clock: live_clock.filter(|_| result.is_none()).map(shown),
        extra_tags: &extra,
        ..GameText::new(&start)
    };
    let moves = g.moves.iter().map(|m| PgnPly { san: m.san.as_str(), clk: m.clk, emt: m.emt });
    let mut out = String::with_capacity(512 + g.moves.len() * 48);
    // Writing into a String cannot fail.
    let _ = dgt_core::pgn::write_game(&header, &game, moves, &mut out);
    out
}

fn or_unknown(s: &str) -> &str {
    if s.is_empty() { "?" } else { s }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::store::{GameHeader, JournalMove};
    use crate::tournament::{Pairing, Player};

    fn game() -> GameRecord {
        GameRecord {
            header: GameHeader {
                round: 2,
                board: 5,
                serial: Some("12345".into()),
                event: "Open \"A\"".into(),
                site: "Town".into(),
                time_control: Some("5400+30".into()),
                utc_date: "2025.03.04".into(),
                utc_time: "10:00:00".into(),
                pairing: Pairing {
                    white: Player {
                        name: "Carlsen, Magnus".into(),
                        fide_id: Some(1503014),
                        title: Some("GM".into()),
                        elo: Some(2837),
                        federation: Some("NOR".into()),
                        team: Some("Norway".into()),
                    },
                    black: Player::default(),
                },
                start_fen: None,
                flipped: false,
            },
            moves: (1..=40)
                .map(|ply| JournalMove {
                    ply,
                    san: if ply % 2 == 1 { "Nf3".into() } else { "Nf6".into() },
                    uci: String::new(),
                    // 61 s a move with a 30 s increment from 1:30:00.
                    clk: Some(5400 - 31 * ply.div_ceil(2)),
                    emt: Some(61),
                    fen: None,
                })
                .collect(),
            result: None,
            termination: None,
            white_clock: None,
        }
    }

    #[test]
    fn export_format() {
        let g = game();
        let clock = ClockState {
            white: Some(3600 + 34 * 60 + 56),
            black: Some(10),
            running: Some(Color::White),
            ..ClockState::default()
        };
        let text = write_game(&g, Some(&clock));
        let tags: Vec<&str> = text.lines().take(7).collect();
        assert_eq!(tags[0], r#"[Event "Open \"A\""]"#);
        assert_eq!(tags[3], r#"[Round "2.5"]"#);
        assert_eq!(tags[6], r#"[Result "*"]"#);
        assert!(text.contains("[Board \"5\"]\n"));
        assert!(text.contains("[WhiteFideId \"1503014\"]\n"));
        assert!(text.contains("[Clock \"W/1:34:56\"]\n"));
        // Black's move after a comment carries its number again (the core's one layout).
        assert!(text.contains("1. Nf3 {[%clk 1:29:29] [%emt 0:01:01]} 1... Nf6 {[%clk 1:29:29]"), "{text}");
        assert!(text.contains("[WhiteClock \"1:30:00\"]\n"), "{text}");
        assert!(text.contains("[WhiteElo \"2837\"]\n"), "{text}");
        assert!(text.contains("[Black \"Board 5 Black\"]\n"), "{text}");
        assert!(text.contains("[PlyCount \"40\"]\n"), "{text}");
        assert!(text.lines().all(|l| l.len() < 80), "{text}");
        assert!(text.ends_with(" *\n\n"));
        assert!(text.contains("\n\n1. Nf3"));
    }

    #[test]
    fn black_to_move_start_and_result() {
        let mut g = game();
        g.header.start_fen = Some("8/8/8/8/8/8/8/K1k5 b - - 0 30".into());
        g.moves.truncate(2);
        g.result = Some("1/2-1/2".into());
        g.termination = Some("normal".into());
        let text = write_game(&g, None);
        // ASCII order: FEN before SetUp.
        assert!(text.contains("[FEN \"8/8/8/8/8/8/8/K1k5 b - - 0 30\"]\n[GameId"), "{text}");
        assert!(text.contains("[PlyCount \"2\"]\n[SetUp \"1\"]\n[Termination"), "{text}");
        assert!(text.contains("\n30... Nf3 {"), "{text}");
        assert!(text.contains("31. Nf6"));
        assert!(text.ends_with("1/2-1/2\n\n"));
        assert!(!text.contains("[Clock"));
    }

    #[test]
    fn a_stopped_clock_shows_the_side_to_move_and_tags_keep_their_order() {
        let mut g = game();
        g.moves.truncate(3);
        let clock = ClockState { white: Some(100), black: Some(200), running: None, ..ClockState::default() };
        let text = write_game(&g, Some(&clock));
        // After three plies Black is to move: `N/` with Black's time.
        assert!(text.contains("[Clock \"N/0:03:20\"]\n"), "{text}");
        let names: Vec<&str> =
            text.lines().filter_map(|l| l.strip_prefix('[')).filter_map(|l| l.split(' ').next()).collect();
        // The roster, then ASCII order by tag name (standard 8.1.1).
        assert_eq!(
            names,
            [
                "Event",
                "Site",
                "Date",
                "Round",
                "White",
                "Black",
                "Result",
                "BlackClock",
                "Board",
                "Clock",
                "GameId",
                "Mode",
                "PlyCount",
                "TimeControl",
                "UTCDate",
                "UTCTime",
                "WhiteClock",
                "WhiteElo",
                "WhiteFed",
                "WhiteFideId",
                "WhiteTeam",
                "WhiteTitle",
            ]
        );
        assert!(text.ends_with("2. Nf3 {[%clk 1:28:58] [%emt 0:01:01]} *\n\n"), "{text}");
    }

    #[test]
    fn the_host_and_the_tracker_write_the_same_game_alike() {
        // The tracker's own PGN of a game and the host's, from the journaled moves, share
        // the core's layout: same movetext.
        let mut tracker: dgt_core::Tracker<16> = dgt_core::Tracker::default();
        let ucis = ["e2e4", "c7c5", "g1f3", "d7d6", "d2d4"];
        let plies = ucis.map(|u| dgt_core::ResumePly {
            uci: u.parse().unwrap(),
            clk: Some(3000),
            emt: if u == "c7c5" { None } else { Some(4) },
        });
        tracker
            .resume(
                Chess::default(),
                CastlingMode::Standard,
                dgt_protocol::Orientation::Normal,
                plies,
                0,
                &mut |_| {},
            )
            .unwrap();
        let mut g = game();
        g.moves.clear();
        tracker.for_each_move(dgt_core::View::Confirmed, |m| {
            g.moves.push(JournalMove {
                ply: u32::from(m.ply),
                san: m.san.to_string(),
                uci: m.uci.to_string(),
                clk: m.clk,
                emt: m.emt,
                fen: None,
            })
        });
        let mut theirs = String::new();
        tracker.write_movetext(&mut theirs).unwrap();
        let ours = write_game(&g, None);
        let movetext = ours.split("\n\n").nth(1).unwrap();
        assert_eq!(movetext, theirs);
        assert!(
            theirs.starts_with("1. e4 {[%clk 0:50:00] [%emt 0:00:04]} 1... c5 {[%clk 0:50:00]} 2. Nf3"),
            "{theirs}"
        );
    }

    #[test]
    fn clock_settings_are_read_back_from_the_moves() {
        let mut g = game();
        g.header.time_control = None;
        let c = ClockSettings::infer(&g.moves, true);
        assert_eq!(c, ClockSettings { initial: [Some(5400), Some(5400)], increment: Some(30) });
        let text = write_game(&g, None);
        assert!(text.contains("[TimeControl \"5400+30\"]\n[UTCDate"), "{text}");
        assert!(text.contains("[BlackClock \"1:30:00\"]\n"), "{text}");
        // A new period's time on one press does not move the increment.
        g.moves[20].clk = g.moves[20].clk.map(|c| c + 1800);
        assert_eq!(ClockSettings::infer(&g.moves, true).increment, Some(30));
        // Clock values without a known increment (one move each): no settings, and the
        // movetext's %clk still gets `TimeControl "?"` (supplement section 7).
        g.moves.truncate(2);
        assert_eq!(ClockSettings::infer(&g.moves, true), ClockSettings::default());
        let text = write_game(&g, None);
        assert!(text.contains("[TimeControl \"?\"]\n"), "{text}");
        assert!(!text.contains("WhiteClock"), "{text}");
        // No clock at all: no TimeControl.
        for m in &mut g.moves {
            m.clk = None;
        }
        assert!(!write_game(&g, None).contains("TimeControl"));
    }

    #[test]
    fn arbiter_scores_and_forfeits_as_lichess_reads_them() {
        let mut g = game();
        g.moves.truncate(4);
        for (given, tag, marker) in [("0-0", "0-0", "*"), ("1/2-0", "1/2-0", "*"), ("0-1/2", "0-1/2", "*")] {
            g.result = Some(given.parse::<GameResult>().unwrap().as_pgn().to_owned());
            g.termination = Some("normal".into());
            let text = write_game(&g, None);
            assert!(text.contains(&format!("[Result \"{tag}\"]\n")), "{text}");
            assert!(text.ends_with(&format!("[%emt 0:01:01]}}\n{marker}\n\n")), "{text}");
        }
        // A forfeit: the score, `Termination "Unplayed"`, and none of the moves the board
        // may have recorded (they stay in the journal).
        g.result = Some("1-0".into());
        g.termination = Some(dgt_core::UNPLAYED.into());
        let text = write_game(&g, None);
        assert!(
            text.contains("[PlyCount \"0\"]\n") && text.contains("[Termination \"Unplayed\"]\n"),
            "{text}"
        );
        assert!(text.ends_with("\n\n1-0\n\n"), "{text}");
        assert!(!text.contains("Nf3") && !text.contains("WhiteClock"), "{text}");
    }

    #[test]
    fn federations_and_teams_are_tagged() {
        let g = game();
        let text = write_game(&g, None);
        assert!(text.contains("[WhiteFed \"NOR\"]\n"), "{text}");
        assert!(text.contains("[WhiteTeam \"Norway\"]\n"), "{text}");
        assert!(!text.contains("BlackFed") && !text.contains("BlackTeam"), "{text}");
    }

    #[test]
    fn game_ids_are_stable_per_event_round_and_board() {
        let mut g = game();
        let id = |g: &GameRecord| {
            let text = write_game(g, None);
            text.lines()
                .find_map(|l| l.strip_prefix("[GameId \""))
                .map(|l| l.trim_end_matches("\"]").to_owned())
        };
        let first = id(&g).unwrap();
        assert_eq!(first, game_id("Open \"A\"", 2, 5));
        assert!(first.starts_with("r2b5-") && first.len() == 13, "{first}");
        // Corrections, another e-board, players paired later: the same id.
        g.moves.truncate(3);
        g.header.serial = Some("999".into());
        g.header.pairing.black.name = "Caruana, Fabiano".into();
        g.result = Some("1-0".into());
        assert_eq!(id(&g).unwrap(), first);
        assert_ne!(game_id("Open \"A\"", 2, 6), first);
        assert_ne!(game_id("Open \"A\"", 3, 5), first);
        assert_ne!(game_id("Open B", 2, 5), first);
    }

    #[test]
    fn unpaired_sides_get_names_lichess_keeps() {
        assert_eq!(player_name("", 3, "White"), "Board 3 White");
        assert_eq!(player_name(" ? ", 3, "Black"), "Board 3 Black");
        assert_eq!(player_name("Ding, Liren", 3, "Black"), "Ding, Liren");
        let mut g = game();
        g.header.pairing = Pairing::default();
        let text = write_game(&g, None);
        assert!(text.contains("[White \"Board 5 White\"]\n[Black \"Board 5 Black\"]\n"), "{text}");
    }

    #[test]
    fn pgn_dates_and_times_are_utc() {
        assert_eq!(utc_date_time(0), ("1970.01.01".to_owned(), "00:00:00".to_owned()));
        assert_eq!(utc_date_time(951_782_400), ("2000.02.29".to_owned(), "00:00:00".to_owned()));
        assert_eq!(utc_date_time(1_764_100_000), ("2025.11.25".to_owned(), "19:46:40".to_owned()));
    }
}
