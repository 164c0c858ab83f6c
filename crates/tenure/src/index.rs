//! The in-memory MVCC index: for every (container, key) an `ItemSlot` whose head points at the
//! newest version; versions chain newest-first and point at their records in the log.
//!
//! - Point lookups go through a hash index of slot pointers (`point_index.rs`: lock-free
//!   reads); listings go through an ordered index (a B+ tree, `ordered_index/mod.rs`) over the
//!   same slots.
//! - A write installs its version with one compare-and-swap on the head, expecting the head it
//!   checked its conditions against: two writers holding the same ETag can never both win.
//! - A batch installs `Pending` nodes (in key order, so batches cannot deadlock), then marks
//!   them `Committed`, or unlinks them on failure. Nobody installs on top of a pending node:
//!   writers wait for it to resolve (it resolves without I/O).
//! - Versions no snapshot can see are unlinked by `prune` and freed through crossbeam-epoch.

use std::num::NonZeroU64;
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicU8, Ordering};

use crossbeam_epoch::{Atomic, Guard, Owned, Shared};
use crossbeam_utils::Backoff;

use crate::clock::{ReadTime, Timestamp};
use crate::codec::{Coordination, Metadata};
use crate::etag::Version;
use crate::ordered_index::OrderedIndex;
use crate::point_index::{HintCell, PointIndex, SlotView, HINT_BITS};
use crate::rules::lease::LeaseRecord;
use crate::rules::lock::{self, LockRecord};
pub use crate::slot::ItemSlot;

pub const COMMITTED: u8 = 0;
pub const PENDING: u8 = 1;
pub const ABORTED: u8 = 2;

/// Content type and user metadata, kept in memory (small; bounded by the 8 KiB limit).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Properties {
    pub content_type: Option<String>,
    pub metadata: Metadata,
}

/// One version of one item. 56 bytes, so glibc serves it from 64-byte chunks: what few
/// versions carry (properties, a lease or lock, an ETag older than the node) is in
/// `VersionExtras`, out of line. (Inline, they made it 72 bytes in 80-byte chunks.)
pub struct VersionNode {
    /// The log version that made this node: orders the chain and decides visibility.
    pub version: Version,
    /// Global log offset of the value's first byte; 0: the item was deleted at this version
    /// (a tombstone). A value never starts at 0: its record's header comes first.
    value_offset: u64,
    value_length: u32,
    pub status: AtomicU8,
    has_expiry: bool,
    /// How many nodes the chain held from this one down (this one included, at most 255) when
    /// it was linked: an upper bound, since only prunes change a chain below its head, and they
    /// shorten it. `maybe_prune` reads it instead of walking the chain, whose older nodes are
    /// usually cold: the walk cost a put up to two cache misses once its key had 3 versions.
    chain_length: AtomicU8,
    pub last_modified: Timestamp,
    /// Meaningful only with `has_expiry`.
    expiry: Timestamp,
    /// `None` for a version without properties or coordination whose ETag is its own.
    extras: Option<Box<VersionExtras>>,
    pub older: Atomic<VersionNode>,
}

const _: () = assert!(std::mem::size_of::<VersionNode>() == 56);

/// The part of a version node most versions do without.
struct VersionExtras {
    /// The version the item's ETag shows: the last write of value or properties. Lease and
    /// lock changes make new nodes that keep it.
    etag_version: Version,
    properties: Option<Box<Properties>>,
    coordination: Option<Box<Coordination>>,
}

/// The fields of a new version node (its `older` link starts empty).
pub struct NewVersion {
    pub version: Version,
    pub etag_version: Version,
    pub status: u8,
    /// `None`: a tombstone.
    pub value: Option<ValueLocation>,
    pub last_modified: Timestamp,
    pub expires_at: Option<Timestamp>,
    pub properties: Option<Box<Properties>>,
    pub coordination: Option<Box<Coordination>>,
}

/// Where a value's bytes are in the log.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ValueLocation {
    /// Global log offset of the first byte of the value. Never 0 (the record's header comes
    /// first), which lets a version node keep 0 for "no value".
    offset: NonZeroU64,
    pub length: u32,
}

impl ValueLocation {
    pub fn new(offset: u64, length: u32) -> ValueLocation {
        ValueLocation {
            offset: NonZeroU64::new(offset).expect("a value lies after its record's header"),
            length,
        }
    }

    pub fn offset(&self) -> u64 {
        self.offset.get()
    }
}

