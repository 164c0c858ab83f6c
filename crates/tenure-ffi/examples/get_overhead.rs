//! The cost of a get of a 150 B value through the C ABI (copy-out) against the Rust API.
//! `cargo run --release -p tenure-ffi --example get_overhead` — prints both and the ratio
//! (the target is at most 1.15).
//!
//! `get_overhead c N` / `get_overhead rust N` run only N gets of one side (no timing), for
//! instruction counts under callgrind (no perf counters needed): the per-get figure is
//! (Ir of N gets − Ir of 0 gets) / N, e.g.
//! `valgrind --tool=callgrind --callgrind-out-file=/dev/null target/release/examples/get_overhead c 100000`.

use std::ffi::CString;
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
        let mut length = 0usize;
        // SAFETY: valid arguments.
        let status = unsafe {
            tenure_get(
                store,
                container.as_ptr(),
                KEY.as_ptr(),
                KEY.len(),
                std::ptr::null(),
                buffer.as_mut_ptr(),
                buffer.len(),
                &mut length,
                std::ptr::null_mut(),
            )
        };
        assert_eq!(status, TENURE_OK);
        std::hint::black_box(&buffer[..length]);
    }
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
            "c" => {
                let store = open_c(&c_directory);
                gets_c(store, gets, &mut buffer);
                close_c(store);
            }
            "rust" => gets_rust(&open_rust(&rust_directory), gets, &mut buffer),
            other => panic!("the side is c or rust, not {other}"),
        }
        let _ = std::fs::remove_dir_all(&base);
        return;
    }

    // The rounds alternate between the sides, so a change of load on a shared machine hits
    // both; the best round of each side is reported.
    let store = open_c(&c_directory);
    let rust = open_rust(&rust_directory);
    let (mut best_c, mut best_rust) = (f64::MAX, f64::MAX);
    for _ in 0..ROUNDS {
        best_c = best_c.min(timed(|| gets_c(store, GETS, &mut buffer)));
        best_rust = best_rust.min(timed(|| gets_rust(&rust, GETS, &mut buffer)));
    }
    close_c(store);
    drop(rust);
    let _ = std::fs::remove_dir_all(&base);
    println!(
        "get 150 B: Rust API {best_rust:.1} ns, C ABI copy-out {best_c:.1} ns, ratio {:.3}",
        best_c / best_rust
    );
}
