//! The change feed (docs/spec.md §10) as a watch of the store's prefix from a revision; TTL
//! sweeps, which say which deletes were expiries; and compaction of the cluster's history.
//!
//! Every transaction of the store rewrites its head key last (codec.rs). A sweep deletes an
//! expired item and writes the item's key into the head's value in the same transaction; the
//! feed reports a delete that its revision's head names as `Expired`, every other delete as
//! `Deleted`.

use std::collections::BTreeMap;
use std::sync::Mutex;
use std::time::Instant;

use etcd_client::{
    Client, CompactionOptions, Compare, CompareOp, EventType, KeyValue, TxnOp, WatchOptions,
};
use tenure::seam::check_changes_options;
use tenure::{
    ChangeKind, ChangeRef, ChangesOptions, CompactionReport, ETag, Error, ErrorCode, Result,
    Version,
};

use crate::cluster::{classify, unavailable, Failure};
use crate::codec::{prefix_end, ItemRecord};
use crate::store::{decode_item, revision_version, EtcdStore};

/// How long the watch of one `changes` call may take, in request timeouts.
const FEED_TIMEOUTS: u32 = 4;

/// The revisions this handle's open snapshots read at: compaction through this handle stops
/// below the oldest.
#[derive(Default)]
pub(crate) struct OpenSnapshots {
    revisions: Mutex<BTreeMap<i64, usize>>,
}

impl OpenSnapshots {
    pub(crate) fn open(&self, revision: i64) {
        let mut revisions = self.revisions.lock().unwrap_or_else(|e| e.into_inner());
        *revisions.entry(revision).or_insert(0) += 1;
    }

    pub(crate) fn close(&self, revision: i64) {
        let mut revisions = self.revisions.lock().unwrap_or_else(|e| e.into_inner());
        if let Some(count) = revisions.get_mut(&revision) {
            *count -= 1;
            if *count == 0 {
                revisions.remove(&revision);
            }
        }
    }

    fn oldest(&self) -> Option<i64> {
        let revisions = self.revisions.lock().unwrap_or_else(|e| e.into_inner());
        revisions.keys().next().copied()
    }
}

/// One event as the feed needs it.
struct Event {
    put: bool,
    kv: KeyValue,
    previous: Option<KeyValue>,
}

