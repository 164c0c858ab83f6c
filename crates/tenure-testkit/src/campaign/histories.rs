//! Linearizability histories (SPEC §3 step 6, §9 "strong"): threads race gets, puts,
//! conditional puts and deletes on a few keys of a fresh store; each history is recorded with
//! invoke/return instants from one shared counter and checked per key against a register with
//! ETag semantics by the Wing–Gong search in [`crate::linearizability`].
//!
//! The operations are seeded; the thread interleaving is not, so replaying a failing seed may
//! pass (run it a few times).

use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::Arc;

use rand::rngs::SmallRng;
use rand::{Rng, SeedableRng};
use tenure::{
    Conditions, Durability, ETag, ErrorCode, ManualClock, ReadOptions, Store, StoreOptions,
    Version, WriteOptions,
};

use crate::linearizability::{self, Call, Operation, Response};
use crate::SimStorage;

const CONTAINER: &str = "c";
const KEYS: [&[u8]; 3] = [b"k0", b"k1", b"k2"];

pub fn store_options(durability: Durability) -> StoreOptions {
    StoreOptions {
        durability,
        segment_size_bytes: 1 << 20,
        clock: Arc::new(ManualClock::new(1_700_000_000_000_000)),
        ..StoreOptions::default()
    }
}

fn response_of_error(error: &tenure::Error) -> Response {
    match error.code() {
        ErrorCode::NotFound => Response::NotFound,
        ErrorCode::ConditionNotMet => Response::ConditionNotMet,
        code => Response::Failed(format!("{code:?}: {error}")),
    }
}

/// One thread's operations: random choices from its own seed, if_match ETags from its own
/// last read of the key.
fn run_thread(
    store: &Store,
    clock: &AtomicU64,
    thread: usize,
    seed: u64,
    keys: usize,
    operations: usize,
) -> Vec<Operation> {
    let mut rng = SmallRng::seed_from_u64(seed);
    let mut last_read: HashMap<&[u8], Version> = HashMap::new();
    let mut history = Vec::with_capacity(operations);
    for number in 0..operations {
        let key = KEYS[rng.gen_range(0..keys)];
        let value = format!("t{thread}-{number}").into_bytes();
        let choice = rng.gen_range(0..100);
        let call = match choice {
            0..=34 => Call::Get,
            35..=59 => Call::Put { value },
            60..=84 => Call::PutIfMatch {
                value,
                // Nothing read yet: an ETag no item carries.
                if_match: last_read.get(key).copied().unwrap_or(0),
            },
            _ => Call::Delete,
        };
        let invoke = clock.fetch_add(1, Ordering::SeqCst);
        let response = match &call {
            Call::Get => match store.get(CONTAINER, key, &ReadOptions::default()) {
                Ok(item) => Response::Found {
                    value: item.value.unwrap_or_default(),
                    version: item.version,
                },
                Err(error) => response_of_error(&error),
            },
            Call::Put { value } => match store.put(CONTAINER, key, value, &WriteOptions::default())
            {
                Ok(etag) => Response::Written {
                    version: etag.version(),
                },
                Err(error) => response_of_error(&error),
            },
            Call::PutIfMatch { value, if_match } => {
                let options = WriteOptions::with_conditions(Conditions::if_match(ETag(*if_match)));
                match store.put(CONTAINER, key, value, &options) {
                    Ok(etag) => Response::Written {
                        version: etag.version(),
                    },
                    Err(error) => response_of_error(&error),
                }
            }
            Call::Delete => match store.delete(CONTAINER, key, &WriteOptions::default()) {
                Ok(()) => Response::Deleted,
                Err(error) => response_of_error(&error),
            },
        };
        let ret = clock.fetch_add(1, Ordering::SeqCst);
        if let Response::Found { version, .. } = &response {
            last_read.insert(key, *version);
        }
        history.push(Operation {
            key: key.to_vec(),
            thread,
            invoke,
            ret,
            call,
            response,
        });
    }
    history
}

/// Runs one seeded history on a fresh store and returns it (every operation completed).
pub fn record_history(durability: Durability, seed: u64) -> Vec<Operation> {
    let mut rng = SmallRng::seed_from_u64(seed);
    let threads = rng.gen_range(3..=4);
    let keys = rng.gen_range(2..=3);
    let store =
        Store::open_with_storage(Arc::new(SimStorage::new()), store_options(durability)).unwrap();
    store
        .create_container(CONTAINER, &Default::default())
        .unwrap();
    let clock = AtomicU64::new(0);
    // A spinning start line: a blocking barrier wakes its threads one by one, far enough
    // apart that short runs hardly overlap.
    let ready = AtomicUsize::new(0);
    let thread_seeds: Vec<u64> = (0..threads).map(|_| rng.gen()).collect();
    let history = std::thread::scope(|scope| {
        let handles: Vec<_> = thread_seeds
            .iter()
            .enumerate()
            .map(|(thread, &thread_seed)| {
                let operations = rng.gen_range(25..=35);
                let (store, clock, ready) = (&store, &clock, &ready);
                scope.spawn(move || {
                    ready.fetch_add(1, Ordering::SeqCst);
                    while ready.load(Ordering::SeqCst) < threads {
                        std::thread::yield_now();
                    }
                    run_thread(store, clock, thread, thread_seed, keys, operations)
                })
            })
            .collect();
        handles
            .into_iter()
            .flat_map(|handle| handle.join().unwrap())
            .collect()
    });
    store.close().unwrap();
    history
}

/// Pairs of operations on one key, from different threads, whose intervals overlap.
pub fn overlapping_pairs(history: &[Operation]) -> usize {
    let mut pairs = 0;
    for (index, a) in history.iter().enumerate() {
        for b in &history[index + 1..] {
            if a.key == b.key && a.thread != b.thread && a.invoke < b.ret && b.invoke < a.ret {
                pairs += 1;
            }
        }
    }
    pairs
}

/// One history (durability from the seed: buffered three times in four), checked. Returns
/// the number of overlapping pairs of operations on one key (how much the threads raced).
pub fn case(seed: u64) -> u64 {
    let durability = if seed % 4 == 3 {
        Durability::Sync
    } else {
        Durability::Buffered
    };
    let history = record_history(durability, seed);
    if let Err(violation) = linearizability::check(&history) {
        panic!("history {seed} ({durability:?}) is not linearizable:\n{violation}");
    }
    overlapping_pairs(&history) as u64
}
