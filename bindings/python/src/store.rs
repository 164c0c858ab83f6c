//! `tenure.open` and `tenure.Store`: the open store, containers, container leases, snapshots,
//! batches, compaction and close.

use std::collections::HashMap;
use std::path::PathBuf;
use std::sync::{Arc, Weak};
use std::time::{Duration, Instant};

use parking_lot::{Mutex, RwLock};
use pyo3::exceptions::PyTypeError;
use pyo3::prelude::*;
use pyo3::types::{PyDict, PyString};

use tenure::{
    ContainerOptions, ContainerWriteOptions, Durability, Error, ErrorCode, LeaseDuration, LeaseId,
    LeaseRequest, Limits, Store as EngineStore, StoreOptions,
};

use crate::batch::Batch;
use crate::clock::ManualClock;
use crate::container::Container;
use crate::convert;
use crate::errors::{Context, IntoPyResult};
use crate::lease::{Lease, LeaseDurationArg, LeaseInfo, LeaseTarget};
use crate::snapshot::{Snapshot, SnapshotCell};

/// How long `close()` waits for calls still running in other threads (a waiting lease acquire
/// can take long) before leaving the final close to the last of them.
const CLOSE_WAIT: Duration = Duration::from_secs(30);

/// The engine handle shared by a `Store` and everything made from it (containers, snapshots,
/// batches, leases). `None` once closed: every later call raises `Closed`.
pub struct Handle {
    store: RwLock<Option<Arc<EngineStore>>>,
    /// Open snapshots, ended by `close()` so they release the store.
    snapshots: Mutex<Vec<Weak<SnapshotCell>>>,
    /// Durations of the leases granted through this handle. The engine's `LeaseInfo` does not
    /// report a lease's duration; the store is open only once at a time, so every lease granted
    /// since it opened went through here. Leases from before the open show `None`.
    lease_durations: Mutex<HashMap<LeaseTarget, (LeaseId, LeaseDuration)>>,
    pub path: PathBuf,
    /// "sync" or "buffered", as opened.
    pub durability: &'static str,
    /// The process that opened the store. In a child that inherited the handle through
    /// `os.fork()`, every engine call raises `UsedAfterFork`, and `close()` waits for nothing:
    /// the calls that held the store belong to threads the child does not have.
    opened_by_pid: u32,
}

/// At most this many remembered lease durations; past it the table starts over.
const MAX_REMEMBERED_LEASES: usize = 1 << 20;

impl Handle {
    /// The open engine store, or `Closed`.
    pub fn store(&self) -> Result<Arc<EngineStore>, Error> {
        self.store.read().clone().ok_or(Error::Closed)
    }

    /// Runs a point read that never waits (no lock, no sync; at most a page fault on the
    /// mapped log) with the GIL held, as py-lmdb does for its get: releasing and retaking the
    /// GIL costs a good part of such a read.
    pub fn run_without_waiting<T>(
        &self,
        py: Python<'_>,
        context: &Context<'_>,
        read: impl FnOnce(&EngineStore) -> Result<T, Error>,
    ) -> PyResult<T> {
        self.store()
            .and_then(|store| read(&store))
            .py_result_in(py, context)
    }

