//! A seeded slice of the offline sweep (`--bin offline`): every noise profile on a few
//! corpus games, plus the games the end-to-end suite found wrong, played through the
//! simulated firmware straight into the tracker. Fails on any ghost move, missing ply,
//! `%clk` miss or wrong result.

use dgt_e2e_tests::acceptance::{livechess, seeded_subset, worldcup};
use dgt_e2e_tests::offline::{OfflineOptions, replay_through_tracker};
use dgt_hil_sim::hands::Profile;

#[test]
fn offline_slice_is_exact_under_every_profile() {
    let (Ok(wc), Ok(lc)) = (worldcup(), livechess()) else {
        panic!("the shared corpus is missing");
    };
    let opts = OfflineOptions::default();
    // (source, game index, profile): the end-to-end findings...
    let mut jobs: Vec<(bool, usize, Profile)> = vec![
        (true, 4, Profile::Slide),
        (true, 198, Profile::Burst),
        (true, 99, Profile::CastlingOrders),
        (true, 18, Profile::Takeback),
        (true, 178, Profile::DroppedUpdates),
        (true, 108, Profile::Garbage),
        (true, 206, Profile::Rotated),
        (false, 8, Profile::Mixed),
        (false, 9, Profile::Mixed),
    ];
    // ...and two seeded games per profile.
    for (k, p) in Profile::ALL.into_iter().enumerate() {
        for i in seeded_subset(wc.len(), 2, 0x0FF1 + k as u64) {
            jobs.push((true, i, p));
        }
    }
    let mut failures = Vec::new();
    for (from_wc, i, p) in jobs {
        let game = if from_wc { &wc[i] } else { &lc[i] };
        let o = replay_through_tracker(game, p, 1 + i as u64, &opts);
        if !o.passed() {
            let src = if from_wc { "worldcup" } else { "livechess" };
            failures.push(format!("{src}#{i} {p} seed {}: {}", o.seed, o.why.join("; ")));
        }
    }
    assert!(failures.is_empty(), "{} failing replays:\n{}", failures.len(), failures.join("\n"));
}
