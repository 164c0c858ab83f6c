//! The container lease, container and item metadata, get_if_newer, compaction, snapshot listing
//! and change-wait exports, called from Rust the way C calls them (so `scripts/asan-tests.sh`
//! runs them under AddressSanitizer): the happy paths, and bad inputs that must fail with
//! nothing stored changed.

use std::ffi::{c_char, CStr, CString};
use std::ptr::{null, null_mut};

use tenure_ffi::*;

mod common;
use common::Fixture;

fn text(bytes: &[c_char]) -> String {
    // SAFETY: the library NUL-terminates every fixed-size text output.
    unsafe { CStr::from_ptr(bytes.as_ptr()) }
        .to_str()
        .unwrap()
        .to_owned()
}

fn new_lease() -> tenure_lease {
    tenure_lease {
        id: [0; TENURE_LEASE_ID_SIZE],
        fence: 0,
    }
}

fn new_lease_info() -> tenure_lease_info {
    tenure_lease_info {
        state: 99,
        has_id: false,
        id: [0; TENURE_LEASE_ID_SIZE],
        has_fence: false,
        fence: 0,
        has_remaining: false,
        remaining_ms: 0,
    }
}

fn no_conditions() -> tenure_conditions {
    tenure_conditions {
        if_match: null(),
        if_none_match: null(),
        has_if_version: false,
        if_version: 0,
        has_if_modified_since: false,
        if_modified_since_us: 0,
        has_if_unmodified_since: false,
        if_unmodified_since_us: 0,
        lease_id: null(),
        lock_handle: null(),
        has_ttl: false,
        ttl_seconds: 0,
    }
}

const ITEMS: &CStr = c"items";
const OTHER_ID: &CStr = c"3f2504e0-4f89-11d3-9a0c-0305e82c3301";

#[test]
fn a_leased_container_is_deleted_only_with_its_lease_id() {
    let fixture = Fixture::new("test", "container-lease");
    let store = fixture.store;
    let mut lease = new_lease();
    let mut info = new_lease_info();
    // SAFETY: valid arguments throughout.
    unsafe {
        assert_eq!(
            tenure_container_create(store, c"leased".as_ptr(), false, 0),
            TENURE_OK
        );
        assert_eq!(
            tenure_container_lease_acquire(store, c"leased".as_ptr(), 15, null(), &mut lease),
            TENURE_OK
        );
        assert_eq!(
            tenure_container_delete(store, c"leased".as_ptr(), null()),
            TENURE_ERR_LEASE_ID_MISSING
        );
        let mut conditions = no_conditions();
        conditions.lease_id = OTHER_ID.as_ptr();
        assert_eq!(
            tenure_container_delete(store, c"leased".as_ptr(), &conditions),
            TENURE_ERR_LEASE_ID_MISMATCH_WITH_CONTAINER_OPERATION
        );
        assert_eq!(
            tenure_container_lease_get_info(store, c"leased".as_ptr(), &mut info),
            TENURE_OK
        );
        assert_eq!(info.state, TENURE_LEASE_LEASED);
        assert_eq!(text(&info.id), text(&lease.id));
        let id = CString::new(text(&lease.id)).unwrap();
        let mut renewed = new_lease();
        assert_eq!(
            tenure_container_lease_renew(store, c"leased".as_ptr(), id.as_ptr(), &mut renewed),
            TENURE_OK
        );
        assert_eq!(renewed.fence, lease.fence);
        let mut left = u64::MAX;
        assert_eq!(
            tenure_container_lease_break(store, c"leased".as_ptr(), 0, &mut left),
            TENURE_OK
        );
        assert_eq!(left, 0);
        assert_eq!(
            tenure_container_lease_acquire(
                store,
                c"leased".as_ptr(),
                -1,
                OTHER_ID.as_ptr(),
                &mut lease
            ),
            TENURE_OK
        );
        assert_eq!(text(&lease.id), OTHER_ID.to_str().unwrap());
        assert_eq!(
            tenure_container_delete(store, c"leased".as_ptr(), &conditions),
            TENURE_OK
        );
    }
}

