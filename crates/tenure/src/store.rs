//! `Store`: opening, containers, and the read side (get, list, snapshots). The write side of
//! items is in `write.rs`, batches in `batch.rs`.

use std::path::Path;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;

use crossbeam_epoch::Guard;
use parking_lot::Mutex;

use crate::catalog::{Catalog, ContainerState, Incarnation, LIVE};
use crate::clock::{Clock, ReadTime, Timestamp};
use crate::codec::Coordination;
use crate::codec::{self, DecodedRecord};
use crate::error::{Error, ErrorCode, Result};
use crate::etag::{ETag, Version};
use crate::index::{
    coordination_box, index_key, view, Index, IndexKey, ItemSlot, NewVersion, PlainEntries,
    Properties, ValueLocation, VersionNode, VersionRef, COMMITTED,
};
use crate::log::{record::HEADER_BYTES, Log, LogOptions};
use crate::options::{
    ContainerOptions, ContainerProperties, ContainerWriteOptions, Item, ItemRef, Limits, Page,
    ReadOptions, StoreOptions,
};
use crate::plain;
use crate::point_index::HintCell;
use crate::rules::conditions::{self, ItemFacts};
use crate::rules::lease::{self, ContainerOperation};
use crate::storage::{FileStorage, Storage};
use crate::validate;

/// An open store. Share it between threads by reference or in an `Arc`. Every operation is a
/// method of [`StoreShared`], reached through `Deref`.
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
    shared: Arc<StoreShared>,
    background: Option<crate::compaction::BackgroundCompaction>,
}

/// The engine state behind a [`Store`]: the log, the index, the catalog. Its methods are the
/// store's operations; it is not constructed directly.
pub struct StoreShared {
    pub(crate) log: Log,
    pub(crate) index: Index,
    pub(crate) catalog: Catalog,
    pub(crate) clock: Arc<dyn Clock>,
    pub(crate) limits: Limits,
    /// Open snapshots by version, and the oldest one (`u64::MAX` when none). Snapshot creation
    /// and pruning take this lock, so a prune never drops a version a new snapshot pins.
    pub(crate) snapshots: Mutex<crate::snapshot::OpenSnapshots>,
    pub(crate) oldest_snapshot: AtomicU64,
    pub(crate) lease_waiters: crate::coordination::LeaseWaiters,
    /// What the change feed must keep (versions, bytes behind the tail).
    pub(crate) feed_retention: (Option<u64>, Option<u64>),
    /// One compaction at a time; holds the log's tail when the last `compact` call ended.
    pub(crate) compaction: Mutex<u64>,
    closed: AtomicBool,
    /// The process that opened the store: a forked child's copy refuses every call.
    pub(crate) owner: crate::fork::OwningProcess,
}

impl std::ops::Deref for Store {
    type Target = StoreShared;

    fn deref(&self) -> &StoreShared {
        &self.shared
    }
}

/// The longest key any store takes (`Limits::max_key_bytes` is checked against it at open):
/// an index key, the 8-byte container id and the key, lives in a slot, whose size the slot
/// arena bounds (`slot.rs`, `arena.rs`).
const KEY_BYTES_CEILING: usize = crate::slot::MAXIMUM_INDEX_KEY_BYTES - 8;

/// How many cache lines from a hinted value's start a get begins to load early (3 covers a
/// 150-byte value in most positions); the rest of a larger value arrives as the copy reads it,
/// behind the processor's own sequential prefetching.
const PREFETCHED_VALUE_LINES: usize = 3;

impl Store {
    /// Opens the store in directory `path`, creating it if needed.
    pub fn open(path: impl AsRef<Path>, options: StoreOptions) -> Result<Store> {
        Store::open_with_storage(Arc::new(FileStorage::new(path.as_ref())), options)
    }

