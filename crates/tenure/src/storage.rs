//! The storage trait the log runs on, and its real-file implementation.
//!
//! Two implementations exist: [`FileStorage`] here, and the simulated disk of
//! `tenure-testkit`, which keeps unsynced bytes apart so a test can "lose power".
//! The contract both keep:
//! - a file is grown only by [`StorageFile::allocate`] or [`StorageFile::grow_sparse`]; reads
//!   and writes stay inside its length, and writes through a mapping only inside allocated
//!   ranges;
//! - bytes written (through `write_at` or a mapping) are durable only after `sync_data` returns
//!   `Ok`; before that any subset of them, at sector granularity, may survive a power loss;
//! - creating and removing files is made durable by `sync_directory`.

use std::any::Any;
use std::fs::{File, OpenOptions};
use std::io;
use std::os::unix::fs::{DirBuilderExt, FileExt, OpenOptionsExt};
use std::os::unix::io::AsRawFd;
use std::path::{Path, PathBuf};
use std::sync::Arc;

/// A directory of files.
pub trait Storage: Send + Sync + 'static {
    /// The directory, for messages.
    fn path(&self) -> &Path;
    /// Creates the directory if it is missing.
    fn create_directory(&self) -> io::Result<()>;
    /// Takes the store's exclusive lock; `Ok(None)` when someone else holds it. The lock lasts
    /// as long as the returned guard.
    fn try_lock(&self) -> io::Result<Option<Box<dyn Any + Send + Sync>>>;
    /// Names of the files in the directory.
    fn list(&self) -> io::Result<Vec<String>>;
    /// Opens a file, creating an empty one when `create` is set.
    fn open(&self, name: &str, create: bool) -> io::Result<Arc<dyn StorageFile>>;
    /// Opens an existing file for reading only: its mappings are read-only, and no write or
    /// allocation through it is attempted (a read-only open of a store).
    fn open_read_only(&self, name: &str) -> io::Result<Arc<dyn StorageFile>> {
        self.open(name, false)
    }
    fn remove(&self, name: &str) -> io::Result<()>;
    /// Gives file `from` the name `to`, replacing any file of that name, in one step.
    fn rename(&self, from: &str, to: &str) -> io::Result<()>;
    /// Makes file creations and removals durable.
    fn sync_directory(&self) -> io::Result<()>;
    /// Bytes the device under the store can still give this process, where it can tell
    /// (`statvfs`'s `f_bavail`); `None` where it cannot. Asked before the log allocates space
    /// for ordinary writes, so that the store's reserve stays free (docs/design.md §6 "A full disk").
    fn free_bytes(&self) -> io::Result<Option<u64>> {
        Ok(None)
    }
}

/// One file of a [`Storage`].
pub trait StorageFile: Send + Sync {
    fn length(&self) -> io::Result<u64>;
    /// Reserves space on the device for bytes `offset..offset + length`, growing the file when
    /// it ends before them, so a later write through a mapping there can never meet a full
    /// disk (posix_fallocate).
    fn allocate(&self, offset: u64, length: u64) -> io::Result<()>;
    /// Grows the file to `length` bytes without reserving space: the new bytes read as zeros,
    /// and must be allocated before anything is written to them through a mapping.
    fn grow_sparse(&self, length: u64) -> io::Result<()>;
    fn read_at(&self, buffer: &mut [u8], offset: u64) -> io::Result<()>;
    fn write_at(&self, buffer: &[u8], offset: u64) -> io::Result<()>;
    /// Writes `parts`, one after the other, from `offset` on: one `pwritev` on a real file.
    fn write_vectored_at(&self, parts: &[&[u8]], offset: u64) -> io::Result<()> {
        let mut at = offset;
        for part in parts {
            self.write_at(part, at)?;
            at += part.len() as u64;
        }
        Ok(())
    }
    /// fdatasync: every byte written before the call is durable once it returns `Ok`.
    fn sync_data(&self) -> io::Result<()>;
    /// A writable shared mapping of the first `length` bytes (already allocated).
    fn map(&self, length: usize) -> io::Result<Mapping>;
    /// The descriptor of a real, writable file, for io_uring; `None` where there is none
    /// (a simulated disk) or writes are not allowed.
    fn descriptor(&self) -> Option<std::os::fd::RawFd> {
        None
    }
}

