//! [`App`]: one turn of the relay box's main loop, over any two UARTs: what the board and
//! the host sent goes into the [`Device`], what is due runs, and what the device wants
//! written goes out as fast as each UART takes it, never blocking on one.
//!
//! Plain code over `embedded-io`'s traits, so the same loop runs on every board support
//! and in host unit tests (below).

use alloc::boxed::Box;
use alloc::collections::VecDeque;

use dgt_bridge::{Device, DeviceConfig, PlatformFigures};
use embedded_io::{Read, ReadReady, Write, WriteReady};

use crate::ReadArrivals;

/// Bytes read from a UART at a time.
const CHUNK: usize = 64;

/// What the loop counts besides what the device counts.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct UartErrors {
    /// Reads or writes on the board's UART that failed (an overrun, a framing error).
    pub board: u32,
    /// Reads or writes on the host's UART that failed.
    pub host: u32,
}

/// Where [`App::trace_to`] writes: every call the loop makes into the [`Device`], as text
/// lines, so that a run can be replayed exactly off the device (`dgt_e2e_tests::firmware::
/// replay_trace`):
///
/// - `i MS`: the device started at `MS`;
/// - `b MS HEX`: bytes from the board, handed over as arrived at `MS`;
/// - `p MS`: the device's deadlines run at `MS`;
/// - `h MS HEX`: bytes from the host at `MS`;
/// - `w MS HEX`: bytes written to the board at `MS` (for reading; not replayed);
/// - `l MS TOOK`: the turn begun at `MS` took `TOOK` ms (only long ones; for reading).
struct Trace(Box<dyn core::fmt::Write>);

impl core::fmt::Debug for Trace {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.write_str("Trace")
    }
}

impl Trace {
    fn line(&mut self, kind: char, at: u64, bytes: &[u8]) {
        let _ = write!(self.0, "{kind} {at}");
        if !bytes.is_empty() {
            let _ = self.0.write_char(' ');
            for b in bytes {
                let _ = write!(self.0, "{b:02x}");
            }
        }
        let _ = self.0.write_char('\n');
    }
}

/// The relay box's main loop over a board UART `B` and a host UART `H`.
#[derive(Debug)]
pub struct App<B, H> {
    device: Device,
    board: B,
    host: H,
    /// Bytes for the board its UART has not taken yet.
    board_tx: VecDeque<u8>,
    errors: UartErrors,
    /// The device's time so far: what it was last given (never goes back).
    device_ms: u64,
    trace: Option<Trace>,
}

