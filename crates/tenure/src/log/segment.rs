//! Segment files and the table that maps a global log offset to its segment.
//!
//! The log is one address space of "slots" of `segment_size_bytes` each. A segment file covers
//! one slot, or several when it holds one record larger than a slot. The file for the segment
//! that starts at slot `s` is named `segment-<s as 16 hex digits>.log`.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

use crossbeam_epoch::{self as epoch, Atomic, Guard, Owned};

use crate::storage::{Mapping, StorageFile};

/// The most device space a segment allocates at a time: the disk a store takes beyond its
/// data is at most about this much past its tail (plus whole segments compaction has not
/// removed yet), instead of a whole 64 MiB segment.
const MAXIMUM_ALLOCATION_STEP_BYTES: u64 = 1 << 20;

pub struct Segment {
    pub first_slot: u64,
    pub slot_count: u64,
    pub name: String,
    pub file: Arc<dyn StorageFile>,
    pub mapping: Mapping,
    /// Bytes from the segment's start that have device space allocated (`ensure_allocated`).
    /// Segments are files of their full length, sparse past this.
    allocated_bytes: AtomicU64,
    allocating: parking_lot::Mutex<()>,
    /// Space is allocated in steps of about a 64th of a slot: whole pages, 4 KiB to 1 MiB.
    allocation_step_bytes: u64,
    /// The allocated end at which the preparer was last asked for the next step.
    ahead_asked_at: AtomicU64,
}

impl Segment {
    /// A segment over `mapping`, with nothing known to be allocated yet (`allocate_to` and
    /// `assume_allocated` say what is).
    pub fn new(
        first_slot: u64,
        slot_count: u64,
        name: String,
        file: Arc<dyn StorageFile>,
        mapping: Mapping,
    ) -> Segment {
        let slot_bytes = mapping.length() as u64 / slot_count;
        let step = (slot_bytes / 64).clamp(4096, MAXIMUM_ALLOCATION_STEP_BYTES);
        Segment {
            allocation_step_bytes: step / 4096 * 4096,
            first_slot,
            slot_count,
            name,
            file,
            mapping,
            allocated_bytes: AtomicU64::new(0),
            allocating: parking_lot::Mutex::new(()),
            ahead_asked_at: AtomicU64::new(u64::MAX),
        }
    }

    /// Makes sure device space is allocated for the segment's first `end` bytes before any of
    /// them is written through the mapping (a write to unallocated space could meet a full
    /// disk as SIGBUS). The common case is one atomic load. Returns `true` to one caller per
    /// step once appends come within half a step of the allocated end: that caller asks the
    /// preparer thread for the next step (`allocate_ahead`), so appenders seldom wait for it.
    /// An appender past the allocated end allocates itself.
    pub fn ensure_allocated(&self, end: u64) -> std::io::Result<bool> {
        let allocated = self.allocated_bytes.load(Ordering::Acquire);
        if self.allocated_far_enough(end, allocated) {
            return Ok(false);
        }
        if end <= allocated {
            // The relaxed load keeps the window's other appenders to one shared read.
            let elected = self.ahead_asked_at.load(Ordering::Relaxed) != allocated
                && self.ahead_asked_at.swap(allocated, Ordering::AcqRel) != allocated;
            return Ok(elected);
        }
        self.allocate_to(end)?;
        Ok(false)
    }

    /// Whether `allocated` bytes reach half a step past `end` (or the whole segment): no
    /// allocation is due yet.
    fn allocated_far_enough(&self, end: u64, allocated: u64) -> bool {
        end + self.allocation_step_bytes / 2 <= allocated || allocated == self.length()
    }

    /// The preparer's allocation of the step after `end`. A failure is left to the appender
    /// that needs the space, which meets it again.
    pub fn allocate_ahead(&self, end: u64) {
        let _ = self.allocate_to(end);
    }

    /// Allocates through `end` and a step beyond it, unless that much is allocated already.
    pub fn allocate_to(&self, end: u64) -> std::io::Result<()> {
        let step = self.allocation_step_bytes;
        let _allocating = self.allocating.lock();
        let allocated = self.allocated_bytes.load(Ordering::Acquire);
        if self.allocated_far_enough(end, allocated) {
            return Ok(());
        }
        let target = (end + step).next_multiple_of(step).min(self.length());
        self.file.allocate(allocated, target - allocated)?;
        // A segment of several slots holds one record, written once: faulting it in first
        // would only write its zeros too.
        if self.slot_count == 1 {
            self.mapping
                .prefault_for_writing(allocated as usize, (target - allocated) as usize);
        }
        self.allocated_bytes.store(target, Ordering::Release);
        Ok(())
    }

    /// Records that the first `bytes` of the segment have space allocated (known at open).
    pub fn assume_allocated(&self, bytes: u64) {
        assert!(bytes <= self.length());
        self.allocated_bytes.fetch_max(bytes, Ordering::AcqRel);
    }

    /// Every write through the mapping lies below the allocated end (and so inside the file).
    pub fn assert_allocated(&self, end: u64) {
        let allocated = self.allocated_bytes.load(Ordering::Acquire);
        assert!(
            end <= allocated,
            "a write to {} up to {end} passes the allocated {allocated} bytes",
            self.name
        );
    }

    pub fn file_name(first_slot: u64) -> String {
        format!("segment-{first_slot:016x}.log")
    }

