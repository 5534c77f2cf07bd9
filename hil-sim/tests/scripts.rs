//! Hand scripts (`dgt-hand-script/1`) played through the firmware model: the wire must carry
//! exactly what each script says (one field update per reported `set`, none for a lost one,
//! a BWTIME per clock change with the script's displays and lever, one for a `press2`), and
//! the board must end as the script's final position (after the result gesture). Expected
//! values are computed here from the script's steps, not from the conversion.

mod common;

use std::path::{Path, PathBuf};

use dgt_hil_sim::firmware::BoardConfig;
use dgt_hil_sim::hostport::Received;
use dgt_hil_sim::offline::replay_offline;
use dgt_hil_sim::scenario::codes_board;
use dgt_hil_sim::script::{self, HandScript, ScriptError, StepKind, StepProblem};
use dgt_protocol::{ClockSide, Command, DgtSquare, PieceCode};
use serde_json::{Value, json};
use shakmaty::{Board, Color, Piece, Role};

/// What a BWTIME shows: left and right seconds, running, right lever up, time-per-move bits.
type ClockRead = (u32, u32, bool, bool, bool);

fn ms(t: f64) -> u64 {
    t.round() as u64
}

/// The wire an offline replay of `s` must carry, from the steps alone.
struct Expected {
    /// (virtual ms, wire index, code) per reported set.
    fields: Vec<(u64, u8, u8)>,
    /// Every clock reading in order, with its time: exact, or a window for countdown steps.
    clock: Vec<(ClockRead, (u64, u64))>,
}

fn expected(s: &HandScript) -> Expected {
    let mut fields = Vec::new();
    let mut clock = Vec::new();
    let Some(c) = s.clock else {
        let mut t = 0.0;
        for step in &s.steps {
            t += step.dt_ms;
            if let StepKind::Set { square, code, reported: true } = step.kind {
                fields.push((ms(t), DgtSquare::from_square(square, s.orientation()).index(), code.code()));
            }
        }
        return Expected { fields, clock };
    };
    let (mut left, mut right) = (c.initial_left_s, c.initial_right_s);
    let mut running = false;
    let mut right_high = c.white_side == ClockSide::Right;
    let tpm = c.increment_display;
    clock.push(((left, right, running, right_high, tpm), (0, 0)));
    let mut t = 0.0f64;
    // Countdown readings waiting for the step that ends their segment: (reading, from).
    let mut pending: Vec<(ClockRead, u64)> = Vec::new();
    let show = |side: ClockSide, secs: u32, left: &mut u32, right: &mut u32| {
        if side == ClockSide::Left { *left = secs } else { *right = secs }
    };
    for step in &s.steps {
        t += step.dt_ms;
        let now = ms(t);
        if !matches!(step.kind, StepKind::Set { .. } | StepKind::Note { .. }) {
            clock.extend(pending.drain(..).map(|(r, from)| (r, (from, now))));
        }
        match step.kind {
            StepKind::Set { square, code, reported } => {
                if reported {
                    fields.push((now, DgtSquare::from_square(square, s.orientation()).index(), code.code()));
                }
            }
            StepKind::Note { .. } => {}
            StepKind::Start => {
                running = true;
                clock.push(((left, right, running, right_high, tpm), (now, now)));
            }
            StepKind::Stop => {
                running = false;
                clock.push(((left, right, running, right_high, tpm), (now, now)));
            }
            StepKind::Segment { side, from_s, to_s, .. } => {
                // Each whole second on the way; a display never shows less than 0.
                let mut secs = from_s;
                while secs != to_s {
                    secs = if to_s < secs { secs - 1 } else { secs + 1 };
                    let before = if side == ClockSide::Left { left } else { right };
                    let shown = secs.clamp(0, 35_999) as u32;
                    if shown != before {
                        show(side, shown, &mut left, &mut right);
                        pending.push(((left, right, running, right_high, tpm), now));
                    }
                }
            }
            StepKind::Press { side, display_s } => {
                show(side, display_s, &mut left, &mut right);
                right_high = side == ClockSide::Left;
                clock.push(((left, right, running, right_high, tpm), (now, now)));
            }
            StepKind::Press2 { presses } => {
                for (side, display_s) in presses {
                    show(side, display_s, &mut left, &mut right);
                    right_high = side == ClockSide::Left;
                }
                clock.push(((left, right, running, right_high, tpm), (now, now)));
            }
        }
    }
    clock.extend(pending.drain(..).map(|(r, from)| (r, (from, u64::MAX))));
    Expected { fields, clock }
}

