//! A read-only open that follows the writer: before an operation, the records other processes
//! appended since the last look are read from the shared files, in log order, and handed to
//! the engine to apply (docs/design.md, "Read-only opens follow the writer").
//!
//! The log ends, for a follower, where the open's scan ends: at the first record that is not
//! complete. A record's header is written last (at its seal, or after its payload when written
//! apart), so the bytes where the next record goes read as zeros until it is whole; the
//! check before each operation is one load of the next header's version field. Records carry
//! the writer's generation: one newer than the superblock the follower knows means the writer
//! reopened, and the superblock is read again before they are trusted.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

use super::completion::pack;
use super::core::{FollowState, Follower, LogShared, VERSION_INDEX_STRIDE};
use super::record::{self, RecordKind, HEADER_BYTES};
use super::scan::{EarlierRecords, RecoveredRecord};
use super::segment::Segment;
use super::superblock::{self, ReadOutcome};
use crate::error::{Error, Result};

impl LogShared {
    /// Whether records may have been appended past what this follower has read: one load
    /// when nothing was.
    #[inline]
    pub(super) fn has_unread_records(&self) -> bool {
        let Some(follower) = &self.follower else {
            return false;
        };
        let word = follower.next_header_version.load(Ordering::Acquire);
        // SAFETY: 8-aligned (records are), inside the mapping `FollowState::current` keeps
        // alive until the pointer is replaced.
        word.is_null() || unsafe { AtomicU64::from_ptr(word) }.load(Ordering::Acquire) != 0
    }

