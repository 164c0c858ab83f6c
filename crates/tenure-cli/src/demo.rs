//! `tenure demo [DIR]`: the source documents' scenarios end to end on a real store, in a few
//! readable lines each, then a short throughput run.
//!
//! The story is deterministic: it starts from a fresh store (an earlier demo store in DIR is
//! replaced), prints no random ids or times, and runs everything that races (and so consumes
//! versions unpredictably) on a second store, `DIR/scratch`, whose clock is a `ManualClock` so
//! lease break periods and lock timeouts pass without sleeping.

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Barrier, Mutex};
use std::time::Duration;

use tenure::internals::{FileStorage, Storage};
use tenure::{
    Conditions, ContainerOptions, ETag, Error, ErrorCode, LeaseRequest, ManualClock, ReadOptions,
    Store, StoreOptions, WriteOptions,
};

use crate::bench::{self, Workload};
use crate::common::{self, CliError, CliResult, Output};

/// A file the demo leaves in its directory, so a later run knows it may replace it.
const MARKER: &str = "tenure-demo.marker";

#[derive(clap::Args, Debug)]
pub struct DemoArgs {
    /// The demo store's directory (replaced if an earlier demo made it).
    #[arg(default_value = "tenure-demo")]
    pub dir: PathBuf,
    /// Length of the whole throughput run in milliseconds (split over its three workloads).
    #[arg(long, default_value_t = 3000, allow_negative_numbers = true)]
    pub duration_ms: u64,
    /// A fast run for tests: fewer race rounds and a throughput run of at most 300 ms.
    #[arg(long)]
    pub quick: bool,
}

fn code_of(result: Result<impl Sized, Error>) -> String {
    match result {
        Ok(_) => "ok (unexpected!)".to_owned(),
        Err(error) => format!("{} ({})", error.code(), error.status()),
    }
}

fn text(item: &tenure::Item) -> String {
    String::from_utf8_lossy(item.value.as_deref().unwrap_or_default()).into_owned()
}

/// Makes DIR a fresh, empty directory, refusing to touch anything the demo did not make.
fn fresh_directory(dir: &Path) -> CliResult<()> {
    let is_empty =
        |dir: &Path| std::fs::read_dir(dir).map_or(true, |mut entries| entries.next().is_none());
    if dir.exists() && !is_empty(dir) {
        if !dir.join(MARKER).is_file() {
            return Err(CliError::usage(
                "DIR",
                format!(
                    "{} exists and was not made by `tenure demo`; pick another directory",
                    dir.display()
                ),
            ));
        }
        // Refuse while someone has the old demo store open.
        let lock = FileStorage::new(dir)
            .try_lock()
            .map_err(|error| CliError::io(dir, "flock", error))?;
        if lock.is_none() {
            return Err(Error::StoreLocked {
                path: dir.to_path_buf(),
            }
            .into());
        }
        std::fs::remove_dir_all(dir).map_err(|error| CliError::io(dir, "remove", error))?;
    }
    std::fs::create_dir_all(dir).map_err(|error| CliError::io(dir, "create", error))?;
    std::fs::write(
        dir.join(MARKER),
        "made by `tenure demo`; the next demo run replaces this directory\n",
    )
    .map_err(|error| CliError::io(dir, "write", error))
}

