//! Batches: all-or-nothing writes.

use crate::items::WriteKind;
use crate::prelude::*;

/// Starts a batch (nothing happens until tenure_batch_commit).
#[no_mangle]
pub unsafe extern "C" fn tenure_batch_new(
    store: *const tenure_store,
    batch_out: *mut *mut tenure_batch,
) -> tenure_status {
    guard(|| {
        let store = store_of("store", store)?;
        out("batch_out", batch_out)?;
        // SAFETY: as for snapshots: the batch borrows the store the object keeps alive, and
        // drops first.
        let batch = unsafe {
            std::mem::transmute::<tenure::Batch<'_>, tenure::Batch<'static>>(store.batch())
        };
        let handle = handles::register(Object::Batch(Mutex::new(BatchObject {
            batch: Some(batch),
            _store: store.shared(),
        })))?;
        // SAFETY: checked non-NULL.
        unsafe { *batch_out = handle as *mut tenure_batch };
        Ok(())
    })
}

/// The cheap container-name check done when an operation is added (the engine checks the rest
/// at commit), so an empty or oversized name fails at once.
fn batch_container(container: &str) -> Result<(), Fail> {
    if container.is_empty() || container.len() > 255 {
        return Err(invalid("container", "a container name is 1 to 255 bytes"));
    }
    Ok(())
}

