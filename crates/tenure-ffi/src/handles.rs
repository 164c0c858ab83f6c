//! The handle registry. A C handle is never a real pointer: its value encodes a slot index
//! (low half, plus one so it is never NULL) and the slot's generation (high half). Freeing a
//! handle empties its slot and bumps the generation, so a freed handle, a double free or a
//! forged value finds no object (or one of another generation) and is refused — it is never
//! dereferenced. The kind of the object is checked at every lookup, so passing a batch where a
//! store is expected is an error, not a crash.
//!
//! A call takes no lock: it enters the slot's state word and leaves it (`gate.rs`), and the
//! object stays in place while any call is inside. Slots live in chunks allocated on first use
//! and never freed, so a slot's address stays valid for the life of the process. Only
//! registering and the free list take a lock.

use std::cell::UnsafeCell;
use std::collections::VecDeque;
use std::ops::Deref;
use std::ptr::NonNull;
use std::sync::atomic::{AtomicPtr, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};

use tenure::{Batch, Change, Item, Page, Snapshot, Store, Version};

use crate::gate::{Freed, Pending, Refused, SlotState, GENERATION_MASK};
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
    /// `None` once the last call out of a closed store dropped the engine reference.
    Store(Option<Arc<Store>>),
    Snapshot(SnapshotObject),
    Batch(Mutex<BatchObject>),
    Page(Page),
    Item(Item),
    Cursor(Mutex<CursorObject>),
}

/// The kinds of handle, as numbered in a slot's state word (never 0).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Kind {
    Store = 1,
    Snapshot = 2,
    Batch = 3,
    Page = 4,
    Item = 5,
    Cursor = 6,
}

impl Kind {
    const ALL: [Kind; 6] = [
        Kind::Store,
        Kind::Snapshot,
        Kind::Batch,
        Kind::Page,
        Kind::Item,
        Kind::Cursor,
    ];

    fn name(self) -> &'static str {
        match self {
            Kind::Store => "store",
            Kind::Snapshot => "snapshot",
            Kind::Batch => "batch",
            Kind::Page => "page",
            Kind::Item => "item",
            Kind::Cursor => "cursor",
        }
    }

    fn from_number(number: u8) -> &'static str {
        Kind::ALL
            .iter()
            .find(|kind| **kind as u8 == number)
            .map_or("unknown", |kind| kind.name())
    }
}

impl Object {
    fn kind(&self) -> Kind {
        match self {
            Object::Store(_) => Kind::Store,
            Object::Snapshot(_) => Kind::Snapshot,
            Object::Batch(_) => Kind::Batch,
            Object::Page(_) => Kind::Page,
            Object::Item(_) => Kind::Item,
            Object::Cursor(_) => Kind::Cursor,
        }
    }
}

struct Slot {
    state: SlotState,
    /// Written only by whoever the state word makes its sole user: the registering thread
    /// before publishing, or the claimer of a free or of a closed store's engine reference.
    object: UnsafeCell<Option<Box<Object>>>,
}

// SAFETY: `object` is read by the calls the state word admits and written only when the word
// shows none in flight (gate.rs); the objects themselves are Send and Sync.
unsafe impl Sync for Slot {}

const CHUNK_SLOTS: usize = 1024;
const CHUNKS: usize = 4096;
const INDEX_BITS: u32 = usize::BITS / 2;
const INDEX_MASK: usize = (1usize << INDEX_BITS) - 1;
/// Beyond this many live handles `register` fails (a bound, and the index must fit its half).
const MAX_SLOTS: usize = if INDEX_MASK - 1 < CHUNK_SLOTS * CHUNKS {
    INDEX_MASK - 1
} else {
    CHUNK_SLOTS * CHUNKS
};

/// The chunks of slots, each allocated on first use and never freed.
static CHUNK_TABLE: [AtomicPtr<Slot>; CHUNKS] =
    [const { AtomicPtr::new(std::ptr::null_mut()) }; CHUNKS];

/// Slots handed out so far, and the vacant ones among them.
struct Allocator {
    used: usize,
    free: Vec<usize>,
}

static ALLOCATOR: Mutex<Allocator> = Mutex::new(Allocator {
    used: 0,
    free: Vec::new(),
});

// A panic never happens while the lock is held, but a poisoned lock is still usable.
fn allocator() -> MutexGuard<'static, Allocator> {
    ALLOCATOR
        .lock()
        .unwrap_or_else(|poisoned| poisoned.into_inner())
}

