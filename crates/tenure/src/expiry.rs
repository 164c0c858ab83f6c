//! Recording TTL expiries (SPEC §7). An expired item is invisible on every read path the
//! moment its TTL runs out; recording the expiry — a deletion record that takes a version, so
//! the change feed reports it there — happens later, by the background sweeper or an explicit
//! `sweep_expired` call. Items under a live lock never expire.

use crossbeam_epoch::Owned;

use crate::codec::{self, ItemWrite};
use crate::error::Result;
use crate::index::{VersionNode, COMMITTED};
use crate::store::StoreShared;

impl StoreShared {
    /// Records the expiry of up to `max_items` items past their TTL. Returns how many it
    /// recorded. An item written meanwhile is left alone (its write reset the TTL).
    pub fn sweep_expired(&self, max_items: usize) -> Result<usize> {
        self.check_open()?;
        let guard = crossbeam_epoch::pin();
        let now = self.now();
        let mut recorded = 0;
        for slot in self.index.range_from(&[], &[], &guard) {
            if recorded >= max_items {
                break;
            }
            let head = slot.settled_head(&guard);
            // SAFETY: nodes reachable from a slot are freed only through the epoch.
            let Some(node) = (unsafe { head.as_ref() }) else {
                continue;
            };
            let expired = node.value.is_some() && !node.is_live_at(now);
            if !expired || node.version > self.version() {
                continue;
            }
            let container_id = u64::from_be_bytes(
                slot.index_key()[..8]
                    .try_into()
                    .expect("8-byte container id"),
            );
            if !self
                .catalog
                .by_id(container_id)
                .is_some_and(|incarnation| incarnation.is_live())
            {
                continue;
            }
            let write = ItemWrite {
                container_id,
                key: slot.key(),
                value: None,
                last_modified: node.last_modified,
                expires_at: None,
                content_type: None,
                metadata: &[],
                etag_version: 0,
                coordination: None,
                created: false,
                expired: true,
            };
            let mut payload = Vec::with_capacity(1 + codec::item_write_size(&write));
            payload.push(codec::OP_ITEM_WRITE);
            codec::encode_item_write(&mut payload, &write);
            let mut reservation = self.log.reserve(payload.len())?;
            reservation.write_payload(&payload)?;
            let version = reservation.version();
            let tombstone = Owned::new(VersionNode {
                version,
                etag_version: version,
                status: COMMITTED.into(),
                value: None,
                last_modified: node.last_modified,
                expires_at: None,
                properties: None,
                coordination: None,
                older: crossbeam_epoch::Atomic::null(),
            });
            match slot.install(head, tombstone, &guard) {
                Ok(installed) => {
                    reservation.commit()?;
                    self.maybe_prune(slot, installed, &guard);
                    recorded += 1;
                }
                Err(_) => reservation.abort(),
            }
        }
        Ok(recorded)
    }
}
