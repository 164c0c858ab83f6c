//! The point index: an item's slot by its index key, read without locks or allocation.
//!
//! Slots are only ever added while an index lives (a deleted item keeps its slot until the
//! next open), so the table needs no deletion protocol:
//! - 256 shards, each an open-addressing table (linear probing) of slot pointers, at most half
//!   full. A bucket is null or a slot; once set it never changes.
//! - A reader pins the epoch, loads its shard's table and probes it: one bucket, then the slot
//!   it points at (to compare the key). Nothing is written. A bucket keeps 3 bits of the key's
//!   hash in its pointer's alignment bits, so a probe passes over another key's bucket
//!   without reading that slot 7 times in 8.
//! - A bucket is one 64-bit word: the slot's arena handle (`arena.rs`), the tag, and the value
//!   hint below. Handles instead of pointers make a bucket 8 bytes where pointer and hint took
//!   12, and the hint arrives in the bucket's own cache line.
//! - Writers of one shard take its mutex. One adding a slot to a half-full table builds a
//!   table twice as large, publishes it, and leaves the old one to the epoch: readers still
//!   probing it find every slot added before it was replaced.
//!
//! It replaced papaya's map, whose entries were each an allocation of their own: a lookup
//! went through the table, the entry and then the slot, about 3.5 cache misses of the 9 a
//! cold get took (cachegrind, 200k keys).
//!
//! In each bucket a table keeps a *value hint*: where the key's newest value was in the
//! log when it was written (`Index::note_value_location`). A lookup hands the hint of a bucket
//! whose tag matches to its caller before it reads that bucket's slot, so a get starts
//! loading the value while the slot is still on its way: two dependent cache misses instead
//! of three. A hint is only ever an address to prefetch: a stale one (a racing writer, a
//! compaction) costs a wasted load, never a wrong read.

use std::hash::BuildHasher;
use std::marker::PhantomData;
use std::mem::ManuallyDrop;
use std::sync::atomic::{AtomicU64, Ordering};

use crossbeam_epoch::{Atomic, Guard, Owned};
use parking_lot::Mutex;

use crate::base::arena::Handle;
use crate::base::zeroed_array::ZeroedArray;
use crate::index::slot::ItemSlot;

const SHARD_BITS: u32 = 8;
/// The shards a key's hash spreads slots over; a persisted index lists its items shard by
/// shard, so that an open can load them one shard at a time (`checkpoint/`).
pub(crate) const SHARDS: usize = 1 << SHARD_BITS;
const INITIAL_BUCKETS: usize = 16;
/// The largest table a shard is sized to ahead of its slots (`reserve`): 2^24 buckets
/// (128 MiB per shard) bounds what a count read from a file can make an open allocate.
const MAXIMUM_PRESIZED_BUCKETS: usize = 1 << 24;
/// A bucket's word: bits 0–31 the slot's handle (0: an empty bucket), 32–34 the key's hash
/// tag, 35–63 the value hint.
const TAG_SHIFT: u32 = 32;
const TAG_MASK: u64 = 0b111;
const HINT_SHIFT: u32 = 35;
/// The bits of a value hint (`Index::note_value_location` makes them).
pub(crate) const HINT_BITS: u32 = u64::BITS - HINT_SHIFT;
const HANDLE_AND_TAG: u64 = (1 << HINT_SHIFT) - 1;

/// The handle of the slot a set bucket holds.
fn slot_handle(bucket: u64) -> Handle {
    bucket as Handle
}

fn bucket_tag(bucket: u64) -> u64 {
    (bucket >> TAG_SHIFT) & TAG_MASK
}

fn bucket_hint(bucket: u64) -> u32 {
    (bucket >> HINT_SHIFT) as u32
}

fn tag_of(hash: u64) -> u64 {
    // Bits neither the shard (the top 8) nor a bucket index (the bottom ones) uses.
    (hash >> 40) & TAG_MASK
}

/// Where a writer records its key's value hint: the key's bucket, found by the writer's own
/// lookup (acquire) or insert.
#[derive(Clone, Copy, Debug)]
pub(crate) struct HintCell<'g>(&'g AtomicU64);

