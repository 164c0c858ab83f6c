//! docs/spec.md §11 "A full disk": when the disk (or the store's quota) is full, writes that add
//! data fail with `StorageFull` and change nothing; reads, deletes and compaction go on with the
//! reserve held back for them; once compaction frees space, writes succeed again without a
//! reopen; `close` succeeds; nothing acknowledged is lost. Run on the simulated disk with a
//! byte budget, with a quota on a real directory, and on a real 40 MiB file system (tmpfs).

mod common;

use std::collections::BTreeMap;
use std::path::Path;
use std::sync::Arc;

use tenure::{
    Durability, Error, ErrorCode, ManualClock, ReadOptions, Store, StoreOptions, WriteOptions,
};
use tenure_testkit::SimStorage;

const VALUE_BYTES: usize = 1024;
/// More puts than any of the disks below can take.
const MOST_PUTS: usize = 200_000;

fn options(clock: &ManualClock, durability: Durability) -> StoreOptions {
    StoreOptions {
        durability,
        segment_size_bytes: 1 << 20,
        ..common::options(clock)
    }
}

fn value(index: usize, round: u8) -> Vec<u8> {
    let mut value = vec![round; VALUE_BYTES];
    value[..8].copy_from_slice(&(index as u64).to_le_bytes());
    value
}

fn key(index: usize) -> Vec<u8> {
    format!("item-{index:08}").into_bytes()
}

fn is_storage_full(error: &Error) -> bool {
    error.code() == ErrorCode::StorageFull && matches!(error, Error::StorageFull { .. })
}

/// Puts items until the store refuses one; returns what it acknowledged.
fn fill(store: &Store, round: u8, first: usize) -> BTreeMap<Vec<u8>, Vec<u8>> {
    let mut acknowledged = BTreeMap::new();
    for index in first..first + MOST_PUTS {
        match store.put(
            "c",
            &key(index),
            &value(index, round),
            &WriteOptions::default(),
        ) {
            Ok(_) => {
                acknowledged.insert(key(index), value(index, round));
            }
            Err(error) => {
                assert!(
                    is_storage_full(&error),
                    "a full disk gives StorageFull: {error}"
                );
                let message = error.to_string();
                assert!(message.starts_with("StorageFull (507)"), "{message}");
                // The refused write changed nothing.
                let missing = store.get("c", &key(index), &ReadOptions::default());
                assert_eq!(missing.unwrap_err().code(), ErrorCode::NotFound);
                return acknowledged;
            }
        }
    }
    panic!("{MOST_PUTS} puts of {VALUE_BYTES} bytes never filled the disk");
}

fn assert_holds(store: &Store, expected: &BTreeMap<Vec<u8>, Vec<u8>>, deleted: &[Vec<u8>]) {
    for (key, value) in expected {
        let item = store.get("c", key, &ReadOptions::default()).unwrap();
        assert_eq!(item.value.as_deref(), Some(&value[..]), "{key:?}");
    }
    for key in deleted {
        let error = store.get("c", key, &ReadOptions::default()).unwrap_err();
        assert_eq!(error.code(), ErrorCode::NotFound);
    }
}

/// The whole story on one store: fill until refused, the state shows in `stats`, reads and
/// deletes of half go on, compaction frees space, writes resume without a reopen, close,
/// reopen with everything acknowledged. Returns the store's final contents.
fn fill_delete_compact_write(open: &dyn Fn() -> Store) -> BTreeMap<Vec<u8>, Vec<u8>> {
    let store = open();
    store.create_container("c", &Default::default()).unwrap();
    let mut expected = fill(&store, 1, 0);
    assert!(expected.len() > 1000, "only {} puts fit", expected.len());
    let stats = store.stats().unwrap();
    assert!(stats.storage_full, "stats shows the full state: {stats:?}");

    // Refused again, with nothing changed; every acknowledged item reads back.
    let error = store
        .put("c", b"one more", &value(0, 1), &WriteOptions::default())
        .unwrap_err();
    assert!(is_storage_full(&error), "{error}");
    assert_holds(&store, &expected, &[]);

    // Deletes go on, from the reserve.
    let doomed: Vec<Vec<u8>> = expected.keys().step_by(2).cloned().collect();
    for key in &doomed {
        store.delete("c", key, &WriteOptions::default()).unwrap();
        expected.remove(key);
    }
    // Compaction frees the deleted items' space (and uses the reserve to copy the rest).
    let free_before_compaction = store.stats().unwrap().free_bytes;
    store.compact().unwrap();
    let stats = store.stats().unwrap();
    if let (Some(before), Some(after)) = (free_before_compaction, stats.free_bytes) {
        // Removed segments give their space back at once, not at some later collection.
        assert!(
            after > before,
            "compaction freed nothing: {before} then {after} bytes free"
        );
    }
    // For the quota, where the disk is not full, the state clears with the store's size.
    assert!(!stats.storage_full, "compaction made room: {stats:?}");

    // Writes resume without a reopen.
    let refilled = fill(&store, 2, MOST_PUTS);
    assert!(
        refilled.len() * 4 > doomed.len(),
        "after freeing {} items only {} new ones fit",
        doomed.len(),
        refilled.len()
    );
    expected.extend(refilled);
    assert_holds(&store, &expected, &doomed);
    store
        .delete("c", &key(1), &WriteOptions::default())
        .unwrap();
    expected.remove(&key(1));
    store.close().unwrap();

    let store = open();
    assert_holds(&store, &expected, &doomed);
    store.compact().unwrap();
    store
        .put("c", b"after reopen", &value(0, 3), &WriteOptions::default())
        .unwrap();
    store.close().unwrap();
    expected
}

