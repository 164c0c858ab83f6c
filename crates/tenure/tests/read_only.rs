//! Read-only opens (docs/spec.md §1): beside a store open for writing, or on its own; every
//! write refused with `ReadOnly`, no store file touched; beside a writer, every read sees the
//! writes committed before it started (the open follows the writer).

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Duration;

use tenure::{
    ChangesOptions, ContainerOptions, Durability, ErrorCode, LeaseRequest, ReadOptions, Store,
    StoreOptions, WriteOptions,
};

fn directory(name: &str) -> PathBuf {
    let directory = std::env::temp_dir().join(format!(
        "tenure-read-only-{name}-{}-{}",
        std::process::id(),
        std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .unwrap()
            .as_nanos()
    ));
    std::fs::create_dir_all(&directory).unwrap();
    directory
}

fn writer_options(durability: Durability) -> StoreOptions {
    StoreOptions {
        durability,
        segment_size_bytes: 1 << 20,
        ..StoreOptions::default()
    }
}

fn read_only() -> StoreOptions {
    StoreOptions {
        read_only: true,
        ..StoreOptions::default()
    }
}

/// Each file of the store with its bytes and modification time.
fn files_of(directory: &Path) -> BTreeMap<String, (Vec<u8>, std::time::SystemTime)> {
    std::fs::read_dir(directory)
        .unwrap()
        .map(|entry| {
            let entry = entry.unwrap();
            let metadata = entry.metadata().unwrap();
            (
                entry.file_name().to_string_lossy().into_owned(),
                (
                    std::fs::read(entry.path()).unwrap(),
                    metadata.modified().unwrap(),
                ),
            )
        })
        .collect()
}

fn value_of(store: &Store, key: &str) -> Option<Vec<u8>> {
    match store.get("c", key.as_bytes(), &ReadOptions::default()) {
        Ok(item) => item.value,
        Err(error) if error.code() == ErrorCode::NotFound => None,
        Err(error) => panic!("{error}"),
    }
}

