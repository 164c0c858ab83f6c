//! The engine's record payloads (inside a log record's payload; docs/design.md §4 "Engine records").
//! Every length is checked before it is trusted; a payload that passes the log's CRC but does
//! not decode is `Corruption`.

mod decode;
mod encode;
mod format;
#[cfg(test)]
mod tests;

pub use decode::{
    decode, decode_feed_items, decode_version_extras, DecodedItem, DecodedRecord, Reader,
};
pub use encode::*;
pub use format::*;
