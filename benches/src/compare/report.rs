//! The markdown report: one table per workload (each engine's median over the rounds, every
//! round's figure, tenure ÷ that engine), the per-round tenure ÷ best-peer ratio, and the
//! issues' targets with the measured ratio next to each. Every number comes from the
//! samples; nothing is typed in by hand.

use std::collections::BTreeMap;
use std::fmt::Write as _;

use super::Metrics;

/// One child's result.
#[derive(Debug, Clone)]
pub struct Sample {
    pub round: usize,
    pub engine: String,
    pub workload: String,
    pub metrics: Option<Metrics>,
    pub error: Option<String>,
    pub seconds: f64,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Better {
    Lower,
    Higher,
    /// No comparison (the machine's limits).
    None,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Unit {
    /// Nanoseconds, shown as µs.
    Nanos,
    /// Operations per second.
    Rate,
    /// A plain factor.
    Factor,
    /// Bytes per key.
    BytesPerKey,
    /// Bytes, shown as MiB.
    Bytes,
    /// A share in percent.
    Percent,
}

/// One table.
pub struct Table {
    pub title: &'static str,
    pub workload: &'static str,
    /// (engine, metric) pairs, in row order.
    pub rows: Vec<(&'static str, &'static str)>,
    /// The p99 metric beside each row's metric, if any.
    pub p99: fn(&str) -> Option<&'static str>,
    pub unit: Unit,
    pub better: Better,
    pub what: &'static str,
}

fn no_p99(_: &str) -> Option<&'static str> {
    None
}

fn cas_p99(_: &str) -> Option<&'static str> {
    Some("cas_p99_ns")
}

fn lease_p99(metric: &str) -> Option<&'static str> {
    match metric {
        "lease_pair_ns" => Some("lease_pair_p99_ns"),
        "lock_pair_ns" => Some("lock_pair_p99_ns"),
        "redis_pair_ns" => Some("redis_pair_p99_ns"),
        "memcached_pair_ns" => Some("memcached_pair_p99_ns"),
        _ => None,
    }
}

fn embedded(metric: &'static str) -> Vec<(&'static str, &'static str)> {
    super::engines::EMBEDDED
        .iter()
        .map(|engine| (*engine, metric))
        .collect()
}

/// The p99 metric recorded beside a mean, for the rows of [`super::extended`].
fn extended_p99(metric: &str) -> Option<&'static str> {
    Some(match metric {
        "commit_sync_ns" => "commit_sync_p99_ns",
        "commit_buffered_ns" => "commit_buffered_p99_ns",
        "blob_4k_put_ns" => "blob_4k_put_p99_ns",
        "blob_64k_put_ns" => "blob_64k_put_p99_ns",
        "blob_1m_put_ns" => "blob_1m_put_p99_ns",
        _ => return None,
    })
}

fn extended_table(
    title: &'static str,
    workload: &'static str,
    metric: &'static str,
    unit: Unit,
    better: Better,
    what: &'static str,
) -> Table {
    let rows = if workload == "snapshot" {
        embedded(metric)
            .into_iter()
            .filter(|(engine, _)| *engine != "sled")
            .collect()
    } else {
        embedded(metric)
    };
    Table {
        title,
        workload,
        rows,
        p99: extended_p99,
        unit,
        better,
        what,
    }
}

