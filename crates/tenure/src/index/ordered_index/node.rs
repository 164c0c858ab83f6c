//! The tree's nodes: their layout, the optimistic version lock in each header, search,
//! splits, and their allocation.

use crate::base::arena::Handle;
use crate::base::sync::{fence, AtomicU32, AtomicU64, Ordering};
use crate::index::slot::ItemSlot;
use std::cmp::Ordering as KeyOrder;
use std::mem::ManuallyDrop;

/// Entries per leaf and separators per inner node. 32 heads fill 2 cache lines. (Small under shuttle, so a few keys split nodes.)
#[cfg(not(feature = "shuttle"))]
pub(super) const CAPACITY: usize = 32;
#[cfg(feature = "shuttle")]
pub(super) const CAPACITY: usize = 3;

/// How far ahead of the entry it yields a walk starts loading a slot, and a slot's newest
/// version node (whose slot it started loading earlier).
pub(super) const PREFETCH_SLOT_AHEAD: usize = 4;
pub(super) const PREFETCH_NODE_AHEAD: usize = 2;

/// A node's version word while a writer holds it.
pub(super) const LOCKED: u64 = 1;

/// The reason to start an operation over from the root: a node changed under a reader, or a
/// writer could not take a lock without waiting.
pub(super) struct Restart;

/// The part every node starts with. `#[repr(C)]` and first in both kinds of node, so a node
/// pointer is a `Header` pointer and its `height` says which kind it is.
#[repr(C)]
pub(super) struct Header {
    /// Even when free; a writer makes it odd, and even again (2 higher) when it is done.
    pub(super) version: AtomicU64,
    /// Entries (leaf) or separators (inner node) in use.
    pub(super) count: AtomicU64,
    /// How many leading bytes every key this node can ever hold shares; heads start after.
    pub(super) prefix_length: AtomicU64,
    /// Slot handles of the node's fence keys (not owned; 0: unbounded): every key it holds
    /// is ≥ the low fence and < the high one. Read only by a writer holding the node.
    pub(super) low_fence: AtomicU32,
    pub(super) high_fence: AtomicU32,
    /// 0 for a leaf. Never changes.
    pub(super) height: u64,
}

#[repr(C)]
pub(super) struct Leaf {
    pub(super) header: Header,
    /// The right sibling (a `Leaf`), or 0 for the last leaf.
    pub(super) next: AtomicU64,
    pub(super) heads: [AtomicU32; CAPACITY],
    /// Slot handles, each owning one reference to its slot (`ItemSlot::into_handle`).
    pub(super) slots: [AtomicU32; CAPACITY],
}

#[repr(C)]
pub(super) struct Inner {
    pub(super) header: Header,
    pub(super) heads: [AtomicU32; CAPACITY],
    /// Slot handles of the separating keys (not owned: a leaf holds each slot). Child `i`
    /// holds the keys ≥ separator `i − 1` and < separator `i`.
    pub(super) separators: [AtomicU32; CAPACITY],
    pub(super) children: [AtomicU64; CAPACITY + 1],
}

#[cfg(not(feature = "shuttle"))]
const _: () = assert!(std::mem::size_of::<Leaf>() == 304 && std::mem::size_of::<Inner>() == 560);

pub(super) fn atomics<const N: usize>() -> [AtomicU64; N] {
    std::array::from_fn(|_| AtomicU64::new(0))
}

pub(super) fn atomics32<const N: usize>() -> [AtomicU32; N] {
    std::array::from_fn(|_| AtomicU32::new(0))
}

/// The index key of a slot this index holds.
///
/// # Safety
/// `handle` is nonzero and a slot handle some node of this index held: slots live as long
/// as the index, which bounds the borrow.
pub(super) unsafe fn slot_key<'a>(handle: Handle) -> &'a [u8] {
    // SAFETY: the caller's promise; the view takes no reference and gives none back.
    let slot = ManuallyDrop::new(unsafe { ItemSlot::from_handle(handle) });
    let key = slot.index_key();
    // SAFETY: the bytes live in the slot's allocation (not in `slot`, a pointer to it).
    unsafe { std::slice::from_raw_parts(key.as_ptr(), key.len()) }
}

