//! A slot's head word: a pointer to a version node, or a plain head — the value offset of a
//! plain entry in the log (`plain.rs`), tagged so no one takes it for a pointer.

use crossbeam_epoch::Shared;

/// The tag of a plain head (node pointers are 8-byte aligned and untagged).
const PLAIN_TAG: usize = 1;
/// The tag of a *pending* plain head: a batch's first version of a key, not committed yet.
/// Readers pass it (nothing is older), writers wait for it, as for a pending node; the batch
/// then retags it plain, or takes it back to null. A batch of new keys allocates nothing.
const PENDING_PLAIN_TAG: usize = 3;
/// Value offsets are stored shifted past the head word's tag bits.
const OFFSET_SHIFT: u32 = 3;

/// The head word naming the entry whose value starts at `value_offset`.
pub(crate) fn head<'g, T>(value_offset: u64) -> Shared<'g, T> {
    assert!(
        value_offset < 1 << (usize::BITS - OFFSET_SHIFT),
        "log offsets stay below 2^61"
    );
    Shared::from((value_offset << OFFSET_SHIFT) as usize as *const T).with_tag(PLAIN_TAG)
}

/// The head word of a pending plain head naming that entry.
pub(crate) fn pending_head<'g, T>(value_offset: u64) -> Shared<'g, T> {
    head(value_offset).with_tag(PENDING_PLAIN_TAG)
}

/// The value offset a plain head names; `None` for a node pointer, null or a pending plain
/// head.
pub(crate) fn offset_of<T>(head: Shared<'_, T>) -> Option<u64> {
    (head.tag() == PLAIN_TAG).then(|| (head.as_raw() as usize as u64) >> OFFSET_SHIFT)
}

/// Whether `head` is a pending plain head.
pub(crate) fn is_pending<T>(head: Shared<'_, T>) -> bool {
    head.tag() == PENDING_PLAIN_TAG
}

/// The value offset a pending plain head names.
pub(crate) fn pending_offset_of<T>(head: Shared<'_, T>) -> Option<u64> {
    is_pending(head).then(|| (head.as_raw() as usize as u64) >> OFFSET_SHIFT)
}

/// Whether `head` is a node pointer or null: neither plain nor pending plain.
pub(crate) fn is_node_or_null<T>(head: Shared<'_, T>) -> bool {
    head.tag() == 0
}
