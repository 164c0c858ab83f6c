//! Replay: one recovered record applied to the index, single-threaded: at open (and into a
//! scratch index by `inspect::verify`, to check a log), and onto the live index of a
//! read-only open that follows its writer (`Applying::Live`).

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

use crossbeam_epoch::Guard;
use parking_lot::Mutex;

use super::catalog::{Catalog, ContainerState, Incarnation, LIVE};
use super::plain;
use super::point_index::HintCell;
use super::slot::MAXIMUM_KEY_BYTES;
use super::{
    coordination_box, index_key, view, Index, ItemSlot, NewVersion, PlainEntries, Properties,
    ValueLocation, VersionNode, COMMITTED,
};
use crate::clock::Timestamp;
use crate::error::Result;
use crate::log::record::HEADER_BYTES;
use crate::log::RecordBytes;
use crate::record::{self, Coordination, DecodedRecord};
use crate::types::Version;

/// How a record is applied to the index.
#[derive(Clone, Copy)]
pub(crate) enum Applying<'a> {
    /// At open, or into `inspect`'s scratch index: nothing can see an older version, so a
    /// record's version replaces its key's chain.
    AtOpen,
    /// Onto the index of a read-only open that follows its writer, while its readers and
    /// snapshots use it: a version goes on top of its key's chain, and older ones go only
    /// when `prune` (the engine's, which knows the open snapshots) lets them.
    Live {
        prune: &'a dyn Fn(&ItemSlot, &Guard),
    },
}

/// Applies one recovered record to the index, one record at a time (`Applying` says onto
/// what).
#[allow(clippy::too_many_arguments)]
pub(crate) fn replay_record<'g>(
    applying: Applying<'_>,
    index: &Index,
    catalog: &Catalog,
    now: Timestamp,
    version: Version,
    location: u64,
    payload: &[u8],
    earlier: &mut impl RecordBytes<'g>,
) -> Result<()> {
    // Damage names the segment file and the record's offset in it.
    let corrupt = |earlier: &mut dyn RecordBytes<'g>, reason: &str| {
        earlier.corruption(
            location,
            &format!("engine record at version {version}: {reason}"),
        )
    };
    let record = match record::decode(payload) {
        Ok(record) => record,
        Err(reason) => return Err(corrupt(earlier, reason)),
    };
    if !keys_fit(&record) {
        let reason = format!("a key is longer than {MAXIMUM_KEY_BYTES} bytes");
        return Err(corrupt(earlier, &reason));
    }
    match record {
        DecodedRecord::Items(items) => {
            let ahead = LookAhead::start(index, &items, |item| item);
            let mut containers = ContainerMemo::new(catalog);
            for (position, item) in items.iter().enumerate() {
                ahead.step(position);
                replay_item(
                    applying,
                    index,
                    &mut containers,
                    (version, now),
                    (location, payload),
                    item,
                    false,
                    earlier,
                )?;
            }
        }
        DecodedRecord::RelocatedItems(items) => {
            let ahead = LookAhead::start(index, &items, |(_, item)| item);
            let mut containers = ContainerMemo::new(catalog);
            for (position, (original_version, item)) in items.iter().enumerate() {
                ahead.step(position);
                replay_item(
                    applying,
                    index,
                    &mut containers,
                    (*original_version, now),
                    (location, payload),
                    item,
                    true,
                    earlier,
                )?;
            }
        }
        DecodedRecord::ItemCoordination {
            container_id,
            key,
            etag_version,
            expires_at,
            coordination,
        } => replay_coordination(
            applying,
            index,
            catalog,
            (version, now),
            container_id,
            key,
            etag_version,
            expires_at,
            coordination,
            earlier,
        )?,
        container_record => {
            if let Err(reason) = replay_container_record(catalog, container_record, version, now) {
                return Err(corrupt(earlier, reason));
            }
        }
    }
    Ok(())
}

/// How many items of a record the replay looks ahead: their buckets, scattered over the point
/// index, load while earlier items are replayed, instead of one cache miss after another.
const PREFETCH_ITEMS: usize = 16;

