//! A reservation: one record's version and space, written, then committed or given up.

use std::sync::atomic::Ordering;

use super::core::*;
use super::record::{self, RecordHeader, RecordKind, HEADER_BYTES};
use super::staging::MAXIMUM_STAGED_RECORD_BYTES;
use crate::error::{Error, Result};
use crate::types::Version;

/// A `buffered` payload this large or larger is written apart (`writes_payload_apart`).
pub(super) const APART_PAYLOAD_BYTES: usize = 64 << 10;

impl Reservation<'_> {
    pub fn version(&self) -> Version {
        self.version
    }

    /// Global log offset of the record; `Log::payload` finds it again.
    pub fn location(&self) -> u64 {
        self.start
    }

    /// Writes the record's payload (exactly the reserved length). A `buffered` store copies
    /// it into the mapped segment, and `commit` writes the header there. A `sync` store builds
    /// header and payload in memory: `commit` stages them for the group-commit leader, which
    /// writes the group's records with one `pwrite` before its sync (`staging.rs`). Not
    /// through the mapping: each append's first store to a page that the last sync cleaned
    /// takes a write fault, and in the log bench a 200 B mapped write plus fdatasync took
    /// 49.7 µs where a pwrite plus fdatasync took 44.7 µs. Readers read the record through
    /// the mapping once it is durable (one page cache). A payload that goes to the file apart
    /// (`writes_payload_apart`) is written now, with `write_payload_parts`.
    pub fn write_payload(&mut self, payload: &[u8]) -> Result<()> {
        assert_eq!(
            payload.len(),
            self.payload_length,
            "the payload fills the reservation"
        );
        if self.writes_payload_apart() {
            return self.write_payload_parts(&[payload]);
        }
        self.write_payload_with(|destination| destination.copy_from_slice(payload))
    }

    /// Like `write_payload`, with `fill` writing the payload (exactly the reserved length) in
    /// place: into the mapped segment in a `buffered` store, so a write encodes its record
    /// there instead of into a buffer it then copies (`write::write_item`). A `sync` store's
    /// payload too large to stage is encoded into a buffer of the thread's, then written
    /// apart.
    pub fn write_payload_with<R>(&mut self, fill: impl FnOnce(&mut [u8]) -> R) -> Result<R> {
        if self.log.durability == Durability::Buffered {
            if self.log.appending_apart.load(Ordering::Relaxed) {
                self.log.appending_apart.store(false, Ordering::Relaxed);
            }
            let filled = fill(self.payload_mut());
            self.prefetch_next_record();
            return Ok(filled);
        }
        if self.stages() {
            let record_size = record::record_size(self.payload_length as u64) as usize;
            let length = HEADER_BYTES + self.payload_length;
            // Zeroed: the padding to the record's size is zeros.
            let mut bytes = vec![0u8; record_size];
            let filled = fill(&mut bytes[HEADER_BYTES..length]);
            record::encode_header_in_place(
                &mut bytes[..length],
                self.header_fields(RecordKind::Data),
            );
            self.staged = Some(bytes);
            return Ok(filled);
        }
        RECORD_BYTES.with(|payload| {
            let mut payload = payload.borrow_mut();
            payload.clear();
            payload.resize(self.payload_length, 0);
            let filled = fill(&mut payload);
            let written = self.write_payload_parts(&[&payload]);
            if payload.capacity() > RECORD_BYTES_KEPT {
                *payload = Vec::new();
            }
            written.map(|()| filled)
        })
    }

    /// Whether this record's payload goes to the file with a write of its own
    /// (`write_payload_parts`) rather than through the mapping (`buffered`) or the staging
    /// (`sync`): a `sync` record too large to stage, or with a segment of its own, and a
    /// `buffered` payload of `APART_PAYLOAD_BYTES` or more. Why the latter: a store through
    /// the mapping into fresh pages first faults each page in and zero-fills it, a pass over
    /// memory that a `pwritev` copying the value into the page cache does not make. The
    /// preparer does that zero-filling ahead of the tail for small records; large ones
    /// overtook it, and 1 MiB puts then waited for 5–25 ms every few puts.
    pub fn writes_payload_apart(&self) -> bool {
        match self.log.durability {
            Durability::Buffered => self.payload_length >= APART_PAYLOAD_BYTES,
            Durability::Sync => !self.stages(),
        }
    }

    /// Whether a `sync` record is staged for the group-commit leader: small, and in the
    /// current segment.
    fn stages(&self) -> bool {
        let record_size = record::record_size(self.payload_length as u64);
        record_size <= MAXIMUM_STAGED_RECORD_BYTES as u64
            && self.new_tail - self.start == record_size
    }

    /// Writes the payload made of `parts` (in order, exactly the reserved length) to the
    /// segment's file with one vectored write, straight from the caller's memory; the header
    /// stays unwritten (zeros: not a record yet to any scan) until `seal` writes it, `Data` or
    /// `Abort`, through the mapping, its checksum taken here. Readers read the payload through
    /// the mapping (one page cache).
    pub fn write_payload_parts(&mut self, parts: &[&[u8]]) -> Result<()> {
        let length: usize = parts.iter().map(|part| part.len()).sum();
        assert_eq!(
            length, self.payload_length,
            "the parts fill the reservation"
        );
        assert!(
            self.payload_written.is_none() && self.staged.is_none(),
            "a reservation's payload is written once"
        );
        let local = self.start - self.segment.first_slot * self.log.slot_size;
        self.segment
            .assert_allocated(local + (HEADER_BYTES + length) as u64);
        let checksum = record::PayloadChecksum::of(parts);
        self.segment
            .file
            .write_vectored_at(parts, local + HEADER_BYTES as u64)
            .map_err(|error| {
                Error::io(
                    self.log.storage.path().join(&self.segment.name),
                    "write",
                    error,
                )
            })?;
        self.payload_written = Some(checksum);
        // `buffered` only: a `sync` store's small records, staged, never clear it, and its
        // preparer's faulting in for writing turns unwritten extents into written ones ahead
        // of the syncs (`Mapping::prefault_for_writing`).
        if self.log.durability == Durability::Buffered
            && !self.log.appending_apart.load(Ordering::Relaxed)
        {
            self.log.appending_apart.store(true, Ordering::Relaxed);
        }
        Ok(())
    }

    /// Starts loading the lines after this record, where the next record goes (`buffered`).
    ///
    /// Why: the tail's lines were last touched by the preparer's zeroing, so an append's
    /// stores miss, and the append's first locked instruction after its copy (the index's
    /// compare-and-swap) and the checksum's read-back wait for them. Loaded one append ahead,
    /// they are there when the next append writes. Scratch probe (1M keys, get +
    /// `put(if_match)`, 5 interleaved pairs): the put's part 0.69 → 0.53 µs.
    pub(super) fn prefetch_next_record(&self) {
        const NEXT_RECORD_PREFETCH_BYTES: u64 = 256;
        let end = self.new_tail - self.segment.first_slot * self.log.slot_size;
        let limit = (end + NEXT_RECORD_PREFETCH_BYTES).min(self.segment.length());
        let mapping = self.segment.mapping.pointer();
        // The line holding `end` is this record's last, already here.
        let mut line = end.next_multiple_of(64);
        while line < limit {
            crate::base::prefetch(mapping.wrapping_add(line as usize));
            line += 64;
        }
    }

    pub(super) fn header_fields(&self, kind: RecordKind) -> RecordHeader {
        RecordHeader {
            payload_length: self.payload_length as u32,
            version: self.version,
            generation: self.log.generation,
            kind,
        }
    }

    pub(super) fn payload_mut(&mut self) -> &mut [u8] {
        &mut self.record_mut()[HEADER_BYTES..]
    }

    /// The record's bytes in the mapping: its header, then its payload.
    pub(super) fn record_mut(&mut self) -> &mut [u8] {
        let local = self.start - self.segment.first_slot * self.log.slot_size;
        let length = HEADER_BYTES + self.payload_length;
        self.segment.assert_allocated(local + length as u64);
        // SAFETY: the record's range is inside this reservation, which no one else touches
        // until it is complete; `&mut self` keeps this slice unique.
        unsafe {
            std::slice::from_raw_parts_mut(
                self.segment.mapping.pointer().add(local as usize),
                length,
            )
        }
    }

    pub(super) fn seal(&mut self, kind: RecordKind) {
        let staged = self.staged.take();
        let fields = self.header_fields(kind);
        if let (Some(bytes), RecordKind::Data) = (staged, kind) {
            // Staged before it completes: a leader that sees it complete finds it staged.
            self.log.staging.stage(self.start, bytes);
        } else if let Some(payload) = self.payload_written.take() {
            // Written last, as an append through the mapping writes it: until now no scan
            // (a recovery after a kill, a read-only open) takes the payload for a record. By
            // `pwrite` too: a store through the mapping faulted in, and read ahead, pages
            // around it. Should the write fail, the mapping, which cannot, takes it.
            let mut header = [0u8; HEADER_BYTES];
            record::encode_header_for_checksum(&mut header, fields, &payload);
            let local = self.start - self.segment.first_slot * self.log.slot_size;
            if self.segment.file.write_at(&header, local).is_err() {
                self.record_mut()[..HEADER_BYTES].copy_from_slice(&header);
            }
        } else {
            record::encode_header_in_place(self.record_mut(), fields);
        }
        self.finished = true;
        if self.version % VERSION_INDEX_STRIDE == 0 {
            self.log.index_version(self.version, self.start);
        }
        self.log.complete(self.version, self.start, self.new_tail);
    }

    /// Seals the record and waits until it is acknowledged: complete with everything before it
    /// (`buffered`), or also on stable storage (`sync`).
    pub fn commit(mut self) -> Result<Version> {
        self.seal(RecordKind::Data);
        let (log, version) = (self.log, self.version);
        // The wait needs no segment: let it (and the epoch guard that may hold it) go first.
        drop(self);
        match log.durability {
            Durability::Buffered => {
                log.acknowledge_buffered(version)?;
                Ok(version)
            }
            Durability::Sync => log.wait_durable(version).map(|()| version),
        }
    }

    /// Seals the record without waiting; `Log::wait` later acknowledges it.
    pub fn commit_nowait(mut self) -> Version {
        self.seal(RecordKind::Data);
        self.version
    }

    /// Gives the reservation up: an `Abort` record keeps its version and place.
    pub fn abort(mut self) {
        self.seal(RecordKind::Abort);
    }
}

impl Drop for Reservation<'_> {
    fn drop(&mut self) {
        if !self.finished {
            self.seal(RecordKind::Abort);
        }
    }
}
