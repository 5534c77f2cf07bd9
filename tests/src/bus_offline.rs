//! The offline harness for a chain: jobs played on simulated board firmwares chained on the
//! simulator's line model, read by the relay's own [`BusPoller`] and a [`BoardSession`] per
//! board, all in one deterministic loop of real milliseconds, no threads, no ptys.
//!
//! Each board plays its job as a board of the end-to-end chain test does: thinking
//! fast-forwarded, hands at their own speed (the simulator's [`TimeMap`]), the scenario
//! started once the poller reads the board's changes, its cable pulled for a scenario's
//! `disconnect` (taken off the chain for the real time the simulator would keep it off, at
//! least [`dgt_hil_sim::sim::MIN_UNPLUGGED`], then powered up again). The poller, the line
//! and the sessions run in real milliseconds, as the relay does; the firmwares in their
//! virtual time. What the end-to-end test sees by chance (a press between two polls of one
//! board's turn, a reply lost as a cable is pulled) is reproduced here by seed.

use std::collections::BTreeMap;

use dgt_hil_sim::chain::{COMMAND_WIRE_US, Line};
use dgt_hil_sim::offline::apply_action;
use dgt_hil_sim::scenario::board_codes;
use dgt_hil_sim::timemap::TimeMap;
use dgt_hil_sim::{BoardConfig, Dgt3000, Firmware};
use dgt_protocol::ClockSide;
use dgt_session::{
    BoardSession, BusEvent, BusPoller, BusTiming, Effect, Link, LinkState, MoveState, SavedGame,
    SessionConfig,
};

use crate::acceptance::Job;

/// How a chain replay runs.
#[derive(Clone, Copy, Debug)]
pub struct ChainOptions {
    /// Thinking time is fast-forwarded this much.
    pub speed: f64,
    /// Hands at most this much faster than a person's.
    pub hand_speed: f64,
    /// The first board's serial number (and bus address).
    pub first: u16,
    /// Draws the boards' response times.
    pub seed: u64,
    /// Real milliseconds between one job's end and the next job on the same board.
    pub gap_ms: u64,
    /// The poller's timing.
    pub timing: BusTiming,
    /// Real milliseconds from the start of the line within which each board starts its
    /// first job (drawn by seed), once the poller reads it.
    pub first_start_ms: (u64, u64),
    /// Real ms (from, length) in which the relay is frozen, as on a loaded machine: the
    /// boards play on and answer nothing (nothing is asked), the line keeps what they sent,
    /// and the poller and sessions read it all at once when they run again.
    pub relay_frozen: Option<(u64, u64)>,
    /// Real ms at which the relay comes up: before it, the boards start their games as
    /// `first_start_ms` says and play with nobody reading them (games begun before the
    /// relay). 0: the relay is there first, and each board starts its first game once the
    /// relay reads it.
    pub relay_from_ms: u64,
    /// Real ms (at, down) at which the relay is stopped (killed: nothing is flushed but
    /// what its journal had, its confirmed moves) and started again on its journals `down`
    /// ms later, the boards playing on meanwhile.
    pub relay_restart: Option<(u64, u64)>,
}

impl Default for ChainOptions {
    fn default() -> Self {
        ChainOptions {
            speed: 150.0,
            hand_speed: 3.0,
            first: 12_001,
            seed: 1,
            gap_ms: 2_000,
            timing: BusTiming::default(),
            first_start_ms: (4_000, 7_000),
            relay_frozen: None,
            relay_from_ms: 0,
            relay_restart: None,
        }
    }
}

/// One job's outcome on its board.
#[derive(Clone, Debug)]
pub struct ChainOutcome {
    /// The job's label.
    pub label: String,
    /// The board's address.
    pub address: u16,
    /// The confirmed line: (UCI, `%clk`).
    pub confirmed: Vec<(String, Option<u32>)>,
    /// Plies without `%clk` whose press the board's event log never got (pressed between
    /// two of its clock readings with another press): rightly left without one.
    pub clk_unlogged: usize,
    /// Every difference from the truth, readable (empty: exact).
    pub why: Vec<String>,
    /// The session's effects while the job ran, with the real time, readable.
    pub effects: Vec<(u64, String)>,
}

