//! The background restorer: after an open from a persisted index, a thread restores the
//! index's shards that no lookup has restored yet (`index/restore.rs`), so that lookups stop
//! paying for them soon after the open.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Weak};

use crate::engine::core::Engine;
use crate::error::Result;
use crate::index::checkpoint::CHECKPOINT_FILE;
use crate::index::point_index::SHARDS;

/// A thread restoring a persisted index's remaining shards, one at a time; it holds only a
/// weak reference, so it never keeps a store alive, and a close stops it between shards.
pub(crate) struct BackgroundRestore {
    stop: Arc<AtomicBool>,
    thread: std::thread::JoinHandle<()>,
}

impl BackgroundRestore {
    /// Starts it for `store`, unless its index is restored already.
    pub(crate) fn start(store: &Arc<Engine>) -> Result<Option<BackgroundRestore>> {
        if store.index.is_restored() {
            return Ok(None);
        }
        let stop = Arc::new(AtomicBool::new(false));
        let thread_stop = Arc::clone(&stop);
        let store = Arc::downgrade(store);
        // At the callers' priority: a lookup of a shard this thread is restoring waits for it.
        let thread = crate::base::background::spawn(
            "tenure-restorer",
            crate::base::background::Priority::Normal,
            move || restore_remaining(&store, &thread_stop),
        )
        .map_err(|error| crate::error::Error::io("tenure-restorer", "spawn thread", error))?;
        Ok(Some(BackgroundRestore { stop, thread }))
    }

    /// Stops the thread after the shard it is restoring, and waits for it.
    pub(crate) fn stop(self) {
        self.stop.store(true, Ordering::Release);
        let _ = self.thread.join();
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
    /// Deletes the saved index this store was opened from, which could not be restored
    /// whole, so that the next open replays the log (a read-only store leaves it: the writer's
    /// own restore meets the same failure).
    pub(crate) fn forget_saved_index(&self) {
        if self.log.is_read_only() {
            return;
        }
        let _no_compaction = self.compaction.lock();
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
