//! BWTIME (`0x8D`): the one message that carries either clock times or a clock ack.
//!
//! Both are kept as their seven raw payload bytes, with typed accessors on top, so that
//! bits whose meaning the sources dispute (status D3/D4, ack byte 9) are never lost and
//! every message re-encodes to exactly the bytes it came from.

/// A clock reading: hours 0..=9, minutes and seconds 0..=59.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Default)]
pub struct ClockTime {
    /// 0..=9 (the display has one hour digit).
    pub hours: u8,
    /// 0..=59.
    pub minutes: u8,
    /// 0..=59.
    pub seconds: u8,
}

impl ClockTime {
    /// A validated time; `None` when any field is out of the clock's range.
    pub const fn new(hours: u8, minutes: u8, seconds: u8) -> Option<ClockTime> {
        if hours <= 9 && minutes <= 59 && seconds <= 59 {
            Some(ClockTime { hours, minutes, seconds })
        } else {
            None
        }
    }

    /// The time a clock can show for a number of seconds (capped at 9:59:59).
    pub const fn from_seconds(total: u32) -> ClockTime {
        let total = if total > 35_999 { 35_999 } else { total };
        ClockTime {
            hours: (total / 3600) as u8,
            minutes: ((total / 60) % 60) as u8,
            seconds: (total % 60) as u8,
        }
    }

    /// Whole seconds.
    pub const fn total_seconds(self) -> u32 {
        self.hours as u32 * 3600 + self.minutes as u32 * 60 + self.seconds as u32
    }
}

/// Decodes one BCD byte (0x00..=0x59) into 0..=59.
const fn from_bcd(byte: u8) -> Option<u8> {
    let tens = byte >> 4;
    let units = byte & 0x0F;
    if tens <= 5 && units <= 9 { Some(tens * 10 + units) } else { None }
}

const fn to_bcd(value: u8) -> u8 {
    ((value / 10) << 4) | (value % 10)
}

/// Flag bits carried in a side's hours byte (D4..D6).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Default)]
pub struct SideFlags {
    /// D4: the flag fell and the clock is blocked at zero ("final flag").
    pub final_flag: bool,
    /// D5: a time-per-move mode (Fischer or Bronstein) is on.
    pub time_per_move: bool,
    /// D6: the flag fell and is shown; the clock may still run (next period).
    pub flag: bool,
}

impl SideFlags {
    const fn bits(self) -> u8 {
        (self.final_flag as u8) << 4 | (self.time_per_move as u8) << 5 | (self.flag as u8) << 6
    }

    const fn from_bits(byte: u8) -> SideFlags {
        SideFlags { final_flag: byte & 0x10 != 0, time_per_move: byte & 0x20 != 0, flag: byte & 0x40 != 0 }
    }
}

/// One side of the clock as shown on its display.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Default)]
pub struct SideReading {
    /// The time shown.
    pub time: ClockTime,
    /// The flag bits of that side.
    pub flags: SideFlags,
}

impl SideReading {
    const fn encode(self) -> [u8; 3] {
        [self.time.hours | self.flags.bits(), to_bcd(self.time.minutes), to_bcd(self.time.seconds)]
    }

    const fn decode(bytes: [u8; 3]) -> Option<SideReading> {
        // D7 must be clear on the wire; the hours nibble is binary 0..=9.
        let hours = bytes[0] & 0x0F;
        let (Some(minutes), Some(seconds)) = (from_bcd(bytes[1]), from_bcd(bytes[2])) else {
            return None;
        };
        match ClockTime::new(hours, minutes, seconds) {
            Some(time) => Some(SideReading { time, flags: SideFlags::from_bits(bytes[0]) }),
            None => None,
        }
    }
}

/// The BWTIME status byte, raw, with the bits every source agrees on named.
///
/// D3 and D4 ("whose turn") are contradicted between DGT's own documents and real
/// captures (fact sheet 5.3): they are exposed raw only. Use [`ClockStatus::running`] and
/// [`ClockStatus::right_high`] to know which side runs.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Default)]
pub struct ClockStatus(pub u8);

