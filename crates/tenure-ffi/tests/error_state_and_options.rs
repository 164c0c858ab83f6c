//! The error state (a failure sets it, a success clears it, reading never changes it), the
//! options structs' size rules, and the zero-copy reads, called from Rust the way C calls them
//! (so `scripts/asan-tests.sh` runs them under AddressSanitizer).

use std::ffi::{c_void, CStr};
use std::ptr::{null, null_mut};

use tenure_ffi::*;

mod common;
use common::Fixture;

impl Fixture {
    fn write(
        &self,
        key: &[u8],
        value: &[u8],
        options: *const tenure_write_options,
    ) -> tenure_status {
        // SAFETY: a live store, valid slices, `options` NULL or valid.
        unsafe {
            tenure_store_write(
                self.store,
                c"items".as_ptr(),
                key.as_ptr(),
                key.len(),
                value.as_ptr(),
                value.len(),
                options,
                null_mut(),
            )
        }
    }
}

/// The whole message: a size query, then a read of that size.
fn message() -> String {
    let mut length = 0;
    // SAFETY: a size query.
    let status = unsafe { tenure_last_error_message(null_mut(), 0, &mut length) };
    if length == 0 {
        assert_eq!(status, TENURE_OK);
        return String::new();
    }
    assert_eq!(status, TENURE_ERR_BUFFER_TOO_SMALL);
    let mut buffer = vec![0u8; length];
    // SAFETY: `length` bytes.
    let status = unsafe { tenure_last_error_message(buffer.as_mut_ptr(), length, &mut length) };
    assert_eq!(status, TENURE_OK);
    String::from_utf8(buffer).unwrap()
}

fn write_options() -> tenure_write_options {
    tenure_write_options {
        struct_size: std::mem::size_of::<tenure_write_options>() as u32,
        kind: TENURE_WRITE_PUT,
        conditions: null(),
        content_type: null(),
        metadata: null(),
        metadata_count: 0,
    }
}

fn etag_text(etag: &tenure_etag) -> String {
    // SAFETY: NUL-terminated by the library.
    unsafe { CStr::from_ptr(etag.text.as_ptr()) }
        .to_str()
        .unwrap()
        .to_owned()
}

#[test]
fn reading_the_error_state_never_changes_it() {
    let fixture = Fixture::new("options", "state");
    // SAFETY: a NULL key with a length: refused before anything is read.
    let status = unsafe {
        tenure_store_write(
            fixture.store,
            c"items".as_ptr(),
            null(),
            3,
            null(),
            0,
            null(),
            null_mut(),
        )
    };
    assert_eq!(status, TENURE_ERR_INVALID_ARGUMENT);
    let first = message();
    assert!(
        first.starts_with("InvalidArgument") && first.contains("`key`"),
        "{first}"
    );
    let mut small = [0u8; 4];
    let mut length = 0;
    // SAFETY: a 4-byte buffer.
    let status = unsafe { tenure_last_error_message(small.as_mut_ptr(), 4, &mut length) };
    assert_eq!((status, length), (TENURE_ERR_BUFFER_TOO_SMALL, first.len()));
    assert_eq!(message(), first);
    assert_eq!(tenure_last_error_status(), TENURE_ERR_INVALID_ARGUMENT);

    // A precondition failure: its current ETag survives size queries.
    let mut first_etag = std::mem::MaybeUninit::<tenure_etag>::uninit();
    // SAFETY: valid arguments; the ETag is written on success.
    let first_etag = unsafe {
        assert_eq!(
            tenure_store_write(
                fixture.store,
                c"items".as_ptr(),
                b"k".as_ptr(),
                1,
                b"1".as_ptr(),
                1,
                null(),
                first_etag.as_mut_ptr()
            ),
            TENURE_OK
        );
        first_etag.assume_init()
    };
    assert_eq!(fixture.write(b"k", b"2", null()), TENURE_OK);
    let mut conditions: tenure_conditions = unsafe { std::mem::zeroed() };
    conditions.if_match = first_etag.text.as_ptr();
    let mut options = write_options();
    options.conditions = &conditions;
    assert_eq!(
        fixture.write(b"k", b"3", &options),
        TENURE_ERR_CONDITION_NOT_MET
    );
    assert!(message().contains("ConditionNotMet"));
    let _ = message();
    let mut current = std::mem::MaybeUninit::<tenure_etag>::uninit();
    let mut has = false;
    // SAFETY: valid out-pointers.
    assert_eq!(
        unsafe { tenure_last_error_current_etag(current.as_mut_ptr(), &mut has) },
        TENURE_OK
    );
    assert!(has);
    // SAFETY: written because `has`.
    let current = unsafe { current.assume_init() };
    assert_ne!(etag_text(&current), etag_text(&first_etag));

    // A success clears it; a reader's own failure does not set it.
    assert_eq!(fixture.version(), fixture.version());
    assert_eq!(tenure_last_error_status(), TENURE_OK);
    assert_eq!(message(), "");
    // SAFETY: NULL out-pointers: refused by the reader, not recorded.
    assert_eq!(
        unsafe { tenure_last_error_current_etag(null_mut(), null_mut()) },
        TENURE_ERR_INVALID_ARGUMENT
    );
    assert_eq!(tenure_last_error_status(), TENURE_OK);
}

