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
use crate::error::Result;
use crate::etag::Version;
use crate::ordered_index::OrderedIndex;
use crate::plain;
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

    /// A committed version without extras and nothing older: what a plain entry says
    /// (`plain::Entry::node`).
    #[inline]
    pub fn plain(
        version: Version,
        value: Option<ValueLocation>,
        last_modified: Timestamp,
        expires_at: Option<Timestamp>,
    ) -> VersionNode {
        let (value_offset, value_length) =
            value.map_or((0, 0), |location| (location.offset(), location.length));
        VersionNode {
            version,
            value_offset,
            value_length,
            status: AtomicU8::new(COMMITTED),
            has_expiry: expires_at.is_some(),
            chain_length: AtomicU8::new(1),
            last_modified,
            expiry: expires_at.unwrap_or(0),
            extras: None,
            older: Atomic::null(),
        }
    }

    /// Makes `older` the next node of this one (not yet published) and counts the chain.
    pub fn link_older(&self, older: Shared<'_, VersionNode>) {
        debug_assert!(
            !plain::is_pending(older),
            "nothing is installed over a pending head"
        );
        let below = if plain::offset_of(older).is_some() {
            1
        } else {
            // SAFETY: `older` was read from a slot under the guard its lifetime borrows, and
            // nodes reachable from a slot are freed only through the epoch.
            unsafe { older.as_ref() }.map_or(0, VersionNode::chain_length)
        };
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

    /// Whether `other` says exactly what this version says (a plain entry's version against
    /// the node it would replace): version, ETag, value location, times, and no extras.
    pub fn same_version_as(&self, other: &VersionNode) -> bool {
        self.version == other.version
            && self.etag_version() == other.etag_version()
            && self.value() == other.value()
            && self.last_modified == other.last_modified
            && self.expires_at() == other.expires_at()
            && self.extras.is_none()
            && other.extras.is_none()
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

/// A version as readers see it: a node of a chain, or the version a plain head names, built
/// from its log entry (`plain.rs`).
pub enum VersionRef<'g> {
    Node(&'g VersionNode),
    /// The version, and the value offset its plain head names.
    Plain(VersionNode, u64),
}

impl std::ops::Deref for VersionRef<'_> {
    type Target = VersionNode;

    fn deref(&self) -> &VersionNode {
        match self {
            VersionRef::Node(node) => node,
            VersionRef::Plain(node, _) => node,
        }
    }
}

impl VersionRef<'_> {
    /// The head word that names this version ([`word_of`]): equal to a head's word only if
    /// that head is this version.
    pub fn word(&self) -> usize {
        match self {
            VersionRef::Node(node) => *node as *const VersionNode as usize,
            VersionRef::Plain(_, offset) => word_of(plain::head(*offset)),
        }
    }
}

/// A head word as a number, tag included: two heads name the same version exactly when their
/// words are equal.
pub fn word_of(head: Shared<'_, VersionNode>) -> usize {
    head.as_raw() as usize | head.tag()
}

/// Reads plain entries from the log: the entry whose value starts at a value offset
/// (`plain::Entry::read` of the `plain::FIELDS_BYTES` before it).
pub trait PlainEntries {
    fn plain_entry_at(&mut self, value_offset: u64) -> Result<plain::Entry>;

    /// Whether plain heads may be made where these fields are read (a replay into a scratch
    /// index that cannot read the log back makes none).
    fn allows_plain_heads(&self) -> bool {
        true
    }
}

/// The entries source of a replay that makes no plain heads (`inspect::verify`, which checks
/// records without a log to read them back from): never asked for an entry.
pub struct NoPlainHeads;

impl PlainEntries for NoPlainHeads {
    fn plain_entry_at(&mut self, value_offset: u64) -> Result<plain::Entry> {
        Err(crate::error::Error::corruption(
            "log",
            value_offset,
            "a plain head in an index that makes none",
        ))
    }

    fn allows_plain_heads(&self) -> bool {
        false
    }
}

/// The version `head` (a head word or an `older` link) names: its node, or the plain entry's
/// version read through `entries`; `None` for null. Not for a pending plain head (a batch's
/// uncommitted first version: `settled_head` waits for it, `visible` passes it).
#[inline]
pub fn view<'g>(
    head: Shared<'g, VersionNode>,
    entries: &mut impl PlainEntries,
) -> Result<Option<VersionRef<'g>>> {
    assert!(
        !plain::is_pending(head),
        "a pending plain head has no version to read yet"
    );
    if let Some(offset) = plain::offset_of(head) {
        let entry = entries.plain_entry_at(offset)?;
        return Ok(Some(VersionRef::Plain(entry.node(), offset)));
    }
    Ok(node_of(head).map(VersionRef::Node))
}