/// The items of a record (a batch, or compaction's copies) whose point-index buckets the replay
/// starts loading `PREFETCH_ITEMS` items before it replays them.
struct LookAhead<'a, T> {
    index: &'a Index,
    entries: &'a [T],
    item_of: fn(&'a T) -> &'a record::DecodedItem<'a>,
    guard: crossbeam_epoch::Guard,
}

impl<'a, T> LookAhead<'a, T> {
    fn start(
        index: &'a Index,
        entries: &'a [T],
        item_of: fn(&'a T) -> &'a record::DecodedItem<'a>,
    ) -> LookAhead<'a, T> {
        let ahead = LookAhead {
            index,
            entries,
            item_of,
            guard: crossbeam_epoch::pin(),
        };
        if entries.len() > 1 {
            (0..PREFETCH_ITEMS).for_each(|position| ahead.prefetch(position));
        }
        ahead
    }

    /// Before replaying item `position`: the item `PREFETCH_ITEMS` further on.
    fn step(&self, position: usize) {
        self.prefetch(position + PREFETCH_ITEMS);
    }

    fn prefetch(&self, position: usize) {
        let Some(entry) = self.entries.get(position) else {
            return;
        };
        // An incarnation's id is the record's container id, so no catalog lookup is needed
        // (a prefetch for a container that turns out deleted is only a wasted load).
        let item = (self.item_of)(entry);
        let key = index_key(item.write.container_id, item.write.key);
        self.index.prefetch(&key, &self.guard);
    }
}

/// The container of the record's previous item, kept for the next: a record's items are
/// usually of one container, and a catalog lookup (a pin of its map and a reference count)
/// was a tenth of an open. Lives for one record, during which only placeholders can join the
/// catalog, so the incarnation it holds stays the catalog's.
struct ContainerMemo<'a> {
    catalog: &'a Catalog,
    last: Option<Arc<Incarnation>>,
}

impl<'a> ContainerMemo<'a> {
    fn new(catalog: &'a Catalog) -> ContainerMemo<'a> {
        ContainerMemo {
            catalog,
            last: None,
        }
    }

    fn by_id_or_placeholder(&mut self, id: u64) -> &Incarnation {
        if self.last.as_ref().is_none_or(|last| last.id != id) {
            self.last = Some(self.catalog.by_id_or_placeholder(id));
        }
        self.last.as_deref().expect("set just above")
    }
}

/// Whether every key of `record` fits a slot. Writes check keys against the limit the store
/// opened with, which is at most the slot's; a longer key in the log is damage (or a build
/// without that bound).
fn keys_fit(record: &DecodedRecord<'_>) -> bool {
    let key_fits = |key: &[u8]| key.len() <= MAXIMUM_KEY_BYTES;
    match record {
        DecodedRecord::Items(items) => items.iter().all(|item| key_fits(item.write.key)),
        DecodedRecord::RelocatedItems(items) => {
            items.iter().all(|(_, item)| key_fits(item.write.key))
        }
        DecodedRecord::ItemCoordination { key, .. } => key_fits(key),
        _ => true,
    }
}

/// A container's record (create, delete, metadata, lease, or its whole state copied forward
/// by compaction) applied to the catalog.
fn replay_container_record(
    catalog: &Catalog,
    record: DecodedRecord<'_>,
    version: Version,
    now: Timestamp,
) -> std::result::Result<(), &'static str> {
    match record {
        DecodedRecord::ContainerState {
            id,
            name,
            default_ttl_seconds,
            etag_version,
            last_modified,
            metadata,
            lease,
        } => {
            let state = ContainerState {
                lease: lease.map(|lease| lease.clamped_after_reopen(now)),
                metadata,
                etag_version,
                last_modified,
            };
            match catalog
                .by_id(id)
                .filter(|incarnation| !Catalog::is_placeholder(incarnation))
            {
                Some(incarnation) => {
                    let mut current = incarnation.state.lock();
                    if etag_version >= current.etag_version {
                        *current = state;
                    }
                }
                None => catalog.resolve(Arc::new(Incarnation {
                    id,
                    name: name.to_owned(),
                    default_ttl_seconds,
                    deleted_version: AtomicU64::new(LIVE),
                    state: Mutex::new(state),
                })),
            }
        }
        DecodedRecord::ContainerCreate {
            name,
            default_ttl_seconds,
            metadata,
            created_at,
        } => {
            if catalog.live(name).is_some() {
                return Err("container created twice");
            }
            catalog.resolve(Arc::new(Incarnation {
                id: version,
                name: name.to_owned(),
                default_ttl_seconds,
                deleted_version: AtomicU64::new(LIVE),
                state: Mutex::new(ContainerState {
                    lease: None,
                    metadata,
                    etag_version: version,
                    last_modified: created_at,
                }),
            }));
        }
        DecodedRecord::ContainerDelete { container_id } => {
            if let Some(incarnation) = catalog.by_id(container_id) {
                incarnation
                    .deleted_version
                    .store(version, Ordering::Release);
            }
        }
        DecodedRecord::ContainerSetMetadata {
            container_id,
            metadata,
            modified_at,
        } => {
            if let Some(incarnation) = catalog.by_id(container_id) {
                let mut state = incarnation.state.lock();
                state.metadata = metadata;
                state.etag_version = version;
                state.last_modified = modified_at;
            }
        }
        DecodedRecord::ContainerLease {
            container_id,
            lease,
        } => {
            if let Some(incarnation) = catalog.by_id(container_id) {
                incarnation.state.lock().lease = lease.map(|lease| lease.clamped_after_reopen(now));
            }
        }
        DecodedRecord::Items(_)
        | DecodedRecord::RelocatedItems(_)
        | DecodedRecord::ItemCoordination { .. } => {
            unreachable!("item records are replayed into the index")
        }
    }
    Ok(())
}

