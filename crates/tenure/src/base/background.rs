//! The store's background threads (flusher, segment preparer, compactor): one way to start
//! them, each at the CPU priority its work can afford.
//!
//! Why priorities: on a machine with few cores the background threads share them with the
//! caller's threads. At the default priority the scheduler treats a thread that slept as owed
//! CPU time, so the preparer waking to fault in a step of the next segment (tens of ms on
//! fresh memory) or a compaction pass could keep a writer off its core for a whole run of
//! theirs: on the 2-vCPU test machine a compare-and-set loop stalled 25 ms several times a
//! second, its thread runnable and waiting, while the preparer ran on its core and the
//! compactor on the other (`perf sched timehist`, docs/design.md §11 "Background thread priorities"). Nice 19
//! was not enough: each time the preparer woke from a folio lock it still preempted the
//! writer (a quarter of a millisecond each, once 13.5 ms). Work that only keeps ahead of the
//! callers, the segment preparer and compaction, runs under `SCHED_BATCH` at nice 19 instead:
//! a waking thread of that class never preempts a caller's, and at nice 19 it has a sixtieth
//! of a caller's weight where they share a CPU. Not `SCHED_IDLE` (RocksDB's
//! `CpuPriority::kIdle`), tried too: the compactor takes log reservations, and every writer's
//! acknowledgement waits for the versions before its own, so a compactor starved in the middle
//! of a relocation record would hold the writers up, and the preparer under it shared a CPU
//! with compaction at equal weight and fell behind the appends. The flusher keeps the
//! default: it bounds how much a `buffered` store can lose, so it must not wait behind busy
//! callers.

use std::thread::JoinHandle;

/// How a background thread competes with the caller's threads for the CPU.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Priority {
    /// The default: the work has a deadline of its own (the flusher's interval).
    Normal,
    /// `SCHED_BATCH` at nice 19: the work only keeps ahead of the callers, and a caller that
    /// outruns it does the work itself or waits for it (an append that reaches the
    /// unallocated end allocates, a log grows until compacted).
    Background,
}

/// The nice value of [`Priority::Background`]: the largest Linux allows.
const BACKGROUND_NICE: libc::c_int = 19;

/// Starts the background thread `name` at `priority`, running `body`.
pub(crate) fn spawn<T: Send + 'static>(
    name: &'static str,
    priority: Priority,
    body: impl FnOnce() -> T + Send + 'static,
) -> std::io::Result<JoinHandle<T>> {
    std::thread::Builder::new()
        .name(name.into())
        .spawn(move || {
            set_priority_of_this_thread(priority);
            body()
        })
}

fn set_priority_of_this_thread(priority: Priority) {
    if priority == Priority::Normal {
        return;
    }
    let parameters = libc::sched_param { sched_priority: 0 };
    // SAFETY: with pid 0, sched_setscheduler and setpriority change only the calling thread
    // (Linux keeps both per thread); `parameters` outlives the call. Moving to SCHED_BATCH
    // or raising nice needs no privilege. Should either fail, the thread runs closer to the
    // default, which is correct, only less kind to the callers, so the results are not
    // errors.
    unsafe {
        libc::sched_setscheduler(0, libc::SCHED_BATCH, &parameters);
        libc::setpriority(libc::PRIO_PROCESS, 0, BACKGROUND_NICE);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The calling thread's scheduling policy.
    fn policy_of_this_thread() -> libc::c_int {
        // SAFETY: reads the calling thread's policy (pid 0).
        let policy = unsafe { libc::sched_getscheduler(0) };
        assert!(policy >= 0, "sched_getscheduler failed");
        policy
    }

    /// The calling thread's nice value.
    fn nice_of_this_thread() -> libc::c_int {
        // SAFETY: getpriority reads the calling thread's nice value (`who` 0 is the caller).
        // It can return -1 as a value, so errno is cleared first and read after.
        unsafe {
            *libc::__errno_location() = 0;
            let nice = libc::getpriority(libc::PRIO_PROCESS, 0);
            assert_eq!(*libc::__errno_location(), 0, "getpriority failed");
            nice
        }
    }

    #[test]
    fn each_priority_gets_its_policy_and_the_callers_stays() {
        let policy_and_nice = || (policy_of_this_thread(), nice_of_this_thread());
        let callers = policy_and_nice();
        let run = |name, priority| {
            spawn(name, priority, policy_and_nice)
                .unwrap()
                .join()
                .unwrap()
        };
        assert_eq!(
            run("tenure-test-backgr", Priority::Background),
            (libc::SCHED_BATCH, BACKGROUND_NICE)
        );
        assert_eq!(run("tenure-test-normal", Priority::Normal), callers);
        // The caller's own priority is untouched.
        assert_eq!(policy_and_nice(), callers);
    }

    /// The scheduling policy of each of this process's threads named `name` (Linux: field 41
    /// of `/proc/self/task/<tid>/stat`, counted after the command name's closing
    /// parenthesis, which the name itself may contain).
    fn policy_of_threads_named(name: &str) -> Vec<libc::c_int> {
        let mut policies = Vec::new();
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
            // Fields from the state (field 3) on.
            let policy = after_name.split(' ').nth(41 - 3).unwrap();
            policies.push(policy.parse().unwrap());
        }
        policies
    }

    #[test]
    fn a_buffered_stores_preparer_and_compactor_run_under_sched_batch_and_its_flusher_not() {
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
        let callers = policy_of_this_thread();
        // A thread sets its priority as it starts: wait (bounded) until each has.
        let expected = [
            ("tenure-segments", libc::SCHED_BATCH),
            // `comm` keeps 15 bytes of a name: "tenure-compactor" shows as this.
            ("tenure-compacto", libc::SCHED_BATCH),
            ("tenure-flusher", callers),
        ];
        for (name, policy) in expected {
            let mut seen = Vec::new();
            for _ in 0..1000 {
                seen = policy_of_threads_named(name);
                if !seen.is_empty() && seen.iter().all(|&found| found == policy) {
                    break;
                }
                std::thread::sleep(std::time::Duration::from_millis(1));
            }
            assert!(!seen.is_empty(), "no thread named {name}");
            assert!(
                seen.iter().all(|&found| found == policy),
                "{name} runs under policy {seen:?}, not {policy}"
            );
        }
        store.close().unwrap();
        let _ = std::fs::remove_dir_all(&directory);
    }

    #[test]
    fn a_background_thread_is_named() {
        let name = spawn("tenure-test-named", Priority::Background, || {
            std::thread::current().name().map(str::to_owned)
        })
        .unwrap()
        .join()
        .unwrap();
        assert_eq!(name.as_deref(), Some("tenure-test-named"));
    }
}
