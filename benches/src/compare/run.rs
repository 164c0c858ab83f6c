//! The parent process: runs every (workload, engine) pair once per round, each in its own
//! child process, engines in a different order every round; then writes the report.

use std::fmt::Write as _;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use super::engines::EMBEDDED;
use super::report::{self, Results, Sample};
use super::workloads::ChildConfig;
use super::Metrics;

/// The workloads, in run order (those of [`super::extended`] after `kv`).
pub const WORKLOADS: [&str; 13] = [
    "kv",
    "get",
    "shape16",
    "blob",
    "commit",
    "cas",
    "snapshot",
    "open",
    "open_after_kill",
    "open_large",
    "churn",
    "lease",
    "limits",
];

/// Whether `workload` is one of [`super::extended::WORKLOADS`] (its own keys and rounds).
pub fn is_extended(workload: &str) -> bool {
    super::extended::WORKLOADS.contains(&workload)
}

#[derive(Debug, Clone)]
pub struct Options {
    pub quick: bool,
    pub keys: u64,
    pub churn_keys: u64,
    pub rounds: usize,
    /// Keys of the workloads get, shape16, snapshot and open (and the blob budget, in KiB).
    pub extended_keys: u64,
    /// Rounds of the workloads of [`super::extended`].
    pub extended_rounds: usize,
    /// Keys and rounds of the workload `open_large`: the open of a large store, whose load
    /// takes minutes for some engines.
    pub large_open_keys: u64,
    pub large_open_rounds: usize,
    pub measure: Duration,
    pub dram_mebibytes: usize,
    pub engines: Vec<String>,
    pub workloads: Vec<String>,
    /// Where the markdown goes (also printed).
    pub out: Option<PathBuf>,
    /// Where the raw samples go, as JSON lines.
    pub json: Option<PathBuf>,
    /// Where the chart goes (SVG).
    pub svg: Option<PathBuf>,
    /// Draw the chart from the samples of an earlier run (its `--json` file) and stop.
    pub chart_from: Option<PathBuf>,
    /// Parent of the engines' directories.
    pub directory: PathBuf,
    pub command_line: String,
    /// Said in the report (why a run departs from the defaults, say).
    pub note: Option<String>,
}

impl Options {
    pub fn defaults(quick: bool) -> Options {
        Options {
            quick,
            keys: if quick { 100_000 } else { 1_000_000 },
            churn_keys: if quick { 20_000 } else { 1_000_000 },
            rounds: 5,
            extended_keys: if quick { 10_000 } else { 1_000_000 },
            extended_rounds: if quick { 2 } else { 5 },
            large_open_keys: if quick { 100_000 } else { 10_000_000 },
            large_open_rounds: if quick { 1 } else { 2 },
            measure: Duration::from_millis(if quick { 100 } else { 1000 }),
            dram_mebibytes: if quick { 64 } else { 512 },
            engines: EMBEDDED
                .iter()
                .chain(["redis", "memcached", "raw"].iter())
                .map(|engine| engine.to_string())
                .collect(),
            workloads: WORKLOADS.iter().map(|w| w.to_string()).collect(),
            out: None,
            json: None,
            svg: None,
            chart_from: None,
            directory: std::env::temp_dir().join(format!("tenure-compare-{}", std::process::id())),
            command_line: String::new(),
            note: None,
        }
    }
}

/// The engines that take part in a workload.
fn participants(workload: &str, options: &Options) -> Vec<String> {
    let candidates: Vec<&str> = match workload {
        "kv" | "churn" | "get" | "shape16" | "blob" | "commit" | "cas" | "open"
        | "open_after_kill" | "open_large" => EMBEDDED.to_vec(),
        // sled has no snapshots (its range reads are not isolated from writers).
        "snapshot" => EMBEDDED
            .iter()
            .copied()
            .filter(|engine| *engine != "sled")
            .collect(),
        "lease" => vec!["tenure", "redis", "memcached"],
        "limits" => vec!["raw"],
        _ => vec![],
    };
    candidates
        .into_iter()
        .filter(|engine| options.engines.iter().any(|wanted| wanted == engine))
        .map(str::to_owned)
        .collect()
}

