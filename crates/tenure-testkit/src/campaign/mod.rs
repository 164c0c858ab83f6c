//! Reliability campaigns: seeded scenarios with their checks, shared by the `torture` binary,
//! the fuzz targets (through [`ByteRng`]) and the integration tests.
//!
//! A case is a function of one random source: from a `u64` seed (`StdRng`) in campaigns and
//! tests, from the fuzzer's bytes in fuzz targets. A case panics when a check fails; the
//! harness here turns the panic into a failure that names the seed and the command that
//! replays it.

pub mod bank;
pub mod byte_rng;
pub mod corruption;
pub mod crash;
#[cfg(feature = "ffi")]
pub mod ffi_calls;
pub mod histories;
pub mod hostile;
pub mod image;
pub mod io_faults;
pub mod kill;
pub mod lease_schedule;
pub mod workload;

use std::cell::RefCell;
use std::path::PathBuf;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Mutex;
use std::time::{Duration, Instant};

pub use byte_rng::ByteRng;

/// How much a run does: `Ci` is what the test command runs, `Long` the documented soak.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Tier {
    Ci,
    Long,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Campaign {
    /// Simulated power loss: unsynced sectors dropped, kept or torn (store and raw log).
    Crash,
    /// A real writer process killed with SIGKILL.
    Kill,
    /// Bit flips, zeroed and misdirected sectors in a closed store.
    Corruption,
    /// EIO at the n-th storage call of a workload, for every n.
    IoFaults,
    /// Linearizability of concurrent get / put / conditional put / delete histories.
    Linearizability,
    /// Snapshot isolation: concurrent transfer batches, every snapshot conserves the total.
    Bank,
    /// Lease and lock schedules with clock moves, reopens and crashes, against the lease model.
    Leases,
}

impl Campaign {
    pub const ALL: [Campaign; 7] = [
        Campaign::Crash,
        Campaign::Kill,
        Campaign::Corruption,
        Campaign::IoFaults,
        Campaign::Linearizability,
        Campaign::Bank,
        Campaign::Leases,
    ];

    pub fn name(self) -> &'static str {
        match self {
            Campaign::Crash => "crash",
            Campaign::Kill => "kill",
            Campaign::Corruption => "corruption",
            Campaign::IoFaults => "io-faults",
            Campaign::Linearizability => "linearizability",
            Campaign::Bank => "bank",
            Campaign::Leases => "leases",
        }
    }

    pub fn parse(name: &str) -> Option<Campaign> {
        Campaign::ALL
            .into_iter()
            .find(|campaign| campaign.name() == name)
    }

    /// What one case is, for the report.
    pub fn unit(self) -> &'static str {
        match self {
            Campaign::Crash => "simulated crashes",
            Campaign::Kill => "kill -9 cases (2 cycles each)",
            Campaign::Corruption => "corruptions",
            Campaign::IoFaults => "workloads failed at every storage call",
            Campaign::Linearizability => "linearizability histories",
            Campaign::Bank => "snapshot-isolation histories",
            Campaign::Leases => "lease schedules",
        }
    }

    /// Cases per tier (docs/reliability.md).
    pub fn count(self, tier: Tier) -> u64 {
        match (self, tier) {
            (Campaign::Crash, Tier::Ci) => 100_000,
            (Campaign::Crash, Tier::Long) => 10_000_000,
            (Campaign::Kill, Tier::Ci) => 500 / kill::CYCLES_PER_CASE,
            (Campaign::Kill, Tier::Long) => 20_000 / kill::CYCLES_PER_CASE,
            (Campaign::Corruption, Tier::Ci) => 20_000,
            (Campaign::Corruption, Tier::Long) => 2_000_000,
            (Campaign::IoFaults, Tier::Ci) => 1_000,
            (Campaign::IoFaults, Tier::Long) => 100_000,
            (Campaign::Linearizability, Tier::Ci) => 2_000,
            (Campaign::Linearizability, Tier::Long) => 200_000,
            (Campaign::Bank, Tier::Ci) => 500,
            (Campaign::Bank, Tier::Long) => 50_000,
            (Campaign::Leases, Tier::Ci) => 10_000,
            (Campaign::Leases, Tier::Long) => 1_000_000,
        }
    }
}

/// What a case may need from its runner.
#[derive(Debug, Clone)]
pub struct Context {
    /// The program a kill -9 cycle starts (and its leading arguments); it must behave like
    /// `log_writer DIRECTORY STREAM SEGMENT_SIZE_BYTES`.
    pub writer: Option<(PathBuf, Vec<String>)>,
    /// Where kill -9 cycles put their store directories.
    pub scratch: PathBuf,
}

impl Default for Context {
    fn default() -> Context {
        Context {
            writer: None,
            scratch: std::env::temp_dir(),
        }
    }
}

