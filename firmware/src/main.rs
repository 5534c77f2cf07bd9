//! The relay box's firmware for QEMU's mps2-an386 (see the library's docs).

#![no_std]
#![no_main]

use core::fmt::Write as _;
use core::mem::MaybeUninit;

use cortex_m_rt::entry;
use dgt_relay_firmware::bsp::heap::CountingHeap;
use dgt_relay_firmware::bsp::mps2_an386::{Mps2An386, console};
use dgt_relay_firmware::bsp::stack;
use dgt_relay_firmware::{DeviceConfig, FIRMWARE, Platform, run};

/// The heap: what the RAM leaves after the static data and the stack, which needs up to
/// 25 KiB (the tracker's catch-up search at its deepest); see BENCHMARKS.md for the figures
/// of one board.
const HEAP_BYTES: usize = 32 * 1024;

#[global_allocator]
static HEAP: CountingHeap = CountingHeap::empty();

#[entry]
fn main() -> ! {
    stack::paint();
    static mut HEAP_MEMORY: [MaybeUninit<u8>; HEAP_BYTES] = [MaybeUninit::uninit(); HEAP_BYTES];
    // SAFETY: `entry` runs once and this is the only reference ever made to the array.
    #[allow(static_mut_refs)]
    HEAP.init(unsafe { &mut HEAP_MEMORY });
    let Some(core) = cortex_m::Peripherals::take() else { panic!("core peripherals taken twice") };
    let platform = Mps2An386::new(core.SYST, &HEAP);
    let _ = writeln!(console(), "{FIRMWARE} on {}", Mps2An386::NAME);
    run(platform, DeviceConfig::new(FIRMWARE, Mps2An386::NAME))
}

#[panic_handler]
fn panic(info: &core::panic::PanicInfo<'_>) -> ! {
    let _ = writeln!(console(), "panic: {info}");
    cortex_m::peripheral::SCB::sys_reset()
}
