//! `Store`: opening, containers, and the read side (get, list, snapshots). The write side of
//! items is in `write.rs`, batches in `batch.rs`.

pub(crate) mod after_open;
pub(crate) mod batch;
pub(crate) mod checkpoints;
pub(crate) mod checks;
pub(crate) mod compaction;
pub(crate) mod compactor;
pub(crate) mod containers;
pub(crate) mod coordination;
pub(crate) mod core;
pub(crate) mod expiry;
pub(crate) mod feed;
pub(crate) mod follow;
pub(crate) mod lease_waiters;
pub(crate) mod open_snapshots;
pub(crate) mod read;
pub(crate) mod scan;
pub(crate) mod snapshot;
pub(crate) mod stats;
pub(crate) mod write;

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Duration;

use parking_lot::Mutex;

use self::core::Engine;
use crate::backend::batch::BatchOperations;
use crate::backend::options::{
    ContainerOptions, ContainerProperties, ContainerWriteOptions, Item, ItemRef, Page, ReadOptions,
    StoreOptions, WriteOptions,
};
use crate::backend::results::{
    BorrowedItem, ChangeRef, ChangesOptions, CompactionReport, Lease, LeaseRequest, ScanEntry,
    StoreStats,
};
use crate::backend::{Backend, BackendSnapshot, PutKind};
use crate::error::{Error, Result};
use crate::index::catalog::Catalog;
use crate::index::checkpoint;
use crate::index::slot::MAXIMUM_KEY_BYTES;
use crate::index::Index;
use crate::log::{Log, LogOptions};
use crate::rules::lease::{LeaseId, LeaseInfo};
use crate::rules::lock::LockHandle;
use crate::rules::ttl::Ttl;
use crate::storage::Storage;
use crate::types::{ETag, Version};
use after_open::AfterOpen;
use compactor::BackgroundCompaction;

/// A store open on the local engine, with its background compaction and, after an open from
/// a persisted index, what that open left to do (`after_open.rs`).
pub(crate) struct LocalStore {
    engine: Arc<Engine>,
    background: Mutex<Option<BackgroundCompaction>>,
    after_open: Mutex<Option<AfterOpen>>,
}

/// Opens (creating if needed) the store on `storage`: replays the log into the index.
pub(crate) fn open(storage: Arc<dyn Storage>, options: StoreOptions) -> Result<LocalStore> {
    if !(1..=MAXIMUM_KEY_BYTES).contains(&options.limits.max_key_bytes) {
        return Err(Error::invalid(
            "limits.max_key_bytes",
            format!(
                "must be 1..={MAXIMUM_KEY_BYTES}, got {}",
                options.limits.max_key_bytes
            ),
        ));
    }
    if options.quota_bytes == Some(0) {
        return Err(Error::invalid(
            "quota_bytes",
            "must be positive (leave it unset for no quota)",
        ));
    }
    let owner = crate::base::fork::OwningProcess::current();
    let log_options = LogOptions {
        segment_size_bytes: options.segment_size_bytes,
        durability: options.durability,
        read_only: options.read_only,
        space_reserve_bytes: options.space_reserve_bytes,
        quota_bytes: options.quota_bytes,
        io_uring: options.io_uring,
        ..LogOptions::default()
    };
    // Leases recovered from the log are clamped against the clock at open (docs/spec.md §11).
    let now = options.clock.now();
    let Opened {
        log,
        index,
        catalog,
        checkpoint,
        replayed_log_bytes,
    } = replay_log(&storage, &log_options, now)?;
    if checkpoint.is_none() && !options.read_only {
        // A saved index the open could not use describes no state of this log: it would only
        // take disk. (A failure leaves it, for the next open to reject again.)
        let _ = storage.remove(checkpoint::CHECKPOINT_FILE);
    }
    let background_interval = options.background_compaction_interval;
    let shared = Arc::new(Engine {
        log,
        index,
        catalog,
        clock: options.clock,
        limits: options.limits,
        snapshots: Mutex::new(open_snapshots::OpenSnapshots::default()),
        oldest_snapshot: AtomicU64::new(u64::MAX),
        lease_waiters: Default::default(),
        compaction: Mutex::new(0),
        feed_retention: (
            options.change_feed_retention_versions,
            options.change_feed_retention_bytes,
        ),
        closed: AtomicBool::new(false),
        damaged: AtomicBool::new(false),
        damage: Mutex::new(None),
        owner,
        opened_from_persisted_index: checkpoint.is_some(),
        replayed_log_bytes_at_open: replayed_log_bytes,
        checkpointed: Mutex::new(checkpoint),
    });
    let background = if shared.log.is_following() {
        background_interval
            .map(|interval| {
                BackgroundCompaction::start_following(Arc::downgrade(&shared), interval)
            })
            .transpose()?
    } else {
        background_interval
            .filter(|_| !options.read_only)
            .map(|interval| {
                BackgroundCompaction::start(
                    Arc::downgrade(&shared),
                    interval,
                    options.background_compaction_sealed_segments,
                )
            })
            .transpose()?
    };
    let after_open = AfterOpen::start(&shared)?;
    Ok(LocalStore {
        engine: shared,
        background: Mutex::new(background),
        after_open: Mutex::new(Some(after_open)),
    })
}

