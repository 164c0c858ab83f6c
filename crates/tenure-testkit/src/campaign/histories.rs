//! Linearizability histories (docs/spec.md §3 step 6, §9 "strong"; §4 leases): threads race gets, puts,
//! conditional puts and deletes — and, in lease histories, lease acquires and releases and
//! writes with and without lease ids — on a few keys of a fresh store; each history is recorded with
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
    Conditions, Durability, ETag, ErrorCode, LeaseDuration, LeaseId, LeaseRequest, ManualClock,
    ReadOptions, Store, StoreOptions, Version, WriteOptions,
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
        code @ (ErrorCode::LeaseAlreadyPresent
        | ErrorCode::LeaseIdMismatchWithLeaseOperation
        | ErrorCode::LeaseIdMissing
        | ErrorCode::LeaseIdMismatchWithBlobOperation
        | ErrorCode::LeaseNotPresentWithBlobOperation) => Response::Refused(code.name().to_owned()),
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
            _ => unreachable!("item histories make no lease calls"),
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
    let store =
        Store::open_with_storage(Arc::new(SimStorage::new()), store_options(durability)).unwrap();
    let history = record_history_on(&store, seed);
    store.close().unwrap();
    history
}

/// Runs one seeded history on `store`, which must hold no container named "c" yet (any
/// backend: the etcd backend's tests record theirs on a cluster).
pub fn record_history_on(store: &Store, seed: u64) -> Vec<Operation> {
    let mut rng = SmallRng::seed_from_u64(seed);
    let threads = rng.gen_range(3..=4);
    let keys = rng.gen_range(2..=3);
    store
        .create_container(CONTAINER, &Default::default())
        .unwrap();
    let clock = AtomicU64::new(0);
    // A spinning start line: a blocking barrier wakes its threads one by one, far enough
    // apart that short runs hardly overlap.
    let ready = AtomicUsize::new(0);
    let thread_seeds: Vec<u64> = (0..threads).map(|_| rng.gen()).collect();
    std::thread::scope(|scope| {
        let handles: Vec<_> = thread_seeds
            .iter()
            .enumerate()
            .map(|(thread, &thread_seed)| {
                let operations = rng.gen_range(25..=35);
                let (clock, ready) = (&clock, &ready);
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
    })
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

/// The store's id for lease index `lease` (a fixed UUID per thread).
fn lease_id(lease: u8) -> LeaseId {
    LeaseId(0x1000_0000_0000_4000_8000_0000_0000_0000 | u128::from(lease))
}

/// One thread of a lease history: acquires and releases of its own infinite lease, gets,
/// puts and deletes with its own lease id or none, conditional puts.
fn run_lease_thread(
    store: &Store,
    clock: &AtomicU64,
    thread: usize,
    seed: u64,
    operations: usize,
) -> Vec<Operation> {
    let mut rng = SmallRng::seed_from_u64(seed);
    let mut last_read: HashMap<&[u8], Version> = HashMap::new();
    let own = thread as u8;
    let mut history = Vec::with_capacity(operations);
    for number in 0..operations {
        let key = KEYS[rng.gen_range(0..2)];
        let value = format!("t{thread}-{number}").into_bytes();
        let call = match rng.gen_range(0..100) {
            0..=19 => Call::Get,
            20..=31 => Call::Put { value },
            32..=45 => Call::PutWithLease { value, lease: own },
            46..=53 => Call::PutIfMatch {
                value,
                if_match: last_read.get(key).copied().unwrap_or(0),
            },
            54..=58 => Call::Delete,
            59..=63 => Call::DeleteWithLease { lease: own },
            64..=83 => Call::AcquireLease { lease: own },
            _ => Call::ReleaseLease { lease: own },
        };
        let with_lease = |lease: u8| WriteOptions {
            lease_id: Some(lease_id(lease)),
            ..WriteOptions::default()
        };
        let written = |result: tenure::Result<ETag>| match result {
            Ok(etag) => Response::Written {
                version: etag.version(),
            },
            Err(error) => response_of_error(&error),
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
            Call::Put { value } => {
                written(store.put(CONTAINER, key, value, &WriteOptions::default()))
            }
            Call::PutWithLease { value, lease } => {
                written(store.put(CONTAINER, key, value, &with_lease(*lease)))
            }
            Call::PutIfMatch { value, if_match } => {
                let options = WriteOptions::with_conditions(Conditions::if_match(ETag(*if_match)));
                written(store.put(CONTAINER, key, value, &options))
            }
            Call::Delete | Call::DeleteWithLease { .. } => {
                let options = match &call {
                    Call::DeleteWithLease { lease } => with_lease(*lease),
                    _ => WriteOptions::default(),
                };
                match store.delete(CONTAINER, key, &options) {
                    Ok(()) => Response::Deleted,
                    Err(error) => response_of_error(&error),
                }
            }
            Call::AcquireLease { lease } => {
                let request = LeaseRequest {
                    duration: LeaseDuration::Infinite,
                    proposed_id: Some(lease_id(*lease)),
                    holder: None,
                };
                match store.acquire_lease(CONTAINER, key, &request) {
                    Ok(granted) if granted.id == lease_id(*lease) => Response::LeaseGranted,
                    Ok(granted) => Response::Failed(format!("granted another id {}", granted.id)),
                    Err(error) => response_of_error(&error),
                }
            }
            Call::ReleaseLease { lease } => {
                match store.release_lease(CONTAINER, key, lease_id(*lease)) {
                    Ok(()) => Response::LeaseReleased,
                    Err(error) => response_of_error(&error),
                }
            }
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

/// Runs one seeded lease history (three threads, two keys) on a fresh store.
pub fn record_lease_history(durability: Durability, seed: u64) -> Vec<Operation> {
    let mut rng = SmallRng::seed_from_u64(seed);
    let threads = 3;
    let store =
        Store::open_with_storage(Arc::new(SimStorage::new()), store_options(durability)).unwrap();
    store
        .create_container(CONTAINER, &Default::default())
        .unwrap();
    let clock = AtomicU64::new(0);
    let ready = AtomicUsize::new(0);
    let thread_seeds: Vec<u64> = (0..threads).map(|_| rng.gen()).collect();
    let history = std::thread::scope(|scope| {
        let handles: Vec<_> = thread_seeds
            .iter()
            .enumerate()
            .map(|(thread, &thread_seed)| {
                let operations = rng.gen_range(20..=30);
                let (store, clock, ready) = (&store, &clock, &ready);
                scope.spawn(move || {
                    ready.fetch_add(1, Ordering::SeqCst);
                    while ready.load(Ordering::SeqCst) < threads {
                        std::thread::yield_now();
                    }
                    run_lease_thread(store, clock, thread, thread_seed, operations)
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

/// One history, checked: by the seed modulo 4, item histories in `buffered` (0, 1) or `sync`
/// (3) mode, or a lease history (2). Returns the number of overlapping pairs of operations on
/// one key (how much the threads raced).
pub fn case(seed: u64) -> u64 {
    let durability = if seed % 4 == 3 || seed % 8 == 6 {
        Durability::Sync
    } else {
        Durability::Buffered
    };
    let history = if seed % 4 == 2 {
        record_lease_history(durability, seed)
    } else {
        record_history(durability, seed)
    };
    if let Err(violation) = linearizability::check(&history) {
        panic!("history {seed} ({durability:?}) is not linearizable:\n{violation}");
    }
    overlapping_pairs(&history) as u64
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lease_histories_reach_every_lease_outcome_and_check() {
        let mut outcomes = std::collections::BTreeSet::new();
        for seed in 0..30 {
            let history = record_lease_history(Durability::Buffered, seed);
            linearizability::check(&history).expect("linearizable");
            for operation in &history {
                outcomes.insert(match &operation.response {
                    Response::Refused(code) => code.clone(),
                    other => format!("{:?}", std::mem::discriminant(other)),
                });
            }
        }
        for code in [
            "LeaseAlreadyPresent",
            "LeaseIdMismatchWithLeaseOperation",
            "LeaseIdMissing",
            "LeaseIdMismatchWithBlobOperation",
            "LeaseNotPresentWithBlobOperation",
        ] {
            assert!(
                outcomes.contains(code),
                "never refused with {code}: {outcomes:?}"
            );
        }
        assert!(outcomes.len() >= 11, "{outcomes:?}");
    }
}
