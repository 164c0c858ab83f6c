//! The cost of a get of a 150 B value through the C ABI against the Rust API: copied out
//! (`tenure_store_get_value` against `Store::get` plus the same copy) and lent without a copy
//! (`tenure_store_get_with` against `Store::get_with`).
//! `cargo run --release -p tenure-ffi --example get_overhead` — prints both pairs and their
//! ratios, alternating rounds between the sides over two identical stores.
//!
//! `get_overhead SIDE N` runs only N gets of one side (no timing), for instruction counts under
//! callgrind (no perf counters needed): the per-get figure is (Ir of N gets − Ir of 0 gets) / N,
//! e.g. `valgrind --tool=callgrind --callgrind-out-file=/dev/null
//! target/release/examples/get_overhead view 100000`. The sides: `c` (the C copy-out get),
//! `rust` (`Store::get` and a copy), `view` (C `tenure_store_get_with`), `with` (Rust
//! `Store::get_with`), `snapshot-view` (C `tenure_snapshot_get_view`), `borrowed` (Rust
//! `Snapshot::get_borrowed`).

use std::ffi::{c_void, CString};
use std::path::Path;
use std::time::Instant;

use tenure::{ReadOptions, Store, StoreOptions};
use tenure_ffi::*;

const ROUNDS: usize = 9;
const GETS: usize = 300_000;
const KEY: &[u8] = b"some-key-0001";

/// Opens the store through the C ABI; returns the handle.
fn open_c(directory: &Path) -> *mut tenure_store {
    let path = CString::new(directory.to_str().expect("utf-8 temp dir")).unwrap();
    let mut store: *mut tenure_store = std::ptr::null_mut();
    let options = tenure_store_options {
        durability: 1,
        segment_size_bytes: 0,
        disable_background_compaction: true,
    };
    // SAFETY: valid arguments.
    unsafe {
        assert_eq!(
            tenure_store_open(path.as_ptr(), &options, &mut store),
            TENURE_OK
        );
    }
    store
}

fn close_c(store: *mut tenure_store) {
    // SAFETY: the handle is live.
    unsafe {
        assert_eq!(tenure_store_close(store), TENURE_OK);
        assert_eq!(tenure_store_free(store), TENURE_OK);
    }
}

/// `gets` copy-out gets through the C ABI.
fn gets_c(store: *mut tenure_store, gets: usize, buffer: &mut [u8]) {
    let container = c"bench";
    for _ in 0..gets {
        // SAFETY: plain data; the fields the call reads are set below.
        let mut out: tenure_value_out = unsafe { std::mem::zeroed() };
        out.buffer = buffer.as_mut_ptr();
        out.capacity = buffer.len();
        // SAFETY: valid arguments.
        let status = unsafe {
            tenure_store_get_value(
                store,
                container.as_ptr(),
                KEY.as_ptr(),
                KEY.len(),
                std::ptr::null(),
                &mut out,
            )
        };
        assert_eq!(status, TENURE_OK);
        std::hint::black_box(&buffer[..out.length]);
    }
}

/// The callback of the C zero-copy side: reads the lent value's length and first byte.
unsafe extern "C" fn take(context: *mut c_void, view: *const tenure_view) {
    // SAFETY: the view is valid during the call; the context is the caller's `usize`.
    unsafe {
        let view = &*view;
        std::hint::black_box(std::slice::from_raw_parts(view.value, view.value_length));
        *context.cast::<usize>() = view.value_length;
    }
}

/// `gets` zero-copy gets through the C ABI (`tenure_store_get_with`).
fn gets_view(store: *mut tenure_store, gets: usize) {
    let container = c"bench";
    let mut length = 0usize;
    for _ in 0..gets {
        // SAFETY: valid arguments; `take` reads the view during the call only.
        let status = unsafe {
            tenure_store_get_with(
                store,
                container.as_ptr(),
                KEY.as_ptr(),
                KEY.len(),
                std::ptr::null(),
                Some(take),
                (&mut length as *mut usize).cast(),
            )
        };
        assert_eq!(status, TENURE_OK);
        std::hint::black_box(length);
    }
}

/// `gets` zero-copy gets through a C snapshot (`tenure_snapshot_get_view`).
fn gets_snapshot_view(store: *mut tenure_store, gets: usize) {
    let container = c"bench";
    let mut snapshot = std::ptr::null_mut();
    // SAFETY: valid arguments.
    unsafe { assert_eq!(tenure_snapshot_open(store, &mut snapshot), TENURE_OK) };
    for _ in 0..gets {
        let mut view = std::mem::MaybeUninit::<tenure_view>::uninit();
        // SAFETY: valid arguments; the view is written on success.
        let view = unsafe {
            let status = tenure_snapshot_get_view(
                snapshot,
                container.as_ptr(),
                KEY.as_ptr(),
                KEY.len(),
                std::ptr::null(),
                view.as_mut_ptr(),
            );
            assert_eq!(status, TENURE_OK);
            view.assume_init()
        };
        // SAFETY: lent until the snapshot is freed.
        std::hint::black_box(unsafe { std::slice::from_raw_parts(view.value, view.value_length) });
    }
    // SAFETY: the handle from tenure_snapshot_open.
    unsafe { assert_eq!(tenure_snapshot_free(snapshot), TENURE_OK) };
}

