//! The persisted index: the index and the catalog saved to one file as they stood at one
//! version — at a clean close, and as checkpoints while a store runs (`engine/checkpoints.rs`)
//! — so that an open loads them and replays only the log written after that version, instead
//! of the whole log (docs/design.md §3 "The persisted index").
//!
//! Trust: the file names the state of the log it was taken at (segment size, generation,
//! first slot, the tail and next version there, the version index below it, a CRC32 of the
//! log's bytes at both ends below the tail), and both its header and its body carry a CRC32.
//! Records below a durable tail are never written again and compaction removes only the
//! oldest segment, so the file describes every later state of the log with the same first
//! slot: the open's scan checks that it meets the tail at a record boundary with that next
//! version and version index, and replays the records after it onto the loaded index. A file
//! that is missing, short, damaged, of another format or of another log is never used: the
//! open replays the whole log, as it does without one.
//!
//! ```text
//! header (148 bytes, little-endian)
//!  0 magic "TENUREIX"   8 format u32 = 3   12 flags u32 (bit 0: an expiring item was written)
//! 16 segment size u64   24 generation u64  32 sequence u64   40 first slot u64   48 tail u64
//! 56 next version u64   64 version-index entries u64   72 containers u64   80 items u64
//! 88 hash seeds 4 × u64   120 body bytes u64   128 shards u64 = 256   136 body crc32 u32
//! 140 log fingerprint u32   144 header crc32 u32 (0..144)
//! body
//!  version index: (version u64, log offset u64) × entries
//!  containers, oldest first: kind u8 (0 placeholder, 1 named), id u64, deleted version u64,
//!      named: length u32 + a container-state payload (`record::encode_container_state`)
//!  items, shard by shard of the point index (varints are LEB128, `record::put_varint`): container
//!      id varint, key length varint, key, then a kind byte:
//!      1 (plain head): value offset varint
//!      2 + flags (node; flags: 4 a value, 8 an expiry, 16 an ETag version of its own,
//!         32 properties or coordination): version varint, [ETag version varint], [value
//!         offset varint, value length varint], last modified varint, [expires at varint],
//!         [length varint + properties and coordination (`record::encode_version_extras`)]
//!  shards: for each of the point index's 256 shards, the body offset of its first item u64
//!      and its item count u64, so that an open restores the index a shard at a time
//!      (`index/restore.rs`)
//! ```

use std::path::PathBuf;
use std::sync::atomic::AtomicU64;
use std::sync::Arc;

use parking_lot::Mutex;

mod save;
pub use save::{write, Save, SavedContainers};

use super::catalog::{Catalog, ContainerState, Incarnation};
use super::item_index::RestoredHead;
use super::point_index::SHARDS;
use super::{Index, NewVersion, Properties, ShardSource, COMMITTED};
use crate::clock::Timestamp;
use crate::error::Error;
use crate::log::LogAnchor;
use crate::record::{self, DecodedRecord, Reader};
use crate::storage::{Storage, StorageFile};

/// The file's name in the store's directory.
pub const CHECKPOINT_FILE: &str = "index.checkpoint";

const MAGIC: &[u8; 8] = b"TENUREIX";
const FORMAT: u32 = 3;
const HEADER_BYTES: usize = 148;
const FLAG_EXPIRING_ITEMS: u32 = 1;
const KIND_PLAIN: u8 = 1;
const KIND_NODE: u8 = 2;
/// The low bits of an item's kind byte; a node's flags are the rest.
const KIND_MASK: u8 = 3;
const NODE_VALUE: u8 = 4;
const NODE_EXPIRY: u8 = 8;
const NODE_OWN_ETAG: u8 = 16;
const NODE_EXTRAS: u8 = 32;
const CONTAINER_PLACEHOLDER: u8 = 0;
const CONTAINER_NAMED: u8 = 1;
/// The body is written in pieces of about this size, so saving a large index does not hold
/// a second copy of it in memory.
const WRITE_CHUNK_BYTES: usize = 1 << 20;
/// The smallest an item can take in the body (container id, key length, kind, offset: a byte
/// each): bounds the item count a header may claim before anything is allocated for it.
const MINIMUM_ITEM_BYTES: u64 = 4;
/// The largest file an open reads (a sanity bound: 64 GiB).
const MAXIMUM_FILE_BYTES: u64 = 64 << 30;
/// A shard's entry at the body's end: its first item's offset and its item count.
const SHARD_ENTRY_BYTES: usize = 16;
/// The most threads that verify the body's checksum at once.
const MAXIMUM_VERIFY_THREADS: usize = 8;