impl HintCell<'_> {
    /// Sets the hint (below 2^`HINT_BITS`), leaving the bucket's slot and tag as they are
    /// (they never change once set, so writing them again with the same bits is safe even
    /// when another writer sets a hint at the same time: one of the two hints stays).
    pub(crate) fn set(&self, hint: u32) {
        debug_assert!(u64::from(hint) < 1 << HINT_BITS);
        let word = self.0.load(Ordering::Relaxed);
        let updated = (word & HANDLE_AND_TAG) | (u64::from(hint) << HINT_SHIFT);
        if word != updated {
            // Release: a reader that loads this word (acquire) must still see the slot whole.
            // The slot's publication happens before this writer found the slot, so releasing
            // here hands it on.
            self.0.store(updated, Ordering::Release);
        }
    }
}

pub(crate) struct PointIndex {
    shards: Box<[Shard]>,
    hasher: IndexKeyHasher,
}

/// The index keys' hash: folded multiplies (as foldhash's) over 16 bytes at a time, seeded at
/// random per index. Why not foldhash through `Hash`: that path hashes the slice's length and
/// its bytes as separate writes, about 125 instructions for a 32-byte index key where this
/// takes about 30, and a get computes it before its first cache miss can start (the bucket's
/// address depends on it).
struct IndexKeyHasher {
    seeds: [u64; 4],
}

impl IndexKeyHasher {
    fn new() -> IndexKeyHasher {
        let random = foldhash::fast::RandomState::default();
        IndexKeyHasher {
            seeds: [0u64, 1, 2, 3].map(|index| random.hash_one(index)),
        }
    }

    fn hash(&self, key: &[u8]) -> u64 {
        let [length_seed, block_seed, tail_seed, final_seed] = self.seeds;
        // The length goes in through a multiply: xored in directly, a key's last word could
        // cancel it (`[0]` and `[0; 8] ++ [17] ++ [0; 7]` shared a hash).
        let mut state = folded_multiply(length_seed ^ key.len() as u64, final_seed);
        let mut rest = key;
        while rest.len() > 16 {
            let (block, after) = rest.split_at(16);
            state = folded_multiply(
                read_u64(&block[..8]) ^ block_seed,
                read_u64(&block[8..]) ^ state,
            );
            rest = after;
        }
        // The last 1 to 16 bytes (none for an empty key), read as two words that together
        // cover every byte, so for a given length distinct keys give distinct words.
        let (first, last) = match rest.len() {
            8..=16 => (read_u64(&rest[..8]), read_u64(&rest[rest.len() - 8..])),
            4..=7 => (
                u64::from(read_u32(&rest[..4])),
                u64::from(read_u32(&rest[rest.len() - 4..])),
            ),
            1..=3 => (
                u64::from(rest[0]) | u64::from(rest[rest.len() / 2]) << 8,
                u64::from(rest[rest.len() - 1]),
            ),
            _ => (0, 0),
        };
        state = folded_multiply(first ^ tail_seed, last ^ state);
        folded_multiply(state, final_seed)
    }
}

fn folded_multiply(left: u64, right: u64) -> u64 {
    let product = u128::from(left) * u128::from(right);
    product as u64 ^ (product >> 64) as u64
}

fn read_u64(bytes: &[u8]) -> u64 {
    u64::from_le_bytes(bytes[..8].try_into().expect("8 bytes"))
}

fn read_u32(bytes: &[u8]) -> u32 {
    u32::from_le_bytes(bytes[..4].try_into().expect("4 bytes"))
}

struct Shard {
    table: Atomic<Table>,
    /// Held to add a slot to this shard; counts the shard's slots.
    slots: Mutex<usize>,
}

/// A power-of-two number of buckets, at most half of them set. A set bucket holds, with its
/// key's hash tag, the handle of a slot the index owns one reference to
/// (`ItemSlot::into_handle`); a table that is replaced hands its references on to its
/// successor, so dropping a table releases nothing. A set bucket's slot and tag never change;
/// its value hint (0: none) is rewritten by any writer of the key: it is a prefetch address,
/// trusted for nothing.
struct Table {
    buckets: ZeroedArray<AtomicU64>,
}

