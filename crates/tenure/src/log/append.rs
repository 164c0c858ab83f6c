//! Appending: reserving a record's version and space, completing it, and finding the segment
//! that holds an offset.

use std::sync::atomic::Ordering;
use std::sync::Arc;

use crossbeam_epoch::Guard;
use crossbeam_utils::Backoff;

use super::completion::{pack, unpack};
use super::core::*;
use super::placement;
use super::record::{self, RecordHeader, RecordKind, HEADER_BYTES};
use super::segment::Segment;
use super::space::SpaceUse;
use crate::error::{Error, Result};
use crate::types::Version;

impl LogShared {
    pub(super) fn check_writable(&self) -> Result<()> {
        if self.closed.load(Ordering::Acquire) {
            return Err(Error::Closed);
        }
        if self.read_only {
            return Err(Error::rejected(crate::error::ErrorCode::ReadOnly));
        }
        if self.poisoned.load(Ordering::Acquire) {
            let poisoned = self.flush.lock().poisoned.clone();
            return Err(poisoned.unwrap_or(Error::Closed));
        }
        if self.generation_pending.load(Ordering::Acquire) {
            self.make_generation_durable()?;
        }
        Ok(())
    }

    /// Syncs the superblock with this open's generation, unless done (`generation_pending`).
    /// A failure poisons the log, as a failed flush does (docs/spec.md §11).
    #[cold]
    pub(super) fn make_generation_durable(&self) -> Result<()> {
        let mut state = self.superblock.lock();
        if !self.generation_pending.load(Ordering::Acquire) {
            return Ok(());
        }
        let synced = super::recovery::make_generation_durable(
            self.storage.as_ref(),
            self.superblock_file.as_ref(),
            &mut state,
        );
        match synced {
            Ok(()) => {
                self.generation_pending.store(false, Ordering::Release);
                Ok(())
            }
            Err(error) => {
                drop(state);
                self.poison(error.clone());
                Err(error)
            }
        }
    }