fn run_child(
    options: &Options,
    config: &ChildConfig,
    directory: &Path,
) -> (Option<Metrics>, Option<String>) {
    let executable = match std::env::current_exe() {
        Ok(path) => path,
        Err(error) => return (None, Some(format!("current_exe: {error}"))),
    };
    let mut command = Command::new(executable);
    command
        .arg("--child")
        .args(["--engine", &config.engine])
        .args(["--workload", &config.workload])
        .args(["--keys", &config.keys.to_string()])
        .args(["--measure-ms", &config.measure.as_millis().to_string()])
        .args(["--round", &config.round.to_string()])
        .args(["--dram-mib", &config.dram_mebibytes.to_string()])
        .arg("--dir")
        .arg(directory)
        .stdin(Stdio::null())
        .stderr(Stdio::inherit());
    if let Some(port) = config.redis_port {
        command.args(["--redis-port", &port.to_string()]);
    }
    if let Some(port) = config.memcached_port {
        command.args(["--memcached-port", &port.to_string()]);
    }
    let _ = options;
    let output = match command.output() {
        Ok(output) => output,
        Err(error) => return (None, Some(format!("spawn: {error}"))),
    };
    let _ = std::fs::remove_dir_all(directory);
    let stdout = String::from_utf8_lossy(&output.stdout);
    if !output.status.success() {
        return (None, Some(format!("child exited with {}", output.status)));
    }
    let Some(line) = stdout.lines().rev().find(|line| line.starts_with('{')) else {
        return (None, Some("child printed no result".into()));
    };
    match serde_json::from_str::<serde_json::Value>(line) {
        Ok(value) => {
            let metrics: Metrics = value["metrics"]
                .as_object()
                .map(|object| {
                    object
                        .iter()
                        .filter_map(|(name, value)| Some((name.clone(), value.as_f64()?)))
                        .collect()
                })
                .unwrap_or_default();
            (Some(metrics), None)
        }
        Err(error) => (None, Some(format!("bad result line: {error}"))),
    }
}

/// The child's side: runs one workload and prints its JSON line. Returns the exit code.
pub fn child_main(config: &ChildConfig, directory: &Path) -> i32 {
    match super::workloads::run(config, directory) {
        Ok(metrics) => {
            let line = serde_json::json!({
                "engine": config.engine,
                "workload": config.workload,
                "round": config.round,
                "metrics": metrics,
            });
            println!("{line}");
            0
        }
        Err(error) => {
            eprintln!(
                "compare: {} / {} failed: {error}",
                config.workload, config.engine
            );
            1
        }
    }
}

/// Reads the samples of an earlier run (its `--json` lines).
fn read_samples(path: &Path) -> Result<Vec<Sample>, String> {
    let text = std::fs::read_to_string(path).map_err(|e| format!("{}: {e}", path.display()))?;
    let mut samples = Vec::new();
    for line in text.lines().filter(|line| !line.trim().is_empty()) {
        let value: serde_json::Value =
            serde_json::from_str(line).map_err(|e| format!("{}: {e}", path.display()))?;
        let metrics = value["metrics"].as_object().map(|object| {
            object
                .iter()
                .filter_map(|(name, value)| Some((name.clone(), value.as_f64()?)))
                .collect::<Metrics>()
        });
        samples.push(Sample {
            round: value["round"].as_u64().unwrap_or(0) as usize,
            engine: value["engine"].as_str().unwrap_or_default().to_owned(),
            workload: value["workload"].as_str().unwrap_or_default().to_owned(),
            metrics,
            error: value["error"].as_str().map(str::to_owned),
            seconds: value["seconds"].as_f64().unwrap_or(0.0),
        });
    }
    Ok(samples)
}

