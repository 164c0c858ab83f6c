//! Segment files and the table that maps a global log offset to its segment.
//!
//! The log is one address space of "slots" of `segment_size_bytes` each. A segment file covers
//! one slot, or several when it holds one record larger than a slot. The file for the segment
//! that starts at slot `s` is named `segment-<s as 16 hex digits>.log`.

use std::sync::Arc;

use crossbeam_epoch::{self as epoch, Atomic, Guard, Owned};

use crate::storage::{Mapping, StorageFile};

pub struct Segment {
    pub first_slot: u64,
    pub slot_count: u64,
    pub name: String,
    pub file: Arc<dyn StorageFile>,
    pub mapping: Mapping,
}

impl Segment {
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
        assert!(local_offset + bytes.len() as u64 <= self.length());
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