/// The tables of the workloads of [`super::extended`].
fn extended_tables() -> Vec<Table> {
    use Better::{Higher, Lower};
    vec![
        extended_table(
            "Random get, uniform hits, 1 thread",
            "get",
            "get_uniform_ns",
            Unit::Nanos,
            Lower,
            "time per get of a uniformly random existing key (24 B key, 150 B value), value \
             read, after an untimed warm-up pass; workload `get`",
        ),
        extended_table(
            "Random get, Zipf hits (θ = 0.99), 1 thread",
            "get",
            "get_zipf_ns",
            Unit::Nanos,
            Lower,
            "the same gets with keys drawn from a Zipf distribution (YCSB's generator, \
             θ = 0.99; the hot keys spread over the key space)",
        ),
        extended_table(
            "Random get, misses, 1 thread",
            "get",
            "get_miss_ns",
            Unit::Nanos,
            Lower,
            "time per get of a key never written (same format, past the loaded range)",
        ),
        extended_table(
            "Random get, 8 threads (oversubscribed)",
            "get",
            "get8_ops_per_s",
            Unit::Rate,
            Higher,
            "gets/s of 8 threads together, uniform hits, on a machine with the CPUs the \
             Run section gives (2 here: 4 threads per CPU)",
        ),
        extended_table(
            "Random get, 8 threads ÷ 1 thread",
            "get",
            "get8_vs_1t",
            Unit::Factor,
            Higher,
            "8-thread gets/s ÷ 1-thread gets/s (uniform hits), same process",
        ),
        extended_table(
            "Bulk load, 16 B keys / 100 B values",
            "shape16",
            "s16_load_pairs_per_s",
            Unit::Rate,
            Higher,
            "pairs/s: transactions of 1,000 pairs without a sync, then one sync; workload \
             `shape16`",
        ),
        extended_table(
            "Random get, 16 B / 100 B, uniform hits",
            "shape16",
            "s16_get_uniform_ns",
            Unit::Nanos,
            Lower,
            "time per get, 1 thread",
        ),
        extended_table(
            "Random get, 16 B / 100 B, Zipf hits (θ = 0.99)",
            "shape16",
            "s16_get_zipf_ns",
            Unit::Nanos,
            Lower,
            "time per get, 1 thread",
        ),
        extended_table(
            "Random get, 16 B / 100 B, misses",
            "shape16",
            "s16_get_miss_ns",
            Unit::Nanos,
            Lower,
            "time per get of a key never written, 1 thread",
        ),
        extended_table(
            "Blob put, 4 KiB",
            "blob",
            "blob_4k_put_ns",
            Unit::Nanos,
            Lower,
            "mean time per put of a new 4 KiB value (incompressible), one non-durable commit \
             each, 1 thread; workload `blob` (keys × 1 KiB per size, 16–128 MiB)",
        ),
        extended_table(
            "Blob get, 4 KiB",
            "blob",
            "blob_4k_get_ns",
            Unit::Nanos,
            Lower,
            "time per get of a random one of those blobs, every 64th byte of the value read",
        ),
        extended_table(
            "Blob put, 64 KiB",
            "blob",
            "blob_64k_put_ns",
            Unit::Nanos,
            Lower,
            "as above, 64 KiB",
        ),
        extended_table(
            "Blob get, 64 KiB",
            "blob",
            "blob_64k_get_ns",
            Unit::Nanos,
            Lower,
            "as above, 64 KiB",
        ),
        extended_table(
            "Blob put, 1 MiB",
            "blob",
            "blob_1m_put_ns",
            Unit::Nanos,
            Lower,
            "as above, 1 MiB",
        ),
        extended_table(
            "Blob get, 1 MiB",
            "blob",
            "blob_1m_get_ns",
            Unit::Nanos,
            Lower,
            "as above, 1 MiB",
        ),
        extended_table(
            "Durable single commits, 1 thread",
            "commit",
            "commit_sync_ns",
            Unit::Nanos,
            Lower,
            "mean time per commit of one put (24 B / 150 B, a new key), each engine in its \
             durable class (the commit is on stable storage when it returns); workload \
             `commit`",
        ),
        extended_table(
            "Durable batches of 1,000 puts",
            "commit",
            "batch_sync_pairs_per_s",
            Unit::Rate,
            Higher,
            "pairs/s: one durable commit of 1,000 new pairs at a time, 1 thread",
        ),
        extended_table(
            "Group commit, 2 writers, durable",
            "commit",
            "group2_commits_per_s",
            Unit::Rate,
            Higher,
            "commits/s of 2 threads, each committing single puts of its own new keys, durable \
             class",
        ),
        extended_table(
            "Group commit, 4 writers, durable",
            "commit",
            "group4_commits_per_s",
            Unit::Rate,
            Higher,
            "the same with 4 threads",
        ),
        extended_table(
            "Group commit, 16 writers, durable",
            "commit",
            "group16_commits_per_s",
            Unit::Rate,
            Higher,
            "the same with 16 threads",
        ),
        extended_table(
            "Group commit, 16 writers ÷ 1 writer",
            "commit",
            "group16_vs_1t",
            Unit::Factor,
            Higher,
            "16-writer commits/s ÷ the 1-thread commits/s of the single-commit row, same \
             process",
        ),
        extended_table(
            "Non-durable single commits, 1 thread",
            "commit",
            "commit_buffered_ns",
            Unit::Nanos,
            Lower,
            "mean time per commit of one put of a new key, non-durable class, in a store of \
             its own",
        ),
        extended_table(
            "Compare-and-set on 16 hot keys, 2 threads: successes",
            "cas",
            "cas_hot_ok_per_s",
            Unit::Rate,
            Higher,
            "successful compare-and-sets/s of both threads: each picks one of 16 keys, reads \
             its version/ETag on its own (tenure `get`; the peers read the version kept in \
             the value), then writes under the condition that it is unchanged (tenure \
             `put(if_match)`; LMDB, redb, fjall: a write transaction that checks the version; \
             sled: `compare_and_swap`; SQLite: `UPDATE … WHERE value = old`), non-durable; \
             workload `cas`",
        ),
        extended_table(
            "Compare-and-set on 16 hot keys, 2 threads: attempts",
            "cas",
            "cas_hot_attempts_per_s",
            Unit::Rate,
            Higher,
            "attempts/s (successes + stale-version rejections) of both threads",
        ),
        extended_table(
            "Compare-and-set on 16 hot keys, 2 threads: stale-version rejections",
            "cas",
            "cas_hot_reject_pct",
            Unit::Percent,
            Better::None,
            "share of attempts refused because the other thread wrote the key between the \
             read and the conditional write (not better or worse in itself: it grows with \
             the gap between the two calls)",
        ),
        extended_table(
            "100-entry snapshot scan, idle",
            "snapshot",
            "scan100_ns",
            Unit::Nanos,
            Lower,
            "time per scan of 100 entries from a random key inside one explicit snapshot \
             (tenure `snapshot()` + `Snapshot::scan`; the peers a read transaction), 1 thread; sled has \
             no snapshots and is left out; workload `snapshot`",
        ),
        extended_table(
            "100-entry snapshot scan while a writer runs",
            "snapshot",
            "scan100_busy_ns",
            Unit::Nanos,
            Lower,
            "the same scans while a second thread overwrites random keys, one non-durable \
             commit per put",
        ),
        extended_table(
            "Writer beside the snapshot scans",
            "snapshot",
            "scan100_writer_commits_per_s",
            Unit::Rate,
            Higher,
            "the writer's commits/s during those scans",
        ),
        extended_table(
            "Open (recovery) of a closed store",
            "open",
            "open_ns",
            Unit::Nanos,
            Lower,
            "time to open a store holding the workload's keys (24 B / 150 B, loaded in \
             commits of 1,000 then synced and closed) and read one key; the files are in the \
             page cache; workload `open`",
        ),
        extended_table(
            "Close after the load",
            "open",
            "open_close_ns",
            Unit::Nanos,
            Lower,
            "time to close (drop) the store just loaded in workload `open`, before its reopen; \
             tenure writes its persisted index there",
        ),
        extended_table(
            "Open (recovery) after a kill -9",
            "open_after_kill",
            "open_after_kill_ns",
            Unit::Nanos,
            Lower,
            "the same keys loaded and synced by a process of their own, which is then killed \
             with SIGKILL without closing: time to open and read one key (tenure loads the \
             last checkpoint its background thread took, and replays the log after it); \
             workload `open_after_kill`",
        ),
        extended_table(
            "Open (recovery) of a large closed store",
            "open_large",
            "open_large_ns",
            Unit::Nanos,
            Lower,
            "the same with the keys of workload `open_large` (`--large-open-keys`; 10M in full \
             mode)",
        ),
    ]
}

