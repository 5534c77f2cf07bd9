//! The relay box's firmware: one DGT board's whole session on a microcontroller, its
//! effects bridged to a host (see `docs/bridge.md`).
//!
//! - [`app`]: the main loop's turn over any two UARTs ([`App`]); plain code, tested on
//!   the host.
//! - [`Platform`]: what a board support gives the loop: the board's UART and the host's,
//!   a millisecond clock, a way to sleep until an interrupt, memory figures. [`run`] is
//!   the loop itself, for any platform.
//! - `bsp`: board supports, one module each, built for the target only. QEMU's
//!   mps2-an386 (Cortex-M4F, CMSDK UARTs) is the first; a real part (RP2040, STM32F4) is
//!   another module implementing [`Platform`] with its HAL's UARTs, which implement
//!   `embedded-io` like the CMSDK driver here.

#![cfg_attr(not(test), no_std)]

extern crate alloc;

pub mod app;
#[cfg(target_os = "none")]
pub mod bsp;

pub use app::App;
pub use dgt_bridge::{DeviceConfig, PlatformFigures};

use embedded_io::{Read, ReadReady, Write, WriteReady};

/// The firmware's name and version, as the host is told in its greeting.
pub const FIRMWARE: &str = concat!("dgt-relay-firmware ", env!("CARGO_PKG_VERSION"));

/// A receiver that notes when its bytes arrived. A long turn of the loop (a deep
/// catch-up search) leaves the board's bytes waiting; read with the time they arrived,
/// they reach the session as the board sent them, and not bunched as if the board had
/// paused and then reported several changes at once (which the tracker would have to
/// untangle, as on a relay frozen by its machine).
pub trait ReadArrivals: Read {
    /// Reads bytes that arrived together, at most `buf.len()`: their count, and the
    /// platform's millisecond ([`Platform::now_ms`]) at which the first of them arrived
    /// (`None`: not known; the time of the read is taken).
    fn read_arrived(&mut self, buf: &mut [u8]) -> Result<(usize, Option<u64>), Self::Error>;
}

/// A board support: the two UARTs, time, sleep and memory.
pub trait Platform {
    /// The UART the DGT board is on (9600 8N1).
    type Board: ReadArrivals + ReadReady + Write + WriteReady;
    /// The UART (or USB CDC port) the host is on.
    type Host: Read + ReadReady + Write + WriteReady;
    /// Its name, as the host is told (`mps2-an386`).
    const NAME: &'static str;

    /// Takes the two UARTs out of the platform.
    fn uarts(&mut self) -> (Self::Board, Self::Host);
    /// Milliseconds since start; never goes back.
    fn now_ms(&self) -> u64;
    /// Sleeps until the next interrupt (a byte, the millisecond tick).
    fn sleep(&self);
    /// Heap and stack figures.
    fn memory(&self) -> PlatformFigures;
    /// Where the loop writes its trace (see [`App::trace_to`]), if anywhere.
    fn trace(&mut self) -> Option<alloc::boxed::Box<dyn core::fmt::Write>> {
        None
    }
}

/// Turns longer than this go into the trace.
const LONG_TURN_MS: u64 = 20;

/// How often the memory figures are taken (the stack's high-water mark is a scan).
const MEMORY_EVERY_MS: u64 = 1_000;

/// The relay box's main loop on `platform`, for ever.
pub fn run<P: Platform>(mut platform: P, config: DeviceConfig) -> ! {
    let (board, host) = platform.uarts();
    let mut app = App::new(platform.now_ms(), config, board, host);
    if let Some(sink) = platform.trace() {
        app.trace_to(sink);
    }
    let mut next_memory = 0;
    let mut longest_step = 0;
    loop {
        let now = platform.now_ms();
        if now >= next_memory {
            next_memory = now + MEMORY_EVERY_MS;
            app.set_memory(PlatformFigures { longest_step_ms: longest_step, ..platform.memory() });
        }
        app.step(now);
        let took = platform.now_ms() - now;
        if took > LONG_TURN_MS {
            app.trace_turn(now, took);
        }
        longest_step = longest_step.max(u32::try_from(took).unwrap_or(u32::MAX));
        if app.is_idle() {
            platform.sleep();
        }
    }
}
