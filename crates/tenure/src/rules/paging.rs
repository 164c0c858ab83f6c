//! Listing pages (docs/spec.md §7): the continuation token, the same for every backend ("t1."
//! and the last key listed, in hex), and the arguments of a listing.

use crate::error::{Error, Result};
use crate::rules::limits::Limits;
use crate::rules::validate;

const CONTINUATION_PREFIX: &str = "t1.";
/// The longest key a token may carry, in bytes.
const MAX_TOKEN_KEY_BYTES: usize = 1024;

/// The token that continues a listing after `key`.
pub fn encode_continuation(key: &[u8]) -> String {
    let mut token = String::with_capacity(CONTINUATION_PREFIX.len() + key.len() * 2);
    token.push_str(CONTINUATION_PREFIX);
    for byte in key {
        token.push_str(&format!("{byte:02x}"));
    }
    token
}

/// The key a token continues after.
pub fn decode_continuation(token: &str) -> Result<Vec<u8>> {
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

/// Step 1 of a listing: its container, prefix and page size; then where it starts — `prefix`,
/// or just past the key `continuation` names, which must lie under the same prefix.
pub fn listing_start(
    container: &str,
    prefix: &[u8],
    page_size: usize,
    continuation: Option<&str>,
    limits: &Limits,
) -> Result<Vec<u8>> {
    validate::container_name(container)?;
    validate::key_bound("prefix", prefix, limits)?;
    if page_size == 0 || page_size > limits.max_page_size {
        return Err(Error::invalid(
            "page_size",
            format!("must be 1..={}", limits.max_page_size),
        ));
    }
    let Some(token) = continuation else {
        return Ok(prefix.to_vec());
    };
    let mut after = decode_continuation(token)?;
    if !after.starts_with(prefix) {
        return Err(Error::invalid(
            "continuation",
            "the token belongs to another prefix",
        ));
    }
    // The smallest key greater than `after`.
    after.push(0);
    Ok(after)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tokens_round_trip_and_foreign_ones_are_refused() {
        let token = encode_continuation(b"user/\x00\xff");
        assert_eq!(decode_continuation(&token).unwrap(), b"user/\x00\xff");
        for bad in ["", "t1.", "t1.0", "t1.zz", "t2.00", "00"] {
            assert!(decode_continuation(bad).is_err(), "{bad:?}");
        }
        let limits = Limits::default();
        let start = listing_start("c", b"user/", 10, Some(&token), &limits).unwrap();
        assert_eq!(start, b"user/\x00\xff\x00");
        let other = encode_continuation(b"admin/1");
        assert!(listing_start("c", b"user/", 10, Some(&other), &limits).is_err());
        assert!(listing_start("c", b"", 0, None, &limits).is_err());
    }
}
