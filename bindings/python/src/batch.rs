//! `tenure.Batch` (docs/spec.md §8): operations collected in Python and committed all or nothing. As a
//! context manager it commits on a clean exit and discards on an exception.

use std::sync::Arc;

use parking_lot::Mutex;
use pyo3::prelude::*;

use tenure::{Conditions, Error, WriteOptions};

use crate::container::write_options;
use crate::convert;
use crate::errors::{to_py, Context, IntoPyResult};
use crate::store::Handle;

enum Operation {
    Put(String, Vec<u8>, Vec<u8>, WriteOptions),
    Create(String, Vec<u8>, Vec<u8>, WriteOptions),
    Replace(String, Vec<u8>, Vec<u8>, WriteOptions),
    Delete(String, Vec<u8>, WriteOptions),
    Check(String, Vec<u8>, Conditions),
}

impl Operation {
    /// The container and key the operation is on.
    fn target(&self) -> (String, Vec<u8>) {
        let (container, key) = match self {
            Operation::Put(container, key, ..)
            | Operation::Create(container, key, ..)
            | Operation::Replace(container, key, ..)
            | Operation::Delete(container, key, ..)
            | Operation::Check(container, key, ..) => (container, key),
        };
        (container.clone(), key.clone())
    }
}

enum State {
    Open(Vec<Operation>),
    Committed(u64),
    Discarded,
}

#[pyclass(frozen, module = "tenure")]
pub struct Batch {
    handle: Arc<Handle>,
    state: Mutex<State>,
}

impl Batch {
    pub fn new(handle: Arc<Handle>) -> Batch {
        Batch {
            handle,
            state: Mutex::new(State::Open(Vec::new())),
        }
    }

    /// Adds an operation; returns its index (the `index` a `FailedDependency` names).
    fn push(&self, py: Python<'_>, operation: Operation) -> PyResult<usize> {
        match &mut *self.state.lock() {
            State::Open(operations) => {
                operations.push(operation);
                Ok(operations.len() - 1)
            }
            _ => Err(finished(py)),
        }
    }

    fn target(container: &Bound<'_, PyAny>, key: &Bound<'_, PyAny>) -> PyResult<(String, Vec<u8>)> {
        Ok((
            convert::container_name("container", container)?,
            convert::key("key", key)?.into_owned(),
        ))
    }
}

fn finished(py: Python<'_>) -> PyErr {
    to_py(
        py,
        Error::InvalidArgument {
            argument: "batch",
            reason: "this batch was already committed or discarded".to_owned(),
        },
    )
}

#[pymethods]
impl Batch {
    /// Queues a put; returns the operation's index.
    #[pyo3(signature = (container, key, value, *, content_type = None, metadata = None, ttl = None, if_match = None, if_none_match = None, if_modified_since = None, if_unmodified_since = None, if_version = None, lease_id = None, lock_handle = None))]
    fn put(
        &self,
        py: Python<'_>,
        container: &Bound<'_, PyAny>,
        key: &Bound<'_, PyAny>,
        value: &Bound<'_, PyAny>,
        content_type: Option<&Bound<'_, PyAny>>,
        metadata: Option<&Bound<'_, PyAny>>,
        ttl: Option<&Bound<'_, PyAny>>,
        if_match: Option<&Bound<'_, PyAny>>,
        if_none_match: Option<&Bound<'_, PyAny>>,
        if_modified_since: Option<&Bound<'_, PyAny>>,
        if_unmodified_since: Option<&Bound<'_, PyAny>>,
        if_version: Option<&Bound<'_, PyAny>>,
        lease_id: Option<&Bound<'_, PyAny>>,
        lock_handle: Option<&Bound<'_, PyAny>>,
    ) -> PyResult<usize> {
        let (container, key) = Batch::target(container, key)?;
        let value = convert::value("value", value)?.into_owned();
        let options = write_options(
            content_type,
            metadata,
            ttl,
            if_match,
            if_none_match,
            if_modified_since,
            if_unmodified_since,
            if_version,
            lease_id,
            lock_handle,
        )?;
        self.push(py, Operation::Put(container, key, value, options))
    }

