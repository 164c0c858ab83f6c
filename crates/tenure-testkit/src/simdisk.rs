//! A simulated disk: every file keeps its durable image apart from its current bytes, so a test
//! can "lose power" and build exactly the directory a power cut would leave — synced bytes kept,
//! each unsynced sector kept, dropped or torn — and open it. Faults can be scheduled: the n-th
//! sync, allocation or write fails with EIO.

use std::any::Any;
use std::collections::BTreeMap;
use std::io;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Weak};

use parking_lot::Mutex;
use rand::Rng;
use tenure::internals::{Mapping, Storage, StorageFile};

/// The unit a power cut keeps or drops as a whole (or tears).
pub const SECTOR_BYTES: usize = 512;

/// What a power cut does with the bytes written since the last sync.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CrashPolicy {
    /// Every unsynced sector is lost.
    DropAll,
    /// Every unsynced sector reached the disk.
    KeepAll,
    /// Each unsynced sector independently kept, dropped, or torn (a prefix kept).
    Random,
}

/// Scheduled failures, counted across the whole simulated disk.
#[derive(Debug, Default)]
pub struct Faults {
    /// The sync calls (1-based, counted from when the plan was set) that fail.
    pub failing_syncs: Vec<u64>,
    /// Every sync from this one on fails.
    pub fail_syncs_from: Option<u64>,
    pub failing_allocations: Vec<u64>,
    pub failing_writes: Vec<u64>,
}

#[derive(Default)]
struct Counters {
    syncs: AtomicU64,
    allocations: AtomicU64,
    writes: AtomicU64,
}

const PAGE_BYTES: usize = 4096;

struct SimFile {
    /// Current bytes. The heap buffer never moves once mapped (allocation after mapping is
    /// refused), so the mapping's pointer stays valid.
    current: Mutex<Vec<u8>>,
    current_pointer: AtomicU64,
    mapped: AtomicBool,
    durable: Mutex<Vec<u8>>,
    /// Per 4 KiB page: whether space was allocated for it. A real file system may answer a
    /// write through a mapping to an unallocated page with SIGBUS when the disk is full, so a
    /// sync that finds such a write fails the test (`check_writes_allocated`).
    allocated_pages: Mutex<Vec<bool>>,
    /// Weak: the disk owns its files, and a file must not keep its disk alive (a cycle).
    disk: Weak<DiskState>,
}

struct DiskState {
    files: Mutex<BTreeMap<String, Arc<SimFile>>>,
    /// Held by `crash` and by every sync and write, so a power cut is one instant: it never
    /// pairs one file's state before a sync with another file's state after it.
    instant: Mutex<()>,
    locked: AtomicBool,
    faults: Mutex<Faults>,
    counters: Counters,
    /// Pages allocated in all files, and the most the disk holds (`set_byte_budget`).
    allocated_page_count: AtomicU64,
    page_budget: AtomicU64,
}

/// A simulated directory. Clones share the same disk.
#[derive(Clone)]
pub struct SimStorage {
    path: PathBuf,
    disk: Arc<DiskState>,
}

fn eio(what: &str) -> io::Error {
    io::Error::other(format!("simulated EIO on {what}"))
}

impl SimStorage {
    pub fn new() -> SimStorage {
        SimStorage {
            path: PathBuf::from("/simulated/store"),
            disk: Arc::new(DiskState {
                files: Mutex::new(BTreeMap::new()),
                instant: Mutex::new(()),
                locked: AtomicBool::new(false),
                faults: Mutex::new(Faults::default()),
                counters: Counters::default(),
                allocated_page_count: AtomicU64::new(0),
                page_budget: AtomicU64::new(u64::MAX),
            }),
        }
    }

    /// A fresh disk holding exactly these files (current = durable).
    pub fn with_files(files: BTreeMap<String, Vec<u8>>) -> SimStorage {
        let storage = SimStorage::new();
        for (name, bytes) in files {
            storage.put_file(&name, bytes);
        }
        storage
    }

    fn put_file(&self, name: &str, bytes: Vec<u8>) {
        self.disk
            .allocated_page_count
            .fetch_add(bytes.len().div_ceil(PAGE_BYTES) as u64, Ordering::SeqCst);
        let file = Arc::new(SimFile {
            allocated_pages: Mutex::new(vec![true; bytes.len().div_ceil(PAGE_BYTES)]),
            durable: Mutex::new(bytes.clone()),
            current: Mutex::new(bytes),
            current_pointer: AtomicU64::new(0),
            mapped: AtomicBool::new(false),
            disk: Arc::downgrade(&self.disk),
        });
        self.disk.files.lock().insert(name.to_owned(), file);
    }

