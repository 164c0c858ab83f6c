//! Plain heads: a slot's only version named by its entry in the log instead of by a node.
//!
//! Most keys are written once and read many times, and what a version node of such a key
//! holds — version, value location, `last_modified`, expiry — its log entry holds too. An
//! item write's entry (op 1, and each entry of a batch, op 5: `crate::record::encode_item_write`)
//! without content type, metadata or coordination ends in 36 bytes of fixed layout right
//! before its value, and its ETag field holds the entry's own version (the
//! writer patches it in once it has reserved the record, `patch_version`):
//!
//! ```text
//! value offset − 36                                                           value offset
//! | flags u8 | last_modified u64 | expires_at u64 (0: none) | content type length u16
//! | (u16::MAX: none) | metadata count u32 (0) | version u64 | coordination flags u8 (0)
//! | value length u32 | value …
//! ```
//!
//! A *plain head* is that value offset in the head word, tagged so no one takes it for a
//! node pointer. It always ends its chain: it is installed only where a committed node with
//! nothing older and no extras would be (a key's first put, a batch's new keys — pending
//! until the batch commits —, a plain write that replaces the chain, below, and the replay
//! at open), so a node installed over it links to it as its `older`, and a prune that
//! detaches it frees nothing. Readers build the version
//! from the 36 bytes (`Entry::read`), which a get's value prefetch is already loading. Only
//! entries the mapping holds when the head is set may be named: a `buffered` store's (copied
//! in before the install) and, at open, every store's.
//!
//! A plain write over a settled head — plain, or a node and its chain — *replaces* it (one
//! compare-and-swap, nothing allocated; replaced nodes are retired, `ItemSlot::retire_chain`)
//! when no snapshot is open: the versions it replaces are then out of every reader's reach
//! at once, which is safe because
//! - a snapshot registers before it picks its version and reads at the newest version
//!   reserved by then, so it never needs a version a write replaced without seeing the
//!   registration (`Engine::snapshot`; the writer checks after its reservation, and
//!   both sides are sequentially consistent), and a write that sees it installs a node over
//!   the head as before;
//! - a plain read that finds a head newer than every visible version waits for that write
//!   to complete (it is copying its record into the mapping) and reads it
//!   (`Engine::resolve`), as it would read the newer version a moment later anyway.
//!
//! So a key rewritten with plain puts keeps one version in the index, and a compare-and-set
//! allocates nothing.

use crossbeam_epoch::Shared;

pub(crate) use super::head::{
    head, is_node_or_null, is_pending, offset_of, pending_head, pending_offset_of,
};
use super::version::{ValueLocation, VersionNode, VersionRef};

use crate::error::Result;
use crate::log::RecordBytes;
use crate::record::{Coordination, ItemWrite};

/// How many bytes before its value a plain entry's fields start.
pub(crate) const FIELDS_BYTES: usize = 36;

/// The fields of a plain entry, read from the log.
pub(crate) type Fields = [u8; FIELDS_BYTES];

const FLAG_HAS_VALUE: u8 = 1;

/// Where the version sits in an entry's encoding, counted back from its value.
const VERSION_BEFORE_VALUE_BYTES: usize = 13;

/// Whether `write`'s entry has the fixed layout a plain head needs before its value
/// (`encode_item_write`): no content type, metadata or coordination, and its own ETag.
pub(crate) fn is_plain_write(write: &ItemWrite<'_>) -> bool {
    write.content_type.is_none()
        && write.metadata.is_empty()
        && write.coordination.is_none_or(Coordination::is_empty)
        && write.etag_version == 0
}

/// Writes `version` into the ETag field of `write`'s entry, whose value starts at
/// `value_offset` of `payload` (an item write's or a batch's, before it is copied into the
/// log), if the entry has the fixed layout. The field meant "the record's own version" as 0;
/// it now says so by holding it, which every reader of the log takes the same way.
pub(crate) fn patch_version(
    payload: &mut [u8],
    value_offset: usize,
    write: &ItemWrite<'_>,
    version: u64,
) {
    if is_plain_write(write) {
        let at = value_offset - VERSION_BEFORE_VALUE_BYTES;
        payload[at..at + 8].copy_from_slice(&version.to_le_bytes());
    }
}

/// What a plain entry says: the version readers build from it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Entry {
    pub(crate) version: u64,
    pub(crate) value: Option<ValueLocation>,
    pub(crate) last_modified: u64,
    pub(crate) expires_at: Option<u64>,
}

