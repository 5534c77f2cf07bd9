//! The hand-action generator, checked on the wire without ptys: each profile produces the
//! field-event patterns it claims, and every replay ends with the source game's position.

mod common;

use std::collections::BTreeSet;

use dgt_hil_sim::firmware::BoardConfig;
use dgt_hil_sim::hands::{GameEnd, PlanOptions, Profile, plan_game, touched_squares};
use dgt_hil_sim::offline::{OfflineReplay, replay_offline};
use dgt_hil_sim::pgn::{SourceGame, parse_games};
use dgt_hil_sim::scenario::{Action, Scenario, board_codes, codes_board};
use dgt_hil_sim::{GroundTruth, Received};
use dgt_protocol::{Command, DgtSquare, Orientation, PieceCode};
use shakmaty::{Chess, Piece, Position, Role, Square};

const P: u64 = 200;

fn opts(profile: Profile, seed: u64) -> PlanOptions {
    PlanOptions { profile, seed, scan_period_ms: P, ..PlanOptions::default() }
}

fn replay(game: &SourceGame, profile: Profile, seed: u64) -> (Scenario, GroundTruth, OfflineReplay) {
    let scenario = plan_game(game, &opts(profile, seed));
    let truth = scenario.truth.clone().expect("truth");
    let config = BoardConfig { scan_period_ms: P, ..BoardConfig::default() };
    let replay = replay_offline(&scenario, config, Command::SendUpdateNice);
    (scenario, truth, replay)
}

/// Field updates in game squares: (time, square, piece).
fn updates(r: &OfflineReplay, orientation: Orientation) -> Vec<(u64, Square, Option<Piece>)> {
    r.received
        .iter()
        .filter_map(|(t, x)| match x {
            Received::Field { index, raw } => {
                let sq = DgtSquare::new(*index)?.to_square(orientation);
                Some((*t, sq, PieceCode::from_nibble(*raw).piece()))
            }
            _ => None,
        })
        .collect()
}

/// The updates of each ply: after the previous press, up to one scan after its own press.
fn per_ply(truth: &GroundTruth, ups: &[(u64, Square, Option<Piece>)]) -> Vec<Vec<(Square, Option<Piece>)>> {
    let mut out = Vec::new();
    let mut from = 0;
    for m in &truth.moves {
        let press = m.press_at_ms.expect("a clock in these profiles");
        out.push(
            ups.iter().filter(|(t, _, _)| *t > from && *t <= press + P).map(|(_, s, p)| (*s, *p)).collect(),
        );
        from = press + P;
    }
    out
}

fn orientation(truth: &GroundTruth) -> Orientation {
    if truth.orientation == "rotated" { Orientation::Rotated } else { Orientation::Normal }
}

/// The host's picture (dumps + updates) and the board's final dump both show the game's end.
fn assert_ends_right(game: &SourceGame, truth: &GroundTruth, r: &OfflineReplay) {
    let o = orientation(truth);
    let final_pos = game.final_position();
    let physical = codes_board(r.firmware.physical(), o);
    assert_eq!(physical.to_string(), truth.final_board, "the board holds the final position");
    if truth.end != "kings_in_centre" {
        assert_eq!(&physical, final_pos.board());
    }
    let sans: Vec<&str> = game.moves.iter().map(|m| m.san.as_str()).collect();
    assert_eq!(truth.san_moves(), sans);
}

fn games() -> Vec<SourceGame> {
    common::short_worldcup_games(6, 90)
}

/// Long thinking times so every hand step is a scan of its own (no squeezing).
fn twic(n: usize) -> Vec<SourceGame> {
    common::corpus_games("twic1599-excerpt.pgn")
        .into_iter()
        .filter(|g| g.truncated.is_none() && g.moves.len() >= 30 && g.moves.len() <= 80)
        .take(n)
        .collect()
}