/// A persisted index read from disk, its checksums verified; not yet loaded.
pub struct Checkpoint {
    pub anchor: LogAnchor,
    seeds: [u64; 4],
    expiring_items: bool,
    containers: u64,
    items: u64,
    shards: u64,
    /// The file, whose body `open_index` reads: the version index, then containers and items
    /// from `entries_start`, then the shards' entries. `read` takes only the version index
    /// (into `anchor`, which the log's verifying scan checks), so that the open's own thread
    /// reads little; `open_index` maps the whole body and verifies its checksum before it
    /// decodes a byte.
    file: Arc<dyn StorageFile>,
    /// The file's path, for the errors of a shard that does not restore.
    path: PathBuf,
    body_bytes: usize,
    body_crc: u32,
    entries_start: usize,
}

/// Where a saved index stands: what the checkpoint policy compares the running log with.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SavedAt {
    pub first_slot: u64,
    /// The end of the last record it holds: an open replays the log from here.
    pub tail: u64,
    pub file_bytes: u64,
}

impl Checkpoint {
    pub fn saved_at(&self) -> SavedAt {
        SavedAt {
            first_slot: self.anchor.first_slot,
            tail: self.anchor.tail,
            file_bytes: HEADER_BYTES as u64 + self.body_bytes as u64,
        }
    }

    /// Fills `catalog` (empty) with the containers, and returns an index that restores the
    /// items a shard at a time as they are needed (`index/restore.rs`). The whole body's
    /// checksum is verified first. Leases are clamped against `now` as the replay clamps them.
    /// On an error the catalog is half-filled and must be dropped.
    pub fn open_index(&self, catalog: &Catalog, now: Timestamp) -> Result<Index, &'static str> {
        let threads = std::thread::available_parallelism()
            .map_or(1, |count| count.get())
            .clamp(1, MAXIMUM_VERIFY_THREADS);
        let body = self.map_body(threads)?;
        let mut reader = Reader::from_position(&body, self.entries_start);
        for _ in 0..self.containers {
            catalog.restore(read_container(&mut reader, now)?)?;
        }
        let shards = shard_ranges(&body, self.items, self.shards, reader.position())?;
        let index = Index::restoring(
            self.seeds,
            Box::new(SavedShards {
                body,
                shards,
                now,
                path: self.path.clone(),
            }),
        );
        if self.expiring_items {
            // Plain heads do not say their expiry without a read of the log: keep the flag.
            index.note_expiry(Some(0));
        }
        Ok(index)
    }

    /// The whole body, mapped, its checksum verified in `threads` parts at once (each part
    /// checksummed on a thread of its own, the parts' checksums combined). Mapped, not read:
    /// the load then reads the page cache's pages where they are, and a copy into fresh
    /// memory (which the kernel must fault in and zero first) took 4 times as long.
    fn map_body(&self, threads: usize) -> Result<MappedBody, &'static str> {
        let mapping = self
            .file
            .map(HEADER_BYTES + self.body_bytes)
            .map_err(|_| "the persisted index could not be mapped")?;
        let body = MappedBody {
            mapping,
            length: self.body_bytes,
        };
        let part_bytes = self.body_bytes.div_ceil(threads.max(1)).max(1);
        let checksum = |part: &[u8]| {
            let mut crc = crc32fast::Hasher::new();
            crc.update(part);
            crc
        };
        let parts: Vec<crc32fast::Hasher> = std::thread::scope(|scope| {
            let mut parts = body.chunks(part_bytes);
            let first = parts.next();
            let others: Vec<_> = parts
                .map(|part| scope.spawn(move || checksum(part)))
                .collect();
            first
                .map(checksum)
                .into_iter()
                .chain(others.into_iter().map(|other| {
                    other
                        .join()
                        .unwrap_or_else(|panic| std::panic::resume_unwind(panic))
                }))
                .collect()
        });
        let mut crc = crc32fast::Hasher::new();
        for part in &parts {
            crc.combine(part);
        }
        if crc.finalize() != self.body_crc {
            return Err("the persisted index's checksum does not match");
        }
        Ok(body)
    }
}

