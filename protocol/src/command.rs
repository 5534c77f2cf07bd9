//! Commands the host sends to the board (fact sheet sections 2 and 7), their encoders, and
//! a streaming parser for the board's side (simulators, tests).
//!
//! Every single-board command is below 0x80 on the wire: a byte of 0x80 or more would
//! switch a single-board board into bus mode. Encoders refuse any value that would break
//! that rule instead of sending it.

use crate::EncodeError;
use crate::clock::ClockTime;

/// Command bytes.
pub mod byte {
    /// Back to idle.
    pub const RESET: u8 = 0x40;
    /// One BWTIME.
    pub const SEND_CLOCK: u8 = 0x41;
    /// One board dump.
    pub const SEND_BOARD: u8 = 0x42;
    /// Field updates and clock times at least once a second.
    pub const SEND_UPDATE: u8 = 0x43;
    /// Field updates only.
    pub const SEND_UPDATE_BOARD: u8 = 0x44;
    /// Serial number.
    pub const RETURN_SERIAL_NUMBER: u8 = 0x45;
    /// Bus address.
    pub const RETURN_BUS_ADDRESS: u8 = 0x46;
    /// Trademark text.
    pub const SEND_TRADEMARK: u8 = 0x47;
    /// The EEPROM dump.
    pub const SEND_EE_MOVES: u8 = 0x49;
    /// Switch to bus mode (never sent by this project).
    pub const TO_BUS_MODE: u8 = 0x4A;
    /// Field updates, and clock times only when they change.
    pub const SEND_UPDATE_NICE: u8 = 0x4B;
    /// Battery status.
    pub const SEND_BATTERY_STATUS: u8 = 0x4C;
    /// Firmware version.
    pub const SEND_VERSION: u8 = 0x4D;
    /// Long serial number.
    pub const RETURN_LONG_SERIAL_NUMBER: u8 = 0x55;
    /// Revelation II LEDs (length-prefixed).
    pub const SET_LEDS: u8 = 0x60;
    /// Pegasus developer key (length-prefixed).
    pub const PEGASUS_KEY: u8 = 0x63;
    /// A clock command follows (length-prefixed).
    pub const CLOCK_MESSAGE: u8 = 0x2B;
}

/// Clock subcommand bytes.
pub mod clock_sub {
    /// XL 7-segment display.
    pub const DISPLAY: u8 = 0x01;
    /// Icons.
    pub const ICONS: u8 = 0x02;
    /// End the display message.
    pub const END: u8 = 0x03;
    /// Button query.
    pub const BUTTON: u8 = 0x08;
    /// Version query.
    pub const VERSION: u8 = 0x09;
    /// Set times and run.
    pub const SET_AND_RUN: u8 = 0x0A;
    /// Beep.
    pub const BEEP: u8 = 0x0B;
    /// DGT 3000 text.
    pub const ASCII: u8 = 0x0C;
    /// Revelation II text.
    pub const REV2_ASCII: u8 = 0x0D;
}

/// Set-and-run run flags (the last data byte).
pub mod run_flags {
    /// The left clock runs (counts).
    pub const LEFT_RUNS: u8 = 0x01;
    /// The right clock runs.
    pub const RIGHT_RUNS: u8 = 0x02;
    /// Both paused.
    pub const PAUSE: u8 = 0x04;
    /// The running side toggles when the lever moves.
    pub const TOGGLE_ON_LEVER: u8 = 0x08;
}

/// A single-board command.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Command {
    /// `0x40`: back to idle; cancels any update mode.
    Reset,
    /// `0x41`: send one BWTIME now.
    SendClock,
    /// `0x42`: send one board dump now.
    SendBoard,
    /// `0x43`: update mode with clock times at least once a second.
    SendUpdate,
    /// `0x44`: update mode without clock messages (and without clock acks).
    SendUpdateBoard,
    /// `0x4B`: update mode with clock times only when they change (the usual choice).
    SendUpdateNice,
    /// `0x45`: serial number.
    ReturnSerialNumber,
    /// `0x55`: long serial number.
    ReturnLongSerialNumber,
    /// `0x46`: bus address.
    ReturnBusAddress,
    /// `0x47`: trademark text.
    SendTrademark,
    /// `0x4D`: firmware version.
    SendVersion,
    /// `0x4C`: battery status.
    SendBatteryStatus,
    /// `0x49`: the EEPROM event dump (about 8 s at 9600 baud).
    SendEeMoves,
    /// `0x2B …`: a command for the clock, relayed by the board.
    Clock(ClockCommand),
}