    /// Makes the disk hold at most `bytes` (whole 4 KiB pages) across its files: an
    /// allocation or write that needs more fails with ENOSPC, as a full disk does, and
    /// `free_bytes` reports what is left. `None` lifts the limit.
    pub fn set_byte_budget(&self, bytes: Option<u64>) {
        let pages = bytes.map_or(u64::MAX, |bytes| bytes / PAGE_BYTES as u64);
        self.disk.page_budget.store(pages, Ordering::SeqCst);
    }

    /// Bytes allocated across the disk's files.
    pub fn used_bytes(&self) -> u64 {
        self.disk.allocated_page_count.load(Ordering::SeqCst) * PAGE_BYTES as u64
    }

    pub fn set_faults(&self, faults: Faults) {
        self.disk.counters.syncs.store(0, Ordering::SeqCst);
        self.disk.counters.allocations.store(0, Ordering::SeqCst);
        self.disk.counters.writes.store(0, Ordering::SeqCst);
        *self.disk.faults.lock() = faults;
    }

    pub fn sync_count(&self) -> u64 {
        self.disk.counters.syncs.load(Ordering::SeqCst)
    }

    /// `(syncs, allocations, writes)` since the fault plan was last set: the call sites a
    /// fault schedule can target.
    pub fn call_counts(&self) -> (u64, u64, u64) {
        let counters = &self.disk.counters;
        (
            counters.syncs.load(Ordering::SeqCst),
            counters.allocations.load(Ordering::SeqCst),
            counters.writes.load(Ordering::SeqCst),
        )
    }

    /// The durable image of every file (what a power cut now would keep at the least).
    pub fn durable_files(&self) -> BTreeMap<String, Vec<u8>> {
        self.disk
            .files
            .lock()
            .iter()
            .map(|(name, file)| (name.clone(), file.durable.lock().clone()))
            .collect()
    }

    /// The current bytes of every file (what the OS page cache holds).
    pub fn current_files(&self) -> BTreeMap<String, Vec<u8>> {
        self.disk
            .files
            .lock()
            .iter()
            .map(|(name, file)| (name.clone(), file.current_bytes()))
            .collect()
    }

    /// The directory a power cut would leave now, as a new disk (the running store keeps
    /// its own disk and cannot touch the new one).
    pub fn crash(&self, rng: &mut impl Rng, policy: CrashPolicy) -> SimStorage {
        let _instant = self.disk.instant.lock();
        let mut survived = BTreeMap::new();
        // Lock order: `files` is never held while a file's own locks are taken.
        let files: Vec<(String, Arc<SimFile>)> = self
            .disk
            .files
            .lock()
            .iter()
            .map(|(name, file)| (name.clone(), Arc::clone(file)))
            .collect();
        for (name, file) in &files {
            let current = file.current_bytes();
            let mut image = file.durable.lock().clone();
            image.resize(current.len(), 0);
            for sector_start in (0..current.len()).step_by(SECTOR_BYTES) {
                let sector_end = (sector_start + SECTOR_BYTES).min(current.len());
                let fresh = &current[sector_start..sector_end];
                if image[sector_start..sector_end] == *fresh {
                    continue;
                }
                let kept_bytes = match policy {
                    CrashPolicy::DropAll => 0,
                    CrashPolicy::KeepAll => fresh.len(),
                    CrashPolicy::Random => match rng.gen_range(0..3) {
                        0 => 0,
                        1 => fresh.len(),
                        _ => rng.gen_range(0..=fresh.len()),
                    },
                };
                image[sector_start..sector_start + kept_bytes]
                    .copy_from_slice(&fresh[..kept_bytes]);
            }
            survived.insert(name.clone(), image);
        }
        SimStorage::with_files(survived)
    }

    /// Overwrites bytes of a file, in its current and durable images alike (media corruption).
    pub fn corrupt(&self, name: &str, offset: usize, bytes: &[u8]) {
        let file = Arc::clone(
            self.disk
                .files
                .lock()
                .get(name)
                .expect("no such simulated file"),
        );
        assert!(
            !file.mapped.load(Ordering::SeqCst),
            "corrupt a disk no store has open"
        );
        file.current.lock()[offset..offset + bytes.len()].copy_from_slice(bytes);
        file.durable.lock()[offset..offset + bytes.len()].copy_from_slice(bytes);
    }

    /// Gives back the space of a file no name holds any more (removed, or replaced by a
    /// rename). Called without `files` held: a file's own locks are never taken under it.
    fn release_pages(&self, file: &SimFile) {
        let pages = file
            .allocated_pages
            .lock()
            .iter()
            .filter(|page| **page)
            .count();
        self.disk
            .allocated_page_count
            .fetch_sub(pages as u64, Ordering::SeqCst);
    }

    pub fn file_names(&self) -> Vec<String> {
        self.disk.files.lock().keys().cloned().collect()
    }
}

impl Default for SimStorage {
    fn default() -> SimStorage {
        SimStorage::new()
    }
}

