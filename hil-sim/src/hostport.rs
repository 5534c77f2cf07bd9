//! The host's end, for tests and tools: opens a board's path exactly as a serial port
//! (read/write, raw 9600 8N1), sends commands, and decodes what comes back with
//! `dgt_protocol::Decoder` into owned values.

#[cfg(unix)]
use std::fs::File;
#[cfg(unix)]
use std::io::{self, Read, Write};
#[cfg(unix)]
use std::os::fd::AsFd;
#[cfg(unix)]
use std::os::unix::fs::OpenOptionsExt;
#[cfg(unix)]
use std::path::Path;
#[cfg(unix)]
use std::time::{Duration, Instant};

#[cfg(unix)]
use dgt_protocol::{BusCommand, BusDecoded, BusDecoder, Command, Decoder};
use dgt_protocol::{Bwtime, ClockTimes, Decoded, EeEvent, Message};
#[cfg(unix)]
use nix::fcntl::OFlag;
#[cfg(unix)]
use nix::poll::{PollFd, PollFlags, PollTimeout, poll};

#[cfg(unix)]
use crate::pty::set_raw_9600;

/// One decoded thing from the board, owned.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Received {
    /// `0x86`: 64 raw piece codes.
    BoardDump([u8; 64]),
    /// `0x8E`: board index and raw piece byte.
    Field {
        /// Board index.
        index: u8,
        /// Raw piece byte.
        raw: u8,
    },
    /// `0x8D` with times.
    Times(ClockTimes),
    /// `0x8D` with an ack (ack0..ack3).
    Ack([u8; 4]),
    /// `0x8D` with anything else.
    OtherBwtime([u8; 7]),
    /// `0x91`.
    SerialNumber(Vec<u8>),
    /// `0xA2`.
    LongSerialNumber(Vec<u8>),
    /// `0x90`.
    BusAddress(u16),
    /// `0x92`.
    Trademark(Vec<u8>),
    /// `0x93`.
    Version(u8, u8),
    /// `0xA0` payload.
    Battery(Vec<u8>),
    /// The header of an EEPROM dump.
    EeMovesStart(u16),
    /// One EEPROM event.
    Ee(EeEvent),
    /// Bytes the decoder threw away.
    Noise(usize),
    /// Any other message: id and payload.
    Other(u8, Vec<u8>),
}

impl Received {
    /// Converts what the decoder produced.
    pub fn from_decoded(d: Decoded<'_>) -> Received {
        match d {
            Decoded::Message(m) => match m {
                Message::BoardDump(b) => Received::BoardDump(b.raw),
                Message::FieldUpdate(f) => Received::Field { index: f.square.index(), raw: f.raw },
                Message::Bwtime(Bwtime::Times(t)) => Received::Times(t),
                Message::Bwtime(Bwtime::Ack(a)) => Received::Ack(a.ack_bytes()),
                Message::Bwtime(other) => Received::OtherBwtime(other.to_payload()),
                Message::SerialNumber(s) => Received::SerialNumber(s.to_vec()),
                Message::LongSerialNumber(s) => Received::LongSerialNumber(s.to_vec()),
                Message::BusAddress(a) => Received::BusAddress(a),
                Message::Trademark(t) => Received::Trademark(t.to_vec()),
                Message::Version { major, minor } => Received::Version(major, minor),
                Message::Battery(b) => Received::Battery(b.payload.to_vec()),
                Message::Unknown { id, payload } => Received::Other(id, payload.to_vec()),
                other => Received::Other(other.id(), Vec::new()),
            },
            Decoded::EeMovesStart { total_len } => Received::EeMovesStart(total_len),
            Decoded::EeEvent(e) => Received::Ee(e),
            Decoded::Noise { len } => Received::Noise(len),
            Decoded::Skipped { id, .. } => Received::Other(id, Vec::new()),
        }
    }
}

/// A serial port opened on a simulated (or real) board's path (Unix: a pty or a tty).
#[cfg(unix)]
#[derive(Debug)]
pub struct HostPort {
    file: File,
    decoder: Decoder<256>,
    raw_log: Vec<u8>,
    keep_raw: bool,
    bus_decoder: Box<BusDecoder<8192>>,
}

/// One decoded thing from a chain in bus mode, owned.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum BusReceived {
    /// A reply with a good checksum.
    Reply {
        /// The board's address.
        address: u16,
        /// The reply's kind (header byte without bit 7).
        kind: u8,
        /// Its data.
        data: Vec<u8>,
    },
    /// A framed reply whose checksum failed (noise, or boards that answered at once).
    BadChecksum {
        /// The address as received.
        address: u16,
        /// The kind as received.
        kind: u8,
    },
    /// Bytes thrown away.
    Noise(usize),
}

impl BusReceived {
    #[cfg(unix)]
    fn from_decoded(d: BusDecoded<'_>) -> BusReceived {
        match d {
            BusDecoded::Reply(r) => {
                let mut data = vec![0u8; r.encoded_len()];
                let n = r.encode(&mut data).unwrap_or(0);
                let data = if n >= 6 { data[5..n - 1].to_vec() } else { Vec::new() };
                BusReceived::Reply { address: r.address, kind: r.kind(), data }
            }
            BusDecoded::BadChecksum { kind, address, .. } => BusReceived::BadChecksum { address, kind },
            BusDecoded::Noise { len } => BusReceived::Noise(len),
            BusDecoded::Skipped { total_len, .. } => BusReceived::Noise(usize::from(total_len)),
        }
    }
}