/// The system's page size (4 KiB on x86-64; 16 or 64 KiB on some ARM systems).
fn page_bytes() -> usize {
    static PAGE_BYTES: std::sync::OnceLock<usize> = std::sync::OnceLock::new();
    *PAGE_BYTES.get_or_init(|| {
        // SAFETY: sysconf has no preconditions.
        let reported = unsafe { libc::sysconf(libc::_SC_PAGESIZE) };
        usize::try_from(reported)
            .ok()
            .filter(|bytes| bytes.is_power_of_two())
            .unwrap_or(4096)
    })
}

/// A writable mapping of a file. The bytes stay valid while the mapping lives.
pub struct Mapping {
    pointer: *mut u8,
    length: usize,
    /// A shared mapping of a real file, whose page table entries may be dropped at any time
    /// without losing a byte (`release_page_table_entries`). Not so for plain memory.
    shared_file: bool,
    _owner: Box<dyn Any + Send + Sync>,
}

// SAFETY: the mapping is plain shared memory; who may write which range is the log's
// business (each appender writes only the range it reserved).
unsafe impl Send for Mapping {}
unsafe impl Sync for Mapping {}

impl Mapping {
    /// # Safety
    /// `pointer..pointer+length` must stay valid, and not move, for as long as `owner` lives.
    pub unsafe fn new(
        pointer: *mut u8,
        length: usize,
        owner: Box<dyn Any + Send + Sync>,
    ) -> Mapping {
        Mapping {
            pointer,
            length,
            shared_file: false,
            _owner: owner,
        }
    }

    /// # Safety
    /// As for [`Mapping::new`], and `pointer..pointer+length` must be a `MAP_SHARED` mapping
    /// of a file.
    pub unsafe fn of_shared_file(
        pointer: *mut u8,
        length: usize,
        owner: Box<dyn Any + Send + Sync>,
    ) -> Mapping {
        Mapping {
            shared_file: true,
            // SAFETY: the caller's promise.
            ..unsafe { Mapping::new(pointer, length, owner) }
        }
    }

    /// Drops this process's page table entries for bytes `from..to` of a shared file mapping
    /// (plain memory is left alone), in whole pages: from the page holding `from` to the last
    /// page that ends by `to`. The pages stay in the page cache, dirty if they were, and a
    /// later access maps them again.
    ///
    /// Why: write-back cleans a page by write-protecting every entry that maps it, one TLB
    /// shootdown (an interrupt to every CPU running the process) per page. Dropping a written
    /// range's entries first costs one shootdown for the range. Measured on buffered 200 B
    /// appends from 2 threads with the 200 ms background flush: the flusher spent most of its
    /// CPU waiting on those interrupts, and appends ran 2.4–2.8 M/s against 3.3–3.7 M/s with no
    /// flush at all.
    pub fn release_page_table_entries(&self, from: usize, to: usize) {
        assert!(from <= to && to <= self.length);
        let page_bytes = page_bytes();
        let (first, end) = (from / page_bytes * page_bytes, to / page_bytes * page_bytes);
        if !self.shared_file || end <= first {
            return;
        }
        // SAFETY: a page-aligned range inside a shared file mapping this value owns;
        // MADV_DONTNEED on a shared file mapping keeps the data (dirty bits move to the pages).
        unsafe {
            libc::madvise(
                self.pointer.add(first).cast(),
                end - first,
                libc::MADV_DONTNEED,
            );
        }
    }

    pub fn pointer(&self) -> *mut u8 {
        self.pointer
    }

    /// Faults the pages of `offset..offset + length` in for writing, so an append into them
    /// takes no page fault at all. The pages are dirtied with the zeros they hold, so
    /// write-back writes them once more than needed: at most the allocation step ahead of the
    /// tail. Measured against faulting them in for reading (which left each page a write
    /// fault): 200 B buffered appends went from 1.15 to 1.50 M/s on 2 threads, and from 2.1 to
    /// 2.6 M/s on one. In `sync` stores, writing the zeros back turns the file system's
    /// unwritten (fallocated) extents into written ones ahead of the appends: otherwise the
    /// first record in each new block makes its fdatasync commit the ext4 journal too. 3,400 B
    /// records with an fdatasync each went from 9,100 to 14,200/s, and 16 writers of 200 B
    /// from 82,000 to 96,000/s (`group` probe, Linux 6.18). Kernels before 5.14 refuse the
    /// advice; that only costs speed.
    pub fn prefault_for_writing(&self, offset: usize, length: usize) {
        self.advise_range(offset, length, libc::MADV_POPULATE_WRITE);
    }

