//! Link-time proof that `dgt-protocol` and `dgt-core` need neither std nor alloc.
//!
//! A staticlib is linked whole: if anything in the graph pulled in `std`, its panic handler
//! would clash with ours; if anything needed `alloc`, the link would fail for want of a
//! global allocator. `.ci/run` builds this crate; it has no other use.
#![no_std]

use core::panic::PanicInfo;
use dgt_protocol::{Decoded, Decoder, Message};

#[panic_handler]
fn panic(_info: &PanicInfo<'_>) -> ! {
    loop {}
}

/// Decodes a buffer and counts the messages in it, touching the decoder's whole path.
///
/// # Safety
/// `bytes` must point to `len` readable bytes.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn dgt_count_messages(bytes: *const u8, len: usize) -> usize {
    // SAFETY: the caller promises `len` readable bytes at `bytes`.
    let input = unsafe { core::slice::from_raw_parts(bytes, len) };
    let mut decoder: Decoder = Decoder::new();
    let mut count = 0;
    decoder.feed(input, |d| {
        if let Decoded::Message(Message::BoardDump(_)) = d {
            count += 1;
        }
    });
    count
}

/// Feeds a buffer of board bytes through the decoder into a 600-ply tracker and returns
/// how many moves it confirmed: the whole path from bytes to moves, with no heap.
///
/// # Safety
/// `bytes` must point to `len` readable bytes.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn dgt_track(bytes: *const u8, len: usize, now_ms: u64) -> usize {
    // SAFETY: the caller promises `len` readable bytes at `bytes`.
    let input = unsafe { core::slice::from_raw_parts(bytes, len) };
    let mut decoder: Decoder = Decoder::new();
    let mut tracker: dgt_core::Tracker<600> = dgt_core::Tracker::default();
    let mut confirmed = 0;
    let mut sink = |e: dgt_core::Event| {
        if let dgt_core::Event::MoveConfirmed(_) = e {
            confirmed += 1;
        }
    };
    decoder.feed(input, |d| {
        if let Decoded::Message(m) = d {
            tracker.feed(&m, now_ms, &mut sink);
        }
    });
    tracker.tick(now_ms + 10_000, &mut sink);
    confirmed
}
