//! Containers: each name maps to its incarnations (a deleted container and a later one of the
//! same name are different incarnations, with different ids), so a snapshot finds the one that
//! was live at its version. Container changes are rare and take the catalog's lock; lookups
//! read a copy-on-write map without locks.

use std::cell::UnsafeCell;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

use parking_lot::Mutex;

use crate::clock::Timestamp;
use crate::record::Metadata;
use crate::types::Version;

pub const LIVE: u64 = u64::MAX;

#[derive(Debug, Clone)]
pub struct ContainerState {
    pub metadata: Metadata,
    /// The container's lease (docs/spec.md §5).
    pub lease: Option<crate::rules::lease::LeaseRecord>,
    /// Version of the last write of the container's properties (its ETag).
    pub etag_version: Version,
    pub last_modified: Timestamp,
}

pub struct Incarnation {
    /// The version of the record that created it; item index keys start with it.
    pub id: u64,
    pub name: String,
    pub default_ttl_seconds: Option<u32>,
    /// `LIVE`, or the version at which it was deleted.
    pub deleted_version: AtomicU64,
    pub state: Mutex<ContainerState>,
}

impl Incarnation {
    /// Its name, settings and state as one container-state payload (what compaction copies
    /// forward, and the persisted index keeps).
    pub fn encode_state(&self) -> Vec<u8> {
        let state = self.state.lock();
        crate::record::encode_container_state(
            self.id,
            &self.name,
            self.default_ttl_seconds,
            state.etag_version,
            state.last_modified,
            &state.metadata,
            state.lease.as_ref(),
        )
    }

    pub fn visible_at(&self, version: Version) -> bool {
        self.id <= version && self.deleted_version.load(Ordering::Acquire) > version
    }

    pub fn is_live(&self) -> bool {
        self.deleted_version.load(Ordering::Acquire) == LIVE
    }
}

pub struct Catalog {
    /// This catalog's number in the process (`NEXT_CATALOG_INSTANCE`): a thread's cached
    /// lookup names the catalog it came from, where an address could be a later store's.
    instance: u64,
    /// Bumped whenever a name's incarnations change (`insert`), before the change can be
    /// visible to readers: a cached lookup of an older generation is not used.
    generation: AtomicU64,
    /// name → incarnations, oldest first.
    /// Every read looks its container up here by name: foldhash, as in the item index.
    by_name: papaya::HashMap<String, Arc<Vec<Arc<Incarnation>>>, foldhash::fast::RandomState>,
    by_id: papaya::HashMap<u64, Arc<Incarnation>, foldhash::fast::RandomState>,
    /// Serialises container creates and deletes (rare), so "at most one live incarnation per
    /// name" holds.
    pub changes: Mutex<()>,
}

static NEXT_CATALOG_INSTANCE: AtomicU64 = AtomicU64::new(1);

/// Container names up to this long are cached by `visible_id` (compared as two words).
const CACHED_NAME_BYTES: usize = 16;

/// A thread's last container lookup by name, when the name had one incarnation: that
/// incarnation, as the catalog held it at `generation`. Why: a read looks its container up
/// before anything else, and the index key (so the bucket's address, the read's first cache
/// miss) depends on the id; the map lookup took about 187 instructions.
struct CachedLookup {
    catalog_instance: u64,
    generation: u64,
    name_length: usize,
    name_words: [u64; 2],
    incarnation: Arc<Incarnation>,
}

thread_local! {
    /// Only `with_cached_lookup` and `remember_lookup` touch it, never re-entrantly: no
    /// `RefCell` flag to keep.
    static LAST_LOOKUP: UnsafeCell<Option<CachedLookup>> = const { UnsafeCell::new(None) };
}

/// A name of at most `CACHED_NAME_BYTES`, as two little-endian words padded with zeroes.
fn name_words(name: &[u8]) -> Option<[u64; 2]> {
    if name.len() > CACHED_NAME_BYTES {
        return None;
    }
    let mut bytes = [0u8; CACHED_NAME_BYTES];
    bytes[..name.len()].copy_from_slice(name);
    Some([
        u64::from_le_bytes(bytes[..8].try_into().expect("8 bytes")),
        u64::from_le_bytes(bytes[8..].try_into().expect("8 bytes")),
    ])
}

/// The newest of `incarnations` visible at `version`.
fn visible_in(incarnations: &[Arc<Incarnation>], version: Version) -> Option<&Arc<Incarnation>> {
    incarnations
        .iter()
        .rev()
        .find(|incarnation| incarnation.visible_at(version))
}