/// Runs one case of `campaign` from `seed` and returns how many checked events it made (power
/// cuts, injected faults, …). Panics when a check fails.
pub fn run_case(campaign: Campaign, seed: u64, context: &Context) -> u64 {
    match campaign {
        Campaign::Crash => crash::case_from_seed(seed),
        Campaign::Kill => kill::case(seed, context),
        Campaign::Corruption => corruption::case_from_seed(seed),
        Campaign::IoFaults => io_faults::case_from_seed(seed),
        Campaign::Linearizability => histories::case(seed),
        Campaign::Bank => bank::case(seed),
        Campaign::Leases => lease_schedule::case_from_seed(seed),
    }
}

#[derive(Debug)]
pub struct Failure {
    pub seed: u64,
    pub message: String,
}

#[derive(Debug)]
pub struct Report {
    pub campaign: Campaign,
    pub passed: u64,
    /// Checked events over the passed cases (power cuts, injected faults, …).
    pub events: u64,
    pub failures: Vec<Failure>,
    pub elapsed: Duration,
}

impl Report {
    /// The command that replays one failing case.
    pub fn replay_command(&self, seed: u64) -> String {
        format!(
            "cargo run --release -p tenure-testkit --bin torture -- --campaign {} --seed {seed} --count 1",
            self.campaign.name()
        )
    }
}

thread_local! {
    /// The message of the last panic on this thread (set by [`install_panic_hook`]).
    static LAST_PANIC: RefCell<Option<String>> = const { RefCell::new(None) };
}

/// Panics of every thread, counted by the hook: one on a thread no case runs on (an engine
/// background thread) would otherwise go unseen.
pub static PANICS: AtomicU64 = AtomicU64::new(0);

/// Replaces the panic hook with one that records the message (with its location) for the
/// harness instead of printing it, and counts every panic in [`PANICS`].
pub fn install_panic_hook() {
    std::panic::set_hook(Box::new(|info| {
        PANICS.fetch_add(1, Ordering::SeqCst);
        let message = info.to_string();
        LAST_PANIC.with(|last| *last.borrow_mut() = Some(message));
    }));
}

/// Runs one case and catches a failure as its message.
pub fn try_case(campaign: Campaign, seed: u64, context: &Context) -> Result<u64, String> {
    std::panic::catch_unwind(|| run_case(campaign, seed, context)).map_err(|payload| {
        LAST_PANIC
            .with(|last| last.borrow_mut().take())
            .or_else(|| payload.downcast_ref::<String>().cloned())
            .or_else(|| payload.downcast_ref::<&str>().map(|text| text.to_string()))
            .unwrap_or_else(|| "a panic without a message".to_owned())
    })
}

/// Runs cases `first_seed .. first_seed + count` on `threads` threads. Stops handing out new
/// seeds after `max_failures` failures.
pub fn run(
    campaign: Campaign,
    first_seed: u64,
    count: u64,
    threads: usize,
    context: &Context,
    max_failures: usize,
) -> Report {
    let started = Instant::now();
    let next = AtomicU64::new(0);
    let passed = AtomicU64::new(0);
    let events = AtomicU64::new(0);
    let failures = Mutex::new(Vec::new());
    std::thread::scope(|scope| {
        for _ in 0..threads.max(1) {
            scope.spawn(|| loop {
                let index = next.fetch_add(1, Ordering::Relaxed);
                if index >= count {
                    return;
                }
                let seed = first_seed.wrapping_add(index);
                match try_case(campaign, seed, context) {
                    Ok(count) => {
                        passed.fetch_add(1, Ordering::Relaxed);
                        events.fetch_add(count, Ordering::Relaxed);
                    }
                    Err(message) => {
                        let mut failures = failures.lock().unwrap_or_else(|e| e.into_inner());
                        failures.push(Failure { seed, message });
                        if failures.len() >= max_failures {
                            next.store(u64::MAX / 2, Ordering::Relaxed);
                        }
                    }
                }
            });
        }
    });
    let mut failures = failures.into_inner().unwrap_or_else(|e| e.into_inner());
    failures.sort_by_key(|failure| failure.seed);
    Report {
        campaign,
        passed: passed.into_inner(),
        events: events.into_inner(),
        failures,
        elapsed: started.elapsed(),
    }
}

/// Runs `count` cases from `first_seed` on every core and panics with the first failure and
/// its replay command: the integration tests' entry point.
pub fn assert_passes(campaign: Campaign, first_seed: u64, count: u64, context: &Context) {
    let threads = std::thread::available_parallelism().map_or(1, |n| n.get());
    let report = run(campaign, first_seed, count, threads, context, 1);
    if let Some(failure) = report.failures.first() {
        panic!(
            "{} case {} failed: {}\nreplay: {}",
            campaign.name(),
            failure.seed,
            failure.message,
            report.replay_command(failure.seed)
        );
    }
}