impl ClockStatus {
    /// D0: the clock is running (not stopped with Start/Stop).
    pub const fn running(self) -> bool {
        self.0 & 0x01 != 0
    }
    /// D1: the lever's right side is up; the right clock is the one that runs.
    pub const fn right_high(self) -> bool {
        self.0 & 0x02 != 0
    }
    /// D2: the clock shows its battery-low indicator.
    pub const fn battery_low(self) -> bool {
        self.0 & 0x04 != 0
    }
    /// D3, raw ("left's turn" in real captures, "right's turn" in DGT's 2015 header).
    pub const fn d3(self) -> bool {
        self.0 & 0x08 != 0
    }
    /// D4, raw (the opposite of D3 in every source).
    pub const fn d4(self) -> bool {
        self.0 & 0x10 != 0
    }
    /// D5: no clock is connected and the times are invalid.
    pub const fn no_clock(self) -> bool {
        self.0 & 0x20 != 0
    }
    /// D6 (a clock leaves it 0): the reading was not read from the clock whole but rebuilt
    /// from a press in a board's event log (DGT's bus mode): only the display of the side
    /// whose lever is down was measured, at the press; the other display is a guess.
    pub const fn rebuilt(self) -> bool {
        self.0 & Self::REBUILT != 0
    }
    /// The bit of [`ClockStatus::rebuilt`].
    pub const REBUILT: u8 = 0x40;
    /// True when `side`'s display is a measurement: always, but in a
    /// [rebuilt](ClockStatus::rebuilt) reading only the side whose lever is down.
    pub const fn measured(self, side: ClockSide) -> bool {
        if !self.rebuilt() {
            return true;
        }
        let right_down = !self.right_high();
        matches!(side, ClockSide::Right) == right_down
    }
}

/// Which display of the clock, seen from its front.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum ClockSide {
    /// The left display (bytes 6..8 of BWTIME).
    Left,
    /// The right display (bytes 3..5 of BWTIME).
    Right,
}

impl ClockSide {
    /// The other side.
    pub const fn other(self) -> ClockSide {
        match self {
            ClockSide::Left => ClockSide::Right,
            ClockSide::Right => ClockSide::Left,
        }
    }
}

/// A BWTIME carrying clock times: both displays and the status byte.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Default)]
pub struct ClockTimes {
    /// The right display (payload bytes 0..3).
    pub right: SideReading,
    /// The left display (payload bytes 3..6).
    pub left: SideReading,
    /// The status byte (payload byte 6).
    pub status: ClockStatus,
}

impl ClockTimes {
    /// The reading of one side.
    pub const fn side(&self, side: ClockSide) -> SideReading {
        match side {
            ClockSide::Left => self.left,
            ClockSide::Right => self.right,
        }
    }

    /// The side whose clock runs, from the reliable bits D0 and D1; `None` when stopped.
    pub const fn running_side(&self) -> Option<ClockSide> {
        if !self.status.running() {
            None
        } else if self.status.right_high() {
            Some(ClockSide::Right)
        } else {
            Some(ClockSide::Left)
        }
    }

    /// The side whose lever is up (the side that runs when the clock is started).
    pub const fn high_side(&self) -> ClockSide {
        if self.status.right_high() { ClockSide::Right } else { ClockSide::Left }
    }

    /// The seven payload bytes.
    pub const fn to_payload(&self) -> [u8; 7] {
        let r = self.right.encode();
        let l = self.left.encode();
        [r[0], r[1], r[2], l[0], l[1], l[2], self.status.0]
    }
}

/// The keys of a DGT 3000 / XL clock, as a bit set (inferred from PicoChess's table:
/// ack2 = 0x01 | keys).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Default)]
pub struct ClockKeys(pub u8);

impl ClockKeys {
    /// The "back" (left-most) key.
    pub const BACK: u8 = 0x04;
    /// The "plus" key.
    pub const PLUS: u8 = 0x08;
    /// The "run/pause" key.
    pub const RUN: u8 = 0x10;
    /// The "minus" key.
    pub const MINUS: u8 = 0x20;
    /// The "OK/forward" key.
    pub const OK: u8 = 0x40;

    /// True when the given key bit is pressed.
    pub const fn contains(self, key: u8) -> bool {
        self.0 & key != 0
    }
}