    /// Brings the pages of `offset..offset + length` into the page cache and maps them for
    /// reading, without dirtying them. Why: a fault on a page the page cache lacks runs
    /// read-ahead in the faulting thread, and for the fallocated space ahead of a log's tail
    /// read-ahead means zero-filling its whole window (`read_ahead_kb`: 8 MiB here) then and
    /// there. Done by the preparer ahead of the appends, the appender never meets that: with
    /// only the pages right ahead of the tail faulted in (`prefault_for_writing`), the
    /// appender overtook the preparer whenever write-back held it up, and took 4–6 faults of
    /// over 10 ms per 500,000 puts (Linux 6.18, ext4). Kernels before 5.14 refuse the
    /// advice; that only costs speed.
    pub fn prefault_for_reading(&self, offset: usize, length: usize) {
        self.advise_range(offset, length, libc::MADV_POPULATE_READ);
    }

    /// `madvise` on `offset..offset + length`, which starts on a page; the result is ignored
    /// (advice only).
    fn advise_range(&self, offset: usize, length: usize, advice: libc::c_int) {
        assert!(offset % 4096 == 0 && offset + length <= self.length);
        // SAFETY: advice on a page-aligned range inside a mapping this value owns.
        unsafe {
            libc::madvise(self.pointer.add(offset).cast(), length, advice);
        }
    }

    /// Asks for huge pages on this mapping (`buffered` stores): read-ahead then fills the
    /// page cache with 2 MiB folios, and the mapping maps them whole, so a random read of a
    /// value misses the TLB far less. In this VM a random read through 4 KiB pages now and
    /// then also stalls for 0.1–1 ms (a scratch probe of 5 random reads over 256 MiB: 600–750
    /// stalls per 500,000 rounds in 4 KiB pages, 13–40 in huge ones). Measured on the kv
    /// harness's tenure child, 3 interleaved pairs: get 0.80 → 0.74 µs, 10-entry scan 2.27 →
    /// 2.03 µs. Not for `sync` stores, whose appends want small folios
    /// (`advise_no_read_ahead`).
    pub fn advise_huge_pages(&self) {
        if !self.shared_file {
            return;
        }
        // SAFETY: advice on a mapping this value owns, over its exact range.
        unsafe {
            libc::madvise(self.pointer.cast(), self.length, libc::MADV_HUGEPAGE);
        }
    }

    /// Turns read-ahead off for faults on this mapping (`sync` stores). Read-ahead fills the
    /// page cache with large folios (ext4 has them since Linux 6.16); a write through the map
    /// dirties its whole folio, and every fdatasync then writes the folio in full. Appending
    /// 3,400 B records with an fdatasync each, syncs fell from about 10,000/s to 1,200/s once
    /// the writes were 32 MiB into a segment (Linux 6.18, ext4; pwrite, or this advice, kept
    /// 10,000/s to the end). With it, a fault brings one page, and a sync writes what changed.
    pub fn advise_no_read_ahead(&self) {
        // SAFETY: advice on a mapping this value owns, over its exact range.
        unsafe {
            libc::madvise(self.pointer.cast(), self.length, libc::MADV_RANDOM);
        }
    }

    pub fn length(&self) -> usize {
        self.length
    }
}

/// Real files in a directory.
#[derive(Debug)]
pub struct FileStorage {
    directory: PathBuf,
}

impl FileStorage {
    pub fn new(directory: impl Into<PathBuf>) -> FileStorage {
        FileStorage {
            directory: directory.into(),
        }
    }
}

struct FlockGuard {
    // Dropped first: the fork handler stops tracking the descriptor before it is closed.
    _tracked: crate::base::fork::TrackedLockDescriptor,
    file: File,
    locker: crate::base::fork::OwningProcess,
}

