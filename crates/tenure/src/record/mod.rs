//! The engine's record payloads (inside a log record's payload; see docs/design.md §7).
//! Every length is checked before it is trusted; a payload that passes the log's CRC but does
//! not decode is `Corruption`.

use crate::clock::Timestamp;
use crate::rules::lease::{LeaseDuration, LeaseId, LeaseRecord};
use crate::rules::lock::{LockHandle, LockRecord};

/// Bytes of record buffer a thread keeps between writes (see [`with_record_scratch`]): a
/// larger record's buffer is freed after use, so an idle thread holds at most this much.
const RECORD_SCRATCH_KEPT_BYTES: usize = 256 * 1024;

thread_local! {
    static RECORD_SCRATCH: std::cell::RefCell<Vec<u8>> = const { std::cell::RefCell::new(Vec::new()) };
}

/// Runs `encode` on this thread's record buffer, emptied first. Writes encode their log
/// record there and copy it into the log from inside `encode`, so a write allocates nothing
/// for its record. Not reentrant: `encode` must not write to the store.
pub fn with_record_scratch<R>(encode: impl FnOnce(&mut Vec<u8>) -> R) -> R {
    RECORD_SCRATCH.with_borrow_mut(|scratch| {
        scratch.clear();
        let result = encode(scratch);
        if scratch.capacity() > RECORD_SCRATCH_KEPT_BYTES {
            *scratch = Vec::new();
        }
        result
    })
}

pub const OP_ITEM_WRITE: u8 = 1;
pub const OP_CONTAINER_CREATE: u8 = 2;
pub const OP_CONTAINER_DELETE: u8 = 3;
pub const OP_CONTAINER_SET_METADATA: u8 = 4;
pub const OP_BATCH: u8 = 5;
/// Items compaction copied forward, each with the version it was written at (its ETag), in
/// the fixed-width layout of an item write. Read (logs written before op 10), no longer written.
pub const OP_RELOCATED_ITEMS: u8 = 6;
/// A live container's whole state, copied forward by compaction.
pub const OP_CONTAINER_STATE: u8 = 7;
/// A lease or lock change on an item: same value, same ETag, new coordination state.
pub const OP_ITEM_COORDINATION: u8 = 8;
/// A lease change on a container.
pub const OP_CONTAINER_LEASE: u8 = 9;
/// Items compaction copied forward, compactly: what compaction leaves on disk is mostly these,
/// so each item costs about 7 bytes besides its key and value (`RelocatedItemsEncoder`).
pub const OP_RELOCATED_ITEMS_COMPACT: u8 = 10;

/// Flags of one compactly relocated item: which optional fields follow.
const RELOCATED_HAS_VALUE: u8 = 1;
const RELOCATED_HAS_EXPIRY: u8 = 2;
const RELOCATED_HAS_ETAG_VERSION: u8 = 4;
const RELOCATED_HAS_CONTENT_TYPE: u8 = 8;
const RELOCATED_HAS_METADATA: u8 = 16;
const RELOCATED_HAS_COORDINATION: u8 = 32;

/// An item's pessimistic-concurrency state: its lease and its cache lock (at most one live).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Coordination {
    pub lease: Option<LeaseRecord>,
    pub lock: Option<LockRecord>,
}

impl Coordination {
    /// The state of a recovered record: a lease is clamped so that a clock that jumped back
    /// cannot stretch it (docs/spec.md §11); a lock keeps its absolute deadline (a lock
    /// timeout is short and not recorded separately).
    pub(crate) fn clamped_after_reopen(self, now: Timestamp) -> Coordination {
        Coordination {
            lease: self.lease.map(|lease| lease.clamped_after_reopen(now)),
            lock: self.lock,
        }
    }

    pub fn is_empty(&self) -> bool {
        self.lease.is_none() && self.lock.is_none()
    }
}

pub type Metadata = Vec<(String, String)>;

/// One item write as it is logged.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ItemWrite<'a> {
    pub container_id: u64,
    pub key: &'a [u8],
    /// `None` deletes the item.
    pub value: Option<&'a [u8]>,
    pub last_modified: Timestamp,
    pub expires_at: Option<Timestamp>,
    pub content_type: Option<&'a str>,
    pub metadata: &'a [(String, String)],
    /// The version the item's ETag shows; 0 = the record's own version.
    pub etag_version: u64,
    pub coordination: Option<&'a Coordination>,
    /// The write created the item (it did not exist before): the change feed's `Created`.
    pub created: bool,
    /// A deletion that records a TTL expiry (the change feed's `Expired`).
    pub expired: bool,
}

/// Where an encoder writes: a growing buffer, or a payload of known size in place
/// ([`PayloadWriter`]: an item write's record encoded straight into the log's mapping).
pub trait Sink {
    fn extend_from_slice(&mut self, bytes: &[u8]);
    fn push(&mut self, byte: u8);
    /// Bytes written so far.
    fn written_bytes(&self) -> usize;
}

impl Sink for Vec<u8> {
    fn extend_from_slice(&mut self, bytes: &[u8]) {
        Vec::extend_from_slice(self, bytes);
    }
    fn push(&mut self, byte: u8) {
        Vec::push(self, byte);
    }
    fn written_bytes(&self) -> usize {
        self.len()
    }
}

