//! Argument checks (docs/spec.md §13): each names the argument and says why. They run before anything
//! is looked up, so a bad argument changes nothing.

use crate::error::{Error, Result};
use crate::rules::conditions::Conditions;
use crate::rules::limits::Limits;

pub fn container_name(name: &str) -> Result<()> {
    if name.is_empty() || name.len() > 255 {
        return Err(Error::invalid(
            "container",
            format!("a container name is 1 to 255 bytes, got {}", name.len()),
        ));
    }
    if name.contains('\0') {
        return Err(Error::invalid(
            "container",
            "a container name must not contain NUL",
        ));
    }
    if name.starts_with('/') {
        return Err(Error::invalid(
            "container",
            "a container name must not start with '/'",
        ));
    }
    Ok(())
}

pub fn key(key: &[u8], limits: &Limits) -> Result<()> {
    if key.is_empty() || key.len() > limits.max_key_bytes {
        return Err(Error::invalid(
            "key",
            format!(
                "a key is 1 to {} bytes, got {}",
                limits.max_key_bytes,
                key.len()
            ),
        ));
    }
    Ok(())
}

/// A key prefix or a start key: may be empty, no longer than a key.
pub fn key_bound(argument: &'static str, bytes: &[u8], limits: &Limits) -> Result<()> {
    if bytes.len() > limits.max_key_bytes {
        return Err(Error::invalid(
            argument,
            format!(
                "longer than the key limit of {} bytes",
                limits.max_key_bytes
            ),
        ));
    }
    Ok(())
}

pub fn value(value: &[u8], limits: &Limits) -> Result<()> {
    if value.len() > limits.max_value_bytes {
        return Err(Error::invalid(
            "value",
            format!(
                "a value is at most {} bytes, got {}",
                limits.max_value_bytes,
                value.len()
            ),
        ));
    }
    Ok(())
}

pub fn metadata(metadata: &[(String, String)], limits: &Limits) -> Result<()> {
    let mut total = 0usize;
    for (name, value) in metadata {
        if name.is_empty() {
            return Err(Error::invalid(
                "metadata",
                "a metadata name must not be empty",
            ));
        }
        total += name.len() + value.len();
    }
    if total > limits.max_metadata_bytes {
        return Err(Error::invalid(
            "metadata",
            format!(
                "metadata is at most {} bytes in total, got {total}",
                limits.max_metadata_bytes
            ),
        ));
    }
    for (index, (name, _)) in metadata.iter().enumerate() {
        if metadata[..index].iter().any(|(earlier, _)| earlier == name) {
            return Err(Error::invalid(
                "metadata",
                format!("the name {name:?} appears twice"),
            ));
        }
    }
    Ok(())
}

pub fn content_type(content_type: Option<&str>, limits: &Limits) -> Result<()> {
    if let Some(content_type) = content_type {
        if content_type.len() > limits.max_content_type_bytes
            || content_type.len() >= u16::MAX as usize
        {
            return Err(Error::invalid(
                "content_type",
                format!("at most {} bytes", limits.max_content_type_bytes),
            ));
        }
    }
    Ok(())
}

/// Container operations take no `if_version` (containers have no cache version).
pub fn container_conditions(conditions: &Conditions) -> Result<()> {
    if conditions.if_version.is_some() {
        return Err(Error::invalid(
            "if_version",
            "containers do not take a version condition",
        ));
    }
    Ok(())
}