impl Default for Catalog {
    fn default() -> Catalog {
        Catalog {
            instance: NEXT_CATALOG_INSTANCE.fetch_add(1, Ordering::Relaxed),
            generation: AtomicU64::new(0),
            by_name: Default::default(),
            by_id: Default::default(),
            changes: Mutex::new(()),
        }
    }
}

impl Catalog {
    /// The incarnation of `name` that is live now (including one whose create is not yet
    /// visible to readers: writers order after it in the log).
    ///
    /// Through the thread's last lookup as `visible_id` (a write looks its container up first,
    /// 187 instructions through the map), with the same reasoning: a writer that could know of
    /// a newer incarnation (its create returned) sees the generation that create bumped.
    pub fn live(&self, name: &str) -> Option<Arc<Incarnation>> {
        let generation = self.generation.load(Ordering::Acquire);
        let words = name_words(name.as_bytes());
        let cached = self.with_cached_lookup(name, generation, words, |incarnation| {
            incarnation.is_live().then(|| Arc::clone(incarnation))
        });
        if cached.is_some() {
            return cached;
        }
        let by_name = self.by_name.pin();
        let incarnations = by_name.get(name)?;
        self.remember_lookup(name, generation, words, incarnations);
        incarnations
            .last()
            .filter(|incarnation| incarnation.is_live())
            .cloned()
    }

    /// The incarnation of `name` a reader at `version` sees.
    pub fn visible(&self, name: &str, version: Version) -> Option<Arc<Incarnation>> {
        let by_name = self.by_name.pin();
        let incarnations = by_name.get(name)?;
        visible_in(incarnations, version).cloned()
    }

    /// The id of the incarnation of `name` visible at `version`: what a read needs, without
    /// an `Arc` clone, whose shared count every reading thread would write. The thread's last
    /// lookup answers when it was of this name in this catalog's current generation and its
    /// one incarnation is visible at `version` (a thread keeps that one entry, and the
    /// incarnation it holds, until its next miss).
    ///
    /// Why the cache is never stale for a reader: `insert` bumps the generation before the
    /// new incarnation's create can be visible, and `version` was read (acquire) after that
    /// visibility, so a reader at a version that sees the create also sees the bump.
    /// Deletes need no bump: `visible_at` reads each incarnation's deleted version afresh.
    pub fn visible_id(&self, name: &str, version: Version) -> Option<u64> {
        let generation = self.generation.load(Ordering::Acquire);
        let words = name_words(name.as_bytes());
        let cached = self.with_cached_lookup(name, generation, words, |incarnation| {
            incarnation.visible_at(version).then_some(incarnation.id)
        });
        if cached.is_some() {
            return cached;
        }
        let by_name = self.by_name.pin();
        let incarnations = by_name.get(name)?;
        self.remember_lookup(name, generation, words, incarnations);
        visible_in(incarnations, version).map(|incarnation| incarnation.id)
    }

    /// `answer` applied to the one incarnation of `name`, when the thread's last lookup was of
    /// this name in this catalog at `generation`; `None` otherwise (or when `answer` says so:
    /// the caller then asks the map).
    fn with_cached_lookup<R>(
        &self,
        name: &str,
        generation: u64,
        words: Option<[u64; 2]>,
        answer: impl FnOnce(&Arc<Incarnation>) -> Option<R>,
    ) -> Option<R> {
        LAST_LOOKUP.with(|last| {
            // SAFETY: this thread's own cell, and no reference to it outlives this closure
            // (`answer` cannot reach the cell).
            let entry = unsafe { &*last.get() }.as_ref()?;
            if entry.catalog_instance == self.instance
                && entry.generation == generation
                && entry.name_length == name.len()
                && Some(entry.name_words) == words
            {
                answer(&entry.incarnation)
            } else {
                None
            }
        })
    }

    /// Makes `incarnations` (the map's list for `name` at `generation`) the thread's last
    /// lookup, when the name is short enough and has one incarnation.
    fn remember_lookup(
        &self,
        name: &str,
        generation: u64,
        words: Option<[u64; 2]>,
        incarnations: &[Arc<Incarnation>],
    ) {
        if let (Some(words), [incarnation]) = (words, incarnations) {
            let entry = CachedLookup {
                catalog_instance: self.instance,
                generation,
                name_length: name.len(),
                name_words: words,
                incarnation: Arc::clone(incarnation),
            };
            // SAFETY: as in `with_cached_lookup`; the old entry is dropped here, outside any
            // borrow of it.
            LAST_LOOKUP.with(|last| unsafe { *last.get() = Some(entry) });
        }
    }

