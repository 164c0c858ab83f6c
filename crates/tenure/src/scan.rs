//! `Snapshot::scan`: an ordered range read that copies nothing (LMDB's cursor, for a
//! snapshot). `list` is the paging API (owned items, continuation tokens, properties);
//! `scan` is for reading a range in-process as fast as the map allows.

use crate::error::{Error, ErrorCode, Result};
use crate::etag::{ETag, Version};
use crate::index::index_key;
use crate::point_index::SlotView;

/// How many entries ahead a scan starts loading values.
const VALUE_PREFETCH_AHEAD: usize = 3;
use crate::snapshot::Snapshot;

/// One item a scan visits: key and value borrowed for the duration of the visit (the value
/// straight from the log's mapping).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ScanEntry<'a> {
    pub key: &'a [u8],
    pub value: &'a [u8],
    pub etag: ETag,
    pub version: Version,
}

impl Snapshot<'_> {
    /// Visits, in key order, the live items of `container` whose keys start with `prefix`,
    /// from the first such key ≥ `from` (the prefix's first key when `from` is empty).
    /// `visit` returns `false` to stop. Returns how many items were visited.
    ///
    /// Nothing is copied and nothing allocated per item; properties and metadata are not
    /// read (`get_properties` has them).
    pub fn scan(
        &self,
        container: &str,
        prefix: &[u8],
        from: &[u8],
        mut visit: impl FnMut(ScanEntry<'_>) -> bool,
    ) -> Result<usize> {
        let store = self.store();
        store.check_open()?;
        crate::validate::container_name(container)?;
        crate::validate::key_bound("prefix", prefix, &store.limits)?;
        crate::validate::key_bound("from", from, &store.limits)?;
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
        // The entries ahead, each with its value's loading started: a walk's time is the
        // cache misses of its values, and only misses started a few entries early overlap
        // (the processor's own look-ahead covers about one entry).
        let mut slots = store.index.range_from(start, &full_prefix);
        let mut window: [Option<SlotView<'_>>; VALUE_PREFETCH_AHEAD] = Default::default();
        for ahead in &mut window {
            *ahead = slots.next();
            if let Some(slot) = ahead {
                store.prefetch_newest_value(slot, &guard);
            }
        }
        for position in 0.. {
            let at = position % VALUE_PREFETCH_AHEAD;
            let Some(slot) = std::mem::replace(&mut window[at], slots.next()) else {
                break;
            };
            if let Some(ahead) = &window[at] {
                store.prefetch_newest_value(ahead, &guard);
            }
            let Some(node) = slot
                .visible(version, &guard)
                .filter(|node| node.is_live_at(now))
            else {
                continue;
            };
            let value = match node.value() {
                Some(location) => store.value_bytes(location, &guard)?,
                None => &[],
            };
            visited += 1;
            let entry = ScanEntry {
                key: slot.key(),
                value,
                etag: ETag(node.etag_version()),
                version: node.etag_version(),
            };
            if !visit(entry) {
                break;
            }
        }
        Ok(visited)
    }
}
