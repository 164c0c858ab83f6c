//! Linearizability on the cluster (docs/spec.md §3 step 6, §9 "strong", §15): the local
//! engine's history recorder (threads racing gets, puts, conditional puts and deletes on a few
//! keys) run against stores on the 3-member cluster of scripts/etcd-cluster.sh, each history
//! checked per key by the Wing–Gong search of `tenure_testkit::linearizability`.
//!
//! TENURE_HISTORIES sets how many (200 by default); TENURE_SEED the first seed.

use tenure::StoreOptions;
use tenure_testkit::campaign::histories::{overlapping_pairs, record_history_on};
use tenure_testkit::linearizability;

#[test]
fn histories_recorded_against_the_cluster_are_linearizable() {
    let Some(endpoints) = tenure_testkit::etcd_cluster::endpoints() else {
        return;
    };
    let first_seed: u64 = std::env::var("TENURE_SEED")
        .ok()
        .and_then(|text| text.parse().ok())
        .unwrap_or(1);
    let count: u64 = std::env::var("TENURE_HISTORIES")
        .ok()
        .and_then(|text| text.parse().ok())
        .unwrap_or(200);
    let run = uuid::Uuid::new_v4();
    let (mut operations, mut overlapping) = (0, 0);
    for seed in first_seed..first_seed + count {
        // A fresh store (prefix) per history, as the local recorder uses a fresh store.
        let url = format!("etcd://{endpoints}/linearizability/{run}/{seed}");
        let store = tenure_etcd::open(&url, StoreOptions::default()).unwrap();
        let history = record_history_on(&store, seed);
        operations += history.len();
        overlapping += overlapping_pairs(&history);
        if let Err(violation) = linearizability::check(&history) {
            panic!(
                "history {seed} on the cluster is not linearizable; replay with \
                 TENURE_SEED={seed} TENURE_HISTORIES=1 (thread timing differs between runs)\n\
                 {violation}"
            );
        }
    }
    eprintln!(
        "{count} histories on the cluster, {operations} operations, {overlapping} overlapping \
         pairs of operations on one key"
    );
    assert!(
        count < 20 || overlapping > 0,
        "no two operations on one key ever overlapped: the test does not race"
    );
}
