//! Engine errors → the Python exception tree. The classes live in Python (`tenure/__init__.py`,
//! one per docs/spec.md §12 code under `TenureError`); this module only calls its factory
//! functions.
//!
//! The binding knows what the engine does not put in its errors: which container and key the
//! call was about, and the name the caller gave each argument. [`Context`] carries both, so a
//! `NotFound` says which item is missing and an `InvalidArgument` names the caller's keyword.

use pyo3::prelude::*;
use pyo3::sync::PyOnceLock;
use pyo3::types::PyDict;

use tenure::{Error, ErrorCode};

use crate::convert;

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

/// What a call was about, for its error: the container, the key, and the caller's names for
/// arguments the engine names differently (engine name → Python name).
#[derive(Clone, Copy, Default)]
pub struct Context<'a> {
    pub container: Option<&'a str>,
    pub key: Option<&'a [u8]>,
    pub renames: &'a [(&'static str, &'static str)],
    /// What a `Closed` error says (default: "the store was closed").
    pub closed: Option<&'static str>,
}

impl<'a> Context<'a> {
    pub const NONE: Context<'static> = Context {
        container: None,
        key: None,
        renames: &[],
        closed: None,
    };

    pub fn container(container: &'a str) -> Context<'a> {
        Context {
            container: Some(container),
            ..Context::NONE
        }
    }

    pub fn item(container: &'a str, key: &'a [u8]) -> Context<'a> {
        Context {
            container: Some(container),
            key: Some(key),
            ..Context::NONE
        }
    }

    pub fn renaming(self, renames: &'a [(&'static str, &'static str)]) -> Context<'a> {
        Context { renames, ..self }
    }

    fn argument(&self, engine_name: &'static str) -> &'static str {
        self.renames
            .iter()
            .find(|(engine, _)| *engine == engine_name)
            .map_or(engine_name, |(_, python)| python)
    }

    /// `key 'k' in container 'c': ` (or the part that is known), for a message.
    fn target(&self, code: ErrorCode) -> String {
        match (self.container, self.key) {
            // A missing container is about the container, whatever key was asked for.
            (Some(container), _) if code == ErrorCode::ContainerNotFound => {
                format!("container '{container}': ")
            }
            (Some(container), Some(key)) => {
                format!(
                    "key {} in container '{container}': ",
                    convert::key_repr(key)
                )
            }
            (Some(container), None) => format!("container '{container}': "),
            (None, Some(key)) => format!("key {}: ", convert::key_repr(key)),
            (None, None) => String::new(),
        }
    }
}

/// The message for one error: `Code (status): target: what it means[; current ETag E]`.
fn message(error: &Error, context: &Context<'_>) -> String {
    let code = error.code();
    let head = format!("{} ({})", code.name(), code.status());
    let target = context.target(code);
    match error {
        Error::InvalidArgument { argument, reason } => format!(
            "{head}: {target}argument `{}`: {reason}",
            context.argument(argument)
        ),
        Error::Rejected { current_etag, .. } => {
            let etag = current_etag
                .map(|etag| format!("; current ETag {etag}"))
                .unwrap_or_default();
            format!("{head}: {target}{}{etag}", code.meaning())
        }
        Error::Closed => format!(
            "{head}: {}",
            context.closed.unwrap_or("the store was closed")
        ),
        // The engine's own text already names what it is about (path, offset, versions).
        other => {
            let text = other.to_string();
            match text.split_once(": ") {
                Some((_, rest)) if text.starts_with(code.name()) => format!("{head}: {rest}"),
                _ => format!("{head}: {text}"),
            }
        }
    }
}

/// The exception object for one engine error (not raised yet).
fn exception<'py>(
    py: Python<'py>,
    error: &Error,
    context: &Context<'_>,
) -> PyResult<Bound<'py, PyAny>> {
    let factories = factories(py)?;
    if let Error::BatchFailed {
        index,
        error: cause,
        ..
    } = error
    {
        let cause = exception(py, cause, context)?;
        let message = format!(
            "FailedDependency (424): batch operation {index} failed: {}",
            cause.str()?
        );
        return factories
            .batch_failed
            .bind(py)
            .call1((*index, cause, message));
    }
    let details = PyDict::new(py);
    match error {
        Error::InvalidArgument { argument, .. } => {
            details.set_item("argument", context.argument(argument))?
        }
        Error::StoreLocked { path } => details.set_item("path", path)?,
        Error::Corruption { file, offset, .. } => {
            details.set_item("path", file)?;
            details.set_item("offset", *offset)?;
        }
        Error::Io { path, source, .. } => {
            details.set_item("path", path)?;
            details.set_item("errno", source.raw_os_error())?;
        }
        Error::Compacted {
            oldest_available, ..
        } => details.set_item("oldest_available", *oldest_available)?,
        _ => {}
    }
    if let Some(container) = context.container {
        details.set_item("container", container)?;
    }
    if let Some(key) = context.key {
        details.set_item("key", convert::key_object(py, key)?)?;
    }
    let etag = error.current_etag().map(|etag| etag.to_string());
    factories.make_error.bind(py).call1((
        error.code().name(),
        message(error, context),
        etag,
        details,
    ))
}

/// Converts an engine error into the matching `tenure.TenureError` subclass.
pub fn to_py(py: Python<'_>, error: Error) -> PyErr {
    to_py_in(py, error, &Context::NONE)
}

/// Converts an engine error about `context` into the matching exception.
pub fn to_py_in(py: Python<'_>, error: Error, context: &Context<'_>) -> PyErr {
    match exception(py, &error, context) {
        Ok(value) => PyErr::from_value(value),
        // Only if `tenure` itself is broken: report that instead.
        Err(import_error) => import_error,
    }
}

/// `Result<T, tenure::Error>` → `PyResult<T>`.
pub trait IntoPyResult<T> {
    fn py_result(self, py: Python<'_>) -> PyResult<T>;
    fn py_result_in(self, py: Python<'_>, context: &Context<'_>) -> PyResult<T>;
}

impl<T> IntoPyResult<T> for Result<T, Error> {
    fn py_result(self, py: Python<'_>) -> PyResult<T> {
        self.map_err(|error| to_py(py, error))
    }

    fn py_result_in(self, py: Python<'_>, context: &Context<'_>) -> PyResult<T> {
        self.map_err(|error| to_py_in(py, error, context))
    }
}