impl VersionNode {
    pub fn new(fields: NewVersion) -> VersionNode {
        let (value_offset, value_length) = fields
            .value
            .map_or((0, 0), |location| (location.offset(), location.length));
        let plain = fields.etag_version == fields.version
            && fields.properties.is_none()
            && fields.coordination.is_none();
        VersionNode {
            version: fields.version,
            value_offset,
            value_length,
            status: AtomicU8::new(fields.status),
            has_expiry: fields.expires_at.is_some(),
            chain_length: AtomicU8::new(1),
            last_modified: fields.last_modified,
            expiry: fields.expires_at.unwrap_or(0),
            extras: (!plain).then(|| {
                Box::new(VersionExtras {
                    etag_version: fields.etag_version,
                    properties: fields.properties,
                    coordination: fields.coordination,
                })
            }),
            older: Atomic::null(),
        }
    }

    /// Makes `older` the next node of this one (not yet published) and counts the chain.
    pub fn link_older(&self, older: Shared<'_, VersionNode>) {
        // SAFETY: `older` was read from a slot under the guard its lifetime borrows, and nodes
        // reachable from a slot are freed only through the epoch.
        let below = unsafe { older.as_ref() }.map_or(0, VersionNode::chain_length);
        self.chain_length
            .store(below.saturating_add(1), Ordering::Relaxed);
        self.older.store(older, Ordering::Relaxed);
    }

    /// An upper bound on the nodes from this one to the chain's end (see the field).
    pub fn chain_length(&self) -> u8 {
        self.chain_length.load(Ordering::Relaxed)
    }

    /// Lowers the recorded length after a prune: `kept` is what the prune left from the head
    /// down (`ItemSlot::prune`), a bound for any node of the chain.
    pub fn note_pruned_chain(&self, kept: u8) {
        self.chain_length.fetch_min(kept.max(1), Ordering::Relaxed);
    }

    /// The version the item's ETag shows: the last write of value or properties (lease and
    /// lock changes keep it).
    pub fn etag_version(&self) -> Version {
        self.extras
            .as_ref()
            .map_or(self.version, |extras| extras.etag_version)
    }

    pub fn properties(&self) -> Option<&Properties> {
        self.extras.as_ref()?.properties.as_deref()
    }

    pub fn coordination(&self) -> Option<&Coordination> {
        self.extras.as_ref()?.coordination.as_deref()
    }

    /// Where the value is in the log; `None`: the item was deleted at this version.
    pub fn value(&self) -> Option<ValueLocation> {
        NonZeroU64::new(self.value_offset).map(|offset| ValueLocation {
            offset,
            length: self.value_length,
        })
    }

    pub fn expires_at(&self) -> Option<Timestamp> {
        self.has_expiry.then_some(self.expiry)
    }

    /// The item exists at `now`: not deleted, not expired (a live lock suspends expiry).
    pub fn is_live_at(&self, now: Timestamp) -> bool {
        self.is_live_for(&ReadTime::At(now))
    }

    /// Whether the version is live at the read's time, which is read only for a version with
    /// an expiry (without one, no time and no lock makes a version expired).
    pub(crate) fn is_live_for(&self, time: &ReadTime<'_>) -> bool {
        self.value_offset != 0
            && (self.expires_at().is_none()
                || !lock::is_expired_under_lock(self.expires_at(), self.lock(), time.now()))
    }

    pub fn lease(&self) -> Option<&LeaseRecord> {
        self.coordination()?.lease.as_ref()
    }

    pub fn lock(&self) -> Option<&LockRecord> {
        self.coordination()?.lock.as_ref()
    }
}

pub fn coordination_box(coordination: Coordination) -> Option<Box<Coordination>> {
    (!coordination.is_empty()).then(|| Box::new(coordination))
}

/// The head moved between a writer's read of it and its install: it re-reads and checks again.
#[derive(Debug)]
pub struct HeadMoved;

impl ItemSlot {
    pub fn head(&self) -> &Atomic<VersionNode> {
        &self.header().head
    }

    pub fn key(&self) -> &[u8] {
        &self.index_key()[8..]
    }

