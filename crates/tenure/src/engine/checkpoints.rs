//! Checkpoints of a running store (docs/design.md §3 "The persisted index"): the index saved
//! at a version while writers go on, so that the open after a crash loads it and replays only
//! the log written since, instead of the whole log.

use crate::engine::core::Engine;
use crate::error::{Error, Result};
use crate::index::checkpoint::{self, Save, SavedAt, SavedContainers, CHECKPOINT_FILE};

/// The log a crash may leave to replay before a checkpoint is due: at least this much.
const CHECKPOINT_MINIMUM_LOG_BYTES: u64 = 64 << 20;
/// ... and at least this many times the last persisted index's size, so that saving the index
/// (about as long as loading it) costs a bounded share of the writes, however large the store.
const CHECKPOINT_INDEX_MULTIPLE: u64 = 4;

impl Engine {
    /// Saves the index as it stands at the newest complete version, synced, in place of the
    /// last one. Writers go on meanwhile: a registered snapshot keeps every version the save
    /// needs, container changes wait the few microseconds it takes to fix the version, and
    /// compaction waits for the whole save (the saved entries name offsets in the segments it
    /// would remove). Returns where the saved index stands, or `None` when it saved nothing: a
    /// read-only store, or a batch not settled at that version (a later call tries again), or
    /// `cancelled` said so while it was saving.
    pub(crate) fn checkpoint(&self, cancelled: &dyn Fn() -> bool) -> Result<Option<SavedAt>> {
        let _no_compaction = self.compaction.lock();
        self.checkpoint_locked(cancelled)
    }

    /// [`Engine::checkpoint`], the caller holding `compaction`. Why the whole save holds it:
    /// besides the offsets the saved entries name, the file leaves out deleted keys, which is
    /// safe only while no relocation older than their deletion can follow the anchor
    /// (`checkpoint::write`). A compaction that starts later reads every item at a version
    /// past the anchor's, so what it copies forward is never older than a deletion saved.
    fn checkpoint_locked(&self, cancelled: &dyn Fn() -> bool) -> Result<Option<SavedAt>> {
        self.check_open()?;
        if self.log.is_read_only() {
            return Ok(None);
        }
        // Most of the log made durable first, outside the locks below and before the
        // snapshot, which makes every write meanwhile link a version node.
        self.log.flush()?;
        let (snapshot, anchor, containers) = {
            let _no_container_change = self.catalog.changes.lock();
            let snapshot = self.snapshot()?;
            let Some(anchor) = self.log.anchor_at_completed()? else {
                return Ok(None);
            };
            (snapshot, anchor, SavedContainers::of(&self.catalog))
        };
        // The snapshot pins every version the anchor's needs: it is at most the anchor's.
        assert!(snapshot.version() < anchor.next_version);
        let storage = self.log.storage();
        let saved = checkpoint::write(
            storage.as_ref(),
            &anchor,
            &self.index,
            &containers,
            Save::Durable,
            cancelled,
            // The index is read: writers may replace heads again while the file syncs.
            || drop(snapshot),
        )
        .map_err(|error| {
            Error::io(
                storage.path().join(CHECKPOINT_FILE),
                "save the index",
                error,
            )
        })?;
        if saved.is_some() {
            *self.checkpointed.lock() = saved;
        }
        Ok(saved)
    }

    /// Takes a checkpoint when the log an open after a crash would replay has grown past
    /// the policy's bound, and the disk has room for it (`retry_after_tail`: a failed save is
    /// tried again only once as much log again has been written). A store that is closing
    /// cancels it (`cancelled`): its close saves the index itself.
    pub(crate) fn checkpoint_if_due(
        &self,
        retry_after_tail: &mut u64,
        cancelled: &dyn Fn() -> bool,
    ) {
        // Looked at while no compaction runs: one that is moving the tail forward into new
        // segments, before it removes the old ones, would make the whole log seem due.
        let Some(_no_compaction) = self.compaction.try_lock() else {
            return;
        };
        let slot_size = self.log.slot_size_bytes();
        let first_slot = self.log.first_slot();
        let tail = self.log.tail_offset();
        self.remove_stale_saved_index();
        let saved = *self.checkpointed.lock();
        let replay_from = match saved {
            Some(saved) => saved.tail,
            None => first_slot * slot_size,
        };
        let file_bytes = saved.map_or(0, |saved| saved.file_bytes);
        let due_after =
            CHECKPOINT_MINIMUM_LOG_BYTES.max(file_bytes.saturating_mul(CHECKPOINT_INDEX_MULTIPLE));
        if tail.saturating_sub(replay_from) < due_after
            || tail < *retry_after_tail
            || self.log.space_is_short()
        {
            return;
        }
        let room = self.log.storage().free_bytes().ok().flatten();
        if room.is_some_and(|free| free < file_bytes.saturating_mul(2)) {
            return;
        }
        if self.checkpoint_locked(cancelled).is_err() {
            *retry_after_tail = tail.saturating_add(due_after);
        }
    }

    /// Deletes the saved index once compaction has removed segments it names: it no longer
    /// describes the log (an open would replay the whole log anyway). The caller holds
    /// `compaction`. A failure leaves the file: the next open rejects it all the same.
    pub(crate) fn remove_stale_saved_index(&self) {
        let stale = self
            .checkpointed
            .lock()
            .is_some_and(|saved| saved.first_slot != self.log.first_slot());
        if stale {
            self.forget_saved_index_locked();
        }
    }
}