/// The node `head` points at, if it is a node (not null, not plain, not pending plain).
pub fn node_of<'g>(head: Shared<'g, VersionNode>) -> Option<&'g VersionNode> {
    if !plain::is_node_or_null(head) {
        return None;
    }
    // SAFETY: heads and links are read under a guard, and nodes reachable from a slot are
    // freed only through the epoch; `'g` is that guard's.
    unsafe { head.as_ref() }
}

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
            let pending = plain::is_pending(head)
                || node_of(head).is_some_and(|node| node.status.load(Ordering::Acquire) == PENDING);
            if !pending {
                return head;
            }
            if backoff.is_completed() {
                std::thread::yield_now();
            } else {
                backoff.snooze();
            }
        }
    }

    /// Asks the CPU to start loading this slot's newest version node, which a walk will read
    /// soon: cache misses of walks then overlap instead of following one another. (A plain
    /// head's entry is in the log: the walk's value prefetch loads it.)
    pub(crate) fn prefetch_head_node(&self) {
        // SAFETY: the pointer is only prefetched, never dereferenced (a prefetch cannot fault).
        let guard = unsafe { crossbeam_epoch::unprotected() };
        let head = self.head().load(Ordering::Relaxed, guard);
        if plain::is_node_or_null(head) {
            prefetch(head.as_raw());
        }
    }

    /// The newest committed version ≤ `version` (what a reader at `version` sees).
    pub fn visible<'g>(
        &self,
        version: Version,
        guard: &'g Guard,
        entries: &mut impl PlainEntries,
    ) -> Result<Option<VersionRef<'g>>> {
        let mut current = self.head().load(Ordering::Acquire, guard);
        loop {
            // A batch's uncommitted first version: nothing is older.
            if plain::is_pending(current) {
                return Ok(None);
            }
            match view(current, entries)? {
                None => return Ok(None),
                // A plain version ends its chain, and is committed.
                Some(VersionRef::Plain(node, offset)) => {
                    return Ok((node.version <= version).then_some(VersionRef::Plain(node, offset)))
                }
                Some(VersionRef::Node(node)) => {
                    if node.version <= version && node.status.load(Ordering::Acquire) == COMMITTED {
                        return Ok(Some(VersionRef::Node(node)));
                    }
                    current = node.older.load(Ordering::Acquire, guard);
                }
            }
        }
    }

    /// Installs `node` over `expected`.
    pub fn install<'g>(
        &self,
        expected: Shared<'g, VersionNode>,
        node: VersionNode,
        guard: &'g Guard,
    ) -> Result<Shared<'g, VersionNode>, HeadMoved> {
        node.link_older(expected);
        let new = Owned::new(node).into_shared(guard);
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
                drop(unsafe { new.into_owned() });
                Err(HeadMoved)
            }
        }
    }

    /// Installs a plain head naming the entry whose value starts at `value_offset` over
    /// `expected`: null, or (not `pending`) a settled head the new one *replaces* with all of
    /// its chain, so that no one can walk from the new version to the old (`plain.rs` says
    /// when a writer may). A plain version ends its chain. A batch installs its new keys'
    /// versions `pending` (`resolve_pending_plain` settles them).
    pub fn install_plain<'g>(
        &self,
        expected: Shared<'g, VersionNode>,
        value_offset: u64,
        pending: bool,
        guard: &'g Guard,
    ) -> Result<Shared<'g, VersionNode>, HeadMoved> {
        assert!(
            expected.is_null()
                || (!pending
                    && !plain::is_pending(expected)
                    && node_of(expected)
                        .is_none_or(|node| node.status.load(Ordering::Acquire) == COMMITTED)),
            "a plain head goes over nothing, or replaces a settled head"
        );
        let new = if pending {
            plain::pending_head(value_offset)
        } else {
            plain::head(value_offset)
        };
        self.head()
            .compare_exchange(expected, new, Ordering::AcqRel, Ordering::Acquire, guard)
            .map_err(|_| HeadMoved)?;
        // SAFETY: the exchange unlinked `expected` from the slot, and only this caller won it.
        unsafe { self.retire_chain(expected, guard) };
        Ok(new)
    }

    /// Retires `detached` and the chain below it, once no slot links to `detached`.
    ///
    /// A prune that read the old head before it was replaced may still be detaching part of
    /// the same chain: each link is therefore taken with a swap, and each node is retired by
    /// whoever swapped out the link to it (this walk, or that prune), never by both.
    ///
    /// # Safety
    /// The caller unlinked `detached` from the slot, and no one else retires it.
    unsafe fn retire_chain<'g>(&self, mut detached: Shared<'g, VersionNode>, guard: &'g Guard) {
        while let Some(node) = node_of(detached) {
            let older = node.older.swap(Shared::null(), Ordering::AcqRel, guard);
            // SAFETY: unlinked (the caller's promise, then the swap above for each next one).
            unsafe { self.retire(detached, guard) };
            detached = older;
        }
    }

    /// Commits the pending plain head `installed` (a plain head from now on), or takes it back
    /// (null again). No one installs over a pending head, so it is still the head.
    pub fn resolve_pending_plain(
        &self,
        installed: Shared<'_, VersionNode>,
        commit: bool,
        guard: &Guard,
    ) {
        let resolved = match plain::pending_offset_of(installed) {
            Some(offset) if commit => plain::head(offset),
            Some(_) => Shared::null(),
            None => panic!("a pending plain head is resolved"),
        };
        let exchanged = self.head().compare_exchange(
            installed,
            resolved,
            Ordering::AcqRel,
            Ordering::Acquire,
            guard,
        );
        assert!(
            exchanged.is_ok(),
            "a pending head stays the head until it resolves"
        );
    }

    /// Replaces the plain head naming the entry at `value_offset` by a node saying the same
    /// `version` (read from that entry), so the entry's segment can go. False when the head
    /// is no longer that plain head.
    pub fn demote_plain(&self, value_offset: u64, version: &VersionNode, guard: &Guard) -> bool {
        let node = Owned::new(VersionNode::new(NewVersion {
            version: version.version,
            etag_version: version.etag_version(),
            status: COMMITTED,
            value: version.value(),
            last_modified: version.last_modified,
            expires_at: version.expires_at(),
            properties: None,
            coordination: None,
        }));
        self.head()
            .compare_exchange(
                plain::head(value_offset),
                node,
                Ordering::AcqRel,
                Ordering::Acquire,
                guard,
            )
            .is_ok()
    }

    /// Makes a plain head naming the entry at `value_offset` the slot's whole chain. For the
    /// replay at open, which no one else sees and where no reader needs older versions.
    pub fn replace_chain_with_plain(&self, value_offset: u64, guard: &Guard) {
        let mut detached = self
            .head()
            .swap(plain::head(value_offset), Ordering::AcqRel, guard);
        while let Some(node) = node_of(detached) {
            let next = node.older.load(Ordering::Acquire, guard);
            // SAFETY: detached by the swap.
            unsafe { self.retire(detached, guard) };
            detached = next;
        }
    }

    /// Frees a node unlinked from this slot's chain once no reader can still hold it; a
    /// plain head frees nothing.
    ///
    /// # Safety
    /// `node` was this slot's, and is now unreachable from its head.
    pub(crate) unsafe fn retire(&self, node: Shared<'_, VersionNode>, guard: &Guard) {
        if node.is_null() || plain::offset_of(node).is_some() {
            return;
        }
        // SAFETY: readers that still hold it are protected by their guards.
        unsafe { guard.defer_destroy(node) };
    }

    /// Takes back a pending node this caller installed (nobody builds on pending nodes, so
    /// it is still the head).
    pub fn uninstall<'g>(&self, installed: Shared<'g, VersionNode>, guard: &'g Guard) {
        let node = node_of(installed).expect("an installed node");
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
        while !current.is_null() {
            kept = kept.saturating_add(1);
            // A plain version ends the chain: nothing below it to unlink.
            let Some(node) = node_of(current) else {
                return kept;
            };
            if node.version <= keep_from && node.status.load(Ordering::Acquire) == COMMITTED {
                let mut detached = node.older.swap(Shared::null(), Ordering::AcqRel, guard);
                // The swap detached the chain, so only guards taken before it can still see
                // these nodes; `retire` waits for them.
                while let Some(detached_node) = node_of(detached) {
                    let next = detached_node.older.load(Ordering::Acquire, guard);
                    // SAFETY: detached above.
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

    /// The slot of `index_key` and its bucket's value-hint cell for a write, the slot added
    /// first when `insert`. A view, not a reference of its own: the indexes keep every slot
    /// while they live, so a write's slot outlives `guard`, and the common write takes no
    /// reference count (two locked instructions on the slot's line).
    pub(crate) fn slot_for_write<'g>(
        &self,
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
