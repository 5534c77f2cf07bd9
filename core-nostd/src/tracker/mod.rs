//! The tracker: board and clock messages in, certain moves out.
//!
//! # The model
//! One model, in five parts, each in its own module:
//! - **Evidence** (`input`, [`Stamp`], `PlyMeta`, `presses`): what the board and clock
//!   said, in the stream's order. Every message is numbered where it came in the stream
//!   (the order things happened, which a link that holds bytes back keeps) beside the time
//!   it was read (only the latest it can have happened). A dump shows the board after what
//!   came before its *request*; presses keep what the board, or the first dump asked for
//!   after them, showed as the presser's last ply.
//! - **Candidates** (`explain`, [`crate::search`]): lines from the last confirmed ply, some
//!   provisional plies kept, the rest from one generator (iterative deepening, pruned by
//!   what the squares left to change allow, over the touched squares for a board far
//!   ahead, bounded by the presses).
//! - **One score** (`explain::Basis`, [`crate::search`]'s `Score` and `Rejection`): first
//!   what a line rests on, then fewer plies, positions the board showed on the way, plies
//!   in the order the board reported them, landings reported, fewer changes whose reports
//!   the line needs lost. Lines the evidence forbids
//!   are rejected by name; two lines that score the same are an order the board never
//!   showed (the operator is told, the plies wait), never a choice.
//! - **Presses assigned from the chosen line** (`presses`, [`Tracker::ply_of`]).
//! - **One finality rule** (`finality`): the prefix every near-best line shares is
//!   confirmed once it is pressed and stable, timed out, or verified by a dump.
//!
//! Every length of time is in [`crate::Timing`]; [`Tracker::poll_at`] (`deadline`) says
//! when time next matters. `line` edits the line and writes the events, `lifecycle` starts
//! and ends games, `matching` follows the board a ply at a time and keeps the readings'
//! bookkeeping, `pressed` reads the board by the presses, `record` is the compact ply.
//!
//! # The rules, and where each acts now
//! Each behaviour the tracker's earlier rules gave, the part of the model that gives it,
//! and a test that pins it (in `core-nostd/tests/`, or `search`'s unit tests).
//!
//! | behaviour | acts as | pinned by |
//! |---|---|---|
//! | a dump shows the board after what came before its request, not its arrival (bursts) | evidence: `dumped_since` by stream stamps, one request on its way at a time | `clocks::presses_made_before_a_late_dump_shows_their_plies_take_them_in_turn`; the offline runs with `--bursts` |
//! | a dump nobody asked for does not verify what it alone shows | evidence: an unasked dump is after what came before it | `model::a_magic_piece_one_garbled_dump_showed_ends_no_game` |
//! | presses waiting since the last confirmed ply are those after it in the stream | evidence: `waiting_presses` by stamp | `clocks::presses_made_long_before_their_plies_showed_take_them_in_order` |
//! | reports read in one piece are ordered by the presses between them; two presses in one clock reading (the lever back where it was) count as two | evidence: `Change::before`, the press count in `take_clock` | `lost_updates::plies_read_in_one_piece_keep_the_order_the_presses_between_them_show`, `lost_updates::reports_after_a_pair_of_presses_in_one_reading_came_after_both` |
//! | a dump overrules the field updates before it | evidence: `plies_a_dump_leaves` caps plies that stood or were pressed | `lost_updates::castling_with_the_kings_reports_lost_is_read_from_a_dump` |
//! | an unplugged board is not a still board | evidence: `board_away`; no deadline while away | `outage::an_unplugged_board_is_not_a_still_board`, `outage::a_press_waiting_for_the_board_outlasts_an_outage` |
//! | a reading one ply from the line is followed at once, from no base before a ply that stood or a press the opponent answered was bound to | candidates: `fast_eval` (one ply from the tip or a base) | `lost_updates::a_pressed_ply_is_not_given_up_for_a_one_ply_reading_from_before_it`, `scenarios::scenario_table` |
//! | pressed plies shown with the next move's hands at work are taken | basis `UnderReply` | `lost_updates::a_pressed_ply_a_dump_shows_beside_the_replys_lifted_king_is_taken`, `lost_updates::two_pressed_plies_a_late_dump_shows_are_taken_in_the_order_pressed` |
//! | the board the players left after pressing comes first | basis `PressedBoard` | `ghosts::a_piece_moved_again_after_both_presses_is_a_new_ply_whenever_its_press_comes`, `ghosts::a_slide_paused_before_the_presses_is_still_one_move` |
//! | plies that stood are kept, but not by a line of more plies than the running clock's presses waiting and one more (a ply that stood unpressed, then taken back in hand) | basis `Stood`, `more_plies_than_pressed` | `adversarial::two_plies_in_one_scan_after_plies_that_stood_keep_them`, `ghosts::a_scan_read_halfway_does_not_replace_the_ply_that_stood`, `lost_updates::a_ply_that_stood_unpressed_and_was_taken_back_is_not_kept_against_the_presses` |
//! | only the last ply that stood may be given up, for a line no longer | rejection `GivesUpStoodPly` | `ghosts::a_king_knocked_where_it_cannot_go_does_not_replace_the_ply_that_stood`, `ghosts::a_knock_gives_up_no_ply_that_stood_before_the_last` |
//! | plies a press was bound to are kept | basis `Pressed` (no base before them searched) | `clocks::a_waiting_press_keeps_its_ply_when_the_opponent_replies_after_it` |
//! | a board run a ply past the search is found once it stands; the deeper lines, many, must explain every piece reported set down, as a catch-up's must | basis `Deeper`, untied only; rejection `UnexplainedReport` | `adversarial::a_board_run_a_ply_past_the_search_is_found_once_it_stands`; e2e `bus_offline::twelve_chained_boards_offline_publish_no_wrong_move_from_logs_that_missed_changes` |
//! | a board far ahead is caught up with from a dump | basis `CatchUp` over touched squares | `lost_updates::a_board_read_six_plies_ahead_after_lost_reports_is_caught_up_with` |
//! | a square reported emptied while it stood empty had a piece set down on it: every line must land on or pass it | evidence: `PhysBoard::lost_landings_after`; rejection `UnexplainedReport` in every search | `lost_updates::a_square_reported_emptied_while_it_stood_empty_had_a_piece_set_down_on_it` |
//! | plies a search read together are read again once a dump shows the line's end: an order reaching the same board that the reports' order (then what was seen) favours replaces them, presses bound to them keeping their places | candidates at finality: `reread_joint_order` (from `line_verified`) | `chain_lost_landing::a_landing_the_log_lost_keeps_the_ply_its_press_ended`; the offline runs with `--bursts 500,1` |
//! | with more presses waiting than the line's plies (made while the clock ran, though it may have stopped since), the re-read takes a line of as many plies as were pressed for (or one more), keeping the plies that stood: each press ended a ply, and a piece out and back with its reports lost reaches the board one move of it reaches; the presses bound to the plies re-read then take them in turn | candidates at finality: `pressed_line` (from `reread_joint_order`) | `lost_updates::a_line_the_presses_count_more_plies_for_is_read_at_that_length`, `lost_updates::presses_made_before_the_clock_stopped_still_count_the_plies` |
//! | without a clock and with no press waiting, the re-read takes the fewest plies (as many of each side's fewer) that reach the board the dump shows, keeping the plies that stood: nothing but the board fixes the count | candidates at finality: `shorter_line` (from `reread_joint_order`) | `ghosts::a_rook_slid_to_take_a_piece_lifted_first_is_one_move_however_it_was_read_on_the_way` |
//! | a catch-up or re-read moves through every square the board changed since the last confirmed ply, not only since it left the tip (a pawn set down on d5 and taken en passant), and every landing lost since | candidates: `squares_changed_since_confirmed` (`PhysBoard::changed_since`, `PhysBoard::lost_landings_after`) | `lost_updates::a_lost_landing_the_line_never_touches_holds_its_plies` (a stall without it); the offline runs with `--bursts` |
//! | a capture is not confirmed while the board shows more of the captured kind than the line leaves: captured pieces do not come back | finality: pressed, `board_keeps_material_the_line_took` | `lost_updates::a_capture_the_board_still_shows_the_captured_piece_of_is_not_confirmed` |
//! | a landing lost reported by the read that showed a ply over that square (a rook slid e1-e3, e2 reported emptied after e3) is that ply's once it is confirmed, not a trace later lines must explain | evidence: `PhysBoard::landings_explained` at confirmation | `ghosts::a_move_taken_back_in_hand_without_a_clock_gives_way_to_the_one_played` |
//! | a square a dump emptied is reported emptied once more, late (a board's scan lags its dumps), until the line has moved on twice; after that such a report is a landing lost | evidence: `PhysBoard::report_due` | `lost_updates::a_square_a_dump_emptied_plies_ago_reported_emptied_again_had_a_piece_set_down_on_it` |
//! | a line must explain every piece reported set down (each of several set down on one square in turn: `PhysBoard::placements_since`), but one on a square it has left again while a piece of its kind was set down again where one stood (a move taken back in hand) | rejection `UnexplainedReport` (`explains_reports`) | `lost_updates::a_board_read_six_plies_ahead_after_lost_reports_is_caught_up_with`; for the taking back in hand, the offline runs with `--bursts 250,3` (mixed-s1-g011) |
//! | a piece out and back without a capture is no line, unless the board reported a piece on the square it went to since the last confirmed ply (set down, or a landing lost) and shows it empty, or a dump showed a piece there that stands there no longer, or reported pieces set down there twice | rejection `OutAndBack`; catch-up and re-read: `Search::with_stops` (`stops`, `PhysBoard::shown_in_passing`) | `search::tests::a_piece_out_and_back_is_never_a_line`, `lost_updates::a_piece_reported_on_a_square_in_passing_may_have_gone_there_and_straight_back`, `lost_updates::a_piece_set_down_twice_on_the_square_it_stands_on_went_there_twice`, `lost_updates::a_piece_a_dump_showed_where_another_stands_now_stood_there_in_passing` |
//! | a player's move begins after their press for the one before and ends with their next: in a catch-up or re-read, a ply all of whose reports since the last confirmed ply came before its mover's previous press (when the waiting presses account for the line), or after the press in turn that ended it (a press alone in its clock message), is no line; plies read together whose line has a ply of the first kind are not verified by a dump, though no other line explains the board yet (a piece in hand shows a board a capture of it reaches) | rejection `OutOfPressTurn` (`out_of_press_turn`); finality: `line_verified` (`line_out_of_press_turn`) | `lost_updates::a_line_with_a_move_reported_before_its_players_press_for_the_move_before_is_no_line`, `lost_updates::a_line_with_a_move_reported_after_the_press_that_ended_it_is_no_line`, `lost_updates::a_line_with_a_ply_reported_before_its_movers_previous_press_is_not_confirmed` |
//! | no ply through a square nothing reported | rejection `Untraced` | `search::tests::a_square_nothing_reported_is_never_moved_through` |
//! | the fewest plies explain a burst read halfway | score `fewer_plies` | `ghosts::burst_read_halfway_is_explained_with_the_fewest_plies` |
//! | transpositions told apart by the order the hands went | score `seen`, `order` | `lost_updates::the_lifts_of_plies_whose_landings_were_lost_tell_their_order`, `lost_updates::plies_a_dump_completes_are_ordered_by_the_reports_not_the_dump`, `adversarial::a_transposition_read_through_a_dump_keeps_the_order_the_board_reported` |
//! | presses end plies in turn: a ply reported before the press of the ply before it, or after the press of the ply after it, is out of the line's order; a square a later ply changes or passes through says nothing of an earlier one | score `order` (`plies_in_reported_order`, by the presses counted before each change; `path_changes`) | `lost_updates::a_ply_reported_after_the_opponent_pressed_for_the_reply_is_the_later_one`, `lost_updates::a_square_a_later_ply_slid_through_says_nothing_of_the_ply_that_left_it` |
//! | a dump's board is a position the game went through, when a line passes it | evidence: dumps remembered as seen boards; score `seen` (catch-up too) | `lost_updates::a_board_a_dump_showed_tells_apart_orders_reaching_one_board` |
//! | a piece set down, reported and lifted again tells where it went | score `landings` | `lost_updates::a_pressed_ply_whose_landing_was_reported_is_taken_though_its_piece_is_in_the_air_again` |
//! | of orders equal by all else, the one needing fewer reports lost: the changes a line makes on each square against the reports that came there | evidence: `PhysBoard::reports_since`; score `fewer_lost` (`reports_lost`) | `lost_updates::of_orders_reaching_one_board_the_one_needing_fewer_reports_lost_is_taken`; dropped-s1-g012 at 250 ms seeds 5-6 |
//! | an order the board never showed waits, the operator told | rejection `Tied` / a tie: plies hidden, never final | `orders::an_order_the_board_never_showed_waits_for_the_reading_that_tells`, `orders::a_move_both_orders_allow_does_not_settle_the_order` |
//! | more presses than plies mean a longer line, whether the press comes after the board showed the line or before (a late dump): every square it lands on and leaves again changed or was reported since the last confirmed ply | candidates: `reread_for_press` (traced squares, untied), from a press and after a search (`reread_for_waiting_presses`) | `ghosts::three_presses_for_a_board_two_plies_reach_mean_three_plies`, `lost_updates::presses_that_came_before_a_late_dump_count_the_plies_it_shows` |
//! | hands at work are waited for (a slide on its way, a king castling first, pieces lifted) | candidates: `move_under_way` | `lost_updates::a_king_castling_first_read_before_its_rook_moves_is_a_move_under_way`, `adversarial::a_queen_paused_mid_slide_where_it_cannot_stop_keeps_the_line`, `ghosts::a_capture_read_as_an_exchange_while_held_is_replaced_by_its_landing`, `ghosts::a_capture_under_way_after_a_ply_the_board_never_showed_whole_is_no_line` |
//! | a takeback only when no line explains the board; short, or standing | choice: takeback after every basis | `adversarial::takeback_of_one_ply_immediately_after_a_press`, `lost_updates::a_position_brought_back_after_the_side_to_move_pressed_is_no_takeback`, `adversarial::a_repetition_read_through_a_dump_is_not_a_takeback_of_plies_that_stood` |
//! | a press takes the ply the board showed at it | presses: `bound` at the press | `clocks::early_presses_belong_to_the_move_they_completed_in_fast_play`, `adversarial::a_press_made_while_adjusting_the_piece_is_that_moves_not_the_next` |
//! | not while the slide went on within a scan, unless the opponent pressed after it in the stream | presses: unbound at the landing's next change | `adversarial::a_press_before_the_report_of_the_slide_going_on_is_not_bound_to_the_rest`, `lost_updates::a_piece_leaving_after_the_opponent_pressed_is_the_next_move_not_the_slide_going_on`, `lost_updates::a_piece_leaving_after_the_opponent_pressed_at_the_same_read_time_is_a_new_move` |
//! | a dump asked after a press shows its ply | presses: `bind_presses_to_dump` | `lost_updates::a_move_a_dump_shows_after_its_press_stands_as_if_the_board_had_shown_it` |
//! | presses made before any of their plies showed take them in turn, a press bound to a ply the line no longer has too | presses: `presses_in_turn` | `clocks::presses_made_long_before_their_plies_showed_take_them_in_order`, `lost_updates::presses_bound_to_plies_read_again_take_the_new_plies_in_turn` |
//! | else by when the board showed the presser's plies | presses: `ply_by_time` | `ghosts::a_press_is_not_for_a_ply_shown_seconds_after_it`, `lost_updates::a_ply_reported_after_a_press_is_not_that_presss_ply`, `ghosts::plies_read_once_the_hands_are_done_keep_the_presses_made_before` |
//! | the opponent's presses still waiting when a press comes are overtaken | presses: `drop_overtaken_presses` | `clocks::a_late_press_after_a_forgotten_one_does_not_turn_the_displays_round` |
//! | a ply its mover pressed for more than once since their last ply, with presses the board showed no ply for, gets no `%clk`: which press ended it is not known | presses: `pressed_before_for_no_ply`, `Press::one_of_several` | `lost_updates::a_ply_pressed_for_after_presses_for_plies_never_shown_gets_no_clk` |
//! | a press confirms at once when the ply cannot be a passing state | finality: pressed, conclusive | `press_latency::pawn_push_confirms_in_the_feed_call_of_the_press`, `press_latency::queen_move_that_could_go_further_confirms_in_the_feed_call_of_the_press` |
//! | a ply that may slide on waits for a dump or a slide's rest | finality: pressed, `may_slide_on` | `ghosts::press_while_the_piece_still_slides_confirms_where_it_stops`, `ghosts::press_during_a_rook_slide_waits_for_the_board`, `adversarial::castling_rook_first_pressed_before_the_king_is_reported_is_castling` |
//! | a pressed ply whose piece stayed where it landed stands | finality: pressed, `pressed_ply_stands` | `adversarial::kings_in_centre_king_step_next_to_the_centre_is_pressed_then_gesture` |
//! | plies wait while the board reported, within the mismatch time, a landing lost on a square no provisional ply moved a piece from, to or through (the line was read before the report and may be another order of hands) | finality: `line_verified` (`line_misses_lost_landing`); deadline at the mismatch time | `lost_updates::a_lost_landing_the_line_never_touches_holds_its_plies` |
//! | plies read jointly wait for a dump | finality: `line_verified` | `adversarial::a_lost_landing_report_is_not_read_as_a_capture_and_a_recapture` |
//! | a press the board cannot explain asks for a dump at once | finality: `dumped_since` at the press | `lost_updates::each_press_the_board_cannot_explain_is_settled_by_a_dump`, `clocks::a_press_with_no_move_on_the_board_asks_for_a_dump` |
//! | quiet time makes unpressed plies final | finality: quiet | `adversarial::an_entire_game_without_a_clock` |
//! | without a clock, only with a dump asked at the end of the stillness | finality: quiet and next ply, `fresh_since` | `model::without_a_clock_a_move_with_both_reports_lost_is_found_by_the_dump_quiet_time_asks_for` |
//! | the plies that followed prove a forgotten press's ply | finality: next ply, `press_to_come` | `clocks::a_late_press_gives_its_move_the_clk` |
//! | once eight plies wait, the oldest is confirmed with its press, unless it is of an unknown order: then the line stops, the operator told (a guess is never final) | finality: capacity (`extend`) | `lost_updates::plies_of_an_unknown_order_are_never_confirmed_when_the_line_is_full` |
//! | unpressed plies undoing the confirmed ones are a takeback | finality: `undone_by_provisional` first | `adversarial::takeback_of_two_plies_in_forward_order_without_presses`, `adversarial::a_repetition_both_players_pressed_for_is_not_a_takeback` |
//! | a result on the board stands for the quiet time and a dump agrees | lifecycle: `check_board_result` | `board_results::a_magic_piece_that_stands_for_the_quiet_time_ends_the_game`, `model::a_magic_piece_the_board_shows_ends_the_game_once_a_dump_agrees` |
//! | at a result signal, what the board still shows stands; the king moves ending the line are the signal | lifecycle: `settle_line_at_end` | `adversarial::plies_still_on_the_board_through_the_kings_signal_stand_without_a_clock`, `adversarial::a_king_set_down_briefly_on_its_way_to_the_centre_is_no_move`, `model::a_king_step_onto_the_centre_the_opponent_answered_is_a_move_not_half_of_the_signal` |
//! | at a result signal, plies their movers pressed for stand, however briefly the board showed them (not a line the board's pieces contradict) | lifecycle: `settle_line_at_end` (`confirm_waiting_pressed`) | `lost_updates::a_pressed_ply_stands_at_a_result_signal_however_briefly_the_board_showed_it` |
//! | at a flag's fall, a press of the winner's still waiting ends the winner's next ply, however late the board showed it (the loser's clock ran from that press) | presses: `confirm_next_ply_with_waiting_press` (from `take_clock`) | `lost_updates::a_ply_shown_after_its_press_stands_when_the_opponents_flag_falls` |
//! | a game found already begun starts with its plies and presses | lifecycle: `start_under_way`, `start_played_into` | `scenarios::a_first_look_at_the_first_move_under_way_starts_the_game`, `scenarios::a_first_look_a_few_plies_into_the_game_starts_it_with_them`, `scenarios::a_press_made_before_the_first_look_is_the_first_moves` |
//! | time is only needed at the moments `poll_at` gives | deadline | `model::ticking_only_at_poll_at_acts_as_ticking_every_millisecond` (and `DGT_TICK_CHECK=1` on every test) |