    /// Runs one engine call with the GIL released. Arguments must already be converted (and
    /// copied where mutable); the closure sees no Python object.
    pub fn run<T, F>(&self, py: Python<'_>, operation: F) -> PyResult<T>
    where
        F: FnOnce(&EngineStore) -> Result<T, Error> + Send,
        T: Send,
    {
        self.run_in(py, &Context::NONE, operation)
    }

    /// Like [`run`](Self::run); an error names what `context` says the call was about.
    pub fn run_in<T, F>(&self, py: Python<'_>, context: &Context<'_>, operation: F) -> PyResult<T>
    where
        F: FnOnce(&EngineStore) -> Result<T, Error> + Send,
        T: Send,
    {
        py.detach(|| {
            let store = self.store()?;
            operation(&store)
        })
        .py_result_in(py, context)
    }

    pub fn is_closed(&self) -> bool {
        self.store.read().is_none()
    }

    pub fn register_snapshot(&self, cell: &Arc<SnapshotCell>) {
        let mut snapshots = self.snapshots.lock();
        snapshots.retain(|weak| weak.strong_count() > 0);
        snapshots.push(Arc::downgrade(cell));
    }

    pub fn remember_lease(&self, target: &LeaseTarget, id: LeaseId, duration: LeaseDuration) {
        let mut durations = self.lease_durations.lock();
        if durations.len() >= MAX_REMEMBERED_LEASES {
            durations.clear();
        }
        durations.insert(target.clone(), (id, duration));
    }

    pub fn change_remembered_lease(&self, target: &LeaseTarget, id: LeaseId) {
        if let Some(entry) = self.lease_durations.lock().get_mut(target) {
            entry.0 = id;
        }
    }

    pub fn forget_lease(&self, target: &LeaseTarget) {
        self.lease_durations.lock().remove(target);
    }

    pub fn lease_duration(&self, target: &LeaseTarget, id: LeaseId) -> Option<LeaseDuration> {
        self.lease_durations
            .lock()
            .get(target)
            .filter(|(known, _)| *known == id)
            .map(|(_, duration)| *duration)
    }

    fn close(&self) -> Result<(), Error> {
        let Some(mut store) = self.store.write().take() else {
            return Ok(());
        };
        if std::process::id() != self.opened_by_pid {
            // The engine's close in a forked child writes nothing and releases nothing the
            // parent holds; snapshots are left as they are, for the same reason.
            return Arc::try_unwrap(store).map_or(Ok(()), EngineStore::close);
        }
        // Snapshots hold the store: end them (each waits for a read in progress).
        let snapshots: Vec<_> = self.snapshots.lock().drain(..).collect();
        for snapshot in snapshots.iter().filter_map(Weak::upgrade) {
            let mut state = snapshot.write();
            if matches!(&*state, crate::snapshot::SnapshotState::Open(_)) {
                let open =
                    std::mem::replace(&mut *state, crate::snapshot::SnapshotState::StoreClosed);
                drop(state);
                drop(open);
            }
        }
        // Calls already running in other threads hold it too, for the length of one call.
        let deadline = Instant::now() + CLOSE_WAIT;
        loop {
            match Arc::try_unwrap(store) {
                Ok(store) => return store.close(),
                Err(shared) if Instant::now() < deadline => {
                    store = shared;
                    std::thread::sleep(Duration::from_millis(1));
                }
                // The last running call closes it when it ends (the engine's Drop).
                Err(_) => return Ok(()),
            }
        }
    }
}

fn invalid_option(name: &'static str, reason: String) -> Error {
    Error::InvalidArgument {
        argument: name,
        reason,
    }
}

/// `open(**options)`: the engine's store options by name.
fn store_options(
    py: Python<'_>,
    durability: &str,
    clock: Option<&ManualClock>,
    options: Option<&Bound<'_, PyDict>>,
) -> PyResult<StoreOptions> {
    let mut store_options = StoreOptions {
        durability: match durability {
            "sync" => Durability::Sync,
            "buffered" => Durability::Buffered,
            other => {
                return Err(convert::invalid(
                    py,
                    "durability",
                    format!("\"sync\" or \"buffered\", not {other:?}"),
                ))
            }
        },
        ..StoreOptions::default()
    };
    if let Some(clock) = clock {
        store_options.clock = Arc::new(clock.engine_clock());
    }
    let Some(options) = options else {
        return Ok(store_options);
    };
    let limits: &mut Limits = &mut store_options.limits;
    for (name, value) in options.iter() {
        let name: String = name.extract()?;
        let positive = |argument: &'static str| -> PyResult<u64> {
            let number = convert::count(argument, &value, u64::MAX >> 1)?;
            if number == 0 {
                return Err(crate::errors::to_py(
                    py,
                    invalid_option(argument, "must be at least 1".to_owned()),
                ));
            }
            Ok(number)
        };
        let as_usize = |number: u64| usize::try_from(number).unwrap_or(usize::MAX);
        // `None` for a Python None, else what `read` makes of the value.
        let optional = |read: &dyn Fn(&'static str) -> PyResult<u64>, argument: &'static str| {
            if value.is_none() {
                Ok(None)
            } else {
                read(argument).map(Some)
            }
        };
        match name.as_str() {
            "segment_size_bytes" => {
                store_options.segment_size_bytes = positive("segment_size_bytes")?
            }
            "max_key_bytes" => limits.max_key_bytes = as_usize(positive("max_key_bytes")?),
            "max_value_bytes" => limits.max_value_bytes = as_usize(positive("max_value_bytes")?),
            "max_metadata_bytes" => {
                limits.max_metadata_bytes = as_usize(positive("max_metadata_bytes")?)
            }
            "max_content_type_bytes" => {
                limits.max_content_type_bytes = as_usize(positive("max_content_type_bytes")?)
            }
            "max_batch_operations" => {
                limits.max_batch_operations = as_usize(positive("max_batch_operations")?)
            }
            "max_batch_bytes" => limits.max_batch_bytes = as_usize(positive("max_batch_bytes")?),
            "max_page_size" => limits.max_page_size = as_usize(positive("max_page_size")?),
            "background_compaction_interval" => {
                store_options.background_compaction_interval = if value.is_none() {
                    None
                } else {
                    Some(convert::duration("background_compaction_interval", &value)?)
                        .filter(|interval| !interval.is_zero())
                }
            }
            "background_compaction_sealed_segments" => {
                store_options.background_compaction_sealed_segments =
                    as_usize(positive("background_compaction_sealed_segments")?)
            }
            "read_only" => {
                if !value.is_instance_of::<pyo3::types::PyBool>() {
                    return Err(convert::wrong_type("read_only", "a bool", &value));
                }
                store_options.read_only = value.extract()?;
            }
            "change_feed_retention_versions" => {
                store_options.change_feed_retention_versions =
                    optional(&positive, "change_feed_retention_versions")?
            }
            "change_feed_retention_bytes" => {
                store_options.change_feed_retention_bytes =
                    optional(&positive, "change_feed_retention_bytes")?
            }
            "quota_bytes" => store_options.quota_bytes = optional(&positive, "quota_bytes")?,
            "space_reserve_bytes" => {
                let count = |argument| convert::count(argument, &value, u64::MAX >> 1);
                store_options.space_reserve_bytes = optional(&count, "space_reserve_bytes")?
            }
            other => {
                return Err(PyTypeError::new_err(format!(
                    "open() got an unexpected keyword argument '{other}'"
                )))
            }
        }
    }
    Ok(store_options)
}

/// Opens (creating if needed) the store in directory `path`, or the store that an
/// ``etcd://host:port[,host:port...]/prefix`` URL names on an etcd cluster (docs/etcd.md).
#[pyfunction]
#[pyo3(signature = (path, *, durability = "sync", clock = None, **options))]
pub fn open(
    py: Python<'_>,
    path: PathBuf,
    durability: &str,
    clock: Option<PyRef<'_, ManualClock>>,
    options: Option<&Bound<'_, PyDict>>,
) -> PyResult<Store> {
    let store_options = store_options(py, durability, clock.as_deref(), options)?;
    let durability = match store_options.durability {
        Durability::Buffered => "buffered",
        _ => "sync",
    };
    let opened = py
        .detach(|| match path.to_str() {
            Some(location) => tenure_etcd::open_location(location, store_options),
            None => EngineStore::open(&path, store_options),
        })
        .py_result(py)?;
    Ok(Store {
        handle: Arc::new(Handle {
            store: RwLock::new(Some(Arc::new(opened))),
            snapshots: Mutex::new(Vec::new()),
            lease_durations: Mutex::new(HashMap::new()),
            path,
            durability,
            opened_by_pid: std::process::id(),
        }),
    })
}

/// An open store. Share it between threads freely; close it (or use it as a context manager)
/// to release the directory.
#[pyclass(frozen, module = "tenure")]
pub struct Store {
    pub handle: Arc<Handle>,
}

impl Store {
    fn container_object(&self, name: String) -> Container {
        Container {
            handle: Arc::clone(&self.handle),
            name,
        }
    }