/// Writes a payload into `bytes`, which it must fill exactly (sized beforehand, as by
/// [`item_write_size`]): a write past the end panics, and [`PayloadWriter::finish`] checks
/// that nothing is left.
pub struct PayloadWriter<'a> {
    bytes: &'a mut [u8],
    written: usize,
}

impl<'a> PayloadWriter<'a> {
    pub fn new(bytes: &'a mut [u8]) -> PayloadWriter<'a> {
        PayloadWriter { bytes, written: 0 }
    }

    /// The payload, asserted whole.
    pub fn finish(self) -> &'a mut [u8] {
        assert_eq!(
            self.written,
            self.bytes.len(),
            "the payload's size was counted wrong"
        );
        self.bytes
    }
}

impl Sink for PayloadWriter<'_> {
    fn extend_from_slice(&mut self, bytes: &[u8]) {
        self.bytes[self.written..self.written + bytes.len()].copy_from_slice(bytes);
        self.written += bytes.len();
    }
    fn push(&mut self, byte: u8) {
        self.bytes[self.written] = byte;
        self.written += 1;
    }
    fn written_bytes(&self) -> usize {
        self.written
    }
}

fn put_u16(out: &mut impl Sink, value: u16) {
    out.extend_from_slice(&value.to_le_bytes());
}
fn put_u32(out: &mut impl Sink, value: u32) {
    out.extend_from_slice(&value.to_le_bytes());
}
fn put_u64(out: &mut impl Sink, value: u64) {
    out.extend_from_slice(&value.to_le_bytes());
}

fn put_metadata(out: &mut impl Sink, metadata: &[(String, String)]) {
    put_u32(out, metadata.len() as u32);
    for (name, value) in metadata {
        put_u32(out, name.len() as u32);
        out.extend_from_slice(name.as_bytes());
        put_u32(out, value.len() as u32);
        out.extend_from_slice(value.as_bytes());
    }
}

/// Bytes `encode_item_write` will produce (so the log record can be reserved first).
pub fn item_write_size(write: &ItemWrite<'_>) -> usize {
    let metadata: usize = write
        .metadata
        .iter()
        .map(|(name, value)| 8 + name.len() + value.len())
        .sum();
    8 + 4
        + write.key.len()
        + 1
        + 8
        + 8
        + 2
        + write.content_type.map_or(0, str::len)
        + 4
        + metadata
        + 8
        + coordination_size(write.coordination)
        + 4
        + write.value.map_or(0, <[u8]>::len)
}

/// Bytes `encode_coordination` will produce, counted without encoding (no allocation on the
/// write path).
fn coordination_size(coordination: Option<&Coordination>) -> usize {
    let lease = coordination.and_then(|coordination| coordination.lease.as_ref());
    let lock = coordination.and_then(|coordination| coordination.lock.as_ref());
    // flags; lease: id 16, duration 4, deadline 8, break deadline 8, broken 1, fence 8,
    // holder length 2 + holder; lock: handle 16, deadline 8, item absent 1.
    1 + lease.map_or(0, |lease| {
        16 + 4 + 8 + 8 + 1 + 8 + 2 + lease.holder.as_deref().map_or(0, str::len)
    }) + lock.map_or(0, |_| 16 + 8 + 1)
}

fn encode_lease(out: &mut impl Sink, lease: &LeaseRecord) {
    out.extend_from_slice(&lease.id.0.to_le_bytes());
    put_u32(
        out,
        match lease.duration {
            LeaseDuration::Fixed { seconds } => seconds,
            LeaseDuration::Infinite => 0,
        },
    );
    put_u64(out, lease.deadline.unwrap_or(0));
    put_u64(out, lease.break_deadline.unwrap_or(0));
    out.push(u8::from(lease.broken));
    put_u64(out, lease.fence);
    let holder = lease.holder.as_deref().unwrap_or("");
    put_u16(
        out,
        if lease.holder.is_some() {
            holder.len() as u16
        } else {
            u16::MAX
        },
    );
    out.extend_from_slice(holder.as_bytes());
}

/// flags (bit 0 lease, bit 1 lock), then the lease, then the lock.
pub fn encode_coordination(out: &mut impl Sink, coordination: Option<&Coordination>) {
    let lease = coordination.and_then(|coordination| coordination.lease.as_ref());
    let lock = coordination.and_then(|coordination| coordination.lock.as_ref());
    out.push(u8::from(lease.is_some()) | (u8::from(lock.is_some()) << 1));
    if let Some(lease) = lease {
        encode_lease(out, lease);
    }
    if let Some(lock) = lock {
        out.extend_from_slice(&lock.handle.0.to_le_bytes());
        put_u64(out, lock.deadline);
        out.push(u8::from(lock.item_absent));
    }
}

/// Bytes `encode_item_coordination` will produce (so the record can be reserved first).
pub fn item_coordination_size(key: &[u8], coordination: &Coordination) -> usize {
    1 + 8 + 4 + key.len() + 8 + 8 + coordination_size(Some(coordination))
}

