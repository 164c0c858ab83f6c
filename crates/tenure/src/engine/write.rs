//! Item writes: put, create, replace, delete, set metadata, update. Each follows the order of
//! checks of docs/spec.md §3 and lands with one compare-and-swap on the item's version chain.

use std::sync::atomic::Ordering;

use crossbeam_epoch::Shared;
use rand::Rng;

use crate::backend::options::{Item, ReadOptions, WriteOptions};
use crate::engine::checks::{check_write, written_version};
use crate::engine::core::{facts_of, Engine};
use crate::error::{Error, ErrorCode, Result};
use crate::index::catalog::Incarnation;
use crate::index::plain;
use crate::index::point_index::HintCell;
use crate::index::{index_key, node_of, ItemSlot, ValueLocation, VersionNode, COMMITTED};
use crate::log::record::HEADER_BYTES;
use crate::log::Durability;
use crate::log::Reservation;
use crate::log::SpaceUse;
use crate::record::{self, ItemWrite};
use crate::rules::conditions::{self, Conditions, WriteKind};
use crate::rules::ttl;
use crate::rules::validate;
use crate::types::{ETag, Version};

/// A writer that keeps losing the compare-and-swap to other writers gives up after this many
/// attempts (each loss means another write succeeded, so the store as a whole progresses).
pub(crate) const MAX_INSTALL_ATTEMPTS: usize = 100_000;

/// What a successful write wrote (a delete writes nothing that a caller reads back).
pub(crate) struct Written {
    pub(crate) version: Version,
    pub(crate) last_modified: crate::clock::Timestamp,
    pub(crate) expires_at: Option<crate::clock::Timestamp>,
}

/// The key a write goes to, found once for all its attempts.
struct WriteTarget<'a, 'g> {
    incarnation: &'a Incarnation,
    key: &'a [u8],
    key_bytes: &'a [u8],
    slot: &'a ItemSlot,
    hint_cell: HintCell<'g>,
}

/// How one attempt at a write ended.
enum Attempt {
    Done(Option<Written>),
    /// Another write moved the head first: check again against the new one.
    HeadMoved,
}

/// What a write does to the item.
#[derive(Clone, Copy)]
pub(crate) enum Change<'a> {
    Value(&'a [u8]),
    Delete,
    /// Keep the value, replace content type and metadata.
    Properties,
    /// Keep the value and content type, replace metadata.
    Metadata,
}

impl Engine {
    /// Writes the item, creating or replacing it (last writer wins unless conditions say
    /// otherwise). Returns the new ETag.
    pub(crate) fn put(
        &self,
        container: &str,
        key: &[u8],
        value: &[u8],
        options: &WriteOptions,
    ) -> Result<ETag> {
        self.write_value(container, key, WriteKind::Put, value, options)
    }

    /// Writes the item only if it does not exist (`AlreadyExists` otherwise).
    pub(crate) fn create(
        &self,
        container: &str,
        key: &[u8],
        value: &[u8],
        options: &WriteOptions,
    ) -> Result<ETag> {
        self.write_value(container, key, WriteKind::Create, value, options)
    }

    /// Writes the item only if it exists (`NotFound` otherwise).
    pub(crate) fn replace(
        &self,
        container: &str,
        key: &[u8],
        value: &[u8],
        options: &WriteOptions,
    ) -> Result<ETag> {
        self.write_value(container, key, WriteKind::Replace, value, options)
    }

    /// put, create and replace: a write of a value, returning the new ETag.
    fn write_value(
        &self,
        container: &str,
        key: &[u8],
        kind: WriteKind,
        value: &[u8],
        options: &WriteOptions,
    ) -> Result<ETag> {
        let written = self.write_item(container, key, kind, Change::Value(value), options)?;
        Ok(ETag(
            written.expect("a write of a value always writes").version,
        ))
    }

    pub(crate) fn delete(&self, container: &str, key: &[u8], options: &WriteOptions) -> Result<()> {
        self.write_item(container, key, WriteKind::Delete, Change::Delete, options)
            .map(|_| ())
    }

    /// Replaces content type and metadata, keeping the value; a new ETag.
    pub(crate) fn set_properties(
        &self,
        container: &str,
        key: &[u8],
        options: &WriteOptions,
    ) -> Result<ETag> {
        self.write_item(
            container,
            key,
            WriteKind::SetMetadata,
            Change::Properties,
            options,
        )
        .map(|written| ETag(written.expect("set_properties always writes").version))
    }

