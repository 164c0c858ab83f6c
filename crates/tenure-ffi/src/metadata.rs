//! User metadata at the boundary: in as an array of `tenure_metadata_entry`, out as one byte
//! buffer of NUL-terminated names and values, alternating (`name\0value\0name\0value\0`).

use crate::prelude::*;

/// One user metadata pair (both NUL-terminated UTF-8; the name non-empty).
#[repr(C)]
pub struct tenure_metadata_entry {
    pub name: *const c_char,
    pub value: *const c_char,
}

/// How errors name a metadata argument: a function's own, or an options struct's fields.
pub(crate) struct MetadataNames {
    entries: &'static str,
    count: &'static str,
    name: &'static str,
    value: &'static str,
}

/// The arguments `metadata`, `metadata_count`.
pub(crate) const METADATA: MetadataNames = MetadataNames {
    entries: "metadata",
    count: "metadata_count",
    name: "metadata.name",
    value: "metadata.value",
};

/// The fields `options.metadata`, `options.metadata_count`.
pub(crate) const OPTIONS_METADATA: MetadataNames = MetadataNames {
    entries: "options.metadata",
    count: "options.metadata_count",
    name: "options.metadata.name",
    value: "options.metadata.value",
};

/// The metadata array of a call: NULL only with a count of 0; the count is checked against the
/// metadata limit (every name takes at least one byte) before an entry is read.
///
/// # Safety
/// `entries` points to `count` entries whose strings are NULL or NUL-terminated.
pub(crate) unsafe fn metadata_in(
    entries: *const tenure_metadata_entry,
    count: usize,
) -> Result<Vec<(String, String)>, Fail> {
    // SAFETY: the caller's contract.
    unsafe { metadata_named(&METADATA, entries, count) }
}

/// [`metadata_in`], its errors naming `names`.
///
/// # Safety
/// As for [`metadata_in`].
pub(crate) unsafe fn metadata_named(
    names: &MetadataNames,
    entries: *const tenure_metadata_entry,
    count: usize,
) -> Result<Vec<(String, String)>, Fail> {
    if count == 0 {
        return Ok(Vec::new());
    }
    if entries.is_null() {
        return Err(invalid(names.entries, "is NULL with a non-zero count"));
    }
    let limit = tenure::Limits::default().max_metadata_bytes;
    if count > limit {
        return Err(invalid(
            names.count,
            format!("must be at most {limit} (the metadata limit in bytes), not {count}"),
        ));
    }
    // SAFETY: non-NULL, and the caller vouches for `count` entries.
    let entries = unsafe { std::slice::from_raw_parts(entries, count) };
    entries
        .iter()
        .map(|entry| {
            // SAFETY: the caller's contract for each string.
            let (name, value) = unsafe {
                (
                    text(names.name, entry.name)?,
                    text(names.value, entry.value)?,
                )
            };
            Ok((name.to_owned(), value.to_owned()))
        })
        .collect()
}

/// The output form: `name\0value\0` for each pair, in order.
pub(crate) fn metadata_bytes(metadata: &[(String, String)]) -> Vec<u8> {
    let mut bytes = Vec::new();
    for (name, value) in metadata {
        bytes.extend_from_slice(name.as_bytes());
        bytes.push(0);
        bytes.extend_from_slice(value.as_bytes());
        bytes.push(0);
    }
    bytes
}

/// The content type and user metadata a write sets together with the value (tenure_write,
/// tenure_batch_write): the one way to write them in the same write as the value.
#[repr(C)]
pub struct tenure_write_properties {
    /// NUL-terminated UTF-8 (at most the engine's content-type limit); NULL = no content type.
    pub content_type: *const c_char,
    /// `metadata_count` pairs; NULL only with a count of 0.
    pub metadata: *const tenure_metadata_entry,
    pub metadata_count: usize,
}

/// A required `tenure_write_properties` argument, checked and copied in.
///
/// # Safety
/// `properties` is NULL or a valid struct whose pointers follow its documented contract.
pub(crate) unsafe fn write_properties_in(
    properties: *const tenure_write_properties,
) -> Result<(Option<String>, Vec<(String, String)>), Fail> {
    // SAFETY: the caller's contract.
    let Some(properties) = (unsafe { properties.as_ref() }) else {
        return Err(invalid(
            "properties",
            "is NULL (a write without properties is tenure_put/create/replace)",
        ));
    };
    // SAFETY: the caller's contract for each pointer.
    unsafe {
        Ok((
            optional_text("properties.content_type", properties.content_type)?.map(str::to_owned),
            metadata_in(properties.metadata, properties.metadata_count)?,
        ))
    }
}
