//! Decoding records: every length is checked before it is trusted.

use super::format::*;
use crate::clock::Timestamp;
use crate::rules::lease::{LeaseDuration, LeaseId, LeaseRecord};
use crate::rules::lock::{LockHandle, LockRecord};

/// Reads fixed-width little-endian fields and varints from bytes, checking every length
/// before it is trusted (records here, and the persisted index's file).
pub struct Reader<'a> {
    bytes: &'a [u8],
    at: usize,
}

pub(super) type Decoded<T> = Result<T, &'static str>;

impl<'a> Reader<'a> {
    /// A reader of `bytes` from their start.
    pub fn new(bytes: &'a [u8]) -> Reader<'a> {
        Reader { bytes, at: 0 }
    }

    /// Where in the bytes the next field starts.
    pub fn position(&self) -> usize {
        self.at
    }

    /// A reader of the same bytes from `at`.
    pub fn from_position(bytes: &'a [u8], at: usize) -> Reader<'a> {
        Reader { bytes, at }
    }

    pub fn take(&mut self, count: usize) -> Decoded<&'a [u8]> {
        let end = self.at.checked_add(count).ok_or("length overflow")?;
        if end > self.bytes.len() {
            return Err("a length runs past the end of the record");
        }
        let slice = &self.bytes[self.at..end];
        self.at = end;
        Ok(slice)
    }
    pub fn u8(&mut self) -> Decoded<u8> {
        Ok(self.take(1)?[0])
    }
    fn u16(&mut self) -> Decoded<u16> {
        Ok(u16::from_le_bytes(self.take(2)?.try_into().unwrap()))
    }
    pub fn u32(&mut self) -> Decoded<u32> {
        Ok(u32::from_le_bytes(self.take(4)?.try_into().unwrap()))
    }
    pub fn u64(&mut self) -> Decoded<u64> {
        Ok(u64::from_le_bytes(self.take(8)?.try_into().unwrap()))
    }
    pub fn varint(&mut self) -> Decoded<u64> {
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

/// What [`super::encode_version_extras`] wrote, which must be all of `bytes`: the content
/// type, the metadata and the coordination.
pub fn decode_version_extras(bytes: &[u8]) -> Decoded<(Option<&str>, Metadata, Coordination)> {
    let mut reader = Reader { bytes, at: 0 };
    let content_type_length = reader.u16()?;
    let content_type = if content_type_length == u16::MAX {
        None
    } else {
        Some(reader.text(usize::from(content_type_length))?)
    };
    let metadata = reader.metadata()?;
    let coordination = reader.coordination()?;
    if reader.at != bytes.len() {
        return Err("bytes left after a version's properties and coordination");
    }
    Ok((content_type, metadata, coordination))
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

pub(super) fn decode_item<'a>(reader: &mut Reader<'a>) -> Decoded<DecodedItem<'a>> {
    let mut metadata_store = Vec::with_capacity(1);
    let (write, value_offset, coordination) = reader.item_write(&mut metadata_store)?;
    Ok(DecodedItem {
        write,
        metadata: metadata_store.pop().unwrap_or_default(),
        coordination,
        value_offset,
    })
}
