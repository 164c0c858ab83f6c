//! The vocabulary every layer shares: the store-wide version and the ETag derived from it,
//! shown as `"0x00000000000004D2"` (docs/spec.md §1).

use std::fmt;

/// The store-wide commit counter. Every committed change takes the next one.
pub type Version = u64;

/// An item's or container's ETag: the version of its last write, formatted as a quoted
/// 16-digit upper-case hexadecimal number.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct ETag(pub Version);

impl ETag {
    pub fn version(self) -> Version {
        self.0
    }

    /// The ETag as text, with its quotes: `"0x00000000000004D2"`.
    pub fn to_text(self) -> String {
        self.to_string()
    }
}

impl fmt::Display for ETag {
    fn fmt(&self, formatter: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(formatter, "\"0x{:016X}\"", self.0)
    }
}
