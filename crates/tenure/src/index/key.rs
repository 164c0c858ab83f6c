//! Index keys: the container's id, big-endian, then the item's key.

/// Bytes an index key keeps inline: the 8-byte container id and keys up to 56 bytes, which
/// covers the usual key shapes without a heap allocation per lookup.
const INLINE_INDEX_KEY_BYTES: usize = 64;

/// The index's key of an item: its container incarnation's id (big-endian, so one container's
/// keys sort together) followed by the item's key. Built on the stack for short keys: every
/// get, put and lease action builds one.
pub enum IndexKey {
    Inline {
        bytes: [u8; INLINE_INDEX_KEY_BYTES],
        length: u8,
    },
    Heap(Box<[u8]>),
}

impl std::ops::Deref for IndexKey {
    type Target = [u8];

    fn deref(&self) -> &[u8] {
        match self {
            IndexKey::Inline { bytes, length } => &bytes[..usize::from(*length)],
            IndexKey::Heap(bytes) => bytes,
        }
    }
}

impl From<IndexKey> for Box<[u8]> {
    fn from(key: IndexKey) -> Box<[u8]> {
        match key {
            IndexKey::Inline { .. } => Box::from(&*key),
            IndexKey::Heap(bytes) => bytes,
        }
    }
}

pub fn index_key(container_id: u64, key: &[u8]) -> IndexKey {
    let length = 8 + key.len();
    if length <= INLINE_INDEX_KEY_BYTES {
        let mut bytes = [0u8; INLINE_INDEX_KEY_BYTES];
        bytes[..8].copy_from_slice(&container_id.to_be_bytes());
        bytes[8..length].copy_from_slice(key);
        return IndexKey::Inline {
            bytes,
            length: length as u8,
        };
    }
    let mut bytes = Vec::with_capacity(length);
    bytes.extend_from_slice(&container_id.to_be_bytes());
    bytes.extend_from_slice(key);
    IndexKey::Heap(bytes.into_boxed_slice())
}

/// The container id and the item's key that `index_key` put together.
pub fn split_index_key(index_key: &[u8]) -> (u64, &[u8]) {
    let (container_id, key) = index_key.split_at(8);
    let container_id = u64::from_be_bytes(container_id.try_into().expect("8-byte container id"));
    (container_id, key)
}
