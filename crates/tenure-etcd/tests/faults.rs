//! Faults of the cluster under load (docs/spec.md §15): 4 threads on two clients run a
//! compare-and-set counter and create-only writes, 2 more take turns on a lease, while the
//! test kills a follower with SIGKILL, then the leader (no quorum), brings both back, and
//! freezes a member with SIGSTOP for longer than the election timeout.
//!
//! Afterwards: every acknowledged write is present, the counter holds every acknowledged
//! increment and at most the unknown outcomes besides, fences strictly increase (no lease was
//! held by two clients at once), no call outlived its deadline by much, and the workload went
//! on once a quorum was back. Runs under scripts/etcd-cluster.sh (TENURE_ETCD_CLUSTER_DIR).

use std::path::PathBuf;
use std::process::Command;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Mutex;
use std::thread;
use std::time::{Duration, Instant};

use tenure::{
    Conditions, ContainerOptions, ErrorCode, LeaseRequest, ReadOptions, Store, StoreOptions,
    WriteOptions,
};

const REQUEST_TIMEOUT_MS: u64 = 1_000;
/// The longest a call may take: its deadline, and the slack of one backoff and scheduling.
const LONGEST_CALL: Duration = Duration::from_millis(REQUEST_TIMEOUT_MS + 1_500);

struct Cluster {
    endpoints: Vec<String>,
    directory: PathBuf,
}

impl Cluster {
    fn from_environment() -> Option<Cluster> {
        let (endpoints, directory) = tenure_testkit::etcd_cluster::endpoints_and_directory()?;
        Some(Cluster {
            endpoints: endpoints.split(',').map(str::to_owned).collect(),
            directory,
        })
    }

    fn pid_file(&self, member: usize) -> PathBuf {
        self.directory.join(format!("member-{}.pid", member + 1))
    }

    fn signal(&self, member: usize, signal: &str) {
        let pid = std::fs::read_to_string(self.pid_file(member)).unwrap();
        let status = Command::new("kill")
            .args([signal, pid.trim()])
            .status()
            .unwrap();
        assert!(status.success(), "kill {signal} member {member}");
    }

    /// Starts a killed member again, with its data and ports (the script's member-N.sh).
    fn restart(&self, member: usize) {
        let script = self.directory.join(format!("member-{}.sh", member + 1));
        let mut child = Command::new("bash").arg(&script).spawn().unwrap();
        std::fs::write(self.pid_file(member), child.id().to_string()).unwrap();
        // Reaped when the script's teardown kills it.
        thread::spawn(move || child.wait());
    }

    /// The member that leads now, as the members that answer say.
    fn leader(&self) -> usize {
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .unwrap();
        for _ in 0..100 {
            for (member, endpoint) in self.endpoints.iter().enumerate() {
                let status = runtime.block_on(async {
                    let options = etcd_client::ConnectOptions::new()
                        .with_connect_timeout(Duration::from_millis(300))
                        .with_timeout(Duration::from_millis(300));
                    let mut client =
                        etcd_client::Client::connect([endpoint.as_str()], Some(options)).await?;
                    client.status().await
                });
                if let Ok(status) = status {
                    let own = status.header().map(|header| header.member_id());
                    if status.leader() != 0 && own == Some(status.leader()) {
                        return member;
                    }
                }
            }
            thread::sleep(Duration::from_millis(100));
        }
        panic!("no member leads");
    }
}

/// What the workload saw.
#[derive(Default)]
struct Seen {
    /// Counter values this workload's compare-and-sets were acknowledged for.
    increments: Mutex<Vec<u64>>,
    /// Compare-and-sets whose outcome is unknown (Unavailable after sending).
    unknown_increments: AtomicU64,
    /// Keys whose create was acknowledged.
    created: Mutex<Vec<Vec<u8>>>,
    /// Fences granted, in grant order (a holder records its fence before releasing).
    fences: Mutex<Vec<u64>>,
    longest_call_micros: AtomicU64,
    unavailable: AtomicU64,
    unexpected: Mutex<Vec<String>>,
}

impl Seen {
    fn acknowledged(&self) -> usize {
        self.increments.lock().unwrap().len()
    }

    fn timed<T>(&self, call: impl FnOnce() -> T) -> T {
        let started = Instant::now();
        let result = call();
        let micros = started.elapsed().as_micros() as u64;
        self.longest_call_micros
            .fetch_max(micros, Ordering::Relaxed);
        result
    }

