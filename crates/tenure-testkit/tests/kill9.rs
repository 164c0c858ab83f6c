//! Real kill -9: a child appends in `sync` mode and reports each acknowledgement over a pipe;
//! the parent kills it at a random moment, reopens the log and checks every acknowledged
//! record is there, byte for byte. The cycle lives in `tenure_testkit::campaign::kill` (the
//! torture campaign runs it too); this test runs it with the `log_writer` binary.
//!
//! TENURE_KILL_CYCLES (default 100) and TENURE_SEED (default 11) choose the run.

use tenure_testkit::campaign::{self, kill, Campaign, Context};
use tenure_testkit::TempDir;

#[test]
fn kill_9_never_loses_an_acknowledged_record() {
    let cycles: u64 = std::env::var("TENURE_KILL_CYCLES")
        .ok()
        .and_then(|text| text.parse().ok())
        .unwrap_or(100);
    let seed: u64 = std::env::var("TENURE_SEED")
        .ok()
        .and_then(|text| text.parse().ok())
        .unwrap_or(11);
    let scratch = TempDir::new("kill9");
    let context = Context {
        writer: Some((env!("CARGO_BIN_EXE_log_writer").into(), Vec::new())),
        scratch: scratch.path().to_path_buf(),
    };
    let cases = cycles.div_ceil(kill::CYCLES_PER_CASE);
    campaign::assert_passes(Campaign::Kill, seed, cases, &context);
}
