//! The log's state: the shared structure its threads and appenders work on, the handle, a
//! reservation, and the constants they share. The behaviour is in the other files of this
//! folder, each an `impl` block over the types here.

use std::sync::atomic::{AtomicBool, AtomicU64};
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::Duration;

use crossbeam_epoch::Guard;
use parking_lot::{Condvar, Mutex};
use portable_atomic::AtomicU128;

use super::completion::CompletionTracker;
use super::group_commit::FlushState;
use super::segment::{Segment, SegmentTable};
use super::staging::Staging;
use super::superblock::Superblock;
use crate::storage::{Storage, StorageFile};
use crate::types::Version;

/// How long a write waits before it returns (docs/spec.md §11).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Durability {
    /// Returns once the record and every earlier one are on stable storage.
    #[default]
    Sync,
    /// Returns once the OS has the bytes; a background flush follows.
    Buffered,
}

#[derive(Debug, Clone)]
pub struct LogOptions {
    pub segment_size_bytes: u64,
    pub durability: Durability,
    /// In `buffered` mode, how often the background flusher syncs.
    pub buffered_flush_interval: Duration,
    /// Open for reading only: no lock, no write of any file, no background thread; the log
    /// is what its files held at open (`recovery::open_read_only`).
    pub read_only: bool,
    /// Bytes of the device ordinary writes leave free for deletes and compaction; `None`:
    /// `SpacePolicy::default_reserve_bytes` of the store's segment size.
    pub space_reserve_bytes: Option<u64>,
    /// The most bytes the store's segments may take for ordinary writes.
    pub quota_bytes: Option<u64>,
    /// A `sync` store's group commit goes through io_uring where the system allows it.
    pub io_uring: bool,
}

impl Default for LogOptions {
    fn default() -> LogOptions {
        LogOptions {
            segment_size_bytes: 64 << 20,
            durability: Durability::Sync,
            buffered_flush_interval: Duration::from_millis(200),
            read_only: false,
            space_reserve_bytes: None,
            quota_bytes: None,
            io_uring: false,
        }
    }
}

/// The store's space policy (`StoreOptions::space_reserve_bytes` and `quota_bytes`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SpacePolicy {
    /// Bytes of the device that ordinary writes leave free, for deletes and compaction.
    pub reserve_bytes: u64,
    /// The most bytes the store's segments may take on disk for ordinary writes.
    pub quota_bytes: Option<u64>,
}

impl SpacePolicy {
    /// The default reserve: two segments, at least 8 MiB. Compaction copies a segment's live
    /// items forward before it can remove the segment, and a segment holds at most a segment
    /// of them: the half of the reserve deletes leave is that much (with room for the
    /// allocation steps of 2 MiB).
    pub fn default_reserve_bytes(segment_size_bytes: u64) -> u64 {
        segment_size_bytes.saturating_mul(2).max(8 << 20)
    }
}

pub const MINIMUM_SEGMENT_SIZE_BYTES: u64 = 4096;
pub const MAXIMUM_SEGMENT_SIZE_BYTES: u64 = 1 << 40;
/// The largest payload one record may carry (a 64 MiB value plus its key and metadata).
pub const MAXIMUM_PAYLOAD_BYTES: u64 = (64 << 20) + (1 << 20);
/// One version in this many is indexed for the change feed.
pub(crate) const VERSION_INDEX_STRIDE: u64 = 256;
/// How far past the tail, at most, the preparer faults the log in while it has nothing else
/// to do (`LogShared::fault_in_ahead_step`): clean page cache, holding zeros, that the kernel can
/// reclaim; mapped, it counts in the process's resident file pages. A burst of appends runs
/// this far before it can meet a page still to be zero-filled, which on a VM whose memory
/// the host backs at first touch took 24 ms per 2 MiB, twice what 200 B puts take to fill
/// it (docs/design.md §11 "Faulting the log in ahead").
pub(super) const FAULT_IN_LEAD_BYTES: u64 = 64 << 20;
/// How many versions may be in flight (reserved, not yet complete) at once.
pub(super) const COMPLETION_SLOTS: u64 = 4096;

pub(super) struct SuperblockState {
    pub(super) current: Superblock,
    /// The copy that holds the last synced superblock; unsynced writes go to the other.
    pub(super) synced_copy: usize,
}

/// What the preparer thread is asked to do, ahead of the appenders' need.
#[derive(Default)]
pub(crate) struct PreparerWork {
    /// Create the segment of this slot.
    pub(super) segment_slot: Option<u64>,
    /// Allocate this segment's next step of space, past this local end.
    /// With `false` for compaction's copies, which allocate no lead: only fault in.
    pub(super) allocation: Option<(Arc<Segment>, u64, bool)>,
    pub(super) stop: bool,
}

