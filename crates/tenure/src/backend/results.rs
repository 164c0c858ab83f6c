//! What operations give back: leases, changes, reports and statistics.

use crate::backend::options::Item;
use crate::error::Result;
pub use crate::log::IoUringUse;
use crate::rules::lease::{LeaseDuration, LeaseId, LeaseState};
use crate::types::{ETag, Version};

/// What one `compact` call did.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct CompactionReport {
    pub segments_removed: usize,
    pub bytes_removed: u64,
    pub items_relocated: u64,
    pub containers_relocated: u64,
    /// A snapshot older than the compaction is open, or a read-only process that follows
    /// the store has not read the oldest segment yet: segments were rewritten but not yet
    /// removed, or the oldest was left as it was (a later `compact` removes them).
    pub deferred_by_snapshot: bool,
    /// The change feed's retention kept the oldest segment.
    pub retained_for_change_feed: bool,
    /// Lease, lock or metadata changes kept racing the copy of an item whose value lies in the
    /// oldest segment: the segment stays until a later `compact`.
    pub deferred_by_writes: bool,
}

/// What an open store holds, as of now (the CLI's `stat`).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct StoreStats {
    /// The latest committed version.
    pub version: Version,
    pub containers: Vec<ContainerStats>,
    pub items: u64,
    /// Item versions held in the in-memory index (current ones, tombstones and older
    /// versions snapshots may still need).
    pub item_versions: u64,
    pub segments: u64,
    pub segment_size_bytes: u64,
    /// The segment files' lengths added up. Space ahead of the tail is sparse until the log
    /// reaches it, so the files take less on disk than this.
    pub allocated_bytes: u64,
    /// Bytes of log from its start to its tail.
    pub log_bytes: u64,
    /// Bytes of the records that hold a live item's current value.
    pub live_bytes: u64,
    /// `log_bytes - live_bytes`: superseded versions, deletions, expiries, lease and lock
    /// records, container records, aborts, unused segment ends — what compaction can reclaim
    /// (except container state, which it copies forward).
    pub dead_bytes: u64,
    /// Item leases that are Leased or Breaking.
    pub active_leases: u64,
    /// Cache locks not past their timeout.
    pub active_locks: u64,
    /// Writes that add data are refused with `StorageFull` (the disk or the quota is full)
    /// once the space the log has allocated ahead is used: the next allocation step would be
    /// refused. Asked at the call, so space freed since shows at once.
    pub storage_full: bool,
    /// Bytes free on the disk under the store, where the system tells.
    pub free_bytes: Option<u64>,
    /// Bytes of the disk held back for deletes and compaction.
    pub reserve_bytes: u64,
    pub quota_bytes: Option<u64>,
    /// Bytes the segment files take on disk (their allocated space).
    pub store_bytes: u64,
    /// Whether a `sync` store's group commit goes through io_uring, and if the system refused
    /// it, why (`StoreOptions::io_uring`).
    pub io_uring: IoUringUse,
    /// Whether the open loaded a persisted index (saved at a clean close, or a running
    /// store's checkpoint) instead of replaying the whole log (docs/design.md §3 "The
    /// persisted index").
    pub opened_from_persisted_index: bool,
    /// Log bytes the open replayed into the index: those past the persisted index it loaded,
    /// or the whole log without one.
    pub log_bytes_replayed_at_open: u64,
    /// Whether every log record below the persisted index the open started from has passed
    /// the open's checks, which run right after such an open returns (docs/spec.md §11
    /// "Checksums"); always after an open that read the whole log.
    pub log_verified: bool,
}

#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ContainerStats {
    pub name: String,
    pub items: u64,
    /// Sum of the live items' value lengths.
    pub value_bytes: u64,
    pub active_leases: u64,
    pub active_locks: u64,
    /// The container's own lease state.
    pub lease_state: Option<LeaseState>,
}

/// What an acquire asks for.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LeaseRequest {
    pub duration: LeaseDuration,
    /// Acquire with this id (else tenure generates one).
    pub proposed_id: Option<LeaseId>,
    /// A label shown by lease info (who holds it), at most 256 bytes.
    pub holder: Option<String>,
}