/// A slot an index holds, viewed without taking a reference: the indexes keep every slot alive
/// while they live, and the view lasts no longer than what it was read from (a point-index
/// table, or the ordered index).
pub(crate) struct SlotView<'a> {
    slot: ManuallyDrop<ItemSlot>,
    _table: PhantomData<&'a Table>,
}

impl SlotView<'_> {
    /// A view of the slot `handle` (`ItemSlot::into_handle`).
    ///
    /// # Safety
    /// Some index holds that reference for at least `'a`.
    pub(crate) unsafe fn from_handle<'a>(handle: Handle) -> SlotView<'a> {
        SlotView {
            // SAFETY: the caller's promise; the view never gives the reference back.
            slot: ManuallyDrop::new(unsafe { ItemSlot::from_handle(handle) }),
            _table: PhantomData,
        }
    }

    /// # Safety
    /// `bucket` is a set bucket's value, read from a table that outlives the view.
    unsafe fn new<'a>(bucket: u64) -> SlotView<'a> {
        // SAFETY: the bucket holds `into_handle` of a live slot.
        unsafe { SlotView::from_handle(slot_handle(bucket)) }
    }
}

impl std::ops::Deref for SlotView<'_> {
    type Target = ItemSlot;

    fn deref(&self) -> &ItemSlot {
        &self.slot
    }
}

impl Table {
    fn with_buckets(count: usize) -> Table {
        assert!(count.is_power_of_two());
        Table {
            buckets: ZeroedArray::zeroed(count),
        }
    }

    fn mask(&self) -> usize {
        self.buckets.len() - 1
    }

    /// The slot of `index_key` and its bucket's number, or the number of the empty bucket
    /// where it would go. `candidate_hint` gets the value hint of each bucket whose tag matches, before its slot
    /// is read.
    fn probe(
        &self,
        hash: u64,
        index_key: &[u8],
        mut candidate_hint: impl FnMut(u32),
    ) -> Result<(SlotView<'_>, usize), usize> {
        let tag = tag_of(hash);
        let mut index = hash as usize & self.mask();
        // At most half the buckets are set, so an empty one ends every probe.
        for _ in 0..self.buckets.len() {
            let value = self.buckets[index].load(Ordering::Acquire);
            if value == 0 {
                return Err(index);
            }
            if bucket_tag(value) == tag {
                let hint = bucket_hint(value);
                if hint != 0 {
                    candidate_hint(hint);
                }
                // SAFETY: a set bucket of this table.
                let slot = unsafe { SlotView::new(value) };
                if slot.index_key() == index_key {
                    return Ok((slot, index));
                }
            }
            index = (index + 1) & self.mask();
        }
        unreachable!("a point-index table is never full");
    }

    fn slots(&self) -> impl Iterator<Item = SlotView<'_>> {
        self.buckets.iter().filter_map(|bucket| {
            let value = bucket.load(Ordering::Acquire);
            // SAFETY: a set bucket of this table.
            (value != 0).then(|| unsafe { SlotView::new(value) })
        })
    }
}

impl PointIndex {
    pub(crate) fn new() -> PointIndex {
        PointIndex::with_hasher(IndexKeyHasher::new(), INITIAL_BUCKETS)
    }

    /// An index whose hash takes `seeds` (another index's [`PointIndex::seeds`]), so that a
    /// persisted index's items fall into the shards they were listed under; each shard's
    /// table is sized when its items are restored ([`PointIndex::reserve`]).
    pub(crate) fn with_seeds(seeds: [u64; 4]) -> PointIndex {
        PointIndex::with_hasher(IndexKeyHasher { seeds }, INITIAL_BUCKETS)
    }

    fn with_hasher(hasher: IndexKeyHasher, buckets: usize) -> PointIndex {
        PointIndex {
            shards: (0..SHARDS)
                .map(|_| Shard {
                    table: Atomic::new(Table::with_buckets(buckets)),
                    slots: Mutex::new(0),
                })
                .collect(),
            hasher,
        }
    }