/// The 4 bytes of `key` after `prefix_length`, big-endian, padded with zeros. For keys that
/// share the first `prefix_length` bytes, a smaller head means a smaller key; equal heads
/// decide nothing (a shorter key padded with zeros ties with the longer one).
pub(super) fn head_of(key: &[u8], prefix_length: usize) -> u32 {
    let mut bytes = [0u8; 4];
    if let Some(rest) = key.get(prefix_length..) {
        let length = rest.len().min(4);
        bytes[..length].copy_from_slice(&rest[..length]);
    }
    u32::from_be_bytes(bytes)
}

/// The length of the prefix shared by every key between two fences (slot handles; 0 is
/// unbounded, which bounds nothing).
pub(super) fn shared_prefix_length(low_fence: Handle, high_fence: Handle) -> u64 {
    if low_fence == 0 || high_fence == 0 {
        return 0;
    }
    // SAFETY: fences are slot handles of this index.
    let (low, high) = unsafe { (slot_key(low_fence), slot_key(high_fence)) };
    low.iter().zip(high).take_while(|(a, b)| a == b).count() as u64
}

/// The first entry whose key is > `key` (`past_equal`) or ≥ `key`, among the first `count`.
/// Without a lock the entries may be mid-change: the answer is then garbage (but nothing
/// unsafe happens), and `Restart` when a slot handle is not set yet; the caller's
/// validation throws either away.
pub(super) fn search(
    heads: &[AtomicU32],
    keys: &[AtomicU32],
    count: usize,
    prefix_length: usize,
    key: &[u8],
    past_equal: bool,
) -> Result<usize, Restart> {
    let key_head = head_of(key, prefix_length);
    let (mut low, mut high) = (0, count.min(heads.len()));
    while low < high {
        let middle = (low + high) / 2;
        let entry_head = heads[middle].load(Ordering::Relaxed);
        let order = if key_head != entry_head {
            key_head.cmp(&entry_head)
        } else {
            let handle = keys[middle].load(Ordering::Relaxed);
            if handle == 0 {
                return Err(Restart);
            }
            // SAFETY: a nonzero slot handle of this index.
            key.cmp(unsafe { slot_key(handle) })
        };
        let entry_goes_first = match order {
            KeyOrder::Greater => true,
            KeyOrder::Equal => past_equal,
            KeyOrder::Less => false,
        };
        if entry_goes_first {
            low = middle + 1;
        } else {
            high = middle;
        }
    }
    Ok(low)
}

impl Header {
    pub(super) fn new(height: u64, low_fence: Handle, high_fence: Handle) -> Header {
        Header {
            version: AtomicU64::new(0),
            count: AtomicU64::new(0),
            prefix_length: AtomicU64::new(shared_prefix_length(low_fence, high_fence)),
            low_fence: AtomicU32::new(low_fence),
            high_fence: AtomicU32::new(high_fence),
            height,
        }
    }

    /// The version to validate reads against, unless a writer holds the node.
    pub(super) fn read_begin(&self) -> Result<u64, Restart> {
        let version = self.version.load(Ordering::Acquire);
        if version & LOCKED == 0 {
            Ok(version)
        } else {
            Err(Restart)
        }
    }

    /// Whether nothing changed the node since `read_begin` returned `version`.
    pub(super) fn validate(&self, version: u64) -> Result<(), Restart> {
        // Orders the reads of the contents before the second read of the version (seqlock).
        fence(Ordering::Acquire);
        if self.version.load(Ordering::Relaxed) == version {
            Ok(())
        } else {
            Err(Restart)
        }
    }

    /// Takes the node for writing, if it is still as it was at `version`.
    pub(super) fn lock(&self, version: u64) -> Result<(), Restart> {
        self.version
            .compare_exchange(
                version,
                version + LOCKED,
                Ordering::Acquire,
                Ordering::Relaxed,
            )
            .map_err(|_| Restart)?;
        // A reader that sees any write made from here on must then see the odd version.
        fence(Ordering::Release);
        Ok(())
    }

