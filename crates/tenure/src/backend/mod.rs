//! The seam between the public API and an engine: the requests and results every backend
//! speaks.

pub(crate) mod options;