fn open_rust(directory: &Path) -> Store {
    Store::open(
        directory,
        StoreOptions {
            background_compaction_interval: None,
            ..StoreOptions::default()
        },
    )
    .expect("reopen")
}

/// `gets` gets through the Rust API, each copied into `buffer` as the C call does.
fn gets_rust(store: &Store, gets: usize, buffer: &mut [u8]) {
    let read = ReadOptions::default();
    for _ in 0..gets {
        let item = store.get("bench", KEY, &read).expect("get");
        let value = item.value.as_deref().unwrap_or(&[]);
        buffer[..value.len()].copy_from_slice(value);
        std::hint::black_box(&buffer[..value.len()]);
    }
}

/// `gets` zero-copy gets through the Rust API (`Store::get_with`).
fn gets_with(store: &Store, gets: usize) {
    let read = ReadOptions::default();
    for _ in 0..gets {
        let length = store
            .get_with("bench", KEY, &read, |item| {
                std::hint::black_box(item.value);
                item.value.len()
            })
            .expect("get_with");
        std::hint::black_box(length);
    }
}

/// `gets` zero-copy gets through a Rust snapshot (`Snapshot::get_borrowed`).
fn gets_borrowed(store: &Store, gets: usize) {
    let read = ReadOptions::default();
    let snapshot = store.snapshot().expect("snapshot");
    for _ in 0..gets {
        let item = snapshot
            .get_borrowed("bench", KEY, &read)
            .expect("get_borrowed");
        std::hint::black_box(item.value);
    }
}

/// Nanoseconds per get of one round.
fn timed(round: impl FnOnce()) -> f64 {
    let started = Instant::now();
    round();
    started.elapsed().as_nanos() as f64 / GETS as f64
}

/// A store in `directory` holding the one 150 B item (closed again).
fn set_up(directory: &Path) {
    let _ = std::fs::remove_dir_all(directory);
    let setup = Store::open(directory, StoreOptions::default()).expect("open");
    setup
        .create_container("bench", &Default::default())
        .expect("container");
    setup
        .put("bench", KEY, &[7u8; 150], &Default::default())
        .expect("put");
    setup.close().expect("close");
}

fn main() {
    let base = std::env::temp_dir().join(format!("tenure-ffi-bench-{}", std::process::id()));
    // Two identical stores (a store is open once at a time), both read after a reopen: the
    // item comes back from the log the same way for both sides.
    let (c_directory, rust_directory) = (base.join("c"), base.join("rust"));
    set_up(&c_directory);
    set_up(&rust_directory);
    let mut buffer = [0u8; 256];
    let arguments: Vec<String> = std::env::args().skip(1).collect();
    if let [side, gets] = arguments.as_slice() {
        let gets: usize = gets.parse().expect("a number of gets");
        match side.as_str() {
            "c" | "view" | "snapshot-view" => {
                let store = open_c(&c_directory);
                match side.as_str() {
                    "c" => gets_c(store, gets, &mut buffer),
                    "view" => gets_view(store, gets),
                    _ => gets_snapshot_view(store, gets),
                }
                close_c(store);
            }
            "rust" => gets_rust(&open_rust(&rust_directory), gets, &mut buffer),
            "with" => gets_with(&open_rust(&rust_directory), gets),
            "borrowed" => gets_borrowed(&open_rust(&rust_directory), gets),
            other => {
                panic!("the side is c, rust, view, with, snapshot-view or borrowed, not {other}")
            }
        }
        let _ = std::fs::remove_dir_all(&base);
        return;
    }

    // The rounds alternate between the sides, so a change of load on a shared machine hits
    // both; the best round of each side is reported.
    let store = open_c(&c_directory);
    let rust = open_rust(&rust_directory);
    let mut best = [f64::MAX; 4];
    for _ in 0..ROUNDS {
        best[0] = best[0].min(timed(|| gets_c(store, GETS, &mut buffer)));
        best[1] = best[1].min(timed(|| gets_rust(&rust, GETS, &mut buffer)));
        best[2] = best[2].min(timed(|| gets_view(store, GETS)));
        best[3] = best[3].min(timed(|| gets_with(&rust, GETS)));
    }
    close_c(store);
    drop(rust);
    let _ = std::fs::remove_dir_all(&base);
    let [c, rust, view, with] = best;
    println!(
        "get 150 B copied: Rust {rust:.1} ns, C {c:.1} ns, ratio {:.3}",
        c / rust
    );
    println!(
        "get 150 B lent:   Rust get_with {with:.1} ns, C get_with {view:.1} ns, ratio {:.3}",
        view / with
    );
}
