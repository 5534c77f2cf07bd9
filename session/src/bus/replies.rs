//! Replies on the line: matched with the command in flight, broadcast answers collected,
//! bad checksums and silences handled (asked again, a board declared gone).

use alloc::{format, vec::Vec};
use dgt_protocol::bus::{BROADCAST, BusReplyKind};
use dgt_protocol::{BoardDump, BusCommand, BusCommandKind, BusData, BusReply, Bwtime};

use super::board::Board;
use super::changes::garbled;
use super::line::{VirtualLine, serial_of};
use super::schedule::{Broadcast, InFlight, Phase};
use super::{BusEvent, BusPoller};

impl BusPoller {
    pub(super) fn reply(&mut self, now: u64, r: OwnedReply) {
        crate::log::trace!(address = r.address, kind = r.kind, "bus reply");
        // Broadcast answers, collected in their window.
        if let Phase::Window { kind, new, .. } = &mut self.phase {
            let expected = match kind {
                Broadcast::Version => BusReplyKind::Version.id(),
                Broadcast::Ping => BusReplyKind::Ping.id(),
            };
            if r.kind == expected && r.address != BROADCAST {
                let fresh = !self.boards.get(&r.address).is_some_and(|b| b.present);
                *new |= fresh;
                self.heard(now, r.address);
                if let (Some(b), Some(v)) = (self.boards.get_mut(&r.address), r.version) {
                    b.version = Some(v);
                }
                self.announce(r.address);
            }
            return;
        }
        let Some(f) = self.in_flight else {
            crate::log::debug!(address = r.address, kind = r.kind, "bus reply nobody asked for");
            return;
        };
        let wanted = f.cmd.kind.reply().map(BusReplyKind::id);
        if r.address != f.cmd.address || Some(r.kind) != wanted {
            crate::log::debug!(address = r.address, kind = r.kind, ?f.cmd, "bus reply to another command");
            return;
        }
        if let ReplyData::Changes(raw) = &r.data
            && !f.repeat
            && garbled(raw)
        {
            // A 7-bit checksum passes one garbled reply in 128 (two boards on the line at
            // once, noise): an event no board writes means the packet is not the board's.
            // Asked again, the board sends the same packet (a repeat is taken as it comes:
            // a board whose log does hold such an event sends it every time).
            crate::log::debug!(
                address = r.address,
                ?raw,
                "changes packet with an impossible event; asked again"
            );
            self.heard(now, r.address);
            self.bad(now, r.kind, r.address);
            return;
        }
        self.in_flight = None;
        self.stats.replies += 1;
        self.heard(now, r.address);
        let address = r.address;
        match r.data {
            ReplyData::Version(v) => {
                if let Some(b) = self.boards.get_mut(&address) {
                    b.version = Some(v.unwrap_or((1, 2)));
                }
                self.announce(address);
            }
            ReplyData::Ping => self.announce(address),
            ReplyData::Changes(raw) => self.changes(now, address, raw, f.repeat),
            ReplyData::FromStart(raw) => self.log_from_start(address, &raw),
            ReplyData::Times(t) => self.clock(now, address, t),
            ReplyData::Dump(d) => self.dump(now, address, d),
            ReplyData::Other => {}
        }
    }

    /// A good reply from `address`: it is there.
    pub(super) fn heard(&mut self, now: u64, address: u16) {
        let b = self.boards.entry(address).or_insert_with(|| Board::new(address, now));
        b.misses = 0;
        b.last_heard = now;
        if !b.present {
            crate::log::info!(address, "board back on the bus");
            b.present = true;
            b.fresh = true;
            b.fresh_asked = false;
            b.want_clock = true;
        }
    }

    /// Reports a present board with a known version that has no line yet.
    pub(super) fn announce(&mut self, address: u16) {
        let Some(b) = self.boards.get_mut(&address) else { return };
        let (true, false, Some(version)) = (b.present, b.announced, b.version) else { return };
        b.announced = true;
        b.line = Some(VirtualLine::new());
        b.stale = true;
        crate::log::info!(address, ?version, "board on the bus");
        self.events.push_back(BusEvent::Found { address, serial: serial_of(address), version });
    }

