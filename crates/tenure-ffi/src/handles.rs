//! The handle registry. A C handle is never a real pointer: its value encodes a slot index
//! (low half, plus one so it is never NULL) and the slot's generation (high half). Freeing a
//! handle empties its slot and bumps the generation, so a freed handle, a double free or a
//! forged value finds no object (or one of another generation) and is refused — it is never
//! dereferenced. The kind of the object is checked at every lookup, so passing a batch where a
//! store is expected is an error, not a crash.

use std::collections::VecDeque;
use std::sync::{Arc, Mutex, RwLock, RwLockReadGuard, RwLockWriteGuard};

use tenure::{Batch, Change, Item, Page, Snapshot, Store, Version};

use crate::util::{invalid, Fail};

// The opaque C handle types: their values are registry ids, never pointers to these types.

/// An open store.
pub struct tenure_store {
    _private: [u8; 0],
}
/// A repeatable read view of a store.
pub struct tenure_snapshot {
    _private: [u8; 0],
}
/// A batch under construction.
pub struct tenure_batch {
    _private: [u8; 0],
}
/// One page of a listing.
pub struct tenure_page {
    _private: [u8; 0],
}
/// An item read by `tenure_get_item` or `tenure_get_and_lock`.
pub struct tenure_item {
    _private: [u8; 0],
}
/// A change-feed cursor.
pub struct tenure_cursor {
    _private: [u8; 0],
}

pub(crate) struct SnapshotObject {
    // Field order matters: the snapshot (borrowing the store) drops before the store.
    pub(crate) snapshot: Snapshot<'static>,
    pub(crate) _store: Arc<Store>,
}

pub(crate) struct BatchObject {
    // Dropped before `_store`, which it borrows.
    pub(crate) batch: Option<Batch<'static>>,
    pub(crate) _store: Arc<Store>,
}

pub(crate) struct CursorObject {
    pub(crate) store: Arc<Store>,
    pub(crate) since: Version,
    pub(crate) container: Option<String>,
    pub(crate) include_values: bool,
    pub(crate) pending: VecDeque<Change>,
    pub(crate) current: Option<Change>,
}

pub(crate) enum Object {
    /// `None` once closed. Closing replaces the slot's object (under the registry's write
    /// lock), so a lookup under the read lock clones the store without a lock of its own.
    Store(Option<Arc<Store>>),
    Snapshot(SnapshotObject),
    Batch(Mutex<BatchObject>),
    Page(Page),
    Item(Item),
    Cursor(Mutex<CursorObject>),
}

impl Object {
    fn kind(&self) -> &'static str {
        match self {
            Object::Store(_) => "store",
            Object::Snapshot(_) => "snapshot",
            Object::Batch(_) => "batch",
            Object::Page(_) => "page",
            Object::Item(_) => "item",
            Object::Cursor(_) => "cursor",
        }
    }
}

struct Slot {
    generation: usize,
    object: Option<Arc<Object>>,
}

struct Registry {
    slots: Vec<Slot>,
    free: Vec<usize>,
}

/// Lookups (every call) share the read lock; register and release take the write lock.
static REGISTRY: RwLock<Registry> = RwLock::new(Registry {
    slots: Vec::new(),
    free: Vec::new(),
});

const HALF: u32 = usize::BITS / 2;
const INDEX_MASK: usize = (1usize << HALF) - 1;
const GENERATION_MASK: usize = (1usize << HALF) - 1;
/// Beyond this many live handles `register` fails (a bound, and the index must fit its half).
const MAX_SLOTS: usize = if INDEX_MASK - 1 < (1 << 24) {
    INDEX_MASK - 1
} else {
    1 << 24
};

// A panic never happens while the lock is held, but a poisoned lock is still usable.
fn registry() -> RwLockWriteGuard<'static, Registry> {
    REGISTRY
        .write()
        .unwrap_or_else(|poisoned| poisoned.into_inner())
}

fn registry_read() -> RwLockReadGuard<'static, Registry> {
    REGISTRY
        .read()
        .unwrap_or_else(|poisoned| poisoned.into_inner())
}

fn encode(index: usize, generation: usize) -> usize {
    (generation << HALF) | (index + 1)
}

fn decode(value: usize) -> Option<(usize, usize)> {
    let index_plus_one = value & INDEX_MASK;
    if index_plus_one == 0 {
        return None;
    }
    Some((index_plus_one - 1, (value >> HALF) & GENERATION_MASK))
}

