//! The ground floor: what every layer may use and that knows nothing of tenure — atomics
//! behind a shuttle facade, the slot arena, zeroed arrays in huge pages, background threads
//! and their priorities, fork detection, prefetch hints, and handing free heap back.

pub(crate) mod arena;
pub(crate) mod background;
pub(crate) mod fork;
pub(crate) mod sync;
pub(crate) mod zeroed_array;

/// Hands the heap's free pages back to the system (glibc's `malloc_trim`); elsewhere a
/// no-op. Why: a compaction frees the many small allocations of the versions it replaced all
/// at once, and glibc keeps such memory in its free lists, resident, since it lies between
/// allocations still in use; only a trim gives those pages back. It walks the heap, so it is
/// for the end of a large pass, not for the common path.
pub(crate) fn release_free_heap() {
    #[cfg(all(target_os = "linux", target_env = "gnu"))]
    // SAFETY: `malloc_trim` takes no pointers and may be called from any thread.
    unsafe {
        libc::malloc_trim(0);
    }
}

/// Starts loading the cache line at `pointer` (any address: a prefetch never faults).
pub(crate) fn prefetch<T>(pointer: *const T) {
    #[cfg(target_arch = "x86_64")]
    // SAFETY: a prefetch reads nothing the program sees and cannot fault.
    unsafe {
        std::arch::x86_64::_mm_prefetch::<{ std::arch::x86_64::_MM_HINT_T0 }>(pointer.cast());
    }
    #[cfg(not(target_arch = "x86_64"))]
    let _ = pointer;
}