    /// Opens a store on any [`Storage`] (tests use the simulated disk).
    pub fn open_with_storage(storage: Arc<dyn Storage>, options: StoreOptions) -> Result<Store> {
        if !(1..=KEY_BYTES_CEILING).contains(&options.limits.max_key_bytes) {
            return Err(Error::invalid(
                "limits.max_key_bytes",
                format!(
                    "must be 1..={KEY_BYTES_CEILING}, got {}",
                    options.limits.max_key_bytes
                ),
            ));
        }
        let owner = crate::fork::OwningProcess::current();
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
                replay_record(
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
        let shared = Arc::new(StoreShared {
            log,
            index,
            catalog,
            clock: options.clock,
            limits: options.limits,
            snapshots: Mutex::new(crate::snapshot::OpenSnapshots::default()),
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
                crate::compaction::BackgroundCompaction::start(
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

impl StoreShared {
    /// The gate of every operation: `UsedAfterFork` in a forked child (checked first, so a
    /// child never reaches state a parent's thread may have held locked at the fork), then
    /// `Closed`.
    #[inline]
    pub(crate) fn check_open(&self) -> Result<()> {
        if self.owner.is_inherited() {
            return Err(self.used_after_fork());
        }
        if self.closed.load(Ordering::Acquire) {
            return Err(Error::Closed);
        }
        Ok(())
    }

    #[cold]
    fn used_after_fork(&self) -> Error {
        Error::UsedAfterFork {
            opened_by_pid: self.owner.pid(),
        }
    }

    /// Makes every acknowledged write durable (in `buffered` mode; `sync` writes already are).
    pub fn flush(&self) -> Result<()> {
        self.check_open()?;
        self.log.flush()
    }

    /// Bytes the log's segment files take on disk.
    pub fn log_bytes(&self) -> u64 {
        self.log.allocated_bytes()
    }

    /// The latest committed version.
    pub fn version(&self) -> Version {
        self.log.visible_version()
    }

    pub(crate) fn now(&self) -> Timestamp {
        self.clock.now()
    }

    // ----- containers -----

    pub fn create_container(
        &self,
        name: &str,
        options: &ContainerOptions,
    ) -> Result<ContainerProperties> {
        self.check_open()?;
        validate::container_name(name)?;
        validate::metadata(&options.metadata, &self.limits)?;
        crate::rules::ttl::container_default_ttl_seconds(
            options.default_ttl_seconds.map(i64::from),
        )?;
        let _changes = self.catalog.changes.lock();
        if self.catalog.live(name).is_some() {
            return Err(Error::rejected(ErrorCode::ContainerAlreadyExists));
        }
        let now = self.now();
        let payload = codec::encode_container_create(
            name,
            options.default_ttl_seconds,
            &options.metadata,
            now,
        );
        let mut reservation = self.log.reserve(payload.len())?;
        reservation.write_payload(&payload)?;
        let version = reservation.version();
        let incarnation = Arc::new(Incarnation {
            id: version,
            name: name.to_owned(),
            default_ttl_seconds: options.default_ttl_seconds,
            deleted_version: AtomicU64::new(LIVE),
            state: Mutex::new(ContainerState {
                lease: None,
                metadata: options.metadata.clone(),
                etag_version: version,
                last_modified: now,
            }),
        });
        self.catalog.insert(Arc::clone(&incarnation));
        reservation.commit()?;
        Ok(properties_of(&incarnation))
    }

    /// Deletes the container and, atomically, every item in it.
    pub fn delete_container(&self, name: &str, options: &ContainerWriteOptions) -> Result<()> {
        self.check_open()?;
        validate::container_name(name)?;
        validate::container_conditions(&options.conditions)?;
        let _changes = self.catalog.changes.lock();
        let incarnation = self
            .catalog
            .live(name)
            .ok_or_else(|| Error::rejected(ErrorCode::ContainerNotFound))?;
        check_container_write(
            &incarnation,
            options,
            ContainerOperation::Delete,
            self.now(),
        )?;
        let payload = codec::encode_container_delete(incarnation.id);
        let mut reservation = self.log.reserve(payload.len())?;
        reservation.write_payload(&payload)?;
        // Set before the record completes, so every item write ordered after it in the log
        // sees the deletion once its own record completes.
        incarnation
            .deleted_version
            .store(reservation.version(), Ordering::Release);
        reservation.commit()?;
        Ok(())
    }

    pub fn container_properties(&self, name: &str) -> Result<ContainerProperties> {
        self.check_open()?;
        validate::container_name(name)?;
        let incarnation = self
            .catalog
            .visible(name, self.version())
            .ok_or_else(|| Error::rejected(ErrorCode::ContainerNotFound))?;
        Ok(properties_of(&incarnation))
    }

    pub fn set_container_metadata(
        &self,
        name: &str,
        metadata: &[(String, String)],
        options: &ContainerWriteOptions,
    ) -> Result<ETag> {
        self.check_open()?;
        validate::container_name(name)?;
        validate::metadata(metadata, &self.limits)?;
        validate::container_conditions(&options.conditions)?;
        let _changes = self.catalog.changes.lock();
        let incarnation = self
            .catalog
            .live(name)
            .ok_or_else(|| Error::rejected(ErrorCode::ContainerNotFound))?;
        check_container_write(&incarnation, options, ContainerOperation::Other, self.now())?;
        let now = self.now();
        let payload = codec::encode_container_set_metadata(incarnation.id, metadata, now);
        let mut reservation = self.log.reserve(payload.len())?;
        reservation.write_payload(&payload)?;
        let version = reservation.version();
        {
            let mut state = incarnation.state.lock();
            state.metadata = metadata.to_vec();
            state.etag_version = version;
            state.last_modified = now;
        }
        reservation.commit()?;
        Ok(ETag(version))
    }

    pub fn list_containers(&self) -> Result<Vec<String>> {
        self.check_open()?;
        Ok(self.catalog.names_at(self.version()))
    }

    // ----- reads -----

    /// Reads an item (SPEC §3 read conditions).
    pub fn get(&self, container: &str, key: &[u8], options: &ReadOptions) -> Result<Item> {
        self.read_latest(container, key, options, ValueRead::Copy)
            .map(|(item, _)| item)
    }

    /// Like `get`, without the value.
    pub fn get_properties(
        &self,
        container: &str,
        key: &[u8],
        options: &ReadOptions,
    ) -> Result<Item> {
        self.read_latest(container, key, options, ValueRead::Skip)
            .map(|(item, _)| item)
    }

    /// The item if its version differs from `version`, else `None` (SPEC §6).
    pub fn get_if_newer(
        &self,
        container: &str,
        key: &[u8],
        version: Version,
    ) -> Result<Option<Item>> {
        let (item, _) =
            self.read_latest(container, key, &ReadOptions::default(), ValueRead::Copy)?;
        let facts = ItemFacts {
            etag: item.etag,
            version: item.version,
            last_modified: item.last_modified,
        };
        Ok(conditions::get_if_newer(version, Some(&facts))?.then_some(item))
    }

    /// A plain read: at the newest visible version, judged at the clock's time.
    fn read_latest(
        &self,
        container: &str,
        key: &[u8],
        options: &ReadOptions,
        value_read: ValueRead,
    ) -> Result<(Item, Option<ValueLocation>)> {
        self.check_open()?;
        self.read_at(
            self.version(),
            &ReadTime::from_clock(self.clock.as_ref()),
            container,
            key,
            options,
            value_read,
            false,
        )
    }

    #[allow(clippy::too_many_arguments)]
    pub(crate) fn read_at(
        &self,
        version: Version,
        time: &ReadTime<'_>,
        container: &str,
        key: &[u8],
        options: &ReadOptions,
        value_read: ValueRead,
        repeatable: bool,
    ) -> Result<(Item, Option<ValueLocation>)> {
        let key_bytes = self.read_index_key(container, key, options, version)?;
        retrying_plain_read(repeatable, || {
            let guard = crossbeam_epoch::pin();
            self.read_pinned(
                version, time, &key_bytes, key, options, value_read, repeatable, &guard,
            )
        })
    }

    /// Reads the newest version of an item and lends it to `read`, its value borrowed from
    /// the log's mapping: no copy of the value, nor a snapshot to take (`Snapshot::get_borrowed`
    /// borrows for as long as a snapshot lives). The borrow lasts for the call: until `read`
    /// returns, the epoch stays pinned, so compaction can take the segment out of the log but
    /// not unmap it, and a complete record is never written again. Keep `read` short, as a
    /// pinned thread holds back the reclamation of everything retired meanwhile.
    pub fn get_with<R>(
        &self,
        container: &str,
        key: &[u8],
        options: &ReadOptions,
        read: impl FnOnce(ItemRef<'_>) -> R,
    ) -> Result<R> {
        self.check_open()?;
        let guard = crossbeam_epoch::pin();
        let version = self.version();
        let time = ReadTime::from_clock(self.clock.as_ref());
        let key_bytes = self.read_index_key(container, key, options, version)?;
        // One guard for every attempt: what the first found stays mapped, and a retry after
        // a compaction race finds the copy, which was installed before its segment went.
        let (node, value) = retrying_plain_read(false, || {
            let node = self.find_pinned(
                version,
                &time,
                &key_bytes,
                options,
                ValueRead::Borrow,
                false,
                &guard,
            )?;
            let value = match node.value() {
                Some(location) => self.value_bytes(location, &guard)?,
                None => &[],
            };
            Ok((node, value))
        })?;
        // Borrowed from the node (under `guard`), nothing copied.
        let properties = node.properties();
        Ok(read(ItemRef {
            key,
            value,
            etag: ETag(node.etag_version()),
            version: node.etag_version(),
            last_modified: node.last_modified,
            content_type: properties.and_then(|properties| properties.content_type.as_deref()),
            metadata: properties.map_or(&[], |properties| &properties.metadata),
            expires_at: node.expires_at(),
        }))
    }

    /// A read's arguments checked (SPEC §13), and the index key of `key` in the incarnation
    /// of `container` visible at `version`.
    fn read_index_key(
        &self,
        container: &str,
        key: &[u8],
        options: &ReadOptions,
        version: Version,
    ) -> Result<IndexKey> {
        validate::container_name(container)?;
        validate::key(key, &self.limits)?;
        conditions::validate_read(&options.conditions)?;
        let container_id = self
            .catalog
            .visible_id(container, version)
            .ok_or_else(|| Error::rejected(ErrorCode::ContainerNotFound))?;
        Ok(index_key(container_id, key))
    }

    #[allow(clippy::too_many_arguments)]
    fn read_pinned(
        &self,
        version: Version,
        time: &ReadTime<'_>,
        key_bytes: &[u8],
        key: &[u8],
        options: &ReadOptions,
        value_read: ValueRead,
        repeatable: bool,
        guard: &Guard,
    ) -> Result<(Item, Option<ValueLocation>)> {
        let node = self.find_pinned(
            version, time, key_bytes, options, value_read, repeatable, guard,
        )?;
        let item = self.item_from(key, &node, value_read == ValueRead::Copy, guard)?;
        Ok((item, node.value()))
    }

    /// The version of `key_bytes` a read at `version` and `time` finds, once its lease and
    /// conditions are checked (`NotFound` when there is none).
    #[allow(clippy::too_many_arguments)]
    fn find_pinned<'g>(
        &self,
        version: Version,
        time: &ReadTime<'_>,
        key_bytes: &[u8],
        options: &ReadOptions,
        value_read: ValueRead,
        repeatable: bool,
        guard: &'g Guard,
    ) -> Result<VersionRef<'g>> {
        // A plain read re-reads the version once pinned: a segment removed before the pin was
        // compacted at a version no newer than this one, so nothing found points into it.
        let version = if repeatable {
            version
        } else {
            version.max(self.version())
        };
        // A hint's lines are loading while the slot is: a cold get waits for two cache misses
        // in a row (bucket, then slot and value together) instead of three. A plain head's
        // fields are the 36 bytes before its value (`plain.rs`), which start in the line before
        // the value's for more than half of the values: that line loads too, also when the
        // value itself is not read.
        let prefetch_value = |offset: u64| {
            let lines = match value_read {
                ValueRead::Skip => 2,
                ValueRead::Borrow | ValueRead::Copy => PREFETCHED_VALUE_LINES + 1,
            };
            self.log.prefetch(offset.saturating_sub(64), lines, guard);
        };
        let slot = self.index.get_prefetching(key_bytes, guard, prefetch_value);
        let node = match slot.as_deref() {
            Some(slot) => self.resolve(slot, version, repeatable, guard)?,
            None => None,
        }
        .filter(|node| node.is_live_for(time));
        let Some(node) = node else {
            conditions::check_read(&options.conditions, None)?;
            return Err(Error::rejected(ErrorCode::NotFound));
        };
        let facts = facts_of(&node);
        let lease_time = match node.lease() {
            Some(_) => time.now(),
            // Without a lease the check judges nothing against the time.
            None => Timestamp::MIN,
        };
        lease::check_lease_for_item_operation(
            node.lease(),
            lease_time,
            options.lease_id,
            lease::Access::Read,
        )
        .map_err(|error| crate::rules::with_current_etag(error, Some(facts.etag)))?;
        conditions::check_read(&options.conditions, Some(&facts))?;
        Ok(node)
    }

    /// The node a reader at `version` sees. A snapshot (`repeatable`) pins its version, so no
    /// prune can take its nodes. A plain read may move forward: a writer's prune keeps only the
    /// newest node at or below the `visible` version *it* read, which can be newer than the
    /// reader's; when the walk falls off the chain the reader retries at a fresh version, which
    /// is at least that prune's. And a plain write may replace a head and its chain outright
    /// (`plain.rs`): the plain head it leaves, newer than every visible version, may hide the
    /// version the reader would see, so the reader waits for that write to complete (it is
    /// copying its record) and reads it.
    pub(crate) fn resolve<'g>(
        &self,
        slot: &crate::index::ItemSlot,
        version: Version,
        repeatable: bool,
        guard: &'g Guard,
    ) -> Result<Option<VersionRef<'g>>> {
        const MAX_FRESH_READS: usize = 64;
        let mut fields = self.log.reader(guard);
        let mut version = version;
        for _ in 0..MAX_FRESH_READS {
            let node = slot.visible(version, guard, &mut fields)?;
            if node.is_some() || repeatable {
                return Ok(node);
            }
            let mut fresh = self.version();
            if fresh == version {
                let head = slot.head().load(Ordering::Acquire, guard);
                let Some(offset) = plain::offset_of(head) else {
                    return Ok(None);
                };
                let newer = fields.plain_entry_at(offset)?.version;
                if newer <= version {
                    return Ok(None);
                }
                self.log.wait(newer)?;
                fresh = self.version();
            }
            version = fresh;
        }
        Ok(None)
    }

    pub(crate) fn item_from(
        &self,
        key: &[u8],
        node: &VersionNode,
        with_value: bool,
        guard: &Guard,
    ) -> Result<Item> {
        let value = match (with_value, node.value()) {
            (true, Some(location)) => Some(self.value_bytes(location, guard)?.to_vec()),
            _ => None,
        };
        let properties = node.properties();
        Ok(Item {
            key: key.to_vec(),
            value,
            etag: ETag(node.etag_version()),
            version: node.etag_version(),
            last_modified: node.last_modified,
            content_type: properties.and_then(|properties| properties.content_type.clone()),
            metadata: properties
                .map(|properties| properties.metadata.clone())
                .unwrap_or_default(),
            expires_at: node.expires_at(),
        })
    }

    pub(crate) fn value_bytes<'g>(
        &self,
        location: ValueLocation,
        guard: &'g Guard,
    ) -> Result<&'g [u8]> {
        self.log
            .read_bytes(location.offset(), location.length as usize, guard)
    }

    /// One page of the items of `container` whose keys start with `prefix`, in key order.
    pub fn list(
        &self,
        container: &str,
        prefix: &[u8],
        page_size: usize,
        continuation: Option<&str>,
        include_values: bool,
    ) -> Result<Page> {
        self.check_open()?;
        self.list_at(
            self.version(),
            self.now(),
            container,
            prefix,
            page_size,
            continuation,
            include_values,
            false,
        )
    }

    #[allow(clippy::too_many_arguments)]
    pub(crate) fn list_at(
        &self,
        version: Version,
        now: Timestamp,
        container: &str,
        prefix: &[u8],
        page_size: usize,
        continuation: Option<&str>,
        include_values: bool,
        repeatable: bool,
    ) -> Result<Page> {
        validate::container_name(container)?;
        validate::key_bound("prefix", prefix, &self.limits)?;
        if page_size == 0 || page_size > self.limits.max_page_size {
            return Err(Error::invalid(
                "page_size",
                format!("must be 1..={}", self.limits.max_page_size),
            ));
        }
        let incarnation = self
            .catalog
            .visible(container, version)
            .ok_or_else(|| Error::rejected(ErrorCode::ContainerNotFound))?;
        let full_prefix = index_key(incarnation.id, prefix);
        let start = match continuation {
            Some(token) => {
                let after = decode_continuation(token)?;
                if !after.starts_with(prefix) {
                    return Err(Error::invalid(
                        "continuation",
                        "the token belongs to another prefix",
                    ));
                }
                // The smallest key greater than `after`.
                let mut start = index_key(incarnation.id, &after).to_vec();
                start.push(0);
                start.into_boxed_slice()
            }
            None => Box::from(&*full_prefix),
        };
        let guard = crossbeam_epoch::pin();
        let version = if repeatable {
            version
        } else {
            version.max(self.version())
        };
        let mut items = Vec::new();
        let mut continuation = None;
        // Bounded look-ahead for "is there another item?" past a full page.
        const LOOK_AHEAD_SLOTS: usize = 1024;
        let mut looked_ahead = 0;
        for slot in self.walk(&start, &full_prefix, include_values, &guard) {
            let Some(node) = self
                .resolve(&slot, version, repeatable, &guard)?
                .filter(|node| node.is_live_at(now))
            else {
                if items.len() == page_size {
                    looked_ahead += 1;
                    if looked_ahead >= LOOK_AHEAD_SLOTS {
                        continuation = Some(encode_continuation(
                            items.last().map_or(prefix, |item: &Item| &item.key),
                        ));
                        break;
                    }
                }
                continue;
            };
            if items.len() == page_size {
                continuation = Some(encode_continuation(&items[page_size - 1].key));
                break;
            }
            items.push(self.item_from(slot.key(), &node, include_values, &guard)?);
        }
        Ok(Page {
            items,
            continuation,
        })
    }
}

/// Runs a plain read `attempt`, again after a `Corruption` error, up to three times in all.
///
/// Compaction drops a segment from the log's table at once (only the file waits for the
/// epoch), so a plain read that found a version just before compaction swapped in its copy,
/// and was then descheduled past the removal, finds the segment gone. It reads again and
/// finds the copy. Not observed in a test — a guard for a narrow window; deferring the table
/// removal through the epoch would close it at the source. A real corruption fails every
/// attempt and is reported. A snapshot's read (`repeatable`) is not retried: compaction
/// removes no segment while a snapshot is open.
fn retrying_plain_read<T>(repeatable: bool, mut attempt: impl FnMut() -> Result<T>) -> Result<T> {
    const PLAIN_READ_ATTEMPTS: usize = 3;
    let mut attempts = 1;
    loop {
        match attempt() {
            Err(error)
                if error.code() == ErrorCode::Corruption
                    && !repeatable
                    && attempts < PLAIN_READ_ATTEMPTS =>
            {
                attempts += 1;
            }
            result => return result,
        }
    }
}

/// What a read does with the item's value.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum ValueRead {
    /// Not touched (`get_properties`).
    Skip,
    /// Read in place by the caller (`Snapshot::get_borrowed`): loaded early from the
    /// point index's hint, as for a copy, but not copied.
    Borrow,
    /// Copied into the item (`get`).
    Copy,
}

