//! What reads return: `ItemProperties` (an item without its value), `Item` (with it), `Page`,
//! and the cache lock's `LockHandle`. All are plain values: equal when their fields are
//! equal, hashable, and picklable (a worker process can be sent them).

use pyo3::basic::CompareOp;
use pyo3::prelude::*;
use pyo3::types::{PyBytes, PyDict, PyList, PyString, PyTuple, PyType};
use pyo3::PyClassInitializer;

use tenure::{ETag, ETagArg, LockHandle, Timestamp};

use crate::convert;

/// `True`, `False` or `NotImplemented` for `__eq__` / `__ne__`.
pub fn compare(py: Python<'_>, equal: Option<bool>, op: CompareOp) -> PyResult<Py<PyAny>> {
    let answer = match (equal, op) {
        (Some(equal), CompareOp::Eq) => equal,
        (Some(equal), CompareOp::Ne) => !equal,
        _ => return Ok(py.NotImplemented()),
    };
    Ok(answer.into_pyobject(py)?.to_owned().into_any().unbind())
}

/// `types.GenericAlias(cls, item)`: `Page[Item]` and friends work at run time as in the stubs.
pub fn generic_alias<'py>(
    cls: &Bound<'py, PyType>,
    item: &Bound<'py, PyAny>,
) -> PyResult<Bound<'py, PyAny>> {
    cls.py()
        .import("types")?
        .getattr("GenericAlias")?
        .call1((cls, item))
}

/// An ETag given back to a constructor (pickling): one of tenure's own.
fn own_etag(py: Python<'_>, text: &str) -> PyResult<ETag> {
    match ETagArg::parse("etag", text) {
        Ok(ETagArg::Exact(etag)) => Ok(etag),
        Ok(_) => Err(convert::invalid(
            py,
            "etag",
            format!("{text:?} is not an ETag tenure issued"),
        )),
        Err(error) => Err(crate::errors::to_py(py, error)),
    }
}

/// An item's properties: everything a read returns but the value (`get_properties`, listings
/// without values). `Item` is an `ItemProperties` with its value.
#[pyclass(frozen, subclass, module = "tenure", name = "ItemProperties")]
pub struct ItemProperties {
    key: Vec<u8>,
    etag: ETag,
    version: u64,
    last_modified: Timestamp,
    content_type: Option<String>,
    metadata: Vec<(String, String)>,
    expires_at: Option<Timestamp>,
}

impl ItemProperties {
    fn from_engine(item: tenure::Item) -> (ItemProperties, Option<Vec<u8>>) {
        (
            ItemProperties {
                key: item.key,
                etag: item.etag,
                version: item.version,
                last_modified: item.last_modified,
                content_type: item.content_type,
                metadata: item.metadata,
                expires_at: item.expires_at,
            },
            item.value,
        )
    }

    /// The Python object for an engine item: an `Item` when the read asked for the value,
    /// else `ItemProperties` (the type follows the call, never the data).
    pub fn object(
        py: Python<'_>,
        item: tenure::Item,
        with_value: bool,
    ) -> PyResult<Bound<'_, PyAny>> {
        if with_value {
            return Item::new(py, item).map(Bound::into_any);
        }
        Ok(Bound::new(py, ItemProperties::from_engine(item).0)?.into_any())
    }

    /// An `ItemProperties` for an engine item (its value, if any, is dropped).
    pub fn new(py: Python<'_>, item: tenure::Item) -> PyResult<Bound<'_, ItemProperties>> {
        Bound::new(py, ItemProperties::from_engine(item).0)
    }

    fn from_arguments(
        py: Python<'_>,
        key: &Bound<'_, PyAny>,
        etag: &str,
        last_modified: &Bound<'_, PyAny>,
        content_type: Option<&Bound<'_, PyAny>>,
        metadata: Option<&Bound<'_, PyAny>>,
        expires_at: Option<&Bound<'_, PyAny>>,
    ) -> PyResult<ItemProperties> {
        let etag = own_etag(py, etag)?;
        Ok(ItemProperties {
            key: convert::key("key", key)?.into_owned(),
            etag,
            version: etag.version(),
            last_modified: convert::timestamp("last_modified", last_modified)?,
            content_type: convert::optional_text("content_type", content_type)?,
            metadata: convert::metadata(metadata)?,
            expires_at: convert::optional_timestamp("expires_at", expires_at)?,
        })
    }

    fn same_fields(&self, other: &ItemProperties) -> bool {
        self.key == other.key
            && self.etag == other.etag
            && self.version == other.version
            && self.last_modified == other.last_modified
            && self.content_type == other.content_type
            && self.metadata == other.metadata
            && self.expires_at == other.expires_at
    }

    /// The constructor's arguments, for pickling.
    fn arguments<'py>(&self, py: Python<'py>) -> PyResult<Vec<Bound<'py, PyAny>>> {
        Ok(vec![
            PyBytes::new(py, &self.key).into_any(),
            PyString::new(py, &self.etag.to_string()).into_any(),
            convert::datetime(py, self.last_modified)?,
            self.content_type.clone().into_pyobject(py)?.into_any(),
            self.metadata(py)?.into_any(),
            match self.expires_at {
                Some(expires_at) => convert::datetime(py, expires_at)?,
                None => py.None().into_bound(py),
            },
        ])
    }
}

