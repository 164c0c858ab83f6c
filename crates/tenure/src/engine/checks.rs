//! The one check chain and the one version builder of every item write: a put, create,
//! replace, delete or metadata change, and each operation of a batch (docs/spec.md §3's order
//! of checks: existence, lease and lock, conditions; then the change itself).

use crate::backend::options::WriteOptions;
use crate::clock::Timestamp;
use crate::error::Result;
use crate::index::{coordination_box, NewVersion, Properties, ValueLocation, VersionNode};
use crate::record::{Coordination, ItemWrite};
use crate::rules::conditions::{ItemFacts, WriteKind};
use crate::rules::item_write::{self, WriteRequest};
use crate::types::{ETag, Version};

/// Steps 3 to 5 of a write (`rules::item_write::check_write`) for a write with `options`.
pub(crate) fn check_write(
    kind: WriteKind,
    options: &WriteOptions,
    facts: Option<&ItemFacts>,
    current_etag: Option<ETag>,
    state: &Coordination,
    now: Timestamp,
) -> Result<Coordination> {
    let request = WriteRequest {
        kind,
        conditions: &options.conditions,
        lease_id: options.lease_id,
        lock_handle: options.lock_handle,
    };
    item_write::check_write(request, facts, current_etag, state, now)
}

/// The version a write of `write` installs, at `version` and with `status`: its value where
/// the record put it, its properties and the lease and lock it carries.
pub(crate) fn written_version(
    write: &ItemWrite<'_>,
    version: Version,
    status: u8,
    value: Option<ValueLocation>,
) -> VersionNode {
    debug_assert_eq!(
        value.is_some(),
        write.value.is_some(),
        "a version has a value exactly when its write has one"
    );
    VersionNode::new(NewVersion {
        version,
        etag_version: version,
        status,
        value,
        last_modified: write.last_modified,
        expires_at: write.expires_at,
        properties: Properties::boxed(write.content_type, write.metadata.to_vec()),
        coordination: write.coordination.cloned().and_then(coordination_box),
    })
}
