//! `tenure changes DIR --since V`: the change feed (docs/spec.md §10), one line per change.

use serde_json::{json, Value};
use tenure::{ChangeKind, ChangesOptions};

use crate::common::{self, bytes_field, display_bytes, About, CliError, CliResult, Output};
use crate::StoreDir;

#[derive(clap::Args, Debug)]
pub struct ChangesArgs {
    #[command(flatten)]
    pub store: StoreDir,
    /// Changes after this version (0 = from the start of the retained log).
    #[arg(
        long,
        value_name = "VERSION",
        default_value_t = 0,
        allow_negative_numbers = true
    )]
    pub since: u64,
    /// Only this container's changes.
    #[arg(long)]
    pub container: Option<String>,
    /// Include the new values of creates and updates.
    #[arg(long)]
    pub values: bool,
    /// At most this many changes (1..=1000000).
    #[arg(long, default_value_t = 100_000, allow_negative_numbers = true)]
    pub max: usize,
    /// Keep printing changes as they are committed (by an application that holds the store
    /// open, say), until `--max` of them are printed or the command is interrupted.
    #[arg(long)]
    pub follow: bool,
}

pub fn kind_name(kind: ChangeKind) -> &'static str {
    match kind {
        ChangeKind::Created => "created",
        ChangeKind::Updated => "updated",
        ChangeKind::Deleted => "deleted",
        ChangeKind::Expired => "expired",
        ChangeKind::ContainerCreated => "container_created",
        ChangeKind::ContainerDeleted => "container_deleted",
        _ => "other",
    }
}

pub fn run(args: &ChangesArgs, output: &Output) -> CliResult {
    if args.max == 0 || args.max > 1_000_000 {
        return Err(CliError::usage("--max", "must be 1..=1000000"));
    }
    let store = common::open_read_only(&args.store.dir)?;
    let mut since = args.since;
    // How many changes of version `since + 1` were printed already: a call that stops at its
    // limit may stop inside a batch (many changes, one version), so the next call starts at
    // that version again and skips them.
    let mut skip = 0usize;
    let mut printed = 0usize;
    loop {
        print_changes(&store, args, output, (&mut since, &mut skip, &mut printed))?;
        if !args.follow || printed >= args.max {
            break;
        }
        // The read-only open follows the writer: this wakes once a change past `since` is
        // read, or after a while, when the loop just asks again.
        store
            .wait_for_changes(since, std::time::Duration::from_secs(1))
            .map_err(CliError::from)?;
    }
    common::close(store)?;
    common::ok()
}

/// Prints the changes after `since` (skipping the first `skip` of version `since + 1`, printed
/// already), until `--max` are printed in all or none is left.
fn print_changes(
    store: &tenure::Store,
    args: &ChangesArgs,
    output: &Output,
    (since, skip, printed): (&mut u64, &mut usize, &mut usize),
) -> Result<(), CliError> {
    let about = |result: Result<Vec<tenure::Change>, tenure::Error>| match &args.container {
        Some(container) => result.about(container, None),
        None => result.map_err(CliError::from),
    };
    while *printed < args.max {
        let wanted = (args.max - *printed + *skip).min(tenure_max_per_call());
        let options = ChangesOptions {
            container: args.container.clone(),
            include_values: args.values,
            max_changes: wanted,
        };
        let mut changes = about(store.changes(*since, &options))?;
        let full = changes.len() == wanted;
        let already = (*skip).min(
            changes
                .iter()
                .take_while(|change| change.version == *since + 1)
                .count(),
        );
        match changes.last().map(|change| change.version) {
            Some(last) if full => {
                *skip = changes
                    .iter()
                    .filter(|change| change.version == last)
                    .count();
                *since = last - 1;
            }
            Some(last) => {
                *skip = 0;
                *since = last;
            }
            None => break,
        }
        let fresh = changes.split_off(already);
        let shown = fresh.len().min(args.max - *printed);
        for change in &fresh[..shown] {
            print_change(output, change);
        }
        *printed += shown;
        if !full {
            break;
        }
    }
    Ok(())
}

fn print_change(output: &Output, change: &tenure::Change) {
    if output.json {
        let mut object = serde_json::Map::new();
        object.insert("version".into(), Value::from(change.version));
        object.insert("kind".into(), Value::from(kind_name(change.kind)));
        object.insert("container".into(), Value::from(change.container.as_str()));
        if let Some(key) = &change.key {
            bytes_field(&mut object, "key", key);
        }
        object.insert(
            "etag".into(),
            json!(change.etag.map(|etag| etag.to_string())),
        );
        if let Some(value) = &change.value {
            bytes_field(&mut object, "value", value);
        }
        output.print_json(&Value::Object(object));
    } else {
        let key = change
            .key
            .as_deref()
            .map(|key| format!("/{}", display_bytes(key)))
            .unwrap_or_default();
        let etag = change
            .etag
            .map(|etag| format!(" {etag}"))
            .unwrap_or_default();
        let value = change
            .value
            .as_deref()
            .map(|value| format!(" = {}", display_bytes(value)))
            .unwrap_or_default();
        println!(
            "{:>8}  {:<17} {}{key}{etag}{value}",
            change.version,
            kind_name(change.kind),
            change.container
        );
    }
}

fn tenure_max_per_call() -> usize {
    100_000
}