/// `--chart-from FILE --svg OUT`: the chart of an earlier run, without running anything.
fn chart_only(options: &Options, from: &Path) -> i32 {
    let Some(out) = &options.svg else {
        eprintln!("compare: --chart-from needs --svg");
        return 2;
    };
    let samples = match read_samples(from) {
        Ok(samples) => samples,
        Err(error) => {
            eprintln!("compare: {error}");
            return 1;
        }
    };
    let rounds = samples.iter().map(|s| s.round + 1).max().unwrap_or(0);
    let results = Results::new(&samples, rounds);
    let subtitle = options.note.clone().unwrap_or_else(|| {
        format!(
            "From the samples in {} ({rounds} rounds).",
            from.file_name().unwrap_or_default().to_string_lossy()
        )
    });
    let chart = super::chart::svg(&super::chart::bars(&results), &subtitle);
    if let Err(error) = std::fs::write(out, chart) {
        eprintln!("compare: cannot write {}: {error}", out.display());
        return 1;
    }
    eprintln!("compare: wrote {}", out.display());
    0
}

/// Runs everything and writes the report. Returns the exit code.
pub fn parent_main(options: &Options) -> i32 {
    if let Some(from) = &options.chart_from {
        return chart_only(options, from);
    }
    let started = Instant::now();
    if let Err(error) = std::fs::create_dir_all(&options.directory) {
        eprintln!(
            "compare: cannot create {}: {error}",
            options.directory.display()
        );
        return 1;
    }
    let machine_before = super::run::machine(&options.directory);
    let mut notes: Vec<String> = options.note.iter().cloned().collect();
    let wants_redis = options.workloads.iter().any(|w| w == "lease")
        && options.engines.iter().any(|e| e == "redis");
    let mut server = None;
    if wants_redis {
        match super::redis::Server::start(&options.directory.join("redis")) {
            Ok(Some(started)) => server = Some(started),
            Ok(None) => notes.push(
                "redis-server is not installed (`apt-get install -y redis-server`): the redis \
                 rows are missing."
                    .to_owned(),
            ),
            Err(error) => notes.push(format!("redis-server did not start: {error}")),
        }
    }
    let redis_port = server.as_ref().map(|server| server.port);
    let redis_version = server.as_ref().map(|server| server.version.clone());
    let wants_memcached = options.workloads.iter().any(|w| w == "lease")
        && options.engines.iter().any(|e| e == "memcached");
    let mut memcached = None;
    if wants_memcached {
        match super::memcached::Server::start() {
            Ok(Some(started)) => memcached = Some(started),
            Ok(None) => notes.push(
                "memcached is not installed (`apt-get install -y memcached`): the memcached \
                 rows are missing."
                    .to_owned(),
            ),
            Err(error) => notes.push(format!("memcached did not start: {error}")),
        }
    }
    let memcached_port = memcached.as_ref().map(|server| server.port);
    let server_versions: Vec<String> = [
        redis_version.clone(),
        memcached.as_ref().map(|server| server.version.clone()),
    ]
    .into_iter()
    .flatten()
    .collect();

    let mut samples: Vec<Sample> = Vec::new();
    let all_rounds = options
        .rounds
        .max(options.extended_rounds)
        .max(options.large_open_rounds);
    for round in 0..all_rounds {
        for workload in &options.workloads {
            let rounds = if workload == "open_large" {
                options.large_open_rounds
            } else if is_extended(workload) {
                options.extended_rounds
            } else {
                options.rounds
            };
            if round >= rounds {
                continue;
            }
            let mut engines = participants(workload, options);
            if engines.is_empty() {
                continue;
            }
            // Interleave: every round starts one engine later.
            let shift = round % engines.len();
            engines.rotate_left(shift);
            for engine in engines {
                if (engine == "redis" && redis_port.is_none())
                    || (engine == "memcached" && memcached_port.is_none())
                {
                    continue;
                }
                let config = ChildConfig {
                    engine: engine.clone(),
                    workload: workload.clone(),
                    keys: if workload == "churn" {
                        options.churn_keys
                    } else if workload == "open_large" {
                        options.large_open_keys
                    } else if is_extended(workload) {
                        options.extended_keys
                    } else {
                        options.keys
                    },
                    measure: options.measure,
                    round: round as u64,
                    dram_mebibytes: options.dram_mebibytes,
                    redis_port,
                    memcached_port,
                };
                let directory = options
                    .directory
                    .join(format!("{workload}-{engine}-{round}"));
                let begun = Instant::now();
                let (metrics, error) = run_child(options, &config, &directory);
                let seconds = begun.elapsed().as_secs_f64();
                eprintln!(
                    "compare: round {}/{} {workload:>8} {engine:<9} {:6.1} s{}",
                    round + 1,
                    rounds,
                    seconds,
                    error
                        .as_deref()
                        .map(|error| format!("  FAILED: {error}"))
                        .unwrap_or_default()
                );
                samples.push(Sample {
                    round,
                    engine,
                    workload: workload.clone(),
                    metrics,
                    error,
                    seconds,
                });
            }
        }
    }
    if let Some(mut server) = server {
        server.stop();
    }
    if let Some(mut server) = memcached {
        server.stop();
    }
    let machine_after = machine(&options.directory);
    let _ = std::fs::remove_dir_all(&options.directory);

    let elapsed = started.elapsed();
    let results = Results::new(&samples, all_rounds);
    let markdown = render(
        options,
        &results,
        &samples,
        &machine_before,
        &machine_after,
        &server_versions,
        &notes,
        elapsed,
    );
    println!("{markdown}");
    if let Some(path) = &options.svg {
        let bars = super::chart::bars(&results);
        let subtitle = format!(
            "{} mode, {} rounds ({} for get..open), {}.",
            if options.quick { "Quick" } else { "Full" },
            options.rounds,
            options.extended_rounds,
            command_output("date", &["-u", "+%Y-%m-%d %H:%M UTC"])
        );
        if let Err(error) = std::fs::write(path, super::chart::svg(&bars, &subtitle)) {
            eprintln!("compare: cannot write {}: {error}", path.display());
            return 1;
        }
        eprintln!("compare: wrote {}", path.display());
    }
    if let Some(path) = &options.out {
        if let Some(parent) = path.parent() {
            let _ = std::fs::create_dir_all(parent);
        }
        if let Err(error) = std::fs::write(path, &markdown) {
            eprintln!("compare: cannot write {}: {error}", path.display());
            return 1;
        }
        eprintln!("compare: wrote {}", path.display());
    }
    if let Some(path) = &options.json {
        let mut lines = String::new();
        for sample in &samples {
            let _ = writeln!(
                lines,
                "{}",
                serde_json::json!({
                    "round": sample.round,
                    "engine": sample.engine,
                    "workload": sample.workload,
                    "seconds": sample.seconds,
                    "metrics": sample.metrics,
                    "error": sample.error,
                })
            );
        }
        if let Err(error) = std::fs::write(path, lines) {
            eprintln!("compare: cannot write {}: {error}", path.display());
            return 1;
        }
    }
    eprintln!("compare: done in {:.0} s", elapsed.as_secs_f64());
    if samples.iter().any(|sample| sample.error.is_some()) {
        eprintln!("compare: some runs failed (see the report)");
        return 2;
    }
    0
}

