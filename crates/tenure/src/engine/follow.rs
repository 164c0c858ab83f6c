//! A read-only open that follows the writer: every operation first applies what other
//! processes appended since the last one (docs/design.md, "Read-only opens follow the
//! writer"), so a read that starts after a write committed anywhere sees it.

use std::sync::atomic::Ordering;

use super::core::Engine;
use crate::error::Result;
use crate::index::replay::{replay_record, Applying};
use crate::index::ItemSlot;

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
    /// snapshots allow (`maybe_prune`), and nothing is visible before the whole batch is.
    #[cold]
    fn catch_up(&self) -> Result<()> {
        let now = self.clock.now();
        let prune = |slot: &ItemSlot, guard: &crossbeam_epoch::Guard| {
            self.maybe_prune(slot, slot.head().load(Ordering::Acquire, guard), guard);
        };
        let applying = Applying::Live { prune: &prune };
        let read_any = self.log.catch_up(&mut |mut record| {
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
        })?;
        if read_any {
            // Under the lock snapshots open under: with none open, none can read the removed
            // segments' old versions; one opened after reads the copies made before.
            let snapshots = self.snapshots.lock();
            if self.oldest_snapshot.load(Ordering::Acquire) == u64::MAX {
                self.log.release_removed_segments();
            }
            drop(snapshots);
        }
        Ok(())
    }
}
