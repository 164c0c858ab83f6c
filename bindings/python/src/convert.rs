//! Python arguments → engine arguments, and engine values → Python objects.
//!
//! A wrong *type* raises `TypeError`; a value of the right type that the engine cannot take
//! raises `InvalidArgument` naming the argument (docs/spec.md §13). Everything here runs with the GIL
//! held and copies what it needs, so the store call itself can run detached.

use std::borrow::Cow;
use std::time::Duration;

use pyo3::exceptions::PyTypeError;
use pyo3::prelude::*;
use pyo3::sync::PyOnceLock;
use pyo3::types::{
    PyBool, PyByteArray, PyBytes, PyDict, PyFloat, PyInt, PyList, PyString, PyTuple,
};

use tenure::{
    Conditions, ETagArg, ETagList, Error, LeaseDuration, LeaseId, LockHandle, Timestamp, Ttl,
};

use crate::errors::to_py;

/// `InvalidArgument` naming `argument`, as a Python exception.
pub fn invalid(py: Python<'_>, argument: &'static str, reason: impl Into<String>) -> PyErr {
    to_py(
        py,
        Error::InvalidArgument {
            argument,
            reason: reason.into(),
        },
    )
}

fn type_name(value: &Bound<'_, PyAny>) -> String {
    value
        .get_type()
        .name()
        .map(|name| name.to_string())
        .unwrap_or_else(|_| "?".to_owned())
}

pub fn wrong_type(argument: &str, expected: &str, value: &Bound<'_, PyAny>) -> PyErr {
    PyTypeError::new_err(format!(
        "argument `{argument}` must be {expected}, not {}",
        type_name(value)
    ))
}

/// A key: `str` (encoded as UTF-8) or `bytes`. Immutable `bytes` are borrowed, not copied:
/// nothing can change them while the detached call reads them. A `str` holding the lone
/// surrogates U+DC80..U+DCFF is encoded with "surrogateescape" (PEP 383): that is how a key
/// that is not UTF-8 comes back as `Item.key`, so passing it back names the same item.
pub fn key<'a>(argument: &'static str, value: &'a Bound<'_, PyAny>) -> PyResult<Cow<'a, [u8]>> {
    if let Ok(bytes) = value.cast::<PyBytes>() {
        return Ok(Cow::Borrowed(bytes.as_bytes()));
    }
    if let Ok(text) = value.cast::<PyString>() {
        if let Ok(text) = text.to_cow() {
            return Ok(Cow::Owned(text.into_owned().into_bytes()));
        }
        let escaped = text
            .call_method1("encode", ("utf-8", "surrogateescape"))
            .map_err(|_| {
                invalid(
                    value.py(),
                    argument,
                    "not encodable as UTF-8 (a lone surrogate outside U+DC80..U+DCFF)",
                )
            })?;
        return Ok(Cow::Owned(escaped.cast::<PyBytes>()?.as_bytes().to_vec()));
    }
    Err(wrong_type(argument, "str or bytes", value))
}

/// A value: any bytes-like object. `bytes` are borrowed (immutable); anything mutable
/// (bytearray, memoryview, array, …) is copied before the call.
pub fn value<'a>(argument: &'static str, value: &'a Bound<'_, PyAny>) -> PyResult<Cow<'a, [u8]>> {
    if let Ok(bytes) = value.cast::<PyBytes>() {
        return Ok(Cow::Borrowed(bytes.as_bytes()));
    }
    if let Ok(array) = value.cast::<PyByteArray>() {
        return Ok(Cow::Owned(array.to_vec()));
    }
    if value.is_instance_of::<PyString>() || value.is_instance_of::<PyInt>() {
        return Err(wrong_type(argument, "bytes-like", value));
    }
    // The buffer protocol is not in the limited API before 3.11: let memoryview copy it.
    let py = value.py();
    let view = py
        .import("builtins")?
        .getattr("memoryview")?
        .call1((value,))
        .map_err(|_| wrong_type(argument, "bytes-like", value))?;
    let copied = view.call_method0("tobytes")?;
    Ok(Cow::Owned(copied.cast::<PyBytes>()?.as_bytes().to_vec()))
}

pub fn optional_value<'a>(
    argument: &'static str,
    value: Option<&'a Bound<'_, PyAny>>,
) -> PyResult<Option<Cow<'a, [u8]>>> {
    match value {
        Some(value) if !value.is_none() => self::value(argument, value).map(Some),
        _ => Ok(None),
    }
}

