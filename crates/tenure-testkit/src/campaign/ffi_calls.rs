//! C ABI call sequences (docs/spec.md §13 at the C boundary), for the `ffi_calls` fuzz target.
//!
//! The fuzzer's bytes choose a sequence of calls through tenure-ffi's exported functions on
//! one store: writes, reads into buffers of random capacity, deletes, batches, snapshots,
//! leases, container calls — with well-formed and with bad arguments (NULL pointers, empty
//! and oversized keys, non-UTF-8 names, bogus handles, handles used after close, double
//! frees). Every status must be the one the contract names; values read back must match a
//! reference model; no call may report a panic (`TENURE_ERR_PANIC`). It calls the current
//! forms, not the 0.1 ones kept for ABI 0 (those have their own tests in bindings/c).

use std::collections::BTreeMap;
use std::ffi::{c_char, CString};
use std::ptr::{null, null_mut};
use std::sync::atomic::{AtomicU64, Ordering};

use rand::Rng;
use tenure_ffi::*;

use super::ByteRng;

const KEYS: [&[u8]; 4] = [b"k0", b"k1", b"k2", b"k3"];

fn expect(what: &str, status: tenure_status, allowed: &[tenure_status]) {
    assert_ne!(status, TENURE_ERR_PANIC, "{what}: the call panicked");
    assert!(
        allowed.contains(&status),
        "{what}: status {status}, expected one of {allowed:?}"
    );
}

/// A directory of its own for each run (fuzzers run many inputs in one process).
fn fresh_directory() -> std::path::PathBuf {
    static RUN: AtomicU64 = AtomicU64::new(0);
    let run = RUN.fetch_add(1, Ordering::Relaxed);
    let path = std::env::temp_dir().join(format!("tenure-ffi-fuzz-{}-{run}", std::process::id()));
    let _ = std::fs::remove_dir_all(&path);
    path
}

