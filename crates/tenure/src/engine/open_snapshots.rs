//! The versions open snapshots pin: what prunes and compaction must keep.

use crate::types::Version;

/// The versions open snapshots pin, and the compaction generations they were opened in.
///
/// A snapshot registers the visible version, read under the registry's lock, and that version
/// never goes back, so a registration bumps the last entry or appends one. The vectors keep
/// their capacity, so taking a snapshot allocates nothing (a `BTreeMap` allocated and freed its
/// root node for every snapshot taken alone).
#[derive(Debug, Default)]
pub(crate) struct OpenSnapshots {
    by_version: Counts,
    /// Compaction starts a generation once its copies are swapped in (`start_generation`): a
    /// snapshot of a later generation can only read the copies, whatever its version.
    by_generation: Counts,
    generation: u64,
}

impl OpenSnapshots {
    /// Registers a snapshot at `version`; returns its generation, for `release`.
    pub(crate) fn register(&mut self, version: Version) -> u64 {
        self.by_version.add(version);
        self.by_generation.add(self.generation);
        self.generation
    }

    pub(crate) fn release(&mut self, version: Version, generation: u64) {
        self.by_version.remove(version);
        self.by_generation.remove(generation);
    }

    /// The oldest pinned version; `u64::MAX` when no snapshot is open.
    pub(crate) fn oldest(&self) -> Version {
        self.by_version.oldest()
    }

    /// Starts a new generation and returns it: snapshots registered from now on belong to it.
    pub(crate) fn start_generation(&mut self) -> u64 {
        self.generation += 1;
        self.generation
    }

    /// The generation of the oldest open snapshot; `u64::MAX` when none is open.
    pub(crate) fn oldest_generation(&self) -> u64 {
        self.by_generation.oldest()
    }
}

/// Counts per value, ascending; values are added in order but for rare exceptions.
#[derive(Debug, Default)]
struct Counts(Vec<(u64, usize)>);

impl Counts {
    fn add(&mut self, value: u64) {
        match self.search(value) {
            Ok(index) => self.0[index].1 += 1,
            Err(index) => self.0.insert(index, (value, 1)),
        }
    }

    fn remove(&mut self, value: u64) {
        let index = self
            .search(value)
            .expect("a snapshot releases what it registered");
        let (_, count) = &mut self.0[index];
        *count -= 1;
        if *count == 0 {
            self.0.remove(index);
        }
    }

    fn oldest(&self) -> u64 {
        self.0.first().map_or(u64::MAX, |&(value, _)| value)
    }

    fn search(&self, value: u64) -> std::result::Result<usize, usize> {
        // Most searches are for the newest entry.
        match self.0.last() {
            Some(&(last, _)) if last == value => Ok(self.0.len() - 1),
            Some(&(last, _)) if last < value => Err(self.0.len()),
            _ => self.0.binary_search_by_key(&value, |&(counted, _)| counted),
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
            assert_eq!(open.register(version), 0);
        }
        // Out of order too, though the store only registers versions that never go back.
        open.register(6);
        assert_eq!(open.by_version.0, [(5, 2), (6, 1), (7, 1), (9, 2)]);
        open.release(5, 0);
        assert_eq!(open.oldest(), 5);
        open.release(5, 0);
        assert_eq!(open.oldest(), 6);
        open.release(9, 0);
        open.release(6, 0);
        open.release(7, 0);
        assert_eq!(open.by_version.0, [(9, 1)]);
        open.release(9, 0);
        assert_eq!(open.oldest(), u64::MAX);
        assert!(
            open.by_version.0.capacity() > 0,
            "kept for the next snapshot"
        );
    }

    #[test]
    fn a_generation_tells_snapshots_opened_after_it_from_earlier_ones() {
        let mut open = OpenSnapshots::default();
        assert_eq!(open.oldest_generation(), u64::MAX);
        let early = open.register(4);
        let generation = open.start_generation();
        let late = open.register(4);
        assert_eq!((early, late), (0, generation));
        assert!(open.oldest_generation() < generation);
        open.release(4, early);
        assert_eq!(open.oldest_generation(), generation);
        assert_eq!(open.oldest(), 4);
        open.release(4, late);
        assert_eq!(open.oldest_generation(), u64::MAX);
    }
}