/// Encodes the record into `out` (cleared first): callers reuse one buffer per thread, so a
/// lease action allocates nothing for its record.
pub fn encode_item_coordination(
    out: &mut Vec<u8>,
    container_id: u64,
    key: &[u8],
    etag_version: u64,
    expires_at: Option<Timestamp>,
    coordination: &Coordination,
) {
    out.clear();
    out.push(OP_ITEM_COORDINATION);
    put_u64(out, container_id);
    put_u32(out, key.len() as u32);
    out.extend_from_slice(key);
    put_u64(out, etag_version);
    put_u64(out, expires_at.unwrap_or(0));
    encode_coordination(out, Some(coordination));
}

pub fn encode_container_lease(container_id: u64, lease: Option<&LeaseRecord>) -> Vec<u8> {
    let mut out = vec![OP_CONTAINER_LEASE];
    put_u64(&mut out, container_id);
    encode_coordination(
        &mut out,
        Some(&Coordination {
            lease: lease.cloned(),
            lock: None,
        }),
    );
    out
}

/// Appends the item write; returns the offset of the value within `out`.
pub fn encode_item_write(out: &mut impl Sink, write: &ItemWrite<'_>) -> usize {
    put_u64(out, write.container_id);
    put_u32(out, write.key.len() as u32);
    out.extend_from_slice(write.key);
    // bit 0: has a value; bit 1: created the item; bit 2: records an expiry.
    out.push(
        u8::from(write.value.is_some())
            | (u8::from(write.created) << 1)
            | (u8::from(write.expired) << 2),
    );
    put_u64(out, write.last_modified);
    put_u64(out, write.expires_at.unwrap_or(0));
    match write.content_type {
        Some(content_type) => {
            put_u16(out, content_type.len() as u16);
            out.extend_from_slice(content_type.as_bytes());
        }
        None => put_u16(out, u16::MAX),
    }
    put_metadata(out, write.metadata);
    put_u64(out, write.etag_version);
    encode_coordination(out, write.coordination);
    let value = write.value.unwrap_or(&[]);
    put_u32(out, value.len() as u32);
    let value_offset = out.written_bytes();
    out.extend_from_slice(value);
    value_offset
}

pub fn encode_container_create(
    name: &str,
    default_ttl_seconds: Option<u32>,
    metadata: &[(String, String)],
    created_at: Timestamp,
) -> Vec<u8> {
    let mut out = vec![OP_CONTAINER_CREATE];
    put_u32(&mut out, name.len() as u32);
    out.extend_from_slice(name.as_bytes());
    put_u32(&mut out, default_ttl_seconds.unwrap_or(0));
    put_u64(&mut out, created_at);
    put_metadata(&mut out, metadata);
    out
}

/// LEB128: 7 bits a byte, low bits first, the high bit set on every byte but the last.
fn put_varint(out: &mut Vec<u8>, mut value: u64) {
    while value >= 0x80 {
        out.push(value as u8 | 0x80);
        value >>= 7;
    }
    out.push(value as u8);
}

/// `value - previous` as a zigzag-coded varint: small either way for neighbours.
fn put_difference(out: &mut Vec<u8>, value: u64, previous: u64) {
    let difference = value.wrapping_sub(previous) as i64;
    put_varint(out, ((difference << 1) ^ (difference >> 63)) as u64);
}

/// A relocation record (op 10) being built: the item count, then per item
///
/// ```text
/// version − previous item's (zigzag varint) | flags u8 | container id (varint)
/// key length (varint) | key | last modified − previous item's (zigzag varint)
/// [expires at (varint)] [etag version (varint)] [content type: u16 length, text]
/// [metadata, as in an item write] [coordination, as in an item write]
/// value length (varint) | value
/// ```
///
/// where the bracketed fields are present only when their flag is set, and the ETag version
/// only when it differs from the version.
pub struct RelocatedItemsEncoder {
    payload: Vec<u8>,
    count: u32,
    previous_version: u64,
    previous_last_modified: u64,
}

impl RelocatedItemsEncoder {
    pub fn new() -> RelocatedItemsEncoder {
        let mut payload = vec![OP_RELOCATED_ITEMS_COMPACT];
        put_u32(&mut payload, 0);
        RelocatedItemsEncoder {
            payload,
            count: 0,
            previous_version: 0,
            previous_last_modified: 0,
        }
    }

    /// Appends one item copied forward at `version`; returns its value's offset in the payload.
    pub fn push(&mut self, version: u64, write: &ItemWrite<'_>) -> usize {
        let out = &mut self.payload;
        let coordination = write
            .coordination
            .filter(|coordination| coordination.lease.is_some() || coordination.lock.is_some());
        let flags = [
            (write.value.is_some(), RELOCATED_HAS_VALUE),
            (write.expires_at.is_some(), RELOCATED_HAS_EXPIRY),
            (write.etag_version != version, RELOCATED_HAS_ETAG_VERSION),
            (write.content_type.is_some(), RELOCATED_HAS_CONTENT_TYPE),
            (!write.metadata.is_empty(), RELOCATED_HAS_METADATA),
            (coordination.is_some(), RELOCATED_HAS_COORDINATION),
        ]
        .iter()
        .filter(|(set, _)| *set)
        .fold(0, |flags, (_, flag)| flags | flag);
        put_difference(out, version, self.previous_version);
        out.push(flags);
        put_varint(out, write.container_id);
        put_varint(out, write.key.len() as u64);
        out.extend_from_slice(write.key);
        put_difference(out, write.last_modified, self.previous_last_modified);
        if let Some(expires_at) = write.expires_at {
            put_varint(out, expires_at);
        }
        if write.etag_version != version {
            put_varint(out, write.etag_version);
        }
        if let Some(content_type) = write.content_type {
            put_u16(out, content_type.len() as u16);
            out.extend_from_slice(content_type.as_bytes());
        }
        if !write.metadata.is_empty() {
            put_metadata(out, write.metadata);
        }
        if coordination.is_some() {
            encode_coordination(out, coordination);
        }
        let value = write.value.unwrap_or(&[]);
        put_varint(out, value.len() as u64);
        let value_offset = out.len();
        out.extend_from_slice(value);
        self.count += 1;
        self.previous_version = version;
        self.previous_last_modified = write.last_modified;
        value_offset
    }

