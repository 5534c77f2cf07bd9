//! Clock press to confirmed move, per board, on a chain of 1, 6 and 12 boards in DGT's bus
//! mode: the relay's [`dgt_session::BusPoller`] and one board session per board against
//! the simulator's firmwares on its 9,600-baud line model, in virtual time (so the figures
//! are the polling schedule's and the line's, not this machine's load).
//!
//! Every board plays the same knight shuffle, one ply every [`PLY_MS`], the boards' plies
//! spread over that time and shifted ply by ply so presses fall at every point of the
//! polling cycle. Printed beside the wire-rate bound: a cycle of empty `SEND_CHANGES` polls
//! (command and empty reply, at 960 bytes/s) is the least time a board can wait for its
//! turn, and a press waits on average half a cycle, at worst a whole one, plus the reply
//! that carries it. Run: `cargo bench -p dgt-session --bench bus_latency`.

#[path = "../tests/support/chain.rs"]
mod chain;

use chain::{Chain, FIRST};
use dgt_hil_sim::chain::BYTES_PER_SECOND;
use dgt_protocol::bus::{BusData, BusReply, EeEvents};
use dgt_protocol::{ClockSide, PieceCode};
use dgt_session::{Effect, MoveState};
use shakmaty::Square;

/// Real time between two plies on one board (both hands and the press within it).
const PLY_MS: u64 = 3_000;
/// Lift to put, and put to press.
const HAND_MS: u64 = 300;

/// The plies every board plays: knights out and back, twice by different routes.
const PLIES: [(Square, Square); 16] = [
    (Square::G1, Square::F3),
    (Square::G8, Square::F6),
    (Square::F3, Square::G1),
    (Square::F6, Square::G8),
    (Square::B1, Square::C3),
    (Square::B8, Square::C6),
    (Square::C3, Square::B1),
    (Square::C6, Square::B8),
    (Square::G1, Square::H3),
    (Square::G8, Square::H6),
    (Square::H3, Square::G1),
    (Square::H6, Square::G8),
    (Square::B1, Square::A3),
    (Square::B8, Square::A6),
    (Square::A3, Square::B1),
    (Square::A6, Square::B8),
];

/// What a hand does, at a virtual millisecond.
#[derive(Clone, Copy, Debug)]
enum Act {
    Lift(Square),
    Put(Square, PieceCode),
    Press(ClockSide),
}

/// Milliseconds per byte on the line.
fn byte_ms() -> f64 {
    1_000.0 / BYTES_PER_SECOND as f64
}

/// Bytes of one `SEND_CHANGES` exchange: the 4-byte command and a reply with `data` bytes of
/// events.
fn exchange_bytes(data: usize) -> usize {
    let raw = vec![0u8; data];
    4 + BusReply::new(FIRST, BusData::Update(EeEvents::new(&raw))).encoded_len()
}

/// Press-to-confirmation latencies (ms) of every ply on every board of a chain of `n`,
/// each board playing a ply every [`PLY_MS`].
fn measure(n: usize) -> Vec<u64> {
    measure_at(n, PLY_MS, PLIES.len())
}

