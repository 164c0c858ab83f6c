//! Engine errors → the Python exception tree. The classes live in Python (`tenure/__init__.py`,
//! one per docs/spec.md §12 code under `TenureError`); this module only calls its factory functions.

use pyo3::prelude::*;
use pyo3::sync::PyOnceLock;
use pyo3::types::PyDict;

use tenure::Error;

struct Factories {
    make_error: Py<PyAny>,
    batch_failed: Py<PyAny>,
}

static FACTORIES: PyOnceLock<Factories> = PyOnceLock::new();

fn factories(py: Python<'_>) -> PyResult<&Factories> {
    FACTORIES.get_or_try_init(py, || {
        // `tenure` is always imported before its native module runs anything.
        let package = py.import("tenure")?;
        Ok(Factories {
            make_error: package.getattr("_make_error")?.unbind(),
            batch_failed: package.getattr("_batch_failed")?.unbind(),
        })
    })
}

/// The exception object for one engine error (not raised yet).
fn exception<'py>(py: Python<'py>, error: &Error) -> PyResult<Bound<'py, PyAny>> {
    let factories = factories(py)?;
    if let Error::BatchFailed {
        index,
        error: cause,
        ..
    } = error
    {
        let cause = exception(py, cause)?;
        return factories
            .batch_failed
            .bind(py)
            .call1((*index, cause, error.to_string()));
    }
    let details = PyDict::new(py);
    match error {
        Error::InvalidArgument { argument, .. } => details.set_item("argument", *argument)?,
        Error::StoreLocked { path } => details.set_item("path", path)?,
        Error::Corruption { file, offset, .. } => {
            details.set_item("path", file)?;
            details.set_item("offset", *offset)?;
        }
        Error::Io { path, source, .. } => {
            details.set_item("path", path)?;
            details.set_item("errno", source.raw_os_error())?;
        }
        _ => {}
    }
    let etag = error.current_etag().map(|etag| etag.to_string());
    factories
        .make_error
        .bind(py)
        .call1((error.code().name(), error.to_string(), etag, details))
}

/// Converts an engine error into the matching `tenure.TenureError` subclass.
pub fn to_py(py: Python<'_>, error: Error) -> PyErr {
    match exception(py, &error) {
        Ok(value) => PyErr::from_value(value),
        // Only if `tenure` itself is broken: report that instead.
        Err(import_error) => import_error,
    }
}

/// `Result<T, tenure::Error>` → `PyResult<T>`.
pub trait IntoPyResult<T> {
    fn py_result(self, py: Python<'_>) -> PyResult<T>;
}

impl<T> IntoPyResult<T> for Result<T, Error> {
    fn py_result(self, py: Python<'_>) -> PyResult<T> {
        self.map_err(|error| to_py(py, error))
    }
}