    /// Queues a create (the item must not exist).
    #[pyo3(signature = (container, key, value, *, content_type = None, metadata = None, ttl = None, if_match = None, if_none_match = None, if_modified_since = None, if_unmodified_since = None, if_version = None, lease_id = None, lock_handle = None))]
    fn create(
        &self,
        py: Python<'_>,
        container: &Bound<'_, PyAny>,
        key: &Bound<'_, PyAny>,
        value: &Bound<'_, PyAny>,
        content_type: Option<&Bound<'_, PyAny>>,
        metadata: Option<&Bound<'_, PyAny>>,
        ttl: Option<&Bound<'_, PyAny>>,
        if_match: Option<&Bound<'_, PyAny>>,
        if_none_match: Option<&Bound<'_, PyAny>>,
        if_modified_since: Option<&Bound<'_, PyAny>>,
        if_unmodified_since: Option<&Bound<'_, PyAny>>,
        if_version: Option<&Bound<'_, PyAny>>,
        lease_id: Option<&Bound<'_, PyAny>>,
        lock_handle: Option<&Bound<'_, PyAny>>,
    ) -> PyResult<usize> {
        let (container, key) = Batch::target(container, key)?;
        let value = convert::value("value", value)?.into_owned();
        let options = write_options(
            content_type,
            metadata,
            ttl,
            if_match,
            if_none_match,
            if_modified_since,
            if_unmodified_since,
            if_version,
            lease_id,
            lock_handle,
        )?;
        self.push(py, Operation::Create(container, key, value, options))
    }

    /// Queues a replace (the item must exist).
    #[pyo3(signature = (container, key, value, *, content_type = None, metadata = None, ttl = None, if_match = None, if_none_match = None, if_modified_since = None, if_unmodified_since = None, if_version = None, lease_id = None, lock_handle = None))]
    fn replace(
        &self,
        py: Python<'_>,
        container: &Bound<'_, PyAny>,
        key: &Bound<'_, PyAny>,
        value: &Bound<'_, PyAny>,
        content_type: Option<&Bound<'_, PyAny>>,
        metadata: Option<&Bound<'_, PyAny>>,
        ttl: Option<&Bound<'_, PyAny>>,
        if_match: Option<&Bound<'_, PyAny>>,
        if_none_match: Option<&Bound<'_, PyAny>>,
        if_modified_since: Option<&Bound<'_, PyAny>>,
        if_unmodified_since: Option<&Bound<'_, PyAny>>,
        if_version: Option<&Bound<'_, PyAny>>,
        lease_id: Option<&Bound<'_, PyAny>>,
        lock_handle: Option<&Bound<'_, PyAny>>,
    ) -> PyResult<usize> {
        let (container, key) = Batch::target(container, key)?;
        let value = convert::value("value", value)?.into_owned();
        let options = write_options(
            content_type,
            metadata,
            ttl,
            if_match,
            if_none_match,
            if_modified_since,
            if_unmodified_since,
            if_version,
            lease_id,
            lock_handle,
        )?;
        self.push(py, Operation::Replace(container, key, value, options))
    }

    /// Queues a delete (the item must exist).
    #[pyo3(signature = (container, key, *, if_match = None, if_none_match = None, if_modified_since = None, if_unmodified_since = None, if_version = None, lease_id = None, lock_handle = None))]
    fn delete(
        &self,
        py: Python<'_>,
        container: &Bound<'_, PyAny>,
        key: &Bound<'_, PyAny>,
        if_match: Option<&Bound<'_, PyAny>>,
        if_none_match: Option<&Bound<'_, PyAny>>,
        if_modified_since: Option<&Bound<'_, PyAny>>,
        if_unmodified_since: Option<&Bound<'_, PyAny>>,
        if_version: Option<&Bound<'_, PyAny>>,
        lease_id: Option<&Bound<'_, PyAny>>,
        lock_handle: Option<&Bound<'_, PyAny>>,
    ) -> PyResult<usize> {
        let (container, key) = Batch::target(container, key)?;
        let options = write_options(
            None,
            None,
            None,
            if_match,
            if_none_match,
            if_modified_since,
            if_unmodified_since,
            if_version,
            lease_id,
            lock_handle,
        )?;
        self.push(py, Operation::Delete(container, key, options))
    }

