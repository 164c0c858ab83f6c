//! `tenure lock get | unlock`: cache locks (docs/spec.md §6). `tenure put --lock-handle H` is
//! put-and-unlock; `tenure delete --lock-handle H` deletes a locked item.

use std::time::Duration;

use serde_json::json;

use crate::common::{
    self, display_bytes, item_json, open_existing, About, CliError, CliResult, Output,
};
use crate::StoreDir;

#[derive(clap::Subcommand, Debug)]
pub enum LockCommand {
    /// Get-and-lock: read the item and lock it for --timeout seconds. Prints the handle.
    Get {
        #[command(flatten)]
        store: StoreDir,
        /// The container.
        container: String,
        /// The item's key (UTF-8 text).
        key: String,
        /// How long the lock lasts, in seconds (> 0; fractions allowed).
        #[arg(long, value_name = "SECONDS", allow_negative_numbers = true)]
        timeout: f64,
        /// Lock the key even if no item exists (put-and-unlock then creates it).
        #[arg(long)]
        force: bool,
    },
    /// Release a lock without writing.
    Unlock {
        #[command(flatten)]
        store: StoreDir,
        /// The container.
        container: String,
        /// The item's key (UTF-8 text).
        key: String,
        #[arg(long, value_name = "HANDLE")]
        lock_handle: String,
        /// Restart the item's expiry: seconds, or -1 for never.
        #[arg(long, value_name = "SECONDS", allow_negative_numbers = true)]
        ttl: Option<String>,
    },
}

pub fn run(command: LockCommand, output: &Output) -> CliResult {
    match command {
        LockCommand::Get {
            store,
            container,
            key,
            timeout,
            force,
        } => {
            if !(timeout.is_finite() && timeout > 0.0 && timeout <= 1e9) {
                return Err(CliError::usage(
                    "--timeout",
                    "a lock lasts more than 0 seconds",
                ));
            }
            let timeout = Duration::from_secs_f64(timeout);
            let handle = open_existing(&store.dir)?;
            let (item, lock) = handle
                .get_and_lock(&container, key.as_bytes(), timeout, force)
                .about(&container, Some(&key))?;
            common::close(handle)?;
            if output.json {
                output.print_json(&json!({
                    "lock_handle": lock.to_string(),
                    "item": item.as_ref().map(|item| item_json(&container, item)),
                }));
            } else {
                println!("lock_handle: {lock}");
                match item {
                    Some(item) => {
                        println!("etag:        {}", item.etag);
                        let value = item.value.unwrap_or_default();
                        println!("value:       {}", display_bytes(&value));
                    }
                    None => println!("(no item: the absent key is locked)"),
                }
            }
        }
        LockCommand::Unlock {
            store,
            container,
            key,
            lock_handle,
            ttl,
        } => {
            let lock = common::parse_lock_handle(&lock_handle)?;
            let ttl = ttl.as_deref().map(common::parse_ttl).transpose()?;
            let handle = open_existing(&store.dir)?;
            handle
                .unlock(&container, key.as_bytes(), lock, ttl)
                .about(&container, Some(&key))?;
            common::close(handle)?;
            if output.json {
                output.print_json(&json!({"unlocked": true}));
            } else {
                println!("unlocked");
            }
        }
    }
    common::ok()
}