    fn container_lease(
        &self,
        name: &str,
        lease: tenure::Lease,
        duration: Option<LeaseDuration>,
    ) -> Lease {
        let target = LeaseTarget::container(name);
        if let Some(duration) = duration {
            self.handle.remember_lease(&target, lease.id, duration);
        }
        Lease::new(Arc::clone(&self.handle), target, lease)
    }
}

#[pymethods]
impl Store {
    /// Flushes and closes the store. Every later call through it (or its containers,
    /// snapshots, batches, leases) raises `Closed`. Closing twice is harmless.
    fn close(&self, py: Python<'_>) -> PyResult<()> {
        let handle = &self.handle;
        py.detach(|| handle.close()).py_result(py)
    }

    #[getter]
    fn closed(&self) -> bool {
        self.handle.is_closed()
    }

    #[getter]
    fn path(&self) -> String {
        self.handle.path.display().to_string()
    }

    /// "sync" or "buffered", as the store was opened.
    #[getter]
    fn durability(&self) -> &'static str {
        self.handle.durability
    }

    /// `with store:` closes it on exit; entering a closed store raises `Closed`.
    fn __enter__(slf: &Bound<'_, Self>) -> PyResult<Py<Self>> {
        slf.get().handle.store().py_result(slf.py())?;
        Ok(slf.clone().unbind())
    }

