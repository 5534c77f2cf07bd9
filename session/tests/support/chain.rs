//! A chain of the project's simulated board firmwares on the simulator's line model, driven
//! by a [`BusPoller`] in virtual time, each board found with its own [`BoardSession`]: shared
//! by the bus tests and the latency bench (each uses a part of it).
#![allow(dead_code)]
use std::collections::BTreeMap;

use dgt_hil_sim::chain::{COMMAND_WIRE_US, Line};
use dgt_hil_sim::clock::{Button, Dgt3000, TimeControl};
use dgt_hil_sim::firmware::{BoardConfig, Firmware, start_position};
use dgt_protocol::{ClockSide, DgtSquare, Orientation, PieceCode};
use dgt_session::{
    AlertCode, BoardSession, BusEvent, BusPoller, BusTiming, Effect, Link, LinkState, MoveState,
    SessionConfig,
};
use shakmaty::Square;

/// The first board's serial number (and bus address); the others count up.
pub const FIRST: u16 = 201;

/// One board's session and, while its handshake runs, its link.
pub struct Per {
    pub session: BoardSession,
    pub link: Option<Link>,
    pub effects: Vec<(u64, Effect)>,
}

/// The chain, its line, the poller and the sessions; time in microseconds.
pub struct Chain {
    pub now_us: u64,
    pub fws: Vec<Firmware>,
    pub plugged: Vec<bool>,
    pub line: Line,
    pub poller: BusPoller,
    pub config: SessionConfig,
    pub per: BTreeMap<u16, Per>,
    pub events: Vec<(u64, BusEvent)>,
    /// Line noise to put on the line: (time in microseconds, bytes).
    pub garbage: Vec<(u64, Vec<u8>)>,
    /// Boards whose next changes reply that holds a press is garbled on the line, its
    /// checksum still right (see [`garble_press`]).
    pub garble_press: Vec<u16>,
    /// Boards whose next dump reply is lost on the line.
    pub drop_dump: Vec<u16>,
    /// Real ms (from, length) in which the relay does not run (a loaded machine): the boards
    /// play on, the line keeps what they send, and the relay wakes on its timer with the
    /// bytes not read yet (its deadlines first, then the bytes, as an async runtime may
    /// order them after a stall).
    pub stalls: Vec<(u64, u64)>,
    /// Bytes the line brought while the relay was stalled.
    pub unread: Vec<u8>,
}

impl Chain {
    /// `n` boards that log every press at once (the tests place their presses by hand; see
    /// [`Chain::with_clock_poll`]).
    pub fn new(n: usize) -> Chain {
        Chain::with_clock_poll(n, 0)
    }

    /// `n` boards that read their clock every `clock_poll_ms` and log a press only when a
    /// reading finds the lever moved (two presses between two readings are not logged).
    pub fn with_clock_poll(n: usize, clock_poll_ms: u64) -> Chain {
        let fws = (0..n)
            .map(|i| {
                let config =
                    BoardConfig { clock_poll_ms, ..BoardConfig::with_serial(u32::from(FIRST) + i as u32) };
                Firmware::new(config, start_position(), 0)
            })
            .collect();
        Chain {
            now_us: 0,
            fws,
            plugged: vec![true; n],
            line: Line::new(n + 1),
            poller: BusPoller::open(0, BusTiming::default()),
            config: SessionConfig::default(),
            per: BTreeMap::new(),
            events: Vec::new(),
            garbage: Vec::new(),
            garble_press: Vec::new(),
            drop_dump: Vec::new(),
            stalls: Vec::new(),
            unread: Vec::new(),
        }
    }

    pub fn now(&self) -> u64 {
        self.now_us / 1000
    }