pub(crate) fn facts_of(node: &VersionNode) -> ItemFacts {
    ItemFacts {
        etag: ETag(node.etag_version()),
        version: node.etag_version(),
        last_modified: node.last_modified,
    }
}

fn properties_of(incarnation: &Incarnation) -> ContainerProperties {
    let state = incarnation.state.lock();
    ContainerProperties {
        name: incarnation.name.clone(),
        etag: ETag(state.etag_version),
        last_modified: state.last_modified,
        metadata: state.metadata.clone(),
        default_ttl_seconds: incarnation.default_ttl_seconds,
    }
}

/// Container writes check the container's lease (SPEC §5), then date and ETag conditions on
/// the container's own ETag.
fn check_container_write(
    incarnation: &Incarnation,
    options: &ContainerWriteOptions,
    operation: ContainerOperation,
    now: Timestamp,
) -> Result<()> {
    let conditions = &options.conditions;
    let state = incarnation.state.lock();
    lease::check_lease_for_container_operation(
        state.lease.as_ref(),
        now,
        options.lease_id,
        operation,
    )?;
    let facts = ItemFacts {
        etag: ETag(state.etag_version),
        version: state.etag_version,
        last_modified: state.last_modified,
    };
    conditions::check_write_conditions(conditions::WriteKind::SetMetadata, conditions, Some(&facts))
}

