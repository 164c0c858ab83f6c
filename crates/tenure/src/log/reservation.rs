//! A reservation: one record's version and space, written, then committed or given up.

use super::core::*;
use super::record::{self, RecordHeader, RecordKind, HEADER_BYTES};
use super::staging::MAXIMUM_STAGED_RECORD_BYTES;
use crate::error::{Error, Result};
use crate::types::Version;

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
    /// writes the group's records with one `pwrite` before its sync (`staging.rs`). A record
    /// too large to stage, or with a segment of its own, is written now with one `pwrite`.
    /// Not through the mapping: each append's first store to a page that the last sync
    /// cleaned takes a write fault, and in the log bench a 200 B mapped write plus fdatasync
    /// took 49.7 µs where a pwrite plus fdatasync took 44.7 µs. Readers read the record
    /// through the mapping once it is durable (one page cache).
    pub fn write_payload(&mut self, payload: &[u8]) -> Result<()> {
        assert_eq!(
            payload.len(),
            self.payload_length,
            "the payload fills the reservation"
        );
        self.write_payload_with(|destination| destination.copy_from_slice(payload))
    }

    /// Like `write_payload`, with `fill` writing the payload (exactly the reserved length) in
    /// place: into the mapped segment in a `buffered` store, so a write encodes its record
    /// there instead of into a buffer it then copies (`write::write_item`).
    pub fn write_payload_with<R>(&mut self, fill: impl FnOnce(&mut [u8]) -> R) -> Result<R> {
        if self.log.durability == Durability::Buffered {
            let filled = fill(self.payload_mut());
            self.prefetch_next_record();
            return Ok(filled);
        }
        let local = self.start - self.segment.first_slot * self.log.slot_size;
        let length = HEADER_BYTES + self.payload_length;
        self.segment.assert_allocated(local + length as u64);
        let fields = self.header_fields(RecordKind::Data);
        let record_size = record::record_size(self.payload_length as u64);
        if record_size <= MAXIMUM_STAGED_RECORD_BYTES as u64
            && self.new_tail - self.start == record_size
        {
            // Zeroed: the padding to the record's size is zeros.
            let mut bytes = vec![0u8; record_size as usize];
            let filled = fill(&mut bytes[HEADER_BYTES..length]);
            record::encode_header_in_place(&mut bytes[..length], fields);
            self.staged = Some(bytes);
            return Ok(filled);
        }
        let filled = RECORD_BYTES.with(|record| {
            let mut record = record.borrow_mut();
            record.clear();
            record.resize(length, 0);
            let filled = fill(&mut record[HEADER_BYTES..]);
            record::encode_header_in_place(&mut record, fields);
            let written = self.segment.file.write_at(&record, local);
            if record.capacity() > RECORD_BYTES_KEPT {
                *record = Vec::new();
            }
            written.map(|()| filled).map_err(|error| {
                Error::io(
                    self.log.storage.path().join(&self.segment.name),
                    "write",
                    error,
                )
            })
        })?;
        self.header_written = true;
        Ok(filled)
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
        if let (Some(bytes), RecordKind::Data) = (staged, kind) {
            // Staged before it completes: a leader that sees it complete finds it staged.
            self.log.staging.stage(self.start, bytes);
        } else if !(self.header_written && kind == RecordKind::Data) {
            let fields = self.header_fields(kind);
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
