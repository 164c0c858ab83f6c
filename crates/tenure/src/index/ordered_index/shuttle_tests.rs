//! The tree's optimistic locking under shuttle's schedulers, with nodes of 3 entries so a
//! handful of keys splits leaves, inner nodes and the root while walks read them.

use shuttle::sync::Arc;
use shuttle::thread;

use super::OrderedIndex;
use crate::index::slot::ItemSlot;

fn key(n: u64) -> Vec<u8> {
    // Interleaved across writers, and sharing long prefixes, so heads tie often.
    let mut key = vec![0u8; 8];
    key.extend_from_slice(&[7; 9]);
    key.push((n.wrapping_mul(37) % 64) as u8);
    key
}

fn scenario() {
    const WRITERS: u64 = 2;
    const KEYS_PER_WRITER: u64 = 6;
    let index = Arc::new(OrderedIndex::new());
    let mut threads = Vec::new();
    for writer in 0..WRITERS {
        let index = index.clone();
        threads.push(thread::spawn(move || {
            for n in 0..KEYS_PER_WRITER {
                index.insert(ItemSlot::new(&key(n * WRITERS + writer)));
            }
        }));
    }
    let walker = {
        let index = index.clone();
        thread::spawn(move || {
            for _ in 0..3 {
                let walked: Vec<Vec<u8>> = index
                    .walk_from(&[])
                    .map(|slot| slot.index_key().to_vec())
                    .collect();
                assert!(
                    walked.windows(2).all(|pair| pair[0] < pair[1]),
                    "{walked:?}"
                );
            }
        })
    };
    for thread in threads {
        thread.join().unwrap();
    }
    walker.join().unwrap();
    let mut expected: Vec<_> = (0..WRITERS * KEYS_PER_WRITER).map(key).collect();
    expected.sort();
    let walked: Vec<Vec<u8>> = index
        .walk_from(&[])
        .map(|slot| slot.index_key().to_vec())
        .collect();
    assert_eq!(walked, expected);
}

#[test]
fn shuttle_ordered_index_inserts_and_walks() {
    shuttle::check_pct(scenario, 5_000, 3);
}

#[test]
fn shuttle_ordered_index_random_schedules() {
    shuttle::check_random(scenario, 5_000);
}