pub(crate) struct LogShared {
    pub(super) storage: Arc<dyn Storage>,
    pub(super) slot_size: u64,
    pub(super) generation: u32,
    pub(super) durability: Durability,
    /// `(next version to hand out, tail offset)`.
    pub(super) reservation: AtomicU128,
    /// The tail when the log was opened: what was appended since sizes the preparer's
    /// fault-in lead (`fault_in_ahead_step`).
    pub(super) tail_at_open: u64,
    /// Which versions are complete (`completion.rs`).
    pub(super) completion: CompletionTracker,
    /// Readers see versions ≤ this in `sync` mode: durable. (`buffered` mode reads the
    /// completed word instead: see `visible_version`.)
    pub(super) visible: AtomicU64,
    pub(super) segments: SegmentTable,
    pub(super) segment_creation: Mutex<()>,
    /// Appends whose record ends at or below this global offset find their space allocated
    /// (`space.rs`): contiguous from the tail, and only ever raised.
    pub(super) ready_end: AtomicU64,
    /// Held while an appender makes room (`LogShared::make_room`).
    pub(super) space_lock: Mutex<()>,
    pub(super) space_policy: SpacePolicy,
    /// The last ordinary allocation was refused, and none has succeeded since
    /// (`LogShared::space_is_short`).
    pub(super) storage_full: AtomicBool,
    pub(super) flush: Mutex<FlushState>,
    pub(super) flush_done: Condvar,
    /// `sync` stores: sealed records waiting for their group's write (`staging.rs`).
    pub(super) staging: Staging,
    /// `sync` stores: the ring the group-commit leader submits through, when in use
    /// (`ring.rs`); `io_uring_use` says why not otherwise.
    pub(super) ring: Option<super::ring::SyncRing>,
    pub(super) io_uring_use: super::ring::IoUringUse,
    /// Writers inside `wait_durable` now (`group_commit.rs`).
    pub(super) waiting_writers: std::sync::atomic::AtomicU32,
    /// The most writers seen waiting at once since the current sync started.
    pub(super) peak_waiting_writers: std::sync::atomic::AtomicU32,
    /// A group-commit leader is lingering or syncing: `FlushState::flushing`, readable without
    /// the flush lock (set and cleared under it).
    pub(super) sync_in_progress: AtomicBool,
    pub(super) poisoned: AtomicBool,
    /// The open's new generation is not in a synced superblock yet (a clean open leaves that
    /// to the first reservation: `LogShared::make_generation_durable`). No record of it may be
    /// appended before it is: an open after a crash would take it for stale bytes.
    pub(super) generation_pending: AtomicBool,
    /// The anchor an open from a persisted index started its scan at, without reading the
    /// records below it; `None` once they are verified (`Log::verify_below_anchor`), or when
    /// the open read them.
    pub(super) unverified_anchor: Mutex<Option<super::anchor::LogAnchor>>,
    /// Opened read-only: every append is refused (`ReadOnly`), and nothing is ever written.
    pub(super) read_only: bool,
    /// A read-only open that follows the writer's appends (`follow.rs`); `None` for a writer,
    /// or when no slot of the reader table could be claimed (a fixed view).
    pub(super) follower: Option<Follower>,
    /// The last append of a `buffered` store wrote its payload apart
    /// (`Reservation::write_payload_parts`): the preparer then faults in nothing ahead of the
    /// tail. Such appends need no page faulted
    /// in, and they came faster than the preparer zero-filled pages, so each soon met the
    /// huge page the preparer was filling, locked, and waited for it (5–25 ms). An append
    /// through the mapping clears it.
    pub(super) appending_apart: AtomicBool,
    pub(super) closed: AtomicBool,
    /// Every `VERSION_INDEX_STRIDE`-th version and its record's offset, ascending: where a
    /// reader of the change feed starts scanning.
    pub(super) version_index: Mutex<Vec<(Version, u64)>>,
    /// Readers blocked in `wait_visible_after`; visibility changes notify only when nonzero.
    pub(super) watchers: std::sync::atomic::AtomicUsize,
    pub(super) watch_lock: Mutex<()>,
    pub(super) watch_changed: Condvar,
    /// The highest slot whose segment was prepared (or asked for) ahead of need.
    pub(super) prepared_slot: AtomicU64,
    /// Work asked of the preparer thread.
    pub(super) preparer_request: Mutex<PreparerWork>,
    pub(super) preparer_wake: Condvar,
    /// Segments taken out of the log whose files wait for readers that may hold them.
    pub(super) segments_awaiting_removal: Arc<std::sync::atomic::AtomicUsize>,
    pub(super) superblock_file: Arc<dyn StorageFile>,
    pub(super) superblock: Mutex<SuperblockState>,
    pub(super) _lock: Box<dyn std::any::Any + Send + Sync>,
}

