//! `Lease` (a granted item or container lease, also a context manager that releases it) and
//! `LeaseInfo`.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

use parking_lot::Mutex;
use pyo3::basic::CompareOp;
use pyo3::prelude::*;
use pyo3::types::{PyBytes, PyString, PyTuple};

use tenure::{Error, ErrorCode, LeaseDuration, LeaseId, LeaseState};

use crate::convert;
use crate::errors::{Context, IntoPyResult};
use crate::item::compare;
use crate::store::Handle;

/// What a lease is on: a container (`key` None) or an item.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct LeaseTarget {
    pub container: String,
    pub key: Option<Vec<u8>>,
}

impl LeaseTarget {
    /// What an error about this lease names.
    pub fn context(&self) -> Context<'_> {
        match &self.key {
            Some(key) => Context::item(&self.container, key),
            None => Context::container(&self.container),
        }
    }

    pub fn container(name: &str) -> LeaseTarget {
        LeaseTarget {
            container: name.to_owned(),
            key: None,
        }
    }

    pub fn item(container: &str, key: &[u8]) -> LeaseTarget {
        LeaseTarget {
            container: container.to_owned(),
            key: Some(key.to_vec()),
        }
    }
}

/// A lease duration argument: `None` or `-1` = infinite, else 15–60 whole seconds.
pub struct LeaseDurationArg(pub LeaseDuration);

impl LeaseDurationArg {
    pub const DEFAULT: LeaseDurationArg = LeaseDurationArg(LeaseDuration::Fixed { seconds: 15 });
}

impl<'a, 'py> FromPyObject<'a, 'py> for LeaseDurationArg {
    type Error = PyErr;

    fn extract(value: Borrowed<'a, 'py, PyAny>) -> PyResult<LeaseDurationArg> {
        convert::lease_duration(Some(&value.to_owned())).map(LeaseDurationArg)
    }
}

/// A granted lease. `id` changes with `change()`; `fence` is the grant's fencing token.
///
/// Two Leases are equal when they name the same grant (container, key, id and fence). A
/// pickled Lease carries those four to another process, where it serves as `lease_id=`; it
/// belongs to no store there, so its own methods raise `Closed`.
#[pyclass(frozen, module = "tenure")]
pub struct Lease {
    /// `None` for a Lease rebuilt by pickle.
    handle: Option<Arc<Handle>>,
    target: LeaseTarget,
    id: Mutex<LeaseId>,
    fence: AtomicU64,
}

/// What a detached (unpickled) Lease's methods say.
const DETACHED: &str =
    "this Lease was unpickled and belongs to no open store here; pass it as lease_id= to a \
     container's methods (renew_lease, release_lease, put, ...)";

impl Lease {
    pub fn new(handle: Arc<Handle>, target: LeaseTarget, lease: tenure::Lease) -> Lease {
        Lease {
            handle: Some(handle),
            target,
            id: Mutex::new(lease.id),
            fence: AtomicU64::new(lease.fence),
        }
    }

    pub fn current_id(&self) -> LeaseId {
        *self.id.lock()
    }

    fn granted(&self, lease: tenure::Lease) {
        *self.id.lock() = lease.id;
        self.fence.store(lease.fence, Ordering::Release);
    }

    fn handle(&self, py: Python<'_>) -> PyResult<&Arc<Handle>> {
        self.handle.as_ref().ok_or_else(|| {
            crate::errors::to_py_in(
                py,
                Error::Closed,
                &Context {
                    closed: Some(DETACHED),
                    ..self.target.context()
                },
            )
        })
    }

    /// Runs a lease action on this lease's target; errors name the target.
    fn act<T: Send>(
        &self,
        py: Python<'_>,
        action: impl FnOnce(&tenure::Store, &LeaseTarget) -> Result<T, Error> + Send,
    ) -> PyResult<T> {
        let handle = self.handle(py)?;
        let target = &self.target;
        handle.run_in(py, &target.context(), |store| action(store, target))
    }

