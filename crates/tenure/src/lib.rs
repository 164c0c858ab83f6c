//! tenure: an embedded key/value and blob engine with the concurrency controls of the big
//! cloud stores — ETags and conditions, leases, cache locks — over a checksummed log.
//!
//! Start at [`Store::open`]. The behaviour contract is SPEC.md; the design is docs/design.md.

mod backend;
mod base;
mod clock;
mod engine;
mod error;
mod index;
mod inspect;
mod log;
mod record;
mod rules;
mod storage;
mod types;

pub use backend::options::{
    ContainerOptions, ContainerProperties, ContainerWriteOptions, Item, ItemRef, Page, ReadOptions,
    StoreOptions, WriteOptions,
};
pub use clock::{Clock, ManualClock, SystemClock, Timestamp, MICROS_PER_SECOND};
pub use engine::batch::Batch;
pub use engine::compaction::CompactionReport;
pub use engine::coordination::{Lease, LeaseRequest};
pub use engine::feed::{Change, ChangeKind, ChangeRef, ChangesOptions};
pub use engine::scan::ScanEntry;
pub use engine::snapshot::{BorrowedItem, Snapshot};
pub use engine::stats::{ContainerStats, StoreStats};
pub use engine::Store;
pub use error::{Error, ErrorCode, Result};
pub use inspect::{repair, verify, Problem, RepairReport, VerifyReport};
pub use log::{Durability, Log, LogOptions, RecoveredRecord, Reservation};
pub use rules::conditions::Conditions;
pub use rules::etag::ETagArg;
pub use rules::lease::{LeaseDuration, LeaseId, LeaseInfo, LeaseState};
pub use rules::limits::Limits;
pub use rules::lock::LockHandle;
pub use rules::ttl::Ttl;
pub use storage::{FileStorage, Mapping, Storage, StorageFile};
pub use types::{ETag, Version};