#[test]
fn clean_moves_show_exactly_the_squares_of_the_move_in_hand_order() {
    for game in twic(4) {
        let (_, truth, r) = replay(&game, Profile::Clean, 1);
        let o = orientation(&truth);
        let plies = per_ply(&truth, &updates(&r, o));
        let mut pos = game.start.clone();
        for (k, (ups, sm)) in plies.iter().zip(&game.moves).enumerate() {
            let mv = sm.mv;
            let touched = touched_squares(mv);
            assert!(
                ups.iter().all(|(s, _)| touched.contains(*s)),
                "ply {k}: only the move's squares: {ups:?}"
            );
            let piece = pos.board().piece_at(mv.from().expect("from")).expect("mover");
            let expected: Vec<(Square, Option<Piece>)> = match mv {
                shakmaty::Move::Normal { from, to, capture: None, promotion: None, .. } => {
                    vec![(from, None), (to, Some(piece))]
                }
                shakmaty::Move::Normal { from, to, capture: Some(_), promotion: None, .. } => {
                    vec![(to, None), (from, None), (to, Some(piece))]
                }
                _ => {
                    pos.play_unchecked(mv);
                    continue;
                }
            };
            assert_eq!(ups, &expected, "ply {k} {}", sm.san);
            pos.play_unchecked(mv);
        }
        assert_ends_right(&game, &truth, &r);
        assert!(truth.events_used.keys().all(|k| k.starts_with("castle") || k == "promotion_direct"));
    }
}

#[test]
fn capture_orders_show_victim_first_mover_first_and_a_one_scan_swap() {
    let mut seen = BTreeSet::new();
    for game in twic(3) {
        let (_, truth, r) = replay(&game, Profile::CaptureOrders, 5);
        let plies = per_ply(&truth, &updates(&r, orientation(&truth)));
        for ((ups, m), sm) in plies.iter().zip(&truth.moves).zip(&game.moves) {
            let (Some(from), to) = (sm.mv.from(), sm.mv.to()) else { continue };
            if m.events.iter().any(|e| e == "capture_mover_first") {
                assert_eq!(ups.first().map(|u| u.0), Some(from), "{ups:?}");
                assert!(ups.contains(&(to, None)));
                seen.insert("mover_first");
            } else if m.events.iter().any(|e| e == "capture_victim_first")
                && !m.events.iter().any(|e| e == "reorder")
            {
                assert_eq!(ups.first(), Some(&(to, None)), "{ups:?}");
                seen.insert("victim_first");
            } else if m.events.iter().any(|e| e == "capture_swap") {
                assert_eq!(ups.len(), 2, "the victim's removal is never seen: {ups:?}");
                assert!(!ups.contains(&(to, None)));
                seen.insert("swap");
            }
        }
        assert_ends_right(&game, &truth, &r);
    }
    assert_eq!(seen.len(), 3, "{seen:?}");
}

#[test]
fn castling_orders_vary() {
    let mut firsts = BTreeSet::new();
    let mut both_lifted = false;
    for seed in 0..6 {
        for game in twic(3) {
            let (_, truth, r) = replay(&game, Profile::CastlingOrders, seed);
            let plies = per_ply(&truth, &updates(&r, orientation(&truth)));
            for (ups, sm) in plies.iter().zip(&game.moves) {
                if let shakmaty::Move::Castle { king, rook } = sm.mv {
                    assert_eq!(ups.len(), 4, "{ups:?}");
                    firsts.insert(if ups[0].0 == king {
                        "king"
                    } else {
                        assert_eq!(ups[0].0, rook);
                        "rook"
                    });
                    both_lifted |= ups[0].1.is_none() && ups[1].1.is_none();
                }
            }
            assert_ends_right(&game, &truth, &r);
        }
    }
    assert_eq!(firsts.len(), 2);
    assert!(both_lifted);
}

const EP_GAME: &str =
    "[Result \"*\"]\n\n1. e4 a6 2. e5 d5 3. exd6 c5 4. d4 h6 5. d5 e5 6. dxe6 b5 7. h4 g5 8. hxg6 *\n";

