//! tenure beside LMDB (heed), redb, sled, fjall, SQLite (rusqlite), redis-server and memcached
//! (and RocksDB, cargo feature `rocksdb`): the same workloads, one process per engine and round,
//! engines interleaved, medians and per-round ratios. See `benches/README.md` and `tenure_benches::compare`.
//!
//! ```sh
//! CARGO_TARGET_DIR=/tmp/target-compare cargo build --release -p tenure-benches --features peers --bin compare
//! # RocksDB as one more peer, linked to Debian's librocksdb (bindgen needs libclang-dev):
//! apt-get install -y librocksdb-dev libclang-dev
//! ROCKSDB_LIB_DIR=/usr/lib/x86_64-linux-gnu CARGO_TARGET_DIR=/tmp/target-compare \
//!     cargo build --release -p tenure-benches --features rocksdb --bin compare
//! /tmp/target-compare/release/compare --quick                      # smoke run, < 3 minutes
//! /tmp/target-compare/release/compare --out docs/benchmarks.md     # full run, 1M keys
//! ```

use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Duration;

use tenure_benches::compare::engines::{EMBEDDED, FEATURE_GATED};
use tenure_benches::compare::run::{child_main, parent_main, Options};

/// The engines besides the embedded ones: servers and the physical limits.
const SERVICES: [&str; 3] = ["redis", "memcached", "raw"];
use tenure_benches::compare::workloads::ChildConfig;

const USAGE: &str = "\
usage: compare [--quick] [--keys N] [--churn-keys N] [--rounds N] [--measure-ms N]
               [--extended-keys N] [--extended-rounds N]
               [--large-open-keys N] [--large-open-rounds N]
               [--dram-mib N] [--engines a,b,..] [--workloads kv,get,...]
               [--out FILE.md] [--json FILE.jsonl] [--svg FILE.svg] [--dir DIR] [--note TEXT]
       compare --chart-from FILE.jsonl --svg FILE.svg [--note SUBTITLE]

  --quick        100k keys (20k in churn), 100 ms per measurement, 5 rounds; the workloads
                 get..open on 10k keys in 2 rounds: a smoke run
  (default)      1M keys (also in churn and get..open), 1 s per measurement, 5 rounds
  engines        tenure lmdb redb sled fjall sqlite redis memcached raw, and rocksdb in a
                 build with `--features rocksdb` (the default list then includes it)
  workloads      kv get shape16 blob commit cas snapshot open open_large churn lease limits
  --extended-keys, --extended-rounds
                 keys and rounds of get, shape16, blob, commit, cas, snapshot, open
  --large-open-keys, --large-open-rounds
                 keys and rounds of open_large (10M and 2; quick: 100k and 1)
  --out          also write the markdown report there (it is always printed)
  --svg          write a bar chart of tenure ÷ best peer per row there
  --chart-from   with --svg: draw the chart from an earlier run's --json file and stop
                 (--note sets its subtitle)
  --json         the raw samples, one JSON line per child
  --note         a sentence the report repeats (why a run departs from the defaults)
";

fn value<'a>(arguments: &'a [String], at: &mut usize, flag: &str) -> Result<&'a str, String> {
    *at += 1;
    arguments
        .get(*at)
        .map(String::as_str)
        .ok_or_else(|| format!("{flag} needs a value"))
}

fn number<T: std::str::FromStr>(text: &str, flag: &str) -> Result<T, String> {
    text.parse()
        .map_err(|_| format!("{flag}: not a number: {text}"))
}

fn list(text: &str) -> Vec<String> {
    text.split(',')
        .filter(|part| !part.is_empty())
        .map(str::to_owned)
        .collect()
}

fn parse_child(arguments: &[String]) -> Result<(ChildConfig, PathBuf), String> {
    let mut config = ChildConfig {
        engine: String::new(),
        workload: String::new(),
        keys: 0,
        measure: Duration::from_millis(1000),
        round: 0,
        dram_mebibytes: 256,
        redis_port: None,
        memcached_port: None,
    };
    let mut directory = None;
    let mut at = 0;
    while at < arguments.len() {
        let flag = arguments[at].as_str();
        match flag {
            "--child" => {}
            "--engine" => config.engine = value(arguments, &mut at, flag)?.to_owned(),
            "--workload" => config.workload = value(arguments, &mut at, flag)?.to_owned(),
            "--keys" => config.keys = number(value(arguments, &mut at, flag)?, flag)?,
            "--measure-ms" => {
                config.measure =
                    Duration::from_millis(number(value(arguments, &mut at, flag)?, flag)?)
            }
            "--round" => config.round = number(value(arguments, &mut at, flag)?, flag)?,
            "--dram-mib" => config.dram_mebibytes = number(value(arguments, &mut at, flag)?, flag)?,
            "--memcached-port" => {
                config.memcached_port = Some(number(value(arguments, &mut at, flag)?, flag)?)
            }
            "--redis-port" => {
                config.redis_port = Some(number(value(arguments, &mut at, flag)?, flag)?)
            }
            "--dir" => directory = Some(PathBuf::from(value(arguments, &mut at, flag)?)),
            other => return Err(format!("unknown argument {other}")),
        }
        at += 1;
    }
    let directory = directory.ok_or("--dir is required")?;
    Ok((config, directory))
}

