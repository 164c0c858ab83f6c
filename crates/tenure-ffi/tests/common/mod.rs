//! What the FFI test files share: a store opened through the C ABI with one container,
//! `items`, closed and removed when the fixture drops.

use std::ffi::CString;
use std::ptr::null_mut;

use tenure_ffi::*;

pub struct Fixture {
    pub store: *mut tenure_store,
    directory: std::path::PathBuf,
}

impl Fixture {
    /// A fresh store in a directory of its own, named after the test file and `name`.
    pub fn new(file: &str, name: &str) -> Fixture {
        let directory =
            std::env::temp_dir().join(format!("tenure-ffi-{file}-{name}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&directory);
        let path = CString::new(directory.to_str().unwrap()).unwrap();
        let options = tenure_store_options {
            durability: 1,
            segment_size_bytes: 64 << 10,
            disable_background_compaction: true,
        };
        let mut store = null_mut();
        // SAFETY: valid arguments.
        assert_eq!(
            unsafe { tenure_store_open(path.as_ptr(), &options, &mut store) },
            TENURE_OK
        );
        // SAFETY: a live store and a NUL-terminated name.
        assert_eq!(
            unsafe { tenure_container_create(store, c"items".as_ptr(), false, 0) },
            TENURE_OK
        );
        Fixture { store, directory }
    }

    pub fn version(&self) -> u64 {
        let mut version = 0;
        // SAFETY: a live store.
        assert_eq!(
            unsafe { tenure_store_version(self.store, &mut version) },
            TENURE_OK
        );
        version
    }
}

impl Drop for Fixture {
    fn drop(&mut self) {
        // SAFETY: the store handle is live until here.
        unsafe {
            assert_eq!(tenure_store_close(self.store), TENURE_OK);
            assert_eq!(tenure_store_free(self.store), TENURE_OK);
        }
        let _ = std::fs::remove_dir_all(&self.directory);
    }
}