/// Press-to-confirmation latencies (ms), in press order per board, of a chain of `n`
/// boards each playing `plies` plies, one every `ply_ms` (the shuffle repeated).
fn measure_at(n: usize, ply_ms: u64, plies: usize) -> Vec<u64> {
    let mut c = Chain::new(n);
    let boards: Vec<u16> = (0..n).map(|i| FIRST + i as u16).collect();
    for &a in &boards {
        c.clock(a);
    }
    c.run(8_000);
    let base = c.now();
    // The timeline: (ms, board, act); presses remembered per board and ply.
    let mut acts = Vec::new();
    // Hands within a ply: at most a third of it each.
    let hand = HAND_MS.min(ply_ms / 3);
    for (i, &a) in boards.iter().enumerate() {
        let mut pieces: Vec<(Square, PieceCode)> = Vec::new();
        for k in 0..plies {
            let (from, to) = PLIES[k % PLIES.len()];
            let shift = (i as u64 * ply_ms) / n as u64 + (k as u64 * 137) % (ply_ms / 6).max(1);
            let at = base + k as u64 * ply_ms + shift;
            let piece =
                pieces.iter().find(|(s, _)| *s == from).map(|(_, p)| *p).unwrap_or_else(|| {
                    if k % 2 == 0 { PieceCode::WhiteKnight } else { PieceCode::BlackKnight }
                });
            pieces.retain(|(s, _)| *s != from);
            pieces.push((to, piece));
            let side = if k % 2 == 0 { ClockSide::Left } else { ClockSide::Right };
            acts.push((at, a, Act::Lift(from)));
            acts.push((at + hand, a, Act::Put(to, piece)));
            acts.push((at + 2 * hand, a, Act::Press(side)));
        }
    }
    acts.sort_by_key(|(at, _, _)| *at);
    let end = acts.last().map_or(base, |(at, _, _)| *at) + 3 * PLY_MS + 10_000;
    let mut presses: Vec<(u16, u64)> = Vec::new();
    let mut next = 0;
    while c.now() < end {
        let now = c.now();
        while let Some(&(at, a, act)) = acts.get(next)
            && at <= now
        {
            match act {
                Act::Lift(s) => c.set(a, s, PieceCode::Empty),
                Act::Put(s, p) => c.set(a, s, p),
                Act::Press(side) => {
                    c.press(a, side);
                    presses.push((a, now));
                }
            }
            next += 1;
        }
        c.step();
    }
    let mut latencies = Vec::new();
    for &a in &boards {
        let confirmed: Vec<u64> = c.per[&a]
            .effects
            .iter()
            .filter_map(|(t, e)| matches!(e, Effect::Move { state: MoveState::Confirmed, .. }).then_some(*t))
            .collect();
        let pressed: Vec<u64> = presses.iter().filter(|(b, _)| *b == a).map(|(_, t)| *t).collect();
        if confirmed.len() != pressed.len() {
            eprintln!("board {a}: {} presses, {} confirmed moves", pressed.len(), confirmed.len());
        }
        latencies.extend(pressed.iter().zip(&confirmed).map(|(p, m)| m.saturating_sub(*p)));
    }
    latencies
}

fn percentile(sorted: &[u64], p: f64) -> u64 {
    let i = ((sorted.len() as f64 - 1.0) * p).round() as usize;
    sorted.get(i).copied().unwrap_or(0)
}

fn main() {
    // `cargo test --benches` runs this with `--bench`; `cargo bench` too. Both measure.
    let empty = exchange_bytes(0) as f64 * byte_ms();
    // Two field events (2 bytes each) and the press (3 bytes).
    let carrying = exchange_bytes(7) as f64 * byte_ms();
    println!(
        "wire: {:.2} ms a byte; an empty changes poll {:.1} ms; the poll that brings a move and its press {:.1} ms",
        byte_ms(),
        empty,
        carrying
    );
    println!(
        "| boards | plies | median ms | p90 ms | max ms | wire bound: mean / worst ms | median / mean bound |"
    );
    println!("|---|---|---|---|---|---|---|");
    for n in [1usize, 6, 12] {
        let mut l = measure(n);
        l.sort_unstable();
        let cycle = n as f64 * empty;
        let (mean_bound, worst_bound) = (cycle / 2.0 + carrying, cycle + carrying);
        let median = percentile(&l, 0.5);
        println!(
            "| {n} | {} | {median} | {} | {} | {mean_bound:.0} / {worst_bound:.0} | {:.1} |",
            l.len(),
            percentile(&l, 0.9),
            l.last().copied().unwrap_or(0),
            median as f64 / mean_bound
        );
    }
    capacity();
}

/// The chain's capacity: 12 boards, every board a ply every `ply_ms` for 40 plies (the
/// whole chain `12 000 / ply_ms` plies a second), press to confirmed move per ply. Kept up
/// with while the last plies wait no longer than the first (the backlog does not grow).
fn capacity() {
    const N: usize = 12;
    const PLIES_PER_BOARD: usize = 40;
    println!();
    println!(
        "| plies/s on the line | ply every ms, a board | median ms | p90 ms | max ms | last 10 % of plies: median ms |"
    );
    println!("|---|---|---|---|---|---|");
    for ply_ms in [3_000u64, 2_000, 1_500, 1_000, 750, 600, 500, 400] {
        let l = measure_at(N, ply_ms, PLIES_PER_BOARD);
        let mut late: Vec<u64> = Vec::new();
        for b in 0..N {
            let per = &l[b * PLIES_PER_BOARD..((b + 1) * PLIES_PER_BOARD).min(l.len())];
            late.extend(&per[per.len().saturating_sub(PLIES_PER_BOARD / 10)..]);
        }
        late.sort_unstable();
        let mut all = l.clone();
        all.sort_unstable();
        println!(
            "| {:.1} | {ply_ms} | {} | {} | {} | {} |",
            N as f64 * 1_000.0 / ply_ms as f64,
            percentile(&all, 0.5),
            percentile(&all, 0.9),
            all.last().copied().unwrap_or(0),
            percentile(&late, 0.5)
        );
    }
}