    /// Queues a check: the conditions must hold (with none: the item must exist); writes
    /// nothing.
    #[pyo3(signature = (container, key, *, if_match = None, if_none_match = None, if_modified_since = None, if_unmodified_since = None, if_version = None))]
    fn check(
        &self,
        py: Python<'_>,
        container: &Bound<'_, PyAny>,
        key: &Bound<'_, PyAny>,
        if_match: Option<&Bound<'_, PyAny>>,
        if_none_match: Option<&Bound<'_, PyAny>>,
        if_modified_since: Option<&Bound<'_, PyAny>>,
        if_unmodified_since: Option<&Bound<'_, PyAny>>,
        if_version: Option<&Bound<'_, PyAny>>,
    ) -> PyResult<usize> {
        let (container, key) = Batch::target(container, key)?;
        let conditions = convert::conditions(
            if_match,
            if_none_match,
            if_modified_since,
            if_unmodified_since,
            if_version,
        )?;
        self.push(py, Operation::Check(container, key, conditions))
    }

    /// Commits every operation or none; returns the batch's version (every written item's
    /// ETag is derived from it). On failure raises `FailedDependency` naming the failing
    /// operation (`.index`) and its error (`.cause`). A batch commits once.
    fn commit(&self, py: Python<'_>) -> PyResult<u64> {
        let previous = std::mem::replace(&mut *self.state.lock(), State::Discarded);
        let operations = match previous {
            State::Open(operations) => operations,
            other => {
                *self.state.lock() = other;
                return Err(finished(py));
            }
        };
        let targets: Vec<(String, Vec<u8>)> = operations.iter().map(Operation::target).collect();
        let committed = py.detach(move || -> Result<u64, Error> {
            let store = self.handle.store()?;
            let mut batch = store.batch();
            for operation in operations {
                match operation {
                    Operation::Put(container, key, value, options) => {
                        batch.put(&container, &key, &value, options)
                    }
                    Operation::Create(container, key, value, options) => {
                        batch.create(&container, &key, &value, options)
                    }
                    Operation::Replace(container, key, value, options) => {
                        batch.replace(&container, &key, &value, options)
                    }
                    Operation::Delete(container, key, options) => {
                        batch.delete(&container, &key, options)
                    }
                    Operation::Check(container, key, conditions) => {
                        batch.check(&container, &key, conditions)
                    }
                };
            }
            batch.commit()
        });
        // A failed batch names the container and key of the operation that failed.
        let failed_at = match &committed {
            Err(Error::BatchFailed { index, .. }) => targets.get(*index),
            _ => None,
        };
        let context = failed_at.map_or(Context::NONE, |(container, key)| {
            Context::item(container, key)
        });
        let version = committed.py_result_in(py, &context)?;
        *self.state.lock() = State::Committed(version);
        Ok(version)
    }

    /// Drops every queued operation; nothing is written.
    fn discard(&self) {
        let mut state = self.state.lock();
        if let State::Open(_) = *state {
            *state = State::Discarded;
        }
    }

    /// The batch's version once committed, else `None`.
    #[getter]
    fn version(&self) -> Option<u64> {
        match *self.state.lock() {
            State::Committed(version) => Some(version),
            _ => None,
        }
    }

    fn __len__(&self) -> usize {
        match &*self.state.lock() {
            State::Open(operations) => operations.len(),
            _ => 0,
        }
    }

    fn __enter__(slf: Py<Self>) -> Py<Self> {
        slf
    }

    /// A clean exit commits (unless already committed, discarded or empty); an exception
    /// discards.
    #[pyo3(signature = (exc_type, exc_value, traceback))]
    fn __exit__(
        &self,
        py: Python<'_>,
        exc_type: &Bound<'_, PyAny>,
        exc_value: &Bound<'_, PyAny>,
        traceback: &Bound<'_, PyAny>,
    ) -> PyResult<()> {
        let _ = (exc_value, traceback);
        if !exc_type.is_none() {
            self.discard();
            return Ok(());
        }
        let pending =
            matches!(&*self.state.lock(), State::Open(operations) if !operations.is_empty());
        if pending {
            self.commit(py)?;
        } else {
            self.discard();
        }
        Ok(())
    }

    fn __repr__(&self) -> String {
        match &*self.state.lock() {
            State::Open(operations) => format!("<tenure.Batch of {} operations>", operations.len()),
            State::Committed(version) => format!("<tenure.Batch committed at version {version}>"),
            State::Discarded => "<tenure.Batch discarded>".to_owned(),
        }
    }
}
