//! Bus mode: many boards daisy-chained on one serial line (fact sheet 2.4; DGT's header,
//! paragraph "Bus communication protocol"), both directions.
//!
//! # Commands (host to boards)
//! Four bytes, `[command, address high 7 bits, address low 7 bits, checksum]`, the command
//! byte with bit 7 set, the checksum the sum of the three bytes before it masked to 7 bits
//! (DGT's example: `81 10 06` carries `17`). Every board on the line hears every command;
//! the one whose address it names answers. Address 0 is everyone's ([`BROADCAST`]).
//! [`BusCommand`] encodes them; [`BusCommandParser`] reads them back on the boards' side.
//!
//! # Replies (a board to the host)
//! `[0x80 | kind, length high, length low, address high, address low, data..., checksum]`:
//! the single-board framing (a header byte with bit 7 set, a 14-bit total length, 7-bit
//! bytes after it) with the board's address first and a checksum of every byte before it
//! last. [`BusDecoder`] shares the single-board decoder's framer (resynchronisation on any
//! byte of 0x80 or more, noise accounting, oversized frames skipped by length) and checks
//! the checksum, so a reply mangled by line noise or by two boards talking at once is
//! reported as [`BusDecoded::BadChecksum`], never as a reply. Kinds: board dump, BWTIME,
//! changes (EEPROM events since the last `SEND_CHANGES`), changes from the start tag, ping,
//! start-game written, version, draughts dump.
//!
//! # What the documents leave open (UNCONFIRMED)
//! - The bus version reply is 8 bytes (two data bytes, major and minor) but "was 6 up to
//!   version 1.2": the 6-byte form carries no version and is kept as
//!   [`BusData::Version`]`(None)`.
//! - The length bytes of a reply count the whole reply, header and checksum included (as
//!   DGT's header says for its message format, and as a 6-byte ping implies).
//!
//! No std, no allocation: replies borrow the decoder's buffer.

use crate::EncodeError;
use crate::clock::Bwtime;
use crate::ee::{EeEvent, EeParser};
use crate::frame::{Framer, Step};
use crate::message::{BoardDump, MAX_MESSAGE_LEN};

/// The address every board answers to (for the commands that are broadcast).
pub const BROADCAST: u16 = 0;
/// The largest address (14 bits: two 7-bit bytes).
pub const MAX_ADDRESS: u16 = 0x3FFF;

/// The 7-bit checksum of bus frames: the sum of `bytes`, bit 7 cleared.
pub const fn checksum(bytes: &[u8]) -> u8 {
    let mut sum: u8 = 0;
    let mut i = 0;
    while i < bytes.len() {
        sum = sum.wrapping_add(bytes[i]);
        i += 1;
    }
    sum & 0x7F
}

/// The bus address of a board from its serial number: the number as binary (fact sheet
/// 2.4: serial `01025` is address `08 01`). Serial numbers above [`MAX_ADDRESS`] do not
/// fit 14 bits; what real boards do with them is UNCONFIRMED, and this keeps the low 14
/// bits.
pub const fn address_of_serial(serial: u32) -> u16 {
    (serial & MAX_ADDRESS as u32) as u16
}

