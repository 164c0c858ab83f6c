//! The in-memory MVCC index: for every (container, key) an `ItemSlot` whose head points at the
//! newest version; versions chain newest-first and point at their records in the log.
//!
//! - Point lookups go through a hash index of slot pointers (`point_index.rs`: lock-free
//!   reads); listings go through an ordered index (a B+ tree, `ordered_index/mod.rs`) over the
//!   same slots.
//! - A write installs its version with one compare-and-swap on the head, expecting the head it
//!   checked its conditions against: two writers holding the same ETag can never both win.
//! - A batch installs `Pending` nodes (in key order, so batches cannot deadlock), then marks
//!   them `Committed`, or unlinks them on failure. Nobody installs on top of a pending node:
//!   writers wait for it to resolve (it resolves without I/O).
//! - Versions no snapshot can see are unlinked by `prune` and freed through crossbeam-epoch.

pub(crate) mod catalog;
mod chain;
pub(crate) mod checkpoint;
mod head;
mod item_index;
mod key;
mod key_order;
pub(crate) mod ordered_index;
pub(crate) mod plain;
pub(crate) mod point_index;
pub(crate) mod replay;
mod restore;
pub(crate) mod slot;
mod version;

pub(crate) use item_index::Index;
pub(crate) use item_index::ShardSource;
pub(crate) use key::{index_key, split_index_key, IndexKey};
pub(crate) use plain::{node_of, view, NoPlainHeads, PlainEntries};
pub(crate) use slot::ItemSlot;
pub(crate) use version::{
    coordination_box, word_of, NewVersion, Properties, ValueLocation, VersionNode, VersionRef,
    COMMITTED, PENDING,
};

#[cfg(test)]
mod tests;
