//! [`Store`]: an open store and every operation on it.

use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

use super::{Batch, Snapshot};
use crate::backend::options::{
    ContainerOptions, ContainerProperties, ContainerWriteOptions, Item, ItemRef, Page, ReadOptions,
    StoreOptions, WriteOptions,
};
use crate::backend::results::{
    Change, ChangeRef, ChangesOptions, CompactionReport, Lease, LeaseRequest, StoreStats,
};
use crate::backend::{Backend, PutKind};
use crate::error::Result;
use crate::rules::conditions::{self, ItemFacts};
use crate::rules::lease::{LeaseId, LeaseInfo};
use crate::rules::lock::LockHandle;
use crate::rules::ttl::Ttl;
use crate::storage::{FileStorage, Storage};
use crate::types::{ETag, Version};

/// An open store. Share it between threads by reference or in an `Arc`.
///
/// Every operation is a method here; docs/spec.md is the contract behind each one. Errors
/// carry a stable code and status ([`ErrorCode`](crate::ErrorCode)); a failed operation
/// changes nothing.
///
/// # Processes and `fork()`
///
/// A store is open in one process at a time (a second open is `StoreLocked`). A child made by
/// `fork()` after the open inherits a copy of the handle that refuses every call with
/// [`ErrorCode::UsedAfterFork`](crate::ErrorCode::UsedAfterFork) and changes nothing on disk;
/// closing or dropping it there is allowed and releases nothing the parent holds. A child
/// that needs the store opens it itself, once the parent has closed it; a worker pool that
/// forks should open the store in each worker instead of before the fork.
pub struct Store {
    backend: Box<dyn Backend>,
}

impl Store {
    /// Opens (creating if needed) the store in directory `path`.
    pub fn open(path: impl AsRef<Path>, options: StoreOptions) -> Result<Store> {
        Store::open_with_storage(Arc::new(FileStorage::new(path.as_ref())), options)
    }

    /// Opens a store on any storage (the test kit's simulated disk).
    #[doc(hidden)]
    pub fn open_with_storage(storage: Arc<dyn Storage>, options: StoreOptions) -> Result<Store> {
        Ok(Store {
            backend: Box::new(crate::engine::open(storage, options)?),
        })
    }

    /// A store served by another backend (`tenure_etcd::open` builds one on an etcd cluster).
    pub fn from_backend(backend: Box<dyn Backend>) -> Store {
        Store { backend }
    }

    /// Makes every acknowledged write durable and closes the store. Later calls through other
    /// references fail with `Closed`. Dropping the store closes it too (errors unreported).
    ///
    /// In a child that inherited this handle through `fork()`, closing (or dropping) writes
    /// nothing, releases nothing the parent holds (the store's lock, its files, its threads)
    /// and takes no lock: the handle's memory is left to go with the child's process image.
    pub fn close(self) -> Result<()> {
        self.backend.close()
    }

    /// Makes every acknowledged write durable (in `buffered` mode; `sync` writes already are).
    pub fn flush(&self) -> Result<()> {
        self.backend.flush()
    }

    /// The latest committed version.
    pub fn version(&self) -> Version {
        self.backend.version()
    }

    // ----- containers (docs/spec.md §1, §5) -----

    /// Creates a container (`ContainerAlreadyExists` when one of that name exists).
    pub fn create_container(
        &self,
        name: &str,
        options: &ContainerOptions,
    ) -> Result<ContainerProperties> {
        self.backend.create_container(name, options)
    }

    /// Deletes the container and, atomically, every item in it. A leased container needs its
    /// lease id (`LeaseIdMissing` otherwise).
    pub fn delete_container(&self, name: &str, options: &ContainerWriteOptions) -> Result<()> {
        self.backend.delete_container(name, options)
    }

    /// The container's ETag, last-modified time, metadata and default TTL.
    pub fn container_properties(&self, name: &str) -> Result<ContainerProperties> {
        self.backend.container_properties(name)
    }

    /// Replaces the container's metadata; returns its new ETag.
    pub fn set_container_metadata(
        &self,
        name: &str,
        metadata: &[(String, String)],
        options: &ContainerWriteOptions,
    ) -> Result<ETag> {
        self.backend.set_container_metadata(name, metadata, options)
    }

    /// The names of the containers, in order.
    pub fn list_containers(&self) -> Result<Vec<String>> {
        self.backend.list_containers()
    }

    // ----- reads (docs/spec.md §3, §7) -----

