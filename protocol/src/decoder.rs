//! A streaming decoder for the board-to-host byte stream.
//!
//! Bytes arrive in chunks split anywhere. Framing (fact sheet 3.1): only a header byte has
//! bit 7 set, so a byte of 0x80 or more always starts a new message, even inside a payload,
//! where it aborts the message in progress. Everything the decoder throws away is reported
//! as [`Decoded::Noise`] with its length, so line trouble is visible instead of silent.
//!
//! Memory is fixed: payloads up to `N` bytes are buffered; the EEPROM dump is decoded as a
//! stream of events; anything else larger than `N` is skipped by its length. The framing
//! itself is shared with the bus decoder ([`crate::bus::BusDecoder`]).

use crate::ee::{EeEvent, EeParser};
use crate::frame::{Framer, Step};
use crate::message::{Message, id};

/// One thing the decoder recognised.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Decoded<'a> {
    /// A complete message.
    Message(Message<'a>),
    /// The header of an EEPROM dump; its events follow as [`Decoded::EeEvent`].
    EeMovesStart {
        /// The total length announced by the header.
        total_len: u16,
    },
    /// One event of an EEPROM dump in progress.
    EeEvent(EeEvent),
    /// Bytes thrown away: garbage between messages, or a message cut short by a new
    /// header or invalid length bytes. Reported when the next header arrives.
    Noise {
        /// How many bytes.
        len: usize,
    },
    /// A well-framed message too large for the buffer, skipped whole.
    Skipped {
        /// The message id.
        id: u8,
        /// Its total length.
        total_len: u16,
    },
}

/// The streaming decoder; `N` is the largest payload it buffers (at least 64 for a board
/// dump; 256 holds every message seen from real boards but the EEPROM dump).
#[derive(Clone, Debug)]
pub struct Decoder<const N: usize = 256> {
    framer: Framer<N>,
    ee: EeParser,
}

impl<const N: usize> Default for Decoder<N> {
    fn default() -> Self {
        Self::new()
    }
}

impl<const N: usize> Decoder<N> {
    /// A decoder waiting for its first header.
    pub const fn new() -> Self {
        Decoder { framer: Framer::new(3), ee: EeParser::new() }
    }

    /// Bytes discarded since the last [`Decoded::Noise`], not yet reported (noise is
    /// reported when the next header arrives; call this when the line goes quiet).
    pub fn take_noise(&mut self) -> Option<usize> {
        self.framer.take_noise()
    }

    /// Forgets any message in progress (after a reconnect, say).
    pub fn reset(&mut self) {
        *self = Self::new();
    }

