//! What an open store holds: the statistics behind the tool's `stat`.

use crate::backend::results::{ContainerStats, StoreStats};
use crate::engine::core::Engine;
use crate::error::Result;
use crate::index::{index_key, COMMITTED};
use crate::log::record;
use crate::rules::lease::LeaseState;

impl Engine {
    /// Counts containers, items, versions, live and dead log bytes, active leases and locks.
    pub(crate) fn stats(&self) -> Result<StoreStats> {
        self.check_open()?;
        let version = self.version();
        let now = self.now();
        let space = self.log.space_state();
        let mut stats = StoreStats {
            version,
            segment_size_bytes: self.log.slot_size_bytes(),
            allocated_bytes: self.log.allocated_bytes(),
            storage_full: space.storage_full,
            free_bytes: space.free_bytes,
            reserve_bytes: space.reserve_bytes,
            quota_bytes: space.quota_bytes,
            store_bytes: space.store_bytes,
            io_uring: self.log.io_uring_use(),
            opened_from_persisted_index: self.opened_from_persisted_index,
            log_bytes_replayed_at_open: self.replayed_log_bytes_at_open,
            log_verified: !self.log.has_unverified_records(),
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
            for slot in self.index.range_from(&prefix, &prefix)? {
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
    pub(crate) fn log_start_offset(&self) -> u64 {
        self.log.first_slot() * self.log.slot_size_bytes()
    }

    /// Bytes of the sealed segments a `compact` call would rewrite and remove now.
    pub(crate) fn sealed_bytes(&self) -> u64 {
        self.log
            .sealed_segments()
            .iter()
            .map(|(_, bytes)| bytes)
            .sum()
    }
}