/// Installs one recovered item version. A relocated copy (`relocated`) applies only if nothing
/// newer for its key was replayed before it: compaction may have copied it forward while a
/// newer write raced it into the log.
#[allow(clippy::too_many_arguments)]
fn replay_item(
    applying: Applying<'_>,
    index: &Index,
    containers: &mut ContainerMemo<'_>,
    (version, now): (Version, Timestamp),
    (location, payload): (u64, &[u8]),
    item: &record::DecodedItem<'_>,
    relocated: bool,
    earlier: &mut impl PlainEntries,
) -> Result<()> {
    let incarnation = containers.by_id_or_placeholder(item.write.container_id);
    if !incarnation.is_live() {
        return Ok(());
    }
    let guard = crossbeam_epoch::pin();
    let (slot, hint_cell) = slot_for(applying, index, incarnation.id, item.write.key, &guard)?;
    let head = slot.head().load(Ordering::Acquire, &guard);
    if relocated && view(head, earlier)?.is_some_and(|node| node.version > version) {
        return Ok(());
    }
    let etag_version = if item.write.etag_version == 0 {
        version
    } else {
        item.write.etag_version
    };
    let value_offset = location + HEADER_BYTES as u64 + item.value_offset as u64;
    let node = VersionNode::new(NewVersion {
        version,
        etag_version,
        status: COMMITTED,
        value: item.write.value.map(|value| {
            ValueLocation::new(
                location + HEADER_BYTES as u64 + item.value_offset as u64,
                value.len() as u32,
            )
        }),
        last_modified: item.write.last_modified,
        expires_at: item.write.expires_at,
        properties: Properties::boxed(item.write.content_type, item.metadata.clone()),
        // Most items hold no lease or lock: skip the copy and the clamp for them.
        coordination: if item.coordination.is_empty() {
            None
        } else {
            coordination_box(item.coordination.clone().clamped_after_reopen(now))
        },
    });
    // Nothing can see older versions at open, so a version its entry says in full (no
    // properties or coordination, its own version in the ETag field; older formats wrote 0
    // there) becomes the key's plain head.
    if matches!(applying, Applying::AtOpen)
        && earlier.allows_plain_heads()
        && plain_entry_matches(payload, item.value_offset, value_offset, &node)
    {
        index.note_expiry(node.expires_at());
        slot.replace_chain_with_plain(value_offset, &guard);
        if let Some(location) = node.value() {
            index.note_value_location(slot.index_key(), Some(hint_cell), location);
        }
        return Ok(());
    }
    install_replayed(applying, index, (&slot, hint_cell), head, node, &guard);
    Ok(())
}