    /// The finished payload.
    pub fn finish(mut self) -> Vec<u8> {
        self.payload[1..5].copy_from_slice(&self.count.to_le_bytes());
        self.payload
    }
}

#[allow(clippy::too_many_arguments)]
pub fn encode_container_state(
    id: u64,
    name: &str,
    default_ttl_seconds: Option<u32>,
    etag_version: u64,
    last_modified: Timestamp,
    metadata: &[(String, String)],
    lease: Option<&LeaseRecord>,
) -> Vec<u8> {
    let mut out = vec![OP_CONTAINER_STATE];
    put_u64(&mut out, id);
    put_u32(&mut out, name.len() as u32);
    out.extend_from_slice(name.as_bytes());
    put_u32(&mut out, default_ttl_seconds.unwrap_or(0));
    put_u64(&mut out, etag_version);
    put_u64(&mut out, last_modified);
    put_metadata(&mut out, metadata);
    encode_coordination(
        &mut out,
        Some(&Coordination {
            lease: lease.cloned(),
            lock: None,
        }),
    );
    out
}

pub fn encode_container_delete(container_id: u64) -> Vec<u8> {
    let mut out = vec![OP_CONTAINER_DELETE];
    put_u64(&mut out, container_id);
    out
}

pub fn encode_container_set_metadata(
    container_id: u64,
    metadata: &[(String, String)],
    modified_at: Timestamp,
) -> Vec<u8> {
    let mut out = vec![OP_CONTAINER_SET_METADATA];
    put_u64(&mut out, container_id);
    put_u64(&mut out, modified_at);
    put_metadata(&mut out, metadata);
    out
}

struct Reader<'a> {
    bytes: &'a [u8],
    at: usize,
}

type Decoded<T> = Result<T, &'static str>;