/// What a clock ack says, from ack1 (and ack2/ack3 where they carry data).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum AckKind {
    /// ack1 = 0x01: reply to an XL display command.
    Display,
    /// ack1 = 0x02: reply to an icons command.
    Icons,
    /// ack1 = 0x03: reply to an end command.
    End,
    /// ack1 = 0x08: reply to a button query (carries no button data).
    Button,
    /// ack1 = 0x09: reply to a version query.
    Version {
        /// ack2 high nibble (2 = DGT 3000).
        main: u8,
        /// ack2 low nibble.
        sub: u8,
    },
    /// ack1 = 0x0A: reply to set-and-run.
    SetAndRun,
    /// ack1 = 0x0B: reply to a beep command.
    Beep,
    /// ack1 = 0x0C: reply to a DGT 3000 text command.
    Ascii,
    /// ack1 = 0x0D: reply to a Revelation II text command.
    Rev2Ascii,
    /// ack1 = 0x81 (auto): the clock is ready.
    Ready,
    /// ack1 = 0x88 (auto): a key was pressed.
    ButtonPressed {
        /// The keys held, decoded from ack2.
        keys: ClockKeys,
        /// ack3: 0x31 back, 0x32 plus, 0x33 run, 0x34 minus, 0x35 OK.
        key_code: u8,
    },
    /// ack1 = 0x8A (auto): the clock reports its mode ("mode 23?" in DGT's header).
    Mode {
        /// ack3, which may hold the mode.
        mode: u8,
    },
    /// ack1 = 0x90 (auto): "not in mode 23?" in DGT's header.
    NotInMode23,
    /// Any other ack1 value, kept raw.
    Other(u8),
}

/// A BWTIME carrying a clock ack, kept as its raw payload.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct ClockAck {
    payload: [u8; 7],
}

impl ClockAck {
    /// The ack0 value of a normal ack.
    pub const ACK_OK: u8 = 0x10;

    /// Builds the wire form of an ack from its four ack bytes (as DGT's firmware and the
    /// reference emulator do); byte 9 is set to zero.
    pub const fn from_ack_bytes(ack: [u8; 4]) -> ClockAck {
        let b3 = 0x0A | ((ack[2] & 0x80) >> 3) | ((ack[3] & 0x80) >> 2);
        let b6 = 0x0A | ((ack[0] & 0x80) >> 3) | ((ack[1] & 0x80) >> 2);
        ClockAck { payload: [b3, ack[0] & 0x7F, ack[1] & 0x7F, b6, ack[2] & 0x7F, ack[3] & 0x7F, 0] }
    }

    /// The four ack bytes rebuilt from the payload (fact sheet 5.5).
    pub const fn ack_bytes(&self) -> [u8; 4] {
        let p = &self.payload;
        [
            (p[1] & 0x7F) | ((p[3] & 0x10) << 3),
            (p[2] & 0x7F) | ((p[3] & 0x20) << 2),
            (p[4] & 0x7F) | ((p[0] & 0x10) << 3),
            (p[5] & 0x7F) | ((p[0] & 0x20) << 2),
        ]
    }

    /// The raw payload (byte 9 of the message is `payload()[6]`).
    pub const fn payload(&self) -> [u8; 7] {
        self.payload
    }

    /// False when ack0 reports an error (anything but 0x10, e.g. 0x40).
    pub const fn is_ok(&self) -> bool {
        self.ack_bytes()[0] == Self::ACK_OK
    }

    /// True for acks the clock generates by itself (ack1 bit 7), not replies to commands.
    pub const fn is_auto(&self) -> bool {
        self.ack_bytes()[1] & 0x80 != 0
    }

    /// The typed meaning of the ack.
    pub const fn kind(&self) -> AckKind {
        let [_, ack1, ack2, ack3] = self.ack_bytes();
        match ack1 {
            0x01 => AckKind::Display,
            0x02 => AckKind::Icons,
            0x03 => AckKind::End,
            0x08 => AckKind::Button,
            0x09 => AckKind::Version { main: ack2 >> 4, sub: ack2 & 0x0F },
            0x0A => AckKind::SetAndRun,
            0x0B => AckKind::Beep,
            0x0C => AckKind::Ascii,
            0x0D => AckKind::Rev2Ascii,
            0x81 => AckKind::Ready,
            0x88 => AckKind::ButtonPressed { keys: ClockKeys(ack2 & 0x7C), key_code: ack3 },
            0x8A => AckKind::Mode { mode: ack3 },
            0x90 => AckKind::NotInMode23,
            other => AckKind::Other(other),
        }
    }
}

