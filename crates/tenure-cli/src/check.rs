//! `tenure verify` and `tenure repair`: check every record of a store's log without opening
//! it, and salvage what checks out.

use std::path::Path;
use std::process::ExitCode;

use serde_json::{json, Value};
use tenure::{DamagedItem, DamagedRange, Problem, VerifyReport};

use crate::common::{self, CliError, CliResult, Output, EXIT_PROBLEMS};
use crate::StoreDir;

#[derive(clap::Args, Debug)]
pub struct VerifyArgs {
    #[command(flatten)]
    pub store: StoreDir,
}

#[derive(clap::Args, Debug)]
pub struct RepairArgs {
    #[command(flatten)]
    pub store: StoreDir,
}

/// A directory with a superblock or segment files (verify and repair also look at stores that
/// lost their superblock).
fn check_present(directory: &Path) -> CliResult<()> {
    if common::is_cluster(directory) {
        return Err(CliError::usage(
            "DIR",
            "verify and repair read a local store's files; etcd checks its own (etcdctl \
             endpoint health, etcdctl check perf)",
        ));
    }
    let has_files = std::fs::read_dir(directory).is_ok_and(|entries| {
        entries.flatten().any(|entry| {
            let name = entry.file_name();
            let name = name.to_string_lossy();
            name == "superblock" || (name.starts_with("segment-") && name.ends_with(".log"))
        })
    });
    if has_files {
        Ok(())
    } else {
        Err(CliError::no_store(directory))
    }
}

fn problem_json(problem: &Problem) -> Value {
    json!({"file": problem.file.display().to_string(), "offset": problem.offset, "reason": problem.reason})
}

/// A damaged item: container (name, or id where the rest of the log names none), key, the
/// version the damage held and the one the store falls back to.
fn item_json(item: &DamagedItem) -> Value {
    let mut object = serde_json::Map::new();
    object.insert("container".into(), Value::from(item.container.clone()));
    object.insert("container_id".into(), Value::from(item.container_id));
    common::bytes_field(&mut object, "key", &item.key);
    object.insert("version".into(), Value::from(item.version));
    object.insert("kept_version".into(), Value::from(item.kept_version));
    object.insert("lost".into(), Value::from(item.is_lost()));
    Value::Object(object)
}

fn damaged_json(range: &DamagedRange) -> Value {
    json!({
        "file": range.file.display().to_string(),
        "offset": range.offset,
        "length": range.length,
        "first_version": range.first_version,
        "last_version": range.last_version,
        "items": range.items.iter().map(item_json).collect::<Vec<_>>(),
        "unreadable_records": range.unreadable_records,
    })
}

fn item_text(item: &DamagedItem) -> String {
    let container = item
        .container
        .clone()
        .unwrap_or_else(|| format!("container #{}", item.container_id));
    let now = match item.kept_version {
        Some(kept) if kept >= item.version => "superseded, kept".to_owned(),
        Some(kept) => format!("falls back to version {kept}"),
        None => "gone".to_owned(),
    };
    format!(
        "{container} / {} (version {}): {now}",
        common::display_bytes(&item.key),
        item.version
    )
}

pub fn report_json(report: &VerifyReport) -> Value {
    json!({
        "clean": report.is_clean(),
        "segment_size_bytes": report.segment_size_bytes,
        "generation": report.generation,
        "durable_watermark": report.durable_watermark,
        "first_slot": report.first_slot,
        "segment_files": report.segment_files,
        "segment_bytes": report.segment_bytes,
        "records": report.records,
        "aborted_records": report.aborted_records,
        "first_version": report.first_version,
        "last_version": report.last_version,
        "versions_lost": report.versions_lost,
        "log_end": report.log_end,
        "problems": report.problems.iter().map(problem_json).collect::<Vec<_>>(),
        "damaged": report.damaged.iter().map(damaged_json).collect::<Vec<_>>(),
        "notes": report.notes.iter().map(problem_json).collect::<Vec<_>>(),
    })
}

