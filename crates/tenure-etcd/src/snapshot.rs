//! Snapshots: every read at the one etcd revision current when the snapshot was taken.
//! etcd keeps that revision until the cluster is compacted past it; `compact()` through this
//! store stops at its oldest open snapshot (another client's compaction does not know of it:
//! a read then fails with `Compacted`).

use std::sync::Mutex;

use tenure::seam::{validate, BackendSnapshot};
use tenure::{BorrowedItem, Error, Item, Page, ReadOptions, Result, ScanEntry, Version};

use crate::store::EtcdStore;

pub(crate) struct EtcdSnapshot<'s> {
    store: &'s EtcdStore,
    /// The cluster revision every read is made at.
    revision: i64,
    /// The store's version at that revision.
    version: Version,
    /// Values lent by `get_borrowed`, kept (and never moved) for as long as the snapshot.
    lent: Mutex<Vec<Box<[u8]>>>,
}

impl<'s> EtcdSnapshot<'s> {
    pub(crate) fn new(store: &'s EtcdStore, revision: i64, version: Version) -> EtcdSnapshot<'s> {
        store.snapshots.open(revision);
        EtcdSnapshot {
            store,
            revision,
            version,
            lent: Mutex::new(Vec::new()),
        }
    }
}

impl Drop for EtcdSnapshot<'_> {
    fn drop(&mut self) {
        self.store.snapshots.close(self.revision);
    }
}

impl BackendSnapshot for EtcdSnapshot<'_> {
    fn version(&self) -> Version {
        self.version
    }

    fn get(&self, container: &str, key: &[u8], options: &ReadOptions) -> Result<Item> {
        let stored = self.store.read_at(self.revision, container, key, options)?;
        Ok(stored.to_item(key, true))
    }

    fn get_properties(&self, container: &str, key: &[u8], options: &ReadOptions) -> Result<Item> {
        let stored = self.store.read_at(self.revision, container, key, options)?;
        Ok(stored.to_item(key, false))
    }

    fn get_borrowed(
        &self,
        container: &str,
        key: &[u8],
        options: &ReadOptions,
    ) -> Result<BorrowedItem<'_>> {
        let stored = self.store.read_at(self.revision, container, key, options)?;
        let item = stored.to_item(key, false);
        let value: Box<[u8]> = stored.record.value.into_boxed_slice();
        let pointer: *const [u8] = &*value;
        self.lent
            .lock()
            .map_err(|_| Error::invalid("snapshot", "a reader panicked"))?
            .push(value);
        // SAFETY: the box was moved into `lent`, which only grows and is dropped with the
        // snapshot; moving a box does not move its heap bytes, so they live as long as `self`.
        let value = unsafe { &*pointer };
        Ok(BorrowedItem { item, value })
    }

    fn list(
        &self,
        container: &str,
        prefix: &[u8],
        page_size: usize,
        continuation: Option<&str>,
        include_values: bool,
    ) -> Result<Page> {
        self.store.check_open()?;
        self.store.list_at(
            self.revision,
            container,
            prefix,
            page_size,
            continuation,
            include_values,
        )
    }

    fn list_containers(&self) -> Result<Vec<String>> {
        self.store.check_open()?;
        self.store.container_names_at(self.revision)
    }

    fn scan(
        &self,
        container: &str,
        prefix: &[u8],
        from: &[u8],
        visit: &mut dyn FnMut(ScanEntry<'_>) -> bool,
    ) -> Result<usize> {
        self.store.check_open()?;
        validate::container_name(container)?;
        validate::key_bound("prefix", prefix, &self.store.limits)?;
        validate::key_bound("from", from, &self.store.limits)?;
        self.store.container_at(container, self.revision)?;
        let now = self.store.now();
        let mut visited = 0;
        self.store.walk_items(
            container,
            prefix,
            from,
            self.revision,
            now,
            &mut |key, stored| {
                if !stored.is_live_at(now) {
                    return Ok(true);
                }
                visited += 1;
                let etag_version = stored.etag_version();
                Ok(visit(ScanEntry {
                    key,
                    value: &stored.record.value,
                    etag: tenure::ETag(etag_version),
                    version: etag_version,
                }))
            },
        )?;
        Ok(visited)
    }
}