    #[pyo3(signature = (exc_type, exc_value, traceback))]
    fn __exit__(
        &self,
        py: Python<'_>,
        exc_type: &Bound<'_, PyAny>,
        exc_value: &Bound<'_, PyAny>,
        traceback: &Bound<'_, PyAny>,
    ) -> PyResult<()> {
        let _ = (exc_type, exc_value, traceback);
        self.close(py)
    }

    fn __repr__(&self) -> String {
        let state = if self.closed() { "closed" } else { "open" };
        format!(
            "<tenure.Store {:?} ({state})>",
            self.handle.path.display().to_string()
        )
    }

    /// The latest committed version.
    #[getter]
    fn version(&self, py: Python<'_>) -> PyResult<u64> {
        self.handle.run(py, |store| Ok(store.version()))
    }

    /// Every committed change after version `since`, oldest first (docs/spec.md §10). The
    /// iterator ends at the newest change; resume from the last `version` processed. A
    /// position older than the retained history raises `Compacted`.
    #[pyo3(signature = (since=None, *, container=None, include_values=false), text_signature = "($self, since=0, *, container=None, include_values=False)")]
    fn changes(
        &self,
        since: Option<&Bound<'_, PyAny>>,
        container: Option<&Bound<'_, PyAny>>,
        include_values: bool,
    ) -> PyResult<crate::feed::ChangeIterator> {
        let since = crate::feed::since(since)?;
        let container = convert::optional_text("container", container)?;
        Ok(crate::feed::ChangeIterator::new(
            Arc::clone(&self.handle),
            since,
            container,
            include_values,
        ))
    }

    /// Blocks (GIL released) until a change newer than `since` commits or `timeout` passes
    /// (seconds or a `timedelta`, at most a day). Returns whether one is there.
    #[pyo3(signature = (since, timeout))]
    fn wait_for_changes(
        &self,
        py: Python<'_>,
        since: &Bound<'_, PyAny>,
        timeout: &Bound<'_, PyAny>,
    ) -> PyResult<bool> {
        let since = crate::feed::since(Some(since))?;
        crate::feed::wait_for_changes(&self.handle, py, since, timeout)
    }

    /// Makes every acknowledged write durable (needed only with durability="buffered").
    fn flush(&self, py: Python<'_>) -> PyResult<()> {
        self.handle.run(py, |store| store.flush())
    }

    /// Saves the index now, synced, so that an open after a crash loads it and replays only
    /// the log written after this call (the background thread also takes one as the log
    /// grows). Returns whether it saved one (False on a read-only store or an etcd cluster,
    /// or when a batch was still settling: call again).
    fn checkpoint(&self, py: Python<'_>) -> PyResult<bool> {
        self.handle.run(py, |store| store.checkpoint())
    }

    /// Reclaims the space of superseded, deleted and expired items now.
    fn compact<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyDict>> {
        let report = self.handle.run(py, |store| store.compact())?;
        let result = PyDict::new(py);
        result.set_item("segments_removed", report.segments_removed)?;
        result.set_item("bytes_removed", report.bytes_removed)?;
        result.set_item("items_relocated", report.items_relocated)?;
        result.set_item("containers_relocated", report.containers_relocated)?;
        result.set_item("deferred_by_snapshot", report.deferred_by_snapshot)?;
        result.set_item("retained_for_change_feed", report.retained_for_change_feed)?;
        result.set_item("deferred_by_writes", report.deferred_by_writes)?;
        Ok(result)
    }