const CONTINUATION_PREFIX: &str = "t1.";

fn encode_continuation(key: &[u8]) -> String {
    let mut token = String::with_capacity(CONTINUATION_PREFIX.len() + key.len() * 2);
    token.push_str(CONTINUATION_PREFIX);
    for byte in key {
        token.push_str(&format!("{byte:02x}"));
    }
    token
}

fn decode_continuation(token: &str) -> Result<Vec<u8>> {
    let invalid = || Error::invalid("continuation", "not a continuation token tenure issued");
    let hex = token
        .strip_prefix(CONTINUATION_PREFIX)
        .ok_or_else(invalid)?;
    if hex.len() % 2 != 0 || hex.is_empty() || hex.len() > 2 * 1024 {
        return Err(invalid());
    }
    (0..hex.len())
        .step_by(2)
        .map(|at| u8::from_str_radix(&hex[at..at + 2], 16).map_err(|_| invalid()))
        .collect()
}

/// Applies one recovered record to the index (single-threaded, at open; `inspect` replays
/// into a scratch index to check a log).
pub(crate) fn replay_record(
    index: &Index,
    catalog: &Catalog,
    now: Timestamp,
    version: Version,
    location: u64,
    payload: &[u8],
    earlier: &mut impl PlainEntries,
) -> Result<()> {
    let corrupt = |reason: &str| {
        Error::corruption(
            "log",
            location,
            format!("engine record at version {version}: {reason}"),
        )
    };
    let record = codec::decode(payload).map_err(corrupt)?;
    // Writes check keys against the limit the store opened with, which is at most the
    // slot's; a longer key in the log is damage (or a build without that bound).
    let key_fits = |key: &[u8]| key.len() <= KEY_BYTES_CEILING;
    let keys_fit = match &record {
        DecodedRecord::Items(items) => items.iter().all(|item| key_fits(item.write.key)),
        DecodedRecord::RelocatedItems(items) => {
            items.iter().all(|(_, item)| key_fits(item.write.key))
        }
        DecodedRecord::ItemCoordination { key, .. } => key_fits(key),
        _ => true,
    };
    if !keys_fit {
        return Err(corrupt(&format!(
            "a key is longer than {KEY_BYTES_CEILING} bytes"
        )));
    }
    match record {
        DecodedRecord::Items(items) => {
            for item in items {
                replay_item(
                    index,
                    catalog,
                    (version, now),
                    (location, payload),
                    &item,
                    false,
                    earlier,
                )?;
            }
        }
        DecodedRecord::RelocatedItems(items) => {
            for (original_version, item) in items {
                replay_item(
                    index,
                    catalog,
                    (original_version, now),
                    (location, payload),
                    &item,
                    true,
                    earlier,
                )?;
            }
        }
        DecodedRecord::ItemCoordination {
            container_id,
            key,
            etag_version,
            expires_at,
            coordination,
        } => replay_coordination(
            index,
            catalog,
            (version, now),
            container_id,
            key,
            etag_version,
            expires_at,
            coordination,
            earlier,
        )?,
        DecodedRecord::ContainerState {
            id,
            name,
            default_ttl_seconds,
            etag_version,
            last_modified,
            metadata,
            lease,
        } => {
            let state = ContainerState {
                lease: lease.map(|lease| lease.clamped_after_reopen(now)),
                metadata,
                etag_version,
                last_modified,
            };
            match catalog
                .by_id(id)
                .filter(|incarnation| !Catalog::is_placeholder(incarnation))
            {
                Some(incarnation) => {
                    let mut current = incarnation.state.lock();
                    if etag_version >= current.etag_version {
                        *current = state;
                    }
                }
                None => catalog.resolve(Arc::new(Incarnation {
                    id,
                    name: name.to_owned(),
                    default_ttl_seconds,
                    deleted_version: AtomicU64::new(LIVE),
                    state: Mutex::new(state),
                })),
            }
        }
        DecodedRecord::ContainerCreate {
            name,
            default_ttl_seconds,
            metadata,
            created_at,
        } => {
            if catalog.live(name).is_some() {
                return Err(corrupt("container created twice"));
            }
            catalog.resolve(Arc::new(Incarnation {
                id: version,
                name: name.to_owned(),
                default_ttl_seconds,
                deleted_version: AtomicU64::new(LIVE),
                state: Mutex::new(ContainerState {
                    lease: None,
                    metadata,
                    etag_version: version,
                    last_modified: created_at,
                }),
            }));
        }
        DecodedRecord::ContainerDelete { container_id } => {
            if let Some(incarnation) = catalog.by_id(container_id) {
                incarnation
                    .deleted_version
                    .store(version, Ordering::Release);
            }
        }
        DecodedRecord::ContainerSetMetadata {
            container_id,
            metadata,
            modified_at,
        } => {
            if let Some(incarnation) = catalog.by_id(container_id) {
                let mut state = incarnation.state.lock();
                state.metadata = metadata;
                state.etag_version = version;
                state.last_modified = modified_at;
            }
        }
        DecodedRecord::ContainerLease {
            container_id,
            lease,
        } => {
            if let Some(incarnation) = catalog.by_id(container_id) {
                incarnation.state.lock().lease = lease.map(|lease| lease.clamped_after_reopen(now));
            }
        }
    }
    Ok(())
}