/// How an open built its index.
pub(crate) struct Opened {
    log: Log,
    index: Index,
    catalog: Catalog,
    /// The persisted index at the anchor it was loaded from, when one was.
    checkpoint: Option<checkpoint::SavedAt>,
    /// Log bytes replayed into the index: from the persisted index's tail, or all of them.
    replayed_log_bytes: u64,
}

/// Opens the log and builds the index and catalog: from the persisted index, when one
/// describes a prefix of the log, with the records after it replayed onto it; otherwise by
/// replaying the whole log. A read-only open runs beside a writer, whose compaction may remove
/// a segment between the listing and its open: the open starts over, a bounded number of
/// times.
fn replay_log(
    storage: &Arc<dyn Storage>,
    log_options: &LogOptions,
    now: crate::clock::Timestamp,
) -> Result<Opened> {
    const READ_ONLY_OPEN_ATTEMPTS: usize = 8;
    let mut attempts = 0;
    let mut persisted = checkpoint::read(storage.as_ref()).map(Arc::new);
    loop {
        attempts += 1;
        let index = Index::new();
        let catalog = Catalog::default();
        // The persisted index loads on a thread of its own while the log is verified: an open
        // from it takes the longer of the two, not their sum. (A spawned thread, not a scope: a
        // scope makes the calling thread a `Thread` handle that a C program's main thread
        // never frees.)
        let mut loading = persisted.as_ref().map(|persisted| {
            let persisted = Arc::clone(persisted);
            std::thread::Builder::new()
                .name("tenure-index-load".into())
                .spawn(move || load_persisted(&persisted, now))
        });
        let mut loaded: Option<Loaded> = None;
        // A shard of the persisted index that a record after it needed and that did not
        // restore: the open starts over without the file (below).
        let mut restore_failed = false;
        let mut replay = |mut record: crate::log::RecoveredRecord<'_>| {
            if restore_failed {
                return Ok(());
            }
            let (index, catalog) = if record.onto_persisted_index {
                let loaded = loaded.get_or_insert_with(|| {
                    finish_loading(loading.take(), persisted.as_deref(), now)
                });
                match loaded {
                    Ok((index, catalog)) => (&*index, &*catalog),
                    // The open starts over without it (below): nothing to replay onto.
                    Err(_) => return Ok(()),
                }
            } else {
                (&index, &catalog)
            };
            let replayed = crate::index::replay::replay_record(
                crate::index::replay::Applying::AtOpen,
                index,
                catalog,
                now,
                record.version,
                record.location,
                record.payload,
                &mut record.earlier,
            );
            match replayed {
                Err(error) if record.onto_persisted_index && is_persisted_index_error(&error) => {
                    restore_failed = true;
                    Ok(())
                }
                replayed => replayed,
            }
        };
        let anchor = persisted.as_ref().map(|persisted| &persisted.anchor);
        let opened = Log::open_at(Arc::clone(storage), log_options, anchor, &mut replay);
        let loaded = loaded.or_else(|| {
            loading
                .take()
                .map(|loading| finish_loading(Some(loading), persisted.as_deref(), now))
        });
        match opened {
            Ok((log, true)) => match loaded {
                Some(Ok((index, catalog))) if !restore_failed => {
                    let persisted = persisted.as_ref().expect("anchored to it");
                    catalog.finish_replay();
                    let tail = log.tail_offset();
                    return Ok(Opened {
                        replayed_log_bytes: tail.saturating_sub(persisted.anchor.tail),
                        checkpoint: Some(persisted.saved_at()),
                        log,
                        index,
                        catalog,
                    });
                }
                // Checksums held but the content did not decode (a bug, or a file made
                // elsewhere): open again and replay.
                _ => {
                    drop(log);
                    persisted = None;
                }
            },
            Ok((log, false)) => {
                catalog.finish_replay();
                let start = log.first_slot() * log.slot_size_bytes();
                return Ok(Opened {
                    replayed_log_bytes: log.tail_offset().saturating_sub(start),
                    checkpoint: None,
                    log,
                    index,
                    catalog,
                });
            }
            Err(error)
                if log_options.read_only
                    && attempts < READ_ONLY_OPEN_ATTEMPTS
                    && is_removed_segment(&error) => {}
            Err(error) => return Err(error),
        }
    }
}

