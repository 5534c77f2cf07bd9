//! QEMU's `mps2-an386`: Arm's MPS2 board with the AN386 image, a Cortex-M4F with CMSDK
//! peripherals at 25 MHz.
//!
//! - UART0 (`0x4000_4000`, RX interrupt 0): the DGT board, 9600 8N1.
//! - UART1 (`0x4000_5000`, RX interrupt 2): the host, 115200 8N1.
//! - UART2 (`0x4000_6000`): a console for the boot line and panics.
//! - SysTick at 1 kHz: the millisecond clock.
//!
//! A CMSDK UART holds one received byte; its RX interrupt moves each byte at once into a
//! queue ([`BOARD_RX_QUEUE`], [`HOST_RX_QUEUE`] bytes), so nothing is lost while the loop is busy (the tracker's
//! deepest search takes a while on a microcontroller). A full queue leaves the byte in the
//! UART and stops the interrupt until the loop has read: QEMU then holds the next bytes
//! back; a real UART overruns, which is counted ([`PlatformFigures::uart_lost`]). Writes go a
//! byte at a time while the UART is not full; they never wait. The interrupt also notes
//! when bytes arrived (a mark every [`MARK_MS`] at most), so that the loop hands bytes it
//! reads late to the session with their arrival time ([`crate::ReadArrivals`]).

use core::cell::{Cell, RefCell};
use core::convert::Infallible;

use cortex_m::interrupt::InterruptNumber;
use cortex_m::peripheral::syst::SystClkSource;
use cortex_m::peripheral::{NVIC, SYST};
use cortex_m_rt::exception;
use critical_section::Mutex;
use embedded_io::{ErrorType, Read, ReadReady, Write, WriteReady};
use heapless::Deque;

use crate::{Platform, PlatformFigures, ReadArrivals};

/// The system clock.
const SYSCLK_HZ: u32 = 25_000_000;
/// Received bytes the board's UART keeps until the loop reads them: two seconds at 9600
/// baud, longer than the tracker's deepest search takes.
pub const BOARD_RX_QUEUE: usize = 2048;
/// Received bytes the host's UART keeps (its frames are short: acknowledgements, actions).
pub const HOST_RX_QUEUE: usize = 512;

/// Arrival marks a queue keeps: bytes that arrive while all are in use take the newest
/// mark's time (a little early). 48 marks cover half a second of a continuous stream, and
/// far longer of a board's reports, which come in short bursts.
const MARKS: usize = 48;
/// The shortest time between two arrival marks (ms): bytes within it share a time.
pub const MARK_MS: u32 = 10;

const UART0: usize = 0x4000_4000;
const UART1: usize = 0x4000_5000;
const UART2: usize = 0x4000_6000;

// CMSDK APB UART registers and bits.
const DATA: usize = 0x00;
const STATE: usize = 0x04;
const CTRL: usize = 0x08;
const INTCLEAR: usize = 0x0C;
const BAUDDIV: usize = 0x10;
const STATE_TX_FULL: u32 = 1 << 0;
const STATE_RX_FULL: u32 = 1 << 1;
const STATE_RX_OVERRUN: u32 = 1 << 3;
const CTRL_TX_EN: u32 = 1 << 0;
const CTRL_RX_EN: u32 = 1 << 1;
const CTRL_RX_INT: u32 = 1 << 3;
const INT_RX: u32 = 1 << 1;

/// The interrupts used.
#[derive(Clone, Copy, Debug)]
#[repr(u16)]
enum Irq {
    Uart0Rx = 0,
    Uart1Rx = 2,
}

// SAFETY: the numbers are the AN386's interrupt lines of the UARTs' receivers.
unsafe impl InterruptNumber for Irq {
    fn number(self) -> u16 {
        self as u16
    }
}

