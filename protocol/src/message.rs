//! Messages the board sends to the host (fact sheet section 3), and their encoders.
//!
//! Fixed-size messages are owned values; variable-length ones (texts, unknown ids) borrow
//! the decoder's buffer, so nothing is copied and nothing is allocated. The EEPROM dump is
//! not a message here but a stream of [`EeEvent`]s (see [`crate::ee`]).

use crate::EncodeError;
use crate::clock::Bwtime;
use crate::piece::PieceCode;
use crate::square::DgtSquare;

/// Message ids (the header byte is `0x80 | id`).
pub mod id {
    /// DGT_NONE: defined, never seen sent.
    pub const NONE: u8 = 0x00;
    /// Board dump, 67 bytes.
    pub const BOARD_DUMP: u8 = 0x06;
    /// Clock times or clock ack, 10 bytes.
    pub const BWTIME: u8 = 0x0D;
    /// One square changed, 5 bytes.
    pub const FIELD_UPDATE: u8 = 0x0E;
    /// The EEPROM event dump, about 8 KB.
    pub const EE_MOVES: u8 = 0x0F;
    /// Bus address, 5 bytes.
    pub const BUS_ADDRESS: u8 = 0x10;
    /// Serial number, 8 bytes (12 in the 1998 header).
    pub const SERIAL_NUMBER: u8 = 0x11;
    /// Trademark text, variable.
    pub const TRADEMARK: u8 = 0x12;
    /// Firmware version, 5 bytes.
    pub const VERSION: u8 = 0x13;
    /// Draughts dump of the black squares, 53 bytes.
    pub const DRAUGHTS_DUMP_BLACK: u8 = 0x14;
    /// Draughts dump of the white squares, 53 bytes.
    pub const DRAUGHTS_DUMP_WHITE: u8 = 0x15;
    /// Battery status, 12 bytes in practice (DGT's header says 7: never trust it).
    pub const BATTERY_STATUS: u8 = 0x20;
    /// Long serial number, 13 bytes.
    pub const LONG_SERIAL_NUMBER: u8 = 0x22;
}

/// The largest total length the 14-bit header can express.
pub const MAX_MESSAGE_LEN: usize = 0x3FFF;

/// A full board scan: one piece code per board index, raw as received.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct BoardDump {
    /// The 64 raw bytes in board-index order (0 = a8 on a normally set-up board).
    pub raw: [u8; 64],
}

impl BoardDump {
    /// An empty board.
    pub const EMPTY: BoardDump = BoardDump { raw: [0; 64] };

    /// The piece reported on a square (high bits masked off).
    pub const fn piece(&self, square: DgtSquare) -> PieceCode {
        PieceCode::from_nibble(self.raw[square.index() as usize])
    }

    /// Sets a square (used by simulators and tests).
    pub fn set(&mut self, square: DgtSquare, piece: PieceCode) {
        self.raw[square.index() as usize] = piece.code();
    }
}

/// One square changed.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct FieldUpdate {
    /// The board index that changed.
    pub square: DgtSquare,
    /// The raw piece byte; bits above the low nibble are undocumented (the "S bit").
    pub raw: u8,
}

impl FieldUpdate {
    /// A field update with no extra bits.
    pub const fn new(square: DgtSquare, piece: PieceCode) -> FieldUpdate {
        FieldUpdate { square, raw: piece.code() }
    }

    /// The new content of the square (the piece code masked with 0x0F).
    pub const fn piece(&self) -> PieceCode {
        PieceCode::from_nibble(self.raw)
    }
}

/// Battery status (Bluetooth boards, Pegasus): the payload as long as the header says.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Battery<'a> {
    /// The raw payload; 9 bytes on every board seen.
    pub payload: &'a [u8],
}

impl Battery<'_> {
    /// Charge in percent (payload byte 0).
    pub fn percent(&self) -> Option<u8> {
        self.payload.first().copied()
    }

    /// True while charging (bit 0 of payload byte 8), if the board sent that byte.
    pub fn charging(&self) -> Option<bool> {
        self.payload.get(8).map(|b| b & 0x01 != 0)
    }

    /// True while discharging (bit 1 of payload byte 8), if the board sent that byte.
    pub fn discharging(&self) -> Option<bool> {
        self.payload.get(8).map(|b| b & 0x02 != 0)
    }
}

/// Which half of a 10x10 draughts board a dump covers.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum DraughtsSquares {
    /// `0x94`: the 50 black squares.
    Black,
    /// `0x95`: the 50 white squares.
    White,
}

