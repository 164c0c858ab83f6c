//! The seam between the public API (`api/`) and an engine: the operations docs/spec.md names,
//! as one trait for a store and one for a snapshot, and the requests and results they speak.
//!
//! The local engine (`engine/`: the log and the index) is the first implementation. Another
//! backend — a cluster that keeps the same rules — implements these two traits and nothing
//! else changes: `api/`, the C ABI, the Python module and the CLI reach every backend through
//! them. Every method keeps the contract of the `Store` or `Snapshot` method of the same name
//! (docs/spec.md): argument checks first, then the order of checks of §3, and a failed
//! operation changes nothing.
//!
//! Methods that lend borrowed data take a visitor (`&mut dyn FnMut`) instead of returning it,
//! so the trait stays object safe and a backend decides how long the borrow lasts.

pub mod batch;
pub(crate) mod options;
pub(crate) mod results;

use std::time::Duration;

use crate::error::Result;
use crate::rules::lease::{LeaseId, LeaseInfo};
use crate::rules::lock::LockHandle;
use crate::rules::ttl::Ttl;
use crate::types::{ETag, Version};
use batch::BatchOperations;
use options::{
    ContainerOptions, ContainerProperties, ContainerWriteOptions, Item, ItemRef, Page, ReadOptions,
    WriteOptions,
};
use results::{
    BorrowedItem, ChangeRef, ChangesOptions, CompactionReport, Lease, LeaseRequest, ScanEntry,
    StoreStats,
};

/// Which item write (docs/spec.md §3: `create` and `replace` are put with an existence rule).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PutKind {
    Put,
    Create,
    Replace,
}

/// An open store, as the public API sees it.
pub trait Backend: Send + Sync {
    /// Makes every acknowledged write durable, releases the store; later calls fail `Closed`.
    fn close(&self) -> Result<()>;
    fn flush(&self) -> Result<()>;
    /// The latest committed version.
    fn version(&self) -> Version;

    // Containers (docs/spec.md §1, §5).
    fn create_container(
        &self,
        name: &str,
        options: &ContainerOptions,
    ) -> Result<ContainerProperties>;
    fn delete_container(&self, name: &str, options: &ContainerWriteOptions) -> Result<()>;
    fn container_properties(&self, name: &str) -> Result<ContainerProperties>;
    fn set_container_metadata(
        &self,
        name: &str,
        metadata: &[(String, String)],
        options: &ContainerWriteOptions,
    ) -> Result<ETag>;
    fn list_containers(&self) -> Result<Vec<String>>;

