//! Framing shared by the single-board decoder ([`crate::decoder`]) and the bus decoder
//! ([`crate::bus`]).
//!
//! Both directions of the board's output use one layout (fact sheet 3.1 and 2.4): a header
//! byte with bit 7 set (`0x80 | id`), two 7-bit length bytes giving the total length
//! (header included), then the body, every byte of which has bit 7 clear. A bus reply's
//! body is its address, its data and a checksum; a single-board message's body is its
//! payload. So resynchronisation is the same rule for both: a byte of 0x80 or more always
//! starts a new frame, even inside a body, where it aborts the frame in progress.
//!
//! [`Framer`] keeps that state machine, the noise count and the body buffer; the decoders
//! only give meaning to complete bodies (and the single-board one streams the EEPROM dump,
//! too large to buffer, through [`Framer::push`]'s `stream` choice).

/// What [`Framer::push`] completed.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Step<'a> {
    /// Bytes thrown away: garbage between frames, or a frame cut short by a new header
    /// or an impossible length. Reported when the next header arrives.
    Noise(usize),
    /// The length of a frame the caller chose to stream was read; its body bytes follow
    /// as [`Step::Streamed`].
    StreamStart {
        /// The frame's id (header byte without bit 7).
        id: u8,
        /// The total length announced.
        total: usize,
    },
    /// One body byte of a streamed frame; `last` on its final byte.
    Streamed {
        /// The byte.
        byte: u8,
        /// True for the frame's last byte.
        last: bool,
    },
    /// A buffered frame is complete.
    Frame {
        /// The frame's id.
        id: u8,
        /// Its body (total length minus the 3 header bytes).
        body: &'a [u8],
    },
    /// A well-framed frame too large for the buffer, skipped whole.
    Skipped {
        /// The frame's id.
        id: u8,
        /// Its total length.
        total: usize,
    },
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum State {
    /// Waiting for a header byte; counting noise.
    Idle,
    /// Got the id; waiting for the high length byte.
    LengthHigh,
    /// Waiting for the low length byte.
    LengthLow,
    /// Buffering a body.
    Body,
    /// Handing a body's bytes to the caller one by one.
    Stream,
    /// Counting down a body too large to buffer.
    Skip,
}

/// The framing state machine with an `N`-byte body buffer.
#[derive(Clone, Debug)]
pub(crate) struct Framer<const N: usize> {
    state: State,
    id: u8,
    length_high: u8,
    /// Body bytes the current frame announced.
    expected: usize,
    /// Body bytes received so far.
    received: usize,
    /// Bytes discarded since the last report.
    noise: usize,
    /// The smallest total length a frame may announce (3 for a single-board message, 6
    /// for a bus reply: header, address, checksum); a shorter one is noise.
    min_total: usize,
    buf: [u8; N],
}

impl<const N: usize> Framer<N> {
    /// A framer waiting for its first header.
    pub(crate) const fn new(min_total: usize) -> Self {
        Framer {
            state: State::Idle,
            id: 0,
            length_high: 0,
            expected: 0,
            received: 0,
            noise: 0,
            min_total,
            buf: [0; N],
        }
    }

    /// Noise not yet reported, when the framer is between frames.
    pub(crate) fn take_noise(&mut self) -> Option<usize> {
        if self.state == State::Idle && self.noise > 0 {
            Some(core::mem::take(&mut self.noise))
        } else {
            None
        }
    }

    /// Body bytes still due for the frame in progress (0 between frames); the length
    /// bytes, while they are awaited, count as 2.
    pub(crate) fn bytes_due(&self) -> usize {
        match self.state {
            State::Idle => 0,
            State::LengthHigh => 2,
            State::LengthLow => 1,
            State::Body | State::Stream | State::Skip => self.expected - self.received,
        }
    }

    /// Bytes of the frame in progress so far (header included), for abort accounting.
    fn in_progress(&self) -> usize {
        match self.state {
            State::Idle => 0,
            State::LengthHigh => 1,
            State::LengthLow => 2,
            State::Body | State::Stream | State::Skip => 3 + self.received,
        }
    }

    /// Takes one byte; `stream` says, once a frame's length is known, whether its body is
    /// handed over byte by byte instead of buffered.
    pub(crate) fn push(&mut self, byte: u8, stream: impl FnOnce(u8) -> bool) -> Option<Step<'_>> {
        if byte & 0x80 != 0 {
            // A header: whatever was in progress is abandoned.
            let dropped = self.noise + self.in_progress();
            self.noise = 0;
            self.id = byte & 0x7F;
            self.state = State::LengthHigh;
            return if dropped > 0 { Some(Step::Noise(dropped)) } else { None };
        }
        match self.state {
            State::Idle => {
                self.noise += 1;
                None
            }
            State::LengthHigh => {
                self.length_high = byte;
                self.state = State::LengthLow;
                None
            }
            State::LengthLow => {
                let total = (usize::from(self.length_high) << 7) | usize::from(byte);
                if total < self.min_total {
                    self.noise += 3;
                    self.state = State::Idle;
                    return None;
                }
                self.expected = total - 3;
                self.received = 0;
                if stream(self.id) {
                    self.state = if self.expected == 0 { State::Idle } else { State::Stream };
                    return Some(Step::StreamStart { id: self.id, total });
                }
                if self.expected > N {
                    self.state = State::Skip;
                    return None;
                }
                self.state = State::Body;
                if self.expected == 0 {
                    return Some(self.finish());
                }
                None
            }
            State::Body => {
                self.buf[self.received] = byte;
                self.received += 1;
                if self.received == self.expected { Some(self.finish()) } else { None }
            }
            State::Stream => {
                self.received += 1;
                let last = self.received == self.expected;
                if last {
                    self.state = State::Idle;
                }
                Some(Step::Streamed { byte, last })
            }
            State::Skip => {
                self.received += 1;
                if self.received == self.expected {
                    self.state = State::Idle;
                    return Some(Step::Skipped { id: self.id, total: self.expected + 3 });
                }
                None
            }
        }
    }

    fn finish(&mut self) -> Step<'_> {
        self.state = State::Idle;
        Step::Frame { id: self.id, body: &self.buf[..self.expected] }
    }

    /// Copies the clean run at the start of `bytes` into a body being buffered, all but
    /// the byte that would complete it (which goes through [`Framer::push`], so that a
    /// frame is completed in one place); returns how many bytes it took (0 when none).
    pub(crate) fn bulk(&mut self, bytes: &[u8]) -> usize {
        if self.state != State::Body {
            return 0;
        }
        let want = (self.expected - self.received).min(bytes.len());
        let run = bytes[..want].iter().position(|b| b & 0x80 != 0).unwrap_or(want);
        if run <= 1 {
            return 0;
        }
        let n = run - 1;
        self.buf[self.received..self.received + n].copy_from_slice(&bytes[..n]);
        self.received += n;
        n
    }
}