struct Board {
    fw: Firmware,
    plugged: bool,
    /// Real ms at which the cable goes back in.
    back_at: Option<u64>,
    /// The board's virtual time against real time: (real ms of the map's start, map).
    clock: (u64, TimeMap),
    jobs: Vec<usize>,
    /// The job being played: (index, real ms it started, virtual ms it started, next
    /// action).
    playing: Option<(usize, u64, u64, usize)>,
    /// Real ms from which the next job may start.
    next_start: u64,
}

impl Board {
    fn virtual_now(&self, real: u64) -> u64 {
        let (anchor, map) = &self.clock;
        map.virtual_at(real.saturating_sub(*anchor) as f64) as u64
    }
}

struct Per {
    session: BoardSession,
    link: Option<Link>,
    effects: Vec<(u64, Effect)>,
}

/// The game a relay's journal holds from `effects` (what a session told it): the current
/// game's confirmed plies with their clocks, White's display, orientation and result.
fn journal_of(effects: &[(u64, Effect)]) -> Option<SavedGame> {
    let mut saved: Option<SavedGame> = None;
    for (_, e) in effects {
        match e {
            Effect::GameStarted { new_record: true, orientation, start_fen, .. } => {
                saved = Some(SavedGame {
                    start_fen: start_fen.clone(),
                    flipped: *orientation == dgt_protocol::Orientation::Rotated,
                    ..SavedGame::default()
                });
            }
            Effect::Move { state: MoveState::Confirmed, info } => {
                if let Some(g) = saved.as_mut() {
                    g.plies.truncate(usize::from(info.ply).saturating_sub(1));
                    g.plies.push((info.uci.to_string(), info.clk, info.emt));
                }
            }
            Effect::TakenBack { to_ply, .. } => {
                if let Some(g) = saved.as_mut() {
                    g.plies.truncate(usize::from(*to_ply));
                }
            }
            Effect::ClockSide(side) => {
                if let Some(g) = saved.as_mut() {
                    g.white_clock = Some(*side);
                }
            }
            Effect::GameEnded { result, .. } => {
                if let Some(g) = saved.as_mut() {
                    g.result = Some(*result);
                }
            }
            Effect::ResultCleared => {
                if let Some(g) = saved.as_mut() {
                    g.result = None;
                }
            }
            _ => {}
        }
    }
    saved
}

