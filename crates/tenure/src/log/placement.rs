//! Where a record of a given size goes, given the log's tail. A pure function, so that the
//! compare-and-swap that reserves space decides everything in one step.

use super::record::HEADER_BYTES;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Placement {
    /// Global offset of the record.
    pub start: u64,
    /// The log's tail after this record: the record's end, or the next slot boundary when the
    /// record has a segment to itself.
    pub new_tail: u64,
    /// Slots the segment that holds the record covers (1 unless the record is larger).
    pub segment_slots: u64,
    /// Where a `SegmentEnd` marker goes in the segment the tail leaves, if it leaves one with
    /// room for a header.
    pub end_marker_before: Option<u64>,
    /// Where a `SegmentEnd` marker goes after a record that has a segment of its own.
    pub end_marker_after: Option<u64>,
}

/// The slot that holds global offset `offset`. Slot sizes are multiples of 4096 and, by
/// default and in every test, powers of two: then a shift. Why: a 64-bit division takes
/// 15 cycles or more, and an append and a read did a dozen between them (finding segments,
/// placing records).
#[inline]
pub fn slot_of(offset: u64, slot_size: u64) -> u64 {
    if slot_size.is_power_of_two() {
        offset >> slot_size.trailing_zeros()
    } else {
        offset / slot_size
    }
}

/// Where global offset `offset` lies in its slot (see [`slot_of`]).
#[inline]
pub fn offset_in_slot(offset: u64, slot_size: u64) -> u64 {
    if slot_size.is_power_of_two() {
        offset & (slot_size - 1)
    } else {
        offset % slot_size
    }
}

/// Places a record of `size` bytes (already aligned) at `tail` in slots of `slot_size` bytes.
pub fn place(tail: u64, size: u64, slot_size: u64) -> Placement {
    let offset_in_slot = offset_in_slot(tail, slot_size);
    let slot_end = tail - offset_in_slot + slot_size;
    let header = HEADER_BYTES as u64;
    let marker_if_room = |at: u64, end: u64| (end - at >= header).then_some(at);
    if size <= slot_size {
        if tail + size <= slot_end {
            return Placement {
                start: tail,
                new_tail: tail + size,
                segment_slots: 1,
                end_marker_before: None,
                end_marker_after: None,
            };
        }
        return Placement {
            start: slot_end,
            new_tail: slot_end + size,
            segment_slots: 1,
            end_marker_before: marker_if_room(tail, slot_end),
            end_marker_after: None,
        };
    }
    // A record larger than a slot gets a segment of its own, starting at a boundary.
    let (start, end_marker_before) = if offset_in_slot == 0 {
        (tail, None)
    } else {
        (slot_end, marker_if_room(tail, slot_end))
    };
    let segment_slots = size.div_ceil(slot_size);
    let segment_end = start + segment_slots * slot_size;
    Placement {
        start,
        new_tail: segment_end,
        segment_slots,
        end_marker_before,
        end_marker_after: marker_if_room(start + size, segment_end),
    }
}

/// Places a record of `size` bytes (already aligned, at most a slot) at the start of the slot
/// after the one `tail` is in: the current segment ends there, sealed. A tail already on a slot
/// boundary stays (the segment before it is complete).
pub fn place_in_next_slot(tail: u64, size: u64, slot_size: u64) -> Placement {
    assert!(size <= slot_size, "a record that starts a slot fits in it");
    let offset_in_slot = offset_in_slot(tail, slot_size);
    if offset_in_slot == 0 {
        return place(tail, size, slot_size);
    }
    let slot_end = tail - offset_in_slot + slot_size;
    let header = HEADER_BYTES as u64;
    Placement {
        start: slot_end,
        new_tail: slot_end + size,
        segment_slots: 1,
        end_marker_before: (slot_end - tail >= header).then_some(tail),
        end_marker_after: None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The shift and mask of a power-of-two slot size agree with division, as does the
    /// division kept for other multiples of 4096.
    #[test]
    fn slot_arithmetic_agrees_with_division_for_every_slot_size() {
        for slot_size in [4096u64, 12_288, 64 << 10, 3 << 20, 64 << 20, 1 << 40] {
            for offset in [0u64, 1, 4095, 4096, 12_287, 12_288, 1 << 33, u64::MAX - 7] {
                assert_eq!(slot_of(offset, slot_size), offset / slot_size);
                assert_eq!(offset_in_slot(offset, slot_size), offset % slot_size);
            }
        }
    }

    #[test]
    fn next_slot_placement_leaves_the_current_slot() {
        let placement = place_in_next_slot(100, 64, 1024);
        assert_eq!((placement.start, placement.new_tail), (1024, 1088));
        assert_eq!(placement.end_marker_before, Some(100));
        // Too little room left for a marker: the slot's end is left as it is.
        let placement = place_in_next_slot(1020, 64, 1024);
        assert_eq!((placement.start, placement.end_marker_before), (1024, None));
        // On a boundary the record goes right there.
        let placement = place_in_next_slot(2048, 64, 1024);
        assert_eq!((placement.start, placement.new_tail), (2048, 2112));
    }

    #[test]
    fn fits_in_the_current_slot() {
        let placement = place(100, 64, 1024);
        assert_eq!((placement.start, placement.new_tail), (100, 164));
        assert_eq!(placement.end_marker_before, None);
    }

    #[test]
    fn exact_fill_then_next_slot() {
        assert_eq!(place(960, 64, 1024).new_tail, 1024);
        let next = place(1024, 64, 1024);
        assert_eq!((next.start, next.new_tail), (1024, 1088));
    }

    #[test]
    fn rolls_over_with_and_without_room_for_a_marker() {
        let with_room = place(1000, 64, 1024);
        assert_eq!(with_room.start, 1024);
        assert_eq!(with_room.end_marker_before, Some(1000));
        let rolled = place(992, 64, 1024);
        assert_eq!((rolled.start, rolled.end_marker_before), (1024, Some(992)));
        let no_room = place(1008, 64, 1024);
        assert_eq!((no_room.start, no_room.end_marker_before), (1024, None));
    }

    #[test]
    fn large_records_take_whole_slots() {
        let large = place(100, 2500, 1024);
        assert_eq!(large.start, 1024);
        assert_eq!(large.segment_slots, 3);
        assert_eq!(large.new_tail, 1024 + 3 * 1024);
        assert_eq!(large.end_marker_before, Some(100));
        assert_eq!(large.end_marker_after, Some(1024 + 2500));
        let at_boundary = place(2048, 2048, 1024);
        assert_eq!((at_boundary.start, at_boundary.new_tail), (2048, 4096));
        assert_eq!(at_boundary.end_marker_after, None);
    }
}