impl<'a> Reader<'a> {
    fn take(&mut self, count: usize) -> Decoded<&'a [u8]> {
        let end = self.at.checked_add(count).ok_or("length overflow")?;
        if end > self.bytes.len() {
            return Err("a length runs past the end of the record");
        }
        let slice = &self.bytes[self.at..end];
        self.at = end;
        Ok(slice)
    }
    fn u8(&mut self) -> Decoded<u8> {
        Ok(self.take(1)?[0])
    }
    fn u16(&mut self) -> Decoded<u16> {
        Ok(u16::from_le_bytes(self.take(2)?.try_into().unwrap()))
    }
    fn u32(&mut self) -> Decoded<u32> {
        Ok(u32::from_le_bytes(self.take(4)?.try_into().unwrap()))
    }
    fn u64(&mut self) -> Decoded<u64> {
        Ok(u64::from_le_bytes(self.take(8)?.try_into().unwrap()))
    }
    fn varint(&mut self) -> Decoded<u64> {
        let mut value = 0u64;
        for index in 0..10 {
            let byte = self.u8()?;
            let bits = u64::from(byte & 0x7f);
            if index == 9 && bits > 1 {
                return Err("a varint overflows 64 bits");
            }
            value |= bits << (7 * index);
            if byte & 0x80 == 0 {
                return Ok(value);
            }
        }
        Err("a varint runs past 10 bytes")
    }
    fn difference(&mut self, previous: u64) -> Decoded<u64> {
        let zigzag = self.varint()?;
        let difference = ((zigzag >> 1) as i64) ^ -((zigzag & 1) as i64);
        Ok(previous.wrapping_add(difference as u64))
    }
    fn length(&mut self) -> Decoded<usize> {
        usize::try_from(self.varint()?).map_err(|_| "implausible length")
    }
    fn text(&mut self, length: usize) -> Decoded<&'a str> {
        std::str::from_utf8(self.take(length)?).map_err(|_| "text is not UTF-8")
    }
    /// A container name as the API accepts it: a store must never recover a container that
    /// no call can name (found by the record_decoder fuzz target: a name with a NUL).
    fn container_name(&mut self, length: usize) -> Decoded<&'a str> {
        let name = self.text(length)?;
        crate::rules::validate::container_name(name)
            .map(|()| name)
            .map_err(|_| "invalid container name")
    }
    fn metadata(&mut self) -> Decoded<Metadata> {
        let count = self.u32()? as usize;
        if count > self.bytes.len() {
            return Err("implausible metadata count");
        }
        let mut metadata = Vec::with_capacity(count);
        for _ in 0..count {
            let name_length = self.u32()? as usize;
            let name = self.text(name_length)?.to_owned();
            let value_length = self.u32()? as usize;
            let value = self.text(value_length)?.to_owned();
            metadata.push((name, value));
        }
        Ok(metadata)
    }
    fn u128(&mut self) -> Decoded<u128> {
        Ok(u128::from_le_bytes(self.take(16)?.try_into().unwrap()))
    }
    fn lease(&mut self) -> Decoded<LeaseRecord> {
        let id = LeaseId(self.u128()?);
        let duration = match self.u32()? {
            0 => LeaseDuration::Infinite,
            seconds => LeaseDuration::Fixed { seconds },
        };
        let deadline = Some(self.u64()?).filter(|&at| at != 0);
        let break_deadline = Some(self.u64()?).filter(|&at| at != 0);
        let broken = match self.u8()? {
            0 => false,
            1 => true,
            _ => return Err("bad lease flag"),
        };
        let fence = self.u64()?;
        let holder_length = self.u16()?;
        let holder = if holder_length == u16::MAX {
            None
        } else {
            Some(self.text(holder_length as usize)?.to_owned())
        };
        Ok(LeaseRecord {
            id,
            duration,
            deadline,
            break_deadline,
            broken,
            fence,
            holder,
        })
    }
    fn coordination(&mut self) -> Decoded<Coordination> {
        let flags = self.u8()?;
        if flags & !3 != 0 {
            return Err("bad coordination flags");
        }
        let lease = if flags & 1 != 0 {
            Some(self.lease()?)
        } else {
            None
        };
        let lock = if flags & 2 != 0 {
            let handle = LockHandle(self.u128()?);
            let deadline = self.u64()?;
            let item_absent = match self.u8()? {
                0 => false,
                1 => true,
                _ => return Err("bad lock flag"),
            };
            Some(LockRecord {
                handle,
                deadline,
                item_absent,
            })
        } else {
            None
        };
        Ok(Coordination { lease, lock })
    }
    /// One item of an op-10 record (`RelocatedItemsEncoder`), given the previous item's
    /// version and last-modified time.
    fn compact_relocated_item(
        &mut self,
        previous_version: u64,
        previous_last_modified: u64,
    ) -> Decoded<(u64, DecodedItem<'a>)> {
        let version = self.difference(previous_version)?;
        let flags = self.u8()?;
        if flags & !63 != 0 {
            return Err("bad relocated item flags");
        }
        let container_id = self.varint()?;
        let key_length = self.length()?;
        let key = self.take(key_length)?;
        let last_modified = self.difference(previous_last_modified)?;
        let expires_at = if flags & RELOCATED_HAS_EXPIRY != 0 {
            Some(self.varint()?)
        } else {
            None
        };
        let etag_version = if flags & RELOCATED_HAS_ETAG_VERSION != 0 {
            self.varint()?
        } else {
            version
        };
        let content_type = if flags & RELOCATED_HAS_CONTENT_TYPE != 0 {
            let length = self.u16()?;
            Some(self.text(length as usize)?)
        } else {
            None
        };
        let metadata = if flags & RELOCATED_HAS_METADATA != 0 {
            self.metadata()?
        } else {
            Metadata::default()
        };
        let coordination = if flags & RELOCATED_HAS_COORDINATION != 0 {
            self.coordination()?
        } else {
            Coordination::default()
        };
        let value_length = self.length()?;
        let value_offset = self.at;
        let value = self.take(value_length)?;
        let write = ItemWrite {
            container_id,
            key,
            value: (flags & RELOCATED_HAS_VALUE != 0).then_some(value),
            last_modified,
            expires_at,
            content_type,
            metadata: &[],
            etag_version,
            coordination: None,
            created: false,
            expired: false,
        };
        Ok((
            version,
            DecodedItem {
                write,
                metadata,
                coordination,
                value_offset,
            },
        ))
    }
    fn item_write(
        &mut self,
        metadata_store: &mut Vec<Metadata>,
    ) -> Decoded<(ItemWrite<'a>, usize, Coordination)> {
        let container_id = self.u64()?;
        let key_length = self.u32()? as usize;
        let key = self.take(key_length)?;
        let flags = self.u8()?;
        if flags & !7 != 0 {
            return Err("bad item flags");
        }
        let present = flags & 1 != 0;
        let created = flags & 2 != 0;
        let expired = flags & 4 != 0;
        let last_modified = self.u64()?;
        let expires_at = Some(self.u64()?).filter(|&at| at != 0);
        let content_type_length = self.u16()?;
        let content_type = if content_type_length == u16::MAX {
            None
        } else {
            Some(self.text(content_type_length as usize)?)
        };
        metadata_store.push(self.metadata()?);
        let etag_version = self.u64()?;
        let coordination = self.coordination()?;
        let value_length = self.u32()? as usize;
        let value_offset = self.at;
        let value = self.take(value_length)?;
        Ok((
            ItemWrite {
                container_id,
                key,
                value: present.then_some(value),
                last_modified,
                expires_at,
                content_type,
                metadata: &[],
                etag_version,
                coordination: None,
                created,
                expired,
            },
            value_offset,
            coordination,
        ))
    }
}

/// An item write decoded, with its metadata owned (the borrowed form above cannot own it).
pub struct DecodedItem<'a> {
    pub write: ItemWrite<'a>,
    pub metadata: Metadata,
    pub coordination: Coordination,
    pub value_offset: usize,
}