mod deadline;
mod explain;
mod finality;
mod input;
mod lifecycle;
mod line;
mod matching;
pub use matching::Reading;
mod pressed;
mod presses;
mod record;

use record::PlyRecord;

use dgt_protocol::{
    BoardDump, ClockSide, ClockStatus, ClockTime, ClockTimes, Orientation, SideFlags, SideReading,
};
use shakmaty::{
    Bitboard, Board, CastlingMode, Chess, EnPassantMode, FromSetup, Position, Setup, fen::Fen, san::SanPlus,
    uci::UciMove,
};

use crate::board::{PhysBoard, placement_hash};
use crate::clock::{Clocks, Press};
use crate::config::Config;
use crate::event::{ClockState, EndReason, EventSink, GameResult, MoveInfo, Ruling, StartKind};
use crate::fen::FenText;

/// Most provisional plies kept at once; older ones are proven by those that follow.
const MAX_PROVISIONAL: usize = 8;
/// Clock presses kept while waiting for the board to show the moves (a burst of plies),
/// or for plies of an unknown order to be confirmed: one for each provisional ply, and
/// those of the moves under way.
const PENDING_PRESSES: usize = MAX_PROVISIONAL + 4;
/// Positions the board was seen showing that are remembered (see `seen_boards`).
const SEEN_BOARDS: usize = 16;
/// Boards reported whole that are remembered (see `shown_boards`).
const SHOWN_BOARDS: usize = 8;
/// Boards reported whole after presses that are remembered (see `pressed_boards`).
const PRESSED_BOARDS: usize = 4;
/// Keeps `hash` as the newest of a ring of placement hashes (the oldest dropped when it is
/// full), unless it is the newest already.
fn remember<const N: usize>(ring: &mut heapless::Vec<u32, N>, hash: u32) {
    if ring.last() == Some(&hash) {
        return;
    }
    if ring.is_full() {
        ring.remove(0);
    }
    let _ = ring.push(hash);
}

