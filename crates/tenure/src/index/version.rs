//! Versions of an item: the node a write installs, its value's place in the log, and a
//! reference that is either a node or a plain entry read back (`plain.rs`).

use std::num::NonZeroU64;
use std::sync::atomic::{AtomicU8, Ordering};

use crossbeam_epoch::{Atomic, Shared};

use super::head;
use crate::clock::{ReadTime, Timestamp};
use crate::record::{Coordination, Metadata};
use crate::rules::lease::LeaseRecord;
use crate::rules::lock::{self, LockRecord};
use crate::types::Version;

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
    /// (`head::Entry::node`).
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
            !head::is_pending(older),
            "nothing is installed over a pending head"
        );
        let below = if head::offset_of(older).is_some() {
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
            VersionRef::Plain(_, offset) => word_of(head::head(*offset)),
        }
    }
}

/// A head word as a number, tag included: two heads name the same version exactly when their
/// words are equal.
pub fn word_of(head: Shared<'_, VersionNode>) -> usize {
    head.as_raw() as usize | head.tag()
}

impl Properties {
    /// The properties of a write, boxed; `None` when it has none.
    pub(crate) fn boxed(
        content_type: Option<&str>,
        metadata: Vec<(String, String)>,
    ) -> Option<Box<Properties>> {
        if content_type.is_none() && metadata.is_empty() {
            return None;
        }
        Some(Box::new(Properties {
            content_type: content_type.map(str::to_owned),
            metadata,
        }))
    }
}
