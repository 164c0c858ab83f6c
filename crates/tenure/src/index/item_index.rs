//! The point index and the ordered index over the same slots.

use std::sync::atomic::{fence, AtomicBool, AtomicU64, AtomicU8, Ordering};

use crossbeam_epoch::Guard;
use parking_lot::Mutex;

use super::restore::ShardStates;
use super::slot::ItemSlot;
use super::version::*;
use crate::clock::Timestamp;
use crate::error::{Error, Result};
use crate::index::ordered_index::OrderedIndex;
use crate::index::point_index::{HintCell, PointIndex, SlotView, HINT_BITS, SHARDS};

/// The point index and the ordered index over the same slots. Both hold the slot itself,
/// keyed by the index key stored in it, so a key is stored once in memory (not again as each
/// index's key): 294 → 246 live heap bytes per key of 24 B (1M keys, scratch probe).
pub struct Index {
    /// Its `insert` keeps the first slot of a key (the linearizability campaign once caught
    /// two racing first writes each keeping its own slot, with a map that replaced).
    points: PointIndex,
    /// Holds the same slots in key order, for listings (`ordered_index/mod.rs`). Built on
    /// the first walk after open ([`Index::range_from`]), so an open and the point reads
    /// after it do not wait for it: `ordered_state` says whether writers add their new slots
    /// to it yet.
    ordered: OrderedIndex,
    ordered_state: AtomicU8,
    /// Held by the one walk that builds the ordered index; walks that come meanwhile wait.
    ordered_build: Mutex<()>,
    /// Whether a version with an expiry was installed since open (replay included). Until
    /// one is, the background sweep has nothing to find and walks nothing.
    expiring_items_written: AtomicBool,
    /// The bits above a value hint's `HINT_BITS` (`value_hint`): those of the newest value
    /// hinted.
    value_hint_window: AtomicU64,
    /// A persisted index's shards not restored yet (`restore.rs`); `None` for an index built
    /// by writes and replay.
    pending: Option<PendingShards>,
    /// Whether every shard is restored: the one load a lookup adds (true without `pending`).
    all_restored: AtomicBool,
}

/// What restores a persisted index's shards (`restore.rs`): its decoded body.
pub(crate) trait ShardSource: Send + Sync {
    /// Adds the slots of shard `shard` to `index`, whose shard holds none yet. On an error
    /// the shard may hold some of them; it is never read.
    fn restore_shard(&self, shard: usize, index: &Index) -> Result<()>;

    /// The error a lookup of a shard that could not be restored returns, with why.
    fn failure(&self, shard: usize, reason: &str) -> Error;
}

/// Proof, from [`Index::ready_for`], that a key's shard is restored.
pub(crate) struct Restored(());

/// A persisted index's shards still to restore, and what restores them.
struct PendingShards {
    states: ShardStates,
    source: Box<dyn ShardSource>,
}

/// A value's log offset as the point index keeps it for prefetching: the low `HINT_BITS` (29)
/// bits of its cache line's number, which share the bucket's word with the slot's handle.
/// Lines 2^29 apart (32 GiB of log) share a hint; the reader completes it with the newest
/// window, so a hint older than that points at the wrong place, and its prefetch loads
/// nothing useful — it never changes what is read. 0 is "no hint".
fn value_hint(offset: u64) -> (u32, u64) {
    let line = offset >> 6;
    ((line & ((1 << HINT_BITS) - 1)) as u32, line >> HINT_BITS)
}

/// A restored slot's only version: a plain head naming its entry's value offset, or a node.
pub enum RestoredHead {
    Plain(u64),
    Node(NewVersion),
}

/// `Index::ordered_state`: not built (writers add new slots to the point index only), being
/// built (writers add them to both; the build may add the same slot again, which the ordered
/// index ignores), built (both, for the rest of the index's life).
const ORDERED_NOT_BUILT: u8 = 0;
const ORDERED_BUILDING: u8 = 1;
const ORDERED_BUILT: u8 = 2;

impl Index {
    pub fn new() -> Index {
        Index::with_points(PointIndex::new(), None)
    }

    /// An index that a persisted one (`checkpoint/`) is restored into a shard at a time by
    /// `source`, as lookups and [`Index::restore_shard`] come: its hash takes `seeds`, the
    /// persisted index's, so that its items fall into the shards they were listed under.
    pub fn restoring(seeds: [u64; 4], source: Box<dyn ShardSource>) -> Index {
        Index::with_points(
            PointIndex::with_seeds(seeds),
            Some(PendingShards {
                states: ShardStates::new(),
                source,
            }),
        )
    }

    /// Restores the shard of `index_key` unless every shard is: called before any lookup by
    /// key, so that the shard's slots are there.
    #[inline]
    fn ready(&self, index_key: &[u8]) -> Result<()> {
        if self.all_restored.load(Ordering::Acquire) {
            return Ok(());
        }
        self.restore_shard_of(index_key)
    }

