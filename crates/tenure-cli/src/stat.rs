//! `tenure stat` (what a store holds) and `tenure compact` (reclaim space).

use std::os::unix::fs::MetadataExt;
use std::path::Path;

use serde_json::json;

use crate::common::{self, CliError, CliResult, Output};
use crate::lease::state_name;
use crate::StoreDir;

#[derive(clap::Args, Debug)]
pub struct StatArgs {
    #[command(flatten)]
    pub store: StoreDir,
}

#[derive(clap::Args, Debug)]
pub struct CompactArgs {
    #[command(flatten)]
    pub store: StoreDir,
    /// Keep at least the last N versions of the change feed (as the application's
    /// change_feed_retention_versions): compaction keeps the segments that hold them.
    #[arg(long, value_name = "N")]
    pub change_feed_retention_versions: Option<u64>,
    /// Keep at least the last N bytes of log for the change feed.
    #[arg(long, value_name = "BYTES")]
    pub change_feed_retention_bytes: Option<u64>,
}

/// What the files under `directory` take on disk: their allocated blocks (what `du` counts),
/// and their lengths. A segment file is as long as a segment from the start, its blocks
/// allocated as the log fills it, so only the blocks say how much space compaction gave back.
/// [`disk_usage`] of a store's directory; for a store on an etcd cluster, the size of the
/// cluster's database file (`store_bytes`, as the store reports it) for both.
fn store_usage(location: &Path, store_bytes: u64) -> CliResult<(u64, u64)> {
    if common::is_cluster(location) {
        return Ok((store_bytes, store_bytes));
    }
    disk_usage(location)
}

fn disk_usage(directory: &Path) -> CliResult<(u64, u64)> {
    let mut allocated = 0u64;
    let mut length = 0u64;
    let mut pending = vec![directory.to_path_buf()];
    while let Some(folder) = pending.pop() {
        let entries =
            std::fs::read_dir(&folder).map_err(|error| CliError::io(&folder, "read", error))?;
        for entry in entries {
            let entry = entry.map_err(|error| CliError::io(&folder, "read", error))?;
            let path = entry.path();
            let metadata = std::fs::symlink_metadata(&path)
                .map_err(|error| CliError::io(&path, "stat", error))?;
            if metadata.is_dir() {
                pending.push(path);
            } else if metadata.is_file() {
                allocated += metadata.blocks() * 512;
                length += metadata.len();
            }
        }
    }
    Ok((allocated, length))
}

fn mebibytes(bytes: u64) -> String {
    format!("{:.1} MiB", bytes as f64 / (1024.0 * 1024.0))
}

pub fn run(args: &StatArgs, output: &Output) -> CliResult {
    let store = common::open_read_only(&args.store.dir)?;
    let stats = store.stats()?;
    common::close(store)?;
    let (disk_bytes, _) = store_usage(&args.store.dir, stats.store_bytes)?;
    if output.json {
        let containers: Vec<_> = stats
            .containers
            .iter()
            .map(|container| {
                json!({
                    "name": container.name,
                    "items": container.items,
                    "value_bytes": container.value_bytes,
                    "active_leases": container.active_leases,
                    "active_locks": container.active_locks,
                    "lease": container.lease_state.map(state_name),
                })
            })
            .collect();
        output.print_json(&json!({
            "version": stats.version,
            "containers": containers,
            "items": stats.items,
            "item_versions": stats.item_versions,
            "segments": stats.segments,
            "segment_size_bytes": stats.segment_size_bytes,
            "allocated_bytes": stats.allocated_bytes,
            "disk_bytes": disk_bytes,
            "log_bytes": stats.log_bytes,
            "live_bytes": stats.live_bytes,
            "dead_bytes": stats.dead_bytes,
            "active_leases": stats.active_leases,
            "active_locks": stats.active_locks,
            "storage_full": stats.storage_full,
            "free_bytes": stats.free_bytes,
            "reserve_bytes": stats.reserve_bytes,
            "quota_bytes": stats.quota_bytes,
            "store_bytes": stats.store_bytes,
            "opened_from_persisted_index": stats.opened_from_persisted_index,
            "log_bytes_replayed_at_open": stats.log_bytes_replayed_at_open,
            "log_verified": stats.log_verified,
        }));
        return common::ok();
    }
    println!("store:          {}", args.store.dir.display());
    println!("version:        {}", stats.version);
    println!("containers:     {}", stats.containers.len());
    println!("items:          {}", stats.items);
    println!("item versions:  {}", stats.item_versions);
    println!(
        "segments:       {} (segment size {} bytes, {} bytes allocated)",
        stats.segments, stats.segment_size_bytes, stats.allocated_bytes
    );
    println!(
        "disk usage:     {disk_bytes} bytes ({}; the blocks the store's files use)",
        mebibytes(disk_bytes)
    );
    println!(
        "index at open:  {}",
        if stats.opened_from_persisted_index {
            format!(
                "loaded from the persisted index, {} log bytes replayed after it",
                stats.log_bytes_replayed_at_open
            )
        } else {
            format!(
                "replayed from the log ({} bytes)",
                stats.log_bytes_replayed_at_open
            )
        }
    );
    println!(
        "log checked:    {}",
        if stats.log_verified {
            "every record"
        } else {
            "not yet below the persisted index (the check runs after the open)"
        }
    );
    println!("log bytes:      {}", stats.log_bytes);
    println!("live bytes:     {}", stats.live_bytes);
    println!("dead bytes:     {}", stats.dead_bytes);
    println!("active leases:  {}", stats.active_leases);
    println!("active locks:   {}", stats.active_locks);
    println!(
        "space:          {}; {} bytes free, {} held in reserve for deletes and compaction, \
         quota {}",
        if stats.storage_full {
            "FULL: writes that add data fail with StorageFull (delete, then compact)"
        } else {
            "writes accepted"
        },
        stats
            .free_bytes
            .map_or("unknown".to_owned(), |free| free.to_string()),
        stats.reserve_bytes,
        stats
            .quota_bytes
            .map_or("none".to_owned(), |quota| format!("{quota} bytes")),
    );
    if !stats.containers.is_empty() {
        println!();
        println!(
            "{:<24} {:>10} {:>14} {:>8} {:>8}  lease",
            "container", "items", "value bytes", "leases", "locks"
        );
        for container in &stats.containers {
            println!(
                "{:<24} {:>10} {:>14} {:>8} {:>8}  {}",
                container.name,
                container.items,
                container.value_bytes,
                container.active_leases,
                container.active_locks,
                container.lease_state.map_or("-", state_name)
            );
        }
    }
    common::ok()
}