    /// The newest node that is not pending and not aborted — what a writer checks its
    /// conditions against. Waits for a pending batch node to resolve.
    pub fn settled_head<'g>(&self, guard: &'g Guard) -> Shared<'g, VersionNode> {
        let backoff = Backoff::new();
        loop {
            let head = self.head().load(Ordering::Acquire, guard);
            // SAFETY: nodes reachable from the head are freed only through the epoch.
            match unsafe { head.as_ref() } {
                Some(node) if node.status.load(Ordering::Acquire) == PENDING => {
                    if backoff.is_completed() {
                        std::thread::yield_now();
                    } else {
                        backoff.snooze();
                    }
                }
                _ => return head,
            }
        }
    }

    /// Asks the CPU to start loading this slot's newest version node, which a walk will read
    /// soon: cache misses of walks then overlap instead of following one another.
    pub(crate) fn prefetch_head_node(&self) {
        // SAFETY: the pointer is only prefetched, never dereferenced (a prefetch cannot fault).
        let guard = unsafe { crossbeam_epoch::unprotected() };
        prefetch(self.head().load(Ordering::Relaxed, guard).as_raw());
    }

    /// The newest committed node with a version ≤ `version` (what a reader at `version` sees).
    pub fn visible<'g>(&self, version: Version, guard: &'g Guard) -> Option<&'g VersionNode> {
        let mut current = self.head().load(Ordering::Acquire, guard);
        // SAFETY: as in `settled_head`.
        while let Some(node) = unsafe { current.as_ref() } {
            if node.version <= version && node.status.load(Ordering::Acquire) == COMMITTED {
                return Some(node);
            }
            current = node.older.load(Ordering::Acquire, guard);
        }
        None
    }

    /// Installs `node` over `expected`, in the slot's own room for a node when it is free.
    pub fn install<'g>(
        &self,
        expected: Shared<'g, VersionNode>,
        node: VersionNode,
        guard: &'g Guard,
    ) -> Result<Shared<'g, VersionNode>, HeadMoved> {
        node.link_older(expected);
        let new = match self.take_room() {
            Some(room) => {
                // SAFETY: the claim makes the room ours, and nothing reaches it until the
                // exchange below publishes it.
                unsafe { room.write(node) };
                Shared::from(room.cast_const())
            }
            None => Owned::new(node).into_shared(guard),
        };
        match self.head().compare_exchange(
            expected,
            new,
            Ordering::AcqRel,
            Ordering::Acquire,
            guard,
        ) {
            Ok(_) => Ok(new),
            Err(_) => {
                // SAFETY: never published, so still ours alone.
                unsafe { self.discard(new) };
                Err(HeadMoved)
            }
        }
    }

    fn room_node(&self) -> *mut VersionNode {
        self.header().room.get().cast()
    }

    fn is_room_node(&self, node: Shared<'_, VersionNode>) -> bool {
        std::ptr::eq(node.as_raw(), self.room_node())
    }

    fn take_room(&self) -> Option<*mut VersionNode> {
        self.claim_room().then(|| self.room_node())
    }

    /// Drops the node in the slot's room and frees the room for the next install.
    ///
    /// # Safety
    /// The room holds a node that nothing can reach any more.
    unsafe fn drop_room_node(&self) {
        // SAFETY: the caller's promise.
        unsafe { std::ptr::drop_in_place(self.room_node()) };
        self.release_room();
    }

    /// Frees a node that was never published.
    ///
    /// # Safety
    /// `node` came from `install` of this slot and no other thread has seen it.
    unsafe fn discard(&self, node: Shared<'_, VersionNode>) {
        if self.is_room_node(node) {
            // SAFETY: the caller's promise.
            unsafe { self.drop_room_node() };
        } else {
            // SAFETY: the caller's promise: a heap node no one else holds.
            drop(unsafe { node.into_owned() });
        }
    }

    /// Frees a node unlinked from this slot's chain once no reader can still hold it.
    ///
    /// # Safety
    /// `node` was this slot's, and is now unreachable from its head.
    pub(crate) unsafe fn retire(&self, node: Shared<'_, VersionNode>, guard: &Guard) {
        if self.is_room_node(node) {
            // The callback keeps the slot alive until it has run.
            let slot = self.clone();
            // SAFETY: unlinked, so once the guards of today are gone nothing reaches it.
            guard.defer(move || unsafe { slot.drop_room_node() });
        } else {
            // SAFETY: readers that still hold it are protected by their guards.
            unsafe { guard.defer_destroy(node) };
        }
    }

    /// Takes back a pending node this caller installed (nobody builds on pending nodes, so
    /// it is still the head).
    pub fn uninstall<'g>(&self, installed: Shared<'g, VersionNode>, guard: &'g Guard) {
        // SAFETY: `installed` is our own node, reachable and alive under `guard`.
        let node = unsafe { installed.deref() };
        node.status.store(ABORTED, Ordering::Release);
        let older = node.older.load(Ordering::Acquire, guard);
        let result = self.head().compare_exchange(
            installed,
            older,
            Ordering::AcqRel,
            Ordering::Acquire,
            guard,
        );
        assert!(
            result.is_ok(),
            "a pending node is always the head until it resolves"
        );
        // SAFETY: unlinked above.
        unsafe { self.retire(installed, guard) };
    }

    /// Unlinks every version older than the newest one with version ≤ `keep_from`: no reader,
    /// present or future, can reach them. Callers serialise prunes against snapshot creation.
    /// Returns how many nodes the chain keeps from the head down (at most 255): a bound on the
    /// length of the chain below any node still in it.
    pub fn prune(&self, keep_from: Version, guard: &Guard) -> u8 {
        let mut kept = 0u8;
        let mut current = self.head().load(Ordering::Acquire, guard);
        // SAFETY: as in `settled_head`.
        while let Some(node) = unsafe { current.as_ref() } {
            kept = kept.saturating_add(1);
            if node.version <= keep_from && node.status.load(Ordering::Acquire) == COMMITTED {
                let mut detached = node.older.swap(Shared::null(), Ordering::AcqRel, guard);
                while !detached.is_null() {
                    // SAFETY: the chain was detached by the swap, so only guards taken before
                    // it can still see these nodes; `retire` waits for them.
                    let next = unsafe { detached.deref() }
                        .older
                        .load(Ordering::Acquire, guard);
                    unsafe { self.retire(detached, guard) };
                    detached = next;
                }
                return kept;
            }
            current = node.older.load(Ordering::Acquire, guard);
        }
        kept
    }
}

