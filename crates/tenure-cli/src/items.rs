//! `tenure get | put | delete | list`: items, with conditions, lease ids and lock handles as
//! flags.

use std::path::PathBuf;

use serde_json::{json, Value};
use tenure::ReadOptions;

use crate::common::{
    self, display_bytes, format_time, item_json, open_existing, About, CliError, CliResult,
    ConditionArgs, Output, WriteArgs,
};
use crate::StoreDir;

#[derive(clap::Args, Debug)]
pub struct GetArgs {
    #[command(flatten)]
    pub store: StoreDir,
    /// The container.
    pub container: String,
    /// The item's key (UTF-8 text).
    pub key: String,
    #[command(flatten)]
    pub conditions: ConditionArgs,
    /// The item's lease id (a wrong one is refused).
    #[arg(long, value_name = "ID")]
    pub lease_id: Option<String>,
    /// Print only the value's bytes (for piping).
    #[arg(long)]
    pub value_only: bool,
    /// Properties only: no value.
    #[arg(long)]
    pub properties: bool,
}

#[derive(clap::Args, Debug)]
pub struct PutArgs {
    #[command(flatten)]
    pub store: StoreDir,
    /// The container.
    pub container: String,
    /// The item's key (UTF-8 text).
    pub key: String,
    /// The value (or use --value-file).
    pub value: Option<String>,
    /// Read the value from this file; `-` reads stdin.
    #[arg(long, value_name = "PATH")]
    pub value_file: Option<PathBuf>,
    #[command(flatten)]
    pub write: WriteArgs,
    /// Seconds the item lives after this write; -1 = never (overrides the container default).
    #[arg(long, value_name = "SECONDS", allow_negative_numbers = true)]
    pub ttl: Option<String>,
    /// The item's content type, e.g. application/json.
    #[arg(long, value_name = "TYPE")]
    pub content_type: Option<String>,
    /// User metadata NAME=VALUE (repeat).
    #[arg(long, value_name = "NAME=VALUE")]
    pub metadata: Vec<String>,
}

#[derive(clap::Args, Debug)]
pub struct DeleteArgs {
    #[command(flatten)]
    pub store: StoreDir,
    /// The container.
    pub container: String,
    /// The item's key (UTF-8 text).
    pub key: String,
    #[command(flatten)]
    pub write: WriteArgs,
}

#[derive(clap::Args, Debug)]
pub struct ListArgs {
    #[command(flatten)]
    pub store: StoreDir,
    /// List this container's items; without it, list the containers.
    pub container: Option<String>,
    /// Only keys starting with this.
    #[arg(long, default_value = "")]
    pub prefix: String,
    /// Items per page (1..=10000). One page is printed, then its continuation token.
    #[arg(long, default_value_t = 1000, allow_negative_numbers = true)]
    pub page_size: usize,
    /// Continue from this token (printed after an earlier page).
    #[arg(long, value_name = "TOKEN")]
    pub continuation: Option<String>,
    /// Follow every page to the end instead of printing one page and its token.
    #[arg(long, conflicts_with = "single_page")]
    pub all: bool,
    /// One page and its token (the default; kept for scripts that pass it).
    #[arg(long, hide = true)]
    pub single_page: bool,
    /// Include values.
    #[arg(long)]
    pub values: bool,
}

pub fn get(args: &GetArgs, output: &Output) -> CliResult {
    let options = ReadOptions {
        conditions: args.conditions.parse()?,
        lease_id: args
            .lease_id
            .as_deref()
            .map(|text| common::parse_lease_id("--lease-id", text))
            .transpose()?,
    };
    let store = common::open_read_only(&args.store.dir)?;
    let key = args.key.as_bytes();
    let item = if args.properties {
        store.get_properties(&args.container, key, &options)
    } else {
        store.get(&args.container, key, &options)
    }
    .about(&args.container, Some(&args.key))?;
    common::close(store)?;
    if output.json {
        output.print_json(&item_json(&args.container, &item));
    } else if args.value_only {
        common::write_stdout(item.value.as_deref().unwrap_or_default())?;
    } else {
        println!("key:           {}", display_bytes(&item.key));
        println!("etag:          {}", item.etag);
        println!("version:       {}", item.version);
        println!("last_modified: {}", format_time(item.last_modified));
        if let Some(content_type) = &item.content_type {
            println!("content_type:  {content_type}");
        }
        for (name, value) in &item.metadata {
            println!("metadata:      {name}={value}");
        }
        if let Some(expires_at) = item.expires_at {
            println!("expires_at:    {}", format_time(expires_at));
        }
        if let Some(value) = &item.value {
            println!("size:          {}", value.len());
            println!("value:         {}", display_bytes(value));
        }
    }
    common::ok()
}

pub fn put(args: &PutArgs, output: &Output) -> CliResult {
    let value = common::read_value(args.value.as_deref(), args.value_file.as_ref())?;
    let mut options = args.write.options()?;
    if let Some(ttl) = &args.ttl {
        options.ttl = common::parse_ttl(ttl)?;
    }
    options.content_type = args.content_type.clone();
    options.metadata = common::parse_metadata(&args.metadata)?;
    let store = open_existing(&args.store.dir)?;
    let etag = store
        .put(&args.container, args.key.as_bytes(), &value, &options)
        .about(&args.container, Some(&args.key))?;
    common::close(store)?;
    if output.json {
        output.print_json(&json!({"etag": etag.to_string(), "version": etag.version()}));
    } else {
        println!("{etag}");
    }
    common::ok()
}

pub fn delete(args: &DeleteArgs, output: &Output) -> CliResult {
    let options = args.write.options()?;
    let store = open_existing(&args.store.dir)?;
    store
        .delete(&args.container, args.key.as_bytes(), &options)
        .about(&args.container, Some(&args.key))?;
    common::close(store)?;
    if output.json {
        output.print_json(&json!({"deleted": true}));
    } else {
        println!("deleted");
    }
    common::ok()
}

pub fn list(args: &ListArgs, output: &Output) -> CliResult {
    if args.page_size == 0 || args.page_size > 10_000 {
        return Err(CliError::usage("--page-size", "must be 1..=10000"));
    }
    let store = common::open_read_only(&args.store.dir)?;
    let Some(container) = &args.container else {
        let names = store.list_containers()?;
        common::close(store)?;
        if output.json {
            output.print_json(&json!({ "containers": names }));
        } else {
            for name in names {
                println!("{name}");
            }
        }
        return common::ok();
    };
    let mut items: Vec<Value> = Vec::new();
    let mut token = args.continuation.clone();
    loop {
        let page = store
            .list(
                container,
                args.prefix.as_bytes(),
                args.page_size,
                token.as_deref(),
                args.values,
            )
            .about(container, None)?;
        for item in &page.items {
            if output.json {
                items.push(item_json(container, item));
            } else {
                let value = item
                    .value
                    .as_deref()
                    .map(|value| format!(" = {}", display_bytes(value)))
                    .unwrap_or_default();
                println!(
                    "{}  {}  v{}{value}",
                    display_bytes(&item.key),
                    item.etag,
                    item.version
                );
            }
        }
        token = page.continuation;
        if token.is_none() || !args.all {
            break;
        }
    }
    common::close(store)?;
    if output.json {
        output.print_json(&json!({"items": items, "continuation": token}));
    } else if let Some(token) = token {
        println!("continuation: {token}");
        eprintln!("tenure: more items: pass --continuation TOKEN for the next page, or --all for every page");
    }
    common::ok()
}
