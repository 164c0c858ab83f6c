//! Sorting the slots replayed at open into key order, for building the ordered index.
//!
//! Comparing slots directly reads two slots per comparison, each a cache miss in a heap of
//! a million slots scattered in hash order. Instead every slot's key is read once, in a pass
//! that prefetches ahead, into a 16-byte sort word: the key's bytes after the prefix every
//! replayed key shares. Words order keys as their bytes do, so the sort reads slots only to
//! break ties between keys whose first 16 distinguishing bytes agree.

use std::cmp::Ordering;

use crate::index::point_index::SlotView;

/// How far ahead of the slot it reads a pass starts loading one.
pub(super) const PREFETCH_AHEAD: usize = 8;

/// Views of `slots` in index-key order (no two slots share a key).
pub(super) fn key_order<'g>(slots: &[SlotView<'g>]) -> Vec<SlotView<'g>> {
    let shared = shared_prefix_length(slots);
    let mut keyed: Vec<(u128, SlotView<'g>)> = Vec::with_capacity(slots.len());
    for (position, slot) in slots.iter().enumerate() {
        prefetch_ahead(slots, position);
        // SAFETY: the index holds the slot for `'g`, as it does for `slot`.
        let view = unsafe { SlotView::from_handle(slot.handle()) };
        keyed.push((sort_word(slot.index_key(), shared), view));
    }
    keyed.sort_unstable_by(|(left_word, left), (right_word, right)| {
        left_word
            .cmp(right_word)
            .then_with(|| tie_break(left.index_key(), right.index_key()))
    });
    keyed.into_iter().map(|(_, slot)| slot).collect()
}

/// Equal words: the keys agree on every byte the words cover, so the full comparison decides.
#[cold]
fn tie_break(left: &[u8], right: &[u8]) -> Ordering {
    left.cmp(right)
}

