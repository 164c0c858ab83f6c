//! `Container.iterate()`: every item under a prefix, page after page.

use std::collections::VecDeque;
use std::sync::Arc;

use pyo3::prelude::*;

use crate::container::ITERATE_PAGE_SIZE;
use crate::errors::{Context, IntoPyResult};
use crate::item::{generic_alias, ItemProperties};
use crate::snapshot::SnapshotCell;
use crate::store::Handle;

/// Where an `ItemIterator` reads pages from.
pub enum Source {
    Store(Arc<Handle>),
    Snapshot(Arc<SnapshotCell>),
}

/// Iterates a listing page by page (`Container.iterate`, `Snapshot.iterate`): `Item`s with
/// `include_values=True`, else `ItemProperties`.
#[pyclass(module = "tenure")]
pub struct ItemIterator {
    source: Source,
    container: String,
    prefix: Vec<u8>,
    include_values: bool,
    continuation: Option<String>,
    buffered: VecDeque<tenure::Item>,
    finished: bool,
}

impl ItemIterator {
    pub fn new(
        source: Source,
        container: String,
        prefix: Vec<u8>,
        include_values: bool,
    ) -> ItemIterator {
        ItemIterator {
            source,
            container,
            prefix,
            include_values,
            continuation: None,
            buffered: VecDeque::new(),
            finished: false,
        }
    }
}

#[pymethods]
impl ItemIterator {
    fn __iter__(slf: PyRef<'_, Self>) -> PyRef<'_, Self> {
        slf
    }

    #[classmethod]
    fn __class_getitem__<'py>(
        cls: &Bound<'py, pyo3::types::PyType>,
        item: &Bound<'py, PyAny>,
    ) -> PyResult<Bound<'py, PyAny>> {
        generic_alias(cls, item)
    }

    fn __next__<'py>(&mut self, py: Python<'py>) -> PyResult<Option<Bound<'py, PyAny>>> {
        // Pages may be short (even empty) while a continuation still comes back.
        while self.buffered.is_empty() && !self.finished {
            let (container, prefix, continuation) =
                (&self.container, &self.prefix, self.continuation.as_deref());
            let include_values = self.include_values;
            let about = Context::container(container);
            let page = match &self.source {
                Source::Store(handle) => handle.run_in(py, &about, |store| {
                    store.list(
                        container,
                        prefix,
                        ITERATE_PAGE_SIZE,
                        continuation,
                        include_values,
                    )
                })?,
                Source::Snapshot(cell) => py
                    .detach(|| {
                        crate::snapshot::with_snapshot(cell, |snapshot| {
                            snapshot.list(
                                container,
                                prefix,
                                ITERATE_PAGE_SIZE,
                                continuation,
                                include_values,
                            )
                        })
                    })
                    .py_result_in(py, &crate::snapshot::context(cell, about))?,
            };
            self.finished = page.continuation.is_none();
            self.continuation = page.continuation;
            self.buffered.extend(page.items);
        }
        let include_values = self.include_values;
        self.buffered
            .pop_front()
            .map(|item| ItemProperties::object(py, item, include_values))
            .transpose()
    }
}
