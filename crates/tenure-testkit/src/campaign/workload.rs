//! The item workload the crash and I/O-fault campaigns run: random writes over two containers
//! and six keys (puts, creates, conditional puts, deletes, batches, container creation and
//! deletion), each checked against the reference [`Model`] as it is applied, and the
//! comparison of a reopened store's whole state with the states the model allows.

use rand::Rng;
use tenure::{Conditions, ETag, Error, ErrorCode, Store, WriteOptions};

use crate::model::{Model, ModelItem};

pub const CONTAINERS: [&str; 2] = ["a", "b"];
pub const KEYS: [&[u8]; 6] = [b"k0", b"k1", b"k2", b"k3", b"k4", b"k5"];
/// The version a maybe-applied write gets in the model: its real version is unknown (the call
/// failed), so any version matches it.
pub const ANY_VERSION: u64 = u64::MAX;

#[derive(Debug, Clone)]
pub enum WriteOp {
    CreateContainer {
        container: &'static str,
    },
    DeleteContainer {
        container: &'static str,
    },
    Put {
        container: &'static str,
        key: &'static [u8],
        value: Vec<u8>,
    },
    Create {
        container: &'static str,
        key: &'static [u8],
        value: Vec<u8>,
    },
    /// `if_match` with the item's current ETag (`stale` false) or an older one.
    PutIfMatch {
        container: &'static str,
        key: &'static [u8],
        value: Vec<u8>,
        stale: bool,
    },
    Delete {
        container: &'static str,
        key: &'static [u8],
    },
    /// put `first`, create `second`, delete `third`: all or nothing.
    Batch {
        container: &'static str,
        first: &'static [u8],
        value: Vec<u8>,
        second: &'static [u8],
        third: &'static [u8],
    },
}

/// Mostly small values; some fill a good part of a small segment, a few are larger than one.
pub fn random_value(rng: &mut impl Rng, segment_size_bytes: u64) -> Vec<u8> {
    let length = match rng.gen_range(0..40) {
        0 => rng.gen_range(segment_size_bytes as usize..segment_size_bytes as usize * 2),
        1..=8 => rng.gen_range(500..segment_size_bytes as usize / 2),
        _ => rng.gen_range(0..40),
    };
    let byte: u8 = rng.gen();
    // Cheap to make, and still tells values apart: a length and a fill byte.
    vec![byte; length]
}

pub fn random_write(rng: &mut impl Rng, segment_size_bytes: u64) -> WriteOp {
    let container = CONTAINERS[rng.gen_range(0..CONTAINERS.len())];
    let key = KEYS[rng.gen_range(0..KEYS.len())];
    match rng.gen_range(0..100) {
        0..=9 => WriteOp::CreateContainer { container },
        10..=12 => WriteOp::DeleteContainer { container },
        13..=39 => WriteOp::Put {
            container,
            key,
            value: random_value(rng, segment_size_bytes),
        },
        40..=51 => WriteOp::Create {
            container,
            key,
            value: random_value(rng, segment_size_bytes),
        },
        52..=67 => WriteOp::PutIfMatch {
            container,
            key,
            value: random_value(rng, segment_size_bytes),
            stale: rng.gen_ratio(1, 4),
        },
        68..=81 => WriteOp::Delete { container, key },
        _ => WriteOp::Batch {
            container,
            first: key,
            value: random_value(rng, segment_size_bytes),
            second: KEYS[rng.gen_range(0..KEYS.len())],
            third: KEYS[rng.gen_range(0..KEYS.len())],
        },
    }
}

/// What applying a write did.
#[derive(Debug)]
pub enum Applied {
    /// Acknowledged; the model after it.
    Written(Model),
    /// Refused with the code the model predicted; nothing changed.
    Refused,
    /// The store failed with an error the model does not predict (`Io`, `Closed`): the write
    /// may or may not have taken effect. `if_applied` is the model had it (versions unknown).
    Failed {
        error: Error,
        if_applied: Option<Model>,
    },
}

/// The model after `op` with version `version`, or the code the store must refuse it with.
fn predict(model: &Model, op: &WriteOp, version: u64) -> Result<Model, ErrorCode> {
    let mut next = model.clone();
    match op {
        WriteOp::CreateContainer { container } => next.create_container(container)?,
        WriteOp::DeleteContainer { container } => next.delete_container(container)?,
        WriteOp::Put {
            container,
            key,
            value,
        } => {
            next.check_put(container, key, None, false)?;
            next.apply_put(container, key, value, version);
        }
        WriteOp::Create {
            container,
            key,
            value,
        } => {
            next.check_put(container, key, None, true)?;
            next.apply_put(container, key, value, version);
        }
        WriteOp::PutIfMatch {
            container,
            key,
            value,
            stale,
        } => {
            next.check_put(
                container,
                key,
                Some(if_match(model, container, key, *stale)),
                false,
            )?;
            next.apply_put(container, key, value, version);
        }
        WriteOp::Delete { container, key } => {
            next.check_delete(container, key)?;
            next.apply_delete(container, key);
        }
        WriteOp::Batch {
            container,
            first,
            value,
            second,
            third,
        } => {
            next.check_put(container, first, None, false)?;
            next.apply_put(container, first, value, version);
            next.check_put(container, second, None, true)?;
            next.apply_put(container, second, b"second", version);
            next.check_delete(container, third)?;
            next.apply_delete(container, third);
        }
    }
    Ok(next)
}