/// The slot of `key` in container `container_id`, added if new: at open only to the point
/// index (the ordered one is built from it on the first walk); live also to the ordered
/// index, as a writer's insert does, since walks may have built it.
fn slot_for<'g>(
    applying: Applying<'_>,
    index: &Index,
    container_id: u64,
    key: &[u8],
    guard: &'g Guard,
) -> Result<(ItemSlot, HintCell<'g>)> {
    let index_key = index_key(container_id, key);
    match applying {
        Applying::AtOpen => index.get_or_insert_replaying(&index_key, guard),
        Applying::Live { .. } => index.get_or_insert_with_hint_cell(&index_key, guard),
    }
}

/// Whether the entry whose value starts at `value_offset_in_payload` of `payload` (at
/// `value_offset` in the log) is plain and describes exactly `node`: then a plain head
/// naming it reads back as `node`.
fn plain_entry_matches(
    payload: &[u8],
    value_offset_in_payload: usize,
    value_offset: u64,
    node: &VersionNode,
) -> bool {
    let Some(fields) = value_offset_in_payload
        .checked_sub(plain::FIELDS_BYTES)
        .and_then(|start| payload.get(start..value_offset_in_payload))
    else {
        return false;
    };
    let fields: &plain::Fields = fields.try_into().expect("a slice of the right length");
    crate::index::plain::Entry::read(value_offset, fields)
        .is_ok_and(|entry| entry.node().same_version_as(node))
}

/// A lease or lock change: the key's current version with new coordination state. Skipped
/// when the version it applied to is gone (compaction then carried the state forward).
#[allow(clippy::too_many_arguments)]
fn replay_coordination(
    applying: Applying<'_>,
    index: &Index,
    catalog: &Catalog,
    (version, now): (Version, Timestamp),
    container_id: u64,
    key: &[u8],
    etag_version: Version,
    expires_at: Option<Timestamp>,
    coordination: Coordination,
    earlier: &mut impl PlainEntries,
) -> Result<()> {
    let coordination = coordination.clamped_after_reopen(now);
    let incarnation = catalog.by_id_or_placeholder(container_id);
    if !incarnation.is_live() {
        return Ok(());
    }
    let guard = crossbeam_epoch::pin();
    let (slot, hint_cell) = slot_for(applying, index, incarnation.id, key, &guard)?;
    let head = slot.head().load(Ordering::Acquire, &guard);
    let current = view(head, earlier)?;
    let node = match current.as_deref() {
        Some(node) if node.value().is_some() && node.etag_version() == etag_version => {
            VersionNode::new(NewVersion {
                version,
                etag_version,
                status: COMMITTED,
                value: node.value(),
                last_modified: node.last_modified,
                expires_at,
                properties: node.properties().cloned().map(Box::new),
                coordination: coordination_box(coordination),
            })
        }
        // A lock on a key with no item (force-locked while absent).
        _ if etag_version == 0 => VersionNode::new(NewVersion {
            version,
            etag_version: 0,
            status: COMMITTED,
            value: None,
            last_modified: 0,
            expires_at: None,
            properties: None,
            coordination: coordination_box(coordination),
        }),
        _ => return Ok(()),
    };
    install_replayed(applying, index, (&slot, hint_cell), head, node, &guard);
    Ok(())
}

fn install_replayed(
    applying: Applying<'_>,
    index: &Index,
    (slot, hint_cell): (&ItemSlot, HintCell<'_>),
    head: crossbeam_epoch::Shared<'_, VersionNode>,
    node: VersionNode,
    guard: &Guard,
) {
    let version = node.version;
    let value = node.value();
    index.note_expiry(node.expires_at());
    if slot.install(head, node, guard).is_ok() {
        match applying {
            // Nothing can see older versions at open.
            Applying::AtOpen => {
                slot.prune(version, guard);
            }
            Applying::Live { prune } => prune(slot, guard),
        }
        if let Some(location) = value {
            index.note_value_location(slot.index_key(), Some(hint_cell), location);
        }
    }
}