    /// Replaces the user metadata, keeping the value and content type, in one atomic write;
    /// a new ETag. `options.content_type` must be `None` (`set_properties` replaces both).
    pub(crate) fn set_metadata(
        &self,
        container: &str,
        key: &[u8],
        options: &WriteOptions,
    ) -> Result<ETag> {
        if options.content_type.is_some() {
            return Err(Error::invalid(
                "content_type",
                "set_metadata keeps the content type; set_properties replaces it",
            ));
        }
        self.write_item(
            container,
            key,
            WriteKind::SetMetadata,
            Change::Metadata,
            options,
        )
        .map(|written| ETag(written.expect("set_metadata always writes").version))
    }

    /// Read, apply `change`, write with `if_match`; on `ConditionNotMet` re-read and retry
    /// with jittered backoff, at most `max_attempts` times (docs/spec.md §3).
    pub(crate) fn update(
        &self,
        container: &str,
        key: &[u8],
        max_attempts: usize,
        mut change: impl FnMut(&[u8]) -> Vec<u8>,
    ) -> Result<Item> {
        if max_attempts == 0 || max_attempts > 10_000 {
            return Err(Error::invalid("max_attempts", "must be 1..=10000"));
        }
        let mut last_conflict = None;
        for attempt in 0..max_attempts {
            let current = self.get(container, key, &ReadOptions::default())?;
            let new_value = change(current.value.as_deref().unwrap_or(&[]));
            let options = WriteOptions {
                conditions: Conditions::if_match(current.etag),
                content_type: current.content_type.clone(),
                metadata: current.metadata.clone(),
                ..WriteOptions::default()
            };
            match self.write_item(
                container,
                key,
                WriteKind::Put,
                Change::Value(&new_value),
                &options,
            ) {
                Ok(written) => {
                    let written = written.expect("a put always writes");
                    return Ok(Item {
                        value: Some(new_value),
                        etag: ETag(written.version),
                        version: written.version,
                        last_modified: written.last_modified,
                        expires_at: written.expires_at,
                        ..current
                    });
                }
                Err(error) if error.code() == ErrorCode::ConditionNotMet => {
                    last_conflict = Some(error);
                    let ceiling_micros = 50u64 << attempt.min(8);
                    let pause = rand::thread_rng().gen_range(0..=ceiling_micros);
                    std::thread::sleep(std::time::Duration::from_micros(pause));
                }
                Err(error) => return Err(error),
            }
        }
        Err(last_conflict.expect("at least one attempt ran"))
    }

    /// The write path of every item write but a batch's (`batch.rs` shares its checks and
    /// version builder, `checks.rs`). Returns the new version, or `None` for a delete.
    pub(crate) fn write_item(
        &self,
        container: &str,
        key: &[u8],
        kind: WriteKind,
        change: Change<'_>,
        options: &WriteOptions,
    ) -> Result<Option<Written>> {
        // 1. arguments
        self.check_open()?;
        self.validate_write(container, key, change, options)?;
        // 2. container
        let incarnation = self
            .catalog
            .live(container)
            .ok_or_else(|| Error::rejected(ErrorCode::ContainerNotFound))?;
        let key_bytes = index_key(incarnation.id, key);
        let guard = crossbeam_epoch::pin();
        let inserts = matches!(kind, WriteKind::Put | WriteKind::Create);
        let restored = self.index.ready_for(&key_bytes)?;
        let Some((slot, hint_cell)) = self
            .index
            .slot_for_write(restored, &key_bytes, inserts, &guard)
        else {
            conditions::check_write_existence(kind, &options.conditions, None)?;
            return Err(Error::rejected(ErrorCode::NotFound));
        };
        let target = WriteTarget {
            incarnation: &incarnation,
            key,
            key_bytes: &key_bytes,
            slot: &slot,
            hint_cell,
        };
        for _ in 0..MAX_INSTALL_ATTEMPTS {
            if let Attempt::Done(written) =
                self.attempt_write(&target, kind, change, options, &guard)?
            {
                return Ok(written);
            }
        }
        // Concurrent writers kept moving the key's head: nothing was written.
        Err(Error::rejected(ErrorCode::Busy))
    }