/// The board after the last ply, with the kings-in-centre gesture when the script signals.
fn expected_final_board(s: &HandScript) -> Board {
    let fen: shakmaty::fen::Fen = s.truth.final_fen.parse().expect("final FEN");
    let mut board = fen.as_setup().board.clone();
    if s.truth.result_signalled {
        let sq = s.truth.result_signal_squares.expect("a signalled result names its squares");
        for color in [Color::White, Color::Black] {
            if let Some(k) = board.king_of(color) {
                board.discard_piece_at(k);
            }
        }
        board.discard_piece_at(sq.white_king);
        board.discard_piece_at(sq.black_king);
        board.set_piece_at(sq.white_king, Piece { color: Color::White, role: Role::King });
        board.set_piece_at(sq.black_king, Piece { color: Color::Black, role: Role::King });
    }
    board
}

/// Plays `s` offline and checks the wire and the final board; returns what was wrong.
fn check_wire(s: &HandScript) -> Vec<String> {
    let mut why = Vec::new();
    let scenario = s.to_scenario();
    let replay = replay_offline(&scenario, BoardConfig::default(), Command::SendUpdateNice);
    let want = expected(s);
    let fields: Vec<(u64, u8, u8)> = replay
        .received
        .iter()
        .filter_map(|(at, r)| match r {
            Received::Field { index, raw } => Some((*at, *index, raw & 0x0F)),
            _ => None,
        })
        .collect();
    if fields != want.fields {
        let first = fields.iter().zip(&want.fields).position(|(a, b)| a != b).unwrap_or(0);
        why.push(format!(
            "field updates: {} on the wire, {} reported sets; first difference at #{first}: {:?} vs {:?}",
            fields.len(),
            want.fields.len(),
            fields.get(first),
            want.fields.get(first)
        ));
    }
    let mut clock: Vec<(u64, ClockRead)> = replay
        .received
        .iter()
        .filter_map(|(at, r)| match r {
            Received::Times(t) => Some((
                *at,
                (
                    t.left.time.total_seconds(),
                    t.right.time.total_seconds(),
                    t.status.running(),
                    t.status.right_high(),
                    t.left.flags.time_per_move && t.right.flags.time_per_move,
                ),
            )),
            _ => None,
        })
        .collect();
    if s.clock.is_some() {
        // The clock made from the setup may speak once at 0 before it becomes the puppet.
        if clock.len() > 1 && clock[0].0 == 0 && want.clock.first().is_some_and(|w| w.0 != clock[0].1) {
            clock.remove(0);
        }
        if clock.len() != want.clock.len() {
            why.push(format!("{} BWTIMEs on the wire, {} expected", clock.len(), want.clock.len()));
        }
        for (i, ((at, got), (w, (from, to)))) in clock.iter().zip(&want.clock).enumerate() {
            if got != w || at < from || at > to {
                why.push(format!("BWTIME #{i} at {at}: {got:?}, expected {w:?} within {from}..={to}"));
                break;
            }
        }
    } else if !clock.iter().all(|(_, (.., running, _, _))| !running) {
        why.push("a clock ran on a board without one".into());
    }
    let dump = replay.final_dump.map(PieceCode::from_nibble);
    let board = codes_board(&dump, s.orientation());
    let want_board = expected_final_board(s);
    if board != want_board {
        why.push(format!("final dump {board}, expected {want_board}"));
    }
    why
}

