//! The change feed: cursors.

use crate::prelude::*;

pub const TENURE_CHANGE_CREATED: u32 = 0;
pub const TENURE_CHANGE_UPDATED: u32 = 1;
pub const TENURE_CHANGE_DELETED: u32 = 2;
pub const TENURE_CHANGE_EXPIRED: u32 = 3;
pub const TENURE_CHANGE_CONTAINER_CREATED: u32 = 4;
pub const TENURE_CHANGE_CONTAINER_DELETED: u32 = 5;

/// One change, as tenure_cursor_next reports it.
#[repr(C)]
pub struct tenure_change {
    pub version: u64,
    /// One of TENURE_CHANGE_*.
    pub kind: u32,
    pub has_key: bool,
    pub key_length: u64,
    pub has_etag: bool,
    pub etag: [c_char; TENURE_ETAG_SIZE],
    pub has_value: bool,
    pub value_length: u64,
}

/// Opens a cursor over the changes after version `since` (0 = from the start), of one
/// container (`container` non-NULL) or all.
#[no_mangle]
pub unsafe extern "C" fn tenure_cursor_open(
    store: *const tenure_store,
    since: u64,
    container: *const c_char,
    include_values: bool,
    cursor_out: *mut *mut tenure_cursor,
) -> tenure_status {
    guard(|| {
        let store = store_of("store", store)?;
        // SAFETY: NULL or NUL-terminated.
        let container = unsafe { optional_text("container", container) }?.map(str::to_owned);
        out("cursor_out", cursor_out)?;
        let handle = handles::register(Object::Cursor(Mutex::new(CursorObject {
            store: store.shared(),
            since,
            container,
            include_values,
            pending: Default::default(),
            current: None,
        })))?;
        // SAFETY: checked non-NULL.
        unsafe { *cursor_out = handle as *mut tenure_cursor };
        Ok(())
    })
}

/// The longest wait tenure_store_wait_for_changes accepts: 24 hours.
const MAX_WAIT_MS: u64 = 24 * 3600 * 1000;

/// Waits (no busy loop) until a change newer than version `since` is committed, or
/// `timeout_ms` (0..=86400000, 24 h) passes. `*changed_out` says whether one is there; read it
/// with a cursor opened at `since`. 0 ms only looks.
#[no_mangle]
pub unsafe extern "C" fn tenure_store_wait_for_changes(
    store: *const tenure_store,
    since: u64,
    timeout_ms: u64,
    changed_out: *mut bool,
) -> tenure_status {
    guard(|| {
        let store = store_of("store", store)?;
        out("changed_out", changed_out)?;
        if timeout_ms > MAX_WAIT_MS {
            return Err(invalid(
                "timeout_ms",
                format!("must be at most {MAX_WAIT_MS} (24 hours), not {timeout_ms}"),
            ));
        }
        let changed = store.wait_for_changes(since, Duration::from_millis(timeout_ms))?;
        // SAFETY: checked non-NULL.
        unsafe { *changed_out = changed };
        Ok(())
    })
}

fn with_cursor<T>(
    cursor: *const tenure_cursor,
    body: impl FnOnce(&mut CursorObject) -> Result<T, Fail>,
) -> Result<T, Fail> {
    let object = handles::hold("cursor", cursor as usize, Kind::Cursor)?;
    let Object::Cursor(cursor) = &*object else {
        unreachable!()
    };
    let mut cursor = cursor
        .lock()
        .unwrap_or_else(|poisoned| poisoned.into_inner());
    body(&mut cursor)
}