/// Plays `jobs` on a chain of `boards` boards (job `k` on board `k % boards`, in turn) and
/// compares each with its truth.
pub fn replay_chain(jobs: &[Job], boards: usize, opts: &ChainOptions) -> Vec<ChainOutcome> {
    let n = boards.max(1);
    let mut rng = opts.seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1;
    let mut next_rand = move |lo: u64, hi: u64| {
        rng ^= rng << 13;
        rng ^= rng >> 7;
        rng ^= rng << 17;
        lo + rng % (hi - lo + 1)
    };
    let mut bs: Vec<Board> = (0..n)
        .map(|i| Board {
            fw: Firmware::new(
                BoardConfig::with_serial(u32::from(opts.first) + i as u32),
                dgt_hil_sim::firmware::start_position(),
                0,
            ),
            plugged: true,
            back_at: None,
            clock: (0, TimeMap::new(0.0, Vec::new(), opts.speed, opts.hand_speed)),
            jobs: (0..jobs.len()).filter(|k| k % n == i).collect(),
            playing: None,
            // Boards start their games a little apart, as the relay reaches them.
            next_start: next_rand(opts.first_start_ms.0, opts.first_start_ms.1),
        })
        .collect();
    let mut line = Line::new(n + 1);
    let mut poller = (opts.relay_from_ms == 0).then(|| BusPoller::open(0, opts.timing));
    let config = SessionConfig::default();
    let mut per: BTreeMap<u16, Per> = BTreeMap::new();
    // Each board's effects across relay restarts, and what the relay's journal held.
    let mut told: BTreeMap<u16, Vec<(u64, Effect)>> = BTreeMap::new();
    let mut journals: BTreeMap<u16, SavedGame> = BTreeMap::new();
    // (job, address, real start, real end, presses the log never got: virtual ms from the
    // job's start)
    let mut spans: Vec<(usize, u16, u64, u64, Vec<u64>)> = Vec::new();
    let mut now: u64 = 0;
    let mut idle_since: Option<u64> = None;
    loop {
        let span = tracing::trace_span!("t", now).entered();
        let now_us = now * 1_000;
        if poller.is_none()
            && now >= opts.relay_from_ms
            && opts.relay_restart.is_none_or(|(at, down)| now < at || now >= at + down)
        {
            poller = Some(BusPoller::open(now, opts.timing));
        }
        if let Some((at, _)) = opts.relay_restart
            && now == at
        {
            // Killed: its journals keep the confirmed moves; everything else is gone.
            poller = None;
            for (address, p) in std::mem::take(&mut per) {
                let all = told.entry(address).or_default();
                all.extend(p.effects);
                if let Some(saved) = journal_of(all) {
                    journals.insert(address, saved);
                }
            }
        }
        let out = poller.as_mut().map(BusPoller::take_output).unwrap_or_default();
        for (i, b) in bs.iter_mut().enumerate() {
            let v = b.virtual_now(now);
            if b.back_at.is_some_and(|t| t <= now) {
                b.back_at = None;
                b.plugged = true;
                b.fw.power_cycle(v);
            }
            // The job's start, once the host reads this board's changes (or at once when the
            // relay comes later).
            if b.playing.is_none()
                && now >= b.next_start
                && (b.fw.bus_followed() || opts.relay_from_ms > 0)
                && let Some(&j) = b.jobs.first()
            {
                b.jobs.remove(0);
                let s = &jobs[j].scenario;
                let setup = &s.setup;
                b.fw.set_position(board_codes(&setup.position, setup.orientation), v);
                match &setup.clock {
                    Some(c) => b.fw.attach_clock(Some(Dgt3000::new(c.time_control.clone(), c.first_side, v))),
                    None => b.fw.attach_clock(None),
                }
                b.fw.rephase_scan(v);
                let spans_v = s.hand_spans().into_iter().map(|(a, e)| (v + a, v + e)).collect();
                b.clock = (now, TimeMap::new(v as f64, spans_v, opts.speed, opts.hand_speed));
                b.playing = Some((j, now, v, 0));
            }
            let v = b.virtual_now(now);
            if let Some((j, started, v0, next)) = b.playing.as_mut() {
                let s = &jobs[*j].scenario;
                let setup = &s.setup;
                let white = setup.clock.as_ref().map_or(ClockSide::Left, |k| k.white_side);
                while let Some(a) = s.actions.get(*next)
                    && *v0 + a.at_ms <= v
                {
                    *next += 1;
                    let at = *v0 + a.at_ms;
                    b.fw.tick(at);
                    if let Some(down) = apply_action(&mut b.fw, &a.action, at, setup.orientation, white) {
                        let (anchor, map) = &b.clock;
                        let back = (*anchor as f64 + map.real_ms((at + down) as f64)).ceil() as u64;
                        b.plugged = false;
                        b.back_at = Some(back.max(now + 30));
                        b.fw.take_output();
                        b.fw.take_bus_output();
                    }
                }
                if *next >= s.actions.len() {
                    let unlogged: Vec<u64> =
                        b.fw.unlogged_presses().iter().filter(|t| **t >= *v0).map(|t| t - *v0).collect();
                    spans.push((*j, opts.first + i as u16, *started, now, unlogged));
                    b.playing = None;
                    b.next_start = now + opts.gap_ms;
                }
            }
            b.fw.tick(v);
            if !b.plugged {
                b.fw.take_output();
                b.fw.take_bus_output();
                continue;
            }
            if !out.is_empty() {
                b.fw.receive(&out, v);
                let reply_at = now_us + COMMAND_WIRE_US + 1_000 * response_ms(&mut next_rand);
                let single = b.fw.take_output();
                if !single.is_empty() {
                    line.schedule(i, reply_at, &single);
                }
                for t in b.fw.take_bus_output() {
                    line.schedule(i, reply_at + u64::from(t.delay_ms) * 1000, &t.bytes);
                }
            }
            let own = b.fw.take_output();
            if !own.is_empty() {
                line.schedule(i, now_us, &own);
            }
        }
        if opts.relay_frozen.is_some_and(|(from, ms)| (from..from + ms).contains(&now)) {
            now += 1;
            continue;
        }
        let mut bytes = Vec::new();
        line.emit(now_us, &mut bytes);
        let Some(poller) = poller.as_mut() else {
            // Nobody reads the line.
            drop(span);
            now += 1;
            continue;
        };
        if !bytes.is_empty() {
            poller.on_bytes(now, &bytes);
        }
        if now >= poller.next_deadline() {
            poller.poll(now);
        }
        while let Some(e) = poller.next_event() {
            match &e {
                BusEvent::Found { address, .. } => {
                    let number = u32::from(address - opts.first + 1);
                    let p = per.entry(*address).or_insert_with(|| {
                        let mut session = BoardSession::new(number, None, config);
                        // A restarted relay goes on with the games its journals hold.
                        if let Some(saved) = journals.get(address) {
                            session.resume(now, saved);
                        }
                        Per { session, link: None, effects: Vec::new() }
                    });
                    p.link = Some(Link::open(now, config.link));
                }
                BusEvent::Gone { address, reason } => {
                    if let Some(p) = per.get_mut(address) {
                        p.link = None;
                        p.session.on_port_lost(now, reason);
                    }
                }
            }
        }
        pump(poller, &mut per, now);
        let all_done = bs.iter().all(|b| b.playing.is_none() && b.jobs.is_empty());
        if all_done {
            let since = *idle_since.get_or_insert(now);
            if now >= since + 10_000 {
                break;
            }
        }
        if now > 3_600_000 {
            break;
        }
        drop(span);
        now += 1;
    }
    spans.sort_by_key(|s| s.0);
    spans
        .iter()
        .map(|(j, address, from, _, unlogged)| {
            let (j, address, from) = (*j, *address, *from);
            // From the job's start to the next job's start on the board.
            let next = spans.iter().filter(|s| s.1 == address && s.2 > from).map(|s| s.2).min();
            let effects: Vec<(u64, Effect)> = told
                .get(&address)
                .into_iter()
                .flatten()
                .chain(per.get(&address).into_iter().flat_map(|p| p.effects.iter()))
                .filter(|(t, _)| *t >= from && next.is_none_or(|n| *t < n))
                .cloned()
                .collect();
            outcome(&jobs[j], address, &effects, unlogged)
        })
        .collect()
}

