//! One behaviour suite, two backends: every test below runs against a local store (a fresh
//! directory) and against a store on the 3-member etcd cluster that scripts/etcd-cluster.sh
//! starts (a fresh prefix). Time-dependent rules use short real durations, the same on both
//! (a cluster takes no manual clock).
//!
//! Without TENURE_ETCD_ENDPOINTS the etcd half is skipped with a note, unless
//! TENURE_REQUIRE_ETCD=1 (as in CI), which turns a missing cluster into a failure.

use std::sync::Arc;
use std::thread;
use std::time::Duration;

use tenure::{
    ChangeKind, ChangesOptions, Conditions, ContainerOptions, ContainerWriteOptions, ErrorCode,
    LeaseRequest, LeaseState, ReadOptions, Store, StoreOptions, Ttl, WriteOptions,
};
use tenure_testkit::TempDir;

/// An open store and what keeps it alive.
struct Fixture {
    store: Store,
    location: String,
    _directory: Option<TempDir>,
    /// etcd's compaction is the whole cluster's: the compaction test runs alone.
    _cluster_history: Option<std::sync::RwLockReadGuard<'static, ()>>,
}

static CLUSTER_HISTORY: std::sync::RwLock<()> = std::sync::RwLock::new(());

impl Fixture {
    /// Another handle on the same store: another client of the cluster, or a read-only open
    /// beside the local writer.
    fn open_again(&self, options: StoreOptions) -> Store {
        tenure_etcd::open_location(&self.location, options).unwrap()
    }
}

fn local() -> Option<Fixture> {
    let directory = TempDir::new("conformance");
    let location = directory.path().to_str().unwrap().to_owned();
    let store = tenure_etcd::open_location(&location, StoreOptions::default()).unwrap();
    Some(Fixture {
        store,
        location,
        _directory: Some(directory),
        _cluster_history: None,
    })
}

fn etcd() -> Option<Fixture> {
    etcd_with(Some(
        CLUSTER_HISTORY.read().unwrap_or_else(|e| e.into_inner()),
    ))
}

fn etcd_with(history: Option<std::sync::RwLockReadGuard<'static, ()>>) -> Option<Fixture> {
    let Some(endpoints) = tenure_testkit::etcd_cluster::endpoints() else {
        eprintln!("skipped: no etcd cluster (TENURE_ETCD_ENDPOINTS unset)");
        return None;
    };
    let prefix = format!("conformance/{}", uuid::Uuid::new_v4());
    let location = format!("etcd://{endpoints}/{prefix}");
    let store = tenure_etcd::open(&location, StoreOptions::default()).unwrap();
    Some(Fixture {
        store,
        location,
        _directory: None,
        _cluster_history: history,
    })
}

