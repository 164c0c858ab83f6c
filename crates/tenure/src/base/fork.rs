//! Knowing that a store handle crossed a `fork()`.
//!
//! A forked child holds a copy of every open store: the index as it was at the fork, the log's
//! tail reservation, the durable watermark, a `MAP_SHARED` mapping of the segment files and
//! none of the store's threads. Writing through that copy would place records where the
//! parent writes its own and record a watermark that disagrees with the parent's, so a child
//! that wrote through an inherited handle lost acknowledged writes. The child cannot repair the
//! copy either: any lock another thread of the parent held at the fork stays held forever in
//! the child. So an inherited handle refuses everything with `UsedAfterFork`, and its close
//! touches neither the disk nor any lock: it leaves the engine's memory as it was, to go when
//! the child exits or calls `exec` (every file the store opens is close-on-exec).
//!
//! How it is known: a `pthread_atfork` child handler bumps a process-wide generation, and each
//! store remembers the generation it was opened in. Comparing the two is one relaxed load of a
//! global on every call, where `getpid()` would be a system call. The process id is kept too,
//! for the error's message and for the close path, which also compares it in case a child was
//! made by a raw `clone` that ran no fork handlers.
//!
//! The store's lock (`flock` on its `LOCK` file) belongs to the open file description, which
//! the child's copy of the descriptor shares: the lock would stay held until every child that
//! inherited it exits or calls `exec`, so the parent could not reopen the store after closing
//! it. The child handler therefore points each store's lock descriptor at `/dev/null`
//! (`dup2`), which drops the child's share of the lock and leaves the descriptor number valid
//! for the abandoned handle. Lock descriptors are tracked in a fixed table (opens past its
//! size keep the old behaviour), each with the file's device and inode, which the handler
//! compares (`fstat`) before it replaces anything.

use std::os::unix::fs::MetadataExt;
use std::os::unix::io::AsRawFd;
use std::sync::atomic::{AtomicBool, AtomicI32, AtomicU64, Ordering};
use std::sync::Once;

/// Bumped in every child `fork()` makes, by [`on_fork_in_child`].
static FORK_GENERATION: AtomicU64 = AtomicU64::new(0);

static REGISTER_HANDLER: Once = Once::new();

extern "C" fn on_fork_in_child() {
    // Async-signal-safe: atomics and system calls only, no allocation, no lock.
    release_inherited_locks();
    FORK_GENERATION.fetch_add(1, Ordering::Relaxed);
}

/// How many stores' lock descriptors the child handler can release.
const TRACKED_LOCKS: usize = 64;

/// A store's lock descriptor while it is open. `descriptor` is written last (−1: none), so a
/// reader that sees it sees the identity written before it.
struct TrackedLock {
    claimed: AtomicBool,
    descriptor: AtomicI32,
    device: AtomicU64,
    inode: AtomicU64,
}

static TRACKED: [TrackedLock; TRACKED_LOCKS] = [const {
    TrackedLock {
        claimed: AtomicBool::new(false),
        descriptor: AtomicI32::new(-1),
        device: AtomicU64::new(0),
        inode: AtomicU64::new(0),
    }
}; TRACKED_LOCKS];

/// A lock descriptor tracked for the fork handler, until this drops: drop it before the
/// descriptor is closed, so the handler never touches a number that was reused.
pub(crate) struct TrackedLockDescriptor {
    slot: Option<&'static TrackedLock>,
}

/// Tracks `file`, the store's locked `LOCK` file, for the fork handler.
pub(crate) fn track_lock_descriptor(file: &std::fs::File) -> TrackedLockDescriptor {
    OwningProcess::current();
    let Ok(metadata) = file.metadata() else {
        return TrackedLockDescriptor { slot: None };
    };
    let slot = TRACKED.iter().find(|slot| {
        slot.claimed
            .compare_exchange(false, true, Ordering::Acquire, Ordering::Relaxed)
            .is_ok()
    });
    if let Some(slot) = slot {
        slot.device.store(metadata.dev(), Ordering::Relaxed);
        slot.inode.store(metadata.ino(), Ordering::Relaxed);
        slot.descriptor.store(file.as_raw_fd(), Ordering::Release);
    }
    TrackedLockDescriptor { slot }
}