pub fn compact(args: &CompactArgs, output: &Output) -> CliResult {
    for (flag, value) in [
        (
            "--change-feed-retention-versions",
            args.change_feed_retention_versions,
        ),
        (
            "--change-feed-retention-bytes",
            args.change_feed_retention_bytes,
        ),
    ] {
        if value == Some(0) {
            return Err(CliError::usage(flag, "must be at least 1"));
        }
    }
    if !common::is_cluster(&args.store.dir) && !common::store_exists(&args.store.dir) {
        return Err(CliError::no_store(&args.store.dir));
    }
    let options = tenure::StoreOptions {
        change_feed_retention_versions: args.change_feed_retention_versions,
        change_feed_retention_bytes: args.change_feed_retention_bytes,
        ..common::store_options()
    };
    // Counted before the open, as `du` would have shown it: the close writes the persisted
    // index again.
    let local_usage_before = (!common::is_cluster(&args.store.dir))
        .then(|| disk_usage(&args.store.dir))
        .transpose()?;
    let store = common::open_store(&args.store.dir, options)?;
    let (disk_before, files_before) = match local_usage_before {
        Some(usage) => usage,
        None => store_usage(&args.store.dir, store.log_bytes())?,
    };
    let log_before = store.log_bytes();
    // compact() removes sealed segments oldest first, moving the log's start forward: the bar
    // follows the start while compaction runs on another thread.
    let sealed = store.sealed_bytes();
    let start = store.log_start_offset();
    let bar = common::progress_bar(output, sealed, "compact", true);
    let report = std::thread::scope(|scope| {
        let worker = scope.spawn(|| store.compact());
        while !worker.is_finished() {
            bar.set_position(store.log_start_offset().saturating_sub(start).min(sealed));
            std::thread::sleep(std::time::Duration::from_millis(50));
        }
        worker.join()
    });
    bar.finish_and_clear();
    let report = report.map_err(|_| CliError {
        code: "Internal".to_owned(),
        status: None,
        message: "the compaction thread panicked (a bug in tenure; please report it)".to_owned(),
        exit: common::EXIT_IO,
        ..CliError::default()
    })??;
    let log_after = store.log_bytes();
    common::close(store)?;
    // After the close: files the compaction let go of are gone by now.
    let (disk_after, files_after) = store_usage(&args.store.dir, log_after)?;
    if output.json {
        output.print_json(&json!({
            "segments_removed": report.segments_removed,
            "bytes_removed": report.bytes_removed,
            "items_relocated": report.items_relocated,
            "containers_relocated": report.containers_relocated,
            "deferred_by_snapshot": report.deferred_by_snapshot,
            "retained_for_change_feed": report.retained_for_change_feed,
            "deferred_by_writes": report.deferred_by_writes,
            "disk_bytes_before": disk_before,
            "disk_bytes_after": disk_after,
            "file_bytes_before": files_before,
            "file_bytes_after": files_after,
            "log_bytes_before": log_before,
            "log_bytes_after": log_after,
        }));
    } else {
        println!(
            "compacted: {} segment(s) removed ({} bytes of log), {} item(s) and {} container(s) copied forward",
            report.segments_removed,
            report.bytes_removed,
            report.items_relocated,
            report.containers_relocated
        );
        println!(
            "disk usage: {disk_before} -> {disk_after} bytes ({} -> {}; blocks in use under {})",
            mebibytes(disk_before),
            mebibytes(disk_after),
            args.store.dir.display()
        );
        println!(
            "file sizes: {files_before} -> {files_after} bytes (segment files are a segment long from the start)"
        );
        if report.segments_removed == 0 {
            println!("(the newest segment is never compacted; nothing older was sealed)");
        }
        if report.retained_for_change_feed {
            println!("(the change feed's retention kept the oldest segment)");
        }
    }
    common::ok()
}
