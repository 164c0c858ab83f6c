//! Time to live (docs/spec.md §7): a container default and a per-item TTL that overrides it, both
//! counted from the item's last write. Any write resets the count; an expired item is gone for
//! every read path at once.
//!
//! A live cache lock suspends expiry (docs/spec.md §6); that rule is in `lock.rs`
//! (`is_expired_under_lock`).

use crate::clock::{Timestamp, MICROS_PER_SECOND};
use crate::error::{Error, Result};

/// How long an item lives after its last write.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub enum Ttl {
    /// No TTL of its own: the container's default applies (none if the container has none).
    #[default]
    ContainerDefault,
    /// Never expires, whatever the container's default (`-1` in Python and C).
    Never,
    /// Expires this many seconds after the last write. Build it with [`Ttl::seconds`] so it is
    /// never 0.
    Seconds(u32),
}

impl Ttl {
    /// A TTL of `seconds` (> 0).
    pub fn seconds(seconds: u32) -> Result<Ttl> {
        if seconds == 0 {
            return Err(Error::invalid(
                "ttl",
                "a TTL must be at least 1 second (-1 means never)",
            ));
        }
        Ok(Ttl::Seconds(seconds))
    }

    /// The Python and C form: `-1` = never, `n > 0` = n seconds; 0, below -1 and above
    /// `u32::MAX` are refused.
    pub fn from_signed_seconds(seconds: i64) -> Result<Ttl> {
        if seconds == -1 {
            return Ok(Ttl::Never);
        }
        match u32::try_from(seconds) {
            Ok(seconds) => Ttl::seconds(seconds),
            Err(_) => Err(Error::invalid(
                "ttl",
                format!(
                    "a TTL is -1 (never) or 1..={} seconds, not {seconds}",
                    u32::MAX
                ),
            )),
        }
    }

    /// Checks a TTL built directly from its variants.
    pub fn validate(self) -> Result<Ttl> {
        match self {
            Ttl::Seconds(seconds) => Ttl::seconds(seconds),
            Ttl::ContainerDefault | Ttl::Never => Ok(self),
        }
    }
}

/// A container's default TTL: `None` = off, `Some(n)` with `n > 0` seconds. The refusal names
/// `default_ttl`.
pub fn container_default_ttl_seconds(seconds: Option<i64>) -> Result<Option<u32>> {
    let Some(seconds) = seconds else {
        return Ok(None);
    };
    match u32::try_from(seconds) {
        Ok(seconds) if seconds > 0 => Ok(Some(seconds)),
        _ => Err(Error::invalid(
            "default_ttl",
            format!(
                "a container default TTL is off or 1..={} seconds, not {seconds}",
                u32::MAX
            ),
        )),
    }
}

/// When an item written at `written_at` expires: `None` = never.
///
/// The item's own TTL wins over the container default, also when the container has no
/// default (differs from Cosmos DB, which ignores item TTLs while the container's is off).
pub fn expires_at(
    written_at: Timestamp,
    ttl: Ttl,
    container_default_seconds: Option<u32>,
) -> Option<Timestamp> {
    let seconds = match ttl {
        Ttl::ContainerDefault => container_default_seconds?,
        Ttl::Never => return None,
        Ttl::Seconds(seconds) => seconds,
    };
    // Saturating: u32::MAX seconds from any real clock still fits in u64 microseconds, but a
    // hostile stored timestamp must not wrap into the past.
    Some(written_at.saturating_add(u64::from(seconds) * MICROS_PER_SECOND))
}

/// Expired once the clock reaches the expiry time.
pub fn is_expired(expires_at: Option<Timestamp>, now: Timestamp) -> bool {
    expires_at.is_some_and(|expiry| now >= expiry)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::error::ErrorCode;

    const WRITTEN_AT: Timestamp = 1_000 * MICROS_PER_SECOND;

    fn assert_invalid(result: Result<impl std::fmt::Debug>, argument: &str) {
        match result {
            Err(Error::InvalidArgument {
                argument: named, ..
            }) => assert_eq!(named, argument),
            other => panic!("expected InvalidArgument naming {argument}, got {other:?}"),
        }
    }

    #[test]
    fn signed_seconds_minus_one_is_never_positive_is_seconds() {
        assert_eq!(Ttl::from_signed_seconds(-1).unwrap(), Ttl::Never);
        assert_eq!(Ttl::from_signed_seconds(1).unwrap(), Ttl::Seconds(1));
        assert_eq!(
            Ttl::from_signed_seconds(i64::from(u32::MAX)).unwrap(),
            Ttl::Seconds(u32::MAX)
        );
    }

    #[test]
    fn zero_below_minus_one_and_too_large_ttl_are_invalid() {
        for bad in [0, -2, i64::MIN, i64::from(u32::MAX) + 1, i64::MAX] {
            assert_invalid(Ttl::from_signed_seconds(bad), "ttl");
        }
        assert_invalid(Ttl::seconds(0), "ttl");
        assert_invalid(Ttl::Seconds(0).validate(), "ttl");
        assert_eq!(Ttl::Never.validate().unwrap(), Ttl::Never);
        assert_eq!(
            Ttl::from_signed_seconds(0).unwrap_err().code(),
            ErrorCode::InvalidArgument
        );
    }

    #[test]
    fn container_default_is_off_or_positive_seconds() {
        assert_eq!(container_default_ttl_seconds(None).unwrap(), None);
        assert_eq!(container_default_ttl_seconds(Some(30)).unwrap(), Some(30));
        for bad in [0, -1, i64::from(u32::MAX) + 1] {
            assert_invalid(container_default_ttl_seconds(Some(bad)), "default_ttl");
        }
    }

    #[test]
    fn item_ttl_overrides_container_default() {
        let seconds = |n: u64| WRITTEN_AT + n * MICROS_PER_SECOND;
        assert_eq!(
            expires_at(WRITTEN_AT, Ttl::Seconds(5), Some(60)),
            Some(seconds(5))
        );
        assert_eq!(
            expires_at(WRITTEN_AT, Ttl::Seconds(5), None),
            Some(seconds(5))
        );
        assert_eq!(expires_at(WRITTEN_AT, Ttl::Never, Some(60)), None);
        assert_eq!(
            expires_at(WRITTEN_AT, Ttl::ContainerDefault, Some(60)),
            Some(seconds(60))
        );
        assert_eq!(expires_at(WRITTEN_AT, Ttl::ContainerDefault, None), None);
    }

    #[test]
    fn expiry_saturates_instead_of_wrapping() {
        assert_eq!(
            expires_at(u64::MAX - 1, Ttl::Seconds(u32::MAX), None),
            Some(u64::MAX)
        );
    }

    #[test]
    fn expired_exactly_at_the_expiry_time() {
        let expiry = Some(WRITTEN_AT + 10);
        assert!(!is_expired(expiry, WRITTEN_AT + 9));
        assert!(is_expired(expiry, WRITTEN_AT + 10));
        assert!(is_expired(expiry, WRITTEN_AT + 11));
        assert!(!is_expired(None, u64::MAX));
    }
}
