//! The reader table: which parts of the log read-only processes that follow the store still
//! have to read (docs/design.md, "Read-only opens follow the writer").
//!
//! A fixed file, `readers`, of `READER_SLOTS` slots of `SLOT_BYTES`, which the writing open
//! creates. A following process claims a slot with an open-file-description lock on the
//! slot's bytes (`F_OFD_SETLK`), which the kernel drops when the process dies, so a slot is
//! never left claimed by the dead. In its slot it keeps the log offset from which it still
//! needs every segment (little-endian u64 at byte 0; its pid, for people, at byte 8). The
//! writer's compaction asks before it removes the oldest segment (`Log::followers_need`) and
//! leaves it while a live claim names an offset below that segment's end.
//!
//! ```text
//!  slot i: bytes [64·i, 64·i + 64), locked by its claimant
//!  0                8        12                                         64
//!  +----------------+--------+------------------------------------------+
//!  | needed from u64| pid u32| zero                                     |
//!  +----------------+--------+------------------------------------------+
//! ```

use std::fs::File;
use std::io;
use std::os::unix::fs::FileExt;
use std::os::unix::io::AsRawFd;
use std::path::Path;

pub(crate) const READERS_FILE: &str = "readers";
/// Following processes one store can have at once; more open read-only as a fixed view.
pub(crate) const READER_SLOTS: u64 = 64;
const SLOT_BYTES: u64 = 64;
const TABLE_BYTES: u64 = READER_SLOTS * SLOT_BYTES;

/// Creates the table if it is missing or short (the writing open). Its content needs no
/// sync: claims live only as long as their processes.
pub(super) fn create(directory: &Path) -> io::Result<()> {
    use std::os::unix::fs::OpenOptionsExt;
    // Private, as every file of the store: the processes that follow run as its owner.
    let file = std::fs::OpenOptions::new()
        .read(true)
        .write(true)
        .create(true)
        .truncate(false)
        .mode(0o600)
        .open(directory.join(READERS_FILE))?;
    if file.metadata()?.len() < TABLE_BYTES {
        file.set_len(TABLE_BYTES)?;
    }
    Ok(())
}

/// One process's claimed slot. Dropping it closes the descriptor, which drops the claim.
pub(crate) struct ReaderSlot {
    file: File,
    offset: u64,
    _tracked: crate::base::fork::TrackedLockDescriptor,
}

impl ReaderSlot {
    /// Claims a free slot, naming offset 0 (every segment) until `publish` names more.
    /// `None` when the table is missing, not writable, or full.
    pub(crate) fn claim(directory: &Path) -> Option<ReaderSlot> {
        let file = std::fs::OpenOptions::new()
            .read(true)
            .write(true)
            .open(directory.join(READERS_FILE))
            .ok()?;
        if file.metadata().ok()?.len() < TABLE_BYTES {
            return None;
        }
        let offset = (0..READER_SLOTS)
            .map(|slot| slot * SLOT_BYTES)
            .find(|&offset| set_lock(&file, offset, libc::F_WRLCK as libc::c_short))?;
        // A forked child shares the description and with it the claim: the fork handler
        // points the child's descriptor elsewhere, as for the store's `LOCK`.
        let tracked = crate::base::fork::track_lock_descriptor(&file);
        let slot = ReaderSlot {
            file,
            offset,
            _tracked: tracked,
        };
        let mut entry = [0u8; SLOT_BYTES as usize];
        entry[8..12].copy_from_slice(&std::process::id().to_le_bytes());
        slot.file.write_all_at(&entry, offset).ok()?;
        Some(slot)
    }

    /// Names the log offset from which this process still needs every segment. Only ever
    /// raised; a failed write leaves the older, lower offset, which holds back more.
    pub(crate) fn publish(&self, needed_from: u64) {
        let _ = self
            .file
            .write_all_at(&needed_from.to_le_bytes(), self.offset);
    }
}

/// The lowest offset a live claim names, if any process follows the store. Errors reading
/// the table count as a claim of offset 0: compaction then waits, which is safe.
pub(super) fn lowest_needed(directory: &Path) -> Option<u64> {
    let file = match std::fs::OpenOptions::new()
        .read(true)
        .write(true)
        .open(directory.join(READERS_FILE))
    {
        Ok(file) => file,
        Err(error) if error.kind() == io::ErrorKind::NotFound => return None,
        Err(_) => return Some(0),
    };
    let mut table = vec![0u8; TABLE_BYTES as usize];
    if file.read_exact_at(&mut table, 0).is_err() {
        return Some(0);
    }
    (0..READER_SLOTS)
        .map(|slot| slot * SLOT_BYTES)
        .filter(|&offset| is_claimed(&file, offset))
        .map(|offset| {
            let start = offset as usize;
            u64::from_le_bytes(table[start..start + 8].try_into().expect("8 bytes"))
        })
        .min()
}

/// Takes the lock of the slot at `offset` without waiting; whether it was free.
fn set_lock(file: &File, offset: u64, lock_type: libc::c_short) -> bool {
    let mut lock = slot_lock(offset, lock_type);
    // SAFETY: fcntl with a valid descriptor and a `flock` it reads and writes.
    unsafe { libc::fcntl(file.as_raw_fd(), libc::F_OFD_SETLK, &mut lock) == 0 }
}

/// Whether another description holds the slot at `offset` (a failed query counts as held).
fn is_claimed(file: &File, offset: u64) -> bool {
    let mut lock = slot_lock(offset, libc::F_WRLCK as libc::c_short);
    // SAFETY: as in `set_lock`.
    let result = unsafe { libc::fcntl(file.as_raw_fd(), libc::F_OFD_GETLK, &mut lock) };
    result != 0 || lock.l_type != libc::F_UNLCK as libc::c_short
}

fn slot_lock(offset: u64, lock_type: libc::c_short) -> libc::flock {
    // SAFETY: `flock` is plain data; zero is valid for every field.
    let mut lock: libc::flock = unsafe { std::mem::zeroed() };
    lock.l_type = lock_type;
    lock.l_whence = libc::SEEK_SET as libc::c_short;
    lock.l_start = offset as libc::off_t;
    lock.l_len = SLOT_BYTES as libc::off_t;
    // OFD locks require l_pid 0.
    lock.l_pid = 0;
    lock
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_claim_holds_back_until_its_owner_lets_go() {
        let directory = std::env::temp_dir().join(format!("tenure-readers-{}", std::process::id()));
        std::fs::create_dir_all(&directory).unwrap();
        assert_eq!(lowest_needed(&directory), None);
        assert!(ReaderSlot::claim(&directory).is_none(), "no table yet");
        create(&directory).unwrap();
        assert_eq!(lowest_needed(&directory), None);
        let first = ReaderSlot::claim(&directory).unwrap();
        let second = ReaderSlot::claim(&directory).unwrap();
        assert_ne!(first.offset, second.offset);
        assert_eq!(lowest_needed(&directory), Some(0));
        first.publish(4096);
        second.publish(8192);
        assert_eq!(lowest_needed(&directory), Some(4096));
        drop(first);
        assert_eq!(lowest_needed(&directory), Some(8192));
        drop(second);
        assert_eq!(lowest_needed(&directory), None);
        // Every slot claimed: one more open gets none (and is a fixed view).
        let all: Vec<ReaderSlot> = (0..READER_SLOTS)
            .map(|_| ReaderSlot::claim(&directory).unwrap())
            .collect();
        assert!(ReaderSlot::claim(&directory).is_none());
        drop(all);
        std::fs::remove_dir_all(&directory).unwrap();
    }
}