/// A clock command (`2B size 03 sub data… 00`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum ClockCommand {
    /// `01`: the XL's 7-segment display.
    XlDisplay {
        /// Segment bits of characters A..F in display order ("1A:BC 1D:EF"); the encoder
        /// sends them in the wire order C, B, A, F, E, D.
        segments: [u8; 6],
        /// Dots, colons and "1"s.
        icons: u8,
        /// `03` beeps, `01` (or PicoChess's `00`) does not.
        beep: u8,
    },
    /// `02`: clock icons.
    Icons {
        /// i0: left icons (TIME, FISCH, DELAY, HGLASS, UPCNT, BYO, END).
        left: u8,
        /// i1: right icons.
        right: u8,
        /// i2: left period and flag.
        left_period: u8,
        /// i3: right period and flag.
        right_period: u8,
        /// sp: special icons and flags.
        special: u8,
    },
    /// `03`: end the message; the clock shows times again.
    End,
    /// `08`: ask for the button state.
    Button,
    /// `09`: ask for the clock's version (also detects whether a clock is attached).
    Version,
    /// `0A`: set both times and the run state. Times are plain binary, not BCD.
    SetAndRun {
        /// Left time.
        left: ClockTime,
        /// Left counts up (bit 4 of the hours byte; XL firmware after 1.14).
        left_counts_up: bool,
        /// Right time.
        right: ClockTime,
        /// Right counts up.
        right_counts_up: bool,
        /// [`run_flags`] bits.
        flags: u8,
    },
    /// `0B`: beep for `units` x 64 ms.
    Beep {
        /// Duration in units of 64 ms.
        units: u8,
    },
    /// `0C`: 8 characters of text on a DGT 3000.
    Ascii {
        /// ASCII text, space padded.
        text: [u8; 8],
        /// Beep value (implementations disagree on its encoding: kept raw).
        beep: u8,
    },
    /// `0D`: 11 characters of text on a Revelation II.
    Rev2Ascii {
        /// ASCII text, space padded.
        text: [u8; 11],
        /// Beep value, raw.
        beep: u8,
    },
}

/// The longest command on the wire (`2B 0F 03 0D` + 11 characters + beep + `00`).
pub const MAX_COMMAND_LEN: usize = 17;

impl ClockCommand {
    /// Sets both clocks and starts the given side; the usual way to start a timed game.
    pub const fn set_and_run(left: ClockTime, right: ClockTime, flags: u8) -> ClockCommand {
        ClockCommand::SetAndRun { left, left_counts_up: false, right, right_counts_up: false, flags }
    }

    /// A DGT 3000 text, space padded or cut to 8 characters.
    pub fn ascii(text: &str, beep: u8) -> ClockCommand {
        let mut out = [b' '; 8];
        for (slot, b) in out.iter_mut().zip(text.bytes()) {
            *slot = b;
        }
        ClockCommand::Ascii { text: out, beep }
    }

    fn encode(&self, out: &mut [u8; MAX_COMMAND_LEN]) -> usize {
        let mut data = [0u8; 13];
        let (sub, n) = match *self {
            ClockCommand::XlDisplay { segments: s, icons, beep } => {
                data[..8].copy_from_slice(&[s[2], s[1], s[0], s[5], s[4], s[3], icons, beep]);
                (clock_sub::DISPLAY, 8)
            }
            ClockCommand::Icons { left, right, left_period, right_period, special } => {
                data[..5].copy_from_slice(&[left, right, left_period, right_period, special]);
                (clock_sub::ICONS, 8)
            }
            ClockCommand::End => (clock_sub::END, 0),
            ClockCommand::Button => (clock_sub::BUTTON, 0),
            ClockCommand::Version => (clock_sub::VERSION, 0),
            ClockCommand::SetAndRun { left, left_counts_up, right, right_counts_up, flags } => {
                let up = |b: bool| if b { 0x10 } else { 0 };
                data[..7].copy_from_slice(&[
                    left.hours | up(left_counts_up),
                    left.minutes,
                    left.seconds,
                    right.hours | up(right_counts_up),
                    right.minutes,
                    right.seconds,
                    flags,
                ]);
                (clock_sub::SET_AND_RUN, 7)
            }
            ClockCommand::Beep { units } => {
                data[0] = units;
                (clock_sub::BEEP, 1)
            }
            ClockCommand::Ascii { text, beep } => {
                data[..8].copy_from_slice(&text);
                data[8] = beep;
                (clock_sub::ASCII, 9)
            }
            ClockCommand::Rev2Ascii { text, beep } => {
                data[..11].copy_from_slice(&text);
                data[11] = beep;
                (clock_sub::REV2_ASCII, 12)
            }
        };
        out[0] = byte::CLOCK_MESSAGE;
        out[1] = (n + 3) as u8;
        out[2] = 0x03;
        out[3] = sub;
        out[4..4 + n].copy_from_slice(&data[..n]);
        out[4 + n] = 0x00;
        n + 5
    }

