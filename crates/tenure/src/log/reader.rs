//! Reads of log bytes under one guard. A reader remembers the last segment it found, so a
//! walk over the ordered index, whose values mostly sit in one segment, finds each value
//! without the segment-table lookup and the division by the slot size (a 10-entry scan looked
//! a segment up twice per entry: once to prefetch the value, once to read it).

use crossbeam_epoch::Guard;

use super::core::Log;
use super::segment::Segment;
use crate::error::{Error, Result};

pub(crate) struct LogReader<'l, 'g> {
    log: &'l Log,
    guard: &'g Guard,
    /// The last segment found, and the global offset of its first byte.
    segment: Option<(&'g Segment, u64)>,
}

impl Log {
    /// A reader of bytes that stay mapped for as long as `guard` lives.
    pub(crate) fn reader<'g>(&self, guard: &'g Guard) -> LogReader<'_, 'g> {
        LogReader {
            log: self,
            guard,
            segment: None,
        }
    }
}

impl<'g> LogReader<'_, 'g> {
    /// The segment that maps global offset `offset`, and the offset inside it.
    fn locate(&mut self, offset: u64) -> Option<(&'g Segment, u64)> {
        if let Some((segment, start)) = self.segment {
            if offset >= start && offset - start < segment.length() {
                return Some((segment, offset - start));
            }
        }
        let (segment, local) = self.log.shared.segment_at(offset, self.guard)?;
        self.segment = Some((segment, offset - local));
        Some((segment, local))
    }

    /// `length` bytes at global offset `offset`, borrowed from the map for as long as the
    /// guard. For bytes the caller knows are inside complete records (the index only points
    /// there).
    pub(crate) fn read_bytes(&mut self, offset: u64, length: usize) -> Result<&'g [u8]> {
        let shared = &self.log.shared;
        let Some((segment, local)) = self.locate(offset) else {
            return Err(Error::corruption(
                shared.storage.path(),
                offset,
                "no segment holds this log offset",
            ));
        };
        if local + length as u64 > segment.length() {
            return Err(Error::corruption(
                shared.storage.path().join(&segment.name),
                local,
                "value runs past its segment",
            ));
        }
        // SAFETY: complete records are never written again; the range is inside the mapping,
        // which lives while the guard does.
        let bytes = unsafe { segment.bytes_from(local) };
        Ok(&bytes[..length])
    }

    /// The bytes from global offset `offset` to the end of the segment that holds it,
    /// borrowed from the map for as long as the guard. For offsets inside complete records.
    pub(crate) fn bytes_from(&mut self, offset: u64) -> Result<&'g [u8]> {
        let Some((segment, local)) = self.locate(offset) else {
            return Err(Error::corruption(
                self.log.shared.storage.path(),
                offset,
                "no segment holds this log offset",
            ));
        };
        // SAFETY: complete records are never written again; `locate` found the offset inside
        // the mapping, which lives while the guard does.
        Ok(unsafe { segment.bytes_from(local) })
    }

    /// Starts loading every cache line of `length` bytes at `offset` (at most to the end of
    /// its segment), if a segment maps them. Only a hint: nothing is read and nothing fails.
    pub(crate) fn prefetch_lines(&mut self, offset: u64, length: usize) {
        let Some((segment, local)) = self.locate(offset) else {
            return;
        };
        // SAFETY: inside the mapping, which lives while the guard does; only prefetched.
        let bytes = unsafe { segment.bytes_from(local) };
        let bytes = &bytes[..length.min(bytes.len())];
        let first_line = bytes.as_ptr() as usize & !63;
        let end = bytes.as_ptr() as usize + bytes.len();
        for line in (first_line..end).step_by(64) {
            crate::base::prefetch(line as *const u8);
        }
    }

    /// Starts loading the first and last cache lines of `length` bytes at `offset`, if a
    /// segment maps them. Only a hint: nothing is read and nothing fails.
    pub(crate) fn prefetch(&mut self, offset: u64, length: usize) {
        if let Ok(bytes) = self.read_bytes(offset, length) {
            let range = bytes.as_ptr_range();
            crate::base::prefetch(range.start);
            crate::base::prefetch(range.end.wrapping_sub(1));
        }
    }
}

impl<'g> RecordBytes<'g> for LogReader<'_, 'g> {
    fn bytes_from(&mut self, offset: u64) -> Result<&'g [u8]> {
        LogReader::bytes_from(self, offset)
    }

    fn corruption(&mut self, offset: u64, reason: &str) -> Error {
        let storage = self.log.shared.storage.path();
        match self.locate(offset) {
            Some((segment, local)) => Error::corruption(storage.join(&segment.name), local, reason),
            None => Error::corruption(storage, offset, reason),
        }
    }
}

/// Bytes of complete records read back by global log offset: how the layers above read a
/// record's fields without knowing segments. Implemented by a reader of the open log and by
/// the recovery scan (for the records it has passed).
pub(crate) trait RecordBytes<'g> {
    /// The bytes from global offset `offset` to the end of the segment that holds it, valid
    /// for `'g` (the guard, or the recovery scan, that keeps them mapped).
    fn bytes_from(&mut self, offset: u64) -> Result<&'g [u8]>;

    /// A `Corruption` error about global offset `offset`, naming the segment file and the
    /// offset inside it where a segment holds it.
    fn corruption(&mut self, offset: u64, reason: &str) -> Error;

    /// Whether records can be read back at all: a replay that only checks records (verify)
    /// has no log to read them from.
    fn can_read_back(&self) -> bool {
        true
    }
}
