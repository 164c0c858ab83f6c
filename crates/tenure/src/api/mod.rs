//! The public API: [`Store`], [`Snapshot`] and [`Batch`], each operation an explicit method
//! that reaches the store's backend (`backend/`) through one trait. The behaviour of every
//! method is docs/spec.md's; the section is named where it matters.

mod batch;
mod snapshot;
mod store;

pub use batch::Batch;
pub use snapshot::Snapshot;
pub use store::Store;
