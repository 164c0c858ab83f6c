//! The ordered index: every item slot in index-key order, for listings, scans and the expiry
//! sweep. An insert-only B+ tree with optimistic lock coupling (Leis, Scheibner, Kemper and
//! Neumann, "The ART of Practical Synchronization", 2016).
//!
//! - Slots are only ever added while an index lives (as in the point index), so nodes are
//!   never merged or freed: a split keeps the lower half of a node in place and moves the
//!   upper half to a new right sibling. Nothing needs epoch reclamation; the index frees every
//!   node when it drops.
//! - Every node has a version word, odd while a writer holds the node. Readers never write:
//!   they read a node's version, its contents, then the version again, and start over from the
//!   root if it moved. An insert locks the leaf it changes; a full node met on the way down is
//!   split first (locking it and its parent), and the insert starts over.
//! - Keys are compared by a 4-byte *head* kept in the node: the 4 key bytes after the prefix
//!   that every key the node can hold shares (known from its fence keys). Only equal heads read
//!   the slot itself, so a descent reads nodes, not slots.
//! - Slots are named by their 4-byte arena handles (`arena.rs`), not pointers: with 4-byte
//!   heads a leaf entry takes 8 bytes where it took 16 (about 12 B less per key at a million
//!   keys, leaves being about 69% full after random inserts).
//! - Leaves link to their right sibling: a walk copies one leaf's entries at a time.
//!
//! It replaced crossbeam-skiplist's `SkipList`, whose search touched a node and a slot at
//! every one of about 20 levels (docs/design.md §11).

use std::cmp::Ordering as KeyOrder;
use std::mem::ManuallyDrop;

use crossbeam_utils::Backoff;

use crate::base::arena::Handle;
use crate::base::sync::{fence, spin_once, AtomicU32, AtomicU64, Ordering};
use crate::index::point_index::SlotView;
use crate::index::ItemSlot;

/// Entries per leaf and separators per inner node. 32 heads fill 2 cache lines. (Small under shuttle, so a few keys split nodes.)
#[cfg(not(feature = "shuttle"))]
const CAPACITY: usize = 32;
#[cfg(feature = "shuttle")]
const CAPACITY: usize = 3;

/// How far ahead of the entry it yields a walk starts loading a slot, and a slot's newest
/// version node (whose slot it started loading earlier).
const PREFETCH_SLOT_AHEAD: usize = 4;
const PREFETCH_NODE_AHEAD: usize = 2;

/// A node's version word while a writer holds it.
const LOCKED: u64 = 1;

/// The reason to start an operation over from the root: a node changed under a reader, or a
/// writer could not take a lock without waiting.
struct Restart;

/// The part every node starts with. `#[repr(C)]` and first in both kinds of node, so a node
/// pointer is a `Header` pointer and its `height` says which kind it is.
#[repr(C)]
struct Header {
    /// Even when free; a writer makes it odd, and even again (2 higher) when it is done.
    version: AtomicU64,
    /// Entries (leaf) or separators (inner node) in use.
    count: AtomicU64,
    /// How many leading bytes every key this node can ever hold shares; heads start after.
    prefix_length: AtomicU64,
    /// Slot handles of the node's fence keys (not owned; 0: unbounded): every key it holds
    /// is ≥ the low fence and < the high one. Read only by a writer holding the node.
    low_fence: AtomicU32,
    high_fence: AtomicU32,
    /// 0 for a leaf. Never changes.
    height: u64,
}

#[repr(C)]
struct Leaf {
    header: Header,
    /// The right sibling (a `Leaf`), or 0 for the last leaf.
    next: AtomicU64,
    heads: [AtomicU32; CAPACITY],
    /// Slot handles, each owning one reference to its slot (`ItemSlot::into_handle`).
    slots: [AtomicU32; CAPACITY],
}

#[repr(C)]
struct Inner {
    header: Header,
    heads: [AtomicU32; CAPACITY],
    /// Slot handles of the separating keys (not owned: a leaf holds each slot). Child `i`
    /// holds the keys ≥ separator `i − 1` and < separator `i`.
    separators: [AtomicU32; CAPACITY],
    children: [AtomicU64; CAPACITY + 1],
}

