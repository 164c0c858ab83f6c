//! tenure: an embedded key/value and blob engine with the concurrency controls of the big
//! cloud stores — ETags and conditions, leases, cache locks — over a checksummed log.

mod clock;
mod error;
mod etag;
#[allow(dead_code)] // Used by the item engine, which lands next.
mod rules;

pub use clock::{Clock, ManualClock, SystemClock, Timestamp, MICROS_PER_SECOND};
pub use error::{Error, ErrorCode, Result};
pub use etag::{ETag, ETagArg, Version};
mod log;
mod storage;

pub use log::{Durability, Log, LogOptions, RecoveredRecord, Reservation};
pub use storage::{FileStorage, Mapping, Storage, StorageFile};
