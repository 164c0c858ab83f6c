//! Recording TTL expiries (docs/spec.md §7). An expired item is invisible on every read path the
//! moment its TTL runs out; recording the expiry — a deletion record that takes a version, so
//! the change feed reports it there — happens later, by the background sweeper or an explicit
//! `sweep_expired` call. Items under a live lock never expire.

use crossbeam_epoch::Guard;

use crate::clock::Timestamp;
use crate::engine::core::Engine;
use crate::error::Result;
use crate::index::{ItemSlot, NewVersion, VersionNode, COMMITTED};
use crate::log::SpaceUse;
use crate::record::{self, ItemWrite};

impl Engine {
    /// Records the expiry of up to `max_items` items past their TTL. Returns how many it
    /// recorded. An item written meanwhile is left alone (its write reset the TTL). Walks
    /// every item until it has recorded `max_items` (once any item can expire): its cost grows
    /// with the store.
    ///
    /// Returns once every record reserved before it ends is visible: an expiry the background
    /// sweep was recording meanwhile (its tombstone installed, so this walk passes the item
    /// by) is then in the change feed too, as a caller that swept expects.
    pub(crate) fn sweep_expired(&self, max_items: usize) -> Result<usize> {
        let recorded = self.sweep_expired_step(&mut Vec::new(), usize::MAX, max_items)?;
        self.log.wait(self.log.last_reserved_version())?;
        Ok(recorded)
    }

    /// The background compactor's sweep, a bounded step at a time: at most `max_items` items
    /// from `cursor` (an index key, kept between steps; empty: the first item), after which
    /// `cursor` holds where the next step starts (empty again once the walk reached the end).
    /// Walks nothing while no item was written with an expiry. Before, every wake walked the
    /// whole index: 314 ms each second for a store of 1M items without a single TTL.
    pub(crate) fn sweep_expired_step(
        &self,
        cursor: &mut Vec<u8>,
        max_items: usize,
        max_recorded: usize,
    ) -> Result<usize> {
        self.check_open()?;
        if !self.index.may_hold_expiring_items() {
            return Ok(0);
        }
        let guard = crossbeam_epoch::pin();
        let now = self.now();
        let (mut visited, mut recorded) = (0, 0);
        let mut resume_at = None;
        for slot in self.index.range_from(cursor, &[])? {
            if visited == max_items || recorded == max_recorded {
                resume_at = Some(slot.index_key().to_vec());
                break;
            }
            visited += 1;
            if self.record_expiry_if_due(&slot, now, &guard)? {
                recorded += 1;
            }
        }
        *cursor = resume_at.unwrap_or_default();
        Ok(recorded)
    }