    /// [`Index::ready`] for the two hottest lookups, a get's and a write's, which take its
    /// proof instead of returning a `Result` themselves: a `Result` around their slot is
    /// returned through memory, which cost a get about 20 instructions.
    #[inline]
    pub fn ready_for(&self, index_key: &[u8]) -> Result<Restored> {
        self.ready(index_key).map(|()| Restored(()))
    }

    #[cold]
    fn restore_shard_of(&self, index_key: &[u8]) -> Result<()> {
        self.restore_shard(self.points.shard_of(index_key))
    }

    /// Restores shard `shard` (one of the point index's 256) unless it is, waiting while
    /// another thread restores it.
    pub fn restore_shard(&self, shard: usize) -> Result<()> {
        match &self.pending {
            Some(pending) => pending.states.restore(
                shard,
                &self.all_restored,
                || pending.source.restore_shard(shard, self),
                |reason| pending.source.failure(shard, reason),
            ),
            None => Ok(()),
        }
    }

    /// Restores every shard not restored yet: for whatever reads every slot.
    pub fn restore_all(&self) -> Result<()> {
        if self.all_restored.load(Ordering::Acquire) {
            return Ok(());
        }
        (0..SHARDS).try_for_each(|shard| self.restore_shard(shard))
    }

    /// Whether a shard failed to restore: the persisted index it came from cannot be used.
    pub fn restore_failed(&self) -> bool {
        self.pending
            .as_ref()
            .is_some_and(|pending| pending.states.any_failed())
    }

    /// Whether every shard is restored (always, for an index not made by `restoring`).
    pub fn is_restored(&self) -> bool {
        self.all_restored.load(Ordering::Acquire)
    }

    /// The seeds of the point index's hash.
    pub fn seeds(&self) -> [u64; 4] {
        self.points.seeds()
    }