#[test]
fn a_full_simulated_disk_refuses_writes_and_recovers_through_deletes_and_compaction() {
    for durability in [Durability::Buffered, Durability::Sync] {
        let clock = ManualClock::new(common::START_MICROS);
        let disk = SimStorage::new();
        disk.set_byte_budget(Some(24 << 20));
        let open = || {
            Store::open_with_storage(Arc::new(disk.clone()), options(&clock, durability)).unwrap()
        };
        fill_delete_compact_write(&open);
        assert!(disk.used_bytes() <= 24 << 20);
    }
}

#[test]
fn a_quota_refuses_writes_like_a_full_disk() {
    let directory = TempDirectory::new();
    let clock = ManualClock::new(common::START_MICROS);
    let quota_bytes = 12 << 20;
    let reserve_bytes = 4 << 20;
    let open = || {
        Store::open(
            directory.0.as_path(),
            StoreOptions {
                quota_bytes: Some(quota_bytes),
                space_reserve_bytes: Some(reserve_bytes),
                ..options(&clock, Durability::Buffered)
            },
        )
        .unwrap()
    };
    fill_delete_compact_write(&open);
    let store = open();
    let stats = store.stats().unwrap();
    assert_eq!(stats.quota_bytes, Some(quota_bytes));
    assert!(
        stats.store_bytes <= quota_bytes + reserve_bytes,
        "the store stays within its quota and reserve: {stats:?}"
    );
}

#[test]
fn a_zero_quota_is_refused_naming_the_option() {
    let directory = TempDirectory::new();
    let clock = ManualClock::new(common::START_MICROS);
    let error = Store::open(
        directory.0.as_path().join("store"),
        StoreOptions {
            quota_bytes: Some(0),
            ..options(&clock, Durability::Buffered)
        },
    )
    .err()
    .expect("a zero quota is refused");
    assert!(error.to_string().contains("quota_bytes"), "{error}");
    assert!(!directory.0.as_path().join("store").exists());
}

/// A real 40 MiB ext4 file system in a loop-mounted image, made by the test where it may (root,
/// mkfs.ext4 and a loop device). Elsewhere it says SKIPPED, unless
/// `TENURE_REQUIRE_SMALL_FILE_SYSTEM=1` makes that a failure.
#[test]
fn a_full_real_file_system_refuses_writes_and_recovers() {
    let scratch = TempDirectory::new();
    let Some(mounted) = SmallFileSystem::make(&scratch.0, 40 << 20) else {
        assert!(
            std::env::var_os("TENURE_REQUIRE_SMALL_FILE_SYSTEM").is_none(),
            "could not make and mount a 40 MiB ext4 file system (mkfs.ext4, mount -o loop)"
        );
        eprintln!("SKIPPED: could not mount a 40 MiB ext4 image (needs root and loop devices)");
        return;
    };
    let clock = ManualClock::new(common::START_MICROS);
    let store_path = mounted.mount_point.join("store");
    for durability in [Durability::Sync, Durability::Buffered] {
        let open = || Store::open(&store_path, options(&clock, durability)).unwrap();
        fill_delete_compact_write(&open);
        std::fs::remove_dir_all(&store_path).unwrap();
    }
}

/// A loop-mounted ext4 image, unmounted on drop.
struct SmallFileSystem {
    mount_point: std::path::PathBuf,
}

impl SmallFileSystem {
    fn make(scratch: &Path, bytes: u64) -> Option<SmallFileSystem> {
        let image = scratch.join("fs.img");
        let mount_point = scratch.join("mnt");
        std::fs::create_dir_all(&mount_point).ok()?;
        std::fs::File::create(&image).ok()?.set_len(bytes).ok()?;
        let run = |program: &str, arguments: &[&std::ffi::OsStr]| {
            std::process::Command::new(program)
                .args(arguments)
                .stdout(std::process::Stdio::null())
                .stderr(std::process::Stdio::null())
                .status()
                .is_ok_and(|status| status.success())
        };
        let made = run(
            "mkfs.ext4",
            &["-q".as_ref(), "-F".as_ref(), image.as_os_str()],
        );
        let mounted = made
            && run(
                "mount",
                &[
                    "-o".as_ref(),
                    "loop".as_ref(),
                    image.as_os_str(),
                    mount_point.as_os_str(),
                ],
            );
        mounted.then_some(SmallFileSystem { mount_point })
    }
}

impl Drop for SmallFileSystem {
    fn drop(&mut self) {
        let _ = std::process::Command::new("umount")
            .arg(&self.mount_point)
            .status();
    }
}

struct TempDirectory(std::path::PathBuf);

impl TempDirectory {
    fn new() -> TempDirectory {
        static NEXT: std::sync::atomic::AtomicU32 = std::sync::atomic::AtomicU32::new(0);
        let path = std::env::temp_dir().join(format!(
            "tenure-full-disk-{}-{}",
            std::process::id(),
            NEXT.fetch_add(1, std::sync::atomic::Ordering::Relaxed)
        ));
        std::fs::create_dir_all(&path).unwrap();
        TempDirectory(path)
    }
}

impl Drop for TempDirectory {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}