/// A bus command byte.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
#[repr(u8)]
pub enum BusCommandKind {
    /// `0x81`: one BWTIME.
    SendClock = 0x81,
    /// `0x82`: one board dump.
    SendBoard = 0x82,
    /// `0x83`: the EEPROM events logged since the last `SEND_CHANGES`.
    SendChanges = 0x83,
    /// `0x84`: the last changes packet again (after a bad checksum: `SEND_CHANGES` would
    /// discard it).
    RepeatChanges = 0x84,
    /// `0x85`: write a start tag (and every piece's position after it) in the EEPROM.
    SetStartGame = 0x85,
    /// `0x86`: the events from the start tag on (without those `SEND_CHANGES` has yet to
    /// send).
    SendFromStart = 0x86,
    /// `0x87`: answer with a ping; to address 0, every board answers at a random moment
    /// within 1.1 s.
    Ping = 0x87,
    /// `0x88`: leave bus mode (single-board mode); to address 0, every board does.
    EndBusMode = 0x88,
    /// `0x89`: a power-up reset (some seconds); to address 0, every board does.
    Reset = 0x89,
    /// `0x8A`: answer with a ping at once, and ignore the next ping to address 0 (board
    /// discovery).
    IgnoreNextPing = 0x8A,
    /// `0x8B`: the firmware version.
    SendVersion = 0x8B,
    /// `0x8C`: a draughts dump of the 50 black squares.
    SendBoard50B = 0x8C,
    /// `0x8D`: changes, clock and board, one reply after the other.
    SendAllD = 0x8D,
}

impl BusCommandKind {
    /// Every command.
    pub const ALL: [BusCommandKind; 13] = [
        BusCommandKind::SendClock,
        BusCommandKind::SendBoard,
        BusCommandKind::SendChanges,
        BusCommandKind::RepeatChanges,
        BusCommandKind::SetStartGame,
        BusCommandKind::SendFromStart,
        BusCommandKind::Ping,
        BusCommandKind::EndBusMode,
        BusCommandKind::Reset,
        BusCommandKind::IgnoreNextPing,
        BusCommandKind::SendVersion,
        BusCommandKind::SendBoard50B,
        BusCommandKind::SendAllD,
    ];

    /// The command byte.
    pub const fn byte(self) -> u8 {
        self as u8
    }

    /// The command of a byte, if it is one.
    pub const fn from_byte(b: u8) -> Option<BusCommandKind> {
        if b < 0x81 || b > 0x8D {
            return None;
        }
        Some(BusCommandKind::ALL[(b - 0x81) as usize])
    }

    /// The reply a board sends to this command (the first one for `SEND_ALL_D`); `None`
    /// for the commands nothing answers.
    pub const fn reply(self) -> Option<BusReplyKind> {
        Some(match self {
            BusCommandKind::SendClock => BusReplyKind::Bwtime,
            BusCommandKind::SendBoard => BusReplyKind::BoardDump,
            BusCommandKind::SendChanges | BusCommandKind::RepeatChanges | BusCommandKind::SendAllD => {
                BusReplyKind::Update
            }
            BusCommandKind::SetStartGame => BusReplyKind::StartGameWritten,
            BusCommandKind::SendFromStart => BusReplyKind::FromStart,
            BusCommandKind::Ping | BusCommandKind::IgnoreNextPing => BusReplyKind::Ping,
            BusCommandKind::SendVersion => BusReplyKind::Version,
            BusCommandKind::SendBoard50B => BusReplyKind::BoardDump50B,
            BusCommandKind::EndBusMode | BusCommandKind::Reset => return None,
        })
    }
}

/// A bus command to one board (or to all, at [`BROADCAST`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct BusCommand {
    /// What is asked.
    pub kind: BusCommandKind,
    /// Of whom.
    pub address: u16,
}

impl BusCommand {
    /// Every bus command is four bytes long.
    pub const LEN: usize = 4;

    /// A command to the board at `address`.
    pub const fn new(kind: BusCommandKind, address: u16) -> BusCommand {
        BusCommand { kind, address }
    }

    /// True when sent to address 0.
    pub const fn is_broadcast(&self) -> bool {
        self.address == BROADCAST
    }

    /// The four bytes; fails for an address over [`MAX_ADDRESS`].
    pub const fn to_bytes(&self) -> Result<[u8; 4], EncodeError> {
        if self.address > MAX_ADDRESS {
            return Err(EncodeError::ByteOutOfRange);
        }
        let head = [self.kind.byte(), (self.address >> 7) as u8, (self.address & 0x7F) as u8];
        Ok([head[0], head[1], head[2], checksum(&head)])
    }