/// A decoded board-to-host message.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Message<'a> {
    /// `0x80`: DGT_NONE, an empty message.
    None,
    /// `0x86`: a full board scan.
    BoardDump(BoardDump),
    /// `0x8D`: clock times, a clock ack, or nothing.
    Bwtime(Bwtime),
    /// `0x8E`: one square changed.
    FieldUpdate(FieldUpdate),
    /// `0x90`: the 14-bit bus address (the serial number as binary).
    BusAddress(u16),
    /// `0x91`: the serial number, ASCII digits (5, or 9 with the 1998 storage version).
    SerialNumber(&'a [u8]),
    /// `0x92`: the trademark text.
    Trademark(&'a [u8]),
    /// `0x93`: firmware version, plain binary.
    Version {
        /// Major version.
        major: u8,
        /// Minor version.
        minor: u8,
    },
    /// `0x94`/`0x95`: draughts dumps, raw.
    DraughtsDump {
        /// Which squares.
        squares: DraughtsSquares,
        /// The 50 raw codes.
        raw: &'a [u8],
    },
    /// `0xA0`: battery status.
    Battery(Battery<'a>),
    /// `0xA2`: the long serial number, 10 ASCII characters.
    LongSerialNumber(&'a [u8]),
    /// An id this crate does not know, or a known id whose length or content is wrong;
    /// kept raw so it can be logged.
    Unknown {
        /// The message id (header byte without bit 7).
        id: u8,
        /// The payload.
        payload: &'a [u8],
    },
}

impl<'a> Message<'a> {
    /// Interprets a complete payload of the given id. Total: anything that does not fit
    /// its id's layout comes back as [`Message::Unknown`].
    pub fn parse(msg_id: u8, payload: &'a [u8]) -> Message<'a> {
        let unknown = Message::Unknown { id: msg_id, payload };
        match (msg_id, payload.len()) {
            (id::NONE, 0) => Message::None,
            (id::BOARD_DUMP, 64) => {
                let mut raw = [0u8; 64];
                raw.copy_from_slice(payload);
                Message::BoardDump(BoardDump { raw })
            }
            (id::BWTIME, 7) => {
                let mut p = [0u8; 7];
                p.copy_from_slice(payload);
                Message::Bwtime(Bwtime::from_payload(p))
            }
            (id::FIELD_UPDATE, 2) => match DgtSquare::new(payload[0]) {
                Some(square) => Message::FieldUpdate(FieldUpdate { square, raw: payload[1] }),
                None => unknown,
            },
            (id::BUS_ADDRESS, 2) => Message::BusAddress((u16::from(payload[0]) << 7) | u16::from(payload[1])),
            (id::SERIAL_NUMBER, _) => Message::SerialNumber(payload),
            (id::TRADEMARK, _) => Message::Trademark(payload),
            (id::VERSION, 2) => Message::Version { major: payload[0], minor: payload[1] },
            (id::DRAUGHTS_DUMP_BLACK, 50) => {
                Message::DraughtsDump { squares: DraughtsSquares::Black, raw: payload }
            }
            (id::DRAUGHTS_DUMP_WHITE, 50) => {
                Message::DraughtsDump { squares: DraughtsSquares::White, raw: payload }
            }
            (id::BATTERY_STATUS, _) => Message::Battery(Battery { payload }),
            (id::LONG_SERIAL_NUMBER, _) => Message::LongSerialNumber(payload),
            _ => unknown,
        }
    }

    /// The message id this value is sent under.
    pub fn id(&self) -> u8 {
        match self {
            Message::None => id::NONE,
            Message::BoardDump(_) => id::BOARD_DUMP,
            Message::Bwtime(_) => id::BWTIME,
            Message::FieldUpdate(_) => id::FIELD_UPDATE,
            Message::BusAddress(_) => id::BUS_ADDRESS,
            Message::SerialNumber(_) => id::SERIAL_NUMBER,
            Message::Trademark(_) => id::TRADEMARK,
            Message::Version { .. } => id::VERSION,
            Message::DraughtsDump { squares: DraughtsSquares::Black, .. } => id::DRAUGHTS_DUMP_BLACK,
            Message::DraughtsDump { squares: DraughtsSquares::White, .. } => id::DRAUGHTS_DUMP_WHITE,
            Message::Battery(_) => id::BATTERY_STATUS,
            Message::LongSerialNumber(_) => id::LONG_SERIAL_NUMBER,
            Message::Unknown { id, .. } => *id,
        }
    }

    /// The total wire length (header included).
    pub fn encoded_len(&self) -> usize {
        3 + match self {
            Message::None => 0,
            Message::BoardDump(_) => 64,
            Message::Bwtime(_) => 7,
            Message::FieldUpdate(_) | Message::BusAddress(_) | Message::Version { .. } => 2,
            Message::SerialNumber(p)
            | Message::Trademark(p)
            | Message::LongSerialNumber(p)
            | Message::DraughtsDump { raw: p, .. }
            | Message::Battery(Battery { payload: p })
            | Message::Unknown { payload: p, .. } => p.len(),
        }
    }

    /// Writes the message as the board would send it; returns the bytes written.
    ///
    /// Fails rather than put a byte with bit 7 set into a payload (it would desynchronise
    /// every reader), or when `out` is too small.
    pub fn encode(&self, out: &mut [u8]) -> Result<usize, EncodeError> {
        let total = self.encoded_len();
        let header = write_header(self.id(), total, out)?;
        let body = &mut out[header..total];
        match self {
            Message::None => {}
            Message::BoardDump(d) => body.copy_from_slice(&d.raw),
            Message::Bwtime(b) => body.copy_from_slice(&b.to_payload()),
            Message::FieldUpdate(f) => body.copy_from_slice(&[f.square.index(), f.raw]),
            Message::BusAddress(a) => {
                if *a > 0x3FFF {
                    return Err(EncodeError::ByteOutOfRange);
                }
                body.copy_from_slice(&[(a >> 7) as u8, (a & 0x7F) as u8]);
            }
            Message::Version { major, minor } => body.copy_from_slice(&[*major, *minor]),
            Message::SerialNumber(p)
            | Message::Trademark(p)
            | Message::LongSerialNumber(p)
            | Message::DraughtsDump { raw: p, .. }
            | Message::Battery(Battery { payload: p })
            | Message::Unknown { payload: p, .. } => body.copy_from_slice(p),
        }
        if body.iter().any(|b| b & 0x80 != 0) || self.id() & 0x80 != 0 {
            return Err(EncodeError::ByteOutOfRange);
        }
        Ok(total)
    }
}

/// Writes a message header for `total` bytes (header included); returns 3.
pub fn write_header(msg_id: u8, total: usize, out: &mut [u8]) -> Result<usize, EncodeError> {
    if !(3..=MAX_MESSAGE_LEN).contains(&total) || msg_id & 0x80 != 0 {
        return Err(EncodeError::TooLong);
    }
    if out.len() < total {
        return Err(EncodeError::BufferTooSmall { needed: total });
    }
    out[0] = 0x80 | msg_id;
    out[1] = ((total >> 7) & 0x7F) as u8;
    out[2] = (total & 0x7F) as u8;
    Ok(3)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn header_lengths_follow_the_fact_sheet() {
        let mut buf = [0u8; 80];
        let n = Message::BoardDump(BoardDump::EMPTY).encode(&mut buf).unwrap();
        assert_eq!((n, &buf[..3]), (67, &[0x86, 0x00, 0x43][..]));
        let n = Message::BusAddress(1025).encode(&mut buf).unwrap();
        assert_eq!(&buf[..n], &[0x90, 0x00, 0x05, 0x08, 0x01]);
        let n = Message::Version { major: 1, minor: 2 }.encode(&mut buf).unwrap();
        assert_eq!(&buf[..n], &[0x93, 0x00, 0x05, 0x01, 0x02]);
    }

    #[test]
    fn encoding_refuses_bytes_that_would_desynchronise_readers() {
        let mut buf = [0u8; 16];
        assert_eq!(Message::Trademark(&[0x41, 0xC3]).encode(&mut buf), Err(EncodeError::ByteOutOfRange));
        assert_eq!(
            Message::BoardDump(BoardDump::EMPTY).encode(&mut buf),
            Err(EncodeError::BufferTooSmall { needed: 67 })
        );
    }

    #[test]
    fn battery_uses_the_length_from_the_header() {
        let payload = [0x55, 0x7F, 0x7F, 0x01, 0x02, 0x00, 0x01, 0x02, 0x01];
        let Message::Battery(b) = Message::parse(id::BATTERY_STATUS, &payload) else { panic!() };
        assert_eq!(b.percent(), Some(0x55));
        assert_eq!(b.charging(), Some(true));
        let mut buf = [0u8; 16];
        assert_eq!(Message::Battery(b).encode(&mut buf), Ok(12));
        assert_eq!(&buf[..3], &[0xA0, 0x00, 0x0C]);
    }
}