/// What a BWTIME payload turned out to be.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Bwtime {
    /// Clock times.
    Times(ClockTimes),
    /// A clock ack (the low nibble of payload byte 0 or 3 is 0xA).
    Ack(ClockAck),
    /// Seven zero bytes: sent after clock commands by some firmware; carries nothing.
    Empty,
    /// Neither an ack nor a valid time (bad BCD, hours over 9, bit 7 set): kept raw.
    Invalid([u8; 7]),
}

impl Bwtime {
    /// Classifies a BWTIME payload (fact sheet 5.1).
    pub const fn from_payload(p: [u8; 7]) -> Bwtime {
        if (p[0] & 0x0F) == 0x0A || (p[3] & 0x0F) == 0x0A {
            return Bwtime::Ack(ClockAck { payload: p });
        }
        if p[0] == 0 && p[1] == 0 && p[2] == 0 && p[3] == 0 && p[4] == 0 && p[5] == 0 && p[6] == 0 {
            return Bwtime::Empty;
        }
        let mut i = 0;
        while i < 7 {
            if p[i] & 0x80 != 0 {
                return Bwtime::Invalid(p);
            }
            i += 1;
        }
        let right = SideReading::decode([p[0], p[1], p[2]]);
        let left = SideReading::decode([p[3], p[4], p[5]]);
        match (right, left) {
            (Some(right), Some(left)) => Bwtime::Times(ClockTimes { right, left, status: ClockStatus(p[6]) }),
            _ => Bwtime::Invalid(p),
        }
    }

    /// The seven payload bytes.
    pub const fn to_payload(&self) -> [u8; 7] {
        match self {
            Bwtime::Times(t) => t.to_payload(),
            Bwtime::Ack(a) => a.payload,
            Bwtime::Empty => [0; 7],
            Bwtime::Invalid(p) => *p,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn version_ack_matches_the_worked_example() {
        let ack = ClockAck::from_ack_bytes([0x10, 0x09, 0x20, 0x00]);
        assert_eq!(ack.payload(), [0x0A, 0x10, 0x09, 0x0A, 0x20, 0x00, 0x00]);
        assert_eq!(ack.kind(), AckKind::Version { main: 2, sub: 0 });
        assert!(ack.is_ok());
        assert!(!ack.is_auto());
    }

    #[test]
    fn ok_button_auto_ack_matches_the_worked_example() {
        let ack = ClockAck::from_ack_bytes([0x10, 0x88, 0x41, 0x35]);
        let p = ack.payload();
        assert_eq!(p[2], 0x08);
        assert_eq!(p[3], 0x2A);
        assert_eq!(p[5], 0x35);
        assert!(ack.is_auto());
        match Bwtime::from_payload(p) {
            Bwtime::Ack(a) => assert_eq!(
                a.kind(),
                AckKind::ButtonPressed { keys: ClockKeys(ClockKeys::OK), key_code: 0x35 }
            ),
            other => panic!("expected an ack, got {other:?}"),
        }
    }

    #[test]
    fn fischer_time_from_a_real_capture() {
        // `20 03 02`: 0:03:02 with the time-per-move bit; status 0x13 = running, right high.
        let p = [0x20, 0x03, 0x02, 0x20, 0x02, 0x59, 0x13];
        let Bwtime::Times(t) = Bwtime::from_payload(p) else { panic!("not times") };
        assert_eq!(t.right.time, ClockTime { hours: 0, minutes: 3, seconds: 2 });
        assert!(t.right.flags.time_per_move);
        assert_eq!(t.left.time.total_seconds(), 179);
        assert_eq!(t.running_side(), Some(ClockSide::Right));
        assert!(t.status.d4() && !t.status.d3());
        assert_eq!(t.to_payload(), p);
    }

    #[test]
    fn bad_bcd_and_all_zero_are_told_apart() {
        assert_eq!(Bwtime::from_payload([0; 7]), Bwtime::Empty);
        let bad = [0x00, 0x6A, 0x00, 0x00, 0x00, 0x00, 0x00];
        assert_eq!(Bwtime::from_payload(bad), Bwtime::Invalid(bad));
        let hours = [0x0B, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00];
        assert_eq!(Bwtime::from_payload(hours), Bwtime::Invalid(hours));
    }
}
