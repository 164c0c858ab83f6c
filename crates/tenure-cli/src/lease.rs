//! `tenure lease acquire | renew | change | release | break | show`: item leases, or the
//! container's lease when KEY is left out (docs/spec.md §4, §5).

use serde_json::{json, Value};
use tenure::{Lease, LeaseDuration, LeaseInfo, LeaseRequest, LeaseState};

use crate::common::{self, open_existing, About, CliError, CliResult, Output};
use crate::StoreDir;

/// Which lease: an item's, or the container's when KEY is omitted.
#[derive(clap::Args, Debug)]
pub struct Target {
    #[command(flatten)]
    pub store: StoreDir,
    /// The container.
    pub container: String,
    /// The item; leave it out to act on the container's lease.
    pub key: Option<String>,
}

#[derive(clap::Subcommand, Debug)]
pub enum LeaseCommand {
    /// Acquire a lease: 15..=60 seconds, or -1 for infinite. Prints the lease id and fence.
    Acquire {
        #[command(flatten)]
        target: Target,
        /// Seconds (15..=60) or -1 for an infinite lease.
        #[arg(long, value_name = "SECONDS", allow_negative_numbers = true)]
        duration: i64,
        /// Acquire with this id instead of a generated one.
        #[arg(long, value_name = "ID")]
        proposed_id: Option<String>,
        /// A label lease show prints (who holds it).
        #[arg(long, value_name = "LABEL")]
        holder: Option<String>,
    },
    /// Renew the lease (its full duration again).
    Renew {
        #[command(flatten)]
        target: Target,
        #[arg(long, value_name = "ID")]
        lease_id: String,
    },
    /// Change the lease's id.
    Change {
        #[command(flatten)]
        target: Target,
        #[arg(long, value_name = "ID")]
        lease_id: String,
        #[arg(long, value_name = "ID")]
        proposed_id: String,
    },
    /// Release the lease.
    Release {
        #[command(flatten)]
        target: Target,
        #[arg(long, value_name = "ID")]
        lease_id: String,
    },
    /// Break the lease (no id needed). Prints the seconds until it can be acquired again.
    Break {
        #[command(flatten)]
        target: Target,
        /// 0..=60 seconds; without it a fixed lease breaks at its end, an infinite one at once.
        #[arg(long, value_name = "SECONDS", allow_negative_numbers = true)]
        break_period: Option<u32>,
    },
    /// The lease's state, id, fence, time left and holder.
    Show {
        #[command(flatten)]
        target: Target,
    },
}

pub fn state_name(state: LeaseState) -> &'static str {
    match state {
        LeaseState::Available => "available",
        LeaseState::Leased => "leased",
        LeaseState::Expired => "expired",
        LeaseState::Breaking => "breaking",
        LeaseState::Broken => "broken",
    }
}

pub fn lease_info_json(info: &LeaseInfo) -> Value {
    json!({
        "state": state_name(info.state),
        "lease_id": info.id.map(|id| id.to_string()),
        "fence": info.fence,
        "remaining_ms": info.remaining_micros.map(|micros| micros / 1000),
        "holder": info.holder,
    })
}

pub fn lease_info_text(info: &LeaseInfo) -> String {
    let mut text = state_name(info.state).to_owned();
    if let Some(id) = info.id {
        text.push_str(&format!(", id {id}"));
    }
    if let Some(fence) = info.fence {
        text.push_str(&format!(", fence {fence}"));
    }
    if let Some(micros) = info.remaining_micros {
        text.push_str(&format!(", {:.1} s left", micros as f64 / 1e6));
    }
    if let Some(holder) = &info.holder {
        text.push_str(&format!(", holder {holder:?}"));
    }
    text
}

fn print_lease(output: &Output, lease: &Lease) {
    if output.json {
        output.print_json(&json!({"lease_id": lease.id.to_string(), "fence": lease.fence}));
    } else {
        println!("lease_id: {}", lease.id);
        println!("fence:    {}", lease.fence);
    }
}

