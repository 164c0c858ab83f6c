//! Saving the persisted index: the file of `mod.rs`'s layout, written under a temporary name
//! and renamed over the last one.

use std::io;
use std::sync::atomic::Ordering;

use super::super::catalog::{Catalog, Incarnation};
use super::super::{head, node_of, Index, ItemSlot, VersionNode, COMMITTED, PENDING};
use super::*;
use crate::log::LogAnchor;
use crate::record::{self, put_varint};
use crate::storage::{Storage, StorageFile};

/// The catalog as a persisted index keeps it: encoded while no container change is between
/// its reservation and its update of the catalog (`Catalog::changes` held), so it is the
/// catalog at exactly the versions reserved by then.
pub struct SavedContainers {
    count: u64,
    bytes: Vec<u8>,
}

impl SavedContainers {
    pub fn of(catalog: &Catalog) -> SavedContainers {
        let incarnations = catalog.incarnations();
        let mut bytes = Vec::new();
        for incarnation in &incarnations {
            write_container(&mut bytes, incarnation);
        }
        SavedContainers {
            count: incarnations.len() as u64,
            bytes,
        }
    }
}

/// Whether a saved index is made durable before it replaces the previous one.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Save {
    /// Synced, then renamed over the old file: a running store's checkpoint, which bounds
    /// the replay after a crash, so it must outlive a power cut whole or not replace the old.
    Durable,
    /// Renamed over the old file unsynced: a clean close's, an accelerator only. Whatever a
    /// power cut keeps of it fails a checksum, and the next open replays.
    Unsynced,
}

/// Items between two looks at whether the save was cancelled.
const CANCEL_CHECK_ITEMS: u64 = 1 << 14;

/// Saves the index and catalog as they stood at `anchor`: every item's newest committed
/// version below the anchor's next version, which is in the index alongside any newer ones as
/// long as a snapshot at that version is registered (a running store's checkpoint) or nothing
/// is written (a clean close). Returns `Ok(false)`, saving nothing, when an item's version at
/// the anchor is still pending (a batch not settled yet, or one a close cut short). The file
/// is written under a temporary name and renamed over the old one, so an open (in this or
/// another process) finds the old file or the new one whole. `cancelled` is asked now and
/// then: once it says so, the save stops and saves nothing (a store closing, say). `written`
/// is called once the index has been read and written out, before the file is synced.
pub fn write(
    storage: &dyn Storage,
    anchor: &LogAnchor,
    index: &Index,
    containers: &SavedContainers,
    save: Save,
    cancelled: &dyn Fn() -> bool,
    written: impl FnOnce(),
) -> io::Result<Option<SavedAt>> {
    const TEMPORARY_FILE: &str = "index.checkpoint.new";
    match storage.remove(TEMPORARY_FILE) {
        Err(error) if error.kind() != io::ErrorKind::NotFound => return Err(error),
        _ => {}
    }
    let file = storage.open(TEMPORARY_FILE, true)?;
    let Some(file_bytes) = write_file(file.as_ref(), anchor, index, containers, cancelled)? else {
        drop(file);
        let _ = storage.remove(TEMPORARY_FILE);
        return Ok(None);
    };
    written();
    if save == Save::Durable {
        file.sync_data()?;
    }
    storage.rename(TEMPORARY_FILE, CHECKPOINT_FILE)?;
    if save == Save::Durable {
        storage.sync_directory()?;
    }
    Ok(Some(SavedAt {
        first_slot: anchor.first_slot,
        tail: anchor.tail,
        file_bytes,
    }))
}

