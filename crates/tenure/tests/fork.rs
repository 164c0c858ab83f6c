//! A store handle inherited through `fork()`: every call in the child fails with
//! `UsedAfterFork` and changes nothing on disk; the parent goes on; closing in the child
//! releases nothing the parent holds.
//!
//! One test in this binary: the child runs Rust code after the fork, which is sound only while
//! no other thread of the test process holds a lock the child needs (the harness runs nothing
//! else here). The child reports through its exit status, never through stdout or stderr,
//! whose locks another thread may have held at the fork.

use std::collections::BTreeMap;
use std::path::Path;
use std::time::Duration;

use tenure::{
    verify, ChangesOptions, ContainerOptions, Durability, ErrorCode, LeaseRequest, ReadOptions,
    Store, StoreOptions, WriteOptions,
};

fn options() -> StoreOptions {
    StoreOptions {
        durability: Durability::Sync,
        segment_size_bytes: 1 << 20,
        ..StoreOptions::default()
    }
}

/// Every file of the store by name, trailing zeros cut: what a write would change (the
/// segment preparer only extends files with zeros).
fn files_of(directory: &Path) -> BTreeMap<String, Vec<u8>> {
    let mut files = BTreeMap::new();
    for entry in std::fs::read_dir(directory).unwrap() {
        let entry = entry.unwrap();
        let mut bytes = std::fs::read(entry.path()).unwrap();
        while bytes.last() == Some(&0) {
            bytes.pop();
        }
        files.insert(entry.file_name().to_string_lossy().into_owned(), bytes);
    }
    files
}

/// Runs in the forked child: each call through the inherited handle must fail with
/// `UsedAfterFork`. Returns the number of the first check that failed, 0 when all held.
fn child_checks(store: Store, snapshot_version: u64) -> i32 {
    let forked = |code: ErrorCode| code == ErrorCode::UsedAfterFork;
    let write = WriteOptions::default();
    let read = ReadOptions::default();
    let checks: Vec<bool> = vec![
        store
            .put("c", b"child-0", b"from the child", &write)
            .is_err_and(|e| forked(e.code())),
        store
            .get("c", b"key-0", &read)
            .is_err_and(|e| forked(e.code())),
        store
            .delete("c", b"key-1", &write)
            .is_err_and(|e| forked(e.code())),
        store
            .create_container("child", &ContainerOptions::default())
            .is_err_and(|e| forked(e.code())),
        store.snapshot().is_err_and(|e| forked(e.code())),
        {
            let mut batch = store.batch();
            batch.put("c", b"child-1", b"v", WriteOptions::default());
            batch.commit().is_err_and(|e| forked(e.code()))
        },
        store
            .acquire_lease("c", b"key-2", &LeaseRequest::infinite())
            .is_err_and(|e| forked(e.code())),
        store
            .get_and_lock("c", b"key-3", Duration::from_secs(5), false)
            .is_err_and(|e| forked(e.code())),
        store
            .changes(0, &ChangesOptions::default())
            .is_err_and(|e| forked(e.code())),
        store
            .list("c", b"", 10, None, false)
            .is_err_and(|e| forked(e.code())),
        store.flush().is_err_and(|e| forked(e.code())),
        store.compact().is_err_and(|e| forked(e.code())),
        store.stats().is_err_and(|e| forked(e.code())),
        store
            .get_with("c", b"key-0", &read, |item| item.value.len())
            .is_err_and(|e| forked(e.code())),
        // The message names the process that opened the store.
        store.put("c", b"k", b"v", &write).is_err_and(|e| {
            e.to_string().contains(&format!(
                "opened by process {}",
                std::os::unix::process::parent_id()
            ))
        }),
        store.version() >= snapshot_version,
        // Closing the inherited handle succeeds and writes nothing.
        store.close().is_ok(),
    ];
    checks
        .iter()
        .position(|held| !held)
        .map_or(0, |failed| failed as i32 + 1)
}

/// `fork()`, run `child` in the child and `_exit` with its result; the child's status in the
/// parent.
fn run_in_child(child: impl FnOnce() -> i32) -> i32 {
    // SAFETY: the child runs only `child` and then `_exit`s: no destructor or atexit handler
    // of the parent's copy runs. Nothing else in this test process holds a lock it needs. The
    // parent never calls `child`.
    let pid = unsafe { libc::fork() };
    assert!(pid >= 0, "fork failed");
    if pid == 0 {
        let code = std::panic::catch_unwind(std::panic::AssertUnwindSafe(child)).unwrap_or(99);
        // SAFETY: ends the child without running the parent's exit handlers.
        unsafe { libc::_exit(code) };
    }
    let mut status = 0;
    // SAFETY: waits for the child just made.
    let waited = unsafe { libc::waitpid(pid, &mut status, 0) };
    assert_eq!(waited, pid);
    assert!(libc::WIFEXITED(status), "the child died: status {status}");
    libc::WEXITSTATUS(status)
}