/// Bytes received, when they arrived, and how many the UART lost (an overrun).
pub struct RxQueue<const N: usize> {
    bytes: Mutex<RefCell<Deque<u8, N>>>,
    /// Arrival marks: (the number of bytes received before the first byte of the mark,
    /// the low 32 bits of the millisecond clock then), oldest first.
    marks: Mutex<RefCell<Deque<(u32, u32), MARKS>>>,
    /// Bytes received since start (wrapping).
    received: Mutex<Cell<u32>>,
    /// Bytes taken by the loop since start (wrapping).
    taken: Mutex<Cell<u32>>,
    lost: Mutex<Cell<u32>>,
}

impl<const N: usize> RxQueue<N> {
    const fn new() -> RxQueue<N> {
        RxQueue {
            bytes: Mutex::new(RefCell::new(Deque::new())),
            marks: Mutex::new(RefCell::new(Deque::new())),
            received: Mutex::new(Cell::new(0)),
            taken: Mutex::new(Cell::new(0)),
            lost: Mutex::new(Cell::new(0)),
        }
    }

    /// Takes bytes that arrived under one mark, at most `buf.len()`: their count and the
    /// mark's time (`None` for bytes received with no mark).
    fn take(&self, buf: &mut [u8]) -> (usize, Option<u64>) {
        critical_section::with(|cs| {
            let taken = self.taken.borrow(cs);
            let mut marks = self.marks.borrow_ref_mut(cs);
            // Marks whose bytes are all taken go; the front one is the next byte's.
            while marks.iter().nth(1).is_some_and(|&(first, _)| first.wrapping_sub(taken.get()) as i32 <= 0) {
                marks.pop_front();
            }
            let now = MILLIS.borrow(cs).get();
            let at = marks
                .front()
                .filter(|&&(first, _)| first.wrapping_sub(taken.get()) as i32 <= 0)
                .map(|&(_, low)| now.saturating_sub(u64::from((now as u32).wrapping_sub(low))));
            let until_next = marks
                .iter()
                .nth(1)
                .map_or(usize::MAX, |&(first, _)| first.wrapping_sub(taken.get()) as usize);
            let mut bytes = self.bytes.borrow_ref_mut(cs);
            let mut n = 0;
            while n < buf.len().min(until_next) {
                let Some(b) = bytes.pop_front() else { break };
                buf[n] = b;
                n += 1;
            }
            taken.set(taken.get().wrapping_add(n as u32));
            (n, at)
        })
    }

    fn lost(&self) -> u32 {
        critical_section::with(|cs| self.lost.borrow(cs).get())
    }
}

static BOARD_RX: RxQueue<BOARD_RX_QUEUE> = RxQueue::new();
static HOST_RX: RxQueue<HOST_RX_QUEUE> = RxQueue::new();
static MILLIS: Mutex<Cell<u64>> = Mutex::new(Cell::new(0));

fn read_reg(base: usize, offset: usize) -> u32 {
    // SAFETY: `base` is one of the CMSDK UARTs of this board and `offset` one of its
    // registers; reading them has no side effect but on DATA (the byte is taken).
    unsafe { ((base + offset) as *const u32).read_volatile() }
}

fn write_reg(base: usize, offset: usize, value: u32) {
    // SAFETY: as in `read_reg`: a register of one of the board's CMSDK UARTs.
    unsafe { ((base + offset) as *mut u32).write_volatile(value) }
}

/// A CMSDK APB UART, `embedded-io` on top, receiving into a queue of `N` bytes.
#[derive(Debug)]
pub struct CmsdkUart<const N: usize> {
    base: usize,
    rx: Option<&'static RxQueue<N>>,
}

impl<const N: usize> core::fmt::Debug for RxQueue<N> {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.write_str("RxQueue")
    }
}

impl<const N: usize> CmsdkUart<N> {
    fn new(base: usize, baud: u32, rx: Option<&'static RxQueue<N>>) -> CmsdkUart<N> {
        write_reg(base, BAUDDIV, SYSCLK_HZ / baud);
        let ctrl = CTRL_TX_EN | if rx.is_some() { CTRL_RX_EN | CTRL_RX_INT } else { 0 };
        write_reg(base, CTRL, ctrl);
        CmsdkUart { base, rx }
    }

