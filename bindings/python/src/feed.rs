//! The change feed (`Store.changes`, `Store.wait_for_changes`): an iterator that pages through
//! the engine's feed with the GIL released for each page.

use std::collections::VecDeque;
use std::sync::Arc;
use std::time::Duration;

use pyo3::basic::CompareOp;
use pyo3::prelude::*;
use pyo3::types::{PyBytes, PyString, PyTuple};
use tenure::{ChangeKind, ChangesOptions};

/// The engine's bound on one `changes` call.
const MAX_CHANGES_PER_CALL: usize = 100_000;

use crate::convert;
use crate::errors::Context;
use crate::item::compare;
use crate::store::Handle;

/// Changes fetched per engine call.
const FEED_PAGE_SIZE: usize = 1000;

/// The kinds a `Change` can have.
const KINDS: [&str; 6] = [
    "created",
    "updated",
    "deleted",
    "expired",
    "container_created",
    "container_deleted",
];

/// A change-feed position: a version, `0..` (`None` = 0).
pub fn since(value: Option<&Bound<'_, PyAny>>) -> PyResult<u64> {
    match value {
        Some(value) if !value.is_none() => convert::count("since", value, u64::MAX >> 1),
        _ => Ok(0),
    }
}

/// One committed change: `kind` is "created", "updated", "deleted", "expired",
/// "container_created" or "container_deleted". `key` follows the rule of `Item.key` (always a
/// `str`; `key_bytes` has the bytes); both are `None` for a container change.
#[pyclass(module = "tenure", frozen)]
pub struct Change {
    version: u64,
    kind: &'static str,
    container: String,
    key: Option<Vec<u8>>,
    etag: Option<String>,
    value: Option<Py<PyBytes>>,
}

fn kind_name(kind: ChangeKind) -> &'static str {
    match kind {
        ChangeKind::Created => "created",
        ChangeKind::Updated => "updated",
        ChangeKind::Deleted => "deleted",
        ChangeKind::Expired => "expired",
        ChangeKind::ContainerCreated => "container_created",
        ChangeKind::ContainerDeleted => "container_deleted",
        _ => "unknown",
    }
}

impl Change {
    fn new(py: Python<'_>, change: tenure::Change) -> Change {
        Change {
            version: change.version,
            kind: kind_name(change.kind),
            container: change.container,
            key: change.key,
            etag: change.etag.map(|etag| etag.to_string()),
            value: change.value.map(|value| PyBytes::new(py, &value).unbind()),
        }
    }
}

#[pymethods]
impl Change {
    /// `Change(version, kind, container, key=None, etag=None, value=None)`: for tests and
    /// fakes; the feed makes them.
    #[new]
    #[pyo3(signature = (version, kind, container, key = None, etag = None, value = None))]
    fn py_new(
        py: Python<'_>,
        version: &Bound<'_, PyAny>,
        kind: &str,
        container: String,
        key: Option<&Bound<'_, PyAny>>,
        etag: Option<String>,
        value: Option<&Bound<'_, PyAny>>,
    ) -> PyResult<Change> {
        let kind = KINDS
            .iter()
            .copied()
            .find(|known| *known == kind)
            .ok_or_else(|| {
                convert::invalid(py, "kind", format!("one of {KINDS:?}, not {kind:?}"))
            })?;
        let key = match key.filter(|key| !key.is_none()) {
            Some(key) => Some(convert::key("key", key)?.into_owned()),
            None => None,
        };
        let value = convert::optional_value("value", value)?;
        Ok(Change {
            version: convert::count("version", version, u64::MAX >> 1)?,
            kind,
            container,
            key,
            etag,
            value: value.map(|value| PyBytes::new(py, &value).unbind()),
        })
    }

    #[getter]
    fn version(&self) -> u64 {
        self.version
    }

    #[getter]
    fn kind(&self) -> &'static str {
        self.kind
    }

    #[getter]
    fn container(&self) -> String {
        self.container.clone()
    }

    /// The item's key as a `str` (as `Item.key`), `None` for a container change.
    #[getter]
    fn key<'py>(&self, py: Python<'py>) -> PyResult<Option<Bound<'py, PyString>>> {
        self.key
            .as_deref()
            .map(|key| convert::key_object(py, key))
            .transpose()
    }

    /// The key exactly as stored, `None` for a container change.
    #[getter]
    fn key_bytes<'py>(&self, py: Python<'py>) -> Option<Bound<'py, PyBytes>> {
        self.key.as_deref().map(|key| PyBytes::new(py, key))
    }

    #[getter]
    fn etag(&self) -> Option<String> {
        self.etag.clone()
    }

    /// The new value (creates and updates, when asked for with `include_values=True`).
    #[getter]
    fn value(&self, py: Python<'_>) -> Option<Py<PyBytes>> {
        self.value.as_ref().map(|value| value.clone_ref(py))
    }

    fn __richcmp__(&self, other: &Bound<'_, PyAny>, op: CompareOp) -> PyResult<Py<PyAny>> {
        let py = other.py();
        let Ok(other) = other.cast::<Change>() else {
            return compare(py, None, op);
        };
        let other = other.get();
        let values_equal = match (&self.value, &other.value) {
            (Some(mine), Some(theirs)) => mine.bind(py).as_bytes() == theirs.bind(py).as_bytes(),
            (None, None) => true,
            _ => false,
        };
        let equal = self.version == other.version
            && self.kind == other.kind
            && self.container == other.container
            && self.key == other.key
            && self.etag == other.etag
            && values_equal;
        compare(py, Some(equal), op)
    }

    fn __hash__(&self) -> u64 {
        use std::hash::{Hash, Hasher};
        let mut hasher = std::collections::hash_map::DefaultHasher::new();
        (self.version, self.kind, &self.container, &self.key).hash(&mut hasher);
        hasher.finish()
    }

    fn __reduce__<'py>(slf: &Bound<'py, Self>) -> PyResult<Bound<'py, PyTuple>> {
        let py = slf.py();
        let this = slf.get();
        let arguments = (
            this.version,
            this.kind,
            this.container.clone(),
            this.key.as_deref().map(|key| PyBytes::new(py, key)),
            this.etag.clone(),
            this.value(py),
        );
        (slf.get_type(), arguments).into_pyobject(py)
    }

    fn __repr__(&self, py: Python<'_>) -> PyResult<String> {
        let key = match &self.key {
            Some(key) => format!(", key={}", convert::key_object(py, key)?.repr()?),
            None => String::new(),
        };
        Ok(format!(
            "tenure.Change(version={}, kind={:?}, container={:?}{key})",
            self.version, self.kind, self.container
        ))
    }
}