/// Where the tracker is in a game's life.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum GameState {
    /// No game yet: waiting for a start position.
    Idle,
    /// The operator set a position; waiting for the board to show it.
    WaitingForPosition,
    /// A game is in progress.
    Active,
    /// The game has a result; a start position begins the next one.
    Over,
}

/// A clock press waiting for the board to show the move.
#[derive(Clone, Copy, Debug)]
struct PendingPress {
    press: Press,
    /// When it came.
    at: u64,
    /// Where it came in the board's stream (see [`Stamp`]).
    seq: u32,
    /// Presses the board's stream held up to and with it (see `PhysBoard::note_press`):
    /// a square's change counted fewer came before it.
    count: u32,
    /// When it stops waiting: [`Timing::press_window_ms`](crate::Timing::press_window_ms) after it came, plus any time the
    /// board was away meanwhile (it could not show the move then).
    expires: u64,
    /// The ply it was bound to, with that ply's placement hash (see `add_pending_press`).
    bound: Option<(usize, u32)>,
}

/// A moment of the board's stream: where a message came in it, and when it was read. The
/// board sends its messages in the order things happened, and a link that holds bytes back
/// and lets them out in bursts keeps that order, though not their times: the order of two
/// messages is their numbers', and a read time is only the latest a thing can have
/// happened.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(crate) struct Stamp {
    /// The message's number in the stream (messages of the board and its clock, counted
    /// from the tracker's start).
    pub seq: u32,
    /// When it was read.
    pub ms: u64,
}