    fn valid(&self) -> bool {
        match *self {
            ClockCommand::SetAndRun { left, right, .. } => {
                ClockTime::new(left.hours, left.minutes, left.seconds).is_some()
                    && ClockTime::new(right.hours, right.minutes, right.seconds).is_some()
            }
            _ => true,
        }
    }

    /// Parses the bytes after `2B size` (`03 sub data… 00`).
    fn parse(body: &[u8]) -> Option<ClockCommand> {
        let [0x03, sub, ref data @ .., 0x00] = *body else { return None };
        let cmd = match (sub, data.len()) {
            (clock_sub::DISPLAY, 8) => ClockCommand::XlDisplay {
                segments: [data[2], data[1], data[0], data[5], data[4], data[3]],
                icons: data[6],
                beep: data[7],
            },
            (clock_sub::ICONS, 8) if data[5..] == [0, 0, 0] => ClockCommand::Icons {
                left: data[0],
                right: data[1],
                left_period: data[2],
                right_period: data[3],
                special: data[4],
            },
            (clock_sub::END, 0) => ClockCommand::End,
            (clock_sub::BUTTON, 0) => ClockCommand::Button,
            (clock_sub::VERSION, 0) => ClockCommand::Version,
            (clock_sub::SET_AND_RUN, 7) => ClockCommand::SetAndRun {
                left: ClockTime::new(data[0] & 0x0F, data[1], data[2])?,
                left_counts_up: data[0] & 0x10 != 0,
                right: ClockTime::new(data[3] & 0x0F, data[4], data[5])?,
                right_counts_up: data[3] & 0x10 != 0,
                flags: data[6],
            },
            (clock_sub::BEEP, 1) => ClockCommand::Beep { units: data[0] },
            (clock_sub::ASCII, 9) => {
                let mut text = [0u8; 8];
                text.copy_from_slice(&data[..8]);
                ClockCommand::Ascii { text, beep: data[8] }
            }
            (clock_sub::REV2_ASCII, 12) => {
                let mut text = [0u8; 11];
                text.copy_from_slice(&data[..11]);
                ClockCommand::Rev2Ascii { text, beep: data[11] }
            }
            _ => return None,
        };
        if data.iter().any(|&b| b & 0x80 != 0)
            || (sub == clock_sub::SET_AND_RUN && (data[0] & 0xE0 != 0 || data[3] & 0xE0 != 0))
        {
            return None;
        }
        Some(cmd)
    }
}

impl Command {
    /// Writes the command's bytes; returns how many.
    pub fn encode(&self, out: &mut [u8]) -> Result<usize, EncodeError> {
        let mut buf = [0u8; MAX_COMMAND_LEN];
        let n = match self {
            Command::Clock(c) => {
                if !c.valid() {
                    return Err(EncodeError::ByteOutOfRange);
                }
                c.encode(&mut buf)
            }
            simple => {
                buf[0] = simple.single_byte().ok_or(EncodeError::ByteOutOfRange)?;
                1
            }
        };
        if buf[..n].iter().any(|b| b & 0x80 != 0) {
            return Err(EncodeError::ByteOutOfRange);
        }
        let dst = out.get_mut(..n).ok_or(EncodeError::BufferTooSmall { needed: n })?;
        dst.copy_from_slice(&buf[..n]);
        Ok(n)
    }

