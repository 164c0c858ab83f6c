//! What callers pass in and get back: options, items, pages.

use std::sync::Arc;

use crate::clock::{Clock, SystemClock, Timestamp};
use crate::log::Durability;
use crate::rules::conditions::Conditions;
use crate::rules::lease::LeaseId;
use crate::rules::limits::Limits;
use crate::rules::lock::LockHandle;
use crate::rules::ttl::Ttl;
use crate::types::{ETag, Version};

#[derive(Clone)]
pub struct StoreOptions {
    pub durability: Durability,
    /// Size of each log segment; fixed when the store is created.
    pub segment_size_bytes: u64,
    pub limits: Limits,
    pub clock: Arc<dyn Clock>,
    /// How often a background thread looks for sealed segments to compact (it also takes
    /// checkpoints of the index as the log grows); `None` starts no such thread, leaving
    /// compaction to `compact()` calls and checkpoints to `checkpoint()` calls. In a
    /// read-only open that follows a writer, the thread instead reads what the writer
    /// appended, at least every 100 ms; with `None` the open reads on only when called, and
    /// until then holds back the writer's compaction of what it has not read.
    pub background_compaction_interval: Option<std::time::Duration>,
    /// The background thread compacts once at least this many segments are sealed.
    pub background_compaction_sealed_segments: usize,
    /// The change feed keeps at least the last this-many versions: compaction does not remove
    /// a segment holding one of them.
    pub change_feed_retention_versions: Option<u64>,
    /// ... and at least this many bytes of log behind the tail.
    pub change_feed_retention_bytes: Option<u64>,
    /// Open for reading only: beside a process that has the store open for writing, or on
    /// files this process cannot write. No lock is taken and nothing is written to the
    /// store, and every write fails with `ReadOnly` (docs/spec.md §1). Beside a writer, in
    /// this process or another, each operation first reads what was committed since the last
    /// one: a read sees every write committed before it started.
    pub read_only: bool,
    /// Bytes of free disk that writes which add data leave for deletes, expiries and
    /// compaction (docs/spec.md §11): deletes may use half of it, compaction all. `None`: two
    /// segments, at least 8 MiB, so the half left to compaction holds a segment's copies.
    pub space_reserve_bytes: Option<u64>,
    /// The most bytes the store's segment files may take on disk: a write that would need more
    /// is refused with `StorageFull`, as on a full disk (deletes and compaction may go up to
    /// the reserve past it). `None`: no quota, only the disk's size.
    pub quota_bytes: Option<u64>,
    /// A `sync` store's group commit submits its writes and `fdatasync`s through io_uring,
    /// one system call a group, where the system allows it; where it refuses, and by default,
    /// `pwrite` and `fdatasync`, which commit sooner where measured (docs/design.md §11,
    /// "io_uring"). `StoreStats::io_uring` says which path a store uses.
    pub io_uring: bool,
}

impl Default for StoreOptions {
    fn default() -> StoreOptions {
        StoreOptions {
            durability: Durability::Sync,
            segment_size_bytes: 64 << 20,
            limits: Limits::default(),
            clock: Arc::new(SystemClock::new()),
            background_compaction_interval: Some(std::time::Duration::from_secs(1)),
            background_compaction_sealed_segments: 4,
            change_feed_retention_versions: None,
            change_feed_retention_bytes: None,
            read_only: false,
            space_reserve_bytes: None,
            quota_bytes: None,
            io_uring: false,
        }
    }
}

impl std::fmt::Debug for StoreOptions {
    fn fmt(&self, formatter: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        formatter
            .debug_struct("StoreOptions")
            .field("durability", &self.durability)
            .field("segment_size_bytes", &self.segment_size_bytes)
            .field("limits", &self.limits)
            .field("read_only", &self.read_only)
            .field("space_reserve_bytes", &self.space_reserve_bytes)
            .field("quota_bytes", &self.quota_bytes)
            .field("io_uring", &self.io_uring)
            .finish_non_exhaustive()
    }
}

/// Options of a read (get, get properties).
#[derive(Debug, Clone, Default)]
pub struct ReadOptions {
    pub conditions: Conditions,
    /// Reads of a leased item may name the lease (docs/spec.md §4): a wrong id is refused.
    pub lease_id: Option<LeaseId>,
}

/// Options of a write (put, create, replace, delete, set metadata).
#[derive(Debug, Clone, Default)]
pub struct WriteOptions {
    pub conditions: Conditions,
    pub content_type: Option<String>,
    /// User metadata; a put replaces the item's metadata with this.
    pub metadata: Vec<(String, String)>,
    pub ttl: Ttl,
    /// Required to write an item whose lease is Leased or Breaking (docs/spec.md §4).
    pub lease_id: Option<LeaseId>,
    /// A write with the handle of the item's cache lock replaces it and unlocks (docs/spec.md §6);
    /// a write without a handle replaces it and releases any lock.
    pub lock_handle: Option<LockHandle>,
}

impl WriteOptions {
    pub fn with_conditions(conditions: Conditions) -> WriteOptions {
        WriteOptions {
            conditions,
            ..WriteOptions::default()
        }
    }
}

/// Options of a container write (delete, set metadata): conditions on the container's ETag and
/// dates, and its lease id (required to delete a leased container; must match if given).
#[derive(Debug, Clone, Default)]
pub struct ContainerWriteOptions {
    pub conditions: Conditions,
    pub lease_id: Option<LeaseId>,
}

#[derive(Debug, Clone, Default)]
pub struct ContainerOptions {
    pub metadata: Vec<(String, String)>,
    /// Seconds an item lives after its last write unless it sets its own TTL.
    pub default_ttl_seconds: Option<u32>,
}

/// An item as a read returns it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Item {
    pub key: Vec<u8>,
    /// `None` from `get_properties` and from listings that did not ask for values.
    pub value: Option<Vec<u8>>,
    pub etag: ETag,
    pub version: Version,
    pub last_modified: Timestamp,
    pub content_type: Option<String>,
    pub metadata: Vec<(String, String)>,
    pub expires_at: Option<Timestamp>,
}

/// An item lent to the closure of `Store::get_with`: every field borrowed, the value from
/// the log's mapping, for the length of the call. [`ItemRef::to_item`] copies it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ItemRef<'a> {
    pub key: &'a [u8],
    pub value: &'a [u8],
    pub etag: ETag,
    pub version: Version,
    pub last_modified: Timestamp,
    pub content_type: Option<&'a str>,
    pub metadata: &'a [(String, String)],
    pub expires_at: Option<Timestamp>,
}

impl ItemRef<'_> {
    /// The item as `get` returns it, value and all.
    pub fn to_item(&self) -> Item {
        Item {
            key: self.key.to_vec(),
            value: Some(self.value.to_vec()),
            etag: self.etag,
            version: self.version,
            last_modified: self.last_modified,
            content_type: self.content_type.map(str::to_owned),
            metadata: self.metadata.to_vec(),
            expires_at: self.expires_at,
        }
    }
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ContainerProperties {
    pub name: String,
    pub etag: ETag,
    pub last_modified: Timestamp,
    pub metadata: Vec<(String, String)>,
    pub default_ttl_seconds: Option<u32>,
}

/// One page of a listing.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Page {
    pub items: Vec<Item>,
    /// Pass it to the next `list` call; `None` on the last page.
    pub continuation: Option<String>,
}