/// Every committed change after `since`, in version order; it ends at the newest one (resume
/// from the last `version` you processed). Pages never lose a change: when a page ends inside
/// a batch (many changes under one version), the next page starts at that version again and
/// skips the changes already returned.
#[pyclass(module = "tenure")]
pub struct ChangeIterator {
    handle: Arc<Handle>,
    /// Every change up to this version was returned...
    since: u64,
    /// ...and this many of the changes of version `since + 1`.
    skip: usize,
    container: Option<String>,
    include_values: bool,
    buffered: VecDeque<tenure::Change>,
    finished: bool,
}

impl ChangeIterator {
    pub fn new(
        handle: Arc<Handle>,
        since: u64,
        container: Option<String>,
        include_values: bool,
    ) -> ChangeIterator {
        ChangeIterator {
            handle,
            since,
            skip: 0,
            container,
            include_values,
            buffered: VecDeque::new(),
            finished: false,
        }
    }

    /// The next page of changes from the engine (empty at the end of the feed, for now).
    fn fetch(&mut self, py: Python<'_>) -> PyResult<Vec<tenure::Change>> {
        let max_changes = (self.skip + FEED_PAGE_SIZE).min(MAX_CHANGES_PER_CALL);
        let options = ChangesOptions {
            container: self.container.clone(),
            include_values: self.include_values,
            max_changes,
        };
        let since = self.since;
        let context = match &self.container {
            Some(container) => Context::container(container),
            None => Context::NONE,
        };
        let mut page = self
            .handle
            .run_in(py, &context, |store| store.changes(since, &options))?;
        // The previous page returned the first `skip` changes of version `since + 1`.
        let skip = self.skip.min(
            page.iter()
                .take_while(|change| change.version == since + 1)
                .count(),
        );
        match page.last().map(|change| change.version) {
            // A full page may have stopped inside its last version: start there next time.
            Some(last) if page.len() == max_changes => {
                self.skip = page.iter().filter(|change| change.version == last).count();
                self.since = last - 1;
            }
            Some(last) => {
                self.since = last;
                self.skip = 0;
            }
            None => {}
        }
        Ok(page.split_off(skip))
    }
}

#[pymethods]
impl ChangeIterator {
    fn __iter__(slf: PyRef<'_, Self>) -> PyRef<'_, Self> {
        slf
    }

    fn __next__(&mut self, py: Python<'_>) -> PyResult<Option<Change>> {
        if self.buffered.is_empty() && !self.finished {
            let page = self.fetch(py)?;
            self.finished = page.is_empty();
            self.buffered.extend(page);
        }
        Ok(self
            .buffered
            .pop_front()
            .map(|change| Change::new(py, change)))
    }

    /// The changes not returned yet, up to a page (1000) at a time, GIL released while they
    /// are read; `[]` when the feed has nothing newer (a later call returns what committed
    /// since). `tenure.aio` iterates with it.
    fn next_page(&mut self, py: Python<'_>) -> PyResult<Vec<Change>> {
        let mut changes: Vec<Change> = self
            .buffered
            .drain(..)
            .map(|change| Change::new(py, change))
            .collect();
        if changes.is_empty() {
            changes = self
                .fetch(py)?
                .into_iter()
                .map(|change| Change::new(py, change))
                .collect();
        }
        self.finished = false;
        Ok(changes)
    }

    /// The version up to which every change was returned: pass it as `since` to resume.
    #[getter]
    fn since(&self) -> u64 {
        self.since
    }
}

/// Blocks (GIL released) until a change newer than `since` commits or `timeout` passes.
pub fn wait_for_changes(
    handle: &Handle,
    py: Python<'_>,
    since: u64,
    timeout: &Bound<'_, PyAny>,
) -> PyResult<bool> {
    let timeout: Duration = convert::duration("timeout", timeout)?;
    if timeout > Duration::from_secs(86_400) {
        return Err(convert::invalid(
            py,
            "timeout",
            "at most 86400 seconds (a day)",
        ));
    }
    handle.run(py, |store| store.wait_for_changes(since, timeout))
}