    /// The seeds of this index's hash.
    pub(crate) fn seeds(&self) -> [u64; 4] {
        self.hasher.seeds
    }

    /// The shard that holds `index_key`'s slot.
    pub(crate) fn shard_of(&self, index_key: &[u8]) -> usize {
        (self.hasher.hash(index_key) >> (64 - SHARD_BITS)) as usize
    }

    /// Grows `shard`'s table, if it must, to hold `slots` more slots without growing again:
    /// a persisted index's shard, before its items are restored.
    pub(crate) fn reserve(&self, shard: usize, slots: usize, guard: &Guard) {
        let shard = &self.shards[shard];
        let held = shard.slots.lock();
        // Room for the shard at most half full, bounded: a count read from a file must not
        // make an open allocate without limit (a fuller shard grows as usual).
        let wanted = (2 * (*held + slots))
            .checked_next_power_of_two()
            .unwrap_or(MAXIMUM_PRESIZED_BUCKETS)
            .min(MAXIMUM_PRESIZED_BUCKETS);
        // SAFETY: as in `table_and_hash`; under the shard's lock the table cannot change.
        let table = unsafe { shard.table.load(Ordering::Acquire, guard).deref() };
        if table.buckets.len() < wanted {
            self.grow(shard, table, wanted, guard);
        }
        drop(held);
    }

    fn shard_and_hash(&self, index_key: &[u8]) -> (&Shard, u64) {
        let hash = self.hasher.hash(index_key);
        // The top bits choose the shard, the bottom ones the bucket.
        (&self.shards[(hash >> (64 - SHARD_BITS)) as usize], hash)
    }