/// What is known of one provisional ply beside its move.
#[derive(Clone, Copy, Debug, Default)]
struct PlyMeta {
    /// Its SAN, as its provisional move was told (the same when it is confirmed).
    san: Option<SanPlus>,
    /// When the line took it.
    seen: Stamp,
    /// When the board began showing it (see `shown_at`).
    shown: Stamp,
    /// One of several move orders to the board (see `first_hidden`).
    hidden: bool,
    /// Read together with another ply from a single reading (a search of two or more
    /// plies): see `line_verified`.
    joint: bool,
    /// The board stood still at it as the last of the line for longer than a sliding hand
    /// rests: not a passing state of a hand (see `keeping_stood`).
    stood: bool,
}

/// A board the board reported whole (unchanged for a scan) while two or more presses, one
/// by each player in turn, were waiting for their plies: what the players left on the board
/// when they said their moves were done.
#[derive(Clone, Debug)]
struct PressedBoard {
    board: Board,
    /// How many of the presses waiting since the last confirmed ply had come.
    presses: u8,
    /// When the last of them came (to tell whether they are still the ones waiting).
    last_press_at: u64,
}

/// Which line a query is about.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum View {
    /// Confirmed moves only (what a PGN holds).
    Confirmed,
    /// Confirmed and provisional moves (what the board shows).
    Live,
}

