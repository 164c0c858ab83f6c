//! Snapshots (SPEC §9): a pinned version and the clock time it was taken at. Every read through
//! a snapshot sees exactly the committed state at that version, however long it lives.

use std::sync::atomic::Ordering;

use crate::clock::Timestamp;
use crate::error::Result;
use crate::etag::Version;
use crate::options::{Item, Page, ReadOptions};
use crate::store::StoreShared;

/// A repeatable view of the store. Reads from any thread; dropping it releases old versions.
pub struct Snapshot<'store> {
    store: &'store StoreShared,
    version: Version,
    now: Timestamp,
}

impl StoreShared {
    pub fn snapshot(&self) -> Result<Snapshot<'_>> {
        self.check_open()?;
        // Registered under the lock that prunes take, so no prune drops what this pins.
        let mut snapshots = self.snapshots.lock();
        let version = self.version();
        *snapshots.entry(version).or_insert(0) += 1;
        let oldest = *snapshots.keys().next().expect("just inserted");
        self.oldest_snapshot.store(oldest, Ordering::Release);
        drop(snapshots);
        Ok(Snapshot {
            store: self,
            version,
            now: self.now(),
        })
    }
}

impl Snapshot<'_> {
    pub fn version(&self) -> Version {
        self.version
    }

    pub(crate) fn store(&self) -> &StoreShared {
        self.store
    }

    /// The clock time the snapshot was taken at (TTL is judged at it).
    pub(crate) fn now(&self) -> Timestamp {
        self.now
    }

    /// Reads an item without copying its value: the value borrows the log's mapping for as
    /// long as the snapshot lives (LMDB's contract). Compaction does not remove a segment
    /// while any snapshot is open, and a segment is never written again once its records
    /// are complete, so the bytes stay valid and unchanged.
    pub fn get_borrowed(
        &self,
        container: &str,
        key: &[u8],
        options: &ReadOptions,
    ) -> Result<BorrowedItem<'_>> {
        self.store.check_open()?;
        let (item, location) =
            self.store
                .read_at(self.version, self.now, container, key, options, false, true)?;
        let guard = crossbeam_epoch::pin();
        let value = match location {
            Some(location) => {
                let bytes = self.store.value_bytes(location, &guard)?;
                // SAFETY: the slice points into a segment mapping that outlives this snapshot:
                // compaction removes no segment while a snapshot is registered, segments are
                // unmapped only when the store (which this snapshot borrows) is dropped, and
                // complete records are never written again.
                unsafe { std::slice::from_raw_parts(bytes.as_ptr(), bytes.len()) }
            }
            None => &[],
        };
        Ok(BorrowedItem { item, value })
    }

    pub fn get(&self, container: &str, key: &[u8], options: &ReadOptions) -> Result<Item> {
        self.store.check_open()?;
        self.store
            .read_at(self.version, self.now, container, key, options, true, true)
            .map(|(item, _)| item)
    }

    pub fn get_properties(
        &self,
        container: &str,
        key: &[u8],
        options: &ReadOptions,
    ) -> Result<Item> {
        self.store.check_open()?;
        self.store
            .read_at(self.version, self.now, container, key, options, false, true)
            .map(|(item, _)| item)
    }

    pub fn list(
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

    pub fn list_containers(&self) -> Result<Vec<String>> {
        self.store.check_open()?;
        Ok(self.store.catalog.names_at(self.version))
    }
}

/// An item read through a snapshot with its value borrowed from the log's mapping.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BorrowedItem<'snapshot> {
    /// Properties, ETag, version, times (`item.value` is `None`).
    pub item: Item,
    pub value: &'snapshot [u8],
}

impl Drop for Snapshot<'_> {
    fn drop(&mut self) {
        let mut snapshots = self.store.snapshots.lock();
        if let Some(count) = snapshots.get_mut(&self.version) {
            *count -= 1;
            if *count == 0 {
                snapshots.remove(&self.version);
            }
        }
        let oldest = snapshots.keys().next().copied().unwrap_or(u64::MAX);
        self.store.oldest_snapshot.store(oldest, Ordering::Release);
    }
}