/// The tables, in report order.
pub fn tables() -> Vec<Table> {
    vec![
        Table {
            title: "Bulk load",
            workload: "kv",
            rows: embedded("load_pairs_per_s"),
            p99: no_p99,
            unit: Unit::Rate,
            better: Better::Higher,
            what: "pairs/s: every key written once in random key order, transactions (batches) \
                   of 1,000 pairs committed without a sync, then one sync; 1 thread",
        },
        Table {
            title: "Random get, 1 thread",
            workload: "kv",
            rows: embedded("get_ns"),
            p99: no_p99,
            unit: Unit::Nanos,
            better: Better::Lower,
            what: "time per get of a uniformly random existing key, each get on its own \
                   (its own read transaction where the engine has them), value read; the mean \
                   of two runs, one before and one after the 2-thread run",
        },
        Table {
            title: "Random get, 2 threads",
            workload: "kv",
            rows: embedded("get2_ops_per_s"),
            p99: no_p99,
            unit: Unit::Rate,
            better: Better::Higher,
            what: "gets/s of both threads together, same gets as above",
        },
        Table {
            title: "Random get, 2-thread speedup",
            workload: "kv",
            rows: embedded("get_speedup_2t"),
            p99: no_p99,
            unit: Unit::Factor,
            better: Better::Higher,
            what: "2-thread gets/s ÷ 1-thread gets/s (the mean of the runs just before and just \
                   after it), in the same process",
        },
        Table {
            title: "10-entry scan",
            workload: "kv",
            rows: embedded("scan10_ns"),
            p99: no_p99,
            unit: Unit::Nanos,
            better: Better::Lower,
            what: "time per scan of 10 consecutive entries (keys and values) from a random \
                   key, 1 thread",
        },
        Table {
            title: "Compare-and-set, uncontended, non-durable",
            workload: "kv",
            rows: embedded("cas_ns"),
            p99: cas_p99,
            unit: Unit::Nanos,
            better: Better::Lower,
            what: "mean time to read a random item's version/ETag and write it back under \
                   that condition, 1 thread (tenure: `get` + `put(if_match)`; LMDB, redb, \
                   fjall: one write transaction that reads then writes; sled: `get` + \
                   `compare_and_swap`; SQLite: `SELECT` + `UPDATE … WHERE value = old`)",
        },
        Table {
            title: "Memory: anonymous resident bytes per key after the load",
            workload: "kv",
            rows: embedded("anon_bytes_per_key"),
            p99: no_p99,
            unit: Unit::BytesPerKey,
            better: Better::Lower,
            what: "growth of RssAnon (heap: indexes, caches, memtables) over the load ÷ keys; \
                   file pages mapped by LMDB and tenure are not in it (see the next table)",
        },
        Table {
            title: "Memory: all resident bytes per key after the load",
            workload: "kv",
            rows: embedded("rss_bytes_per_key"),
            p99: no_p99,
            unit: Unit::BytesPerKey,
            better: Better::Lower,
            what: "growth of VmRSS (anonymous + mapped file pages) over the load ÷ keys",
        },
    ]
    .into_iter()
    .chain(extended_tables())
    .chain(vec![
        Table {
            title: "Space after churn and compaction",
            workload: "churn",
            rows: embedded("churn_ratio"),
            p99: no_p99,
            unit: Unit::Factor,
            better: Better::Lower,
            what: "bytes allocated on disk ÷ live bytes (key + value of the remaining items), \
                   engine still open, after: load, overwrite every key 3×, delete every other \
                   key (each pass in transactions of 1,000, then a sync), compact, sync",
        },
        Table {
            title: "Space after churn and compaction, engine closed",
            workload: "churn",
            rows: embedded("churn_ratio_closed"),
            p99: no_p99,
            unit: Unit::Factor,
            better: Better::Lower,
            what: "the same ratio once the engine is closed (dropped)",
        },
        Table {
            title: "Space after churn and compaction, apparent file sizes",
            workload: "churn",
            rows: embedded("churn_ratio_apparent"),
            p99: no_p99,
            unit: Unit::Factor,
            better: Better::Lower,
            what: "the same, with the files' lengths instead of their allocated blocks",
        },
        Table {
            title: "Space after churn, before compaction",
            workload: "churn",
            rows: embedded("churn_ratio_before_compact"),
            p99: no_p99,
            unit: Unit::Factor,
            better: Better::Lower,
            what: "the same ratio just before the compaction call",
        },
        Table {
            title: "Memory after churn: anonymous resident bytes per live key",
            workload: "churn",
            rows: embedded("churn_anon_bytes_per_live_key"),
            p99: no_p99,
            unit: Unit::BytesPerKey,
            better: Better::Lower,
            what: "growth of RssAnon from before the open to after the compaction ÷ the keys \
                   left (half of those written)",
        },
        Table {
            title: "Lease: acquire + release",
            workload: "lease",
            rows: vec![
                ("tenure", "lease_pair_ns"),
                ("redis", "redis_pair_ns"),
                ("memcached", "memcached_pair_ns"),
            ],
            p99: lease_p99,
            unit: Unit::Nanos,
            better: Better::Lower,
            what: "mean time per pair, 1 thread, 1,000 keys in turn: tenure \
                   `acquire_lease(15 s)` + `release_lease` (buffered store); redis-server \
                   `SET key id NX PX 15000` + `DEL key` over one loopback connection, \
                   persistence off; memcached `add key` (15 s expiry) + `delete key`, likewise",
        },
        Table {
            title: "Cache lock: get_and_lock + unlock",
            workload: "lease",
            rows: vec![
                ("tenure", "lock_pair_ns"),
                ("redis", "redis_pair_ns"),
                ("memcached", "memcached_pair_ns"),
            ],
            p99: lease_p99,
            unit: Unit::Nanos,
            better: Better::Lower,
            what: "tenure `get_and_lock(15 s)` (returns the item) + `unlock`; redis and \
                   memcached: the same pairs as above",
        },
        Table {
            title: "Machine limits: random DRAM read",
            workload: "limits",
            rows: vec![("raw", "dram_read_ns")],
            p99: no_p99,
            unit: Unit::Nanos,
            better: Better::None,
            what: "one dependent load in a pointer chase over a random cycle",
        },
        Table {
            title: "Machine limits: 200 B pwrite + fdatasync",
            workload: "limits",
            rows: vec![("raw", "fdatasync_200b_ns")],
            p99: |_| Some("fdatasync_200b_p99_ns"),
            unit: Unit::Nanos,
            better: Better::None,
            what: "median time of `pwrite` of 200 B into a preallocated, already-written file \
                   then `fdatasync`",
        },
    ])
    .collect()
}