pub fn run(command: LeaseCommand, output: &Output) -> CliResult {
    match command {
        LeaseCommand::Acquire {
            target,
            duration,
            proposed_id,
            holder,
        } => {
            let duration = LeaseDuration::from_seconds(duration).map_err(|_| {
                CliError::usage(
                    "--duration",
                    "a lease lasts 15..=60 seconds, or -1 for infinite",
                )
            })?;
            let request = LeaseRequest {
                duration,
                proposed_id: proposed_id
                    .as_deref()
                    .map(|text| common::parse_lease_id("--proposed-id", text))
                    .transpose()?,
                holder,
            };
            let store = open_existing(&target.store.dir)?;
            let lease = match &target.key {
                Some(key) => store.acquire_lease(&target.container, key.as_bytes(), &request),
                None => store.acquire_container_lease(&target.container, &request),
            }
            .about(&target.container, target.key.as_deref())?;
            common::close(store)?;
            print_lease(output, &lease);
        }
        LeaseCommand::Renew { target, lease_id } => {
            let id = common::parse_lease_id("--lease-id", &lease_id)?;
            let store = open_existing(&target.store.dir)?;
            let lease = match &target.key {
                Some(key) => store.renew_lease(&target.container, key.as_bytes(), id),
                None => store.renew_container_lease(&target.container, id),
            }
            .about(&target.container, target.key.as_deref())?;
            common::close(store)?;
            print_lease(output, &lease);
        }
        LeaseCommand::Change {
            target,
            lease_id,
            proposed_id,
        } => {
            let id = common::parse_lease_id("--lease-id", &lease_id)?;
            let proposed = common::parse_lease_id("--proposed-id", &proposed_id)?;
            let store = open_existing(&target.store.dir)?;
            let lease = match &target.key {
                Some(key) => store.change_lease(&target.container, key.as_bytes(), id, proposed),
                None => store.change_container_lease(&target.container, id, proposed),
            }
            .about(&target.container, target.key.as_deref())?;
            common::close(store)?;
            print_lease(output, &lease);
        }
        LeaseCommand::Release { target, lease_id } => {
            let id = common::parse_lease_id("--lease-id", &lease_id)?;
            let store = open_existing(&target.store.dir)?;
            match &target.key {
                Some(key) => store.release_lease(&target.container, key.as_bytes(), id),
                None => store.release_container_lease(&target.container, id),
            }
            .about(&target.container, target.key.as_deref())?;
            common::close(store)?;
            if output.json {
                output.print_json(&json!({"released": true}));
            } else {
                println!("released");
            }
        }
        LeaseCommand::Break {
            target,
            break_period,
        } => {
            if break_period.is_some_and(|period| period > 60) {
                return Err(CliError::usage("--break-period", "0..=60 seconds"));
            }
            let store = open_existing(&target.store.dir)?;
            let left = match &target.key {
                Some(key) => store.break_lease(&target.container, key.as_bytes(), break_period),
                None => store.break_container_lease(&target.container, break_period),
            }
            .about(&target.container, target.key.as_deref())?;
            common::close(store)?;
            if output.json {
                output
                    .print_json(&json!({"broken": true, "remaining_ms": left.as_millis() as u64}));
            } else {
                println!(
                    "broken; a new lease can be acquired in {:.1} s",
                    left.as_secs_f64()
                );
            }
        }
        LeaseCommand::Show { target } => {
            let store = common::open_read_only(&target.store.dir)?;
            let info = match &target.key {
                Some(key) => store.lease_info(&target.container, key.as_bytes()),
                None => store.container_lease_info(&target.container),
            }
            .about(&target.container, target.key.as_deref())?;
            common::close(store)?;
            if output.json {
                output.print_json(&lease_info_json(&info));
            } else {
                println!("{}", lease_info_text(&info));
            }
        }
    }
    common::ok()
}