#[test]
fn bad_container_lease_and_metadata_arguments_change_nothing() {
    let fixture = Fixture::new("test", "bad-container");
    let store = fixture.store;
    let before = fixture.version();
    let bad_utf8: &[u8] = b"\xff\xfe\0";
    let bad = bad_utf8.as_ptr().cast::<c_char>();
    let mut lease = new_lease();
    let mut info = new_lease_info();
    let mut left = 0u64;
    let entry = tenure_metadata_entry {
        name: c"a".as_ptr(),
        value: c"1".as_ptr(),
    };
    let duplicate = [entry_of(c"a", c"1"), entry_of(c"a", c"2")];
    let mut etag: [c_char; TENURE_ETAG_SIZE] = [0; TENURE_ETAG_SIZE];
    let invalid = TENURE_ERR_INVALID_ARGUMENT;
    // SAFETY: every pointer is NULL or valid; lengths match their buffers.
    unsafe {
        for duration in [0, 14, 61, -2, i64::MAX, i64::MIN] {
            assert_eq!(
                tenure_container_lease_acquire(store, ITEMS.as_ptr(), duration, null(), &mut lease),
                invalid
            );
        }
        assert_eq!(
            tenure_container_lease_acquire(store, null(), 15, null(), &mut lease),
            invalid
        );
        assert_eq!(
            tenure_container_lease_acquire(store, bad, 15, null(), &mut lease),
            invalid
        );
        assert_eq!(
            tenure_container_lease_acquire(store, ITEMS.as_ptr(), 15, bad, &mut lease),
            invalid
        );
        assert_eq!(
            tenure_container_lease_acquire(store, ITEMS.as_ptr(), 15, null(), null_mut()),
            invalid
        );
        assert_eq!(
            tenure_container_lease_renew(store, ITEMS.as_ptr(), c"nope".as_ptr(), &mut lease),
            invalid
        );
        assert_eq!(
            tenure_container_lease_change(
                store,
                ITEMS.as_ptr(),
                OTHER_ID.as_ptr(),
                null(),
                &mut lease
            ),
            invalid
        );
        assert_eq!(
            tenure_container_lease_release(store, ITEMS.as_ptr(), null()),
            invalid
        );
        for period in [61, -2, i64::MAX] {
            assert_eq!(
                tenure_container_lease_break(store, ITEMS.as_ptr(), period, &mut left),
                invalid
            );
        }
        assert_eq!(
            tenure_container_lease_get_info(store, ITEMS.as_ptr(), null_mut()),
            invalid
        );
        assert_eq!(
            tenure_container_lease_get_info(null(), ITEMS.as_ptr(), &mut info),
            invalid
        );
        assert_eq!(
            tenure_container_set_metadata(
                store,
                ITEMS.as_ptr(),
                null(),
                1,
                null(),
                etag.as_mut_ptr()
            ),
            invalid
        );
        assert_eq!(
            tenure_container_set_metadata(
                store,
                ITEMS.as_ptr(),
                &entry,
                usize::MAX,
                null(),
                etag.as_mut_ptr()
            ),
            invalid
        );
        assert_eq!(
            tenure_container_set_metadata(
                store,
                ITEMS.as_ptr(),
                duplicate.as_ptr(),
                2,
                null(),
                etag.as_mut_ptr()
            ),
            invalid
        );
        let bad_entry = tenure_metadata_entry {
            name: bad,
            value: c"x".as_ptr(),
        };
        assert_eq!(
            tenure_set_metadata(
                store,
                ITEMS.as_ptr(),
                b"k".as_ptr(),
                1,
                &bad_entry,
                1,
                null(),
                null_mut()
            ),
            invalid
        );
        assert_eq!(
            tenure_set_properties(
                store,
                ITEMS.as_ptr(),
                b"k".as_ptr(),
                0,
                null(),
                &entry,
                1,
                null(),
                null_mut()
            ),
            invalid
        );
        let mut changed = false;
        assert_eq!(
            tenure_store_wait_for_changes(store, 0, 86_400_001, &mut changed),
            invalid
        );
        // A lease action refused by state changes nothing either.
        assert_eq!(
            tenure_container_lease_break(store, ITEMS.as_ptr(), 0, &mut left),
            TENURE_ERR_LEASE_NOT_PRESENT_WITH_LEASE_OPERATION
        );
    }
    assert_eq!(fixture.version(), before);
}

fn entry_of(name: &'static CStr, value: &'static CStr) -> tenure_metadata_entry {
    tenure_metadata_entry {
        name: name.as_ptr(),
        value: value.as_ptr(),
    }
}

