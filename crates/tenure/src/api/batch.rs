//! Batches (docs/spec.md §8): operations on any items of any containers, applied in order,
//! each seeing the ones before it, committed all or nothing under one version.

use crate::backend::batch::BatchOperations;
use crate::backend::options::WriteOptions;
use crate::backend::Backend;
use crate::error::Result;
use crate::rules::conditions::{Conditions, WriteKind};
use crate::types::Version;

/// A batch under construction ([`Store::batch`](crate::Store::batch)). Nothing happens until
/// [`commit`](Batch::commit).
pub struct Batch<'store> {
    backend: &'store dyn Backend,
    operations: BatchOperations,
}

impl<'store> Batch<'store> {
    pub(crate) fn new(backend: &'store dyn Backend) -> Batch<'store> {
        Batch {
            backend,
            operations: BatchOperations::default(),
        }
    }

    /// Writes the item, creating or replacing it.
    pub fn put(
        &mut self,
        container: &str,
        key: &[u8],
        value: &[u8],
        options: WriteOptions,
    ) -> &mut Self {
        self.operations
            .write(WriteKind::Put, container, key, Some(value), options);
        self
    }

    /// Writes the item only if it does not exist (`AlreadyExists` otherwise).
    pub fn create(
        &mut self,
        container: &str,
        key: &[u8],
        value: &[u8],
        options: WriteOptions,
    ) -> &mut Self {
        self.operations
            .write(WriteKind::Create, container, key, Some(value), options);
        self
    }

    /// Writes the item only if it exists (`NotFound` otherwise).
    pub fn replace(
        &mut self,
        container: &str,
        key: &[u8],
        value: &[u8],
        options: WriteOptions,
    ) -> &mut Self {
        self.operations
            .write(WriteKind::Replace, container, key, Some(value), options);
        self
    }

    /// Deletes the item (`NotFound` when it does not exist).
    pub fn delete(&mut self, container: &str, key: &[u8], options: WriteOptions) -> &mut Self {
        self.operations
            .write(WriteKind::Delete, container, key, None, options);
        self
    }

    /// Asserts conditions (with none: that the item exists) without writing.
    pub fn check(&mut self, container: &str, key: &[u8], conditions: Conditions) -> &mut Self {
        self.check_with(container, key, WriteOptions::with_conditions(conditions))
    }

    /// A check that also names the item's lease id or lock handle (`options.conditions`,
    /// `lease_id`, `lock_handle`; the other fields are ignored).
    pub fn check_with(&mut self, container: &str, key: &[u8], options: WriteOptions) -> &mut Self {
        self.operations.check(container, key, options);
        self
    }

    /// How many operations the batch holds.
    pub fn len(&self) -> usize {
        self.operations.operations().len()
    }

    pub fn is_empty(&self) -> bool {
        self.operations.operations().is_empty()
    }

    /// Commits every operation or none. Returns the batch's version (every written item's new
    /// ETag). On failure, `Error::BatchFailed { index, error }` names the first operation that
    /// failed; the others report `FailedDependency`.
    pub fn commit(self) -> Result<Version> {
        self.backend.commit_batch(&self.operations)
    }
}
