//! The recovery scan: records read in log order, from the first segment or from a persisted
//! index's tail, and the check of the records below that tail after such an open.
//!
//! Scan rules (docs/design.md, "Recovery"): a record is good when its checksum holds, its
//! version is the one expected next, and its generation is neither newer than the superblock's
//! nor older than the record before it. The first bad record ends the log: before the durable
//! watermark that is `Corruption` naming file and offset; at or past it the tail is torn and is
//! cut off there.

use super::anchor::{describes, LogAnchor};
use super::record::{self, RecordKind};
use super::segment::{Segment, SegmentTable};
use super::superblock::Superblock;
use crate::error::{Error, Result};
use crate::types::Version;

/// One record found by the recovery scan.
pub struct RecoveredRecord<'a> {
    pub version: Version,
    /// Global offset, as `Reservation::location` gave it.
    pub location: u64,
    /// A record past a persisted index's tail, to replay onto that index once it is loaded
    /// (`scan_or_verify`); otherwise the scan replays every record into a new index.
    pub onto_persisted_index: bool,
    pub payload: &'a [u8],
    /// The records replayed before this one, read back by offset (`RecordBytes`).
    pub(crate) earlier: EarlierRecords<'a>,
}

/// Reads bytes of records the recovery scan has passed, while the log is not open yet.
pub(crate) struct EarlierRecords<'a> {
    table: &'a SegmentTable,
    slot_size: u64,
    guard: &'a crossbeam_epoch::Guard,
    directory: &'a std::path::Path,
}

impl<'a> EarlierRecords<'a> {
    /// The segment holding global offset `offset`, and the offset inside it.
    fn locate(&self, offset: u64) -> Option<(&'a Segment, u64)> {
        let segment = self.table.get(offset / self.slot_size, self.guard)?;
        Some((segment, offset - segment.first_slot * self.slot_size))
    }
}

impl<'a> EarlierRecords<'a> {
    pub(super) fn new(
        table: &'a SegmentTable,
        slot_size: u64,
        guard: &'a crossbeam_epoch::Guard,
        directory: &'a std::path::Path,
    ) -> EarlierRecords<'a> {
        EarlierRecords {
            table,
            slot_size,
            guard,
            directory,
        }
    }
}

impl<'a> super::reader::RecordBytes<'a> for EarlierRecords<'a> {
    fn bytes_from(&mut self, offset: u64) -> Result<&'a [u8]> {
        let (segment, local) = self
            .locate(offset)
            .ok_or_else(|| self.corruption(offset, "no segment holds this log offset"))?;
        if local >= segment.length() {
            return Err(self.corruption(offset, "past the end of its segment"));
        }
        // SAFETY: inside the mapping, which lives while the scan's guard does.
        Ok(unsafe { segment.bytes_from(local) })
    }

    fn corruption(&mut self, offset: u64, reason: &str) -> Error {
        match self.locate(offset) {
            Some((segment, local)) => {
                Error::corruption(self.directory.join(&segment.name), local, reason)
            }
            None => Error::corruption(self.directory, offset, reason),
        }
    }
}