impl SimFile {
    fn disk(&self) -> io::Result<Arc<DiskState>> {
        self.disk
            .upgrade()
            .ok_or_else(|| io::Error::other("the simulated disk is gone"))
    }

    /// Grows the file (unallocated pages: `allocate` marks them); refused while mapped.
    fn grow(&self, length: u64) -> io::Result<()> {
        let mut current = self.current.lock();
        if length as usize > current.len() {
            if self.mapped.load(Ordering::SeqCst) {
                return Err(io::Error::new(
                    io::ErrorKind::Unsupported,
                    "grow a mapped simulated file",
                ));
            }
            current.resize(length as usize, 0);
            self.durable.lock().resize(length as usize, 0);
            self.allocated_pages
                .lock()
                .resize((length as usize).div_ceil(PAGE_BYTES), false);
        }
        Ok(())
    }

    /// Marks the pages of bytes `start..end` (inside the file) as allocated, or fails with
    /// ENOSPC, allocating nothing, when the disk's budget has no room for the new ones.
    fn mark_allocated(&self, start: usize, end: usize) -> io::Result<()> {
        let disk = self.disk()?;
        let mut pages = self.allocated_pages.lock();
        let range = start / PAGE_BYTES..end.div_ceil(PAGE_BYTES);
        let new_pages = pages[range.clone()].iter().filter(|page| !**page).count() as u64;
        let budget = disk.page_budget.load(Ordering::SeqCst);
        let claimed =
            disk.allocated_page_count
                .fetch_update(Ordering::SeqCst, Ordering::SeqCst, |used| {
                    (used + new_pages <= budget).then_some(used + new_pages)
                });
        if claimed.is_err() {
            return Err(io::Error::from_raw_os_error(libc::ENOSPC));
        }
        pages[range].iter_mut().for_each(|page| *page = true);
        Ok(())
    }

    /// Fails when a byte changed since the last sync lies in a page never allocated: on a
    /// full disk that write could have been a SIGBUS. (An error, not a panic: the sync may run
    /// on the store's flusher thread, where a panic would leave the test waiting.)
    fn check_writes_allocated(&self, current: &[u8], durable: &[u8]) -> io::Result<()> {
        let pages = self.allocated_pages.lock();
        for (page, allocated) in pages.iter().enumerate() {
            let range = page * PAGE_BYTES..((page + 1) * PAGE_BYTES).min(current.len());
            if !allocated && current[range.clone()] != durable[range.clone()] {
                return Err(io::Error::other(format!(
                    "simulated disk: a write reached page {page} (offset {}) of a file before space was allocated for it",
                    range.start
                )));
            }
        }
        Ok(())
    }

    fn current_bytes(&self) -> Vec<u8> {
        let current = self.current.lock();
        let mut copy = vec![0u8; current.len()];
        // SAFETY: reads the buffer through its pointer, as the mapping writes it. Appenders
        // may be writing other ranges right now; a torn copy of an unfinished record is what a
        // real page-cache snapshot could show too.
        unsafe { std::ptr::copy(current.as_ptr(), copy.as_mut_ptr(), current.len()) };
        copy
    }
}

struct LockGuard(Arc<DiskState>);

impl Drop for LockGuard {
    fn drop(&mut self) {
        self.0.locked.store(false, Ordering::SeqCst);
    }
}

impl Storage for SimStorage {
    fn path(&self) -> &Path {
        &self.path
    }

    fn create_directory(&self) -> io::Result<()> {
        Ok(())
    }

    fn try_lock(&self) -> io::Result<Option<Box<dyn Any + Send + Sync>>> {
        if self.disk.locked.swap(true, Ordering::SeqCst) {
            return Ok(None);
        }
        Ok(Some(Box::new(LockGuard(Arc::clone(&self.disk)))))
    }

    fn list(&self) -> io::Result<Vec<String>> {
        Ok(self.file_names())
    }

    fn open(&self, name: &str, create: bool) -> io::Result<Arc<dyn StorageFile>> {
        let existing = self.disk.files.lock().get(name).cloned();
        match existing {
            Some(file) => Ok(file),
            None if create => {
                self.put_file(name, Vec::new());
                Ok(self.disk.files.lock().get(name).cloned().unwrap())
            }
            None => Err(io::Error::new(io::ErrorKind::NotFound, name.to_owned())),
        }
    }

    fn remove(&self, name: &str) -> io::Result<()> {
        let file = self
            .disk
            .files
            .lock()
            .remove(name)
            .ok_or_else(|| io::Error::new(io::ErrorKind::NotFound, name.to_owned()))?;
        self.release_pages(&file);
        Ok(())
    }

