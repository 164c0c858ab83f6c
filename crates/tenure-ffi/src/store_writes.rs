//! Writes with a `tenure_write_options` struct: an item's value with its content type and
//! metadata, an item's properties alone, a container's metadata. ETags come out typed
//! (`tenure_etag`), so the output's capacity is the type's.

use crate::items::WriteKind;
use crate::options::{etag_out, options_in, tenure_etag, tenure_write_options, unused};
use crate::prelude::*;

/// A write's options, checked: its kind and the engine's options (conditions, lease id, lock
/// handle, TTL, content type, metadata). NULL is a plain put.
///
/// # Safety
/// `options` is NULL or a valid `tenure_write_options` of its `struct_size` whose pointers
/// follow their documented contracts.
pub(crate) unsafe fn write_request(
    options: *const tenure_write_options,
) -> Result<(u32, WriteOptions), Fail> {
    // SAFETY: the caller's contract.
    let Some(given) = (unsafe { options_in("options", "TENURE_WRITE_OPTIONS_INIT", options) })?
    else {
        return Ok((TENURE_WRITE_PUT, WriteOptions::default()));
    };
    // SAFETY: the caller's contract for each pointer.
    let mut options = unsafe { write_options(given.conditions) }?;
    // SAFETY: as above.
    options.content_type =
        unsafe { optional_text("options.content_type", given.content_type) }?.map(str::to_owned);
    // SAFETY: as above.
    options.metadata =
        unsafe { metadata_named(&OPTIONS_METADATA, given.metadata, given.metadata_count) }?;
    Ok((given.kind, options))
}

/// The kind of a tenure_store_write or tenure_batch_add_write.
pub(crate) fn write_kind(kind: u32) -> Result<WriteKind, Fail> {
    WriteKind::from_c(kind).map_err(|_| {
        invalid(
            "options.kind",
            format!("must be TENURE_WRITE_PUT, _CREATE or _REPLACE (0..=2), not {kind}"),
        )
    })
}

/// Writes the item's value: a put (create or replace), or with `options->kind` a create
/// (TENURE_ERR_ALREADY_EXISTS when the item exists) or a replace (TENURE_ERR_NOT_FOUND when it
/// does not). The item's content type and metadata become `options->content_type` and
/// `options->metadata` (none when they are absent, as for every write of a value).
/// `options->conditions` carries the conditions, lease id, lock handle (the write then unlocks)
/// and TTL. `etag_out` (NULL = not wanted) receives the new ETag. On a precondition failure
/// tenure_last_error_current_etag gives the item's current ETag. NULL options: a plain put.
#[no_mangle]
pub unsafe extern "C" fn tenure_store_write(
    store: *mut tenure_store,
    container: *const c_char,
    key: *const u8,
    key_length: usize,
    value: *const u8,
    value_length: usize,
    options: *const tenure_write_options,
    etag_out: *mut tenure_etag,
) -> tenure_status {
    guard(|| {
        let store = store_of("store", store)?;
        // SAFETY: the documented argument contracts, checked as far as C allows.
        let (container, key, value, (kind, options)) = unsafe {
            (
                text("container", container)?,
                crate::util::key(key, key_length)?,
                crate::util::value(value, value_length)?,
                write_request(options)?,
            )
        };
        let etag = match write_kind(kind)? {
            WriteKind::Put => store.put(container, key, value, &options)?,
            WriteKind::Create => store.create(container, key, value, &options)?,
            WriteKind::Replace => store.replace(container, key, value, &options)?,
        };
        // SAFETY: NULL or a tenure_etag.
        unsafe { crate::options::etag_out(etag, etag_out) };
        Ok(())
    })
}

/// Whether a properties write keeps the content type.
#[derive(Clone, Copy, PartialEq)]
enum ContentType {
    Replace,
    Keep,
}

