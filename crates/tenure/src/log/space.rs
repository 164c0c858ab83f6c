//! Space: an append takes its version only once the log space it writes is allocated, so a
//! full disk refuses a write before it changes anything, and the reserve held back for
//! deletes and compaction lets them go on (docs/design.md §6 "A full disk").

use std::sync::atomic::Ordering;

use super::completion::unpack;
use super::core::LogShared;
use super::placement::{self, Placement};
use super::record::HEADER_BYTES;
use super::segment::{is_out_of_space, Segment};
use crate::error::{Error, Result};

/// The allocation `stat` asks the policy about: one aligned step of the log's allocation.
const NEXT_ALLOCATION_BYTES: u64 = 2 << 20;

/// What an append is for, which decides whether it may use the reserve.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SpaceUse {
    /// A write that adds data: refused once allocating for it would leave less than the
    /// reserve free on the device, or take the store past its quota.
    Ordinary,
    /// A write that lets space be freed — a delete, an expiry, a container's deletion: it may
    /// use half the reserve (and go past the quota by as much). The other half stays for
    /// compaction, which is what turns deletes into free space.
    Deleting,
    /// Compaction's copies and the end of the segment it seals: may use all of the reserve
    /// (and go past the quota by up to the reserve).
    Compacting,
}

impl SpaceUse {
    /// The part of the reserve this use must leave free.
    fn reserve_kept_bytes(self, reserve_bytes: u64) -> u64 {
        match self {
            SpaceUse::Ordinary => reserve_bytes,
            SpaceUse::Deleting => reserve_bytes / 2,
            SpaceUse::Compacting => 0,
        }
    }
}

/// The log's space state, for `stat`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SpaceState {
    /// Writes that add data are refused once the space the log has allocated is used: the
    /// policy would refuse its next allocation step.
    pub storage_full: bool,
    pub free_bytes: Option<u64>,
    pub reserve_bytes: u64,
    pub quota_bytes: Option<u64>,
    /// Bytes the store's segments take on disk.
    pub store_bytes: u64,
}

impl LogShared {
    /// Whether the log space `placement` writes is allocated: the common case, one shared
    /// load. A placement that ends a segment always takes the slow path (`make_room`).
    #[inline]
    pub(super) fn space_ready(&self, placement: &Placement) -> bool {
        placement.end_marker_before.is_none()
            && placement.new_tail <= self.ready_end.load(Ordering::Acquire)
    }

    /// Creates and allocates what `placement` writes, as far as `space_use` may, or refuses
    /// with `StorageFull`. Nothing is reserved yet, so a refusal changes nothing.
    pub(super) fn make_room(&self, placement: &Placement, space_use: SpaceUse) -> Result<()> {
        let _making_room = self.space_lock.lock();
        if let Some(marker) = placement.end_marker_before {
            let previous =
                self.segment_for(placement::slot_of(marker, self.slot_size), 1, space_use)?;
            self.allocate_within(&previous, marker + HEADER_BYTES as u64, space_use)?;
        }
        let segment = self.segment_for(
            placement::slot_of(placement.start, self.slot_size),
            placement.segment_slots,
            space_use,
        )?;
        self.allocate_within(&segment, placement.new_tail, space_use)?;
        drop(segment);
        self.advance_ready_end();
        Ok(())
    }

