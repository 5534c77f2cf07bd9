//! Hand scripts through the offline harness: a small script written here (a lost field
//! update, two presses in one clock poll, a checkmate) must come out exact, and the
//! checkers' rules for scripts hold (an unobservable `%clk` may be left out, a result the
//! script also accepts is not wrong).

use std::path::Path;

use dgt_e2e_tests::offline::OfflineOptions;
use dgt_e2e_tests::scripts::{job, replay_script, tabulate};
use dgt_hil_sim::script;

/// Scholar's mate on a rotated board, White on the right display: Black's e7 lift is lost
/// on the line; Qh5 and Nc6 are pressed within one clock poll (Qh5's `%clk` unobservable).
const SCHOLAR: &str = r#"{"format": "dgt-hand-script/1", "profile": "mixed", "seed": "7",
 "board": {"rotated": true, "start_codes": [2,3,4,6,5,4,3,2, 1,1,1,1,1,1,1,1, 0,0,0,0,0,0,0,0,
   0,0,0,0,0,0,0,0, 0,0,0,0,0,0,0,0, 0,0,0,0,0,0,0,0, 7,7,7,7,7,7,7,7, 8,9,10,12,11,10,9,8]},
 "clock": {"white_side": "right", "initial_s": {"left": 290, "right": 300}, "increment_display": true},
 "steps": [{"dt_ms": 1000, "kind": "start"},
  {"dt_ms": 0, "kind": "segment", "side": "right", "from_s": 300, "to_s": 298, "dur_ms": 900},
  {"dt_ms": 500, "kind": "set", "square": "e2", "code": 0, "reported": true},
  {"dt_ms": 200, "kind": "set", "square": "e4", "code": 1, "reported": true},
  {"dt_ms": 200, "kind": "press", "side": "right", "display_s": 301},
  {"dt_ms": 0, "kind": "segment", "side": "left", "from_s": 290, "to_s": 289, "dur_ms": 900},
  {"dt_ms": 500, "kind": "set", "square": "e7", "code": 0, "reported": false},
  {"dt_ms": 200, "kind": "set", "square": "e5", "code": 7, "reported": true},
  {"dt_ms": 200, "kind": "press", "side": "left", "display_s": 291},
  {"dt_ms": 0, "kind": "segment", "side": "right", "from_s": 301, "to_s": 300, "dur_ms": 700},
  {"dt_ms": 500, "kind": "set", "square": "d1", "code": 0, "reported": true},
  {"dt_ms": 200, "kind": "set", "square": "h5", "code": 6, "reported": true},
  {"dt_ms": 5, "kind": "set", "square": "b8", "code": 0, "reported": true},
  {"dt_ms": 200, "kind": "set", "square": "c6", "code": 9, "reported": true},
  {"dt_ms": 5, "kind": "press2", "presses": [{"side": "right", "display_s": 299}, {"side": "left", "display_s": 290}]},
  {"dt_ms": 0, "kind": "segment", "side": "right", "from_s": 299, "to_s": 296, "dur_ms": 1500},
  {"dt_ms": 1000, "kind": "set", "square": "f1", "code": 0, "reported": true},
  {"dt_ms": 300, "kind": "set", "square": "c4", "code": 4, "reported": true},
  {"dt_ms": 200, "kind": "press", "side": "right", "display_s": 297},
  {"dt_ms": 0, "kind": "segment", "side": "left", "from_s": 290, "to_s": 287, "dur_ms": 1500},
  {"dt_ms": 1000, "kind": "set", "square": "g8", "code": 0, "reported": true},
  {"dt_ms": 300, "kind": "set", "square": "f6", "code": 9, "reported": true},
  {"dt_ms": 200, "kind": "press", "side": "left", "display_s": 288},
  {"dt_ms": 0, "kind": "segment", "side": "right", "from_s": 297, "to_s": 295, "dur_ms": 1500},
  {"dt_ms": 1000, "kind": "set", "square": "f7", "code": 0, "reported": true},
  {"dt_ms": 150, "kind": "set", "square": "h5", "code": 0, "reported": true},
  {"dt_ms": 150, "kind": "set", "square": "f7", "code": 6, "reported": true},
  {"dt_ms": 200, "kind": "press", "side": "right", "display_s": 296},
  {"dt_ms": 1000, "kind": "stop"}],
 "truth": {"san": ["e4", "e5", "Qh5", "Nc6", "Bc4", "Nf6", "Qxf7#"],
   "uci": ["e2e4", "e7e5", "d1h5", "b8c6", "f1c4", "g8f6", "h5f7"],
   "clk": [301, 291, 299, 290, 297, 288, 296],
   "clk_observable": [true, true, false, true, true, true, true],
   "result": "1-0", "expected_result": "1-0", "accept_results": ["1-0"], "result_signalled": false,
   "start_fen": "rnbqkbnr/pppppppp/8/8/8/8/PPPPPPPP/RNBQKBNR w KQkq - 0 1",
   "final_fen": "r1bqkb1r/pppp1Qpp/2n2n2/4p3/2B1P3/8/PPPP1PPP/RNB1K1NR b KQkq - 0 4"}}"#;

