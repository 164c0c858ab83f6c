//! The model-based sequences of the local engine's test (`tenure_testkit::model_sequences`: puts,
//! creates, conditional puts, deletes, batches, container creates and deletes, compactions,
//! checked after every step against the reference model by gets, listings and snapshot scans)
//! on stores on the 3-member cluster. Reopen closes the client and opens a new one; Crash drops
//! the client without closing it and opens a new one.
//!
//! TENURE_SEQUENCES sets how many (40 by default), TENURE_SEED the first seed.

use rand::rngs::StdRng;
use tenure::{Store, StoreOptions};
use tenure_testkit::model_sequences::{run_sequence, Subject};

/// Steps of the longest sequence.
const MAX_STEPS: usize = 40;

struct OnCluster {
    url: String,
    store: Option<Store>,
}

impl OnCluster {
    fn open(url: &str) -> Store {
        tenure_etcd::open(url, StoreOptions::default())
            .unwrap_or_else(|error| panic!("open {url}: {error}"))
    }
}

impl Subject for OnCluster {
    fn store(&self) -> &Store {
        self.store.as_ref().expect("open")
    }

    fn reopen(&mut self) {
        self.store.take().expect("open").close().unwrap();
        self.store = Some(OnCluster::open(&self.url));
    }

    fn crash(&mut self, _rng: &mut StdRng) {
        // The client goes without a close (a client buffers nothing: dropping it is all a
        // crash can do to it): nothing it acknowledged may be missing.
        drop(self.store.take());
        self.store = Some(OnCluster::open(&self.url));
    }
}

#[test]
fn random_sequences_on_the_cluster_match_the_reference_model() {
    let Some(endpoints) = tenure_testkit::etcd_cluster::endpoints() else {
        return;
    };
    let first_seed: u64 = std::env::var("TENURE_SEED")
        .ok()
        .and_then(|text| text.parse().ok())
        .unwrap_or(1);
    let count: u64 = std::env::var("TENURE_SEQUENCES")
        .ok()
        .and_then(|text| text.parse().ok())
        .unwrap_or(40);
    let run = uuid::Uuid::new_v4();
    for seed in first_seed..first_seed + count {
        let url = format!("etcd://{endpoints}/model/{run}/{seed}");
        let mut subject = OnCluster {
            store: Some(OnCluster::open(&url)),
            url,
        };
        if std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
            run_sequence(&mut subject, seed, MAX_STEPS)
        }))
        .is_err()
        {
            panic!("sequence failed; replay with TENURE_SEED={seed} TENURE_SEQUENCES=1");
        }
    }
    eprintln!("{count} sequences on the cluster match the model");
}