#[test]
fn en_passant_victim_comes_off_first_last_or_between() {
    let game = parse_games(EP_GAME).remove(0);
    let mut kinds = BTreeSet::new();
    for seed in 0..8 {
        let (_, truth, r) = replay(&game, Profile::EnPassant, seed);
        let plies = per_ply(&truth, &updates(&r, orientation(&truth)));
        for ((ups, sm), m) in plies.iter().zip(&game.moves).zip(&truth.moves) {
            if let shakmaty::Move::EnPassant { from, to } = sm.mv {
                let victim = Square::from_coords(to.file(), from.rank());
                let pos = |x: (Square, Option<Piece>)| ups.iter().position(|u| *u == x);
                let v = pos((victim, None)).expect("the victim leaves");
                let p = ups.iter().position(|u| u.0 == to && u.1.is_some()).expect("the pawn lands");
                let f = pos((from, None)).expect("the pawn leaves");
                let kind = if v < f {
                    "first"
                } else if v > p {
                    "last"
                } else {
                    "between"
                };
                assert!(m.events.iter().any(|e| e == &format!("ep_victim_{kind}")), "{kind} {:?}", m.events);
                kinds.insert(kind);
            }
        }
        assert_ends_right(&game, &truth, &r);
    }
    assert_eq!(kinds.len(), 3, "{kinds:?}");
}

const PROMO_GAME: &str =
    "[FEN \"8/4P1P1/8/8/8/k7/1p6/7K w - - 0 1\"]\n[SetUp \"1\"]\n\n1. e8=Q Kb3 2. g8=N b1=R+ 3. Kg2 *\n";

#[test]
fn promotion_pawn_then_swap_or_direct() {
    let game = parse_games(PROMO_GAME).remove(0);
    assert_eq!(game.moves.len(), 5, "{:?}", game.truncated);
    let mut kinds = BTreeSet::new();
    for seed in 0..8 {
        let (_, truth, r) = replay(&game, Profile::Promotion, seed);
        let plies = per_ply(&truth, &updates(&r, orientation(&truth)));
        for ((ups, sm), m) in plies.iter().zip(&game.moves).zip(&truth.moves) {
            if let shakmaty::Move::Normal { to, promotion: Some(role), .. } = sm.mv {
                let on_to: Vec<Option<Role>> =
                    ups.iter().filter(|u| u.0 == to).map(|u| u.1.map(|p| p.role)).collect();
                if m.events.iter().any(|e| e == "promotion_swap") {
                    assert_eq!(on_to, vec![Some(Role::Pawn), None, Some(role)]);
                    kinds.insert("swap");
                } else {
                    assert_eq!(on_to, vec![Some(role)], "the board reports the new piece");
                    kinds.insert("direct");
                }
            }
        }
        assert_ends_right(&game, &truth, &r);
    }
    assert_eq!(kinds.len(), 2);
}

/// Squares changed by a ply outside the move's own squares.
fn foreign(ups: &[(Square, Option<Piece>)], mv: shakmaty::Move) -> Vec<(Square, Option<Piece>)> {
    let t = touched_squares(mv);
    ups.iter().filter(|u| !t.contains(u.0)).copied().collect()
}

#[test]
fn slides_show_the_squares_in_between() {
    let mut slid = 0;
    for game in twic(3) {
        let (_, truth, r) = replay(&game, Profile::Slide, 2);
        let plies = per_ply(&truth, &updates(&r, orientation(&truth)));
        for ((ups, sm), m) in plies.iter().zip(&game.moves).zip(&truth.moves) {
            let extra = foreign(ups, sm.mv);
            if m.events.iter().any(|e| e == "slide") {
                let between: Vec<Square> =
                    shakmaty::attacks::between(sm.mv.from().expect("from"), sm.mv.to()).into_iter().collect();
                assert_eq!(
                    extra.len(),
                    2 * between.len(),
                    "each square in between is seen full then empty: {ups:?}"
                );
                slid += 1;
            } else {
                assert!(extra.is_empty());
            }
        }
        assert_ends_right(&game, &truth, &r);
    }
    assert!(slid > 10);
}