impl Drop for FlockGuard {
    fn drop(&mut self) {
        // Unlocked explicitly, not only by the close: a forked child that has not run yet (so
        // not its fork handler either) still shares the lock's open file description, and
        // closing this descriptor alone would leave the store locked until the child runs.
        // Never in a child: unlocking the shared description there would release the lock of
        // the parent, which still writes.
        if !self.locker.is_inherited_or_cloned() {
            // SAFETY: flock on the descriptor this guard owns; a failure leaves the close to
            // release the lock, as before.
            unsafe { libc::flock(self.file.as_raw_fd(), libc::LOCK_UN) };
        }
    }
}

impl Storage for FileStorage {
    fn path(&self) -> &Path {
        &self.directory
    }

    fn create_directory(&self) -> io::Result<()> {
        std::fs::DirBuilder::new()
            .recursive(true)
            .mode(0o700)
            .create(&self.directory)
    }

    fn try_lock(&self) -> io::Result<Option<Box<dyn Any + Send + Sync>>> {
        let file = OpenOptions::new()
            .read(true)
            .write(true)
            .create(true)
            .truncate(false)
            .mode(0o600)
            .open(self.directory.join("LOCK"))?;
        // SAFETY: flock on a file descriptor we own. The lock belongs to this open file
        // description, so a second open in the same process is refused too.
        let result = unsafe { libc::flock(file.as_raw_fd(), libc::LOCK_EX | libc::LOCK_NB) };
        if result == 0 {
            return Ok(Some(Box::new(FlockGuard {
                _tracked: crate::base::fork::track_lock_descriptor(&file),
                file,
                locker: crate::base::fork::OwningProcess::current(),
            })));
        }
        let error = io::Error::last_os_error();
        if error.raw_os_error() == Some(libc::EWOULDBLOCK) {
            Ok(None)
        } else {
            Err(error)
        }
    }

    fn list(&self) -> io::Result<Vec<String>> {
        let mut names = Vec::new();
        for entry in std::fs::read_dir(&self.directory)? {
            if let Some(name) = entry?.file_name().to_str() {
                names.push(name.to_owned());
            }
        }
        Ok(names)
    }

    fn open(&self, name: &str, create: bool) -> io::Result<Arc<dyn StorageFile>> {
        let file = OpenOptions::new()
            .read(true)
            .write(true)
            .create(create)
            .truncate(false)
            .mode(0o600)
            .open(self.directory.join(name))?;
        Ok(Arc::new(RealFile {
            file,
            writable: true,
        }))
    }

    fn open_read_only(&self, name: &str) -> io::Result<Arc<dyn StorageFile>> {
        let file = OpenOptions::new()
            .read(true)
            .open(self.directory.join(name))?;
        Ok(Arc::new(RealFile {
            file,
            writable: false,
        }))
    }

    fn remove(&self, name: &str) -> io::Result<()> {
        std::fs::remove_file(self.directory.join(name))
    }

    fn rename(&self, from: &str, to: &str) -> io::Result<()> {
        std::fs::rename(self.directory.join(from), self.directory.join(to))
    }

    fn sync_directory(&self) -> io::Result<()> {
        File::open(&self.directory)?.sync_all()
    }

    fn free_bytes(&self) -> io::Result<Option<u64>> {
        let path = std::ffi::CString::new(self.directory.as_os_str().as_encoded_bytes())
            .map_err(|_| io::Error::new(io::ErrorKind::InvalidInput, "a NUL byte in the path"))?;
        // SAFETY: statvfs writes into the zeroed struct we own; the path is NUL-terminated.
        let mut statistics: libc::statvfs = unsafe { std::mem::zeroed() };
        if unsafe { libc::statvfs(path.as_ptr(), &mut statistics) } != 0 {
            return Err(io::Error::last_os_error());
        }
        Ok(Some(
            (statistics.f_bavail as u64).saturating_mul(statistics.f_frsize as u64),
        ))
    }
}

struct RealFile {
    file: File,
    /// Opened for writing; otherwise mapped read-only.
    writable: bool,
}

impl StorageFile for RealFile {
    fn length(&self) -> io::Result<u64> {
        Ok(self.file.metadata()?.len())
    }

