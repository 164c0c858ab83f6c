//! An item slot's memory: one allocation that holds a reference count, the index key's length,
//! the head of the version chain, and the index key's bytes.
//!
//! ```text
//! 0            4             8                             16
//! | references | key length  | head: *Node or plain entry  | index key … |
//! | u32        | u32         |                             |             |
//! ```
//!
//! With a 24-byte key (a 32-byte index key) a slot is 48 bytes, taken from the slot arena
//! (`arena.rs`) without malloc's header and rounding. A slot has no room for a version node: a
//! key written once has a plain head (`plain.rs`), and other versions are nodes of their own.

use std::ptr::NonNull;
use std::sync::atomic::{AtomicU32, Ordering};

use crossbeam_epoch::Atomic;

use crate::base::arena;
use crate::index::version::VersionNode;

/// More references than this means a leak of counts (every holder is an index, a batch in
/// progress or an epoch callback): abort, as `std::sync::Arc` does, rather than wrap.
const MAXIMUM_REFERENCES: u32 = u32::MAX / 2;

/// The longest index key a slot holds (64 KiB: the container id and a key of up to 65,528
/// bytes). `Limits::max_key_bytes` is checked against it when a store opens.
pub(crate) const MAXIMUM_INDEX_KEY_BYTES: usize = 64 << 10;

/// The longest key any store takes (`Limits::max_key_bytes` is checked against it at open):
/// an index key, the 8-byte container id and the key, lives in a slot, whose size the slot
/// arena bounds.
pub(crate) const MAXIMUM_KEY_BYTES: usize = MAXIMUM_INDEX_KEY_BYTES - 8;
// A slot is at most the largest allocation of the slot arena.
const _: () = assert!(
    std::mem::size_of::<SlotHeader>() + MAXIMUM_INDEX_KEY_BYTES <= arena::MAXIMUM_ALLOCATION_BYTES
);

#[repr(C)]
pub(crate) struct SlotHeader {
    references: AtomicU32,
    /// The index key's length; never changes.
    length: u32,
    pub(crate) head: Atomic<VersionNode>,
}

const _: () = assert!(std::mem::size_of::<SlotHeader>() == 16);

impl Drop for SlotHeader {
    fn drop(&mut self) {
        // SAFETY: the last reference is gone: the slot is in no index and no epoch callback
        // holds it, so no guard can reach its chain.
        unsafe {
            let guard = crossbeam_epoch::unprotected();
            let mut current = self.head.load(Ordering::Relaxed, guard);
            // A plain head (or link) ends the chain and owns nothing.
            while let Some(node) = crate::index::plain::node_of(current) {
                let next = node.older.load(Ordering::Relaxed, guard);
                drop(current.into_owned());
                current = next;
            }
        }
    }
}

/// An item's place in the index: the head of its version chain and its index key (8-byte
/// big-endian container id, then the item key), in one allocation shared by both indexes
/// behind a thin pointer. One allocation instead of two (the key had its own box) saves a
/// cache miss on every key comparison and 32 bytes per key.
pub struct ItemSlot(NonNull<SlotHeader>);

// SAFETY: a slot is shared by reference count like an `Arc`; its key never changes, and its
// head is an atomic.
unsafe impl Send for ItemSlot {}
unsafe impl Sync for ItemSlot {}

impl ItemSlot {
    pub fn new(index_key: &[u8]) -> ItemSlot {
        assert!(
            index_key.len() <= MAXIMUM_INDEX_KEY_BYTES,
            "keys are checked against Limits::max_key_bytes, which is at most {MAXIMUM_INDEX_KEY_BYTES}"
        );
        let pointer = arena::allocate(std::mem::size_of::<SlotHeader>() + index_key.len())
            .cast::<SlotHeader>();
        // SAFETY: a fresh, 8-byte-aligned allocation: the header, then room for the key.
        unsafe {
            pointer.as_ptr().write(SlotHeader {
                references: AtomicU32::new(1),
                length: index_key.len() as u32,
                head: Atomic::null(),
            });
            std::ptr::copy_nonoverlapping(
                index_key.as_ptr(),
                key_pointer(pointer),
                index_key.len(),
            );
        }
        ItemSlot(pointer)
    }

