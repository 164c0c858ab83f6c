//! The fuzz targets' bodies (fuzz/fuzz_targets/*.rs are one line each): every target turns the
//! fuzzer's bytes into a case of a campaign — through [`ByteRng`] for the generators — and
//! panics on a contract violation. [`seeds`] makes the committed seed corpora.

use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};

use crate::campaign::{crash, hostile, io_faults, lease_schedule, ByteRng};

/// Every fuzz target, by name (the file names under fuzz/fuzz_targets/).
pub const TARGETS: [&str; 6] = [
    "record_decoder",
    "open_directory",
    "model_ops",
    "io_faults",
    "lease_schedule",
    "ffi_calls",
];

/// Records with valid checksums and arbitrary payloads, opened as a store.
pub fn record_decoder(data: &[u8]) {
    hostile::open_framed_records(data);
}

/// A real store's files with arbitrary patches, opened.
pub fn open_directory(data: &[u8]) {
    hostile::open_patched_directory(data);
}

/// An item workload with compactions, reopens and power cuts, against the model.
pub fn model_ops(data: &[u8]) {
    crash::store_case(&mut ByteRng::new(data));
}

/// A workload with one EIO at a chosen storage call.
pub fn io_faults(data: &[u8]) {
    io_faults::single_fault(&mut ByteRng::new(data));
}

/// A lease and lock schedule with clock moves, against the lease model.
pub fn lease_schedule(data: &[u8]) {
    lease_schedule::run_schedule(0, ByteRng::new(data));
}

/// A C ABI call sequence.
#[cfg(feature = "ffi")]
pub fn ffi_calls(data: &[u8]) {
    crate::campaign::ffi_calls::run(data);
}

/// Seed inputs for `target`: random bytes for the generator-driven targets (every input is
/// valid), real records for the decoder, a few patches for the directory.
pub fn seeds(target: &str) -> Vec<Vec<u8>> {
    let mut rng = StdRng::seed_from_u64(42);
    let random = |rng: &mut StdRng, count: usize, length: usize| -> Vec<Vec<u8>> {
        (0..count)
            .map(|_| (0..rng.gen_range(8..length)).map(|_| rng.gen()).collect())
            .collect()
    };
    match target {
        "record_decoder" => {
            let mut seeds = hostile::framed_record_seeds();
            seeds.extend(random(&mut rng, 4, 300));
            seeds
        }
        "open_directory" => {
            let mut seeds = vec![Vec::new()];
            seeds.extend(random(&mut rng, 8, 64));
            seeds
        }
        _ => random(&mut rng, 8, 400),
    }
}
