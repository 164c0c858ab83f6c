//! `tenure.Snapshot` (docs/spec.md §9): a repeatable view of the store at one version, a context
//! manager that releases it on exit.

use std::sync::Arc;

use parking_lot::RwLock;
use pyo3::prelude::*;

use tenure::{Error, Store as EngineStore};

use crate::container::{page_size, prefix, read_options};
use crate::convert;
use crate::errors::{Context, IntoPyResult};
use crate::item::{Item, ItemProperties, Page};
use crate::item_iterator::{ItemIterator, Source};
use crate::store::Handle;

/// The engine snapshot and the store it borrows from.
pub struct SnapshotInner {
    // Declared first, so dropped first: it borrows from `_store`.
    snapshot: tenure::Snapshot<'static>,
    _store: Arc<EngineStore>,
}

/// A snapshot is open until it is closed, or until its store is.
pub enum SnapshotState {
    Open(SnapshotInner),
    Closed,
    StoreClosed,
}

pub type SnapshotCell = RwLock<SnapshotState>;

/// Runs `read` on the open snapshot; `Closed` once it was closed. Call it detached.
pub fn with_snapshot<T>(
    cell: &SnapshotCell,
    read: impl FnOnce(&tenure::Snapshot<'static>) -> Result<T, Error>,
) -> Result<T, Error> {
    match &*cell.read() {
        SnapshotState::Open(inner) => read(&inner.snapshot),
        _ => Err(Error::Closed),
    }
}

/// What a `Closed` error from a snapshot says: which of the two was closed.
pub fn closed_message(cell: &SnapshotCell) -> &'static str {
    match &*cell.read() {
        SnapshotState::StoreClosed => "the snapshot's store was closed (and the snapshot with it)",
        _ => "the snapshot was closed (Snapshot.close() or the end of its with block); take a new one with store.snapshot()",
    }
}

/// An error context for a read through the snapshot in `cell`.
pub fn context<'a>(cell: &SnapshotCell, context: Context<'a>) -> Context<'a> {
    Context {
        closed: Some(closed_message(cell)),
        ..context
    }
}

#[pyclass(frozen, module = "tenure")]
pub struct Snapshot {
    cell: Arc<SnapshotCell>,
    version: u64,
}

impl Snapshot {
    pub fn open(py: Python<'_>, handle: &Arc<Handle>) -> PyResult<Snapshot> {
        let inner = py
            .detach(|| -> Result<SnapshotInner, Error> {
                let store = handle.store()?;
                let snapshot = store.snapshot()?;
                // SAFETY: the snapshot borrows the engine's shared state, which lives in a heap
                // allocation owned (through `Store`) by the `Arc` stored beside it. That Arc is
                // never taken out of `SnapshotInner`, and the snapshot field is dropped before
                // it, so the borrow never outlives what it points to.
                let snapshot: tenure::Snapshot<'static> = unsafe {
                    std::mem::transmute::<tenure::Snapshot<'_>, tenure::Snapshot<'static>>(snapshot)
                };
                Ok(SnapshotInner {
                    snapshot,
                    _store: store,
                })
            })
            .py_result(py)?;
        let version = inner.snapshot.version();
        let cell = Arc::new(RwLock::new(SnapshotState::Open(inner)));
        handle.register_snapshot(&cell);
        Ok(Snapshot { cell, version })
    }

    fn read<T: Send>(
        &self,
        py: Python<'_>,
        about: Context<'_>,
        read: impl FnOnce(&tenure::Snapshot<'static>) -> Result<T, Error> + Send,
    ) -> PyResult<T> {
        let cell = &self.cell;
        py.detach(|| with_snapshot(cell, read))
            .py_result_in(py, &context(cell, about))
    }
}

#[pymethods]
impl Snapshot {
    /// The version this snapshot reads at.
    #[getter]
    fn version(&self) -> u64 {
        self.version
    }

    #[getter]
    fn closed(&self) -> bool {
        !matches!(&*self.cell.read(), SnapshotState::Open(_))
    }

    /// Releases the snapshot (old versions it kept become reclaimable). Later reads raise
    /// `Closed`.
    fn close(&self, py: Python<'_>) {
        let cell = &self.cell;
        // Dropping it waits for a read in progress, so do it detached.
        let previous = py.detach(|| {
            let mut state = cell.write();
            match &*state {
                SnapshotState::Open(_) => std::mem::replace(&mut *state, SnapshotState::Closed),
                _ => SnapshotState::Closed,
            }
        });
        drop(previous);
    }

    /// `with snapshot:` closes it on exit; entering a closed one raises `Closed`.
    fn __enter__(slf: &Bound<'_, Self>) -> PyResult<Py<Self>> {
        let this = slf.get();
        this.read(slf.py(), Context::NONE, |_| Ok(()))?;
        Ok(slf.clone().unbind())
    }

    #[pyo3(signature = (exc_type, exc_value, traceback))]
    fn __exit__(
        &self,
        py: Python<'_>,
        exc_type: &Bound<'_, PyAny>,
        exc_value: &Bound<'_, PyAny>,
        traceback: &Bound<'_, PyAny>,
    ) {
        let _ = (exc_type, exc_value, traceback);
        self.close(py);
    }

    fn __repr__(&self) -> String {
        format!("<tenure.Snapshot at version {}>", self.version)
    }