    /// Step 1 of a write: its arguments, before anything is looked up.
    fn validate_write(
        &self,
        container: &str,
        key: &[u8],
        change: Change<'_>,
        options: &WriteOptions,
    ) -> Result<()> {
        validate::container_name(container)?;
        validate::key(key, &self.limits)?;
        if let Change::Value(value) = change {
            validate::value(value, &self.limits)?;
        }
        validate::metadata(&options.metadata, &self.limits)?;
        validate::content_type(options.content_type.as_deref(), &self.limits)?;
        options.ttl.validate()?;
        Ok(())
    }

    /// Steps 3 to 6 against the key's head as it is now: the checks, then the record and the
    /// compare-and-swap that installs its version, expecting that head.
    fn attempt_write<'g>(
        &self,
        target: &WriteTarget<'_, 'g>,
        kind: WriteKind,
        change: Change<'_>,
        options: &WriteOptions,
        guard: &'g crossbeam_epoch::Guard,
    ) -> Result<Attempt> {
        let now = self.now();
        let (head, head_version) = self.settled_version(target.slot, guard)?;
        let head_node = head_version.as_deref();
        let current = head_node.filter(|node| node.is_live_at(now));
        let facts = current.map(facts_of);
        let state = head_node
            .and_then(|node| node.coordination().cloned())
            .unwrap_or_default();
        let coordination = check_write(
            kind,
            options,
            facts.as_ref(),
            facts.map(|facts| facts.etag),
            &state,
            now,
        )
        .map_err(|refusal| self.settle_refusal(head_node, refusal))?;
        // 6. the change, atomically with the checks: the CAS expects `head`.
        let (value, content_type, metadata) =
            self.written_content(change, options, current, guard)?;
        let write = ItemWrite {
            container_id: target.incarnation.id,
            key: target.key,
            value,
            last_modified: now,
            expires_at: value.and_then(|_| {
                ttl::expires_at(now, options.ttl, target.incarnation.default_ttl_seconds)
            }),
            content_type,
            metadata,
            etag_version: 0,
            created: current.is_none() && value.is_some(),
            expired: false,
            coordination: Some(&coordination),
        };
        let (reservation, value_location) = self.reserve_item_write(&write)?;
        let version = reservation.version();
        // A version whose entry says all of it, when the mapping already holds the entry,
        // is a plain head: no node (`plain.rs`). It goes over nothing, or replaces the
        // head and its chain outright while no snapshot is open (checked after the
        // reservation).
        let plain_offset = value_location
            .filter(|_| {
                self.log.durability() == Durability::Buffered
                    && plain::is_plain_write(&write)
                    && (head.is_null() || self.may_replace_head())
            })
            .map(|location| location.offset());
        self.index.note_expiry(write.expires_at);
        let installed = match plain_offset {
            Some(offset) => target.slot.install_plain(head, offset, false, guard),
            None => {
                let node = written_version(&write, version, COMMITTED, value_location);
                target.slot.install(head, node, guard)
            }
        };
        let Ok(installed) = installed else {
            // Someone else's write landed first: give the record up and re-check.
            reservation.abort();
            return Ok(Attempt::HeadMoved);
        };
        if let Some(location) = value_location {
            self.index
                .note_value_location(target.key_bytes, Some(target.hint_cell), location);
        }
        reservation.commit()?;
        // A container deleted before this write (earlier in the log) took it along.
        if target.incarnation.deleted_version.load(Ordering::Acquire) < version {
            return Err(Error::rejected(ErrorCode::ContainerNotFound));
        }
        self.maybe_prune(target.slot, installed, guard);
        // A delete drops the lease; a write may clear an Expired or Broken one.
        self.lease_waiters.notify();
        Ok(Attempt::Done(match change {
            Change::Delete => None,
            _ => Some(Written {
                version,
                last_modified: now,
                expires_at: write.expires_at,
            }),
        }))
    }

    /// What a write writes: its value, content type and metadata. Properties are borrowed
    /// (from the options, or the current version under `guard`): only a version node, which
    /// few writes need, owns a copy.
    fn written_content<'a>(
        &self,
        change: Change<'a>,
        options: &'a WriteOptions,
        current: Option<&'a VersionNode>,
        guard: &'a crossbeam_epoch::Guard,
    ) -> Result<(Option<&'a [u8]>, Option<&'a str>, &'a [(String, String)])> {
        Ok(match change {
            Change::Value(value) => (
                Some(value),
                options.content_type.as_deref(),
                &options.metadata,
            ),
            Change::Delete => (None, None, &[]),
            Change::Properties | Change::Metadata => {
                let node = current.expect("existence was checked");
                // Borrowed from the log under `guard`, which outlives this write.
                let value = match node.value() {
                    Some(location) => {
                        // The newest version may not be acknowledged yet, and in a `sync`
                        // store its record reaches the mapping only with its group's
                        // sync (log/staging.rs): wait for it, as a read would.
                        if node.version > self.version() {
                            self.log.wait(node.version)?;
                        }
                        self.value_bytes(location, guard)?
                    }
                    None => &[],
                };
                let content_type = match change {
                    Change::Metadata => node
                        .properties()
                        .and_then(|properties| properties.content_type.as_deref()),
                    _ => options.content_type.as_deref(),
                };
                (Some(value), content_type, &options.metadata)
            }
        })
    }

    /// Reserves `write`'s record and encodes it in place (into the mapping, in a `buffered`
    /// store). Returns the reservation and where the value landed in the log.
    fn reserve_item_write(
        &self,
        write: &ItemWrite<'_>,
    ) -> Result<(Reservation<'_>, Option<ValueLocation>)> {
        // A delete may use the space reserve: it lets compaction free space.
        let space_use = if write.value.is_none() {
            SpaceUse::Deleting
        } else {
            SpaceUse::Ordinary
        };
        let mut reservation = self
            .log
            .reserve(1 + record::item_write_size(write), space_use)?;
        let version = reservation.version();
        let value_offset = match write.value {
            Some(value) if reservation.writes_payload_apart() => {
                // Everything before the value, then the value from the caller's memory.
                let mut head = Vec::with_capacity(record::item_write_size(write) + 1 - value.len());
                head.push(record::OP_ITEM_WRITE);
                let value_offset = record::encode_item_write_head(&mut head, write);
                plain::patch_version(&mut head, value_offset, write, version);
                reservation.write_payload_parts(&[&head, value])?;
                value_offset
            }
            _ => reservation.write_payload_with(|payload| {
                let mut out = record::PayloadWriter::new(payload);
                record::Sink::push(&mut out, record::OP_ITEM_WRITE);
                let value_offset = record::encode_item_write(&mut out, write);
                let payload = out.finish();
                // The entry says its own version, so a plain head can name it (`plain.rs`).
                plain::patch_version(payload, value_offset, write, version);
                value_offset
            })?,
        };
        let value_location = write.value.map(|value| {
            ValueLocation::new(
                reservation.location() + HEADER_BYTES as u64 + value_offset as u64,
                value.len() as u32,
            )
        });
        Ok((reservation, value_location))
    }

    /// A refusal judged against a version that is installed but not yet acknowledged (its
    /// writer is still completing or syncing it) is returned only once that version is
    /// visible: otherwise a read started after the refusal could still see the older state,
    /// and the refusal would not be linearizable. Successful writes need no such wait: their
    /// own acknowledgement waits for every earlier version.
    pub(crate) fn settle_refusal(
        &self,
        judged_against: Option<&VersionNode>,
        refusal: Error,
    ) -> Error {
        if let Some(node) = judged_against {
            if node.version > self.version() {
                if let Err(error) = self.log.wait(node.version) {
                    return error;
                }
            }
        }
        refusal
    }

    /// Unlinks versions no snapshot can see once a chain grows past a few versions.
    pub(crate) fn maybe_prune(
        &self,
        slot: &ItemSlot,
        installed: Shared<'_, VersionNode>,
        guard: &crossbeam_epoch::Guard,
    ) {
        const PRUNE_AT_CHAIN_LENGTH: u8 = 4;
        // A plain head has nothing below it to prune.
        let Some(node) = node_of(installed) else {
            return;
        };
        if node.chain_length() < PRUNE_AT_CHAIN_LENGTH {
            return;
        }
        let snapshots = self.snapshots.lock();
        let oldest = self.oldest_snapshot.load(Ordering::Acquire);
        let keep_from = oldest.min(self.version());
        let kept = slot.prune(keep_from, guard);
        node.note_pruned_chain(kept);
        drop(snapshots);
    }
}
