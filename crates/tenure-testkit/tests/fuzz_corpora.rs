//! Every committed fuzz input — the seed corpora (fuzz/corpus/<target>/) and the inputs of
//! crashes found and fixed (fuzz/regressions/<target>/) — replayed through the fuzz targets'
//! bodies on the stable toolchain, as an ordinary test.

use std::path::Path;

fn inputs(target: &str) -> Vec<(String, Vec<u8>)> {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../fuzz");
    let mut inputs = Vec::new();
    for directory in ["corpus", "regressions"] {
        let Ok(entries) = std::fs::read_dir(root.join(directory).join(target)) else {
            continue;
        };
        for entry in entries {
            let path = entry.expect("a directory entry").path();
            let bytes = std::fs::read(&path).expect("read a fuzz input");
            inputs.push((path.display().to_string(), bytes));
        }
    }
    inputs.sort();
    inputs
}

fn replay(target: &str, body: fn(&[u8])) {
    let inputs = inputs(target);
    assert!(!inputs.is_empty(), "no committed inputs for {target}");
    for (path, bytes) in inputs {
        if std::panic::catch_unwind(|| body(&bytes)).is_err() {
            panic!("fuzz input {path} fails");
        }
    }
}

#[test]
fn record_decoder_inputs_pass() {
    replay("record_decoder", tenure_testkit::fuzz::record_decoder);
}

#[test]
fn open_directory_inputs_pass() {
    replay("open_directory", tenure_testkit::fuzz::open_directory);
}

#[test]
fn model_ops_inputs_pass() {
    replay("model_ops", tenure_testkit::fuzz::model_ops);
}

#[test]
fn io_faults_inputs_pass() {
    replay("io_faults", tenure_testkit::fuzz::io_faults);
}

#[test]
fn lease_schedule_inputs_pass() {
    replay("lease_schedule", tenure_testkit::fuzz::lease_schedule);
}

#[cfg(feature = "ffi")]
#[test]
fn ffi_calls_inputs_pass() {
    replay("ffi_calls", tenure_testkit::fuzz::ffi_calls);
}
