//! `tenure.ManualClock`: the engine's manual clock, for tests. Pass it to `open(clock=…)`;
//! leases, locks, TTLs and dates then move only when it is moved.

use pyo3::prelude::*;

use tenure::Clock;

use crate::convert;

#[pyclass(frozen, module = "tenure")]
pub struct ManualClock {
    clock: tenure::ManualClock,
}

impl ManualClock {
    /// A clone sharing the same time, for the store.
    pub fn engine_clock(&self) -> tenure::ManualClock {
        self.clock.clone()
    }
}

#[pymethods]
impl ManualClock {
    /// `now`: a datetime (naive = UTC) or epoch seconds.
    #[new]
    fn new(now: &Bound<'_, PyAny>) -> PyResult<ManualClock> {
        Ok(ManualClock {
            clock: tenure::ManualClock::new(convert::timestamp("now", now)?),
        })
    }

    /// Moves the clock forward by `seconds` (int or float, not negative).
    fn advance(&self, seconds: &Bound<'_, PyAny>) -> PyResult<()> {
        let step = convert::duration("seconds", seconds)?;
        self.clock
            .advance_micros(u64::try_from(step.as_micros()).unwrap_or(u64::MAX));
        Ok(())
    }

    /// Sets the time, also backwards (a clock that jumped back).
    fn set(&self, now: &Bound<'_, PyAny>) -> PyResult<()> {
        self.clock.set(convert::timestamp("now", now)?);
        Ok(())
    }

    /// The current time as an aware UTC datetime.
    fn now<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyAny>> {
        convert::datetime(py, self.clock.now())
    }

    /// The current time as epoch seconds.
    fn timestamp(&self) -> f64 {
        convert::seconds_from_micros(self.clock.now())
    }

    fn __repr__(&self, py: Python<'_>) -> PyResult<String> {
        let now = self.now(py)?;
        Ok(format!("tenure.ManualClock({})", now.repr()?))
    }
}
