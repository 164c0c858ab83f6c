//! Linearizability (docs/spec.md §3 step 6, §9 "strong"): threads race gets, puts, conditional puts and
//! deletes on a few keys of a fresh store; each history is recorded with invoke/return instants
//! from one shared counter and checked per key against a register with ETag semantics by the
//! Wing–Gong search in `tenure_testkit::linearizability`. The recording lives in
//! `tenure_testkit::campaign::histories` (the torture campaign runs it too).
//!
//! Histories run with `Durability::Buffered` (500 by default) and `Durability::Sync` (200).
//! Replay a failing seed with TENURE_SEED=<seed> TENURE_HISTORIES=1 (the operations are
//! seeded; the thread interleaving is not, so a replay may pass); run more with
//! TENURE_HISTORIES=<count>.

use tenure::Durability;
use tenure_testkit::campaign::histories::{overlapping_pairs, record_history};
use tenure_testkit::linearizability;

/// Records and checks `TENURE_HISTORIES` (default `default_count`) histories from seed
/// `TENURE_SEED` (default 1) on; panics with the seed and the key's history on a violation.
fn check_histories(test: &str, durability: Durability, default_count: u64) {
    let first_seed: u64 = std::env::var("TENURE_SEED")
        .ok()
        .and_then(|text| text.parse().ok())
        .unwrap_or(1);
    let count: u64 = std::env::var("TENURE_HISTORIES")
        .ok()
        .and_then(|text| text.parse().ok())
        .unwrap_or(default_count);
    let mut operations = 0;
    let mut overlapping = 0;
    for seed in first_seed..first_seed + count {
        let history = record_history(durability, seed);
        operations += history.len();
        overlapping += overlapping_pairs(&history);
        if let Err(violation) = linearizability::check(&history) {
            panic!(
                "history {seed} ({durability:?}) is not linearizable; replay with \
                 TENURE_SEED={seed} TENURE_HISTORIES=1 cargo test -p tenure --test \
                 linearizability {test} (thread timing differs between runs, so a replay \
                 may pass)\n{violation}"
            );
        }
    }
    eprintln!(
        "{test}: {count} histories, {operations} operations, {overlapping} overlapping pairs \
         of operations on one key"
    );
    // A sanity check that the threads raced rather than ran one after another.
    assert!(
        count < 20 || overlapping > 0,
        "no two operations on one key ever overlapped: the test does not race"
    );
}

#[test]
fn buffered_histories_of_get_put_conditional_put_and_delete_are_linearizable() {
    check_histories("buffered_histories", Durability::Buffered, 500);
}

/// The default durability: a write becomes visible only after its group commit's flush, so
/// writes stay installed-but-invisible longest here.
#[test]
fn sync_histories_of_get_put_conditional_put_and_delete_are_linearizable() {
    check_histories("sync_histories", Durability::Sync, 200);
}
