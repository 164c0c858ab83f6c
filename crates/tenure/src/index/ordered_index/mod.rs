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
//! every one of about 20 levels (docs/design.md §11 "The ordered index").

use crossbeam_utils::Backoff;

use crate::base::arena::Handle;
use crate::base::sync::{spin_once, AtomicU64, Ordering};
use crate::index::point_index::SlotView;
use crate::index::slot::ItemSlot;

mod node;

use node::*;

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

    /// Adds `slot`, keeping the reference. If the index holds the key already (a writer and
    /// the build at open may both add a new slot: `Index::build_ordered`), it holds the same
    /// slot, and the reference is given back.
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
