//! The store's background threads (flusher, segment preparer, compactor): one way to start
//! them, each at the CPU priority its work can afford.
//!
//! Why priorities: on a machine with few cores the background threads share them with the
//! caller's threads. At the default priority the scheduler treats a thread that slept as owed
//! CPU time, so the preparer waking to fault in a step of the next segment (tens of ms on
//! fresh memory) or a compaction pass could keep a writer off its core for a whole run of
//! theirs: on the 2-vCPU test machine a compare-and-set loop stalled 25 ms several times a
//! second, its thread runnable and waiting, while the preparer ran on its core and the
//! compactor on the other (`perf sched timehist`, docs/design.md §11 "Session 17"). Work that
//! only keeps ahead of the callers runs at the lowest priority instead (nice 19, RocksDB's
//! `CpuPriority::kLow` for its compaction pool): it still has every idle cycle, and a caller
//! whose thread it would have pushed aside keeps its core. The flusher keeps the default:
//! it bounds how much a `buffered` store can lose, so it must not wait behind busy callers.

use std::thread::JoinHandle;

use crate::error::{Error, Result};

/// How a background thread competes with the caller's threads for the CPU.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Priority {
    /// The default: the work has a deadline of its own (the flusher's interval).
    Normal,
    /// Nice 19: the work only keeps ahead of the callers, and a caller that outruns it waits
    /// for it (an append that reaches the unallocated end, a log that grows until compacted).
    Lowest,
}

/// Nice value of [`Priority::Lowest`]: the largest Linux allows.
const LOWEST_NICE: libc::c_int = 19;

/// Starts the background thread `name` at `priority`, running `body`.
pub(crate) fn spawn<T: Send + 'static>(
    name: &'static str,
    priority: Priority,
    body: impl FnOnce() -> T + Send + 'static,
) -> Result<JoinHandle<T>> {
    std::thread::Builder::new()
        .name(name.into())
        .spawn(move || {
            set_priority_of_this_thread(priority);
            body()
        })
        .map_err(|error| Error::io(name, "spawn thread", error))
}

/// The priority of the calling thread, as a nice value (0 at the default).
#[cfg(test)]
pub(crate) fn nice_of_this_thread() -> libc::c_int {
    // SAFETY: getpriority reads the calling thread's nice value (`who` 0 is the caller; on
    // Linux the "process" priority is per thread). It can return -1 as a value, which is a
    // nice value too, so errno is cleared first and read after.
    unsafe {
        *libc::__errno_location() = 0;
        let nice = libc::getpriority(libc::PRIO_PROCESS, 0);
        assert_eq!(*libc::__errno_location(), 0, "getpriority failed");
        nice
    }
}

fn set_priority_of_this_thread(priority: Priority) {
    let nice = match priority {
        Priority::Normal => return,
        Priority::Lowest => LOWEST_NICE,
    };
    // SAFETY: setpriority with `who` 0 changes only the calling thread (Linux keeps nice per
    // thread). Raising nice needs no privilege; if it fails anyway the thread runs at the
    // default, which is correct, only less kind to the callers, so the result is ignored.
    unsafe {
        libc::setpriority(libc::PRIO_PROCESS, 0, nice);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_lowest_priority_thread_runs_at_nice_19_and_a_normal_one_at_the_callers() {
        let callers = nice_of_this_thread();
        let lowest = spawn("tenure-test-lowest", Priority::Lowest, nice_of_this_thread)
            .unwrap()
            .join()
            .unwrap();
        let normal = spawn("tenure-test-normal", Priority::Normal, nice_of_this_thread)
            .unwrap()
            .join()
            .unwrap();
        assert_eq!(lowest, LOWEST_NICE);
        assert_eq!(normal, callers);
        // The caller's own priority is untouched.
        assert_eq!(nice_of_this_thread(), callers);
    }

    /// The nice value of each of this process's threads named `name` (Linux: field 19 of
    /// `/proc/self/task/<tid>/stat`, counted after the command name's closing parenthesis).
    fn nice_of_threads_named(name: &str) -> Vec<i64> {
        let mut nices = Vec::new();
        for task in std::fs::read_dir("/proc/self/task").unwrap() {
            let path = task.unwrap().path();
            let Ok(comm) = std::fs::read_to_string(path.join("comm")) else {
                continue;
            };
            if comm.trim_end() != name {
                continue;
            }
            let Ok(stat) = std::fs::read_to_string(path.join("stat")) else {
                continue;
            };
            let after_name = &stat[stat.rfind(')').unwrap() + 2..];
            // Fields from the state (field 3) on; nice is field 19.
            let nice = after_name.split(' ').nth(19 - 3).unwrap();
            nices.push(nice.parse().unwrap());
        }
        nices
    }

    #[test]
    fn a_buffered_stores_preparer_and_compactor_run_at_the_lowest_priority_and_its_flusher_not() {
        let directory = std::env::temp_dir().join(format!(
            "tenure-background-priorities-{}",
            std::process::id()
        ));
        let _ = std::fs::remove_dir_all(&directory);
        let options = crate::StoreOptions {
            durability: crate::Durability::Buffered,
            ..crate::StoreOptions::default()
        };
        let store = crate::Store::open(&directory, options).unwrap();
        let callers = i64::from(nice_of_this_thread());
        // A thread sets its priority as it starts: wait (bounded) until each has.
        let expected = [
            ("tenure-segments", i64::from(LOWEST_NICE)),
            // `comm` keeps 15 bytes of a name: "tenure-compactor" shows as this.
            ("tenure-compacto", i64::from(LOWEST_NICE)),
            ("tenure-flusher", callers),
        ];
        for (name, nice) in expected {
            let mut seen = Vec::new();
            for _ in 0..1000 {
                seen = nice_of_threads_named(name);
                if !seen.is_empty() && seen.iter().all(|&found| found == nice) {
                    break;
                }
                std::thread::sleep(std::time::Duration::from_millis(1));
            }
            assert!(!seen.is_empty(), "no thread named {name}");
            assert!(
                seen.iter().all(|&found| found == nice),
                "{name} runs at nice {seen:?}, not {nice}"
            );
        }
        store.close().unwrap();
        let _ = std::fs::remove_dir_all(&directory);
    }

    #[test]
    fn a_background_thread_is_named() {
        let name = spawn("tenure-test-named", Priority::Lowest, || {
            std::thread::current().name().map(str::to_owned)
        })
        .unwrap()
        .join()
        .unwrap();
        assert_eq!(name.as_deref(), Some("tenure-test-named"));
    }
}
