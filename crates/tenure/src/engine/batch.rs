//! Batches (docs/spec.md §8): operations on any items of any containers, applied in order, each
//! seeing the ones before it, committed all or nothing under one version.
//!
//! Protocol: evaluate every operation against the current heads (an overlay carries earlier
//! operations' effects); reserve one log record; install a `Pending` node on every key the
//! batch touches (a placeholder on keys it only checks), each expecting the head it evaluated.
//! If any head moved, take every pending node back and start over. Otherwise mark the written
//! nodes `Committed`, take the placeholders back, and commit the record. Writers wait for
//! pending nodes to resolve and never build on them, so taking them back always succeeds and
//! a batch is never half visible.

use std::collections::hash_map::Entry;
use std::collections::HashMap;
use std::sync::atomic::Ordering;
use std::sync::Arc;

use crossbeam_epoch::Shared;

use crate::backend::batch::{BatchOperations, Operation};
use crate::clock::Timestamp;
use crate::engine::checks::{check_write, written_version};
use crate::engine::core::{facts_of, Engine};
use crate::error::{Error, ErrorCode, Result};
use crate::index::catalog::Incarnation;
use crate::index::plain;
use crate::index::point_index::HintCell;
use crate::index::{
    index_key, node_of, ItemSlot, NewVersion, ValueLocation, VersionNode, VersionRef, COMMITTED,
    PENDING,
};
use crate::log::record::HEADER_BYTES;
use crate::log::Durability;
use crate::log::Reservation;
use crate::log::SpaceUse;
use crate::record::Coordination;
use crate::record::{self, ItemWrite};
use crate::rules::conditions::{ItemFacts, WriteKind};
use crate::rules::ttl;
use crate::types::{ETag, Version};

/// A batch attempt that keeps meeting concurrent writers gives up after this many tries.
const MAX_BATCH_ATTEMPTS: usize = 10_000;

/// The item state an operation sees: what is stored, or what an earlier operation wrote.
#[derive(Clone)]
enum Seen {
    Stored(Option<ItemFacts>),
    /// Written earlier in this batch (its ETag is the batch's, unknown to callers yet).
    Written {
        exists: bool,
        last_modified: u64,
    },
}

impl Seen {
    fn facts(&self) -> Option<ItemFacts> {
        match self {
            Seen::Stored(facts) => *facts,
            Seen::Written {
                exists,
                last_modified,
            } => exists.then_some(ItemFacts {
                etag: ETag(Version::MAX),
                version: Version::MAX,
                last_modified: *last_modified,
            }),
        }
    }
}

struct Touched<'g> {
    slot: ItemSlot,
    /// The key's value-hint cell (`Index::get_or_insert_with_hint_cell`).
    hint_cell: HintCell<'g>,
    incarnation: Arc<Incarnation>,
    head: Shared<'g, VersionNode>,
    /// The version `head` names, which the batch's checks were judged against.
    head_version: Option<VersionRef<'g>>,
    seen: Seen,
    /// The key's lease and lock as the next operation sees them.
    coordination: Coordination,
    /// The final write of this key (index of the operation), if the batch writes it.
    final_write: Option<usize>,
    /// The item existed before the batch (for the change feed's created/updated).
    existed_before: bool,
}

/// A key's version a batch attempt has installed, pending until the batch resolves.
struct Installed<'t, 'g> {
    entry: &'t Touched<'g>,
    /// The head the attempt installed: a pending node, or a pending plain head (`plain`).
    head: Shared<'g, VersionNode>,
    /// The batch writes the key (else the version is a placeholder for its checks).
    written: bool,
    plain: bool,
    value: Option<ValueLocation>,
}

impl Installed<'_, '_> {
    /// Takes the version back: the attempt failed.
    fn take_back(self, guard: &crossbeam_epoch::Guard) {
        if self.plain {
            self.entry
                .slot
                .resolve_pending_plain(self.head, false, guard);
        } else {
            self.entry.slot.uninstall(self.head, guard);
        }
    }
}