#[cfg(not(feature = "shuttle"))]
const _: () = assert!(std::mem::size_of::<Leaf>() == 304 && std::mem::size_of::<Inner>() == 560);

fn atomics<const N: usize>() -> [AtomicU64; N] {
    std::array::from_fn(|_| AtomicU64::new(0))
}

fn atomics32<const N: usize>() -> [AtomicU32; N] {
    std::array::from_fn(|_| AtomicU32::new(0))
}

/// The index key of a slot this index holds.
///
/// # Safety
/// `handle` is nonzero and a slot handle some node of this index held: slots live as long
/// as the index, which bounds the borrow.
unsafe fn slot_key<'a>(handle: Handle) -> &'a [u8] {
    // SAFETY: the caller's promise; the view takes no reference and gives none back.
    let slot = ManuallyDrop::new(unsafe { ItemSlot::from_handle(handle) });
    let key = slot.index_key();
    // SAFETY: the bytes live in the slot's allocation (not in `slot`, a pointer to it).
    unsafe { std::slice::from_raw_parts(key.as_ptr(), key.len()) }
}

/// The 4 bytes of `key` after `prefix_length`, big-endian, padded with zeros. For keys that
/// share the first `prefix_length` bytes, a smaller head means a smaller key; equal heads
/// decide nothing (a shorter key padded with zeros ties with the longer one).
fn head_of(key: &[u8], prefix_length: usize) -> u32 {
    let mut bytes = [0u8; 4];
    if let Some(rest) = key.get(prefix_length..) {
        let length = rest.len().min(4);
        bytes[..length].copy_from_slice(&rest[..length]);
    }
    u32::from_be_bytes(bytes)
}

