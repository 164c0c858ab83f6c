//! What a record says: the op codes, an item write, the coordination state it carries.

use crate::clock::Timestamp;

/// Bytes of record buffer a thread keeps between writes (see [`with_record_scratch`]): a
/// larger record's buffer is freed after use, so an idle thread holds at most this much.
pub(super) const RECORD_SCRATCH_KEPT_BYTES: usize = 256 * 1024;

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
pub(super) const RELOCATED_HAS_VALUE: u8 = 1;
pub(super) const RELOCATED_HAS_EXPIRY: u8 = 2;
pub(super) const RELOCATED_HAS_ETAG_VERSION: u8 = 4;
pub(super) const RELOCATED_HAS_CONTENT_TYPE: u8 = 8;
pub(super) const RELOCATED_HAS_METADATA: u8 = 16;
pub(super) const RELOCATED_HAS_COORDINATION: u8 = 32;

pub use crate::rules::item_write::Coordination;

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