/// Installs one recovered item version. A relocated copy (`relocated`) applies only if nothing
/// newer for its key was replayed before it: compaction may have copied it forward while a
/// newer write raced it into the log.
#[allow(clippy::too_many_arguments)]
fn replay_item(
    index: &Index,
    catalog: &Catalog,
    (version, now): (Version, Timestamp),
    (location, payload): (u64, &[u8]),
    item: &codec::DecodedItem<'_>,
    relocated: bool,
    earlier: &mut impl PlainEntries,
) -> Result<()> {
    let incarnation = catalog.by_id_or_placeholder(item.write.container_id);
    if !incarnation.is_live() {
        return Ok(());
    }
    let guard = crossbeam_epoch::pin();
    let (slot, hint_cell) =
        index.get_or_insert_replaying(&index_key(incarnation.id, item.write.key), &guard);
    let head = slot.head().load(Ordering::Acquire, &guard);
    if relocated && view(head, earlier)?.is_some_and(|node| node.version > version) {
        return Ok(());
    }
    let etag_version = if item.write.etag_version == 0 {
        version
    } else {
        item.write.etag_version
    };
    let value_offset = location + HEADER_BYTES as u64 + item.value_offset as u64;
    let node = VersionNode::new(NewVersion {
        version,
        etag_version,
        status: COMMITTED,
        value: item.write.value.map(|value| {
            ValueLocation::new(
                location + HEADER_BYTES as u64 + item.value_offset as u64,
                value.len() as u32,
            )
        }),
        last_modified: item.write.last_modified,
        expires_at: item.write.expires_at,
        properties: properties_box(item.write.content_type, item.metadata.clone()),
        coordination: coordination_box(crate::coordination::clamp_after_reopen(
            item.coordination.clone(),
            now,
        )),
    });
    // Nothing can see older versions at open, so a version its entry says in full (written
    // since session 14, without properties or coordination) becomes the key's plain head.
    if earlier.allows_plain_heads()
        && plain_entry_matches(payload, item.value_offset, value_offset, &node)
    {
        index.note_expiry(node.expires_at());
        slot.replace_chain_with_plain(value_offset, &guard);
        if let Some(location) = node.value() {
            index.note_value_location(slot.index_key(), Some(hint_cell), location);
        }
        return Ok(());
    }
    install_replayed(index, (&slot, hint_cell), head, node, &guard);
    Ok(())
}

