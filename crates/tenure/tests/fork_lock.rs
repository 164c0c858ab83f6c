//! A forked child that inherited an open store does not keep the store locked: once the parent
//! closes it, the parent (or any process) opens it again for writing while the child lives —
//! also when the child has not run yet, so not its fork handler either.
//!
//! One test in this binary (see `fork.rs`): the children only block on a pipe, in system calls,
//! and `_exit` when the parent closes the pipe's other end.

use tenure::WriteOptions;
use tenure::{ContainerOptions, Durability, ErrorCode, ReadOptions, Store, StoreOptions};

fn options() -> StoreOptions {
    StoreOptions {
        durability: Durability::Sync,
        segment_size_bytes: 1 << 20,
        ..StoreOptions::default()
    }
}

/// How the child is made.
#[derive(Clone, Copy)]
enum Birth {
    /// `fork()`: the child runs the fork handlers, as every forked child does.
    Fork,
    /// A bare `clone(SIGCHLD)`: a fork whose handlers never run, as with a child that the
    /// scheduler has not run yet when the parent closes the store.
    CloneWithoutHandlers,
}

/// Makes a child that waits until the returned descriptor is closed, then exits.
fn waiting_child(birth: Birth) -> (libc::pid_t, i32) {
    let mut pipe = [0i32; 2];
    // SAFETY: a two-element array for pipe's two descriptors.
    assert_eq!(unsafe { libc::pipe(pipe.as_mut_ptr()) }, 0);
    // SAFETY: the child runs only async-signal-safe system calls, then `_exit`s. The bare
    // clone has no new stack: like fork, the child runs on a copy of the parent's.
    let pid = unsafe {
        match birth {
            Birth::Fork => libc::fork(),
            Birth::CloneWithoutHandlers => libc::syscall(
                libc::SYS_clone,
                libc::SIGCHLD as libc::c_long,
                0 as libc::c_long,
                0 as libc::c_long,
                0 as libc::c_long,
                0 as libc::c_long,
            ) as libc::pid_t,
        }
    };
    assert!(pid >= 0, "fork failed");
    if pid == 0 {
        let mut byte = 0u8;
        // SAFETY: the child's copies of the pipe's descriptors; one byte into a local.
        unsafe {
            libc::close(pipe[1]);
            libc::read(pipe[0], (&mut byte as *mut u8).cast(), 1);
            libc::_exit(0);
        }
    }
    // SAFETY: the parent's copy of the read end, which it does not use.
    unsafe { libc::close(pipe[0]) };
    (pid, pipe[1])
}

#[test]
fn the_parent_reopens_a_store_it_closed_while_a_child_that_inherited_it_lives() {
    for birth in [Birth::Fork, Birth::CloneWithoutHandlers] {
        reopen_beside_a_living_child(birth);
    }
}

fn reopen_beside_a_living_child(birth: Birth) {
    let temporary = tenure_testkit::TempDir::new("fork-lock");
    let directory = temporary.path();
    let store = Store::open(directory, options()).unwrap();
    store
        .create_container("c", &ContainerOptions::default())
        .unwrap();
    store
        .put("c", b"before", b"the fork", &WriteOptions::default())
        .unwrap();
    let (child, release_child) = waiting_child(birth);

    // While the parent holds it, the store stays locked against every other open.
    let second = Store::open(directory, options()).map(|_| ()).unwrap_err();
    assert_eq!(second.code(), ErrorCode::StoreLocked);
    store.close().unwrap();

    let reopened = Store::open(directory, options())
        .expect("the child's inherited descriptor must not keep the store locked");
    reopened
        .put("c", b"after", b"the reopen", &WriteOptions::default())
        .unwrap();
    let read = ReadOptions::default();
    assert_eq!(
        reopened.get("c", b"before", &read).unwrap().value,
        Some(b"the fork".to_vec())
    );
    reopened.close().unwrap();

    // SAFETY: closing the parent's write end lets the child exit; then it is reaped.
    let mut status = 0;
    unsafe {
        libc::close(release_child);
        assert_eq!(libc::waitpid(child, &mut status, 0), child);
    }
    assert!(libc::WIFEXITED(status) && libc::WEXITSTATUS(status) == 0);
    let reopened = Store::open(directory, options()).unwrap();
    assert_eq!(
        reopened.get("c", b"after", &read).unwrap().value,
        Some(b"the reopen".to_vec())
    );
    drop(reopened);
}