#[test]
fn options_structs_are_checked_by_size() {
    let fixture = Fixture::new("options", "sizes");
    let before = fixture.version();
    let mut options = write_options();
    options.struct_size = 0;
    assert_eq!(
        fixture.write(b"k", b"v", &options),
        TENURE_ERR_INVALID_ARGUMENT
    );
    assert!(message().contains("TENURE_WRITE_OPTIONS_INIT"));
    options.struct_size = 8;
    assert_eq!(
        fixture.write(b"k", b"v", &options),
        TENURE_ERR_INVALID_ARGUMENT
    );
    // A newer caller's struct: unknown bytes zero are accepted, set ones refused by name.
    #[repr(C)]
    struct Newer {
        known: tenure_write_options,
        added: u64,
    }
    let mut newer = Newer {
        known: write_options(),
        added: 7,
    };
    newer.known.struct_size = std::mem::size_of::<Newer>() as u32;
    assert_eq!(
        fixture.write(b"k", b"v", &newer.known),
        TENURE_ERR_INVALID_ARGUMENT
    );
    assert!(message().contains("does not know"));
    assert_eq!(fixture.version(), before);
    newer.added = 0;
    assert_eq!(fixture.write(b"k", b"v", &newer.known), TENURE_OK);
    assert_eq!(fixture.version(), before + 1);
}

extern "C" fn count(context: *mut c_void, view: *const tenure_view) {
    // SAFETY: the test's counter and a view valid during the call.
    unsafe {
        *context.cast::<usize>() += (*view).value_length;
    }
}

#[test]
fn views_lend_the_mapped_bytes() {
    let fixture = Fixture::new("options", "views");
    let value = vec![9u8; 3000];
    assert_eq!(fixture.write(b"k", &value, null()), TENURE_OK);
    let mut seen = 0usize;
    // SAFETY: valid arguments; the callback reads during the call.
    let status = unsafe {
        tenure_store_get_with(
            fixture.store,
            c"items".as_ptr(),
            b"k".as_ptr(),
            1,
            null(),
            Some(count),
            (&mut seen as *mut usize).cast(),
        )
    };
    assert_eq!((status, seen), (TENURE_OK, 3000));
    let mut snapshot = null_mut();
    // SAFETY: valid arguments.
    assert_eq!(
        unsafe { tenure_snapshot_open(fixture.store, &mut snapshot) },
        TENURE_OK
    );
    let mut view = std::mem::MaybeUninit::<tenure_view>::uninit();
    // SAFETY: valid arguments; the view is written on success.
    let view = unsafe {
        assert_eq!(
            tenure_snapshot_get_view(
                snapshot,
                c"items".as_ptr(),
                b"k".as_ptr(),
                1,
                null(),
                view.as_mut_ptr()
            ),
            TENURE_OK
        );
        view.assume_init()
    };
    for round in 0..60u8 {
        assert_eq!(fixture.write(b"k", &[round; 3000], null()), TENURE_OK);
    }
    let mut report = std::mem::MaybeUninit::<tenure_compaction_report>::uninit();
    // SAFETY: valid arguments.
    let report = unsafe {
        assert_eq!(
            tenure_store_compact(fixture.store, report.as_mut_ptr()),
            TENURE_OK
        );
        report.assume_init()
    };
    assert!(report.deferred_by_snapshot && report.segments_removed == 0);
    // SAFETY: lent until the snapshot is freed.
    assert_eq!(
        unsafe { std::slice::from_raw_parts(view.value, view.value_length) },
        &value[..]
    );
    // SAFETY: the handle from tenure_snapshot_open.
    assert_eq!(unsafe { tenure_snapshot_free(snapshot) }, TENURE_OK);
}

#[test]
fn statuses_are_an_enum_with_their_names() {
    assert_eq!(TENURE_ERR_CONDITION_NOT_MET as u32, 400);
    // SAFETY: static strings.
    let name = |number: u32| {
        unsafe { CStr::from_ptr(tenure_status_name(number)) }
            .to_str()
            .unwrap()
    };
    assert_eq!(name(400), "ConditionNotMet");
    assert_eq!(name(12345), "Unknown");
    assert_eq!(tenure_status_http(12345), 0);
    assert_eq!(tenure_status_http(TENURE_ERR_BUSY as u32), 503);
}
