//! `tenure container create | delete | list | show`.

use serde_json::{json, Value};
use tenure::{ContainerOptions, ContainerWriteOptions};

use crate::common::{
    self, format_time, open_existing, About, CliError, CliResult, ConditionArgs, Output,
};
use crate::StoreDir;

#[derive(clap::Subcommand, Debug)]
pub enum ContainerCommand {
    /// Create a container (and the store, if DIR holds none yet).
    Create {
        #[command(flatten)]
        store: StoreDir,
        /// The container name.
        name: String,
        /// Items expire this many seconds after their last write unless they set a TTL.
        #[arg(long, value_name = "SECONDS", allow_negative_numbers = true)]
        default_ttl: Option<u32>,
        /// Metadata NAME=VALUE (repeat).
        #[arg(long, value_name = "NAME=VALUE")]
        metadata: Vec<String>,
        /// Succeed if the container already exists.
        #[arg(long)]
        exist_ok: bool,
    },
    /// Delete a container and every item in it.
    Delete {
        #[command(flatten)]
        store: StoreDir,
        /// The container name.
        name: String,
        #[command(flatten)]
        conditions: ConditionArgs,
        /// The container's lease id (required while it is leased).
        #[arg(long, value_name = "ID")]
        lease_id: Option<String>,
    },
    /// List the containers.
    List {
        #[command(flatten)]
        store: StoreDir,
    },
    /// A container's properties.
    Show {
        #[command(flatten)]
        store: StoreDir,
        /// The container name.
        name: String,
    },
}

pub fn run(command: ContainerCommand, output: &Output) -> CliResult {
    match command {
        ContainerCommand::Create {
            store,
            name,
            default_ttl,
            metadata,
            exist_ok,
        } => {
            let options = ContainerOptions {
                metadata: common::parse_metadata(&metadata)?,
                default_ttl_seconds: default_ttl,
            };
            let handle = common::open_store(&store.dir, common::store_options())?;
            let created = match handle.create_container(&name, &options) {
                Ok(_) => true,
                Err(error)
                    if exist_ok && error.code() == tenure::ErrorCode::ContainerAlreadyExists =>
                {
                    false
                }
                Err(error) => return Err(CliError::from(error).about(&name, None)),
            };
            common::close(handle)?;
            if output.json {
                output.print_json(&json!({"container": name, "created": created}));
            } else if created {
                println!("created container {name}");
            } else {
                println!("container {name} already exists");
            }
        }
        ContainerCommand::Delete {
            store,
            name,
            conditions,
            lease_id,
        } => {
            let options = ContainerWriteOptions {
                conditions: conditions.parse()?,
                lease_id: lease_id
                    .as_deref()
                    .map(|text| common::parse_lease_id("--lease-id", text))
                    .transpose()?,
            };
            let handle = open_existing(&store.dir)?;
            handle
                .delete_container(&name, &options)
                .about(&name, None)?;
            common::close(handle)?;
            if output.json {
                output.print_json(&json!({"container": name, "deleted": true}));
            } else {
                println!("deleted container {name}");
            }
        }
        ContainerCommand::List { store } => {
            let handle = common::open_read_only(&store.dir)?;
            let names = handle.list_containers()?;
            common::close(handle)?;
            if output.json {
                output.print_json(&json!({ "containers": names }));
            } else {
                for name in names {
                    println!("{name}");
                }
            }
        }
        ContainerCommand::Show { store, name } => {
            let handle = common::open_read_only(&store.dir)?;
            let properties = handle.container_properties(&name).about(&name, None)?;
            let lease = handle.container_lease_info(&name).about(&name, None)?;
            common::close(handle)?;
            let metadata: serde_json::Map<String, Value> = properties
                .metadata
                .iter()
                .map(|(name, value)| (name.clone(), Value::from(value.as_str())))
                .collect();
            if output.json {
                output.print_json(&json!({
                    "container": properties.name,
                    "etag": properties.etag.to_string(),
                    "last_modified": format_time(properties.last_modified),
                    "default_ttl_seconds": properties.default_ttl_seconds,
                    "metadata": metadata,
                    "lease": crate::lease::lease_info_json(&lease),
                }));
            } else {
                println!("container:     {}", properties.name);
                println!("etag:          {}", properties.etag);
                println!("last_modified: {}", format_time(properties.last_modified));
                if let Some(ttl) = properties.default_ttl_seconds {
                    println!("default_ttl:   {ttl} s");
                }
                for (name, value) in &properties.metadata {
                    println!("metadata:      {name}={value}");
                }
                println!("lease:         {}", crate::lease::lease_info_text(&lease));
            }
        }
    }
    common::ok()
}
