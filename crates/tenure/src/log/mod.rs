//! The append-only, checksummed log that every tenure change is written to.
//!
//! Appenders reserve space and a version in one compare-and-swap on a 128-bit
//! `(next version, tail)` word, copy their record into a mapped, preallocated segment, then
//! mark it complete. A record is acknowledged only once every earlier record is complete (and,
//! in `sync` mode, synced), so cutting the log at its first bad record can never drop an
//! acknowledged write. See docs/design.md for the byte layout and the commit protocol.

mod anchor;
mod append;
mod completion;
mod core;
mod flush;
mod follow;
mod group_commit;
mod handle;
pub(crate) mod placement;
mod preparer;
mod reader;
pub(crate) mod readers;
pub mod record;
mod recovery;
mod reservation;
mod ring;
mod scan;
pub(crate) mod segment;
mod space;
mod staging;
pub mod superblock;

pub use self::core::{
    Durability, Log, LogOptions, Reservation, MAXIMUM_SEGMENT_SIZE_BYTES,
    MINIMUM_SEGMENT_SIZE_BYTES,
};
pub use anchor::LogAnchor;
pub(crate) use reader::{LogReader, RecordBytes};
pub use ring::IoUringUse;
pub use scan::RecoveredRecord;
pub use space::SpaceUse;