    pub(super) fn unlock(&self) {
        self.version.fetch_add(LOCKED, Ordering::Release);
    }

    pub(super) fn count(&self) -> usize {
        (self.count.load(Ordering::Relaxed) as usize).min(CAPACITY)
    }

    pub(super) fn prefix_length(&self) -> usize {
        self.prefix_length.load(Ordering::Relaxed) as usize
    }

    /// # Safety
    /// `self` heads a `Leaf` (height 0).
    pub(super) unsafe fn as_leaf(&self) -> &Leaf {
        debug_assert_eq!(self.height, 0);
        // SAFETY: the caller's promise; `header` is a `Leaf`'s first field (`repr(C)`).
        unsafe { &*(self as *const Header as *const Leaf) }
    }

    /// # Safety
    /// `self` heads an `Inner` (height > 0).
    pub(super) unsafe fn as_inner(&self) -> &Inner {
        debug_assert!(self.height > 0);
        // SAFETY: as in `as_leaf`.
        unsafe { &*(self as *const Header as *const Inner) }
    }
}

/// A node pointer as stored in a word.
pub(super) fn word_of<T>(node: &T) -> u64 {
    node as *const T as usize as u64
}

/// # Safety
/// `word` is a nonzero node pointer of this index (nodes live as long as the index).
pub(super) unsafe fn node_at<'a>(word: u64) -> &'a Header {
    // SAFETY: the caller's promise.
    unsafe { &*(word as usize as *const Header) }
}

/// Where a full node splits: in half, except when the key that found it full is beyond its
/// last key and nothing bounds it on the right (keys arriving in ascending order, as the
/// ordered rebuild at open inserts them): then the node keeps all but its last entry, so
/// ascending inserts leave full nodes behind instead of half-full ones.
pub(super) fn split_point(header: &Header, keys: &[AtomicU32], key: &[u8]) -> usize {
    if header.high_fence.load(Ordering::Relaxed) == 0 {
        let last = keys[CAPACITY - 1].load(Ordering::Relaxed);
        // SAFETY: the node is full and locked: every key is set.
        if key > unsafe { slot_key(last) } {
            return CAPACITY - 1;
        }
    }
    CAPACITY / 2
}

/// Writes the heads of entries `range` of a node with `prefix_length`.
pub(super) fn rewrite_heads(
    heads: &[AtomicU32],
    keys: &[AtomicU32],
    range: std::ops::Range<usize>,
    prefix_length: usize,
) {
    for index in range {
        // SAFETY: the entries of a locked node are set.
        let key = unsafe { slot_key(keys[index].load(Ordering::Relaxed)) };
        heads[index].store(head_of(key, prefix_length), Ordering::Relaxed);
    }
}

/// After a split: the node kept `[0, kept)` and its keys now end below `separator`, so they
/// may share a longer prefix; if so, its heads are rewritten for it.
pub(super) fn narrow(
    header: &Header,
    heads: &[AtomicU32],
    keys: &[AtomicU32],
    kept: usize,
    separator: Handle,
) {
    header.high_fence.store(separator, Ordering::Relaxed);
    header.count.store(kept as u64, Ordering::Relaxed);
    let prefix_length = shared_prefix_length(header.low_fence.load(Ordering::Relaxed), separator);
    if prefix_length != header.prefix_length.load(Ordering::Relaxed) {
        header.prefix_length.store(prefix_length, Ordering::Relaxed);
        rewrite_heads(heads, keys, 0..kept, prefix_length as usize);
    }
}

impl Leaf {
    pub(super) fn new(low_fence: Handle, high_fence: Handle) -> Leaf {
        Leaf {
            header: Header::new(0, low_fence, high_fence),
            next: AtomicU64::new(0),
            heads: atomics32(),
            slots: atomics32(),
        }
    }