    /// The slot of `index_key`, borrowed for as long as `guard`.
    pub(crate) fn get<'g>(&self, index_key: &[u8], guard: &'g Guard) -> Option<SlotView<'g>> {
        self.get_hinted(index_key, guard, |_| {})
    }

    /// [`PointIndex::get`] that calls `prefetch_value` with the value hint of a bucket that
    /// may be the key's, before reading the bucket's slot: the caller can start loading the
    /// value while the slot loads.
    pub(crate) fn get_hinted<'g>(
        &self,
        index_key: &[u8],
        guard: &'g Guard,
        prefetch_value: impl FnMut(u32),
    ) -> Option<SlotView<'g>> {
        let table = self.table_and_hash(index_key, guard);
        table
            .0
            .probe(table.1, index_key, prefetch_value)
            .ok()
            .map(|(slot, _)| slot)
    }

    /// The slot of `index_key` and its bucket's value hint, to set once the writer knows
    /// where the new value is: borrowed for as long as `guard`. Should the table be replaced
    /// meanwhile, the hint lands in the old table and the key's next get goes without it.
    pub(crate) fn get_with_hint_cell<'g>(
        &self,
        index_key: &[u8],
        guard: &'g Guard,
    ) -> Option<(SlotView<'g>, HintCell<'g>)> {
        let (table, hash) = self.table_and_hash(index_key, guard);
        let (slot, bucket) = table.probe(hash, index_key, |_| {}).ok()?;
        Some((slot, HintCell(&table.buckets[bucket])))
    }

    /// Starts loading the bucket where a probe for `index_key` starts, so a lookup a little
    /// later finds it arriving (the replay at open: keys in log order miss the cache).
    pub(crate) fn prefetch(&self, index_key: &[u8], guard: &Guard) {
        let (table, hash) = self.table_and_hash(index_key, guard);
        crate::base::prefetch(&table.buckets[hash as usize & table.mask()]);
    }

    /// The table of `index_key`'s shard, and the key's hash.
    fn table_and_hash<'g>(&self, index_key: &[u8], guard: &'g Guard) -> (&'g Table, u64) {
        let (shard, hash) = self.shard_and_hash(index_key);
        // SAFETY: a shard's table is never null, and a replaced one is freed only through the
        // epoch, after every guard that could have loaded it.
        let table = unsafe { shard.table.load(Ordering::Acquire, guard).deref() };
        (table, hash)
    }

    /// Adds `slot` unless its key has a slot already; then returns that one instead. Returns
    /// the new bucket's value-hint cell, as [`PointIndex::get_with_hint_cell`] would.
    pub(crate) fn insert<'g>(
        &self,
        slot: ItemSlot,
        guard: &'g Guard,
    ) -> Result<HintCell<'g>, ItemSlot> {
        let (shard, hash) = self.shard_and_hash(slot.index_key());
        let mut slots = shard.slots.lock();
        // SAFETY: as in `table_and_hash`; under the shard's lock the table cannot change.
        let mut table = unsafe { shard.table.load(Ordering::Acquire, guard).deref() };
        let mut bucket = match table.probe(hash, slot.index_key(), |_| {}) {
            Ok((existing, _)) => return Err(ItemSlot::clone(&existing)),
            Err(empty) => empty,
        };
        if (*slots + 1) * 2 > table.buckets.len() {
            table = self.grow(shard, table, table.buckets.len() * 2, guard);
            let Err(empty) = table.probe(hash, slot.index_key(), |_| {}) else {
                unreachable!("the key is not in the shard (checked under its lock)");
            };
            bucket = empty;
        }
        let handle = slot.into_handle();
        table.buckets[bucket].store(
            u64::from(handle) | (tag_of(hash) << TAG_SHIFT),
            Ordering::Release,
        );
        *slots += 1;
        Ok(HintCell(&table.buckets[bucket]))
    }

    /// Replaces the shard's table with one of `buckets` (a larger power of two) holding the
    /// same slots. The caller holds the shard's lock.
    fn grow<'g>(
        &self,
        shard: &Shard,
        table: &Table,
        buckets: usize,
        guard: &'g Guard,
    ) -> &'g Table {
        debug_assert!(buckets > table.buckets.len());
        let larger = Table::with_buckets(buckets);
        for bucket in table.buckets.iter() {
            let value = bucket.load(Ordering::Relaxed);
            if value == 0 {
                continue;
            }
            // SAFETY: a set bucket of the current table.
            let slot = unsafe { SlotView::new(value) };
            let hash = self.hasher.hash(slot.index_key());
            let Err(empty) = larger.probe(hash, slot.index_key(), |_| {}) else {
                unreachable!("the keys of a table are distinct");
            };
            // The same slot, the same tag (its hash is the same) and its hint. A hint set in the
            // old table after this copy is lost, which costs a later get of that key its
            // prefetch.
            larger.buckets[empty].store(value, Ordering::Relaxed);
        }
        let previous = shard
            .table
            .swap(Owned::new(larger), Ordering::AcqRel, guard);
        // SAFETY: unreachable from the shard now; readers still probing it hold guards. Its
        // references went to the new table, and dropping a table releases none.
        unsafe { guard.defer_destroy(previous) };
        // Hand it to the global queue now: left in this thread's bag (which only fills with 64
        // deferred items), old tables outlived a load by far, each keeping its whole huge-page
        // chunk of tables resident (`zeroed_array.rs`): 17 tables of 32 KiB held 2 chunks
        // after a 1M-key load, 4 B per key.
        guard.flush();
        // SAFETY: just published; it lives until replaced, which takes this shard's lock.
        unsafe { shard.table.load(Ordering::Acquire, guard).deref() }
    }

    /// Every slot, in no order, borrowed for as long as `guard`.
    pub(crate) fn slots<'g>(&'g self, guard: &'g Guard) -> impl Iterator<Item = SlotView<'g>> {
        self.slots_by_shard(guard).map(|(_, slot)| slot)
    }

    /// Every slot with its shard, shard by shard, borrowed for as long as `guard`.
    pub(crate) fn slots_by_shard<'g>(
        &'g self,
        guard: &'g Guard,
    ) -> impl Iterator<Item = (usize, SlotView<'g>)> {
        self.shards
            .iter()
            .enumerate()
            .flat_map(move |(number, shard)| {
                // SAFETY: as in `get`.
                let table = unsafe { shard.table.load(Ordering::Acquire, guard).deref() };
                table.slots().map(move |slot| (number, slot))
            })
    }
}

