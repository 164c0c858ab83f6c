//! The ordered index against `BTreeSet`, and walks while writers split nodes on threads.

use std::collections::BTreeSet;
use std::sync::atomic::{AtomicI64, Ordering};

use proptest::prelude::*;

use super::{node_at, OrderedIndex, CAPACITY};
use crate::index::slot::ItemSlot;

fn keys_from(index: &OrderedIndex, from: &[u8]) -> Vec<Vec<u8>> {
    index
        .walk_from(from)
        .map(|slot| slot.index_key().to_vec())
        .collect()
}

/// Inserts `keys` (distinct) and checks every walk against a `BTreeSet`.
fn check_against_a_btree_set(keys: &[Vec<u8>], starts: &[Vec<u8>]) {
    let index = OrderedIndex::new();
    let mut expected = BTreeSet::new();
    for key in keys {
        if expected.insert(key.clone()) {
            index.insert(ItemSlot::new(key));
        }
    }
    let all: Vec<_> = expected.iter().cloned().collect();
    assert_eq!(keys_from(&index, b""), all);
    for start in starts.iter().chain(keys) {
        let wanted: Vec<_> = expected.range(start.clone()..).cloned().collect();
        assert_eq!(keys_from(&index, start), wanted, "walk from {start:?}");
    }
}

/// 8-byte container ids (few) then keys: what index keys look like.
fn index_key(container: u8, key: &[u8]) -> Vec<u8> {
    let mut index_key = vec![0, 0, 0, 0, 0, 0, 0, container];
    index_key.extend_from_slice(key);
    index_key
}

#[test]
fn ascending_descending_and_random_inserts_walk_in_key_order() {
    let ascending: Vec<_> = (0..5_000u32)
        .map(|n| index_key(1, format!("user:{n:012}").as_bytes()))
        .collect();
    let descending: Vec<_> = ascending.iter().rev().cloned().collect();
    let mut state = 7u64;
    let random: Vec<_> = (0..5_000)
        .map(|_| {
            state = state
                .wrapping_mul(6364136223846793005)
                .wrapping_add(1442695040888963407);
            index_key(
                (state >> 62) as u8,
                &state.to_be_bytes()[..(state % 9) as usize],
            )
        })
        .collect();
    let starts = vec![
        vec![],
        vec![0xff; 20],
        index_key(1, b"user:"),
        index_key(9, b""),
    ];
    for keys in [&ascending, &descending, &random] {
        check_against_a_btree_set(keys, &starts);
    }
}

#[test]
fn ascending_inserts_leave_full_leaves() {
    let index = OrderedIndex::new();
    for n in 0..10_000u32 {
        index.insert(ItemSlot::new(&index_key(1, &n.to_be_bytes())));
    }
    let (mut leaves, mut entries) = (0, 0);
    // SAFETY: the tree is not changing; nodes live as long as `index`.
    let mut node = unsafe { node_at(index.root.load(Ordering::Relaxed)) };
    while node.height > 0 {
        let first_child = unsafe { node.as_inner() }.children[0].load(Ordering::Relaxed);
        node = unsafe { node_at(first_child) };
    }
    let mut leaf = unsafe { node.as_leaf() };
    loop {
        leaves += 1;
        entries += leaf.header.count();
        match leaf.next.load(Ordering::Relaxed) {
            0 => break,
            next => leaf = unsafe { node_at(next).as_leaf() },
        }
    }
    assert_eq!(entries, 10_000);
    assert!(entries * 10 >= leaves * CAPACITY * 9, "{leaves} leaves");
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(200))]
    /// Short keys over a small alphabet that includes 0: prefixes of each other, keys
    /// equal in their heads, ties decided only by length.
    #[test]
    fn any_keys_walk_as_a_btree_set_does(
        keys in proptest::collection::vec(proptest::collection::vec(0u8..3, 0..12), 0..400),
        starts in proptest::collection::vec(proptest::collection::vec(0u8..3, 0..12), 0..8),
    ) {
        check_against_a_btree_set(&keys, &starts);
    }
}

#[test]
fn walks_meet_every_key_added_before_they_began_while_writers_split_nodes() {
    let index = OrderedIndex::new();
    let key = |n: i64| {
        index_key(
            1,
            &((n as u64).wrapping_mul(0x9E37_79B9_7F4A_7C15)).to_be_bytes(),
        )
    };
    // Writer w adds the keys n with n % 2 == w, in order; its entry is the last one added.
    let added = [AtomicI64::new(-1), AtomicI64::new(-1)];
    const KEYS: i64 = 40_000;
    std::thread::scope(|scope| {
        for writer in 0..2i64 {
            let (index, added) = (&index, &added);
            scope.spawn(move || {
                for n in (writer..KEYS).step_by(2) {
                    index.insert(ItemSlot::new(&key(n)));
                    added[writer as usize].store(n, Ordering::Release);
                }
            });
        }
        scope.spawn(|| {
            for round in 0..200 {
                let passed = [
                    added[0].load(Ordering::Acquire),
                    added[1].load(Ordering::Acquire),
                ];
                let walked: Vec<_> = keys_from(&index, &key(round));
                assert!(
                    walked.windows(2).all(|pair| pair[0] < pair[1]),
                    "out of order"
                );
                let walked: BTreeSet<_> = walked.into_iter().collect();
                for n in 0..KEYS {
                    let wanted = key(n);
                    if n <= passed[(n % 2) as usize] && wanted >= key(round) {
                        assert!(
                            walked.contains(&wanted),
                            "key {n}, added before the walk, is missing"
                        );
                    }
                }
            }
        });
    });
    assert_eq!(keys_from(&index, b"").len(), KEYS as usize);
}

#[test]
fn dropping_the_index_releases_its_slots() {
    let slot = ItemSlot::new(&index_key(1, b"kept"));
    let index = OrderedIndex::new();
    index.insert(slot.clone());
    for n in 0..1_000u32 {
        index.insert(ItemSlot::new(&index_key(1, &n.to_be_bytes())));
    }
    assert_eq!(slot.reference_count(), 2);
    drop(index);
    assert_eq!(slot.reference_count(), 1);
}