    // Items (docs/spec.md §2, §3, §7).
    fn get(&self, container: &str, key: &[u8], options: &ReadOptions) -> Result<Item>;
    fn get_properties(&self, container: &str, key: &[u8], options: &ReadOptions) -> Result<Item>;
    /// Lends the newest version to `read` for the length of the call.
    fn get_with(
        &self,
        container: &str,
        key: &[u8],
        options: &ReadOptions,
        read: &mut dyn FnMut(ItemRef<'_>),
    ) -> Result<()>;
    fn list(
        &self,
        container: &str,
        prefix: &[u8],
        page_size: usize,
        continuation: Option<&str>,
        include_values: bool,
    ) -> Result<Page>;
    fn put(
        &self,
        kind: PutKind,
        container: &str,
        key: &[u8],
        value: &[u8],
        options: &WriteOptions,
    ) -> Result<ETag>;
    fn delete(&self, container: &str, key: &[u8], options: &WriteOptions) -> Result<()>;
    fn set_properties(&self, container: &str, key: &[u8], options: &WriteOptions) -> Result<ETag>;
    fn set_metadata(&self, container: &str, key: &[u8], options: &WriteOptions) -> Result<ETag>;
    fn update(
        &self,
        container: &str,
        key: &[u8],
        max_attempts: usize,
        change: &mut dyn FnMut(&[u8]) -> Vec<u8>,
    ) -> Result<Item>;

    // Batches (§8) and snapshots (§9).
    fn commit_batch(&self, batch: &BatchOperations) -> Result<Version>;
    fn snapshot(&self) -> Result<Box<dyn BackendSnapshot + '_>>;

    // Item leases (§4).
    fn acquire_lease(&self, container: &str, key: &[u8], request: &LeaseRequest) -> Result<Lease>;
    fn acquire_lease_wait(
        &self,
        container: &str,
        key: &[u8],
        request: &LeaseRequest,
        timeout: Duration,
    ) -> Result<Lease>;
    fn renew_lease(&self, container: &str, key: &[u8], id: LeaseId) -> Result<Lease>;
    fn change_lease(
        &self,
        container: &str,
        key: &[u8],
        id: LeaseId,
        proposed_id: LeaseId,
    ) -> Result<Lease>;
    fn release_lease(&self, container: &str, key: &[u8], id: LeaseId) -> Result<()>;
    fn break_lease(
        &self,
        container: &str,
        key: &[u8],
        period_seconds: Option<u32>,
    ) -> Result<Duration>;
    fn lease_info(&self, container: &str, key: &[u8]) -> Result<LeaseInfo>;

    // Container leases (§5).
    fn acquire_container_lease(&self, name: &str, request: &LeaseRequest) -> Result<Lease>;
    fn renew_container_lease(&self, name: &str, id: LeaseId) -> Result<Lease>;
    fn change_container_lease(
        &self,
        name: &str,
        id: LeaseId,
        proposed_id: LeaseId,
    ) -> Result<Lease>;
    fn release_container_lease(&self, name: &str, id: LeaseId) -> Result<()>;
    fn break_container_lease(&self, name: &str, period_seconds: Option<u32>) -> Result<Duration>;
    fn container_lease_info(&self, name: &str) -> Result<LeaseInfo>;

    // Cache locks (§6).
    fn get_and_lock(
        &self,
        container: &str,
        key: &[u8],
        lock_timeout: Duration,
        force: bool,
    ) -> Result<(Option<Item>, LockHandle)>;
    fn put_and_unlock(
        &self,
        container: &str,
        key: &[u8],
        value: &[u8],
        handle: LockHandle,
        ttl: Ttl,
    ) -> Result<ETag>;
    fn unlock(
        &self,
        container: &str,
        key: &[u8],
        handle: LockHandle,
        ttl: Option<Ttl>,
    ) -> Result<()>;

    // The change feed (§10).
    fn visit_changes(
        &self,
        since: Version,
        options: &ChangesOptions,
        visit: &mut dyn FnMut(ChangeRef<'_>) -> bool,
    ) -> Result<()>;
    fn wait_for_changes(&self, since: Version, timeout: Duration) -> Result<bool>;

    // Space and inspection (§7, §11).
    fn compact(&self) -> Result<CompactionReport>;
    /// Saves what an open after a crash would otherwise rebuild; whether it saved anything.
    fn checkpoint(&self) -> Result<bool>;
    fn sweep_expired(&self, max_items: usize) -> Result<usize>;
    fn stats(&self) -> Result<StoreStats>;
    /// Bytes the store's files take.
    fn log_bytes(&self) -> u64;
    /// Where the store's history starts (a compaction moves it forward), and how many bytes
    /// of sealed history a `compact` call would rewrite now: a progress measure.
    fn compaction_progress(&self) -> (u64, u64);
    /// The backend as `Any`, for what only one backend has (its own tests' probes).
    #[cfg(test)]
    fn as_any(&self) -> &dyn std::any::Any;
}

/// A repeatable view at one version (docs/spec.md §9).
pub trait BackendSnapshot: Send + Sync {
    fn version(&self) -> Version;
    fn get(&self, container: &str, key: &[u8], options: &ReadOptions) -> Result<Item>;
    fn get_properties(&self, container: &str, key: &[u8], options: &ReadOptions) -> Result<Item>;
    /// The item with its value borrowed for as long as the snapshot lives.
    fn get_borrowed(
        &self,
        container: &str,
        key: &[u8],
        options: &ReadOptions,
    ) -> Result<BorrowedItem<'_>>;
    fn list(
        &self,
        container: &str,
        prefix: &[u8],
        page_size: usize,
        continuation: Option<&str>,
        include_values: bool,
    ) -> Result<Page>;
    fn list_containers(&self) -> Result<Vec<String>>;
    fn scan(
        &self,
        container: &str,
        prefix: &[u8],
        from: &[u8],
        visit: &mut dyn FnMut(ScanEntry<'_>) -> bool,
    ) -> Result<usize>;
}