/// Format a figure in its unit.
pub fn show(unit: Unit, value: f64) -> String {
    if !value.is_finite() {
        return "—".into();
    }
    match unit {
        Unit::Nanos => {
            let micros = value / 1000.0;
            if micros >= 10_000.0 {
                format!("{:.1} ms", micros / 1000.0)
            } else if micros >= 100.0 {
                format!("{micros:.0} µs")
            } else if micros >= 10.0 {
                format!("{micros:.1} µs")
            } else {
                format!("{micros:.3} µs")
            }
        }
        Unit::Rate => {
            if value >= 1e6 {
                format!("{:.2} M/s", value / 1e6)
            } else if value >= 1e5 {
                format!("{:.0} k/s", value / 1e3)
            } else if value >= 1e3 {
                format!("{:.1} k/s", value / 1e3)
            } else {
                format!("{value:.0}/s")
            }
        }
        Unit::Factor => format!("{value:.2}×"),
        Unit::BytesPerKey => format!("{value:.0} B"),
        Unit::Bytes => format!("{:.1} MiB", value / (1u64 << 20) as f64),
        Unit::Percent => format!("{value:.2} %"),
    }
}

pub fn median(values: &[f64]) -> f64 {
    let mut sorted: Vec<f64> = values.iter().copied().filter(|v| v.is_finite()).collect();
    if sorted.is_empty() {
        return f64::NAN;
    }
    sorted.sort_by(|a, b| a.partial_cmp(b).expect("finite"));
    let middle = sorted.len() / 2;
    if sorted.len() % 2 == 1 {
        sorted[middle]
    } else {
        (sorted[middle - 1] + sorted[middle]) / 2.0
    }
}

