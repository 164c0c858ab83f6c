//! Handles closed and freed while other calls are in flight on them: the calls in flight end
//! normally, every later call is refused with InvalidArgument, and the engine is dropped once
//! the last call leaves, so the directory can be opened again. Called from Rust the way C calls
//! them (so `scripts/asan-tests.sh` runs them under AddressSanitizer).

use std::ffi::{c_void, CString};
use std::ptr::{null, null_mut};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};

use tenure_ffi::*;

const KEY: &[u8] = b"key";

fn directory(name: &str) -> std::path::PathBuf {
    let directory = std::env::temp_dir().join(format!(
        "tenure-ffi-handles-in-flight-{name}-{}",
        std::process::id()
    ));
    let _ = std::fs::remove_dir_all(&directory);
    directory
}

/// Opens the store in `directory` (creating the container `items` if needed) and writes its
/// one item.
fn open(directory: &std::path::Path) -> *mut tenure_store {
    let path = CString::new(directory.to_str().unwrap()).unwrap();
    let mut store = null_mut();
    // SAFETY: valid arguments.
    unsafe {
        assert_eq!(
            tenure_store_open(path.as_ptr(), null(), &mut store),
            TENURE_OK
        );
        let created = tenure_container_create(store, c"items".as_ptr(), false, 0);
        assert!(
            created == TENURE_OK || created == TENURE_ERR_CONTAINER_ALREADY_EXISTS,
            "{created:?}"
        );
        assert_eq!(
            tenure_store_write(
                store,
                c"items".as_ptr(),
                KEY.as_ptr(),
                KEY.len(),
                b"value".as_ptr(),
                5,
                null(),
                null_mut(),
            ),
            TENURE_OK
        );
    }
    store
}

unsafe extern "C" fn count(context: *mut c_void, view: *const tenure_view) {
    // SAFETY: the context is the caller's `usize`; the view is valid during the call.
    unsafe { *context.cast::<usize>() += (*view).value_length };
}

/// One lent read of the item.
fn get(store: usize) -> tenure_status {
    let mut length = 0usize;
    // SAFETY: valid arguments; a stale handle is refused, never dereferenced.
    unsafe {
        tenure_store_get_with(
            store as *const tenure_store,
            c"items".as_ptr(),
            KEY.as_ptr(),
            KEY.len(),
            null(),
            Some(count),
            (&mut length as *mut usize).cast(),
        )
    }
}

#[test]
fn a_store_closed_and_freed_under_readers_refuses_them_and_can_be_opened_again() {
    let directory = directory("readers");
    for _ in 0..20 {
        let store = open(&directory) as usize;
        let stop = Arc::new(AtomicBool::new(false));
        let readers: Vec<_> = (0..3)
            .map(|_| {
                let stop = Arc::clone(&stop);
                std::thread::spawn(move || {
                    let mut refused = 0u32;
                    // Until the handle has been freed and refused twice in a row.
                    while refused < 2 {
                        match get(store) {
                            TENURE_OK => refused = 0,
                            TENURE_ERR_INVALID_ARGUMENT if stop.load(Ordering::SeqCst) => {
                                refused += 1
                            }
                            TENURE_ERR_INVALID_ARGUMENT => {}
                            other => panic!("a read in flight got {other:?}"),
                        }
                    }
                })
            })
            .collect();
        std::thread::sleep(std::time::Duration::from_millis(2));
        // SAFETY: the handle is live; the readers' calls on it are the race under test.
        unsafe {
            let closed = tenure_store_close(store as *mut tenure_store);
            assert_eq!(closed, TENURE_OK);
            assert_eq!(tenure_store_free(store as *mut tenure_store), TENURE_OK);
        }
        stop.store(true, Ordering::SeqCst);
        for reader in readers {
            reader.join().unwrap();
        }
        assert_eq!(get(store), TENURE_ERR_INVALID_ARGUMENT);
        // SAFETY: freed already: refused.
        assert_eq!(
            unsafe { tenure_store_free(store as *mut tenure_store) },
            TENURE_ERR_INVALID_ARGUMENT
        );
    }
    // The last round's engine was dropped when its last reader left: the directory opens.
    let store = open(&directory);
    // SAFETY: a live handle.
    unsafe {
        assert_eq!(tenure_store_close(store), TENURE_OK);
        assert_eq!(tenure_store_free(store), TENURE_OK);
    }
    let _ = std::fs::remove_dir_all(&directory);
}

/// The statuses of the close and the free the re-entrant test's callback called.
static CALLBACK_STATUSES: Mutex<Option<(tenure_status, tenure_status)>> = Mutex::new(None);

/// The callback of the re-entrant test: closes and frees the store it reads.
unsafe extern "C" fn close_and_free(context: *mut c_void, _view: *const tenure_view) {
    let store = context as *mut tenure_store;
    // SAFETY: the context is the store handle, live when the read began.
    let statuses = unsafe { (tenure_store_close(store), tenure_store_free(store)) };
    *CALLBACK_STATUSES.lock().unwrap() = Some(statuses);
}

#[test]
fn a_callback_may_close_and_free_the_store_it_reads() {
    let directory = directory("callback");
    let store = open(&directory);
    // SAFETY: valid arguments; the callback frees the handle while this call is in flight.
    let status = unsafe {
        tenure_store_get_with(
            store,
            c"items".as_ptr(),
            KEY.as_ptr(),
            KEY.len(),
            null(),
            Some(close_and_free),
            store.cast(),
        )
    };
    assert_eq!(status, TENURE_OK);
    assert_eq!(
        *CALLBACK_STATUSES.lock().unwrap(),
        Some((TENURE_OK, TENURE_OK))
    );
    assert_eq!(get(store as usize), TENURE_ERR_INVALID_ARGUMENT);
    // The engine was dropped when the read left: the directory opens again.
    let again = open(&directory);
    // SAFETY: a live handle.
    unsafe {
        assert_eq!(tenure_store_close(again), TENURE_OK);
        assert_eq!(tenure_store_free(again), TENURE_OK);
    }
    let _ = std::fs::remove_dir_all(&directory);
}

#[test]
fn snapshots_freed_under_readers_refuse_them() {
    let directory = directory("snapshots");
    let store = open(&directory);
    for _ in 0..50 {
        let mut snapshot = null_mut();
        // SAFETY: valid arguments.
        assert_eq!(
            unsafe { tenure_snapshot_open(store, &mut snapshot) },
            TENURE_OK
        );
        let snapshot = snapshot as usize;
        let readers: Vec<_> = (0..2)
            .map(|_| {
                std::thread::spawn(move || loop {
                    let mut version = 0;
                    // SAFETY: a stale handle is refused, never dereferenced.
                    let status = unsafe {
                        tenure_snapshot_version(snapshot as *const tenure_snapshot, &mut version)
                    };
                    match status {
                        TENURE_OK => assert!(version > 0),
                        TENURE_ERR_INVALID_ARGUMENT => break,
                        other => panic!("a snapshot read got {other:?}"),
                    }
                })
            })
            .collect();
        // SAFETY: a live handle.
        assert_eq!(
            unsafe { tenure_snapshot_free(snapshot as *mut tenure_snapshot) },
            TENURE_OK
        );
        for reader in readers {
            reader.join().unwrap();
        }
    }
    // SAFETY: a live handle.
    unsafe {
        assert_eq!(tenure_store_close(store), TENURE_OK);
        assert_eq!(tenure_store_free(store), TENURE_OK);
    }
    let _ = std::fs::remove_dir_all(&directory);
}