    fn do_release(&self, py: Python<'_>) -> PyResult<()> {
        let id = self.current_id();
        self.act(py, |store, target| match &target.key {
            Some(key) => store.release_lease(&target.container, key, id),
            None => store.release_container_lease(&target.container, id),
        })?;
        if let Some(handle) = &self.handle {
            handle.forget_lease(&self.target);
        }
        Ok(())
    }
}

#[pymethods]
impl Lease {
    /// The lease id (lower-case UUID text). Pass it (or the Lease) as `lease_id=`.
    #[getter]
    fn id(&self) -> String {
        self.current_id().to_string()
    }

    /// The fencing token: strictly increasing per item across all grants.
    #[getter]
    fn fence(&self) -> u64 {
        self.fence.load(Ordering::Acquire)
    }

    #[getter]
    fn container(&self) -> String {
        self.target.container.clone()
    }

    /// The leased item's key (a `str`, as `Item.key`), or `None` for a container lease.
    #[getter]
    fn key<'py>(&self, py: Python<'py>) -> PyResult<Option<Bound<'py, PyString>>> {
        self.target
            .key
            .as_deref()
            .map(|key| convert::key_object(py, key))
            .transpose()
    }

    /// The leased item's key exactly as stored, or `None` for a container lease.
    #[getter]
    fn key_bytes<'py>(&self, py: Python<'py>) -> Option<Bound<'py, PyBytes>> {
        self.target.key.as_deref().map(|key| PyBytes::new(py, key))
    }

    /// Renews the lease for its duration from now; returns this Lease.
    fn renew(slf: &Bound<'_, Self>) -> PyResult<Py<Self>> {
        let this = slf.get();
        let id = this.current_id();
        let lease = this.act(slf.py(), |store, target| match &target.key {
            Some(key) => store.renew_lease(&target.container, key, id),
            None => store.renew_container_lease(&target.container, id),
        })?;
        this.granted(lease);
        Ok(slf.clone().unbind())
    }

    /// Changes the lease id to `proposed_id`; returns this Lease (with the new id).
    fn change(slf: &Bound<'_, Self>, proposed_id: &Bound<'_, PyAny>) -> PyResult<Py<Self>> {
        let this = slf.get();
        let id = this.current_id();
        let proposed = convert::lease_id("proposed_id", proposed_id)?;
        let lease = this.act(slf.py(), |store, target| match &target.key {
            Some(key) => store.change_lease(&target.container, key, id, proposed),
            None => store.change_container_lease(&target.container, id, proposed),
        })?;
        this.granted(lease);
        if let Some(handle) = &this.handle {
            handle.change_remembered_lease(&this.target, lease.id);
        }
        Ok(slf.clone().unbind())
    }

    /// Releases the lease (the item or container becomes Available).
    fn release(&self, py: Python<'_>) -> PyResult<()> {
        self.do_release(py)
    }

    /// The lease's current state.
    fn info(&self, py: Python<'_>) -> PyResult<LeaseInfo> {
        let info = self.act(py, |store, target| match &target.key {
            Some(key) => store.lease_info(&target.container, key),
            None => store.container_lease_info(&target.container),
        })?;
        Ok(LeaseInfo::new(self.handle(py)?, &self.target, info))
    }

    fn __enter__(slf: Py<Self>) -> Py<Self> {
        slf
    }

    /// `Lease(container, key, id, fence)` as pickle rebuilds it: detached from any store.
    #[classmethod]
    fn _detached(
        cls: &Bound<'_, pyo3::types::PyType>,
        container: String,
        key: Option<&Bound<'_, PyAny>>,
        id: &Bound<'_, PyAny>,
        fence: u64,
    ) -> PyResult<Lease> {
        let key = match key.filter(|key| !key.is_none()) {
            Some(key) => Some(convert::key("key", key)?.into_owned()),
            None => None,
        };
        let _ = cls;
        Ok(Lease {
            handle: None,
            target: LeaseTarget { container, key },
            id: Mutex::new(convert::lease_id("id", id)?),
            fence: AtomicU64::new(fence),
        })
    }

    fn __reduce__<'py>(slf: &Bound<'py, Self>) -> PyResult<Bound<'py, PyTuple>> {
        let py = slf.py();
        let this = slf.get();
        let arguments = (
            this.target.container.clone(),
            this.target.key.as_deref().map(|key| PyBytes::new(py, key)),
            this.current_id().to_string(),
            this.fence(),
        );
        (slf.get_type().getattr("_detached")?, arguments).into_pyobject(py)
    }

    fn __richcmp__(&self, other: &Bound<'_, PyAny>, op: CompareOp) -> PyResult<Py<PyAny>> {
        let py = other.py();
        let Ok(other) = other.cast::<Lease>() else {
            return compare(py, None, op);
        };
        let other = other.get();
        let equal = self.target == other.target
            && self.current_id() == other.current_id()
            && self.fence() == other.fence();
        compare(py, Some(equal), op)
    }

    fn __hash__(&self) -> u64 {
        use std::hash::{Hash, Hasher};
        let mut hasher = std::collections::hash_map::DefaultHasher::new();
        (&self.target, self.fence()).hash(&mut hasher);
        hasher.finish()
    }

    /// Releases the lease. After an exception in the block, a failed release is ignored (the
    /// block's exception goes on); after a clean block it is raised, except when the item or
    /// container is gone (its lease went with it).
    #[pyo3(signature = (exc_type, exc_value, traceback))]
    fn __exit__(
        &self,
        py: Python<'_>,
        exc_type: &Bound<'_, PyAny>,
        exc_value: &Bound<'_, PyAny>,
        traceback: &Bound<'_, PyAny>,
    ) -> PyResult<()> {
        let _ = (exc_value, traceback);
        match self.do_release(py) {
            Ok(()) => Ok(()),
            Err(_) if !exc_type.is_none() => Ok(()),
            Err(error) => {
                let code: Option<String> = error
                    .value(py)
                    .getattr("code")
                    .and_then(|code| code.extract())
                    .ok();
                let gone = [ErrorCode::NotFound, ErrorCode::ContainerNotFound]
                    .iter()
                    .any(|gone| code.as_deref() == Some(gone.name()));
                if gone {
                    if let Some(handle) = &self.handle {
                        handle.forget_lease(&self.target);
                    }
                    Ok(())
                } else {
                    Err(error)
                }
            }
        }
    }

    fn __str__(&self) -> String {
        self.current_id().to_string()
    }

    fn __repr__(&self, py: Python<'_>) -> PyResult<String> {
        let target = match &self.target.key {
            Some(key) => format!(
                "container={:?}, key={}",
                self.target.container,
                convert::key_object(py, key)?.repr()?
            ),
            None => format!("container={:?}", self.target.container),
        };
        Ok(format!(
            "tenure.Lease(id='{}', fence={}, {target})",
            self.current_id(),
            self.fence()
        ))
    }
}