/// The log scanned, and whether `anchor` (a persisted index's) describes a prefix of it: then
/// the scan starts at the anchor's tail, and hands the records after it to `replay` with
/// `onto_persisted_index` set, for the caller to replay onto the index it loads; the records
/// below the tail are left to [`verify_below_anchor`], after the open. When the anchor does
/// not describe the store as the superblock and the files show it, or a segment below its
/// tail is missing, the whole log is scanned and every record replayed.
pub(super) fn scan_or_verify(
    anchor: Option<&LogAnchor>,
    table: &SegmentTable,
    superblock: &Superblock,
    directory: &std::path::Path,
    replay: &mut dyn FnMut(RecoveredRecord<'_>) -> Result<()>,
) -> Result<(ScanResult, bool)> {
    let slot_size = superblock.segment_size_bytes;
    if let Some(anchor) = anchor.filter(|anchor| describes(anchor, superblock, table)) {
        if let Some(from_anchor) = ScanStart::at_anchor(anchor, table, slot_size) {
            let scanned = scan(table, slot_size, superblock, directory, from_anchor, replay)?;
            return Ok((scanned, true));
        }
    }
    let start = ScanStart::at_first_slot(superblock, None);
    Ok((
        scan(table, slot_size, superblock, directory, start, replay)?,
        false,
    ))
}

/// Verifies the records below `anchor`'s tail, which an open from it did not read
/// (`scan_or_verify`): every check of the open's scan, and that the log meets the anchor's
/// tail at a record boundary with its next version and version index. Reads nothing at or
/// past that tail, so appenders may run meanwhile; the caller keeps compaction from removing
/// segments. `cancelled` is asked at each segment; once it says so, the check stops, `Ok`.
pub(super) fn verify_below_anchor(
    table: &SegmentTable,
    superblock: &Superblock,
    directory: &std::path::Path,
    anchor: &LogAnchor,
    cancelled: &dyn Fn() -> bool,
) -> Result<()> {
    let slot_size = superblock.segment_size_bytes;
    let mut start = ScanStart::at_first_slot(superblock, Some(anchor));
    start.until_anchor = true;
    start.cancelled = Some(cancelled);
    let scanned = scan(table, slot_size, superblock, directory, start, &mut |_| {
        Ok(())
    })?;
    if scanned.reached_anchor || cancelled() {
        return Ok(());
    }
    Err(Error::corruption(
        directory.join(Segment::file_name(scanned.tail / slot_size)),
        scanned.tail % slot_size,
        format!(
            "the log does not reach the saved index's tail {} at a record boundary with version {}",
            anchor.tail, anchor.next_version
        ),
    ))
}

/// Where a scan starts, and what it knows there.
struct ScanStart<'a> {
    position: u64,
    expected_version: Option<Version>,
    /// The generation records from `position` on may not be older than.
    previous_generation: u32,
    version_index: Vec<(Version, u64)>,
    /// Hands records to `replay` only from this anchor's tail on, once the scan has met it.
    anchor: Option<&'a LogAnchor>,
    past_anchor: bool,
    /// Stops at the anchor's tail (a verification beside running appenders).
    until_anchor: bool,
    cancelled: Option<&'a dyn Fn() -> bool>,
}

impl<'a> ScanStart<'a> {
    fn at_first_slot(superblock: &Superblock, anchor: Option<&'a LogAnchor>) -> ScanStart<'a> {
        ScanStart {
            position: superblock.first_slot * superblock.segment_size_bytes,
            expected_version: None,
            previous_generation: 0,
            version_index: Vec::new(),
            anchor,
            past_anchor: anchor.is_none(),
            until_anchor: false,
            cancelled: None,
        }
    }

    /// At the anchor's tail, with what the anchor says the log holds below it, when every
    /// segment below the tail is there (`describes` has checked the rest). The records after
    /// the tail were written at the anchor's generation or later.
    fn at_anchor(
        anchor: &'a LogAnchor,
        table: &SegmentTable,
        slot_size: u64,
    ) -> Option<ScanStart<'a>> {
        let guard = crossbeam_epoch::pin();
        let mut position = anchor.first_slot.checked_mul(slot_size)?;
        while position < anchor.tail {
            let segment = table.get(position / slot_size, &guard)?;
            position = (segment.first_slot + segment.slot_count) * slot_size;
        }
        Some(ScanStart {
            position: anchor.tail,
            expected_version: Some(anchor.next_version),
            previous_generation: u32::try_from(anchor.generation).ok()?,
            version_index: anchor.version_index.clone(),
            anchor: Some(anchor),
            past_anchor: true,
            until_anchor: false,
            cancelled: None,
        })
    }
}

pub(super) struct ScanResult {
    pub(super) tail: u64,
    pub(super) next_version: Version,
    pub(super) version_index: Vec<(Version, u64)>,
    /// The scan was given an anchor and met it: at its tail, a record boundary, with its
    /// next version and version index. (A scan that does not meet it stops there.)
    pub(super) reached_anchor: bool,
}

