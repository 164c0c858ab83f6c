//! `Container.update()`: read, apply a Python function, write back with `if_match`, and retry
//! lost races with a jittered backoff until a deadline (docs/spec.md §3).

use std::borrow::Cow;
use std::time::{Duration, Instant};

use pyo3::prelude::*;
use pyo3::types::PyBytes;
use rand::Rng;

use tenure::{Conditions, ETag, ETagArg, Error, ErrorCode, ReadOptions, WriteOptions};

use crate::container::Container;
use crate::convert;
use crate::errors::IntoPyResult;
use crate::item::Item;

/// How long `update()` keeps retrying lost races by default.
const UPDATE_TIMEOUT: Duration = Duration::from_secs(30);

/// Jittered exponential backoff after a lost compare-and-swap (at most ~13 ms).
fn backoff(attempt: u64) -> Duration {
    let ceiling_micros = 50u64 << attempt.min(8);
    Duration::from_micros(rand::thread_rng().gen_range(0..=ceiling_micros))
}

/// The body of `Container.update` (its docstring says what it does).
pub fn update<'py>(
    container: &Container,
    py: Python<'py>,
    key: &Bound<'_, PyAny>,
    r#fn: &Bound<'_, PyAny>,
    max_attempts: Option<&Bound<'_, PyAny>>,
    timeout: Option<&Bound<'_, PyAny>>,
    create_default: Option<&Bound<'_, PyAny>>,
    lease_id: Option<&Bound<'_, PyAny>>,
) -> PyResult<Bound<'py, Item>> {
    let key = convert::key("key", key)?;
    if !r#fn.is_callable() {
        return Err(convert::wrong_type("fn", "callable", r#fn));
    }
    let max_attempts = match max_attempts.filter(|value| !value.is_none()) {
        Some(value) => {
            let attempts = convert::count("max_attempts", value, u64::MAX >> 1)?;
            if attempts == 0 {
                return Err(convert::invalid(py, "max_attempts", "must be at least 1"));
            }
            attempts
        }
        None => u64::MAX,
    };
    let timeout = match timeout.filter(|value| !value.is_none()) {
        Some(value) => convert::duration("timeout", value)?,
        None => UPDATE_TIMEOUT,
    };
    let deadline = Instant::now() + timeout;
    let create_default =
        convert::optional_value("create_default", create_default)?.map(Cow::into_owned);
    let lease_id = convert::optional_lease_id("lease_id", lease_id)?;
    let name = &container.name;
    let about = container.about(&key);
    let read = ReadOptions {
        conditions: Conditions::default(),
        lease_id,
    };
    let apply = |current: &[u8]| -> PyResult<Vec<u8>> {
        let result = r#fn.call1((PyBytes::new(py, current),))?;
        Ok(convert::value("fn result", &result)?.into_owned())
    };
    let mut attempt = 0u64;
    loop {
        attempt += 1;
        let current = py.detach(|| -> Result<_, Error> {
            let store = container.handle.store()?;
            store.get(name, &key, &read)
        });
        let (new_value, options, previous) = match current {
            Ok(current) => {
                let new_value = apply(current.value.as_deref().unwrap_or(&[]))?;
                let options = WriteOptions {
                    conditions: Conditions::if_match(current.etag),
                    content_type: current.content_type.clone(),
                    metadata: current.metadata.clone(),
                    lease_id,
                    ..WriteOptions::default()
                };
                (new_value, options, Some(current))
            }
            Err(error) if error.code() == ErrorCode::NotFound => match &create_default {
                Some(default) => {
                    let new_value = apply(default)?;
                    let options = WriteOptions {
                        conditions: Conditions::if_none_match(ETagArg::Any),
                        lease_id,
                        ..WriteOptions::default()
                    };
                    (new_value, options, None)
                }
                None => return Err(error).py_result_in(py, &about),
            },
            Err(error) => return Err(error).py_result_in(py, &about),
        };
        let written = py.detach(|| -> Result<_, Error> {
            let store = container.handle.store()?;
            let etag = store.put(name, &key, &new_value, &options)?;
            // The written item's properties (last_modified, expiry) as of its ETag.
            let pinned = ReadOptions {
                conditions: Conditions::if_match(etag),
                lease_id,
            };
            Ok((etag, store.get_properties(name, &key, &pinned).ok()))
        });
        let conflict = match written {
            Ok((etag, properties)) => {
                let item =
                    properties.unwrap_or_else(|| fallback_item(&key, etag, previous, &options));
                return Item::new(
                    py,
                    tenure::Item {
                        value: Some(new_value),
                        ..item
                    },
                );
            }
            Err(error)
                if matches!(
                    error.code(),
                    ErrorCode::ConditionNotMet | ErrorCode::AlreadyExists | ErrorCode::Busy
                ) =>
            {
                error
            }
            Err(error) => return Err(error).py_result_in(py, &about),
        };
        let pause = backoff(attempt - 1);
        if attempt >= max_attempts || Instant::now() + pause >= deadline {
            return Err(conflict).py_result_in(py, &about);
        }
        py.detach(|| std::thread::sleep(pause));
    }
}

/// The item `update()` returns when the read-back after its write lost a race: what it wrote.
fn fallback_item(
    key: &[u8],
    etag: ETag,
    previous: Option<tenure::Item>,
    options: &WriteOptions,
) -> tenure::Item {
    let (last_modified, expires_at) = previous
        .map(|item| (item.last_modified, item.expires_at))
        .unwrap_or((0, None));
    tenure::Item {
        key: key.to_vec(),
        value: None,
        etag,
        version: etag.version(),
        last_modified,
        content_type: options.content_type.clone(),
        metadata: options.metadata.clone(),
        expires_at,
    }
}
