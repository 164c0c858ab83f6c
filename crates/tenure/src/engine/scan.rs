//! `Snapshot::scan`: an ordered range read that copies nothing (LMDB's cursor, for a
//! snapshot). `list` is the paging API (owned items, continuation tokens, properties);
//! `scan` is for reading a range in-process as fast as the map allows. Both go through
//! `Engine::walk`, which starts loading values a few entries ahead.

use crate::backend::results::ScanEntry;
use std::sync::atomic::Ordering;

use crossbeam_epoch::Guard;

use crate::engine::core::Engine;
use crate::engine::snapshot::Snapshot;
use crate::error::{Error, ErrorCode, Result};
use crate::index::plain;
use crate::index::point_index::SlotView;
use crate::index::{index_key, node_of, ItemSlot, ValueLocation, VersionRef};
use crate::log::LogReader;
use crate::types::{ETag, Version};

/// How many entries ahead a walk starts loading values.
const VALUE_PREFETCH_AHEAD: usize = 3;
/// How much of a plain head's value a walk prefetches with its fields (its length is not
/// known until they are read): a 150-byte value's lines in most positions.
const PLAIN_VALUE_PREFETCH_BYTES: usize = 160;

impl Engine {
    /// The slots with index keys in `[from, …)` that start with `prefix`, in key order. With
    /// `prefetch_values`, each slot's newest value starts loading a few entries before the
    /// slot is yielded: a walk's time is the cache misses of its values, and only misses
    /// started a few entries early overlap (the processor's own look-ahead covers about one).
    pub(crate) fn walk<'a>(
        &'a self,
        from: &[u8],
        prefix: &'a [u8],
        prefetch_values: bool,
        guard: &'a Guard,
    ) -> Result<Walk<'a, impl Iterator<Item = SlotView<'a>> + 'a>> {
        let mut walk = Walk {
            slots: self.index.range_from(from, prefix)?,
            window: Default::default(),
            position: 0,
            prefetch_values,
            values: self.log.reader(guard),
            guard,
        };
        for at in 0..VALUE_PREFETCH_AHEAD {
            walk.window[at] = walk.slots.next();
            walk.prefetch(at);
        }
        Ok(walk)
    }
}

/// A walk over the ordered index that keeps the next entries in a window (`Engine::walk`).
pub(crate) struct Walk<'a, I> {
    slots: I,
    window: [Option<SlotView<'a>>; VALUE_PREFETCH_AHEAD],
    position: usize,
    prefetch_values: bool,
    /// Prefetches and reads the values (one segment lookup per segment, not per value).
    values: LogReader<'a, 'a>,
    guard: &'a Guard,
}

impl<'a, I> Walk<'a, I> {
    /// Starts loading the first and last cache lines of the newest value of the slot at
    /// `at`. Only a hint: it reads the head without checking visibility.
    fn prefetch(&mut self, at: usize) {
        let (true, Some(slot)) = (self.prefetch_values, &self.window[at]) else {
            return;
        };
        let head = slot.head().load(Ordering::Acquire, self.guard);
        if let Some(offset) = plain::offset_of(head) {
            // A plain head: its fields and the value's first lines, every line of them (the
            // value's length is in the fields, not loaded yet; first and last line alone left
            // the value's first line out for most offsets).
            let start = offset.saturating_sub(plain::FIELDS_BYTES as u64);
            self.values
                .prefetch_lines(start, plain::FIELDS_BYTES + PLAIN_VALUE_PREFETCH_BYTES);
        } else if let Some(location) = node_of(head).and_then(|node| node.value()) {
            self.values
                .prefetch(location.offset(), location.length as usize);
        }
    }

    /// The entry a plain head names and its value, read through the walk's reader.
    pub(crate) fn plain_entry(&mut self, value_offset: u64) -> Result<(plain::Entry, &'a [u8])> {
        plain::entry_at(&mut self.values, value_offset)
    }

    /// The version of `slot` a reader at `version` sees, plain heads read through the walk's
    /// reader.
    pub(crate) fn visible(
        &mut self,
        slot: &ItemSlot,
        version: Version,
    ) -> Result<Option<VersionRef<'a>>> {
        slot.visible(version, self.guard, &mut self.values)
    }

    /// The bytes of a value the walk's guard keeps mapped.
    pub(crate) fn value_bytes(&mut self, location: ValueLocation) -> Result<&'a [u8]> {
        self.values
            .read_bytes(location.offset(), location.length as usize)
    }
}

impl<'a, I: Iterator<Item = SlotView<'a>>> Iterator for Walk<'a, I> {
    type Item = SlotView<'a>;

    fn next(&mut self) -> Option<SlotView<'a>> {
        let at = self.position % VALUE_PREFETCH_AHEAD;
        let slot = std::mem::replace(&mut self.window[at], self.slots.next())?;
        self.position += 1;
        self.prefetch(at);
        Some(slot)
    }
}

impl Snapshot<'_> {
    /// Visits, in key order, the live items of `container` whose keys start with `prefix`,
    /// from the first such key ≥ `from` (the prefix's first key when `from` is empty).
    /// `visit` returns `false` to stop. Returns how many items were visited.
    ///
    /// Nothing is copied and nothing allocated per item; properties and metadata are not
    /// read (`get_properties` has them).
    pub(crate) fn scan(
        &self,
        container: &str,
        prefix: &[u8],
        from: &[u8],
        mut visit: impl FnMut(ScanEntry<'_>) -> bool,
    ) -> Result<usize> {
        let store = self.store();
        store.check_open()?;
        crate::rules::validate::container_name(container)?;
        crate::rules::validate::key_bound("prefix", prefix, &store.limits)?;
        crate::rules::validate::key_bound("from", from, &store.limits)?;
        let version = self.version();
        let now = self.now();
        let container_id = store
            .catalog
            .visible_id(container, version)
            .ok_or_else(|| Error::rejected(ErrorCode::ContainerNotFound))?;
        let full_prefix = index_key(container_id, prefix);
        let from_key = index_key(container_id, from);
        let start: &[u8] = if *from_key > *full_prefix {
            &from_key
        } else {
            &full_prefix
        };
        let guard = crossbeam_epoch::pin();
        let mut visited = 0;
        let mut walk = store.walk(start, &full_prefix, true, &guard)?;
        while let Some(slot) = walk.next() {
            // Most keys are a plain head: read what the scan needs straight from its entry
            // (the entry ends its chain, so it is the version or there is none).
            let head = slot.head().load(Ordering::Acquire, &guard);
            let (etag_version, value) = match plain::offset_of(head) {
                Some(offset) => {
                    let (entry, value) = walk.plain_entry(offset)?;
                    if entry.version > version || !entry.is_live_at(now) {
                        continue;
                    }
                    (entry.version, value)
                }
                None => {
                    let Some(node) = walk
                        .visible(&slot, version)?
                        .filter(|node| node.is_live_at(now))
                    else {
                        continue;
                    };
                    let value = match node.value() {
                        Some(location) => walk.value_bytes(location)?,
                        None => &[],
                    };
                    (node.etag_version(), value)
                }
            };
            visited += 1;
            let entry = ScanEntry {
                key: slot.key(),
                value,
                etag: ETag(etag_version),
                version: etag_version,
            };
            if !visit(entry) {
                break;
            }
        }
        Ok(visited)
    }
}
