//! Segment files and the table that maps a global log offset to its segment.
//!
//! The log is one address space of "slots" of `segment_size_bytes` each. A segment file covers
//! one slot, or several when it holds one record larger than a slot. The file for the segment
//! that starts at slot `s` is named `segment-<s as 16 hex digits>.log`.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

use crossbeam_epoch::{self as epoch, Atomic, Guard, Owned};

use crate::storage::{Mapping, StorageFile};

/// The most device space a segment allocates at a time.
const MAXIMUM_ALLOCATION_STEP_BYTES: u64 = 1 << 20;

/// How many steps of allocated space the preparer keeps ahead of the tail: the disk a store
/// takes beyond its data is at most `ALLOCATION_LEAD_STEPS + 1` steps, rounded up to
/// `ALLOCATION_ALIGNMENT_BYTES` (7 MiB), past its tail (plus whole segments compaction has
/// not removed yet), instead of a whole 64 MiB segment. Why several: an fallocate waits for ext4's extent lock, which write-back holds
/// while it converts the extents an fdatasync wrote, 10–30 ms behind a 200 ms flush of a
/// buffered store. With half a step of lead (0.5 MiB, about 3 ms of puts) the appender
/// reached the allocated end and waited for the preparer's allocation: 6 puts of over 10 ms
/// per 500,000 (Linux 6.18, ext4; `perf sched` showed the wait in `Segment::allocate_to`).
const ALLOCATION_LEAD_STEPS: u64 = 4;

/// How many steps past the tail the preparer faults in for writing
/// (`Segment::prefault_ahead`).
const WRITE_PREFAULT_LEAD_STEPS: u64 = 2;

/// The allocated end is kept a multiple of this (or the segment's end): the largest folio the
/// page cache makes on x86-64 (a huge page). A folio that straddled the allocated end would
/// make a write fault into its allocated part reserve space for all of it, and that could meet
/// a full disk as SIGBUS.
const ALLOCATION_ALIGNMENT_BYTES: u64 = 2 << 20;

