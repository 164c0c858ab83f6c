//! The cost of a get of a 150 B value through the C ABI (copy-out) against the Rust API.
//! `cargo run --release -p tenure-ffi --example get_overhead` — prints both and the ratio
//! (issue 6 asks for <= 1.15).

use std::ffi::CString;
use std::time::Instant;

use tenure::{ReadOptions, Store, StoreOptions};
use tenure_ffi::*;

const ROUNDS: usize = 5;
const GETS: usize = 300_000;

fn main() {
    let directory = std::env::temp_dir().join(format!("tenure-ffi-bench-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&directory);
    let path = CString::new(directory.to_str().expect("utf-8 temp dir")).unwrap();
    let container = CString::new("bench").unwrap();
    let key = b"some-key-0001";
    let value = [7u8; 150];
    // Both measurements read a reopened store (the item comes back from the log the same way).
    {
        let setup = Store::open(&directory, StoreOptions::default()).expect("open");
        setup
            .create_container("bench", &Default::default())
            .expect("container");
        setup
            .put("bench", key, &value, &Default::default())
            .expect("put");
        setup.close().expect("close");
    }
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
    let mut best_c = f64::MAX;
    let mut buffer = [0u8; 256];
    for _ in 0..ROUNDS {
        let started = Instant::now();
        for _ in 0..GETS {
            let mut length = 0usize;
            // SAFETY: valid arguments.
            let status = unsafe {
                tenure_get(
                    store,
                    container.as_ptr(),
                    key.as_ptr(),
                    key.len(),
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
        best_c = best_c.min(started.elapsed().as_nanos() as f64 / GETS as f64);
    }
    // SAFETY: the handle is live.
    unsafe {
        assert_eq!(tenure_store_close(store), TENURE_OK);
        assert_eq!(tenure_store_free(store), TENURE_OK);
    }

    let rust = Store::open(
        &directory,
        StoreOptions {
            background_compaction_interval: None,
            ..StoreOptions::default()
        },
    )
    .expect("reopen");
    let read = ReadOptions::default();
    let mut best_rust = f64::MAX;
    for _ in 0..ROUNDS {
        let started = Instant::now();
        for _ in 0..GETS {
            let item = rust.get("bench", key, &read).expect("get");
            let value = item.value.as_deref().unwrap_or(&[]);
            buffer[..value.len()].copy_from_slice(value);
            std::hint::black_box(&buffer[..value.len()]);
        }
        best_rust = best_rust.min(started.elapsed().as_nanos() as f64 / GETS as f64);
    }
    drop(rust);
    let _ = std::fs::remove_dir_all(&directory);
    println!(
        "get 150 B: Rust API {best_rust:.1} ns, C ABI copy-out {best_c:.1} ns, ratio {:.3}",
        best_c / best_rust
    );
}