/// Bytes an index key keeps inline: the 8-byte container id and keys up to 56 bytes, which
/// covers the usual key shapes without a heap allocation per lookup.
const INLINE_INDEX_KEY_BYTES: usize = 64;

/// The index's key of an item: its container incarnation's id (big-endian, so one container's
/// keys sort together) followed by the item's key. Built on the stack for short keys: every
/// get, put and lease action builds one.
pub enum IndexKey {
    Inline {
        bytes: [u8; INLINE_INDEX_KEY_BYTES],
        length: u8,
    },
    Heap(Box<[u8]>),
}

impl std::ops::Deref for IndexKey {
    type Target = [u8];

    fn deref(&self) -> &[u8] {
        match self {
            IndexKey::Inline { bytes, length } => &bytes[..usize::from(*length)],
            IndexKey::Heap(bytes) => bytes,
        }
    }
}

impl From<IndexKey> for Box<[u8]> {
    fn from(key: IndexKey) -> Box<[u8]> {
        match key {
            IndexKey::Inline { .. } => Box::from(&*key),
            IndexKey::Heap(bytes) => bytes,
        }
    }
}

pub fn index_key(container_id: u64, key: &[u8]) -> IndexKey {
    let length = 8 + key.len();
    if length <= INLINE_INDEX_KEY_BYTES {
        let mut bytes = [0u8; INLINE_INDEX_KEY_BYTES];
        bytes[..8].copy_from_slice(&container_id.to_be_bytes());
        bytes[8..length].copy_from_slice(key);
        return IndexKey::Inline {
            bytes,
            length: length as u8,
        };
    }
    let mut bytes = Vec::with_capacity(length);
    bytes.extend_from_slice(&container_id.to_be_bytes());
    bytes.extend_from_slice(key);
    IndexKey::Heap(bytes.into_boxed_slice())
}

/// Starts loading the cache line at `pointer` (any address: a prefetch never faults).
pub(crate) fn prefetch<T>(pointer: *const T) {
    #[cfg(target_arch = "x86_64")]
    // SAFETY: a prefetch reads nothing the program sees and cannot fault.
    unsafe {
        std::arch::x86_64::_mm_prefetch::<{ std::arch::x86_64::_MM_HINT_T0 }>(pointer.cast());
    }
    #[cfg(not(target_arch = "x86_64"))]
    let _ = pointer;
}

/// The point index and the ordered index over the same slots. Both hold the slot itself,
/// keyed by the index key stored in it, so a key is stored once in memory (not again as each
/// index's key): 294 → 246 live heap bytes per key of 24 B (1M keys, scratch probe).
pub struct Index {
    /// Its `insert` keeps the first slot of a key (the linearizability campaign once caught
    /// two racing first writes each keeping its own slot, with a map that replaced).
    points: PointIndex,
    /// Holds the same slots in key order, for listings (`ordered_index/mod.rs`).
    ordered: OrderedIndex,
    /// Whether a version with an expiry was installed since open (replay included). Until
    /// one is, the background sweep has nothing to find and walks nothing.
    expiring_items_written: AtomicBool,
    /// The bits above a value hint's `HINT_BITS` (`value_hint`): those of the newest value
    /// hinted.
    value_hint_window: AtomicU64,
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

impl Index {
    pub fn new() -> Index {
        Index {
            points: PointIndex::new(),
            ordered: OrderedIndex::new(),
            expiring_items_written: AtomicBool::new(false),
            value_hint_window: AtomicU64::new(0),
        }
    }