#[test]
fn adjust_and_nudge_put_pieces_back_where_they_were() {
    let (mut adjusted, mut nudged) = (0, 0);
    for game in twic(3) {
        let (_, truth, r) = replay(&game, Profile::Adjust, 3);
        let plies = per_ply(&truth, &updates(&r, orientation(&truth)));
        for ((ups, sm), m) in plies.iter().zip(&game.moves).zip(&truth.moves) {
            let to = match sm.mv {
                shakmaty::Move::Castle { king, rook } => dgt_hil_sim::hands::castle_targets(king, rook).0,
                mv => mv.to(),
            };
            if m.events.iter().any(|e| e == "adjust") {
                let on_to: Vec<Option<Piece>> = ups.iter().filter(|u| u.0 == to).map(|u| u.1).collect();
                let n = on_to.len();
                assert!(n >= 3 && on_to[n - 2].is_none() && on_to[n - 1] == on_to[n - 3], "{on_to:?}");
                adjusted += 1;
            }
            if m.events.iter().any(|e| e == "nudge") {
                let extra = foreign(ups, sm.mv);
                assert_eq!(extra.len(), 2);
                assert_eq!((extra[0].0, extra[0].1), (extra[1].0, None));
                nudged += 1;
            }
        }
        assert_ends_right(&game, &truth, &r);
    }
    assert!(adjusted > 5 && nudged > 3, "{adjusted} {nudged}");
}

#[test]
fn reorder_reports_the_placement_before_the_lift() {
    let mut n = 0;
    for game in twic(3) {
        let (_, truth, r) = replay(&game, Profile::Reorder, 4);
        let plies = per_ply(&truth, &updates(&r, orientation(&truth)));
        for ((ups, sm), m) in plies.iter().zip(&game.moves).zip(&truth.moves) {
            if m.events.iter().any(|e| e == "reorder") {
                let from = sm.mv.from().expect("from");
                let placed = ups.iter().position(|u| u.0 == sm.mv.to() && u.1.is_some()).expect("placed");
                let lifted = ups.iter().position(|u| *u == (from, None)).expect("lifted");
                assert!(placed < lifted, "{ups:?}");
                n += 1;
            }
        }
        assert_ends_right(&game, &truth, &r);
    }
    assert!(n > 20);
}

/// The bursts of a plan: each group's first ply and one past its last.
fn burst_groups(truth: &GroundTruth) -> Vec<(usize, usize)> {
    let has = |k: usize, tag: &str| truth.moves[k].events.iter().any(|e| e == tag);
    let mut groups = Vec::new();
    let mut k = 0;
    while k < truth.moves.len() {
        if !has(k, "burst_start") {
            k += 1;
            continue;
        }
        let mut end = k + 1;
        while end < truth.moves.len() && has(end, "burst") && !has(end, "burst_start") {
            end += 1;
        }
        groups.push((k, end));
        k = end;
    }
    groups
}

#[test]
fn bursts_put_several_plies_between_two_scans() {
    let (mut bursts, mut forgotten) = (0, 0);
    for seed in 0..3 {
        for game in twic(2) {
            let (scenario, truth, r) = replay(&game, Profile::Burst, seed);
            let ups = updates(&r, orientation(&truth));
            let mut pos = game.start.clone();
            let mut played = 0;
            for (k, end) in burst_groups(&truth) {
                for g in &game.moves[played..k] {
                    pos.play_unchecked(g.mv);
                }
                let m = &truth.moves[k];
                assert!(end - k >= 2, "a burst has two plies or more");
                let before = pos.board().clone();
                for g in &game.moves[k..end] {
                    pos.play_unchecked(g.mv);
                }
                let changed: BTreeSet<Square> = Square::ALL
                    .into_iter()
                    .filter(|s| before.piece_at(*s) != pos.board().piece_at(*s))
                    .collect();
                let from = if k > 0 { truth.moves[k - 1].press_at_ms.unwrap_or(0) + P } else { 0 };
                let to = truth.moves[end - 1].press_at_ms.unwrap_or(0) + P;
                let seen: Vec<&(u64, Square, Option<Piece>)> =
                    ups.iter().filter(|u| u.0 > from && u.0 <= to).collect();
                let times: BTreeSet<u64> = seen.iter().map(|u| u.0).collect();
                assert!(
                    times.len() <= 1,
                    "one scan sees the whole burst: {seen:?}\n{:?}",
                    truth.moves[k.saturating_sub(2)..end + 1]
                        .iter()
                        .map(|m| (&m.san, m.press_at_ms, &m.events))
                        .collect::<Vec<_>>()
                );
                let squares: BTreeSet<Square> = seen.iter().map(|u| u.1).collect();
                assert_eq!(squares, changed, "only the net change of {} plies is seen", end - k);
                if m.events.iter().any(|e| e == "forgot_press") {
                    let own = m.press_at_ms.expect("press");
                    let next_move_placed = scenario.actions.iter().any(|a| {
                        matches!(a.action, Action::Place { .. })
                            && a.at_ms < own
                            && a.at_ms > truth.moves[k].press_at_ms.unwrap_or(0).saturating_sub(P)
                            && touched_squares(game.moves[k + 1].mv).contains(match a.action {
                                Action::Place { square, .. } => square,
                                _ => Square::A1,
                            })
                    });
                    assert!(next_move_placed, "the opponent moved before the forgotten press");
                    forgotten += 1;
                }
                bursts += 1;
                played = end;
            }
            assert_ends_right(&game, &truth, &r);
        }
    }
    assert!(bursts > 3 && forgotten > 0, "{bursts} {forgotten}");
}