    /// The command's byte, for the one-byte commands (`None` for clock messages).
    pub const fn single_byte(&self) -> Option<u8> {
        Some(match self {
            Command::Reset => byte::RESET,
            Command::SendClock => byte::SEND_CLOCK,
            Command::SendBoard => byte::SEND_BOARD,
            Command::SendUpdate => byte::SEND_UPDATE,
            Command::SendUpdateBoard => byte::SEND_UPDATE_BOARD,
            Command::SendUpdateNice => byte::SEND_UPDATE_NICE,
            Command::ReturnSerialNumber => byte::RETURN_SERIAL_NUMBER,
            Command::ReturnLongSerialNumber => byte::RETURN_LONG_SERIAL_NUMBER,
            Command::ReturnBusAddress => byte::RETURN_BUS_ADDRESS,
            Command::SendTrademark => byte::SEND_TRADEMARK,
            Command::SendVersion => byte::SEND_VERSION,
            Command::SendBatteryStatus => byte::SEND_BATTERY_STATUS,
            Command::SendEeMoves => byte::SEND_EE_MOVES,
            Command::Clock(_) => return None,
        })
    }

    fn from_byte(b: u8) -> Option<Command> {
        Some(match b {
            byte::RESET => Command::Reset,
            byte::SEND_CLOCK => Command::SendClock,
            byte::SEND_BOARD => Command::SendBoard,
            byte::SEND_UPDATE => Command::SendUpdate,
            byte::SEND_UPDATE_BOARD => Command::SendUpdateBoard,
            byte::SEND_UPDATE_NICE => Command::SendUpdateNice,
            byte::RETURN_SERIAL_NUMBER => Command::ReturnSerialNumber,
            byte::RETURN_LONG_SERIAL_NUMBER => Command::ReturnLongSerialNumber,
            byte::RETURN_BUS_ADDRESS => Command::ReturnBusAddress,
            byte::SEND_TRADEMARK => Command::SendTrademark,
            byte::SEND_VERSION => Command::SendVersion,
            byte::SEND_BATTERY_STATUS => Command::SendBatteryStatus,
            byte::SEND_EE_MOVES => Command::SendEeMoves,
            _ => return None,
        })
    }
}

/// What a board makes of the bytes the host sent.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum HostInput {
    /// A command this crate knows.
    Command(Command),
    /// A length-prefixed command the simulated boards do not implement (LEDs, Pegasus
    /// key), skipped whole so that its payload is not mistaken for commands.
    Skipped {
        /// The command byte.
        command: u8,
    },
    /// A clock message whose framing or content is wrong; the board ignores it.
    BadClockMessage,
    /// A byte of 0x80 or more: a bus-mode command byte.
    BusModeByte(u8),
    /// Any other byte; the firmware ignores it.
    Unknown(u8),
}

/// A streaming parser of host-to-board bytes, for code that plays the board's side.
#[derive(Clone, Copy, Debug, Default)]
pub struct CommandParser {
    /// The length-prefixed command in progress, if any.
    command: Option<u8>,
    /// Its announced length (bytes after the size byte), once read.
    size: Option<u8>,
    body: [u8; 16],
    have: u8,
}

impl CommandParser {
    /// A parser between commands.
    pub const fn new() -> CommandParser {
        CommandParser { command: None, size: None, body: [0; 16], have: 0 }
    }

    /// Takes one byte; returns the input it completed, if any.
    pub fn push(&mut self, b: u8) -> Option<HostInput> {
        let Some(command) = self.command else {
            return match b {
                byte::CLOCK_MESSAGE | byte::SET_LEDS | byte::PEGASUS_KEY => {
                    self.command = Some(b);
                    None
                }
                _ if b & 0x80 != 0 => Some(HostInput::BusModeByte(b)),
                _ => Some(Command::from_byte(b).map_or(HostInput::Unknown(b), HostInput::Command)),
            };
        };
        let Some(size) = self.size else {
            if b == 0 {
                *self = CommandParser::new();
                return Some(self.finish(command, &[]));
            }
            self.size = Some(b);
            self.have = 0;
            return None;
        };
        if usize::from(self.have) < self.body.len() {
            self.body[usize::from(self.have)] = b;
        }
        self.have += 1;
        if self.have < size {
            return None;
        }
        let len = usize::from(size).min(self.body.len());
        let body = self.body;
        *self = CommandParser::new();
        Some(self.finish(command, &body[..if usize::from(size) > 16 { 0 } else { len }]))
    }