#[cfg(unix)]
impl HostPort {
    /// Opens `path` read/write, non-blocking, raw 9600 8N1.
    pub fn open(path: &Path) -> io::Result<HostPort> {
        let file = std::fs::OpenOptions::new()
            .read(true)
            .write(true)
            .custom_flags((OFlag::O_NOCTTY | OFlag::O_NONBLOCK).bits())
            .open(path)?;
        set_raw_9600(&file).map_err(io::Error::from)?;
        Ok(HostPort {
            file,
            decoder: Decoder::new(),
            raw_log: Vec::new(),
            keep_raw: false,
            bus_decoder: Box::new(BusDecoder::new()),
        })
    }

    /// Keeps every byte read, for [`HostPort::raw_log`].
    pub fn keep_raw(&mut self, keep: bool) {
        self.keep_raw = keep;
    }

    /// Every byte read so far (when [`HostPort::keep_raw`] is on).
    pub fn raw_log(&self) -> &[u8] {
        &self.raw_log
    }

    /// Sends raw bytes.
    pub fn send_bytes(&mut self, bytes: &[u8]) -> io::Result<()> {
        let deadline = Instant::now() + Duration::from_secs(2);
        let mut rest = bytes;
        while !rest.is_empty() {
            match self.file.write(rest) {
                Ok(n) => rest = &rest[n..],
                Err(e) if e.kind() == io::ErrorKind::WouldBlock && Instant::now() < deadline => {
                    std::thread::sleep(Duration::from_millis(1));
                }
                Err(e) => return Err(e),
            }
        }
        Ok(())
    }

    /// Sends one command.
    pub fn send(&mut self, command: Command) -> io::Result<()> {
        let mut buf = [0u8; dgt_protocol::command::MAX_COMMAND_LEN];
        let n = command.encode(&mut buf).map_err(|e| io::Error::new(io::ErrorKind::InvalidInput, e))?;
        self.send_bytes(&buf[..n])
    }

    /// Reads for `wait`, decoding everything that arrives. Returns early with an error when
    /// the board goes away (end of file or I/O error on the port).
    pub fn read_for(&mut self, wait: Duration) -> io::Result<Vec<Received>> {
        self.read_until(wait, |_| false)
    }

    /// Reads until `done` says so (it sees everything received so far) or `wait` passes.
    pub fn read_until(
        &mut self,
        wait: Duration,
        mut done: impl FnMut(&[Received]) -> bool,
    ) -> io::Result<Vec<Received>> {
        let mut out = Vec::new();
        let mut decoder = std::mem::take(&mut self.decoder);
        let r = self.read_raw(
            wait,
            |bytes, out: &mut Vec<Received>| {
                decoder.feed(bytes, |d| out.push(Received::from_decoded(d)));
                done(out)
            },
            &mut out,
        );
        self.decoder = decoder;
        r.map(|()| out)
    }

    /// Sends one bus command.
    pub fn send_bus(&mut self, command: BusCommand) -> io::Result<()> {
        let bytes = command.to_bytes().map_err(|e| io::Error::new(io::ErrorKind::InvalidInput, e))?;
        self.send_bytes(&bytes)
    }

    /// Reads bus replies until `done` says so (it sees everything received so far) or
    /// `wait` passes.
    pub fn read_bus_until(
        &mut self,
        wait: Duration,
        mut done: impl FnMut(&[BusReceived]) -> bool,
    ) -> io::Result<Vec<BusReceived>> {
        let mut out = Vec::new();
        let mut decoder = std::mem::take(&mut self.bus_decoder);
        let r = self.read_raw(
            wait,
            |bytes, out: &mut Vec<BusReceived>| {
                decoder.feed(bytes, |d| out.push(BusReceived::from_decoded(d)));
                done(out)
            },
            &mut out,
        );
        self.bus_decoder = decoder;
        r.map(|()| out)
    }

    /// Reads for `wait` or until `chunk` (given each chunk read and the output so far)
    /// returns true.
    fn read_raw<T>(
        &mut self,
        wait: Duration,
        mut chunk: impl FnMut(&[u8], &mut Vec<T>) -> bool,
        out: &mut Vec<T>,
    ) -> io::Result<()> {
        let deadline = Instant::now() + wait;
        let mut buf = [0u8; 4096];
        if chunk(&[], out) {
            return Ok(());
        }
        loop {
            let now = Instant::now();
            if now >= deadline {
                return Ok(());
            }
            let left = (deadline - now).as_millis().clamp(1, 100) as u16;
            let mut fds = [PollFd::new(self.file.as_fd(), PollFlags::POLLIN)];
            poll(&mut fds, PollTimeout::from(left)).map_err(io::Error::from)?;
            let revents = fds[0].revents().unwrap_or(PollFlags::empty());
            if revents.contains(PollFlags::POLLHUP) && !revents.contains(PollFlags::POLLIN) {
                return Err(io::Error::new(io::ErrorKind::UnexpectedEof, "the board went away"));
            }
            loop {
                match self.file.read(&mut buf) {
                    Ok(0) => return Err(io::Error::new(io::ErrorKind::UnexpectedEof, "the board went away")),
                    Ok(n) => {
                        if self.keep_raw {
                            self.raw_log.extend_from_slice(&buf[..n]);
                        }
                        if chunk(&buf[..n], out) {
                            return Ok(());
                        }
                    }
                    Err(e) if e.kind() == io::ErrorKind::WouldBlock => break,
                    Err(e) => return Err(e),
                }
            }
        }
    }

    /// Sends a command and reads until a message matching `want` arrives (or `wait`).
    pub fn query(
        &mut self,
        command: Command,
        wait: Duration,
        want: impl Fn(&Received) -> bool,
    ) -> io::Result<Vec<Received>> {
        self.send(command)?;
        self.read_until(wait, |got| got.iter().any(&want))
    }
}
