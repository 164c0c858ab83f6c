//! What an open store holds: the statistics behind the tool's `stat`.

use crate::engine::core::Engine;
use crate::error::Result;
use crate::index::{index_key, COMMITTED};
use crate::log::record;
use crate::rules::lease::LeaseState;
use crate::types::Version;

/// What an open store holds, as of now (the CLI's `stat`).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct StoreStats {
    /// The latest committed version.
    pub version: Version,
    pub containers: Vec<ContainerStats>,
    pub items: u64,
    /// Item versions held in the in-memory index (current ones, tombstones and older
    /// versions snapshots may still need).
    pub item_versions: u64,
    pub segments: u64,
    pub segment_size_bytes: u64,
    /// Bytes of segment files on disk (preallocated).
    pub allocated_bytes: u64,
    /// Bytes of log from its start to its tail.
    pub log_bytes: u64,
    /// Bytes of the records that hold a live item's current value.
    pub live_bytes: u64,
    /// `log_bytes - live_bytes`: superseded versions, deletions, expiries, lease and lock
    /// records, container records, aborts, unused segment ends — what compaction can reclaim
    /// (except container state, which it copies forward).
    pub dead_bytes: u64,
    /// Item leases that are Leased or Breaking.
    pub active_leases: u64,
    /// Cache locks not past their timeout.
    pub active_locks: u64,
}

#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ContainerStats {
    pub name: String,
    pub items: u64,
    /// Sum of the live items' value lengths.
    pub value_bytes: u64,
    pub active_leases: u64,
    pub active_locks: u64,
    /// The container's own lease state.
    pub lease_state: Option<LeaseState>,
}

impl Engine {
    /// Counts containers, items, versions, live and dead log bytes, active leases and locks.
    pub fn stats(&self) -> Result<StoreStats> {
        self.check_open()?;
        let version = self.version();
        let now = self.now();
        let mut stats = StoreStats {
            version,
            segment_size_bytes: self.log.slot_size_bytes(),
            allocated_bytes: self.log.allocated_bytes(),
            ..StoreStats::default()
        };
        let log_start = self.log.first_slot() * self.log.slot_size_bytes();
        stats.segments = self.log.segment_count() as u64;
        stats.log_bytes = self.log.tail_offset().saturating_sub(log_start);
        let mut value_offsets = Vec::new();
        let guard = crossbeam_epoch::pin();
        for name in self.catalog.names_at(version) {
            let Some(incarnation) = self.catalog.visible(&name, version) else {
                continue;
            };
            let lease = incarnation.state.lock().lease.clone();
            let mut container = ContainerStats {
                name,
                lease_state: Some(crate::rules::lease::state(lease.as_ref(), now)),
                ..ContainerStats::default()
            };
            let prefix = index_key(incarnation.id, b"");
            for slot in self.index.range_from(&prefix, &prefix) {
                let mut node = slot
                    .head()
                    .load(std::sync::atomic::Ordering::Acquire, &guard);
                while !node.is_null() {
                    // A plain head (or link) is one committed version, and ends the chain.
                    let Some(current) = crate::index::node_of(node) else {
                        stats.item_versions += 1;
                        break;
                    };
                    if current.status.load(std::sync::atomic::Ordering::Acquire) == COMMITTED {
                        stats.item_versions += 1;
                    }
                    node = current
                        .older
                        .load(std::sync::atomic::Ordering::Acquire, &guard);
                }
                let Some(node) = self.resolve(&slot, version, false, &guard)? else {
                    continue;
                };
                if node.lock().is_some_and(|lock| lock.is_live(now)) {
                    container.active_locks += 1;
                }
                if !node.is_live_at(now) {
                    continue;
                }
                if matches!(
                    node.lease().map(|lease| lease.state(now)),
                    Some(LeaseState::Leased | LeaseState::Breaking)
                ) {
                    container.active_leases += 1;
                }
                container.items += 1;
                if let Some(location) = node.value() {
                    container.value_bytes += u64::from(location.length);
                    value_offsets.push(location.offset());
                }
            }
            stats.items += container.items;
            stats.active_leases += container.active_leases;
            stats.active_locks += container.active_locks;
            stats.containers.push(container);
        }
        drop(guard);
        // A record is live when a live value lies in it; each is counted once.
        value_offsets.sort_unstable();
        let mut next = 0usize;
        self.log
            .read_records(log_start, 0, &mut |_, location, payload| {
                let end = location + record::record_size(payload.len() as u64);
                let first = next;
                while next < value_offsets.len() && value_offsets[next] < end {
                    next += 1;
                }
                if next > first && value_offsets[next - 1] >= location {
                    stats.live_bytes += end - location;
                }
                Ok(next < value_offsets.len())
            })?;
        stats.dead_bytes = stats.log_bytes.saturating_sub(stats.live_bytes);
        Ok(stats)
    }
}

impl Engine {
    /// The global offset where the log starts; compaction moves it forward as it removes
    /// segments (what `tenure compact` draws its progress bar from).
    pub fn log_start_offset(&self) -> u64 {
        self.log.first_slot() * self.log.slot_size_bytes()
    }

    /// Bytes of the sealed segments a `compact` call would rewrite and remove now.
    pub fn sealed_bytes(&self) -> u64 {
        self.log
            .sealed_segments()
            .iter()
            .map(|(_, bytes)| bytes)
            .sum()
    }
}