impl Engine {
    /// Commits every operation or none. Returns the batch's version (every written item's
    /// new ETag). On failure: `Error::BatchFailed { index, error }`.
    pub(crate) fn commit_batch(&self, batch: &BatchOperations) -> Result<Version> {
        self.check_open()?;
        batch.validate(&self.limits)?;
        for _ in 0..MAX_BATCH_ATTEMPTS {
            if let Some(version) = self.attempt_batch(batch)? {
                return Ok(version);
            }
        }
        // Concurrent writers kept moving the batch's keys: nothing was written.
        Err(Error::rejected(ErrorCode::Busy))
    }

    /// One try. `Ok(None)`: a head moved under us; try again.
    fn attempt_batch(&self, batch: &BatchOperations) -> Result<Option<Version>> {
        let guard = crossbeam_epoch::pin();
        let now = self.now();
        let touched = self.evaluate_batch(batch, now, &guard)?;
        let writes = batch_writes(batch, &touched, now);
        let (reservation, value_offsets) = self.reserve_batch_record(&writes)?;
        let version = reservation.version();
        let record_start = reservation.location() + HEADER_BYTES as u64;
        let values = writes.iter().zip(&value_offsets).map(|(write, &offset)| {
            write
                .value
                .map(|value| ValueLocation::new(record_start + offset as u64, value.len() as u32))
        });
        let Some(installed) =
            self.install_pending(&touched, &writes, values, (version, now), &guard)
        else {
            reservation.abort();
            return Ok(None);
        };
        self.resolve_pending(&installed, &guard);
        reservation.commit()?;
        for installed in &installed {
            let Installed { entry, head, .. } = installed;
            if entry.incarnation.deleted_version.load(Ordering::Acquire) < version {
                return Err(Error::rejected(ErrorCode::ContainerNotFound));
            }
            if installed.written && !installed.plain {
                self.maybe_prune(&entry.slot, *head, &guard);
            }
        }
        Ok(Some(version))
    }

