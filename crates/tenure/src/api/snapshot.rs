//! Snapshots (docs/spec.md §9): every read through one sees exactly the committed state at its
//! version, however long it lives and whatever is written meanwhile.

use crate::backend::options::{Item, Page, ReadOptions};
use crate::backend::results::{BorrowedItem, ScanEntry};
use crate::backend::BackendSnapshot;
use crate::error::Result;
use crate::types::Version;

/// A repeatable view of the store ([`Store::snapshot`](crate::Store::snapshot)). Reads from
/// any thread; dropping it lets the store reclaim the old versions it kept.
pub struct Snapshot<'store> {
    inner: Box<dyn BackendSnapshot + 'store>,
}

impl<'store> Snapshot<'store> {
    pub(crate) fn new(inner: Box<dyn BackendSnapshot + 'store>) -> Snapshot<'store> {
        Snapshot { inner }
    }

    /// The version the snapshot sees.
    pub fn version(&self) -> Version {
        self.inner.version()
    }

    /// Reads an item as of the snapshot (read conditions as docs/spec.md §3).
    pub fn get(&self, container: &str, key: &[u8], options: &ReadOptions) -> Result<Item> {
        self.inner.get(container, key, options)
    }

    /// Like [`get`](Self::get), without the value.
    pub fn get_properties(
        &self,
        container: &str,
        key: &[u8],
        options: &ReadOptions,
    ) -> Result<Item> {
        self.inner.get_properties(container, key, options)
    }

    /// Reads an item without copying its value: the value borrows the store's mapped log for
    /// as long as the snapshot lives (LMDB's contract). Compaction removes no segment the
    /// snapshot may read while it is open, and complete records are never written again, so
    /// the bytes stay valid and unchanged.
    pub fn get_borrowed(
        &self,
        container: &str,
        key: &[u8],
        options: &ReadOptions,
    ) -> Result<BorrowedItem<'_>> {
        self.inner.get_borrowed(container, key, options)
    }

    /// One page of the items of `container` whose keys start with `prefix`, in key order; a
    /// listing through one snapshot never skips or repeats an item (docs/spec.md §7).
    pub fn list(
        &self,
        container: &str,
        prefix: &[u8],
        page_size: usize,
        continuation: Option<&str>,
        include_values: bool,
    ) -> Result<Page> {
        self.inner
            .list(container, prefix, page_size, continuation, include_values)
    }

    /// The containers that exist at the snapshot's version.
    pub fn list_containers(&self) -> Result<Vec<String>> {
        self.inner.list_containers()
    }

    /// Visits, in key order, the live items of `container` whose keys start with `prefix`,
    /// from the first such key ≥ `from` (the prefix's first key when `from` is empty).
    /// `visit` returns `false` to stop. Returns how many items were visited.
    ///
    /// Nothing is copied and nothing allocated per item: key and value are borrowed for the
    /// visit. Properties and metadata are not read (`get_properties` has them).
    pub fn scan(
        &self,
        container: &str,
        prefix: &[u8],
        from: &[u8],
        mut visit: impl FnMut(ScanEntry<'_>) -> bool,
    ) -> Result<usize> {
        self.inner.scan(container, prefix, from, &mut visit)
    }
}