    /// Takes one byte; returns what it completed, if anything.
    pub fn push(&mut self, byte: u8) -> Option<Decoded<'_>> {
        let Decoder { framer, ee } = self;
        match framer.push(byte, |id| id == id::EE_MOVES)? {
            Step::Noise(len) => Some(Decoded::Noise { len }),
            Step::StreamStart { total, .. } => {
                *ee = EeParser::new();
                Some(Decoded::EeMovesStart { total_len: total as u16 })
            }
            Step::Streamed { byte, last } => {
                let event = ee.push(byte);
                let event = if last { event.or_else(|| ee.finish()) } else { event };
                event.map(Decoded::EeEvent)
            }
            Step::Frame { id, body } => Some(Decoded::Message(Message::parse(id, body))),
            Step::Skipped { id, total } => Some(Decoded::Skipped { id, total_len: total as u16 }),
        }
    }

    /// Feeds a chunk, calling `sink` for everything it completes.
    ///
    /// Same results as calling [`Decoder::push`] for each byte, with payload runs copied
    /// in bulk.
    pub fn feed<F: FnMut(Decoded<'_>)>(&mut self, mut bytes: &[u8], mut sink: F) {
        while let Some((&first, rest)) = bytes.split_first() {
            let n = self.framer.bulk(bytes);
            if n > 0 {
                bytes = &bytes[n..];
                continue;
            }
            if let Some(out) = self.push(first) {
                sink(out);
            }
            bytes = rest;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::clock::Bwtime;
    use crate::clock::ClockAck;
    use crate::message::FieldUpdate;
    use crate::{DgtSquare, PieceCode};

    fn collect(dec: &mut Decoder, bytes: &[u8]) -> heaplessish::Log {
        let mut log = heaplessish::Log::default();
        dec.feed(bytes, |d| log.push(d));
        log
    }

    /// A tiny fixed log for tests (the crate has no alloc).
    mod heaplessish {
        use super::Decoded;
        #[derive(Default)]
        pub struct Log {
            pub items: [Option<Summary>; 16],
            pub len: usize,
        }
        #[derive(Clone, Copy, Debug, PartialEq, Eq)]
        pub enum Summary {
            Field(u8, u8),
            Ack([u8; 4]),
            Noise(usize),
            Skipped(u8, u16),
            Other,
        }
        impl Log {
            pub fn push(&mut self, d: Decoded<'_>) {
                use crate::clock::Bwtime;
                use crate::message::Message;
                let s = match d {
                    Decoded::Message(Message::FieldUpdate(f)) => Summary::Field(f.square.index(), f.raw),
                    Decoded::Message(Message::Bwtime(Bwtime::Ack(a))) => Summary::Ack(a.ack_bytes()),
                    Decoded::Noise { len } => Summary::Noise(len),
                    Decoded::Skipped { id, total_len } => Summary::Skipped(id, total_len),
                    _ => Summary::Other,
                };
                self.items[self.len] = Some(s);
                self.len += 1;
            }
            pub fn get(&self) -> &[Option<Summary>] {
                &self.items[..self.len]
            }
        }
    }
    use heaplessish::Summary;

    #[test]
    fn version_ack_worked_example_byte_for_byte() {
        let bytes = [0x8D, 0x00, 0x0A, 0x0A, 0x10, 0x09, 0x0A, 0x20, 0x00, 0x00];
        let mut dec: Decoder = Decoder::new();
        let log = collect(&mut dec, &bytes);
        assert_eq!(log.get(), &[Some(Summary::Ack([0x10, 0x09, 0x20, 0x00]))]);
        let ack = ClockAck::from_ack_bytes([0x10, 0x09, 0x20, 0x00]);
        let mut out = [0u8; 10];
        let n = Message::Bwtime(Bwtime::Ack(ack)).encode(&mut out).unwrap();
        assert_eq!(&out[..n], &bytes);
    }

    #[test]
    fn garbage_is_counted_and_a_new_header_aborts_a_payload() {
        let mut dec: Decoder = Decoder::new();
        // 2 garbage bytes, a field update cut after its square, then a good one.
        let bytes = [0x01, 0x02, 0x8E, 0x00, 0x05, 0x10, 0x8E, 0x00, 0x05, 0x1C, 0x05];
        let log = collect(&mut dec, &bytes);
        assert_eq!(
            log.get(),
            &[Some(Summary::Noise(2)), Some(Summary::Noise(4)), Some(Summary::Field(28, 5))]
        );
        assert_eq!(dec.take_noise(), None);
        collect(&mut dec, &[0x33, 0x34]);
        assert_eq!(dec.take_noise(), Some(2));
    }

    #[test]
    fn oversized_messages_are_skipped_by_length() {
        let mut dec: Decoder<64> = Decoder::new();
        let mut bytes = [0x41u8; 103];
        bytes[..3].copy_from_slice(&[0x92, 0x00, 103]);
        let mut seen = None;
        dec.feed(&bytes, |d| seen = Some(matches!(d, Decoded::Skipped { id: 0x12, total_len: 103 })));
        assert_eq!(seen, Some(true));
        let mut field = None;
        let update = FieldUpdate::new(DgtSquare::new(3).unwrap(), PieceCode::BlackQueen);
        let mut out = [0u8; 5];
        let n = Message::FieldUpdate(update).encode(&mut out).unwrap();
        dec.feed(&out[..n], |d| field = Some(d == Decoded::Message(Message::FieldUpdate(update))));
        assert_eq!(field, Some(true));
    }

    #[test]
    fn byte_at_a_time_equals_bulk_feeding() {
        let bytes = [
            0x86, 0x00, 0x43, 2, 3, 4, 5, 6, 4, 3, 2, 1, 1, 1, 1, 1, 1, 1, 1, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0,
            0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 7, 7, 7, 7, 7, 7, 7, 7, 8, 9,
            10, 11, 12, 10, 9, 8,
        ];
        let mut a: Decoder = Decoder::new();
        let mut b: Decoder = Decoder::new();
        let mut dump_a = None;
        a.feed(&bytes, |d| {
            if let Decoded::Message(Message::BoardDump(x)) = d {
                dump_a = Some(x)
            }
        });
        let mut dump_b = None;
        for &byte in &bytes {
            if let Some(Decoded::Message(Message::BoardDump(x))) = b.push(byte) {
                dump_b = Some(x);
            }
        }
        assert!(dump_a.is_some());
        assert_eq!(dump_a, dump_b);
        assert_eq!(dump_a.unwrap().piece(DgtSquare::new(0).unwrap()), PieceCode::WhiteRook);
    }
}
