//! A read-only open that follows the writer: every operation first applies what other
//! processes appended since the last one (docs/design.md, "Read-only opens follow the
//! writer"), so a read that starts after a write committed anywhere sees it.

use std::sync::atomic::Ordering;

use super::core::Engine;
use crate::error::Result;
use crate::index::replay::{replay_record, Applying};
use crate::index::{index_key, plain, view, ItemSlot};
use crate::record::{self, DecodedRecord};

impl Engine {
    /// Applies the records appended since the last look, if there are any: one load of the
    /// log when there are none, and nothing at all for a writer or a fixed view.
    #[inline]
    pub(crate) fn follow_writer(&self) -> Result<()> {
        if self.log.has_unread_records() {
            self.catch_up()
        } else {
            Ok(())
        }
    }

    /// Applies each new record onto the live index, as the writer's own install would leave
    /// it: versions go on top of their keys' chains, older ones go only as far as the open
    /// snapshots allow (`maybe_prune`), and nothing is visible before the whole catch-up is.
    #[cold]
    fn catch_up(&self) -> Result<()> {
        let now = self.clock.now();
        let prune = |slot: &ItemSlot, guard: &crossbeam_epoch::Guard| {
            self.maybe_prune(slot, slot.head().load(Ordering::Acquire, guard), guard);
        };
        let applying = Applying::Live { prune: &prune };
        // Before the log lets go of the segments the writer removed: with no snapshot open
        // (one opened later reads only versions applied since), and not while the log below
        // an open's persisted index is still being verified (`after_open.rs`), which reads
        // them. Under the lock snapshots open under, taken inside the catch-up's lock, the
        // order the prune takes them in.
        let mut before_release = |removed: &[(u64, u64)]| -> Result<bool> {
            let snapshots = self.snapshots.lock();
            if self.oldest_snapshot.load(Ordering::Acquire) != u64::MAX
                || self.log.has_unverified_records()
            {
                return Ok(false);
            }
            for &(first_slot, bytes) in removed {
                self.demote_plain_heads_in(first_slot, bytes)?;
            }
            drop(snapshots);
            Ok(true)
        };
        self.log.catch_up(
            &mut |mut record| {
                replay_record(
                    applying,
                    &self.index,
                    &self.catalog,
                    now,
                    record.version,
                    record.location,
                    record.payload,
                    &mut record.earlier,
                )
            },
            &mut before_release,
        )
    }

    /// Before the follower lets go of a segment the writer removed: each plain head naming an
    /// entry in it becomes a node that says the same. The writer's compaction does that for
    /// what it does not copy forward (a deleted or expired item, `demote_plain`), in its own
    /// memory, and no record tells a follower; a follower's plain heads come from its open's
    /// replay. The keys are found through the segment's own item records, as compaction finds
    /// them.
    fn demote_plain_heads_in(&self, first_slot: u64, bytes: u64) -> Result<()> {
        let start = first_slot * self.log.slot_size_bytes();
        let segment = start..start + bytes;
        let guard = crossbeam_epoch::pin();
        self.log.scan_segment(first_slot, &mut |_, _, payload| {
            let keys: Vec<(u64, &[u8])> = match record::decode(payload) {
                Ok(DecodedRecord::Items(items)) => items
                    .iter()
                    .map(|item| (item.write.container_id, item.write.key))
                    .collect(),
                Ok(DecodedRecord::RelocatedItems(items)) => items
                    .iter()
                    .map(|(_, item)| (item.write.container_id, item.write.key))
                    .collect(),
                Ok(DecodedRecord::ItemCoordination {
                    container_id, key, ..
                }) => vec![(container_id, key)],
                _ => Vec::new(),
            };
            for (container_id, key) in keys {
                let Some(slot) = self.index.get(&index_key(container_id, key))? else {
                    continue;
                };
                let head = slot.head().load(Ordering::Acquire, &guard);
                let Some(offset) = plain::offset_of(head).filter(|offset| segment.contains(offset))
                else {
                    continue;
                };
                if let Some(current) = view(head, &mut self.log.reader(&guard))? {
                    slot.demote_plain(offset, &current, &guard);
                }
            }
            Ok(())
        })
    }
}