/// A board's response time: 1-5 ms, 20 ms one time in 20 (an EEPROM write), as the
/// simulator's line draws it.
fn response_ms(next: &mut impl FnMut(u64, u64) -> u64) -> u64 {
    if next(0, 19) == 0 { 20 } else { next(1, 5) }
}

/// The virtual lines: link or session output to the poller, the poller's answers back,
/// until all are quiet (as the relay's board tasks do).
fn pump(poller: &mut BusPoller, per: &mut BTreeMap<u16, Per>, now: u64) {
    for _ in 0..8 {
        let mut moved = false;
        for (address, p) in per.iter_mut() {
            if let Some(link) = p.link.as_mut() {
                link.poll(now);
                let out = link.take_output();
                if !out.is_empty() {
                    poller.line_input(*address, &out);
                    moved = true;
                }
                let back = poller.take_line_output(*address);
                if !back.is_empty() {
                    link.on_bytes(now, &back);
                    moved = true;
                }
                if link.is_identified()
                    && let Some(link) = p.link.take()
                {
                    p.session.attach(now, link, "bus");
                    moved = true;
                }
                continue;
            }
            if p.session.link_state() == LinkState::Active {
                let back = poller.take_line_output(*address);
                if !back.is_empty() {
                    // `DGT_BUS_LINE=ADDRESS` prints what that board's session reads, with the time.
                    if std::env::var("DGT_BUS_LINE").ok().and_then(|a| a.parse::<u16>().ok())
                        == Some(*address)
                    {
                        let mut d: dgt_protocol::Decoder<256> = dgt_protocol::Decoder::new();
                        d.feed(&back, |m| println!("line {address} {now} {m:?}"));
                    }
                    p.session.on_bytes(now, &back);
                    moved = true;
                }
            }
            if now >= p.session.next_deadline() {
                p.session.poll(now);
            }
            for e in p.session.drain_effects() {
                if let Effect::Write(bytes) = &e {
                    poller.line_input(*address, bytes);
                    moved = true;
                }
                p.effects.push((now, e));
            }
        }
        if !moved {
            break;
        }
    }
}

