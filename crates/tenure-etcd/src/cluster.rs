//! The connection to the cluster: one client over every member, calls bounded by the
//! caller's deadline, bounded retries with backoff, and etcd's failures as tenure's errors.
//!
//! tenure's API is blocking, the etcd client async: each call runs on a small runtime owned
//! by the store and the calling thread waits for it.

use std::future::Future;
use std::time::{Duration, Instant};

use etcd_client::{Client, ConnectOptions};
use tenure::{Error, ErrorCode, Result};

/// Attempts of one call that may be repeated safely (reads, and writes that never reached a
/// member), deadline permitting.
const MAX_ATTEMPTS: u32 = 8;
const FIRST_BACKOFF: Duration = Duration::from_millis(25);
const MAX_BACKOFF: Duration = Duration::from_millis(400);

/// Why a call failed, as far as retrying and reporting go.
pub(crate) enum Failure {
    /// Nothing reached a member (no connection): safe to repeat, nothing committed.
    NotSent(String),
    /// A member may have received the request; a write's outcome is unknown.
    Unknown(String),
    /// The revision asked for is older than the cluster's compaction.
    Compacted { compact_revision: i64 },
    /// etcd refused the request as it stands (size or operation limits): a clear error.
    Refused(Error),
}

pub(crate) struct Cluster {
    runtime: tokio::runtime::Runtime,
    client: Client,
    members: Vec<String>,
    endpoints: String,
    connect_timeout: Duration,
    request_timeout: Duration,
}

impl Cluster {
    pub(crate) fn connect(
        endpoints: &[String],
        connect_timeout: Duration,
        request_timeout: Duration,
    ) -> Result<Cluster> {
        let runtime = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(2)
            .thread_name("tenure-etcd")
            .enable_all()
            .build()
            .map_err(|error| Error::io("tokio runtime", "start", error))?;
        let joined = endpoints.join(",");
        let options = ConnectOptions::new()
            .with_connect_timeout(connect_timeout)
            .with_timeout(request_timeout)
            .with_keep_alive(Duration::from_secs(5), Duration::from_secs(5))
            // A member cut off from the leader answers "no leader" at once instead of
            // waiting: the call moves on to another member.
            .with_require_leader(true);
        let client = runtime
            .block_on(async {
                tokio::time::timeout(
                    connect_timeout,
                    Client::connect(endpoints.to_vec(), Some(options)),
                )
                .await
            })
            .map_err(|_| unavailable(&joined, "did not accept a connection in time", false))?
            .map_err(|error| {
                unavailable(&joined, &format!("refused the connection: {error}"), false)
            })?;
        let cluster = Cluster {
            runtime,
            client,
            members: endpoints.to_vec(),
            endpoints: joined,
            connect_timeout,
            request_timeout,
        };
        // etcd-client connects lazily: one read proves a quorum answers.
        cluster.read(|mut client| async move { client.status().await.map(|_| ()) })?;
        Ok(cluster)
    }

    pub(crate) fn endpoints(&self) -> &str {
        &self.endpoints
    }

    pub(crate) fn request_timeout(&self) -> Duration {
        self.request_timeout
    }

    /// Defragments every member in turn (a member answers for its own file only). Members
    /// that cannot be reached are skipped: their file shrinks at their next defragmentation.
    pub(crate) fn defragment_members(&self) -> Result<()> {
        let mut reached = 0;
        for member in &self.members {
            let options = ConnectOptions::new()
                .with_connect_timeout(self.connect_timeout)
                .with_timeout(self.request_timeout);
            let defragmented = self.runtime.block_on(async {
                let mut client = Client::connect([member.as_str()], Some(options)).await?;
                client.defragment().await
            });
            if defragmented.is_ok() {
                reached += 1;
            }
        }
        if reached == 0 {
            return Err(unavailable(
                &self.endpoints,
                "defragmented no member",
                false,
            ));
        }
        Ok(())
    }

    /// Runs a call that is safe to repeat (a read), retrying until it succeeds, the deadline
    /// passes or the attempts run out.
    pub(crate) fn read<T, F, Fut>(&self, call: F) -> Result<T>
    where
        F: FnMut(Client) -> Fut,
        Fut: Future<Output = Result<T, etcd_client::Error>>,
    {
        self.run(call, true)
    }

    /// Runs a write: repeated only while no member can have received it. Once one may have,
    /// a failure is `Unavailable` with the outcome unknown.
    pub(crate) fn write<T, F, Fut>(&self, call: F) -> Result<T>
    where
        F: FnMut(Client) -> Fut,
        Fut: Future<Output = Result<T, etcd_client::Error>>,
    {
        self.run(call, false)
    }