    /// Adds the entry in key order, under the leaf's lock; false if the key is there.
    pub(super) fn insert(&self, key: &[u8], handle: Handle) -> bool {
        let (count, prefix_length) = (self.header.count(), self.header.prefix_length());
        let Ok(position) = search(&self.heads, &self.slots, count, prefix_length, key, false)
        else {
            unreachable!("the entries of a locked leaf are set");
        };
        if position < count {
            // SAFETY: a set entry of a locked leaf.
            if unsafe { slot_key(self.slots[position].load(Ordering::Relaxed)) } == key {
                return false;
            }
        }
        for index in (position..count).rev() {
            let (head, slot) = (&self.heads[index], &self.slots[index]);
            self.heads[index + 1].store(head.load(Ordering::Relaxed), Ordering::Relaxed);
            self.slots[index + 1].store(slot.load(Ordering::Relaxed), Ordering::Relaxed);
        }
        self.heads[position].store(head_of(key, prefix_length), Ordering::Relaxed);
        self.slots[position].store(handle, Ordering::Relaxed);
        self.header.count.store(count as u64 + 1, Ordering::Relaxed);
        true
    }

    /// Splits this full, locked leaf; returns the separator (the right half's first key) and
    /// the new right sibling, linked in after this leaf.
    pub(super) fn split(&self, key: &[u8]) -> (Handle, u64) {
        let middle = split_point(&self.header, &self.slots, key);
        let separator = self.slots[middle].load(Ordering::Relaxed);
        let right = Leaf::new(separator, self.header.high_fence.load(Ordering::Relaxed));
        for index in middle..CAPACITY {
            let slot = self.slots[index].load(Ordering::Relaxed);
            right.slots[index - middle].store(slot, Ordering::Relaxed);
        }
        right
            .header
            .count
            .store((CAPACITY - middle) as u64, Ordering::Relaxed);
        let right_prefix = right.header.prefix_length();
        rewrite_heads(
            &right.heads,
            &right.slots,
            0..CAPACITY - middle,
            right_prefix,
        );
        right
            .next
            .store(self.next.load(Ordering::Relaxed), Ordering::Relaxed);
        let right = allocate_node(right);
        // Release: a walk that follows the link sees the sibling whole.
        self.next.store(right, Ordering::Release);
        narrow(&self.header, &self.heads, &self.slots, middle, separator);
        (separator, right)
    }
}

impl Inner {
    pub(super) fn new(height: u64, low_fence: Handle, high_fence: Handle) -> Inner {
        Inner {
            header: Header::new(height, low_fence, high_fence),
            heads: atomics32(),
            separators: atomics32(),
            children: atomics(),
        }
    }

    /// Splits this full, locked inner node; returns the separator that moves up to the parent
    /// and the new right sibling.
    pub(super) fn split(&self, key: &[u8]) -> (Handle, u64) {
        let middle = split_point(&self.header, &self.separators, key);
        let separator = self.separators[middle].load(Ordering::Relaxed);
        let right = Inner::new(
            self.header.height,
            separator,
            self.header.high_fence.load(Ordering::Relaxed),
        );
        for index in middle + 1..CAPACITY {
            let moved = self.separators[index].load(Ordering::Relaxed);
            right.separators[index - middle - 1].store(moved, Ordering::Relaxed);
        }
        for index in middle + 1..=CAPACITY {
            let child = self.children[index].load(Ordering::Relaxed);
            right.children[index - middle - 1].store(child, Ordering::Relaxed);
        }
        let right_count = CAPACITY - middle - 1;
        right
            .header
            .count
            .store(right_count as u64, Ordering::Relaxed);
        let right_prefix = right.header.prefix_length();
        rewrite_heads(
            &right.heads,
            &right.separators,
            0..right_count,
            right_prefix,
        );
        let right = allocate_node(right);
        narrow(
            &self.header,
            &self.heads,
            &self.separators,
            middle,
            separator,
        );
        (separator, right)
    }