    /// Allocates `segment` through the global offset `end`, and a lead beyond as the policy
    /// allows (none for compaction's copies).
    fn allocate_within(&self, segment: &Segment, end: u64, space_use: SpaceUse) -> Result<()> {
        let segment_start = segment.first_slot * self.slot_size;
        let local_end = (end - segment_start).min(segment.length());
        let permit = |bytes| self.permits(bytes, space_use);
        let result = match space_use {
            SpaceUse::Compacting => segment.allocate_without_lead_to(local_end, &permit),
            SpaceUse::Ordinary | SpaceUse::Deleting => segment.allocate_to(local_end, &permit),
        };
        match result {
            Ok(()) => {
                if space_use == SpaceUse::Ordinary {
                    self.storage_full.store(false, Ordering::Release);
                }
                Ok(())
            }
            Err(error) if is_out_of_space(&error) => {
                if space_use == SpaceUse::Ordinary {
                    self.storage_full.store(true, Ordering::Release);
                }
                let needed_bytes = local_end.saturating_sub(segment.allocated_bytes());
                Err(self.storage_full_error(needed_bytes))
            }
            Err(error) => Err(Error::io(
                self.storage.path().join(&segment.name),
                "allocate",
                error,
            )),
        }
    }

    /// Raises `ready_end` to the end of the space allocated contiguously from the tail: the
    /// tail's segment and, while each is allocated to its end, the ones after it.
    fn advance_ready_end(&self) {
        let tail = unpack(self.reservation.load(Ordering::Acquire)).1;
        let mut ready = tail;
        let mut slot = placement::slot_of(tail, self.slot_size);
        while let Some(segment) = self.segments.get_owned(slot) {
            let allocated = segment.allocated_bytes();
            ready = ready.max(segment.first_slot * self.slot_size + allocated);
            if allocated < segment.length() {
                break;
            }
            slot = segment.first_slot + segment.slot_count;
        }
        self.ready_end.fetch_max(ready, Ordering::AcqRel);
    }

    /// Whether the policy lets the log allocate `bytes` more for `space_use`: it leaves the
    /// use's share of the reserve free on the device, and stays within the quota plus the
    /// share of the reserve the use may take.
    pub(super) fn permits(&self, bytes: u64, space_use: SpaceUse) -> bool {
        let policy = self.space_policy;
        let kept = space_use.reserve_kept_bytes(policy.reserve_bytes);
        if let Some(quota) = policy.quota_bytes {
            let limit = quota.saturating_add(policy.reserve_bytes - kept);
            if self.store_bytes().saturating_add(bytes) > limit {
                return false;
            }
        }
        if kept == 0 {
            return true;
        }
        // A device that cannot tell its free space is left to say ENOSPC itself.
        match self.storage.free_bytes() {
            Ok(Some(free)) => free >= bytes.saturating_add(kept),
            _ => true,
        }
    }

    /// Space is short: the last ordinary allocation was refused, or less than twice the
    /// reserve is free. Compaction then gives each removed segment's space back at once.
    pub(super) fn space_is_short(&self) -> bool {
        self.storage_full.load(Ordering::Acquire)
            || !self.permits(self.space_policy.reserve_bytes, SpaceUse::Ordinary)
    }

    /// Bytes the store's segments take on disk (what they have allocated).
    pub(super) fn store_bytes(&self) -> u64 {
        self.segments
            .all()
            .iter()
            .map(|segment| segment.allocated_bytes())
            .sum()
    }

    pub(super) fn space_state(&self) -> SpaceState {
        SpaceState {
            // Asked now, not remembered from the last refusal: space freed since (by
            // compaction or anything else) shows at once, and a store opened read-only
            // beside the writer sees what the writer would.
            storage_full: !self.permits(NEXT_ALLOCATION_BYTES, SpaceUse::Ordinary),
            free_bytes: self.storage.free_bytes().ok().flatten(),
            reserve_bytes: self.space_policy.reserve_bytes,
            quota_bytes: self.space_policy.quota_bytes,
            store_bytes: self.store_bytes(),
        }
    }

    fn storage_full_error(&self, needed_bytes: u64) -> Error {
        Error::StorageFull {
            path: self.storage.path().to_path_buf(),
            needed_bytes,
            free_bytes: self.storage.free_bytes().ok().flatten(),
            reserve_bytes: self.space_policy.reserve_bytes,
            store_bytes: self.store_bytes(),
            quota_bytes: self.space_policy.quota_bytes,
        }
    }
}