/// Samples by (workload, engine, round).
pub struct Results {
    pub rounds: usize,
    by_key: BTreeMap<(String, String, usize), Metrics>,
}

impl Results {
    pub fn new(samples: &[Sample], rounds: usize) -> Results {
        let mut by_key = BTreeMap::new();
        for sample in samples {
            if let Some(metrics) = &sample.metrics {
                by_key.insert(
                    (sample.workload.clone(), sample.engine.clone(), sample.round),
                    metrics.clone(),
                );
            }
        }
        Results { rounds, by_key }
    }

    /// The figure of one round (NaN when that child failed or did not run).
    pub fn get(&self, workload: &str, engine: &str, metric: &str, round: usize) -> f64 {
        self.by_key
            .get(&(workload.to_owned(), engine.to_owned(), round))
            .and_then(|metrics| metrics.get(metric))
            .copied()
            .unwrap_or(f64::NAN)
    }

    pub fn per_round(&self, workload: &str, engine: &str, metric: &str) -> Vec<f64> {
        (0..self.rounds)
            .map(|round| self.get(workload, engine, metric, round))
            .collect()
    }

    pub fn median(&self, workload: &str, engine: &str, metric: &str) -> f64 {
        median(&self.per_round(workload, engine, metric))
    }

    /// Whether any engine has a sample of `workload` in `round`.
    pub fn has_round(&self, workload: &str, round: usize) -> bool {
        self.by_key
            .keys()
            .any(|(w, _, r)| w == workload && *r == round)
    }