    /// Records `slot`'s expiry if its item is past its TTL at `now`. Returns whether it did.
    fn record_expiry_if_due(&self, slot: &ItemSlot, now: Timestamp, guard: &Guard) -> Result<bool> {
        let (head, version) = self.settled_version(slot, guard)?;
        let Some(node) = version else {
            return Ok(false);
        };
        let expired = node.value().is_some() && !node.is_live_at(now);
        if !expired || node.version > self.version() {
            return Ok(false);
        }
        let (container_id, _) = crate::index::split_index_key(slot.index_key());
        if !self
            .catalog
            .by_id(container_id)
            .is_some_and(|incarnation| incarnation.is_live())
        {
            return Ok(false);
        }
        let write = ItemWrite {
            container_id,
            key: slot.key(),
            value: None,
            last_modified: node.last_modified,
            expires_at: None,
            content_type: None,
            metadata: &[],
            etag_version: 0,
            coordination: None,
            created: false,
            expired: true,
        };
        let mut payload = Vec::with_capacity(1 + record::item_write_size(&write));
        payload.push(record::OP_ITEM_WRITE);
        let value_offset = record::encode_item_write(&mut payload, &write);
        let mut reservation = self.log.reserve(payload.len(), SpaceUse::Deleting)?;
        crate::index::plain::patch_version(
            &mut payload,
            value_offset,
            &write,
            reservation.version(),
        );
        reservation.write_payload(&payload)?;
        let version = reservation.version();
        let tombstone = VersionNode::new(NewVersion {
            version,
            etag_version: version,
            status: COMMITTED,
            value: None,
            last_modified: node.last_modified,
            expires_at: None,
            properties: None,
            coordination: None,
        });
        match slot.install(head, tombstone, guard) {
            Ok(installed) => {
                reservation.commit()?;
                self.maybe_prune(slot, installed, guard);
                Ok(true)
            }
            Err(_) => {
                reservation.abort();
                Ok(false)
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use crate::clock::{ManualClock, MICROS_PER_SECOND};
    use crate::{ContainerOptions, Durability, Store, StoreOptions, Ttl, WriteOptions};

    /// A store in a fresh directory with a manual clock and one container "c"; the directory
    /// goes with the value.
    struct TestStore {
        store: Option<Store>,
        clock: ManualClock,
        directory: std::path::PathBuf,
    }

    impl TestStore {
        fn new(name: &str) -> TestStore {
            let directory =
                std::env::temp_dir().join(format!("tenure-expiry-{name}-{}", std::process::id()));
            let _ = std::fs::remove_dir_all(&directory);
            let clock = ManualClock::new(1_700_000_000 * MICROS_PER_SECOND);
            let mut test = TestStore {
                store: None,
                clock,
                directory,
            };
            test.reopen();
            test.store()
                .create_container("c", &ContainerOptions::default())
                .unwrap();
            test
        }

        fn store(&self) -> &Store {
            self.store.as_ref().expect("open")
        }

        fn reopen(&mut self) {
            if let Some(store) = self.store.take() {
                store.close().unwrap();
            }
            let options = StoreOptions {
                durability: Durability::Buffered,
                segment_size_bytes: 1 << 20,
                clock: Arc::new(self.clock.clone()),
                background_compaction_interval: None,
                ..StoreOptions::default()
            };
            self.store = Some(Store::open(&self.directory, options).unwrap());
        }
    }

    impl Drop for TestStore {
        fn drop(&mut self) {
            self.store = None;
            let _ = std::fs::remove_dir_all(&self.directory);
        }
    }

    fn put(store: &Store, key: &[u8], ttl_seconds: Option<u32>) {
        let options = WriteOptions {
            ttl: ttl_seconds.map_or(Ttl::ContainerDefault, Ttl::Seconds),
            ..WriteOptions::default()
        };
        store.put("c", key, b"value", &options).unwrap();
    }

    #[test]
    fn the_background_sweep_walks_nothing_until_an_item_has_an_expiry() {
        let test = TestStore::new("no-ttl");
        let store = test.store();
        for key in [b"a", b"b", b"c"] {
            put(store, key, None);
        }
        assert!(!store.engine().index.may_hold_expiring_items());
        let mut cursor = Vec::new();
        assert_eq!(
            store
                .engine()
                .sweep_expired_step(&mut cursor, 1, 10)
                .unwrap(),
            0
        );
        assert!(cursor.is_empty(), "no walk, so nowhere to resume");
        put(store, b"d", Some(5));
        assert!(store.engine().index.may_hold_expiring_items());
        assert_eq!(
            store
                .engine()
                .sweep_expired_step(&mut cursor, 1, 10)
                .unwrap(),
            0
        );
        assert!(
            !cursor.is_empty(),
            "one item visited, the walk resumes at the next"
        );
    }

    #[test]
    fn every_write_path_that_sets_an_expiry_is_noticed() {
        let batch_test = TestStore::new("batch");
        let store = batch_test.store();
        let mut batch = store.batch();
        let expiring = WriteOptions {
            ttl: Ttl::Seconds(5),
            ..WriteOptions::default()
        };
        batch.put("c", b"a", b"value", expiring);
        batch.commit().unwrap();
        assert!(store.engine().index.may_hold_expiring_items(), "a batch");

        let unlock_test = TestStore::new("unlock");
        let store = unlock_test.store();
        put(store, b"a", None);
        let (_, handle) = store
            .get_and_lock("c", b"a", std::time::Duration::from_secs(30), false)
            .unwrap();
        assert!(!store.engine().index.may_hold_expiring_items());
        store
            .unlock("c", b"a", handle, Some(Ttl::Seconds(5)))
            .unwrap();
        assert!(
            store.engine().index.may_hold_expiring_items(),
            "an unlock with a TTL"
        );
    }

    #[test]
    fn the_background_sweep_resumes_where_it_stopped_and_starts_over_at_the_end() {
        let test = TestStore::new("steps");
        let store = test.store();
        put(store, b"a", None);
        put(store, b"b", Some(5));
        put(store, b"c", None);
        put(store, b"d", Some(5));
        test.clock.advance_seconds(5);
        let mut cursor = Vec::new();
        assert_eq!(
            store
                .engine()
                .sweep_expired_step(&mut cursor, 2, 10)
                .unwrap(),
            1,
            "a, b"
        );
        assert_eq!(&cursor[8..], b"c");
        assert_eq!(
            store
                .engine()
                .sweep_expired_step(&mut cursor, 2, 10)
                .unwrap(),
            1,
            "c, d"
        );
        assert!(cursor.is_empty(), "the end: the next step starts over");
        assert_eq!(
            store
                .engine()
                .sweep_expired_step(&mut cursor, 10, 10)
                .unwrap(),
            0,
            "each expiry recorded once"
        );
        assert_eq!(store.sweep_expired(10).unwrap(), 0);
    }

    #[test]
    fn the_background_sweep_stops_at_its_bound_on_recorded_expiries() {
        let test = TestStore::new("recorded-bound");
        let store = test.store();
        for key in [b"a", b"b", b"c"] {
            put(store, key, Some(5));
        }
        test.clock.advance_seconds(5);
        let mut cursor = Vec::new();
        assert_eq!(
            store
                .engine()
                .sweep_expired_step(&mut cursor, 10, 2)
                .unwrap(),
            2
        );
        assert_eq!(&cursor[8..], b"c");
        assert_eq!(
            store
                .engine()
                .sweep_expired_step(&mut cursor, 10, 2)
                .unwrap(),
            1
        );
    }

    #[test]
    fn reopening_finds_the_items_that_can_expire_in_the_log() {
        let mut without = TestStore::new("reopen-without");
        put(without.store(), b"a", None);
        without.reopen();
        assert!(!without.store().engine().index.may_hold_expiring_items());

        let mut with = TestStore::new("reopen-with");
        put(with.store(), b"a", None);
        put(with.store(), b"b", Some(60));
        with.reopen();
        assert!(with.store().engine().index.may_hold_expiring_items());
    }
}
