//! tenure: an embedded key/value and blob engine with the concurrency controls of the big
//! cloud stores — ETags and conditions, leases, cache locks — over a checksummed log.
//!
//! Start at [`Store::open`]. The behaviour contract is docs/spec.md in the repository; the
//! design is docs/design.md.
//!
//! The source's folders are its layers, each importing only those below it (bottom up):
//! `base` → `types`, `error`, `clock` → `storage` → `log` → `rules` → `record` → `index` →
//! `backend` (the seam) → `engine`, `inspect` → `api`.

mod api;
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

pub use api::{Batch, Snapshot, Store};
pub use backend::options::{
    ContainerOptions, ContainerProperties, ContainerWriteOptions, Item, ItemRef, Page, ReadOptions,
    StoreOptions, WriteOptions,
};
pub use backend::results::{
    BorrowedItem, Change, ChangeKind, ChangeRef, ChangesOptions, CompactionReport, ContainerStats,
    IoUringUse, Lease, LeaseRequest, ScanEntry, StoreStats,
};
pub use clock::{Clock, ManualClock, SystemClock, Timestamp, MICROS_PER_SECOND};
pub use error::{Error, ErrorCode, Result};
pub use inspect::{
    repair, verify, DamagedItem, DamagedRange, Problem, RecoveredContainer, RepairReport,
    VerifyReport,
};
pub use log::Durability;
pub use rules::conditions::Conditions;
pub use rules::etag::{ETagArg, ETagList};
pub use rules::lease::{LeaseDuration, LeaseId, LeaseInfo, LeaseState};
pub use rules::limits::Limits;
pub use rules::lock::LockHandle;
pub use rules::ttl::Ttl;
pub use types::{ETag, Version};

/// The seam for crates that implement another backend behind [`Store`] (tenure-etcd): the
/// two traits every backend implements, a batch's operations, and the rules as pure
/// functions, so every backend decides each operation exactly as the local engine does. It
/// follows the engine's version exactly; no other stability is promised.
pub mod seam {
    pub use crate::backend::batch::{BatchOperations, Operation, Span};
    pub use crate::backend::results::{check_changes_options, MAX_CHANGES_PER_CALL};
    pub use crate::backend::{Backend, BackendSnapshot, PutKind};
    pub use crate::rules::{
        conditions, etag, item_write, lease, lock, paging, ttl, validate, with_current_etag,
    };
}

/// What the test kit and the benchmarks reach inside the engine for: the log on its own, and
/// the storage layer the simulated disk plugs into. Not part of the API: it changes without
/// notice.
#[doc(hidden)]
pub mod internals {
    pub use crate::log::{Log, LogOptions, RecoveredRecord, Reservation, SpaceUse};
    pub use crate::storage::{FileStorage, Mapping, Storage, StorageFile};
}
