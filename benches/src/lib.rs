//! Helpers for tenure's criterion benchmarks (`benches/log.rs`): stores in a temporary
//! directory, the raw-file baselines they are measured against, and a way to run one job on
//! several threads and time it as a whole.
//!
//! Every baseline works in the same directory as the store it is compared with, so both meet
//! the same disk and file system.

use std::fs::{File, OpenOptions};
use std::io::{self, Read};
use std::os::unix::fs::FileExt;
use std::os::unix::io::AsRawFd;
use std::path::{Path, PathBuf};
use std::sync::{mpsc, Arc, Barrier};
use std::time::{Duration, Instant};

use tenure::internals::{FileStorage, Log, LogOptions, Storage};
use tenure::Durability;

/// Payload bytes of the small records the append benchmarks write.
pub const SMALL_RECORD_BYTES: usize = 200;
/// Bytes a 200 B record takes in the log: a 24-byte header and the payload, padded to 8.
pub const SMALL_RECORD_STRIDE: u64 = 224;

/// The options of every benchmark store: the default 64 MiB segments.
pub fn log_options(durability: Durability) -> LogOptions {
    LogOptions {
        durability,
        ..LogOptions::default()
    }
}

/// Opens (or creates) the store in `directory`, ignoring whatever it already holds.
pub fn open_log(directory: &Path, durability: Durability) -> Log {
    let storage: Arc<dyn Storage> = Arc::new(FileStorage::new(directory));
    Log::open(storage, &log_options(durability), &mut |_| Ok(()))
        .unwrap_or_else(|error| panic!("open {}: {error}", directory.display()))
}

/// Opens a store in `directory` (which must not exist yet) whose first segment has its first
/// 32 MiB written before the appends start: it appends one record, closes the store, writes
/// zeroes from the tail to 32 MiB, syncs them and drops them from the page cache, and reopens
/// (the zeroes past the tail are a torn tail, cut at the open). Appends to it then meet no
/// unwritten (fallocated) block for 32 MiB, which tells how much of a durable append's cost is
/// the unwritten-extent conversion.
pub fn open_log_with_written_segment(directory: &Path, durability: Durability) -> Log {
    let log = open_log(directory, durability);
    log.append(b"first record, before the segment is zeroed")
        .expect("append the first record");
    let tail = log.tail_offset();
    log.close().expect("close the store");
    drop(log);
    let segments = segment_files(directory);
    assert_eq!(segments.len(), 1, "a fresh store has one segment");
    let file = OpenOptions::new()
        .write(true)
        .open(&segments[0])
        .expect("open the segment");
    // The first 32 MiB: more than a benchmark run appends.
    let length = file
        .metadata()
        .expect("stat the segment")
        .len()
        .min(32 << 20);
    let zeroes = vec![0u8; 1 << 20];
    let mut offset = tail;
    while offset < length {
        let size = zeroes.len().min((length - offset) as usize);
        file.write_all_at(&zeroes[..size], offset)
            .expect("zero the segment");
        offset += size as u64;
    }
    file.sync_all().expect("sync the zeroed segment");
    // SAFETY: posix_fadvise on a descriptor we own.
    unsafe {
        libc::posix_fadvise(
            file.as_raw_fd(),
            0,
            length as i64,
            libc::POSIX_FADV_DONTNEED,
        )
    };
    drop(file);
    open_log(directory, durability)
}

/// How a baseline file starts out.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Prepared {
    /// `posix_fallocate`d, as tenure's segments are: on ext4/xfs its blocks are unwritten
    /// extents, and the first write to each one changes file-system metadata.
    Fallocated,
    /// Every byte written (zeroes) and synced beforehand, then dropped from the page cache:
    /// later writes change only data. (Dropped because the 1 MiB writes that fill it leave
    /// large folios in the page cache; a write fault through a mapping then dirties the whole
    /// folio and every `fdatasync` writes all of it back — ~5× slower here, an artefact that
    /// tenure's segments, filled record by record, do not meet.)
    Prewritten,
}

/// How a baseline writes its bytes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum WritePath {
    /// `pwrite(2)`.
    Pwrite,
    /// A copy into a writable shared mapping, as tenure's appenders do.
    Mmap,
}