    fn run<T, F, Fut>(&self, mut call: F, repeatable: bool) -> Result<T>
    where
        F: FnMut(Client) -> Fut,
        Fut: Future<Output = Result<T, etcd_client::Error>>,
    {
        let deadline = Instant::now() + self.request_timeout;
        let mut backoff = FIRST_BACKOFF;
        let mut last = String::from("did not answer");
        for _ in 0..MAX_ATTEMPTS {
            let left = deadline.saturating_duration_since(Instant::now());
            if left.is_zero() {
                break;
            }
            let outcome = self
                .runtime
                .block_on(async { tokio::time::timeout(left, call(self.client.clone())).await });
            let failure = match outcome {
                Ok(Ok(value)) => return Ok(value),
                Ok(Err(error)) => classify(error),
                Err(_) => Failure::Unknown(format!(
                    "did not answer within {} ms",
                    self.request_timeout.as_millis()
                )),
            };
            match failure {
                Failure::Refused(error) => return Err(error),
                Failure::Compacted { compact_revision } => {
                    return Err(Error::Compacted {
                        since: 0,
                        oldest_available: u64::try_from(compact_revision).unwrap_or(0) + 1,
                    })
                }
                Failure::Unknown(reason) if !repeatable => {
                    return Err(unavailable(&self.endpoints, &reason, true))
                }
                Failure::Unknown(reason) | Failure::NotSent(reason) => last = reason,
            }
            let pause = backoff.min(deadline.saturating_duration_since(Instant::now()));
            std::thread::sleep(pause);
            backoff = (backoff * 2).min(MAX_BACKOFF);
        }
        Err(unavailable(&self.endpoints, &last, false))
    }

    /// Grants an etcd lease of `ttl_seconds` for a timer (timers.rs). Repeatable: a lease
    /// granted twice leaves one unused, which etcd drops when its TTL runs out.
    pub(crate) fn grant(&self, ttl_seconds: i64) -> Result<i64> {
        let granted =
            self.read(|mut client| async move { client.lease_grant(ttl_seconds, None).await })?;
        Ok(granted.id())
    }

    /// Revokes the leases of timers a failed commit did not use; a lease this cannot reach
    /// runs out by itself.
    pub(crate) fn revoke(&self, leases: &[i64]) {
        for &lease in leases {
            let _ = self.read(|mut client| async move { client.lease_revoke(lease).await });
        }
    }

    /// Runs a future on the store's runtime (watches, which manage their own deadline).
    pub(crate) fn block_on<F: Future>(&self, future: F) -> F::Output {
        self.runtime.block_on(future)
    }

    pub(crate) fn client(&self) -> Client {
        self.client.clone()
    }
}

pub(crate) fn unavailable(endpoints: &str, reason: &str, outcome_unknown: bool) -> Error {
    Error::Unavailable {
        endpoints: endpoints.to_owned(),
        reason: reason.to_owned(),
        outcome_unknown,
    }
}

/// etcd's and the transport's failures, sorted by what the caller may do about them.
pub(crate) fn classify(error: etcd_client::Error) -> Failure {
    use etcd_client::Error as E;
    match error {
        E::TransportError(error) => Failure::NotSent(format!("could not be reached: {error}")),
        E::IoError(error) => Failure::NotSent(format!("could not be reached: {error}")),
        E::GRpcStatus(status) => {
            let message = status.message().to_owned();
            if message.contains("required revision has been compacted") {
                return Failure::Compacted {
                    compact_revision: compacted_revision(&message),
                };
            }
            if message.contains("request is too large")
                || message.contains("received message larger than max")
            {
                return Failure::Refused(Error::invalid(
                    "value",
                    "the request is larger than the cluster accepts (etcd's \
                     --max-request-bytes, 1.5 MiB by default): raise it on every member or \
                     write less at once",
                ));
            }
            if message.contains("too many operations in txn request") {
                return Failure::Refused(Error::invalid(
                    "batch",
                    "the batch has more operations than one etcd transaction accepts (etcd's \
                     --max-txn-ops, 128 by default): raise it on every member or split the \
                     batch",
                ));
            }
            match status.code() {
                tonic::Code::Unavailable
                    if message.contains("connect") || message.contains("refused") =>
                {
                    Failure::NotSent(format!("could not be reached: {message}"))
                }
                _ => Failure::Unknown(format!("failed: {message}")),
            }
        }
        other => Failure::Refused(Error::invalid(
            "etcd",
            format!("the client refused: {other}"),
        )),
    }
}

/// etcd's compaction error names no revision in its message; the horizon is asked separately
/// where it matters (the change feed), so this reports the oldest it can name.
fn compacted_revision(_message: &str) -> i64 {
    0
}

/// An etcd record that does not decode: the store's data under the prefix is not tenure's,
/// or is damaged.
pub(crate) fn corrupt(key: &[u8], reason: String) -> Error {
    Error::Corruption {
        file: std::path::PathBuf::from(format!("etcd key {}", String::from_utf8_lossy(key))),
        offset: 0,
        reason,
    }
}

/// A refusal of the rules, with no ETag.
pub(crate) fn rejected(code: ErrorCode) -> Error {
    Error::rejected(code)
}
