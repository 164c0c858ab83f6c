//! A slot's version chain: installs, visibility, pending versions, prunes.

use std::sync::atomic::Ordering;

use crossbeam_epoch::{Atomic, Guard, Owned, Shared};
use crossbeam_utils::Backoff;

use crate::error::Result;
use crate::types::Version;

use super::plain::{self, node_of, view, PlainEntries};
use super::slot::ItemSlot;
use super::version::*;

impl ItemSlot {
    pub fn head(&self) -> &Atomic<VersionNode> {
        &self.header().head
    }

    pub fn key(&self) -> &[u8] {
        &self.index_key()[8..]
    }

    /// The newest node that is not pending and not aborted — what a writer checks its
    /// conditions against. Waits for a pending batch node to resolve.
    pub fn settled_head<'g>(&self, guard: &'g Guard) -> Shared<'g, VersionNode> {
        let backoff = Backoff::new();
        loop {
            let head = self.head().load(Ordering::Acquire, guard);
            let pending = plain::is_pending(head)
                || node_of(head).is_some_and(|node| node.status.load(Ordering::Acquire) == PENDING);
            if !pending {
                return head;
            }
            if backoff.is_completed() {
                std::thread::yield_now();
            } else {
                backoff.snooze();
            }
        }
    }

    /// Asks the CPU to start loading this slot's newest version node, which a walk will read
    /// soon: cache misses of walks then overlap instead of following one another. (A plain
    /// head's entry is in the log: the walk's value prefetch loads it.)
    pub(crate) fn prefetch_head_node(&self) {
        // SAFETY: the pointer is only prefetched, never dereferenced (a prefetch cannot fault).
        let guard = unsafe { crossbeam_epoch::unprotected() };
        let head = self.head().load(Ordering::Relaxed, guard);
        if plain::is_node_or_null(head) {
            crate::base::prefetch(head.as_raw());
        }
    }

    /// The newest committed version ≤ `version` (what a reader at `version` sees).
    pub fn visible<'g>(
        &self,
        version: Version,
        guard: &'g Guard,
        entries: &mut impl PlainEntries,
    ) -> Result<Option<VersionRef<'g>>> {
        let mut current = self.head().load(Ordering::Acquire, guard);
        loop {
            // A batch's uncommitted first version: nothing is older.
            if plain::is_pending(current) {
                return Ok(None);
            }
            match view(current, entries)? {
                None => return Ok(None),
                // A plain version ends its chain, and is committed.
                Some(VersionRef::Plain(node, offset)) => {
                    return Ok((node.version <= version).then_some(VersionRef::Plain(node, offset)))
                }
                Some(VersionRef::Node(node)) => {
                    if node.version <= version && node.status.load(Ordering::Acquire) == COMMITTED {
                        return Ok(Some(VersionRef::Node(node)));
                    }
                    current = node.older.load(Ordering::Acquire, guard);
                }
            }
        }
    }

    /// Installs `node` over `expected`.
    pub fn install<'g>(
        &self,
        expected: Shared<'g, VersionNode>,
        node: VersionNode,
        guard: &'g Guard,
    ) -> Result<Shared<'g, VersionNode>, HeadMoved> {
        node.link_older(expected);
        let new = Owned::new(node).into_shared(guard);
        match self.head().compare_exchange(
            expected,
            new,
            Ordering::AcqRel,
            Ordering::Acquire,
            guard,
        ) {
            Ok(_) => Ok(new),
            Err(_) => {
                // SAFETY: never published, so still ours alone.
                drop(unsafe { new.into_owned() });
                Err(HeadMoved)
            }
        }
    }

    /// Installs a plain head naming the entry whose value starts at `value_offset` over
    /// `expected`: null, or (not `pending`) a settled head the new one *replaces* with all of
    /// its chain, so that no one can walk from the new version to the old (`plain.rs` says
    /// when a writer may). A plain version ends its chain. A batch installs its new keys'
    /// versions `pending` (`resolve_pending_plain` settles them).
    pub fn install_plain<'g>(
        &self,
        expected: Shared<'g, VersionNode>,
        value_offset: u64,
        pending: bool,
        guard: &'g Guard,
    ) -> Result<Shared<'g, VersionNode>, HeadMoved> {
        assert!(
            expected.is_null()
                || (!pending
                    && !plain::is_pending(expected)
                    && node_of(expected)
                        .is_none_or(|node| node.status.load(Ordering::Acquire) == COMMITTED)),
            "a plain head goes over nothing, or replaces a settled head"
        );
        let new = if pending {
            plain::pending_head(value_offset)
        } else {
            plain::head(value_offset)
        };
        self.head()
            .compare_exchange(expected, new, Ordering::AcqRel, Ordering::Acquire, guard)
            .map_err(|_| HeadMoved)?;
        // SAFETY: the exchange unlinked `expected` from the slot, and only this caller won it.
        unsafe { self.retire_chain(expected, guard) };
        Ok(new)
    }

    /// Retires `detached` and the chain below it, once no slot links to `detached`.
    ///
    /// A prune that read the old head before it was replaced may still be detaching part of
    /// the same chain: each link is therefore taken with a swap, and each node is retired by
    /// whoever swapped out the link to it (this walk, or that prune), never by both.
    ///
    /// # Safety
    /// The caller unlinked `detached` from the slot, and no one else retires it.
    unsafe fn retire_chain<'g>(&self, mut detached: Shared<'g, VersionNode>, guard: &'g Guard) {
        while let Some(node) = node_of(detached) {
            let older = node.older.swap(Shared::null(), Ordering::AcqRel, guard);
            // SAFETY: unlinked (the caller's promise, then the swap above for each next one).
            unsafe { self.retire(detached, guard) };
            detached = older;
        }
    }

    /// Commits the pending plain head `installed` (a plain head from now on), or takes it back
    /// (null again). No one installs over a pending head, so it is still the head.
    pub fn resolve_pending_plain(
        &self,
        installed: Shared<'_, VersionNode>,
        commit: bool,
        guard: &Guard,
    ) {
        let resolved = match plain::pending_offset_of(installed) {
            Some(offset) if commit => plain::head(offset),
            Some(_) => Shared::null(),
            None => panic!("a pending plain head is resolved"),
        };
        let exchanged = self.head().compare_exchange(
            installed,
            resolved,
            Ordering::AcqRel,
            Ordering::Acquire,
            guard,
        );
        assert!(
            exchanged.is_ok(),
            "a pending head stays the head until it resolves"
        );
    }

    /// Replaces the plain head naming the entry at `value_offset` by a node saying the same
    /// `version` (read from that entry), so the entry's segment can go. False when the head
    /// is no longer that plain head.
    pub fn demote_plain(&self, value_offset: u64, version: &VersionNode, guard: &Guard) -> bool {
        let node = Owned::new(VersionNode::new(NewVersion {
            version: version.version,
            etag_version: version.etag_version(),
            status: COMMITTED,
            value: version.value(),
            last_modified: version.last_modified,
            expires_at: version.expires_at(),
            properties: None,
            coordination: None,
        }));
        self.head()
            .compare_exchange(
                plain::head(value_offset),
                node,
                Ordering::AcqRel,
                Ordering::Acquire,
                guard,
            )
            .is_ok()
    }

    /// Makes a plain head naming the entry at `value_offset` the slot's whole chain. For the
    /// replay at open, which no one else sees and where no reader needs older versions.
    pub fn replace_chain_with_plain(&self, value_offset: u64, guard: &Guard) {
        let mut detached = self
            .head()
            .swap(plain::head(value_offset), Ordering::AcqRel, guard);
        while let Some(node) = node_of(detached) {
            let next = node.older.load(Ordering::Acquire, guard);
            // SAFETY: detached by the swap.
            unsafe { self.retire(detached, guard) };
            detached = next;
        }
    }

    /// Frees a node unlinked from this slot's chain once no reader can still hold it; a
    /// plain head frees nothing.
    ///
    /// # Safety
    /// `node` was this slot's, and is now unreachable from its head.
    pub(crate) unsafe fn retire(&self, node: Shared<'_, VersionNode>, guard: &Guard) {
        if node.is_null() || plain::offset_of(node).is_some() {
            return;
        }
        // SAFETY: readers that still hold it are protected by their guards.
        unsafe { guard.defer_destroy(node) };
    }

    /// Takes back a pending node this caller installed (nobody builds on pending nodes, so
    /// it is still the head).
    pub fn uninstall<'g>(&self, installed: Shared<'g, VersionNode>, guard: &'g Guard) {
        let node = node_of(installed).expect("an installed node");
        node.status.store(ABORTED, Ordering::Release);
        let older = node.older.load(Ordering::Acquire, guard);
        let result = self.head().compare_exchange(
            installed,
            older,
            Ordering::AcqRel,
            Ordering::Acquire,
            guard,
        );
        assert!(
            result.is_ok(),
            "a pending node is always the head until it resolves"
        );
        // SAFETY: unlinked above.
        unsafe { self.retire(installed, guard) };
    }

    /// Unlinks every version older than the newest one with version ≤ `keep_from`: no reader,
    /// present or future, can reach them. Callers serialise prunes against snapshot creation.
    /// Returns how many nodes the chain keeps from the head down (at most 255): a bound on the
    /// length of the chain below any node still in it.
    pub fn prune(&self, keep_from: Version, guard: &Guard) -> u8 {
        let mut kept = 0u8;
        let mut current = self.head().load(Ordering::Acquire, guard);
        while !current.is_null() {
            kept = kept.saturating_add(1);
            // A plain version ends the chain: nothing below it to unlink.
            let Some(node) = node_of(current) else {
                return kept;
            };
            if node.version <= keep_from && node.status.load(Ordering::Acquire) == COMMITTED {
                let mut detached = node.older.swap(Shared::null(), Ordering::AcqRel, guard);
                // The swap detached the chain, so only guards taken before it can still see
                // these nodes; `retire` waits for them.
                while let Some(detached_node) = node_of(detached) {
                    let next = detached_node.older.load(Ordering::Acquire, guard);
                    // SAFETY: detached above.
                    unsafe { self.retire(detached, guard) };
                    detached = next;
                }
                return kept;
            }
            current = node.older.load(Ordering::Acquire, guard);
        }
        kept
    }
}