    pub fn parse_file_name(name: &str) -> Option<u64> {
        let hex = name.strip_prefix("segment-")?.strip_suffix(".log")?;
        if hex.len() != 16 {
            return None;
        }
        u64::from_str_radix(hex, 16).ok()
    }

    pub fn length(&self) -> u64 {
        self.mapping.length() as u64
    }

    /// The segment's bytes from `local_offset` to its end.
    ///
    /// # Safety
    /// The caller reads only bytes that no appender is writing: completed records, or (at
    /// open, before any appender exists) anything.
    pub unsafe fn bytes_from(&self, local_offset: u64) -> &[u8] {
        let length = self.length();
        assert!(local_offset <= length);
        // SAFETY: in bounds of the live mapping (asserted); exclusivity is the caller's promise.
        unsafe {
            std::slice::from_raw_parts(
                self.mapping.pointer().add(local_offset as usize),
                (length - local_offset) as usize,
            )
        }
    }

    /// Copies `bytes` to `local_offset`.
    ///
    /// # Safety
    /// The range must belong to the caller's reservation: no one else reads or writes it
    /// until the caller marks the record complete.
    pub unsafe fn write(&self, local_offset: u64, bytes: &[u8]) {
        self.assert_allocated(local_offset + bytes.len() as u64);
        // SAFETY: in bounds (asserted) and exclusively the caller's (the caller's promise).
        unsafe {
            std::ptr::copy_nonoverlapping(
                bytes.as_ptr(),
                self.mapping.pointer().add(local_offset as usize),
                bytes.len(),
            )
        }
    }
}

/// Copy-on-write table slot → segment, read under an epoch guard without locks.
pub struct SegmentTable {
    current: Atomic<Vec<Option<Arc<Segment>>>>,
}

impl SegmentTable {
    pub fn new() -> SegmentTable {
        SegmentTable {
            current: Atomic::new(Vec::new()),
        }
    }

    pub fn get<'g>(&self, slot: u64, guard: &'g Guard) -> Option<&'g Arc<Segment>> {
        // SAFETY: tables are replaced only through `insert`, which defers the old one's
        // destruction until every guard that could see it is gone.
        let table = unsafe {
            self.current
                .load(std::sync::atomic::Ordering::Acquire, guard)
                .deref()
        };
        table.get(usize::try_from(slot).ok()?)?.as_ref()
    }

    pub fn get_owned(&self, slot: u64) -> Option<Arc<Segment>> {
        let guard = epoch::pin();
        self.get(slot, &guard).cloned()
    }

    /// Adds a segment. Callers serialise inserts (the log's segment-creation lock).
    pub fn insert(&self, segment: Arc<Segment>) {
        let guard = epoch::pin();
        let ordering = std::sync::atomic::Ordering::Acquire;
        // SAFETY: as in `get`.
        let old = unsafe { self.current.load(ordering, &guard).deref() };
        let mut table = old.clone();
        let end = (segment.first_slot + segment.slot_count) as usize;
        if table.len() < end {
            table.resize(end, None);
        }
        for slot in segment.first_slot..segment.first_slot + segment.slot_count {
            table[slot as usize] = Some(Arc::clone(&segment));
        }
        let previous = self.current.swap(
            Owned::new(table),
            std::sync::atomic::Ordering::AcqRel,
            &guard,
        );
        // SAFETY: `previous` is no longer reachable from the table; readers still holding it
        // are protected by their guards.
        unsafe { guard.defer_destroy(previous) };
    }

    /// Takes the segment that starts at `first_slot` out of the table. Callers serialise
    /// changes (compaction runs one at a time) and defer dropping the returned segment until
    /// no guard can still see it.
    pub fn remove(&self, first_slot: u64) -> Option<Arc<Segment>> {
        let guard = epoch::pin();
        let ordering = std::sync::atomic::Ordering::Acquire;
        // SAFETY: as in `get`.
        let old = unsafe { self.current.load(ordering, &guard).deref() };
        let segment = old.get(first_slot as usize)?.clone()?;
        let mut table = old.clone();
        for slot in segment.first_slot..segment.first_slot + segment.slot_count {
            table[slot as usize] = None;
        }
        let previous = self.current.swap(
            Owned::new(table),
            std::sync::atomic::Ordering::AcqRel,
            &guard,
        );
        // SAFETY: as in `insert`.
        unsafe { guard.defer_destroy(previous) };
        Some(segment)
    }

    /// Every distinct segment, in slot order.
    pub fn all(&self) -> Vec<Arc<Segment>> {
        let guard = epoch::pin();
        // SAFETY: as in `get`.
        let table = unsafe {
            self.current
                .load(std::sync::atomic::Ordering::Acquire, &guard)
                .deref()
        };
        let mut segments: Vec<Arc<Segment>> = Vec::new();
        for segment in table.iter().flatten() {
            if segments
                .last()
                .is_none_or(|last| !Arc::ptr_eq(last, segment))
            {
                segments.push(Arc::clone(segment));
            }
        }
        segments
    }
}

impl Drop for SegmentTable {
    fn drop(&mut self) {
        // SAFETY: we have exclusive access; no guard can still reach the table.
        unsafe {
            let guard = epoch::unprotected();
            let table = self
                .current
                .load(std::sync::atomic::Ordering::Relaxed, guard);
            if !table.is_null() {
                drop(table.into_owned());
            }
        }
    }
}
