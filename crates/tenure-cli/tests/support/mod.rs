//! Running the `tenure` binary from tests.

#![allow(dead_code)]

use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::Mutex;

/// Held while a child is spawned and while a test closes a store it opened in-process.
///
/// A child forked by one test thread holds copies of the test process's file descriptors
/// until it execs — among them a store's LOCK file that another test thread has open, so
/// that thread's store could still look locked to its next `tenure` child after closing.
/// `spawn` returns only once the child has exec'd (and so dropped the copies), so no fork is
/// in flight while a store closes.
static SPAWN: Mutex<()> = Mutex::new(());

fn spawn_lock() -> std::sync::MutexGuard<'static, ()> {
    SPAWN
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner)
}

/// Closes a store opened in the test process (see [`SPAWN`]).
pub fn close(store: tenure::Store) {
    let _spawning = spawn_lock();
    store.close().expect("close");
}

pub struct Run {
    pub code: i32,
    pub stdout: String,
    pub stderr: String,
}

impl Run {
    /// Asserts the exit code, showing the output when it differs.
    #[track_caller]
    pub fn expect(self, code: i32) -> Run {
        assert_eq!(
            self.code, code,
            "exit code\nstdout:\n{}\nstderr:\n{}",
            self.stdout, self.stderr
        );
        self
    }

    pub fn json(&self) -> serde_json::Value {
        serde_json::from_str(self.stdout.trim())
            .unwrap_or_else(|error| panic!("not JSON ({error}): {}", self.stdout))
    }
}

pub fn tenure(args: &[&str]) -> Run {
    tenure_with_stdin(args, None)
}

pub fn tenure_with_stdin(args: &[&str], stdin: Option<&[u8]>) -> Run {
    let spawning = spawn_lock();
    let mut child = Command::new(env!("CARGO_BIN_EXE_tenure"))
        .args(args)
        .stdin(if stdin.is_some() {
            Stdio::piped()
        } else {
            Stdio::null()
        })
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("the tenure binary runs");
    drop(spawning);
    if let Some(bytes) = stdin {
        child
            .stdin
            .take()
            .expect("stdin is piped")
            .write_all(bytes)
            .expect("stdin takes the bytes");
    }
    let output = child.wait_with_output().expect("tenure finishes");
    Run {
        code: output.status.code().unwrap_or(-1),
        stdout: String::from_utf8_lossy(&output.stdout).into_owned(),
        stderr: String::from_utf8_lossy(&output.stderr).into_owned(),
    }
}

/// Starts the tool with stdout and stderr piped, for a test that reads as it runs.
pub fn spawn_piped(args: &[&str]) -> std::process::Child {
    let _spawning = spawn_lock();
    Command::new(env!("CARGO_BIN_EXE_tenure"))
        .args(args)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("the tenure binary runs")
}

/// A fresh, empty scratch directory for one test.
pub fn scratch(name: &str) -> PathBuf {
    let dir = Path::new(env!("CARGO_TARGET_TMPDIR")).join(format!("cli-{name}"));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).expect("scratch directory");
    dir
}

/// A store at `scratch(name)/store` with container `docs` holding `count` items
/// `key-<n>` = `value-<n>`.
pub fn store_with_items(name: &str, count: usize) -> PathBuf {
    let dir = scratch(name).join("store");
    // The store keeps the segment size it was made with; a small one keeps the tests' disk
    // footprint small (the tool's default is 64 MiB, preallocated).
    let options = tenure::StoreOptions {
        segment_size_bytes: 1 << 20,
        ..tenure::StoreOptions::default()
    };
    let store = tenure::Store::open(&dir, options).expect("open");
    store
        .create_container("docs", &tenure::ContainerOptions::default())
        .expect("container");
    for index in 1..=count {
        store
            .put(
                "docs",
                format!("key-{index}").as_bytes(),
                format!("value-{index}").as_bytes(),
                &tenure::WriteOptions::default(),
            )
            .expect("put");
    }
    close(store);
    dir
}

pub fn text(path: &Path) -> String {
    path.to_str().expect("UTF-8 path").to_owned()
}
