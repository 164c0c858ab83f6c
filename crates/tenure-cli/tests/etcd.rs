//! The tool on a store on an etcd cluster: DIR is an etcd:// URL (docs/etcd.md). Each command
//! is a separate client of the cluster, so a lease one command takes refuses the next
//! command's write. Needs TENURE_ETCD_ENDPOINTS (scripts/etcd-cluster.sh); skipped without it
//! unless TENURE_REQUIRE_ETCD=1.

mod support;

use support::tenure;

fn cluster_url(name: &str) -> Option<String> {
    let endpoints = tenure_testkit::etcd_cluster::endpoints()?;
    let unique = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |elapsed| elapsed.as_nanos());
    Some(format!(
        "etcd://{endpoints}/cli/{name}-{}-{unique}",
        std::process::id()
    ))
}

#[test]
fn every_command_works_on_a_cluster_store_and_leases_hold_across_commands() {
    let Some(url) = cluster_url("commands") else {
        return;
    };
    tenure(&["container", "create", &url, "docs"]).expect(0);
    let put = tenure(&["--json", "put", &url, "docs", "report", "draft"])
        .expect(0)
        .json();
    let etag = put["etag"].as_str().expect("etag").to_owned();
    let got = tenure(&["get", &url, "docs", "report", "--value-only"]).expect(0);
    assert_eq!(got.stdout, "draft");
    // A stale if_match from another command is refused with the current ETag.
    tenure(&["put", &url, "docs", "report", "v2", "--if-match", &etag]).expect(0);
    let stale = tenure(&["put", &url, "docs", "report", "v3", "--if-match", &etag]).expect(1);
    assert!(
        stale.stderr.contains("ConditionNotMet (412)"),
        "{}",
        stale.stderr
    );
    // A lease taken by one command refuses the next command's write.
    let lease = tenure(&[
        "--json",
        "lease",
        "acquire",
        &url,
        "docs",
        "report",
        "--duration",
        "15",
    ])
    .expect(0)
    .json();
    let id = lease["lease_id"].as_str().expect("id").to_owned();
    let refused = tenure(&["put", &url, "docs", "report", "x"]).expect(1);
    assert!(
        refused.stderr.contains("LeaseIdMissing (412)"),
        "{}",
        refused.stderr
    );
    tenure(&["put", &url, "docs", "report", "final", "--lease-id", &id]).expect(0);
    tenure(&[
        "lease",
        "release",
        &url,
        "docs",
        "report",
        "--lease-id",
        &id,
    ])
    .expect(0);
    let listed = tenure(&["list", &url, "docs"]).expect(0);
    assert!(listed.stdout.starts_with("report"), "{}", listed.stdout);
    let stat = tenure(&["--json", "stat", &url]).expect(0).json();
    assert_eq!(stat["items"], 1);
    let changes = tenure(&["changes", &url, "--since", "0"]).expect(0);
    assert!(
        changes.stdout.contains("container_created docs"),
        "{}",
        changes.stdout
    );
    tenure(&["dump", &url]).expect(0);
    // verify and repair read a local store's files: a clear usage error, exit 2.
    let verify = tenure(&["verify", &url]).expect(2);
    assert!(verify.stderr.contains("etcd"), "{}", verify.stderr);
}

#[test]
fn a_cluster_nobody_answers_for_is_exit_9_within_the_deadline() {
    let started = std::time::Instant::now();
    let unreachable = tenure(&[
        "get",
        "etcd://127.0.0.1:1/p?timeout_ms=300&connect_timeout_ms=200",
        "docs",
        "report",
    ])
    .expect(9);
    assert!(
        unreachable.stderr.contains("Unavailable (503)")
            && unreachable.stderr.contains("nothing was committed"),
        "{}",
        unreachable.stderr
    );
    assert!(started.elapsed() < std::time::Duration::from_secs(10));
}