    pub(crate) fn header(&self) -> &SlotHeader {
        // SAFETY: this reference keeps the allocation alive.
        unsafe { self.0.as_ref() }
    }

    pub fn index_key(&self) -> &[u8] {
        let length = self.header().length;
        // SAFETY: `new` copied that many bytes after the header; they never change.
        unsafe { std::slice::from_raw_parts(key_pointer(self.0), length as usize) }
    }

    /// The slot's arena handle, keeping this reference (`SlotView::from_handle` views it).
    pub(crate) fn handle(&self) -> arena::Handle {
        arena::handle_of(self.0.cast())
    }

    /// The slot's arena handle, owning one reference (`from_handle` takes it back): what
    /// the indexes keep, 4 bytes where a pointer takes 8.
    pub(crate) fn into_handle(self) -> arena::Handle {
        arena::handle_of(std::mem::ManuallyDrop::new(self).0.cast())
    }

    /// # Safety
    /// `handle` came from `into_handle`, and its reference is not taken back twice.
    pub(crate) unsafe fn from_handle(handle: arena::Handle) -> ItemSlot {
        // SAFETY: the caller's promise: a live slot's handle.
        ItemSlot(unsafe { arena::pointer_of(handle) }.cast())
    }

    /// Where the slot is, to prefetch.
    pub(crate) fn address(&self) -> *const u8 {
        self.0.as_ptr().cast_const().cast()
    }

    #[cfg(test)]
    pub(crate) fn same_slot(&self, other: &ItemSlot) -> bool {
        self.0 == other.0
    }

    #[cfg(test)]
    pub(crate) fn reference_count(&self) -> usize {
        self.header().references.load(Ordering::Acquire) as usize
    }
}

impl Clone for ItemSlot {
    fn clone(&self) -> ItemSlot {
        // Relaxed, as `Arc`: a new reference is made from an existing one, which keeps the
        // slot alive meanwhile.
        let previous = self.header().references.fetch_add(1, Ordering::Relaxed);
        if previous > MAXIMUM_REFERENCES {
            std::process::abort();
        }
        ItemSlot(self.0)
    }
}

impl Drop for ItemSlot {
    fn drop(&mut self) {
        // Release, then acquire by the last holder, as `Arc`: every use of the slot through
        // another reference happens before it is freed.
        if self.header().references.fetch_sub(1, Ordering::Release) != 1 {
            return;
        }
        std::sync::atomic::fence(Ordering::Acquire);
        // SAFETY: the last reference: nothing else can reach the allocation.
        unsafe {
            std::ptr::drop_in_place(self.0.as_ptr());
            arena::release(self.0.cast());
        }
    }
}

impl std::fmt::Debug for ItemSlot {
    fn fmt(&self, formatter: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        formatter
            .debug_struct("ItemSlot")
            .field("index_key", &self.index_key())
            .finish()
    }
}

/// Where the index key's bytes start: right after the header.
fn key_pointer(slot: NonNull<SlotHeader>) -> *mut u8 {
    // SAFETY (of the offset): every slot allocation is at least a header long.
    unsafe {
        slot.as_ptr()
            .cast::<u8>()
            .add(std::mem::size_of::<SlotHeader>())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_slot_keeps_its_key_and_counts_its_references() {
        for length in [0, 1, 31, 32, 64, 1032] {
            let index_key: Vec<u8> = (0..length).map(|index| (index * 7 % 251) as u8).collect();
            let slot = ItemSlot::new(&index_key);
            assert_eq!(slot.index_key(), index_key);
            let other = slot.clone();
            assert_eq!(slot.reference_count(), 2);
            let handle = other.into_handle();
            assert_eq!(slot.reference_count(), 2, "a handle owns its reference");
            // SAFETY: from `into_handle` just above, taken back once.
            let back = unsafe { ItemSlot::from_handle(handle) };
            assert!(back.same_slot(&slot));
            drop(back);
            assert_eq!(slot.reference_count(), 1);
        }
    }
}
