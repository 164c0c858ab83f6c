//! tenure's first job, end to end: open a store, write, reopen, read back.
//!
//!     cargo run --release -p tenure --example quickstart [DIRECTORY]

use std::sync::Arc;

use tenure::{Durability, FileStorage, Log, LogOptions};

fn main() -> Result<(), tenure::Error> {
    let directory = std::env::args()
        .nth(1)
        .unwrap_or_else(|| "tenure-demo".to_owned());
    let options = LogOptions {
        durability: Durability::Sync,
        ..LogOptions::default()
    };
    let mut existing = 0usize;
    let mut log = Log::open(
        Arc::new(FileStorage::new(&directory)),
        &options,
        &mut |_| {
            existing += 1;
            Ok(())
        },
    )?;
    println!("opened {directory}: {existing} records already there");
    let messages = ["first write", "second write", "third write"];
    let mut written = Vec::new();
    for message in messages {
        let (version, location) = log.append(message.as_bytes())?;
        println!(
            "appended version {version} ({} bytes, synced to disk): {message:?}",
            message.len()
        );
        written.push((version, location, message));
    }
    log.close()?;
    drop(log);
    println!("closed; reopening");
    let mut recovered = Vec::new();
    let log = Log::open(
        Arc::new(FileStorage::new(&directory)),
        &options,
        &mut |record| {
            recovered.push((record.version, record.payload.to_vec()));
            Ok(())
        },
    )?;
    for (version, _, message) in &written {
        let found = recovered
            .iter()
            .find(|(recovered_version, _)| recovered_version == version);
        match found {
            Some((_, bytes)) if bytes == message.as_bytes() => {
                println!(
                    "read back version {version}: {:?} (checksum verified)",
                    String::from_utf8_lossy(bytes)
                )
            }
            _ => {
                eprintln!("version {version} did not come back intact");
                std::process::exit(1);
            }
        }
    }
    println!(
        "{} records in the store now; the log continues at version {}",
        recovered.len(),
        log.visible_version() + 1
    );
    Ok(())
}