    /// Every slot with its point-index shard, shard by shard, borrowed for as long as
    /// `guard`: every shard restored first.
    pub fn slots_by_shard<'g>(
        &'g self,
        guard: &'g Guard,
    ) -> Result<impl Iterator<Item = (usize, SlotView<'g>)>> {
        self.restore_all()?;
        Ok(self.points.slots_by_shard(guard))
    }

    /// Sizes shard `shard`'s table for `slots` more slots: before a persisted index's shard
    /// is restored.
    pub fn reserve_shard(&self, shard: usize, slots: usize) {
        self.points.reserve(shard, slots, &crossbeam_epoch::pin());
    }

    /// Adds a slot for `index_key`, which must be of shard `shard` (being restored) and have
    /// no slot yet, with `head` as its only version (a persisted index's entry, `checkpoint/`).
    pub fn restore_slot(
        &self,
        shard: usize,
        index_key: &[u8],
        head: RestoredHead,
        guard: &Guard,
    ) -> std::result::Result<(), &'static str> {
        if index_key.len() < 8 || index_key.len() > super::slot::MAXIMUM_INDEX_KEY_BYTES {
            return Err("an index key of an impossible length");
        }
        // A key listed under another shard would appear in that one after its restore.
        if self.points.shard_of(index_key) != shard {
            return Err("a key listed under another shard");
        }
        // The head is set before the slot is published (the insert's release store), so no
        // one sees the slot without it, and the slot is handed over without a second
        // reference count.
        let slot = ItemSlot::new(index_key);
        let value = match head {
            RestoredHead::Plain(value_offset) => {
                if value_offset == 0 {
                    return Err("a plain head at log offset 0");
                }
                slot.head()
                    .store(super::head::head(value_offset), Ordering::Relaxed);
                Some(ValueLocation::new(value_offset, 0))
            }
            RestoredHead::Node(fields) => {
                let node = VersionNode::new(fields);
                self.note_expiry(node.expires_at());
                let value = node.value();
                let installed = slot.install(crossbeam_epoch::Shared::null(), node, guard);
                assert!(installed.is_ok(), "a new slot's head is null");
                value
            }
        };
        let hint_cell = self
            .points
            .insert(slot, guard)
            .map_err(|_| "a key listed twice")?;
        if let Some(location) = value {
            self.note_value_location(index_key, Some(hint_cell), location);
        }
        Ok(())
    }

    fn with_points(points: PointIndex, pending: Option<PendingShards>) -> Index {
        Index {
            all_restored: AtomicBool::new(pending.is_none()),
            pending,
            points,
            ordered: OrderedIndex::new(),
            ordered_state: AtomicU8::new(ORDERED_NOT_BUILT),
            ordered_build: Mutex::new(()),
            expiring_items_written: AtomicBool::new(false),
            value_hint_window: AtomicU64::new(0),
        }
    }

    /// Records where `index_key`'s newest value now is, for [`Index::get_prefetching`]:
    /// called once a version with a value is installed (a write, a batch, the replay at open,
    /// compaction's copy). `hint_cell`, from the lookup that found or added the key's slot
    /// ([`Index::get_or_insert_with_hint_cell`]), saves finding its bucket again.
    pub fn note_value_location(
        &self,
        index_key: &[u8],
        hint_cell: Option<HintCell<'_>>,
        location: ValueLocation,
    ) {
        let (hint, window) = value_hint(location.offset());
        // The load keeps the common case (the same window) a shared read.
        if window > self.value_hint_window.load(Ordering::Relaxed) {
            self.value_hint_window.fetch_max(window, Ordering::Relaxed);
        }
        match hint_cell {
            Some(cell) => cell.set(hint),
            None => {
                let guard = crossbeam_epoch::pin();
                if let Some((_, cell)) = self.points.get_with_hint_cell(index_key, &guard) {
                    cell.set(hint);
                }
            }
        }
    }

    /// The slot of `index_key`, if any, under the caller's guard; calls `prefetch_value` with
    /// the log offset where the key's newest value was last seen, before the slot is read. The
    /// offset may be stale or wrong (see `value_hint`), so it is for prefetching only.
    pub fn get_prefetching<'g>(
        &self,
        _restored: Restored,
        index_key: &[u8],
        guard: &'g Guard,
        mut prefetch_value: impl FnMut(u64),
    ) -> Option<SlotView<'g>> {
        let window = self.value_hint_window.load(Ordering::Relaxed);
        self.points.get_hinted(index_key, guard, |hint| {
            prefetch_value(((window << HINT_BITS) | u64::from(hint)) << 6);
        })
    }

    /// Called with the expiry of every version about to be installed.
    pub fn note_expiry(&self, expires_at: Option<Timestamp>) {
        // The load keeps the common case (already set, or no expiry) a shared read.
        if expires_at.is_some() && !self.expiring_items_written.load(Ordering::Relaxed) {
            self.expiring_items_written.store(true, Ordering::Release);
        }
    }

    /// Whether any item may carry an expiry (see `expiring_items_written`).
    pub fn may_hold_expiring_items(&self) -> bool {
        self.expiring_items_written.load(Ordering::Acquire)
    }

    /// Runs `read` with the slot of `index_key`, if any, without cloning its `Arc`.
    pub fn with_slot<T>(
        &self,
        index_key: &[u8],
        read: impl FnOnce(Option<&ItemSlot>) -> T,
    ) -> Result<T> {
        self.ready(index_key)?;
        let guard = crossbeam_epoch::pin();
        Ok(read(self.points.get(index_key, &guard).as_deref()))
    }

    pub fn get(&self, index_key: &[u8]) -> Result<Option<ItemSlot>> {
        self.ready(index_key)?;
        let guard = crossbeam_epoch::pin();
        Ok(self
            .points
            .get(index_key, &guard)
            .map(|slot| ItemSlot::clone(&slot)))
    }

    pub fn get_or_insert(&self, index_key: &[u8]) -> Result<ItemSlot> {
        self.ready(index_key)?;
        Ok(self
            .get_or_insert_slot(index_key, true, &crossbeam_epoch::pin())
            .0)
    }

    /// The slot of `index_key` with its bucket's value-hint cell, in a shard known to be
    /// restored.
    fn find_with_hint_cell<'g>(
        &self,
        index_key: &[u8],
        guard: &'g Guard,
    ) -> Option<(ItemSlot, HintCell<'g>)> {
        self.points
            .get_with_hint_cell(index_key, guard)
            .map(|(slot, cell)| (ItemSlot::clone(&slot), cell))
    }

    /// [`Index::get_or_insert`] for a writer: the slot with its bucket's value-hint cell, to
    /// pass to [`Index::note_value_location`] once the write is in.
    pub fn get_or_insert_with_hint_cell<'g>(
        &self,
        index_key: &[u8],
        guard: &'g Guard,
    ) -> Result<(ItemSlot, HintCell<'g>)> {
        self.ready(index_key)?;
        Ok(self.get_or_insert_slot(index_key, true, guard))
    }

    /// The slot of `index_key` and its bucket's value-hint cell for a write, the slot added
    /// first when `insert`. A view, not a reference of its own: the indexes keep every slot
    /// while they live, so a write's slot outlives `guard`, and the common write takes no
    /// reference count (two locked instructions on the slot's line).
    pub(crate) fn slot_for_write<'g>(
        &self,
        _restored: Restored,
        index_key: &[u8],
        insert: bool,
        guard: &'g Guard,
    ) -> Option<(SlotView<'g>, HintCell<'g>)> {
        if let Some(found) = self.points.get_with_hint_cell(index_key, guard) {
            return Some(found);
        }
        if !insert {
            return None;
        }
        let (slot, hint_cell) = self.get_or_insert_slot(index_key, true, guard);
        // SAFETY: both indexes hold the slot from now on, for as long as they live.
        let view = unsafe { SlotView::from_handle(slot.handle()) };
        Some((view, hint_cell))
    }

    /// Starts loading what a lookup of `index_key` reads first (the replay looks a few items
    /// of a record ahead).
    pub fn prefetch(&self, index_key: &[u8], guard: &Guard) {
        self.points.prefetch(index_key, guard);
    }

    /// [`Index::get_or_insert_with_hint_cell`] for the replay at open, which no one else
    /// sees: the slot goes into the point index only (the first walk builds the ordered
    /// index).
    pub fn get_or_insert_replaying<'g>(
        &self,
        index_key: &[u8],
        guard: &'g Guard,
    ) -> Result<(ItemSlot, HintCell<'g>)> {
        self.ready(index_key)?;
        Ok(self.get_or_insert_slot(index_key, false, guard))
    }

    /// The ordered index, built first if no walk has built it yet (every shard restored
    /// first).
    fn ordered(&self) -> Result<&OrderedIndex> {
        if self.ordered_state.load(Ordering::Acquire) != ORDERED_BUILT {
            self.restore_all()?;
            self.build_ordered();
        }
        Ok(&self.ordered)
    }

    /// Adds every slot of the point index to the ordered index, in key order. Inserting in
    /// order keeps the tree's search path in cache, where keys in log order land all over it,
    /// and leaves its nodes full (see `split_point` in `ordered_index/mod.rs`).
    #[cold]
    fn build_ordered(&self) {
        let _building = self.ordered_build.lock();
        if self.ordered_state.load(Ordering::Acquire) == ORDERED_BUILT {
            return;
        }
        // Pairs with the fence in `adds_to_ordered`: a writer adding a slot either sees
        // this state and adds the slot itself, or added it to the point index before the
        // collection below reads it (or both).
        self.ordered_state.store(ORDERED_BUILDING, Ordering::SeqCst);
        fence(Ordering::SeqCst);
        let guard = crossbeam_epoch::pin();
        let slots: Vec<_> = self.points.slots(&guard).collect();
        let sorted = super::key_order::key_order(&slots);
        for (rank, slot) in sorted.iter().enumerate() {
            // In key order the slots are scattered over the heap, and each insert reads its
            // slot (the reference count, the key): the loads start a few inserts ahead.
            if let Some(ahead) = sorted.get(rank + super::key_order::PREFETCH_AHEAD) {
                crate::base::prefetch(ahead.address());
            }
            self.ordered.insert(ItemSlot::clone(slot));
        }
        self.ordered_state.store(ORDERED_BUILT, Ordering::Release);
    }

    fn get_or_insert_slot<'g>(
        &self,
        index_key: &[u8],
        ordered: bool,
        guard: &'g Guard,
    ) -> (ItemSlot, HintCell<'g>) {
        if let Some(found) = self.find_with_hint_cell(index_key, guard) {
            return found;
        }
        let slot = ItemSlot::new(index_key);
        let hint_cell = match self.points.insert(slot.clone(), guard) {
            Ok(hint_cell) => hint_cell,
            // Another writer inserted the key first: its slot, which stays.
            Err(_) => {
                return self
                    .find_with_hint_cell(index_key, guard)
                    .expect("a slot once in the point index stays there");
            }
        };
        if ordered && self.adds_to_ordered() {
            // The ordered index may briefly lag the point index; listings only ever miss a
            // key whose first write has not committed yet. Only the writer that inserted the
            // slot (or the build) adds it, so both indexes hold the same slot.
            self.ordered.insert(slot.clone());
        }
        (slot, hint_cell)
    }

    /// Whether a writer that has just added a slot to the point index adds it to the ordered
    /// index too: once a build has started (before that, the build will find it).
    fn adds_to_ordered(&self) -> bool {
        if self.ordered_state.load(Ordering::Acquire) == ORDERED_BUILT {
            return true;
        }
        // Pairs with the fence in `build_ordered`.
        fence(Ordering::SeqCst);
        self.ordered_state.load(Ordering::SeqCst) != ORDERED_NOT_BUILT
    }

    /// Slots with index keys in `[from, …)` that start with `prefix`, in key order, borrowed
    /// from the index (slots are never taken out of it while it lives).
    pub fn range_from<'a>(
        &'a self,
        from: &[u8],
        prefix: &'a [u8],
    ) -> Result<impl Iterator<Item = SlotView<'a>> + 'a> {
        Ok(self
            .ordered()?
            .walk_from(from)
            .take_while(move |slot| slot.index_key().starts_with(prefix)))
    }
}