/// A Python `int` (not `bool`) as `i64`; one too large for `i64` is out of range.
pub fn integer(argument: &'static str, value: &Bound<'_, PyAny>) -> PyResult<i64> {
    if value.is_instance_of::<PyBool>() || !value.is_instance_of::<PyInt>() {
        return Err(wrong_type(argument, "an int", value));
    }
    value
        .extract::<i64>()
        .map_err(|_| invalid(value.py(), argument, "out of range"))
}

/// A non-negative integer within `maximum`.
pub fn count(argument: &'static str, value: &Bound<'_, PyAny>, maximum: u64) -> PyResult<u64> {
    let number = integer(argument, value)?;
    u64::try_from(number)
        .ok()
        .filter(|number| *number <= maximum)
        .ok_or_else(|| {
            invalid(
                value.py(),
                argument,
                format!("must be 0..={maximum}, got {number}"),
            )
        })
}

/// A `datetime.timedelta` as exact whole microseconds, or `None` for any other object.
fn timedelta_micros(value: &Bound<'_, PyAny>) -> PyResult<Option<i128>> {
    let api = datetime_api(value.py())?;
    if !value.is_instance(api.timedelta.bind(value.py()))? {
        return Ok(None);
    }
    let days: i128 = value.getattr("days")?.extract::<i64>()?.into();
    let seconds: i128 = value.getattr("seconds")?.extract::<i64>()?.into();
    let micros: i128 = value.getattr("microseconds")?.extract::<i64>()?.into();
    Ok(Some((days * 86_400 + seconds) * 1_000_000 + micros))
}

/// Seconds given as `int` or `float` (not `bool`), finite, or a `timedelta`.
pub fn seconds_float(argument: &'static str, value: &Bound<'_, PyAny>) -> PyResult<f64> {
    if let Some(micros) = timedelta_micros(value)? {
        return Ok(micros as f64 / 1e6);
    }
    if value.is_instance_of::<PyBool>()
        || !(value.is_instance_of::<PyInt>() || value.is_instance_of::<PyFloat>())
    {
        return Err(wrong_type(
            argument,
            "seconds (int or float) or a timedelta",
            value,
        ));
    }
    let seconds: f64 = value.extract()?;
    if !seconds.is_finite() {
        return Err(invalid(
            value.py(),
            argument,
            "must be a finite number of seconds",
        ));
    }
    Ok(seconds)
}

/// Whole seconds: an `int`, a `float` with no fractional part, or a `timedelta` of whole
/// seconds.
pub fn whole_seconds(argument: &'static str, value: &Bound<'_, PyAny>) -> PyResult<i64> {
    if let Some(micros) = timedelta_micros(value)? {
        if micros % 1_000_000 != 0 {
            return Err(invalid(
                value.py(),
                argument,
                format!(
                    "must be a whole number of seconds, got {} s",
                    micros as f64 / 1e6
                ),
            ));
        }
        return i64::try_from(micros / 1_000_000)
            .map_err(|_| invalid(value.py(), argument, "out of range"));
    }
    if value.is_instance_of::<PyFloat>() {
        let seconds = seconds_float(argument, value)?;
        if seconds.fract() != 0.0 || seconds.abs() > 1e15 {
            return Err(invalid(
                value.py(),
                argument,
                format!("must be a whole number of seconds, got {seconds}"),
            ));
        }
        return Ok(seconds as i64);
    }
    if value.is_instance_of::<PyBool>() || !value.is_instance_of::<PyInt>() {
        return Err(wrong_type(
            argument,
            "a whole number of seconds (int) or a timedelta",
            value,
        ));
    }
    integer(argument, value)
}

/// A non-negative span of seconds (int, float or `timedelta`) as a `Duration` (microsecond
/// resolution).
pub fn duration(argument: &'static str, value: &Bound<'_, PyAny>) -> PyResult<Duration> {
    if let Some(micros) = timedelta_micros(value)? {
        if micros < 0 {
            return Err(invalid(value.py(), argument, "must not be negative"));
        }
        if micros > 1_000_000_000_000_000_000 {
            return Err(invalid(value.py(), argument, "too large"));
        }
        return Ok(Duration::from_micros(micros as u64));
    }
    let seconds = seconds_float(argument, value)?;
    if seconds < 0.0 {
        return Err(invalid(value.py(), argument, "must not be negative"));
    }
    // About 31,000 years: beyond any limit the engine takes, and safely inside u64 micros.
    if seconds > 1e12 {
        return Err(invalid(value.py(), argument, "too large"));
    }
    Ok(Duration::from_micros((seconds * 1e6).round() as u64))
}

