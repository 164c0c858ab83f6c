//! The change feed (`Store.changes`, `Store.wait_for_changes`): an iterator that pages through
//! the engine's feed with the GIL released for each page.

use std::collections::VecDeque;
use std::sync::Arc;
use std::time::Duration;

use pyo3::prelude::*;
use pyo3::types::PyBytes;
use tenure::{ChangeKind, ChangesOptions};

use crate::store::Handle;

/// Changes fetched per engine call.
const FEED_PAGE_SIZE: usize = 1000;

/// One committed change: `kind` is "created", "updated", "deleted", "expired",
/// "container_created" or "container_deleted".
#[pyclass(module = "tenure", frozen, get_all)]
pub struct Change {
    version: u64,
    kind: &'static str,
    container: String,
    key: Option<Py<PyBytes>>,
    etag: Option<String>,
    value: Option<Py<PyBytes>>,
}

#[pymethods]
impl Change {
    fn __repr__(&self) -> String {
        format!(
            "Change(version={}, kind={:?}, container={:?})",
            self.version, self.kind, self.container
        )
    }
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

/// Every committed change after `since`, in version order; it ends at the newest one (resume
/// from the last `version` you processed).
#[pyclass(module = "tenure")]
pub struct ChangeIterator {
    handle: Arc<Handle>,
    since: u64,
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
            container,
            include_values,
            buffered: VecDeque::new(),
            finished: false,
        }
    }
}

#[pymethods]
impl ChangeIterator {
    fn __iter__(slf: PyRef<'_, Self>) -> PyRef<'_, Self> {
        slf
    }

    fn __next__(&mut self, py: Python<'_>) -> PyResult<Option<Change>> {
        if self.buffered.is_empty() && !self.finished {
            let options = ChangesOptions {
                container: self.container.clone(),
                include_values: self.include_values,
                max_changes: FEED_PAGE_SIZE,
            };
            let since = self.since;
            let page = self
                .handle
                .run(py, |store| store.changes(since, &options))?;
            match page.last() {
                Some(last) => self.since = last.version,
                None => self.finished = true,
            }
            self.buffered.extend(page);
        }
        Ok(self.buffered.pop_front().map(|change| Change {
            version: change.version,
            kind: kind_name(change.kind),
            container: change.container,
            key: change.key.map(|key| PyBytes::new(py, &key).unbind()),
            etag: change.etag.map(|etag| etag.to_string()),
            value: change.value.map(|value| PyBytes::new(py, &value).unbind()),
        }))
    }
}

/// Blocks (GIL released) until a change newer than `since` commits or `timeout` seconds pass.
pub fn wait_for_changes(
    handle: &Handle,
    py: Python<'_>,
    since: u64,
    timeout: f64,
) -> PyResult<bool> {
    if !timeout.is_finite() || !(0.0..=86_400.0).contains(&timeout) {
        return Err(crate::errors::to_py(
            py,
            tenure::Error::InvalidArgument {
                argument: "timeout",
                reason: "seconds between 0 and 86400".into(),
            },
        ));
    }
    let timeout = Duration::from_secs_f64(timeout);
    handle.run(py, |store| store.wait_for_changes(since, timeout))
}