/// The length of the prefix every key shares (no longer than the shortest key).
fn shared_prefix_length(slots: &[SlotView<'_>]) -> usize {
    let Some(first) = slots.first() else {
        return 0;
    };
    let first = first.index_key();
    let mut shared = first.len();
    for (position, slot) in slots.iter().enumerate().skip(1) {
        prefetch_ahead(slots, position);
        let key = slot.index_key();
        shared = first[..shared]
            .iter()
            .zip(key)
            .take_while(|(a, b)| a == b)
            .count();
        if shared == 0 {
            break;
        }
    }
    shared
}

/// The 16 bytes of `key` after `shared`, big-endian, padded with zeros: a smaller word means a
/// smaller key among keys that share `shared` bytes; equal words decide nothing (a shorter
/// key padded with zeros ties with a longer one).
fn sort_word(key: &[u8], shared: usize) -> u128 {
    let mut bytes = [0u8; 16];
    let rest = &key[shared.min(key.len())..];
    let length = rest.len().min(16);
    bytes[..length].copy_from_slice(&rest[..length]);
    u128::from_be_bytes(bytes)
}

fn prefetch_ahead(slots: &[SlotView<'_>], position: usize) {
    if let Some(ahead) = slots.get(position + PREFETCH_AHEAD) {
        crate::base::prefetch(ahead.address());
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::index::point_index::PointIndex;
    use crate::index::{Index, ItemSlot};

    /// Keys that share long prefixes, differ only past 16 bytes, are prefixes of each other
    /// or hold zero bytes: they sort in byte order, and the ordered index built at the end of
    /// a replay walks them so, whether the sort words or the tie-breaks decide (short keys leave no shared
    /// prefix, so the words of the long keys tie).
    #[test]
    fn the_ordered_index_built_after_a_replay_walks_every_key_in_byte_order() {
        for with_short_keys in [false, true] {
            let mut keys: Vec<Vec<u8>> = Vec::new();
            for number in (0..3_000u32).rev() {
                keys.push(format!("tenant-0000000000000000-{number:07}").into_bytes());
                keys.push(format!("tenant-0000000000000000-{number:07}-suffix").into_bytes());
            }
            if with_short_keys {
                keys.extend([
                    b"".to_vec(),
                    b"\0".to_vec(),
                    b"\0\0".to_vec(),
                    b"t".to_vec(),
                ]);
                keys.extend([b"tenant-0000000000000000\0".to_vec(), b"tenant-1".to_vec()]);
            }
            let index_keys: Vec<Vec<u8>> = keys
                .iter()
                .map(|key| crate::index::index_key(7, key).to_vec())
                .collect();
            let points = PointIndex::new();
            let guard = crossbeam_epoch::pin();
            for index_key in &index_keys {
                let _ = points.insert(ItemSlot::new(index_key), &guard);
            }
            let slots: Vec<_> = points.slots(&guard).collect();
            let sorted: Vec<Vec<u8>> = key_order(&slots)
                .iter()
                .map(|slot| slot.index_key().to_vec())
                .collect();
            let mut expected = index_keys.clone();
            expected.sort();
            assert_eq!(sorted, expected);

            let index = Index::new();
            for index_key in &index_keys {
                index.get_or_insert_replaying(index_key, &guard).unwrap();
            }
            let walked: Vec<Vec<u8>> = index
                .range_from(&[], &[])
                .unwrap()
                .map(|slot| slot.index_key()[8..].to_vec())
                .collect();
            keys.sort();
            assert_eq!(walked, keys);
        }
    }

    /// Writers add new keys while the first walk builds the ordered index: each key is added
    /// by its writer, by the build, or by both, and a walk after all of them meets every key
    /// once, in order.
    #[test]
    fn keys_added_while_the_first_walk_builds_the_ordered_index_are_all_walked() {
        const WRITERS: u32 = 2;
        const KEYS_PER_WRITER: u32 = 20_000;
        for _ in 0..8 {
            let index = Index::new();
            let key = |writer: u32, number: u32| {
                crate::index::index_key(1, format!("w{writer}-{number:06}").as_bytes()).to_vec()
            };
            let guard = crossbeam_epoch::pin();
            for number in 0..1_000 {
                index
                    .get_or_insert_replaying(&key(WRITERS, number), &guard)
                    .unwrap();
            }
            drop(guard);
            std::thread::scope(|scope| {
                for writer in 0..WRITERS {
                    let (index, key) = (&index, &key);
                    scope.spawn(move || {
                        for number in 0..KEYS_PER_WRITER {
                            index.get_or_insert(&key(writer, number)).unwrap();
                        }
                    });
                }
                assert!(index.range_from(&[], &[]).unwrap().count() >= 1_000);
            });
            let mut expected: Vec<Vec<u8>> = (0..WRITERS)
                .flat_map(|writer| (0..KEYS_PER_WRITER).map(move |number| (writer, number)))
                .chain((0..1_000).map(|number| (WRITERS, number)))
                .map(|(writer, number)| key(writer, number))
                .collect();
            expected.sort();
            let walked: Vec<Vec<u8>> = index
                .range_from(&[], &[])
                .unwrap()
                .map(|slot| slot.index_key().to_vec())
                .collect();
            assert_eq!(walked, expected);
        }
    }

    #[test]
    fn sort_words_order_keys_that_share_a_prefix_as_their_bytes_do() {
        let keys: [&[u8]; 7] = [
            b"key-0001",
            b"key-0001\0",
            b"key-0001\0\x01",
            b"key-0002",
            b"key-00020000000000000000a",
            b"key-00020000000000000000b",
            b"key-1",
        ];
        let shared = 4;
        for pair in keys.windows(2) {
            let (low, high) = (sort_word(pair[0], shared), sort_word(pair[1], shared));
            assert!(low <= high, "{:?} before {:?}", pair[0], pair[1]);
            if low == high {
                assert_eq!(tie_break(pair[0], pair[1]), Ordering::Less);
            }
        }
    }
}
