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
//!  0 magic "TENUREIX"   8 format u32 = 2   12 flags u32 (bit 0: an expiring item was written)
//! 16 segment size u64   24 generation u64  32 sequence u64   40 first slot u64   48 tail u64
//! 56 next version u64   64 version-index entries u64   72 containers u64   80 items u64
//! 88 hash seeds 4 × u64   120 body bytes u64   128 load chunks u64   136 body crc32 u32
//! 140 log fingerprint u32   144 header crc32 u32 (0..144)
//! body
//!  version index: (version u64, log offset u64) × entries
//!  containers, oldest first: kind u8 (0 placeholder, 1 named), id u64, deleted version u64,
//!      named: length u32 + a container-state payload (`record::encode_container_state`)
//!  items, in the point index's order (varints are LEB128, `record::put_varint`): container
//!      id varint, key length varint, key, then a kind byte:
//!      1 (plain head): value offset varint
//!      2 + flags (node; flags: 4 a value, 8 an expiry, 16 an ETag version of its own,
//!         32 properties or coordination): version varint, [ETag version varint], [value
//!         offset varint, value length varint], last modified varint, [expires at varint],
//!         [length varint + properties and coordination (`record::encode_version_extras`)]
//!  load chunks: the body offset of every `LOAD_CHUNK_ITEMS`-th item (u64 each), so that
//!      several threads can load items at once
//! ```

use std::sync::atomic::AtomicU64;
use std::sync::Arc;

use parking_lot::Mutex;

mod save;
pub use save::{write, Save, SavedContainers};

use super::catalog::{Catalog, ContainerState, Incarnation};
use super::item_index::RestoredHead;
use super::{Index, NewVersion, Properties, COMMITTED};
use crate::clock::Timestamp;
use crate::log::LogAnchor;
use crate::record::{self, DecodedRecord, Reader};
use crate::storage::{Storage, StorageFile};

/// The file's name in the store's directory.
pub const CHECKPOINT_FILE: &str = "index.checkpoint";

const MAGIC: &[u8; 8] = b"TENUREIX";
const FORMAT: u32 = 2;
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
/// Items in one load chunk: the unit a loading thread takes.
const LOAD_CHUNK_ITEMS: u64 = 1 << 16;
/// The most threads that load at once.
const MAXIMUM_LOAD_THREADS: usize = 8;

/// A persisted index read from disk, its checksums verified; not yet loaded.
pub struct Checkpoint {
    pub anchor: LogAnchor,
    seeds: [u64; 4],
    expiring_items: bool,
    containers: u64,
    items: u64,
    load_chunks: u64,
    /// The file, whose body `load` reads: the version index, then containers and items from
    /// `entries_start`, then the load chunks' offsets. `read` takes only the version index
    /// (into `anchor`, which the log's verifying scan checks), so that the open's own thread
    /// reads little; `load` maps the whole body and verifies its checksum on the loading
    /// threads before it decodes a byte.
    file: Arc<dyn StorageFile>,
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

    /// How many items it holds (to size the index it is loaded into).
    pub fn items(&self) -> usize {
        usize::try_from(self.items).unwrap_or(usize::MAX)
    }

    /// The seeds of the hash of the index it was taken from.
    pub fn seeds(&self) -> [u64; 4] {
        self.seeds
    }

