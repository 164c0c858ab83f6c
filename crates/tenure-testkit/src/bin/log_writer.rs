//! A child process for the kill -9 tests: appends self-checking records to a log in `sync`
//! mode and prints each acknowledged version on stdout, one per line, until killed.
//!
//! usage: log_writer DIRECTORY STREAM SEGMENT_SIZE_BYTES

use std::io::Write;
use std::sync::Arc;

use tenure::{Durability, FileStorage, Log, LogOptions};
use tenure_testkit::payload;

fn main() {
    let arguments: Vec<String> = std::env::args().collect();
    let [_, directory, stream, segment_size] = &arguments[..] else {
        eprintln!("usage: log_writer DIRECTORY STREAM SEGMENT_SIZE_BYTES");
        std::process::exit(2);
    };
    let stream: u64 = stream.parse().expect("STREAM is a number");
    let options = LogOptions {
        segment_size_bytes: segment_size
            .parse()
            .expect("SEGMENT_SIZE_BYTES is a number"),
        durability: Durability::Sync,
        ..LogOptions::default()
    };
    let mut highest_index = 0u64;
    let log = Log::open(
        Arc::new(FileStorage::new(directory)),
        &options,
        &mut |record| {
            if let Some((_, index)) = payload::check(record.payload) {
                highest_index = highest_index.max(index + 1);
            }
            Ok(())
        },
    )
    .unwrap_or_else(|error| {
        eprintln!("open failed: {error}");
        std::process::exit(1);
    });
    let stdout = std::io::stdout();
    let mut out = stdout.lock();
    for index in highest_index.. {
        let length = 16 + (index as usize * 37) % 700;
        let bytes = payload::make(stream, index, length);
        let (version, _) = log.append(&bytes).expect("append");
        // The line is written only after the append returned: an acknowledgement.
        writeln!(out, "{version} {index} {length}").expect("stdout");
        out.flush().expect("stdout");
    }
}