#[test]
fn set_metadata_with_a_stale_etag_reports_the_current_one_and_get_if_newer_follows_versions() {
    let fixture = Fixture::new("test", "metadata");
    let store = fixture.store;
    let key = b"doc";
    let mut stale: [c_char; TENURE_ETAG_SIZE] = [0; TENURE_ETAG_SIZE];
    let mut fresh: [c_char; TENURE_ETAG_SIZE] = [0; TENURE_ETAG_SIZE];
    let entry = entry_of(c"color", c"blue");
    // SAFETY: valid arguments throughout.
    unsafe {
        assert_eq!(
            tenure_put(
                store,
                ITEMS.as_ptr(),
                key.as_ptr(),
                3,
                b"body".as_ptr(),
                4,
                null(),
                stale.as_mut_ptr()
            ),
            TENURE_OK
        );
        assert_eq!(
            tenure_set_properties(
                store,
                ITEMS.as_ptr(),
                key.as_ptr(),
                3,
                c"text/plain".as_ptr(),
                &entry,
                1,
                null(),
                fresh.as_mut_ptr()
            ),
            TENURE_OK
        );
        let mut conditions = no_conditions();
        conditions.if_match = stale.as_ptr();
        assert_eq!(
            tenure_set_metadata(
                store,
                ITEMS.as_ptr(),
                key.as_ptr(),
                3,
                &entry,
                1,
                &conditions,
                null_mut()
            ),
            TENURE_ERR_CONDITION_NOT_MET
        );
        let mut current: [c_char; TENURE_ETAG_SIZE] = [0; TENURE_ETAG_SIZE];
        let mut has = false;
        assert_eq!(
            tenure_last_error_etag(current.as_mut_ptr(), &mut has),
            TENURE_OK
        );
        assert!(has);
        assert_eq!(text(&current), text(&fresh));

        let mut item = null_mut();
        assert_eq!(
            tenure_get_item(store, ITEMS.as_ptr(), key.as_ptr(), 3, null(), &mut item),
            TENURE_OK
        );
        let mut buffer = [0u8; 64];
        let mut length = 0usize;
        assert_eq!(
            tenure_item_metadata(item, buffer.as_mut_ptr(), buffer.len(), &mut length),
            TENURE_OK
        );
        assert_eq!(&buffer[..length], b"color\0blue\0");
        assert_eq!(
            tenure_item_content_type(item, buffer.as_mut_ptr(), buffer.len(), &mut length),
            TENURE_OK
        );
        assert_eq!(&buffer[..length], b"text/plain");
        let mut info = std::mem::zeroed::<tenure_item_info>();
        assert_eq!(tenure_item_get_info(item, &mut info), TENURE_OK);
        assert_eq!(tenure_item_free(item), TENURE_OK);

        let mut newer = true;
        length = 99;
        assert_eq!(
            tenure_get_if_newer(
                store,
                ITEMS.as_ptr(),
                key.as_ptr(),
                3,
                info.version,
                buffer.as_mut_ptr(),
                buffer.len(),
                &mut length,
                null_mut(),
                &mut newer
            ),
            TENURE_OK
        );
        assert!(!newer);
        assert_eq!(length, 99);
        assert_eq!(
            tenure_get_if_newer(
                store,
                ITEMS.as_ptr(),
                key.as_ptr(),
                3,
                info.version - 1,
                buffer.as_mut_ptr(),
                buffer.len(),
                &mut length,
                null_mut(),
                &mut newer
            ),
            TENURE_OK
        );
        assert!(newer);
        assert_eq!(&buffer[..length], b"body");
    }
}

#[test]
fn compaction_snapshot_listing_and_waiting() {
    let fixture = Fixture::new("test", "compact");
    let store = fixture.store;
    let value = [7u8; 4096];
    // SAFETY: valid arguments throughout.
    unsafe {
        for _ in 0..60 {
            assert_eq!(
                tenure_put(
                    store,
                    ITEMS.as_ptr(),
                    b"hot".as_ptr(),
                    3,
                    value.as_ptr(),
                    value.len(),
                    null(),
                    null_mut()
                ),
                TENURE_OK
            );
        }
        let mut snapshot = null_mut();
        assert_eq!(tenure_snapshot_open(store, &mut snapshot), TENURE_OK);
        assert_eq!(
            tenure_put(
                store,
                ITEMS.as_ptr(),
                b"later".as_ptr(),
                5,
                b"x".as_ptr(),
                1,
                null(),
                null_mut()
            ),
            TENURE_OK
        );
        let mut page = null_mut();
        assert_eq!(
            tenure_snapshot_list(
                snapshot,
                ITEMS.as_ptr(),
                null(),
                0,
                10,
                null(),
                false,
                &mut page
            ),
            TENURE_OK
        );
        let mut count = 0usize;
        assert_eq!(tenure_page_count(page, &mut count), TENURE_OK);
        assert_eq!(count, 1);
        assert_eq!(tenure_page_free(page), TENURE_OK);
        // Wrong kind: a store where a snapshot is expected.
        assert_eq!(
            tenure_snapshot_list(
                store.cast(),
                ITEMS.as_ptr(),
                null(),
                0,
                10,
                null(),
                false,
                &mut page
            ),
            TENURE_ERR_INVALID_ARGUMENT
        );
        assert_eq!(tenure_snapshot_free(snapshot), TENURE_OK);
        assert_eq!(
            tenure_snapshot_list(
                snapshot,
                ITEMS.as_ptr(),
                null(),
                0,
                10,
                null(),
                false,
                &mut page
            ),
            TENURE_ERR_INVALID_ARGUMENT
        );

        let mut report = std::mem::zeroed::<tenure_compaction_report>();
        assert_eq!(tenure_store_compact(store, &mut report), TENURE_OK);
        assert!(report.segments_removed > 0 && report.bytes_removed > 0);
        let mut changed = true;
        let version = fixture.version();
        assert_eq!(
            tenure_store_wait_for_changes(store, version, 1, &mut changed),
            TENURE_OK
        );
        assert!(!changed);
        assert_eq!(
            tenure_store_wait_for_changes(store, version - 1, 0, &mut changed),
            TENURE_OK
        );
        assert!(changed);
    }
}