/// A persisted index's body, in a mapping of its file.
struct MappedBody {
    mapping: crate::storage::Mapping,
    length: usize,
}

impl std::ops::Deref for MappedBody {
    type Target = [u8];

    fn deref(&self) -> &[u8] {
        // SAFETY: the mapping covers the header and `length` bytes of body (`map_body`), and
        // lives as long as `self`; the file is never written again once made (a new close
        // writes a new file), so the bytes do not change under the load.
        unsafe { std::slice::from_raw_parts(self.mapping.pointer().add(HEADER_BYTES), self.length) }
    }
}

/// A persisted index's items, restored a shard at a time into the index `open_index` made.
struct SavedShards {
    body: MappedBody,
    /// Each shard's bytes in `body` and its item count.
    shards: Vec<(std::ops::Range<usize>, u64)>,
    /// The open's time, which leases are clamped against (as at the open).
    now: Timestamp,
    path: PathBuf,
}

impl ShardSource for SavedShards {
    fn restore_shard(&self, shard: usize, index: &Index) -> crate::error::Result<()> {
        let (range, items) = self.shards[shard].clone();
        index.reserve_shard(shard, usize::try_from(items).unwrap_or(usize::MAX));
        load_items(&self.body[range], items, shard, index, self.now)
            .map_err(|reason| self.failure(shard, reason))
    }

    fn failure(&self, shard: usize, reason: &str) -> Error {
        Error::corruption(
            &self.path,
            self.shards[shard].0.start as u64 + HEADER_BYTES as u64,
            format!(
                "shard {shard} of the persisted index could not be restored ({reason}); \
                 reopen the store: an open without this file rebuilds the index from the log"
            ),
        )
    }
}

/// Each shard's bytes and item count in `body`, from the entries at its end (`shards` of
/// them, for `items` items); the items start at `items_start`. Every entry is checked: in
/// order, inside the items, with room for its items, the counts adding up.
fn shard_ranges(
    body: &[u8],
    items: u64,
    shards: u64,
    items_start: usize,
) -> Result<Vec<(std::ops::Range<usize>, u64)>, &'static str> {
    if shards != SHARDS as u64 {
        return Err("a shard count that is not the point index's");
    }
    let items_end = body
        .len()
        .checked_sub(SHARDS * SHARD_ENTRY_BYTES)
        .filter(|end| *end >= items_start)
        .ok_or("the shard entries overlap the items")?;
    let entries: Vec<(u64, u64)> = body[items_end..]
        .chunks_exact(SHARD_ENTRY_BYTES)
        .map(|entry| {
            let word = |at: usize| u64::from_le_bytes(entry[at..at + 8].try_into().expect("8"));
            (word(0), word(8))
        })
        .collect();
    let mut ranges = Vec::with_capacity(SHARDS);
    let mut counted = 0u64;
    for (shard, (start, count)) in entries.iter().enumerate() {
        let end = entries
            .get(shard + 1)
            .map_or(items_end as u64, |(next_start, _)| *next_start);
        let first = shard == 0 && *start != items_start as u64;
        if first || end < *start || end > items_end as u64 {
            return Err("shard entries out of order");
        }
        if count
            .checked_mul(MINIMUM_ITEM_BYTES)
            .is_none_or(|least| least > end - start)
        {
            return Err("a shard with more items than its bytes can hold");
        }
        counted += count;
        ranges.push((*start as usize..end as usize, *count));
    }
    if counted != items {
        return Err("shard item counts that do not add up to the items");
    }
    Ok(ranges)
}