#[test]
fn a_read_only_open_beside_a_writer_sees_every_acknowledged_write_and_changes_nothing() {
    for durability in [Durability::Sync, Durability::Buffered] {
        let directory = directory("beside");
        let writer = Store::open(&directory, writer_options(durability)).unwrap();
        writer
            .create_container("c", &ContainerOptions::default())
            .unwrap();
        for index in 0..300 {
            let key = format!("key-{index}");
            writer
                .put(
                    "c",
                    key.as_bytes(),
                    key.as_bytes(),
                    &WriteOptions::default(),
                )
                .unwrap();
        }
        let lease = writer
            .acquire_lease("c", b"key-7", &LeaseRequest::infinite())
            .unwrap();

        let reader = Store::open(&directory, read_only()).unwrap();
        assert_eq!(reader.version(), writer.version(), "{durability:?}");
        for index in 0..300 {
            let key = format!("key-{index}");
            assert_eq!(value_of(&reader, &key).as_deref(), Some(key.as_bytes()));
        }
        let info = reader.lease_info("c", b"key-7").unwrap();
        assert_eq!(info.id, Some(lease.id), "leases are read back too");
        assert_eq!(reader.list_containers().unwrap(), ["c"]);
        assert_eq!(
            reader.changes(0, &ChangesOptions::default()).unwrap().len(),
            301,
            "the container's creation and the 300 puts (a lease is no change of the item)"
        );

        // Every write is refused, and the files stay as they were.
        let before = files_of(&directory);
        let refused = |code: ErrorCode| code == ErrorCode::ReadOnly;
        let write = WriteOptions::default();
        assert!(reader
            .put("c", b"new", b"v", &write)
            .is_err_and(|e| refused(e.code()) && e.status() == 403));
        assert!(reader
            .delete("c", b"key-1", &write)
            .is_err_and(|e| refused(e.code())));
        assert!(reader
            .create_container("d", &ContainerOptions::default())
            .is_err_and(|e| refused(e.code())));
        assert!(reader
            .acquire_lease("c", b"key-2", &LeaseRequest::infinite())
            .is_err_and(|e| refused(e.code())));
        assert!(reader
            .get_and_lock("c", b"key-3", Duration::from_secs(5), false)
            .is_err_and(|e| refused(e.code())));
        let mut batch = reader.batch();
        batch.put("c", b"batched", b"v", WriteOptions::default());
        assert!(batch.commit().is_err_and(|e| refused(e.code())));
        assert!(reader.compact().is_err_and(|e| refused(e.code())));
        // Bad arguments are still InvalidArgument first (docs/spec.md §3's order of checks).
        assert_eq!(
            reader.put("c", b"", b"v", &write).unwrap_err().code(),
            ErrorCode::InvalidArgument
        );
        reader.flush().unwrap();
        assert_eq!(files_of(&directory), before, "{durability:?}");

        // The writer goes on, and the reader follows: a read that starts after a write sees
        // it, a snapshot taken before it does not, and so does a new read-only open.
        let snapshot = reader.snapshot().unwrap();
        writer
            .put("c", b"later", b"v", &WriteOptions::default())
            .unwrap();
        writer
            .put("c", b"key-5", b"changed", &WriteOptions::default())
            .unwrap();
        assert_eq!(value_of(&reader, "later").as_deref(), Some(&b"v"[..]));
        assert_eq!(value_of(&reader, "key-5").as_deref(), Some(&b"changed"[..]));
        assert_eq!(reader.version(), writer.version(), "{durability:?}");
        assert_eq!(
            snapshot
                .get("c", b"key-5", &ReadOptions::default())
                .unwrap()
                .value
                .as_deref(),
            Some(&b"key-5"[..])
        );
        assert_eq!(
            snapshot
                .get("c", b"later", &ReadOptions::default())
                .unwrap_err()
                .code(),
            ErrorCode::NotFound
        );
        drop(snapshot);
        let second = Store::open(&directory, read_only()).unwrap();
        assert_eq!(value_of(&second, "later").as_deref(), Some(&b"v"[..]));
        second.close().unwrap();
        reader.close().unwrap();

        // Closing the readers changed nothing for the writer, which still holds the store.
        writer
            .put("c", b"after", b"v", &WriteOptions::default())
            .unwrap();
        assert_eq!(
            Store::open(&directory, writer_options(durability))
                .err()
                .map(|e| e.code()),
            Some(ErrorCode::StoreLocked)
        );
        writer.close().unwrap();
        std::fs::remove_dir_all(&directory).unwrap();
    }
}

#[test]
fn a_read_only_open_reads_on_through_the_writers_compaction() {
    let directory = directory("compaction");
    let writer = Store::open(&directory, writer_options(Durability::Buffered)).unwrap();
    writer
        .create_container("c", &ContainerOptions::default())
        .unwrap();
    for round in 0..4u8 {
        for index in 0..2_000 {
            let key = format!("key-{index}");
            writer
                .put("c", key.as_bytes(), &[round; 200], &WriteOptions::default())
                .unwrap();
        }
    }
    let reader = Store::open(&directory, read_only()).unwrap();
    let report = writer.compact().unwrap();
    assert!(report.segments_removed > 0, "{report:?}");
    // The reader's segments were removed from the directory; its mappings stay valid.
    for index in 0..2_000 {
        let key = format!("key-{index}");
        assert_eq!(value_of(&reader, &key), Some(vec![3; 200]));
    }
    reader.close().unwrap();
    let after = Store::open(&directory, read_only()).unwrap();
    assert_eq!(value_of(&after, "key-1999"), Some(vec![3; 200]));
    drop(after);
    writer.close().unwrap();
    std::fs::remove_dir_all(&directory).unwrap();
}