#[pymethods]
impl ItemProperties {
    /// `ItemProperties(key, etag, last_modified, content_type=None, metadata=None,
    /// expires_at=None)`: for tests and fakes; reads make them.
    #[new]
    #[pyo3(signature = (key, etag, last_modified, content_type = None, metadata = None, expires_at = None))]
    fn py_new(
        py: Python<'_>,
        key: &Bound<'_, PyAny>,
        etag: &str,
        last_modified: &Bound<'_, PyAny>,
        content_type: Option<&Bound<'_, PyAny>>,
        metadata: Option<&Bound<'_, PyAny>>,
        expires_at: Option<&Bound<'_, PyAny>>,
    ) -> PyResult<ItemProperties> {
        ItemProperties::from_arguments(
            py,
            key,
            etag,
            last_modified,
            content_type,
            metadata,
            expires_at,
        )
    }

    /// The key, always a `str`: the UTF-8 text, or for a key that is not UTF-8 its bytes
    /// decoded with "surrogateescape" (PEP 383), which names the same item when passed back.
    #[getter]
    fn key<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyString>> {
        convert::key_object(py, &self.key)
    }

    /// The key exactly as stored.
    #[getter]
    fn key_bytes<'py>(&self, py: Python<'py>) -> Bound<'py, PyBytes> {
        PyBytes::new(py, &self.key)
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

    fn __richcmp__(
        slf: &Bound<'_, Self>,
        other: &Bound<'_, PyAny>,
        op: CompareOp,
    ) -> PyResult<Py<PyAny>> {
        let py = slf.py();
        if !other.get_type().is(slf.get_type()) {
            return compare(py, None, op);
        }
        let Ok(other_properties) = other.cast::<ItemProperties>() else {
            return compare(py, None, op);
        };
        let mut equal = slf.get().same_fields(other_properties.get());
        if let (Ok(mine), Ok(theirs)) = (slf.cast::<Item>(), other.cast::<Item>()) {
            equal = equal
                && mine.get().value.bind(py).as_bytes() == theirs.get().value.bind(py).as_bytes();
        }
        compare(py, Some(equal), op)
    }

    fn __hash__(&self) -> u64 {
        use std::hash::{Hash, Hasher};
        let mut hasher = std::collections::hash_map::DefaultHasher::new();
        self.key.hash(&mut hasher);
        self.version.hash(&mut hasher);
        hasher.finish()
    }

    fn __reduce__<'py>(slf: &Bound<'py, Self>) -> PyResult<Bound<'py, PyTuple>> {
        let py = slf.py();
        let mut arguments = slf.get().arguments(py)?;
        if let Ok(item) = slf.cast::<Item>() {
            arguments.insert(1, item.get().value.bind(py).clone().into_any());
        }
        (slf.get_type(), PyTuple::new(py, arguments)?).into_pyobject(py)
    }

    fn __repr__(slf: &Bound<'_, Self>) -> PyResult<String> {
        let py = slf.py();
        let this = slf.get();
        let key = convert::key_object(py, &this.key)?.repr()?.to_string();
        let (name, value) = match slf.cast::<Item>() {
            Ok(item) => {
                let value = item.get().value.bind(py);
                let shown = if value.as_bytes().len() <= 64 {
                    value.repr()?.to_string()
                } else {
                    format!("<{} bytes>", value.as_bytes().len())
                };
                ("Item", format!(", value={shown}"))
            }
            Err(_) => ("ItemProperties", String::new()),
        };
        Ok(format!(
            "tenure.{name}(key={key}{value}, etag='{}', version={})",
            this.etag, this.version
        ))
    }
}

/// An item as a read returns it, value included (`get`, `update`, listings with values). Its
/// `value` is always `bytes`; a read without the value returns `ItemProperties`.
#[pyclass(frozen, extends = ItemProperties, module = "tenure", name = "Item")]
pub struct Item {
    value: Py<PyBytes>,
}