    /// Bytes the UART lost (an overrun).
    pub fn lost(&self) -> u32 {
        self.rx.map_or(0, RxQueue::lost)
    }

    fn put(&mut self, byte: u8) {
        while read_reg(self.base, STATE) & STATE_TX_FULL != 0 {}
        write_reg(self.base, DATA, u32::from(byte));
    }
}

impl<const N: usize> ErrorType for CmsdkUart<N> {
    type Error = Infallible;
}

impl<const N: usize> ReadReady for CmsdkUart<N> {
    fn read_ready(&mut self) -> Result<bool, Infallible> {
        let Some(q) = self.rx else { return Ok(false) };
        // A byte the interrupt has not fetched yet is fetched here too.
        receive(self.base, q);
        Ok(critical_section::with(|cs| !q.bytes.borrow_ref(cs).is_empty()))
    }
}

impl<const N: usize> Read for CmsdkUart<N> {
    fn read(&mut self, buf: &mut [u8]) -> Result<usize, Infallible> {
        self.read_arrived(buf).map(|(n, _)| n)
    }
}

impl<const N: usize> ReadArrivals for CmsdkUart<N> {
    fn read_arrived(&mut self, buf: &mut [u8]) -> Result<(usize, Option<u64>), Infallible> {
        let Some(q) = self.rx else { return Ok((0, None)) };
        loop {
            let (n, at) = q.take(buf);
            if n > 0 || buf.is_empty() {
                return Ok((n, at));
            }
            cortex_m::asm::wfi();
        }
    }
}

impl<const N: usize> WriteReady for CmsdkUart<N> {
    fn write_ready(&mut self) -> Result<bool, Infallible> {
        Ok(read_reg(self.base, STATE) & STATE_TX_FULL == 0)
    }
}

impl<const N: usize> Write for CmsdkUart<N> {
    fn write(&mut self, buf: &[u8]) -> Result<usize, Infallible> {
        let mut n = 0;
        for &b in buf {
            if n > 0 && read_reg(self.base, STATE) & STATE_TX_FULL != 0 {
                break;
            }
            self.put(b);
            n += 1;
        }
        Ok(n)
    }

    fn flush(&mut self) -> Result<(), Infallible> {
        while read_reg(self.base, STATE) & STATE_TX_FULL != 0 {}
        Ok(())
    }
}

impl<const N: usize> core::fmt::Write for CmsdkUart<N> {
    fn write_str(&mut self, s: &str) -> core::fmt::Result {
        for b in s.bytes() {
            self.put(b);
        }
        Ok(())
    }
}

/// Moves the bytes a UART received into its queue, while there is room. The interrupt is
/// cleared first: a byte that arrives after the last look at the UART raises it again
/// (cleared after, it would leave that byte in the UART with no interrupt to fetch it). A
/// full queue leaves the byte in the UART and masks the interrupt until the loop reads.
fn receive<const N: usize>(base: usize, q: &RxQueue<N>) {
    write_reg(base, INTCLEAR, INT_RX);
    critical_section::with(|cs| {
        let mut bytes = q.bytes.borrow_ref_mut(cs);
        let state = read_reg(base, STATE);
        if state & STATE_RX_OVERRUN != 0 {
            write_reg(base, STATE, STATE_RX_OVERRUN);
            q.lost.borrow(cs).set(q.lost.borrow(cs).get() + 1);
        }
        let mut marks = q.marks.borrow_ref_mut(cs);
        let received = q.received.borrow(cs);
        let now = MILLIS.borrow(cs).get() as u32;
        while !bytes.is_full() && read_reg(base, STATE) & STATE_RX_FULL != 0 {
            let _ = bytes.push_back(read_reg(base, DATA) as u8);
            if marks.back().is_none_or(|&(_, low)| now.wrapping_sub(low) >= MARK_MS) {
                let _ = marks.push_back((received.get(), now));
            }
            received.set(received.get().wrapping_add(1));
        }
        let ctrl = read_reg(base, CTRL);
        if bytes.is_full() {
            write_reg(base, CTRL, ctrl & !CTRL_RX_INT);
        } else if ctrl & CTRL_RX_INT == 0 {
            write_reg(base, CTRL, ctrl | CTRL_RX_INT);
        }
    });
}