pub fn run(args: &DemoArgs, output: &Output) -> CliResult {
    if args.duration_ms == 0 || args.duration_ms > 600_000 {
        return Err(CliError::usage("--duration-ms", "must be 1..=600000"));
    }
    let dir = &args.dir;
    fresh_directory(dir)?;
    let race_rounds = if args.quick { 50 } else { 200 };
    let throughput_ms = if args.quick {
        args.duration_ms.min(300)
    } else {
        args.duration_ms
    };

    println!(
        "tenure demo: a real store in {} (sync durability: every acknowledged write is on disk)",
        dir.display()
    );
    let store = Store::open(dir, common::store_options())?;
    optimistic(&store)?;
    lease(&store)?;
    cache(&store)?;
    let store = paging(store, dir)?;

    let scratch_dir = dir.join("scratch");
    let clock = Arc::new(ManualClock::new(common::now_micros()));
    let scratch = Store::open(
        &scratch_dir,
        StoreOptions {
            clock: clock.clone(),
            ..common::store_options()
        },
    )?;
    time_travel(&scratch, &clock)?;
    races(&scratch, race_rounds)?;
    common::close(scratch)?;

    throughput(&store, output, Duration::from_millis(throughput_ms))?;
    common::close(store)?;
    println!();
    println!("The store is left in {}. Try:", dir.display());
    // The program as it was started (target/release/tenure under `cargo run`).
    let program = std::env::args()
        .next()
        .unwrap_or_else(|| "tenure".to_owned());
    let dir = dir.display();
    println!("  {program} stat {dir}");
    println!("  {program} list {dir} inventory --values");
    println!("  {program} lease show {dir} inventory RadioInventory");
    println!("  {program} changes {dir} --since 0");
    println!("  {program} verify {dir}");
    common::ok()
}

/// One step of the story: what someone did, and what happened, in two columns.
fn say(action: impl std::fmt::Display, outcome: impl std::fmt::Display) {
    println!("   {:<50} -> {outcome}", action.to_string());
}

fn note(text: impl std::fmt::Display) {
    println!("   {text}");
}

fn heading(text: &str) {
    println!();
    println!("{text}");
}

fn optimistic(store: &Store) -> CliResult<()> {
    heading(
        "1. Optimistic concurrency: two writers, one ETag (Azure Blob If-Match, Cosmos DB _etag)",
    );
    store.create_container("inventory", &ContainerOptions::default())?;
    let key = b"RadioInventory";
    let etag = store.put("inventory", key, b"count=10", &WriteOptions::default())?;
    say(
        "put inventory/RadioInventory count=10",
        format!("ok, ETag {etag}"),
    );
    note(format!("Alice and Bob both read it at ETag {etag}"));
    let if_match = |etag: ETag| WriteOptions::with_conditions(Conditions::if_match(etag));
    let alice = store.put("inventory", key, b"count=9", &if_match(etag))?;
    say(
        format!("Alice: put count=9 --if-match {etag}"),
        format!("ok, ETag {alice}"),
    );
    let bob = store.put("inventory", key, b"count=9", &if_match(etag));
    let current = bob.as_ref().err().and_then(Error::current_etag);
    say(
        format!("Bob:   put count=9 --if-match {etag}"),
        format!(
            "{}, current ETag {}",
            code_of(bob),
            current.map(|etag| etag.to_string()).unwrap_or_default()
        ),
    );
    let fresh = store.get("inventory", key, &ReadOptions::default())?;
    note(format!(
        "Bob re-reads: {} at ETag {}",
        text(&fresh),
        fresh.etag
    ));
    let bob = store.put("inventory", key, b"count=8", &if_match(fresh.etag))?;
    say(
        format!("Bob:   put count=8 --if-match {}", fresh.etag),
        format!("ok, ETag {bob}"),
    );
    note("no update is lost: Bob's stale write was refused, not applied over Alice's");
    Ok(())
}

fn lease(store: &Store) -> CliResult<()> {
    heading("2. Pessimistic concurrency: a lease on the item (Azure blob lease)");
    let key = b"RadioInventory";
    let lease = store.acquire_lease("inventory", key, &LeaseRequest::seconds(15)?)?;
    say(
        "holder: acquire a 15 s lease",
        format!("ok, fence {}", lease.fence),
    );
    let writer = store.put("inventory", key, b"count=0", &WriteOptions::default());
    say("writer without the lease id: put count=0", code_of(writer));
    let with_lease = WriteOptions {
        lease_id: Some(lease.id),
        ..WriteOptions::default()
    };
    let etag = store.put("inventory", key, b"count=7", &with_lease)?;
    say(
        "holder: put count=7 --lease-id <its id>",
        format!("ok, ETag {etag}"),
    );
    let left = store.break_lease("inventory", key, Some(0))?;
    say(
        "operator: break the lease, break period 0",
        format!(
            "broken, {} s until it can be acquired again",
            left.as_secs()
        ),
    );
    let late = store.put("inventory", key, b"count=6", &with_lease);
    say(
        "holder, unaware: put count=6 --lease-id <its id>",
        code_of(late),
    );
    let etag = store.put("inventory", key, b"count=6", &WriteOptions::default())?;
    say(
        "writer without the lease id: put count=6",
        format!("ok, ETag {etag} (the broken lease is cleared)"),
    );
    Ok(())
}

