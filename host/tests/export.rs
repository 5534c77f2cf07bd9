//! The data folder through the Lichess Broadcaster app's eyes (`broadcaster/mod.rs`): a round
//! folder is accepted, the tournament folder of two rounds refused, the games uploaded in
//! board order and all accepted by the push stand-in; `index.json` and `tournament.json`
//! carry LiveChess's fields.
#![allow(clippy::unwrap_used)]

mod broadcaster;
mod common;
mod lichess;

use dgt_relay::record::{GameHeader, GameRecord, JournalMove};
use dgt_relay::store::Store;
use dgt_relay::tournament::{Pairing, Player};

fn game(round: u32, board: u32, sans: &[&str], result: Option<&str>) -> GameRecord {
    let mut g = GameRecord::new(GameHeader {
        round,
        board,
        serial: None,
        event: "Folder test".into(),
        site: "Here".into(),
        time_control: None,
        utc_date: "2025.11.21".into(),
        utc_time: "12:00:00".into(),
        pairing: Pairing {
            white: Player {
                name: format!("Last{board}, First"),
                fide_id: Some(1000 + u64::from(board)),
                ..Player::default()
            },
            black: Player::default(),
        },
        start_fen: None,
        flipped: false,
    });
    g.moves = sans
        .iter()
        .enumerate()
        .map(|(i, s)| JournalMove {
            ply: i as u32 + 1,
            san: (*s).into(),
            uci: String::new(),
            clk: None,
            emt: None,
            fen: None,
        })
        .collect();
    g.result = result.map(str::to_owned);
    g
}

#[test]
fn the_broadcaster_app_accepts_a_round_folder_and_uploads_it_in_board_order() {
    let dir = common::tmpdir("export");
    let data = dir.join("data");
    let (store, _) = Store::open(&data, dgt_relay::clock::Clock::system()).unwrap();
    for board in 1..=12 {
        let result = (board % 3 == 0).then_some("1-0");
        store.set_pgn(
            1,
            board,
            dgt_relay::pgn::write_game(&game(1, board, &["e4", "e5", "Nf3"], result), None),
        );
    }
    store.set_pgn(2, 1, dgt_relay::pgn::write_game(&game(2, 1, &["d4"], None), None));
    store.flush_pgn().unwrap();
    let ctx = dgt_relay::export::ExportContext {
        event: dgt_relay::tournament::Event {
            name: "Folder test".into(),
            site: "Here".into(),
            ..dgt_relay::tournament::Event::default()
        },
        relaying: true,
        ..Default::default()
    };
    dgt_relay::export::write_export(&store, &ctx, &data).unwrap();

    // The tournament folder holds two games.pgn: the app refuses it; a round folder is fine.
    assert!(!broadcaster::folder_accepted(&data));
    let round = data.join("round-1");
    assert!(broadcaster::folder_accepted(&round));
    let files = broadcaster::files_to_upload(&broadcaster::file_list(&round, true));
    let names: Vec<String> =
        files.iter().map(|f| f.file_name().unwrap().to_string_lossy().into_owned()).collect();
    assert_eq!(names, (1..=12).map(|b| format!("game-{b}.pgn")).collect::<Vec<_>>());
    // What it pushes, game by game as Lichess reads it: every game accepted, boards in order.
    let upload = broadcaster::upload_text(&round);
    let games = lichess::split(&upload);
    assert_eq!(games.len(), 12);
    for (i, text) in games.iter().enumerate() {
        let g = lichess::validate(text).unwrap_or_else(|e| panic!("{e:?}"));
        assert_eq!(g.tags["Board"], (i + 1).to_string());
        assert_eq!(g.moves, ["e4", "e5", "Nf3"]);
    }

    let index: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(round.join("index.json")).unwrap()).unwrap();
    let p = index["pairings"].as_array().unwrap();
    assert_eq!(p.len(), 12);
    assert_eq!(p[9]["white"]["lname"], "Last10");
    assert_eq!(p[9]["white"]["fname"], "First");
    assert_eq!(p[9]["white"]["fideid"], 1010);
    assert_eq!(p[9]["black"]["lname"], "Board 10 Black");
    assert_eq!((p[2]["result"].as_str(), p[2]["live"].as_bool()), (Some("1-0"), Some(false)));
    assert_eq!((p[0]["result"].as_str(), p[0]["live"].as_bool()), (Some("*"), Some(true)));
    let t: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(data.join("tournament.json")).unwrap()).unwrap();
    assert_eq!(t["name"], "Folder test");
    assert_eq!(t["rounds"], serde_json::json!([{"count": 12, "live": 8}, {"count": 1, "live": 1}]));
    // Only games.pgn (another program's round): the app uploads it alone.
    let only = dir.join("only-games");
    std::fs::create_dir_all(&only).unwrap();
    std::fs::copy(round.join("games.pgn"), only.join("games.pgn")).unwrap();
    assert_eq!(lichess::split(&broadcaster::upload_text(&only)).len(), 12);
}