    pub(super) fn bad(&mut self, now: u64, kind: u8, address: u16) {
        self.stats.bad_checksums += 1;
        if let Phase::Window { doubt, .. } = &mut self.phase {
            *doubt = true;
            return;
        }
        let Some(f) = self.in_flight else { return };
        // A garbled reply while one is awaited: take it for that one's, and ask again.
        self.in_flight = None;
        crate::log::debug!(kind, address, ?f.cmd, "bus reply with a bad checksum");
        let Some(turn) = self.turn.as_mut() else { return };
        turn.retries += 1;
        let target = f.cmd.address;
        let kind = f.cmd.kind;
        if turn.retries > 2 {
            // Given up in this turn: a changes packet may be lost, so read the board whole.
            if let Some(b) = self.boards.get_mut(&target) {
                if matches!(kind, BusCommandKind::SendChanges | BusCommandKind::RepeatChanges) {
                    b.repeat = true;
                }
                b.doubt = true;
                b.want_dump = true;
            }
            self.turn = None;
            return;
        }
        match kind {
            BusCommandKind::SendChanges | BusCommandKind::RepeatChanges => {
                self.stats.repeats += 1;
                self.send_repeat(now, target);
            }
            other => self.send(now, BusCommand::new(other, target)),
        }
    }

    pub(super) fn timeout(&mut self, now: u64, f: InFlight) {
        self.stats.timeouts += 1;
        let address = f.cmd.address;
        if address == BROADCAST {
            return;
        }
        if let Phase::Silence { .. } = self.phase {
            // A found board did not confirm: it may answer the broadcast.
            return;
        }
        let timing = self.timing;
        let Some(b) = self.boards.get_mut(&address) else { return };
        b.misses += 1;
        if matches!(f.cmd.kind, BusCommandKind::SendChanges | BusCommandKind::RepeatChanges) {
            // The board may have sent (and forgotten) the changes: ask for them again, and
            // read it whole.
            b.repeat = true;
            b.doubt = true;
            b.want_dump = true;
            // A board heard on its last command lost one reply (noise, a slow answer): it
            // is asked again at once, so its moves wait a command, not a whole cycle.
            if b.present
                && b.misses == 1
                && let Some(t) = self.turn.as_mut()
                && t.address == address
                && t.retries == 0
            {
                t.retries += 1;
                if !t.todo.contains(&BusCommandKind::SendChanges) {
                    t.todo.push_front(BusCommandKind::SendChanges);
                }
                return;
            }
        }
        // The turn ends: the others are not kept waiting for a silent board.
        self.turn = None;
        if !b.present {
            b.next_probe = now + timing.probe_gone_ms;
            return;
        }
        if b.misses >= timing.miss_limit && now.saturating_sub(b.last_heard) >= timing.gone_after_ms {
            b.present = false;
            b.announced = false;
            b.line = None;
            b.deferred.clear();
            b.next_probe = now + timing.probe_gone_ms;
            let reason = format!("no answer on the bus for {} ms", now - b.last_heard);
            crate::log::warn!(address, %reason, "board gone from the bus");
            self.events.push_back(BusEvent::Gone { address, reason });
        }
    }
}

/// A reply, owned (the decoder's buffer is borrowed).
#[derive(Debug)]
pub(super) struct OwnedReply {
    pub(super) address: u16,
    pub(super) kind: u8,
    pub(super) version: Option<(u8, u8)>,
    pub(super) data: ReplyData,
}

#[derive(Debug)]
pub(super) enum ReplyData {
    Version(Option<(u8, u8)>),
    Ping,
    Changes(Vec<u8>),
    /// `SEND_FROM_START`'s answer: the log from the start tag to what the changes sent.
    FromStart(Vec<u8>),
    Times(Bwtime),
    Dump(BoardDump),
    Other,
}

impl From<&BusReply<'_>> for OwnedReply {
    fn from(r: &BusReply<'_>) -> OwnedReply {
        let (version, data) = match r.data {
            BusData::Version(v) => (Some(v.unwrap_or((1, 2))), ReplyData::Version(v)),
            BusData::Ping | BusData::StartGameWritten => (None, ReplyData::Ping),
            BusData::Update(e) => (None, ReplyData::Changes(e.raw().to_vec())),
            BusData::Bwtime(b) => (None, ReplyData::Times(b)),
            BusData::BoardDump(d) => (None, ReplyData::Dump(d)),
            BusData::FromStart(e) => (None, ReplyData::FromStart(e.raw().to_vec())),
            BusData::BoardDump50B(_) | BusData::Unknown { .. } => (None, ReplyData::Other),
        };
        OwnedReply { address: r.address, kind: r.kind(), version, data }
    }
}

pub(super) enum Got {
    Reply(OwnedReply),
    Bad { kind: u8, address: u16 },
    Noise(usize),
}
