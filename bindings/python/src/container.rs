//! `tenure.Container`: item reads and writes (docs/spec.md §3, §7), update, paging, leases (§4) and
//! cache locks (§6) on the items of one container.

use std::borrow::Cow;
use std::sync::Arc;

use pyo3::prelude::*;
use pyo3::types::PyTuple;

use tenure::{Error, ErrorCode, LeaseRequest, ReadOptions, WriteOptions};

use crate::convert;
use crate::errors::Context;
use crate::item::{Item, ItemProperties, Page, PyLockHandle};
use crate::item_iterator::{ItemIterator, Source};
use crate::lease::{Lease, LeaseDurationArg, LeaseInfo, LeaseTarget};
use crate::store::Handle;

/// Engine argument names as the Container's methods call them.
const RENAMES: &[(&str, &str)] = &[("payload", "value"), ("timeout", "wait")];
/// ... and as `put_and_unlock` / `unlock` call the lock handle.
const LOCK_RENAMES: &[(&str, &str)] = &[("payload", "value"), ("lock_handle", "handle")];
/// Pages `iterate()` asks for.
pub(crate) const ITERATE_PAGE_SIZE: usize = 1000;

/// A container of the store. Cheap to make; holds no state of its own but its name.
#[pyclass(frozen, module = "tenure")]
pub struct Container {
    pub handle: Arc<Handle>,
    pub name: String,
}

/// The write arguments every put/create/replace/delete/set_metadata takes, converted.
pub fn write_options(
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
) -> PyResult<WriteOptions> {
    Ok(WriteOptions {
        conditions: convert::conditions(
            if_match,
            if_none_match,
            if_modified_since,
            if_unmodified_since,
            if_version,
        )?,
        content_type: convert::optional_text("content_type", content_type)?,
        metadata: convert::metadata(metadata)?,
        ttl: convert::ttl(ttl)?,
        lease_id: convert::optional_lease_id("lease_id", lease_id)?,
        lock_handle: convert::optional_lock_handle("lock_handle", lock_handle)?,
    })
}

pub fn read_options(
    if_match: Option<&Bound<'_, PyAny>>,
    if_none_match: Option<&Bound<'_, PyAny>>,
    if_modified_since: Option<&Bound<'_, PyAny>>,
    if_unmodified_since: Option<&Bound<'_, PyAny>>,
    lease_id: Option<&Bound<'_, PyAny>>,
) -> PyResult<ReadOptions> {
    Ok(ReadOptions {
        conditions: convert::conditions(
            if_match,
            if_none_match,
            if_modified_since,
            if_unmodified_since,
            None,
        )?,
        lease_id: convert::optional_lease_id("lease_id", lease_id)?,
    })
}

/// A listing prefix: `str` or `bytes`, may be empty (the engine checks its length).
pub fn prefix<'a>(value: &'a Bound<'_, PyAny>) -> PyResult<Cow<'a, [u8]>> {
    convert::key("prefix", value)
}

pub fn page_size(value: &Bound<'_, PyAny>) -> PyResult<usize> {
    let size = convert::count("page_size", value, u64::from(u32::MAX))?;
    Ok(usize::try_from(size).unwrap_or(usize::MAX))
}

/// A read's result as "does it exist": `NotFound` is `false`, other errors stay errors.
pub fn found<T>(read: Result<T, Error>) -> Result<bool, Error> {
    match read {
        Ok(_) => Ok(true),
        Err(error) if error.code() == ErrorCode::NotFound => Ok(false),
        Err(error) => Err(error),
    }
}

impl Container {
    /// What an error about `key` in this container names.
    pub(crate) fn about<'a>(&'a self, key: &'a [u8]) -> Context<'a> {
        Context::item(&self.name, key).renaming(RENAMES)
    }

    fn write(
        &self,
        py: Python<'_>,
        key: &Bound<'_, PyAny>,
        value: &Bound<'_, PyAny>,
        options: WriteOptions,
        kind: WriteKind,
    ) -> PyResult<String> {
        let key = convert::key("key", key)?;
        let value = convert::value("value", value)?;
        let name = &self.name;
        let etag = self
            .handle
            .run_in(py, &self.about(&key), |store| match kind {
                WriteKind::Put => store.put(name, &key, &value, &options),
                WriteKind::Create => store.create(name, &key, &value, &options),
                WriteKind::Replace => store.replace(name, &key, &value, &options),
            })?;
        Ok(etag.to_string())
    }