/// Checks the ground truth the conversion made against the script's truth.
fn check_truth(s: &HandScript) -> Vec<String> {
    let mut why = Vec::new();
    let scenario = s.to_scenario();
    let Some(t) = scenario.truth.as_ref() else { return vec!["no truth".into()] };
    if t.moves.len() != s.plies() {
        why.push(format!("{} plies in the truth, {} in the script", t.moves.len(), s.plies()));
    }
    for (i, m) in t.moves.iter().enumerate() {
        let mover = if m.color == "white" { m.white_clock_s } else { m.black_clock_s };
        if m.uci != s.truth.uci[i] || mover != s.truth.clk[i] || m.clk_observable != s.truth.clk_observable[i]
        {
            why.push(format!("ply {}: {m:?} against clk {:?}", i + 1, s.truth.clk[i]));
            break;
        }
        if s.clock.is_some() != m.press_at_ms.is_some() {
            why.push(format!("ply {}: press time {:?}", i + 1, m.press_at_ms));
        }
    }
    // The end maps onto what the checkers derive the result from.
    let derived = match t.end.as_str() {
        "kings_in_centre" => s.truth.result.clone(),
        "checkmate" => if t.final_fen.split(' ').nth(1) == Some("w") { "0-1" } else { "1-0" }.to_string(),
        "stalemate" => "1/2-1/2".into(),
        _ => "*".into(),
    };
    if derived != s.truth.expected_result {
        why.push(format!("end {} gives {derived}, the script expects {}", t.end, s.truth.expected_result));
    }
    if t.expected_result.as_deref() != Some(s.truth.expected_result.as_str()) {
        why.push("expected result not carried".into());
    }
    if t.final_board != s.final_board().to_string() || s.final_board() != expected_final_board(s) {
        why.push(format!("final board {} (truth) vs {}", t.final_board, expected_final_board(s)));
    }
    let times: Vec<u64> = scenario.actions.iter().map(|a| a.at_ms).collect();
    if times.windows(2).any(|w| w[0] > w[1]) {
        why.push("actions out of time order".into());
    }
    why
}

fn shared_scripts() -> Option<PathBuf> {
    let dir = common::corpus("hand-scripts");
    dir.is_dir().then_some(dir)
}

#[test]
fn every_shared_script_plays_exactly_on_the_wire_needs_shared_corpus() {
    let Some(dir) = shared_scripts() else {
        eprintln!(
            "SKIPPED: no shared hand scripts at ../shared/corpus/hand-scripts (the shared corpus is absent)"
        );
        return;
    };
    let scripts = script::load_tree(&dir).expect("every shared script loads");
    assert!(scripts.len() >= 427, "{} scripts", scripts.len());
    assert!(scripts.iter().any(|s| s.label == "human-pace/clean"));
    assert!(scripts.iter().any(|s| s.label == "mixed-noclock"));
    let next = std::sync::atomic::AtomicUsize::new(0);
    let failures = std::sync::Mutex::new(Vec::new());
    std::thread::scope(|scope| {
        for _ in 0..2 {
            scope.spawn(|| {
                while let Some(s) = scripts.get(next.fetch_add(1, std::sync::atomic::Ordering::Relaxed)) {
                    let mut why = check_truth(s);
                    why.extend(check_wire(s));
                    if !why.is_empty() {
                        failures.lock().expect("lock").push(format!("{}: {}", s.name, why.join("; ")));
                    }
                }
            });
        }
    });
    let failures = failures.into_inner().expect("lock");
    assert!(failures.is_empty(), "{} of {} scripts:\n{}", failures.len(), scripts.len(), failures.join("\n"));
}

// ----- a script written here, so that something always runs --------------------------