pub enum DecodedRecord<'a> {
    Items(Vec<DecodedItem<'a>>),
    /// (original version, item) pairs.
    RelocatedItems(Vec<(u64, DecodedItem<'a>)>),
    ContainerState {
        id: u64,
        name: &'a str,
        default_ttl_seconds: Option<u32>,
        etag_version: u64,
        last_modified: Timestamp,
        metadata: Metadata,
        lease: Option<LeaseRecord>,
    },
    ItemCoordination {
        container_id: u64,
        key: &'a [u8],
        etag_version: u64,
        expires_at: Option<Timestamp>,
        coordination: Coordination,
    },
    ContainerLease {
        container_id: u64,
        lease: Option<LeaseRecord>,
    },
    ContainerCreate {
        name: &'a str,
        default_ttl_seconds: Option<u32>,
        metadata: Metadata,
        created_at: Timestamp,
    },
    ContainerDelete {
        container_id: u64,
    },
    ContainerSetMetadata {
        container_id: u64,
        metadata: Metadata,
        modified_at: Timestamp,
    },
}

/// What the change feed needs of an item write, decoded without allocating.
pub struct FeedItem<'a> {
    pub container_id: u64,
    pub key: &'a [u8],
    pub value: Option<&'a [u8]>,
    pub created: bool,
    pub expired: bool,
}

/// The change feed's view of a record: its item writes (one, or a batch's), or `None` for
/// every other record (decode those with [`decode`]).
pub fn decode_feed_items<'a>(payload: &'a [u8], items: &mut Vec<FeedItem<'a>>) -> Decoded<bool> {
    let mut reader = Reader {
        bytes: payload,
        at: 0,
    };
    let count = match reader.u8()? {
        OP_ITEM_WRITE => 1,
        OP_BATCH => reader.u32()? as usize,
        _ => return Ok(false),
    };
    if count > payload.len() {
        return Err("implausible batch count");
    }
    for _ in 0..count {
        let container_id = reader.u64()?;
        let key_length = reader.u32()? as usize;
        let key = reader.take(key_length)?;
        let flags = reader.u8()?;
        reader.take(16)?; // last_modified, expires_at
        let content_type_length = reader.u16()?;
        if content_type_length != u16::MAX {
            reader.take(content_type_length as usize)?;
        }
        let metadata_count = reader.u32()? as usize;
        for _ in 0..metadata_count.min(payload.len()) {
            let name_length = reader.u32()? as usize;
            reader.take(name_length)?;
            let value_length = reader.u32()? as usize;
            reader.take(value_length)?;
        }
        reader.take(8)?; // etag_version
        reader.coordination()?;
        let value_length = reader.u32()? as usize;
        let value = reader.take(value_length)?;
        items.push(FeedItem {
            container_id,
            key,
            value: (flags & 1 != 0).then_some(value),
            created: flags & 2 != 0,
            expired: flags & 4 != 0,
        });
    }
    Ok(true)
}

pub fn decode(payload: &[u8]) -> Decoded<DecodedRecord<'_>> {
    let mut reader = Reader {
        bytes: payload,
        at: 0,
    };
    let record = match reader.u8()? {
        OP_ITEM_WRITE => DecodedRecord::Items(vec![decode_item(&mut reader)?]),
        OP_BATCH => {
            let count = reader.u32()? as usize;
            if count > payload.len() {
                return Err("implausible batch count");
            }
            let mut items = Vec::with_capacity(count);
            for _ in 0..count {
                items.push(decode_item(&mut reader)?);
            }
            DecodedRecord::Items(items)
        }
        OP_RELOCATED_ITEMS => {
            let count = reader.u32()? as usize;
            if count > payload.len() {
                return Err("implausible relocation count");
            }
            let mut items = Vec::with_capacity(count);
            for _ in 0..count {
                let original_version = reader.u64()?;
                items.push((original_version, decode_item(&mut reader)?));
            }
            DecodedRecord::RelocatedItems(items)
        }
        OP_RELOCATED_ITEMS_COMPACT => {
            let count = reader.u32()? as usize;
            if count > payload.len() {
                return Err("implausible relocation count");
            }
            let mut items = Vec::with_capacity(count);
            let (mut version, mut last_modified) = (0, 0);
            for _ in 0..count {
                let item = reader.compact_relocated_item(version, last_modified)?;
                version = item.0;
                last_modified = item.1.write.last_modified;
                items.push(item);
            }
            DecodedRecord::RelocatedItems(items)
        }
        OP_CONTAINER_STATE => {
            let id = reader.u64()?;
            let name_length = reader.u32()? as usize;
            let name = reader.container_name(name_length)?;
            let default_ttl_seconds = Some(reader.u32()?).filter(|&seconds| seconds != 0);
            let etag_version = reader.u64()?;
            let last_modified = reader.u64()?;
            let metadata = reader.metadata()?;
            DecodedRecord::ContainerState {
                id,
                name,
                default_ttl_seconds,
                etag_version,
                last_modified,
                metadata,
                lease: reader.coordination()?.lease,
            }
        }
        OP_ITEM_COORDINATION => {
            let container_id = reader.u64()?;
            let key_length = reader.u32()? as usize;
            let key = reader.take(key_length)?;
            let etag_version = reader.u64()?;
            let expires_at = Some(reader.u64()?).filter(|&at| at != 0);
            DecodedRecord::ItemCoordination {
                container_id,
                key,
                etag_version,
                expires_at,
                coordination: reader.coordination()?,
            }
        }
        OP_CONTAINER_LEASE => {
            let container_id = reader.u64()?;
            DecodedRecord::ContainerLease {
                container_id,
                lease: reader.coordination()?.lease,
            }
        }
        OP_CONTAINER_CREATE => {
            let name_length = reader.u32()? as usize;
            let name = reader.container_name(name_length)?;
            let default_ttl_seconds = Some(reader.u32()?).filter(|&seconds| seconds != 0);
            let created_at = reader.u64()?;
            let metadata = reader.metadata()?;
            DecodedRecord::ContainerCreate {
                name,
                default_ttl_seconds,
                metadata,
                created_at,
            }
        }
        OP_CONTAINER_DELETE => DecodedRecord::ContainerDelete {
            container_id: reader.u64()?,
        },
        OP_CONTAINER_SET_METADATA => {
            let container_id = reader.u64()?;
            let modified_at = reader.u64()?;
            DecodedRecord::ContainerSetMetadata {
                container_id,
                metadata: reader.metadata()?,
                modified_at,
            }
        }
        _ => return Err("unknown engine record type"),
    };
    if reader.at != payload.len() {
        return Err("trailing bytes after the engine record");
    }
    Ok(record)
}