    /// Writes the four bytes into `out`; returns 4.
    pub fn encode(&self, out: &mut [u8]) -> Result<usize, EncodeError> {
        let bytes = self.to_bytes()?;
        let dst = out.get_mut(..Self::LEN).ok_or(EncodeError::BufferTooSmall { needed: Self::LEN })?;
        dst.copy_from_slice(&bytes);
        Ok(Self::LEN)
    }
}

/// What a board makes of the bytes on the bus.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum BusInput {
    /// A command with a good checksum.
    Command(BusCommand),
    /// Four well-formed bytes with a good checksum whose first is no known command (the
    /// `0x92` and `0xDF` LiveChess sends, whose meaning is UNCONFIRMED).
    Unknown {
        /// The command byte.
        command: u8,
        /// The address.
        address: u16,
    },
    /// Four bytes whose checksum is wrong: the board ignores them.
    BadChecksum {
        /// The command byte.
        command: u8,
        /// The address as received.
        address: u16,
    },
    /// A byte below 0x80 outside any bus command: a single-board command, which switches
    /// a board in bus mode to single-board mode.
    Byte(u8),
}

/// A streaming parser of host-to-boards bytes in bus mode, for code that plays a board.
///
/// A byte of 0x80 or more starts a command (abandoning one in progress); three 7-bit
/// bytes complete it.
#[derive(Clone, Copy, Debug, Default)]
pub struct BusCommandParser {
    buf: [u8; 4],
    have: u8,
}

impl BusCommandParser {
    /// A parser between commands.
    pub const fn new() -> BusCommandParser {
        BusCommandParser { buf: [0; 4], have: 0 }
    }

    /// True while a command is half read.
    pub const fn in_command(&self) -> bool {
        self.have > 0
    }

    /// Takes one byte; returns the input it completed, if any.
    pub fn push(&mut self, b: u8) -> Option<BusInput> {
        if b & 0x80 != 0 {
            self.buf[0] = b;
            self.have = 1;
            return None;
        }
        if self.have == 0 {
            return Some(BusInput::Byte(b));
        }
        self.buf[usize::from(self.have)] = b;
        self.have += 1;
        if usize::from(self.have) < BusCommand::LEN {
            return None;
        }
        self.have = 0;
        let [command, high, low, sum] = self.buf;
        let address = (u16::from(high) << 7) | u16::from(low);
        if checksum(&self.buf[..3]) != sum {
            return Some(BusInput::BadChecksum { command, address });
        }
        Some(match BusCommandKind::from_byte(command) {
            Some(kind) => BusInput::Command(BusCommand { kind, address }),
            None => BusInput::Unknown { command, address },
        })
    }
}

/// A bus reply's kind (its header byte without bit 7).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
#[repr(u8)]
pub enum BusReplyKind {
    /// `0x83`: a board dump.
    BoardDump = 0x03,
    /// `0x84`: a BWTIME (clock times or a clock ack).
    Bwtime = 0x04,
    /// `0x85`: the changes since the last `SEND_CHANGES`.
    Update = 0x05,
    /// `0x86`: the changes from the start tag.
    FromStart = 0x06,
    /// `0x87`: a ping.
    Ping = 0x07,
    /// `0x88`: the start tag was written.
    StartGameWritten = 0x08,
    /// `0x89`: the firmware version.
    Version = 0x09,
    /// `0x8A`: a draughts dump of the 50 black squares.
    BoardDump50B = 0x0A,
}

impl BusReplyKind {
    /// The kind's id (the header byte is `0x80 | id`).
    pub const fn id(self) -> u8 {
        self as u8
    }
}

/// EEPROM events as a bus reply carries them (fact sheet section 6), borrowed raw.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Default)]
pub struct EeEvents<'a> {
    raw: &'a [u8],
}

