//! The work an open from a persisted index leaves for after it returns, each on a thread of
//! its own that holds only a weak reference (so it never keeps a store alive) and that a close
//! stops: the verification of the log below the file's tail (`Log::verify_below_anchor`),
//! and the restore of the index's shards that no lookup has restored (`index/restore.rs`).

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Weak};

use crate::engine::core::Engine;
use crate::error::{Error, Result};
use crate::index::checkpoint::CHECKPOINT_FILE;
use crate::index::point_index::SHARDS;

/// The threads finishing an open.
pub(crate) struct AfterOpen {
    stop: Arc<AtomicBool>,
    threads: Vec<std::thread::JoinHandle<()>>,
}

impl AfterOpen {
    /// Starts what `store`'s open left: nothing after an open that replayed the log.
    pub(crate) fn start(store: &Arc<Engine>) -> Result<AfterOpen> {
        let stop = Arc::new(AtomicBool::new(false));
        let mut threads = Vec::new();
        if store.log.has_unverified_records() {
            threads.push(spawn("tenure-verifier", store, &stop, verify_log)?);
        }
        if !store.index.is_restored() {
            threads.push(spawn("tenure-restorer", store, &stop, restore_remaining)?);
        }
        Ok(AfterOpen { stop, threads })
    }

    /// Stops the threads at their next step (a segment verified, a shard restored), and
    /// waits for them.
    pub(crate) fn stop(self) {
        self.stop.store(true, Ordering::Release);
        for thread in self.threads {
            let _ = thread.join();
        }
    }
}

/// At the callers' priority: a lookup may wait for a shard this thread is restoring, and the
/// sooner the log is verified the shorter the time its reads are served unverified.
fn spawn(
    name: &'static str,
    store: &Arc<Engine>,
    stop: &Arc<AtomicBool>,
    body: fn(&Weak<Engine>, &AtomicBool),
) -> Result<std::thread::JoinHandle<()>> {
    let store = Arc::downgrade(store);
    let stop = Arc::clone(stop);
    crate::base::background::spawn(name, crate::base::background::Priority::Normal, move || {
        body(&store, &stop)
    })
    .map_err(|error| Error::io(name, "spawn thread", error))
}

fn verify_log(store: &Weak<Engine>, stop: &AtomicBool) {
    if let Some(engine) = store.upgrade() {
        let _no_compaction = engine.compaction.lock();
        let _ = engine.verify_log_locked(&|| stop.load(Ordering::Acquire));
    }
}

fn restore_remaining(store: &Weak<Engine>, stop: &AtomicBool) {
    for shard in 0..SHARDS {
        if stop.load(Ordering::Acquire) {
            return;
        }
        let Some(engine) = store.upgrade() else {
            return;
        };
        if engine.index.restore_shard(shard).is_err() {
            // The file's checksums held but a shard did not decode: lookups of that shard
            // fail, and the next open must rebuild the index from the log instead.
            engine.forget_saved_index();
            return;
        }
    }
}

impl Engine {
    /// Verifies the log below the persisted index an open started from, unless done
    /// (`Log::verify_below_anchor`); damage found there fails every later call with it, as
    /// it would have failed the open, and the saved index is deleted, so that the next open
    /// reads the whole log (and refuses). The caller holds `compaction`.
    pub(crate) fn verify_log_locked(&self, cancelled: &dyn Fn() -> bool) -> Result<()> {
        let verified = self.log.verify_below_anchor(cancelled);
        if let Err(error) = &verified {
            *self.damage.lock() = Some(error.clone());
            self.damaged.store(true, Ordering::Release);
            self.forget_saved_index_locked();
        }
        verified
    }

    /// Deletes the saved index this store was opened from, which could not be restored
    /// whole, so that the next open replays the log (a read-only store leaves it: the writer's
    /// own restore meets the same failure).
    pub(crate) fn forget_saved_index(&self) {
        let _no_compaction = self.compaction.lock();
        self.forget_saved_index_locked();
    }

    /// [`Engine::forget_saved_index`], the caller holding `compaction`.
    pub(crate) fn forget_saved_index_locked(&self) {
        if self.log.is_read_only() {
            return;
        }
        *self.checkpointed.lock() = None;
        let _ = self.log.storage().remove(CHECKPOINT_FILE);
    }
}

#[cfg(test)]
mod tests {
    use crate::index::catalog::Catalog;
    use crate::index::{checkpoint, index_key};
    use crate::storage::FileStorage;
    use crate::{ContainerOptions, ReadOptions, Store, StoreOptions, WriteOptions};

    const ITEMS: usize = 2_000;

    fn key(number: usize) -> Vec<u8> {
        format!("key-{number:05}").into_bytes()
    }

    /// A store closed cleanly, its saved index opened as an open does: a lookup restores only
    /// its key's shard, a walk restores every shard, and each key reads as it was written.
    #[test]
    fn a_lookup_restores_only_its_own_shard_and_a_walk_restores_them_all() {
        let directory = std::env::temp_dir().join(format!("tenure-restore-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&directory);
        let options = StoreOptions {
            background_compaction_interval: None,
            ..StoreOptions::default()
        };
        let store = Store::open(&directory, options.clone()).unwrap();
        store
            .create_container("c", &ContainerOptions::default())
            .unwrap();
        for number in 0..ITEMS {
            store
                .put("c", &key(number), &key(number), &WriteOptions::default())
                .unwrap();
        }
        store.close().unwrap();

        let persisted =
            checkpoint::read(&FileStorage::new(&directory)).expect("a clean close saves it");
        let catalog = Catalog::default();
        let index = persisted.open_index(&catalog, 0).unwrap();
        assert!(!index.is_restored());
        let container = catalog
            .live("c")
            .expect("the container is restored with the file")
            .id;
        assert!(index.get(&index_key(container, &key(7))).unwrap().is_some());
        assert!(index
            .get(&index_key(container, b"absent"))
            .unwrap()
            .is_none());
        assert!(
            !index.is_restored(),
            "two lookups restore at most two shards of 256"
        );
        let walked: Vec<Vec<u8>> = index
            .range_from(&[], &[])
            .unwrap()
            .map(|slot| slot.index_key().to_vec())
            .collect();
        assert!(index.is_restored());
        let expected: Vec<Vec<u8>> = (0..ITEMS)
            .map(|number| index_key(container, &key(number)).to_vec())
            .collect();
        assert_eq!(walked, expected);
        drop(index);

        // Through the store: an open, then gets and a conditional write at once, read as
        // written whether or not the background restore has reached their shards.
        let store = Store::open(&directory, options).unwrap();
        assert!(store.stats().unwrap().opened_from_persisted_index);
        for number in (0..ITEMS).step_by(97) {
            let item = store
                .get("c", &key(number), &ReadOptions::default())
                .unwrap();
            assert_eq!(item.value.as_deref(), Some(&key(number)[..]));
        }
        let refused = store.put(
            "c",
            &key(11),
            b"new",
            &WriteOptions {
                conditions: crate::Conditions::if_none_match(crate::ETagArg::Any),
                ..WriteOptions::default()
            },
        );
        assert!(refused.is_err(), "the key exists, restored or not");
        store.close().unwrap();
        let _ = std::fs::remove_dir_all(&directory);
    }
}
