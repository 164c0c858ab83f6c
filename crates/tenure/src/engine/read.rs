//! Reads of the newest state: get, get_with, list, and the version resolution and condition
//! checks they share with snapshots.

use std::sync::atomic::Ordering;

use crossbeam_epoch::Guard;

use super::core::{facts_of, retrying_plain_read, Engine, ValueRead};
use crate::backend::options::{Item, ItemRef, Page, ReadOptions};
use crate::clock::{ReadTime, Timestamp};
use crate::error::{Error, ErrorCode, Result};
use crate::index::plain;
use crate::index::{index_key, IndexKey, PlainEntries, ValueLocation, VersionNode, VersionRef};
use crate::rules::conditions::{self};
use crate::rules::lease::{self};
use crate::rules::paging;
use crate::rules::validate;
use crate::types::{ETag, Version};

/// How many cache lines from a hinted value's start a get begins to load early (3 covers a
/// 150-byte value in most positions); the rest of a larger value arrives as the copy reads it,
/// behind the processor's own sequential prefetching.
const PREFETCHED_VALUE_LINES: usize = 3;

impl Engine {
    // ----- reads -----

    /// Reads an item (docs/spec.md §3 read conditions).
    pub(crate) fn get(&self, container: &str, key: &[u8], options: &ReadOptions) -> Result<Item> {
        self.read_latest(container, key, options, ValueRead::Copy)
            .map(|(item, _)| item)
    }

    /// Like `get`, without the value.
    pub(crate) fn get_properties(
        &self,
        container: &str,
        key: &[u8],
        options: &ReadOptions,
    ) -> Result<Item> {
        self.read_latest(container, key, options, ValueRead::Skip)
            .map(|(item, _)| item)
    }

    /// A plain read: at the newest visible version, judged at the clock's time.
    fn read_latest(
        &self,
        container: &str,
        key: &[u8],
        options: &ReadOptions,
        value_read: ValueRead,
    ) -> Result<(Item, Option<ValueLocation>)> {
        self.check_open()?;
        self.read_at(
            self.version(),
            &ReadTime::from_clock(self.clock.as_ref()),
            container,
            key,
            options,
            value_read,
            false,
        )
    }

    #[allow(clippy::too_many_arguments)]
    pub(crate) fn read_at(
        &self,
        version: Version,
        time: &ReadTime<'_>,
        container: &str,
        key: &[u8],
        options: &ReadOptions,
        value_read: ValueRead,
        repeatable: bool,
    ) -> Result<(Item, Option<ValueLocation>)> {
        let key_bytes = self.read_index_key(container, key, options, version)?;
        retrying_plain_read(repeatable, || {
            let guard = crossbeam_epoch::pin();
            self.read_pinned(
                version, time, &key_bytes, key, options, value_read, repeatable, &guard,
            )
        })
    }

