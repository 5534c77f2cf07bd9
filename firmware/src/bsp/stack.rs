//! The stack's high-water mark: the free stack is painted with a pattern at boot, and the
//! deepest word no longer holding it tells how much stack was ever used.
//!
//! cortex-m-rt places the stack at the top of RAM growing down (`_stack_start`), and the
//! heap's static array in `.bss` below it; between the end of the static data
//! (`__sheap`) and the stack pointer at boot lies the stack not used yet.

const PAINT: u32 = 0xACE0_BACE;
/// Words below the stack pointer left unpainted when painting (the painting's own frame).
const MARGIN_WORDS: usize = 32;

unsafe extern "C" {
    static __sheap: u32;
    static _stack_start: u32;
}

fn bounds() -> (*mut u32, *mut u32) {
    // Only the symbols' addresses are taken; they are not read.
    (&raw const __sheap as *mut u32, &raw const _stack_start as *mut u32)
}

/// Paints the stack from the end of the static data to just below the stack pointer.
/// Call once, first thing in `main`.
pub fn paint() {
    let (bottom, _) = bounds();
    let sp = cortex_m::register::msp::read() as usize as *mut u32;
    // SAFETY: between the end of the static data and the stack pointer, less a margin for
    // this function's frame, the RAM belongs to no object yet: nothing reads it before
    // the stack grows into it.
    unsafe {
        let end = sp.sub(MARGIN_WORDS);
        let mut p = bottom;
        while p < end {
            p.write_volatile(PAINT);
            p = p.add(1);
        }
    }
}

/// The most stack bytes used since [`paint`].
pub fn peak() -> u32 {
    let (bottom, top) = bounds();
    // SAFETY: the words between the end of the static data and the top of RAM are RAM;
    // reading them volatile reads either the paint or a stack word, never undefined memory
    // from the program's point of view (a stack word is plain data).
    unsafe {
        let mut p = bottom;
        while p < top && p.read_volatile() == PAINT {
            p = p.add(1);
        }
        (top as usize - p as usize) as u32
    }
}