/// Moves to the next change. `*has_change_out` false when there is none yet (call again
/// later); else `change_out` describes it and tenure_cursor_key / _value / _container copy its
/// parts out.
#[no_mangle]
pub unsafe extern "C" fn tenure_cursor_next(
    cursor: *mut tenure_cursor,
    change_out: *mut tenure_change,
    has_change_out: *mut bool,
) -> tenure_status {
    guard(|| {
        out("change_out", change_out)?;
        out("has_change_out", has_change_out)?;
        with_cursor(cursor, |cursor| {
            if cursor.pending.is_empty() {
                let options = ChangesOptions {
                    container: cursor.container.clone(),
                    include_values: cursor.include_values,
                    max_changes: 1000,
                };
                cursor.pending = cursor.store.changes(cursor.since, &options)?.into();
            }
            let next = cursor.pending.pop_front();
            if let Some(change) = &next {
                cursor.since = change.version;
                let mut value = tenure_change {
                    version: change.version,
                    kind: match change.kind {
                        ChangeKind::Created => TENURE_CHANGE_CREATED,
                        ChangeKind::Updated => TENURE_CHANGE_UPDATED,
                        ChangeKind::Deleted => TENURE_CHANGE_DELETED,
                        ChangeKind::Expired => TENURE_CHANGE_EXPIRED,
                        ChangeKind::ContainerCreated => TENURE_CHANGE_CONTAINER_CREATED,
                        ChangeKind::ContainerDeleted => TENURE_CHANGE_CONTAINER_DELETED,
                        _ => u32::MAX,
                    },
                    has_key: change.key.is_some(),
                    key_length: change.key.as_ref().map_or(0, |key| key.len() as u64),
                    has_etag: change.etag.is_some(),
                    etag: [0; TENURE_ETAG_SIZE],
                    has_value: change.value.is_some(),
                    value_length: change.value.as_ref().map_or(0, |value| value.len() as u64),
                };
                if let Some(etag) = change.etag {
                    value.etag = etag_text(etag);
                }
                // SAFETY: checked non-NULL.
                unsafe { *change_out = value };
            }
            // SAFETY: checked non-NULL.
            unsafe { *has_change_out = next.is_some() };
            cursor.current = next;
            Ok(())
        })
    })
}

fn cursor_part(
    cursor: *const tenure_cursor,
    part: fn(&tenure::Change) -> &[u8],
    buffer_out: *mut u8,
    capacity: usize,
    length_out: *mut usize,
) -> Result<(), Fail> {
    buffer("buffer_out", buffer_out, capacity)?;
    out("length_out", length_out)?;
    with_cursor(cursor, |cursor| {
        let change = cursor
            .current
            .as_ref()
            .ok_or_else(|| invalid("cursor", "has no current change (call tenure_cursor_next)"))?;
        // SAFETY: checked above.
        unsafe { copy_out(part(change), buffer_out, capacity, length_out) }
    })
}

/// Copies the current change's key out (empty for container changes).
#[no_mangle]
pub unsafe extern "C" fn tenure_cursor_key(
    cursor: *const tenure_cursor,
    buffer_out: *mut u8,
    capacity: usize,
    length_out: *mut usize,
) -> tenure_status {
    guard(|| {
        cursor_part(
            cursor,
            |change| change.key.as_deref().unwrap_or(&[]),
            buffer_out,
            capacity,
            length_out,
        )
    })
}

/// Copies the current change's value out (empty unless values were asked for).
#[no_mangle]
pub unsafe extern "C" fn tenure_cursor_value(
    cursor: *const tenure_cursor,
    buffer_out: *mut u8,
    capacity: usize,
    length_out: *mut usize,
) -> tenure_status {
    guard(|| {
        cursor_part(
            cursor,
            |change| change.value.as_deref().unwrap_or(&[]),
            buffer_out,
            capacity,
            length_out,
        )
    })
}

/// Copies the current change's container name out (UTF-8, no NUL).
#[no_mangle]
pub unsafe extern "C" fn tenure_cursor_container(
    cursor: *const tenure_cursor,
    buffer_out: *mut u8,
    capacity: usize,
    length_out: *mut usize,
) -> tenure_status {
    guard(|| {
        cursor_part(
            cursor,
            |change| change.container.as_bytes(),
            buffer_out,
            capacity,
            length_out,
        )
    })
}

/// Frees a cursor. NULL is fine.
#[no_mangle]
pub unsafe extern "C" fn tenure_cursor_free(cursor: *mut tenure_cursor) -> tenure_status {
    guard(|| {
        handles::release("cursor", cursor as usize, Kind::Cursor)?;
        Ok(())
    })
}
