//! `tenure._tenure`, the native part of tenure's Python module: a thin pyo3 shim over the
//! engine. It converts arguments (TypeError for a wrong type, InvalidArgument for a bad value),
//! releases the GIL around every store call, and turns engine errors into the exception tree
//! defined in `python/tenure/__init__.py`. The behaviour is the engine's; see docs/spec.md.

// Methods mirror Python signatures: one Rust parameter per keyword argument.
#![allow(clippy::too_many_arguments)]

mod batch;
mod clock;
mod container;
mod convert;
mod errors;
mod feed;
mod item;
mod item_iterator;
mod lease;
mod snapshot;
mod store;
mod update;

use pyo3::prelude::*;

#[pymodule]
#[pyo3(name = "_tenure")]
fn tenure_native(module: &Bound<'_, PyModule>) -> PyResult<()> {
    module.add_function(wrap_pyfunction!(store::open, module)?)?;
    module.add_class::<store::Store>()?;
    module.add_class::<feed::Change>()?;
    module.add_class::<feed::ChangeIterator>()?;
    module.add_class::<container::Container>()?;
    module.add_class::<item_iterator::ItemIterator>()?;
    module.add_class::<item::ItemProperties>()?;
    module.add_class::<item::Item>()?;
    module.add_class::<item::Page>()?;
    module.add_class::<item::PyLockHandle>()?;
    module.add_class::<lease::Lease>()?;
    module.add_class::<lease::LeaseInfo>()?;
    module.add_class::<snapshot::Snapshot>()?;
    module.add_class::<batch::Batch>()?;
    module.add_class::<clock::ManualClock>()?;
    module.add("__version__", env!("CARGO_PKG_VERSION"))?;
    // The engine's one table of error codes: (name, status, meaning) for each, in order.
    // `tenure/__init__.py` has one exception class per name; a test checks they agree.
    let codes: Vec<(&str, u16, &str)> = tenure::ErrorCode::ALL
        .iter()
        .map(|code| (code.name(), code.status(), code.meaning()))
        .collect();
    module.add("ERROR_TABLE", codes)?;
    Ok(())
}