impl Entry {
    /// The entry whose value starts at `value_offset`, from the fields before it. Bytes that
    /// do not describe a plain entry are corruption: only writers that checked the layout
    /// name an entry. (Every get and scan of a plain head runs this: one branch for all the
    /// checks.)
    #[inline]
    pub(crate) fn read(value_offset: u64, fields: &Fields) -> Result<Entry, &'static str> {
        let u64_at = |at: usize| {
            let mut bytes = [0u8; 8];
            bytes.copy_from_slice(&fields[at..at + 8]);
            u64::from_le_bytes(bytes)
        };
        let flags = fields[0];
        let last_modified = u64_at(1);
        let expires_at = u64_at(9);
        // Content type length (u16::MAX: none) and metadata count (0), read as one word.
        let properties_word = u64_at(17) & 0xFFFF_FFFF_FFFF;
        let version = u64_at(23);
        let coordination_flags = fields[31];
        let mut length = [0u8; 4];
        length.copy_from_slice(&fields[32..36]);
        let value_length = u32::from_le_bytes(length);
        let has_value = flags & FLAG_HAS_VALUE != 0;
        let malformed = (properties_word != 0xFFFF)
            | (coordination_flags != 0)
            | (version == 0)
            | (!has_value & (value_length != 0));
        if malformed {
            return Err("a slot names an entry that is not a plain item write");
        }
        Ok(Entry {
            version,
            value: has_value.then(|| ValueLocation::new(value_offset, value_length)),
            last_modified,
            expires_at: (expires_at != 0).then_some(expires_at),
        })
    }

    /// The item exists at `now`: not deleted, not expired (a plain entry has no lock).
    #[inline]
    pub(crate) fn is_live_at(&self, now: u64) -> bool {
        self.value.is_some()
            && !crate::rules::lock::is_expired_under_lock(self.expires_at, None, now)
    }

    pub(crate) fn node(self) -> VersionNode {
        VersionNode::plain(
            self.version,
            self.value,
            self.last_modified,
            self.expires_at,
        )
    }
}

/// The plain entry whose value starts at `value_offset`, read back from the log, and the
/// bytes from its value on: one segment lookup for both, since an entry and its value are one
/// record's bytes.
#[inline(always)]
pub(crate) fn entry_at<'g>(
    bytes: &mut impl RecordBytes<'g>,
    value_offset: u64,
) -> Result<(Entry, &'g [u8])> {
    let Some(start) = value_offset.checked_sub(FIELDS_BYTES as u64) else {
        return Err(bytes.corruption(value_offset, "a plain entry starts before the log"));
    };
    let Some((fields, rest)) = bytes.bytes_from(start)?.split_first_chunk::<FIELDS_BYTES>() else {
        return Err(bytes.corruption(start, "a plain entry runs past its segment"));
    };
    let entry =
        Entry::read(value_offset, fields).map_err(|reason| bytes.corruption(start, reason))?;
    let length = entry.value.map_or(0, |value| value.length as usize);
    let Some(value) = rest.get(..length) else {
        return Err(bytes.corruption(value_offset, "value runs past its segment"));
    };
    Ok((entry, value))
}

/// Reads plain entries back from the log: the entry whose value starts at a value offset
/// (`plain.rs`). Whatever reads record bytes back reads plain entries.
pub trait PlainEntries {
    fn plain_entry_at(&mut self, value_offset: u64) -> Result<Entry>;

    /// Whether plain heads may be made where these entries are read (a replay into a scratch
    /// index that cannot read the log back makes none).
    fn allows_plain_heads(&self) -> bool;
}

impl<'g, T: RecordBytes<'g>> PlainEntries for T {
    #[inline]
    fn plain_entry_at(&mut self, value_offset: u64) -> Result<Entry> {
        entry_at(self, value_offset).map(|(entry, _)| entry)
    }

    fn allows_plain_heads(&self) -> bool {
        self.can_read_back()
    }
}

/// The record bytes of a replay that makes no plain heads (`inspect::verify`, which checks
/// records without a log to read them back from): never asked for any.
pub struct NoPlainHeads;

impl RecordBytes<'static> for NoPlainHeads {
    fn bytes_from(&mut self, offset: u64) -> Result<&'static [u8]> {
        Err(self.corruption(offset, "a plain head in an index that makes none"))
    }

    fn corruption(&mut self, offset: u64, reason: &str) -> crate::error::Error {
        crate::error::Error::corruption("(no log)", offset, reason)
    }

    fn can_read_back(&self) -> bool {
        false
    }
}

/// The version `head` (a head word or an `older` link) names: its node, or the plain entry's
/// version read through `entries`; `None` for null. Not for a pending plain head (a batch's
/// uncommitted first version: `settled_head` waits for it, `visible` passes it).
#[inline]
pub fn view<'g>(
    head: Shared<'g, VersionNode>,
    entries: &mut impl PlainEntries,
) -> Result<Option<VersionRef<'g>>> {
    assert!(
        !is_pending(head),
        "a pending plain head has no version to read yet"
    );
    if let Some(offset) = offset_of(head) {
        let entry = entries.plain_entry_at(offset)?;
        return Ok(Some(VersionRef::Plain(entry.node(), offset)));
    }
    Ok(node_of(head).map(VersionRef::Node))
}