/// Why an operator start position was refused.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum StartError {
    /// The FEN text does not parse.
    InvalidFen,
    /// The position is not a legal chess position.
    IllegalPosition,
}

/// Why a game could not be resumed ([`Tracker::resume`]). The tracker is then idle.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ResumeError {
    /// The move at this ply (1-based) is not legal in the position before it.
    IllegalMove {
        /// The ply.
        ply: usize,
    },
    /// The game has more plies than the tracker holds.
    TooManyPlies,
}

impl core::fmt::Display for ResumeError {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        match self {
            ResumeError::IllegalMove { ply } => write!(f, "the move at ply {ply} is not legal there"),
            ResumeError::TooManyPlies => f.write_str("more plies than the tracker holds"),
        }
    }
}

/// One confirmed ply of a game being resumed: the move and its clock values.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ResumePly {
    /// The move, in UCI (castling as king-to-target or king-takes-rook).
    pub uci: UciMove,
    /// The mover's clock after the move, seconds (`%clk`).
    pub clk: Option<u32>,
    /// Time spent on the move, seconds (`%emt`).
    pub emt: Option<u32>,
}

/// The board tracker for one e-board and clock, with room for `PLIES` plies per game.
///
/// Feed it every decoded message with the caller's monotonic time ([`Tracker::feed`]),
/// call [`Tracker::tick`] at [`Tracker::poll_at`] (ticking more often changes nothing) so that time-based
/// decisions happen without new bytes, and act on the [`Event`](crate::Event)s it emits.
#[derive(Clone, Debug)]
pub struct Tracker<const PLIES: usize> {
    pub(crate) config: Config,
    phys: PhysBoard,
    pub(crate) state: GameState,
    pub(crate) kind: StartKind,
    pub(crate) start: Chess,
    start_hash: u32,
    pub(crate) castling_mode: CastlingMode,
    /// Confirmed plies, then provisional ones.
    pub(crate) records: heapless::Vec<PlyRecord, PLIES>,
    /// How many of `records` are confirmed.
    pub(crate) confirmed: usize,
    confirmed_pos: Chess,
    tip: Chess,
    /// What is known of each provisional ply beside its move: `meta[i]` is the ply
    /// `records[confirmed + i]`.
    meta: heapless::Vec<PlyMeta, MAX_PROVISIONAL>,
    /// The ply the operator was last told to check for an unknown move order.
    order_alerted: Option<u16>,
    /// The board is back from an outage and no reading has been explained since: the
    /// moves made meanwhile are reconciled by the caller (the board's event log, or the
    /// position with the operator told), not kept unconfirmed as an unknown order.
    back_from_outage: bool,
    /// When the last confirmed ply appeared (or the game started).
    last_confirmed_seen: Stamp,
    pub(crate) result: Option<(GameResult, EndReason)>,
    last_change_ms: u64,
    /// The board changed and has not been fully evaluated.
    dirty: bool,
    /// The board shows the tip of the line.
    at_tip: bool,
    /// When the board left the tip last.
    tip_left_ms: u64,
    /// Placement hashes of the last positions the board was seen showing (matched), to
    /// tell apart move orders that reach the same board.
    seen_boards: heapless::Vec<u32, SEEN_BOARDS>,
    /// Placement hashes of the last boards the board reported whole (unchanged for a scan),
    /// whether or not the line matched them: a position shown for less than the settle
    /// time is never searched, yet says which way the pieces went.
    shown_boards: heapless::Vec<u32, SHOWN_BOARDS>,
    /// Boards reported whole after presses for their plies (see
    /// `through_pressed_board`).
    pressed_boards: heapless::Vec<PressedBoard, PRESSED_BOARDS>,
    /// Squares changed by field updates since the board left the tip.
    touched_off_tip: Bitboard,
    unexplained_since: Option<u64>,
    mismatch: Option<Bitboard>,
    /// When the tracker last asked for a dump.
    last_dump_request: Option<u64>,
    /// The dump request on its way, by when it was made: the next dump shows the board as
    /// it was at or after then (and no earlier: bytes held back by the link bring a dump
    /// taken before an event after it). One at a time, so that each dump answers a known
    /// request (a chain's poller, or a slow caller, may answer several with one dump).
    asked: Option<Stamp>,
    /// A dump was wanted while one was on its way: asked for as soon as that one comes.
    ask_again: bool,
    /// When the last dump arrived: the only reading not open to a lost field update.
    last_dump_ms: Option<u64>,
    /// When the request the last dump answered was made (its arrival, when the tracker had
    /// asked for none): the board it shows is the board at or after then.
    last_dump_asked: Option<Stamp>,
    /// Where in the stream the board last changed.
    last_change_seq: u32,
    /// The number of the latest message from the board (see [`Stamp`]).
    seq: u32,
    /// The latest message and the line (its length and last placement) the provisional
    /// order was last read again for and kept (see `reread_joint_order`): nothing new to
    /// read it by until one of them changes.
    order_read_for: Option<(u32, usize, u32)>,
    /// Until the next field update: the plies before this index are all the last dump left
    /// standing as the field updates showed them (see `plies_a_dump_leaves`).
    dump_leaves: Option<usize>,
    /// Presses, oldest first, still waiting for the board to show the move.
    pending_press: heapless::Vec<PendingPress, PENDING_PRESSES>,
    /// The side whose lever was high at the last clock reading.
    lever: Option<ClockSide>,
    /// When each side's player (left, right) last pressed the clock in this game: the
    /// lever went down on their side while the clock ran. Read from the lever alone, so it
    /// holds whatever the press bookkeeping made of the reading.
    last_press_ms: [Option<u64>; 2],
    pub(crate) clocks: Clocks,
    last_clock_state: ClockState,
    armed_orientation: Option<Orientation>,
    full_reported: bool,
    /// Confirmed plies restored by the last [`Tracker::resume`] (0 for a game started here).
    resumed_at: usize,
    /// Since when the link to the board has been gone ([`Tracker::board_away`]), until the
    /// next message from it.
    away_since: Option<u64>,
    /// Since when the board has shown a result signal (both kings in the centre, or a magic
    /// piece), until it has stood long enough to end the game (see `check_board_result`).
    centre_since: Option<Stamp>,
    /// The board being evaluated is the first dump this tracker has seen.
    first_look: bool,
    /// The latest time the tracker was given (a message or a tick): what
    /// [`Tracker::poll_at`] counts its deadlines after.
    evaluated_ms: u64,
}