    pub fn by_id(&self, id: u64) -> Option<Arc<Incarnation>> {
        self.by_id.pin().get(&id).cloned()
    }

    /// Adds an incarnation. Callers hold `changes` (or are the single-threaded replay).
    pub fn insert(&self, incarnation: Arc<Incarnation>) {
        let by_name = self.by_name.pin();
        let mut incarnations = by_name
            .get(&incarnation.name)
            .map(|existing| existing.as_ref().clone())
            .unwrap_or_default();
        incarnations.push(Arc::clone(&incarnation));
        by_name.insert(incarnation.name.clone(), Arc::new(incarnations));
        self.by_id.pin().insert(incarnation.id, incarnation);
        // After the map holds the new list: a reader that sees this generation finds it.
        self.generation.fetch_add(1, Ordering::Release);
    }

    /// Replay only: the incarnation with `id`, or a nameless placeholder when an item record
    /// names a container whose state record comes later in the log (compaction copies a live
    /// container's state forward, past items written after its original create).
    pub fn by_id_or_placeholder(&self, id: u64) -> Arc<Incarnation> {
        if let Some(incarnation) = self.by_id(id) {
            return incarnation;
        }
        let placeholder = Arc::new(Incarnation {
            id,
            name: String::new(),
            default_ttl_seconds: None,
            deleted_version: AtomicU64::new(LIVE),
            state: Mutex::new(ContainerState {
                lease: None,
                metadata: Vec::new(),
                etag_version: 0,
                last_modified: 0,
            }),
        });
        self.by_id.pin().insert(id, Arc::clone(&placeholder));
        placeholder
    }

    pub fn is_placeholder(incarnation: &Incarnation) -> bool {
        incarnation.name.is_empty()
    }

    /// Replay only, before `finish_replay`: the ids of live placeholders, containers whose
    /// items were replayed but whose state no record has named yet.
    pub fn placeholder_ids(&self) -> Vec<u64> {
        let mut ids: Vec<u64> = self
            .by_id
            .pin()
            .iter()
            .filter(|(_, incarnation)| {
                Catalog::is_placeholder(incarnation) && incarnation.is_live()
            })
            .map(|(id, _)| *id)
            .collect();
        ids.sort_unstable();
        ids
    }

    /// Every incarnation, placeholders included, oldest first (by id: the version that
    /// created it), for a persisted index (`checkpoint/`).
    pub fn incarnations(&self) -> Vec<Arc<Incarnation>> {
        let mut incarnations: Vec<Arc<Incarnation>> = self.by_id.pin().values().cloned().collect();
        incarnations.sort_unstable_by_key(|incarnation| incarnation.id);
        incarnations
    }

    /// Restore only (`checkpoint/`), oldest first: adds an incarnation as the replay left
    /// it. A placeholder (no name) is known by its id only, as `by_id_or_placeholder` makes
    /// it.
    pub fn restore(&self, incarnation: Arc<Incarnation>) -> Result<(), &'static str> {
        if self.by_id.pin().contains_key(&incarnation.id) {
            return Err("a container listed twice");
        }
        if Catalog::is_placeholder(&incarnation) {
            self.by_id.pin().insert(incarnation.id, incarnation);
        } else {
            self.insert(incarnation);
        }
        Ok(())
    }

    /// Replay only: a container state for `incarnation.id` replaces its placeholder.
    pub fn resolve(&self, incarnation: Arc<Incarnation>) {
        self.insert(incarnation);
    }

    /// End of replay: placeholders no state record resolved belonged to containers deleted
    /// and compacted away; their items stay invisible and compaction drops them.
    pub fn finish_replay(&self) {
        for (_, incarnation) in self.by_id.pin().iter() {
            if Catalog::is_placeholder(incarnation) {
                incarnation.deleted_version.store(0, Ordering::Release);
            }
        }
    }

    /// Names of the containers visible at `version`, sorted.
    pub fn names_at(&self, version: Version) -> Vec<String> {
        let by_name = self.by_name.pin();
        let mut names: Vec<String> = by_name
            .iter()
            .filter(|(_, incarnations)| {
                incarnations
                    .iter()
                    .any(|incarnation| incarnation.visible_at(version))
            })
            .map(|(name, _)| name.clone())
            .collect();
        names.sort();
        names
    }
}
