//! The segment preparer: creates segments and allocates and faults in space ahead of the
//! tail, so appenders find it ready.

use std::sync::atomic::Ordering;
use std::sync::Arc;

use super::completion::unpack;
use super::core::*;
use super::placement;
use super::record::HEADER_BYTES;
use super::recovery;
use super::segment::Segment;
use super::space::SpaceUse;
use crate::error::{Error, Result};
use crate::types::Version;

impl LogShared {
    /// Once the tail is past the middle of its slot, asks the preparer for the next slot's
    /// segment, so the appender that rolls over finds it created, allocated and pre-faulted.
    pub(super) fn ask_ahead(&self, tail: u64) {
        let slot = placement::slot_of(tail, self.slot_size);
        let past_middle = placement::offset_in_slot(tail, self.slot_size) > self.slot_size / 2;
        let next = slot + 1;
        // The relaxed load keeps the common case to one shared read; `fetch_max` elects
        // exactly one asker per slot.
        if past_middle
            && self.prepared_slot.load(Ordering::Relaxed) < next
            && self.prepared_slot.fetch_max(next, Ordering::AcqRel) < next
        {
            self.preparer_request.lock().segment_slot = Some(next);
            self.preparer_wake.notify_one();
        }
    }

    pub(super) fn prepare_segments_ahead(&self) {
        // Between requests the preparer faults in the log ahead of the tail a step at a time
        // (`fault_in_ahead_step`), until `FAULT_IN_LEAD_BYTES` past it are; a request, which
        // the tail's progress brings, sets it going again. A step at a time, because a step
        // can take tens of ms (zero-filling fresh memory), while an allocation request for
        // the segment the appends are in is due within milliseconds. Done at once, a new
        // segment's zero-filling held up those requests until the appender overtook the
        // pages faulted in and ran read-ahead itself: a put of 10–25 ms at every segment.
        // Nothing is faulted in before the first request: a store opened to be read appends
        // nothing.
        let mut faulting_in = false;
        loop {
            let work = {
                let mut request = self.preparer_request.lock();
                while !request.stop
                    && request.segment_slot.is_none()
                    && request.allocation.is_none()
                    && !faulting_in
                {
                    self.preparer_wake.wait(&mut request);
                }
                std::mem::take(&mut *request)
            };
            if work.stop {
                return;
            }
            if let Some((segment, end, allocate_lead)) = work.allocation {
                if allocate_lead && self.appending_apart.load(Ordering::Relaxed) {
                    // Space only (`appending_apart`): a failure is the appender's to meet.
                    let _ =
                        segment.allocate_to(end, &|bytes| self.permits(bytes, SpaceUse::Ordinary));
                } else if allocate_lead {
                    segment.prepare_ahead(end, &|bytes| self.permits(bytes, SpaceUse::Ordinary));
                } else {
                    // Compaction's copies allocate no lead: fault in what they allocated.
                    segment.prefault_ahead(end);
                }
                faulting_in = true;
            }
            if let Some(slot) = work.segment_slot {
                self.prepare_segment_ahead(slot);
                faulting_in = true;
                continue;
            }
            if faulting_in {
                faulting_in = self.fault_in_ahead_step();
            }
        }
    }

    /// One step of faulting in the log ahead of the tail (`Segment::fault_in_next_step`): in
    /// the tail's segment, then in the one made ahead of it, as far past the tail as has
    /// been appended since the log was opened, up to `FAULT_IN_LEAD_BYTES`. Returns whether
    /// it did a step (more may remain).
    pub(super) fn fault_in_ahead_step(&self) -> bool {
        if self.appending_apart.load(Ordering::Relaxed) {
            return false;
        }
        let tail = unpack(self.reservation.load(Ordering::Acquire)).1;
        // A store that has appended little needs little faulted in: many small stores must
        // not each zero-fill a whole lead.
        let lead = tail
            .saturating_sub(self.tail_at_open)
            .min(FAULT_IN_LEAD_BYTES);
        let limit = tail + lead;
        let tail_slot = placement::slot_of(tail, self.slot_size);
        for slot in tail_slot..=tail_slot + 1 {
            // Owned, not borrowed under a guard: a step can take long, and a pinned thread
            // would hold back the removal of compacted segments meanwhile.
            let Some(segment) = self.segments.get_owned(slot) else {
                break;
            };
            let start = segment.first_slot * self.slot_size;
            if start >= limit {
                break;
            }
            if segment.fault_in_next_step(tail.saturating_sub(start), limit - start) {
                return true;
            }
        }
        false
    }