impl<'a> EeEvents<'a> {
    /// The events in `raw` (7-bit bytes; see [`crate::ee::encode_events`]).
    pub const fn new(raw: &'a [u8]) -> EeEvents<'a> {
        EeEvents { raw }
    }

    /// The raw bytes.
    pub const fn raw(&self) -> &'a [u8] {
        self.raw
    }

    /// True when there is no event.
    pub const fn is_empty(&self) -> bool {
        self.raw.is_empty()
    }

    /// The events, oldest first; an event cut off at the end comes out as
    /// [`EeEvent::Malformed`].
    pub fn iter(&self) -> EeEventIter<'a> {
        EeEventIter { rest: self.raw }
    }
}

impl<'a> IntoIterator for EeEvents<'a> {
    type Item = EeEvent;
    type IntoIter = EeEventIter<'a>;

    fn into_iter(self) -> EeEventIter<'a> {
        self.iter()
    }
}

/// The events of an [`EeEvents`].
#[derive(Clone, Debug)]
pub struct EeEventIter<'a> {
    rest: &'a [u8],
}

impl Iterator for EeEventIter<'_> {
    type Item = EeEvent;

    fn next(&mut self) -> Option<EeEvent> {
        let first = *self.rest.first()?;
        let n = EeEvent::len_for_first_byte(first).min(self.rest.len());
        let (event, rest) = self.rest.split_at(n);
        self.rest = rest;
        let mut parser = EeParser::new();
        let mut out = None;
        for &b in event {
            out = parser.push(b);
        }
        out.or_else(|| parser.finish())
    }
}