    fn has(&self, workload: &str, engine: &str) -> bool {
        self.by_key
            .keys()
            .any(|(w, e, _)| w == workload && e == engine)
    }
}

fn ratios_line(ratios: &[f64]) -> String {
    ratios
        .iter()
        .map(|ratio| {
            if ratio.is_finite() {
                format!("{ratio:.2}")
            } else {
                "—".into()
            }
        })
        .collect::<Vec<_>>()
        .join(", ")
}

/// tenure ÷ the best peer of each round, for one table.
pub fn versus_best(results: &Results, table: &Table) -> Option<(Vec<f64>, Vec<String>)> {
    let (_, tenure_metric) = table.rows.iter().find(|(engine, _)| *engine == "tenure")?;
    let mut ratios = Vec::new();
    let mut winners = Vec::new();
    for round in 0..results.rounds {
        let tenure = results.get(table.workload, "tenure", tenure_metric, round);
        if !tenure.is_finite() {
            // A round this workload did not run in (or tenure's child failed).
            if results.has_round(table.workload, round) {
                ratios.push(f64::NAN);
                winners.push("—".into());
            }
            continue;
        }
        let mut best: Option<(&str, f64)> = None;
        for (engine, metric) in &table.rows {
            if *engine == "tenure" {
                continue;
            }
            let value = results.get(table.workload, engine, metric, round);
            if !value.is_finite() {
                continue;
            }
            let better = match (best, table.better) {
                (None, _) => true,
                (Some((_, current)), Better::Lower) => value < current,
                (Some((_, current)), _) => value > current,
            };
            if better {
                best = Some((engine, value));
            }
        }
        match best {
            Some((engine, value)) => {
                ratios.push(tenure / value);
                winners.push(engine.to_owned());
            }
            None => {
                ratios.push(f64::NAN);
                winners.push("—".into());
            }
        }
    }
    Some((ratios, winners))
}

/// The report's tables.
pub fn render_tables(results: &Results) -> String {
    let mut out = String::new();
    for table in tables() {
        let rows: Vec<_> = table
            .rows
            .iter()
            .filter(|(engine, _)| results.has(table.workload, engine))
            .collect();
        if rows.is_empty() {
            continue;
        }
        let _ = writeln!(out, "### {}\n", table.title);
        let _ = writeln!(out, "{}.\n", table.what);
        let with_p99 = rows.iter().any(|(_, metric)| (table.p99)(metric).is_some());
        let compare = table.better != Better::None && results.has(table.workload, "tenure");
        let mut header = String::from("| engine | median |");
        let mut rule = String::from("| --- | --- |");
        if with_p99 {
            header.push_str(" p99 (median) |");
            rule.push_str(" --- |");
        }
        // Only the rounds the workload ran in (the extended workloads may run fewer).
        let shown: Vec<usize> = (0..results.rounds)
            .filter(|round| results.has_round(table.workload, *round))
            .collect();
        for round in &shown {
            let _ = write!(header, " round {} |", round + 1);
            rule.push_str(" --- |");
        }
        if compare {
            header.push_str(" tenure ÷ engine (median of rounds) |");
            rule.push_str(" --- |");
        }
        let _ = writeln!(out, "{header}\n{rule}");
        let tenure_metric = table
            .rows
            .iter()
            .find(|(engine, _)| *engine == "tenure")
            .map(|(_, metric)| *metric);
        for (engine, metric) in &rows {
            let values = results.per_round(table.workload, engine, metric);
            let mut line = format!("| {engine} | **{}** |", show(table.unit, median(&values)));
            if with_p99 {
                let p99 = (table.p99)(metric)
                    .map(|p99| results.median(table.workload, engine, p99))
                    .unwrap_or(f64::NAN);
                let _ = write!(line, " {} |", show(table.unit, p99));
            }
            for round in &shown {
                let _ = write!(line, " {} |", show(table.unit, values[*round]));
            }
            if compare {
                if let Some(tenure_metric) = tenure_metric {
                    let ratios: Vec<f64> = (0..results.rounds)
                        .map(|round| {
                            results.get(table.workload, "tenure", tenure_metric, round)
                                / results.get(table.workload, engine, metric, round)
                        })
                        .collect();
                    let _ = write!(line, " {:.2} |", median(&ratios));
                }
            }
            let _ = writeln!(out, "{line}");
        }
        if compare {
            if let Some((ratios, winners)) = versus_best(results, &table) {
                let ratio = median(&ratios);
                let direction = match table.better {
                    Better::Lower => "lower is better",
                    _ => "higher is better",
                };
                let verdict = if !ratio.is_finite() {
                    "no peer measured"
                } else if (table.better == Better::Lower && ratio <= 1.0)
                    || (table.better == Better::Higher && ratio >= 1.0)
                {
                    "**tenure wins this row**"
                } else {
                    "**tenure loses this row**"
                };
                let mut best_names: Vec<&String> = winners.iter().collect();
                best_names.dedup();
                let _ = writeln!(
                    out,
                    "\ntenure ÷ best peer: **{ratio:.2}** ({direction}; per round: {}; best peer per \
                     round: {}) — {verdict}.",
                    ratios_line(&ratios),
                    winners.join(", ")
                );
            }
        }
        out.push('\n');
    }
    out
}