/// What the report says about the machine at one moment.
pub struct Machine {
    pub cpus: usize,
    pub model: String,
    pub kernel: String,
    pub memory: String,
    pub filesystem: String,
    pub load: String,
}

pub fn machine(directory: &Path) -> Machine {
    let read = |path: &str| std::fs::read_to_string(path).unwrap_or_default();
    let cpuinfo = read("/proc/cpuinfo");
    let model = cpuinfo
        .lines()
        .find_map(|line| line.strip_prefix("model name"))
        .map(|rest| rest.trim_start_matches([' ', '\t', ':']).trim().to_owned())
        .unwrap_or_else(|| "unknown".into());
    let memory = read("/proc/meminfo")
        .lines()
        .find_map(|line| line.strip_prefix("MemTotal:"))
        .and_then(|rest| rest.split_whitespace().next()?.parse::<u64>().ok())
        .map(|kib| format!("{:.1} GiB", kib as f64 / (1u64 << 20) as f64))
        .unwrap_or_else(|| "unknown".into());
    // The mount holding the directory: the longest mount point that is a prefix of it.
    let canonical = directory
        .canonicalize()
        .unwrap_or_else(|_| directory.to_path_buf());
    let mut filesystem = ("unknown".to_owned(), String::new(), 0usize);
    for line in read("/proc/mounts").lines() {
        let fields: Vec<&str> = line.split_whitespace().collect();
        if fields.len() < 3 {
            continue;
        }
        if canonical.starts_with(fields[1]) && fields[1].len() >= filesystem.2 {
            filesystem = (
                fields[2].to_owned(),
                format!("{} on {}", fields[0], fields[1]),
                fields[1].len(),
            );
        }
    }
    Machine {
        cpus: std::thread::available_parallelism().map_or(0, |n| n.get()),
        model,
        kernel: read("/proc/sys/kernel/osrelease").trim().to_owned(),
        memory,
        filesystem: format!(
            "{} ({}), data under {}",
            filesystem.0,
            filesystem.1,
            directory.display()
        ),
        load: read("/proc/loadavg")
            .split_whitespace()
            .take(3)
            .collect::<Vec<_>>()
            .join(" "),
    }
}

