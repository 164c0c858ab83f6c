//! Snapshots (docs/spec.md §9): a pinned version and the clock time it was taken at. Every read through
//! a snapshot sees exactly the committed state at that version, however long it lives.

use crate::backend::results::BorrowedItem;
use std::sync::atomic::Ordering;

use crate::backend::options::{Item, Page, ReadOptions};
use crate::clock::{ReadTime, Timestamp};
use crate::engine::core::{Engine, ValueRead};
use crate::error::Result;
use crate::log::Durability;
use crate::types::Version;

/// A repeatable view of the store. Reads from any thread; dropping it releases old versions.
pub struct Snapshot<'store> {
    store: &'store Engine,
    /// The version registered in `OpenSnapshots`, at most `version`: it keeps at least what
    /// `version` needs from prunes.
    registered_version: Version,
    /// The compaction generation it was opened in (`OpenSnapshots::start_generation`).
    generation: u64,
    version: Version,
    now: Timestamp,
}

impl Engine {
    /// Takes a snapshot.
    ///
    /// In a `buffered` store a plain write may replace a head and its chain outright while no
    /// snapshot is open (`plain.rs`), and the versions it replaced are then out of the index's
    /// reach. So a
    /// snapshot registers first, which stops such replacements, and reads at the newest
    /// version reserved by then, once it is visible (in-flight writes complete within
    /// microseconds: they are copies into the mapping). A write that did not see the
    /// registration reserved its version before, so the snapshot reads it or something newer,
    /// and never needs what it replaced. The registration's store and the reservation's load
    /// here, and the reservation's exchange and `may_replace_head`'s load in the writer,
    /// are sequentially consistent: one of the two sees the other.
    pub(crate) fn snapshot(&self) -> Result<Snapshot<'_>> {
        self.check_open()?;
        // Registered under the lock that prunes take, so no prune drops what this pins.
        let mut snapshots = self.snapshots.lock();
        let registered_version = self.version();
        let generation = snapshots.register(registered_version);
        self.oldest_snapshot
            .store(snapshots.oldest(), Ordering::SeqCst);
        drop(snapshots);
        let mut snapshot = Snapshot {
            store: self,
            registered_version,
            generation,
            version: registered_version,
            now: self.now(),
        };
        if self.log.durability() == Durability::Buffered {
            let reserved = self.log.last_reserved_version();
            if reserved > registered_version {
                // On an error the snapshot drops here and releases its registration.
                self.log.wait(reserved)?;
                snapshot.version = reserved;
            }
        }
        Ok(snapshot)
    }

    /// Whether a write that has reserved its version may replace a head outright: only
    /// while no snapshot is open (`snapshot` says why that is enough). Reads after the
    /// reservation, sequentially consistent with it.
    pub(crate) fn may_replace_head(&self) -> bool {
        self.oldest_snapshot.load(Ordering::SeqCst) == u64::MAX
    }
}

impl Snapshot<'_> {
    pub(crate) fn version(&self) -> Version {
        self.version
    }

    pub(crate) fn store(&self) -> &Engine {
        self.store
    }

    /// The clock time the snapshot was taken at (TTL is judged at it).
    pub(crate) fn now(&self) -> Timestamp {
        self.now
    }

    /// Reads an item without copying its value: the value borrows the log's mapping for as
    /// long as the snapshot lives (LMDB's contract). Compaction does not remove a segment
    /// while a snapshot opened before its copies were swapped in is open (later ones never
    /// read from it), and a segment is never written again once its records are complete,
    /// so the bytes stay valid and unchanged.
    pub(crate) fn get_borrowed(
        &self,
        container: &str,
        key: &[u8],
        options: &ReadOptions,
    ) -> Result<BorrowedItem<'_>> {
        let (item, location) = self.read(container, key, options, ValueRead::Borrow)?;
        let guard = crossbeam_epoch::pin();
        let value = match location {
            Some(location) => {
                let bytes = self.store.value_bytes(location, &guard)?;
                // SAFETY: the slice points into a segment mapping that outlives this snapshot:
                // compaction removes no segment this snapshot may read while it is registered
                // (`Engine::snapshots_all_opened_after_the_swap`), segments are
                // unmapped only when the store (which this snapshot borrows) is dropped, and
                // complete records are never written again.
                unsafe { std::slice::from_raw_parts(bytes.as_ptr(), bytes.len()) }
            }
            None => &[],
        };
        Ok(BorrowedItem { item, value })
    }

    pub(crate) fn get(&self, container: &str, key: &[u8], options: &ReadOptions) -> Result<Item> {
        self.read(container, key, options, ValueRead::Copy)
            .map(|(item, _)| item)
    }

    pub(crate) fn get_properties(
        &self,
        container: &str,
        key: &[u8],
        options: &ReadOptions,
    ) -> Result<Item> {
        self.read(container, key, options, ValueRead::Skip)
            .map(|(item, _)| item)
    }

    /// A read at the snapshot's version and time (repeatable: no prune takes what it pins).
    fn read(
        &self,
        container: &str,
        key: &[u8],
        options: &ReadOptions,
        value_read: ValueRead,
    ) -> Result<(Item, Option<crate::index::ValueLocation>)> {
        self.store.check_open()?;
        self.store.read_at(
            self.version,
            &ReadTime::At(self.now),
            container,
            key,
            options,
            value_read,
            true,
        )
    }

    pub(crate) fn list(
        &self,
        container: &str,
        prefix: &[u8],
        page_size: usize,
        continuation: Option<&str>,
        include_values: bool,
    ) -> Result<Page> {
        self.store.check_open()?;
        self.store.list_at(
            self.version,
            self.now,
            container,
            prefix,
            page_size,
            continuation,
            include_values,
            true,
        )
    }

    pub(crate) fn list_containers(&self) -> Result<Vec<String>> {
        self.store.check_open()?;
        Ok(self.store.catalog.names_at(self.version))
    }
}

impl Drop for Snapshot<'_> {
    fn drop(&mut self) {
        if self.store.owner.is_inherited() {
            // A forked child's copy: its registry may be locked forever (`fork.rs`).
            return;
        }
        let mut snapshots = self.store.snapshots.lock();
        snapshots.release(self.registered_version, self.generation);
        self.store
            .oldest_snapshot
            .store(snapshots.oldest(), Ordering::SeqCst);
    }
}
