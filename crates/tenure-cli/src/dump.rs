//! `tenure dump DIR`: every container and item as JSON lines (one object per line).

use serde_json::json;

use crate::common::{self, format_time, item_json, CliResult, Output};
use crate::StoreDir;

#[derive(clap::Args, Debug)]
pub struct DumpArgs {
    #[command(flatten)]
    pub store: StoreDir,
    /// Only this container.
    #[arg(long)]
    pub container: Option<String>,
    /// Leave the values out (properties only).
    #[arg(long)]
    pub no_values: bool,
}

pub fn run(args: &DumpArgs, _output: &Output) -> CliResult {
    let store = common::open_read_only(&args.store.dir)?;
    // One snapshot: the dump is the store at one version, whatever is written meanwhile.
    let snapshot = store.snapshot()?;
    let containers = match &args.container {
        Some(name) => {
            store.container_properties(name)?;
            vec![name.clone()]
        }
        None => snapshot.list_containers()?,
    };
    println!(
        "{}",
        json!({"type": "store", "version": snapshot.version()})
    );
    for name in &containers {
        let properties = store.container_properties(name)?;
        let metadata: serde_json::Map<String, serde_json::Value> = properties
            .metadata
            .iter()
            .map(|(name, value)| (name.clone(), serde_json::Value::from(value.as_str())))
            .collect();
        println!(
            "{}",
            json!({
                "type": "container",
                "container": name,
                "etag": properties.etag.to_string(),
                "last_modified": format_time(properties.last_modified),
                "default_ttl_seconds": properties.default_ttl_seconds,
                "metadata": metadata,
            })
        );
        let mut token = None;
        loop {
            let page = snapshot.list(name, b"", 1000, token.as_deref(), !args.no_values)?;
            for item in &page.items {
                let mut line = item_json(name, item);
                line["type"] = json!("item");
                let lease = store.lease_info(name, &item.key)?;
                if lease.state != tenure::LeaseState::Available {
                    line["lease"] = crate::lease::lease_info_json(&lease);
                }
                println!("{line}");
            }
            token = page.continuation;
            if token.is_none() {
                break;
            }
        }
    }
    drop(snapshot);
    common::close(store)?;
    common::ok()
}