/// A short game on a rotated board, White on the right display: a lost field update, a
/// `press2` whose first `%clk` nobody can see, a checkmate.
fn small_script(steps: Vec<Value>) -> Value {
    json!({
        "format": "dgt-hand-script/1",
        "source": {"pgn": "hand-written", "game_index": 0},
        "profile": "test",
        "seed": "7",
        "board": {
            "rotated": true,
            "start_codes": [2,3,4,6,5,4,3,2, 1,1,1,1,1,1,1,1, 0,0,0,0,0,0,0,0, 0,0,0,0,0,0,0,0,
                            0,0,0,0,0,0,0,0, 0,0,0,0,0,0,0,0, 7,7,7,7,7,7,7,7, 8,9,10,12,11,10,9,8]
        },
        "clock": {"white_side": "right", "initial_s": {"left": 290, "right": 300}, "increment_display": true},
        "steps": steps,
        "truth": {
            "san": ["e4", "e5", "Qh5", "Nc6", "Bc4", "Nf6", "Qxf7#"],
            "uci": ["e2e4", "e7e5", "d1h5", "b8c6", "f1c4", "g8f6", "h5f7"],
            "clk": [301, 291, 299, 290, 297, 288, 296],
            "clk_observable": [true, true, false, true, true, true, true],
            "result": "1-0", "expected_result": "1-0", "accept_results": ["1-0"],
            "result_signalled": false,
            "events": [[], [], [], [], [], [], []],
            "start_fen": "rnbqkbnr/pppppppp/8/8/8/8/PPPPPPPP/RNBQKBNR w KQkq - 0 1",
            "final_fen": "r1bqkb1r/pppp1Qpp/2n2n2/4p3/2B1P3/8/PPPP1PPP/RNB1K1NR b KQkq - 0 4",
            "white": "A", "black": "B", "round": "1.1"
        }
    })
}

fn small_steps() -> Vec<Value> {
    let set = |dt: f64, sq: &str, code: u8, reported: bool| json!({"dt_ms": dt, "kind": "set", "square": sq, "code": code, "reported": reported});
    let press =
        |dt: f64, side: &str, d: u32| json!({"dt_ms": dt, "kind": "press", "side": side, "display_s": d});
    let segment = |side: &str, from: u32, to: u32, dur: f64| json!({"dt_ms": 0.0, "kind": "segment", "side": side, "from_s": from, "to_s": to, "dur_ms": dur});
    vec![
        json!({"dt_ms": 0.0, "kind": "start"}),
        json!({"dt_ms": 0.0, "kind": "note", "text": "ply 1 e4"}),
        segment("right", 300, 298, 100.4),
        set(40.0, "e2", 0, true),
        set(30.2, "e4", 1, true),
        press(30.2, "right", 301),
        segment("left", 290, 289, 50.0),
        set(20.0, "e7", 0, false),
        set(20.0, "e5", 7, true),
        press(10.0, "left", 291),
        // Qh5 and Nc6 made before White's press; one poll sees both presses.
        segment("right", 301, 300, 20.0),
        set(5.0, "d1", 0, true),
        set(5.0, "h5", 6, true),
        set(5.0, "b8", 0, true),
        set(5.0, "c6", 9, true),
        json!({"dt_ms": 10.0, "kind": "press2",
               "presses": [{"side": "right", "display_s": 299}, {"side": "left", "display_s": 290}]}),
        segment("right", 299, 296, 60.0),
        set(20.0, "f1", 0, true),
        set(20.0, "c4", 4, true),
        press(20.0, "right", 297),
        segment("left", 290, 287, 45.0),
        set(15.0, "g8", 0, true),
        set(15.0, "f6", 9, true),
        press(15.0, "left", 288),
        segment("right", 297, 295, 90.0),
        set(30.0, "f7", 0, true),
        set(30.0, "h5", 0, true),
        set(30.0, "f7", 6, true),
        press(0.0, "right", 296),
        json!({"dt_ms": 100.0, "kind": "stop"}),
    ]
}