type Loaded = std::result::Result<(Index, Catalog), &'static str>;

/// The persisted index's load, joined (or run here when no thread could be had for it).
fn finish_loading(
    loading: Option<std::io::Result<std::thread::JoinHandle<Loaded>>>,
    persisted: Option<&checkpoint::Checkpoint>,
    now: crate::clock::Timestamp,
) -> Loaded {
    match loading {
        Some(Ok(thread)) => thread
            .join()
            .unwrap_or_else(|panic| std::panic::resume_unwind(panic)),
        _ => match persisted {
            Some(persisted) => load_persisted(persisted, now),
            None => Err("no persisted index"),
        },
    }
}

/// A new catalog filled from `persisted`, and an index that restores its items as they are
/// needed (`index/restore.rs`).
fn load_persisted(persisted: &checkpoint::Checkpoint, now: crate::clock::Timestamp) -> Loaded {
    let catalog = Catalog::default();
    let index = persisted.open_index(&catalog, now)?;
    Ok((index, catalog))
}

/// Whether `error` is a persisted index's shard that did not restore.
fn is_persisted_index_error(error: &Error) -> bool {
    matches!(error, Error::Corruption { file, .. } if file.ends_with(checkpoint::CHECKPOINT_FILE))
}

/// Whether `error` is a segment file that went away (a writer's compaction removed it).
fn is_removed_segment(error: &Error) -> bool {
    match error {
        Error::Io { path, source, .. } => {
            source.kind() == std::io::ErrorKind::NotFound
                && path
                    .file_name()
                    .and_then(|name| name.to_str())
                    .is_some_and(|name| {
                        crate::log::segment::Segment::parse_file_name(name).is_some()
                    })
        }
        _ => false,
    }
}

impl LocalStore {
    fn shutdown(&self) -> Result<()> {
        if self.engine.owner.is_inherited_or_cloned() {
            self.abandon_in_child();
            return Ok(());
        }
        // First: the check after the open holds the compaction lock, and the compactor may be
        // waiting for it; stopped first, the check ends at its next segment.
        if let Some(after_open) = self.after_open.lock().take() {
            after_open.stop();
        }
        if let Some(background) = self.background.lock().take() {
            background.stop();
        }
        if self.engine.closed.swap(true, Ordering::AcqRel) {
            return Ok(());
        }
        self.engine.log.close()?;
        self.persist_index();
        Ok(())
    }