    fn lease_object(&self, key: &[u8], lease: tenure::Lease) -> Lease {
        Lease::new(
            Arc::clone(&self.handle),
            LeaseTarget::item(&self.name, key),
            lease,
        )
    }

    fn acquire(
        &self,
        py: Python<'_>,
        key: &Bound<'_, PyAny>,
        duration: LeaseDurationArg,
        proposed_id: Option<&Bound<'_, PyAny>>,
        holder: Option<&Bound<'_, PyAny>>,
        wait: Option<&Bound<'_, PyAny>>,
    ) -> PyResult<Lease> {
        let key = convert::key("key", key)?;
        let request = LeaseRequest {
            duration: duration.0,
            proposed_id: convert::optional_lease_id("proposed_id", proposed_id)?,
            holder: convert::optional_text("holder", holder)?,
        };
        let wait = match wait.filter(|wait| !wait.is_none()) {
            Some(wait) => Some(convert::duration("wait", wait)?),
            None => None,
        };
        let name = &self.name;
        let lease = self
            .handle
            .run_in(py, &self.about(&key), |store| match wait {
                Some(timeout) => store.acquire_lease_wait(name, &key, &request, timeout),
                None => store.acquire_lease(name, &key, &request),
            })?;
        let target = LeaseTarget::item(name, &key);
        self.handle
            .remember_lease(&target, lease.id, request.duration);
        Ok(self.lease_object(&key, lease))
    }
}

#[derive(Clone, Copy)]
enum WriteKind {
    Put,
    Create,
    Replace,
}

#[pymethods]
impl Container {
    #[getter]
    fn name(&self) -> String {
        self.name.clone()
    }

    fn __repr__(&self) -> String {
        format!("tenure.Container({:?})", self.name)
    }