/// What a bus reply carries.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum BusData<'a> {
    /// `0x83`: the 64 squares, as a single-board dump.
    BoardDump(BoardDump),
    /// `0x84`: the seven BWTIME bytes, as the single-board message.
    Bwtime(Bwtime),
    /// `0x85`: the EEPROM events logged since the last `SEND_CHANGES` (empty when
    /// nothing changed).
    Update(EeEvents<'a>),
    /// `0x86`: the EEPROM events from the start tag on.
    FromStart(EeEvents<'a>),
    /// `0x87`: no data.
    Ping,
    /// `0x88`: no data.
    StartGameWritten,
    /// `0x89`: major and minor version, plain binary; `None` for the 6-byte reply of
    /// firmware up to 1.2, which carries none.
    Version(Option<(u8, u8)>),
    /// `0x8A`: the 50 raw codes of a draughts dump.
    BoardDump50B(&'a [u8]),
    /// A kind this crate does not know, or a known kind whose data has the wrong length;
    /// kept raw.
    Unknown {
        /// The kind's id.
        kind: u8,
        /// The data.
        data: &'a [u8],
    },
}

/// A reply from one board.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct BusReply<'a> {
    /// The board that sent it.
    pub address: u16,
    /// What it carries.
    pub data: BusData<'a>,
}

impl<'a> BusReply<'a> {
    /// A reply from `address`.
    pub const fn new(address: u16, data: BusData<'a>) -> BusReply<'a> {
        BusReply { address, data }
    }

    /// Interprets the data of a reply of kind `kind` (total: a layout that does not fit
    /// comes back as [`BusData::Unknown`]).
    pub fn parse(kind: u8, address: u16, data: &'a [u8]) -> BusReply<'a> {
        let unknown = BusData::Unknown { kind, data };
        let data = match (kind, data.len()) {
            (0x03, 64) => {
                let mut raw = [0u8; 64];
                raw.copy_from_slice(data);
                BusData::BoardDump(BoardDump { raw })
            }
            (0x04, 7) => {
                let mut p = [0u8; 7];
                p.copy_from_slice(data);
                BusData::Bwtime(Bwtime::from_payload(p))
            }
            (0x05, _) => BusData::Update(EeEvents::new(data)),
            (0x06, _) => BusData::FromStart(EeEvents::new(data)),
            (0x07, 0) => BusData::Ping,
            (0x08, 0) => BusData::StartGameWritten,
            (0x09, 2) => BusData::Version(Some((data[0], data[1]))),
            (0x09, 0) => BusData::Version(None),
            (0x0A, 50) => BusData::BoardDump50B(data),
            _ => unknown,
        };
        BusReply { address, data }
    }

    /// The kind's id (the header byte is `0x80 | kind()`).
    pub fn kind(&self) -> u8 {
        match self.data {
            BusData::BoardDump(_) => BusReplyKind::BoardDump.id(),
            BusData::Bwtime(_) => BusReplyKind::Bwtime.id(),
            BusData::Update(_) => BusReplyKind::Update.id(),
            BusData::FromStart(_) => BusReplyKind::FromStart.id(),
            BusData::Ping => BusReplyKind::Ping.id(),
            BusData::StartGameWritten => BusReplyKind::StartGameWritten.id(),
            BusData::Version(_) => BusReplyKind::Version.id(),
            BusData::BoardDump50B(_) => BusReplyKind::BoardDump50B.id(),
            BusData::Unknown { kind, .. } => kind,
        }
    }

    /// The data's length on the wire.
    fn data_len(&self) -> usize {
        match self.data {
            BusData::BoardDump(_) => 64,
            BusData::Bwtime(_) => 7,
            BusData::Update(e) | BusData::FromStart(e) => e.raw().len(),
            BusData::Ping | BusData::StartGameWritten | BusData::Version(None) => 0,
            BusData::Version(Some(_)) => 2,
            BusData::BoardDump50B(d) | BusData::Unknown { data: d, .. } => d.len(),
        }
    }

    /// The total wire length: header, address, data, checksum.
    pub fn encoded_len(&self) -> usize {
        6 + self.data_len()
    }

    /// Writes the reply as a board sends it; returns the bytes written. Fails rather than
    /// put a byte of 0x80 or more after the header, for an address over [`MAX_ADDRESS`],
    /// or when `out` is too small.
    pub fn encode(&self, out: &mut [u8]) -> Result<usize, EncodeError> {
        let total = self.encoded_len();
        if total > MAX_MESSAGE_LEN || self.kind() & 0x80 != 0 {
            return Err(EncodeError::TooLong);
        }
        if self.address > MAX_ADDRESS {
            return Err(EncodeError::ByteOutOfRange);
        }
        let out = out.get_mut(..total).ok_or(EncodeError::BufferTooSmall { needed: total })?;
        out[..5].copy_from_slice(&[
            0x80 | self.kind(),
            ((total >> 7) & 0x7F) as u8,
            (total & 0x7F) as u8,
            (self.address >> 7) as u8,
            (self.address & 0x7F) as u8,
        ]);
        let data = &mut out[5..total - 1];
        match self.data {
            BusData::BoardDump(d) => data.copy_from_slice(&d.raw),
            BusData::Bwtime(b) => data.copy_from_slice(&b.to_payload()),
            BusData::Update(e) | BusData::FromStart(e) => data.copy_from_slice(e.raw()),
            BusData::Ping | BusData::StartGameWritten | BusData::Version(None) => {}
            BusData::Version(Some((major, minor))) => data.copy_from_slice(&[major, minor]),
            BusData::BoardDump50B(d) | BusData::Unknown { data: d, .. } => data.copy_from_slice(d),
        }
        if out[1..total - 1].iter().any(|b| b & 0x80 != 0) {
            return Err(EncodeError::ByteOutOfRange);
        }
        out[total - 1] = checksum(&out[..total - 1]);
        Ok(total)
    }
}

/// One thing the bus decoder recognised.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum BusDecoded<'a> {
    /// A reply with a good checksum.
    Reply(BusReply<'a>),
    /// A well-framed reply whose checksum is wrong: line noise, or two boards that
    /// answered at once. Its content is not to be trusted, its address included.
    BadChecksum {
        /// The kind's id as received.
        kind: u8,
        /// The address as received.
        address: u16,
        /// The total length.
        total_len: u16,
    },
    /// Bytes thrown away: garbage between replies, or a reply cut short by a new header
    /// or an impossible length. Reported when the next header arrives.
    Noise {
        /// How many bytes.
        len: usize,
    },
    /// A well-framed reply too large for the buffer, skipped whole (unchecked).
    Skipped {
        /// The kind's id.
        kind: u8,
        /// Its total length.
        total_len: u16,
    },
}

/// The streaming bus decoder with an `N`-byte buffer for a reply's address, data and
/// checksum (a board dump needs 67; the changes since the last poll are a few bytes per
/// move; 8,192 holds anything a board's EEPROM can send).
#[derive(Clone, Debug)]
pub struct BusDecoder<const N: usize = 512> {
    framer: Framer<N>,
}

impl<const N: usize> Default for BusDecoder<N> {
    fn default() -> Self {
        Self::new()
    }
}

impl<const N: usize> BusDecoder<N> {
    /// A decoder waiting for its first header.
    pub const fn new() -> Self {
        // Header, two address bytes and the checksum: a reply is at least 6 bytes.
        BusDecoder { framer: Framer::new(6) }
    }

    /// Bytes discarded since the last [`BusDecoded::Noise`], not yet reported.
    pub fn take_noise(&mut self) -> Option<usize> {
        self.framer.take_noise()
    }

    /// Forgets any reply in progress.
    pub fn reset(&mut self) {
        *self = Self::new();
    }

    /// Bytes still due for the reply in progress (0 between replies): how long a reader
    /// should wait for it to end.
    pub fn bytes_due(&self) -> usize {
        self.framer.bytes_due()
    }

    /// Takes one byte; returns what it completed, if anything.
    pub fn push(&mut self, byte: u8) -> Option<BusDecoded<'_>> {
        match self.framer.push(byte, |_| false)? {
            Step::Noise(len) => Some(BusDecoded::Noise { len }),
            Step::Skipped { id, total } => Some(BusDecoded::Skipped { kind: id, total_len: total as u16 }),
            Step::Frame { id, body } => {
                // The framer's minimum length guarantees the address and the checksum.
                let total = body.len() + 3;
                let header = [0x80 | id, ((total >> 7) & 0x7F) as u8, (total & 0x7F) as u8];
                let (content, sum) = body.split_at(body.len() - 1);
                let address = (u16::from(content[0]) << 7) | u16::from(content[1]);
                if checksum(&header).wrapping_add(checksum(content)) & 0x7F != sum[0] {
                    return Some(BusDecoded::BadChecksum { kind: id, address, total_len: total as u16 });
                }
                Some(BusDecoded::Reply(BusReply::parse(id, address, &content[2..])))
            }
            // Bus replies are never streamed.
            Step::StreamStart { .. } | Step::Streamed { .. } => None,
        }
    }

    /// Feeds a chunk, calling `sink` for everything it completes (as [`BusDecoder::push`]
    /// byte by byte, with body runs copied in bulk).
    pub fn feed<F: FnMut(BusDecoded<'_>)>(&mut self, mut bytes: &[u8], mut sink: F) {
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
    use crate::ee::encode_events;
    use crate::{ClockSide, ClockTime, DgtSquare, PieceCode};

    #[test]
    fn the_headers_worked_examples() {
        // DGT's header: `81 10 06` carries checksum `17`.
        assert_eq!(checksum(&[0x81, 0x10, 0x06]), 0x17);
        let cmd = BusCommand::new(BusCommandKind::SendClock, (0x10 << 7) | 0x06);
        assert_eq!(cmd.to_bytes(), Ok([0x81, 0x10, 0x06, 0x17]));
        // LiveChess's version broadcast (fact sheet 2.3).
        let v = BusCommand::new(BusCommandKind::SendVersion, BROADCAST);
        assert_eq!(v.to_bytes(), Ok([0x8B, 0x00, 0x00, 0x0B]));
        // Serial 01025 is address 08 01.
        assert_eq!(address_of_serial(1025), (0x08 << 7) | 0x01);
        assert_eq!(
            BusCommand::new(BusCommandKind::Ping, MAX_ADDRESS + 1).to_bytes(),
            Err(EncodeError::ByteOutOfRange)
        );
    }

    #[test]
    fn a_ping_reply_is_six_bytes_and_decodes() {
        let mut out = [0u8; 8];
        let n = BusReply::new(1025, BusData::Ping).encode(&mut out).unwrap();
        assert_eq!(&out[..n], &[0x87, 0x00, 0x06, 0x08, 0x01, 0x16]);
        let mut dec: BusDecoder = BusDecoder::new();
        let mut got = None;
        dec.feed(&out[..n], |d| got = Some(d == BusDecoded::Reply(BusReply::new(1025, BusData::Ping))));
        assert_eq!(got, Some(true));
        let n = BusReply::new(1025, BusData::Version(Some((1, 80)))).encode(&mut out).unwrap();
        assert_eq!((n, out[2]), (8, 8));
    }

    #[test]
    fn changes_carry_eeprom_events() {
        let events = [
            EeEvent::Field { square: DgtSquare::new(52).unwrap(), piece: PieceCode::Empty, quick: false },
            EeEvent::Field { square: DgtSquare::new(36).unwrap(), piece: PieceCode::WhitePawn, quick: true },
            EeEvent::Time { side: ClockSide::Left, time: ClockTime::new(1, 29, 58).unwrap() },
        ];
        let mut raw = [0u8; 16];
        let len = encode_events(&events, &mut raw).unwrap();
        assert_eq!(len, 7);
        let reply = BusReply::new(300, BusData::Update(EeEvents::new(&raw[..len])));
        let mut out = [0u8; 32];
        let n = reply.encode(&mut out).unwrap();
        let mut dec: BusDecoder = BusDecoder::new();
        let mut seen = 0;
        dec.feed(&out[..n], |d| {
            let BusDecoded::Reply(BusReply { address: 300, data: BusData::Update(e) }) = d else {
                panic!("{d:?}")
            };
            assert!(e.iter().eq(events.iter().copied()));
            seen += 1;
        });
        assert_eq!(seen, 1);
    }

    #[test]
    fn a_mangled_reply_is_a_bad_checksum_and_the_next_one_decodes() {
        let mut out = [0u8; 16];
        let n = BusReply::new(7, BusData::Version(Some((1, 80)))).encode(&mut out).unwrap();
        let mut line = [0u8; 32];
        line[..n].copy_from_slice(&out[..n]);
        line[6] ^= 0x01;
        line[n..2 * n].copy_from_slice(&out[..n]);
        let mut dec: BusDecoder = BusDecoder::new();
        let mut log = [None; 4];
        let mut k = 0;
        dec.feed(&line[..2 * n], |d| {
            log[k] = Some(matches!(d, BusDecoded::Reply(_)));
            k += 1;
        });
        assert_eq!(&log[..k], &[Some(false), Some(true)]);
    }

    #[test]
    fn the_parser_reads_commands_and_passes_single_board_bytes() {
        let mut p = BusCommandParser::new();
        let mut got = [None; 4];
        let mut k = 0;
        for b in [0x4A, 0x8B, 0x00, 0x00, 0x0B, 0x83, 0x10, 0x06, 0x00, 0x92, 0x00, 0x00, 0x12] {
            if let Some(x) = p.push(b) {
                got[k] = Some(x);
                k += 1;
            }
        }
        assert_eq!(
            got,
            [
                Some(BusInput::Byte(0x4A)),
                Some(BusInput::Command(BusCommand::new(BusCommandKind::SendVersion, 0))),
                Some(BusInput::BadChecksum { command: 0x83, address: (0x10 << 7) | 0x06 }),
                Some(BusInput::Unknown { command: 0x92, address: 0 }),
            ]
        );
    }
}
