//! Board supports, one module each, built for the target only.
//!
//! A board support implements [`crate::Platform`]: it sets up the clock, the board's UART
//! at 9600 8N1, the host's UART (or a USB CDC port), a millisecond tick, and reports the
//! stack's high-water mark. Everything else (the session, the bridge, the loop) is
//! shared. A new part is a new module here and a line in `main.rs`:
//!
//! - RP2040: `rp2040-hal`'s `UartPeripheral` implements `embedded-io`; the tick is its
//!   `Timer`; the host is UART1 or `usbd-serial`'s CDC class.
//! - STM32F4: `stm32f4xx-hal`'s serial `Tx`/`Rx` implement `embedded-io`; the tick is
//!   SysTick as here.

pub mod heap;
pub mod mps2_an386;
pub mod stack;