    /// Bytes both ways on the line and the virtual lines, then deadlines, for 1 ms.
    pub fn step(&mut self) {
        let now = self.now();
        // The host's bytes reach every plugged board; their answers go on the line after the
        // command's wire time and a 3 ms response.
        let out = self.poller.take_output();
        for (i, fw) in self.fws.iter_mut().enumerate() {
            if !self.plugged[i] {
                continue;
            }
            if !out.is_empty() {
                fw.receive(&out, now);
                let reply_at = self.now_us + COMMAND_WIRE_US + 3_000;
                let single = fw.take_output();
                if !single.is_empty() {
                    self.line.schedule(i, reply_at, &single);
                }
                for mut t in fw.take_bus_output() {
                    let address = FIRST + i as u16;
                    if let Some(k) = self.garble_press.iter().position(|a| *a == address)
                        && let Some(garbled) = garble_press(&t.bytes)
                    {
                        self.garble_press.remove(k);
                        t.bytes = garbled;
                    }
                    if t.bytes.first() == Some(&0x83)
                        && let Some(k) = self.drop_dump.iter().position(|a| *a == address)
                    {
                        self.drop_dump.remove(k);
                        continue;
                    }
                    self.line.schedule(i, reply_at + u64::from(t.delay_ms) * 1000, &t.bytes);
                }
            }
            fw.tick(now);
            let own = fw.take_output();
            if !own.is_empty() {
                self.line.schedule(i, self.now_us, &own);
            }
        }
        let noise = self.fws.len();
        while self.garbage.first().is_some_and(|(at, _)| *at <= self.now_us) {
            let (at, bytes) = self.garbage.remove(0);
            self.line.schedule(noise, at, &bytes);
        }
        let mut bytes = Vec::new();
        self.line.emit(self.now_us, &mut bytes);
        if self.stalls.iter().any(|(from, len)| (*from..from + len).contains(&now)) {
            self.unread.extend_from_slice(&bytes);
            self.now_us += 1_000;
            return;
        }
        if !self.unread.is_empty() {
            // Woken by its timer: the deadlines are seen before the bytes waiting.
            if now >= self.poller.next_deadline() {
                self.poller.poll(now);
            }
            let mut waiting = std::mem::take(&mut self.unread);
            waiting.extend_from_slice(&bytes);
            bytes = waiting;
        }
        if !bytes.is_empty() {
            self.poller.on_bytes(now, &bytes);
        }
        if now >= self.poller.next_deadline() {
            self.poller.poll(now);
        }
        while let Some(e) = self.poller.next_event() {
            match &e {
                BusEvent::Found { address, .. } => {
                    let number = u32::from(*address - FIRST + 1);
                    let config = self.config;
                    let per = self.per.entry(*address).or_insert_with(|| Per {
                        session: BoardSession::new(number, None, config),
                        link: None,
                        effects: Vec::new(),
                    });
                    per.link = Some(Link::open(now, config.link));
                }
                BusEvent::Gone { address, reason } => {
                    if let Some(per) = self.per.get_mut(address) {
                        per.link = None;
                        per.session.on_port_lost(now, reason);
                    }
                }
            }
            self.events.push((now, e));
        }
        self.pump(now);
        self.now_us += 1_000;
    }

    /// The virtual lines: link or session output to the poller, the poller's answers back,
    /// until all are quiet.
    pub fn pump(&mut self, now: u64) {
        for _ in 0..8 {
            let mut moved = false;
            for (address, per) in self.per.iter_mut() {
                if let Some(link) = per.link.as_mut() {
                    link.poll(now);
                    let out = link.take_output();
                    if !out.is_empty() {
                        self.poller.line_input(*address, &out);
                        moved = true;
                    }
                    let back = self.poller.take_line_output(*address);
                    if !back.is_empty() {
                        link.on_bytes(now, &back);
                        moved = true;
                    }
                    if link.is_identified() {
                        let link = per.link.take().expect("the link");
                        per.session.attach(now, link, "bus");
                        moved = true;
                    }
                    continue;
                }
                if per.session.link_state() == LinkState::Active {
                    let back = self.poller.take_line_output(*address);
                    if !back.is_empty() {
                        per.session.on_bytes(now, &back);
                        moved = true;
                    }
                }
                if now >= per.session.next_deadline() {
                    per.session.poll(now);
                }
                for e in per.session.drain_effects() {
                    if let Effect::Write(bytes) = &e {
                        self.poller.line_input(*address, bytes);
                        moved = true;
                    }
                    per.effects.push((now, e));
                }
            }
            if !moved {
                break;
            }
        }
    }

