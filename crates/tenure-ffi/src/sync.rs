//! The atomics of the handle registry's slot protocol (`gate`), through one module, so that the
//! same code runs under shuttle's randomized scheduler in tests
//! (`cargo test -p tenure-ffi --features shuttle --lib shuttle_`). With the feature on, these
//! types only work inside `shuttle::check_*`: build it for those tests alone.

#[cfg(not(feature = "shuttle"))]
pub(crate) use std::sync::atomic::{fence, AtomicU64, Ordering};

#[cfg(feature = "shuttle")]
pub(crate) use shuttle::sync::atomic::{fence, AtomicU64, Ordering};