    /// Reads the newest version of an item and lends it to `read`, its value borrowed from
    /// the log's mapping: no copy of the value, nor a snapshot to take (`Snapshot::get_borrowed`
    /// borrows for as long as a snapshot lives). The borrow lasts for the call: until `read`
    /// returns, the epoch stays pinned, so compaction can take the segment out of the log but
    /// not unmap it, and a complete record is never written again. Keep `read` short, as a
    /// pinned thread holds back the reclamation of everything retired meanwhile.
    pub(crate) fn get_with<R>(
        &self,
        container: &str,
        key: &[u8],
        options: &ReadOptions,
        read: impl FnOnce(ItemRef<'_>) -> R,
    ) -> Result<R> {
        self.check_open()?;
        let guard = crossbeam_epoch::pin();
        let version = self.version();
        let time = ReadTime::from_clock(self.clock.as_ref());
        let key_bytes = self.read_index_key(container, key, options, version)?;
        // One guard for every attempt: what the first found stays mapped, and a retry after
        // a compaction race finds the copy, which was installed before its segment went.
        let (node, value) = retrying_plain_read(false, || {
            let node = self.find_pinned(
                version,
                &time,
                &key_bytes,
                options,
                ValueRead::Borrow,
                false,
                &guard,
            )?;
            let value = match node.value() {
                Some(location) => self.value_bytes(location, &guard)?,
                None => &[],
            };
            Ok((node, value))
        })?;
        // Borrowed from the node (under `guard`), nothing copied.
        let properties = node.properties();
        Ok(read(ItemRef {
            key,
            value,
            etag: ETag(node.etag_version()),
            version: node.etag_version(),
            last_modified: node.last_modified,
            content_type: properties.and_then(|properties| properties.content_type.as_deref()),
            metadata: properties.map_or(&[], |properties| &properties.metadata),
            expires_at: node.expires_at(),
        }))
    }

    /// A read's arguments checked (docs/spec.md §13), and the index key of `key` in the incarnation
    /// of `container` visible at `version`.
    fn read_index_key(
        &self,
        container: &str,
        key: &[u8],
        options: &ReadOptions,
        version: Version,
    ) -> Result<IndexKey> {
        validate::container_name(container)?;
        validate::key(key, &self.limits)?;
        conditions::validate_read(&options.conditions)?;
        let container_id = self
            .catalog
            .visible_id(container, version)
            .ok_or_else(|| Error::rejected(ErrorCode::ContainerNotFound))?;
        Ok(index_key(container_id, key))
    }

    #[allow(clippy::too_many_arguments)]
    fn read_pinned(
        &self,
        version: Version,
        time: &ReadTime<'_>,
        key_bytes: &[u8],
        key: &[u8],
        options: &ReadOptions,
        value_read: ValueRead,
        repeatable: bool,
        guard: &Guard,
    ) -> Result<(Item, Option<ValueLocation>)> {
        let node = self.find_pinned(
            version, time, key_bytes, options, value_read, repeatable, guard,
        )?;
        let item = self.item_from(key, &node, value_read == ValueRead::Copy, guard)?;
        Ok((item, node.value()))
    }

    /// The version of `key_bytes` a read at `version` and `time` finds, once its lease and
    /// conditions are checked (`NotFound` when there is none).
    #[allow(clippy::too_many_arguments)]
    fn find_pinned<'g>(
        &self,
        version: Version,
        time: &ReadTime<'_>,
        key_bytes: &[u8],
        options: &ReadOptions,
        value_read: ValueRead,
        repeatable: bool,
        guard: &'g Guard,
    ) -> Result<VersionRef<'g>> {
        // A plain read re-reads the version once pinned: a segment removed before the pin was
        // compacted at a version no newer than this one, so nothing found points into it.
        let version = if repeatable {
            version
        } else {
            version.max(self.version())
        };
        // A hint's lines are loading while the slot is: a cold get waits for two cache misses
        // in a row (bucket, then slot and value together) instead of three. A plain head's
        // fields are the 36 bytes before its value (`plain.rs`), which start in the line before
        // the value's for more than half of the values: that line loads too, also when the
        // value itself is not read.
        let prefetch_value = |offset: u64| {
            let lines = match value_read {
                ValueRead::Skip => 2,
                ValueRead::Borrow | ValueRead::Copy => PREFETCHED_VALUE_LINES + 1,
            };
            self.log.prefetch(offset.saturating_sub(64), lines, guard);
        };
        let restored = self.index.ready_for(key_bytes)?;
        let slot = self
            .index
            .get_prefetching(restored, key_bytes, guard, prefetch_value);
        let node = match slot.as_deref() {
            Some(slot) => self.resolve(slot, version, repeatable, guard)?,
            None => None,
        }
        .filter(|node| node.is_live_for(time));
        let Some(node) = node else {
            conditions::check_read(&options.conditions, None)?;
            return Err(Error::rejected(ErrorCode::NotFound));
        };
        let facts = facts_of(&node);
        let lease_time = match node.lease() {
            Some(_) => time.now(),
            // Without a lease the check judges nothing against the time.
            None => Timestamp::MIN,
        };
        lease::check_lease_for_item_operation(
            node.lease(),
            lease_time,
            options.lease_id,
            lease::Access::Read,
        )
        .map_err(|error| crate::rules::with_current_etag(error, Some(facts.etag)))?;
        conditions::check_read(&options.conditions, Some(&facts))?;
        Ok(node)
    }

    /// The node a reader at `version` sees. A snapshot (`repeatable`) pins its version, so no
    /// prune can take its nodes. A plain read may move forward: a writer's prune keeps only the
    /// newest node at or below the `visible` version *it* read, which can be newer than the
    /// reader's; when the walk falls off the chain the reader retries at a fresh version, which
    /// is at least that prune's. And a plain write may replace a head and its chain outright
    /// (`plain.rs`): the plain head it leaves, newer than every visible version, may hide the
    /// version the reader would see, so the reader waits for that write to complete (it is
    /// copying its record) and reads it.
    pub(crate) fn resolve<'g>(
        &self,
        slot: &crate::index::ItemSlot,
        version: Version,
        repeatable: bool,
        guard: &'g Guard,
    ) -> Result<Option<VersionRef<'g>>> {
        const MAX_FRESH_READS: usize = 64;
        let mut fields = self.log.reader(guard);
        let mut version = version;
        for _ in 0..MAX_FRESH_READS {
            let node = slot.visible(version, guard, &mut fields)?;
            if node.is_some() || repeatable {
                return Ok(node);
            }
            let mut fresh = self.version();
            if fresh == version {
                let head = slot.head().load(Ordering::Acquire, guard);
                let Some(offset) = plain::offset_of(head) else {
                    return Ok(None);
                };
                let newer = fields.plain_entry_at(offset)?.version;
                if newer <= version {
                    return Ok(None);
                }
                self.log.wait(newer)?;
                fresh = self.version();
            }
            version = fresh;
        }
        Ok(None)
    }

    pub(crate) fn item_from(
        &self,
        key: &[u8],
        node: &VersionNode,
        with_value: bool,
        guard: &Guard,
    ) -> Result<Item> {
        let value = match (with_value, node.value()) {
            (true, Some(location)) => Some(self.value_bytes(location, guard)?.to_vec()),
            _ => None,
        };
        let properties = node.properties();
        Ok(Item {
            key: key.to_vec(),
            value,
            etag: ETag(node.etag_version()),
            version: node.etag_version(),
            last_modified: node.last_modified,
            content_type: properties.and_then(|properties| properties.content_type.clone()),
            metadata: properties
                .map(|properties| properties.metadata.clone())
                .unwrap_or_default(),
            expires_at: node.expires_at(),
        })
    }

    pub(crate) fn value_bytes<'g>(
        &self,
        location: ValueLocation,
        guard: &'g Guard,
    ) -> Result<&'g [u8]> {
        self.log
            .read_bytes(location.offset(), location.length as usize, guard)
    }

    /// One page of the items of `container` whose keys start with `prefix`, in key order.
    pub(crate) fn list(
        &self,
        container: &str,
        prefix: &[u8],
        page_size: usize,
        continuation: Option<&str>,
        include_values: bool,
    ) -> Result<Page> {
        self.check_open()?;
        self.list_at(
            self.version(),
            self.now(),
            container,
            prefix,
            page_size,
            continuation,
            include_values,
            false,
        )
    }

    #[allow(clippy::too_many_arguments)]
    pub(crate) fn list_at(
        &self,
        version: Version,
        now: Timestamp,
        container: &str,
        prefix: &[u8],
        page_size: usize,
        continuation: Option<&str>,
        include_values: bool,
        repeatable: bool,
    ) -> Result<Page> {
        let start =
            paging::listing_start(container, prefix, page_size, continuation, &self.limits)?;
        let incarnation = self
            .catalog
            .visible(container, version)
            .ok_or_else(|| Error::rejected(ErrorCode::ContainerNotFound))?;
        let full_prefix = index_key(incarnation.id, prefix);
        let start = index_key(incarnation.id, &start);
        let guard = crossbeam_epoch::pin();
        let version = if repeatable {
            version
        } else {
            version.max(self.version())
        };
        let mut items = Vec::new();
        let mut continuation = None;
        // Bounded look-ahead for "is there another item?" past a full page.
        const LOOK_AHEAD_SLOTS: usize = 1024;
        let mut looked_ahead = 0;
        for slot in self.walk(&start, &full_prefix, include_values, &guard)? {
            let Some(node) = self
                .resolve(&slot, version, repeatable, &guard)?
                .filter(|node| node.is_live_at(now))
            else {
                if items.len() == page_size {
                    looked_ahead += 1;
                    if looked_ahead >= LOOK_AHEAD_SLOTS {
                        continuation = Some(paging::encode_continuation(
                            items.last().map_or(prefix, |item: &Item| &item.key),
                        ));
                        break;
                    }
                }
                continue;
            };
            if items.len() == page_size {
                continuation = Some(paging::encode_continuation(&items[page_size - 1].key));
                break;
            }
            items.push(self.item_from(slot.key(), &node, include_values, &guard)?);
        }
        Ok(Page {
            items,
            continuation,
        })
    }
}