/// Versions of the peers, from the workspace's Cargo.lock.
fn peer_versions() -> String {
    let lock = Path::new(env!("CARGO_MANIFEST_DIR")).join("../Cargo.lock");
    let text = std::fs::read_to_string(lock).unwrap_or_default();
    let mut found = Vec::new();
    let mut name = None;
    for line in text.lines() {
        if let Some(rest) = line.strip_prefix("name = ") {
            name = Some(rest.trim_matches('"').to_owned());
        } else if let Some(rest) = line.strip_prefix("version = ") {
            if let Some(name) = name.take() {
                if [
                    "heed",
                    "lmdb-master-sys",
                    "redb",
                    "sled",
                    "fjall",
                    "rusqlite",
                    "libsqlite3-sys",
                ]
                .contains(&name.as_str())
                    || (cfg!(feature = "rocksdb")
                        && ["rocksdb", "librocksdb-sys"].contains(&name.as_str()))
                {
                    found.push(format!("{name} {}", rest.trim_matches('"')));
                }
            }
        }
    }
    found.join(", ")
}

fn command_output(program: &str, arguments: &[&str]) -> String {
    Command::new(program)
        .args(arguments)
        .output()
        .map(|output| String::from_utf8_lossy(&output.stdout).trim().to_owned())
        .unwrap_or_default()
}

