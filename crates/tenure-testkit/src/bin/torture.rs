//! The reliability campaign command (docs/reliability.md).
//!
//! usage: torture [--tier ci|long] [--campaign NAME] [--seed S] [--count N] [--threads T]
//!
//! Runs every campaign (or one) for its tier's count of seeded cases, from seed S (default 1),
//! on T threads (default: four per core); prints each campaign's count and time and ends with
//! `N passed, M failed`. A failure prints its seed and the command that replays it. Exits
//! non-zero on any failure.
//!
//! `torture --writer DIRECTORY STREAM SEGMENT_SIZE_BYTES` is the child a kill -9 cycle starts
//! (it behaves like the `log_writer` binary); `torture --write-fuzz-corpus DIRECTORY` writes
//! the fuzz targets' seed corpora (committed under fuzz/corpus/).

use std::path::PathBuf;
use std::process::ExitCode;
use std::sync::atomic::Ordering;

use tenure_testkit::campaign::{self, kill, Campaign, Context, Tier};

const USAGE: &str =
    "usage: torture [--tier ci|long] [--campaign NAME] [--seed S] [--count N] [--threads T]\n\
campaigns: crash, kill, corruption, io-faults, linearizability, bank, leases";

struct Arguments {
    tier: Tier,
    campaign: Option<Campaign>,
    seed: u64,
    count: Option<u64>,
    threads: usize,
}

fn parse(mut arguments: impl Iterator<Item = String>) -> Result<Arguments, String> {
    let mut parsed = Arguments {
        tier: Tier::Ci,
        campaign: None,
        seed: 1,
        count: None,
        // Cases spend much of their time waiting (group-commit lingers, thread joins at
        // close, kill -9 sleeps), so four threads per core keep the cores busy.
        threads: 4 * std::thread::available_parallelism().map_or(1, |n| n.get()),
    };
    while let Some(flag) = arguments.next() {
        let mut value = || {
            arguments
                .next()
                .ok_or_else(|| format!("{flag} needs a value"))
        };
        match flag.as_str() {
            "--tier" => {
                parsed.tier = match value()?.as_str() {
                    "ci" => Tier::Ci,
                    "long" => Tier::Long,
                    other => return Err(format!("unknown tier {other:?} (ci or long)")),
                }
            }
            "--campaign" => {
                let name = value()?;
                parsed.campaign = Some(
                    Campaign::parse(&name).ok_or_else(|| format!("unknown campaign {name:?}"))?,
                );
            }
            "--seed" => {
                parsed.seed = value()?
                    .parse()
                    .map_err(|_| "--seed takes a number".to_owned())?
            }
            "--count" => {
                parsed.count = Some(
                    value()?
                        .parse()
                        .map_err(|_| "--count takes a number".to_owned())?,
                )
            }
            "--threads" => {
                parsed.threads = value()?
                    .parse::<usize>()
                    .map_err(|_| "--threads takes a number".to_owned())?
                    .max(1)
            }
            "--help" | "-h" => return Err(String::new()),
            other => return Err(format!("unknown argument {other:?}")),
        }
    }
    Ok(parsed)
}

/// Writes each fuzz target's seed inputs to DIRECTORY/<target>/seed-<n>.
fn write_fuzz_corpus(directory: &std::path::Path) -> std::io::Result<()> {
    for target in tenure_testkit::fuzz::TARGETS {
        let target_directory = directory.join(target);
        std::fs::create_dir_all(&target_directory)?;
        for (index, seed) in tenure_testkit::fuzz::seeds(target).iter().enumerate() {
            std::fs::write(target_directory.join(format!("seed-{index}")), seed)?;
        }
    }
    Ok(())
}

fn main() -> ExitCode {
    let mut arguments = std::env::args().skip(1).peekable();
    if arguments.peek().map(String::as_str) == Some("--writer") {
        let rest: Vec<String> = arguments.skip(1).collect();
        return match kill::writer_main(&rest) {
            Ok(()) => ExitCode::SUCCESS,
            Err(message) => {
                eprintln!("torture --writer: {message}");
                ExitCode::from(2)
            }
        };
    }
    if arguments.peek().map(String::as_str) == Some("--write-fuzz-corpus") {
        let rest: Vec<String> = arguments.skip(1).collect();
        let [directory] = &rest[..] else {
            eprintln!("usage: torture --write-fuzz-corpus DIRECTORY");
            return ExitCode::from(2);
        };
        return match write_fuzz_corpus(std::path::Path::new(directory)) {
            Ok(()) => ExitCode::SUCCESS,
            Err(error) => {
                eprintln!("torture --write-fuzz-corpus: {error}");
                ExitCode::FAILURE
            }
        };
    }
    let arguments = match parse(arguments) {
        Ok(arguments) => arguments,
        Err(message) => {
            if !message.is_empty() {
                eprintln!("torture: {message}");
            }
            eprintln!("{USAGE}");
            return ExitCode::from(2);
        }
    };
    campaign::install_panic_hook();
    let scratch = tenure_testkit::TempDir::new("torture");
    let context = Context {
        writer: std::env::current_exe()
            .ok()
            .map(|program: PathBuf| (program, vec!["--writer".to_owned()])),
        scratch: scratch.path().to_path_buf(),
    };
    let campaigns: Vec<Campaign> = match arguments.campaign {
        Some(campaign) => vec![campaign],
        None => Campaign::ALL.to_vec(),
    };
    let started = std::time::Instant::now();
    let (mut passed, mut failed) = (0u64, 0u64);
    for campaign in campaigns {
        let count = arguments
            .count
            .unwrap_or_else(|| campaign.count(arguments.tier));
        let panics_before = campaign::PANICS.load(Ordering::SeqCst);
        let report = campaign::run(
            campaign,
            arguments.seed,
            count,
            arguments.threads,
            &context,
            10,
        );
        // A panic on a thread no case runs on (an engine background thread) is a failure too.
        let stray_panics = (campaign::PANICS.load(Ordering::SeqCst) - panics_before)
            .saturating_sub(report.failures.len() as u64);
        println!(
            "{:<16} {:>9} {} passed ({} checked events) in {:.1} s{}",
            campaign.name(),
            report.passed,
            campaign.unit(),
            report.events,
            report.elapsed.as_secs_f64(),
            if report.failures.is_empty() {
                String::new()
            } else {
                format!(", {} FAILED", report.failures.len())
            }
        );
        for failure in &report.failures {
            println!(
                "  FAILED seed {}: {}\n  replay: {}",
                failure.seed,
                failure.message,
                report.replay_command(failure.seed)
            );
        }
        if stray_panics > 0 {
            println!("  FAILED: {stray_panics} panics on threads outside the cases");
        }
        passed += report.passed;
        failed += report.failures.len() as u64 + stray_panics;
    }
    println!(
        "total time {:.1} s on {} threads",
        started.elapsed().as_secs_f64(),
        arguments.threads
    );
    println!("{passed} passed, {failed} failed");
    if failed == 0 {
        ExitCode::SUCCESS
    } else {
        ExitCode::FAILURE
    }
}