/// The raw baseline of a durable append: write `SMALL_RECORD_BYTES` at the next multiple of
/// the record stride, then `fdatasync`. No header, no checksum, no coordination.
pub struct RawAppender {
    file: File,
    map: Option<memmap2::MmapMut>,
    prepared: Prepared,
    length: u64,
    offset: u64,
    stride: u64,
}

impl RawAppender {
    pub fn create(
        path: &Path,
        length: u64,
        stride: u64,
        prepared: Prepared,
        path_kind: WritePath,
    ) -> io::Result<RawAppender> {
        let file = OpenOptions::new()
            .read(true)
            .write(true)
            .create(true)
            .truncate(true)
            .open(path)?;
        prepare(&file, length, prepared)?;
        let map = match path_kind {
            WritePath::Pwrite => None,
            // SAFETY: the file is ours, `length` bytes long, and is not truncated while mapped
            // (the benchmark owns it; `rewind` remaps after truncating).
            WritePath::Mmap => Some(unsafe {
                memmap2::MmapOptions::new()
                    .len(length as usize)
                    .map_mut(&file)?
            }),
        };
        Ok(RawAppender {
            file,
            map,
            prepared,
            length,
            offset: 0,
            stride,
        })
    }

    /// Writes `bytes` at the next offset and makes them durable.
    pub fn append(&mut self, bytes: &[u8]) -> io::Result<()> {
        if self.offset + self.stride > self.length {
            self.rewind()?;
        }
        match &mut self.map {
            Some(map) => {
                let at = self.offset as usize;
                map[at..at + bytes.len()].copy_from_slice(bytes);
            }
            None => self.file.write_all_at(bytes, self.offset)?,
        }
        self.file.sync_data()?;
        self.offset += self.stride;
        Ok(())
    }

    /// Starts over at offset 0; a fallocated file is made fresh again first, so every write
    /// keeps meeting unwritten blocks.
    fn rewind(&mut self) -> io::Result<()> {
        if self.prepared == Prepared::Fallocated {
            let mapped = self.map.take().is_some();
            self.file.set_len(0)?;
            prepare(&self.file, self.length, Prepared::Fallocated)?;
            if mapped {
                // SAFETY: as in `create`.
                self.map = Some(unsafe {
                    memmap2::MmapOptions::new()
                        .len(self.length as usize)
                        .map_mut(&self.file)?
                });
            }
        }
        self.offset = 0;
        Ok(())
    }
}

fn prepare(file: &File, length: u64, prepared: Prepared) -> io::Result<()> {
    match prepared {
        Prepared::Fallocated => {
            // SAFETY: posix_fallocate on a descriptor we own; it returns the error number.
            let result = unsafe { libc::posix_fallocate(file.as_raw_fd(), 0, length as i64) };
            if result != 0 {
                return Err(io::Error::from_raw_os_error(result));
            }
        }
        Prepared::Prewritten => {
            let chunk = vec![0u8; 1 << 20];
            let mut offset = 0;
            while offset < length {
                let size = chunk.len().min((length - offset) as usize);
                file.write_all_at(&chunk[..size], offset)?;
                offset += size as u64;
            }
            file.sync_all()?;
            // SAFETY: posix_fadvise on a descriptor we own; it returns the error number.
            let result = unsafe {
                libc::posix_fadvise(
                    file.as_raw_fd(),
                    0,
                    length as i64,
                    libc::POSIX_FADV_DONTNEED,
                )
            };
            if result != 0 {
                return Err(io::Error::from_raw_os_error(result));
            }
        }
    }
    file.sync_all()
}

/// Runs `job(thread, count)` on `threads` threads that share `iterations` between them, and
/// returns the wall time from the moment all of them are ready until the last one is done
/// (thread start-up is not timed).
pub fn time_on_threads<F>(threads: usize, iterations: u64, job: F) -> Duration
where
    F: Fn(usize, u64) + Sync,
{
    let barrier = Barrier::new(threads + 1);
    let share = iterations / threads as u64;
    let extra = iterations % threads as u64;
    std::thread::scope(|scope| {
        let mut handles = Vec::with_capacity(threads);
        for thread in 0..threads {
            let count = share + u64::from((thread as u64) < extra);
            let barrier = &barrier;
            let job = &job;
            handles.push(scope.spawn(move || {
                barrier.wait();
                job(thread, count);
            }));
        }
        barrier.wait();
        let start = Instant::now();
        for handle in handles {
            handle.join().expect("a benchmark thread panicked");
        }
        start.elapsed()
    })
}

