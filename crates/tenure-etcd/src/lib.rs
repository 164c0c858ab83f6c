//! tenure over an etcd cluster: the same [`tenure::Store`], the same rules and errors, shared
//! by every client of the cluster on any host.
//!
//! ```no_run
//! let store = tenure_etcd::open_location(
//!     "etcd://10.0.0.1:2379,10.0.0.2:2379,10.0.0.3:2379/orders",
//!     tenure::StoreOptions::default(),
//! )?;
//! store.put("carts", b"alice", b"3 items", &tenure::WriteOptions::default())?;
//! # Ok::<(), tenure::Error>(())
//! ```
//!
//! The URL is `etcd://host:port[,host:port…]/prefix[?timeout_ms=N&connect_timeout_ms=N]`:
//! the members to reach, the key prefix that holds this store inside the cluster (several
//! stores share a cluster under different prefixes), the deadline of each call (default
//! 5,000 ms) and of connecting (3,000 ms). When no quorum answers within the deadline a call
//! fails with `Unavailable` (503), whose message says whether a write's outcome is unknown.
//!
//! How operations map onto etcd, and what differs from a local store, is in docs/etcd.md.
//! `StoreOptions`' limits, clock, `read_only` and `change_feed_retention_versions` apply; its
//! durability, segment, background compaction and space settings are the local engine's and
//! are ignored (etcd's quorum commits every
//! write to its members' disks). A manual clock is refused: every deadline is held by an etcd
//! lease, so the cluster, not a client's clock, says when it has passed.

mod backend;
mod batch;
mod cluster;
mod codec;
mod feed;
mod reads;
mod recent;
mod snapshot;
mod store;
mod timers;
mod writes;

use std::sync::Arc;
use std::time::Duration;

use tenure::{Error, Result, Store, StoreOptions};

/// The scheme of a store on an etcd cluster.
pub const URL_SCHEME: &str = "etcd://";

const DEFAULT_REQUEST_TIMEOUT_MS: u64 = 5_000;
const DEFAULT_CONNECT_TIMEOUT_MS: u64 = 3_000;
/// The longest deadline a URL may ask for (10 minutes).
const MAX_TIMEOUT_MS: u64 = 600_000;
const MAX_MEMBERS: usize = 64;

/// Whether `location` names a store on an etcd cluster rather than a directory.
pub fn is_etcd_url(location: &str) -> bool {
    location.starts_with(URL_SCHEME)
}

/// Opens the store at `location`: an `etcd://` URL, or else a directory (as
/// [`tenure::Store::open`]).
pub fn open_location(location: &str, options: StoreOptions) -> Result<Store> {
    if is_etcd_url(location) {
        open(location, options)
    } else {
        Store::open(location, options)
    }
}

/// Opens the store an `etcd://` URL names. Nothing is created: the store exists as soon as
/// its first container does.
pub fn open(url: &str, options: StoreOptions) -> Result<Store> {
    let target = Target::parse(url)?;
    if options.clock.is_manual() {
        return Err(Error::invalid(
            "clock",
            "a manual clock cannot drive a cluster store: every client judges deadlines by its \
             system clock",
        ));
    }
    let cluster = cluster::Cluster::connect(
        &target.members,
        Duration::from_millis(target.connect_timeout_ms),
        Duration::from_millis(target.request_timeout_ms),
    )?;
    let backend = store::EtcdStore::new(
        cluster,
        codec::Keys::new(&target.prefix),
        options.limits,
        Arc::clone(&options.clock),
        options.read_only,
        options.change_feed_retention_versions,
    );
    Ok(Store::from_backend(Box::new(backend)))
}

/// What an `etcd://` URL says.
#[derive(Debug, Clone, PartialEq, Eq)]
struct Target {
    members: Vec<String>,
    prefix: String,
    request_timeout_ms: u64,
    connect_timeout_ms: u64,
}

impl Target {
    fn parse(url: &str) -> Result<Target> {
        let invalid = |reason: String| Error::invalid("url", reason);
        let rest = url
            .strip_prefix(URL_SCHEME)
            .ok_or_else(|| invalid(format!("{url:?} does not start with {URL_SCHEME}")))?;
        let (rest, query) = match rest.split_once('?') {
            Some((rest, query)) => (rest, Some(query)),
            None => (rest, None),
        };
        let (hosts, prefix) = rest.split_once('/').ok_or_else(|| {
            invalid(format!(
                "{url:?} names no prefix: etcd://host:port[,host:port...]/prefix"
            ))
        })?;
        if prefix.is_empty() {
            return Err(invalid(format!(
                "{url:?} names no prefix: etcd://host:port[,host:port...]/prefix (the prefix \
                 keeps this store apart from others in the cluster)"
            )));
        }
        let members: Vec<String> = hosts
            .split(',')
            .map(|host| {
                let valid = host
                    .rsplit_once(':')
                    .is_some_and(|(name, port)| !name.is_empty() && port.parse::<u16>().is_ok());
                if valid {
                    Ok(format!("http://{host}"))
                } else {
                    Err(invalid(format!(
                        "member {host:?} is not host:port (in {url:?})"
                    )))
                }
            })
            .collect::<Result<_>>()?;
        if members.len() > MAX_MEMBERS {
            return Err(invalid(format!("at most {MAX_MEMBERS} members")));
        }
        let mut target = Target {
            members,
            prefix: format!("/{prefix}"),
            request_timeout_ms: DEFAULT_REQUEST_TIMEOUT_MS,
            connect_timeout_ms: DEFAULT_CONNECT_TIMEOUT_MS,
        };
        for pair in query.into_iter().flat_map(|query| query.split('&')) {
            let (name, value) = pair.split_once('=').unwrap_or((pair, ""));
            let milliseconds = value
                .parse::<u64>()
                .ok()
                .filter(|ms| (1..=MAX_TIMEOUT_MS).contains(ms))
                .ok_or_else(|| {
                    invalid(format!(
                        "{name}={value:?}: milliseconds from 1 to {MAX_TIMEOUT_MS}"
                    ))
                });
            match name {
                "timeout_ms" => target.request_timeout_ms = milliseconds?,
                "connect_timeout_ms" => target.connect_timeout_ms = milliseconds?,
                _ => {
                    return Err(invalid(format!(
                        "unknown setting {name:?}: timeout_ms or connect_timeout_ms"
                    )))
                }
            }
        }
        Ok(target)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn urls_name_members_prefix_and_deadlines() {
        let target =
            Target::parse("etcd://127.0.0.1:2379,db2:2380/apps/orders?timeout_ms=250").unwrap();
        assert_eq!(
            target,
            Target {
                members: vec!["http://127.0.0.1:2379".into(), "http://db2:2380".into()],
                prefix: "/apps/orders".into(),
                request_timeout_ms: 250,
                connect_timeout_ms: DEFAULT_CONNECT_TIMEOUT_MS,
            }
        );
    }

    #[test]
    fn bad_urls_are_invalid_arguments_naming_the_url() {
        for url in [
            "etcd:/x",
            "etcd://127.0.0.1:2379",
            "etcd://127.0.0.1:2379/",
            "etcd://127.0.0.1/p",
            "etcd://:2379/p",
            "etcd://h:99999/p",
            "etcd://h:1/p?timeout_ms=0",
            "etcd://h:1/p?timeout_ms=abc",
            "etcd://h:1/p?retries=3",
        ] {
            let error = Target::parse(url).unwrap_err();
            assert_eq!(error.code(), tenure::ErrorCode::InvalidArgument, "{url}");
            assert!(error.to_string().contains("`url`"), "{url}: {error}");
        }
    }
}