/// `argument` as a shell word: as is when it is plain, else in single quotes.
fn shell_quoted(argument: &str) -> String {
    let plain = !argument.is_empty()
        && argument
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || "-_./,=:+".contains(c));
    if plain {
        argument.to_owned()
    } else {
        format!("'{}'", argument.replace('\'', "'\\''"))
    }
}

fn parse_parent(arguments: &[String]) -> Result<Options, String> {
    let quick = arguments.iter().any(|argument| argument == "--quick");
    let mut options = Options::defaults(quick);
    let mut at = 0;
    while at < arguments.len() {
        let flag = arguments[at].as_str();
        match flag {
            "--quick" => {}
            "--keys" => options.keys = number(value(arguments, &mut at, flag)?, flag)?,
            "--churn-keys" => options.churn_keys = number(value(arguments, &mut at, flag)?, flag)?,
            "--rounds" => options.rounds = number(value(arguments, &mut at, flag)?, flag)?,
            "--extended-keys" => {
                options.extended_keys = number(value(arguments, &mut at, flag)?, flag)?
            }
            "--extended-rounds" => {
                options.extended_rounds = number(value(arguments, &mut at, flag)?, flag)?
            }
            "--large-open-keys" => {
                options.large_open_keys = number(value(arguments, &mut at, flag)?, flag)?
            }
            "--large-open-rounds" => {
                options.large_open_rounds = number(value(arguments, &mut at, flag)?, flag)?
            }
            "--svg" => options.svg = Some(PathBuf::from(value(arguments, &mut at, flag)?)),
            "--chart-from" => {
                options.chart_from = Some(PathBuf::from(value(arguments, &mut at, flag)?))
            }
            "--measure-ms" => {
                options.measure =
                    Duration::from_millis(number(value(arguments, &mut at, flag)?, flag)?)
            }
            "--dram-mib" => {
                options.dram_mebibytes = number(value(arguments, &mut at, flag)?, flag)?
            }
            "--engines" => options.engines = list(value(arguments, &mut at, flag)?),
            "--workloads" => options.workloads = list(value(arguments, &mut at, flag)?),
            "--out" => options.out = Some(PathBuf::from(value(arguments, &mut at, flag)?)),
            "--json" => options.json = Some(PathBuf::from(value(arguments, &mut at, flag)?)),
            "--dir" => options.directory = PathBuf::from(value(arguments, &mut at, flag)?),
            "--note" => options.note = Some(value(arguments, &mut at, flag)?.to_owned()),
            "--help" | "-h" => return Err(String::new()),
            other => return Err(format!("unknown argument {other}")),
        }
        at += 1;
    }
    if options.rounds == 0
        || options.extended_rounds == 0
        || options.large_open_rounds == 0
        || options.keys < 1000
        || options.churn_keys < 1000
        || options.extended_keys < 1000
        || options.large_open_keys < 1000
    {
        return Err(
            "--rounds, --extended-rounds, --large-open-rounds must be ≥ 1 and --keys, \
             --churn-keys, --extended-keys, --large-open-keys ≥ 1000"
                .into(),
        );
    }
    for engine in &options.engines {
        if EMBEDDED.contains(&engine.as_str()) || SERVICES.contains(&engine.as_str()) {
            continue;
        }
        return Err(
            match FEATURE_GATED.iter().find(|(name, _)| name == engine) {
                Some((name, feature)) => format!(
                    "engine {name} is not in this build: build compare with \
                 `--features {feature}` (docs/benchmarks.md, \"How to run it\")"
                ),
                None => format!("unknown engine {engine}"),
            },
        );
    }
    if let Some(unknown) = options
        .workloads
        .iter()
        .find(|w| !tenure_benches::compare::run::WORKLOADS.contains(&w.as_str()))
    {
        return Err(format!("unknown workload {unknown}"));
    }
    options.command_line = std::iter::once("compare".to_owned())
        .chain(arguments.iter().map(|argument| shell_quoted(argument)))
        .collect::<Vec<_>>()
        .join(" ");
    Ok(options)
}

fn main() -> ExitCode {
    let arguments: Vec<String> = std::env::args().skip(1).collect();
    let code = if arguments.iter().any(|argument| argument == "--child") {
        match parse_child(&arguments) {
            Ok((config, directory)) => child_main(&config, &directory),
            Err(error) => {
                eprintln!("compare --child: {error}");
                2
            }
        }
    } else {
        match parse_parent(&arguments) {
            Ok(options) => parent_main(&options),
            Err(error) => {
                if !error.is_empty() {
                    eprintln!("compare: {error}");
                }
                eprint!("{USAGE}");
                2
            }
        }
    };
    ExitCode::from(code as u8)
}
