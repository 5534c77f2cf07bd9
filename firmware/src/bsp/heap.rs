//! The heap: `embedded-alloc`'s TLSF allocator (two-level segregated fit: bounded time, little fragmentation) over a static array, counting the
//! bytes in use and their peak (the figures the host gets in the bridge's status).

use core::alloc::{GlobalAlloc, Layout};
use core::mem::MaybeUninit;
use core::sync::atomic::{AtomicUsize, Ordering};

use embedded_alloc::TlsfHeap;

/// An allocator that counts.
pub struct CountingHeap {
    heap: TlsfHeap,
    used: AtomicUsize,
    peak: AtomicUsize,
}

impl core::fmt::Debug for CountingHeap {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.debug_struct("CountingHeap").field("used", &self.used()).field("peak", &self.peak()).finish()
    }
}

impl CountingHeap {
    /// A heap with no memory yet; see [`CountingHeap::init`].
    pub const fn empty() -> CountingHeap {
        CountingHeap { heap: TlsfHeap::empty(), used: AtomicUsize::new(0), peak: AtomicUsize::new(0) }
    }

    /// Gives the heap its memory. Call once, before the first allocation.
    pub fn init(&self, memory: &'static mut [MaybeUninit<u8>]) {
        // SAFETY: the memory is 'static, handed over whole and exclusively (the `&'static
        // mut` cannot be used again), and this runs once, before any allocation.
        unsafe { self.heap.init(memory.as_mut_ptr() as usize, memory.len()) }
    }

    /// Bytes in use now.
    pub fn used(&self) -> usize {
        self.used.load(Ordering::Relaxed)
    }

    /// Most bytes in use at once since start.
    pub fn peak(&self) -> usize {
        self.peak.load(Ordering::Relaxed)
    }
}

// SAFETY: every call is passed on unchanged to `TlsfHeap`, a sound allocator; the counters
// do not affect what is allocated.
unsafe impl GlobalAlloc for CountingHeap {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        // SAFETY: the caller's contract for `alloc` is passed on unchanged.
        let p = unsafe { self.heap.alloc(layout) };
        if !p.is_null() {
            let used = self.used.fetch_add(layout.size(), Ordering::Relaxed) + layout.size();
            self.peak.fetch_max(used, Ordering::Relaxed);
        }
        p
    }

    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        self.used.fetch_sub(layout.size(), Ordering::Relaxed);
        // SAFETY: the caller's contract for `dealloc` is passed on unchanged.
        unsafe { self.heap.dealloc(ptr, layout) }
    }
}
