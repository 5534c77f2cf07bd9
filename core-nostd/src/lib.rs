//! The board tracker (filled in by the core-nostd issue).
#![no_std]