fn with_batch(
    batch: *const tenure_batch,
    body: impl FnOnce(&mut tenure::Batch<'static>) -> Result<(), Fail>,
) -> Result<(), Fail> {
    let object = handles::hold("batch", batch as usize, Kind::Batch)?;
    let Object::Batch(batch) = &*object else {
        unreachable!()
    };
    let mut batch = batch
        .lock()
        .unwrap_or_else(|poisoned| poisoned.into_inner());
    let batch = batch
        .batch
        .as_mut()
        .ok_or_else(|| invalid("batch", "was already committed"))?;
    body(batch)
}

/// tenure_batch_put/create/replace (no `properties`) and tenure_batch_write (`properties`
/// required).
///
/// # Safety
/// The usual argument contracts; `properties` as for [`write_properties_in`].
unsafe fn batch_write(
    kind: Result<WriteKind, Fail>,
    batch: *mut tenure_batch,
    container: *const c_char,
    key_pointer: *const u8,
    key_length: usize,
    value_pointer: *const u8,
    value_length: usize,
    properties: Option<*const tenure_write_properties>,
    conditions: *const tenure_conditions,
) -> tenure_status {
    guard(|| {
        // SAFETY: the documented argument contracts.
        let (container, key, value, mut options) = unsafe {
            (
                text("container", container)?,
                key(key_pointer, key_length)?,
                value(value_pointer, value_length)?,
                write_options(conditions)?,
            )
        };
        let kind = kind?;
        if let Some(properties) = properties {
            // SAFETY: the documented contract of `properties`.
            (options.content_type, options.metadata) = unsafe { write_properties_in(properties) }?;
        }
        batch_container(container)?;
        with_batch(batch, |batch| {
            match kind {
                WriteKind::Put => batch.put(container, key, value, options),
                WriteKind::Create => batch.create(container, key, value, options),
                WriteKind::Replace => batch.replace(container, key, value, options),
            };
            Ok(())
        })
    })
}

/// Adds a put to the batch.
/// cbindgen:prefix=TENURE_DEPRECATED("use tenure_batch_add_write")
#[no_mangle]
pub unsafe extern "C" fn tenure_batch_put(
    batch: *mut tenure_batch,
    container: *const c_char,
    key: *const u8,
    key_length: usize,
    value: *const u8,
    value_length: usize,
    conditions: *const tenure_conditions,
) -> tenure_status {
    // SAFETY: forwarded contract.
    unsafe {
        batch_write(
            Ok(WriteKind::Put),
            batch,
            container,
            key,
            key_length,
            value,
            value_length,
            None,
            conditions,
        )
    }
}

/// Adds a create to the batch.
/// cbindgen:prefix=TENURE_DEPRECATED("use tenure_batch_add_write with kind TENURE_WRITE_CREATE")
#[no_mangle]
pub unsafe extern "C" fn tenure_batch_create(
    batch: *mut tenure_batch,
    container: *const c_char,
    key: *const u8,
    key_length: usize,
    value: *const u8,
    value_length: usize,
    conditions: *const tenure_conditions,
) -> tenure_status {
    // SAFETY: forwarded contract.
    unsafe {
        batch_write(
            Ok(WriteKind::Create),
            batch,
            container,
            key,
            key_length,
            value,
            value_length,
            None,
            conditions,
        )
    }
}

/// Adds a replace to the batch.
/// cbindgen:prefix=TENURE_DEPRECATED("use tenure_batch_add_write with kind TENURE_WRITE_REPLACE")
#[no_mangle]
pub unsafe extern "C" fn tenure_batch_replace(
    batch: *mut tenure_batch,
    container: *const c_char,
    key: *const u8,
    key_length: usize,
    value: *const u8,
    value_length: usize,
    conditions: *const tenure_conditions,
) -> tenure_status {
    // SAFETY: forwarded contract.
    unsafe {
        batch_write(
            Ok(WriteKind::Replace),
            batch,
            container,
            key,
            key_length,
            value,
            value_length,
            None,
            conditions,
        )
    }
}

/// Adds a put, create or replace (`kind`: TENURE_WRITE_*) that also sets the item's content
/// type and user metadata (`properties`, required), as tenure_write does outside a batch.
/// cbindgen:prefix=TENURE_DEPRECATED("use tenure_batch_add_write")
#[no_mangle]
pub unsafe extern "C" fn tenure_batch_write(
    batch: *mut tenure_batch,
    kind: u32,
    container: *const c_char,
    key: *const u8,
    key_length: usize,
    value: *const u8,
    value_length: usize,
    properties: *const tenure_write_properties,
    conditions: *const tenure_conditions,
) -> tenure_status {
    // SAFETY: forwarded contract.
    unsafe {
        batch_write(
            WriteKind::from_c(kind),
            batch,
            container,
            key,
            key_length,
            value,
            value_length,
            Some(properties),
            conditions,
        )
    }
}

/// Adds a write of the item's value to the batch: `options` (NULL = a plain put) as for
/// tenure_store_write — its kind (put, create, replace), conditions, lease id, lock handle,
/// TTL, content type and metadata. The boundary checks pointers, counts and UTF-8 when the
/// write is added; the engine checks the rest at commit.
#[no_mangle]
pub unsafe extern "C" fn tenure_batch_add_write(
    batch: *mut tenure_batch,
    container: *const c_char,
    key: *const u8,
    key_length: usize,
    value: *const u8,
    value_length: usize,
    options: *const crate::options::tenure_write_options,
) -> tenure_status {
    guard(|| {
        // SAFETY: the documented argument contracts.
        let (container, key, value, (kind, options)) = unsafe {
            (
                text("container", container)?,
                crate::util::key(key, key_length)?,
                crate::util::value(value, value_length)?,
                crate::store_writes::write_request(options)?,
            )
        };
        let kind = crate::store_writes::write_kind(kind)?;
        batch_container(container)?;
        with_batch(batch, |batch| {
            match kind {
                WriteKind::Put => batch.put(container, key, value, options),
                WriteKind::Create => batch.create(container, key, value, options),
                WriteKind::Replace => batch.replace(container, key, value, options),
            };
            Ok(())
        })
    })
}

/// Adds a delete to the batch.
#[no_mangle]
pub unsafe extern "C" fn tenure_batch_delete(
    batch: *mut tenure_batch,
    container: *const c_char,
    key: *const u8,
    key_length: usize,
    conditions: *const tenure_conditions,
) -> tenure_status {
    guard(|| {
        // SAFETY: the documented argument contracts.
        let (container, key, options) = unsafe {
            (
                text("container", container)?,
                crate::util::key(key, key_length)?,
                write_options(conditions)?,
            )
        };
        batch_container(container)?;
        with_batch(batch, |batch| {
            batch.delete(container, key, options);
            Ok(())
        })
    })
}

/// Adds a check (conditions only; with none: the item exists) to the batch.
#[no_mangle]
pub unsafe extern "C" fn tenure_batch_check(
    batch: *mut tenure_batch,
    container: *const c_char,
    key: *const u8,
    key_length: usize,
    conditions: *const tenure_conditions,
) -> tenure_status {
    guard(|| {
        // SAFETY: the documented argument contracts.
        let (container, key, parsed) = unsafe {
            (
                text("container", container)?,
                crate::util::key(key, key_length)?,
                parse_conditions(conditions)?,
            )
        };
        if parsed.lease_id.is_some() || parsed.lock_handle.is_some() || parsed.has_ttl {
            return Err(invalid(
                "conditions",
                "a check takes ETag, version and date conditions only",
            ));
        }
        batch_container(container)?;
        with_batch(batch, |batch| {
            batch.check(container, key, parsed.conditions);
            Ok(())
        })
    })
}

/// Commits every operation or none. `*version_out` gets the batch's version (every written
/// item's new ETag). On failure `tenure_last_error_batch_index` names the failing operation.
/// A committed (or failed) batch cannot be reused; free it.
#[no_mangle]
pub unsafe extern "C" fn tenure_batch_commit(
    batch: *mut tenure_batch,
    version_out: *mut u64,
) -> tenure_status {
    guard(|| {
        let object = handles::hold("batch", batch as usize, Kind::Batch)?;
        let Object::Batch(batch) = &*object else {
            unreachable!()
        };
        out("version_out", version_out)?;
        let taken = batch
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
            .batch
            .take()
            .ok_or_else(|| invalid("batch", "was already committed"))?;
        let version = taken.commit()?;
        // SAFETY: checked non-NULL.
        unsafe { *version_out = version };
        Ok(())
    })
}

/// Frees a batch (uncommitted operations are dropped). NULL is fine.
#[no_mangle]
pub unsafe extern "C" fn tenure_batch_free(batch: *mut tenure_batch) -> tenure_status {
    guard(|| {
        handles::release("batch", batch as usize, Kind::Batch)?;
        Ok(())
    })
}