    #[pyo3(signature = (container, key, *, if_match = None, if_none_match = None, if_modified_since = None, if_unmodified_since = None, lease_id = None))]
    fn get<'py>(
        &self,
        py: Python<'py>,
        container: &Bound<'_, PyAny>,
        key: &Bound<'_, PyAny>,
        if_match: Option<&Bound<'_, PyAny>>,
        if_none_match: Option<&Bound<'_, PyAny>>,
        if_modified_since: Option<&Bound<'_, PyAny>>,
        if_unmodified_since: Option<&Bound<'_, PyAny>>,
        lease_id: Option<&Bound<'_, PyAny>>,
    ) -> PyResult<Bound<'py, Item>> {
        let container = convert::container_name("container", container)?;
        let key = convert::key("key", key)?;
        let options = read_options(
            if_match,
            if_none_match,
            if_modified_since,
            if_unmodified_since,
            lease_id,
        )?;
        let item = self.read(py, Context::item(&container, &key), |snapshot| {
            snapshot.get(&container, &key, &options)
        })?;
        Item::new(py, item)
    }

    #[pyo3(signature = (container, key, *, if_match = None, if_none_match = None, if_modified_since = None, if_unmodified_since = None, lease_id = None))]
    fn get_properties<'py>(
        &self,
        py: Python<'py>,
        container: &Bound<'_, PyAny>,
        key: &Bound<'_, PyAny>,
        if_match: Option<&Bound<'_, PyAny>>,
        if_none_match: Option<&Bound<'_, PyAny>>,
        if_modified_since: Option<&Bound<'_, PyAny>>,
        if_unmodified_since: Option<&Bound<'_, PyAny>>,
        lease_id: Option<&Bound<'_, PyAny>>,
    ) -> PyResult<Bound<'py, ItemProperties>> {
        let container = convert::container_name("container", container)?;
        let key = convert::key("key", key)?;
        let options = read_options(
            if_match,
            if_none_match,
            if_modified_since,
            if_unmodified_since,
            lease_id,
        )?;
        let item = self.read(py, Context::item(&container, &key), |snapshot| {
            snapshot.get_properties(&container, &key, &options)
        })?;
        ItemProperties::new(py, item)
    }

    #[pyo3(signature = (container, prefix = None, *, page_size = None, continuation = None, include_values = false), text_signature = "($self, container, prefix='', *, page_size=1000, continuation=None, include_values=False)")]
    fn list(
        &self,
        py: Python<'_>,
        container: &Bound<'_, PyAny>,
        prefix: Option<&Bound<'_, PyAny>>,
        page_size: Option<&Bound<'_, PyAny>>,
        continuation: Option<&Bound<'_, PyAny>>,
        include_values: bool,
    ) -> PyResult<Page> {
        let container = convert::container_name("container", container)?;
        let prefix = match prefix {
            Some(value) => self::prefix(value)?.into_owned(),
            None => Vec::new(),
        };
        let page_size = match page_size {
            Some(size) if !size.is_none() => self::page_size(size)?,
            _ => 1000,
        };
        let continuation = convert::optional_text("continuation", continuation)?;
        let page = self.read(py, Context::container(&container), |snapshot| {
            snapshot.list(
                &container,
                &prefix,
                page_size,
                continuation.as_deref(),
                include_values,
            )
        })?;
        Page::new(py, page, include_values)
    }

    #[pyo3(signature = (container, prefix = None, *, include_values = false), text_signature = "($self, container, prefix='', *, include_values=False)")]
    fn iterate(
        &self,
        container: &Bound<'_, PyAny>,
        prefix: Option<&Bound<'_, PyAny>>,
        include_values: bool,
    ) -> PyResult<ItemIterator> {
        let container = convert::container_name("container", container)?;
        let prefix = match prefix {
            Some(value) => self::prefix(value)?.into_owned(),
            None => Vec::new(),
        };
        Ok(ItemIterator::new(
            Source::Snapshot(Arc::clone(&self.cell)),
            container,
            prefix,
            include_values,
        ))
    }

    /// Whether the item exists (and has not expired) at the snapshot's version.
    fn exists(
        &self,
        py: Python<'_>,
        container: &Bound<'_, PyAny>,
        key: &Bound<'_, PyAny>,
    ) -> PyResult<bool> {
        let container = convert::container_name("container", container)?;
        let key = convert::key("key", key)?;
        self.read(py, Context::item(&container, &key), |snapshot| {
            crate::container::found(snapshot.get_properties(
                &container,
                &key,
                &tenure::ReadOptions::default(),
            ))
        })
    }

    /// How many live items of `container` have keys starting with `prefix`, at the
    /// snapshot's version: a scan of those keys (GIL released), not a stored count.
    #[pyo3(signature = (container, prefix = None), text_signature = "($self, container, prefix='')")]
    fn count(
        &self,
        py: Python<'_>,
        container: &Bound<'_, PyAny>,
        prefix: Option<&Bound<'_, PyAny>>,
    ) -> PyResult<usize> {
        let container = convert::container_name("container", container)?;
        let prefix = match prefix {
            Some(value) => self::prefix(value)?.into_owned(),
            None => Vec::new(),
        };
        self.read(py, Context::container(&container), |snapshot| {
            snapshot.scan(&container, &prefix, &[], |_| true)
        })
    }

    fn list_containers(&self, py: Python<'_>) -> PyResult<Vec<String>> {
        self.read(py, Context::NONE, |snapshot| snapshot.list_containers())
    }
}
