//! The ground floor: what every layer may use and that knows nothing of tenure — atomics
//! behind a shuttle facade, the slot arena, zeroed arrays in huge pages, background threads
//! and their priorities, fork detection, and prefetch hints.

pub(crate) mod arena;
pub(crate) mod background;
pub(crate) mod fork;
pub(crate) mod sync;
pub(crate) mod zeroed_array;

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