fn print_report(report: &VerifyReport) {
    println!(
        "log: segment size {} bytes, generation {}, durable watermark {}, {} segment file(s) of {} bytes",
        report.segment_size_bytes,
        report.generation,
        report.durable_watermark,
        report.segment_files,
        report.segment_bytes
    );
    let versions = match (report.first_version, report.last_version) {
        (Some(first), Some(last)) => format!("versions {first}..={last}"),
        _ => "no versions".to_owned(),
    };
    println!(
        "records: {} good, {} aborted ({versions}); log ends at offset {}",
        report.records, report.aborted_records, report.log_end
    );
    for note in &report.notes {
        println!("note: {note}");
    }
    for problem in &report.problems {
        println!("problem: {problem}");
    }
    for range in &report.damaged {
        let versions = match (range.first_version, range.last_version) {
            (Some(first), Some(last)) if last >= first => format!("versions {first}..={last}"),
            _ => "versions unknown".to_owned(),
        };
        println!(
            "damaged: {} at offset {}, {} bytes, {versions}: {} item(s) readable{}",
            range.file.display(),
            range.offset,
            range.length,
            range.items.len(),
            match range.unreadable_records {
                0 => String::new(),
                count => format!(", {count} record(s) unreadable"),
            }
        );
        for item in &range.items {
            println!("  {}", item_text(item));
        }
    }
    if report.versions_lost > 0 {
        println!("versions lost: {}", report.versions_lost);
    }
}

pub fn verify(args: &VerifyArgs, output: &Output) -> CliResult {
    check_present(&args.store.dir)?;
    let bar = common::progress_bar(output, 0, "verify", true);
    let report = tenure::verify(&args.store.dir, &mut |done, total| {
        bar.set_length(total);
        bar.set_position(done);
    });
    bar.finish_and_clear();
    let report = report?;
    if output.json {
        output.print_json(&report_json(&report));
    } else {
        print_report(&report);
        if report.is_clean() {
            println!("clean: every record checks out");
        } else {
            println!(
                "{} problem(s) found; `tenure repair` salvages what checks out",
                report.problems.len()
            );
        }
    }
    if report.is_clean() {
        common::ok()
    } else {
        Ok(ExitCode::from(EXIT_PROBLEMS))
    }
}

pub fn repair(args: &RepairArgs, output: &Output) -> CliResult {
    check_present(&args.store.dir)?;
    let bar = common::progress_bar(output, 0, "repair", true);
    let report = tenure::repair(&args.store.dir, &mut |done, total| {
        bar.set_length(total);
        bar.set_position(done);
    });
    bar.finish_and_clear();
    let report = report?;
    // The proof: the repaired store opens.
    let store = common::open_existing(&args.store.dir)?;
    let version = store.version();
    let containers = store.list_containers()?;
    let mut items = 0u64;
    for name in &containers {
        let mut token = None;
        loop {
            let page = store.list(name, b"", 10_000, token.as_deref(), false)?;
            items += page.items.len() as u64;
            token = page.continuation;
            if token.is_none() {
                break;
            }
        }
    }
    common::close(store)?;
    if output.json {
        output.print_json(&json!({
            "rewritten": report.rewritten,
            "records_kept": report.records_kept,
            "records_dropped": report.records_dropped,
            "items_kept": report.items_kept,
            "items_lost": report.items_lost.iter().map(item_json).collect::<Vec<_>>(),
            "containers_recovered": report
                .containers_recovered
                .iter()
                .map(|container| json!({"id": container.id, "name": container.name}))
                .collect::<Vec<_>>(),
            "backup_directory": report.backup_directory.as_ref().map(|path| path.display().to_string()),
            "before": report_json(&report.before),
            "after": {"version": version, "containers": containers.len(), "items": items},
        }));
        return common::ok();
    }
    if !report.rewritten {
        println!(
            "nothing to repair: {} records check out; the store opens at version {version} ({} containers, {items} items)",
            report.records_kept,
            containers.len()
        );
        return common::ok();
    }
    print_report(&report.before);
    println!(
        "salvaged: kept {} records; dropped the {} problem range(s) above ({} version(s) lost, {} record(s) that no longer applied)",
        report.records_kept,
        report.before.problems.len(),
        report.before.versions_lost,
        report.records_dropped
    );
    println!(
        "items: {} kept, {} lost their newest version (named above where readable)",
        report.items_kept,
        report.items_lost.len()
    );
    for container in &report.containers_recovered {
        println!(
            "container {} lost its create record; its items are kept under the name {:?}",
            container.id, container.name
        );
    }
    if let Some(backup) = &report.backup_directory {
        println!("original files moved to {}", backup.display());
    }
    println!(
        "the repaired store opens at version {version}: {} containers, {items} items",
        containers.len()
    );
    common::ok()
}