/// Whether the entry whose value starts at `value_offset_in_payload` of `payload` (at
/// `value_offset` in the log) is plain and describes exactly `node`: then a plain head
/// naming it reads back as `node`.
fn plain_entry_matches(
    payload: &[u8],
    value_offset_in_payload: usize,
    value_offset: u64,
    node: &VersionNode,
) -> bool {
    let Some(fields) = value_offset_in_payload
        .checked_sub(plain::FIELDS_BYTES)
        .and_then(|start| payload.get(start..value_offset_in_payload))
    else {
        return false;
    };
    let fields: &plain::Fields = fields.try_into().expect("a slice of the right length");
    crate::plain::Entry::read(value_offset, fields)
        .is_ok_and(|entry| entry.node().same_version_as(node))
}

/// A lease or lock change: the key's current version with new coordination state. Skipped
/// when the version it applied to is gone (compaction then carried the state forward).
#[allow(clippy::too_many_arguments)]
fn replay_coordination(
    index: &Index,
    catalog: &Catalog,
    (version, now): (Version, Timestamp),
    container_id: u64,
    key: &[u8],
    etag_version: Version,
    expires_at: Option<Timestamp>,
    coordination: Coordination,
    earlier: &mut impl PlainEntries,
) -> Result<()> {
    let coordination = crate::coordination::clamp_after_reopen(coordination, now);
    let incarnation = catalog.by_id_or_placeholder(container_id);
    if !incarnation.is_live() {
        return Ok(());
    }
    let guard = crossbeam_epoch::pin();
    let (slot, hint_cell) = index.get_or_insert_replaying(&index_key(incarnation.id, key), &guard);
    let head = slot.head().load(Ordering::Acquire, &guard);
    let current = view(head, earlier)?;
    let node = match current.as_deref() {
        Some(node) if node.value().is_some() && node.etag_version() == etag_version => {
            VersionNode::new(NewVersion {
                version,
                etag_version,
                status: COMMITTED,
                value: node.value(),
                last_modified: node.last_modified,
                expires_at,
                properties: node.properties().cloned().map(Box::new),
                coordination: coordination_box(coordination),
            })
        }
        // A lock on a key with no item (force-locked while absent).
        _ if etag_version == 0 => VersionNode::new(NewVersion {
            version,
            etag_version: 0,
            status: COMMITTED,
            value: None,
            last_modified: 0,
            expires_at: None,
            properties: None,
            coordination: coordination_box(coordination),
        }),
        _ => return Ok(()),
    };
    install_replayed(index, (&slot, hint_cell), head, node, &guard);
    Ok(())
}

fn install_replayed(
    index: &Index,
    (slot, hint_cell): (&ItemSlot, HintCell<'_>),
    head: crossbeam_epoch::Shared<'_, VersionNode>,
    node: VersionNode,
    guard: &Guard,
) {
    let version = node.version;
    let value = node.value();
    index.note_expiry(node.expires_at());
    if slot.install(head, node, guard).is_ok() {
        // Nothing can see older versions at open.
        slot.prune(version, guard);
        if let Some(location) = value {
            index.note_value_location(slot.index_key(), Some(hint_cell), location);
        }
    }
}

pub(crate) fn properties_box(
    content_type: Option<&str>,
    metadata: Vec<(String, String)>,
) -> Option<Box<Properties>> {
    if content_type.is_none() && metadata.is_empty() {
        return None;
    }
    Some(Box::new(Properties {
        content_type: content_type.map(str::to_owned),
        metadata,
    }))
}
