//! Reference model, simulated disk and generators shared by tenure's tests, fuzz targets and
//! benchmarks.

pub mod campaign;
pub mod etcd_cluster;
pub mod fuzz;
pub mod lease_model;
pub mod linearizability;
pub mod model;
pub mod model_sequences;
pub mod payload;
pub mod simdisk;
pub mod tempdir;

pub use simdisk::{CrashPolicy, Faults, SimStorage};
pub use tempdir::TempDir;