    /// After a clean close: saves the index for the next open (`index/checkpoint/`). Only
    /// an accelerator, so a failure is not the close's: the next open replays the log from
    /// the last checkpoint, or whole.
    fn persist_index(&self) {
        let engine = &self.engine;
        if engine.index.restore_failed() {
            // The file's checksums held but a shard did not decode: the next open must not
            // use it again, nor can this index be saved whole.
            engine.forget_saved_index();
            return;
        }
        if engine.damaged.load(Ordering::Acquire) {
            // The log is damaged below it: the next open must read the whole log and refuse.
            return;
        }
        if let Some(anchor) = engine.log.anchor_after_close() {
            // Nothing written since the saved index was: it describes the log as it is.
            let saved = *engine.checkpointed.lock();
            if saved.is_some_and(|saved| {
                saved.tail == anchor.tail && saved.first_slot == anchor.first_slot
            }) {
                return;
            }
            let _ = checkpoint::write(
                engine.log.storage().as_ref(),
                &anchor,
                &engine.index,
                &checkpoint::SavedContainers::of(&engine.catalog),
                checkpoint::Save::Unsynced,
                &|| false,
                || {},
            );
        }
    }

    /// Leaves an inherited store as the fork left it. Dropping the engine state would free
    /// slots and arena chunks under process-wide locks, and stopping the store's threads
    /// would join threads that do not exist here; either could wait forever on a lock that a
    /// thread of the parent held at the fork. Both are leaked instead, which is the child's
    /// memory only.
    fn abandon_in_child(&self) {
        self.engine.closed.store(true, Ordering::Release);
        if let Some(mut background) = self.background.try_lock() {
            std::mem::forget(background.take());
        }
        if let Some(mut after_open) = self.after_open.try_lock() {
            std::mem::forget(after_open.take());
        }
        std::mem::forget(Arc::clone(&self.engine));
    }
}

impl Drop for LocalStore {
    fn drop(&mut self) {
        let _ = self.shutdown();
    }
}

impl Backend for LocalStore {
    fn close(&self) -> Result<()> {
        self.shutdown()
    }

    fn flush(&self) -> Result<()> {
        self.engine.flush()
    }

    fn version(&self) -> Version {
        // A following open first reads what other processes committed, through the gate: a
        // forked child's copy reads nothing (and takes no lock a parent's thread may have
        // held at the fork). A failure shows at the next operation, which meets it again.
        let _ = self.engine.check_open();
        self.engine.version()
    }

    fn create_container(
        &self,
        name: &str,
        options: &ContainerOptions,
    ) -> Result<ContainerProperties> {
        self.engine.create_container(name, options)
    }

    fn delete_container(&self, name: &str, options: &ContainerWriteOptions) -> Result<()> {
        self.engine.delete_container(name, options)
    }

    fn container_properties(&self, name: &str) -> Result<ContainerProperties> {
        self.engine.container_properties(name)
    }

    fn set_container_metadata(
        &self,
        name: &str,
        metadata: &[(String, String)],
        options: &ContainerWriteOptions,
    ) -> Result<ETag> {
        self.engine.set_container_metadata(name, metadata, options)
    }

    fn list_containers(&self) -> Result<Vec<String>> {
        self.engine.list_containers()
    }

    fn get(&self, container: &str, key: &[u8], options: &ReadOptions) -> Result<Item> {
        self.engine.get(container, key, options)
    }

    fn get_properties(&self, container: &str, key: &[u8], options: &ReadOptions) -> Result<Item> {
        self.engine.get_properties(container, key, options)
    }

