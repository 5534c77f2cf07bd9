//! Every length of time the tracker judges by, in one place, each with the reason for it.
//!
//! All are milliseconds of the caller's monotonic clock, measured on the times the caller
//! passes with each message: when the relay *read* it. The board's hands moved earlier, by
//! a scan period at least and by whatever the link held the bytes back. The tracker asks
//! for the time it next needs with [`Tracker::poll_at`](crate::Tracker::poll_at).

/// The tracker's lengths of time. Set through [`Config::timing`](crate::Config::timing).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Timing {
    /// Reports read closer together than this are one scan of the board (a field update
    /// takes about 5 ms at 9,600 baud): their order among themselves says nothing about
    /// the order of the hands, and the board between two of them is only half read.
    pub scan_ms: u32,
    /// One board scan period: a press confirms at once when the board has not changed for
    /// this long before it (the board has already reported where the piece stopped);
    /// otherwise it waits until the board has been still this long after its last change.
    /// Also how long a pressed ply's piece must stay where it landed to stand, and how
    /// close to a press a dump must come to show the board of that press.
    pub press_stable_ms: u32,
    /// The longest a hand is taken to rest a piece on a square it slides through. A ply
    /// that could be the first part of a longer move (a slide, castling rook first) is
    /// taken as the move only once the board has been still for `press_stable_ms` plus
    /// this (the rest of the slide would have been reported by then), or a dump shows it.
    pub slide_pause_ms: u32,
    /// How long the board must be still before a reading the one-ply step cannot follow is
    /// searched in full (several plies, takebacks): hands still at work make passing
    /// states that no search should settle on.
    pub settle_ms: u32,
    /// With a clock: how long a line of two or more unpressed plies must stand before all
    /// but its last are final (a forgotten press, resolved by what followed); also how
    /// long plies that undo the confirmed ones must stand to be a takeback.
    pub chain_confirm_ms: u32,
    /// A king move off the centre that stood this long before the kings' signal began was
    /// a move: nobody carrying a king to the centre rests it elsewhere that long.
    pub king_rest_ms: u32,
    /// Without a running clock: how long a position must stand before its moves are final
    /// (and how long a result signal on the board must stand to end the game).
    pub quiet_ms: u32,
    /// With a running clock: how long a position must stand before its unpressed moves are
    /// final anyway (the piece was released, so the move was made; the press forgotten).
    pub unpressed_ms: u32,
    /// How long an unexplainable board must stand before it is reported (and before it is
    /// searched as deep as the tracker goes).
    pub mismatch_ms: u32,
    /// How long a clock press waits for the board to show the presser's move.
    pub press_window_ms: u32,
    /// Minimum time between two board-dump requests the tracker makes on its own (a press
    /// asks at once).
    pub dump_interval_ms: u32,
    /// A dump asked for at most this long before a confirmation by time (without a running
    /// clock) shows the board as it stands then: a move made in between would have to be
    /// made, and both its reports lost, within it. Such a dump is asked for this long
    /// before the plies would stand, so that it is there by then.
    pub dump_fresh_ms: u32,
    /// A dump request unanswered this long was lost (a board answers in well under 100 ms
    /// at 9,600 baud; a link holding bytes back, or a chain's polling cycle, adds a few
    /// hundred): the tracker asks anew instead of waiting for it.
    pub dump_answer_ms: u32,
    /// A clock reading this old, from a clock shown running, no longer says the clock runs:
    /// a running clock reports at least once a second, so one silent this long is gone.
    pub clock_stale_ms: u32,
    /// A running mover's display read within this long of their move still shows the
    /// move's `%clk` (the clock shows whole seconds).
    pub clock_fresh_ms: u32,
}

impl Timing {
    /// How long a board must be still before no slide can still be under way: the longest
    /// rest of a sliding hand, and a scan period to report what it did next.
    pub fn slide_settled_ms(&self) -> u64 {
        u64::from(self.press_stable_ms) + u64::from(self.slide_pause_ms)
    }
}

impl Default for Timing {
    fn default() -> Self {
        Timing {
            scan_ms: 20,
            press_stable_ms: 250,
            slide_pause_ms: 350,
            settle_ms: 300,
            chain_confirm_ms: 1000,
            king_rest_ms: 500,
            quiet_ms: 2000,
            unpressed_ms: 4000,
            mismatch_ms: 1500,
            press_window_ms: 3000,
            dump_interval_ms: 1000,
            dump_answer_ms: 2000,
            dump_fresh_ms: 500,
            clock_stale_ms: 5000,
            clock_fresh_ms: 1000,
        }
    }
}