    /// Reads an item (read conditions as docs/spec.md §3; `NotFound` when absent or expired).
    #[inline]
    pub fn get(&self, container: &str, key: &[u8], options: &ReadOptions) -> Result<Item> {
        self.backend.get(container, key, options)
    }

    /// Like [`get`](Self::get), without the value.
    pub fn get_properties(
        &self,
        container: &str,
        key: &[u8],
        options: &ReadOptions,
    ) -> Result<Item> {
        self.backend.get_properties(container, key, options)
    }

    /// The item if its version differs from `version`, else `None` (the cache's
    /// `GetIfNewer`, docs/spec.md §6).
    pub fn get_if_newer(
        &self,
        container: &str,
        key: &[u8],
        version: Version,
    ) -> Result<Option<Item>> {
        let item = self.get(container, key, &ReadOptions::default())?;
        let facts = ItemFacts {
            etag: item.etag,
            version: item.version,
            last_modified: item.last_modified,
        };
        Ok(conditions::get_if_newer(version, Some(&facts))?.then_some(item))
    }

    /// Reads the newest version of an item and lends it to `read`, its value borrowed from
    /// the store's mapped log: no copy of the value, nor a snapshot to take
    /// ([`Snapshot::get_borrowed`] borrows for as long as a snapshot lives). The borrow lasts
    /// for the call; keep `read` short, as it holds back the reclamation of old versions.
    #[inline]
    pub fn get_with<R>(
        &self,
        container: &str,
        key: &[u8],
        options: &ReadOptions,
        read: impl FnOnce(ItemRef<'_>) -> R,
    ) -> Result<R> {
        let mut read = Some(read);
        let mut result = None;
        self.backend
            .get_with(container, key, options, &mut |item| {
                if let Some(read) = read.take() {
                    result = Some(read(item));
                }
            })?;
        Ok(result.expect("a successful get_with lends the item once"))
    }

    /// One page of the items of `container` whose keys start with `prefix`, in key order, and
    /// the continuation token for the next (`None` on the last page; docs/spec.md §7).
    pub fn list(
        &self,
        container: &str,
        prefix: &[u8],
        page_size: usize,
        continuation: Option<&str>,
        include_values: bool,
    ) -> Result<Page> {
        self.backend
            .list(container, prefix, page_size, continuation, include_values)
    }

    /// Takes a snapshot: a repeatable view at the current version (docs/spec.md §9).
    pub fn snapshot(&self) -> Result<Snapshot<'_>> {
        Ok(Snapshot::new(self.backend.snapshot()?))
    }

    // ----- writes (docs/spec.md §2, §3, §7) -----

    /// Writes the item, creating or replacing it (last writer wins unless conditions say
    /// otherwise). Returns the new ETag.
    #[inline]
    pub fn put(
        &self,
        container: &str,
        key: &[u8],
        value: &[u8],
        options: &WriteOptions,
    ) -> Result<ETag> {
        self.backend
            .put(PutKind::Put, container, key, value, options)
    }

    /// Writes the item only if it does not exist (`AlreadyExists` otherwise).
    pub fn create(
        &self,
        container: &str,
        key: &[u8],
        value: &[u8],
        options: &WriteOptions,
    ) -> Result<ETag> {
        self.backend
            .put(PutKind::Create, container, key, value, options)
    }

    /// Writes the item only if it exists (`NotFound` otherwise).
    pub fn replace(
        &self,
        container: &str,
        key: &[u8],
        value: &[u8],
        options: &WriteOptions,
    ) -> Result<ETag> {
        self.backend
            .put(PutKind::Replace, container, key, value, options)
    }

    /// Deletes the item (`NotFound` when absent). A delete drops the item's lease.
    pub fn delete(&self, container: &str, key: &[u8], options: &WriteOptions) -> Result<()> {
        self.backend.delete(container, key, options)
    }

    /// Replaces content type and metadata, keeping the value; returns the new ETag.
    pub fn set_properties(
        &self,
        container: &str,
        key: &[u8],
        options: &WriteOptions,
    ) -> Result<ETag> {
        self.backend.set_properties(container, key, options)
    }

    /// Replaces the user metadata, keeping the value and content type, in one atomic write;
    /// returns the new ETag. `options.content_type` must be `None` (`set_properties` replaces
    /// both).
    pub fn set_metadata(
        &self,
        container: &str,
        key: &[u8],
        options: &WriteOptions,
    ) -> Result<ETag> {
        self.backend.set_metadata(container, key, options)
    }