    fn finish(&self, command: u8, body: &[u8]) -> HostInput {
        if command != byte::CLOCK_MESSAGE {
            return HostInput::Skipped { command };
        }
        match ClockCommand::parse(body) {
            Some(c) => HostInput::Command(Command::Clock(c)),
            None => HostInput::BadClockMessage,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn encode(c: Command) -> ([u8; MAX_COMMAND_LEN], usize) {
        let mut out = [0u8; MAX_COMMAND_LEN];
        let n = c.encode(&mut out).unwrap();
        (out, n)
    }

    #[test]
    fn clock_commands_have_the_fact_sheet_framing() {
        let (b, n) = encode(Command::Clock(ClockCommand::Version));
        assert_eq!(&b[..n], &[0x2B, 0x03, 0x03, 0x09, 0x00]);
        let (b, n) = encode(Command::Clock(ClockCommand::End));
        assert_eq!(&b[..n], &[0x2B, 0x03, 0x03, 0x03, 0x00]);
        let (b, n) = encode(Command::Clock(ClockCommand::Beep { units: 16 }));
        assert_eq!(&b[..n], &[0x2B, 0x04, 0x03, 0x0B, 0x10, 0x00]);
        let t = |h, m, s| ClockTime::new(h, m, s).unwrap();
        let (b, n) =
            encode(Command::Clock(ClockCommand::set_and_run(t(1, 30, 0), t(0, 5, 59), run_flags::LEFT_RUNS)));
        assert_eq!(&b[..n], &[0x2B, 0x0A, 0x03, 0x0A, 1, 30, 0, 0, 5, 59, 0x01, 0x00]);
        let (b, n) = encode(Command::Clock(ClockCommand::ascii("hello", 0)));
        assert_eq!(&b[..n], &[0x2B, 0x0C, 0x03, 0x0C, b'h', b'e', b'l', b'l', b'o', b' ', b' ', b' ', 0, 0]);
        let seg = ClockCommand::XlDisplay { segments: [1, 2, 3, 4, 5, 6], icons: 0x12, beep: 0x03 };
        let (b, n) = encode(Command::Clock(seg));
        assert_eq!(&b[..n], &[0x2B, 0x0B, 0x03, 0x01, 3, 2, 1, 6, 5, 4, 0x12, 0x03, 0x00]);
        let icons = ClockCommand::Icons { left: 1, right: 2, left_period: 3, right_period: 4, special: 5 };
        let (b, n) = encode(Command::Clock(icons));
        assert_eq!(&b[..n], &[0x2B, 0x0B, 0x03, 0x02, 1, 2, 3, 4, 5, 0, 0, 0, 0]);
        let (_, n) = encode(Command::Clock(ClockCommand::Rev2Ascii { text: [b'x'; 11], beep: 0 }));
        assert_eq!(n, 17);
    }

    #[test]
    fn commands_refuse_bytes_over_0x7f() {
        let mut out = [0u8; MAX_COMMAND_LEN];
        let bad = Command::Clock(ClockCommand::Ascii { text: *b"caf\xc3\xa9   ", beep: 0 });
        assert_eq!(bad.encode(&mut out), Err(EncodeError::ByteOutOfRange));
        let t = ClockTime { hours: 12, minutes: 0, seconds: 0 };
        let bad = Command::Clock(ClockCommand::set_and_run(t, t, 0));
        assert_eq!(bad.encode(&mut out), Err(EncodeError::ByteOutOfRange));
    }

    #[test]
    fn the_parser_skips_led_payloads_and_reads_clock_messages() {
        let mut p = CommandParser::new();
        let mut seen = [None; 4];
        let mut k = 0;
        for b in [0x60, 0x04, 0x01, 0x42, 0x43, 0x00, 0x4B, 0x2B, 0x03, 0x03, 0x09, 0x00, 0x99] {
            if let Some(x) = p.push(b) {
                seen[k] = Some(x);
                k += 1;
            }
        }
        assert_eq!(
            seen,
            [
                Some(HostInput::Skipped { command: 0x60 }),
                Some(HostInput::Command(Command::SendUpdateNice)),
                Some(HostInput::Command(Command::Clock(ClockCommand::Version))),
                Some(HostInput::BusModeByte(0x99)),
            ]
        );
    }
}