fn write_file(
    file: &dyn StorageFile,
    anchor: &LogAnchor,
    index: &Index,
    containers: &SavedContainers,
    cancelled: &dyn Fn() -> bool,
) -> io::Result<Option<u64>> {
    let guard = crossbeam_epoch::pin();
    file.allocate(0, HEADER_BYTES as u64)?;
    let mut body = BodyWriter {
        file,
        offset: HEADER_BYTES as u64,
        crc: crc32fast::Hasher::new(),
        buffer: Vec::with_capacity(WRITE_CHUNK_BYTES + 4096),
    };
    for (version, offset) in &anchor.version_index {
        put_u64(&mut body.buffer, *version);
        put_u64(&mut body.buffer, *offset);
        body.spill()?;
    }
    body.buffer.extend_from_slice(&containers.bytes);
    body.spill()?;
    let version = anchor.next_version.saturating_sub(1);
    let mut items = 0u64;
    // Each shard's first item's offset and its item count; a shard without items starts
    // where the next one does.
    let mut shards = [(0u64, 0u64); SHARDS];
    let mut next_shard = 0;
    let slots = index
        .slots_by_shard(&guard)
        .map_err(|error| io::Error::other(error.to_string()))?;
    for (shard, slot) in slots {
        let entry = match settled_version_at(&slot, version, anchor.tail, &guard) {
            // A deletion that says nothing else: the key is left out, as the log's
            // compaction leaves out its record. The replay after the anchor cannot bring an
            // older version back: only relocations carry old versions, and the caller makes
            // sure none older than the anchor follows it.
            Ok(Some(SavedEntry::Node(node))) if is_bare_deletion(node) => continue,
            Ok(Some(entry)) => entry,
            // A key that had no version then (or whose only one a batch took back: the
            // replay makes no slot for it).
            Ok(None) => continue,
            Err(Unsettled) => return Ok(None),
        };
        while next_shard <= shard {
            shards[next_shard].0 = body.position();
            next_shard += 1;
        }
        shards[shard].1 += 1;
        let (container_id, key) = super::super::split_index_key(slot.index_key());
        put_varint(&mut body.buffer, container_id);
        put_varint(&mut body.buffer, key.len() as u64);
        body.buffer.extend_from_slice(key);
        match entry {
            SavedEntry::Plain(value_offset) => {
                body.buffer.push(KIND_PLAIN);
                put_varint(&mut body.buffer, value_offset);
            }
            SavedEntry::Node(node) => write_node(&mut body.buffer, node),
        }
        items += 1;
        body.spill()?;
        if items % CANCEL_CHECK_ITEMS == 0 && cancelled() {
            return Ok(None);
        }
    }
    while next_shard < SHARDS {
        shards[next_shard].0 = body.position();
        next_shard += 1;
    }
    for (start, count) in shards {
        put_u64(&mut body.buffer, start);
        put_u64(&mut body.buffer, count);
        body.spill()?;
    }
    let (body_bytes, body_crc) = body.finish()?;
    let mut header = Vec::with_capacity(HEADER_BYTES);
    header.extend_from_slice(MAGIC);
    put_u32(&mut header, FORMAT);
    let flags = if index.may_hold_expiring_items() {
        FLAG_EXPIRING_ITEMS
    } else {
        0
    };
    put_u32(&mut header, flags);
    for word in [
        anchor.segment_size_bytes,
        anchor.generation,
        anchor.sequence,
        anchor.first_slot,
        anchor.tail,
        anchor.next_version,
        anchor.version_index.len() as u64,
        containers.count,
        items,
    ] {
        put_u64(&mut header, word);
    }
    for seed in index.seeds() {
        put_u64(&mut header, seed);
    }
    put_u64(&mut header, body_bytes);
    put_u64(&mut header, SHARDS as u64);
    put_u32(&mut header, body_crc);
    put_u32(&mut header, anchor.fingerprint);
    let header_crc = crc32fast::hash(&header);
    put_u32(&mut header, header_crc);
    assert_eq!(header.len(), HEADER_BYTES);
    file.write_at(&header, 0)?;
    Ok(Some(HEADER_BYTES as u64 + body_bytes))
}

/// A key's version as a reader at the saved version would see it: the newest committed one
/// at most that new.
enum SavedEntry<'g> {
    Plain(u64),
    Node(&'g VersionNode),
}

/// Whether `node` only says its key was deleted: no ETag of its own, no properties, no
/// coordination (a lease's fence, a lock), which a key without a version would not keep.
fn is_bare_deletion(node: &VersionNode) -> bool {
    node.value().is_none()
        && node.etag_version() == node.version
        && node.properties().is_none()
        && node.coordination().is_none()
}

/// A version at most the saved one that is neither committed nor aborted yet.
struct Unsettled;

/// [`version_at`], waiting a little for a pending version to settle: a batch's versions
/// settle right after its record completes, which it has when it is at most `version`.
fn settled_version_at<'g>(
    slot: &ItemSlot,
    version: u64,
    tail: u64,
    guard: &'g crossbeam_epoch::Guard,
) -> Result<Option<SavedEntry<'g>>, Unsettled> {
    const SETTLE_ATTEMPTS: usize = 1_000;
    for _ in 0..SETTLE_ATTEMPTS {
        match version_at(slot, version, tail, guard) {
            Err(Unsettled) => std::thread::yield_now(),
            settled => return settled,
        }
    }
    Err(Unsettled)
}