    /// Evaluates every operation in order against the keys' heads plus what the operations
    /// before it wrote: the checks of docs/spec.md §3 (`checks.rs`), as a single write makes
    /// them. Returns the keys the batch touches, in the order it first touches them.
    fn evaluate_batch<'g>(
        &self,
        batch: &BatchOperations,
        now: Timestamp,
        guard: &'g crossbeam_epoch::Guard,
    ) -> Result<Vec<Touched<'g>>> {
        let operations = batch.operations();
        let mut touched: Vec<Touched<'g>> = Vec::with_capacity(operations.len());
        // Where each key is in `touched`, keyed by borrowed (container id, key): nothing copied.
        let mut positions: HashMap<(u64, &[u8]), usize, foldhash::fast::RandomState> =
            HashMap::with_capacity_and_hasher(operations.len(), Default::default());
        // Consecutive operations mostly name the same container: look it up once for them.
        let mut last_container: Option<(&str, Arc<Incarnation>)> = None;
        for (index, operation) in operations.iter().enumerate() {
            let (container, key) = operation.target(batch.bytes());
            let incarnation = match &last_container {
                Some((name, incarnation)) if *name == container => Arc::clone(incarnation),
                _ => {
                    let incarnation = self.catalog.live(container).ok_or_else(|| {
                        batch.failed(index, Error::rejected(ErrorCode::ContainerNotFound))
                    })?;
                    last_container = Some((container, Arc::clone(&incarnation)));
                    incarnation
                }
            };
            let position = match positions.entry((incarnation.id, key)) {
                Entry::Occupied(occupied) => *occupied.get(),
                Entry::Vacant(vacant) => {
                    touched.push(self.touch(incarnation, key, now, guard)?);
                    *vacant.insert(touched.len() - 1)
                }
            };
            let entry = &mut touched[position];
            self.apply_operation(entry, operation, now)
                .map_err(|error| batch.failed(index, error))?;
            if let Operation::Write { .. } = operation {
                entry.final_write = Some(index);
            }
        }
        Ok(touched)
    }

    /// The state of a key the batch touches first.
    fn touch<'g>(
        &self,
        incarnation: Arc<Incarnation>,
        key: &[u8],
        now: Timestamp,
        guard: &'g crossbeam_epoch::Guard,
    ) -> Result<Touched<'g>> {
        let (slot, hint_cell) = self
            .index
            .get_or_insert_with_hint_cell(&index_key(incarnation.id, key), guard)?;
        let (head, head_version) = self.settled_version(&slot, guard)?;
        let facts = head_version
            .as_deref()
            .filter(|node| node.is_live_at(now))
            .map(facts_of);
        let coordination = head_version
            .as_deref()
            .and_then(|node| node.coordination().cloned())
            .unwrap_or_default();
        Ok(Touched {
            slot,
            hint_cell,
            incarnation,
            head,
            head_version,
            existed_before: facts.is_some(),
            seen: Seen::Stored(facts),
            coordination,
            final_write: None,
        })
    }

    /// One operation's checks against its key as the batch has it so far, and the key's state
    /// after it.
    fn apply_operation(
        &self,
        entry: &mut Touched<'_>,
        operation: &Operation,
        now: Timestamp,
    ) -> Result<()> {
        let facts = entry.seen.facts();
        let (kind, options) = match operation {
            Operation::Write { kind, options, .. } => (*kind, options),
            Operation::Check { options, .. } => (WriteKind::Check, options),
        };
        // An item written earlier in the batch has no ETag a caller knows yet.
        let current_etag = facts
            .map(|facts| facts.etag)
            .filter(|etag| etag.version() != Version::MAX);
        let coordination = check_write(
            kind,
            options,
            facts.as_ref(),
            current_etag,
            &entry.coordination,
            now,
        )
        .map_err(|refusal| self.settle_refusal(entry.head_version.as_deref(), refusal))?;
        entry.coordination = coordination;
        if let Operation::Write { value, .. } = operation {
            entry.seen = Seen::Written {
                exists: value.is_some(),
                last_modified: now,
            };
        }
        Ok(())
    }

    /// Reserves one record for the whole batch and encodes it; returns where each write's
    /// value starts in the payload.
    fn reserve_batch_record(
        &self,
        writes: &[ItemWrite<'_>],
    ) -> Result<(Reservation<'_>, Vec<usize>)> {
        let mut value_offsets = Vec::with_capacity(writes.len());
        let reservation = record::with_record_scratch(|payload| {
            // Sized exactly up front: a large batch's payload is never copied to grow it.
            let payload_bytes = 1 + 4 + writes.iter().map(record::item_write_size).sum::<usize>();
            payload.reserve(payload_bytes);
            payload.push(record::OP_BATCH);
            payload.extend_from_slice(&(writes.len() as u32).to_le_bytes());
            for write in writes {
                value_offsets.push(record::encode_item_write(payload, write));
            }
            debug_assert_eq!(payload.len(), payload_bytes);
            // A batch of deletes only may use the space reserve, as a delete does.
            let space_use = if writes.iter().all(|write| write.value.is_none()) {
                SpaceUse::Deleting
            } else {
                SpaceUse::Ordinary
            };
            let mut reservation = self.log.reserve(payload.len(), space_use)?;
            // Each entry says the batch's version, so a plain head can name it (`plain.rs`).
            for (write, &value_offset) in writes.iter().zip(&value_offsets) {
                plain::patch_version(payload, value_offset, write, reservation.version());
            }
            reservation.write_payload(payload)?;
            Ok::<_, Error>(reservation)
        })?;
        Ok((reservation, value_offsets))
    }

    /// Installs a pending version on every key the batch touches: the written state, or a
    /// placeholder on keys it only checks. A new key's version whose entry says all of it
    /// goes in as a pending plain head (`plain.rs`), with no node. `None` when a head moved:
    /// what was installed is taken back.
    fn install_pending<'t, 'g>(
        &self,
        touched: &'t [Touched<'g>],
        writes: &[ItemWrite<'_>],
        mut values: impl Iterator<Item = Option<ValueLocation>>,
        (version, now): (Version, Timestamp),
        guard: &'g crossbeam_epoch::Guard,
    ) -> Option<Vec<Installed<'t, 'g>>> {
        let buffered = self.log.durability() == Durability::Buffered;
        let mut writes = writes.iter();
        let mut installed: Vec<Installed<'t, 'g>> = Vec::with_capacity(touched.len());
        for entry in touched {
            let (node, plain) = match entry.final_write {
                Some(_) => {
                    let write = writes.next().expect("one write per written key");
                    let value = values.next().expect("one value location per write");
                    let plain = buffered
                        && entry.head.is_null()
                        && write.value.is_some()
                        && plain::is_plain_write(write);
                    (written_version(write, version, PENDING, value), plain)
                }
                None => (placeholder_version(version, now), false),
            };
            self.index.note_expiry(node.expires_at());
            let value = node.value();
            let result = match value {
                Some(location) if plain => {
                    entry
                        .slot
                        .install_plain(entry.head, location.offset(), true, guard)
                }
                _ => entry.slot.install(entry.head, node, guard),
            };
            let Ok(head) = result else {
                for installed in installed {
                    installed.take_back(guard);
                }
                return None;
            };
            installed.push(Installed {
                entry,
                head,
                written: entry.final_write.is_some(),
                plain,
                value,
            });
        }
        debug_assert!(writes.next().is_none(), "every write was installed");
        Some(installed)
    }

    /// Settles the pending versions once every key took one: written versions commit (their
    /// record's commit then makes them visible), placeholders go.
    fn resolve_pending(&self, installed: &[Installed<'_, '_>], guard: &crossbeam_epoch::Guard) {
        for installed in installed {
            let Installed { entry, head, .. } = installed;
            if installed.plain {
                entry.slot.resolve_pending_plain(*head, true, guard);
            } else if installed.written {
                let node = node_of(*head).expect("our own node, alive under `guard`");
                debug_assert_eq!(node.status.load(Ordering::Acquire), PENDING);
                node.status.store(COMMITTED, Ordering::Release);
            } else {
                entry.slot.uninstall(*head, guard);
            }
            if let (true, Some(location)) = (installed.written, installed.value) {
                self.index.note_value_location(
                    entry.slot.index_key(),
                    Some(entry.hint_cell),
                    location,
                );
            }
        }
    }
}