/// tenure_store_set_properties and tenure_store_set_metadata.
///
/// # Safety
/// The documented argument contracts.
unsafe fn set_properties(
    store: *mut tenure_store,
    container: *const c_char,
    key: *const u8,
    key_length: usize,
    options: *const tenure_write_options,
    etag_target: *mut tenure_etag,
    content_type: ContentType,
) -> Result<(), Fail> {
    // SAFETY: the caller's contract.
    let (store, container, key) = unsafe { item_target(store, container, key, key_length) }?;
    // SAFETY: the caller's contract.
    let (kind, options) = unsafe { write_request(options) }?;
    let call = match content_type {
        ContentType::Replace => "tenure_store_set_properties",
        ContentType::Keep => "tenure_store_set_metadata",
    };
    unused("options.kind", kind != TENURE_WRITE_PUT, call)?;
    let etag = match content_type {
        ContentType::Replace => store.set_properties(container, key, &options)?,
        ContentType::Keep => {
            unused("options.content_type", options.content_type.is_some(), call)?;
            store.set_metadata(container, key, &options)?
        }
    };
    // SAFETY: NULL or a tenure_etag.
    unsafe { etag_out(etag, etag_target) };
    Ok(())
}

/// Replaces the item's content type and user metadata with `options->content_type` and
/// `options->metadata` (absent: none), keeping its value (docs/spec.md §3). Conditions, lease
/// id and lock handle from `options->conditions`, as for a write; `etag_out` (NULL = not
/// wanted) receives the new ETag.
#[no_mangle]
pub unsafe extern "C" fn tenure_store_set_properties(
    store: *mut tenure_store,
    container: *const c_char,
    key: *const u8,
    key_length: usize,
    options: *const tenure_write_options,
    etag_out: *mut tenure_etag,
) -> tenure_status {
    guard(|| {
        // SAFETY: the documented argument contracts.
        unsafe {
            set_properties(
                store,
                container,
                key,
                key_length,
                options,
                etag_out,
                ContentType::Replace,
            )
        }
    })
}

/// Replaces the item's user metadata with `options->metadata`, keeping its value and content
/// type (`options->content_type` must be NULL); otherwise as tenure_store_set_properties.
#[no_mangle]
pub unsafe extern "C" fn tenure_store_set_metadata(
    store: *mut tenure_store,
    container: *const c_char,
    key: *const u8,
    key_length: usize,
    options: *const tenure_write_options,
    etag_out: *mut tenure_etag,
) -> tenure_status {
    guard(|| {
        // SAFETY: the documented argument contracts.
        unsafe {
            set_properties(
                store,
                container,
                key,
                key_length,
                options,
                etag_out,
                ContentType::Keep,
            )
        }
    })
}

/// Replaces the container's metadata with `options->metadata` (absent: none).
/// `options->conditions`: the container's if_match, if_none_match and dates, and its lease id,
/// which must match the container's lease when given (docs/spec.md §5); if_version, lock_handle
/// and ttl are refused, as are `kind` and `content_type`. `etag_out` (NULL = not wanted)
/// receives the container's new ETag.
#[no_mangle]
pub unsafe extern "C" fn tenure_store_set_container_metadata(
    store: *mut tenure_store,
    name: *const c_char,
    options: *const tenure_write_options,
    etag_out: *mut tenure_etag,
) -> tenure_status {
    guard(|| {
        let store = store_of("store", store)?;
        // SAFETY: NUL-terminated by contract.
        let name = unsafe { text("name", name) }?;
        // SAFETY: the caller's contract.
        let given = unsafe { options_in("options", "TENURE_WRITE_OPTIONS_INIT", options) }?;
        let (conditions, metadata) = match given {
            None => (ContainerWriteOptions::default(), Vec::new()),
            Some(given) => {
                let call = "tenure_store_set_container_metadata";
                unused("options.kind", given.kind != TENURE_WRITE_PUT, call)?;
                unused("options.content_type", !given.content_type.is_null(), call)?;
                // SAFETY: the caller's contract for each pointer.
                unsafe {
                    (
                        container_options(given.conditions)?,
                        metadata_named(&OPTIONS_METADATA, given.metadata, given.metadata_count)?,
                    )
                }
            }
        };
        let etag = store.set_container_metadata(name, &metadata, &conditions)?;
        // SAFETY: NULL or a tenure_etag.
        unsafe { crate::options::etag_out(etag, etag_out) };
        Ok(())
    })
}