    /// What the store holds and how full it is: items, versions, segments, bytes (log, live,
    /// dead, allocated), and the space state — ``storage_full`` (writes that add data raise
    /// StorageFull), ``free_bytes`` (None where the system cannot tell), ``reserve_bytes``,
    /// ``quota_bytes`` (None: no quota) and ``store_bytes``; ``opened_from_persisted_index``
    /// says whether the open loaded a persisted index (saved at a clean close or a running
    /// store's checkpoint), ``log_bytes_replayed_at_open`` how much log it replayed, and
    /// ``log_verified`` whether the log below that index has passed the checks that run right
    /// after such an open.
    fn stats<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyDict>> {
        let stats = self.handle.run(py, |store| store.stats())?;
        let result = PyDict::new(py);
        result.set_item("version", stats.version)?;
        result.set_item("items", stats.items)?;
        result.set_item("item_versions", stats.item_versions)?;
        result.set_item("segments", stats.segments)?;
        result.set_item("segment_size_bytes", stats.segment_size_bytes)?;
        result.set_item("allocated_bytes", stats.allocated_bytes)?;
        result.set_item("log_bytes", stats.log_bytes)?;
        result.set_item("live_bytes", stats.live_bytes)?;
        result.set_item("dead_bytes", stats.dead_bytes)?;
        result.set_item("active_leases", stats.active_leases)?;
        result.set_item("active_locks", stats.active_locks)?;
        result.set_item("storage_full", stats.storage_full)?;
        result.set_item("free_bytes", stats.free_bytes)?;
        result.set_item("reserve_bytes", stats.reserve_bytes)?;
        result.set_item("quota_bytes", stats.quota_bytes)?;
        result.set_item("store_bytes", stats.store_bytes)?;
        result.set_item(
            "opened_from_persisted_index",
            stats.opened_from_persisted_index,
        )?;
        result.set_item(
            "log_bytes_replayed_at_open",
            stats.log_bytes_replayed_at_open,
        )?;
        result.set_item("log_verified", stats.log_verified)?;
        Ok(result)
    }

    #[pyo3(signature = (name, *, metadata = None, default_ttl = None, exist_ok = false))]
    fn create_container(
        &self,
        py: Python<'_>,
        name: &Bound<'_, PyAny>,
        metadata: Option<&Bound<'_, PyAny>>,
        default_ttl: Option<&Bound<'_, PyAny>>,
        exist_ok: bool,
    ) -> PyResult<Container> {
        let name = text_name(name)?;
        let metadata = convert::metadata(metadata)?;
        let default_ttl_seconds = match default_ttl.filter(|ttl| !ttl.is_none()) {
            Some(ttl) => {
                let seconds = convert::whole_seconds("default_ttl", ttl)?;
                Some(u32::try_from(seconds).map_err(|_| {
                    convert::invalid(
                        py,
                        "default_ttl",
                        format!(
                            "a container default TTL is 1..={} seconds, not {seconds}",
                            u32::MAX
                        ),
                    )
                })?)
            }
            None => None,
        };
        let options = ContainerOptions {
            metadata,
            default_ttl_seconds,
        };
        let created = self.handle.run_in(py, &in_container(&name), |store| {
            match store.create_container(&name, &options) {
                Ok(_) => Ok(()),
                Err(error) if exist_ok && error.code() == ErrorCode::ContainerAlreadyExists => {
                    Ok(())
                }
                Err(error) => Err(error),
            }
        });
        created.map(|()| self.container_object(name))
    }

    /// The container `name`; `ContainerNotFound` if it does not exist.
    fn container(&self, py: Python<'_>, name: &Bound<'_, PyAny>) -> PyResult<Container> {
        let name = text_name(name)?;
        self.handle.run_in(py, &in_container(&name), |store| {
            store.container_properties(&name).map(drop)
        })?;
        Ok(self.container_object(name))
    }

    /// Deletes the container and every item in it, atomically.
    #[pyo3(signature = (name, *, lease_id = None, if_modified_since = None, if_unmodified_since = None))]
    fn delete_container(
        &self,
        py: Python<'_>,
        name: &Bound<'_, PyAny>,
        lease_id: Option<&Bound<'_, PyAny>>,
        if_modified_since: Option<&Bound<'_, PyAny>>,
        if_unmodified_since: Option<&Bound<'_, PyAny>>,
    ) -> PyResult<()> {
        let name = text_name(name)?;
        let options = ContainerWriteOptions {
            conditions: convert::conditions(
                None,
                None,
                if_modified_since,
                if_unmodified_since,
                None,
            )?,
            lease_id: convert::optional_lease_id("lease_id", lease_id)?,
        };
        self.handle.run_in(py, &in_container(&name), |store| {
            store.delete_container(&name, &options)
        })?;
        self.handle.forget_lease(&LeaseTarget::container(&name));
        Ok(())
    }

    fn list_containers(&self, py: Python<'_>) -> PyResult<Vec<String>> {
        self.handle.run(py, |store| store.list_containers())
    }