/// Restores the `count` items that are all of `bytes`, which must all be of shard `shard`.
fn load_items(
    bytes: &[u8],
    count: u64,
    shard: usize,
    index: &Index,
    now: Timestamp,
) -> Result<(), &'static str> {
    let mut reader = Reader::new(bytes);
    let mut guard = crossbeam_epoch::pin();
    for item in 0..count {
        let container_id = reader.varint()?;
        let key_length = usize::try_from(reader.varint()?).map_err(|_| "a key too long")?;
        let index_key = super::index_key(container_id, reader.take(key_length)?);
        let kind = reader.u8()?;
        let head = match kind & KIND_MASK {
            KIND_PLAIN if kind == KIND_PLAIN => RestoredHead::Plain(reader.varint()?),
            KIND_NODE => RestoredHead::Node(read_node(&mut reader, kind, now)?),
            _ => return Err("an item of unknown kind"),
        };
        index.restore_slot(shard, &index_key, head, &guard)?;
        // Let the epoch advance now and then in a long load.
        if item % 4096 == 4095 {
            guard.repin();
        }
    }
    if reader.position() != bytes.len() {
        return Err("bytes left after a shard's items");
    }
    Ok(())
}

/// The persisted index in `storage`, when there is one whose header's checksum holds (`load`
/// checks the body's); `None` when the file is missing, unreadable, short, damaged or of an
/// unknown format (the open replays).
pub fn read(storage: &dyn Storage) -> Option<Checkpoint> {
    let path = storage.path().join(CHECKPOINT_FILE);
    let file = storage.open_read_only(CHECKPOINT_FILE).ok()?;
    let length = file.length().ok()?;
    if length < HEADER_BYTES as u64 || length > MAXIMUM_FILE_BYTES {
        return None;
    }
    let mut header = [0u8; HEADER_BYTES];
    file.read_at(&mut header, 0).ok()?;
    let mut fields = Reader::new(&header);
    if fields.take(8).ok()? != MAGIC
        || fields.u32().ok()? != FORMAT
        || crc32fast::hash(&header[..144]) != u32::from_le_bytes(header[144..148].try_into().ok()?)
    {
        return None;
    }
    let flags = fields.u32().ok()?;
    let mut anchor = LogAnchor {
        segment_size_bytes: fields.u64().ok()?,
        generation: fields.u64().ok()?,
        sequence: fields.u64().ok()?,
        first_slot: fields.u64().ok()?,
        tail: fields.u64().ok()?,
        next_version: fields.u64().ok()?,
        version_index: Vec::new(),
        fingerprint: 0,
    };
    let version_index_entries = fields.u64().ok()?;
    let containers = fields.u64().ok()?;
    let items = fields.u64().ok()?;
    let seeds = [
        fields.u64().ok()?,
        fields.u64().ok()?,
        fields.u64().ok()?,
        fields.u64().ok()?,
    ];
    let body_bytes = fields.u64().ok()?;
    let shards = fields.u64().ok()?;
    let body_crc = fields.u32().ok()?;
    anchor.fingerprint = fields.u32().ok()?;
    if body_bytes != length - HEADER_BYTES as u64
        || version_index_entries.checked_mul(16)? > body_bytes
        || items.checked_mul(MINIMUM_ITEM_BYTES)? > body_bytes
        || containers.checked_mul(17)? > body_bytes
        || shards.checked_mul(SHARD_ENTRY_BYTES as u64)? > body_bytes
    {
        return None;
    }
    let index_bytes = (version_index_entries * 16) as usize;
    let mut version_index = vec![0u8; index_bytes];
    file.read_at(&mut version_index, HEADER_BYTES as u64).ok()?;
    anchor.version_index = version_index
        .chunks_exact(16)
        .map(|entry| {
            let word = |at: usize| u64::from_le_bytes(entry[at..at + 8].try_into().expect("8"));
            (word(0), word(8))
        })
        .collect();
    Some(Checkpoint {
        anchor,
        seeds,
        expiring_items: flags & FLAG_EXPIRING_ITEMS != 0,
        containers,
        items,
        shards,
        file,
        path,
        body_bytes: usize::try_from(body_bytes).ok()?,
        body_crc,
        entries_start: index_bytes,
    })
}

