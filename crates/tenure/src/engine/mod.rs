//! `Store`: opening, containers, and the read side (get, list, snapshots). The write side of
//! items is in `write.rs`, batches in `batch.rs`.

pub(crate) mod batch;
pub(crate) mod compaction;
pub(crate) mod containers;
pub(crate) mod coordination;
pub(crate) mod core;
pub(crate) mod expiry;
pub(crate) mod feed;
pub(crate) mod lease_waiters;
pub(crate) mod open_snapshots;
pub(crate) mod read;
pub(crate) mod scan;
pub(crate) mod snapshot;
pub(crate) mod stats;
pub(crate) mod write;

use std::path::Path;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;

use parking_lot::Mutex;

pub use self::core::Engine;
use crate::backend::options::StoreOptions;
use crate::error::{Error, Result};
use crate::index::catalog::Catalog;
use crate::index::slot::MAXIMUM_KEY_BYTES;
use crate::index::Index;
use crate::log::{Log, LogOptions};
use crate::storage::{FileStorage, Storage};

/// An open store. Share it between threads by reference or in an `Arc`. Every operation is a
/// method of [`Engine`], reached through `Deref`.
///
/// # Processes and `fork()`
///
/// A store is open in one process at a time (a second open is `StoreLocked`). A child made by
/// `fork()` after the open inherits a copy of the handle that refuses every call with
/// [`ErrorCode::UsedAfterFork`] and changes nothing on disk; closing or dropping it there is
/// allowed and releases nothing the parent holds. A child that needs the store opens it
/// itself, once the parent has closed it; a worker pool that forks should open the store in
/// each worker instead of before the fork.
pub struct Store {
    shared: Arc<Engine>,
    background: Option<crate::engine::compaction::BackgroundCompaction>,
}

impl std::ops::Deref for Store {
    type Target = Engine;

    fn deref(&self) -> &Engine {
        &self.shared
    }
}

impl Store {
    /// Opens the store in directory `path`, creating it if needed.
    pub fn open(path: impl AsRef<Path>, options: StoreOptions) -> Result<Store> {
        Store::open_with_storage(Arc::new(FileStorage::new(path.as_ref())), options)
    }

    /// Opens a store on any [`Storage`] (tests use the simulated disk).
    pub fn open_with_storage(storage: Arc<dyn Storage>, options: StoreOptions) -> Result<Store> {
        if !(1..=MAXIMUM_KEY_BYTES).contains(&options.limits.max_key_bytes) {
            return Err(Error::invalid(
                "limits.max_key_bytes",
                format!(
                    "must be 1..={MAXIMUM_KEY_BYTES}, got {}",
                    options.limits.max_key_bytes
                ),
            ));
        }
        let owner = crate::base::fork::OwningProcess::current();
        let index = Index::new();
        let catalog = Catalog::default();
        let log_options = LogOptions {
            segment_size_bytes: options.segment_size_bytes,
            durability: options.durability,
            ..LogOptions::default()
        };
        // Leases recovered from the log are clamped against the clock at open (SPEC §11).
        let now = options.clock.now();
        let log = {
            let mut replay = |mut record: crate::log::RecoveredRecord<'_>| {
                crate::index::replay::replay_record(
                    &index,
                    &catalog,
                    now,
                    record.version,
                    record.location,
                    record.payload,
                    &mut record.earlier,
                )
            };
            Log::open(storage, &log_options, &mut replay)?
        };
        index.finish_replay();
        catalog.finish_replay();
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
            owner,
        });
        let background = background_interval
            .map(|interval| {
                crate::engine::compaction::BackgroundCompaction::start(
                    Arc::downgrade(&shared),
                    interval,
                    options.background_compaction_sealed_segments,
                )
            })
            .transpose()?;
        Ok(Store { shared, background })
    }

    /// Flushes and closes. Later calls (through other references) fail with `Closed`.
    ///
    /// In a child that inherited this handle through `fork()`, closing (or dropping) writes
    /// nothing, releases nothing the parent holds (the store's lock, its files, its threads)
    /// and takes no lock: the handle's memory is left to go with the child's process image.
    pub fn close(mut self) -> Result<()> {
        self.shutdown()
    }

    fn shutdown(&mut self) -> Result<()> {
        if self.shared.owner.is_inherited_or_cloned() {
            self.abandon_in_child();
            return Ok(());
        }
        if let Some(background) = self.background.take() {
            background.stop();
        }
        if self.shared.closed.swap(true, Ordering::AcqRel) {
            return Ok(());
        }
        self.shared.log.close()
    }
}

impl Store {
    /// Leaves an inherited store as the fork left it. Dropping the engine state would free
    /// slots and arena chunks under process-wide locks, and stopping the store's threads
    /// would join threads that do not exist here; either could wait forever on a lock that a
    /// thread of the parent held at the fork. Both are leaked instead, which is the child's
    /// memory only.
    fn abandon_in_child(&mut self) {
        self.shared.closed.store(true, Ordering::Release);
        std::mem::forget(self.background.take());
        std::mem::forget(Arc::clone(&self.shared));
    }
}

impl Drop for Store {
    fn drop(&mut self) {
        let _ = self.shutdown();
    }
}