/// Whether an allocation failed for want of space (a full disk or a disk quota).
pub fn is_out_of_space(error: &std::io::Error) -> bool {
    matches!(
        error.raw_os_error(),
        Some(libc::ENOSPC) | Some(libc::EDQUOT)
    )
}

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
    /// Bytes from the segment's start faulted in for writing, and for reading
    /// (`prefault_ahead`). Each only grows and is a whole number of pages.
    prefaulted_for_writing_bytes: AtomicU64,
    prefaulted_for_reading_bytes: AtomicU64,
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
            prefaulted_for_writing_bytes: AtomicU64::new(0),
            prefaulted_for_reading_bytes: AtomicU64::new(0),
            allocating: parking_lot::Mutex::new(()),
            ahead_asked_at: AtomicU64::new(u64::MAX),
        }
    }

    /// Makes sure device space is allocated for the segment's first `end` bytes before any of
    /// them is written through the mapping (a write to unallocated space could meet a full
    /// disk as SIGBUS). The common case is one atomic load. Returns `true` to one caller per
    /// allocated end once appends come within `ALLOCATION_LEAD_STEPS` of it: that
    /// caller asks the preparer thread for the next step (`prepare_ahead`), so appenders
    /// seldom wait for it. An appender past the allocated end allocates itself (the log's
    /// space check, `LogShared::make_room`, has normally allocated it already).
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
        self.allocate_to(end, &|_| true)?;
        Ok(false)
    }

    /// Whether `allocated` bytes reach the lead past `end` (or the whole segment): no
    /// allocation is due yet.
    fn allocated_far_enough(&self, end: u64, allocated: u64) -> bool {
        end + ALLOCATION_LEAD_STEPS * self.allocation_step_bytes <= allocated
            || allocated == self.length()
    }

    /// The preparer's work when appends reach `end`: faults in the pages ahead of it
    /// (`prefault_ahead`), allocates the lead if `permit` allows, then faults in what the
    /// allocation added. The faults come first and outside the allocation lock: the
    /// fallocate can wait for write-back, and the appender needs the pages sooner than the
    /// space. A failure to allocate is left to the appender that needs the space, which meets
    /// it again.
    pub fn prepare_ahead(&self, end: u64, permit: &dyn Fn(u64) -> bool) {
        self.prefault_ahead(end);
        if self.allocate_to(end, permit).is_ok() {
            self.prefault_ahead(end);
        }
    }

    /// Allocates through `end` and the lead beyond it, unless that much is allocated already.
    /// `permit(bytes)` says whether the store's space policy lets the segment take that many
    /// more bytes (`LogShared::permits`). When the lead is refused, by it or by a full disk,
    /// only what `end` needs is tried; a refusal of that is an `ENOSPC` error.
    pub fn allocate_to(&self, end: u64, permit: &dyn Fn(u64) -> bool) -> std::io::Result<()> {
        self.allocate(end, permit, true)
    }

    /// `allocate_to` without the lead: through `end`, rounded up to the allocation alignment.
    /// Compaction's copies allocate so, so that a compacted store does not keep a lead of
    /// free space past its tail until something else is written.
    pub fn allocate_without_lead_to(
        &self,
        end: u64,
        permit: &dyn Fn(u64) -> bool,
    ) -> std::io::Result<()> {
        self.allocate(end, permit, false)
    }

    fn allocate(&self, end: u64, permit: &dyn Fn(u64) -> bool, lead: bool) -> std::io::Result<()> {
        let step = self.allocation_step_bytes;
        let _allocating = self.allocating.lock();
        let allocated = self.allocated_bytes.load(Ordering::Acquire);
        let enough = if lead {
            self.allocated_far_enough(end, allocated)
        } else {
            end <= allocated
        };
        if enough {
            return Ok(());
        }
        let with_lead = (end + (ALLOCATION_LEAD_STEPS + 1) * step)
            .next_multiple_of(ALLOCATION_ALIGNMENT_BYTES)
            .min(self.length());
        let needed = end
            .next_multiple_of(ALLOCATION_ALIGNMENT_BYTES)
            .min(self.length());
        let mut refusal = None;
        let targets = if lead {
            [with_lead, needed]
        } else {
            [needed, needed]
        };
        for target in targets {
            if target <= allocated {
                return Ok(());
            }
            if !permit(target - allocated) {
                continue;
            }
            match self.file.allocate(allocated, target - allocated) {
                Ok(()) => {
                    self.allocated_bytes.store(target, Ordering::Release);
                    return Ok(());
                }
                Err(error) if is_out_of_space(&error) => refusal = Some(error),
                Err(error) => return Err(error),
            }
        }
        Err(refusal.unwrap_or_else(|| std::io::Error::from_raw_os_error(libc::ENOSPC)))
    }

    /// Bytes from the segment's start that have device space allocated.
    pub fn allocated_bytes(&self) -> u64 {
        self.allocated_bytes.load(Ordering::Acquire)
    }

    /// Faults in the allocated pages past `end` that are not yet: all of them for reading
    /// (`Mapping::prefault_for_reading`: read-ahead's zero-filling happens here, not in the
    /// appender's faults), and those within `WRITE_PREFAULT_LEAD_STEPS` for writing
    /// (`Mapping::prefault_for_writing`: the appends into them take no fault). Not further
    /// for writing: those pages are dirtied with their zeros, written by every flush until the
    /// tail reaches them, and write-protected by each such write-back, so the append would
    /// fault anyway.
    pub fn prefault_ahead(&self, end: u64) {
        // A segment of several slots holds one record, written once: faulting it in first
        // would only write its zeros too.
        if self.slot_count != 1 {
            return;
        }
        let allocated_end = self.allocated_bytes.load(Ordering::Acquire) / 4096 * 4096;
        let write_end = (end + WRITE_PREFAULT_LEAD_STEPS * self.allocation_step_bytes)
            .min(allocated_end)
            / 4096
            * 4096;
        self.fault_in_up_to(&self.prefaulted_for_writing_bytes, 0, write_end, true);
        self.fault_in_up_to(
            &self.prefaulted_for_reading_bytes,
            write_end,
            allocated_end,
            false,
        );
    }

    /// One step of the preparer's idle work on this segment, for appends that will come at
    /// local offset `tail` (0 for a segment made ahead of the tail), so that the preparer can
    /// take requests between steps: first the write window past `tail`, within the allocated
    /// space (as `prefault_ahead`); then the pages up to `limit` for reading, past the
    /// allocated end too. A read fault allocates nothing on disk, and the appends' space is
    /// allocated before they write it. Why that far: zero-filling a page cache folio is the
    /// preparer's slow part (24 ms per 2 MiB on this VM's fresh memory, against 12 ms for
    /// the appends to fill one), so what it does in idle time an append burst does not wait
    /// for. Returns whether it faulted anything in.
    pub fn fault_in_next_step(&self, tail: u64, limit: u64) -> bool {
        if self.slot_count != 1 {
            return false;
        }
        let step = self.allocation_step_bytes;
        let tail_page = tail.min(self.length()) / 4096 * 4096;
        let allocated_end = self.allocated_bytes.load(Ordering::Acquire) / 4096 * 4096;
        let write_end = (tail_page + WRITE_PREFAULT_LEAD_STEPS * step).min(allocated_end);
        let written = self
            .prefaulted_for_writing_bytes
            .load(Ordering::Acquire)
            .max(tail_page);
        if written < write_end {
            let to = (written + step).min(write_end);
            // From the tail's page: the pages behind it hold records already.
            self.fault_in_up_to(&self.prefaulted_for_writing_bytes, tail_page, to, true);
            return true;
        }
        let limit = limit.min(self.length()) / 4096 * 4096;
        let read = self
            .prefaulted_for_reading_bytes
            .load(Ordering::Acquire)
            .max(write_end);
        if read < limit {
            let to = (read + step).min(limit);
            self.fault_in_up_to(&self.prefaulted_for_reading_bytes, write_end, to, false);
            return true;
        }
        false
    }

    /// Advances `watermark` to `to` and faults in, for writing or for reading, the pages it
    /// passed over, from no lower than `floor`.
    fn fault_in_up_to(&self, watermark: &AtomicU64, floor: u64, to: u64, for_writing: bool) {
        let from = watermark.fetch_max(to, Ordering::AcqRel).max(floor);
        if from < to {
            let (offset, length) = (from as usize, (to - from) as usize);
            if for_writing {
                self.mapping.prefault_for_writing(offset, length);
            } else {
                self.mapping.prefault_for_reading(offset, length);
            }
        }
    }

    /// Records that the first `bytes` of the segment have space allocated (known at open).
    pub fn assume_allocated(&self, bytes: u64) {
        assert!(bytes <= self.length());
        self.allocated_bytes.fetch_max(bytes, Ordering::AcqRel);
        // Written already: faulting them in for writing would only dirty them again.
        self.prefaulted_for_writing_bytes
            .fetch_max(bytes, Ordering::AcqRel);
        self.prefaulted_for_reading_bytes
            .fetch_max(bytes, Ordering::AcqRel);
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
        // Into the global queue now: the old table holds every segment it listed, and left in
        // this thread's bag (the preparer's, idle for long) it would keep a segment that
        // compaction removed mapped and open — its disk space not given back.
        guard.flush();
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
        guard.flush();
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::storage::{FileStorage, Storage};

    const SEGMENT_BYTES: u64 = 64 << 20;

    /// A 64 MiB segment file (allocation steps of 1 MiB), sparse, as `create_segment` makes
    /// it before its first allocation.
    fn segment_file(directory: &tenure_testkit::TempDir, name: &str) -> Segment {
        let storage = FileStorage::new(directory.path());
        storage.create_directory().unwrap();
        let file = storage.open(name, true).unwrap();
        file.grow_sparse(SEGMENT_BYTES).unwrap();
        let mapping = file.map(SEGMENT_BYTES as usize).unwrap();
        Segment::new(0, 1, name.to_owned(), file, mapping)
    }

    fn allocated(segment: &Segment) -> u64 {
        segment.allocated_bytes.load(Ordering::Acquire)
    }

    /// Appends that ask the preparer whenever told to never reach the allocated end, so never
    /// allocate themselves; the allocated end stays whole huge pages and at most the lead and
    /// an alignment past the appends.
    #[test]
    fn the_preparer_keeps_the_lead_allocated_in_whole_huge_pages() {
        let directory = tenure_testkit::TempDir::new("segment-lead");
        let segment = segment_file(&directory, "lead");
        let step = segment.allocation_step_bytes;
        assert_eq!(step, 1 << 20);
        segment.allocate_to(1, &|_| true).unwrap();
        assert_eq!(allocated(&segment), 6 << 20);
        let mut asks = 0;
        // Strides that are no divisor of a step, so the asks fall anywhere in one.
        for end in (0..SEGMENT_BYTES).step_by(333_333) {
            let before = allocated(&segment);
            assert!(
                end <= before,
                "the appends at {end} passed the allocated {before}"
            );
            if segment.ensure_allocated(end).unwrap() {
                asks += 1;
                segment.prepare_ahead(end, &|_| true);
            }
            let now = allocated(&segment);
            assert!(
                now % ALLOCATION_ALIGNMENT_BYTES == 0 || now == SEGMENT_BYTES,
                "allocated {now}"
            );
            assert!(
                now >= (end + ALLOCATION_LEAD_STEPS * step).min(SEGMENT_BYTES),
                "at {end}: allocated {now}"
            );
            assert!(
                now <= end + (ALLOCATION_LEAD_STEPS + 1) * step + ALLOCATION_ALIGNMENT_BYTES,
                "at {end}: allocated {now}"
            );
        }
        // One ask per allocation of two steps (the alignment), not one per append.
        assert!((25..=40).contains(&asks), "{asks} asks");
        assert_eq!(allocated(&segment), SEGMENT_BYTES);

        // An appender past the allocated end allocates itself, to the same alignment.
        let segment = segment_file(&directory, "self");
        assert!(!segment.ensure_allocated((3 << 20) + 5).unwrap());
        assert_eq!(allocated(&segment), 10 << 20);
    }

    /// The preparer's idle work is done a step per call: the write window past the tail
    /// (within the allocated space), then reading up to the limit, past the allocated end,
    /// which it leaves as it was; then there is nothing left.
    #[test]
    fn idle_faulting_in_goes_a_step_at_a_time_past_the_allocated_end() {
        let directory = tenure_testkit::TempDir::new("segment-steps");
        let segment = segment_file(&directory, "steps");
        segment.allocate_to(1, &|_| true).unwrap();
        let allocated_end = allocated(&segment);
        let step = segment.allocation_step_bytes;
        let limit = 20 << 20;
        assert!(limit > allocated_end);
        let mut calls = 0;
        while segment.fault_in_next_step(0, limit) {
            calls += 1;
            assert!(calls <= limit / step, "{calls} steps");
        }
        assert_eq!(calls, limit / step);
        let load = |bytes: &AtomicU64| bytes.load(Ordering::Acquire);
        assert_eq!(
            load(&segment.prefaulted_for_writing_bytes),
            WRITE_PREFAULT_LEAD_STEPS * step
        );
        assert_eq!(load(&segment.prefaulted_for_reading_bytes), limit);
        assert_eq!(allocated(&segment), allocated_end, "nothing more allocated");
        assert_eq!(resident_bytes(&segment, 0, limit), limit);
        // The appends' own requests find nothing left to fault in below the lead.
        segment.prefault_ahead(0);
        assert_eq!(
            load(&segment.prefaulted_for_writing_bytes),
            WRITE_PREFAULT_LEAD_STEPS * step
        );
        // Appends further on: the write window follows them, from the tail's page.
        let tail = (3 << 20) + 100;
        segment.allocate_to(tail, &|_| true).unwrap();
        assert!(segment.fault_in_next_step(tail, limit));
        assert_eq!(
            load(&segment.prefaulted_for_writing_bytes),
            (3 << 20) + step
        );
        // SAFETY: nothing writes the segment.
        assert!(unsafe { segment.bytes_from(0) }
            .iter()
            .all(|byte| *byte == 0));
    }

    /// How many of the bytes `from..to` of the segment's mapping are resident (`mincore`).
    fn resident_bytes(segment: &Segment, from: u64, to: u64) -> u64 {
        let pages = ((to - from) / 4096) as usize;
        let mut resident = vec![0u8; pages];
        // SAFETY: a page-aligned range inside the segment's mapping, and a vector with a
        // byte per page.
        let result = unsafe {
            libc::mincore(
                segment.mapping.pointer().add(from as usize).cast(),
                (to - from) as usize,
                resident.as_mut_ptr(),
            )
        };
        assert_eq!(result, 0);
        resident.iter().filter(|page| **page & 1 == 1).count() as u64 * 4096
    }

    /// Faulting pages in, for writing or reading, ahead of written bytes or over them after a
    /// reopen (`assume_allocated`), changes no byte: in the mapping, or on disk.
    #[test]
    fn prefaulting_changes_no_byte() {
        let directory = tenure_testkit::TempDir::new("segment-prefault");
        let pattern = |index: usize| (index % 251) as u8 + 1;
        let written = (3 << 20) + 1234;
        let bytes: Vec<u8> = (0..written).map(pattern).collect();
        {
            let segment = segment_file(&directory, "prefault");
            segment.allocate_to(written as u64, &|_| true).unwrap();
            segment.prefault_ahead(0);
            // SAFETY: nothing else writes the segment.
            unsafe { segment.write(0, &bytes) };
            segment.prefault_ahead(written as u64);
            segment.prepare_ahead((written as u64) + (4 << 20), &|_| true);
            // SAFETY: nothing writes the segment now.
            let mapped = unsafe { segment.bytes_from(0) };
            assert!(mapped[..written] == bytes[..]);
            assert!(mapped[written..].iter().all(|byte| *byte == 0));
            segment.file.sync_data().unwrap();
        }
        // Reopened: the written bytes are known allocated, and faulting ahead of them leaves
        // them as they are.
        let storage = FileStorage::new(directory.path());
        let file = storage.open("prefault", false).unwrap();
        let mapping = file.map(SEGMENT_BYTES as usize).unwrap();
        let segment = Segment::new(0, 1, "prefault".to_owned(), file, mapping);
        segment.assume_allocated(written as u64 / 4096 * 4096);
        segment.prepare_ahead(written as u64 / 4096 * 4096, &|_| true);
        // SAFETY: nothing writes the segment.
        let mapped = unsafe { segment.bytes_from(0) };
        assert!(mapped[..written] == bytes[..]);
        assert!(mapped[written..].iter().all(|byte| *byte == 0));
        segment.file.sync_data().unwrap();
        drop(segment);
        let on_disk = std::fs::read(directory.path().join("prefault")).unwrap();
        assert_eq!(on_disk.len() as u64, SEGMENT_BYTES);
        assert!(on_disk[..written] == bytes[..]);
        assert!(on_disk[written..].iter().all(|byte| *byte == 0));
    }
}
