//! Continuation tokens of `list`, in the local engine's form ("t1." and the last key in hex),
//! so a token means the same on either backend.

use tenure::{Error, Result};

const CONTINUATION_PREFIX: &str = "t1.";
/// The longest key a token may carry, in bytes.
const MAX_TOKEN_KEY_BYTES: usize = 1024;

pub(crate) fn encode_continuation(key: &[u8]) -> String {
    let mut token = String::with_capacity(CONTINUATION_PREFIX.len() + key.len() * 2);
    token.push_str(CONTINUATION_PREFIX);
    for byte in key {
        token.push_str(&format!("{byte:02x}"));
    }
    token
}

pub(crate) fn decode_continuation(token: &str) -> Result<Vec<u8>> {
    let invalid = || Error::invalid("continuation", "not a continuation token tenure issued");
    let hex = token
        .strip_prefix(CONTINUATION_PREFIX)
        .ok_or_else(invalid)?;
    if hex.len() % 2 != 0 || hex.is_empty() || hex.len() > 2 * MAX_TOKEN_KEY_BYTES {
        return Err(invalid());
    }
    (0..hex.len())
        .step_by(2)
        .map(|at| u8::from_str_radix(&hex[at..at + 2], 16).map_err(|_| invalid()))
        .collect()
}