impl<B, H> App<B, H>
where
    B: ReadArrivals + ReadReady + Write + WriteReady,
    H: Read + ReadReady + Write + WriteReady,
{
    /// The box started at `now`: the board's handshake and the greeting to the host are
    /// queued.
    pub fn new(now: u64, config: DeviceConfig, board: B, host: H) -> App<B, H> {
        App {
            device: Device::new(now, config),
            board,
            host,
            board_tx: VecDeque::new(),
            errors: UartErrors::default(),
            device_ms: now,
            trace: None,
        }
    }

    /// Writes every call into the device to `sink` from now on (see [`Trace`]'s lines),
    /// beginning with the device's start.
    pub fn trace_to(&mut self, sink: Box<dyn core::fmt::Write>) {
        let mut trace = Trace(sink);
        trace.line('i', self.device_ms, &[]);
        self.trace = Some(trace);
    }

    /// Notes in the trace that the turn begun at `at` took `took` ms.
    pub fn trace_turn(&mut self, at: u64, took: u64) {
        if let Some(t) = &mut self.trace {
            let _ = writeln!(t.0, "l {at} {took}");
        }
    }

    fn note(&mut self, kind: char, at: u64, bytes: &[u8]) {
        if let Some(t) = &mut self.trace {
            t.line(kind, at, bytes);
        }
    }

    /// The device, for queries.
    pub fn device(&self) -> &Device {
        &self.device
    }

    /// The UARTs' failures so far.
    pub fn errors(&self) -> UartErrors {
        self.errors
    }

    /// The platform's memory figures, for the next status to the host.
    pub fn set_memory(&mut self, memory: PlatformFigures) {
        self.device.set_memory(memory);
    }

    /// Runs the device's deadlines up to `at` in order, each at its own time, and moves
    /// the device's time to `at`.
    fn poll_until(&mut self, at: u64) {
        loop {
            let due = self.device.next_deadline().max(self.device_ms);
            if due > at {
                break;
            }
            self.note('p', due, &[]);
            self.device.poll(due);
            self.device_ms = due;
            if self.device.next_deadline() <= due {
                // Not moved on by the poll: what is left is due now, and runs at `at`.
                break;
            }
        }
        self.device_ms = at;
    }

    /// When [`App::step`] has something to do without new bytes.
    pub fn next_deadline(&self) -> u64 {
        self.device.next_deadline()
    }

    /// True when nothing waits to be written: the loop may sleep until an interrupt (a
    /// byte, the millisecond tick).
    pub fn is_idle(&self) -> bool {
        self.board_tx.is_empty() && self.device.bridge_output().is_empty()
    }

    /// One turn at `now`: reads, deadlines, writes. The board's bytes go in with the time
    /// they arrived (see [`ReadArrivals`]), each after the deadlines due before it.
    pub fn step(&mut self, now: u64) {
        let mut buf = [0u8; CHUNK];
        while self.board.read_ready().unwrap_or(false) {
            match self.board.read_arrived(&mut buf) {
                Ok((0, _)) => break,
                Ok((n, arrived)) => {
                    let at = arrived.unwrap_or(now).clamp(self.device_ms, now.max(self.device_ms));
                    self.poll_until(at);
                    self.note('b', at, &buf[..n]);
                    self.device.on_board_bytes(at, &buf[..n]);
                }
                Err(_) => {
                    self.errors.board += 1;
                    break;
                }
            }
        }
        // The deadlines due between the last byte and now, each at its own time.
        self.poll_until(now.max(self.device_ms));
        while self.host.read_ready().unwrap_or(false) {
            match self.host.read(&mut buf) {
                Ok(0) => break,
                Ok(n) => {
                    self.note('h', now, &buf[..n]);
                    self.device.on_bridge_bytes(now, &buf[..n]);
                }
                Err(_) => {
                    self.errors.host += 1;
                    break;
                }
            }
        }
        if now >= self.device.next_deadline() {
            self.note('p', now, &[]);
            self.device.poll(now);
        }
        self.board_tx.extend(self.device.take_board_output());
        while !self.board_tx.is_empty() && self.board.write_ready().unwrap_or(false) {
            let (front, _) = self.board_tx.as_slices();
            match self.board.write(front) {
                Ok(n) => {
                    if let Some(t) = &mut self.trace {
                        t.line('w', now, &front[..n]);
                    }
                    self.board_tx.drain(..n);
                }
                Err(_) => {
                    self.errors.board += 1;
                    break;
                }
            }
        }
        while !self.device.bridge_output().is_empty() && self.host.write_ready().unwrap_or(false) {
            match self.host.write(self.device.bridge_output()) {
                Ok(n) => self.device.bridge_written(n),
                Err(_) => {
                    self.errors.host += 1;
                    break;
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    extern crate std;

    use std::string::String;
    use std::vec::Vec;

    use super::*;
    use dgt_bridge::wire::Record;
    use dgt_bridge::{Down, FrameDecoder, Up};
    use dgt_protocol::Message;
    use embedded_io::{ErrorKind, ErrorType};

    /// A UART in memory: what the far end sent, what was written, and how many bytes it
    /// takes per write (0: none now).
    #[derive(Debug, Default)]
    struct FakeUart {
        rx: VecDeque<u8>,
        /// When the bytes of `rx` arrived: so many bytes at such a millisecond, in order
        /// (bytes beyond them: not known).
        arrivals: VecDeque<(usize, u64)>,
        tx: Vec<u8>,
        takes: Option<usize>,
        fail_reads: bool,
    }

    #[derive(Debug)]
    struct Broken;

    impl core::fmt::Display for Broken {
        fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
            f.write_str("a UART error")
        }
    }

    impl core::error::Error for Broken {}

    impl embedded_io::Error for Broken {
        fn kind(&self) -> ErrorKind {
            ErrorKind::Other
        }
    }

    impl ErrorType for FakeUart {
        type Error = Broken;
    }

    impl ReadReady for FakeUart {
        fn read_ready(&mut self) -> Result<bool, Broken> {
            Ok(!self.rx.is_empty())
        }
    }

    impl Read for FakeUart {
        fn read(&mut self, buf: &mut [u8]) -> Result<usize, Broken> {
            if self.fail_reads {
                self.fail_reads = false;
                return Err(Broken);
            }
            let n = buf.len().min(self.rx.len());
            for (b, v) in buf.iter_mut().zip(self.rx.drain(..n)) {
                *b = v;
            }
            Ok(n)
        }
    }

    impl ReadArrivals for FakeUart {
        fn read_arrived(&mut self, buf: &mut [u8]) -> Result<(usize, Option<u64>), Broken> {
            let Some(&(count, at)) = self.arrivals.front() else {
                let n = self.read(buf)?;
                return Ok((n, None));
            };
            let want = count.min(buf.len());
            let n = self.read(&mut buf[..want])?;
            if n == count {
                self.arrivals.pop_front();
            } else if let Some(front) = self.arrivals.front_mut() {
                front.0 -= n;
            }
            Ok((n, Some(at)))
        }
    }

    impl WriteReady for FakeUart {
        fn write_ready(&mut self) -> Result<bool, Broken> {
            Ok(self.takes != Some(0))
        }
    }

    impl Write for FakeUart {
        fn write(&mut self, buf: &[u8]) -> Result<usize, Broken> {
            let n = self.takes.map_or(buf.len(), |t| t.min(buf.len()));
            self.tx.extend_from_slice(&buf[..n]);
            Ok(n)
        }

        fn flush(&mut self) -> Result<(), Broken> {
            Ok(())
        }
    }

    fn app() -> App<FakeUart, FakeUart> {
        App::new(0, DeviceConfig::new("test 0", "fake"), FakeUart::default(), FakeUart::default())
    }

    fn ups(bytes: &[u8]) -> Vec<Up> {
        let mut out = Vec::new();
        FrameDecoder::new().feed(bytes, |f: Result<Up, _>| out.extend(f.ok()));
        out
    }

    fn encode(m: &Message<'_>) -> Vec<u8> {
        let mut out = std::vec![0u8; m.encoded_len()];
        let n = m.encode(&mut out).expect("encodable");
        out.truncate(n);
        out
    }

    #[test]
    fn at_boot_the_host_is_greeted_and_the_board_reset() {
        let mut a = app();
        a.step(0);
        assert!(
            matches!(ups(&a.host.tx)[..], [Up::Hello(ref h)] if h.platform == "fake" && h.board.is_none())
        );
        assert_eq!(a.board.tx.first(), Some(&0x40), "the reset starts the handshake");
        assert!(a.is_idle());
    }

    #[test]
    fn a_board_that_answers_is_told_to_the_host_by_its_serial_number() {
        let mut a = app();
        a.step(0);
        a.board.rx.extend(encode(&Message::Version { major: 3, minor: 1 }));
        a.board.rx.extend(encode(&Message::SerialNumber(b"24518")));
        a.step(5);
        let records: Vec<Record> = ups(&a.host.tx)
            .into_iter()
            .filter_map(|u| match u {
                Up::Record { record, .. } => Some(record),
                _ => None,
            })
            .collect();
        assert_eq!(records.first(), Some(&Record::Board { serial: "24518".into() }));
        assert!(records.iter().any(|r| matches!(r, Record::Link(_))));
    }

    #[test]
    fn bytes_read_late_go_in_at_the_time_they_arrived_after_the_deadlines_before_them() {
        let mut a = app();
        a.step(0);
        let version = encode(&Message::Version { major: 3, minor: 1 });
        let serial = encode(&Message::SerialNumber(b"24518"));
        a.board.arrivals.extend([(version.len(), 600), (serial.len(), 1_700)]);
        a.board.rx.extend(version);
        a.board.rx.extend(serial);
        // A turn that came late (the loop was busy): the status due at 1,000 ms goes out
        // before the serial number, which arrived at 1,700; the one due at 2,000 after it.
        a.step(2_500);
        let order: Vec<String> = ups(&a.host.tx)
            .into_iter()
            .filter_map(|u| match u {
                Up::Status(s) => Some(std::format!("status {}", s.uptime_ms)),
                Up::Record { record: Record::Board { serial }, .. } => Some(std::format!("board {serial}")),
                _ => None,
            })
            .collect();
        assert_eq!(order, ["status 1000", "board 24518", "status 2000"]);
    }

    /// A trace sink the test reads back.
    #[derive(Clone, Default)]
    struct Shared(std::rc::Rc<core::cell::RefCell<String>>);

    impl core::fmt::Write for Shared {
        fn write_str(&mut self, s: &str) -> core::fmt::Result {
            self.0.borrow_mut().push_str(s);
            Ok(())
        }
    }

    #[test]
    fn a_traced_loop_writes_every_call_into_the_device_with_its_time_and_bytes() {
        let mut a = app();
        let trace = Shared::default();
        a.trace_to(Box::new(trace.clone()));
        a.step(0);
        let version = encode(&Message::Version { major: 3, minor: 1 });
        a.board.arrivals.push_back((version.len(), 7));
        a.board.rx.extend(version.iter().copied());
        a.host.rx.extend([0x00]);
        a.step(1_200);
        let text = trace.0.borrow().clone();
        let lines: Vec<&str> = text.lines().collect();
        let hex: String = version.iter().map(|b| std::format!("{b:02x}")).collect();
        assert_eq!(lines.first(), Some(&"i 0"));
        let board = lines.iter().position(|l| *l == std::format!("b 7 {hex}")).expect("the board's bytes");
        let status = lines.iter().position(|l| *l == "p 1000").expect("the status due at 1,000 ms");
        assert!(board < status, "in the order the device got them: {lines:?}");
        assert!(lines.contains(&"h 1200 00"), "{lines:?}");
        assert!(lines.iter().any(|l| l.starts_with("w 0 40")), "the reset written to the board: {lines:?}");
    }

    #[test]
    fn a_slow_uart_gets_every_byte_in_order_without_blocking_the_loop() {
        let mut fast = app();
        fast.step(0);
        let mut slow = app();
        slow.host.takes = Some(0);
        slow.step(0);
        assert!(slow.host.tx.is_empty() && !slow.is_idle(), "nothing taken: the bytes wait");
        slow.host.takes = Some(3);
        for t in 1..200 {
            slow.step(t);
            if slow.is_idle() {
                break;
            }
        }
        assert_eq!(ups(&slow.host.tx), ups(&fast.host.tx));
        assert!(slow.host.tx.len() > 3);
    }

    #[test]
    fn garbage_from_the_host_is_counted_and_a_failed_read_too() {
        let mut a = app();
        a.step(0);
        a.host.rx.extend([0x17, 0x00, 0x55, 0x66, 0x00]);
        a.step(1);
        let mut hello = Vec::new();
        dgt_bridge::frame::encode(&Down::Hello { host: "test".into() }, &mut hello).expect("frame");
        a.host.rx.extend(hello);
        a.host.tx.clear();
        a.step(2);
        assert!(matches!(ups(&a.host.tx)[..], [Up::Hello(_)]), "a greeting after garbage is answered");
        let s = a.device().status(3);
        assert_eq!((s.bad_frames, s.frames), (2, 1));
        a.host.fail_reads = true;
        a.host.rx.push_back(0);
        a.step(4);
        assert_eq!(a.errors().host, 1);
    }
}
