//! io_uring on a `sync` store's durable path: the group-commit leader hands the kernel its
//! staged writes and the `fdatasync` of their segments as one linked chain, in one system
//! call, where the plain path makes one `pwrite` per run of records and one `fdatasync` per
//! segment, each a system call of its own (docs/design.md §11, "io_uring").
//!
//! Only the leader submits (one sync at a time), so the ring is never contended; its mutex
//! only makes it `Sync`. Every submission is waited for to its last completion before the
//! call returns: the kernel reads the caller's buffers until then.

use std::io;
use std::os::fd::RawFd;

use io_uring::{opcode, squeue, types, IoUring};
use parking_lot::Mutex;

/// Submission entries: a chain holds at most this many writes and syncs. A group needing more
/// (records in more runs than fit) takes the plain path.
pub(crate) const RING_ENTRIES: usize = 64;

/// Waits for completions interrupted by a signal, or refused for want of kernel resources,
/// are retried this many times before the ring is given up (the chain still waited for).
const MAXIMUM_ENTER_RETRIES: u32 = 1_000;

/// How a `sync` store's group commit reaches the disk.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub enum IoUringUse {
    /// `buffered` stores, read-only opens, and `StoreOptions::io_uring` off: `pwrite` and
    /// `fdatasync` where a sync is needed.
    #[default]
    NotUsed,
    /// Each group's writes and syncs go to the kernel as one io_uring chain.
    Used,
    /// The kernel (or a seccomp policy) refused io_uring; the store uses `pwrite` and
    /// `fdatasync`. The reason is the system's error.
    Refused(String),
}

/// One write of a chain: `bytes` (the records of one run, in order) at `offset` of `file`.
pub(crate) struct RingWrite<'a> {
    pub(crate) file: RawFd,
    pub(crate) offset: u64,
    pub(crate) records: &'a [&'a [u8]],
}

/// Which operation of a chain failed, and how.
#[derive(Debug)]
pub(crate) enum ChainFailure {
    /// The write at this index of the chain's writes (its error, or a short write: `None`).
    Write(usize, Option<io::Error>),
    /// The sync of the file at this index of the chain's syncs.
    Sync(usize, io::Error),
    /// The ring itself failed (now or before): nothing was submitted. Take the plain path.
    Ring,
}

pub(crate) struct SyncRing {
    inner: Mutex<RingInner>,
}

struct RingInner {
    ring: IoUring,
    /// Why a chain was left queued, never taken by the kernel: the ring is not used again.
    broken: Option<String>,
}

impl SyncRing {
    /// A ring, or the system's reason for refusing one.
    pub(crate) fn new() -> Result<SyncRing, String> {
        let ring = IoUring::new(RING_ENTRIES as u32).map_err(|error| error.to_string())?;
        let mut probe = io_uring::Probe::new();
        ring.submitter()
            .register_probe(&mut probe)
            .map_err(|error| format!("probe: {error}"))?;
        for (code, name) in [
            (opcode::Writev::CODE, "writev"),
            (opcode::Fsync::CODE, "fsync"),
        ] {
            if !probe.is_supported(code) {
                return Err(format!("the kernel's io_uring has no {name}"));
            }
        }
        Ok(SyncRing {
            inner: Mutex::new(RingInner { ring, broken: None }),
        })
    }

    /// Why the ring was given up after it had worked, if it was.
    pub(crate) fn given_up(&self) -> Option<String> {
        self.inner.lock().broken.clone()
    }

