//! Reads of log bytes under one guard. A reader remembers the last segment it found, so a
//! walk over the ordered index, whose values mostly sit in one segment, finds each value
//! without the segment-table lookup and the division by the slot size (a 10-entry scan looked
//! a segment up twice per entry: once to prefetch the value, once to read it).

use crossbeam_epoch::Guard;

use super::segment::Segment;
use super::Log;
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

    /// The plain entry whose value starts at `value_offset` (`plain.rs`), and its value: one
    /// segment lookup for both, since an entry and its value are one record's bytes. For a
    /// walk, which reads many.
    pub(crate) fn plain_entry(
        &mut self,
        value_offset: u64,
    ) -> Result<(crate::plain::Entry, &'g [u8])> {
        let corrupt = |reason: &str| Error::corruption("log", value_offset, reason.to_owned());
        let start = crate::plain::fields_start(value_offset)?;
        let (segment, local) = self
            .locate(start)
            .ok_or_else(|| corrupt("no segment holds this log offset"))?;
        // SAFETY: complete records are never written again; `locate` found the offset inside
        // the mapping, which lives while the guard does.
        let bytes = unsafe { segment.bytes_from(local) };
        let (fields, rest) = bytes
            .split_first_chunk::<{ crate::plain::FIELDS_BYTES }>()
            .ok_or_else(|| corrupt("a plain entry runs past its segment"))?;
        let entry = crate::plain::Entry::read(value_offset, fields)?;
        let length = entry.value.map_or(0, |value| value.length as usize);
        let value = rest
            .get(..length)
            .ok_or_else(|| corrupt("value runs past its segment"))?;
        Ok((entry, value))
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
            crate::index::prefetch(line as *const u8);
        }
    }

    /// Starts loading the first and last cache lines of `length` bytes at `offset`, if a
    /// segment maps them. Only a hint: nothing is read and nothing fails.
    pub(crate) fn prefetch(&mut self, offset: u64, length: usize) {
        if let Ok(bytes) = self.read_bytes(offset, length) {
            let range = bytes.as_ptr_range();
            crate::index::prefetch(range.start);
            crate::index::prefetch(range.end.wrapping_sub(1));
        }
    }
}

/// A plain head's entry is read like a value: checked against the segment that holds it.
impl crate::index::PlainEntries for LogReader<'_, '_> {
    #[inline]
    fn plain_entry_at(&mut self, value_offset: u64) -> Result<crate::plain::Entry> {
        self.plain_entry(value_offset).map(|(entry, _)| entry)
    }
}
