//! The sizes a store accepts (docs/spec.md §1, §8, §13).

/// Limits a store enforces on every input (docs/spec.md §1, §8, §13).
#[derive(Debug, Clone)]
pub struct Limits {
    pub max_key_bytes: usize,
    pub max_value_bytes: usize,
    pub max_metadata_bytes: usize,
    pub max_content_type_bytes: usize,
    pub max_batch_operations: usize,
    pub max_batch_bytes: usize,
    pub max_page_size: usize,
}

impl Default for Limits {
    fn default() -> Limits {
        Limits {
            max_key_bytes: 1024,
            max_value_bytes: 64 << 20,
            max_metadata_bytes: 8 << 10,
            max_content_type_bytes: 1024,
            max_batch_operations: 1000,
            max_batch_bytes: 64 << 20,
            max_page_size: 10_000,
        }
    }
}