    /// Renames are durable at once, as removals and creations are here.
    fn rename(&self, from: &str, to: &str) -> io::Result<()> {
        let replaced = {
            let mut files = self.disk.files.lock();
            let file = files
                .remove(from)
                .ok_or_else(|| io::Error::new(io::ErrorKind::NotFound, from.to_owned()))?;
            files.insert(to.to_owned(), file)
        };
        // Lock order: `files` is never held while a file's own locks are taken.
        if let Some(replaced) = replaced {
            self.release_pages(&replaced);
        }
        Ok(())
    }

    fn free_bytes(&self) -> io::Result<Option<u64>> {
        let budget = self.disk.page_budget.load(Ordering::SeqCst);
        if budget == u64::MAX {
            return Ok(None);
        }
        let used = self.disk.allocated_page_count.load(Ordering::SeqCst);
        Ok(Some(budget.saturating_sub(used) * PAGE_BYTES as u64))
    }

    fn sync_directory(&self) -> io::Result<()> {
        Ok(())
    }
}

fn scheduled(counter: &AtomicU64, failing: &[u64], from: Option<u64>) -> bool {
    let call = counter.fetch_add(1, Ordering::SeqCst) + 1;
    failing.contains(&call) || from.is_some_and(|first| call >= first)
}

impl StorageFile for SimFile {
    fn length(&self) -> io::Result<u64> {
        Ok(self.current.lock().len() as u64)
    }

    fn allocate(&self, offset: u64, length: u64) -> io::Result<()> {
        let disk = self.disk()?;
        let faults = disk.faults.lock();
        if scheduled(
            &disk.counters.allocations,
            &faults.failing_allocations,
            None,
        ) {
            return Err(eio("allocate"));
        }
        self.grow(offset + length)?;
        self.mark_allocated(offset as usize, (offset + length) as usize)
    }

    fn grow_sparse(&self, length: u64) -> io::Result<()> {
        self.disk()?;
        self.grow(length)
    }

    fn read_at(&self, buffer: &mut [u8], offset: u64) -> io::Result<()> {
        let current = self.current.lock();
        let end = offset as usize + buffer.len();
        if end > current.len() {
            return Err(io::Error::new(
                io::ErrorKind::UnexpectedEof,
                "read past the end",
            ));
        }
        buffer.copy_from_slice(&current[offset as usize..end]);
        Ok(())
    }

    fn write_at(&self, buffer: &[u8], offset: u64) -> io::Result<()> {
        let disk = self.disk()?;
        let faults = disk.faults.lock();
        if scheduled(&disk.counters.writes, &faults.failing_writes, None) {
            return Err(eio("write"));
        }
        let mut current = self.current.lock();
        let end = offset as usize + buffer.len();
        if end > current.len() {
            return Err(io::Error::new(
                io::ErrorKind::InvalidInput,
                "write past the allocated length",
            ));
        }
        // A pwrite allocates what it writes (or fails with ENOSPC; it never faults).
        self.mark_allocated(offset as usize, end)?;
        current[offset as usize..end].copy_from_slice(buffer);
        Ok(())
    }

    fn sync_data(&self) -> io::Result<()> {
        let disk = self.disk()?;
        let failing = {
            let faults = disk.faults.lock();
            scheduled(
                &disk.counters.syncs,
                &faults.failing_syncs,
                faults.fail_syncs_from,
            )
        };
        if failing {
            return Err(eio("fdatasync"));
        }
        let _instant = disk.instant.lock();
        let current = self.current_bytes();
        let mut durable = self.durable.lock();
        self.check_writes_allocated(&current, &durable)?;
        *durable = current;
        Ok(())
    }

    fn map(&self, length: usize) -> io::Result<Mapping> {
        let pointer = {
            let mut current = self.current.lock();
            if length > current.len() {
                return Err(io::Error::new(
                    io::ErrorKind::InvalidInput,
                    "map past the end",
                ));
            }
            self.mapped.store(true, Ordering::SeqCst);
            current.as_mut_ptr()
        };
        self.current_pointer.store(pointer as u64, Ordering::SeqCst);
        // SAFETY: the Vec's buffer never moves while mapped (growth is refused), and the
        // owner keeps the file (and so the Vec) alive.
        Ok(unsafe { Mapping::new(pointer, length, Box::new(MappedFile(self.self_arc()))) })
    }
}

struct MappedFile(Arc<SimFile>);

impl Drop for MappedFile {
    fn drop(&mut self) {
        self.0.mapped.store(false, Ordering::SeqCst);
    }
}

impl SimFile {
    fn self_arc(&self) -> Arc<SimFile> {
        let disk = self
            .disk
            .upgrade()
            .expect("a mapped simulated file's disk is alive");
        let files = disk.files.lock();
        files
            .values()
            .find(|file| std::ptr::eq(Arc::as_ptr(file), self))
            .cloned()
            .expect("a mapped simulated file is in its directory")
    }
}