/// A lease's state as of the call. A plain value: equal when every field is, picklable.
#[pyclass(frozen, module = "tenure")]
pub struct LeaseInfo {
    info: tenure::LeaseInfo,
    duration: Option<LeaseDuration>,
}

impl LeaseInfo {
    pub fn new(handle: &Handle, target: &LeaseTarget, info: tenure::LeaseInfo) -> LeaseInfo {
        let duration = info.id.and_then(|id| handle.lease_duration(target, id));
        LeaseInfo { info, duration }
    }
}

const STATES: [(&str, LeaseState); 5] = [
    ("available", LeaseState::Available),
    ("leased", LeaseState::Leased),
    ("expired", LeaseState::Expired),
    ("breaking", LeaseState::Breaking),
    ("broken", LeaseState::Broken),
];

#[pymethods]
impl LeaseInfo {
    /// `LeaseInfo(state, id=None, fence=None, remaining=None, duration=None, holder=None)`:
    /// for tests and fakes; `lease_info()` makes them.
    #[new]
    #[pyo3(signature = (state, id = None, fence = None, remaining = None, duration = None, holder = None))]
    fn py_new(
        py: Python<'_>,
        state: &str,
        id: Option<&Bound<'_, PyAny>>,
        fence: Option<u64>,
        remaining: Option<&Bound<'_, PyAny>>,
        duration: Option<i64>,
        holder: Option<String>,
    ) -> PyResult<LeaseInfo> {
        let state = STATES
            .iter()
            .find(|(name, _)| *name == state)
            .map(|(_, state)| *state)
            .ok_or_else(|| {
                let names: Vec<&str> = STATES.iter().map(|(name, _)| *name).collect();
                convert::invalid(py, "state", format!("one of {names:?}, not {state:?}"))
            })?;
        let remaining_micros = match remaining.filter(|value| !value.is_none()) {
            Some(value) => Some(
                u64::try_from(convert::duration("remaining", value)?.as_micros())
                    .unwrap_or(u64::MAX),
            ),
            None => None,
        };
        let duration = match duration {
            None => None,
            Some(-1) => Some(LeaseDuration::Infinite),
            Some(seconds) => Some(LeaseDuration::from_seconds(seconds).py_result(py)?),
        };
        Ok(LeaseInfo {
            info: tenure::LeaseInfo {
                state,
                id: convert::optional_lease_id("id", id)?,
                fence,
                remaining_micros,
                holder,
            },
            duration,
        })
    }