/// The key's version at `version` (`None`: it had none then), told apart without reading the
/// log: versions and log offsets are handed out together in one order, so a plain head (a
/// value offset) is at most `version` exactly when its value lies below `tail`, the end of
/// that version's record.
fn version_at<'g>(
    slot: &ItemSlot,
    version: u64,
    tail: u64,
    guard: &'g crossbeam_epoch::Guard,
) -> Result<Option<SavedEntry<'g>>, Unsettled> {
    let mut current = slot.head().load(Ordering::Acquire, guard);
    loop {
        if current.is_null() {
            return Ok(None);
        }
        if let Some(value_offset) = head::offset_of(current) {
            // A plain version ends its chain.
            return Ok((value_offset < tail).then_some(SavedEntry::Plain(value_offset)));
        }
        if let Some(value_offset) = head::pending_offset_of(current) {
            return if value_offset < tail {
                Err(Unsettled)
            } else {
                Ok(None)
            };
        }
        let Some(node) = node_of(current) else {
            return Ok(None);
        };
        if node.version <= version {
            match node.status.load(Ordering::Acquire) {
                COMMITTED => return Ok(Some(SavedEntry::Node(node))),
                PENDING => return Err(Unsettled),
                _ => {}
            }
        }
        current = node.older.load(Ordering::Acquire, guard);
    }
}

/// The body, written to the file in pieces as it is encoded, with its running checksum.
struct BodyWriter<'a> {
    file: &'a dyn StorageFile,
    offset: u64,
    crc: crc32fast::Hasher,
    buffer: Vec<u8>,
}

impl BodyWriter<'_> {
    /// Where in the body the next byte goes.
    fn position(&self) -> u64 {
        self.offset - HEADER_BYTES as u64 + self.buffer.len() as u64
    }

    /// Writes the buffer out once it holds a piece's worth.
    fn spill(&mut self) -> io::Result<()> {
        if self.buffer.len() >= WRITE_CHUNK_BYTES {
            self.write_buffer()?;
        }
        Ok(())
    }

    fn write_buffer(&mut self) -> io::Result<()> {
        if self.buffer.is_empty() {
            return Ok(());
        }
        let length = self.buffer.len() as u64;
        self.file.allocate(self.offset, length)?;
        self.file.write_at(&self.buffer, self.offset)?;
        self.crc.update(&self.buffer);
        self.offset += length;
        self.buffer.clear();
        Ok(())
    }

    /// The body's length and checksum, everything written.
    fn finish(mut self) -> io::Result<(u64, u32)> {
        self.write_buffer()?;
        Ok((self.offset - HEADER_BYTES as u64, self.crc.finalize()))
    }
}

fn write_container(out: &mut Vec<u8>, incarnation: &Incarnation) {
    let placeholder = Catalog::is_placeholder(incarnation);
    out.push(if placeholder {
        CONTAINER_PLACEHOLDER
    } else {
        CONTAINER_NAMED
    });
    put_u64(out, incarnation.id);
    put_u64(out, incarnation.deleted_version.load(Ordering::Acquire));
    if placeholder {
        return;
    }
    let payload = incarnation.encode_state();
    put_u32(out, payload.len() as u32);
    out.extend_from_slice(&payload);
}

fn write_node(out: &mut Vec<u8>, node: &VersionNode) {
    let value = node.value();
    let own_etag = node.etag_version() != node.version;
    let properties = node.properties();
    let extras = properties.is_some() || node.coordination().is_some();
    let flag = |set: bool, bit: u8| if set { bit } else { 0 };
    out.push(
        KIND_NODE
            | flag(value.is_some(), NODE_VALUE)
            | flag(node.expires_at().is_some(), NODE_EXPIRY)
            | flag(own_etag, NODE_OWN_ETAG)
            | flag(extras, NODE_EXTRAS),
    );
    put_varint(out, node.version);
    if own_etag {
        put_varint(out, node.etag_version());
    }
    if let Some(location) = value {
        put_varint(out, location.offset());
        put_varint(out, u64::from(location.length));
    }
    put_varint(out, node.last_modified);
    if let Some(expires_at) = node.expires_at() {
        put_varint(out, expires_at);
    }
    if extras {
        let mut bytes = Vec::new();
        record::encode_version_extras(
            &mut bytes,
            properties.and_then(|properties| properties.content_type.as_deref()),
            properties.map_or(&[][..], |properties| &properties.metadata),
            node.coordination(),
        );
        put_varint(out, bytes.len() as u64);
        out.extend_from_slice(&bytes);
    }
}

fn put_u32(out: &mut Vec<u8>, value: u32) {
    out.extend_from_slice(&value.to_le_bytes());
}

fn put_u64(out: &mut Vec<u8>, value: u64) {
    out.extend_from_slice(&value.to_le_bytes());
}