fn cache(store: &Store) -> CliResult<()> {
    heading("3. A cache shared by two clients (AppFabric DataCache): versions, then get-and-lock");
    store.create_container("cache", &ContainerOptions::default())?;
    let key = b"RadioInventory";
    store.put("cache", key, b"radios=12", &WriteOptions::default())?;
    let seen = store.get("cache", key, &ReadOptions::default())?;
    let version = seen.version;
    note(format!(
        "client 1 and client 2 both get cache/RadioInventory = {} at version {version}",
        text(&seen)
    ));
    let versioned = |version| WriteOptions::with_conditions(Conditions::if_version(version));
    let one = store.put("cache", key, b"radios=11", &versioned(version))?;
    say(
        format!("client 1: put radios=11 --if-version {version}"),
        format!("ok, version {}", one.version()),
    );
    let two = store.put("cache", key, b"radios=11", &versioned(version));
    say(
        format!("client 2: put radios=11 --if-version {version}"),
        code_of(two),
    );

    let (item, handle) = store.get_and_lock("cache", key, Duration::from_secs(30), false)?;
    let item = item.map(|item| text(&item)).unwrap_or_default();
    say(
        "client 1: get-and-lock for 30 s",
        format!("ok, {item}, locked"),
    );
    let other = store.get_and_lock("cache", key, Duration::from_secs(30), false);
    say("client 2: get-and-lock", code_of(other));
    let plain = store.get("cache", key, &ReadOptions::default())?;
    say(
        "client 2: plain get (a lock never blocks reads)",
        format!("ok, {}", text(&plain)),
    );
    let etag = store.put_and_unlock("cache", key, b"radios=10", handle, Default::default())?;
    say(
        "client 1: put-and-unlock radios=10",
        format!("ok, version {}, unlocked", etag.version()),
    );
    let (item, handle) = store.get_and_lock("cache", key, Duration::from_secs(30), false)?;
    let item = item.map(|item| text(&item)).unwrap_or_default();
    say("client 2: get-and-lock", format!("ok now, {item}"));
    store.unlock("cache", key, handle, None)?;
    say("client 2: unlock", "ok");
    Ok(())
}