impl<const PLIES: usize> Default for Tracker<PLIES> {
    fn default() -> Self {
        Self::new(Config::default())
    }
}

impl<const PLIES: usize> Tracker<PLIES> {
    /// A tracker waiting for its first board dump.
    ///
    /// Always inlined: a caller that writes it straight into a heap allocation
    /// (`Box::write(Box::new_uninit(), Tracker::new(config))`) then builds it in place,
    /// instead of in a stack frame of the tracker's whole size.
    #[inline(always)]
    pub fn new(config: Config) -> Self {
        Tracker {
            config,
            phys: PhysBoard::new(),
            state: GameState::Idle,
            kind: StartKind::Standard,
            start: Chess::default(),
            start_hash: placement_hash(Chess::default().board()),
            castling_mode: CastlingMode::Standard,
            records: heapless::Vec::new(),
            confirmed: 0,
            confirmed_pos: Chess::default(),
            tip: Chess::default(),
            meta: heapless::Vec::new(),
            order_alerted: None,
            back_from_outage: false,
            last_confirmed_seen: Stamp::default(),
            result: None,
            last_change_ms: 0,
            dirty: false,
            at_tip: false,
            tip_left_ms: 0,
            touched_off_tip: Bitboard::EMPTY,
            seen_boards: heapless::Vec::new(),
            shown_boards: heapless::Vec::new(),
            pressed_boards: heapless::Vec::new(),
            unexplained_since: None,
            mismatch: None,
            last_dump_request: None,
            asked: None,
            ask_again: false,
            last_dump_ms: None,
            last_dump_asked: None,
            last_change_seq: 0,
            seq: 0,
            order_read_for: None,
            dump_leaves: None,
            pending_press: heapless::Vec::new(),
            lever: None,
            last_press_ms: [None; 2],
            clocks: Clocks::new(),
            last_clock_state: ClockState::default(),
            armed_orientation: None,
            full_reported: false,
            resumed_at: 0,
            away_since: None,
            centre_since: None,
            first_look: false,
            evaluated_ms: 0,
        }
    }

    /// Makes this tracker what [`Tracker::new`] makes, in place. A tracker restarted
    /// this way (a flip, a correction) needs no second tracker's worth of stack, which a
    /// new one built and moved into place takes: on a microcontroller that is most of the
    /// stack. Every field is named, so a field added to the tracker must be reset here.
    pub fn reset(&mut self, config: Config) {
        let Tracker {
            config: c,
            phys,
            state,
            kind,
            start,
            start_hash,
            castling_mode,
            records,
            confirmed,
            confirmed_pos,
            tip,
            meta,
            order_alerted,
            back_from_outage,
            last_confirmed_seen,
            result,
            last_change_ms,
            dirty,
            at_tip,
            tip_left_ms,
            touched_off_tip,
            seen_boards,
            shown_boards,
            pressed_boards,
            unexplained_since,
            mismatch,
            last_dump_request,
            asked,
            ask_again,
            last_dump_ms,
            last_dump_asked,
            last_change_seq,
            seq,
            order_read_for,
            dump_leaves,
            pending_press,
            lever,
            last_press_ms,
            clocks,
            last_clock_state,
            armed_orientation,
            full_reported,
            resumed_at,
            away_since,
            centre_since,
            first_look,
            evaluated_ms,
        } = self;
        *c = config;
        *phys = PhysBoard::new();
        *state = GameState::Idle;
        *kind = StartKind::Standard;
        *start = Chess::default();
        *start_hash = placement_hash(Chess::default().board());
        *castling_mode = CastlingMode::Standard;
        records.clear();
        *confirmed = 0;
        *confirmed_pos = Chess::default();
        *tip = Chess::default();
        meta.clear();
        *order_alerted = None;
        *back_from_outage = false;
        *last_confirmed_seen = Stamp::default();
        *result = None;
        *last_change_ms = 0;
        *dirty = false;
        *at_tip = false;
        *tip_left_ms = 0;
        *touched_off_tip = Bitboard::EMPTY;
        seen_boards.clear();
        shown_boards.clear();
        pressed_boards.clear();
        *unexplained_since = None;
        *mismatch = None;
        *last_dump_request = None;
        *order_read_for = None;
        *asked = None;
        *ask_again = false;
        *last_dump_ms = None;
        *last_dump_asked = None;
        *last_change_seq = 0;
        *seq = 0;
        *dump_leaves = None;
        pending_press.clear();
        *lever = None;
        *last_press_ms = [None; 2];
        *clocks = Clocks::new();
        *last_clock_state = ClockState::default();
        *armed_orientation = None;
        *full_reported = false;
        *resumed_at = 0;
        *away_since = None;
        *centre_since = None;
        *first_look = false;
        *evaluated_ms = 0;
    }

