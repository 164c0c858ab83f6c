//! Anchors: the state of the log a persisted index was taken at, and how an open tells
//! whether the log it finds still holds that state as its prefix.

use super::segment::SegmentTable;
use super::superblock::Superblock;
use crate::types::Version;

/// A state of the log that a persisted index (`index/checkpoint/`) was taken at: every
/// record below `tail` (the end of the record of version `next_version − 1`), nothing after.
/// Records below the durable watermark are never written again, and compaction removes only
/// the oldest segment (moving the first slot), so the anchor describes the log for as long as
/// the first slot is the same and the log's bytes below `tail` are the ones it fingerprinted:
/// an open then loads the index and replays only the records from `tail` on.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LogAnchor {
    pub segment_size_bytes: u64,
    pub generation: u64,
    pub sequence: u64,
    pub first_slot: u64,
    /// The end of the last record the index holds. Durable before the index is saved.
    pub tail: u64,
    pub next_version: Version,
    /// The log's every `VERSION_INDEX_STRIDE`-th version below `next_version`, and its offset
    /// (the change feed's).
    pub version_index: Vec<(Version, u64)>,
    /// [`fingerprint`] of the log below `tail`: ties the anchor to this store's records, not
    /// only to a history of superblocks another store could share.
    pub fingerprint: u32,
}

/// Whether `anchor` can describe this log: the same segment size and first slot, a generation
/// no newer than the superblock's (its sequence is no test: the watermark's unsynced writes
/// raise it, and a power cut can take them back), and the CRC32 of the log's bytes at either end below the
/// anchored tail equal to the saved fingerprint.
pub(super) fn describes(anchor: &LogAnchor, superblock: &Superblock, table: &SegmentTable) -> bool {
    let slot_size = superblock.segment_size_bytes;
    let Some(start) = anchor.first_slot.checked_mul(slot_size) else {
        return false;
    };
    anchor.segment_size_bytes == slot_size
        && anchor.generation <= superblock.generation
        && anchor.first_slot == superblock.first_slot
        && anchor.tail >= start
        && anchor.next_version >= 1
        && fingerprint(table, slot_size, start, anchor.tail) == Some(anchor.fingerprint)
}

/// Bytes of the log at each end that [`fingerprint`] covers.
const FINGERPRINT_BYTES: u64 = 4096;

/// A CRC32 of the log's first and last `FINGERPRINT_BYTES` (less when the log is shorter, or
/// its last segment holds fewer): two stores' logs differ there unless they are copies.
/// `None` when a segment is missing.
pub(super) fn fingerprint(
    table: &SegmentTable,
    slot_size: u64,
    start: u64,
    tail: u64,
) -> Option<u32> {
    let guard = crossbeam_epoch::pin();
    let mut crc = crc32fast::Hasher::new();
    let mut add = |from: u64, to: u64| -> Option<()> {
        let segment = table.get(from / slot_size, &guard)?;
        let segment_start = segment.first_slot * slot_size;
        let from = from.max(segment_start);
        let to = to.min(segment_start + segment.length());
        if from < to {
            // SAFETY: records below the tail are never written again.
            let bytes = unsafe { segment.bytes_from(from - segment_start) };
            crc.update(&bytes[..(to - from) as usize]);
        }
        Some(())
    };
    if tail > start {
        add(start, tail.min(start + FINGERPRINT_BYTES))?;
        let last = tail - 1;
        add(last.saturating_sub(FINGERPRINT_BYTES - 1).max(start), tail)?;
    }
    Some(crc.finalize())
}