impl Drop for TrackedLockDescriptor {
    fn drop(&mut self) {
        if let Some(slot) = self.slot {
            slot.descriptor.store(-1, Ordering::Release);
            slot.claimed.store(false, Ordering::Release);
        }
    }
}

/// In the child: points every tracked lock descriptor that still names its lock file at
/// `/dev/null`, dropping the child's share of the parent's locks.
fn release_inherited_locks() {
    let mut null = -1;
    for slot in &TRACKED {
        let descriptor = slot.descriptor.load(Ordering::Acquire);
        if descriptor < 0 || !names_file(descriptor, slot) {
            continue;
        }
        if null < 0 {
            // SAFETY: open is async-signal-safe; the path is a NUL-terminated literal.
            null = unsafe { libc::open(c"/dev/null".as_ptr(), libc::O_RDWR | libc::O_CLOEXEC) };
            if null < 0 {
                return;
            }
        }
        // SAFETY: dup2 and fcntl are async-signal-safe; `descriptor` is open in this process
        // (checked by `names_file`), and keeps its number, now naming /dev/null.
        unsafe {
            if libc::dup2(null, descriptor) >= 0 {
                libc::fcntl(descriptor, libc::F_SETFD, libc::FD_CLOEXEC);
            }
        }
    }
    if null >= 0 {
        // SAFETY: the descriptor this function opened.
        unsafe { libc::close(null) };
    }
}

/// Whether `descriptor` is open and names the file `slot` recorded.
fn names_file(descriptor: i32, slot: &TrackedLock) -> bool {
    // SAFETY: fstat is async-signal-safe and writes only the zeroed struct it is given.
    let mut status: libc::stat = unsafe { std::mem::zeroed() };
    // SAFETY: as above.
    if unsafe { libc::fstat(descriptor, &mut status) } != 0 {
        return false;
    }
    status.st_dev as u64 == slot.device.load(Ordering::Relaxed)
        && status.st_ino as u64 == slot.inode.load(Ordering::Relaxed)
}

/// The process a store was opened in.
#[derive(Debug, Clone, Copy)]
pub(crate) struct OwningProcess {
    generation: u64,
    pid: u32,
}

impl OwningProcess {
    /// The calling process, with the fork handler registered (once per process) before the
    /// generation is read, so no fork after this call goes unseen.
    pub(crate) fn current() -> OwningProcess {
        REGISTER_HANDLER.call_once(|| {
            // SAFETY: registers a handler that only does an atomic add. pthread_atfork fails
            // only with ENOMEM; the pid comparison on close still catches a child then.
            unsafe { libc::pthread_atfork(None, None, Some(on_fork_in_child)) };
        });
        OwningProcess {
            generation: FORK_GENERATION.load(Ordering::Relaxed),
            pid: std::process::id(),
        }
    }

    /// Whether the calling process is a forked child of the owner. The common path: one
    /// relaxed load. A fork happens-before everything the child runs, so a relaxed load in the
    /// child sees its own handler's increment.
    #[inline]
    pub(crate) fn is_inherited(&self) -> bool {
        FORK_GENERATION.load(Ordering::Relaxed) != self.generation
    }

    /// [`Self::is_inherited`], or a different process id: the thorough check, for close.
    pub(crate) fn is_inherited_or_cloned(&self) -> bool {
        self.is_inherited() || std::process::id() != self.pid
    }

    pub(crate) fn pid(&self) -> u32 {
        self.pid
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_opening_process_owns_its_handle() {
        let owner = OwningProcess::current();
        assert!(!owner.is_inherited());
        assert!(!owner.is_inherited_or_cloned());
        assert_eq!(owner.pid(), std::process::id());
    }
}
