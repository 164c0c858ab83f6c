//! `tenure stat` (what a store holds) and `tenure compact` (reclaim space).

use serde_json::json;

use crate::common::{self, open_existing, CliError, CliResult, Output};
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
}

pub fn run(args: &StatArgs, output: &Output) -> CliResult {
    let store = open_existing(&args.store.dir)?;
    let stats = store.stats()?;
    common::close(store)?;
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
            "log_bytes": stats.log_bytes,
            "live_bytes": stats.live_bytes,
            "dead_bytes": stats.dead_bytes,
            "active_leases": stats.active_leases,
            "active_locks": stats.active_locks,
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
    println!("log bytes:      {}", stats.log_bytes);
    println!("live bytes:     {}", stats.live_bytes);
    println!("dead bytes:     {}", stats.dead_bytes);
    println!("active leases:  {}", stats.active_leases);
    println!("active locks:   {}", stats.active_locks);
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
    let store = open_existing(&args.store.dir)?;
    let before = store.log_bytes();
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
    })??;
    let after = store.log_bytes();
    common::close(store)?;
    if output.json {
        output.print_json(&json!({
            "segments_removed": report.segments_removed,
            "bytes_removed": report.bytes_removed,
            "items_relocated": report.items_relocated,
            "containers_relocated": report.containers_relocated,
            "deferred_by_snapshot": report.deferred_by_snapshot,
            "retained_for_change_feed": report.retained_for_change_feed,
            "allocated_bytes_before": before,
            "allocated_bytes_after": after,
        }));
    } else {
        println!(
            "compacted: {} segment(s) removed ({} bytes), {} item(s) and {} container(s) copied forward",
            report.segments_removed,
            report.bytes_removed,
            report.items_relocated,
            report.containers_relocated
        );
        println!("log files: {before} -> {after} bytes");
        if report.segments_removed == 0 {
            println!("(the newest segment is never compacted; nothing older was sealed)");
        }
    }
    common::ok()
}