    fn get_with(
        &self,
        container: &str,
        key: &[u8],
        options: &ReadOptions,
        read: &mut dyn FnMut(ItemRef<'_>),
    ) -> Result<()> {
        self.engine.get_with(container, key, options, read)
    }

    fn list(
        &self,
        container: &str,
        prefix: &[u8],
        page_size: usize,
        continuation: Option<&str>,
        include_values: bool,
    ) -> Result<Page> {
        self.engine
            .list(container, prefix, page_size, continuation, include_values)
    }

    fn put(
        &self,
        kind: PutKind,
        container: &str,
        key: &[u8],
        value: &[u8],
        options: &WriteOptions,
    ) -> Result<ETag> {
        match kind {
            PutKind::Put => self.engine.put(container, key, value, options),
            PutKind::Create => self.engine.create(container, key, value, options),
            PutKind::Replace => self.engine.replace(container, key, value, options),
        }
    }

    fn delete(&self, container: &str, key: &[u8], options: &WriteOptions) -> Result<()> {
        self.engine.delete(container, key, options)
    }

    fn set_properties(&self, container: &str, key: &[u8], options: &WriteOptions) -> Result<ETag> {
        self.engine.set_properties(container, key, options)
    }

    fn set_metadata(&self, container: &str, key: &[u8], options: &WriteOptions) -> Result<ETag> {
        self.engine.set_metadata(container, key, options)
    }

    fn update(
        &self,
        container: &str,
        key: &[u8],
        max_attempts: usize,
        change: &mut dyn FnMut(&[u8]) -> Vec<u8>,
    ) -> Result<Item> {
        self.engine.update(container, key, max_attempts, change)
    }

    fn commit_batch(&self, batch: &BatchOperations) -> Result<Version> {
        self.engine.commit_batch(batch)
    }

    fn snapshot(&self) -> Result<Box<dyn BackendSnapshot + '_>> {
        Ok(Box::new(self.engine.snapshot()?))
    }

    fn acquire_lease(&self, container: &str, key: &[u8], request: &LeaseRequest) -> Result<Lease> {
        self.engine.acquire_lease(container, key, request)
    }

    fn acquire_lease_wait(
        &self,
        container: &str,
        key: &[u8],
        request: &LeaseRequest,
        timeout: Duration,
    ) -> Result<Lease> {
        self.engine
            .acquire_lease_wait(container, key, request, timeout)
    }

    fn renew_lease(&self, container: &str, key: &[u8], id: LeaseId) -> Result<Lease> {
        self.engine.renew_lease(container, key, id)
    }

    fn change_lease(
        &self,
        container: &str,
        key: &[u8],
        id: LeaseId,
        proposed_id: LeaseId,
    ) -> Result<Lease> {
        self.engine.change_lease(container, key, id, proposed_id)
    }

    fn release_lease(&self, container: &str, key: &[u8], id: LeaseId) -> Result<()> {
        self.engine.release_lease(container, key, id)
    }

    fn break_lease(
        &self,
        container: &str,
        key: &[u8],
        period_seconds: Option<u32>,
    ) -> Result<Duration> {
        self.engine.break_lease(container, key, period_seconds)
    }

    fn lease_info(&self, container: &str, key: &[u8]) -> Result<LeaseInfo> {
        self.engine.lease_info(container, key)
    }

    fn acquire_container_lease(&self, name: &str, request: &LeaseRequest) -> Result<Lease> {
        self.engine.acquire_container_lease(name, request)
    }

    fn renew_container_lease(&self, name: &str, id: LeaseId) -> Result<Lease> {
        self.engine.renew_container_lease(name, id)
    }

    fn change_container_lease(
        &self,
        name: &str,
        id: LeaseId,
        proposed_id: LeaseId,
    ) -> Result<Lease> {
        self.engine.change_container_lease(name, id, proposed_id)
    }

    fn release_container_lease(&self, name: &str, id: LeaseId) -> Result<()> {
        self.engine.release_container_lease(name, id)
    }