    /// Reads the records appended since the last catch-up and hands each `Data` record to
    /// `apply`, in log order; then makes them visible. Then, when the writer has removed
    /// segments this follower still holds and `before_release` (given them) agrees, lets go
    /// of them: under the catch-up's lock, so no catch-up reads them meanwhile.
    pub(super) fn catch_up(
        &self,
        apply: &mut dyn FnMut(RecoveredRecord<'_>) -> Result<()>,
        before_release: &mut dyn FnMut(&[(u64, u64)]) -> Result<bool>,
    ) -> Result<()> {
        let follower = self.follower.as_ref().expect("a following open");
        let mut state = follower.state.lock();
        if let Some(error) = &state.failed {
            return Err(error.clone());
        }
        if let Err(error) = self.read_appended(&mut state, apply) {
            state.failed = Some(error.clone());
            return Err(error);
        }
        let last_version = state.expected_version - 1;
        self.reservation.store(
            pack(state.expected_version, state.position),
            Ordering::Release,
        );
        self.completion.set(last_version, state.position);
        self.visible.store(last_version, Ordering::Release);
        self.notify_watchers();
        self.point_at_next_header(follower, &mut state);
        if state.position / self.slot_size != state.published_from / self.slot_size {
            follower.claim.publish(state.position);
            state.published_from = state.position;
        }
        // Only when the writer's first slot moved past what was let go of: the table's walk
        // costs a reference count per segment, and a catch-up runs on the readers' path.
        if state.writer_first_slot > state.released_below {
            let removed = self.segments_removed_by_writer(state.writer_first_slot);
            if removed.is_empty() || before_release(&removed)? {
                self.release_removed_segments(state.writer_first_slot);
                state.released_below = state.writer_first_slot;
            }
        }
        Ok(())
    }

    fn read_appended(
        &self,
        state: &mut FollowState,
        apply: &mut dyn FnMut(RecoveredRecord<'_>) -> Result<()>,
    ) -> Result<()> {
        let directory = self.storage.path().to_path_buf();
        let mut superblock_read = false;
        let guard = crossbeam_epoch::pin();
        loop {
            let slot = state.position / self.slot_size;
            let segment = match self.segments.get(slot, &guard) {
                Some(segment) => Arc::clone(segment),
                None => match self.map_appended_segment(slot)? {
                    Some(segment) => segment,
                    None => return Ok(()),
                },
            };
            let segment_start = segment.first_slot * self.slot_size;
            let segment_end = segment_start + segment.length();
            if segment_end - state.position < HEADER_BYTES as u64 {
                state.position = segment_end;
                continue;
            }
            // SAFETY: inside the mapping, which the table keeps while `guard` lives. Another
            // process may be writing past the last complete record; those bytes fail the
            // checks below and end the read.
            let bytes = unsafe { segment.bytes_from(state.position - segment_start) };
            let verdict = record::decode(bytes).and_then(|(header, payload)| {
                if header.generation < state.previous_generation
                    || header.generation > state.known_generation
                {
                    return Err("record generation out of range");
                }
                if header.version != state.expected_version {
                    return Err("record version out of sequence");
                }
                Ok((header, payload))
            });
            let (header, payload) = match verdict {
                Ok(found) => found,
                // Something is there: a record in progress, or one of a writer that reopened
                // since the superblock was read. Read it once more, then look again.
                Err(_) if !superblock_read && bytes[..HEADER_BYTES].iter().any(|&b| b != 0) => {
                    superblock_read = true;
                    state.known_generation = self.writers_superblock()?.generation as u32;
                    continue;
                }
                Err(_) => {
                    if state.position == segment_start {
                        self.forget_unread_segment(&segment);
                    }
                    return Ok(());
                }
            };
            state.previous_generation = header.generation;
            if header.kind == RecordKind::SegmentEnd {
                state.expected_version = header.version;
                state.position = segment_end;
                // Once a segment: what the writer's compaction has removed meanwhile.
                state.writer_first_slot = self.writers_superblock()?.first_slot;
                continue;
            }
            if header.version % VERSION_INDEX_STRIDE == 0 {
                self.version_index
                    .lock()
                    .push((header.version, state.position));
            }
            if header.kind == RecordKind::Data {
                apply(RecoveredRecord {
                    version: header.version,
                    location: state.position,
                    onto_persisted_index: false,
                    payload,
                    earlier: EarlierRecords::new(
                        &self.segments,
                        self.slot_size,
                        &guard,
                        &directory,
                    ),
                })?;
            }
            state.expected_version = header.version + 1;
            state.position += record::record_size(header.payload_length as u64);
        }
    }

    /// Maps the segment a writer created at `slot` since the open; `None` while it does not
    /// exist or is being created.
    fn map_appended_segment(&self, slot: u64) -> Result<Option<Arc<Segment>>> {
        let name = Segment::file_name(slot);
        let path = self.storage.path().join(&name);
        let file = match self.storage.open_read_only(&name) {
            Ok(file) => file,
            Err(error) if error.kind() == std::io::ErrorKind::NotFound => return Ok(None),
            Err(error) => return Err(Error::io(&path, "open", error)),
        };
        let length = file
            .length()
            .map_err(|error| Error::io(&path, "stat", error))?;
        if length == 0 || length % self.slot_size != 0 {
            return Ok(None);
        }
        let mapping = file
            .map(length as usize)
            .map_err(|error| Error::io(&path, "mmap", error))?;
        let segment = Arc::new(Segment::new(
            slot,
            length / self.slot_size,
            name,
            file,
            mapping,
        ));
        let _creating = self.segment_creation.lock();
        self.segments.insert(Arc::clone(&segment));
        Ok(Some(segment))
    }

    /// The segments (first slot, length in bytes) below `first_slot`, the writer's, that this
    /// follower still holds.
    fn segments_removed_by_writer(&self, first_slot: u64) -> Vec<(u64, u64)> {
        self.segments
            .all()
            .iter()
            .filter(|segment| segment.first_slot + segment.slot_count <= first_slot)
            .map(|segment| (segment.first_slot, segment.length()))
            .collect()
    }

    /// Takes out of the table the segments below `first_slot`, which the writer removed, once
    /// this follower has read the records that replaced what they held; the caller makes sure
    /// nothing will read them (their mappings go once no reader's guard can see them). Without
    /// this a follower would keep every removed segment's disk for as long as it lives.
    fn release_removed_segments(&self, first_slot: u64) {
        let removed: Vec<Arc<Segment>> = {
            let _creating = self.segment_creation.lock();
            self.segments
                .all()
                .iter()
                .filter(|segment| segment.first_slot + segment.slot_count <= first_slot)
                .filter_map(|segment| self.segments.remove(segment.first_slot))
                .collect()
        };
        if removed.is_empty() {
            return;
        }
        let log_start = first_slot * self.slot_size;
        self.version_index
            .lock()
            .retain(|(_, offset)| *offset >= log_start);
        let guard = crossbeam_epoch::pin();
        guard.defer(move || drop(removed));
        guard.flush();
    }

    /// Takes out of the table a segment nothing has been read from, so the next look maps
    /// its file again. A writer that reopens after a crash removes a segment file that starts
    /// at the tail, and the segment it then creates at that slot is a new file: a mapping of
    /// the old one would read zeros for ever.
    fn forget_unread_segment(&self, segment: &Arc<Segment>) {
        let removed = {
            let _creating = self.segment_creation.lock();
            self.segments.remove(segment.first_slot)
        };
        let guard = crossbeam_epoch::pin();
        guard.defer(move || drop(removed));
    }

    fn writers_superblock(&self) -> Result<superblock::Superblock> {
        let path = self.storage.path().join(superblock::SUPERBLOCK_FILE);
        match superblock::read(self.superblock_file.as_ref())
            .map_err(|error| Error::io(&path, "read", error))?
        {
            ReadOutcome::Valid(found, _) => Ok(found),
            _ => Err(Error::corruption(
                &path,
                0,
                "neither superblock copy is readable while following the store",
            )),
        }
    }

    /// Points the next-header check at `state.position`, or at nothing while its segment is
    /// not mapped.
    fn point_at_next_header(&self, follower: &Follower, state: &mut FollowState) {
        let guard = crossbeam_epoch::pin();
        let word = self
            .segments
            .get(state.position / self.slot_size, &guard)
            .filter(|segment| {
                let start = segment.first_slot * self.slot_size;
                let end = start + segment.length();
                // At a segment's start the file may yet be replaced (`forget_unread_segment`):
                // every look goes through the lock until a record is read there.
                state.position > start && end - state.position >= HEADER_BYTES as u64
            })
            .map(|segment| {
                let local = state.position - segment.first_slot * self.slot_size;
                // SAFETY: inside the mapping (checked above), which `current` keeps alive.
                let bytes = unsafe { segment.bytes_from(local) };
                (Arc::clone(segment), bytes[8..16].as_ptr() as *mut u64)
            });
        let (segment, word) = word.unzip();
        follower
            .next_header_version
            .store(word.unwrap_or(std::ptr::null_mut()), Ordering::Release);
        // After the pointer moved: the segment it pointed into stays in the table anyway.
        state.current = segment;
    }
}