    /// Reads, applies `change`, writes with `if_match`; on `ConditionNotMet` reads again and
    /// retries with jittered backoff, at most `max_attempts` times (docs/spec.md §3), then
    /// fails with the last conflict. Content type and metadata are kept.
    pub fn update(
        &self,
        container: &str,
        key: &[u8],
        max_attempts: usize,
        mut change: impl FnMut(&[u8]) -> Vec<u8>,
    ) -> Result<Item> {
        self.backend
            .update(container, key, max_attempts, &mut change)
    }

    /// Starts a batch: operations committed all or nothing under one version
    /// (docs/spec.md §8).
    pub fn batch(&self) -> Batch<'_> {
        Batch::new(self.backend.as_ref())
    }

    // ----- item leases (docs/spec.md §4) -----

    /// Acquires the item's lease. Never waits: see [`acquire_lease_wait`](Self::acquire_lease_wait).
    pub fn acquire_lease(
        &self,
        container: &str,
        key: &[u8],
        request: &LeaseRequest,
    ) -> Result<Lease> {
        self.backend.acquire_lease(container, key, request)
    }

    /// Acquires the lease, waiting (first come, first served among waiters, no busy loop) up
    /// to `timeout` for it to become free; `LeaseAlreadyPresent` when the time is up.
    pub fn acquire_lease_wait(
        &self,
        container: &str,
        key: &[u8],
        request: &LeaseRequest,
        timeout: Duration,
    ) -> Result<Lease> {
        self.backend
            .acquire_lease_wait(container, key, request, timeout)
    }

    /// Renews the lease with id `id` for its full duration.
    pub fn renew_lease(&self, container: &str, key: &[u8], id: LeaseId) -> Result<Lease> {
        self.backend.renew_lease(container, key, id)
    }

    /// Changes the lease's id from `id` to `proposed_id`, keeping its deadline and fence.
    pub fn change_lease(
        &self,
        container: &str,
        key: &[u8],
        id: LeaseId,
        proposed_id: LeaseId,
    ) -> Result<Lease> {
        self.backend.change_lease(container, key, id, proposed_id)
    }

    /// Releases the lease with id `id`: the item is Available again.
    pub fn release_lease(&self, container: &str, key: &[u8], id: LeaseId) -> Result<()> {
        self.backend.release_lease(container, key, id)
    }

    /// Breaks the lease; returns the time until a new lease can be acquired (zero when broken
    /// at once). `period_seconds`: 0–60, or `None` (docs/spec.md §4).
    pub fn break_lease(
        &self,
        container: &str,
        key: &[u8],
        period_seconds: Option<u32>,
    ) -> Result<Duration> {
        self.backend.break_lease(container, key, period_seconds)
    }

    /// The item's lease as of now: state, id, fence, time left, holder.
    pub fn lease_info(&self, container: &str, key: &[u8]) -> Result<LeaseInfo> {
        self.backend.lease_info(container, key)
    }

    // ----- container leases (docs/spec.md §5) -----

    /// Acquires the container's lease (only `delete_container` is guarded by it).
    pub fn acquire_container_lease(&self, name: &str, request: &LeaseRequest) -> Result<Lease> {
        self.backend.acquire_container_lease(name, request)
    }

    pub fn renew_container_lease(&self, name: &str, id: LeaseId) -> Result<Lease> {
        self.backend.renew_container_lease(name, id)
    }

    pub fn change_container_lease(
        &self,
        name: &str,
        id: LeaseId,
        proposed_id: LeaseId,
    ) -> Result<Lease> {
        self.backend.change_container_lease(name, id, proposed_id)
    }

    pub fn release_container_lease(&self, name: &str, id: LeaseId) -> Result<()> {
        self.backend.release_container_lease(name, id)
    }

    /// Breaks the container's lease; returns the time until a new one can be acquired.
    pub fn break_container_lease(
        &self,
        name: &str,
        period_seconds: Option<u32>,
    ) -> Result<Duration> {
        self.backend.break_container_lease(name, period_seconds)
    }

    pub fn container_lease_info(&self, name: &str) -> Result<LeaseInfo> {
        self.backend.container_lease_info(name)
    }

    // ----- cache locks (docs/spec.md §6) -----

    /// Locks the item for `lock_timeout` and returns it with an unguessable handle. With
    /// `force`, an absent key is locked too (no item comes back). Never waits.
    pub fn get_and_lock(
        &self,
        container: &str,
        key: &[u8],
        lock_timeout: Duration,
        force: bool,
    ) -> Result<(Option<Item>, LockHandle)> {
        self.backend
            .get_and_lock(container, key, lock_timeout, force)
    }

    /// Replaces the locked item's value and unlocks it (`NotFound`, `ObjectNotLocked`,
    /// `InvalidLockHandle` as docs/spec.md §6). `ttl` as for put.
    pub fn put_and_unlock(
        &self,
        container: &str,
        key: &[u8],
        value: &[u8],
        handle: LockHandle,
        ttl: Ttl,
    ) -> Result<ETag> {
        self.backend
            .put_and_unlock(container, key, value, handle, ttl)
    }

    /// Releases the lock. Without a new `ttl`, an item already past its expiry is gone at once
    /// (the lock had suspended its expiry); with one, its expiry restarts from now. The ETag
    /// does not change either way.
    pub fn unlock(
        &self,
        container: &str,
        key: &[u8],
        handle: LockHandle,
        ttl: Option<Ttl>,
    ) -> Result<()> {
        self.backend.unlock(container, key, handle, ttl)
    }

    // ----- the change feed (docs/spec.md §10) -----

    /// Committed changes with versions greater than `since`, oldest first: `options.max_changes`
    /// of them, or more when the last is a batch's, whose changes (one version) are never split
    /// between calls. Resume by passing the last version you processed. Fails with `Compacted`
    /// (naming the oldest available version) when `since` is older than the retained history.
    pub fn changes(&self, since: Version, options: &ChangesOptions) -> Result<Vec<Change>> {
        let mut changes = Vec::new();
        self.backend.visit_changes(since, options, &mut |change| {
            changes.push(change.to_owned(options.include_values));
            true
        })?;
        Ok(changes)
    }

    /// Like [`changes`](Self::changes) without copying: `visit` sees each change with its key
    /// and value borrowed, and returns `false` to stop (also inside a batch, which a caller
    /// resuming after the last version it saw would then skip the rest of).
    pub fn visit_changes(
        &self,
        since: Version,
        options: &ChangesOptions,
        visit: &mut dyn FnMut(ChangeRef<'_>) -> bool,
    ) -> Result<()> {
        self.backend.visit_changes(since, options, visit)
    }

    /// Blocks until a change newer than `since` is committed or `timeout` passes (no busy
    /// loop). Returns whether one is there.
    pub fn wait_for_changes(&self, since: Version, timeout: Duration) -> Result<bool> {
        self.backend.wait_for_changes(since, timeout)
    }

    // ----- space and inspection (docs/spec.md §7, §11) -----

    /// Reclaims superseded, deleted and expired versions now (compaction also runs in the
    /// background). Readers and writers keep going.
    pub fn compact(&self) -> Result<CompactionReport> {
        self.backend.compact()
    }

    /// Saves the index now, synced, so that an open after a crash loads it and replays only
    /// the log written after this call (docs/design.md §3 "The persisted index"). The
    /// background thread takes one whenever the log since the last has grown past
    /// max(64 MiB, 4 × the saved index's size); call this after a large load to bound the
    /// next open at once. Readers and writers keep going. Returns whether it saved one
    /// (`false` on a read-only store, or when a batch was still settling: call again).
    pub fn checkpoint(&self) -> Result<bool> {
        self.backend.checkpoint()
    }

    /// Records the expiry of up to `max_items` items past their TTL, each taking a version
    /// the change feed reports. Returns how many it recorded.
    pub fn sweep_expired(&self, max_items: usize) -> Result<usize> {
        self.backend.sweep_expired(max_items)
    }

    /// Counts containers, items, versions, live and dead bytes, active leases and locks.
    pub fn stats(&self) -> Result<StoreStats> {
        self.backend.stats()
    }

    /// The lengths of the store's log files added up. The files are sparse ahead of the
    /// tail: what they take on disk can be less (`du` counts that).
    pub fn log_bytes(&self) -> u64 {
        self.backend.log_bytes()
    }

    /// Where the store's history starts (a compaction moves it forward): a progress measure.
    #[doc(hidden)]
    pub fn log_start_offset(&self) -> u64 {
        self.backend.compaction_progress().0
    }

    /// Bytes of sealed history a `compact` call would rewrite now.
    #[doc(hidden)]
    pub fn sealed_bytes(&self) -> u64 {
        self.backend.compaction_progress().1
    }
}

#[cfg(test)]
impl Store {
    /// The local engine behind the store, for the engine's own tests.
    pub(crate) fn engine(&self) -> &crate::engine::core::Engine {
        self.backend
            .as_any()
            .downcast_ref::<crate::engine::LocalStore>()
            .expect("tests open local stores")
            .engine()
    }
}