/// The batch's item writes, one per written key (its last write), in the order of `touched`.
fn batch_writes<'b>(
    batch: &'b BatchOperations,
    touched: &'b [Touched<'_>],
    now: Timestamp,
) -> Vec<ItemWrite<'b>> {
    let mut writes = Vec::new();
    for entry in touched {
        let Some(index) = entry.final_write else {
            continue;
        };
        let Operation::Write {
            key,
            value,
            options,
            ..
        } = &batch.operations()[index]
        else {
            unreachable!("final writes are writes")
        };
        let value = value.map(|value| value.of(batch.bytes()));
        writes.push(ItemWrite {
            container_id: entry.incarnation.id,
            key: key.of(batch.bytes()),
            value,
            last_modified: now,
            expires_at: value.and_then(|_| {
                ttl::expires_at(now, options.ttl, entry.incarnation.default_ttl_seconds)
            }),
            content_type: options.content_type.as_deref(),
            metadata: &options.metadata,
            etag_version: 0,
            created: !entry.existed_before && value.is_some(),
            expired: false,
            coordination: Some(&entry.coordination),
        });
    }
    writes
}

/// The pending version a batch holds on a key it only checks, so no write lands on the key
/// between its checks and its commit.
fn placeholder_version(version: Version, now: Timestamp) -> VersionNode {
    VersionNode::new(NewVersion {
        version,
        etag_version: version,
        status: PENDING,
        value: None,
        last_modified: now,
        expires_at: None,
        properties: None,
        coordination: None,
    })
}
