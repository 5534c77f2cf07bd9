//! The EEPROM event dump (`0x8F`, about 8 KB): the board's own record of every change.
//!
//! Decoded one event at a time as bytes arrive ([`EeParser`]), so a reader never needs an
//! 8 KB buffer, and a dump that arrives uninvited can be skipped without loss of sync.

use crate::EncodeError;
use crate::clock::{ClockSide, ClockTime};
use crate::message::write_header;
use crate::piece::PieceCode;
use crate::square::DgtSquare;

/// One EEPROM event.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum EeEvent {
    /// A square changed (2 bytes, first byte 0x40..=0x5F).
    Field {
        /// The board index.
        square: DgtSquare,
        /// The new content (empty when a piece was lifted).
        piece: PieceCode,
        /// The "r" bit: under about 250 ms since the previous field event.
        quick: bool,
    },
    /// A clock display was written when the lever moved (3 bytes, 0x60..=0x69 / 0x70..=0x79).
    Time {
        /// Left or right display, seen from the front; never swapped for rotated boards.
        side: ClockSide,
        /// The time shown.
        time: ClockTime,
    },
    /// `0x6A`: power-up.
    PowerUp,
    /// `0x6B`: end of the dump; always the last event.
    Eof,
    /// `0x6C`: 16 pieces on ranks 1, 2, 7 and 8 that are not the normal start.
    FourRows,
    /// `0x6D`: the board is empty.
    EmptyBoard,
    /// `0x6E`: a download happened here.
    Downloaded,
    /// `0x6F`: the normal start position, White at the connector's left.
    BeginPos,
    /// `0x7A`: the start position on a rotated board.
    BeginPosRotated,
    /// `0x7B`: a bus-mode start-game marker; piece positions follow.
    StartTag,
    /// `0x7C`: a watchdog reset.
    WatchdogAction,
    /// `0x7D`: reserved.
    Future1,
    /// `0x7E`: reserved.
    Future2,
    /// `0x7F`: no operation.
    Nop,
    /// `0x00`: no operation (added in 2012).
    Nop2,
    /// Bytes that fit no event: an undefined first byte (0x01..=0x3F), a square over 63 or
    /// bad BCD in a time event. `len` bytes of `bytes` are meaningful.
    Malformed {
        /// The raw bytes.
        bytes: [u8; 3],
        /// How many of them.
        len: u8,
    },
}

impl EeEvent {
    /// How many bytes an event starting with `first` occupies.
    pub const fn len_for_first_byte(first: u8) -> usize {
        match first {
            0x40..=0x5F => 2,
            0x60..=0x69 | 0x70..=0x79 => 3,
            _ => 1,
        }
    }

    /// Decodes one complete event (`bytes.len()` must be `len_for_first_byte(bytes[0])`).
    pub fn parse(bytes: &[u8]) -> EeEvent {
        let malformed = || {
            let mut raw = [0u8; 3];
            let len = bytes.len().min(3);
            raw[..len].copy_from_slice(&bytes[..len]);
            EeEvent::Malformed { bytes: raw, len: len as u8 }
        };
        match *bytes {
            [first @ 0x40..=0x5F, square] => match DgtSquare::new(square) {
                Some(square) => {
                    EeEvent::Field { square, piece: PieceCode::from_nibble(first), quick: first & 0x10 != 0 }
                }
                None => malformed(),
            },
            [first @ (0x60..=0x69 | 0x70..=0x79), minutes, seconds] => {
                let side = if first & 0x10 != 0 { ClockSide::Left } else { ClockSide::Right };
                let bcd = |b: u8| {
                    if b >> 4 <= 5 && b & 0x0F <= 9 { Some((b >> 4) * 10 + (b & 0x0F)) } else { None }
                };
                match (bcd(minutes), bcd(seconds)) {
                    (Some(m), Some(s)) => match ClockTime::new(first & 0x0F, m, s) {
                        Some(time) => EeEvent::Time { side, time },
                        None => malformed(),
                    },
                    _ => malformed(),
                }
            }
            [0x6A] => EeEvent::PowerUp,
            [0x6B] => EeEvent::Eof,
            [0x6C] => EeEvent::FourRows,
            [0x6D] => EeEvent::EmptyBoard,
            [0x6E] => EeEvent::Downloaded,
            [0x6F] => EeEvent::BeginPos,
            [0x7A] => EeEvent::BeginPosRotated,
            [0x7B] => EeEvent::StartTag,
            [0x7C] => EeEvent::WatchdogAction,
            [0x7D] => EeEvent::Future1,
            [0x7E] => EeEvent::Future2,
            [0x7F] => EeEvent::Nop,
            [0x00] => EeEvent::Nop2,
            _ => malformed(),
        }
    }

