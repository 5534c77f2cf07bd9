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

// The tracker crate; replaced by a real call into it once it has an API.
extern crate dgt_core;