    /// Unavailable is expected while there is no quorum; anything else is a finding.
    fn failed(&self, what: &str, error: tenure::Error) {
        if error.code() == ErrorCode::Unavailable {
            self.unavailable.fetch_add(1, Ordering::Relaxed);
        } else {
            self.unexpected
                .lock()
                .unwrap()
                .push(format!("{what}: {error}"));
        }
    }
}

fn counter_of(value: &[u8]) -> u64 {
    u64::from_le_bytes(value.try_into().expect("8 bytes"))
}

fn compare_and_set_worker(store: &Store, thread: usize, seen: &Seen, stop: &AtomicBool) {
    let mut created = 0u64;
    while !stop.load(Ordering::Relaxed) {
        let current = match seen.timed(|| store.get("c", b"counter", &ReadOptions::default())) {
            Ok(item) => item,
            Err(error) => {
                seen.failed("get", error);
                continue;
            }
        };
        let next = counter_of(current.value.as_deref().unwrap()) + 1;
        let options = WriteOptions::with_conditions(Conditions::if_match(current.etag));
        match seen.timed(|| store.put("c", b"counter", &next.to_le_bytes(), &options)) {
            Ok(_) => seen.increments.lock().unwrap().push(next),
            Err(error) if error.code() == ErrorCode::ConditionNotMet => {}
            Err(error) => {
                if error.code() == ErrorCode::Unavailable && error.to_string().contains("unknown") {
                    seen.unknown_increments.fetch_add(1, Ordering::Relaxed);
                }
                seen.failed("compare-and-set", error);
            }
        }
        let key = format!("t{thread}/{created}").into_bytes();
        match seen.timed(|| store.create("c", &key, b"x", &WriteOptions::default())) {
            Ok(_) => {
                seen.created.lock().unwrap().push(key);
                created += 1;
            }
            // An earlier create whose outcome was unknown did land.
            Err(error) if error.code() == ErrorCode::AlreadyExists => created += 1,
            Err(error) => {
                if !(error.code() == ErrorCode::Unavailable
                    && error.to_string().contains("unknown"))
                {
                    seen.failed("create", error);
                    continue;
                }
                seen.failed("create", error);
            }
        }
    }
}

fn lease_worker(store: &Store, seen: &Seen, stop: &AtomicBool) {
    let request = LeaseRequest::seconds(15).unwrap();
    while !stop.load(Ordering::Relaxed) {
        let lease = match seen.timed(|| store.acquire_lease("c", b"job", &request)) {
            Ok(lease) => lease,
            Err(error)
                if matches!(
                    error.code(),
                    ErrorCode::LeaseAlreadyPresent | ErrorCode::LeaseIsBreakingAndCannotBeAcquired
                ) =>
            {
                thread::sleep(Duration::from_millis(5));
                continue;
            }
            Err(error) => {
                seen.failed("acquire", error);
                continue;
            }
        };
        seen.fences.lock().unwrap().push(lease.fence);
        let with_lease = WriteOptions {
            lease_id: Some(lease.id),
            ..WriteOptions::default()
        };
        let fence = lease.fence.to_le_bytes();
        if let Err(error) = seen.timed(|| store.put("c", b"job", &fence, &with_lease)) {
            seen.failed("put under the lease", error);
        }
        // A release that fails leaves the lease to run out (15 s): the other worker waits.
        if let Err(error) = seen.timed(|| store.release_lease("c", b"job", lease.id)) {
            seen.failed("release", error);
        }
    }
}

/// Waits until the workload's acknowledged increments pass `floor`, for at most `limit`.
fn wait_for_progress(seen: &Seen, floor: usize, limit: Duration, phase: &str) -> usize {
    let deadline = Instant::now() + limit;
    loop {
        let acknowledged = seen.acknowledged();
        if acknowledged > floor + 5 {
            return acknowledged;
        }
        assert!(
            Instant::now() < deadline,
            "{phase}: the workload made no progress in {limit:?} ({acknowledged} acknowledged)"
        );
        thread::sleep(Duration::from_millis(50));
    }
}

fn open(cluster: &Cluster, prefix: &str) -> Store {
    let url = format!(
        "etcd://{}/{prefix}?timeout_ms={REQUEST_TIMEOUT_MS}",
        cluster.endpoints.join(",")
    );
    tenure_etcd::open(&url, StoreOptions::default()).unwrap()
}