/// The ETag version a conditional put names: the current one, or one that is not.
fn if_match(model: &Model, container: &str, key: &[u8], stale: bool) -> u64 {
    match model.get(container, key) {
        Ok(item) if !stale => item.version,
        Ok(item) => item.version.saturating_sub(1),
        Err(_) => 3,
    }
}

/// Applies `op` to the store and checks the outcome against the model. Panics when they
/// disagree on anything but an `Io`/`Closed` failure.
pub fn apply(store: &Store, model: &Model, op: &WriteOp) -> Applied {
    let options = WriteOptions::default();
    let result: Result<Option<u64>, Error> = match op {
        WriteOp::CreateContainer { container } => store
            .create_container(container, &Default::default())
            .map(|_| None),
        WriteOp::DeleteContainer { container } => store
            .delete_container(container, &Default::default())
            .map(|_| None),
        WriteOp::Put {
            container,
            key,
            value,
        } => store
            .put(container, key, value, &options)
            .map(|etag| Some(etag.version())),
        WriteOp::Create {
            container,
            key,
            value,
        } => store
            .create(container, key, value, &options)
            .map(|etag| Some(etag.version())),
        WriteOp::PutIfMatch {
            container,
            key,
            value,
            stale,
        } => {
            let etag = ETag(if_match(model, container, key, *stale));
            let options = WriteOptions::with_conditions(Conditions::if_match(etag));
            store
                .put(container, key, value, &options)
                .map(|etag| Some(etag.version()))
        }
        WriteOp::Delete { container, key } => store.delete(container, key, &options).map(|_| None),
        WriteOp::Batch {
            container,
            first,
            value,
            second,
            third,
        } => {
            let mut batch = store.batch();
            batch
                .put(container, first, value, WriteOptions::default())
                .create(container, second, b"second", WriteOptions::default())
                .delete(container, third, WriteOptions::default());
            batch.commit().map(Some)
        }
    };
    match result {
        Ok(version) => match predict(model, op, version.unwrap_or(0)) {
            Ok(next) => Applied::Written(next),
            Err(code) => panic!("{op:?}: the store wrote it, the model refuses it with {code:?}"),
        },
        Err(error) if matches!(error.code(), ErrorCode::Io | ErrorCode::Closed) => {
            Applied::Failed {
                if_applied: predict(model, op, ANY_VERSION).ok(),
                error,
            }
        }
        Err(error) => match predict(model, op, 0) {
            Err(code) if code == error.code() => Applied::Refused,
            Err(code) => {
                panic!("{op:?}: the store refused with {error:?}, the model with {code:?}")
            }
            Ok(_) => panic!("{op:?}: the store refused with {error:?}, the model writes it"),
        },
    }
}

/// The store's whole state (every container, every item with its value and version) as a
/// model.
pub fn read_state(store: &Store) -> Result<Model, Error> {
    let mut state = Model::default();
    for container in store.list_containers()? {
        let mut items = std::collections::BTreeMap::new();
        let mut continuation: Option<String> = None;
        loop {
            let page = store.list(&container, b"", 1000, continuation.as_deref(), true)?;
            for item in page.items {
                items.insert(
                    item.key,
                    ModelItem {
                        value: item.value.unwrap_or_default(),
                        version: item.version,
                    },
                );
            }
            continuation = page.continuation;
            if continuation.is_none() {
                break;
            }
        }
        state.containers.insert(container, items);
    }
    Ok(state)
}

/// Whether `actual` is `expected` (an `ANY_VERSION` in `expected` matches any version).
pub fn state_matches(expected: &Model, actual: &Model) -> bool {
    expected.containers.len() == actual.containers.len()
        && expected.containers.iter().zip(&actual.containers).all(
            |((name, items), (actual_name, actual_items))| {
                name == actual_name
                    && items.len() == actual_items.len()
                    && items
                        .iter()
                        .zip(actual_items)
                        .all(|((key, item), (actual_key, actual))| {
                            key == actual_key
                                && item.value == actual.value
                                && (item.version == ANY_VERSION || item.version == actual.version)
                        })
            },
        )
}

/// Finds which allowed state the store recovered: the index of the first candidate that
/// matches, or a description of the mismatch.
pub fn match_state(candidates: &[Model], actual: &Model) -> Result<usize, String> {
    candidates
        .iter()
        .position(|candidate| state_matches(candidate, actual))
        .ok_or_else(|| {
            format!(
                "the recovered state is none of the {} allowed ones.\nrecovered: {}\nnewest allowed: {}",
                candidates.len(),
                describe(actual),
                candidates.last().map(describe).unwrap_or_default()
            )
        })
}

/// A short description of a state: container → key → (value length, first byte, version).
pub fn describe(state: &Model) -> String {
    let mut text = String::new();
    for (name, items) in &state.containers {
        text.push_str(&format!("{name}{{"));
        for (key, item) in items {
            text.push_str(&format!(
                " {}=({}B {:?} v{})",
                String::from_utf8_lossy(key),
                item.value.len(),
                item.value.first(),
                item.version as i64
            ));
        }
        text.push_str(" } ");
    }
    text
}