struct DateTimeApi {
    datetime_type: Py<PyAny>,
    utc: Py<PyAny>,
    epoch: Py<PyAny>,
    one_microsecond: Py<PyAny>,
    timedelta: Py<PyAny>,
    max: Py<PyAny>,
}

static DATETIME: PyOnceLock<DateTimeApi> = PyOnceLock::new();

fn datetime_api(py: Python<'_>) -> PyResult<&DateTimeApi> {
    DATETIME.get_or_try_init(py, || {
        let module = py.import("datetime")?;
        let datetime_type = module.getattr("datetime")?;
        let timedelta = module.getattr("timedelta")?;
        let utc = module.getattr("timezone")?.getattr("utc")?;
        let epoch_arguments = PyDict::new(py);
        epoch_arguments.set_item("tzinfo", &utc)?;
        let epoch = datetime_type.call((1970, 1, 1), Some(&epoch_arguments))?;
        let one_microsecond_arguments = PyDict::new(py);
        one_microsecond_arguments.set_item("microseconds", 1)?;
        let one_microsecond = timedelta.call((), Some(&one_microsecond_arguments))?;
        let max =
            datetime_type
                .getattr("max")?
                .call_method("replace", (), Some(&epoch_arguments))?;
        Ok(DateTimeApi {
            datetime_type: datetime_type.unbind(),
            utc: utc.unbind(),
            epoch: epoch.unbind(),
            one_microsecond: one_microsecond.unbind(),
            timedelta: timedelta.unbind(),
            max: max.unbind(),
        })
    })
}

/// A point in time: an aware `datetime` (a naive one is taken as UTC) or epoch seconds
/// (`int` or `float`). Returns microseconds since the Unix epoch.
pub fn timestamp(argument: &'static str, value: &Bound<'_, PyAny>) -> PyResult<Timestamp> {
    let py = value.py();
    let api = datetime_api(py)?;
    if value.is_instance(api.datetime_type.bind(py))? {
        let aware = if value.call_method0("utcoffset")?.is_none() {
            let arguments = PyDict::new(py);
            arguments.set_item("tzinfo", api.utc.bind(py))?;
            value.call_method("replace", (), Some(&arguments))?
        } else {
            value.clone()
        };
        let micros = aware
            .sub(api.epoch.bind(py))?
            .floor_div(api.one_microsecond.bind(py))?;
        return micros
            .extract::<u64>()
            .map_err(|_| invalid(py, argument, "must not be before 1970-01-01 UTC"));
    }
    if value.is_instance_of::<PyBool>()
        || !(value.is_instance_of::<PyInt>() || value.is_instance_of::<PyFloat>())
    {
        return Err(wrong_type(argument, "a datetime or epoch seconds", value));
    }
    let seconds = seconds_float(argument, value)?;
    if seconds < 0.0 {
        return Err(invalid(py, argument, "must not be before 1970-01-01 UTC"));
    }
    if seconds > 1.8e13 {
        return Err(invalid(py, argument, "too far in the future"));
    }
    Ok((seconds * 1e6).round() as u64)
}

pub fn optional_timestamp(
    argument: &'static str,
    value: Option<&Bound<'_, PyAny>>,
) -> PyResult<Option<Timestamp>> {
    match value {
        Some(value) if !value.is_none() => timestamp(argument, value).map(Some),
        _ => Ok(None),
    }
}

/// Microseconds since the epoch as an aware UTC `datetime` (clamped to `datetime.max`).
pub fn datetime(py: Python<'_>, micros: Timestamp) -> PyResult<Bound<'_, PyAny>> {
    let api = datetime_api(py)?;
    // datetime.max is 9999-12-31: about 2.5e17 microseconds after the epoch.
    if micros >= 253_402_300_799_000_000 {
        return Ok(api.max.bind(py).clone());
    }
    let arguments = PyDict::new(py);
    arguments.set_item("microseconds", micros)?;
    let delta = api.timedelta.bind(py).call((), Some(&arguments))?;
    api.epoch.bind(py).add(delta)
}

/// `None`, one ETag string, or a list/tuple of them.
pub fn etags(argument: &'static str, value: Option<&Bound<'_, PyAny>>) -> PyResult<ETagList> {
    let Some(value) = value.filter(|value| !value.is_none()) else {
        return Ok(ETagList::new());
    };
    let parse = |item: &Bound<'_, PyAny>| -> PyResult<ETagArg> {
        let text = item
            .cast::<PyString>()
            .map_err(|_| wrong_type(argument, "an ETag string or a list of them", item))?
            .to_cow()?;
        ETagArg::parse(argument, &text).map_err(|error| to_py(item.py(), error))
    };
    if value.is_instance_of::<PyString>() {
        return Ok(parse(value)?.into());
    }
    if let Ok(list) = value.cast::<PyList>() {
        return list.iter().map(|item| parse(&item)).collect();
    }
    if let Ok(tuple) = value.cast::<PyTuple>() {
        return tuple.iter().map(|item| parse(&item)).collect();
    }
    Err(wrong_type(
        argument,
        "an ETag string or a list of them",
        value,
    ))
}