/// Runs the call sequence `data` chooses. Panics on a contract violation.
pub fn run(data: &[u8]) {
    let mut rng = ByteRng::new(data);
    let directory = fresh_directory();
    let path = CString::new(directory.to_str().expect("a UTF-8 temp path")).expect("no NUL");
    // SAFETY: plain data; TENURE_OPEN_OPTIONS_INIT is the size and zeros.
    let mut options: tenure_open_options = unsafe { std::mem::zeroed() };
    options.struct_size = std::mem::size_of::<tenure_open_options>() as u32;
    options.durability = 1;
    options.segment_size_bytes = 64 << 10;
    options.disable_background_compaction = 1;
    let mut store: *mut tenure_store = null_mut();
    // SAFETY: valid path, options and out-pointer.
    let status = unsafe { tenure_store_open_with(path.as_ptr(), &options, &mut store) };
    expect("open", status, &[TENURE_OK]);
    let container = CString::new("c").expect("no NUL");
    // SAFETY: valid arguments.
    let status = unsafe { tenure_container_create(store, container.as_ptr(), false, 0) };
    expect("create container", status, &[TENURE_OK]);
    let mut model: BTreeMap<&[u8], Vec<u8>> = BTreeMap::new();
    let mut closed = false;
    let steps = rng.gen_range(0..40);
    for _ in 0..steps {
        let key = KEYS[rng.gen_range(0..KEYS.len())];
        let value: Vec<u8> = (0..rng.gen_range(0..64)).map(|_| rng.gen()).collect();
        let ok_or_closed = |status_if_open: &[tenure_status]| -> Vec<tenure_status> {
            if closed {
                vec![TENURE_ERR_INVALID_ARGUMENT]
            } else {
                status_if_open.to_vec()
            }
        };
        match rng.gen_range(0..16) {
            0..=3 => {
                // SAFETY: valid pointers and lengths; NULL options (a plain put), etag_out
                // NULL (not wanted).
                let status = unsafe {
                    tenure_store_write(
                        store,
                        container.as_ptr(),
                        key.as_ptr(),
                        key.len(),
                        value.as_ptr(),
                        value.len(),
                        null(),
                        null_mut(),
                    )
                };
                expect("put", status, &ok_or_closed(&[TENURE_OK]));
                if status == TENURE_OK {
                    model.insert(key, value);
                }
            }
            4..=6 => {
                let capacity = rng.gen_range(0..80);
                let mut buffer = vec![0u8; capacity];
                // SAFETY: plain data; the fields the call reads are set below.
                let mut out: tenure_value_out = unsafe { std::mem::zeroed() };
                out.buffer = if capacity == 0 {
                    null_mut()
                } else {
                    buffer.as_mut_ptr()
                };
                out.capacity = capacity;
                out.length = usize::MAX;
                // SAFETY: a buffer of `capacity` bytes (NULL when empty), a valid out-struct.
                let status = unsafe {
                    tenure_store_get_value(
                        store,
                        container.as_ptr(),
                        key.as_ptr(),
                        key.len(),
                        null(),
                        &mut out,
                    )
                };
                let length = out.length;
                if closed {
                    expect("get after close", status, &[TENURE_ERR_INVALID_ARGUMENT]);
                    continue;
                }
                match model.get(key) {
                    None => expect("get of a missing item", status, &[TENURE_ERR_NOT_FOUND]),
                    Some(expected) if expected.len() > capacity => {
                        expect("get", status, &[TENURE_ERR_BUFFER_TOO_SMALL]);
                        assert_eq!(length, expected.len(), "the length of a too-large value");
                    }
                    Some(expected) => {
                        expect("get", status, &[TENURE_OK]);
                        assert_eq!(&buffer[..length], &expected[..], "get returned other bytes");
                    }
                }
            }
            7 => {
                // SAFETY: valid arguments.
                let status = unsafe {
                    tenure_delete(store, container.as_ptr(), key.as_ptr(), key.len(), null())
                };
                let expected = if model.remove(key).is_some() {
                    TENURE_OK
                } else {
                    TENURE_ERR_NOT_FOUND
                };
                expect("delete", status, &ok_or_closed(&[expected]));
            }
            8 => {
                // Bad keys: NULL, empty, oversized (the length is checked before any read).
                let (pointer, length) = match rng.gen_range(0..3) {
                    0 => (null(), 2),
                    1 => (key.as_ptr(), 0),
                    _ => (key.as_ptr(), 1_000_000),
                };
                // SAFETY: the ABI must refuse these before it reads the key.
                let status = unsafe {
                    tenure_store_write(
                        store,
                        container.as_ptr(),
                        pointer,
                        length,
                        value.as_ptr(),
                        value.len(),
                        null(),
                        null_mut(),
                    )
                };
                expect("put with a bad key", status, &[TENURE_ERR_INVALID_ARGUMENT]);
            }
            9 => {
                // Bad container names: NULL, non-UTF-8.
                let bad: [u8; 3] = [0xff, 0xfe, 0];
                let name: *const c_char = if rng.gen_bool(0.5) {
                    null()
                } else {
                    bad.as_ptr().cast()
                };
                // SAFETY: NULL or NUL-terminated.
                let status = unsafe { tenure_container_create(store, name, false, 0) };
                expect("bad container name", status, &[TENURE_ERR_INVALID_ARGUMENT]);
            }
            10 => {
                // A bogus handle (registry ids are never dereferenced).
                let bogus = rng.gen::<u32>() as usize as *const tenure_store;
                let mut version = 0u64;
                // SAFETY: a bogus handle must be refused, not followed.
                let status = unsafe { tenure_store_version(bogus, &mut version) };
                assert_ne!(status, TENURE_ERR_PANIC, "a bogus handle panicked");
                if bogus != store.cast_const() {
                    expect("bogus handle", status, &[TENURE_ERR_INVALID_ARGUMENT]);
                }
            }
            11 => {
                let mut batch: *mut tenure_batch = null_mut();
                // SAFETY: valid out-pointer.
                let status = unsafe { tenure_batch_new(store, &mut batch) };
                expect("batch new", status, &ok_or_closed(&[TENURE_OK]));
                if status != TENURE_OK {
                    continue;
                }
                let other = KEYS[rng.gen_range(0..KEYS.len())];
                // SAFETY: valid arguments.
                unsafe {
                    let first = tenure_batch_add_write(
                        batch,
                        container.as_ptr(),
                        key.as_ptr(),
                        key.len(),
                        value.as_ptr(),
                        value.len(),
                        null(),
                    );
                    expect("batch put", first, &[TENURE_OK]);
                    let second = tenure_batch_add_write(
                        batch,
                        container.as_ptr(),
                        other.as_ptr(),
                        other.len(),
                        b"b".as_ptr(),
                        1,
                        null(),
                    );
                    expect("batch put", second, &[TENURE_OK]);
                    let mut version = 0u64;
                    let committed = tenure_batch_commit(batch, &mut version);
                    expect("batch commit", committed, &[TENURE_OK]);
                    let again = tenure_batch_commit(batch, &mut version);
                    expect("second commit", again, &[TENURE_ERR_INVALID_ARGUMENT]);
                    expect("batch free", tenure_batch_free(batch), &[TENURE_OK]);
                    let twice = tenure_batch_free(batch);
                    expect("double free", twice, &[TENURE_ERR_INVALID_ARGUMENT]);
                }
                model.insert(key, value);
                model.insert(other, b"b".to_vec());
            }
            12 => {
                let mut snapshot: *mut tenure_snapshot = null_mut();
                // SAFETY: valid out-pointer.
                let status = unsafe { tenure_snapshot_open(store, &mut snapshot) };
                expect("snapshot", status, &ok_or_closed(&[TENURE_OK]));
                if status != TENURE_OK {
                    continue;
                }
                let mut buffer = vec![0u8; 80];
                // SAFETY: plain data; the fields the call reads are set below.
                let mut out: tenure_value_out = unsafe { std::mem::zeroed() };
                out.buffer = buffer.as_mut_ptr();
                out.capacity = buffer.len();
                // SAFETY: a valid buffer and out-struct.
                let status = unsafe {
                    tenure_snapshot_get_value(
                        snapshot,
                        container.as_ptr(),
                        key.as_ptr(),
                        key.len(),
                        null(),
                        &mut out,
                    )
                };
                let length = out.length;
                match model.get(key) {
                    Some(expected) => {
                        expect("snapshot get", status, &[TENURE_OK]);
                        assert_eq!(
                            &buffer[..length],
                            &expected[..],
                            "snapshot read other bytes"
                        );
                    }
                    None => expect("snapshot get", status, &[TENURE_ERR_NOT_FOUND]),
                }
                // SAFETY: a handle from snapshot_open.
                expect(
                    "snapshot free",
                    unsafe { tenure_snapshot_free(snapshot) },
                    &[TENURE_OK],
                );
            }
            13 => {
                let mut lease = std::mem::MaybeUninit::<tenure_lease>::zeroed();
                let seconds = [15i64, 0, -1, 61, -5][rng.gen_range(0..5)];
                // SAFETY: plain data; TENURE_LEASE_OPTIONS_INIT is the size and zeros.
                let mut options: tenure_lease_options = unsafe { std::mem::zeroed() };
                options.struct_size = std::mem::size_of::<tenure_lease_options>() as u32;
                options.duration_seconds = seconds;
                // SAFETY: valid arguments; the out-struct is plain data.
                let status = unsafe {
                    tenure_store_acquire_lease(
                        store,
                        container.as_ptr(),
                        key.as_ptr(),
                        key.len(),
                        &options,
                        lease.as_mut_ptr(),
                    )
                };
                let valid = seconds == 15 || seconds == -1;
                let allowed = match (closed, valid, model.contains_key(key)) {
                    (true, _, _) | (false, false, _) => TENURE_ERR_INVALID_ARGUMENT,
                    (false, true, false) => TENURE_ERR_NOT_FOUND,
                    (false, true, true) => TENURE_OK,
                };
                expect("lease acquire", status, &[allowed]);
                if status == TENURE_OK {
                    // The leased item would refuse the sequence's writes (they carry no
                    // lease id): release it at once.
                    // SAFETY: the lease was written on success.
                    let lease = unsafe { lease.assume_init() };
                    // SAFETY: the id is a NUL-terminated buffer inside the struct.
                    let released = unsafe {
                        tenure_store_release_lease(
                            store,
                            container.as_ptr(),
                            key.as_ptr(),
                            key.len(),
                            lease.id.as_ptr(),
                        )
                    };
                    expect("lease release", released, &[TENURE_OK]);
                }
            }
            14 => {
                // SAFETY: a handle from store_open.
                let status = unsafe { tenure_store_close(store) };
                expect("close", status, &ok_or_closed(&[TENURE_OK]));
                closed = true;
            }
            _ => {
                // SAFETY: NULL is always fine to free.
                unsafe {
                    expect("free NULL", tenure_store_free(null_mut()), &[TENURE_OK]);
                    expect("free NULL", tenure_batch_free(null_mut()), &[TENURE_OK]);
                    expect("free NULL", tenure_item_free(null_mut()), &[TENURE_OK]);
                }
            }
        }
    }
    // SAFETY: the handle from store_open, freed once.
    unsafe {
        expect("store free", tenure_store_free(store), &[TENURE_OK]);
        expect(
            "second free",
            tenure_store_free(store),
            &[TENURE_ERR_INVALID_ARGUMENT],
        );
    }
    let _ = std::fs::remove_dir_all(&directory);
}