    /// Reads an item, value included (docs/spec.md §3 read conditions): `NotModified`,
    /// `ConditionNotMet`, `NotFound` (a missing item is an error, as in Azure and Cosmos DB;
    /// `exists()` and `key in container` ask without one).
    #[pyo3(signature = (key, *, if_match = None, if_none_match = None, if_modified_since = None, if_unmodified_since = None, lease_id = None))]
    fn get<'py>(
        &self,
        py: Python<'py>,
        key: &Bound<'_, PyAny>,
        if_match: Option<&Bound<'_, PyAny>>,
        if_none_match: Option<&Bound<'_, PyAny>>,
        if_modified_since: Option<&Bound<'_, PyAny>>,
        if_unmodified_since: Option<&Bound<'_, PyAny>>,
        lease_id: Option<&Bound<'_, PyAny>>,
    ) -> PyResult<Bound<'py, Item>> {
        let key = convert::key("key", key)?;
        let options = read_options(
            if_match,
            if_none_match,
            if_modified_since,
            if_unmodified_since,
            lease_id,
        )?;
        let name = &self.name;
        let item = self
            .handle
            .run_without_waiting(py, &self.about(&key), |store| {
                store.get(name, &key, &options)
            })?;
        Item::new(py, item)
    }

    /// Like `get`, without the value: an `ItemProperties`.
    #[pyo3(signature = (key, *, if_match = None, if_none_match = None, if_modified_since = None, if_unmodified_since = None, lease_id = None))]
    fn get_properties<'py>(
        &self,
        py: Python<'py>,
        key: &Bound<'_, PyAny>,
        if_match: Option<&Bound<'_, PyAny>>,
        if_none_match: Option<&Bound<'_, PyAny>>,
        if_modified_since: Option<&Bound<'_, PyAny>>,
        if_unmodified_since: Option<&Bound<'_, PyAny>>,
        lease_id: Option<&Bound<'_, PyAny>>,
    ) -> PyResult<Bound<'py, ItemProperties>> {
        let key = convert::key("key", key)?;
        let options = read_options(
            if_match,
            if_none_match,
            if_modified_since,
            if_unmodified_since,
            lease_id,
        )?;
        let name = &self.name;
        let item = self
            .handle
            .run_without_waiting(py, &self.about(&key), |store| {
                store.get_properties(name, &key, &options)
            })?;
        ItemProperties::new(py, item)
    }

    /// Whether the item exists (and has not expired). A missing container still raises
    /// `ContainerNotFound`.
    fn exists(&self, py: Python<'_>, key: &Bound<'_, PyAny>) -> PyResult<bool> {
        let key = convert::key("key", key)?;
        let name = &self.name;
        self.handle
            .run_without_waiting(py, &self.about(&key), |store| {
                found(store.get_properties(name, &key, &ReadOptions::default()))
            })
    }

    /// `key in container`: `exists(key)`.
    fn __contains__(&self, py: Python<'_>, key: &Bound<'_, PyAny>) -> PyResult<bool> {
        self.exists(py, key)
    }

    /// How many live items have keys starting with `prefix`: a scan of those keys in a
    /// snapshot (GIL released), O(items) — not a stored count, so there is no `len()`.
    #[pyo3(signature = (prefix = None), text_signature = "($self, prefix='')")]
    fn count(&self, py: Python<'_>, prefix: Option<&Bound<'_, PyAny>>) -> PyResult<usize> {
        let prefix = match prefix {
            Some(prefix) => self::prefix(prefix)?.into_owned(),
            None => Vec::new(),
        };
        let name = &self.name;
        self.handle.run_in(py, &Context::container(name), |store| {
            store.snapshot()?.scan(name, &prefix, &[], |_| true)
        })
    }

    /// Writes the item, creating or replacing it; returns the new ETag.
    #[pyo3(signature = (key, value, *, content_type = None, metadata = None, ttl = None, if_match = None, if_none_match = None, if_modified_since = None, if_unmodified_since = None, if_version = None, lease_id = None, lock_handle = None))]
    fn put(
        &self,
        py: Python<'_>,
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
    ) -> PyResult<String> {
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
        self.write(py, key, value, options, WriteKind::Put)
    }

    /// Writes the item only if it does not exist (`AlreadyExists` otherwise).
    #[pyo3(signature = (key, value, *, content_type = None, metadata = None, ttl = None, if_match = None, if_none_match = None, if_modified_since = None, if_unmodified_since = None, if_version = None, lease_id = None, lock_handle = None))]
    fn create(
        &self,
        py: Python<'_>,
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
    ) -> PyResult<String> {
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
        self.write(py, key, value, options, WriteKind::Create)
    }

    /// Writes the item only if it exists (`NotFound` otherwise).
    #[pyo3(signature = (key, value, *, content_type = None, metadata = None, ttl = None, if_match = None, if_none_match = None, if_modified_since = None, if_unmodified_since = None, if_version = None, lease_id = None, lock_handle = None))]
    fn replace(
        &self,
        py: Python<'_>,
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
    ) -> PyResult<String> {
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
        self.write(py, key, value, options, WriteKind::Replace)
    }

    #[pyo3(signature = (key, *, if_match = None, if_none_match = None, if_modified_since = None, if_unmodified_since = None, if_version = None, lease_id = None, lock_handle = None))]
    fn delete(
        &self,
        py: Python<'_>,
        key: &Bound<'_, PyAny>,
        if_match: Option<&Bound<'_, PyAny>>,
        if_none_match: Option<&Bound<'_, PyAny>>,
        if_modified_since: Option<&Bound<'_, PyAny>>,
        if_unmodified_since: Option<&Bound<'_, PyAny>>,
        if_version: Option<&Bound<'_, PyAny>>,
        lease_id: Option<&Bound<'_, PyAny>>,
        lock_handle: Option<&Bound<'_, PyAny>>,
    ) -> PyResult<()> {
        let key = convert::key("key", key)?;
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
        let name = &self.name;
        self.handle.run_in(py, &self.about(&key), |store| {
            store.delete(name, &key, &options)
        })
    }

    /// Replaces the item's metadata, keeping its value; returns the new ETag. `content_type`
    /// replaces the content type when given; by default the current one is kept.
    #[pyo3(signature = (key, metadata, *, content_type = None, if_match = None, if_none_match = None, if_modified_since = None, if_unmodified_since = None, if_version = None, lease_id = None, lock_handle = None))]
    fn set_metadata(
        &self,
        py: Python<'_>,
        key: &Bound<'_, PyAny>,
        metadata: &Bound<'_, PyAny>,
        content_type: Option<&Bound<'_, PyAny>>,
        if_match: Option<&Bound<'_, PyAny>>,
        if_none_match: Option<&Bound<'_, PyAny>>,
        if_modified_since: Option<&Bound<'_, PyAny>>,
        if_unmodified_since: Option<&Bound<'_, PyAny>>,
        if_version: Option<&Bound<'_, PyAny>>,
        lease_id: Option<&Bound<'_, PyAny>>,
        lock_handle: Option<&Bound<'_, PyAny>>,
    ) -> PyResult<String> {
        let key = convert::key("key", key)?;
        if metadata.is_none() {
            return Err(convert::wrong_type(
                "metadata",
                "a dict of str to str",
                metadata,
            ));
        }
        let keep_content_type = content_type.is_none_or(|content_type| content_type.is_none());
        let options = write_options(
            content_type,
            Some(metadata),
            None,
            if_match,
            if_none_match,
            if_modified_since,
            if_unmodified_since,
            if_version,
            lease_id,
            lock_handle,
        )?;
        let name = &self.name;
        // One atomic write either way: the engine's set_metadata keeps the content type.
        let about = self.about(&key);
        let etag = if keep_content_type {
            self.handle
                .run_in(py, &about, |store| store.set_metadata(name, &key, &options))?
        } else {
            self.handle.run_in(py, &about, |store| {
                store.set_properties(name, &key, &options)
            })?
        };
        Ok(etag.to_string())
    }

    /// Read, apply `fn`, write back with `if_match`: the optimistic-concurrency loop Cosmos
    /// DB users write by hand (docs/spec.md §3). Returns the written `Item`.
    ///
    /// Under contention a lost race (`ConditionNotMet`, `AlreadyExists` for a concurrent
    /// create, or the engine's `Busy`) re-reads and retries after a jittered exponential
    /// backoff (a random pause of up to 50 µs, doubling per attempt up to about 13 ms), until
    /// the write wins, `timeout` passes (seconds or a `timedelta`; 30 s by default) or
    /// `max_attempts` attempts were made (no limit by default); then the last conflict is
    /// raised. `fn` may run several times, so keep it free of side effects; it runs with the
    /// GIL held, and if it raises, nothing is written. A missing item raises `NotFound`, or
    /// with `create_default` is created from `fn(create_default)`. The rewrite keeps the
    /// item's content type and metadata; its TTL restarts from the container's default.
    #[pyo3(signature = (key, r#fn, *, max_attempts = None, timeout = None, create_default = None, lease_id = None), text_signature = "($self, key, fn, *, max_attempts=None, timeout=30.0, create_default=None, lease_id=None)")]
    fn update<'py>(
        &self,
        py: Python<'py>,
        key: &Bound<'_, PyAny>,
        r#fn: &Bound<'_, PyAny>,
        max_attempts: Option<&Bound<'_, PyAny>>,
        timeout: Option<&Bound<'_, PyAny>>,
        create_default: Option<&Bound<'_, PyAny>>,
        lease_id: Option<&Bound<'_, PyAny>>,
    ) -> PyResult<Bound<'py, Item>> {
        crate::update::update(
            self,
            py,
            key,
            r#fn,
            max_attempts,
            timeout,
            create_default,
            lease_id,
        )
    }

    /// The item if its version differs from `version`, else `None` (the cache's
    /// GetIfNewer, docs/spec.md §6).
    fn get_if_newer<'py>(
        &self,
        py: Python<'py>,
        key: &Bound<'_, PyAny>,
        version: &Bound<'_, PyAny>,
    ) -> PyResult<Option<Bound<'py, Item>>> {
        let key = convert::key("key", key)?;
        let version = convert::count("version", version, u64::MAX >> 1)?;
        let name = &self.name;
        let item = self.handle.run_in(py, &self.about(&key), |store| {
            store.get_if_newer(name, &key, version)
        })?;
        item.map(|item| Item::new(py, item)).transpose()
    }

    /// One page of the items whose keys start with `prefix`, in key order.
    #[pyo3(signature = (prefix = None, *, page_size = None, continuation = None, include_values = false), text_signature = "($self, prefix='', *, page_size=1000, continuation=None, include_values=False)")]
    fn list(
        &self,
        py: Python<'_>,
        prefix: Option<&Bound<'_, PyAny>>,
        page_size: Option<&Bound<'_, PyAny>>,
        continuation: Option<&Bound<'_, PyAny>>,
        include_values: bool,
    ) -> PyResult<Page> {
        let prefix = match prefix {
            Some(prefix) => self::prefix(prefix)?,
            None => Cow::Borrowed(&[][..]),
        };
        let page_size = match page_size {
            Some(size) if !size.is_none() => self::page_size(size)?,
            _ => 1000,
        };
        let continuation = convert::optional_text("continuation", continuation)?;
        let name = &self.name;
        let page = self.handle.run_in(py, &Context::container(name), |store| {
            store.list(
                name,
                &prefix,
                page_size,
                continuation.as_deref(),
                include_values,
            )
        })?;
        Page::new(py, page, include_values)
    }

    /// Every item whose key starts with `prefix`, following continuations page by page.
    #[pyo3(signature = (prefix = None, *, include_values = false), text_signature = "($self, prefix='', *, include_values=False)")]
    fn iterate(
        &self,
        prefix: Option<&Bound<'_, PyAny>>,
        include_values: bool,
    ) -> PyResult<ItemIterator> {
        let prefix = match prefix {
            Some(prefix) => self::prefix(prefix)?.into_owned(),
            None => Vec::new(),
        };
        Ok(ItemIterator::new(
            Source::Store(Arc::clone(&self.handle)),
            self.name.clone(),
            prefix,
            include_values,
        ))
    }

    // ----- leases (docs/spec.md §4) -----

    /// Acquires the item's lease. `duration`: 15–60 seconds, `None` = infinite. `wait`: seconds
    /// to wait for it (first come, first served) instead of failing at once.
    #[pyo3(
        signature = (key, duration = LeaseDurationArg::DEFAULT, *, proposed_id = None, holder = None, wait = None),
        text_signature = "($self, key, duration=15, *, proposed_id=None, holder=None, wait=None)"
    )]
    fn acquire_lease(
        &self,
        py: Python<'_>,
        key: &Bound<'_, PyAny>,
        duration: LeaseDurationArg,
        proposed_id: Option<&Bound<'_, PyAny>>,
        holder: Option<&Bound<'_, PyAny>>,
        wait: Option<&Bound<'_, PyAny>>,
    ) -> PyResult<Lease> {
        self.acquire(py, key, duration, proposed_id, holder, wait)
    }

    /// Acquires the lease for a `with` block: `with container.lease(key) as lease: ...`
    /// releases it on exit.
    #[pyo3(
        signature = (key, duration = LeaseDurationArg::DEFAULT, *, proposed_id = None, holder = None, wait = None),
        text_signature = "($self, key, duration=15, *, proposed_id=None, holder=None, wait=None)"
    )]
    fn lease(
        &self,
        py: Python<'_>,
        key: &Bound<'_, PyAny>,
        duration: LeaseDurationArg,
        proposed_id: Option<&Bound<'_, PyAny>>,
        holder: Option<&Bound<'_, PyAny>>,
        wait: Option<&Bound<'_, PyAny>>,
    ) -> PyResult<Lease> {
        self.acquire(py, key, duration, proposed_id, holder, wait)
    }

    fn renew_lease(
        &self,
        py: Python<'_>,
        key: &Bound<'_, PyAny>,
        lease_id: &Bound<'_, PyAny>,
    ) -> PyResult<Lease> {
        let key = convert::key("key", key)?;
        let id = convert::lease_id("lease_id", lease_id)?;
        let name = &self.name;
        let lease = self.handle.run_in(py, &self.about(&key), |store| {
            store.renew_lease(name, &key, id)
        })?;
        Ok(self.lease_object(&key, lease))
    }

    fn change_lease(
        &self,
        py: Python<'_>,
        key: &Bound<'_, PyAny>,
        lease_id: &Bound<'_, PyAny>,
        proposed_id: &Bound<'_, PyAny>,
    ) -> PyResult<Lease> {
        let key = convert::key("key", key)?;
        let id = convert::lease_id("lease_id", lease_id)?;
        let proposed = convert::lease_id("proposed_id", proposed_id)?;
        let name = &self.name;
        let lease = self.handle.run_in(py, &self.about(&key), |store| {
            store.change_lease(name, &key, id, proposed)
        })?;
        self.handle
            .change_remembered_lease(&LeaseTarget::item(name, &key), lease.id);
        Ok(self.lease_object(&key, lease))
    }

    fn release_lease(
        &self,
        py: Python<'_>,
        key: &Bound<'_, PyAny>,
        lease_id: &Bound<'_, PyAny>,
    ) -> PyResult<()> {
        let key = convert::key("key", key)?;
        let id = convert::lease_id("lease_id", lease_id)?;
        let name = &self.name;
        self.handle.run_in(py, &self.about(&key), |store| {
            store.release_lease(name, &key, id)
        })?;
        self.handle.forget_lease(&LeaseTarget::item(name, &key));
        Ok(())
    }

    /// Breaks the lease; returns the seconds until a new lease can be acquired (0 when broken
    /// at once). `period`: 0–60 seconds, or `None` (docs/spec.md §4).
    #[pyo3(signature = (key, period = None))]
    fn break_lease(
        &self,
        py: Python<'_>,
        key: &Bound<'_, PyAny>,
        period: Option<&Bound<'_, PyAny>>,
    ) -> PyResult<f64> {
        let key = convert::key("key", key)?;
        let period = convert::break_period(period)?;
        let name = &self.name;
        let left = self.handle.run_in(py, &self.about(&key), |store| {
            store.break_lease(name, &key, period)
        })?;
        Ok(left.as_secs_f64())
    }

    fn lease_info(&self, py: Python<'_>, key: &Bound<'_, PyAny>) -> PyResult<LeaseInfo> {
        let key = convert::key("key", key)?;
        let name = &self.name;
        let info = self
            .handle
            .run_in(py, &self.about(&key), |store| store.lease_info(name, &key))?;
        Ok(LeaseInfo::new(
            &self.handle,
            &LeaseTarget::item(name, &key),
            info,
        ))
    }

    // ----- cache locks (docs/spec.md §6) -----

    /// Locks the item for `lock_timeout` seconds; returns it (or `None` when force-locking an
    /// absent key) and the handle. Never waits: `ObjectLocked` if it is locked or leased.
    #[pyo3(signature = (key, lock_timeout, *, force = false))]
    fn get_and_lock<'py>(
        &self,
        py: Python<'py>,
        key: &Bound<'py, PyAny>,
        lock_timeout: &Bound<'py, PyAny>,
        force: bool,
    ) -> PyResult<Bound<'py, PyTuple>> {
        let key = convert::key("key", key)?;
        let timeout = convert::duration("lock_timeout", lock_timeout)?;
        let name = &self.name;
        let (item, handle) = self.handle.run_in(py, &self.about(&key), |store| {
            store.get_and_lock(name, &key, timeout, force)
        })?;
        let item = item.map(|item| Item::new(py, item)).transpose()?;
        (item, PyLockHandle { handle }).into_pyobject(py)
    }

    /// Locks the item for a `with` block (get-and-lock, docs/spec.md §6): the `CacheLock`
    /// has the `item` (`None` when force-locking an absent key) and the `handle`;
    /// `lock.put(value)` is put-and-unlock, and leaving the block unlocks what is still
    /// locked. Never waits: `ObjectLocked` if it is locked or leased.
    #[pyo3(signature = (key, lock_timeout, *, force = false))]
    fn lock<'py>(
        slf: &Bound<'py, Self>,
        key: &Bound<'py, PyAny>,
        lock_timeout: &Bound<'py, PyAny>,
        force: bool,
    ) -> PyResult<Bound<'py, PyAny>> {
        let py = slf.py();
        let locked = slf.get().get_and_lock(py, key, lock_timeout, force)?;
        let (item, handle) = (locked.get_item(0)?, locked.get_item(1)?);
        py.import("tenure")?
            .getattr("CacheLock")?
            .call1((slf, key, item, handle))
    }

    /// Replaces the locked item and unlocks it; returns the new ETag.
    #[pyo3(signature = (key, value, handle, *, ttl = None))]
    fn put_and_unlock(
        &self,
        py: Python<'_>,
        key: &Bound<'_, PyAny>,
        value: &Bound<'_, PyAny>,
        handle: &Bound<'_, PyAny>,
        ttl: Option<&Bound<'_, PyAny>>,
    ) -> PyResult<String> {
        let key = convert::key("key", key)?;
        let value = convert::value("value", value)?;
        let handle = convert::lock_handle("handle", handle)?;
        let ttl = convert::ttl(ttl)?;
        let name = &self.name;
        let about = Context::item(name, &key).renaming(LOCK_RENAMES);
        let etag = self.handle.run_in(py, &about, |store| {
            store.put_and_unlock(name, &key, &value, handle, ttl)
        })?;
        Ok(etag.to_string())
    }

    /// Releases the lock. `ttl` given: the item's expiry restarts from now with it.
    #[pyo3(signature = (key, handle, *, ttl = None))]
    fn unlock(
        &self,
        py: Python<'_>,
        key: &Bound<'_, PyAny>,
        handle: &Bound<'_, PyAny>,
        ttl: Option<&Bound<'_, PyAny>>,
    ) -> PyResult<()> {
        let key = convert::key("key", key)?;
        let handle = convert::lock_handle("handle", handle)?;
        let ttl = match ttl.filter(|ttl| !ttl.is_none()) {
            Some(ttl) => Some(convert::ttl(Some(ttl))?),
            None => None,
        };
        let name = &self.name;
        let about = Context::item(name, &key).renaming(LOCK_RENAMES);
        self.handle
            .run_in(py, &about, |store| store.unlock(name, &key, handle, ttl))
    }
}