/// The five conditions of docs/spec.md §3.
pub fn conditions(
    if_match: Option<&Bound<'_, PyAny>>,
    if_none_match: Option<&Bound<'_, PyAny>>,
    if_modified_since: Option<&Bound<'_, PyAny>>,
    if_unmodified_since: Option<&Bound<'_, PyAny>>,
    if_version: Option<&Bound<'_, PyAny>>,
) -> PyResult<Conditions> {
    Ok(Conditions {
        if_match: etags("if_match", if_match)?,
        if_none_match: etags("if_none_match", if_none_match)?,
        if_modified_since: optional_timestamp("if_modified_since", if_modified_since)?,
        if_unmodified_since: optional_timestamp("if_unmodified_since", if_unmodified_since)?,
        if_version: match if_version {
            Some(version) if !version.is_none() => {
                Some(count("if_version", version, u64::MAX >> 1)?)
            }
            _ => None,
        },
    })
}

/// A lease id: UUID text, or a `Lease` (its current id) — also a `tenure.aio.Lease`, which
/// holds one as `_tenure_lease`.
pub fn lease_id(argument: &'static str, value: &Bound<'_, PyAny>) -> PyResult<LeaseId> {
    if let Ok(lease) = value.cast::<crate::lease::Lease>() {
        return Ok(lease.get().current_id());
    }
    let Ok(text) = value.cast::<PyString>() else {
        if let Ok(inner) = value.getattr(pyo3::intern!(value.py(), "_tenure_lease")) {
            if let Ok(lease) = inner.cast::<crate::lease::Lease>() {
                return Ok(lease.get().current_id());
            }
        }
        return Err(wrong_type(argument, "a lease id (str) or a Lease", value));
    };
    let text = text.to_cow()?;
    LeaseId::parse(argument, &text).map_err(|error| to_py(value.py(), error))
}

pub fn optional_lease_id(
    argument: &'static str,
    value: Option<&Bound<'_, PyAny>>,
) -> PyResult<Option<LeaseId>> {
    match value {
        Some(value) if !value.is_none() => lease_id(argument, value).map(Some),
        _ => Ok(None),
    }
}

/// A lock handle: a `LockHandle` or its text (32 hexadecimal digits).
pub fn lock_handle(argument: &'static str, value: &Bound<'_, PyAny>) -> PyResult<LockHandle> {
    if let Ok(handle) = value.cast::<crate::item::PyLockHandle>() {
        return Ok(handle.get().handle);
    }
    let text = value
        .cast::<PyString>()
        .map_err(|_| wrong_type(argument, "a LockHandle or its text", value))?
        .to_cow()?;
    LockHandle::parse(&text).map_err(|error| match error {
        // The engine calls it `lock_handle`; name it as this caller did.
        Error::InvalidArgument { reason, .. } => invalid(value.py(), argument, reason),
        other => to_py(value.py(), other),
    })
}

pub fn optional_lock_handle(
    argument: &'static str,
    value: Option<&Bound<'_, PyAny>>,
) -> PyResult<Option<LockHandle>> {
    match value {
        Some(value) if !value.is_none() => lock_handle(argument, value).map(Some),
        _ => Ok(None),
    }
}

/// `ttl`: `None` = the container's default, `-1` = never, `n > 0` = n seconds.
pub fn ttl(value: Option<&Bound<'_, PyAny>>) -> PyResult<Ttl> {
    match value {
        Some(value) if !value.is_none() => {
            let seconds = whole_seconds("ttl", value)?;
            Ttl::from_signed_seconds(seconds).map_err(|error| to_py(value.py(), error))
        }
        _ => Ok(Ttl::ContainerDefault),
    }
}

/// A lease duration: `None` or `-1` = infinite, else 15–60 whole seconds.
pub fn lease_duration(value: Option<&Bound<'_, PyAny>>) -> PyResult<LeaseDuration> {
    match value {
        Some(value) if !value.is_none() => {
            let seconds = whole_seconds("duration", value)?;
            LeaseDuration::from_seconds(seconds).map_err(|error| to_py(value.py(), error))
        }
        _ => Ok(LeaseDuration::Infinite),
    }
}