fn read_container(
    reader: &mut Reader<'_>,
    now: Timestamp,
) -> Result<Arc<Incarnation>, &'static str> {
    let kind = reader.u8()?;
    let id = reader.u64()?;
    let deleted_version = reader.u64()?;
    let incarnation = match kind {
        CONTAINER_PLACEHOLDER => Incarnation {
            id,
            name: String::new(),
            default_ttl_seconds: None,
            deleted_version: AtomicU64::new(deleted_version),
            state: Mutex::new(ContainerState {
                lease: None,
                metadata: Vec::new(),
                etag_version: 0,
                last_modified: 0,
            }),
        },
        CONTAINER_NAMED => {
            let length = reader.u32()? as usize;
            let DecodedRecord::ContainerState {
                id: state_id,
                name,
                default_ttl_seconds,
                etag_version,
                last_modified,
                metadata,
                lease,
            } = record::decode(reader.take(length)?)?
            else {
                return Err("a container entry that is not a container's state");
            };
            if state_id != id {
                return Err("a container entry with two ids");
            }
            Incarnation {
                id,
                name: name.to_owned(),
                default_ttl_seconds,
                deleted_version: AtomicU64::new(deleted_version),
                state: Mutex::new(ContainerState {
                    lease: lease.map(|lease| lease.clamped_after_reopen(now)),
                    metadata,
                    etag_version,
                    last_modified,
                }),
            }
        }
        _ => return Err("a container entry of unknown kind"),
    };
    Ok(Arc::new(incarnation))
}

/// A node item's fields after its kind byte, `kind` (with its flags).
fn read_node(
    reader: &mut Reader<'_>,
    kind: u8,
    now: Timestamp,
) -> Result<NewVersion, &'static str> {
    let flag = |bit: u8| kind & bit != 0;
    let version = reader.varint()?;
    let etag_version = if flag(NODE_OWN_ETAG) {
        reader.varint()?
    } else {
        version
    };
    let value = if flag(NODE_VALUE) {
        let offset = reader.varint()?;
        let length = u32::try_from(reader.varint()?).map_err(|_| "a value too long")?;
        Some((offset, length))
    } else {
        None
    };
    let last_modified = reader.varint()?;
    let expires_at = if flag(NODE_EXPIRY) {
        Some(reader.varint()?)
    } else {
        None
    };
    let (content_type, metadata, coordination) = if flag(NODE_EXTRAS) {
        let extras_length = usize::try_from(reader.varint()?).map_err(|_| "extras too long")?;
        record::decode_version_extras(reader.take(extras_length)?)?
    } else {
        (None, Vec::new(), Default::default())
    };
    if version == 0
        || kind & !(KIND_MASK | NODE_VALUE | NODE_EXPIRY | NODE_OWN_ETAG | NODE_EXTRAS) != 0
        || value.is_some_and(|(offset, _)| offset == 0)
    {
        return Err("an impossible version");
    }
    Ok(NewVersion {
        version,
        etag_version,
        status: COMMITTED,
        value: value.map(|(offset, length)| super::ValueLocation::new(offset, length)),
        last_modified,
        expires_at,
        properties: Properties::boxed(content_type, metadata),
        coordination: super::coordination_box(coordination.clamped_after_reopen(now)),
    })
}
