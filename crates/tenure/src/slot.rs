//! An item slot's memory: one allocation that holds a reference count, the index key's length,
//! the head of the version chain, room for one version node, and the index key's bytes.
//!
//! ```text
//! 0            4                      8              16                      72
//! | references | key length + room   | head: *Node  | room: one VersionNode  | index key … |
//! | u32        | taken (top bit), u32 |              | (56 B, maybe unused)   |             |
//! ```
//!
//! With a 24-byte key (a 32-byte index key) a slot is 104 bytes, taken from the slot arena
//! (`arena.rs`) without malloc's header and rounding. (`triomphe::ThinArc`, which this
//! replaced, kept a 64-bit count and a 64-bit length: 120 bytes and a 128-byte malloc chunk;
//! this layout from malloc took a 112-byte chunk.)

use std::cell::UnsafeCell;
use std::mem::MaybeUninit;
use std::ptr::NonNull;
use std::sync::atomic::{AtomicU32, Ordering};

use crossbeam_epoch::Atomic;

use crate::arena;
use crate::index::VersionNode;

/// The bit of `SlotHeader::length_and_room` that says the room holds a node.
const ROOM_TAKEN: u32 = 1 << 31;

/// More references than this means a leak of counts (every holder is an index, a batch in
/// progress or an epoch callback): abort, as `std::sync::Arc` does, rather than wrap.
const MAXIMUM_REFERENCES: u32 = u32::MAX / 2;

/// The longest index key a slot holds: a slot is at most the largest allocation of the slot
/// arena. `Limits::max_key_bytes` is checked against it when a store opens.
pub(crate) const MAXIMUM_INDEX_KEY_BYTES: usize =
    arena::MAXIMUM_ALLOCATION_BYTES - std::mem::size_of::<SlotHeader>();
// Its length also fits the 31 bits beside the room's flag.
const _: () = assert!(MAXIMUM_INDEX_KEY_BYTES < ROOM_TAKEN as usize);

#[repr(C)]
pub(crate) struct SlotHeader {
    references: AtomicU32,
    /// The index key's length, and in the top bit whether `room` holds a node (set by the
    /// installer that claims it; cleared by the epoch once the node is unlinked and no reader
    /// can still hold it: `ItemSlot::retire`).
    length_and_room: AtomicU32,
    pub(crate) head: Atomic<VersionNode>,
    /// Room for one version node in the slot's own allocation. An install takes it when it is
    /// free, so the newest version usually lives here: a get or a walk reads slot and version
    /// from adjacent cache lines instead of following a pointer to a node of its own, and a
    /// key written once costs one allocation.
    pub(crate) room: UnsafeCell<MaybeUninit<VersionNode>>,
}

const _: () = assert!(std::mem::size_of::<SlotHeader>() == 72);

impl Drop for SlotHeader {
    fn drop(&mut self) {
        let room: *const VersionNode = self.room.get().cast();
        // SAFETY: the last reference is gone: the slot is in no index and no epoch callback
        // holds it, so no guard can reach its chain.
        unsafe {
            let guard = crossbeam_epoch::unprotected();
            let mut current = self.head.load(Ordering::Relaxed, guard);
            while !current.is_null() {
                let next = current.deref().older.load(Ordering::Relaxed, guard);
                if !std::ptr::eq(current.as_raw(), room) {
                    drop(current.into_owned());
                }
                current = next;
            }
            if *self.length_and_room.get_mut() & ROOM_TAKEN != 0 {
                self.room.get_mut().assume_init_drop();
            }
        }
    }
}

/// An item's place in the index: the head of its version chain and its index key (8-byte
/// big-endian container id, then the item key), in one allocation shared by both indexes
/// behind a thin pointer. One allocation instead of two (the key had its own box) saves a
/// cache miss on every key comparison and 32 bytes per key.
pub struct ItemSlot(NonNull<SlotHeader>);

// SAFETY: a slot is shared by reference count like an `Arc`. The room is written only by
// the installer holding its claim, before a release compare-and-swap publishes it in `head`,
// and dropped only by the epoch callback that clears the claim once nothing can reach it;
// everything else reads it through `head`, like any other node.
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
                length_and_room: AtomicU32::new(index_key.len() as u32),
                head: Atomic::null(),
                room: UnsafeCell::new(MaybeUninit::uninit()),
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
        let length = self.header().length_and_room.load(Ordering::Relaxed) & !ROOM_TAKEN;
        // SAFETY: `new` copied that many bytes after the header; they never change.
        unsafe { std::slice::from_raw_parts(key_pointer(self.0), length as usize) }
    }

    /// Claims the room; false when it holds a node already.
    pub(crate) fn claim_room(&self) -> bool {
        let word = &self.header().length_and_room;
        // A plain load first: an update of a key whose room holds a live version (the common
        // case once a key is rewritten) then skips the locked read-modify-write.
        if word.load(Ordering::Relaxed) & ROOM_TAKEN != 0 {
            return false;
        }
        // Acquire: the drop of the room's previous node (before its release) happens first.
        word.fetch_or(ROOM_TAKEN, Ordering::Acquire) & ROOM_TAKEN == 0
    }

    /// Frees the room for the next claim, its node already dropped.
    pub(crate) fn release_room(&self) {
        self.header()
            .length_and_room
            .fetch_and(!ROOM_TAKEN, Ordering::Release);
    }

    #[cfg(test)]
    pub(crate) fn room_is_taken(&self) -> bool {
        self.header().length_and_room.load(Ordering::Acquire) & ROOM_TAKEN != 0
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
            // The room's flag shares the length's word and leaves the key alone.
            assert!(slot.claim_room());
            assert!(!slot.claim_room(), "taken once");
            assert_eq!(slot.index_key(), index_key);
            slot.release_room();
            assert!(!slot.room_is_taken());
            // The room holds no node, so the slot's drop must not drop one: a taken room
            // with no node in it would be a bug the AddressSanitizer run reports.
        }
    }
}
