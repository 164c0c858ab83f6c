//! What reads return: `Item`, `Page`, and the cache lock's `LockHandle`.

use pyo3::basic::CompareOp;
use pyo3::prelude::*;
use pyo3::types::{PyBytes, PyDict, PyList};

use tenure::{ETag, LockHandle, Timestamp};

use crate::convert;

/// An item as a read returns it. Times are converted to `datetime` only when asked for.
#[pyclass(frozen, module = "tenure", name = "Item")]
pub struct Item {
    key: Vec<u8>,
    value: Option<Py<PyBytes>>,
    etag: ETag,
    version: u64,
    last_modified: Timestamp,
    content_type: Option<String>,
    metadata: Vec<(String, String)>,
    expires_at: Option<Timestamp>,
}

impl Item {
    pub fn new(py: Python<'_>, item: tenure::Item) -> Item {
        Item {
            value: item.value.map(|value| PyBytes::new(py, &value).unbind()),
            key: item.key,
            etag: item.etag,
            version: item.version,
            last_modified: item.last_modified,
            content_type: item.content_type,
            metadata: item.metadata,
            expires_at: item.expires_at,
        }
    }
}

#[pymethods]
impl Item {
    /// The key: `str` when it is valid UTF-8, else `bytes` (see `key_bytes`).
    #[getter]
    fn key<'py>(&self, py: Python<'py>) -> Bound<'py, PyAny> {
        convert::key_object(py, &self.key)
    }

    /// The key exactly as stored.
    #[getter]
    fn key_bytes<'py>(&self, py: Python<'py>) -> Bound<'py, PyBytes> {
        PyBytes::new(py, &self.key)
    }

    /// The value; `None` from get_properties and listings without values.
    #[getter]
    fn value(&self, py: Python<'_>) -> Option<Py<PyBytes>> {
        self.value.as_ref().map(|value| value.clone_ref(py))
    }

    /// The ETag, quotes included: `"0x00000000000004D2"`.
    #[getter]
    fn etag(&self) -> String {
        self.etag.to_string()
    }

    #[getter]
    fn version(&self) -> u64 {
        self.version
    }

    /// When the item was last written (aware UTC datetime, microsecond resolution).
    #[getter]
    fn last_modified<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyAny>> {
        convert::datetime(py, self.last_modified)
    }

    #[getter]
    fn content_type(&self) -> Option<String> {
        self.content_type.clone()
    }

    #[getter]
    fn metadata<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyDict>> {
        let metadata = PyDict::new(py);
        for (name, value) in &self.metadata {
            metadata.set_item(name, value)?;
        }
        Ok(metadata)
    }

    /// When the item expires (its TTL), or `None`.
    #[getter]
    fn expires_at<'py>(&self, py: Python<'py>) -> PyResult<Option<Bound<'py, PyAny>>> {
        self.expires_at
            .map(|expires_at| convert::datetime(py, expires_at))
            .transpose()
    }

    fn __repr__(&self, py: Python<'_>) -> PyResult<String> {
        let key = convert::key_object(py, &self.key).repr()?.to_string();
        let value = match &self.value {
            Some(value) if value.bind(py).as_bytes().len() <= 64 => {
                value.bind(py).repr()?.to_string()
            }
            Some(value) => format!("<{} bytes>", value.bind(py).as_bytes().len()),
            None => "None".to_owned(),
        };
        Ok(format!(
            "tenure.Item(key={key}, value={value}, etag='{}', version={})",
            self.etag, self.version
        ))
    }
}

/// One page of a listing: `items`, and `continuation` (`None` on the last page).
#[pyclass(frozen, module = "tenure", name = "Page")]
pub struct Page {
    items: Py<PyList>,
    continuation: Option<String>,
}

impl Page {
    pub fn new(py: Python<'_>, page: tenure::Page) -> PyResult<Page> {
        let items = PyList::empty(py);
        for item in page.items {
            items.append(Py::new(py, Item::new(py, item))?)?;
        }
        Ok(Page {
            items: items.unbind(),
            continuation: page.continuation,
        })
    }
}

#[pymethods]
impl Page {
    #[getter]
    fn items(&self, py: Python<'_>) -> Py<PyList> {
        self.items.clone_ref(py)
    }

    /// Pass it to the next `list` call; `None` on the last page.
    #[getter]
    fn continuation(&self) -> Option<String> {
        self.continuation.clone()
    }

    fn __len__(&self, py: Python<'_>) -> usize {
        self.items.bind(py).len()
    }

    fn __iter__<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyAny>> {
        self.items.bind(py).as_any().try_iter().map(Bound::into_any)
    }

    fn __repr__(&self, py: Python<'_>) -> String {
        let continuation = self
            .continuation
            .as_ref()
            .map_or_else(|| "None".to_owned(), |token| format!("{token:?}"));
        format!(
            "tenure.Page({} items, continuation={continuation})",
            self.items.bind(py).len()
        )
    }
}

/// The handle of a cache lock (docs/spec.md §6): 32 hexadecimal digits. `LockHandle(text)` parses one.
#[pyclass(frozen, module = "tenure", name = "LockHandle")]
pub struct PyLockHandle {
    pub handle: LockHandle,
}

#[pymethods]
impl PyLockHandle {
    #[new]
    fn new(py: Python<'_>, text: &Bound<'_, PyAny>) -> PyResult<PyLockHandle> {
        let _ = py;
        Ok(PyLockHandle {
            handle: convert::lock_handle("text", text)?,
        })
    }

    fn __str__(&self) -> String {
        self.handle.to_string()
    }

    fn __repr__(&self) -> String {
        format!("tenure.LockHandle('{}')", self.handle)
    }

    fn __hash__(&self) -> u64 {
        (self.handle.0 as u64) ^ ((self.handle.0 >> 64) as u64)
    }

    fn __richcmp__(&self, other: &Bound<'_, PyAny>, op: CompareOp) -> PyResult<Py<PyAny>> {
        let py = other.py();
        let Ok(other) = other.cast::<PyLockHandle>() else {
            return Ok(py.NotImplemented());
        };
        let equal = self.handle == other.get().handle;
        match op {
            CompareOp::Eq => Ok(equal.into_pyobject(py)?.to_owned().into_any().unbind()),
            CompareOp::Ne => Ok((!equal).into_pyobject(py)?.to_owned().into_any().unbind()),
            _ => Ok(py.NotImplemented()),
        }
    }
}