    /// Acquires the container's lease (docs/spec.md §5): only delete_container is guarded by it.
    #[pyo3(
        signature = (name, duration = LeaseDurationArg::DEFAULT, *, proposed_id = None, holder = None),
        text_signature = "($self, name, duration=15, *, proposed_id=None, holder=None)"
    )]
    fn acquire_container_lease(
        &self,
        py: Python<'_>,
        name: &Bound<'_, PyAny>,
        duration: LeaseDurationArg,
        proposed_id: Option<&Bound<'_, PyAny>>,
        holder: Option<&Bound<'_, PyAny>>,
    ) -> PyResult<Lease> {
        let name = text_name(name)?;
        let request = LeaseRequest {
            duration: duration.0,
            proposed_id: convert::optional_lease_id("proposed_id", proposed_id)?,
            holder: convert::optional_text("holder", holder)?,
        };
        let lease = self.handle.run_in(py, &in_container(&name), |store| {
            store.acquire_container_lease(&name, &request)
        })?;
        Ok(self.container_lease(&name, lease, Some(request.duration)))
    }

    fn renew_container_lease(
        &self,
        py: Python<'_>,
        name: &Bound<'_, PyAny>,
        lease_id: &Bound<'_, PyAny>,
    ) -> PyResult<Lease> {
        let name = text_name(name)?;
        let id = convert::lease_id("lease_id", lease_id)?;
        let lease = self.handle.run_in(py, &in_container(&name), |store| {
            store.renew_container_lease(&name, id)
        })?;
        Ok(self.container_lease(&name, lease, None))
    }

    fn change_container_lease(
        &self,
        py: Python<'_>,
        name: &Bound<'_, PyAny>,
        lease_id: &Bound<'_, PyAny>,
        proposed_id: &Bound<'_, PyAny>,
    ) -> PyResult<Lease> {
        let name = text_name(name)?;
        let id = convert::lease_id("lease_id", lease_id)?;
        let proposed = convert::lease_id("proposed_id", proposed_id)?;
        let lease = self.handle.run_in(py, &in_container(&name), |store| {
            store.change_container_lease(&name, id, proposed)
        })?;
        self.handle
            .change_remembered_lease(&LeaseTarget::container(&name), lease.id);
        Ok(self.container_lease(&name, lease, None))
    }

    fn release_container_lease(
        &self,
        py: Python<'_>,
        name: &Bound<'_, PyAny>,
        lease_id: &Bound<'_, PyAny>,
    ) -> PyResult<()> {
        let name = text_name(name)?;
        let id = convert::lease_id("lease_id", lease_id)?;
        self.handle.run_in(py, &in_container(&name), |store| {
            store.release_container_lease(&name, id)
        })?;
        self.handle.forget_lease(&LeaseTarget::container(&name));
        Ok(())
    }

    /// Breaks the container's lease; returns the seconds until a new lease can be acquired.
    #[pyo3(signature = (name, period = None))]
    fn break_container_lease(
        &self,
        py: Python<'_>,
        name: &Bound<'_, PyAny>,
        period: Option<&Bound<'_, PyAny>>,
    ) -> PyResult<f64> {
        let name = text_name(name)?;
        let period = convert::break_period(period)?;
        let left = self.handle.run_in(py, &in_container(&name), |store| {
            store.break_container_lease(&name, period)
        })?;
        Ok(left.as_secs_f64())
    }

    fn container_lease_info(&self, py: Python<'_>, name: &Bound<'_, PyAny>) -> PyResult<LeaseInfo> {
        let name = text_name(name)?;
        let info = self.handle.run_in(py, &in_container(&name), |store| {
            store.container_lease_info(&name)
        })?;
        Ok(LeaseInfo::new(
            &self.handle,
            &LeaseTarget::container(&name),
            info,
        ))
    }

    /// A repeatable view of the whole store at the current version (a context manager).
    fn snapshot(&self, py: Python<'_>) -> PyResult<Snapshot> {
        Snapshot::open(py, &self.handle)
    }

    /// An all-or-nothing batch (a context manager: commits on a clean exit, discards on an
    /// exception).
    fn batch(&self) -> Batch {
        Batch::new(Arc::clone(&self.handle))
    }
}

/// Errors of a Store method about container `name` (the engine's `container` is the
/// caller's `name`).
fn in_container(name: &str) -> Context<'_> {
    Context::container(name).renaming(&[("container", "name")])
}

/// A container name argument: `str` only (TypeError otherwise).
pub fn text_name(value: &Bound<'_, PyAny>) -> PyResult<String> {
    if !value.is_instance_of::<PyString>() {
        return Err(convert::wrong_type("name", "a str", value));
    }
    convert::container_name("name", value)
}