/// The length of the prefix shared by every key between two fences (slot handles; 0 is
/// unbounded, which bounds nothing).
fn shared_prefix_length(low_fence: Handle, high_fence: Handle) -> u64 {
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
fn search(
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
    fn new(height: u64, low_fence: Handle, high_fence: Handle) -> Header {
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
    fn read_begin(&self) -> Result<u64, Restart> {
        let version = self.version.load(Ordering::Acquire);
        if version & LOCKED == 0 {
            Ok(version)
        } else {
            Err(Restart)
        }
    }

    /// Whether nothing changed the node since `read_begin` returned `version`.
    fn validate(&self, version: u64) -> Result<(), Restart> {
        // Orders the reads of the contents before the second read of the version (seqlock).
        fence(Ordering::Acquire);
        if self.version.load(Ordering::Relaxed) == version {
            Ok(())
        } else {
            Err(Restart)
        }
    }

    /// Takes the node for writing, if it is still as it was at `version`.
    fn lock(&self, version: u64) -> Result<(), Restart> {
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

    fn unlock(&self) {
        self.version.fetch_add(LOCKED, Ordering::Release);
    }

    fn count(&self) -> usize {
        (self.count.load(Ordering::Relaxed) as usize).min(CAPACITY)
    }

    fn prefix_length(&self) -> usize {
        self.prefix_length.load(Ordering::Relaxed) as usize
    }

    /// # Safety
    /// `self` heads a `Leaf` (height 0).
    unsafe fn as_leaf(&self) -> &Leaf {
        debug_assert_eq!(self.height, 0);
        // SAFETY: the caller's promise; `header` is a `Leaf`'s first field (`repr(C)`).
        unsafe { &*(self as *const Header as *const Leaf) }
    }

    /// # Safety
    /// `self` heads an `Inner` (height > 0).
    unsafe fn as_inner(&self) -> &Inner {
        debug_assert!(self.height > 0);
        // SAFETY: as in `as_leaf`.
        unsafe { &*(self as *const Header as *const Inner) }
    }
}

/// A node pointer as stored in a word.
fn word_of<T>(node: &T) -> u64 {
    node as *const T as usize as u64
}

/// # Safety
/// `word` is a nonzero node pointer of this index (nodes live as long as the index).
unsafe fn node_at<'a>(word: u64) -> &'a Header {
    // SAFETY: the caller's promise.
    unsafe { &*(word as usize as *const Header) }
}

/// Where a full node splits: in half, except when the key that found it full is beyond its
/// last key and nothing bounds it on the right (keys arriving in ascending order, as the
/// ordered rebuild at open inserts them): then the node keeps all but its last entry, so
/// ascending inserts leave full nodes behind instead of half-full ones.
fn split_point(header: &Header, keys: &[AtomicU32], key: &[u8]) -> usize {
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
fn rewrite_heads(
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
fn narrow(
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
    fn new(low_fence: Handle, high_fence: Handle) -> Leaf {
        Leaf {
            header: Header::new(0, low_fence, high_fence),
            next: AtomicU64::new(0),
            heads: atomics32(),
            slots: atomics32(),
        }
    }

    /// Adds the entry in key order, under the leaf's lock; false if the key is there.
    fn insert(&self, key: &[u8], handle: Handle) -> bool {
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
    fn split(&self, key: &[u8]) -> (Handle, u64) {
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
    fn new(height: u64, low_fence: Handle, high_fence: Handle) -> Inner {
        Inner {
            header: Header::new(height, low_fence, high_fence),
            heads: atomics32(),
            separators: atomics32(),
            children: atomics(),
        }
    }

    /// Splits this full, locked inner node; returns the separator that moves up to the parent
    /// and the new right sibling.
    fn split(&self, key: &[u8]) -> (Handle, u64) {
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
    fn insert_child(&self, left: u64, separator: Handle, right: u64) {
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
fn child_for<'a>(node: &'a Header, version: u64, key: &[u8]) -> Result<(&'a Header, u64), Restart> {
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
fn allocate_node<T>(node: T) -> u64 {
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
unsafe fn free_node<T>(word: u64) {
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
fn prefetch_node(word: u64, leaf: bool) {
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
unsafe fn prefetch_slot(handle: Handle) {
    // SAFETY: the caller's promise.
    let slot = ManuallyDrop::new(unsafe { ItemSlot::from_handle(handle) });
    crate::base::prefetch(slot.address());
    crate::base::prefetch(slot.address().wrapping_add(64));
}

/// Every slot of the index in key order (see the module comment).
pub(crate) struct OrderedIndex {
    /// The root node (a `Header` pointer); replaced only while the old root is locked.
    root: AtomicU64,
}

impl OrderedIndex {
    pub(crate) fn new() -> OrderedIndex {
        let root = allocate_node(Leaf::new(0, 0));
        OrderedIndex {
            root: AtomicU64::new(root),
        }
    }

    /// Adds `slot`, whose key the index does not hold yet (each slot is added once, by the
    /// writer that added it to the point index); the index keeps the reference.
    pub(crate) fn insert(&self, slot: ItemSlot) {
        let handle = slot.into_handle();
        // SAFETY: the index owns the slot from here on.
        let key = unsafe { slot_key(handle) };
        let backoff = Backoff::new();
        // Each attempt either finishes, splits a node, or meets a node another thread is
        // changing: the number of attempts is bounded by the tree's height plus the time
        // other writers hold their nodes (a few hundred instructions each, no I/O).
        loop {
            match self.try_insert(key, handle) {
                Ok(true) => return,
                Ok(false) => {
                    debug_assert!(false, "a key was added to the ordered index twice");
                    // SAFETY: the reference this call took, given back once.
                    drop(unsafe { ItemSlot::from_handle(handle) });
                    return;
                }
                Err(Restart) => spin_once(&backoff),
            }
        }
    }

    /// The root and its version, once it is the root and no writer holds it.
    fn read_root(&self) -> Result<(&Header, u64), Restart> {
        let word = self.root.load(Ordering::Acquire);
        // SAFETY: the root is never 0, and nodes live as long as the index.
        let root = unsafe { node_at(word) };
        let version = root.read_begin()?;
        // A root replaced between the two loads covers only part of the keys now.
        if self.root.load(Ordering::Acquire) != word {
            return Err(Restart);
        }
        Ok((root, version))
    }

    /// One descent: `Ok(true)` once inserted, `Ok(false)` if the key was there already.
    fn try_insert(&self, key: &[u8], handle: Handle) -> Result<bool, Restart> {
        let (mut node, mut version) = self.read_root()?;
        let mut parent: Option<(&Inner, u64)> = None;
        loop {
            if node.count() == CAPACITY {
                self.split(node, version, parent, key)?;
                return Err(Restart);
            }
            if node.height == 0 {
                // SAFETY: height 0.
                let leaf = unsafe { node.as_leaf() };
                node.lock(version)?;
                let inserted = leaf.insert(key, handle);
                node.unlock();
                return Ok(inserted);
            }
            let (child, child_version) = child_for(node, version, key)?;
            // SAFETY: height > 0 (`child_for` found a child).
            parent = Some((unsafe { node.as_inner() }, version));
            (node, version) = (child, child_version);
        }
    }

    /// Splits `node` (full at `version`), which hangs from `parent` or is the root.
    fn split(
        &self,
        node: &Header,
        version: u64,
        parent: Option<(&Inner, u64)>,
        key: &[u8],
    ) -> Result<(), Restart> {
        match parent {
            Some((parent, parent_version)) => {
                parent.header.lock(parent_version)?;
                if let Err(restart) = node.lock(version) {
                    parent.header.unlock();
                    return Err(restart);
                }
            }
            None => {
                node.lock(version)?;
                if self.root.load(Ordering::Acquire) != word_of(node) {
                    node.unlock();
                    return Err(Restart);
                }
            }
        }
        let (separator, right) = if node.height == 0 {
            // SAFETY: height 0.
            unsafe { node.as_leaf() }.split(key)
        } else {
            // SAFETY: height > 0.
            unsafe { node.as_inner() }.split(key)
        };
        match parent {
            Some((parent, _)) => {
                parent.insert_child(word_of(node), separator, right);
                node.unlock();
                parent.header.unlock();
            }
            None => {
                let root = Inner::new(node.height + 1, 0, 0);
                // SAFETY: a separator is a slot handle of this index.
                let head = head_of(unsafe { slot_key(separator) }, 0);
                root.heads[0].store(head, Ordering::Relaxed);
                root.separators[0].store(separator, Ordering::Relaxed);
                root.children[0].store(word_of(node), Ordering::Relaxed);
                root.children[1].store(right, Ordering::Relaxed);
                root.header.count.store(1, Ordering::Relaxed);
                let root = allocate_node(root);
                self.root.store(root, Ordering::Release);
                node.unlock();
            }
        }
        Ok(())
    }

    /// The leaf that holds `key`'s place, its version, and the position of the first entry
    /// whose key is ≥ `key`.
    fn find_leaf(&self, key: &[u8]) -> Result<(&Leaf, u64, usize), Restart> {
        let (mut node, mut version) = self.read_root()?;
        while node.height > 0 {
            (node, version) = child_for(node, version, key)?;
        }
        // SAFETY: height 0.
        let leaf = unsafe { node.as_leaf() };
        let (count, prefix_length) = (node.count(), node.prefix_length());
        let position = search(&leaf.heads, &leaf.slots, count, prefix_length, key, false)?;
        Ok((leaf, version, position))
    }

    /// Slots with index keys ≥ `from`, in key order. Keys added during the walk may or may
    /// not be met; every key added before it began is.
    pub(crate) fn walk_from<'a>(&'a self, from: &[u8]) -> Walk<'a> {
        let backoff = Backoff::new();
        let mut walk = Walk {
            _index: std::marker::PhantomData,
            entries: [0; CAPACITY],
            length: 0,
            position: 0,
            next_leaf: 0,
        };
        loop {
            let copied = self
                .find_leaf(from)
                .and_then(|(leaf, version, position)| walk.copy(leaf, version, position));
            match copied {
                Ok(()) => return walk,
                Err(Restart) => spin_once(&backoff),
            }
        }
    }
}

/// A walk in key order ([`OrderedIndex::walk_from`]): the entries of one leaf at a time,
/// copied under a validated read, then its right sibling's.
pub(crate) struct Walk<'a> {
    _index: std::marker::PhantomData<&'a OrderedIndex>,
    entries: [Handle; CAPACITY],
    length: usize,
    position: usize,
    next_leaf: u64,
}

impl Walk<'_> {
    /// Copies `leaf`'s entries from `position` and its link, if the leaf is still as it was
    /// at `version`.
    fn copy(&mut self, leaf: &Leaf, version: u64, position: usize) -> Result<(), Restart> {
        let count = leaf.header.count();
        let start = position.min(count);
        for (entry, slot) in self.entries.iter_mut().zip(&leaf.slots[start..count]) {
            *entry = slot.load(Ordering::Relaxed);
        }
        let next_leaf = leaf.next.load(Ordering::Acquire);
        leaf.header.validate(version)?;
        (self.length, self.position, self.next_leaf) = (count - start, 0, next_leaf);
        for &slot in &self.entries[..self.length.min(PREFETCH_SLOT_AHEAD)] {
            // SAFETY: a validated copy of a leaf's entry.
            unsafe { prefetch_slot(slot) };
        }
        // A walk that may well go on into the next leaf loads it meanwhile.
        if next_leaf != 0 && self.length < CAPACITY / 2 {
            prefetch_node(next_leaf, true);
        }
        Ok(())
    }
}

impl<'a> Iterator for Walk<'a> {
    type Item = SlotView<'a>;

    fn next(&mut self) -> Option<SlotView<'a>> {
        let backoff = Backoff::new();
        while self.position == self.length {
            if self.next_leaf == 0 {
                return None;
            }
            // SAFETY: a nonzero leaf link. Keys only move right (splits), so rereading the
            // same leaf until it reads whole meets every key it or its new siblings hold.
            let leaf = unsafe { node_at(self.next_leaf).as_leaf() };
            let copied = leaf
                .header
                .read_begin()
                .and_then(|version| self.copy(leaf, version, 0));
            if copied.is_err() {
                spin_once(&backoff);
            }
        }
        // Walks read each slot, then its version node: starting those loads a few entries
        // ahead lets their cache misses overlap.
        if let Some(&ahead) = self.entries[..self.length].get(self.position + PREFETCH_NODE_AHEAD) {
            // SAFETY: as below.
            unsafe { SlotView::from_handle(ahead) }.prefetch_head_node();
        }
        if let Some(&ahead) = self.entries[..self.length].get(self.position + PREFETCH_SLOT_AHEAD) {
            // SAFETY: as below.
            unsafe { prefetch_slot(ahead) };
        }
        let handle = self.entries[self.position];
        self.position += 1;
        // SAFETY: a validated copy of a leaf's entry: a slot the index holds while it lives.
        Some(unsafe { SlotView::from_handle(handle) })
    }
}

impl Drop for OrderedIndex {
    fn drop(&mut self) {
        /// Frees `node` and everything below it, and gives back the leaves' references.
        ///
        /// # Safety
        /// `node` is a node of a tree no one else can reach any more, freed once.
        unsafe fn free(node: u64) {
            // SAFETY: the caller's promise.
            let header = unsafe { node_at(node) };
            let count = header.count();
            if header.height == 0 {
                // SAFETY: a leaf.
                let leaf = unsafe { header.as_leaf() };
                for slot in &leaf.slots[..count] {
                    // SAFETY: the leaf's own reference, given back once.
                    drop(unsafe { ItemSlot::from_handle(slot.load(Ordering::Relaxed)) });
                }
                // SAFETY: a leaf of `allocate_node`, freed once.
                unsafe { free_node::<Leaf>(node) };
            } else {
                // SAFETY: an inner node.
                let inner = unsafe { header.as_inner() };
                for child in &inner.children[..=count] {
                    // SAFETY: each child hangs from one parent.
                    unsafe { free(child.load(Ordering::Relaxed)) };
                }
                // SAFETY: an inner node of `allocate_node`, freed once.
                unsafe { free_node::<Inner>(node) };
            }
        }
        // SAFETY: `&mut self`: nothing else can reach the tree.
        unsafe { free(self.root.load(Ordering::Relaxed)) };
    }
}

#[cfg(all(test, not(feature = "shuttle")))]
mod tests;

#[cfg(all(test, feature = "shuttle"))]
mod shuttle_tests;