#[test]
fn a_burst_never_takes_a_piece_out_and_back() {
    // White's king, walled in by its pawns, can only step to g1 and back; the black king
    // walks too. Every ply is under a second, so bursts are planned everywhere, but a burst
    // holding White's Kg1 and Kh1 around a black move would show the board with only the
    // black king moved, as if White had passed, and no other line explains that board (the
    // check for other lines does not catch it): such bursts are shortened.
    // Black's return to h8 takes 5 s, so the three plies before it may form a burst.
    let mut movetext = String::new();
    for n in 0..16 {
        let (w, b, emt) = if n % 2 == 0 { ("Kg1", "Kg8", 0) } else { ("Kh1", "Kh8", 5) };
        movetext.push_str(&format!("{}. {w} {{[%emt 0:00:00]}} {b} {{[%emt 0:00:0{emt}]}} ", n + 1));
    }
    let pgn = format!(
        "[White \"A\"]\n[Black \"B\"]\n[Result \"1/2-1/2\"]\n[SetUp \"1\"]\n\
         [FEN \"7k/8/8/8/8/6P1/6PP/7K w - - 0 1\"]\n\n{movetext}1/2-1/2\n"
    );
    let game = parse_games(&pgn).into_iter().next().expect("the game");
    assert!(game.truncated.is_none(), "{:?}", game.truncated);
    let mut bursts = 0;
    for seed in 0..100 {
        let scenario = plan_game(&game, &opts(Profile::Burst, seed));
        let truth = scenario.truth.expect("truth");
        for (k, end) in burst_groups(&truth) {
            let white_first = k % 2 == 0;
            assert!(
                end - k < 3 || !white_first,
                "seed {seed}: a burst of plies {}..={end} takes White's king out and back",
                k + 1
            );
            bursts += 1;
        }
    }
    assert!(bursts >= 5, "bursts are still planned: {bursts}");
}

#[test]
fn takebacks_show_a_wrong_move_then_the_real_one() {
    let mut n = 0;
    for game in twic(3) {
        let (_, truth, r) = replay(&game, Profile::Takeback, 6);
        let plies = per_ply(&truth, &updates(&r, orientation(&truth)));
        let mut pos = game.start.clone();
        for ((ups, sm), m) in plies.iter().zip(&game.moves).zip(&truth.moves) {
            if m.events.iter().any(|e| e == "takeback") {
                // Some intermediate board is the position after another legal move.
                let mut board = pos.board().clone();
                let mut wrong_seen = false;
                for (sq, piece) in ups {
                    match piece {
                        Some(p) => board.set_piece_at(*sq, *p),
                        None => board.discard_piece_at(*sq),
                    }
                    wrong_seen |= pos.legal_moves().iter().any(|mv| {
                        *mv != sm.mv && {
                            let mut after = pos.clone();
                            after.play_unchecked(*mv);
                            after.board() == &board
                        }
                    });
                }
                assert!(wrong_seen, "{ups:?}");
                n += 1;
            }
            pos.play_unchecked(sm.mv);
        }
        assert_ends_right(&game, &truth, &r);
    }
    assert!(n > 3);
}