fn slot_at(index: usize) -> Option<&'static Slot> {
    let chunk = CHUNK_TABLE
        .get(index / CHUNK_SLOTS)?
        .load(Ordering::Acquire);
    if chunk.is_null() {
        return None;
    }
    // SAFETY: a published chunk holds CHUNK_SLOTS initialised slots and is never freed.
    Some(unsafe { &*chunk.add(index % CHUNK_SLOTS) })
}

fn encode(index: usize, generation: u64) -> usize {
    ((generation as usize) << INDEX_BITS) | (index + 1)
}

fn decode(value: usize) -> Option<(usize, u64)> {
    let index_plus_one = value & INDEX_MASK;
    if index_plus_one == 0 {
        return None;
    }
    Some((
        index_plus_one - 1,
        (value >> INDEX_BITS) as u64 & GENERATION_MASK,
    ))
}

/// A vacant slot's index: one from the free list, or the next never used (allocating its
/// chunk on first use).
fn vacant_index(allocator: &mut Allocator) -> Result<usize, Fail> {
    if let Some(index) = allocator.free.pop() {
        return Ok(index);
    }
    if allocator.used >= MAX_SLOTS {
        return Err(invalid("handle", "too many live handles"));
    }
    let index = allocator.used;
    let chunk = &CHUNK_TABLE[index / CHUNK_SLOTS];
    if chunk.load(Ordering::Acquire).is_null() {
        let slots: Box<[Slot]> = (0..CHUNK_SLOTS)
            .map(|_| Slot {
                state: SlotState::vacant(),
                object: UnsafeCell::new(None),
            })
            .collect();
        chunk.store(Box::leak(slots).as_mut_ptr(), Ordering::Release);
    }
    allocator.used += 1;
    Ok(index)
}

/// Registers `object`; returns the handle value.
pub(crate) fn register(object: Object) -> Result<usize, Fail> {
    let kind = object.kind();
    let mut allocator = allocator();
    let index = vacant_index(&mut allocator)?;
    let slot = slot_at(index).expect("a handed-out index has its chunk");
    // SAFETY: the slot is vacant: calls entering it are refused before they read the object,
    // and only this lock's holder publishes it.
    unsafe { *slot.object.get() = Some(Box::new(object)) };
    let generation = slot.state.publish(kind as u8);
    Ok(encode(index, generation))
}

/// A call's hold on a live handle's object: the object stays in its slot until it drops.
pub(crate) struct Hold {
    slot: &'static Slot,
    index: usize,
    object: NonNull<Object>,
}

impl Deref for Hold {
    type Target = Object;

    fn deref(&self) -> &Object {
        // SAFETY: the object stays in place while this hold's call is counted in the slot.
        unsafe { self.object.as_ref() }
    }
}

impl Drop for Hold {
    fn drop(&mut self) {
        leave(self.slot, self.index);
    }
}

/// Leaves a call on `slot`, doing whatever work its leaving hands over.
#[inline]
fn leave(slot: &'static Slot, index: usize) {
    let mut pending = slot.state.leave();
    while let Some(work) = pending {
        pending = finish(slot, index, work);
    }
}

/// The work the last call out of a slot claimed (gate.rs): no other call reads the object.
#[cold]
#[inline(never)]
fn finish(slot: &'static Slot, index: usize, work: Pending) -> Option<Pending> {
    match work {
        Pending::DropStore => {
            // SAFETY: claimed with no call in flight on a closed store; the claimer counts as
            // the one call until it leaves, so a free cannot empty the slot meanwhile.
            let engine = match unsafe { (*slot.object.get()).as_deref_mut() } {
                Some(Object::Store(engine)) => engine.take(),
                _ => None,
            };
            // The engine may drop here (flush and join) if no snapshot or batch holds it.
            drop(engine);
            slot.state.leave()
        }
        Pending::Free => {
            empty(slot, index);
            None
        }
    }
}

/// Empties a vacant slot the caller claimed, puts it on the free list and drops its object
/// (outside the lock: a store's drop flushes and joins).
fn empty(slot: &'static Slot, index: usize) {
    // SAFETY: the slot is vacant and claimed by this thread: no call reads the object, and it
    // is not on the free list yet.
    let object = unsafe { (*slot.object.get()).take() };
    allocator().free.push(index);
    drop(object);
}

