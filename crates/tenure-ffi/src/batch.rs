//! Batches: all-or-nothing writes.

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
            _store: Arc::clone(&store),
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
    let object = handles::lookup("batch", batch as usize, "batch")?;
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

const BATCH_PUT: u32 = 0;
const BATCH_CREATE: u32 = 1;
const BATCH_REPLACE: u32 = 2;

unsafe fn batch_write(
    kind: u32,
    batch: *const tenure_batch,
    container: *const c_char,
    key_pointer: *const u8,
    key_length: usize,
    value_pointer: *const u8,
    value_length: usize,
    conditions: *const tenure_conditions,
) -> tenure_status {
    guard(|| {
        // SAFETY: the documented argument contracts.
        let (container, key, value, options) = unsafe {
            (
                text("container", container)?,
                key(key_pointer, key_length)?,
                value(value_pointer, value_length)?,
                write_options(conditions)?,
            )
        };
        batch_container(container)?;
        with_batch(batch, |batch| {
            match kind {
                BATCH_PUT => batch.put(container, key, value, options),
                BATCH_CREATE => batch.create(container, key, value, options),
                _ => batch.replace(container, key, value, options),
            };
            Ok(())
        })
    })
}

/// Adds a put to the batch.
#[no_mangle]
pub unsafe extern "C" fn tenure_batch_put(
    batch: *const tenure_batch,
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
            BATCH_PUT,
            batch,
            container,
            key,
            key_length,
            value,
            value_length,
            conditions,
        )
    }
}

/// Adds a create to the batch.
#[no_mangle]
pub unsafe extern "C" fn tenure_batch_create(
    batch: *const tenure_batch,
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
            BATCH_CREATE,
            batch,
            container,
            key,
            key_length,
            value,
            value_length,
            conditions,
        )
    }
}

/// Adds a replace to the batch.
#[no_mangle]
pub unsafe extern "C" fn tenure_batch_replace(
    batch: *const tenure_batch,
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
            BATCH_REPLACE,
            batch,
            container,
            key,
            key_length,
            value,
            value_length,
            conditions,
        )
    }
}

/// Adds a delete to the batch.
#[no_mangle]
pub unsafe extern "C" fn tenure_batch_delete(
    batch: *const tenure_batch,
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
    batch: *const tenure_batch,
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
    batch: *const tenure_batch,
    version_out: *mut u64,
) -> tenure_status {
    guard(|| {
        let object = handles::lookup("batch", batch as usize, "batch")?;
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
        handles::release("batch", batch as usize, "batch")?;
        Ok(())
    })
}