#[test]
fn knocked_over_pieces_come_back() {
    let mut n = 0;
    for game in twic(3) {
        let (_, truth, r) = replay(&game, Profile::KnockOver, 7);
        let plies = per_ply(&truth, &updates(&r, orientation(&truth)));
        let mut pos: Chess = game.start.clone();
        for ((ups, sm), m) in plies.iter().zip(&game.moves).zip(&truth.moves) {
            let extra = foreign(ups, sm.mv);
            if m.events.iter().any(|e| e == "knocked_over") {
                let first = extra.iter().find(|u| u.1.is_none()).expect("the knocked piece is seen");
                let piece = pos.board().piece_at(first.0).expect("a piece was there");
                assert_eq!(extra.iter().rev().find(|u| u.0 == first.0), Some(&(first.0, Some(piece))));
                n += 1;
            } else {
                assert!(extra.is_empty());
            }
            pos.play_unchecked(sm.mv);
        }
        assert_ends_right(&game, &truth, &r);
    }
    assert!(n > 3);
}

#[test]
fn dropped_updates_leave_the_dump_right() {
    for game in twic(2) {
        let (_, truth, r) = replay(&game, Profile::DroppedUpdates, 8);
        assert!(truth.events_used.get("dropped_update").copied().unwrap_or(0) > 2);
        assert_eq!(r.firmware.stats().dropped_updates as u32, truth.events_used["dropped_update"]);
        let o = orientation(&truth);
        assert_ne!(
            r.host_view(),
            board_codes(&codes_board(r.firmware.physical(), o), o).map(PieceCode::code)
        );
        // A fresh dump from the board is right.
        let mut fw = r.firmware.clone();
        fw.receive(&[0x42], truth.duration_ms + 10);
        let out = fw.take_output();
        assert_eq!(&out[3..67], &r.firmware.physical().map(PieceCode::code));
        assert_ends_right(&game, &truth, &r);
    }
}

#[test]
fn disconnects_power_cycle_the_board_and_the_host_resyncs() {
    for game in games().into_iter().take(3) {
        let (_, truth, r) = replay(&game, Profile::Disconnect, 9);
        assert!(!r.reconnects.is_empty());
        for t in &r.reconnects {
            assert!(r.received.iter().any(|(at, x)| at == t && matches!(x, Received::BoardDump(_))));
        }
        assert_eq!(r.host_view(), r.firmware.physical().map(PieceCode::code));
        assert_ends_right(&game, &truth, &r);
    }
}

#[test]
fn garbage_is_noise_the_decoder_skips() {
    for game in games().into_iter().take(3) {
        let (_, truth, r) = replay(&game, Profile::Garbage, 10);
        assert!(truth.events_used.get("garbage").copied().unwrap_or(0) > 0);
        assert!(r.received.iter().any(|(_, x)| matches!(x, Received::Noise(_))));
        assert_eq!(r.host_view(), r.firmware.physical().map(PieceCode::code));
        assert_ends_right(&game, &truth, &r);
    }
}

#[test]
fn rotated_boards_report_turned_indices() {
    let game = &games()[0];
    let (_, truth, r) = replay(game, Profile::Rotated, 11);
    assert_eq!(truth.orientation, "rotated");
    let Some((_, Received::BoardDump(first))) =
        r.received.iter().find(|(_, x)| matches!(x, Received::BoardDump(_)))
    else {
        panic!("no dump")
    };
    assert_eq!(first[0], PieceCode::WhiteRook.code());
    assert_eq!(first[3], PieceCode::WhiteKing.code(), "h1..a1 from the connector's side");
    assert_eq!(r.final_dump, r.firmware.physical().map(PieceCode::code));
    assert_eq!(truth.clock.as_ref().map(|c| c.white_side.as_str()), Some("right"));
    assert_ends_right(game, &truth, &r);
}