impl Drop for PointIndex {
    fn drop(&mut self) {
        // SAFETY: `&mut self`: no reader or writer is left, so the tables can be taken.
        let guard = unsafe { crossbeam_epoch::unprotected() };
        for shard in self.shards.iter() {
            let table = shard
                .table
                .swap(crossbeam_epoch::Shared::null(), Ordering::AcqRel, guard);
            // SAFETY: as above; the table's buckets own one reference to each slot.
            let table = unsafe { table.into_owned() };
            for bucket in table.buckets.iter() {
                let value = bucket.load(Ordering::Relaxed);
                if value != 0 {
                    // SAFETY: the table's own reference, taken back once.
                    drop(unsafe { ItemSlot::from_handle(slot_handle(value)) });
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::{IndexKeyHasher, PointIndex, SHARDS, SHARD_BITS};
    use crate::index::slot::ItemSlot;

    /// Keys that differ in one counter (the harness's shape: a container id, then a 24-byte
    /// key), and keys of every length up to 40 bytes that differ in one byte, spread evenly
    /// over the shards (top bits), the tags and the low bucket bits.
    #[test]
    fn the_index_key_hash_spreads_similar_keys_over_shards_tags_and_buckets() {
        let hasher = IndexKeyHasher::new();
        let mut keys: Vec<Vec<u8>> = (0u64..200_000)
            .map(|counter| {
                let mut key = 7u64.to_be_bytes().to_vec();
                key.extend_from_slice(&[b'k'; 16]);
                key.extend_from_slice(&counter.to_be_bytes());
                key
            })
            .collect();
        for length in 1..=40usize {
            for byte in 0..=255u8 {
                let mut key = vec![0u8; length];
                key[length / 2] = byte;
                keys.push(key);
            }
        }
        let hashes: Vec<u64> = keys.iter().map(|key| hasher.hash(key)).collect();
        let mut distinct = hashes.clone();
        distinct.sort_unstable();
        distinct.dedup();
        // 210k keys in 2^64: a collision would say the keys' words are not mixed in.
        assert_eq!(distinct.len(), hashes.len(), "no two keys share a hash");
        let spread = |bucket_of: &dyn Fn(u64) -> usize, buckets: usize| {
            let mut counts = vec![0usize; buckets];
            for hash in &hashes {
                counts[bucket_of(*hash)] += 1;
            }
            let expected = hashes.len() / buckets;
            let (low, high) = (*counts.iter().min().unwrap(), *counts.iter().max().unwrap());
            assert!(
                low * 10 > expected * 8 && high * 10 < expected * 12,
                "{buckets} buckets: between {low} and {high}, expected about {expected}"
            );
        };
        spread(&|hash| (hash >> (64 - SHARD_BITS)) as usize, SHARDS);
        spread(&|hash| super::tag_of(hash) as usize, 8);
        spread(&|hash| hash as usize & 63, 64);
    }

    fn key(index: u32) -> Vec<u8> {
        let mut key = vec![0u8; 8];
        key.extend_from_slice(format!("key-{index}").as_bytes());
        key
    }

    #[test]
    fn finds_every_slot_through_many_growths_and_keeps_the_first_of_a_key() {
        let index = PointIndex::new();
        let guard = crossbeam_epoch::pin();
        for n in 0..20_000 {
            index.insert(ItemSlot::new(&key(n)), &guard).unwrap();
        }
        for n in 0..20_000 {
            assert_eq!(index.get(&key(n), &guard).unwrap().index_key(), &key(n)[..]);
        }
        assert!(index.get(&key(20_000), &guard).is_none());
        let first = ItemSlot::clone(&index.get(&key(7), &guard).unwrap());
        let refused = index.insert(ItemSlot::new(&key(7)), &guard).unwrap_err();
        assert!(refused.same_slot(&first), "the first slot of a key stays");
        assert_eq!(index.slots(&guard).count(), 20_000);
    }

    #[test]
    fn readers_see_every_slot_added_before_they_look_while_writers_grow_the_tables() {
        use std::sync::atomic::{AtomicI64, Ordering};
        let index = PointIndex::new();
        // Writer w adds the keys n with n % 2 == w, in order; its entry is the last one added.
        let added = [AtomicI64::new(-1), AtomicI64::new(-1)];
        std::thread::scope(|scope| {
            for writer in 0..2u32 {
                let (index, added) = (&index, &added);
                scope.spawn(move || {
                    for n in (writer..40_000).step_by(2) {
                        index
                            .insert(ItemSlot::new(&key(n)), &crossbeam_epoch::pin())
                            .unwrap();
                        added[writer as usize].store(i64::from(n), Ordering::Release);
                    }
                });
            }
            scope.spawn(|| {
                for round in 0..300u32 {
                    let passed = [
                        added[0].load(Ordering::Acquire),
                        added[1].load(Ordering::Acquire),
                    ];
                    let guard = crossbeam_epoch::pin();
                    for n in (round % 7..40_000u32).step_by(101) {
                        let found = index.get(&key(n), &guard).is_some();
                        if i64::from(n) <= passed[(n % 2) as usize] {
                            assert!(found, "key {n}, added before the look, is missing");
                        }
                    }
                }
            });
        });
        let guard = crossbeam_epoch::pin();
        assert_eq!(index.slots(&guard).count(), 40_000);
    }

    #[test]
    fn a_lookup_hands_over_the_keys_value_hint_before_reading_its_slot_and_growth_keeps_it() {
        let index = PointIndex::new();
        let guard = crossbeam_epoch::pin();
        index.insert(ItemSlot::new(&key(0)), &guard).unwrap();
        let hints_of = |n: u32| {
            let mut hints = Vec::new();
            let found = index.get_hinted(&key(n), &guard, |hint| hints.push(hint));
            (found.is_some(), hints)
        };
        let set_hint = |n: u32, hint: u32| {
            let (slot, cell) = index.get_with_hint_cell(&key(n), &guard).unwrap();
            assert_eq!(slot.index_key(), &key(n)[..]);
            cell.set(hint);
        };
        assert_eq!(hints_of(0), (true, vec![]), "no hint was set");
        set_hint(0, 77);
        assert_eq!(hints_of(0), (true, vec![77]));
        assert!(
            index.get_with_hint_cell(&key(5), &guard).is_none(),
            "no slot, no bucket"
        );
        // Thousands of keys later every table has been replaced several times over.
        for n in 1..5_000 {
            let cell = index.insert(ItemSlot::new(&key(n)), &guard).unwrap();
            // Insertion hands over the new bucket's cell; later lookups find the same one.
            assert!(std::ptr::eq(
                cell.0,
                index.get_with_hint_cell(&key(n), &guard).unwrap().1 .0
            ));
            set_hint(n, n + 1_000);
        }
        let (found, hints) = hints_of(0);
        assert!(found);
        assert_eq!(hints.last(), Some(&77), "the key's own bucket comes last");
        for n in 1..5_000 {
            let (found, hints) = hints_of(n);
            assert!(found);
            assert_eq!(hints.last(), Some(&(n + 1_000)), "key {n}");
        }
        // A hint shares the bucket's word with the slot's handle and tag: the widest hint,
        // and then none, leave both alone.
        let widest = (1 << super::HINT_BITS) - 1;
        set_hint(4_999, widest);
        let (found, hints) = hints_of(4_999);
        assert!(found);
        assert_eq!(hints.last(), Some(&widest));
        set_hint(4_999, 0);
        let (found, hints) = hints_of(4_999);
        assert!(found);
        // No hint is handed over for the key's bucket (others' tags may match on the way).
        assert!(!hints.contains(&widest));
        assert_eq!(index.slots(&guard).count(), 5_000);
    }

    #[test]
    fn dropping_the_index_releases_its_slots() {
        let slot = ItemSlot::new(&key(1));
        let index = PointIndex::new();
        let guard = crossbeam_epoch::pin();
        index.insert(slot.clone(), &guard).unwrap();
        for n in 2..100 {
            index.insert(ItemSlot::new(&key(n)), &guard).unwrap();
        }
        assert_eq!(slot.reference_count(), 2);
        drop(index);
        assert_eq!(slot.reference_count(), 1);
    }
}