    /// Records where `index_key`'s newest value now is, for [`Index::get_prefetching`]:
    /// called once a version with a value is installed (a write, a batch, the replay at open,
    /// compaction's copy). `hint_cell`, from the lookup that found or added the key's slot
    /// ([`Index::get_or_insert_with_hint_cell`], [`Index::get_with_hint_cell`]), saves finding
    /// its bucket again.
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
    pub fn with_slot<T>(&self, index_key: &[u8], read: impl FnOnce(Option<&ItemSlot>) -> T) -> T {
        let guard = crossbeam_epoch::pin();
        read(self.points.get(index_key, &guard).as_deref())
    }

    pub fn get(&self, index_key: &[u8]) -> Option<ItemSlot> {
        let guard = crossbeam_epoch::pin();
        self.points
            .get(index_key, &guard)
            .map(|slot| ItemSlot::clone(&slot))
    }

    pub fn get_or_insert(&self, index_key: &[u8]) -> ItemSlot {
        self.get_or_insert_slot(index_key, true, &crossbeam_epoch::pin())
            .0
    }

    /// [`Index::get`] for a writer: the slot with its bucket's value-hint cell, to pass to
    /// [`Index::note_value_location`] once the write is in.
    pub fn get_with_hint_cell<'g>(
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
    ) -> (ItemSlot, HintCell<'g>) {
        self.get_or_insert_slot(index_key, true, guard)
    }

    /// [`Index::get_or_insert_with_hint_cell`] for the replay at open, which no one else
    /// sees: the slot goes into the point index only, and [`Index::finish_replay`] builds the
    /// ordered index.
    pub fn get_or_insert_replaying<'g>(
        &self,
        index_key: &[u8],
        guard: &'g Guard,
    ) -> (ItemSlot, HintCell<'g>) {
        self.get_or_insert_slot(index_key, false, guard)
    }

    /// Adds every slot of the point index to the ordered index, in key order. Inserting in
    /// order keeps the tree's search path in cache, where keys replayed in log order land all
    /// over it, and leaves its nodes full (see `split_point` in `ordered_index/mod.rs`).
    pub fn finish_replay(&self) {
        let guard = crossbeam_epoch::pin();
        let mut slots: Vec<_> = self.points.slots(&guard).collect();
        slots.sort_unstable_by(|left, right| left.index_key().cmp(right.index_key()));
        for slot in slots {
            self.ordered.insert(ItemSlot::clone(&slot));
        }
    }

    fn get_or_insert_slot<'g>(
        &self,
        index_key: &[u8],
        ordered: bool,
        guard: &'g Guard,
    ) -> (ItemSlot, HintCell<'g>) {
        if let Some(found) = self.get_with_hint_cell(index_key, guard) {
            return found;
        }
        let slot = ItemSlot::new(index_key);
        let hint_cell = match self.points.insert(slot.clone(), guard) {
            Ok(hint_cell) => hint_cell,
            // Another writer inserted the key first: its slot, which stays.
            Err(_) => {
                return self
                    .get_with_hint_cell(index_key, guard)
                    .expect("a slot once in the point index stays there");
            }
        };
        if !ordered {
            return (slot, hint_cell);
        }
        // The ordered index may briefly lag the point index; listings only ever miss a key
        // whose first write has not committed yet. Only the writer that inserted the slot
        // adds it, so both indexes hold the same slot.
        self.ordered.insert(slot.clone());
        (slot, hint_cell)
    }

    /// Slots with index keys in `[from, …)` that start with `prefix`, in key order, borrowed
    /// from the index (slots are never taken out of it while it lives).
    pub fn range_from<'a>(
        &'a self,
        from: &[u8],
        prefix: &'a [u8],
    ) -> impl Iterator<Item = SlotView<'a>> + 'a {
        self.ordered
            .walk_from(from)
            .take_while(move |slot| slot.index_key().starts_with(prefix))
    }
}

#[cfg(test)]
#[path = "index_tests.rs"]
mod tests;
