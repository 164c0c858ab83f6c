//! tenure's rules as pure functions: (current state, request, now) → new state or error.
//! No I/O, no atomics, no clock reads: the storage layer applies their result with its
//! compare-and-swap on the item's version.

pub mod conditions;
pub mod etag;
pub mod item_write;
pub mod lease;
pub mod limits;
pub mod lock;
pub mod paging;
pub mod ttl;
pub mod validate;

#[cfg(test)]
mod tests_conditions;
#[cfg(test)]
mod tests_lease;
#[cfg(test)]
mod tests_lease_checks;
#[cfg(test)]
mod tests_lock;

use crate::error::Error;
use crate::types::ETag;

/// Adds the item's current ETag to a refusal that was decided without it (the lease and lock
/// checks), so every precondition error reports it where the item exists (docs/spec.md §12).
pub fn with_current_etag(error: Error, etag: Option<ETag>) -> Error {
    match error {
        Error::Rejected { code, current_etag } => Error::Rejected {
            code,
            current_etag: etag.or(current_etag),
        },
        other => other,
    }
}