/// The Cosmos DB loop: read a container page by page and save the continuation token after
/// each page with `update()`, so a restarted reader resumes where it stopped.
fn paging(store: Store, dir: &Path) -> CliResult<Store> {
    heading("4. Documents: paging, the continuation token saved with update() (Cosmos DB)");
    store.create_container("orders", &ContainerOptions::default())?;
    store.create_container("checkpoints", &ContainerOptions::default())?;
    let mut batch = store.batch();
    for number in 1..=7 {
        let key = format!("order-{number:03}");
        let value = format!("{{\"order\": {number}, \"item\": \"radio\"}}");
        batch.put(
            "orders",
            key.as_bytes(),
            value.as_bytes(),
            WriteOptions::default(),
        );
    }
    batch.put(
        "checkpoints",
        b"orders-reader",
        b"",
        WriteOptions::default(),
    );
    let version = batch.commit()?;
    say(
        "batch: 7 orders and an empty checkpoint",
        format!("committed at version {version}"),
    );
    let mut store = store;
    // Bounded: 7 orders in pages of 3 take 3 pages.
    for page_number in 1..=10 {
        let checkpoint = store.get("checkpoints", b"orders-reader", &ReadOptions::default())?;
        let token = checkpoint.value.filter(|token| !token.is_empty());
        let token = token.map(|token| String::from_utf8_lossy(&token).into_owned());
        let page = store.list("orders", b"", 3, token.as_deref(), false)?;
        let keys: Vec<String> = page
            .items
            .iter()
            .map(|item| String::from_utf8_lossy(&item.key).into_owned())
            .collect();
        let next = page.continuation.clone().unwrap_or_default();
        let saved = store.update("checkpoints", b"orders-reader", 10, |_| {
            next.clone().into_bytes()
        })?;
        let action = format!("page {page_number}: {}", keys.join(" "));
        if page.continuation.is_none() {
            say(
                action,
                format!("last page; checkpoint cleared, ETag {}", saved.etag),
            );
            break;
        }
        say(
            action,
            format!("token saved, checkpoint ETag {}", saved.etag),
        );
        if page_number == 1 {
            store.close()?;
            store = Store::open(dir, common::store_options())?;
            note("the reader restarts (store closed and reopened) and resumes from its token");
        }
    }
    Ok(store)
}

fn time_travel(store: &Store, clock: &ManualClock) -> CliResult<()> {
    heading("5. Time passes, without sleeping: a second store (DIR/scratch) on a manual clock");
    store.create_container("jobs", &ContainerOptions::default())?;
    let key = b"nightly-report";
    store.put("jobs", key, b"pending", &WriteOptions::default())?;
    let first = store.acquire_lease("jobs", key, &LeaseRequest::seconds(60)?)?;
    say(
        "worker A: acquire a 60 s lease",
        format!("ok, fence {}", first.fence),
    );
    let left = store.break_lease("jobs", key, Some(10))?;
    say(
        "operator: break it with a 10 s break period",
        format!("breaking, {} s left", left.as_secs()),
    );
    let early = store.acquire_lease("jobs", key, &LeaseRequest::seconds(60)?);
    say("worker B: acquire", code_of(early));
    clock.advance_seconds(10);
    let info = store.lease_info("jobs", key)?;
    say(
        "(clock +10 s) lease show",
        crate::lease::state_name(info.state),
    );
    let second = store.acquire_lease("jobs", key, &LeaseRequest::seconds(60)?)?;
    say(
        "worker B: acquire",
        format!(
            "ok, fence {} > {}: a stale holder can be fenced off",
            second.fence, first.fence
        ),
    );
    store.release_lease("jobs", key, second.id)?;

    let (_, _lost_handle) = store.get_and_lock("jobs", key, Duration::from_secs(30), false)?;
    say(
        "client C: get-and-lock for 30 s, then crashes",
        "ok, locked",
    );
    let blocked = store.get_and_lock("jobs", key, Duration::from_secs(30), false);
    say("client D: get-and-lock", code_of(blocked));
    clock.advance_seconds(30);
    let (_, handle) = store.get_and_lock("jobs", key, Duration::from_secs(30), false)?;
    say(
        "(clock +30 s) client D: get-and-lock",
        "ok: C's lock timed out by itself",
    );
    store.put_and_unlock("jobs", key, b"done", handle, Default::default())?;
    Ok(())
}