    /// Writes the event's bytes; returns how many (1 to 3).
    pub fn encode(&self, out: &mut [u8; 3]) -> Result<usize, EncodeError> {
        let bcd = |v: u8| ((v / 10) << 4) | (v % 10);
        let (bytes, len): ([u8; 3], usize) = match *self {
            EeEvent::Field { square, piece, quick } => {
                ([0x40 | (u8::from(quick) << 4) | piece.code(), square.index(), 0], 2)
            }
            EeEvent::Time { side, time } => {
                if ClockTime::new(time.hours, time.minutes, time.seconds).is_none() {
                    return Err(EncodeError::ByteOutOfRange);
                }
                let left = if side == ClockSide::Left { 0x10 } else { 0 };
                ([0x60 | left | time.hours, bcd(time.minutes), bcd(time.seconds)], 3)
            }
            EeEvent::PowerUp => ([0x6A, 0, 0], 1),
            EeEvent::Eof => ([0x6B, 0, 0], 1),
            EeEvent::FourRows => ([0x6C, 0, 0], 1),
            EeEvent::EmptyBoard => ([0x6D, 0, 0], 1),
            EeEvent::Downloaded => ([0x6E, 0, 0], 1),
            EeEvent::BeginPos => ([0x6F, 0, 0], 1),
            EeEvent::BeginPosRotated => ([0x7A, 0, 0], 1),
            EeEvent::StartTag => ([0x7B, 0, 0], 1),
            EeEvent::WatchdogAction => ([0x7C, 0, 0], 1),
            EeEvent::Future1 => ([0x7D, 0, 0], 1),
            EeEvent::Future2 => ([0x7E, 0, 0], 1),
            EeEvent::Nop => ([0x7F, 0, 0], 1),
            EeEvent::Nop2 => ([0x00, 0, 0], 1),
            EeEvent::Malformed { bytes, len } => (bytes, usize::from(len.min(3))),
        };
        if bytes[..len].iter().any(|b| b & 0x80 != 0) {
            return Err(EncodeError::ByteOutOfRange);
        }
        out[..len].copy_from_slice(&bytes[..len]);
        Ok(len)
    }
}

/// Splits an EEPROM payload into events as its bytes arrive.
///
/// An event cut off by the end of the payload comes out as [`EeEvent::Malformed`] from
/// [`EeParser::finish`].
#[derive(Clone, Copy, Debug, Default)]
pub struct EeParser {
    pending: [u8; 3],
    have: u8,
}

impl EeParser {
    /// A parser at the start of a payload.
    pub const fn new() -> EeParser {
        EeParser { pending: [0; 3], have: 0 }
    }

    /// Takes one payload byte; returns an event when one is complete.
    pub fn push(&mut self, byte: u8) -> Option<EeEvent> {
        self.pending[self.have as usize] = byte;
        self.have += 1;
        let need = EeEvent::len_for_first_byte(self.pending[0]);
        if usize::from(self.have) < need {
            return None;
        }
        self.have = 0;
        Some(EeEvent::parse(&self.pending[..need]))
    }

    /// Ends the payload; returns the truncated event if one was left half-read.
    pub fn finish(&mut self) -> Option<EeEvent> {
        if self.have == 0 {
            return None;
        }
        let len = self.have;
        self.have = 0;
        Some(EeEvent::Malformed { bytes: self.pending, len })
    }
}

/// Writes the bytes of `events` one after the other (as a bus changes reply carries them);
/// returns how many.
pub fn encode_events(events: &[EeEvent], out: &mut [u8]) -> Result<usize, EncodeError> {
    let mut scratch = [0u8; 3];
    let mut at = 0usize;
    for event in events {
        let n = event.encode(&mut scratch)?;
        let dst = out.get_mut(at..at + n).ok_or(EncodeError::BufferTooSmall { needed: at + n })?;
        dst.copy_from_slice(&scratch[..n]);
        at += n;
    }
    Ok(at)
}

/// Writes a whole EE_MOVES message holding `events`; returns the bytes written.
pub fn encode_ee_moves(events: &[EeEvent], out: &mut [u8]) -> Result<usize, EncodeError> {
    let mut scratch = [0u8; 3];
    let mut payload = 0usize;
    for event in events {
        payload += event.encode(&mut scratch)?;
    }
    let total = 3 + payload;
    let mut at = write_header(crate::message::id::EE_MOVES, total, out)?;
    for event in events {
        let n = event.encode(&mut scratch)?;
        out[at..at + n].copy_from_slice(&scratch[..n]);
        at += n;
    }
    Ok(at)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn field_and_time_events_decode_with_bcd() {
        let mut p = EeParser::new();
        assert_eq!(p.push(0x55), None);
        assert_eq!(
            p.push(0x3C),
            Some(EeEvent::Field {
                square: DgtSquare::new(60).unwrap(),
                piece: PieceCode::WhiteKing,
                quick: true
            })
        );
        assert_eq!(p.push(0x71), None);
        assert_eq!(p.push(0x59), None);
        assert_eq!(
            p.push(0x07),
            Some(EeEvent::Time {
                side: ClockSide::Left,
                time: ClockTime { hours: 1, minutes: 59, seconds: 7 }
            })
        );
        assert_eq!(p.push(0x7A), Some(EeEvent::BeginPosRotated));
        assert_eq!(p.push(0x6B), Some(EeEvent::Eof));
        assert_eq!(p.finish(), None);
    }

    #[test]
    fn every_one_byte_event_round_trips() {
        let mut out = [0u8; 3];
        for b in [0x00u8, 0x6A, 0x6B, 0x6C, 0x6D, 0x6E, 0x6F, 0x7A, 0x7B, 0x7C, 0x7D, 0x7E, 0x7F] {
            let e = EeEvent::parse(&[b]);
            assert!(!matches!(e, EeEvent::Malformed { .. }), "{b:#x}");
            assert_eq!(e.encode(&mut out), Ok(1));
            assert_eq!(out[0], b);
        }
        assert!(matches!(EeEvent::parse(&[0x21]), EeEvent::Malformed { len: 1, .. }));
    }
}