/// A writer appends from four threads; read-only opens made meanwhile each see every write
/// acknowledged before they opened (and never a torn one).
#[test]
fn read_only_opens_during_appends_see_every_write_acknowledged_before_them() {
    let directory = directory("live");
    let writer = Arc::new(Store::open(&directory, writer_options(Durability::Buffered)).unwrap());
    writer
        .create_container("c", &ContainerOptions::default())
        .unwrap();
    // Per thread, how many of its keys are acknowledged.
    let acknowledged: Arc<[AtomicU64; 4]> = Arc::new(Default::default());
    let stop = Arc::new(std::sync::atomic::AtomicBool::new(false));
    let threads: Vec<_> = (0..4)
        .map(|thread| {
            let (writer, acknowledged, stop) = (
                Arc::clone(&writer),
                Arc::clone(&acknowledged),
                Arc::clone(&stop),
            );
            std::thread::spawn(move || {
                let mut count = 0u64;
                while !stop.load(Ordering::Relaxed) && count < 20_000 {
                    let key = format!("{thread}-{count}");
                    writer
                        .put(
                            "c",
                            key.as_bytes(),
                            key.as_bytes(),
                            &WriteOptions::default(),
                        )
                        .unwrap();
                    count += 1;
                    acknowledged[thread].store(count, Ordering::Release);
                }
            })
        })
        .collect();
    for _ in 0..20 {
        let floor: Vec<u64> = acknowledged
            .iter()
            .map(|count| count.load(Ordering::Acquire))
            .collect();
        let reader = Store::open(&directory, read_only()).unwrap();
        for (thread, &count) in floor.iter().enumerate() {
            for index in [0, count / 2, count.saturating_sub(1)] {
                if index < count {
                    let key = format!("{thread}-{index}");
                    assert_eq!(
                        value_of(&reader, &key).as_deref(),
                        Some(key.as_bytes()),
                        "acknowledged before the open"
                    );
                }
            }
        }
        reader.close().unwrap();
        std::thread::sleep(Duration::from_millis(5));
    }
    stop.store(true, Ordering::Relaxed);
    for thread in threads {
        thread.join().unwrap();
    }
    Arc::try_unwrap(writer).ok().unwrap().close().unwrap();
    std::fs::remove_dir_all(&directory).unwrap();
}

#[test]
fn a_read_only_open_of_no_store_fails_and_creates_nothing() {
    let parent = directory("missing");
    let missing = parent.join("no-store-here");
    let error = Store::open(&missing, read_only()).err().unwrap();
    assert_eq!(error.code(), ErrorCode::Io, "{error}");
    assert!(!missing.exists());
    std::fs::create_dir_all(&missing).unwrap();
    let error = Store::open(&missing, read_only()).err().unwrap();
    assert_eq!(error.code(), ErrorCode::Io, "{error}");
    assert_eq!(std::fs::read_dir(&missing).unwrap().count(), 0);
    std::fs::remove_dir_all(&parent).unwrap();
}

/// `verify` reads a store a writer holds open, also while it appends: no lock, and no false
/// damage (an append in progress past the durable watermark is at most a note).
#[test]
fn verify_checks_a_store_a_writer_holds_open() {
    let directory = directory("verify");
    let writer = Arc::new(Store::open(&directory, writer_options(Durability::Sync)).unwrap());
    writer
        .create_container("c", &ContainerOptions::default())
        .unwrap();
    let stop = Arc::new(std::sync::atomic::AtomicBool::new(false));
    let appender = {
        let (writer, stop) = (Arc::clone(&writer), Arc::clone(&stop));
        std::thread::spawn(move || {
            let mut index = 0u64;
            while !stop.load(Ordering::Relaxed) && index < 50_000 {
                let key = format!("key-{index}");
                writer
                    .put("c", key.as_bytes(), &[7; 100], &WriteOptions::default())
                    .unwrap();
                index += 1;
            }
        })
    };
    for _ in 0..10 {
        let report = tenure::verify(&directory, &mut |_, _| {}).unwrap();
        assert!(report.is_clean(), "{:?}", report.problems);
        std::thread::sleep(Duration::from_millis(10));
    }
    stop.store(true, Ordering::Relaxed);
    appender.join().unwrap();
    Arc::try_unwrap(writer).ok().unwrap().close().unwrap();
    std::fs::remove_dir_all(&directory).unwrap();
}