/// `threads` worker threads that live as long as the pool, so that timing a job on them measures
/// the job and not thread start-up (spawning 16 threads per criterion sample was found to
/// dominate short samples). Create it inside `std::thread::scope`.
pub struct WorkerPool<'scope> {
    jobs: Vec<mpsc::Sender<u64>>,
    done: mpsc::Receiver<()>,
    _workers: Vec<std::thread::ScopedJoinHandle<'scope, ()>>,
}

impl<'scope> WorkerPool<'scope> {
    /// Starts `threads` workers; worker `thread` runs `job(thread, count)` for each `count` it
    /// is handed.
    pub fn new<'env, F>(
        scope: &'scope std::thread::Scope<'scope, 'env>,
        threads: usize,
        job: &'scope F,
    ) -> WorkerPool<'scope>
    where
        F: Fn(usize, u64) + Sync,
    {
        let (done_sender, done) = mpsc::channel();
        let mut jobs = Vec::with_capacity(threads);
        let mut workers = Vec::with_capacity(threads);
        for thread in 0..threads {
            let (sender, receiver) = mpsc::channel::<u64>();
            let done_sender = done_sender.clone();
            jobs.push(sender);
            workers.push(scope.spawn(move || {
                for count in receiver {
                    job(thread, count);
                    if done_sender.send(()).is_err() {
                        return;
                    }
                }
            }));
        }
        WorkerPool {
            jobs,
            done,
            _workers: workers,
        }
    }

    /// Shares `iterations` between the workers and returns the wall time until all are done.
    pub fn time(&self, iterations: u64) -> Duration {
        let threads = self.jobs.len() as u64;
        let started = Instant::now();
        for (thread, job) in self.jobs.iter().enumerate() {
            let count = iterations / threads + u64::from((thread as u64) < iterations % threads);
            job.send(count).expect("a worker is gone");
        }
        for _ in 0..threads {
            self.done.recv().expect("a worker is gone");
        }
        started.elapsed()
    }
}

/// Fills a fresh store in `directory` with `records` records of `payload_bytes` each
/// (buffered appends from one thread), then closes it.
pub fn build_log(directory: &Path, records: u64, payload_bytes: usize) {
    let log = open_log(directory, Durability::Buffered);
    let mut payload = vec![0u8; payload_bytes];
    for index in 0..records {
        payload[..8].copy_from_slice(&index.to_le_bytes());
        log.append(&payload).expect("append while building the log");
    }
    log.close().expect("close the built log");
}

/// The segment files of the store in `directory`, in log order.
pub fn segment_files(directory: &Path) -> Vec<PathBuf> {
    let mut paths: Vec<PathBuf> = std::fs::read_dir(directory)
        .expect("list the store")
        .map(|entry| entry.expect("list the store").path())
        .filter(|path| {
            path.file_name()
                .and_then(|name| name.to_str())
                .is_some_and(|name| name.starts_with("segment-") && name.ends_with(".log"))
        })
        .collect();
    paths.sort();
    paths
}

/// Reads every file in `paths` start to end with `read(2)` into `buffer`; returns the bytes
/// read and a byte of each buffer-full, so the reads cannot be optimised away.
pub fn read_sequentially(paths: &[PathBuf], buffer: &mut [u8]) -> (u64, u64) {
    let mut total = 0u64;
    let mut touched = 0u64;
    for path in paths {
        let mut file = File::open(path).expect("open a segment file");
        loop {
            let read = file.read(buffer).expect("read a segment file");
            if read == 0 {
                break;
            }
            total += read as u64;
            touched = touched.wrapping_add(u64::from(buffer[read - 1]));
        }
    }
    (total, touched)
}

/// The side-by-side comparison with LMDB, redb, sled, fjall, SQLite and redis-server
/// (`src/bin/compare.rs`). Needs the `peers` feature.
#[cfg(feature = "peers")]
pub mod compare;