    pub(super) fn reserve(
        &self,
        payload_length: usize,
        place: fn(u64, u64, u64) -> placement::Placement,
        space_use: SpaceUse,
    ) -> Result<Reservation<'_>> {
        self.check_writable()?;
        if payload_length as u64 > MAXIMUM_PAYLOAD_BYTES {
            return Err(Error::invalid(
                "payload",
                format!(
                    "a record holds at most {MAXIMUM_PAYLOAD_BYTES} bytes, got {payload_length}"
                ),
            ));
        }
        let size = record::record_size(payload_length as u64);
        let backoff = Backoff::new();
        // The reservation word for which `make_room` prepared the placement: a retry that
        // finds the word unchanged places the record there again, and need not check again.
        let mut room_made_for = None;
        let (version, placement) = loop {
            let current = self.reservation.load(Ordering::Acquire);
            let (version, tail) = unpack(current);
            if version % IN_FLIGHT_CHECK_STRIDE == 0 {
                // Versions are taken in order, so this checker stands before the next
                // `IN_FLIGHT_CHECK_STRIDE - 1` versions, and leaves room for them.
                let (completed_version, _) = self.completion.load();
                let in_flight =
                    (version + IN_FLIGHT_CHECK_STRIDE).saturating_sub(completed_version);
                if in_flight > self.completion.slot_count() {
                    // Too many records in flight: let earlier appenders finish their copies.
                    // Completing a record publishes it without a fence, so the last one to
                    // complete may not have seen its successors' slots: advance for them.
                    self.advance_completion();
                    Self::wait_step(&backoff);
                    continue;
                }
            }
            let placement = place(tail, size, self.slot_size);
            if room_made_for != Some(current) && !self.space_ready(&placement) {
                // Before the version is taken: a refusal here changes nothing.
                self.make_room(&placement, space_use)?;
                room_made_for = Some(current);
                continue;
            }
            let next = pack(version + 1, placement.new_tail);
            if self
                .reservation
                // Sequentially consistent: a writer checks for snapshots after it, and a new
                // snapshot reads the last reserved version (`Engine::snapshot`).
                .compare_exchange_weak(current, next, Ordering::SeqCst, Ordering::Acquire)
                .is_ok()
            {
                break (version, placement);
            }
            backoff.spin();
        };
        self.completion.prefetch_successor_slot(version);
        self.ask_ahead(placement.new_tail);
        let result = self.prepare_segments(version, &placement, space_use);
        let segment = match result {
            Ok(segment) => segment,
            Err(error) => {
                // The version is taken; without a record the log could never move past it.
                self.poison(error.clone());
                return Err(error);
            }
        };
        Ok(Reservation {
            log: self,
            segment,
            version,
            start: placement.start,
            new_tail: placement.new_tail,
            payload_length,
            payload_written: None,
            staged: None,
            finished: false,
        })
    }

    pub(crate) fn index_version(&self, version: Version, offset: u64) {
        let mut index = self.version_index.lock();
        let at = index.partition_point(|(indexed, _)| *indexed < version);
        index.insert(at, (version, offset));
    }

    pub(super) fn notify_watchers(&self) {
        if self.watchers.load(Ordering::Acquire) > 0 {
            let _lock = self.watch_lock.lock();
            self.watch_changed.notify_all();
        }
    }

    pub(super) fn wait_step(backoff: &Backoff) {
        if backoff.is_completed() {
            std::thread::yield_now();
        } else {
            backoff.snooze();
        }
    }

    pub(super) fn write_end_marker(
        &self,
        segment: &Segment,
        global_offset: u64,
        next_version: Version,
    ) {
        let mut header = [0u8; HEADER_BYTES];
        let fields = RecordHeader {
            payload_length: 0,
            version: next_version,
            generation: self.generation,
            kind: RecordKind::SegmentEnd,
        };
        record::encode_header(&mut header, fields, &[]);
        let local = global_offset - segment.first_slot * self.slot_size;
        // SAFETY: the marker lies in the range between the old tail and the slot boundary,
        // which this appender's reservation skipped and so owns.
        unsafe { segment.write(local, &header) };
    }

    pub(super) fn segment_for(
        &self,
        slot: u64,
        slot_count: u64,
        space_use: SpaceUse,
    ) -> Result<SegmentHold> {
        let guard = crossbeam_epoch::pin();
        if let Some(segment) = self.segments.get(slot, &guard) {
            if segment.slot_count >= slot_count {
                let segment = std::ptr::NonNull::from(&**segment);
                return Ok(SegmentHold::Borrowed {
                    segment,
                    _guard: guard,
                });
            }
        }
        drop(guard);
        let _creating = self.segment_creation.lock();
        if let Some(segment) = self.segments.get_owned(slot) {
            if segment.slot_count >= slot_count {
                return Ok(SegmentHold::Owned(segment));
            }
            // A one-slot segment prepared ahead, where a record larger than a slot now starts.
            // Nothing was written to it (the large record takes its segment alone), so it is
            // replaced: unlinked (a reader could still hold its mapping until its epoch ends)
            // and created afresh, larger.
            assert_eq!(
                segment.first_slot, slot,
                "a larger record starts at a segment boundary"
            );
            let name = segment.name.clone();
            drop(segment);
            drop(self.segments.remove(slot));
            self.storage
                .remove(&name)
                .map_err(|error| Error::io(self.storage.path().join(&name), "remove", error))?;
        }
        self.create_segment_locked(slot, slot_count, space_use)
            .map(SegmentHold::Owned)
    }

    pub(super) fn segment_of(&self, global_offset: u64, guard: &Guard) -> Result<Arc<Segment>> {
        self.segments
            .get(placement::slot_of(global_offset, self.slot_size), guard)
            .cloned()
            .ok_or_else(|| {
                Error::corruption(
                    self.storage.path(),
                    global_offset,
                    "no segment holds this log offset",
                )
            })
    }

    /// The segment that holds global offset `offset`, and the offset within it.
    pub(super) fn segment_at<'g>(
        &self,
        offset: u64,
        guard: &'g Guard,
    ) -> Option<(&'g Arc<Segment>, u64)> {
        let segment = self
            .segments
            .get(placement::slot_of(offset, self.slot_size), guard)?;
        Some((segment, offset - segment.first_slot * self.slot_size))
    }

    pub(super) fn payload<'g>(&self, location: u64, guard: &'g Guard) -> Result<&'g [u8]> {
        let Some((segment, local)) = self.segment_at(location, guard) else {
            return Err(Error::corruption(
                self.storage.path(),
                location,
                "no segment holds this log offset",
            ));
        };
        // SAFETY: callers ask only for records they found through the index, which holds
        // complete records only.
        let bytes = unsafe { segment.bytes_from(local) };
        let (_, payload) = record::decode(bytes).map_err(|reason| {
            Error::corruption(self.storage.path().join(&segment.name), local, reason)
        })?;
        Ok(payload)
    }

    pub(super) fn complete(&self, version: Version, start_offset: u64, end_offset: u64) {
        let advanced_to = self.completion.complete(version, start_offset, end_offset);
        self.publish_completed(advanced_to);
    }

    pub(super) fn advance_completion(&self) {
        let advanced_to = self.completion.advance();
        self.publish_completed(advanced_to);
    }

    /// In `buffered` mode a complete prefix is visible at once: the visible version is the
    /// completed word itself (`visible_version`), so there is only watchers to wake.
    pub(super) fn publish_completed(&self, advanced_to: Option<Version>) {
        if let (Some(_), Durability::Buffered) = (advanced_to, self.durability) {
            self.notify_watchers();
        }
    }

    /// The newest version readers may see: the completed prefix in `buffered` mode (one
    /// shared word fewer for every append to write), the durable one in `sync` mode.
    pub(super) fn visible_version(&self) -> Version {
        match self.durability {
            Durability::Buffered => self.completion.load().0,
            Durability::Sync => self.visible.load(Ordering::Acquire),
        }
    }

    pub(super) fn wait_completed(&self, version: Version) {
        let backoff = Backoff::new();
        while self.completion.load().0 < version {
            // A poisoned log may hold a version that never completes (its reservation failed);
            // the caller finds the poison in the flush state.
            if self.poisoned.load(Ordering::Acquire) {
                return;
            }
            self.advance_completion();
            Self::wait_step(&backoff);
        }
    }
}
