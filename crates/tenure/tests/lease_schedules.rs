//! Property test of docs/spec.md §4, §5, §6 and §11 together: random schedules of item and container
//! lease actions, data writes and reads with and without lease ids and lock handles, cache-lock
//! calls, batches, container writes, clock jumps (often exactly onto the next deadline, or one
//! microsecond before it), reopens and crashes, run against the store and against the
//! reference model in tenure-testkit (`lease_model`), compared after every step.
//!
//! At least 10,000 schedules per run. Replay a failing one with
//! `TENURE_SEED=<seed> TENURE_SCHEDULES=1 cargo test -p tenure --test lease_schedules`.
//! The schedule itself lives in `tenure_testkit::campaign::lease_schedule` (the torture
//! campaign and a fuzz target run it too).

use rand::rngs::StdRng;
use rand::SeedableRng;
use tenure_testkit::campaign::lease_schedule::{missing_outcomes, run_schedule, OUTCOMES};

#[test]
fn random_lease_and_lock_schedules_match_the_reference_model() {
    let first_seed: u64 = std::env::var("TENURE_SEED")
        .ok()
        .and_then(|text| text.parse().ok())
        .unwrap_or(1);
    let count: u64 = std::env::var("TENURE_SCHEDULES")
        .ok()
        .and_then(|text| text.parse().ok())
        .unwrap_or(10_000);
    // Schedules are independent: a few workers share them. A failing schedule stops the
    // run; the lowest failing seed is reported.
    let next = std::sync::atomic::AtomicU64::new(first_seed);
    let failed = std::sync::Mutex::new(Vec::new());
    let workers = std::thread::available_parallelism().map_or(1, |n| n.get().min(4));
    std::thread::scope(|scope| {
        for _ in 0..workers {
            scope.spawn(|| loop {
                let seed = next.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                if seed >= first_seed + count {
                    return;
                }
                if std::panic::catch_unwind(|| run_schedule(seed, StdRng::seed_from_u64(seed)))
                    .is_err()
                {
                    failed.lock().unwrap().push(seed);
                    next.store(u64::MAX / 2, std::sync::atomic::Ordering::Relaxed);
                    return;
                }
            });
        }
    });
    if let Some(seed) = failed.lock().unwrap().iter().min() {
        panic!(
            "schedule failed; replay with TENURE_SEED={seed} TENURE_SCHEDULES=1 \
             cargo test -p tenure --test lease_schedules"
        );
    }
    let outcomes = OUTCOMES.lock().unwrap().clone();
    eprintln!("{count} lease schedules from seed {first_seed} matched the model: {outcomes:#?}");
    if count >= 1_000 {
        let missing = missing_outcomes();
        assert!(
            missing.is_empty(),
            "the schedules never reached: {missing:?}"
        );
    }
}