/// The item's content type and metadata, through an item handle.
fn properties_of(store: *mut tenure_store, key: &[u8]) -> (Vec<u8>, Vec<u8>) {
    let mut item = null_mut();
    let mut content_type = vec![0u8; 256];
    let mut metadata = vec![0u8; 256];
    let (mut type_length, mut metadata_length) = (0, 0);
    // SAFETY: valid arguments; the item handle is freed before returning.
    unsafe {
        assert_eq!(
            tenure_get_item(
                store,
                ITEMS.as_ptr(),
                key.as_ptr(),
                key.len(),
                null(),
                &mut item
            ),
            TENURE_OK
        );
        assert_eq!(
            tenure_item_content_type(
                item,
                content_type.as_mut_ptr(),
                content_type.len(),
                &mut type_length
            ),
            TENURE_OK
        );
        assert_eq!(
            tenure_item_metadata(
                item,
                metadata.as_mut_ptr(),
                metadata.len(),
                &mut metadata_length
            ),
            TENURE_OK
        );
        assert_eq!(tenure_item_free(item), TENURE_OK);
    }
    content_type.truncate(type_length);
    metadata.truncate(metadata_length);
    (content_type, metadata)
}

#[test]
fn a_write_sets_value_content_type_and_metadata_at_once_and_bad_ones_change_nothing() {
    let fixture = Fixture::new("test", "write-properties");
    let store = fixture.store;
    let entries = [entry_of(c"color", c"blue"), entry_of(c"size", c"L")];
    let mut properties = tenure_write_properties {
        content_type: c"application/json".as_ptr(),
        metadata: entries.as_ptr(),
        metadata_count: 2,
    };
    let mut etag = [0 as c_char; TENURE_ETAG_SIZE];
    let before = fixture.version();
    // SAFETY: valid arguments, and deliberately bad ones the library must reject.
    unsafe {
        assert_eq!(
            tenure_write(
                store,
                TENURE_WRITE_CREATE,
                ITEMS.as_ptr(),
                b"doc".as_ptr(),
                3,
                b"{}".as_ptr(),
                2,
                &properties,
                null(),
                etag.as_mut_ptr()
            ),
            TENURE_OK
        );
        assert_eq!(fixture.version(), before + 1);
        assert_eq!(
            properties_of(store, b"doc"),
            (
                b"application/json".to_vec(),
                b"color\0blue\0size\0L\0".to_vec()
            )
        );
        let after = fixture.version();
        let bad_utf8 = [0xffu8 as c_char, 0];
        let write = |kind: u32, properties: *const tenure_write_properties| {
            tenure_write(
                store,
                kind,
                ITEMS.as_ptr(),
                b"doc".as_ptr(),
                3,
                b"x".as_ptr(),
                1,
                properties,
                null(),
                null_mut(),
            )
        };
        assert_eq!(write(7, &properties), TENURE_ERR_INVALID_ARGUMENT);
        assert_eq!(write(TENURE_WRITE_PUT, null()), TENURE_ERR_INVALID_ARGUMENT);
        properties.content_type = bad_utf8.as_ptr();
        assert_eq!(
            write(TENURE_WRITE_PUT, &properties),
            TENURE_ERR_INVALID_ARGUMENT
        );
        properties.content_type = null();
        properties.metadata_count = usize::MAX;
        assert_eq!(
            write(TENURE_WRITE_PUT, &properties),
            TENURE_ERR_INVALID_ARGUMENT
        );
        properties.metadata = null();
        properties.metadata_count = 1;
        assert_eq!(
            write(TENURE_WRITE_PUT, &properties),
            TENURE_ERR_INVALID_ARGUMENT
        );
        assert_eq!(fixture.version(), after);

        // In a batch.
        let mut batch = null_mut();
        let mut version = 0;
        properties.metadata = entries.as_ptr();
        assert_eq!(tenure_batch_new(store, &mut batch), TENURE_OK);
        assert_eq!(
            tenure_batch_write(
                batch,
                TENURE_WRITE_REPLACE,
                ITEMS.as_ptr(),
                b"doc".as_ptr(),
                3,
                b"[]".as_ptr(),
                2,
                &properties,
                null()
            ),
            TENURE_OK
        );
        assert_eq!(tenure_batch_commit(batch, &mut version), TENURE_OK);
        assert_eq!(tenure_batch_free(batch), TENURE_OK);
        assert_eq!(
            properties_of(store, b"doc"),
            (Vec::new(), b"color\0blue\0".to_vec())
        );
    }
}