pub(crate) fn visit_changes(
    store: &EtcdStore,
    since: Version,
    options: &ChangesOptions,
    visit: &mut dyn FnMut(ChangeRef<'_>) -> bool,
) -> Result<()> {
    check_changes_options(options)?;
    let (_, head, first) = store.history()?;
    let since = i64::try_from(since).unwrap_or(i64::MAX);
    if since >= head {
        return Ok(());
    }
    // The store's history starts at its first change: a cluster compacted before it lost
    // nothing of this store's.
    let revisions = watch_history(store, (since + 1).max(first), head)?;
    let mut visited = 0usize;
    for (revision, events) in &revisions {
        visited += visit_revision(store, *revision, events, options, visit)?;
        if visited == usize::MAX {
            return Ok(());
        }
        if visited >= options.max_changes {
            return Ok(());
        }
    }
    Ok(())
}

/// Visits one revision's changes; `usize::MAX` when `visit` asked to stop.
fn visit_revision(
    store: &EtcdStore,
    revision: i64,
    events: &[Event],
    options: &ChangesOptions,
    visit: &mut dyn FnMut(ChangeRef<'_>) -> bool,
) -> Result<usize> {
    let keys = &store.keys;
    let head = keys.head();
    let expired: Vec<Vec<u8>> = events
        .iter()
        .filter(|event| event.put && event.kv.key() == head)
        .flat_map(|event| decode_sweep_note(event.kv.value()))
        .collect();
    let deleted_containers: Vec<&str> = events
        .iter()
        .filter(|event| !event.put)
        .filter_map(|event| keys.container_name(event.kv.key()))
        .collect();
    let version = revision_version(revision);
    let mut visited = 0;
    for event in events {
        let key = event.kv.key();
        let wanted = |container: &str| {
            options
                .container
                .as_deref()
                .is_none_or(|only| only == container)
        };
        let change = if let Some(name) = keys.container_name(key) {
            let kind = match (event.put, &event.previous) {
                (true, None) => ChangeKind::ContainerCreated,
                (true, Some(_)) => continue,
                (false, _) => ChangeKind::ContainerDeleted,
            };
            if !wanted(name) {
                continue;
            }
            ChangeRef {
                version,
                kind,
                container: name,
                key: None,
                etag: None,
                value: None,
            }
        } else if let Some((container, item_key)) = keys.item_target(key) {
            // A container's delete takes its items along: the container's change says it.
            if !wanted(container) || deleted_containers.contains(&container) {
                continue;
            }
            let previous = event
                .previous
                .as_ref()
                .map(decode_item)
                .transpose()?
                .filter(|previous| previous.record.present);
            if event.put {
                let record = ItemRecord::decode(event.kv.value())
                    .map_err(|reason| crate::cluster::corrupt(key, reason))?;
                // A lock on an absent key, or a lease or lock change: no data changed.
                if !record.present || record.etag_version != 0 {
                    continue;
                }
                let created = previous
                    .as_ref()
                    .is_none_or(|previous| !previous.is_live_at(record.last_modified));
                ChangeRef {
                    version,
                    kind: if created {
                        ChangeKind::Created
                    } else {
                        ChangeKind::Updated
                    },
                    container,
                    key: Some(item_key),
                    etag: Some(ETag(version)),
                    value: Some(&[]),
                }
            } else {
                if previous.is_none() {
                    continue;
                }
                let kind = if expired.iter().any(|expired| expired == key) {
                    ChangeKind::Expired
                } else {
                    ChangeKind::Deleted
                };
                ChangeRef {
                    version,
                    kind,
                    container,
                    key: Some(item_key),
                    etag: None,
                    value: None,
                }
            }
        } else {
            continue;
        };
        // The value of a put is the record's; borrowed here for the visit.
        let record;
        let change = if change.value.is_some() {
            record = ItemRecord::decode(event.kv.value())
                .map_err(|reason| crate::cluster::corrupt(key, reason))?;
            ChangeRef {
                value: Some(&record.value),
                ..change
            }
        } else {
            change
        };
        visited += 1;
        if !visit(change) {
            return Ok(usize::MAX);
        }
    }
    Ok(visited)
}

/// Every event under the store's prefix from `start` to `end` (inclusive), grouped by
/// revision. `end` is a revision of the head, whose event comes last in its revision: once it
/// arrives, every event up to `end` has.
fn watch_history(store: &EtcdStore, start: i64, end: i64) -> Result<BTreeMap<i64, Vec<Event>>> {
    let prefix = store.keys.prefix().to_vec();
    let head = store.keys.head();
    let timeout = store.cluster.request_timeout() * FEED_TIMEOUTS;
    let endpoints = store.cluster.endpoints().to_owned();
    let mut client: Client = store.cluster.client();
    store.cluster.block_on(async move {
        let deadline = Instant::now() + timeout;
        let options = WatchOptions::new()
            .with_range(prefix_end(&prefix))
            .with_start_revision(start)
            .with_prev_key();
        let watch = tokio::time::timeout(timeout, client.watch(prefix, Some(options))).await;
        let mut stream = match watch {
            Ok(Ok(stream)) => stream,
            Ok(Err(error)) => return Err(failure_error(&endpoints, error)),
            Err(_) => {
                return Err(unavailable(
                    &endpoints,
                    "did not open a watch in time",
                    false,
                ))
            }
        };
        let mut revisions: BTreeMap<i64, Vec<Event>> = BTreeMap::new();
        loop {
            let left = deadline.saturating_duration_since(Instant::now());
            let message = match tokio::time::timeout(left, stream.message()).await {
                Err(_) => {
                    return Err(unavailable(
                        &endpoints,
                        "did not replay the change history in time",
                        false,
                    ))
                }
                Ok(Err(error)) => return Err(failure_error(&endpoints, error)),
                Ok(Ok(None)) => return Err(unavailable(&endpoints, "ended the watch", false)),
                Ok(Ok(Some(message))) => message,
            };
            if message.compact_revision() > 0 {
                return Err(Error::Compacted {
                    since: revision_version(start - 1),
                    oldest_available: revision_version(message.compact_revision()),
                });
            }
            if message.canceled() {
                return Err(unavailable(
                    &endpoints,
                    &format!("cancelled the watch: {}", message.cancel_reason()),
                    false,
                ));
            }
            for event in message.events() {
                let Some(kv) = event.kv() else { continue };
                let revision = kv.mod_revision();
                if revision > end {
                    return Ok(revisions);
                }
                let is_head = kv.key() == head;
                revisions.entry(revision).or_default().push(Event {
                    put: event.event_type() == EventType::Put,
                    kv: kv.clone(),
                    previous: event.prev_kv().cloned(),
                });
                if is_head && revision == end {
                    return Ok(revisions);
                }
            }
        }
    })
}

fn failure_error(endpoints: &str, error: etcd_client::Error) -> Error {
    match classify(error) {
        Failure::Refused(error) => error,
        Failure::Compacted { compact_revision } => Error::Compacted {
            since: 0,
            oldest_available: revision_version(compact_revision),
        },
        Failure::NotSent(reason) | Failure::Unknown(reason) => {
            unavailable(endpoints, &reason, false)
        }
    }
}

fn encode_sweep_note(keys: &[Vec<u8>]) -> Vec<u8> {
    let mut out = Vec::new();
    out.extend_from_slice(&(keys.len() as u32).to_le_bytes());
    for key in keys {
        out.extend_from_slice(&(key.len() as u32).to_le_bytes());
        out.extend_from_slice(key);
    }
    out
}

/// The keys a sweep note names; a damaged note names none (its deletes read as `Deleted`).
fn decode_sweep_note(mut bytes: &[u8]) -> Vec<Vec<u8>> {
    let mut take = |count: usize| -> Option<&[u8]> {
        if bytes.len() < count {
            return None;
        }
        let (taken, rest) = bytes.split_at(count);
        bytes = rest;
        Some(taken)
    };
    let mut keys = Vec::new();
    let Some(count) = take(4) else { return keys };
    let count = u32::from_le_bytes(count.try_into().expect("4 bytes"));
    for _ in 0..count {
        let Some(length) = take(4) else {
            return Vec::new();
        };
        let length = u32::from_le_bytes(length.try_into().expect("4 bytes")) as usize;
        let Some(key) = take(length) else {
            return Vec::new();
        };
        keys.push(key.to_vec());
    }
    keys
}

/// Deletes up to `max_items` expired items, each only if unchanged since it was read;
/// returns how many went.
pub(crate) fn sweep_expired(store: &EtcdStore, max_items: usize) -> Result<usize> {
    let now = store.now();
    let mut expired: Vec<(Vec<u8>, i64)> = Vec::new();
    let limit = max_items;
    if limit == 0 {
        return Ok(0);
    }
    for name in store.container_names_at(0)? {
        store.walk_items(&name, b"", b"", 0, now, &mut |key, item| {
            if item.record.present && !item.is_live_at(now) {
                expired.push((store.keys.item(&name, key), item.mod_revision));
            }
            Ok(expired.len() < limit)
        })?;
        if expired.len() >= limit {
            break;
        }
    }
    let mut swept = 0;
    for (key, mod_revision) in &expired {
        // An item written again since it was read stays.
        let compares = vec![Compare::mod_revision(
            key.clone(),
            CompareOp::Equal,
            *mod_revision,
        )];
        let note = encode_sweep_note(std::slice::from_ref(key));
        let operations = vec![TxnOp::delete(key.clone(), None)];
        if store.commit_noting(compares, operations, note)?.is_some() {
            swept += 1;
        }
    }
    Ok(swept)
}

/// The size of the cluster's database file on the member that answers.
pub(crate) fn db_size_bytes(store: &EtcdStore) -> Result<u64> {
    let status = store
        .cluster
        .read(|mut client| async move { client.status().await })?;
    Ok(u64::try_from(status.db_size()).unwrap_or(0))
}

/// etcd compaction up to the current revision, less the change feed's retention
/// (`StoreOptions::change_feed_retention_versions`) and no further than this handle's oldest
/// open snapshot; then a defragmentation of every member, which gives the space back to the
/// file system. etcd's history is the cluster's: the compaction also ends the older history
/// of every other store in the cluster.
pub(crate) fn compact(store: &EtcdStore) -> Result<CompactionReport> {
    let before = db_size_bytes(store)?;
    let (current, _) = store.head()?;
    let oldest_snapshot = store.snapshots.oldest();
    let retained = store.retention_versions.map_or(current, |versions| {
        current.saturating_sub(i64::try_from(versions).unwrap_or(i64::MAX))
    });
    let target = oldest_snapshot.map_or(retained, |oldest| oldest.min(retained));
    if target <= 1 {
        return Ok(CompactionReport {
            segments_removed: 0,
            bytes_removed: 0,
            items_relocated: 0,
            containers_relocated: 0,
            deferred_by_snapshot: oldest_snapshot.is_some(),
            retained_for_change_feed: store.retention_versions.is_some(),
            deferred_by_writes: false,
        });
    }
    let compacted = store.cluster.write(|mut client| async move {
        client
            .compact(target, Some(CompactionOptions::new().with_physical()))
            .await
    });
    match compacted {
        Ok(_) => {}
        // Compacted there already (by this or another client): nothing to do.
        Err(error) if error.code() == ErrorCode::Compacted => {}
        Err(error) => return Err(error),
    }
    store.cluster.defragment_members()?;
    let after = db_size_bytes(store)?;
    store.compacted_revision.fetch_max(
        revision_version(target),
        std::sync::atomic::Ordering::Relaxed,
    );
    Ok(CompactionReport {
        segments_removed: 0,
        bytes_removed: before.saturating_sub(after),
        items_relocated: 0,
        containers_relocated: 0,
        deferred_by_snapshot: oldest_snapshot.is_some_and(|oldest| oldest < retained),
        retained_for_change_feed: retained < current,
        deferred_by_writes: false,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sweep_notes_round_trip_and_damage_names_nothing() {
        let keys = vec![b"a".to_vec(), Vec::new(), b"ccc".to_vec()];
        let note = encode_sweep_note(&keys);
        assert_eq!(decode_sweep_note(&note), keys);
        for length in 0..note.len() {
            let decoded = decode_sweep_note(&note[..length]);
            assert!(decoded.is_empty(), "{length}: {decoded:?}");
        }
    }
}
