//! Group writes for `sync` stores: an appender hands its record to the log instead of writing
//! it, and the group-commit leader writes every staged record of its group — one `pwrite` per
//! run of adjacent records — right before the `fdatasync` that makes them durable.
//!
//! Why: with 16 writers on 2 CPUs a sync group's cost beyond the sync itself is the hand-off,
//! every writer waking and appending again, and each append was a `pwrite` (a system call and
//! the file's inode lock, which the 16 took in turn). A C probe of the bare protocol (16
//! threads, 200 B records, one fdatasync a group, `benches/probes/group_commit_protocol.c`)
//! ran at 0.35–0.49 of 16 × the one-writer rate, 0.49–0.52 with staged writes alone, and
//! 0.65–0.95 with staged writes and spinning waits together (`group_commit.rs`; docs/design.md §11 "Group commit").
//!
//! A staged record is not in the file, nor in the mapping, until its group's leader writes it.
//! That is safe because nothing reads a `sync` store's record before it is durable: readers see
//! durable versions only, and a write that reads the newest version's value (a properties
//! change) first waits for that version as a read would (`write.rs`). Records a reservation
//! does not stage (larger than `MAXIMUM_STAGED_RECORD_BYTES`, or with a segment of their own)
//! are written by their appender as before; `Abort` and `SegmentEnd` headers go through the
//! mapping. Runs never cross such a record: only adjacent staged records share a `pwrite`.

use parking_lot::Mutex;

/// The largest record (header, payload and padding) an appender stages; larger ones it writes
/// itself. Bounds the staged bytes: at most this much for each version in flight, and the
/// completion ring bounds those (`COMPLETION_SLOTS`).
pub(crate) const MAXIMUM_STAGED_RECORD_BYTES: usize = 16 << 10;

/// The capacity the leader's run buffer keeps between groups.
pub(super) const RUN_BYTES_KEPT: usize = 1 << 20;

/// A complete record waiting for its group's write: its global offset and its bytes, padded to
/// its aligned size.
pub(crate) struct StagedRecord {
    pub(super) start: u64,
    pub(super) bytes: Vec<u8>,
}

#[derive(Default)]
pub(crate) struct Staging {
    pub(super) records: Mutex<Vec<StagedRecord>>,
    /// The leader's buffer for a run of adjacent records (one leader at a time).
    pub(super) run: Mutex<Vec<u8>>,
}

impl Staging {
    /// Stages a sealed record. The caller completes it only afterwards, so a leader that sees
    /// the record complete finds it here.
    pub(crate) fn stage(&self, start: u64, bytes: Vec<u8>) {
        debug_assert!(bytes.len() <= MAXIMUM_STAGED_RECORD_BYTES);
        self.records.lock().push(StagedRecord { start, bytes });
    }

    /// The staged records that start below `end`, in log order.
    pub(super) fn take_below(&self, end: u64) -> Vec<StagedRecord> {
        let mut records = self.records.lock();
        let mut taken = Vec::new();
        let mut index = 0;
        while index < records.len() {
            if records[index].start < end {
                taken.push(records.swap_remove(index));
            } else {
                index += 1;
            }
        }
        drop(records);
        taken.sort_unstable_by_key(|record| record.start);
        taken
    }
}