/// Defines each test once per backend: `local::name` and `etcd::name`.
macro_rules! conformance {
    ($($name:ident($fixture:ident) $body:block)*) => {
        $(fn $name($fixture: &Fixture) $body)*
        mod local {
            $(#[test] fn $name() { if let Some(fixture) = super::local() { super::$name(&fixture) } })*
        }
        mod etcd {
            $(#[test] fn $name() { if let Some(fixture) = super::etcd() { super::$name(&fixture) } })*
        }
    };
}

fn plain() -> WriteOptions {
    WriteOptions::default()
}

fn conditional(conditions: Conditions) -> WriteOptions {
    WriteOptions::with_conditions(conditions)
}

fn value_of(store: &Store, container: &str, key: &[u8]) -> Option<Vec<u8>> {
    match store.get(container, key, &ReadOptions::default()) {
        Ok(item) => item.value,
        Err(error) if error.code() == ErrorCode::NotFound => None,
        Err(error) => panic!("get: {error}"),
    }
}

conformance! {
    items_follow_the_order_of_checks_and_stale_writes_fail(fixture) {
        let store = &fixture.store;
        assert_eq!(
            store.put("c", b"k", b"v", &plain()).unwrap_err().code(),
            ErrorCode::ContainerNotFound
        );
        store.create_container("c", &ContainerOptions::default()).unwrap();
        let first = store.put("c", b"k", b"v1", &plain()).unwrap();
        let item = store.get("c", b"k", &ReadOptions::default()).unwrap();
        assert_eq!((item.value.as_deref(), item.etag), (Some(&b"v1"[..]), first));
        let second = store.put("c", b"k", b"v2", &conditional(Conditions::if_match(first))).unwrap();
        assert!(second.version() > first.version());
        // A stale write fails, names the current ETag, and changes nothing.
        let stale = store.put("c", b"k", b"lost", &conditional(Conditions::if_match(first))).unwrap_err();
        assert_eq!((stale.code(), stale.status()), (ErrorCode::ConditionNotMet, 412));
        assert_eq!(stale.current_etag(), Some(second));
        assert_eq!(value_of(store, "c", b"k").unwrap(), b"v2");
        assert_eq!(store.create("c", b"k", b"again", &plain()).unwrap_err().code(), ErrorCode::AlreadyExists);
        assert_eq!(store.replace("c", b"nothing", b"x", &plain()).unwrap_err().code(), ErrorCode::NotFound);
        // A read whose copy is current is NotModified.
        let current = ReadOptions { conditions: Conditions::if_none_match(second), ..ReadOptions::default() };
        assert_eq!(store.get("c", b"k", &current).unwrap_err().code(), ErrorCode::NotModified);
        let version = store.put("c", b"k", b"v3", &conditional(Conditions::if_version(second.version()))).unwrap();
        assert_eq!(
            store.put("c", b"k", b"v4", &conditional(Conditions::if_version(second.version()))).unwrap_err().code(),
            ErrorCode::VersionMismatch
        );
        store.delete("c", b"k", &conditional(Conditions::if_match(version))).unwrap();
        assert_eq!(store.get("c", b"k", &ReadOptions::default()).unwrap_err().code(), ErrorCode::NotFound);
        assert_eq!(store.delete("c", b"k", &plain()).unwrap_err().code(), ErrorCode::NotFound);
    }

    properties_and_metadata_keep_the_value(fixture) {
        let store = &fixture.store;
        store.create_container("c", &ContainerOptions::default()).unwrap();
        let options = WriteOptions {
            content_type: Some("text/plain".into()),
            metadata: vec![("owner".into(), "alice".into())],
            ..plain()
        };
        let first = store.put("c", b"k", b"body", &options).unwrap();
        let metadata = WriteOptions { metadata: vec![("owner".into(), "bob".into())], ..plain() };
        let second = store.set_metadata("c", b"k", &metadata).unwrap();
        assert!(second.version() > first.version());
        let item = store.get("c", b"k", &ReadOptions::default()).unwrap();
        assert_eq!(item.value.as_deref(), Some(&b"body"[..]));
        assert_eq!(item.content_type.as_deref(), Some("text/plain"));
        assert_eq!(item.metadata, vec![("owner".to_owned(), "bob".to_owned())]);
        assert_eq!(store.get_properties("c", b"k", &ReadOptions::default()).unwrap().value, None);
    }

    bad_input_names_the_argument_and_changes_nothing(fixture) {
        let store = &fixture.store;
        store.create_container("c", &ContainerOptions::default()).unwrap();
        let version = store.version();
        let error = store.put("", b"k", b"v", &plain()).unwrap_err();
        assert_eq!(error.code(), ErrorCode::InvalidArgument);
        assert!(error.to_string().contains("`container`"), "{error}");
        let long_key = vec![b'k'; 100_000];
        let error = store.put("c", &long_key, b"v", &plain()).unwrap_err();
        assert!(error.to_string().contains("`key`"), "{error}");
        let error = store.list("c", b"", 0, None, false).unwrap_err();
        assert!(error.to_string().contains("`page_size`"), "{error}");
        let error = store.list("c", b"", 10, Some("not-a-token"), false).unwrap_err();
        assert!(error.to_string().contains("`continuation`"), "{error}");
        assert_eq!(store.version(), version, "nothing was written");
        assert!(store.changes(0, &ChangesOptions::default()).unwrap().len() == 1, "only the container's creation");
    }

    containers_hold_their_items_and_go_with_them(fixture) {
        let store = &fixture.store;
        let created = store.create_container("orders", &ContainerOptions::default()).unwrap();
        assert_eq!(
            store.create_container("orders", &ContainerOptions::default()).unwrap_err().code(),
            ErrorCode::ContainerAlreadyExists
        );
        store.create_container("orders/archive", &ContainerOptions::default()).unwrap();
        store.put("orders", b"1", b"a", &plain()).unwrap();
        store.put("orders/archive", b"1", b"b", &plain()).unwrap();
        let etag = store
            .set_container_metadata("orders", &[("team".into(), "sales".into())], &ContainerWriteOptions::default())
            .unwrap();
        assert!(etag.version() > created.etag.version());
        let properties = store.container_properties("orders").unwrap();
        assert_eq!((properties.etag, properties.metadata.len()), (etag, 1));
        let stale = ContainerWriteOptions { conditions: Conditions::if_match(created.etag), ..Default::default() };
        assert_eq!(store.delete_container("orders", &stale).unwrap_err().code(), ErrorCode::ConditionNotMet);
        store.delete_container("orders", &ContainerWriteOptions::default()).unwrap();
        assert_eq!(store.list_containers().unwrap(), vec!["orders/archive".to_owned()]);
        // The items went with the container; a new container of the same name starts empty.
        store.create_container("orders", &ContainerOptions::default()).unwrap();
        assert_eq!(value_of(store, "orders", b"1"), None);
        assert_eq!(value_of(store, "orders/archive", b"1").unwrap(), b"b");
    }

    listings_page_in_key_order_with_continuations(fixture) {
        let store = &fixture.store;
        store.create_container("c", &ContainerOptions::default()).unwrap();
        for index in 0..25u32 {
            store.put("c", format!("user/{index:03}").as_bytes(), &index.to_le_bytes(), &plain()).unwrap();
        }
        store.put("c", b"zzz", b"other prefix", &plain()).unwrap();
        let mut keys = Vec::new();
        let mut continuation = None;
        let mut pages = 0;
        loop {
            let page = store.list("c", b"user/", 10, continuation.as_deref(), true).unwrap();
            pages += 1;
            keys.extend(page.items.iter().map(|item| item.key.clone()));
            assert!(page.items.iter().all(|item| item.value.is_some()));
            continuation = page.continuation;
            if continuation.is_none() {
                break;
            }
        }
        assert_eq!(pages, 3);
        let expected: Vec<Vec<u8>> = (0..25).map(|index| format!("user/{index:03}").into_bytes()).collect();
        assert_eq!(keys, expected);
    }

    batches_are_all_or_nothing_and_name_the_failing_operation(fixture) {
        let store = &fixture.store;
        store.create_container("c", &ContainerOptions::default()).unwrap();
        let etag = store.put("c", b"a", b"1", &plain()).unwrap();
        let mut batch = store.batch();
        batch.put("c", b"b", b"2", plain());
        batch.put("c", b"a", b"2", conditional(Conditions::if_match(tenure::ETag(etag.version() + 1000))));
        let error = batch.commit().unwrap_err();
        match &error {
            tenure::Error::BatchFailed { index, error, operation_count } => {
                assert_eq!((*index, error.code(), *operation_count), (1, ErrorCode::ConditionNotMet, 2));
            }
            other => panic!("expected BatchFailed, got {other}"),
        }
        assert_eq!(value_of(store, "c", b"b"), None, "nothing of a failed batch is written");
        let mut batch = store.batch();
        batch.put("c", b"b", b"2", plain());
        batch.check("c", b"a", Conditions::if_match(etag));
        batch.delete("c", b"a", plain());
        let version = batch.commit().unwrap();
        assert_eq!(store.get("c", b"b", &ReadOptions::default()).unwrap().etag.version(), version);
        assert_eq!(value_of(store, "c", b"a"), None);
    }

    snapshots_repeat_their_reads(fixture) {
        let store = &fixture.store;
        store.create_container("c", &ContainerOptions::default()).unwrap();
        store.put("c", b"k", b"before", &plain()).unwrap();
        let snapshot = store.snapshot().unwrap();
        store.put("c", b"k", b"after", &plain()).unwrap();
        store.put("c", b"new", b"x", &plain()).unwrap();
        let read = snapshot.get("c", b"k", &ReadOptions::default()).unwrap();
        assert_eq!(read.value.as_deref(), Some(&b"before"[..]));
        assert_eq!(snapshot.get_borrowed("c", b"k", &ReadOptions::default()).unwrap().value, b"before");
        assert_eq!(snapshot.get("c", b"new", &ReadOptions::default()).unwrap_err().code(), ErrorCode::NotFound);
        assert_eq!(snapshot.list("c", b"", 100, None, false).unwrap().items.len(), 1);
        let mut scanned = Vec::new();
        snapshot.scan("c", b"", b"", |entry| { scanned.push(entry.value.to_vec()); true }).unwrap();
        assert_eq!(scanned, vec![b"before".to_vec()]);
        assert_eq!(value_of(store, "c", b"k").unwrap(), b"after");
    }

    leases_guard_writes_keep_the_etag_and_fences_grow(fixture) {
        let store = &fixture.store;
        store.create_container("c", &ContainerOptions::default()).unwrap();
        let etag = store.put("c", b"blob", b"v1", &plain()).unwrap();
        let lease = store.acquire_lease("c", b"blob", &LeaseRequest::seconds(15).unwrap()).unwrap();
        assert_eq!(store.get("c", b"blob", &ReadOptions::default()).unwrap().etag, etag, "a lease keeps the ETag");
        let refused = store.put("c", b"blob", b"intruder", &plain()).unwrap_err();
        assert_eq!((refused.code(), refused.current_etag()), (ErrorCode::LeaseIdMissing, Some(etag)));
        assert_eq!(
            store.acquire_lease("c", b"blob", &LeaseRequest::seconds(15).unwrap()).unwrap_err().code(),
            ErrorCode::LeaseAlreadyPresent
        );
        let with_lease = WriteOptions { lease_id: Some(lease.id), ..plain() };
        store.put("c", b"blob", b"v2", &with_lease).unwrap();
        let info = store.lease_info("c", b"blob").unwrap();
        assert_eq!((info.state, info.id, info.fence), (LeaseState::Leased, Some(lease.id), Some(lease.fence)));
        store.release_lease("c", b"blob", lease.id).unwrap();
        let second = store.acquire_lease("c", b"blob", &LeaseRequest::infinite()).unwrap();
        assert!(second.fence > lease.fence, "fences strictly increase");
        assert_eq!(store.break_lease("c", b"blob", Some(0)).unwrap(), Duration::ZERO);
        assert_eq!(store.lease_info("c", b"blob").unwrap().state, LeaseState::Broken);
        assert_eq!(store.renew_lease("c", b"blob", second.id).unwrap_err().code(), ErrorCode::LeaseIsBrokenAndCannotBeRenewed);
        // A write without an id clears a broken lease.
        store.put("c", b"blob", b"v3", &plain()).unwrap();
        assert_eq!(store.lease_info("c", b"blob").unwrap().state, LeaseState::Available);
    }

    container_leases_guard_deletion(fixture) {
        let store = &fixture.store;
        store.create_container("c", &ContainerOptions::default()).unwrap();
        let lease = store.acquire_container_lease("c", &LeaseRequest::seconds(20).unwrap()).unwrap();
        assert_eq!(
            store.delete_container("c", &ContainerWriteOptions::default()).unwrap_err().code(),
            ErrorCode::LeaseIdMissing
        );
        assert_eq!(store.container_lease_info("c").unwrap().state, LeaseState::Leased);
        let with_lease = ContainerWriteOptions { lease_id: Some(lease.id), ..Default::default() };
        store.delete_container("c", &with_lease).unwrap();
        assert!(store.list_containers().unwrap().is_empty());
    }

    cache_locks_reject_at_once_and_unlock_with_their_handle(fixture) {
        let store = &fixture.store;
        store.create_container("c", &ContainerOptions::default()).unwrap();
        let etag = store.put("c", b"page", b"v1", &plain()).unwrap();
        let (item, handle) = store.get_and_lock("c", b"page", Duration::from_secs(30), false).unwrap();
        assert_eq!(item.unwrap().etag, etag);
        let refused = store.get_and_lock("c", b"page", Duration::from_secs(30), false).unwrap_err();
        assert_eq!(refused.code(), ErrorCode::ObjectLocked);
        assert_eq!(
            store.put_and_unlock("c", b"page", b"x", tenure::LockHandle(handle.0 ^ 1), Ttl::ContainerDefault).unwrap_err().code(),
            ErrorCode::InvalidLockHandle
        );
        let written = store.put_and_unlock("c", b"page", b"v2", handle, Ttl::ContainerDefault).unwrap();
        assert!(written.version() > etag.version());
        assert_eq!(store.unlock("c", b"page", handle, None).unwrap_err().code(), ErrorCode::ObjectNotLocked);
        // A forced lock on an absent key: put_and_unlock creates the item.
        let (absent, handle) = store.get_and_lock("c", b"new", Duration::from_secs(30), true).unwrap();
        assert!(absent.is_none());
        assert_eq!(value_of(store, "c", b"new"), None);
        store.put_and_unlock("c", b"new", b"made", handle, Ttl::ContainerDefault).unwrap();
        assert_eq!(value_of(store, "c", b"new").unwrap(), b"made");
    }

    items_expire_by_their_ttl_and_the_feed_says_so(fixture) {
        let store = &fixture.store;
        store.create_container("c", &ContainerOptions::default()).unwrap();
        let start = store.version();
        let short = WriteOptions { ttl: Ttl::seconds(1).unwrap(), ..plain() };
        store.put("c", b"session", b"s", &short).unwrap();
        store.put("c", b"stays", b"s", &plain()).unwrap();
        assert!(value_of(store, "c", b"session").is_some());
        // Locally the store's clock decides; on a cluster, etcd's lease of the item's timer,
        // which the leader checks every 500 ms: wait up to 5 s.
        let deadline = std::time::Instant::now() + Duration::from_secs(5);
        while value_of(store, "c", b"session").is_some() {
            assert!(std::time::Instant::now() < deadline, "the item outlived its TTL by 4 s");
            thread::sleep(Duration::from_millis(100));
        }
        assert!(value_of(store, "c", b"stays").is_some());
        // The local store's background compactor may have recorded the expiry already.
        assert!(store.sweep_expired(100).unwrap() <= 1);
        assert_eq!(store.sweep_expired(100).unwrap(), 0, "recorded once");
        let kinds: Vec<(ChangeKind, Vec<u8>)> = store
            .changes(start, &ChangesOptions::default())
            .unwrap()
            .into_iter()
            .map(|change| (change.kind, change.key.unwrap_or_default()))
            .collect();
        assert_eq!(
            kinds,
            vec![
                (ChangeKind::Created, b"session".to_vec()),
                (ChangeKind::Created, b"stays".to_vec()),
                (ChangeKind::Expired, b"session".to_vec()),
            ]
        );
    }

    the_change_feed_lists_every_change_in_order(fixture) {
        let store = &fixture.store;
        let start = store.version();
        store.create_container("c", &ContainerOptions::default()).unwrap();
        store.create_container("d", &ContainerOptions::default()).unwrap();
        let created = store.put("c", b"k", b"1", &plain()).unwrap();
        let lease = store.acquire_lease("c", b"k", &LeaseRequest::seconds(15).unwrap()).unwrap();
        store.release_lease("c", b"k", lease.id).unwrap();
        store.put("c", b"k", b"2", &plain()).unwrap();
        store.put("d", b"k", b"elsewhere", &plain()).unwrap();
        store.delete("c", b"k", &plain()).unwrap();
        store.delete_container("d", &ContainerWriteOptions::default()).unwrap();
        let options = ChangesOptions { include_values: true, ..ChangesOptions::default() };
        let changes = store.changes(start, &options).unwrap();
        let kinds: Vec<(ChangeKind, &str)> = changes.iter().map(|change| (change.kind, change.container.as_str())).collect();
        assert_eq!(
            kinds,
            vec![
                (ChangeKind::ContainerCreated, "c"),
                (ChangeKind::ContainerCreated, "d"),
                (ChangeKind::Created, "c"),
                (ChangeKind::Updated, "c"),
                (ChangeKind::Created, "d"),
                (ChangeKind::Deleted, "c"),
                (ChangeKind::ContainerDeleted, "d"),
            ],
            "lease actions are not changes of data"
        );
        assert_eq!(changes[2].etag, Some(created));
        assert_eq!(changes[3].value.as_deref(), Some(&b"2"[..]));
        let only_c = ChangesOptions { container: Some("c".into()), ..ChangesOptions::default() };
        assert_eq!(store.changes(start, &only_c).unwrap().len(), 4);
        // Resuming after the last version seen gives the rest.
        let first_two = ChangesOptions { max_changes: 2, ..ChangesOptions::default() };
        let page = store.changes(start, &first_two).unwrap();
        assert_eq!(page.len(), 2);
        let rest = store.changes(page[1].version, &ChangesOptions::default()).unwrap();
        assert_eq!(rest.len(), 5);
    }

    concurrent_updates_from_two_handles_lose_nothing(fixture) {
        fixture.store.create_container("c", &ContainerOptions::default()).unwrap();
        fixture.store.put("c", b"counter", &0u64.to_le_bytes(), &plain()).unwrap();
        // A second handle: another client of the cluster; locally, the same handle (a local
        // store is open for writing in one process at a time).
        let other = if fixture.location.starts_with("etcd://") {
            Some(fixture.open_again(StoreOptions::default()))
        } else {
            None
        };
        let stores: Vec<&Store> = vec![&fixture.store, other.as_ref().unwrap_or(&fixture.store)];
        let increments = 25u64;
        thread::scope(|scope| {
            for index in 0..4 {
                let store = stores[index % 2];
                scope.spawn(move || {
                    for _ in 0..increments {
                        store
                            .update("c", b"counter", 1_000, |value| {
                                let count = u64::from_le_bytes(value.try_into().unwrap());
                                (count + 1).to_le_bytes().to_vec()
                            })
                            .unwrap();
                    }
                });
            }
        });
        let value = value_of(&fixture.store, "c", b"counter").unwrap();
        assert_eq!(u64::from_le_bytes(value.try_into().unwrap()), 4 * increments);
    }

    a_lease_taken_by_one_client_blocks_the_other(fixture) {
        fixture.store.create_container("c", &ContainerOptions::default()).unwrap();
        fixture.store.put("c", b"job", b"pending", &plain()).unwrap();
        let other = if fixture.location.starts_with("etcd://") {
            fixture.open_again(StoreOptions::default())
        } else {
            return; // one writing handle per local store: the lease tests above cover it
        };
        let lease = fixture.store.acquire_lease("c", b"job", &LeaseRequest::seconds(15).unwrap()).unwrap();
        assert_eq!(other.put("c", b"job", b"stolen", &plain()).unwrap_err().code(), ErrorCode::LeaseIdMissing);
        let waited = other.acquire_lease_wait("c", b"job", &LeaseRequest::seconds(15).unwrap(), Duration::from_millis(200));
        assert_eq!(waited.unwrap_err().code(), ErrorCode::LeaseAlreadyPresent);
        let releaser = Arc::new(lease.id);
        thread::scope(|scope| {
            scope.spawn(|| {
                thread::sleep(Duration::from_millis(100));
                fixture.store.release_lease("c", b"job", *releaser).unwrap();
            });
            let next = other
                .acquire_lease_wait("c", b"job", &LeaseRequest::seconds(15).unwrap(), Duration::from_secs(5))
                .unwrap();
            assert!(next.fence > lease.fence);
        });
    }

    what_one_client_last_saw_never_decides_for_it(fixture) {
        // A handle decides writes of values on what it last saw, and must still decide exactly
        // as on what is stored when another client wrote meanwhile (docs/etcd.md).
        fixture.store.create_container("c", &ContainerOptions::default()).unwrap();
        let other = if fixture.location.starts_with("etcd://") {
            fixture.open_again(StoreOptions::default())
        } else {
            return; // one writing handle per local store
        };
        let first = fixture.store.put("c", b"k", b"1", &plain()).unwrap();
        assert_eq!(other.get("c", b"k", &ReadOptions::default()).unwrap().etag, first);
        let second = fixture.store.put("c", b"k", b"2", &conditional(Conditions::if_match(first))).unwrap();
        // `other` last saw `first`: its stale write is refused with the current ETag...
        let stale = other.put("c", b"k", b"3", &conditional(Conditions::if_match(first))).unwrap_err();
        assert_eq!((stale.code(), stale.current_etag()), (ErrorCode::ConditionNotMet, Some(second)));
        // ...and a write naming the ETag it learned elsewhere succeeds, though it last saw another.
        let third = fixture.store.put("c", b"k", b"4", &plain()).unwrap();
        other.put("c", b"k", b"5", &conditional(Conditions::if_match(third))).unwrap();
        // A lease taken by one client refuses the other, whatever the other last saw.
        let lease = fixture.store.acquire_lease("c", b"k", &LeaseRequest::seconds(15).unwrap()).unwrap();
        assert_eq!(other.put("c", b"k", b"6", &plain()).unwrap_err().code(), ErrorCode::LeaseIdMissing);
        fixture.store.release_lease("c", b"k", lease.id).unwrap();
        // A key deleted by one client is created anew by the other, which last saw it full.
        other.get("c", b"k", &ReadOptions::default()).unwrap();
        fixture.store.delete("c", b"k", &plain()).unwrap();
        other.create("c", b"k", b"7", &plain()).unwrap();
        assert_eq!(value_of(&fixture.store, "c", b"k").unwrap(), b"7");
    }

    read_only_opens_read_and_refuse_writes(fixture) {
        fixture.store.create_container("c", &ContainerOptions::default()).unwrap();
        fixture.store.put("c", b"k", b"v", &plain()).unwrap();
        let reader = fixture.open_again(StoreOptions { read_only: true, ..StoreOptions::default() });
        assert_eq!(value_of(&reader, "c", b"k").unwrap(), b"v");
        assert_eq!(reader.put("c", b"k", b"w", &plain()).unwrap_err().code(), ErrorCode::ReadOnly);
        assert_eq!(value_of(&fixture.store, "c", b"k").unwrap(), b"v");
    }
}

/// Compaction runs alone: etcd's is the whole cluster's, and would end the history the other
/// tests' change feeds read.
fn compaction_keeps_every_live_item(fixture: &Fixture) {
    let store = &fixture.store;
    store
        .create_container("c", &ContainerOptions::default())
        .unwrap();
    for round in 0..3u8 {
        for index in 0..20u8 {
            store.put("c", &[index], &[round; 100], &plain()).unwrap();
        }
    }
    let snapshot = store.snapshot().unwrap();
    for index in 0..10u8 {
        store.delete("c", &[index], &plain()).unwrap();
    }
    store.compact().unwrap();
    // A snapshot open across the compaction still reads what it saw.
    assert_eq!(
        snapshot
            .list("c", b"", 100, None, false)
            .unwrap()
            .items
            .len(),
        20
    );
    drop(snapshot);
    store.compact().unwrap();
    let page = store.list("c", b"", 100, None, true).unwrap();
    assert_eq!(page.items.len(), 10);
    assert!(page
        .items
        .iter()
        .all(|item| item.value.as_deref() == Some(&[2u8; 100][..])));
}

#[test]
fn local_compaction_keeps_every_live_item() {
    compaction_keeps_every_live_item(&local().unwrap());
}

#[test]
fn etcd_compaction_keeps_every_live_item() {
    let _alone = CLUSTER_HISTORY.write().unwrap_or_else(|e| e.into_inner());
    if let Some(fixture) = etcd_with(None) {
        compaction_keeps_every_live_item(&fixture);
        // The cluster's history is compacted, but a store begun after it lost nothing: its
        // feed from the start works.
        let later = etcd_with(None).unwrap();
        later
            .store
            .create_container("c", &ContainerOptions::default())
            .unwrap();
        let changes = later.store.changes(0, &ChangesOptions::default()).unwrap();
        assert_eq!(changes.len(), 1);
        // The first store's history before the compaction is gone, and says so.
        let error = fixture
            .store
            .changes(0, &ChangesOptions::default())
            .unwrap_err();
        assert_eq!(error.code(), ErrorCode::Compacted);
    }
}

/// A client clock off by `offset_micros` (ahead when positive): what the cluster's timers
/// must make irrelevant.
struct SkewedClock {
    system: tenure::SystemClock,
    offset_micros: i64,
}

impl tenure::Clock for SkewedClock {
    fn now(&self) -> tenure::Timestamp {
        self.system.now().saturating_add_signed(self.offset_micros)
    }
}

fn skewed(offset_micros: i64) -> StoreOptions {
    StoreOptions {
        clock: Arc::new(SkewedClock {
            system: tenure::SystemClock::new(),
            offset_micros,
        }),
        ..StoreOptions::default()
    }
}

/// Waits up to 5 s for `done`.
fn eventually(what: &str, mut done: impl FnMut() -> bool) {
    let deadline = std::time::Instant::now() + Duration::from_secs(5);
    while !done() {
        assert!(
            std::time::Instant::now() < deadline,
            "{what} did not happen within 5 s"
        );
        thread::sleep(Duration::from_millis(100));
    }
}

#[test]
fn deadlines_are_the_clusters_whatever_the_clients_clocks_say() {
    let Some(fixture) = etcd() else {
        return;
    };
    const HOUR_MICROS: i64 = 3_600 * 1_000_000;
    let behind = fixture.open_again(skewed(-HOUR_MICROS));
    let ahead = fixture.open_again(skewed(HOUR_MICROS));
    let store = &fixture.store;
    store
        .create_container("c", &ContainerOptions::default())
        .unwrap();

    // A 1 s TTL from a clock an hour behind: by any other clock it expired an hour ago, but
    // the cluster keeps it for its second.
    let short = WriteOptions {
        ttl: Ttl::seconds(1).unwrap(),
        ..plain()
    };
    behind.put("c", b"session", b"s", &short).unwrap();
    assert_eq!(value_of(store, "c", b"session").unwrap(), b"s");
    assert_eq!(value_of(&ahead, "c", b"session").unwrap(), b"s");
    eventually("the expiry", || value_of(store, "c", b"session").is_none());
    assert_eq!(
        value_of(&behind, "c", b"session"),
        None,
        "gone for the writer too"
    );

    // A 1 s cache lock from a clock an hour ahead: by the others' clocks it ends in an hour,
    // but the cluster ends it after its second.
    store.put("c", b"page", b"v", &plain()).unwrap();
    let (_, handle) = ahead
        .get_and_lock("c", b"page", Duration::from_secs(1), false)
        .unwrap();
    assert_eq!(
        store
            .get_and_lock("c", b"page", Duration::from_secs(30), false)
            .unwrap_err()
            .code(),
        ErrorCode::ObjectLocked
    );
    eventually("the lock's end", || {
        store
            .get_and_lock("c", b"page", Duration::from_secs(30), false)
            .is_ok()
    });
    // The first holder's handle no longer unlocks anything.
    assert_eq!(
        ahead
            .put_and_unlock("c", b"page", b"late", handle, Ttl::ContainerDefault)
            .unwrap_err()
            .code(),
        ErrorCode::InvalidLockHandle
    );

    // A lease's break period, begun by a clock an hour behind, ends by the cluster's timer.
    store.put("c", b"job", b"v", &plain()).unwrap();
    let lease = store
        .acquire_lease("c", b"job", &LeaseRequest::infinite())
        .unwrap();
    assert_eq!(
        behind.break_lease("c", b"job", Some(1)).unwrap(),
        Duration::from_secs(1)
    );
    assert_eq!(
        ahead.lease_info("c", b"job").unwrap().state,
        LeaseState::Breaking
    );
    eventually("the break's end", || {
        store.lease_info("c", b"job").unwrap().state == LeaseState::Broken
    });
    let next = ahead
        .acquire_lease("c", b"job", &LeaseRequest::seconds(15).unwrap())
        .unwrap();
    assert!(next.fence > lease.fence);
}

#[test]
fn etcds_limits_are_invalid_arguments_naming_the_setting_to_raise() {
    let Some(fixture) = etcd() else {
        return;
    };
    let store = &fixture.store;
    store
        .create_container("c", &ContainerOptions::default())
        .unwrap();
    // Within tenure's limits (64 MiB), beyond etcd's default request size (1.5 MiB).
    let large = vec![7u8; 2 << 20];
    let error = store.put("c", b"large", &large, &plain()).unwrap_err();
    assert_eq!(error.code(), ErrorCode::InvalidArgument, "{error}");
    assert!(error.to_string().contains("--max-request-bytes"), "{error}");
    // Within tenure's 1,000 operations, beyond etcd's 128 per transaction.
    let mut batch = store.batch();
    for index in 0..200u32 {
        batch.put("c", &index.to_le_bytes(), b"v", plain());
    }
    let error = batch.commit().unwrap_err();
    assert_eq!(error.code(), ErrorCode::InvalidArgument);
    assert!(error.to_string().contains("--max-txn-ops"), "{error}");
    // Nothing of either was written.
    assert_eq!(
        store.list("c", b"", 1000, None, false).unwrap().items.len(),
        0
    );
    assert_eq!(
        store.changes(0, &ChangesOptions::default()).unwrap().len(),
        1
    );
}

#[test]
fn a_manual_clock_cannot_drive_a_cluster() {
    let Some(endpoints) = tenure_testkit::etcd_cluster::endpoints() else {
        return;
    };
    let options = StoreOptions {
        clock: Arc::new(tenure::ManualClock::new(1)),
        ..StoreOptions::default()
    };
    let error = tenure_etcd::open(&format!("etcd://{endpoints}/manual"), options)
        .err()
        .expect("refused");
    assert_eq!(error.code(), ErrorCode::InvalidArgument);
    assert!(error.to_string().contains("`clock`"), "{error}");
}

#[test]
fn no_member_answering_is_unavailable_within_the_deadline() {
    // A port nothing listens on (bound, then closed).
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let started = std::time::Instant::now();
    let url = format!("etcd://127.0.0.1:{port}/p?timeout_ms=500&connect_timeout_ms=300");
    let error = tenure_etcd::open(&url, StoreOptions::default())
        .err()
        .expect("no cluster there");
    assert_eq!(
        (error.code(), error.status()),
        (ErrorCode::Unavailable, 503)
    );
    assert!(
        error.to_string().contains("nothing was committed"),
        "{error}"
    );
    assert!(
        started.elapsed() < Duration::from_secs(5),
        "{:?}",
        started.elapsed()
    );
}
