//! tenure: an embedded key/value and blob engine with the concurrency controls of the big
//! cloud stores — ETags and conditions, leases, cache locks — over a checksummed log.
//!
//! Start at [`Store::open`]. The behaviour contract is SPEC.md; the design is docs/design.md.

mod arena;
mod background;
mod batch;
mod catalog;
mod clock;
mod codec;
mod compaction;
mod coordination;
mod error;
mod etag;
mod expiry;
mod feed;
mod fork;
mod index;
mod inspect;
mod log;
mod options;
mod ordered_index;
mod plain;
mod point_index;
mod rules;
mod scan;
mod slot;
mod snapshot;
mod storage;
mod store;
mod sync;
mod validate;
mod write;
mod zeroed_array;

pub use batch::Batch;
pub use clock::{Clock, ManualClock, SystemClock, Timestamp, MICROS_PER_SECOND};
pub use compaction::CompactionReport;
pub use coordination::{Lease, LeaseRequest};
pub use error::{Error, ErrorCode, Result};
pub use etag::{ETag, ETagArg, Version};
pub use feed::{Change, ChangeKind, ChangeRef, ChangesOptions};
pub use inspect::{
    repair, verify, ContainerStats, Problem, RepairReport, StoreStats, VerifyReport,
};
pub use log::{Durability, Log, LogOptions, RecoveredRecord, Reservation};
pub use options::{
    ContainerOptions, ContainerProperties, ContainerWriteOptions, Item, ItemRef, Limits, Page,
    ReadOptions, StoreOptions, WriteOptions,
};
pub use rules::conditions::Conditions;
pub use rules::lease::{LeaseDuration, LeaseId, LeaseInfo, LeaseState};
pub use rules::lock::LockHandle;
pub use rules::ttl::Ttl;
pub use scan::ScanEntry;
pub use snapshot::{BorrowedItem, Snapshot};
pub use storage::{FileStorage, Mapping, Storage, StorageFile};
pub use store::{Store, StoreShared};