    /// Writes every write, then syncs (`fdatasync`) every file of `syncs`, as one linked chain:
    /// a failed or short write cancels everything after it. Returns once the kernel has
    /// completed (or cancelled) the whole chain.
    pub(crate) fn write_and_sync(
        &self,
        writes: &[RingWrite<'_>],
        syncs: &[RawFd],
    ) -> Result<(), ChainFailure> {
        let total = writes.len() + syncs.len();
        assert!(total > 0 && total <= RING_ENTRIES, "a chain fits the ring");
        // The iovecs live until the chain completes: the kernel reads them at submission or
        // later.
        let iovecs: Vec<Vec<libc::iovec>> = writes
            .iter()
            .map(|write| {
                write
                    .records
                    .iter()
                    .map(|bytes| libc::iovec {
                        iov_base: bytes.as_ptr().cast_mut().cast(),
                        iov_len: bytes.len(),
                    })
                    .collect()
            })
            .collect();
        let mut inner = self.inner.lock();
        let RingInner { ring, broken } = &mut *inner;
        if broken.is_some() {
            return Err(ChainFailure::Ring);
        }
        let mut entries = Vec::with_capacity(total);
        for (position, (write, iovec)) in writes.iter().zip(&iovecs).enumerate() {
            let entry = opcode::Writev::new(
                types::Fd(write.file),
                iovec.as_ptr(),
                u32::try_from(iovec.len()).expect("a run's records fit u32"),
            )
            .offset(write.offset)
            .build()
            .user_data(position as u64);
            entries.push(entry);
        }
        for (position, file) in syncs.iter().enumerate() {
            let entry = opcode::Fsync::new(types::Fd(*file))
                .flags(types::FsyncFlags::DATASYNC)
                .build()
                .user_data((writes.len() + position) as u64);
            entries.push(entry);
        }
        let last = entries.len() - 1;
        for entry in &mut entries[..last] {
            *entry = entry.clone().flags(squeue::Flags::IO_LINK);
        }
        // SAFETY: every buffer and iovec the entries point to outlives the chain: this
        // function returns only after the kernel has completed all of them (below).
        unsafe {
            ring.submission()
                .push_multiple(&entries)
                .map_err(|_| ChainFailure::Ring)?;
        }
        let expected: Vec<usize> = writes
            .iter()
            .map(|write| write.records.iter().map(|bytes| bytes.len()).sum())
            .collect();
        complete_chain(ring, broken, total, &expected)
    }
}

/// Submits the pushed chain and reaps its `total` completions; `expected` is each write's
/// length. The first failure in chain order is reported. `broken` is set when the chain could
/// not be handed to the kernel: its entries stay queued, so the ring must never submit again.
fn complete_chain(
    ring: &mut IoUring,
    broken: &mut Option<String>,
    total: usize,
    expected: &[usize],
) -> Result<(), ChainFailure> {
    let mut results: Vec<Option<i32>> = vec![None; total];
    let mut completed = 0;
    let mut failures = 0;
    while completed < total {
        if let Err(error) = ring.submit_and_wait(total - completed) {
            failures += 1;
            let transient = matches!(
                error.raw_os_error(),
                Some(libc::EINTR | libc::EAGAIN | libc::EBUSY)
            );
            let none_taken = ring.submission().len() == total;
            if none_taken && (!transient || failures > MAXIMUM_ENTER_RETRIES) {
                *broken = Some(format!("io_uring_enter: {error}"));
                return Err(ChainFailure::Ring);
            }
            if failures > MAXIMUM_ENTER_RETRIES {
                // The kernel holds the chain and completes it whatever happens here; leaving
                // would free buffers it still reads, so wait on, without spinning.
                std::thread::sleep(std::time::Duration::from_millis(1));
            }
            continue;
        }
        for entry in ring.completion() {
            let position = entry.user_data() as usize;
            assert!(position < total, "a completion of this chain");
            results[position] = Some(entry.result());
            completed += 1;
        }
    }
    first_failure(&results, expected)
}

fn first_failure(results: &[Option<i32>], expected: &[usize]) -> Result<(), ChainFailure> {
    for (position, result) in results.iter().enumerate() {
        let result = result.expect("every entry completed");
        let error = (result < 0).then(|| io::Error::from_raw_os_error(-result));
        if let Some(length) = expected.get(position) {
            if result < 0 || result as usize != *length {
                return Err(ChainFailure::Write(position, error));
            }
        } else if let Some(error) = error {
            return Err(ChainFailure::Sync(position - expected.len(), error));
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::fd::AsRawFd;
    use std::os::unix::fs::FileExt;

    fn ring_or_skip() -> Option<SyncRing> {
        match SyncRing::new() {
            Ok(ring) => Some(ring),
            Err(reason) => {
                eprintln!("io_uring refused here ({reason}): skipped");
                None
            }
        }
    }

    #[test]
    fn a_chain_writes_runs_and_syncs() {
        let Some(ring) = ring_or_skip() else { return };
        let directory = tenure_testkit::TempDir::new("ring");
        std::fs::create_dir_all(directory.path()).unwrap();
        let path = directory.path().join("file");
        let file = std::fs::File::options()
            .create(true)
            .read(true)
            .write(true)
            .truncate(true)
            .open(&path)
            .unwrap();
        let (first, second, third) = (b"hello ".as_slice(), b"ring".as_slice(), b"!".as_slice());
        let run = [first, second];
        let other = [third];
        let writes = [
            RingWrite {
                file: file.as_raw_fd(),
                offset: 0,
                records: &run,
            },
            RingWrite {
                file: file.as_raw_fd(),
                offset: 20,
                records: &other,
            },
        ];
        ring.write_and_sync(&writes, &[file.as_raw_fd()]).unwrap();
        let mut read = [0u8; 21];
        file.read_exact_at(&mut read, 0).unwrap();
        assert_eq!(&read[..10], b"hello ring");
        assert_eq!(read[20], b'!');
    }

    #[test]
    fn a_failed_write_cancels_the_sync_after_it() {
        let Some(ring) = ring_or_skip() else { return };
        let directory = tenure_testkit::TempDir::new("ring-fail");
        std::fs::create_dir_all(directory.path()).unwrap();
        let path = directory.path().join("file");
        std::fs::write(&path, b"").unwrap();
        // Opened read-only: the write fails with EBADF, and the linked sync is cancelled.
        let file = std::fs::File::open(&path).unwrap();
        let bytes = [b"x".as_slice()];
        let writes = [RingWrite {
            file: file.as_raw_fd(),
            offset: 0,
            records: &bytes,
        }];
        match ring.write_and_sync(&writes, &[file.as_raw_fd()]) {
            Err(ChainFailure::Write(0, Some(error))) => {
                assert_eq!(error.raw_os_error(), Some(libc::EBADF))
            }
            other => panic!("the write fails first: {other:?}"),
        }
        // The ring is still usable afterwards.
        let writable = std::fs::File::options().write(true).open(&path).unwrap();
        let writes = [RingWrite {
            file: writable.as_raw_fd(),
            offset: 0,
            records: &bytes,
        }];
        ring.write_and_sync(&writes, &[writable.as_raw_fd()])
            .unwrap();
        assert_eq!(std::fs::read(&path).unwrap(), b"x");
    }
}