    fn allocate(&self, offset: u64, length: u64) -> io::Result<()> {
        if length == 0 {
            return Ok(());
        }
        // SAFETY: posix_fallocate on a descriptor we own; it returns the error number.
        let result = unsafe {
            libc::posix_fallocate(
                self.file.as_raw_fd(),
                offset as libc::off_t,
                length as libc::off_t,
            )
        };
        match result {
            0 => Ok(()),
            // A file system without fallocate: fall back to set_len (sparse). Writes through
            // a mapping could then meet a full disk; docs/design.md says so.
            libc::EOPNOTSUPP => self.grow_sparse(offset + length),
            errno => Err(io::Error::from_raw_os_error(errno)),
        }
    }

    fn grow_sparse(&self, length: u64) -> io::Result<()> {
        if self.length()? < length {
            self.file.set_len(length)?;
        }
        Ok(())
    }

    fn read_at(&self, buffer: &mut [u8], offset: u64) -> io::Result<()> {
        self.file.read_exact_at(buffer, offset)
    }

    fn write_at(&self, buffer: &[u8], offset: u64) -> io::Result<()> {
        self.file.write_all_at(buffer, offset)
    }

    fn write_vectored_at(&self, parts: &[&[u8]], offset: u64) -> io::Result<()> {
        use std::os::fd::AsRawFd;
        assert!(parts.len() <= MAXIMUM_WRITE_PARTS, "{} parts", parts.len());
        let mut written = Written::default();
        let mut at = offset;
        while let Some(vectors) = written.remaining(parts) {
            // SAFETY: the vectors point into `parts`, which outlive the call.
            let count = unsafe {
                libc::pwritev(
                    self.file.as_raw_fd(),
                    vectors.as_ptr(),
                    vectors.len() as libc::c_int,
                    at as libc::off_t,
                )
            };
            match count {
                -1 if io::Error::last_os_error().kind() == io::ErrorKind::Interrupted => {}
                -1 => return Err(io::Error::last_os_error()),
                0 => return Err(io::ErrorKind::WriteZero.into()),
                count => {
                    written.advance(parts, count as usize);
                    at += count as u64;
                }
            }
        }
        Ok(())
    }

    fn sync_data(&self) -> io::Result<()> {
        // On Linux fdatasync also writes back pages dirtied through a shared mapping.
        self.file.sync_data()
    }

    fn descriptor(&self) -> Option<std::os::fd::RawFd> {
        use std::os::fd::AsRawFd;
        self.writable.then(|| self.file.as_raw_fd())
    }

    fn map(&self, length: usize) -> io::Result<Mapping> {
        if !self.writable {
            // SAFETY: a read-only shared mapping of a file that is only ever grown, never
            // truncated; the pointer is only ever read through (the log of a read-only open
            // writes nothing).
            let map = unsafe { memmap2::MmapOptions::new().len(length).map(&self.file)? };
            let pointer = map.as_ptr().cast_mut();
            // SAFETY: the Mmap is moved into the owner box; its pages do not move.
            return Ok(unsafe { Mapping::of_shared_file(pointer, length, Box::new(map)) });
        }
        // SAFETY: the file is preallocated to at least `length` and is only ever grown, never
        // truncated, while mapped; the store's flock keeps other tenure processes out.
        let mut map = unsafe {
            memmap2::MmapOptions::new()
                .len(length)
                .map_mut(&self.file)?
        };
        let pointer = map.as_mut_ptr();
        // SAFETY: the MmapMut (a shared mapping of the file) is moved into the owner box; its
        // pages do not move.
        Ok(unsafe { Mapping::of_shared_file(pointer, length, Box::new(map)) })
    }
}

/// The most parts one `write_vectored_at` takes (an item write's are two).
const MAXIMUM_WRITE_PARTS: usize = 4;

/// How far a vectored write has come through its parts: whole parts, then bytes of the next.
#[derive(Default)]
struct Written {
    parts: usize,
    bytes_of_next: usize,
}

impl Written {
    /// The vectors of what is left to write, or `None` when all of it is written.
    fn remaining(&self, parts: &[&[u8]]) -> Option<Vec<libc::iovec>> {
        let vectors: Vec<libc::iovec> = parts[self.parts..]
            .iter()
            .enumerate()
            .map(|(index, part)| {
                let skip = if index == 0 { self.bytes_of_next } else { 0 };
                &part[skip..]
            })
            .filter(|left| !left.is_empty())
            .map(|left| libc::iovec {
                iov_base: left.as_ptr().cast_mut().cast(),
                iov_len: left.len(),
            })
            .collect();
        (!vectors.is_empty()).then_some(vectors)
    }