/// Registers `object`; returns the handle value.
pub(crate) fn register(object: Object) -> Result<usize, Fail> {
    let mut registry = registry();
    let index = match registry.free.pop() {
        Some(index) => index,
        None => {
            if registry.slots.len() >= MAX_SLOTS {
                return Err(invalid("handle", "too many live handles"));
            }
            registry.slots.push(Slot {
                generation: 1,
                object: None,
            });
            registry.slots.len() - 1
        }
    };
    let slot = &mut registry.slots[index];
    slot.object = Some(Arc::new(object));
    Ok(encode(index, slot.generation))
}

/// The live object of `kind` behind `value`, found under the registry's read lock; `read` sees
/// it there (it must not block: a register or free waits for the lock).
fn with_live<T>(
    argument: &'static str,
    value: usize,
    kind: &'static str,
    read: impl FnOnce(&Arc<Object>) -> T,
) -> Result<T, Fail> {
    if value == 0 {
        return Err(invalid(argument, "is NULL"));
    }
    let registry = registry_read();
    let object = decode(value)
        .and_then(|(index, generation)| {
            registry
                .slots
                .get(index)
                .filter(|slot| slot.generation == generation)
        })
        .and_then(|slot| slot.object.as_ref())
        .ok_or_else(|| {
            invalid(
                argument,
                "is not a live handle (freed, or never returned by tenure)",
            )
        })?;
    if object.kind() != kind {
        return Err(wrong_kind(argument, object.kind(), kind));
    }
    Ok(read(object))
}

#[cold]
fn wrong_kind(argument: &'static str, actual: &str, kind: &'static str) -> Fail {
    invalid(
        argument,
        format!("is a {actual} handle, not a {kind} handle"),
    )
}

/// The live object behind `value`, checked to be of `kind`.
pub(crate) fn lookup(
    argument: &'static str,
    value: usize,
    kind: &'static str,
) -> Result<Arc<Object>, Fail> {
    with_live(argument, value, kind, Arc::clone)
}

/// The engine behind a store handle: one read lock and one reference count, the cost every
/// store call pays.
pub(crate) fn store(argument: &'static str, value: usize) -> Result<Arc<Store>, Fail> {
    with_live(argument, value, "store", |object| match &**object {
        Object::Store(store) => store.clone(),
        _ => None,
    })?
    .ok_or_else(|| invalid(argument, "was closed"))
}

/// Closes a store handle: its slot gets a closed store object, and the engine it held is
/// returned (the handle stays live until freed).
pub(crate) fn close_store(argument: &'static str, value: usize) -> Result<Arc<Store>, Fail> {
    if value == 0 {
        return Err(invalid(argument, "is NULL"));
    }
    let (index, generation) =
        decode(value).ok_or_else(|| invalid(argument, "is not a live handle"))?;
    let mut registry = registry();
    let slot = registry
        .slots
        .get_mut(index)
        .filter(|slot| slot.generation == generation)
        .and_then(|slot| slot.object.as_mut())
        .ok_or_else(|| {
            invalid(
                argument,
                "is not a live handle (freed, or never returned by tenure)",
            )
        })?;
    let store = match &**slot {
        Object::Store(Some(store)) => Arc::clone(store),
        Object::Store(None) => return Err(invalid(argument, "was closed")),
        other => return Err(wrong_kind(argument, other.kind(), "store")),
    };
    let open = std::mem::replace(slot, Arc::new(Object::Store(None)));
    drop(registry);
    // Only this clone is left once the replaced object is dropped (no lookup clones a store's
    // object; a call in flight holds its own reference to the engine, as a snapshot does).
    drop(open);
    Ok(store)
}

/// Frees the handle: its slot empties and its generation moves on. NULL is fine.
pub(crate) fn release(
    argument: &'static str,
    value: usize,
    kind: &'static str,
) -> Result<Option<Arc<Object>>, Fail> {
    if value == 0 {
        return Ok(None);
    }
    let mut registry = registry();
    let (index, generation) =
        decode(value).ok_or_else(|| invalid(argument, "is not a live handle"))?;
    let slot = registry
        .slots
        .get_mut(index)
        .filter(|slot| slot.generation == generation && slot.object.is_some())
        .ok_or_else(|| invalid(argument, "is not a live handle (already freed?)"))?;
    let actual = slot
        .object
        .as_ref()
        .map(|object| object.kind())
        .unwrap_or("");
    if actual != kind {
        return Err(invalid(
            argument,
            format!("is a {actual} handle, not a {kind} handle"),
        ));
    }
    let object = slot.object.take();
    slot.generation = (slot.generation + 1) & GENERATION_MASK;
    if slot.generation == 0 {
        slot.generation = 1;
    }
    registry.free.push(index);
    drop(registry);
    // The object drops here, outside the registry lock (a store drop flushes and joins).
    Ok(object)
}
