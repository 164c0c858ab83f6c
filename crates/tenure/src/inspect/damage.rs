//! What a damaged range of the log held, in items: the records in it are read as far as their
//! lengths allow, without their checksums, and the items of those that still decode are named
//! by container and key. Bytes under a checksum that failed may themselves be the damaged
//! ones, so a name can be wrong; the versions the range lost are exact (between the good
//! records around it). A record whose version falls outside those bounds had its header hit:
//! its items are not named, and it counts as unreadable.

use std::path::PathBuf;

use crate::index::catalog::Catalog;
use crate::index::{index_key, view, Index, NoPlainHeads};
use crate::log::record::{self, RecordKind, HEADER_BYTES};
use crate::record::DecodedRecord;
use crate::types::Version;

/// At most this many records of one damaged range are read for their items.
const MAXIMUM_RECORDS_READ: usize = 100_000;

/// One damaged range of the log and what it held.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct DamagedRange {
    pub file: PathBuf,
    /// Where the range starts in the file.
    pub offset: u64,
    pub length: u64,
    /// The versions the range held, between the good records around it (inclusive); `None`
    /// where no good record bounds the range on that side.
    pub first_version: Option<Version>,
    pub last_version: Option<Version>,
    /// Items of records in the range that could still be read.
    pub items: Vec<DamagedItem>,
    /// Records of the range whose items could not be read (their header was hit), or `1`
    /// when the range's first record could not be read at all.
    pub unreadable_records: u64,
}

/// An item a damaged record held.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DamagedItem {
    pub container_id: u64,
    /// The container's name, where the rest of the log names it.
    pub container: Option<String>,
    pub key: Vec<u8>,
    /// The version of the item the damaged record held.
    pub version: Version,
    /// The version of the record that held it: `version`, or for a relocation by compaction
    /// the relocation's own version (newer than the item versions it carries).
    pub record_version: Version,
    /// The item's newest version (a write or its delete) the rest of the log still holds:
    /// what a repaired store has (`None`: nothing). The damage cost the item its newest
    /// version when this is older than `version`.
    pub kept_version: Option<Version>,
}

impl DamagedItem {
    /// Whether the damage cost the item its newest version.
    pub fn is_lost(&self) -> bool {
        self.kept_version.is_none_or(|kept| kept < self.version)
    }
}

/// Reads the records of `bytes` (a damaged range, at `offset` of `file`) for their items.
pub(super) fn read_range(file: PathBuf, offset: u64, bytes: &[u8]) -> DamagedRange {
    let mut range = DamagedRange {
        file,
        offset,
        length: bytes.len() as u64,
        ..DamagedRange::default()
    };
    let mut at = 0usize;
    for _ in 0..MAXIMUM_RECORDS_READ {
        if bytes.len() - at < HEADER_BYTES {
            break;
        }
        let Ok((header, payload)) = record::decode_verified(&bytes[at..]) else {
            range.unreadable_records += 1;
            break;
        };
        // `Abort` and `SegmentEnd` records carry no payload: one that does had its kind hit.
        if header.kind == RecordKind::Data || header.payload_length > 0 {
            match crate::record::decode(payload) {
                Ok(decoded) => add_items(&mut range.items, header.version, decoded),
                Err(_) => range.unreadable_records += 1,
            }
        }
        at += record::record_size(u64::from(header.payload_length)) as usize;
    }
    range
}

fn add_items(items: &mut Vec<DamagedItem>, record_version: Version, decoded: DecodedRecord<'_>) {
    let item = |container_id: u64, key: &[u8], version: Version| DamagedItem {
        container_id,
        container: None,
        key: key.to_vec(),
        version,
        record_version,
        kept_version: None,
    };
    let version = record_version;
    match decoded {
        DecodedRecord::Items(written) => items.extend(
            written
                .iter()
                .map(|entry| item(entry.write.container_id, entry.write.key, version)),
        ),
        DecodedRecord::RelocatedItems(relocated) => {
            items.extend(relocated.iter().map(|(original, entry)| {
                item(entry.write.container_id, entry.write.key, *original)
            }))
        }
        // A lease or lock change, or a container's record: no item version.
        _ => {}
    }
}

/// Names each damaged item's container and finds the version the rest of the log keeps of it,
/// from the index and catalog a replay of the good records built.
pub(super) fn resolve(ranges: &mut [DamagedRange], index: &Index, catalog: &Catalog) {
    ranges.iter_mut().for_each(drop_hit_headers);
    let guard = crossbeam_epoch::pin();
    for item in ranges.iter_mut().flat_map(|range| range.items.iter_mut()) {
        let incarnation = catalog.by_id(item.container_id);
        item.container = incarnation
            .as_ref()
            .filter(|incarnation| !Catalog::is_placeholder(incarnation))
            .map(|incarnation| incarnation.name.clone());
        // A replayed index has every shard: its lookups do not fail.
        item.kept_version = index
            .get(&index_key(item.container_id, &item.key))
            .ok()
            .flatten()
            .and_then(|slot| {
                let head = slot
                    .head()
                    .load(std::sync::atomic::Ordering::Acquire, &guard);
                view(head, &mut NoPlainHeads).ok().flatten()
            })
            .map(|version| version.version);
    }
}

/// Drops the items of records whose versions the range's bounds rule out (their headers were
/// hit, so their versions are not the items'), and counts each such record as unreadable.
fn drop_hit_headers(range: &mut DamagedRange) {
    let (first, last) = (range.first_version, range.last_version);
    let possible = |item: &DamagedItem| {
        item.version <= item.record_version
            && first.is_none_or(|first| first <= item.record_version)
            && last.is_none_or(|last| item.record_version <= last)
    };
    let mut hit_records: Vec<Version> = range
        .items
        .iter()
        .filter(|item| !possible(item))
        .map(|item| item.record_version)
        .collect();
    hit_records.dedup();
    range.unreadable_records += hit_records.len() as u64;
    range.items.retain(possible);
}

/// Items live at `now` in a replayed index: what a store built from the same records holds.
pub(super) fn live_items(index: &Index, now: crate::clock::Timestamp) -> u64 {
    let guard = crossbeam_epoch::pin();
    // A replayed index has every shard: its walk does not fail.
    index
        .range_from(&[], &[])
        .into_iter()
        .flatten()
        .filter(|slot| {
            let head = slot
                .head()
                .load(std::sync::atomic::Ordering::Acquire, &guard);
            view(head, &mut NoPlainHeads)
                .ok()
                .flatten()
                .is_some_and(|version| version.is_live_at(now))
        })
        .count() as u64
}