/// Scans the log from `start`, handing records to `replay`: every one without an anchor; with
/// one, only those past the anchor's tail, once the scan has met it there.
fn scan(
    table: &SegmentTable,
    slot_size: u64,
    superblock: &Superblock,
    directory: &std::path::Path,
    start: ScanStart<'_>,
    replay: &mut dyn FnMut(RecoveredRecord<'_>) -> Result<()>,
) -> Result<ScanResult> {
    let watermark = superblock.durable_watermark;
    let current_generation = superblock.generation as u32;
    let ScanStart {
        mut position,
        mut expected_version,
        mut previous_generation,
        mut version_index,
        anchor,
        mut past_anchor,
        until_anchor,
        cancelled,
    } = start;
    let guard = crossbeam_epoch::pin();
    loop {
        if let Some(anchor) = anchor.filter(|_| !past_anchor) {
            if position >= anchor.tail {
                let met = position == anchor.tail
                    && expected_version.unwrap_or(1) == anchor.next_version
                    && version_index == anchor.version_index;
                if !met || until_anchor {
                    return Ok(ScanResult {
                        tail: position,
                        next_version: expected_version.unwrap_or(1),
                        version_index,
                        reached_anchor: met,
                    });
                }
                past_anchor = true;
            }
        }
        if cancelled.is_some_and(|cancelled| position % slot_size == 0 && cancelled()) {
            break;
        }
        let Some(segment) = table.get(position / slot_size, &guard) else {
            // Segments past a missing one would be taken for stale and removed: refuse instead.
            let later_segment = table
                .all()
                .iter()
                .any(|segment| segment.first_slot * slot_size > position);
            if position < watermark || later_segment {
                return Err(Error::corruption(
                    directory.join(Segment::file_name(position / slot_size)),
                    0,
                    if position < watermark {
                        format!("the log ends at offset {position}, before the durable watermark {watermark}")
                    } else {
                        format!("the segment for log offset {position} is missing, and later segments exist")
                    },
                ));
            }
            break;
        };
        let segment_start = segment.first_slot * slot_size;
        let segment_end = segment_start + segment.length();
        let local = position - segment_start;
        if segment_end - position < record::HEADER_BYTES as u64 {
            position = segment_end;
            continue;
        }
        // SAFETY: at open no appender exists yet, and the scan is the only user of the
        // mapping; a verification beside appenders reads only below the anchor's tail (the
        // slice is cut there), which is durable and never written again.
        let bytes = unsafe { segment.bytes_from(local) };
        let bytes = match anchor.filter(|_| until_anchor) {
            Some(anchor) => &bytes[..bytes.len().min((anchor.tail - position) as usize)],
            None => bytes,
        };
        let verdict = record::decode(bytes).and_then(|(header, payload)| {
            if header.generation > current_generation || header.generation < previous_generation {
                return Err("record generation out of order (stale bytes past an earlier cut)");
            }
            if expected_version.is_some_and(|expected| header.version != expected) {
                return Err("record version out of sequence");
            }
            Ok((header, payload))
        });
        match verdict {
            Ok((header, payload)) => {
                previous_generation = header.generation;
                match header.kind {
                    RecordKind::SegmentEnd => {
                        expected_version = Some(header.version);
                        position = segment_end;
                    }
                    RecordKind::Abort | RecordKind::Data => {
                        if header.version % super::core::VERSION_INDEX_STRIDE == 0 {
                            version_index.push((header.version, position));
                        }
                        if header.kind == RecordKind::Data && past_anchor {
                            replay(RecoveredRecord {
                                version: header.version,
                                location: position,
                                onto_persisted_index: anchor.is_some(),
                                payload,
                                earlier: EarlierRecords {
                                    table,
                                    slot_size,
                                    guard: &guard,
                                    directory,
                                },
                            })?;
                        }
                        expected_version = Some(header.version + 1);
                        position += record::record_size(header.payload_length as u64);
                    }
                }
            }
            Err(reason) => {
                if position < watermark {
                    return Err(Error::corruption(
                        directory.join(&segment.name),
                        local,
                        reason,
                    ));
                }
                break;
            }
        }
    }
    Ok(ScanResult {
        tail: position,
        next_version: expected_version.unwrap_or(1),
        version_index,
        reached_anchor: anchor.is_some() && past_anchor,
    })
}