/// The node `head` points at, if it is a node (not null, not plain, not pending plain).
pub fn node_of<'g>(head: Shared<'g, VersionNode>) -> Option<&'g VersionNode> {
    if !is_node_or_null(head) {
        return None;
    }
    // SAFETY: heads and links are read under a guard, and nodes reachable from a slot are
    // freed only through the epoch; `'g` is that guard's.
    unsafe { head.as_ref() }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::record;

    fn encoded(value: Option<&[u8]>, expires_at: Option<u64>) -> (Vec<u8>, usize, u64) {
        let mut payload = vec![record::OP_ITEM_WRITE];
        let write = ItemWrite {
            container_id: 7,
            key: b"a key of some length",
            value,
            last_modified: 1_700_000_000_123,
            expires_at,
            content_type: None,
            metadata: &[],
            etag_version: 0,
            coordination: Some(&Coordination::default()),
            created: true,
            expired: false,
        };
        let value_offset = record::encode_item_write(&mut payload, &write);
        patch_version(&mut payload, value_offset, &write, 4_242);
        (payload, value_offset, 4_242)
    }

    /// The fixed layout is what `encode_item_write` writes: decoding the 36 bytes before the
    /// value gives back the write, and the patched version is what the full decoder reads as
    /// the ETag version.
    #[test]
    fn a_plain_entry_decodes_from_the_bytes_before_its_value() {
        for (value, expires_at) in [
            (Some(&b"value bytes"[..]), None),
            (Some(&b""[..]), Some(1_700_000_060_123)),
            (None, None),
        ] {
            let (payload, value_offset, _) = encoded(value, expires_at);
            let fields: Fields = payload[value_offset - FIELDS_BYTES..value_offset]
                .try_into()
                .unwrap();
            let node = Entry::read(1_000 + value_offset as u64, &fields)
                .map(Entry::node)
                .unwrap();
            assert_eq!(node.version, 4_242);
            assert_eq!(node.etag_version(), 4_242);
            assert_eq!(node.last_modified, 1_700_000_000_123);
            assert_eq!(node.expires_at(), expires_at);
            assert_eq!(
                node.value(),
                value.map(|value| ValueLocation::new(
                    1_000 + value_offset as u64,
                    value.len() as u32
                ))
            );
            match record::decode(&payload).unwrap() {
                record::DecodedRecord::Items(items) => {
                    assert_eq!(items[0].write.etag_version, 4_242);
                    assert_eq!(items[0].value_offset, value_offset);
                }
                _ => panic!("an item write"),
            }
        }
    }

    /// An entry with properties, or bytes that are no entry at all, are refused as
    /// corruption, never read as some version.
    #[test]
    fn bytes_that_are_not_a_plain_entry_are_corruption() {
        let (mut payload, value_offset, _) = encoded(Some(b"v"), None);
        payload[value_offset - 13..value_offset - 5].fill(0);
        let fields: Fields = payload[value_offset - FIELDS_BYTES..value_offset]
            .try_into()
            .unwrap();
        assert!(Entry::read(99, &fields).is_err(), "version 0: not patched");
        let mut with_metadata = vec![record::OP_ITEM_WRITE];
        let metadata = [("a".to_owned(), "b".to_owned())];
        let write = ItemWrite {
            container_id: 7,
            key: b"k",
            value: Some(b"v"),
            last_modified: 1,
            expires_at: None,
            content_type: None,
            metadata: &metadata,
            etag_version: 0,
            coordination: None,
            created: true,
            expired: false,
        };
        let offset = record::encode_item_write(&mut with_metadata, &write);
        patch_version(&mut with_metadata, offset, &write, 5);
        assert!(!is_plain_write(&write));
        let fields: Fields = with_metadata[offset - FIELDS_BYTES..offset]
            .try_into()
            .unwrap();
        assert!(Entry::read(99, &fields).is_err());
        assert!(Entry::read(99, &[0xAB; FIELDS_BYTES]).is_err());
    }

    #[test]
    fn a_plain_head_is_tagged_and_gives_its_offset_back() {
        for offset in [8u64, 64, 1 << 40, (1 << 61) - 1] {
            let head: Shared<VersionNode> = head(offset);
            assert_eq!(offset_of(head), Some(offset));
            assert!(!head.is_null());
        }
        assert_eq!(offset_of(Shared::<VersionNode>::null()), None);
        let pending: Shared<VersionNode> = pending_head(64);
        assert!(is_pending(pending) && offset_of(pending).is_none());
        assert_eq!(pending_offset_of(pending), Some(64));
        assert!(!is_node_or_null(pending) && !is_node_or_null(head::<VersionNode>(64)));
        assert!(is_node_or_null(Shared::<VersionNode>::null()));
    }
}