    fn break_container_lease(&self, name: &str, period_seconds: Option<u32>) -> Result<Duration> {
        self.engine.break_container_lease(name, period_seconds)
    }

    fn container_lease_info(&self, name: &str) -> Result<LeaseInfo> {
        self.engine.container_lease_info(name)
    }

    fn get_and_lock(
        &self,
        container: &str,
        key: &[u8],
        lock_timeout: Duration,
        force: bool,
    ) -> Result<(Option<Item>, LockHandle)> {
        self.engine
            .get_and_lock(container, key, lock_timeout, force)
    }

    fn put_and_unlock(
        &self,
        container: &str,
        key: &[u8],
        value: &[u8],
        handle: LockHandle,
        ttl: Ttl,
    ) -> Result<ETag> {
        self.engine
            .put_and_unlock(container, key, value, handle, ttl)
    }

    fn unlock(
        &self,
        container: &str,
        key: &[u8],
        handle: LockHandle,
        ttl: Option<Ttl>,
    ) -> Result<()> {
        self.engine.unlock(container, key, handle, ttl)
    }

    fn visit_changes(
        &self,
        since: Version,
        options: &ChangesOptions,
        visit: &mut dyn FnMut(ChangeRef<'_>) -> bool,
    ) -> Result<()> {
        self.engine.visit_changes(since, options, visit)
    }

    fn wait_for_changes(&self, since: Version, timeout: Duration) -> Result<bool> {
        self.engine.wait_for_changes(since, timeout)
    }

    fn compact(&self) -> Result<CompactionReport> {
        self.engine.compact()
    }

    fn checkpoint(&self) -> Result<bool> {
        Ok(self.engine.checkpoint(&|| false)?.is_some())
    }

    fn sweep_expired(&self, max_items: usize) -> Result<usize> {
        self.engine.sweep_expired(max_items)
    }

    fn stats(&self) -> Result<StoreStats> {
        self.engine.stats()
    }

    fn log_bytes(&self) -> u64 {
        self.engine.log_bytes()
    }

    fn compaction_progress(&self) -> (u64, u64) {
        (self.engine.log_start_offset(), self.engine.sealed_bytes())
    }

    #[cfg(test)]
    fn as_any(&self) -> &dyn std::any::Any {
        self
    }
}

impl LocalStore {
    /// The engine behind the store, for the engine's own tests.
    #[cfg(test)]
    pub(crate) fn engine(&self) -> &Engine {
        &self.engine
    }
}

impl BackendSnapshot for snapshot::Snapshot<'_> {
    fn version(&self) -> Version {
        snapshot::Snapshot::version(self)
    }

    fn get(&self, container: &str, key: &[u8], options: &ReadOptions) -> Result<Item> {
        snapshot::Snapshot::get(self, container, key, options)
    }

    fn get_properties(&self, container: &str, key: &[u8], options: &ReadOptions) -> Result<Item> {
        snapshot::Snapshot::get_properties(self, container, key, options)
    }

    fn get_borrowed(
        &self,
        container: &str,
        key: &[u8],
        options: &ReadOptions,
    ) -> Result<BorrowedItem<'_>> {
        snapshot::Snapshot::get_borrowed(self, container, key, options)
    }

    fn list(
        &self,
        container: &str,
        prefix: &[u8],
        page_size: usize,
        continuation: Option<&str>,
        include_values: bool,
    ) -> Result<Page> {
        snapshot::Snapshot::list(
            self,
            container,
            prefix,
            page_size,
            continuation,
            include_values,
        )
    }

    fn list_containers(&self) -> Result<Vec<String>> {
        snapshot::Snapshot::list_containers(self)
    }

    fn scan(
        &self,
        container: &str,
        prefix: &[u8],
        from: &[u8],
        visit: &mut dyn FnMut(ScanEntry<'_>) -> bool,
    ) -> Result<usize> {
        snapshot::Snapshot::scan(self, container, prefix, from, visit)
    }
}
