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

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Once;

/// Bumped in every child `fork()` makes, by [`on_fork_in_child`].
static FORK_GENERATION: AtomicU64 = AtomicU64::new(0);

static REGISTER_HANDLER: Once = Once::new();

extern "C" fn on_fork_in_child() {
    // Async-signal-safe: one atomic add, no allocation, no lock.
    FORK_GENERATION.fetch_add(1, Ordering::Relaxed);
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
