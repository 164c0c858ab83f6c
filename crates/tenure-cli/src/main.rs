//! `tenure`: look inside a store, check it, repair it, and try things.
//!
//! One module per subcommand; `common` holds what they share (opening a store, conditions as
//! flags, output, errors and exit codes). The behaviour contract is docs/spec.md; docs/cli.md
//! describes every command.

mod bench;
mod check;
mod common;
mod container;
mod demo;
mod dump;
mod feed;
mod items;
mod lease;
mod lock;
mod stat;

use std::path::PathBuf;
use std::process::ExitCode;

use clap::{Parser, Subcommand};

use common::{CliError, Output};

const EXIT_CODES: &str = "\
Exit codes:
  0  success
  1  verify found problems, or the engine rejected the operation (a docs/spec.md code with status
     304, 404, 409, 412 or 424: ConditionNotMet, NotFound, LeaseIdMissing, ObjectLocked, ...)
  2  bad usage: unknown command or flag, malformed argument (InvalidArgument, 400)
  3  no tenure store at DIR
  4  StoreLocked (423): another process has the store open
  5  Corruption (500): the store refuses to open; run `tenure verify DIR`, then `tenure repair DIR`
  6  Io, Closed or UsedAfterFork (500): the operating system refused (errno and path are
     printed), or the store cannot be used from this process
  7  Compacted (410): `changes --since V` asked for history compaction removed; the oldest
     available version is printed (resume from it)
  8  StorageFull (507): the disk (or --quota-bytes) has no room for the write; nothing changed.
     Deletes and `tenure compact` still work and free space; `tenure stat` shows it
  9  Unavailable (503): the etcd cluster of an etcd:// store did not answer in time; the
     message says whether a write's outcome is unknown

Errors print the code name of docs/spec.md §12, its status, the container and key they concern,
one line of explanation and the item's current ETag where the engine reports one, on stderr;
with --json they are also printed as {\"error\": {...}} on stdout (code, status, message, exit,
and container, key, etag, oldest_available where known).";

/// The tenure command-line tool: try the engine, look inside a store, check and repair it.
#[derive(Parser, Debug)]
#[command(name = "tenure", version, about, after_help = EXIT_CODES)]
struct Cli {
    /// Print machine-readable JSON on stdout (get, list, stat, lease, changes, verify, ...).
    #[arg(long, global = true)]
    json: bool,
    /// Never draw progress bars (they are drawn on stderr only when it is a terminal).
    #[arg(long, global = true)]
    no_progress: bool,
    /// The most bytes the store's segment files may take: a write that adds data past it
    /// fails with StorageFull (exit 8), as on a full disk (docs/spec.md §11).
    #[arg(long, global = true, value_name = "BYTES", value_parser = clap::value_parser!(u64).range(1..))]
    quota_bytes: Option<u64>,
    /// Bytes of free disk that writes adding data leave for deletes and compaction
    /// (default: two segments, at least 8 MiB).
    #[arg(long, global = true, value_name = "BYTES")]
    space_reserve_bytes: Option<u64>,
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand, Debug)]
enum Command {
    /// Run the source documents' scenarios end to end on a real store, then a short
    /// throughput run.
    Demo(demo::DemoArgs),
    /// Containers, items, versions, segments, live and dead bytes, active leases and locks.
    Stat(stat::StatArgs),
    /// Create, delete, list or show containers (`create` also creates the store).
    #[command(subcommand)]
    Container(container::ContainerCommand),
    /// Read an item (read conditions and --lease-id as flags).
    Get(items::GetArgs),
    /// Write an item (conditions, --lease-id, --lock-handle, --ttl as flags).
    Put(items::PutArgs),
    /// Delete an item (conditions, --lease-id, --lock-handle as flags).
    Delete(items::DeleteArgs),
    /// List containers, or the items of one container in key order (paged).
    List(items::ListArgs),
    /// Item and container leases (Azure blob leases): acquire, renew, change, release,
    /// break, show.
    #[command(subcommand)]
    Lease(lease::LeaseCommand),
    /// Cache locks (AppFabric get-and-lock): lock an item, or unlock it.
    #[command(subcommand)]
    Lock(lock::LockCommand),
    /// Check every record of the log without opening the store (exit 0 clean, 1 problems).
    Verify(check::VerifyArgs),
    /// Salvage every record that checks out into a consistent store, and report what was
    /// dropped.
    Repair(check::RepairArgs),
    /// Reclaim the space of superseded, deleted and expired items.
    Compact(stat::CompactArgs),
    /// The change feed: every committed change after a version.
    Changes(feed::ChangesArgs),
    /// Every container and item as JSON lines.
    Dump(dump::DumpArgs),
    /// Built-in workloads on a scratch store, printed as a table.
    Bench(bench::BenchArgs),
}

/// A store directory argument.
#[derive(clap::Args, Debug, Clone)]
pub struct StoreDir {
    /// The store directory, or etcd://host:port[,host:port...]/prefix for a store on an etcd
    /// cluster.
    #[arg(value_name = "DIR")]
    pub dir: PathBuf,
}

fn run(cli: Cli) -> Result<ExitCode, CliError> {
    let output = Output {
        json: cli.json,
        progress: !cli.no_progress && !cli.json,
    };
    common::set_space_options(cli.quota_bytes, cli.space_reserve_bytes);
    match cli.command {
        Command::Demo(args) => demo::run(&args, &output),
        Command::Stat(args) => stat::run(&args, &output),
        Command::Container(command) => container::run(command, &output),
        Command::Get(args) => items::get(&args, &output),
        Command::Put(args) => items::put(&args, &output),
        Command::Delete(args) => items::delete(&args, &output),
        Command::List(args) => items::list(&args, &output),
        Command::Lease(command) => lease::run(command, &output),
        Command::Lock(command) => lock::run(command, &output),
        Command::Verify(args) => check::verify(&args, &output),
        Command::Repair(args) => check::repair(&args, &output),
        Command::Compact(args) => stat::compact(&args, &output),
        Command::Changes(args) => feed::run(&args, &output),
        Command::Dump(args) => dump::run(&args, &output),
        Command::Bench(args) => bench::run(&args, &output),
    }
}

fn main() -> ExitCode {
    // Like other Unix tools, end quietly when the reader of stdout goes away (`tenure dump |
    // head`) instead of panicking in println!.
    // SAFETY: restoring the default disposition of SIGPIPE before any thread starts.
    unsafe {
        libc::signal(libc::SIGPIPE, libc::SIG_DFL);
    }
    let cli = Cli::parse();
    let json = cli.json;
    match run(cli) {
        Ok(code) => code,
        Err(error) => error.report(json),
    }
}
