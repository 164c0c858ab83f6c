//! A batch's operations (docs/spec.md §8), collected before a backend commits them: each
//! operation's key and value in one byte arena, containers shared between neighbours.

use std::sync::Arc;

use crate::backend::options::WriteOptions;
use crate::error::{Error, Result};
use crate::rules::conditions::WriteKind;
use crate::rules::limits::Limits;
use crate::rules::validate;

pub enum Operation {
    Write {
        kind: WriteKind,
        /// Shared with the operation before it when that names the same container, so a batch
        /// of writes to one container holds its name once.
        container: Arc<str>,
        key: Span,
        /// `None` deletes.
        value: Option<Span>,
        options: WriteOptions,
    },
    Check {
        container: Arc<str>,
        key: Span,
        options: WriteOptions,
    },
}

/// Where an operation's key or value is in the batch's byte arena.
#[derive(Clone, Copy)]
pub struct Span {
    start: usize,
    length: usize,
}

impl Span {
    pub fn of(self, bytes: &[u8]) -> &[u8] {
        &bytes[self.start..self.start + self.length]
    }
}

impl Operation {
    pub fn container(&self) -> Arc<str> {
        match self {
            Operation::Write { container, .. } | Operation::Check { container, .. } => {
                Arc::clone(container)
            }
        }
    }

    /// The operation's container and key (`bytes`: the batch's arena).
    pub fn target<'a>(&'a self, bytes: &'a [u8]) -> (&'a str, &'a [u8]) {
        match self {
            Operation::Write { container, key, .. } | Operation::Check { container, key, .. } => {
                (container, key.of(bytes))
            }
        }
    }

    pub fn container_name(&self) -> &str {
        match self {
            Operation::Write { container, .. } | Operation::Check { container, .. } => container,
        }
    }
}

/// A batch's operations, in order: what `Batch` collects and a backend commits.
#[derive(Default)]
pub struct BatchOperations {
    operations: Vec<Operation>,
    /// Every operation's key and value, one after another: one growing buffer instead of two
    /// allocations per operation.
    bytes: Vec<u8>,
}

impl BatchOperations {
    /// A check: its conditions, lease id or lock handle, without a write.
    pub fn check(&mut self, container: &str, key: &[u8], options: WriteOptions) {
        let container = self.shared_container_name(container);
        let key = self.append_bytes(key);
        self.operations.push(Operation::Check {
            container,
            key,
            options,
        });
    }

    /// A write of kind `kind`; `value` is `None` for a delete.
    pub fn write(
        &mut self,
        kind: WriteKind,
        container: &str,
        key: &[u8],
        value: Option<&[u8]>,
        options: WriteOptions,
    ) {
        let container = self.shared_container_name(container);
        let key = self.append_bytes(key);
        let value = value.map(|value| self.append_bytes(value));
        self.operations.push(Operation::Write {
            kind,
            container,
            key,
            value,
            options,
        });
    }

    /// The previous operation's container name when it is the same, else a new one.
    fn shared_container_name(&self, container: &str) -> Arc<str> {
        match self.operations.last() {
            Some(previous) if previous.container_name() == container => previous.container(),
            _ => Arc::from(container),
        }
    }

    fn append_bytes(&mut self, bytes: &[u8]) -> Span {
        let span = Span {
            start: self.bytes.len(),
            length: bytes.len(),
        };
        self.bytes.extend_from_slice(bytes);
        span
    }

    pub fn operations(&self) -> &[Operation] {
        &self.operations
    }

    /// The arena the operations' spans point into.
    pub fn bytes(&self) -> &[u8] {
        &self.bytes
    }

    /// `error` as the failure of operation `index`: what a failed batch reports.
    pub fn failed(&self, index: usize, error: Error) -> Error {
        Error::BatchFailed {
            index,
            error: Box::new(error),
            operation_count: self.operations.len(),
        }
    }

    /// Step 1 of a batch (docs/spec.md §8), before anything is looked up: its size, then each
    /// operation's arguments (a failure names the operation), then its bytes.
    pub fn validate(&self, limits: &Limits) -> Result<()> {
        if self.operations.is_empty() {
            return Err(Error::invalid(
                "batch",
                "a batch needs at least one operation",
            ));
        }
        if self.operations.len() > limits.max_batch_operations {
            return Err(Error::invalid(
                "batch",
                format!(
                    "at most {} operations, got {}",
                    limits.max_batch_operations,
                    self.operations.len()
                ),
            ));
        }
        let mut total_bytes = 0usize;
        for (index, operation) in self.operations.iter().enumerate() {
            let (container, key) = operation.target(&self.bytes);
            let checked =
                validate::container_name(container).and_then(|()| validate::key(key, limits));
            let checked = checked.and_then(|()| match operation {
                Operation::Write { value, options, .. } => {
                    let value = value.map_or(&[][..], |value| value.of(&self.bytes));
                    total_bytes += key.len() + value.len();
                    validate::value(value, limits)
                        .and_then(|()| validate::metadata(&options.metadata, limits))
                        .and_then(|()| {
                            validate::content_type(options.content_type.as_deref(), limits)
                        })
                        .and_then(|()| options.ttl.validate().map(|_| ()))
                }
                Operation::Check { .. } => Ok(()),
            });
            checked.map_err(|error| self.failed(index, error))?;
        }
        if total_bytes > limits.max_batch_bytes {
            return Err(Error::invalid(
                "batch",
                format!(
                    "at most {} bytes of keys and values, got {total_bytes}",
                    limits.max_batch_bytes
                ),
            ));
        }
        Ok(())
    }
}