impl Item {
    fn create<'py>(
        py: Python<'py>,
        properties: ItemProperties,
        value: &[u8],
    ) -> PyResult<Bound<'py, Item>> {
        let initializer = PyClassInitializer::from(properties).add_subclass(Item {
            value: PyBytes::new(py, value).unbind(),
        });
        Bound::new(py, initializer)
    }

    /// The `Item` for an engine item read with its value (an empty value if it had none).
    pub fn new(py: Python<'_>, item: tenure::Item) -> PyResult<Bound<'_, Item>> {
        let (properties, value) = ItemProperties::from_engine(item);
        Item::create(py, properties, value.as_deref().unwrap_or_default())
    }
}

#[pymethods]
impl Item {
    /// `Item(key, value, etag, last_modified, content_type=None, metadata=None,
    /// expires_at=None)`: for tests and fakes; reads make them.
    #[new]
    #[pyo3(signature = (key, value, etag, last_modified, content_type = None, metadata = None, expires_at = None))]
    fn new_item(
        py: Python<'_>,
        key: &Bound<'_, PyAny>,
        value: &Bound<'_, PyAny>,
        etag: &str,
        last_modified: &Bound<'_, PyAny>,
        content_type: Option<&Bound<'_, PyAny>>,
        metadata: Option<&Bound<'_, PyAny>>,
        expires_at: Option<&Bound<'_, PyAny>>,
    ) -> PyResult<PyClassInitializer<Item>> {
        let properties = ItemProperties::from_arguments(
            py,
            key,
            etag,
            last_modified,
            content_type,
            metadata,
            expires_at,
        )?;
        let value = convert::value("value", value)?;
        Ok(PyClassInitializer::from(properties).add_subclass(Item {
            value: PyBytes::new(py, &value).unbind(),
        }))
    }

    /// The value (`bytes`).
    #[getter]
    fn value(&self, py: Python<'_>) -> Py<PyBytes> {
        self.value.clone_ref(py)
    }
}

/// One page of a listing: `items`, and `continuation` (`None` on the last page).
#[pyclass(frozen, module = "tenure", name = "Page")]
pub struct Page {
    items: Py<PyList>,
    continuation: Option<String>,
}

impl Page {
    pub fn new(py: Python<'_>, page: tenure::Page, with_values: bool) -> PyResult<Page> {
        let items = PyList::empty(py);
        for item in page.items {
            items.append(ItemProperties::object(py, item, with_values)?)?;
        }
        Ok(Page {
            items: items.unbind(),
            continuation: page.continuation,
        })
    }
}

#[pymethods]
impl Page {
    /// `Page(items, continuation=None)`: for tests and fakes; listings make them.
    #[new]
    #[pyo3(signature = (items, continuation = None))]
    fn new_page(items: &Bound<'_, PyAny>, continuation: Option<String>) -> PyResult<Page> {
        let list = PyList::empty(items.py());
        for item in items.try_iter()? {
            let item = item?;
            if !item.is_instance_of::<ItemProperties>() {
                return Err(convert::wrong_type(
                    "items",
                    "a list of Item or ItemProperties",
                    &item,
                ));
            }
            list.append(item)?;
        }
        Ok(Page {
            items: list.unbind(),
            continuation,
        })
    }

    #[classmethod]
    fn __class_getitem__<'py>(
        cls: &Bound<'py, PyType>,
        item: &Bound<'py, PyAny>,
    ) -> PyResult<Bound<'py, PyAny>> {
        generic_alias(cls, item)
    }

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

    fn __richcmp__(&self, other: &Bound<'_, PyAny>, op: CompareOp) -> PyResult<Py<PyAny>> {
        let py = other.py();
        let Ok(other) = other.cast::<Page>() else {
            return compare(py, None, op);
        };
        let other = other.get();
        let equal = self.continuation == other.continuation
            && self.items.bind(py).eq(other.items.bind(py))?;
        compare(py, Some(equal), op)
    }

    fn __reduce__<'py>(slf: &Bound<'py, Self>) -> PyResult<Bound<'py, PyTuple>> {
        let py = slf.py();
        let this = slf.get();
        let arguments = (this.items.clone_ref(py), this.continuation.clone());
        (slf.get_type(), arguments).into_pyobject(py)
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
    fn new(text: &Bound<'_, PyAny>) -> PyResult<PyLockHandle> {
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
            return compare(py, None, op);
        };
        compare(py, Some(self.handle == other.get().handle), op)
    }

    fn __reduce__<'py>(slf: &Bound<'py, Self>) -> PyResult<Bound<'py, PyTuple>> {
        let text = slf.get().handle.to_string();
        (slf.get_type(), (text,)).into_pyobject(slf.py())
    }
}