#[test]
fn a_handle_inherited_through_fork_refuses_everything_and_the_parent_goes_on() {
    let directory = tempfile_directory();
    let store = Store::open(&directory, options()).unwrap();
    store
        .create_container("c", &ContainerOptions::default())
        .unwrap();
    for index in 0..100 {
        let key = format!("key-{index}");
        store
            .put(
                "c",
                key.as_bytes(),
                b"from the parent",
                &WriteOptions::default(),
            )
            .unwrap();
    }
    // A snapshot taken before the fork, read by the parent after it.
    let snapshot = store.snapshot().unwrap();
    let snapshot_version = snapshot.version();
    let before = files_of(&directory);

    let failed_check = run_in_child(|| child_checks(child_copy(&store), snapshot_version));
    assert_eq!(failed_check, 0, "child check {failed_check} failed");
    assert_eq!(
        files_of(&directory),
        before,
        "the child changed the store's files"
    );

    // The parent still holds the store's lock and goes on writing and reading.
    let second = Store::open(&directory, options());
    assert_eq!(second.err().map(|e| e.code()), Some(ErrorCode::StoreLocked));
    for index in 100..200 {
        let key = format!("key-{index}");
        store
            .put(
                "c",
                key.as_bytes(),
                b"from the parent",
                &WriteOptions::default(),
            )
            .unwrap();
    }
    assert!(snapshot
        .get("c", b"key-150", &ReadOptions::default())
        .is_err_and(|e| e.code() == ErrorCode::NotFound));
    drop(snapshot);

    // A child that only drops its copy (a worker that exits normally) changes nothing either.
    let before = files_of(&directory);
    assert_eq!(
        run_in_child(|| {
            drop(child_copy(&store));
            0
        }),
        0
    );
    assert_eq!(files_of(&directory), before);
    store.close().unwrap();

    let reopened = Store::open(&directory, options()).unwrap();
    for index in 0..200 {
        let key = format!("key-{index}");
        let item = reopened
            .get("c", key.as_bytes(), &ReadOptions::default())
            .unwrap();
        assert_eq!(item.value.as_deref(), Some(&b"from the parent"[..]));
    }
    for key in [&b"child-0"[..], b"child-1", b"k"] {
        assert!(reopened
            .get("c", key, &ReadOptions::default())
            .is_err_and(|e| e.code() == ErrorCode::NotFound));
    }
    assert!(reopened
        .lease_info("c", b"key-2")
        .is_ok_and(|info| info.state == tenure::LeaseState::Available));
    reopened.close().unwrap();
    assert!(verify(&directory, &mut |_, _| {}).unwrap().is_clean());
    std::fs::remove_dir_all(&directory).unwrap();
}

/// The child's own copy of `store`, to close or drop: only ever called in the forked child,
/// which `_exit`s, so the copy and the original are never both dropped in one process.
fn child_copy(store: &Store) -> Store {
    // SAFETY: see above; the child's memory is its own copy of the parent's.
    unsafe { std::ptr::read(store) }
}

fn tempfile_directory() -> std::path::PathBuf {
    let directory = std::env::temp_dir().join(format!(
        "tenure-fork-{}-{}",
        std::process::id(),
        std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .unwrap()
            .as_nanos()
    ));
    std::fs::create_dir_all(&directory).unwrap();
    directory
}

/// A read-only open that follows a writer, inherited through `fork()`: in the child it reads
/// nothing more from the log (not even for `version()`, which reports the copy as the fork
/// left it) and refuses every call, as any inherited handle does.
#[test]
fn an_inherited_follower_reads_nothing_more_in_the_child() {
    let directory = tempfile_directory();
    let writer = Store::open(&directory, options()).unwrap();
    writer.create_container("c", &Default::default()).unwrap();
    writer
        .put("c", b"first", b"v", &Default::default())
        .unwrap();
    let follower = Store::open(
        &directory,
        StoreOptions {
            read_only: true,
            background_compaction_interval: None,
            ..StoreOptions::default()
        },
    )
    .unwrap();
    let seen = follower.version();
    assert_eq!(seen, writer.version());
    // Appended before the fork, not yet read by the follower.
    writer
        .put("c", b"second", b"v", &Default::default())
        .unwrap();
    let status = run_in_child(|| {
        let inherited = child_copy(&follower);
        if inherited.version() != seen {
            return 1;
        }
        let refused = inherited.get("c", b"first", &Default::default());
        if refused.err().map(|error| error.code()) != Some(tenure::ErrorCode::UsedAfterFork) {
            return 2;
        }
        drop(inherited);
        0
    });
    assert_eq!(status, 0, "the child's checks");
    assert_eq!(follower.version(), writer.version());
    follower.close().unwrap();
    writer.close().unwrap();
    std::fs::remove_dir_all(&directory).unwrap();
}