#[test]
fn acknowledged_writes_survive_killed_and_frozen_members_and_the_workload_resumes() {
    let Some(cluster) = Cluster::from_environment() else {
        return;
    };
    let prefix = format!("faults/{}", uuid::Uuid::new_v4());
    let first = open(&cluster, &prefix);
    let second = open(&cluster, &prefix);
    first
        .create_container("c", &ContainerOptions::default())
        .unwrap();
    first
        .put(
            "c",
            b"counter",
            &0u64.to_le_bytes(),
            &WriteOptions::default(),
        )
        .unwrap();
    first
        .put("c", b"job", b"", &WriteOptions::default())
        .unwrap();
    let seen = Seen::default();
    let stop = AtomicBool::new(false);
    thread::scope(|scope| {
        for thread in 0..4 {
            let store = if thread % 2 == 0 { &first } else { &second };
            let (seen, stop) = (&seen, &stop);
            scope.spawn(move || compare_and_set_worker(store, thread, seen, stop));
        }
        for store in [&first, &second] {
            let (seen, stop) = (&seen, &stop);
            scope.spawn(move || lease_worker(store, seen, stop));
        }
        let progress = wait_for_progress(&seen, 0, Duration::from_secs(10), "warm-up");

        let leader = cluster.leader();
        let follower = (leader + 1) % 3;
        cluster.signal(follower, "-KILL");
        wait_for_progress(&seen, progress, Duration::from_secs(10), "follower killed");

        cluster.signal(leader, "-KILL");
        // One member of three: no quorum. Calls fail with Unavailable within their deadline.
        thread::sleep(Duration::from_millis(2_500));
        let stalled = seen.acknowledged();
        cluster.restart(follower);
        cluster.restart(leader);
        let progress =
            wait_for_progress(&seen, stalled, Duration::from_secs(20), "members restarted");

        let frozen = cluster.leader();
        cluster.signal(frozen, "-STOP");
        thread::sleep(Duration::from_millis(1_500));
        cluster.signal(frozen, "-CONT");
        wait_for_progress(&seen, progress, Duration::from_secs(20), "member resumed");
        stop.store(true, Ordering::Relaxed);
    });

    let unexpected = seen.unexpected.lock().unwrap();
    assert!(unexpected.is_empty(), "unexpected errors: {unexpected:?}");
    assert!(
        seen.unavailable.load(Ordering::Relaxed) > 0,
        "calls without a quorum failed with Unavailable"
    );
    let longest = Duration::from_micros(seen.longest_call_micros.load(Ordering::Relaxed));
    assert!(longest <= LONGEST_CALL, "a call took {longest:?}");

    // Every acknowledged write is there.
    let check = open(&cluster, &prefix);
    let counter = counter_of(
        &check
            .get("c", b"counter", &ReadOptions::default())
            .unwrap()
            .value
            .unwrap(),
    );
    let increments = seen.increments.lock().unwrap();
    let mut distinct = increments.clone();
    distinct.sort_unstable();
    distinct.dedup();
    assert_eq!(
        distinct.len(),
        increments.len(),
        "two acknowledged compare-and-sets wrote one value"
    );
    assert!(distinct.last().is_none_or(|&highest| highest <= counter));
    let unknown = seen.unknown_increments.load(Ordering::Relaxed);
    assert!(
        counter >= increments.len() as u64 && counter <= increments.len() as u64 + unknown,
        "counter {counter}: {} acknowledged increments, {unknown} unknown",
        increments.len()
    );
    for key in seen.created.lock().unwrap().iter() {
        check
            .get("c", key, &ReadOptions::default())
            .unwrap_or_else(|error| {
                panic!(
                    "acknowledged {:?} is gone: {error}",
                    String::from_utf8_lossy(key)
                )
            });
    }
    let fences = seen.fences.lock().unwrap();
    assert!(fences.len() >= 2, "the lease changed hands");
    assert!(
        fences.windows(2).all(|pair| pair[0] < pair[1]),
        "fences strictly increase: {fences:?}"
    );
    eprintln!(
        "{} increments acknowledged ({unknown} unknown), {} creates, {} grants, {} Unavailable, \
         longest call {longest:?}",
        increments.len(),
        seen.created.lock().unwrap().len(),
        fences.len(),
        seen.unavailable.load(Ordering::Relaxed)
    );
}