    /// Fills `index` (made by `Index::with_seeds`, empty) and `catalog` (empty), the items
    /// on several threads. Leases are clamped against `now` as the replay clamps them. On an
    /// error both are half-filled and must be dropped.
    pub fn load(
        &self,
        index: &Index,
        catalog: &Catalog,
        now: Timestamp,
    ) -> Result<(), &'static str> {
        let available_threads = std::thread::available_parallelism()
            .map_or(1, |count| count.get())
            .clamp(1, MAXIMUM_LOAD_THREADS);
        let body = self.map_body(available_threads)?;
        let mut reader = Reader::from_position(&body, self.entries_start);
        for _ in 0..self.containers {
            catalog.restore(read_container(&mut reader, now)?)?;
        }
        let chunks = chunk_ranges(&body, self.items, self.load_chunks, reader.position())?;
        let threads = available_threads.min(chunks.len().max(1));
        let load_share = |first: usize| -> Result<(), &'static str> {
            for chunk in (first..chunks.len()).step_by(threads) {
                let (range, items) = chunks[chunk].clone();
                load_items(&body[range], items, index, now)?;
            }
            Ok(())
        };
        if threads == 1 {
            load_share(0)?;
        } else {
            std::thread::scope(|scope| {
                let shares: Vec<_> = (1..threads)
                    .map(|first| scope.spawn(move || load_share(first)))
                    .collect();
                let mine = load_share(0);
                shares
                    .into_iter()
                    .map(|share| {
                        share
                            .join()
                            .unwrap_or_else(|panic| std::panic::resume_unwind(panic))
                    })
                    .fold(mine, Result::and)
            })?;
        }
        if self.expiring_items {
            // Plain heads do not say their expiry without a read of the log: keep the flag.
            index.note_expiry(Some(0));
        }
        Ok(())
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

/// Each load chunk's bytes and item count in `body`, from the offsets at its end (`load_chunks`
/// of them for `items` items); the items start at `items_start`. Every offset is checked: in
/// order, inside the items.
fn chunk_ranges(
    body: &[u8],
    items: u64,
    load_chunks: u64,
    items_start: usize,
) -> Result<Vec<(std::ops::Range<usize>, u64)>, &'static str> {
    let expected_chunks = items.div_ceil(LOAD_CHUNK_ITEMS);
    if load_chunks != expected_chunks {
        return Err("a load-chunk count that does not fit the items");
    }
    let table_bytes = usize::try_from(load_chunks * 8).map_err(|_| "too many chunks")?;
    let items_end = body
        .len()
        .checked_sub(table_bytes)
        .filter(|end| *end >= items_start)
        .ok_or("the load chunks overlap the items")?;
    let starts: Vec<usize> = body[items_end..]
        .chunks_exact(8)
        .map(|word| u64::from_le_bytes(word.try_into().expect("8 bytes")) as usize)
        .collect();
    if starts.first().is_some_and(|first| *first != items_start)
        || (starts.is_empty() && items_end != items_start)
    {
        return Err("the first load chunk is not where the items start");
    }
    let mut ranges = Vec::with_capacity(starts.len());
    for (chunk, start) in starts.iter().enumerate() {
        let end = starts.get(chunk + 1).copied().unwrap_or(items_end);
        if end <= *start || end > items_end {
            return Err("load chunks out of order");
        }
        let chunk_items = LOAD_CHUNK_ITEMS.min(items - chunk as u64 * LOAD_CHUNK_ITEMS);
        ranges.push((*start..end, chunk_items));
    }
    Ok(ranges)
}

/// Restores the `count` items that are all of `bytes`.
fn load_items(bytes: &[u8], count: u64, index: &Index, now: Timestamp) -> Result<(), &'static str> {
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
        index.restore_slot(&index_key, head, &guard)?;
        // Let the epoch advance now and then in a long load.
        if item % 4096 == 4095 {
            guard.repin();
        }
    }
    if reader.position() != bytes.len() {
        return Err("bytes left after a load chunk's items");
    }
    Ok(())
}

/// The persisted index in `storage`, when there is one whose header's checksum holds (`load`
/// checks the body's); `None` when the file is missing, unreadable, short, damaged or of an
/// unknown format (the open replays).
pub fn read(storage: &dyn Storage) -> Option<Checkpoint> {
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
    let load_chunks = fields.u64().ok()?;
    let body_crc = fields.u32().ok()?;
    anchor.fingerprint = fields.u32().ok()?;
    if body_bytes != length - HEADER_BYTES as u64
        || version_index_entries.checked_mul(16)? > body_bytes
        || items.checked_mul(MINIMUM_ITEM_BYTES)? > body_bytes
        || containers.checked_mul(17)? > body_bytes
        || load_chunks.checked_mul(8)? > body_bytes
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
        load_chunks,
        file,
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