/// One target of the issues, checked against the measured per-round ratios.
struct Target {
    issue: &'static str,
    row: &'static str,
    target: &'static str,
    /// Per-round figures compared with the bound.
    values: Vec<f64>,
    bound: f64,
    at_most: bool,
    /// How the figure is shown after its number: "×" (a ratio), " B", " ms".
    unit: &'static str,
    explain: &'static str,
}

fn peer_best(results: &Results, workload: &str, metric: &str, round: usize, lower: bool) -> f64 {
    let mut best = f64::NAN;
    for engine in super::engines::EMBEDDED.iter().skip(1) {
        let value = results.get(workload, engine, metric, round);
        if value.is_finite()
            && (!best.is_finite() || (lower && value < best) || (!lower && value > best))
        {
            best = value;
        }
    }
    best
}

/// The targets of the issues "Engine: items", "Leases and cache locks" and "Open in
/// milliseconds".
pub fn render_targets(results: &Results) -> String {
    let rounds = 0..results.rounds;
    let t = |workload: &str, engine: &str, metric: &str, round: usize| {
        results.get(workload, engine, metric, round)
    };
    let targets = vec![
        Target {
            issue: "3",
            row: "random get latency",
            target: "≤ 0.5× LMDB",
            values: rounds
                .clone()
                .map(|r| t("kv", "tenure", "get_ns", r) / t("kv", "lmdb", "get_ns", r))
                .collect(),
            bound: 0.5,
            at_most: true,
            unit: "×",
            explain: "tenure get µs ÷ LMDB get µs",
        },
        Target {
            issue: "3",
            row: "random get, 2 threads",
            target: "≥ 1.8× one thread",
            values: rounds
                .clone()
                .map(|r| t("kv", "tenure", "get_speedup_2t", r))
                .collect(),
            bound: 1.8,
            at_most: false,
            unit: "×",
            explain: "tenure 2-thread gets/s ÷ 1-thread gets/s",
        },
        Target {
            issue: "3",
            row: "10-entry scan",
            target: "≤ LMDB",
            values: rounds
                .clone()
                .map(|r| t("kv", "tenure", "scan10_ns", r) / t("kv", "lmdb", "scan10_ns", r))
                .collect(),
            bound: 1.0,
            at_most: true,
            unit: "×",
            explain: "tenure scan µs ÷ LMDB scan µs",
        },
        Target {
            issue: "3",
            row: "If-Match compare-and-set, buffered",
            target: "≥ 10× best embedded peer's rate",
            values: rounds
                .clone()
                .map(|r| {
                    peer_best(results, "kv", "cas_ns", r, true) / t("kv", "tenure", "cas_ns", r)
                })
                .collect(),
            bound: 10.0,
            at_most: false,
            unit: "×",
            explain: "tenure CAS/s ÷ best peer's CAS/s",
        },
        Target {
            issue: "3",
            row: "bulk load",
            target: "≥ LMDB",
            values: rounds
                .clone()
                .map(|r| {
                    t("kv", "tenure", "load_pairs_per_s", r)
                        / t("kv", "lmdb", "load_pairs_per_s", r)
                })
                .collect(),
            bound: 1.0,
            at_most: false,
            unit: "×",
            explain: "tenure pairs/s ÷ LMDB pairs/s",
        },
        Target {
            issue: "3",
            row: "memory per key",
            target: "≤ 64 B index overhead beyond the 24 B key",
            values: rounds
                .clone()
                .map(|r| t("kv", "tenure", "anon_bytes_per_key", r) - super::KEY_BYTES as f64)
                .collect(),
            bound: 64.0,
            at_most: true,
            unit: " B",
            explain: "tenure anonymous resident bytes per key − 24 (values stay in the mapped log)",
        },
        Target {
            issue: "3",
            row: "space after churn + compact",
            target: "≤ 1.2× live bytes",
            values: rounds
                .clone()
                .map(|r| t("churn", "tenure", "churn_ratio", r))
                .collect(),
            bound: 1.2,
            at_most: true,
            unit: "×",
            explain: "tenure bytes on disk ÷ live bytes",
        },
        Target {
            issue: "4",
            row: "lease acquire + release",
            target: "≥ 20× redis `SET NX PX` + `DEL`",
            values: rounds
                .clone()
                .map(|r| {
                    t("lease", "redis", "redis_pair_ns", r)
                        / t("lease", "tenure", "lease_pair_ns", r)
                })
                .collect(),
            bound: 20.0,
            at_most: false,
            unit: "×",
            explain: "tenure pairs/s ÷ redis pairs/s",
        },
        Target {
            issue: "4",
            row: "get_and_lock + unlock",
            target: "≥ 20× redis `SET NX PX` + `DEL`",
            values: rounds
                .clone()
                .map(|r| {
                    t("lease", "redis", "redis_pair_ns", r)
                        / t("lease", "tenure", "lock_pair_ns", r)
                })
                .collect(),
            bound: 20.0,
            at_most: false,
            unit: "×",
            explain: "tenure pairs/s ÷ redis pairs/s",
        },
        Target {
            issue: "30",
            row: "open, 1M items (workload `open`, full mode)",
            target: "≤ 5 ms",
            values: rounds
                .clone()
                .map(|r| t("open", "tenure", "open_ns", r) / 1e6)
                .collect(),
            bound: 5.0,
            at_most: true,
            unit: " ms",
            explain: "tenure's open and first read, ms",
        },
        Target {
            issue: "30",
            row: "open, 10M items (workload `open_large`, full mode)",
            target: "≤ 50 ms",
            values: rounds
                .clone()
                .map(|r| t("open_large", "tenure", "open_large_ns", r) / 1e6)
                .collect(),
            bound: 50.0,
            at_most: true,
            unit: " ms",
            explain: "tenure's open and first read, ms",
        },
    ];
    let mut out = String::from(
        "| issue | row | target | measured (median of rounds) | per round | met? | what is divided |\n\
         | --- | --- | --- | --- | --- | --- | --- |\n",
    );
    for target in targets {
        let value = median(&target.values);
        let met = if !value.is_finite() {
            "not measured"
        } else if (target.at_most && value <= target.bound)
            || (!target.at_most && value >= target.bound)
        {
            "yes"
        } else {
            "**no**"
        };
        let shown = match target.unit {
            "×" => format!("{value:.2}×"),
            unit => format!("{value:.0}{unit}"),
        };
        let _ = writeln!(
            out,
            "| {} | {} | {} | {} | {} | {} | {} |",
            target.issue,
            target.row,
            target.target,
            shown,
            ratios_line(&target.values),
            met,
            target.explain
        );
    }
    out
}

/// Failed children, if any.
pub fn render_failures(samples: &[Sample]) -> String {
    let mut out = String::new();
    for sample in samples {
        if let Some(error) = &sample.error {
            let _ = writeln!(
                out,
                "- round {}, {} / {}: {}",
                sample.round + 1,
                sample.workload,
                sample.engine,
                error.replace('\n', " ")
            );
        }
    }
    out
}