fn refused(argument: &'static str, refusal: Refused, kind: Kind) -> Fail {
    match refusal {
        Refused::NotLive => invalid(
            argument,
            "is not a live handle (freed, or never returned by tenure)",
        ),
        Refused::WrongKind(actual) => wrong_kind(argument, Kind::from_number(actual), kind),
        Refused::Closed => invalid(argument, "was closed"),
        Refused::Busy => invalid(argument, "has too many calls in flight"),
    }
}

#[cold]
fn wrong_kind(argument: &'static str, actual: &str, kind: Kind) -> Fail {
    invalid(
        argument,
        format!("is a {actual} handle, not a {} handle", kind.name()),
    )
}

/// Holds the live object of `kind` behind `value` for the length of a call.
#[inline]
pub(crate) fn hold(argument: &'static str, value: usize, kind: Kind) -> Result<Hold, Fail> {
    if value == 0 {
        return Err(invalid(argument, "is NULL"));
    }
    let not_live = || refused(argument, Refused::NotLive, kind);
    let (index, generation) = decode(value).ok_or_else(not_live)?;
    let slot = slot_at(index).ok_or_else(not_live)?;
    if let Err(refusal) = slot.state.enter(generation, kind as u8) {
        leave(slot, index);
        return Err(refused(argument, refusal, kind));
    }
    // SAFETY: entered: the slot holds a published object until this call leaves.
    let object = unsafe { (*slot.object.get()).as_deref() };
    let Some(object) = object else {
        leave(slot, index);
        return Err(not_live());
    };
    Ok(Hold {
        slot,
        index,
        object: NonNull::from(object),
    })
}

/// A call's hold on an open store's engine.
pub(crate) struct StoreHold {
    store: NonNull<Arc<Store>>,
    hold: Hold,
}

impl StoreHold {
    /// A reference of its own to the engine, for an object that outlives the call.
    pub(crate) fn shared(&self) -> Arc<Store> {
        Arc::clone(self.arc())
    }

    fn arc(&self) -> &Arc<Store> {
        // SAFETY: the engine reference stays in the slot while the hold's call is in flight
        // (a close leaves it to the last call out).
        unsafe { self.store.as_ref() }
    }
}

impl Deref for StoreHold {
    type Target = Store;

    fn deref(&self) -> &Store {
        self.arc()
    }
}

/// The engine behind a store handle, held for the length of a call: the slot's one
/// `fetch_add` and one `fetch_sub`, the cost every store call pays.
// Always inlined: as a call of its own, its frame and its `Result` returned through memory
// cost about a quarter of it.
#[inline(always)]
pub(crate) fn store(argument: &'static str, value: usize) -> Result<StoreHold, Fail> {
    let hold = hold(argument, value, Kind::Store)?;
    match &*hold {
        Object::Store(Some(store)) => Ok(StoreHold {
            store: NonNull::from(store),
            hold,
        }),
        // An open store's slot keeps its engine until the close's last call out.
        _ => Err(invalid(argument, "was closed")),
    }
}

/// Closes a store handle: every later call on it is refused, and the engine reference it held
/// is returned (the handle stays live until freed). The slot drops its own reference when no
/// call is in flight, at once or when the last one leaves.
pub(crate) fn close_store(argument: &'static str, value: usize) -> Result<Arc<Store>, Fail> {
    let hold = store(argument, value)?;
    hold.hold
        .slot
        .state
        .close()
        .map_err(|refusal| refused(argument, refusal, Kind::Store))?;
    let engine = hold.shared();
    drop(hold);
    Ok(engine)
}

/// Frees the handle: its slot empties and its generation moves on, now or when the last call
/// in flight on it leaves. NULL is fine.
pub(crate) fn release(argument: &'static str, value: usize, kind: Kind) -> Result<(), Fail> {
    if value == 0 {
        return Ok(());
    }
    let not_live = || invalid(argument, "is not a live handle (already freed?)");
    let (index, generation) = decode(value).ok_or_else(not_live)?;
    let slot = slot_at(index).ok_or_else(not_live)?;
    match slot.state.free(generation, kind as u8) {
        Ok(Freed::Now) => empty(slot, index),
        Ok(Freed::Later) => {}
        Err(Refused::WrongKind(actual)) => {
            return Err(wrong_kind(argument, Kind::from_number(actual), kind))
        }
        Err(_) => return Err(not_live()),
    }
    Ok(())
}