fn decode_item<'a>(reader: &mut Reader<'a>) -> Decoded<DecodedItem<'a>> {
    let mut metadata_store = Vec::with_capacity(1);
    let (write, value_offset, coordination) = reader.item_write(&mut metadata_store)?;
    Ok(DecodedItem {
        write,
        metadata: metadata_store.pop().unwrap_or_default(),
        coordination,
        value_offset,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn coordination_size_matches_its_encoding() {
        let lease = |holder: Option<&str>| LeaseRecord {
            id: LeaseId(u128::MAX - 3),
            duration: LeaseDuration::Fixed { seconds: 15 },
            deadline: Some(1_000),
            break_deadline: None,
            broken: false,
            fence: 9,
            holder: holder.map(str::to_owned),
        };
        let lock = LockRecord {
            handle: LockHandle(5),
            deadline: 77,
            item_absent: true,
        };
        let cases = [
            None,
            Some(Coordination::default()),
            Some(Coordination {
                lease: Some(lease(None)),
                lock: None,
            }),
            Some(Coordination {
                lease: Some(lease(Some("worker 7"))),
                lock: None,
            }),
            Some(Coordination {
                lease: Some(lease(Some(""))),
                lock: Some(lock),
            }),
            Some(Coordination {
                lease: None,
                lock: Some(lock),
            }),
        ];
        for coordination in &cases {
            let mut encoded = Vec::new();
            encode_coordination(&mut encoded, coordination.as_ref());
            assert_eq!(
                coordination_size(coordination.as_ref()),
                encoded.len(),
                "{coordination:?}"
            );
            let coordination = coordination.clone().unwrap_or_default();
            encode_item_coordination(&mut encoded, 3, b"some key", 11, Some(5), &coordination);
            assert_eq!(
                item_coordination_size(b"some key", &coordination),
                encoded.len(),
                "{coordination:?}"
            );
        }
    }

    #[test]
    fn compact_relocations_round_trip_every_optional_field() {
        let metadata = vec![("owner".to_owned(), "team 7".to_owned())];
        let lease = Coordination {
            lease: Some(LeaseRecord {
                id: LeaseId(u128::MAX - 1),
                duration: LeaseDuration::Infinite,
                deadline: None,
                break_deadline: Some(5),
                broken: false,
                fence: 3,
                holder: Some("worker".to_owned()),
            }),
            lock: None,
        };
        let plain = |key: &'static [u8], last_modified: u64| ItemWrite {
            container_id: 1,
            key,
            value: Some(b"value"),
            last_modified,
            expires_at: None,
            content_type: None,
            metadata: &[],
            created: false,
            expired: false,
            etag_version: 0,
            coordination: None,
        };
        // (version, write): versions and times going down as well as up, a deleted item
        // holding a lock, every optional field, and the largest numbers a varint carries.
        let items: Vec<(u64, ItemWrite<'_>)> = vec![
            (
                900,
                ItemWrite {
                    etag_version: 900,
                    ..plain(b"a", 1_700_000_000_000_000)
                },
            ),
            (
                12,
                ItemWrite {
                    etag_version: 12,
                    ..plain(b"b", 1_600_000_000_000_000)
                },
            ),
            (
                u64::MAX,
                ItemWrite {
                    container_id: u64::MAX,
                    value: None,
                    expires_at: Some(u64::MAX),
                    etag_version: 4,
                    content_type: Some("text/plain"),
                    metadata: &metadata,
                    coordination: Some(&lease),
                    ..plain(b"", u64::MAX)
                },
            ),
            (
                0,
                ItemWrite {
                    etag_version: 0,
                    ..plain(b"d", 0)
                },
            ),
        ];
        let mut encoder = RelocatedItemsEncoder::new();
        let offsets: Vec<usize> = items
            .iter()
            .map(|(version, write)| encoder.push(*version, write))
            .collect();
        let payload = encoder.finish();
        let Ok(DecodedRecord::RelocatedItems(decoded)) = decode(&payload) else {
            panic!("the record decodes as relocated items");
        };
        assert_eq!(decoded.len(), items.len());
        for (((version, write), offset), (decoded_version, item)) in
            items.iter().zip(&offsets).zip(&decoded)
        {
            assert_eq!(decoded_version, version);
            assert_eq!(item.write.container_id, write.container_id);
            assert_eq!(item.write.key, write.key);
            assert_eq!(item.write.value, write.value);
            assert_eq!(item.write.last_modified, write.last_modified);
            assert_eq!(item.write.expires_at, write.expires_at);
            assert_eq!(item.write.etag_version, write.etag_version);
            assert_eq!(item.write.content_type, write.content_type);
            assert_eq!(item.metadata, write.metadata);
            assert_eq!(
                item.coordination,
                write.coordination.cloned().unwrap_or_default()
            );
            assert_eq!(item.value_offset, *offset);
        }
        // The common case is small: 24 B key, 150 B value, no options.
        let mut encoder = RelocatedItemsEncoder::new();
        let key = [b'k'; 24];
        let value = [b'v'; 150];
        for index in 0..100u64 {
            encoder.push(
                1_000_000 + index * 4,
                &ItemWrite {
                    key: &key,
                    value: Some(&value),
                    etag_version: 1_000_000 + index * 4,
                    ..plain(b"", 1_700_000_000_000_000 + index * 3)
                },
            );
        }
        let per_item = (encoder.finish().len() - 5 - 2 * 7) / 100;
        assert!(per_item <= 174 + 8, "{per_item} B per item");
    }

    #[test]
    fn relocations_in_the_fixed_width_layout_of_format_1_still_decode() {
        let write = ItemWrite {
            container_id: 2,
            key: b"old",
            value: Some(b"kept"),
            last_modified: 77,
            expires_at: None,
            content_type: None,
            metadata: &[],
            created: false,
            expired: false,
            etag_version: 41,
            coordination: Some(&Coordination::default()),
        };
        let mut payload = vec![OP_RELOCATED_ITEMS];
        put_u32(&mut payload, 1);
        put_u64(&mut payload, 41);
        let value_offset = encode_item_write(&mut payload, &write);
        let Ok(DecodedRecord::RelocatedItems(decoded)) = decode(&payload) else {
            panic!("an op-6 record decodes");
        };
        assert_eq!(decoded[0].0, 41);
        assert_eq!(decoded[0].1.write.value, Some(&b"kept"[..]));
        assert_eq!(decoded[0].1.value_offset, value_offset);
    }

    #[test]
    fn bad_varints_and_flags_in_relocations_are_refused() {
        let header = |count: u32| {
            let mut payload = vec![OP_RELOCATED_ITEMS_COMPACT];
            put_u32(&mut payload, count);
            payload
        };
        // A version varint of eleven bytes, and one whose tenth byte overflows 64 bits.
        let mut too_long = header(1);
        too_long.extend_from_slice(&[0x80; 10]);
        too_long.push(0);
        assert!(decode(&too_long).is_err());
        let mut overflowing = header(1);
        overflowing.extend_from_slice(&[0xff; 9]);
        overflowing.push(0x02);
        assert!(decode(&overflowing).is_err());
        // An unknown flag.
        let mut unknown_flag = header(1);
        unknown_flag.extend_from_slice(&[0, 0x40, 1, 0, 0, 0]);
        assert!(decode(&unknown_flag).is_err());
        // A key length past the end, and a count the payload cannot hold.
        let mut key_past_end = header(1);
        key_past_end.extend_from_slice(&[0, 1, 1, 100, b'k']);
        assert!(decode(&key_past_end).is_err());
        assert!(decode(&header(1000)).is_err());
    }

    #[test]
    fn item_write_round_trip_and_size() {
        let metadata = vec![("a".to_owned(), "b".to_owned())];
        let write = ItemWrite {
            container_id: 7,
            key: b"key",
            value: Some(b"value"),
            last_modified: 123,
            expires_at: Some(456),
            content_type: Some("text/plain"),
            metadata: &metadata,
            created: true,
            expired: false,
            etag_version: 0,
            coordination: Some(&Coordination {
                lease: None,
                lock: Some(LockRecord {
                    handle: LockHandle(7),
                    deadline: 99,
                    item_absent: false,
                }),
            }),
        };
        let mut out = vec![OP_ITEM_WRITE];
        let value_offset = encode_item_write(&mut out, &write);
        assert_eq!(out.len(), 1 + item_write_size(&write));
        assert_eq!(&out[value_offset..value_offset + 5], b"value");
        let DecodedRecord::Items(items) = decode(&out).unwrap() else {
            panic!("not an item")
        };
        assert_eq!(items[0].write.key, b"key");
        assert_eq!(items[0].write.value, Some(&b"value"[..]));
        assert_eq!(items[0].write.expires_at, Some(456));
        assert_eq!(items[0].metadata, metadata);
        assert_eq!(items[0].value_offset, value_offset);
        assert_eq!(
            items[0]
                .coordination
                .lock
                .as_ref()
                .map(|lock| lock.deadline),
            Some(99)
        );
        for cut in 0..out.len() {
            assert!(
                decode(&out[..cut]).is_err(),
                "a record cut at {cut} must not decode"
            );
        }
    }
}