#[test]
fn a_lease_acquired_with_a_holder_reports_it() {
    let fixture = Fixture::new("test", "lease-holder");
    let store = fixture.store;
    let mut lease = new_lease();
    let mut info = new_lease_info();
    let mut holder = [0u8; TENURE_LEASE_HOLDER_MAX];
    let mut length = 0;
    let mut has = false;
    let long = CString::new("h".repeat(TENURE_LEASE_HOLDER_MAX + 1)).unwrap();
    // SAFETY: valid arguments, and deliberately bad ones the library must reject.
    unsafe {
        assert_eq!(
            tenure_put(
                store,
                ITEMS.as_ptr(),
                b"k".as_ptr(),
                1,
                b"v".as_ptr(),
                1,
                null(),
                null_mut()
            ),
            TENURE_OK
        );
        let before = fixture.version();
        assert_eq!(
            tenure_lease_acquire_with_holder(
                store,
                ITEMS.as_ptr(),
                b"k".as_ptr(),
                1,
                15,
                null(),
                long.as_ptr(),
                0,
                &mut lease
            ),
            TENURE_ERR_INVALID_ARGUMENT
        );
        assert_eq!(
            tenure_lease_acquire_with_holder(
                store,
                ITEMS.as_ptr(),
                b"k".as_ptr(),
                1,
                15,
                null(),
                null(),
                0,
                &mut lease
            ),
            TENURE_ERR_INVALID_ARGUMENT
        );
        assert_eq!(fixture.version(), before);
        assert_eq!(
            tenure_lease_acquire_with_holder(
                store,
                ITEMS.as_ptr(),
                b"k".as_ptr(),
                1,
                15,
                null(),
                c"worker-1".as_ptr(),
                0,
                &mut lease
            ),
            TENURE_OK
        );
        assert_eq!(
            tenure_lease_get_info_with_holder(
                store,
                ITEMS.as_ptr(),
                b"k".as_ptr(),
                1,
                &mut info,
                holder.as_mut_ptr(),
                holder.len(),
                &mut length,
                &mut has
            ),
            TENURE_OK
        );
        assert_eq!(info.state, TENURE_LEASE_LEASED);
        assert_eq!(text(&info.id), text(&lease.id));
        assert!(has);
        assert_eq!(&holder[..length], b"worker-1");
        assert_eq!(
            tenure_container_lease_acquire_with_holder(
                store,
                ITEMS.as_ptr(),
                -1,
                null(),
                c"job".as_ptr(),
                &mut lease
            ),
            TENURE_OK
        );
        assert_eq!(
            tenure_container_lease_get_info_with_holder(
                store,
                ITEMS.as_ptr(),
                &mut info,
                holder.as_mut_ptr(),
                2,
                &mut length,
                &mut has
            ),
            TENURE_ERR_BUFFER_TOO_SMALL
        );
        assert_eq!(length, 3);
        assert_eq!(
            tenure_container_lease_get_info_with_holder(
                store,
                ITEMS.as_ptr(),
                &mut info,
                holder.as_mut_ptr(),
                holder.len(),
                &mut length,
                &mut has
            ),
            TENURE_OK
        );
        assert!(has && &holder[..length] == b"job");
        assert_eq!(
            tenure_container_lease_release(store, ITEMS.as_ptr(), lease.id.as_ptr()),
            TENURE_OK
        );
    }
}