    /// The settings in use.
    pub fn config(&self) -> &Config {
        &self.config
    }

    /// The moment `now` of the latest message (see [`Stamp`]).
    pub(crate) fn stamp(&self, now: u64) -> Stamp {
        Stamp { seq: self.seq, ms: now }
    }

    /// Reports read closer together than this are one scan (see [`Timing::scan_ms`](crate::Timing::scan_ms)).
    pub(crate) fn scan_ms(&self) -> u64 {
        u64::from(self.config.timing.scan_ms)
    }

    /// Starts a game from a FEN set by the operator. With `orientation` unknown, the game
    /// starts when the board shows the position either way round.
    pub fn start_from_fen<S: EventSink + ?Sized>(
        &mut self,
        fen: &[u8],
        orientation: Option<Orientation>,
        now_ms: u64,
        sink: &mut S,
    ) -> Result<(), StartError> {
        let fen = Fen::from_ascii(fen).map_err(|_| StartError::InvalidFen)?;
        let setup: Setup = fen.into_setup();
        let mode = CastlingMode::detect(&setup);
        let pos = Chess::from_setup(setup, mode).map_err(|_| StartError::IllegalPosition)?;
        self.start_from_position(pos, mode, orientation, now_ms, sink);
        Ok(())
    }

    /// Starts a game from a position set by the operator (see [`Tracker::start_from_fen`]).
    pub fn start_from_position<S: EventSink + ?Sized>(
        &mut self,
        pos: Chess,
        mode: CastlingMode,
        orientation: Option<Orientation>,
        now_ms: u64,
        sink: &mut S,
    ) {
        match orientation {
            Some(o) => self.start_game(pos, mode, o, StartKind::Fen, now_ms, sink),
            None => {
                self.reset_game(pos, mode, StartKind::Fen);
                self.state = GameState::WaitingForPosition;
                if self.phys.known {
                    self.board_changed(now_ms, true, sink);
                }
            }
        }
        self.armed_orientation = orientation;
    }

    /// Resumes a game with its history, e.g. after a restart of the program: the game
    /// started from `start` (castling `mode`), and `moves` are its confirmed plies in order
    /// with their `%clk`/`%emt`. The board is set up as `orientation`.
    ///
    /// The line is restored as if the tracker had followed it: ply numbers go on from
    /// there, takebacks may go back before the resume point, a return to an earlier
    /// position is recognised, and [`Tracker::write_pgn`] holds the whole game. Emits no
    /// [`Event::GameStarted`] and no move events for the restored plies; the game is
    /// active at once (or over, with [`Event::GameEnded`], when the last ply mates or
    /// stalemates), and the next board reading is matched against its last position.
    /// The start kind is inferred: the standard position, a Chess960 start (in Chess960
    /// mode), else an operator position. A configured time control gives the start
    /// clocks; the clocks' sides are learned from the next readings.
    ///
    /// On error the tracker is idle (no game), and nothing was emitted.
    ///
    /// [`Event::GameStarted`]: crate::Event::GameStarted
    /// [`Event::GameEnded`]: crate::Event::GameEnded
    pub fn resume<S, I>(
        &mut self,
        start: Chess,
        mode: CastlingMode,
        orientation: Orientation,
        moves: I,
        now_ms: u64,
        sink: &mut S,
    ) -> Result<(), ResumeError>
    where
        S: EventSink + ?Sized,
        I: IntoIterator<Item = ResumePly>,
    {
        self.resume_game(start, mode, orientation, moves, now_ms, sink)
    }

    /// Ends the game with a result the operator gives (resignation, agreement, arbiter).
    /// Provisional moves are withdrawn.
    pub fn declare_result<S: EventSink + ?Sized>(&mut self, result: GameResult, sink: &mut S) {
        self.declare(Ruling::played(result), sink);
    }

    /// Ends the game as the arbiter rules it: a result, or a forfeit (the game ends with
    /// [`EndReason::Unplayed`]). Provisional moves are withdrawn.
    pub fn declare<S: EventSink + ?Sized>(&mut self, ruling: Ruling, sink: &mut S) {
        if self.state == GameState::Active {
            self.retract_to(self.confirmed, sink);
            self.end_game(ruling.result, ruling.reason(), sink);
        }
    }

    /// Where the game is.
    pub fn state(&self) -> GameState {
        self.state
    }

    /// How the board is set up.
    pub fn orientation(&self) -> Orientation {
        self.phys.orientation
    }

    /// How the game started.
    pub fn start_kind(&self) -> StartKind {
        self.kind
    }

    /// The result and why, once the game is over.
    pub fn result(&self) -> Option<(GameResult, EndReason)> {
        self.result
    }

    /// Confirms the provisional plies up to `plies` in all, known to be over from outside
    /// the board's readings: its own event log showed the game going on after them (a
    /// board back from an outage). They get a `%clk` only where the clock still shows it.
    pub fn confirm_plies<S: EventSink + ?Sized>(&mut self, plies: usize, now_ms: u64, sink: &mut S) {
        if self.state == GameState::Active && plies > self.confirmed {
            self.confirm_through(plies.min(self.records.len()), None, now_ms, sink);
        }
    }