/// A break period: `None` (no period) or 0–60 whole seconds.
pub fn break_period(value: Option<&Bound<'_, PyAny>>) -> PyResult<Option<u32>> {
    match value {
        Some(value) if !value.is_none() => {
            let seconds = whole_seconds("period", value)?;
            // docs/spec.md §4: 0–60 seconds (checked here too, so the error names this argument).
            u32::try_from(seconds)
                .ok()
                .filter(|seconds| *seconds <= 60)
                .map(Some)
                .ok_or_else(|| {
                    invalid(
                        value.py(),
                        "period",
                        format!("a break period is 0..=60 seconds, not {seconds}"),
                    )
                })
        }
        _ => Ok(None),
    }
}

/// User metadata: a mapping of `str` to `str`, in its iteration order.
pub fn metadata(value: Option<&Bound<'_, PyAny>>) -> PyResult<Vec<(String, String)>> {
    let Some(value) = value.filter(|value| !value.is_none()) else {
        return Ok(Vec::new());
    };
    let items = if let Ok(dict) = value.cast::<PyDict>() {
        dict.items().into_any()
    } else if value.hasattr("items")? && !value.is_instance_of::<PyString>() {
        value.call_method0("items")?
    } else {
        return Err(wrong_type("metadata", "a dict of str to str", value));
    };
    let mut pairs = Vec::new();
    for pair in items.try_iter()? {
        let pair = pair?;
        let (name, text): (Bound<'_, PyAny>, Bound<'_, PyAny>) = pair.extract()?;
        let as_text = |item: &Bound<'_, PyAny>| -> PyResult<String> {
            let text = item
                .cast::<PyString>()
                .map_err(|_| wrong_type("metadata", "a dict of str to str", item))?;
            text.to_cow()
                .map(Cow::into_owned)
                .map_err(|_| invalid(item.py(), "metadata", "not encodable as UTF-8"))
        };
        pairs.push((as_text(&name)?, as_text(&text)?));
    }
    Ok(pairs)
}

pub fn optional_text(
    argument: &'static str,
    value: Option<&Bound<'_, PyAny>>,
) -> PyResult<Option<String>> {
    match value {
        Some(value) if !value.is_none() => {
            let text = value
                .cast::<PyString>()
                .map_err(|_| wrong_type(argument, "a str", value))?;
            text.to_cow()
                .map(|text| Some(text.into_owned()))
                .map_err(|_| invalid(value.py(), argument, "not encodable as UTF-8"))
        }
        _ => Ok(None),
    }
}

/// A container given by name or as a `Container`.
pub fn container_name(argument: &'static str, value: &Bound<'_, PyAny>) -> PyResult<String> {
    if let Ok(container) = value.cast::<crate::container::Container>() {
        return Ok(container.get().name.clone());
    }
    let text = value
        .cast::<PyString>()
        .map_err(|_| wrong_type(argument, "a container name (str) or a Container", value))?;
    text.to_cow()
        .map(Cow::into_owned)
        .map_err(|_| invalid(value.py(), argument, "not encodable as UTF-8"))
}

/// A key as Python shows it: always a `str` — the UTF-8 text, or for a key that is not UTF-8
/// the bytes decoded with "surrogateescape" (PEP 383, as `os.fsdecode` does), which `key()`
/// turns back into the same bytes. `key_bytes` attributes give the bytes themselves.
pub fn key_object<'py>(py: Python<'py>, key: &[u8]) -> PyResult<Bound<'py, PyString>> {
    match std::str::from_utf8(key) {
        Ok(text) => Ok(PyString::new(py, text)),
        Err(_) => Ok(PyBytes::new(py, key)
            .call_method1("decode", ("utf-8", "surrogateescape"))?
            .cast_into::<PyString>()?),
    }
}

/// A key for a message: `'text'` when it is UTF-8, else the bytes' repr (`b'\xff'`).
pub fn key_repr(key: &[u8]) -> String {
    match std::str::from_utf8(key) {
        Ok(text) => format!("'{}'", text.escape_debug()),
        Err(_) => {
            let escaped: String = key
                .iter()
                .flat_map(|byte| std::ascii::escape_default(*byte))
                .map(char::from)
                .collect();
            format!("b'{escaped}'")
        }
    }
}

pub fn seconds_from_micros(micros: u64) -> f64 {
    micros as f64 / 1e6
}