fn parse_value(v: &Value, name: &str) -> Result<HandScript, ScriptError> {
    script::parse(&v.to_string(), Path::new(name))
}

#[test]
fn a_hand_written_script_plays_as_written() {
    let s = parse_value(&small_script(small_steps()), "test-s7-g0.json").expect("the script parses");
    assert_eq!(s.label, "test");
    assert_eq!(check_truth(&s), Vec::<String>::new());
    assert_eq!(check_wire(&s), Vec::<String>::new());

    let scenario = s.to_scenario();
    let truth = scenario.truth.as_ref().expect("truth");
    assert_eq!(truth.end, "checkmate");
    assert_eq!(truth.orientation, "rotated");
    assert!(!truth.moves[2].clk_observable && truth.moves[3].clk_observable);
    assert_eq!(truth.moves[2].press_at_ms, truth.moves[3].press_at_ms);
    // After Qh5's press (the first of the pair) White shows 299 and Black still 291.
    assert_eq!((truth.moves[2].white_clock_s, truth.moves[2].black_clock_s), (Some(299), Some(291)));

    let replay = replay_offline(&scenario, BoardConfig::default(), Command::SendUpdateNice);
    // Rotated: e2 (a1-based 12) is wire index 11, e4 (28) is 27; e7's lift was lost.
    let fields: Vec<(u64, u8, u8)> = replay
        .received
        .iter()
        .filter_map(|(at, r)| match r {
            Received::Field { index, raw } => Some((*at, *index, *raw)),
            _ => None,
        })
        .collect();
    assert_eq!(&fields[..3], &[(40, 11, 0), (70, 27, 1), (140, 35, 7)]);
    assert_eq!(fields.len(), 14);
    // The clock made from the setup, the puppet's displays, the start; the countdown of the
    // first segment: 299 at 50 ms, 298 at 100 ms, then the press at 100.
    let times: Vec<(u64, u32, u32, bool)> = replay
        .received
        .iter()
        .filter_map(|(at, r)| match r {
            Received::Times(t) => {
                Some((*at, t.left.time.total_seconds(), t.right.time.total_seconds(), t.status.right_high()))
            }
            _ => None,
        })
        .collect();
    assert_eq!(
        &times[..8],
        &[
            (0, 300, 300, true),
            (0, 290, 300, true),
            (0, 290, 300, true),
            (50, 290, 299, true),
            (100, 290, 298, true),
            (100, 290, 301, false),
            (150, 289, 301, false),
            (150, 291, 301, true)
        ]
    );
    // press2: one BWTIME with both displays, the lever back on White's (right) side.
    let at = truth.moves[2].press_at_ms.expect("press time");
    let at_press2: Vec<_> = times.iter().filter(|t| t.0 == at).collect();
    assert_eq!(at_press2, vec![&(at, 290, 299, true)]);
}

