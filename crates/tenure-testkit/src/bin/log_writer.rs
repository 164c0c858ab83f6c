//! A child process for the kill -9 tests: appends self-checking records to a log in `sync`
//! mode and prints each acknowledged version on stdout, one per line, until killed.
//!
//! usage: log_writer DIRECTORY STREAM SEGMENT_SIZE_BYTES

fn main() {
    let arguments: Vec<String> = std::env::args().skip(1).collect();
    if let Err(message) = tenure_testkit::campaign::kill::writer_main(&arguments) {
        eprintln!("log_writer: {message}");
        std::process::exit(2);
    }
}
