//! The versions open snapshots pin: what prunes and compaction must keep.

use crate::types::Version;

/// The versions open snapshots pin, each with how many snapshots pin it, oldest first.
///
/// A snapshot registers the visible version, read under the registry's lock, and that version
/// never goes back, so a registration bumps the last entry or appends one. The vector keeps
/// its capacity, so taking a snapshot allocates nothing (a `BTreeMap` allocated and freed its
/// root node for every snapshot taken alone).
#[derive(Debug, Default)]
pub(crate) struct OpenSnapshots {
    by_version: Vec<(Version, usize)>,
}

impl OpenSnapshots {
    pub(crate) fn register(&mut self, version: Version) {
        match self.search(version) {
            Ok(index) => self.by_version[index].1 += 1,
            Err(index) => self.by_version.insert(index, (version, 1)),
        }
    }

    pub(crate) fn release(&mut self, version: Version) {
        let index = self
            .search(version)
            .expect("a snapshot releases the version it registered");
        let (_, count) = &mut self.by_version[index];
        *count -= 1;
        if *count == 0 {
            self.by_version.remove(index);
        }
    }

    /// The oldest pinned version; `u64::MAX` when no snapshot is open.
    pub(crate) fn oldest(&self) -> Version {
        self.by_version
            .first()
            .map_or(u64::MAX, |&(version, _)| version)
    }

    fn search(&self, version: Version) -> std::result::Result<usize, usize> {
        // Most searches are for the newest entry.
        match self.by_version.last() {
            Some(&(last, _)) if last == version => Ok(self.by_version.len() - 1),
            Some(&(last, _)) if last < version => Err(self.by_version.len()),
            _ => self
                .by_version
                .binary_search_by_key(&version, |&(pinned, _)| pinned),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::OpenSnapshots;

    #[test]
    fn open_snapshots_count_each_version_and_name_the_oldest() {
        let mut open = OpenSnapshots::default();
        assert_eq!(open.oldest(), u64::MAX);
        for version in [5, 5, 7, 9, 9] {
            open.register(version);
        }
        // Out of order too, though the store only registers versions that never go back.
        open.register(6);
        assert_eq!(open.by_version, [(5, 2), (6, 1), (7, 1), (9, 2)]);
        open.release(5);
        assert_eq!(open.oldest(), 5);
        open.release(5);
        assert_eq!(open.oldest(), 6);
        open.release(9);
        open.release(6);
        open.release(7);
        assert_eq!(open.by_version, [(9, 1)]);
        open.release(9);
        assert_eq!(open.oldest(), u64::MAX);
        assert!(open.by_version.capacity() > 0, "kept for the next snapshot");
    }
}
