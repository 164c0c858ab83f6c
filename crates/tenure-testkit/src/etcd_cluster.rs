//! The etcd cluster a test runs against: the one `scripts/etcd-cluster.sh` started, named by
//! the environment. Without one a test is skipped, unless `TENURE_REQUIRE_ETCD=1` (as in CI)
//! makes a missing cluster a failure.

use std::path::PathBuf;

/// The cluster's client endpoints (`host:port,host:port,…`), or `None` to skip.
pub fn endpoints() -> Option<String> {
    match std::env::var("TENURE_ETCD_ENDPOINTS") {
        Ok(endpoints) if !endpoints.is_empty() => Some(endpoints),
        _ => skip("TENURE_ETCD_ENDPOINTS"),
    }
}

/// The endpoints and the directory holding the members' data and pid files (for tests that
/// signal members), or `None` to skip.
pub fn endpoints_and_directory() -> Option<(String, PathBuf)> {
    let endpoints = endpoints()?;
    match std::env::var("TENURE_ETCD_CLUSTER_DIR") {
        Ok(directory) if !directory.is_empty() => Some((endpoints, PathBuf::from(directory))),
        _ => skip("TENURE_ETCD_CLUSTER_DIR"),
    }
}

fn skip<T>(variable: &str) -> Option<T> {
    assert!(
        std::env::var("TENURE_REQUIRE_ETCD").as_deref() != Ok("1"),
        "TENURE_REQUIRE_ETCD=1 but no cluster ({variable} unset): run under scripts/etcd-cluster.sh"
    );
    eprintln!("skipped: no etcd cluster ({variable} unset)");
    None
}