    /// The link to the board is gone (its port was lost): until the next message from it,
    /// nothing is decided by time. A board nobody can hear is not a board standing still:
    /// quiet time would confirm a move its player may be taking back, and presses waiting
    /// for the board would run out while it cannot answer. The next message ends the
    /// outage: stillness counts from then, and waiting presses get back the time they lost.
    pub fn board_away(&mut self, now_ms: u64) {
        self.away_since.get_or_insert(now_ms);
        // A request on its way is lost with the link.
        self.asked = None;
        self.ask_again = false;
        self.clocks.board_away();
    }

    /// True while the board is away ([`Tracker::board_away`]).
    pub fn is_board_away(&self) -> bool {
        self.away_since.is_some()
    }

    /// A clock press nobody saw, read from the board's own event log (a board back from an
    /// outage): the presser's display `side` and the `time` it showed after the press (the
    /// board logs the halted side's time when the lever moves). The presser's last
    /// provisional ply is confirmed with that `%clk` (and `%emt` by clock arithmetic);
    /// earlier provisional plies are confirmed as by [`Tracker::confirm_plies`]. A tracker
    /// that has not read the clock yet (a game resumed after a restart of the program, its
    /// board's log replayed before the clock's first report) needs no reading: only the
    /// presser's display is used. Returns false, doing nothing, without a game, or when the
    /// presser has no provisional ply (the log may hold the press before the landing of its
    /// move: the board logs a square when it scans it).
    pub fn confirm_logged_press<S: EventSink + ?Sized>(
        &mut self,
        side: ClockSide,
        time: ClockTime,
        now_ms: u64,
        sink: &mut S,
    ) -> bool {
        if self.state != GameState::Active {
            return false;
        }
        let mut reading = self.clocks.last.unwrap_or_else(|| {
            // The press leaves the other side running.
            let zero = SideReading { time: ClockTime::from_seconds(0), flags: SideFlags::default() };
            let status = if side == ClockSide::Left { 0x03 } else { 0x01 };
            ClockTimes { right: zero, left: zero, status: ClockStatus(status) }
        });
        let by = self.clocks.owner(&self.config, side);
        let Some(upto) = self.last_ply_by(by) else { return false };
        match side {
            ClockSide::Left => reading.left.time = time,
            ClockSide::Right => reading.right.time = time,
        }
        if upto > self.confirmed + 1 {
            self.confirm_through(upto - 1, None, now_ms, sink);
        }
        if self.state == GameState::Active && upto == self.confirmed + 1 {
            let press = Press { by, side, reading, jump: None, one_of_several: false };
            self.confirm_through(upto, Some(&press), now_ms, sink);
        }
        true
    }

    /// Number of plies in a view.
    pub fn ply_count(&self, view: View) -> usize {
        match view {
            View::Confirmed => self.confirmed,
            View::Live => self.records.len(),
        }
    }

    /// The position after the plies of a view.
    pub fn position(&self, view: View) -> &Chess {
        match view {
            View::Confirmed => &self.confirmed_pos,
            View::Live => &self.tip,
        }
    }

    /// The start position of the game.
    pub fn start_position(&self) -> &Chess {
        &self.start
    }

    /// The castling rules of the game (Chess960 for a Chess960 start or an operator
    /// position whose castling rights need them).
    pub fn castling_mode(&self) -> CastlingMode {
        self.castling_mode
    }

    /// Writes the FEN of a view's position.
    pub fn write_fen<W: core::fmt::Write>(&self, view: View, w: &mut W) -> core::fmt::Result {
        write!(w, "{}", Fen::from_position(self.position(view), EnPassantMode::Legal))
    }

    /// Calls `f` with every ply of a view in order (SAN needs a replay, done once here).
    pub fn for_each_move<F: FnMut(&MoveInfo)>(&self, view: View, mut f: F) {
        let n = self.ply_count(view);
        let mut pos = self.start.clone();
        for (i, rec) in self.records.iter().take(n).enumerate() {
            let Some(m) = rec.to_move(&pos) else { return };
            let info = MoveInfo {
                ply: (i + 1) as u16,
                color: pos.turn(),
                uci: m.to_uci(self.castling_mode),
                san: SanPlus::from_move(pos.clone(), m),
                clk: rec.clk(),
                emt: rec.emt(),
                fen: {
                    pos.play_unchecked(m);
                    FenText::of(&pos)
                },
            };
            f(&info);
        }
    }

    /// White's clock display, once it is certain for the rest of the game: configured, or a
    /// move was confirmed with it while the clock ran (a caller that keeps the game, as in a
    /// journal, keeps this with it and gives it back with
    /// [`Tracker::set_white_clock_side`] when it resumes the game). `None` while it is still
    /// being learned from the lever.
    pub fn white_clock_side(&self) -> Option<ClockSide> {
        self.clocks.fixed_white_side()
    }

    /// Sets White's clock display for the rest of the game, as [`Tracker::white_clock_side`]
    /// told it before (call it after [`Tracker::resume`], before any clock reading): a resumed
    /// game does not learn it again from the lever, which a restart in the middle of a game
    /// would read the wrong way round whenever the side to move is not the side the
    /// journal's last move says.
    pub fn set_white_clock_side(&mut self, side: ClockSide) {
        self.clocks.set_white_side(side);
    }

    /// Both clocks as last read, mapped to colours.
    pub fn clocks(&self) -> ClockState {
        self.clocks.state(&self.config)
    }

    /// The live `Clock` tag value: `W/1:34:56` (White's clock runs), `B/…`, or `N/…` when
    /// stopped (the time of the side to move). `None` without a clock reading.
    pub fn write_clock_tag<W: core::fmt::Write>(&self, w: &mut W) -> core::fmt::Result {
        crate::pgn::write_clock_value(&self.clocks(), self.tip.turn(), w)
    }

    /// The squares reported in the current mismatch, if one is open.
    pub fn mismatch(&self) -> Option<Bitboard> {
        self.mismatch
    }

    /// What the board shows, by board index.
    pub fn board(&self) -> BoardDump {
        self.phys.dump()
    }

    /// True once a board dump has been received.
    pub fn board_known(&self) -> bool {
        self.phys.known
    }
}
