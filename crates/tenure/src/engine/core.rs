//! The engine's state — the log, the index, the catalog and what coordinates them — and the
//! gate every operation passes first. The operations are spread over this folder's other
//! files, each an `impl Engine` block over the state defined here.

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;

use parking_lot::Mutex;

use crate::clock::{Clock, Timestamp};
use crossbeam_epoch::{Guard, Shared};

use crate::error::{Error, ErrorCode, Result};
use crate::index::catalog::Catalog;
use crate::index::{view, ItemSlot, VersionRef};
use crate::index::{Index, VersionNode};
use crate::log::Log;
use crate::rules::conditions::ItemFacts;
use crate::rules::limits::Limits;
use crate::types::{ETag, Version};

/// The engine behind a store: the log, the index, the catalog. Its operations are the
/// methods of this folder's files.
pub struct Engine {
    pub(crate) log: Log,
    pub(crate) index: Index,
    pub(crate) catalog: Catalog,
    pub(crate) clock: Arc<dyn Clock>,
    pub(crate) limits: Limits,
    /// Open snapshots by version, and the oldest one (`u64::MAX` when none). Snapshot creation
    /// and pruning take this lock, so a prune never drops a version a new snapshot pins.
    pub(crate) snapshots: Mutex<super::open_snapshots::OpenSnapshots>,
    pub(crate) oldest_snapshot: AtomicU64,
    pub(crate) lease_waiters: super::lease_waiters::LeaseWaiters,
    /// What the change feed must keep (versions, bytes behind the tail).
    pub(crate) feed_retention: (Option<u64>, Option<u64>),
    /// One compaction at a time; holds the log's tail when the last `compact` call ended.
    pub(crate) compaction: Mutex<u64>,
    pub(crate) closed: AtomicBool,
    /// The log below the persisted index the open started from failed its verification
    /// (`after_open.rs`): every call fails with `damage`, as the open would have.
    pub(crate) damaged: AtomicBool,
    pub(crate) damage: Mutex<Option<Error>>,
    /// The process that opened the store: a forked child's copy refuses every call.
    pub(crate) owner: crate::base::fork::OwningProcess,
    /// The open loaded the persisted index (`index/checkpoint/`) instead of replaying.
    pub(crate) opened_from_persisted_index: bool,
    /// Log bytes the open replayed into the index (from the persisted index's tail on, or all).
    pub(crate) replayed_log_bytes_at_open: u64,
    /// Where the persisted index on disk stands, when this process loaded or saved one: what
    /// the checkpoint policy measures the log since (`checkpoints.rs`).
    pub(crate) checkpointed: Mutex<Option<crate::index::checkpoint::SavedAt>>,
}

impl Engine {
    /// The gate of every operation: `UsedAfterFork` in a forked child (checked first, so a
    /// child never reaches state a parent's thread may have held locked at the fork), then
    /// `Closed`; then, in a read-only open that follows the writer, what other processes
    /// appended since the last operation is applied (`follow.rs`).
    #[inline]
    pub(crate) fn check_open(&self) -> Result<()> {
        if self.owner.is_inherited() {
            return Err(self.used_after_fork());
        }
        if self.closed.load(Ordering::Acquire) {
            return Err(Error::Closed);
        }
        if self.damaged.load(Ordering::Acquire) {
            return Err(self.damage_found());
        }
        self.follow_writer()
    }

    /// The damage the verification after an open found (`after_open.rs`).
    #[cold]
    fn damage_found(&self) -> Error {
        self.damage.lock().clone().unwrap_or(Error::Closed)
    }

    #[cold]
    pub(crate) fn used_after_fork(&self) -> Error {
        Error::UsedAfterFork {
            opened_by_pid: self.owner.pid(),
        }
    }

    /// Makes every acknowledged write durable (in `buffered` mode; `sync` writes already are).
    pub(crate) fn flush(&self) -> Result<()> {
        self.check_open()?;
        self.log.flush()
    }

    /// The lengths of the log's segment files added up (sparse ahead of the tail).
    pub(crate) fn log_bytes(&self) -> u64 {
        self.log.allocated_bytes()
    }

    /// The latest committed version.
    pub(crate) fn version(&self) -> Version {
        self.log.visible_version()
    }

    pub(crate) fn now(&self) -> Timestamp {
        self.clock.now()
    }
}

/// Runs a plain read `attempt`, again after a `Corruption` error, up to three times in all.
///
/// Compaction drops a segment from the log's table at once (only the file waits for the
/// epoch), so a plain read that found a version just before compaction swapped in its copy,
/// and was then descheduled past the removal, finds the segment gone. It reads again and
/// finds the copy. Not observed in a test — a guard for a narrow window; deferring the table
/// removal through the epoch would close it at the source. A real corruption fails every
/// attempt and is reported. A snapshot's read (`repeatable`) is not retried: compaction
/// removes no segment a snapshot may read while the snapshot is open.
pub(crate) fn retrying_plain_read<T>(
    repeatable: bool,
    mut attempt: impl FnMut() -> Result<T>,
) -> Result<T> {
    const PLAIN_READ_ATTEMPTS: usize = 3;
    let mut attempts = 1;
    loop {
        match attempt() {
            Err(error)
                if error.code() == ErrorCode::Corruption
                    && !repeatable
                    && attempts < PLAIN_READ_ATTEMPTS =>
            {
                attempts += 1;
            }
            result => return result,
        }
    }
}

impl Engine {
    /// The settled head of `slot` and the version it names. A plain head names its entry in
    /// the log, which compaction may have copied forward and taken out of the segment table
    /// between the load of the head and the read of the entry (the segment stays mapped for
    /// the guard, but is no longer found): the head is then loaded again — compaction swapped
    /// in the copy before it removed the segment — at most three times in all, as a plain read
    /// does (`retrying_plain_read`). Real damage fails every time and is reported.
    pub(crate) fn settled_version<'g>(
        &self,
        slot: &ItemSlot,
        guard: &'g Guard,
    ) -> Result<(Shared<'g, VersionNode>, Option<VersionRef<'g>>)> {
        retrying_plain_read(false, || {
            let head = slot.settled_head(guard);
            Ok((head, view(head, &mut self.log.reader(guard))?))
        })
    }
}

/// What a read does with the item's value.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum ValueRead {
    /// Not touched (`get_properties`).
    Skip,
    /// Read in place by the caller (`Snapshot::get_borrowed`): loaded early from the
    /// point index's hint, as for a copy, but not copied.
    Borrow,
    /// Copied into the item (`get`).
    Copy,
}

pub(crate) fn facts_of(node: &VersionNode) -> ItemFacts {
    ItemFacts {
        etag: ETag(node.etag_version()),
        version: node.etag_version(),
        last_modified: node.last_modified,
    }
}