    /// Moves past `count` more bytes written.
    fn advance(&mut self, parts: &[&[u8]], mut count: usize) {
        while count > 0 {
            let left = parts[self.parts].len() - self.bytes_of_next;
            if count < left {
                self.bytes_of_next += count;
                return;
            }
            count -= left;
            self.parts += 1;
            self.bytes_of_next = 0;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A vectored write lands its parts one after the other, and a write cut short anywhere
    /// (inside a part, at a part's end, past empty parts) resumes exactly where it stopped.
    #[test]
    fn vectored_writes_land_their_parts_in_order_and_resume_after_short_writes() {
        let parts: [&[u8]; 4] = [b"head", b"", b"value bytes", b"!"];
        let whole: Vec<u8> = parts.concat();
        for cut in 0..=whole.len() {
            let mut written = Written::default();
            written.advance(&parts, cut);
            let left: Vec<u8> = written
                .remaining(&parts)
                .unwrap_or_default()
                .iter()
                // SAFETY: each vector points into `parts`.
                .flat_map(|vector| unsafe {
                    std::slice::from_raw_parts(vector.iov_base.cast::<u8>(), vector.iov_len)
                })
                .copied()
                .collect();
            assert_eq!(left, whole[cut..], "cut at {cut}");
        }
        let directory = tenure_testkit::TempDir::new("vectored");
        let storage = FileStorage::new(directory.path());
        storage.create_directory().unwrap();
        let file = storage.open("vectored", true).unwrap();
        file.write_vectored_at(&parts, 5000).unwrap();
        let mut read = vec![0u8; whole.len()];
        file.read_at(&mut read, 5000).unwrap();
        assert_eq!(read, whole);
    }

    /// Dropping the page table entries of a written range keeps every byte: in the mapping
    /// (mapped again on access), through a new mapping, and on disk after a sync.
    #[test]
    fn released_page_table_entries_keep_the_written_bytes() {
        let directory = tenure_testkit::TempDir::new("pages");
        let storage = FileStorage::new(directory.path());
        storage.create_directory().unwrap();
        let file = storage.open("pages", true).unwrap();
        let length = 16 * 4096;
        file.allocate(0, length as u64).unwrap();
        let mapping = file.map(length).unwrap();
        let pattern = |index: usize| (index * 7 % 251) as u8;
        // SAFETY: the whole mapping is this test's.
        let bytes = unsafe { std::slice::from_raw_parts_mut(mapping.pointer(), length) };
        for (index, byte) in bytes.iter_mut().enumerate() {
            *byte = pattern(index);
        }
        // Not page-aligned at either end: whole pages inside are released.
        mapping.release_page_table_entries(100, length - 100);
        assert!(bytes
            .iter()
            .enumerate()
            .all(|(index, byte)| *byte == pattern(index)));
        file.sync_data().unwrap();
        let again = file.map(length).unwrap();
        // SAFETY: read only, within the mapping.
        let reread = unsafe { std::slice::from_raw_parts(again.pointer(), length) };
        assert!(reread
            .iter()
            .enumerate()
            .all(|(index, byte)| *byte == pattern(index)));
        drop((mapping, again));
        let on_disk = std::fs::read(directory.path().join("pages")).unwrap();
        assert_eq!(on_disk.len(), length);
        assert!(on_disk
            .iter()
            .enumerate()
            .all(|(index, byte)| *byte == pattern(index)));
    }

    /// Plain memory (the simulated disk's) is never released: MADV_DONTNEED would zero it.
    #[test]
    fn plain_memory_mappings_are_left_alone() {
        let mut buffer = vec![9u8; 8 * 4096];
        // SAFETY: the buffer outlives the mapping and does not move.
        let mapping = unsafe { Mapping::new(buffer.as_mut_ptr(), buffer.len(), Box::new(())) };
        mapping.release_page_table_entries(0, buffer.len());
        drop(mapping);
        assert!(buffer.iter().all(|byte| *byte == 9));
    }
}