#[test]
fn no_clock_means_no_presses_and_no_readings() {
    let game = &games()[1];
    let (scenario, truth, r) = replay(game, Profile::NoClock, 12);
    assert!(truth.clock.is_none());
    assert!(
        scenario.actions.iter().all(|a| !matches!(a.action, Action::PressClock { .. } | Action::StartClock))
    );
    assert!(
        r.received.iter().all(|(_, x)| !matches!(x, Received::Times(t) if !t.status.no_clock())),
        "only no-clock readings"
    );
    assert_ends_right(game, &truth, &r);
}

#[test]
fn mixed_is_seeded_and_uses_many_kinds() {
    let all = games();
    let a = plan_game(&all[0], &opts(Profile::Mixed, 7));
    let b = plan_game(&all[0], &opts(Profile::Mixed, 7));
    let c = plan_game(&all[0], &opts(Profile::Mixed, 8));
    assert_eq!(a.actions, b.actions);
    assert_ne!(a.actions, c.actions);
    let mut kinds = BTreeSet::new();
    for (i, game) in all.iter().enumerate() {
        for seed in 0..3 {
            let (_, truth, r) = replay(game, Profile::Mixed, seed * 100 + i as u64);
            kinds.extend(truth.events_used.keys().cloned());
            if !truth.events_used.contains_key("dropped_update") {
                assert_eq!(r.host_view(), r.firmware.physical().map(PieceCode::code));
            }
            assert_eq!(r.final_dump, r.firmware.physical().map(PieceCode::code));
            assert_ends_right(game, &truth, &r);
        }
    }
    assert!(kinds.len() >= 10, "{kinds:?}");
}

#[test]
fn clocks_follow_the_source_and_game_ends_show() {
    for game in games() {
        let (scenario, truth, _) = replay(&game, Profile::Clean, 13);
        // %clk is met within a second wherever the source is consistent.
        let mut met = 0;
        let mut with_clk = 0;
        for (m, sm) in truth.moves.iter().zip(&game.moves) {
            let shown = if m.color == "white" { m.white_clock_s } else { m.black_clock_s };
            if let Some(clk) = sm.clk_s {
                with_clk += 1;
                if shown.is_some_and(|s| s.abs_diff(clk) <= 1) {
                    met += 1;
                }
            }
        }
        assert!(met * 100 >= with_clk * 90, "{met}/{with_clk} plies show the source's %clk");
        match truth.end.as_str() {
            "resignation" => {
                assert!(scenario.actions.iter().any(|a| matches!(a.action, Action::Button { .. })))
            }
            "kings_in_centre" => {
                let board: shakmaty::Board = truth
                    .final_board
                    .parse::<shakmaty::fen::Fen>()
                    .map(|f| f.as_setup().board.clone())
                    .unwrap_or_default();
                let kings: Vec<Square> = board.kings().into_iter().collect();
                assert!(kings.iter().all(|k| [Square::D4, Square::D5, Square::E4, Square::E5].contains(k)));
            }
            "checkmate" | "stalemate" | "none" | "flag_fall" => {}
            other => panic!("unknown end {other}"),
        }
    }
    // A forced flag fall: the loser is to move and lets the time run out.
    let game = games()
        .into_iter()
        .chain(common::short_worldcup_games(60, 120))
        .find(|g| {
            let pos = g.final_position();
            let loser = if g.result == "1-0" { shakmaty::Color::Black } else { shakmaty::Color::White };
            matches!(g.result.as_str(), "1-0" | "0-1") && !pos.is_checkmate() && pos.turn() == loser
        })
        .expect("a game lost by the side to move");
    let mut o = opts(Profile::Clean, 1);
    o.end = GameEnd::FlagFall;
    let scenario = plan_game(&game, &o);
    let truth = scenario.truth.clone().expect("truth");
    assert_eq!(truth.end, "flag_fall");
    let config = BoardConfig { scan_period_ms: P, ..BoardConfig::default() };
    let r = replay_offline(&scenario, config, Command::SendUpdateNice);
    let flagged = r
        .received
        .iter()
        .any(|(_, x)| matches!(x, Received::Times(t) if t.left.flags.final_flag || t.right.flags.final_flag));
    assert!(flagged, "the flag falls on the wire");
}
