//! Encoding records: fixed-width little-endian fields, lengths before bytes.

use super::format::*;
use crate::clock::Timestamp;
use crate::rules::lease::{LeaseDuration, LeaseRecord};

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

pub(super) fn put_u16(out: &mut impl Sink, value: u16) {
    out.extend_from_slice(&value.to_le_bytes());
}
pub(super) fn put_u32(out: &mut impl Sink, value: u32) {
    out.extend_from_slice(&value.to_le_bytes());
}
pub(super) fn put_u64(out: &mut impl Sink, value: u64) {
    out.extend_from_slice(&value.to_le_bytes());
}

pub(super) fn put_metadata(out: &mut impl Sink, metadata: &[(String, String)]) {
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
pub(super) fn coordination_size(coordination: Option<&Coordination>) -> usize {
    let lease = coordination.and_then(|coordination| coordination.lease.as_ref());
    let lock = coordination.and_then(|coordination| coordination.lock.as_ref());
    // flags; lease: id 16, duration 4, deadline 8, break deadline 8, broken 1, fence 8,
    // holder length 2 + holder; lock: handle 16, deadline 8, item absent 1.
    1 + lease.map_or(0, |lease| {
        16 + 4 + 8 + 8 + 1 + 8 + 2 + lease.holder.as_deref().map_or(0, str::len)
    }) + lock.map_or(0, |_| 16 + 8 + 1)
}

pub(super) fn encode_lease(out: &mut impl Sink, lease: &LeaseRecord) {
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

/// A version's properties and coordination, outside any record: how the persisted index
/// (`index/checkpoint/`) keeps what a version node holds beyond its fixed fields. The same
/// field encodings as an item write's (`decode_version_extras` reads them back).
pub fn encode_version_extras(
    out: &mut Vec<u8>,
    content_type: Option<&str>,
    metadata: &[(String, String)],
    coordination: Option<&Coordination>,
) {
    match content_type {
        Some(content_type) => {
            assert!(
                content_type.len() < usize::from(u16::MAX),
                "content types are checked against the properties limit"
            );
            put_u16(out, content_type.len() as u16);
            out.extend_from_slice(content_type.as_bytes());
        }
        None => put_u16(out, u16::MAX),
    }
    put_metadata(out, metadata);
    encode_coordination(out, coordination);
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
    let value_offset = encode_item_write_head(out, write);
    out.extend_from_slice(write.value.unwrap_or(&[]));
    value_offset
}

/// Appends the item write up to its value, which comes last and is not appended (a large
/// value is written from the caller's memory: `Reservation::write_payload_parts`); returns the
/// offset of the value within `out`.
pub fn encode_item_write_head(out: &mut impl Sink, write: &ItemWrite<'_>) -> usize {
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
    put_u32(out, write.value.map_or(0, <[u8]>::len) as u32);
    out.written_bytes()
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
pub fn put_varint(out: &mut Vec<u8>, mut value: u64) {
    while value >= 0x80 {
        out.push(value as u8 | 0x80);
        value >>= 7;
    }
    out.push(value as u8);
}

/// `value - previous` as a zigzag-coded varint: small either way for neighbours.
pub(super) fn put_difference(out: &mut Vec<u8>, value: u64, previous: u64) {
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

    /// Bytes of payload so far.
    pub fn len(&self) -> usize {
        self.payload.len()
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
