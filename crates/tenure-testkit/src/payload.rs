//! Self-checking payloads: a record's bytes are a function of (stream, index), so a reader
//! can tell a record is the one written, byte for byte, without keeping a copy.

use rand::{Rng, SeedableRng};

/// Bytes of the payload for record `index` of stream `stream`, `length` long (at least 16).
pub fn make(stream: u64, index: u64, length: usize) -> Vec<u8> {
    let length = length.max(16);
    let mut bytes = Vec::with_capacity(length);
    bytes.extend_from_slice(&stream.to_le_bytes());
    bytes.extend_from_slice(&index.to_le_bytes());
    let mut rng =
        rand::rngs::SmallRng::seed_from_u64(stream ^ index.rotate_left(17) ^ length as u64);
    while bytes.len() < length {
        bytes.push(rng.gen());
    }
    bytes
}

/// `(stream, index)` of a payload made by `make`, if it is intact.
pub fn check(bytes: &[u8]) -> Option<(u64, u64)> {
    if bytes.len() < 16 {
        return None;
    }
    let stream = u64::from_le_bytes(bytes[0..8].try_into().unwrap());
    let index = u64::from_le_bytes(bytes[8..16].try_into().unwrap());
    (make(stream, index, bytes.len()) == bytes).then_some((stream, index))
}