#[test]
fn a_small_script_comes_out_exact_offline() {
    let s = script::parse(SCHOLAR, Path::new("mixed-rotated-s7-g0.json")).expect("parses");
    let job = job(&s);
    assert_eq!(job.expected_result().as_deref(), Some("1-0"));
    let out = replay_script(&s, &OfflineOptions::default());
    assert_eq!(out.profile, "mixed-rotated");
    let o = &out.outcome;
    assert!(o.passed(), "{}", o.why.join("\n"));
    assert_eq!(o.confirmed.len(), 7);
    // Qh5's %clk: none, or the right one; the others all checked.
    assert_eq!(o.clk_checked, 7);
    assert!(o.clk_unseen <= 1);
    let rows = tabulate(std::slice::from_ref(&out));
    assert_eq!(rows["mixed-rotated"].exact, 1);
    assert_eq!(rows["TOTAL"].games, 1);
}

#[test]
fn a_result_the_script_also_accepts_is_not_wrong() {
    // The same game without its mate, unfinished: "*" expected, a draw also accepted.
    let text = SCHOLAR.replace(
        r#""expected_result": "1-0", "accept_results": ["1-0"]"#,
        r#""expected_result": "*", "accept_results": ["*", "1/2-1/2"]"#,
    );
    let s = script::parse(&text, Path::new("promotion-s1-g0.json")).expect("parses");
    assert_eq!(job(&s).expected_result(), None);
    let o = replay_script(&s, &OfflineOptions::default()).outcome;
    // The board shows mate (1-0), which the script does not accept.
    assert!(o.result_wrong(), "{:?} {:?}", o.result, o.expected_result);
    let text = text.replace(r#""accept_results": ["*", "1/2-1/2"]"#, r#""accept_results": ["*", "1-0"]"#);
    let s = script::parse(&text, Path::new("promotion-s1-g0.json")).expect("parses");
    let o = replay_script(&s, &OfflineOptions::default()).outcome;
    assert!(!o.result_wrong() && o.passed(), "{}", o.why.join("\n"));
}

#[test]
fn a_small_script_comes_out_exact_through_the_real_relay() {
    use dgt_e2e_tests::acceptance::{RunOptions, check, run, work_dir};
    let relay_bin = match dgt_e2e_tests::relay::relay_binary(false) {
        Ok(b) => b,
        Err(e) => panic!("{e:#}"),
    };
    let s = script::parse(SCHOLAR, Path::new("mixed-rotated-s7-g0.json")).expect("parses");
    let opts = RunOptions {
        boards: 1,
        speed: 1.0,
        hand_speed: 1.0,
        dir: work_dir("script"),
        relay_bin,
        progress: None,
        first_serial: 31001,
        bursts: None,
    };
    let result = run(vec![job(&s)], &opts).expect("the relay runs");
    let c = check(&result.jobs[0], &result.outcomes[0]);
    assert!(c.exact(), "{}", c.why.join("\n"));
    let _ = std::fs::remove_dir_all(&opts.dir);
}

/// The board's field updates as the relay read them: (relay ms, message).
fn field_updates(o: &dgt_e2e_tests::offline::OfflineOutcome) -> Vec<(u64, String)> {
    o.fed.iter().filter(|(_, m)| m.starts_with("FieldUpdate")).cloned().collect()
}

#[test]
fn a_bursty_link_holds_each_report_back_within_its_bounds_in_order_and_by_its_seed() {
    use dgt_hil_sim::transport::Bursts;
    let s = script::parse(SCHOLAR, Path::new("mixed-rotated-s7-g0.json")).expect("parses");
    let plain = OfflineOptions { keep_events: true, ..OfflineOptions::default() };
    let bursty = |seed| OfflineOptions { bursts: Some(Bursts { min_ms: 20, max_ms: 120, seed }), ..plain };
    let at_once = field_updates(&replay_script(&s, &plain).outcome);
    let held = field_updates(&replay_script(&s, &bursty(3)).outcome);
    // The same reports in the same order, each read at most 120 ms after it was sent (a
    // burst's first byte 20-120 ms after, those that join it sooner).
    assert!(at_once.len() >= 14, "{at_once:?}");
    assert_eq!(
        held.iter().map(|f| &f.1).collect::<Vec<_>>(),
        at_once.iter().map(|f| &f.1).collect::<Vec<_>>()
    );
    for ((t, m), (t0, _)) in held.iter().zip(&at_once) {
        assert!((*t0..=t0 + 120).contains(t), "{m}: read at {t}, sent at {t0}");
    }
    assert!(held.iter().zip(&at_once).all(|(a, b)| a.0 > b.0), "every report is held");
    // Some reports arrive together, read at one instant though made apart.
    assert!(held.windows(2).any(|w| w[0].0 == w[1].0), "{held:?}");
    // The same seed gives the same reads; another seed others.
    assert_eq!(field_updates(&replay_script(&s, &bursty(3)).outcome), held);
    assert_ne!(field_updates(&replay_script(&s, &bursty(4)).outcome), held);
}
