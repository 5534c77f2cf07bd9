//! The DGT electronic chessboard serial protocol, both directions.
//!
//! - [`command`]: what the host sends (single-board commands and clock commands through
//!   the board), with encoders, and a streaming parser for the board's side.
//! - [`message`]: what the board sends, typed, with encoders for simulators.
//! - [`decoder`]: a fixed-memory streaming decoder that resynchronises on line noise.
//! - [`bus`]: bus mode, many boards on one line: addressed commands with a checksum, the
//!   boards' replies and their decoder (sharing the single-board decoder's framing).
//! - [`clock`]: the BWTIME message, which is either clock times or a clock ack.
//! - [`ee`]: the EEPROM event dump, decoded as a stream.
//! - [`square`], [`piece`]: board indices and piece codes, and their chess meaning.
//!
//! No std, no allocation, no I/O, no clock: bytes in, values out, and back.
//!
//! DGT's protocol documents state that the protocol may not be used commercially without
//! DGT's written permission.
#![no_std]

pub mod bus;
pub mod clock;
pub mod command;
pub mod decoder;
pub mod ee;
mod frame;
pub mod message;
pub mod piece;
pub mod square;

pub use bus::{
    BusCommand, BusCommandKind, BusCommandParser, BusData, BusDecoded, BusDecoder, BusInput, BusReply,
    BusReplyKind, EeEvents,
};
pub use clock::{
    AckKind, Bwtime, ClockAck, ClockSide, ClockStatus, ClockTime, ClockTimes, SideFlags, SideReading,
};
pub use command::{ClockCommand, Command, CommandParser, HostInput};
pub use decoder::{Decoded, Decoder};
pub use ee::EeEvent;
pub use message::{Battery, BoardDump, FieldUpdate, Message};
pub use piece::PieceCode;
pub use square::{DgtSquare, Orientation};

/// Why an encoder refused.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum EncodeError {
    /// The output buffer is shorter than the encoding.
    BufferTooSmall {
        /// Bytes the encoding needs.
        needed: usize,
    },
    /// A value would put a byte of 0x80 or more where the protocol forbids it (a payload
    /// byte, or any byte of a single-board command), or a field is out of its range.
    ByteOutOfRange,
    /// The message is longer than the 14-bit length field can express.
    TooLong,
}

impl core::fmt::Display for EncodeError {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        match self {
            EncodeError::BufferTooSmall { needed } => {
                write!(f, "output buffer too small: {needed} bytes needed")
            }
            EncodeError::ByteOutOfRange => {
                f.write_str("a value does not fit the protocol's 7-bit bytes or its range")
            }
            EncodeError::TooLong => f.write_str("message longer than the 14-bit length field allows"),
        }
    }
}

impl core::error::Error for EncodeError {}