/// The confirmed line of the game the effects show, against the job's truth: moves exact,
/// `%clk` within 1 s of the clock's display after the press, or none when the board's event
/// log never got the press (`unlogged`: virtual ms from the job's start).
fn outcome(job: &Job, address: u16, effects: &[(u64, Effect)], unlogged: &[u64]) -> ChainOutcome {
    let mut line: Vec<(String, Option<u32>)> = Vec::new();
    let mut shown = Vec::new();
    for (t, e) in effects {
        match e {
            Effect::Move { state: MoveState::Confirmed, info } => {
                let ply = usize::from(info.ply);
                line.truncate(ply.saturating_sub(1));
                line.push((info.uci.to_string(), info.clk));
            }
            Effect::TakenBack { to_ply, .. } => line.truncate(usize::from(*to_ply)),
            Effect::GameStarted { new_record: true, .. } => line.clear(),
            Effect::Write(_) => continue,
            _ => {}
        }
        shown.push((*t, format!("{e:?}")));
    }
    let mut why = Vec::new();
    let mut clk_unlogged = 0;
    let truth = job.truth();
    for (k, m) in truth.moves.iter().enumerate() {
        let want = if m.color == "white" { m.white_clock_s } else { m.black_clock_s };
        match line.get(k) {
            None => {
                why.push(format!("ply {} {}: missing", k + 1, m.uci));
                break;
            }
            Some((u, _)) if *u != m.uci => {
                why.push(format!("ply {} {}: confirmed {u}", k + 1, m.uci));
                break;
            }
            Some((_, clk)) => {
                let logged = m.press_at_ms.is_none_or(|p| !unlogged.contains(&p));
                match (want, clk) {
                    (Some(w), Some(c)) if c.abs_diff(w) <= 1 => {}
                    (Some(_), None) if !logged || !m.clk_observable => clk_unlogged += 1,
                    (Some(w), clk) if m.clk_observable || clk.is_some() => {
                        why.push(format!("ply {} {}: %clk {clk:?}, want {w}", k + 1, m.uci))
                    }
                    _ => {}
                }
            }
        }
    }
    if line.len() > truth.moves.len() {
        why.push(format!("{} plies confirmed, {} played", line.len(), truth.moves.len()));
    }
    ChainOutcome { label: job.label.clone(), address, confirmed: line, clk_unlogged, why, effects: shown }
}