    /// Makes sure the segment of the record exists and writes the `SegmentEnd` markers.
    pub(super) fn prepare_segments(
        &self,
        version: Version,
        placement: &placement::Placement,
        space_use: SpaceUse,
    ) -> Result<SegmentHold> {
        let segment = self.segment_for(
            placement::slot_of(placement.start, self.slot_size),
            placement.segment_slots,
            space_use,
        )?;
        self.ensure_allocated(&segment, placement.new_tail, space_use)?;
        if let Some(marker) = placement.end_marker_before {
            let previous =
                self.segment_for(placement::slot_of(marker, self.slot_size), 1, space_use)?;
            self.ensure_allocated(&previous, marker + HEADER_BYTES as u64, space_use)?;
            self.write_end_marker(&previous, marker, version);
        }
        if let Some(marker) = placement.end_marker_after {
            self.write_end_marker(&segment, marker, version + 1);
        }
        Ok(segment)
    }

    /// Device space for `segment` up to the global offset `end`; the next step is left to the
    /// preparer thread when the end comes near — for compaction's copies, which allocate no
    /// lead (`Segment::allocate_without_lead_to`), only the faulting in of what is allocated.
    pub(super) fn ensure_allocated(
        &self,
        segment: &Segment,
        end: u64,
        space_use: SpaceUse,
    ) -> Result<()> {
        let local_end = (end - segment.first_slot * self.slot_size).min(segment.length());
        let ask_ahead = segment.ensure_allocated(local_end).map_err(|error| {
            Error::io(self.storage.path().join(&segment.name), "allocate", error)
        })?;
        if ask_ahead {
            if let Some(owned) = self.segments.get_owned(segment.first_slot) {
                let allocate_lead = space_use != SpaceUse::Compacting;
                self.preparer_request.lock().allocation = Some((owned, local_end, allocate_lead));
                self.preparer_wake.notify_one();
            }
        }
        Ok(())
    }

    /// The preparer's creation of the segment at `slot`, ahead of need. Its request can be
    /// stale by the time it runs: appenders may already have created that segment, filled it,
    /// and compaction removed it; creating it then would bring back a segment below the log's
    /// first slot (seen as "only the oldest of several segments can be removed" in a test with
    /// 64 KiB segments and fast lease actions). So, under the creation lock, it creates the
    /// segment only while the tail has not reached it.
    /// Creates the segment of `slot` unless the tail is past it or it exists (the preparer
    /// then faults it in: `fault_in_ahead_step`).
    pub(super) fn prepare_segment_ahead(&self, slot: u64) {
        let _creating = self.segment_creation.lock();
        let tail = unpack(self.reservation.load(Ordering::Acquire)).1;
        if slot * self.slot_size < tail || self.segments.get_owned(slot).is_some() {
            return;
        }
        // A failure here is not the preparer's to report: the appender that needs the
        // segment creates it itself and meets the error.
        let _ = self.create_segment_locked(slot, 1, SpaceUse::Ordinary);
    }

    /// Creates and maps the segment, allocating what `space_use` may; the caller holds
    /// `segment_creation`.
    pub(super) fn create_segment_locked(
        &self,
        slot: u64,
        slot_count: u64,
        space_use: SpaceUse,
    ) -> Result<Arc<Segment>> {
        let segment = Arc::new(recovery::create_segment(
            self.storage.as_ref(),
            slot,
            slot_count,
            self.slot_size,
            self.durability,
            &|bytes| self.permits(bytes, space_use),
            space_use != SpaceUse::Compacting,
        )?);
        self.segments.insert(Arc::clone(&segment));
        Ok(segment)
    }
}