/// What a following open knows of the log beyond what its open read (`follow.rs`).
pub(crate) struct Follower {
    pub(super) state: Mutex<FollowState>,
    /// The version field of the header where the next record goes, while that segment is
    /// mapped (`FollowState::current` holds it): nonzero once a record is being sealed there.
    /// Null: the segment is not mapped yet, so only a look under the lock can tell.
    pub(super) next_header_version: std::sync::atomic::AtomicPtr<u64>,
    /// This process's claim in the reader table, which keeps the writer from removing
    /// segments not read yet.
    pub(super) claim: super::readers::ReaderSlot,
}

pub(super) struct FollowState {
    /// Where the next record starts (a global log offset).
    pub(super) position: u64,
    pub(super) expected_version: Version,
    /// Records from `position` on are at least this generation (older ones are stale bytes
    /// past a cut) and at most `known_generation`, the superblock's at the last look.
    pub(super) previous_generation: u32,
    pub(super) known_generation: u32,
    /// The segment `position` is in, kept mapped while `next_header_version` points into it.
    pub(super) current: Option<Arc<Segment>>,
    /// What was last published in the reader table.
    pub(super) published_from: u64,
    /// A record that could not be applied: every later catch-up fails with it, as the open
    /// would have.
    pub(super) failed: Option<crate::error::Error>,
    /// The superblock's first slot, read when the follower last moved into a new segment:
    /// the writer removed the segments below it, after it had made their live items durable
    /// in records that this follower has read since (`release_removed_segments`).
    pub(super) writer_first_slot: u64,
    /// The first slot below which this follower has let go of every segment.
    pub(super) released_below: u64,
}

impl Follower {
    /// A follower starting where the open's scan ended, with the reader-table slot the open
    /// claimed before it listed the segments.
    pub(super) fn start(
        claim: super::readers::ReaderSlot,
        (position, expected_version): (u64, Version),
        generation: u32,
    ) -> Follower {
        claim.publish(position);
        Follower {
            state: Mutex::new(FollowState {
                position,
                expected_version,
                previous_generation: generation,
                known_generation: generation,
                current: None,
                published_from: position,
                failed: None,
                writer_first_slot: 0,
                released_below: 0,
            }),
            next_header_version: std::sync::atomic::AtomicPtr::new(std::ptr::null_mut()),
            claim,
        }
    }
}

/// The log of one store.
pub struct Log {
    pub(super) shared: Arc<LogShared>,
    pub(super) flusher: Mutex<Option<JoinHandle<()>>>,
    pub(super) preparer: Mutex<Option<JoinHandle<()>>>,
}

/// Space and a version reserved for one record. Write the payload, then `commit` it; dropping
/// it uncommitted writes an `Abort` record in its place so later records are not held up.
/// It stays on the thread that reserved it (not `Send`): it may hold an epoch guard.
pub struct Reservation<'log> {
    pub(super) log: &'log LogShared,
    pub(super) segment: SegmentHold,
    pub(super) version: Version,
    pub(super) start: u64,
    pub(super) new_tail: u64,
    pub(super) payload_length: usize,
    /// The checksum of a payload `write_payload_parts` wrote to the file: sealing then writes
    /// the header alone, from it.
    pub(super) payload_written: Option<super::record::PayloadChecksum>,
    /// The whole record, `Data` header included, for the group-commit leader to write
    /// (a `sync` store; `staging.rs`). Staged when sealed as `Data`, dropped on abort.
    pub(super) staged: Option<Vec<u8>>,
    pub(super) finished: bool,
}

/// How often an appender checks that the completion ring has room for the versions in flight:
/// at every this-many-th version, for that one and the ones after it. Reading the completed
/// word at every append took a cache line the other appenders keep writing.
pub(super) const IN_FLIGHT_CHECK_STRIDE: u64 = 64;
const _: () = assert!(IN_FLIGHT_CHECK_STRIDE < COMPLETION_SLOTS);

/// A reservation's segment: borrowed from the segment table under an epoch guard (the table
/// drops a segment it lets go of only once no guard can see it), or owned when this appender
/// created it. Borrowing spares every append an increment and a decrement of the segment's
/// shared reference count, a cache line that appenders on other CPUs were reading.
pub(super) enum SegmentHold {
    Borrowed {
        segment: std::ptr::NonNull<Segment>,
        _guard: Guard,
    },
    Owned(Arc<Segment>),
}

impl std::ops::Deref for SegmentHold {
    type Target = Segment;

    fn deref(&self) -> &Segment {
        match self {
            // SAFETY: the pointer came from the segment table under `_guard`, which this value
            // holds for as long as it lives.
            SegmentHold::Borrowed { segment, .. } => unsafe { segment.as_ref() },
            SegmentHold::Owned(segment) => segment,
        }
    }
}

thread_local! {
    /// The payload a `sync` store's appender encodes, then writes with one pwrite, when it is
    /// too large to stage.
    pub(super) static RECORD_BYTES: std::cell::RefCell<Vec<u8>> = const { std::cell::RefCell::new(Vec::new()) };
}

/// Capacity `RECORD_BYTES` keeps between records (a large record's buffer is given back).
pub(super) const RECORD_BYTES_KEPT: usize = 256 << 10;