impl LeaseRequest {
    /// A fixed lease of `seconds` (15–60).
    pub fn seconds(seconds: u32) -> Result<LeaseRequest> {
        Ok(LeaseRequest {
            duration: LeaseDuration::fixed(seconds)?,
            proposed_id: None,
            holder: None,
        })
    }

    pub fn infinite() -> LeaseRequest {
        LeaseRequest {
            duration: LeaseDuration::Infinite,
            proposed_id: None,
            holder: None,
        }
    }
}

/// A granted lease: its id and its fencing token.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Lease {
    pub id: LeaseId,
    /// Strictly increasing per item across all grants; pass it to other systems so they can
    /// refuse a stale holder.
    pub fence: u64,
}

/// One item a scan visits: key and value borrowed for the duration of the visit (the value
/// straight from the log's mapping).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ScanEntry<'a> {
    pub key: &'a [u8],
    pub value: &'a [u8],
    pub etag: ETag,
    pub version: Version,
}

/// An item read through a snapshot with its value borrowed from the log's mapping.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BorrowedItem<'snapshot> {
    /// Properties, ETag, version, times (`item.value` is `None`).
    pub item: Item,
    pub value: &'snapshot [u8],
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum ChangeKind {
    /// An item written where none existed.
    Created,
    /// An existing item's value or properties replaced.
    Updated,
    Deleted,
    /// The item's TTL ran out; reported at the version that recorded it.
    Expired,
    ContainerCreated,
    ContainerDeleted,
}

/// One committed change, borrowed from the log (see `visit_changes`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ChangeRef<'a> {
    pub version: Version,
    pub kind: ChangeKind,
    pub container: &'a str,
    pub key: Option<&'a [u8]>,
    pub etag: Option<ETag>,
    /// The new value (creates and updates).
    pub value: Option<&'a [u8]>,
}

impl ChangeRef<'_> {
    pub fn to_owned(&self, include_value: bool) -> Change {
        Change {
            version: self.version,
            kind: self.kind,
            container: self.container.to_owned(),
            key: self.key.map(<[u8]>::to_vec),
            etag: self.etag,
            value: self.value.filter(|_| include_value).map(<[u8]>::to_vec),
        }
    }
}

/// One committed change.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Change {
    pub version: Version,
    pub kind: ChangeKind,
    pub container: String,
    /// `None` for container changes.
    pub key: Option<Vec<u8>>,
    /// The item's new ETag (creates and updates).
    pub etag: Option<ETag>,
    /// The new value, when asked for (creates and updates).
    pub value: Option<Vec<u8>>,
}

#[derive(Debug, Clone)]
pub struct ChangesOptions {
    /// Only this container's changes (its create and delete included).
    pub container: Option<String>,
    pub include_values: bool,
    /// How many changes a call returns (1..=100,000): this many, or more when the last is a
    /// batch's, whose changes are never split between calls. A caller continues from the last
    /// version it processed.
    pub max_changes: usize,
}

impl Change {
    pub fn as_ref(&self) -> ChangeRef<'_> {
        ChangeRef {
            version: self.version,
            kind: self.kind,
            container: &self.container,
            key: self.key.as_deref(),
            etag: self.etag,
            value: self.value.as_deref(),
        }
    }
}

impl Default for ChangesOptions {
    fn default() -> ChangesOptions {
        ChangesOptions {
            container: None,
            include_values: false,
            max_changes: 1000,
        }
    }
}

/// The most changes one `changes` call returns.
pub const MAX_CHANGES_PER_CALL: usize = 100_000;

/// Step 1 of a `changes` call, as every backend checks it: the page size and the container
/// filter's name.
pub fn check_changes_options(options: &ChangesOptions) -> crate::error::Result<()> {
    if options.max_changes == 0 || options.max_changes > MAX_CHANGES_PER_CALL {
        return Err(crate::error::Error::invalid(
            "max_changes",
            format!("must be 1..={MAX_CHANGES_PER_CALL}"),
        ));
    }
    if let Some(container) = &options.container {
        crate::rules::validate::container_name(container)?;
    }
    Ok(())
}