    fn __richcmp__(&self, other: &Bound<'_, PyAny>, op: CompareOp) -> PyResult<Py<PyAny>> {
        let py = other.py();
        let Ok(other) = other.cast::<LeaseInfo>() else {
            return compare(py, None, op);
        };
        let other = other.get();
        compare(
            py,
            Some(self.info == other.info && self.duration == other.duration),
            op,
        )
    }

    fn __reduce__<'py>(slf: &Bound<'py, Self>) -> PyResult<Bound<'py, PyTuple>> {
        let py = slf.py();
        let this = slf.get();
        let arguments = (
            this.state(),
            this.id(),
            this.fence(),
            this.remaining(),
            this.duration(),
            this.holder(),
        );
        (slf.get_type(), arguments).into_pyobject(py)
    }

    /// "available", "leased", "expired", "breaking" or "broken".
    #[getter]
    fn state(&self) -> &'static str {
        match self.info.state {
            LeaseState::Available => "available",
            LeaseState::Leased => "leased",
            LeaseState::Expired => "expired",
            LeaseState::Breaking => "breaking",
            LeaseState::Broken => "broken",
        }
    }

    /// The lease id, `None` when available.
    #[getter]
    fn id(&self) -> Option<String> {
        self.info.id.map(|id| id.to_string())
    }

    #[getter]
    fn fence(&self) -> Option<u64> {
        self.info.fence
    }

    /// Seconds until the lease (leased, fixed) or the break (breaking) runs out; `None` when
    /// nothing runs out.
    #[getter]
    fn remaining(&self) -> Option<f64> {
        self.info.remaining_micros.map(convert::seconds_from_micros)
    }

    /// The lease's duration in seconds, `-1` for an infinite lease, `None` when there is no
    /// lease or it was granted before the store was opened.
    #[getter]
    fn duration(&self) -> Option<i64> {
        self.duration.map(|duration| match duration {
            LeaseDuration::Fixed { seconds } => i64::from(seconds),
            LeaseDuration::Infinite => -1,
        })
    }

    /// The holder label given at acquire.
    #[getter]
    fn holder(&self) -> Option<String> {
        self.info.holder.clone()
    }

    fn __repr__(&self) -> String {
        fn show<T: std::fmt::Display>(value: Option<T>) -> String {
            value.map_or_else(|| "None".to_owned(), |value| value.to_string())
        }
        fn quoted(value: Option<String>) -> String {
            value.map_or_else(|| "None".to_owned(), |value| format!("{value:?}"))
        }
        format!(
            "tenure.LeaseInfo(state='{}', id={}, fence={}, remaining={}, duration={}, holder={})",
            self.state(),
            quoted(self.id()),
            show(self.fence()),
            show(self.remaining()),
            show(self.duration()),
            quoted(self.holder())
        )
    }
}
