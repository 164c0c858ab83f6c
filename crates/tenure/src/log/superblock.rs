//! The superblock: two checksummed copies of the log's root facts, in different sectors.
//! Unsynced writes (the watermark after each group commit) only ever go to the copy that does
//! not hold the last synced superblock, so a power cut that tears them always leaves that
//! synced copy intact. A synced write goes to the other copy too, and then becomes the one to
//! keep.
//!
//! ```text
//! copy at byte 0 and at byte 512 (64 bytes each, little-endian):
//!  0  magic "TENURESB"        8  format version (u32)   12 reserved (u32) = 0
//! 16  segment size bytes (u64)                          24 generation (u64)
//! 32  sequence (u64): which copy is newer               40 durable watermark (u64)
//! 48  first segment slot (u64)                          56 crc32 of bytes 0..56, 60 zero (u32)
//! ```

use crate::storage::StorageFile;

pub const SUPERBLOCK_FILE: &str = "superblock";
pub const SUPERBLOCK_BYTES: u64 = 1024;
/// The format this build writes. 2 added compact relocation records (engine op 10).
pub const FORMAT_VERSION: u32 = 2;
/// The oldest format this build reads; a store of an older format it reads is written at
/// `FORMAT_VERSION` from its next superblock sync on.
pub const OLDEST_READABLE_FORMAT_VERSION: u32 = 1;
const MAGIC: &[u8; 8] = b"TENURESB";
const COPY_BYTES: usize = 64;
const COPY_OFFSETS: [u64; 2] = [0, 512];

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Superblock {
    pub segment_size_bytes: u64,
    /// Incremented at every open; records carry it so stale bytes past a cut can never be
    /// taken for new records.
    pub generation: u64,
    pub sequence: u64,
    /// Every log byte below this global offset is known to be on stable storage.
    pub durable_watermark: u64,
    pub first_slot: u64,
}

pub enum ReadOutcome {
    /// The newest valid copy, and which copy (0 or 1) it is.
    Valid(Superblock, usize),
    /// A copy had a good checksum but a format this build does not know.
    UnsupportedFormat(u32),
    /// Neither copy is readable.
    Unreadable,
}

fn encode(superblock: &Superblock) -> [u8; COPY_BYTES] {
    let mut bytes = [0u8; COPY_BYTES];
    bytes[0..8].copy_from_slice(MAGIC);
    bytes[8..12].copy_from_slice(&FORMAT_VERSION.to_le_bytes());
    bytes[16..24].copy_from_slice(&superblock.segment_size_bytes.to_le_bytes());
    bytes[24..32].copy_from_slice(&superblock.generation.to_le_bytes());
    bytes[32..40].copy_from_slice(&superblock.sequence.to_le_bytes());
    bytes[40..48].copy_from_slice(&superblock.durable_watermark.to_le_bytes());
    bytes[48..56].copy_from_slice(&superblock.first_slot.to_le_bytes());
    let crc = crc32fast::hash(&bytes[0..56]);
    bytes[56..60].copy_from_slice(&crc.to_le_bytes());
    bytes
}

enum CopyOutcome {
    Valid(Superblock),
    UnsupportedFormat(u32),
    Invalid,
}

fn decode(bytes: &[u8; COPY_BYTES]) -> CopyOutcome {
    let read_u64 = |at: usize| u64::from_le_bytes(bytes[at..at + 8].try_into().unwrap());
    let stored_crc = u32::from_le_bytes(bytes[56..60].try_into().unwrap());
    if &bytes[0..8] != MAGIC || crc32fast::hash(&bytes[0..56]) != stored_crc {
        return CopyOutcome::Invalid;
    }
    let format = u32::from_le_bytes(bytes[8..12].try_into().unwrap());
    if !(OLDEST_READABLE_FORMAT_VERSION..=FORMAT_VERSION).contains(&format) {
        return CopyOutcome::UnsupportedFormat(format);
    }
    CopyOutcome::Valid(Superblock {
        segment_size_bytes: read_u64(16),
        generation: read_u64(24),
        sequence: read_u64(32),
        durable_watermark: read_u64(40),
        first_slot: read_u64(48),
    })
}

/// Reads both copies and returns the newest valid one.
pub fn read(file: &dyn StorageFile) -> std::io::Result<ReadOutcome> {
    let length = file.length()?;
    let mut best: Option<(Superblock, usize)> = None;
    let mut unsupported = None;
    for (index, offset) in COPY_OFFSETS.into_iter().enumerate() {
        if offset + COPY_BYTES as u64 > length {
            continue;
        }
        let mut bytes = [0u8; COPY_BYTES];
        file.read_at(&mut bytes, offset)?;
        match decode(&bytes) {
            CopyOutcome::Valid(copy) => {
                if best.is_none_or(|(current, _)| copy.sequence > current.sequence) {
                    best = Some((copy, index));
                }
            }
            CopyOutcome::UnsupportedFormat(format) => unsupported = Some(format),
            CopyOutcome::Invalid => {}
        }
    }
    Ok(match (best, unsupported) {
        (_, Some(format)) => ReadOutcome::UnsupportedFormat(format),
        (Some((superblock, index)), None) => ReadOutcome::Valid(superblock, index),
        (None, None) => ReadOutcome::Unreadable,
    })
}

/// Writes `superblock` into copy `copy` (0 or 1), without syncing.
pub fn write(file: &dyn StorageFile, superblock: &Superblock, copy: usize) -> std::io::Result<()> {
    file.write_at(&encode(superblock), COPY_OFFSETS[copy])
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn encode_decode_round_trip_and_checksum() {
        let superblock = Superblock {
            segment_size_bytes: 1 << 20,
            generation: 9,
            sequence: 12,
            durable_watermark: 4096,
            first_slot: 2,
        };
        let bytes = encode(&superblock);
        assert!(matches!(decode(&bytes), CopyOutcome::Valid(copy) if copy == superblock));
        let mut flipped = bytes;
        flipped[41] ^= 4;
        assert!(matches!(decode(&flipped), CopyOutcome::Invalid));
    }
}
