//! QEMU's `mps2-an386`: Arm's MPS2 board with the AN386 image, a Cortex-M4F with CMSDK
//! peripherals at 25 MHz.
//!
//! - UART0 (`0x4000_4000`, RX interrupt 0): the DGT board, 9600 8N1.
//! - UART1 (`0x4000_5000`, RX interrupt 2): the host, 115200 8N1.
//! - UART2 (`0x4000_6000`): a console for the boot line and panics.
//! - SysTick at 1 kHz: the millisecond clock.
//!
//! A CMSDK UART holds one received byte; its RX interrupt moves each byte at once into a
//! queue of [`RX_QUEUE`] bytes, so nothing is lost while the loop is busy. Writes go a
//! byte at a time while the UART is not full; they never wait.

use core::cell::{Cell, RefCell};
use core::convert::Infallible;

use cortex_m::interrupt::InterruptNumber;
use cortex_m::peripheral::syst::SystClkSource;
use cortex_m::peripheral::{NVIC, SYST};
use cortex_m_rt::exception;
use critical_section::Mutex;
use embedded_io::{ErrorType, Read, ReadReady, Write, WriteReady};
use heapless::Deque;

use crate::{MemoryUse, Platform};

/// The system clock.
const SYSCLK_HZ: u32 = 25_000_000;
/// Received bytes a UART keeps until the loop reads them.
pub const RX_QUEUE: usize = 512;

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

/// Bytes received, and how many were lost because the queue was full.
struct RxQueue {
    bytes: Mutex<RefCell<Deque<u8, RX_QUEUE>>>,
    lost: Mutex<Cell<u32>>,
}

impl RxQueue {
    const fn new() -> RxQueue {
        RxQueue { bytes: Mutex::new(RefCell::new(Deque::new())), lost: Mutex::new(Cell::new(0)) }
    }
}

static BOARD_RX: RxQueue = RxQueue::new();
static HOST_RX: RxQueue = RxQueue::new();
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

/// A CMSDK APB UART, `embedded-io` on top.
#[derive(Debug)]
pub struct CmsdkUart {
    base: usize,
    rx: Option<&'static RxQueue>,
}

impl core::fmt::Debug for RxQueue {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.write_str("RxQueue")
    }
}

impl CmsdkUart {
    fn new(base: usize, baud: u32, rx: Option<&'static RxQueue>) -> CmsdkUart {
        write_reg(base, BAUDDIV, SYSCLK_HZ / baud);
        let ctrl = CTRL_TX_EN | if rx.is_some() { CTRL_RX_EN | CTRL_RX_INT } else { 0 };
        write_reg(base, CTRL, ctrl);
        CmsdkUart { base, rx }
    }

    /// Bytes lost because the receive queue was full.
    pub fn lost(&self) -> u32 {
        self.rx.map_or(0, |q| critical_section::with(|cs| q.lost.borrow(cs).get()))
    }

    fn put(&mut self, byte: u8) {
        while read_reg(self.base, STATE) & STATE_TX_FULL != 0 {}
        write_reg(self.base, DATA, u32::from(byte));
    }
}

impl ErrorType for CmsdkUart {
    type Error = Infallible;
}

impl ReadReady for CmsdkUart {
    fn read_ready(&mut self) -> Result<bool, Infallible> {
        let Some(q) = self.rx else { return Ok(false) };
        // A byte the interrupt has not fetched yet is fetched here too.
        receive(self.base, q);
        Ok(critical_section::with(|cs| !q.bytes.borrow_ref(cs).is_empty()))
    }
}

impl Read for CmsdkUart {
    fn read(&mut self, buf: &mut [u8]) -> Result<usize, Infallible> {
        let Some(q) = self.rx else { return Ok(0) };
        loop {
            let n = critical_section::with(|cs| {
                let mut bytes = q.bytes.borrow_ref_mut(cs);
                let mut n = 0;
                while n < buf.len() {
                    let Some(b) = bytes.pop_front() else { break };
                    buf[n] = b;
                    n += 1;
                }
                n
            });
            if n > 0 || buf.is_empty() {
                return Ok(n);
            }
            cortex_m::asm::wfi();
        }
    }
}

impl WriteReady for CmsdkUart {
    fn write_ready(&mut self) -> Result<bool, Infallible> {
        Ok(read_reg(self.base, STATE) & STATE_TX_FULL == 0)
    }
}

impl Write for CmsdkUart {
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

impl core::fmt::Write for CmsdkUart {
    fn write_str(&mut self, s: &str) -> core::fmt::Result {
        for b in s.bytes() {
            self.put(b);
        }
        Ok(())
    }
}

/// Moves the bytes a UART received into its queue. The interrupt is cleared first: a byte
/// that arrives after the last look at the UART raises it again (cleared after, it would
/// leave that byte in the UART with no interrupt to fetch it, and the UART would take no
/// other).
fn receive(base: usize, q: &RxQueue) {
    write_reg(base, INTCLEAR, INT_RX);
    critical_section::with(|cs| {
        let mut bytes = q.bytes.borrow_ref_mut(cs);
        while read_reg(base, STATE) & STATE_RX_FULL != 0 {
            let b = read_reg(base, DATA) as u8;
            if bytes.push_back(b).is_err() {
                q.lost.borrow(cs).set(q.lost.borrow(cs).get() + 1);
            }
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
pub fn console() -> CmsdkUart {
    CmsdkUart::new(UART2, 115_200, None)
}

/// The mps2-an386 as a [`Platform`].
#[derive(Debug)]
pub struct Mps2An386 {
    uarts: Option<(CmsdkUart, CmsdkUart)>,
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

impl Platform for Mps2An386 {
    type Board = CmsdkUart;
    type Host = CmsdkUart;
    const NAME: &'static str = "mps2-an386";

    fn uarts(&mut self) -> (CmsdkUart, CmsdkUart) {
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

    fn memory(&self) -> MemoryUse {
        MemoryUse {
            heap_used: self.heap.used() as u32,
            heap_peak: self.heap.peak() as u32,
            stack_peak: super::stack::peak(),
        }
    }
}