fn races(store: &Store, rounds: u64) -> CliResult<()> {
    heading("6. Real races between two threads (on the second store)");
    store.create_container("race", &ContainerOptions::default())?;
    let key = b"contested";
    store.put("race", key, b"0", &WriteOptions::default())?;
    let wins = AtomicU64::new(0);
    let refusals = AtomicU64::new(0);
    let double_wins = AtomicU64::new(0);
    let start = Barrier::new(3);
    let finish = Barrier::new(3);
    let current = AtomicU64::new(0);
    // Threads never leave a round early (the barriers would wait forever): the first error is
    // kept and reported after the last round.
    let failure: Mutex<Option<Error>> = Mutex::new(None);
    let fail = |error: Error| {
        failure
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .get_or_insert(error);
    };
    std::thread::scope(|scope| {
        for _ in 0..2 {
            scope.spawn(|| {
                for _ in 0..rounds {
                    start.wait();
                    let etag = ETag(current.load(Ordering::Acquire));
                    let options = WriteOptions::with_conditions(Conditions::if_match(etag));
                    match store.put("race", key, b"mine", &options) {
                        Ok(_) => {
                            wins.fetch_add(1, Ordering::AcqRel);
                        }
                        Err(error) if error.code() == ErrorCode::ConditionNotMet => {
                            refusals.fetch_add(1, Ordering::AcqRel);
                        }
                        Err(error) => fail(error),
                    }
                    finish.wait();
                }
            });
        }
        for _ in 0..rounds {
            let before = wins.load(Ordering::Acquire);
            match store.get_properties("race", key, &ReadOptions::default()) {
                Ok(item) => current.store(item.etag.version(), Ordering::Release),
                Err(error) => fail(error),
            }
            start.wait();
            finish.wait();
            if wins.load(Ordering::Acquire) - before > 1 {
                double_wins.fetch_add(1, Ordering::AcqRel);
            }
        }
    });
    if let Some(error) = failure
        .into_inner()
        .unwrap_or_else(std::sync::PoisonError::into_inner)
    {
        return Err(error.into());
    }
    say(
        format!("{rounds} rounds: both put --if-match the same ETag"),
        format!(
            "{} wins, {} ConditionNotMet, {} rounds with two winners",
            wins.load(Ordering::Acquire),
            refusals.load(Ordering::Acquire),
            double_wins.load(Ordering::Acquire)
        ),
    );

    store.put("race", b"counter", b"0", &WriteOptions::default())?;
    let per_thread = rounds;
    std::thread::scope(|scope| -> Result<(), Error> {
        let workers: Vec<_> = (0..2)
            .map(|_| {
                scope.spawn(|| -> Result<(), Error> {
                    for _ in 0..per_thread {
                        store.update("race", b"counter", 10_000, |value| {
                            let count: u64 = String::from_utf8_lossy(value).parse().unwrap_or(0);
                            (count + 1).to_string().into_bytes()
                        })?;
                    }
                    Ok(())
                })
            })
            .collect();
        for worker in workers {
            worker.join().unwrap_or_else(|_| {
                Err(Error::InvalidArgument {
                    argument: "demo",
                    reason: "an update thread panicked".to_owned(),
                })
            })?;
        }
        Ok(())
    })?;
    let counter = store.get("race", b"counter", &ReadOptions::default())?;
    say(
        format!("both add 1 to a counter {per_thread} times with update()"),
        format!("counter = {} (no lost update)", text(&counter)),
    );
    Ok(())
}

fn throughput(store: &Store, output: &Output, total: Duration) -> CliResult<()> {
    heading(&format!(
        "7. Throughput on the demo store: one thread, {} ms, sync durability (each write waits for fdatasync)",
        total.as_millis()
    ));
    let workloads = [Workload::Get, Workload::ConditionalPut, Workload::Lease];
    let each = total / workloads.len() as u32;
    let mut bed = bench::prepare(store, "throughput", 1000, 100)?;
    let bar = common::progress_bar(output, total.as_millis() as u64, "throughput", false);
    let mut measurements = Vec::new();
    for (done, workload) in workloads.into_iter().enumerate() {
        bar.set_message(workload.name());
        let base = each.as_millis() as u64 * done as u64;
        measurements.push(bench::measure(
            store,
            &mut bed,
            workload,
            each,
            &mut |elapsed| {
                bar.set_position(base + elapsed.as_millis() as u64);
            },
        )?);
    }
    bar.finish_and_clear();
    for measurement in &measurements {
        say(
            measurement.workload.name(),
            format!("{:>9.0} ops/s", measurement.per_second()),
        );
    }
    Ok(())
}