#[test]
fn bad_scripts_give_typed_errors_naming_the_file() {
    let name = "bad-s1-g0.json";
    let err = |v: &Value| parse_value(v, name).expect_err("must fail");
    let with_step = |extra: Value| {
        let mut steps = small_steps();
        steps.insert(1, extra);
        small_script(steps)
    };
    let step_problem = |e: ScriptError| match e {
        ScriptError::Step { index, problem, .. } => (index, problem),
        other => panic!("not a step error: {other}"),
    };
    let e = script::parse("{ not json", Path::new(name)).expect_err("garbage");
    assert!(matches!(e, ScriptError::Json { .. }));
    assert!(e.to_string().contains(name), "{e}");
    let mut v = small_script(small_steps());
    v["format"] = json!("dgt-hand-script/2");
    assert!(matches!(err(&v), ScriptError::Format { found, .. } if found == "dgt-hand-script/2"));
    assert!(matches!(parse_value(&json!({"steps": []}), name), Err(ScriptError::Format { .. })));
    assert_eq!(
        step_problem(err(&with_step(json!({"dt_ms": 1.0, "kind": "jump"})))),
        (1, StepProblem::UnknownKind("jump".into()))
    );
    let set = |sq: &str, code: i64| json!({"dt_ms": 1.0, "kind": "set", "square": sq, "code": code, "reported": true});
    assert_eq!(step_problem(err(&with_step(set("i9", 1)))), (1, StepProblem::BadSquare("i9".into())));
    assert_eq!(step_problem(err(&with_step(set("e4", 13)))), (1, StepProblem::BadCode(13)));
    assert_eq!(step_problem(err(&with_step(set("e4", -1)))), (1, StepProblem::BadCode(-1)));
    let (_, p) = step_problem(err(&with_step(json!({"dt_ms": -5.0, "kind": "note", "text": ""}))));
    assert!(matches!(p, StepProblem::BadTime { field: "dt_ms", .. }), "{p:?}");
    let seg =
        json!({"dt_ms": 0.0, "kind": "segment", "side": "left", "from_s": 3, "to_s": 2, "dur_ms": -1.0});
    assert!(matches!(step_problem(err(&with_step(seg))).1, StepProblem::BadTime { field: "dur_ms", .. }));
    let press = json!({"dt_ms": 0.0, "kind": "press", "side": "left", "display_s": -3});
    assert_eq!(
        step_problem(err(&with_step(press))),
        (1, StepProblem::BadSeconds { field: "display_s", value: -3 })
    );
    let press = json!({"dt_ms": 0.0, "kind": "press", "side": "middle", "display_s": 3});
    assert_eq!(step_problem(err(&with_step(press))), (1, StepProblem::BadSide("middle".into())));
    let press2 = json!({"dt_ms": 0.0, "kind": "press2", "presses": [{"side": "left", "display_s": 3}]});
    assert_eq!(step_problem(err(&with_step(press2))), (1, StepProblem::Press2Count(1)));
    assert_eq!(
        step_problem(err(&with_step(json!({"dt_ms": 0.0, "kind": "set", "square": "e4"})))),
        (1, StepProblem::Missing("code"))
    );
    // A press by the wrong display, a press too many, a bad board.
    let mut v = small_script(small_steps());
    v["steps"][5]["side"] = json!("left");
    assert!(matches!(err(&v), ScriptError::Inconsistent { .. }));
    let mut v = small_script(small_steps());
    v["truth"]["clk"][0] = json!(100);
    assert!(matches!(err(&v), ScriptError::Inconsistent { .. }));
    let mut v = small_script(small_steps());
    v["board"]["start_codes"][3] = json!(14);
    let e = err(&v);
    assert!(matches!(e, ScriptError::Setup { .. }) && e.to_string().contains(name), "{e}");
    let e = script::load(Path::new("no-such-folder/hand-script.json")).expect_err("no file");
    assert!(matches!(e, ScriptError::Io { .. }) && e.to_string().contains("hand-script.json"));
}

#[test]
fn a_script_without_a_clock_has_no_clock_steps() {
    let mut v = small_script(
        small_steps().into_iter().filter(|s| s["kind"] == "set" || s["kind"] == "note").collect(),
    );
    v["clock"] = Value::Null;
    v["truth"]["clk"] = json!([null, null, null, null, null, null, null]);
    let s = parse_value(&v, "noclock-s1-g0.json").expect("parses");
    assert_eq!(check_truth(&s), Vec::<String>::new());
    assert_eq!(check_wire(&s), Vec::<String>::new());
    let scenario = s.to_scenario();
    assert!(scenario.setup.clock.is_none());
    assert!(scenario.truth.as_ref().is_some_and(|t| t.clock.is_none() && t.moves[0].press_at_ms.is_none()));
    // A press on a board without a clock is refused.
    let mut v = small_script(small_steps());
    v["clock"] = Value::Null;
    assert!(matches!(parse_value(&v, "x.json"), Err(ScriptError::Inconsistent { .. })));
}