#[allow(clippy::too_many_arguments)]
fn render(
    options: &Options,
    results: &Results,
    samples: &[Sample],
    before: &Machine,
    after: &Machine,
    server_versions: &[String],
    notes: &[String],
    elapsed: Duration,
) -> String {
    let mut out = String::new();
    let mode = if options.quick { "quick" } else { "full" };
    let _ = writeln!(out, "# tenure beside its peers\n");
    let _ = writeln!(
        out,
        "Written by `benches/src/bin/compare.rs` ({mode} mode); every figure below is \
         measured, none is edited by hand. Run it again to refresh this page.\n"
    );
    let _ = writeln!(out, "## Run\n");
    let _ = writeln!(
        out,
        "- date: {}",
        command_output("date", &["-u", "+%Y-%m-%d %H:%M UTC"])
    );
    // The feature set this binary was built with, so the line below can be run as written.
    let (build_environment, features) = if cfg!(feature = "rocksdb") {
        ("ROCKSDB_LIB_DIR=/usr/lib/x86_64-linux-gnu ", "rocksdb")
    } else {
        ("", "peers")
    };
    let _ = writeln!(
        out,
        "- command: `{}` (built with `{build_environment}CARGO_TARGET_DIR=/tmp/target-compare \
         cargo build --release -p tenure-benches --features {features} --bin compare`)",
        options.command_line
    );
    let _ = writeln!(
        out,
        "- shape: {} keys of {} B, values of {} B ({} keys in the churn workload; {} keys and \
         {} rounds in the workloads get … open; {} keys and {} rounds in open_large); {} rounds; \
         each timed measurement runs {} ms after an untimed warm-up of the same length; took \
         {:.0} s in all",
        options.keys,
        super::KEY_BYTES,
        super::VALUE_BYTES,
        options.churn_keys,
        options.extended_keys,
        options.extended_rounds,
        options.large_open_keys,
        options.large_open_rounds,
        options.rounds,
        options.measure.as_millis(),
        elapsed.as_secs_f64()
    );
    let _ = writeln!(
        out,
        "- machine: {} CPUs ({}), {} RAM, Linux {}; {}",
        before.cpus, before.model, before.memory, before.kernel, before.filesystem
    );
    let _ = writeln!(
        out,
        "- load average (1, 5, 15 min) at the start: {}; at the end: {}",
        before.load, after.load
    );
    let _ = writeln!(
        out,
        "- peers: {}; {}; {}",
        peer_versions(),
        if server_versions.is_empty() {
            "no server run".to_owned()
        } else {
            server_versions.join("; ")
        },
        command_output("rustc", &["--version"])
    );
    for note in notes {
        let _ = writeln!(out, "- note: {note}");
    }
    let _ = writeln!(out, "\n## Method\n");
    let _ = writeln!(
        out,
        "- Every engine runs in its own process for each workload and round (the program \
         re-executes itself with `--child --engine E --workload W`), on a fresh directory \
         under the temp dir, which is removed afterwards. Rounds interleave the engines: each \
         round starts one engine later in the list.\n\
         - A table's **median** is the median over the rounds; the last column divides tenure's \
         figure by that engine's, round by round, and takes the median of those ratios. \
         \"tenure ÷ best peer\" divides tenure's figure by the best peer's *of the same round*.\n\
         - Same data for every engine (keys and values derived from the item's index), same \
         thread count per row, same durability class: every engine is opened non-durable \
         (commits do not wait for a sync); the bulk load ends with one sync, and so does \
         every pass of the churn:\n"
    );
    let _ = writeln!(
        out,
        "| engine | non-durable commits | sync | compaction |\n| --- | --- | --- | --- |\n\
         | tenure | `Durability::Buffered` | `flush()` | `compact()` once |\n\
         | lmdb (heed) | env flag `NO_SYNC` | `force_sync()` | none in place (LMDB reuses freed pages; the file never shrinks) |\n\
         | redb | `Durability::None` | a commit with `Durability::Immediate` | `compact()` until it reports nothing left |\n\
         | sled | default (its background flush) | `flush()` | none (no compaction call; its segment cleaner runs by itself) |\n\
         | fjall | default (`PersistMode::Buffer`), single-writer transactions | `persist(SyncAll)` | `major_compact()` |\n\
         | sqlite | `journal_mode=WAL`, `synchronous=OFF`, a `WITHOUT ROWID` table | fsync of the database and WAL files | `VACUUM` + `wal_checkpoint(TRUNCATE)` |"
    );
    if EMBEDDED.contains(&"rocksdb") {
        let _ = writeln!(
            out,
            "| rocksdb | an `OptimisticTransactionDB`, default options; `WriteOptions` with \
             `disable_wal(false)`, `set_sync(false)` (its default: WAL written, not synced) | \
             `flush_wal(true)` | `compact_range(None, None)` |"
        );
    }
    let _ = writeln!(out);
    let _ = writeln!(
        out,
        "- Otherwise each engine keeps its defaults (cache sizes, background threads). tenure's \
         background compaction stays on (its default).\n\
         - Scans: tenure takes a `snapshot()` and reads with `Snapshot::scan` from the start \
         key (keys and values borrowed, as a cursor reads them); the peers open a read \
         transaction and a cursor. Every engine reads the start key and the entries after it.\n\
         - The compare-and-set rows give each peer its cheapest correct form: LMDB, redb and \
         fjall read and write in one write transaction (no separate read before it); tenure \
         reads the item (`get_with`, its value borrowed) and then does a conditional `put` \
         with its ETag, as a client of its API would. Each call's key and new value are made \
         before it is timed.{}\n",
        if EMBEDDED.contains(&"rocksdb") {
            " RocksDB uses an optimistic transaction (`get_pinned_for_update`, `put`, \
             `commit`, which fails on a write conflict): no lock manager, cheaper than a \
             `TransactionDB`'s locked get-for-update when keys are rarely contended. Its gets \
             use `get_pinned` (no copy of the value); its scans read an iterator from the start \
             key (`IteratorMode::From`), in a `snapshot()` for the snapshot scans."
        } else {
            ""
        }
    );
    let _ = writeln!(
        out,
        "- The durable rows (workload `commit`) open every engine in its durable class, each \
         commit on stable storage when it returns: tenure `Durability::Sync`; LMDB without \
         `NO_SYNC`; redb `Durability::Immediate`; sled `flush()` after each commit (it has no \
         durable commit mode), then `fdatasync` of its `db` file, because sled's flush ends in \
         `sync_file_range`, which does not flush the drive's cache; fjall write transactions with \
         `durability(Some(PersistMode::SyncAll))`; SQLite WAL with `synchronous=FULL`{}. \
         SQLite's writers share one connection behind a mutex (SQLite has one writer at a \
         time).\n\
         - tenure's gets read the value borrowed from its map with `Store::get_with` (no \
         copy, no snapshot), as LMDB and redb hand out views of their mapped pages inside a \
         read transaction. The blob gets read every 64th byte of the value in every engine.\n\
         - The rows of the workloads `get`, `shape16`, `blob`, `commit`, `cas`, `snapshot` and \
         `open` ran with {} keys in {} rounds, `open_large` with {} keys in {} rounds{}.\n",
        if EMBEDDED.contains(&"rocksdb") {
            "; RocksDB `WriteOptions::set_sync(true)`"
        } else {
            ""
        },
        options.extended_keys,
        options.extended_rounds,
        options.large_open_keys,
        options.large_open_rounds,
        if options.quick {
            " (quick mode: a smoke run, not a measurement to quote)"
        } else {
            ""
        }
    );
    if let Some(svg) = &options.svg {
        let name = svg
            .file_name()
            .map(|name| name.to_string_lossy().into_owned())
            .unwrap_or_default();
        let _ = writeln!(
            out,
            "![tenure ÷ best peer per row, log scale]({name})\n\n\
             The chart ([{name}]({name})): tenure ÷ the best peer for every row below, inverted \
             for rows where lower is better, so bars right of 1× are rows tenure wins.\n"
        );
    }
    let _ = writeln!(out, "## Targets of the issues\n");
    out.push_str(&report::render_targets(results));
    let _ = writeln!(out, "\n## Results\n");
    out.push_str(&report::render_tables(results));
    let failures = report::render_failures(samples);
    if !failures.is_empty() {
        let _ = writeln!(out, "## Failed runs\n\n{failures}");
    }
    out
}