#[exception]
fn SysTick() {
    critical_section::with(|cs| {
        let ms = MILLIS.borrow(cs);
        ms.set(ms.get() + 1);
    });
}

/// Without a peripheral access crate every device interrupt comes here, by number.
#[exception]
unsafe fn DefaultHandler(irqn: i16) {
    match irqn {
        0 => receive(UART0, &BOARD_RX),
        2 => receive(UART1, &HOST_RX),
        _ => {}
    }
}

/// The console (UART2): the boot line and panics.
pub fn console() -> CmsdkUart<1> {
    CmsdkUart::new(UART2, 115_200, None)
}

/// The mps2-an386 as a [`Platform`].
#[derive(Debug)]
pub struct Mps2An386 {
    uarts: Option<(Board, Host)>,
    heap: &'static super::heap::CountingHeap,
}

impl Mps2An386 {
    /// Sets the board up: the 1 kHz tick, the UARTs and their receive interrupts. Call
    /// once, with the core's SysTick and NVIC.
    pub fn new(mut syst: SYST, heap: &'static super::heap::CountingHeap) -> Mps2An386 {
        syst.set_clock_source(SystClkSource::Core);
        syst.set_reload(SYSCLK_HZ / 1_000 - 1);
        syst.clear_current();
        syst.enable_interrupt();
        syst.enable_counter();
        let board = CmsdkUart::new(UART0, 9_600, Some(&BOARD_RX));
        let host = CmsdkUart::new(UART1, 115_200, Some(&HOST_RX));
        // SAFETY: the handlers these interrupts run (`DefaultHandler`) only touch the
        // receive queues, through critical sections.
        unsafe {
            NVIC::unmask(Irq::Uart0Rx);
            NVIC::unmask(Irq::Uart1Rx);
        }
        Mps2An386 { uarts: Some((board, host)), heap }
    }
}

/// The board's UART.
pub type Board = CmsdkUart<BOARD_RX_QUEUE>;
/// The host's UART.
pub type Host = CmsdkUart<HOST_RX_QUEUE>;

impl Platform for Mps2An386 {
    type Board = Board;
    type Host = Host;
    const NAME: &'static str = "mps2-an386";

    fn uarts(&mut self) -> (Board, Host) {
        match self.uarts.take() {
            Some(u) => u,
            // Taken twice: fresh handles on the same UARTs (the queues are shared).
            None => (
                CmsdkUart { base: UART0, rx: Some(&BOARD_RX) },
                CmsdkUart { base: UART1, rx: Some(&HOST_RX) },
            ),
        }
    }

    fn now_ms(&self) -> u64 {
        critical_section::with(|cs| MILLIS.borrow(cs).get())
    }

    fn sleep(&self) {
        cortex_m::asm::wfi();
    }

    /// With the `trace` feature, the console: the boot line, then the loop's trace.
    fn trace(&mut self) -> Option<alloc::boxed::Box<dyn core::fmt::Write>> {
        if cfg!(feature = "trace") { Some(alloc::boxed::Box::new(console())) } else { None }
    }

    fn memory(&self) -> PlatformFigures {
        PlatformFigures {
            heap_used: self.heap.used() as u32,
            heap_peak: self.heap.peak() as u32,
            stack_peak: super::stack::peak(),
            uart_lost: BOARD_RX.lost() + HOST_RX.lost(),
            longest_step_ms: 0,
        }
    }
}