    pub fn run(&mut self, ms: u64) {
        let end = self.now_us + ms * 1000;
        while self.now_us < end {
            self.step();
        }
    }

    pub fn fw(&mut self, address: u16) -> &mut Firmware {
        &mut self.fws[usize::from(address - FIRST)]
    }

    pub fn set(&mut self, address: u16, square: Square, piece: PieceCode) {
        let now = self.now();
        self.fw(address).set_piece(DgtSquare::from_square(square, Orientation::Normal), piece, now);
    }

    /// A move by hand: lift, 300 ms, place, 300 ms.
    pub fn play(&mut self, address: u16, from: Square, to: Square) {
        let piece = self.fws[usize::from(address - FIRST)].physical()
            [usize::from(DgtSquare::from_square(from, Orientation::Normal).index())];
        self.set(address, from, PieceCode::Empty);
        self.run(300);
        self.set(address, to, piece);
        self.run(300);
    }

    pub fn press(&mut self, address: u16, side: ClockSide) {
        let now = self.now();
        self.fw(address).press_clock(side, now);
    }

    pub fn confirmed(&self, address: u16) -> Vec<(String, Option<u32>)> {
        let Some(per) = self.per.get(&address) else { return Vec::new() };
        per.effects
            .iter()
            .filter_map(|(_, e)| match e {
                Effect::Move { state: MoveState::Confirmed, info } => Some((info.uci.to_string(), info.clk)),
                _ => None,
            })
            .collect()
    }

    pub fn found(&self) -> Vec<u16> {
        let mut v: Vec<u16> = self
            .events
            .iter()
            .filter_map(|(_, e)| match e {
                BusEvent::Found { address, .. } => Some(*address),
                _ => None,
            })
            .collect();
        v.sort_unstable();
        v.dedup();
        v
    }

    pub fn alerts(&self, address: u16) -> Vec<AlertCode> {
        self.per[&address]
            .effects
            .iter()
            .filter_map(|(_, e)| match e {
                Effect::Alert(a) => Some(a.code),
                _ => None,
            })
            .collect()
    }

    /// Attaches a clock (5 min + 2 s) to a board and starts it.
    pub fn clock(&mut self, address: u16) {
        let now = self.now();
        let fw = self.fw(address);
        fw.attach_clock(Some(Dgt3000::new(TimeControl::fischer(300, 2), ClockSide::Left, now)));
        fw.press_button(Button::Run, now);
    }
}

/// A changes reply holding a press, its time event's minutes garbled into a value no board
/// writes (as two boards driving the line at once would), with a checksum that still
/// passes (a 7-bit checksum passes one garbled reply in 128); `None` for any other reply.
pub fn garble_press(reply: &[u8]) -> Option<Vec<u8>> {
    use dgt_protocol::bus::EeEvents;
    use dgt_protocol::{BusData, BusReply, EeEvent};
    if reply.first() != Some(&0x85) || reply.len() < 6 {
        return None;
    }
    let address = (u16::from(reply[3]) << 7) | u16::from(reply[4]);
    let mut data = reply[5..reply.len() - 1].to_vec();
    let mut at = 0;
    while at < data.len() {
        let len = EeEvent::len_for_first_byte(data[at]);
        if len == 3 && at + 3 <= data.len() {
            data[at + 1] |= 0x60;
            let garbled = BusReply::new(address, BusData::Update(EeEvents::new(&data)));
            let mut out = vec![0u8; garbled.encoded_len()];
            return garbled.encode(&mut out).ok().map(|_| out);
        }
        at += len;
    }
    None
}