    /// Adds `separator` and, after it, the child `right` split off `left`. The node is locked
    /// and not full.
    pub(super) fn insert_child(&self, left: u64, separator: Handle, right: u64) {
        let count = self.header.count();
        assert!(count < CAPACITY, "a parent is split before its child");
        let position = (0..=count)
            .find(|&index| self.children[index].load(Ordering::Relaxed) == left)
            .expect("a split node is a child of its locked parent");
        for index in (position..count).rev() {
            let (head, moved) = (&self.heads[index], &self.separators[index]);
            let child = &self.children[index + 1];
            self.heads[index + 1].store(head.load(Ordering::Relaxed), Ordering::Relaxed);
            self.separators[index + 1].store(moved.load(Ordering::Relaxed), Ordering::Relaxed);
            self.children[index + 2].store(child.load(Ordering::Relaxed), Ordering::Relaxed);
        }
        // SAFETY: a separator is a slot handle of this index.
        let head = head_of(unsafe { slot_key(separator) }, self.header.prefix_length());
        self.heads[position].store(head, Ordering::Relaxed);
        self.separators[position].store(separator, Ordering::Relaxed);
        // Release: a reader that loads the pointer sees the new node whole.
        self.children[position + 1].store(right, Ordering::Release);
        self.header.count.store(count as u64 + 1, Ordering::Relaxed);
    }
}

/// One step of a descent: the child of the inner node `node` (read at `version`) whose range
/// holds `key`, and the child's version. The child's version is read before the parent's is
/// checked again, so the child held that range then; a later split changes its version.
pub(super) fn child_for<'a>(
    node: &'a Header,
    version: u64,
    key: &[u8],
) -> Result<(&'a Header, u64), Restart> {
    assert!(
        node.height > 0,
        "a descent steps down from inner nodes only"
    );
    // SAFETY: height > 0.
    let inner = unsafe { node.as_inner() };
    let (count, prefix_length) = (node.count(), node.prefix_length());
    let index = search(
        &inner.heads,
        &inner.separators,
        count,
        prefix_length,
        key,
        true,
    )?;
    let child = inner.children[index].load(Ordering::Acquire);
    if child == 0 {
        return Err(Restart);
    }
    prefetch_node(child, node.height == 1);
    // SAFETY: a nonzero child pointer.
    let child = unsafe { node_at(child) };
    let child_version = child.read_begin()?;
    node.validate(version)?;
    Ok((child, child_version))
}

/// A node's word: the node placed in the slot arena (`arena.rs`), which keeps the tree on
/// huge pages with the slots, without malloc's per-block header.
pub(super) fn allocate_node<T>(node: T) -> u64 {
    assert!(
        std::mem::align_of::<T>() <= 8,
        "the arena aligns to 8 bytes"
    );
    let pointer = crate::base::arena::allocate(std::mem::size_of::<T>()).cast::<T>();
    // SAFETY: fresh memory of `T`'s size, 8-byte aligned (as every node field is).
    unsafe { pointer.as_ptr().write(node) };
    pointer.as_ptr() as usize as u64
}

/// # Safety
/// `word` came from `allocate_node::<T>` and is freed once, when no one can reach it.
pub(super) unsafe fn free_node<T>(word: u64) {
    let pointer = word as usize as *mut T;
    // SAFETY: the caller's promise.
    unsafe {
        std::ptr::drop_in_place(pointer);
        crate::base::arena::release(std::ptr::NonNull::new_unchecked(pointer.cast()));
    }
}

/// Starts loading every cache line of the node at `word` (a leaf's, or an inner node's): a
/// binary search over its heads then finds them all arriving at once, where it would wait for
/// one line at a time.
pub(super) fn prefetch_node(word: u64, leaf: bool) {
    let bytes = if leaf {
        std::mem::size_of::<Leaf>()
    } else {
        std::mem::size_of::<Inner>()
    };
    for offset in (0..bytes).step_by(64) {
        crate::base::prefetch((word as usize + offset) as *const u8);
    }
}

/// Starts loading both cache lines of the slot `handle`: a slot is 104 bytes or more, at any
/// 8-byte boundary.
///
/// # Safety
/// `handle` is a slot handle of this index.
pub(super) unsafe fn prefetch_slot(handle: Handle) {
    // SAFETY: the caller's promise.
    let slot = ManuallyDrop::new(unsafe { ItemSlot::from_handle(handle) });
    crate::base::prefetch(slot.address());
    crate::base::prefetch(slot.address().wrapping_add(64));
}
