//! The change feed (docs/spec.md §10): every committed change in version order — item creates,
//! updates and deletes, container creates and deletes — read straight from the log, resumable
//! from any version still retained. A batch appears as its operations, all with its version.
//! Records that are not changes (compaction's copies, lease and lock changes, aborts) are
//! skipped.

use crate::backend::results::{
    check_changes_options, Change, ChangeKind, ChangeRef, ChangesOptions,
};
use std::time::Duration;

use crate::engine::core::Engine;
use crate::error::{Error, Result};
use crate::record::{self, DecodedRecord};
use crate::types::{ETag, Version};

impl Engine {
    /// The committed changes after `since`, oldest first: `visit` sees each with its key and
    /// value borrowed from the log's mapping, and returns `false` to stop. About
    /// `options.max_changes` are visited: the call stops at the first record boundary at or
    /// past it, so a batch's changes (one version) are never split between calls.
    pub(crate) fn visit_changes(
        &self,
        since: Version,
        options: &ChangesOptions,
        visit: &mut dyn FnMut(ChangeRef<'_>) -> bool,
    ) -> Result<()> {
        self.check_open()?;
        self.check_feed_request(since, options)?;
        let (start, _) = self.log.feed_start(since);
        let mut names: Vec<(u64, Option<String>)> = Vec::new();
        let mut visited = 0usize;
        let mut owned = Vec::new();
        self.log
            .read_records(start, since, &mut |version, location, payload| {
                let corrupt = |reason: &str| {
                    Error::corruption("log", location, format!("change feed: {reason}"))
                };
                let mut items = Vec::with_capacity(1);
                if record::decode_feed_items(payload, &mut items).map_err(corrupt)? {
                    for item in &items {
                        let Some(name) = self.container_name_cached(item.container_id, &mut names)
                        else {
                            continue;
                        };
                        if options
                            .container
                            .as_deref()
                            .is_some_and(|only| only != name)
                        {
                            continue;
                        }
                        let kind = match (item.value, item.created) {
                            (None, _) if item.expired => ChangeKind::Expired,
                            (None, _) => ChangeKind::Deleted,
                            (Some(_), true) => ChangeKind::Created,
                            (Some(_), false) => ChangeKind::Updated,
                        };
                        visited += 1;
                        let change = ChangeRef {
                            version,
                            kind,
                            container: name,
                            key: Some(item.key),
                            etag: item.value.map(|_| ETag(version)),
                            value: item.value,
                        };
                        if !visit(change) {
                            return Ok(false);
                        }
                    }
                    // A page ends between records, never inside a batch's: a caller resumes
                    // after the last version it saw, which would skip the rest of a batch.
                    if visited >= options.max_changes {
                        return Ok(false);
                    }
                } else {
                    owned.clear();
                    self.collect_changes(
                        version,
                        record::decode(payload).map_err(corrupt)?,
                        options,
                        &mut owned,
                    );
                    for change in &owned {
                        visited += 1;
                        if !visit(change.as_ref()) {
                            return Ok(false);
                        }
                    }
                    if visited >= options.max_changes {
                        return Ok(false);
                    }
                }
                Ok(true)
            })
    }

    fn check_feed_request(&self, since: Version, options: &ChangesOptions) -> Result<()> {
        check_changes_options(options)?;
        let (_, oldest) = self.log.feed_start(since);
        if let (true, Some(oldest)) = (self.log.first_slot() > 0, oldest) {
            if since + 1 < oldest {
                return Err(Error::Compacted {
                    since,
                    oldest_available: oldest,
                });
            }
        }
        Ok(())
    }

    /// A container's name by id, remembered for the rest of one `changes` call (nameless
    /// placeholders count as unknown).
    fn container_name_cached<'c>(
        &self,
        id: u64,
        names: &'c mut Vec<(u64, Option<String>)>,
    ) -> Option<&'c str> {
        let at = match names.iter().position(|(known, _)| *known == id) {
            Some(at) => at,
            None => {
                let name = self
                    .catalog
                    .by_id(id)
                    .map(|incarnation| incarnation.name.clone())
                    .filter(|name| !name.is_empty());
                names.push((id, name));
                names.len() - 1
            }
        };
        names[at].1.as_deref()
    }

    fn collect_changes(
        &self,
        version: Version,
        record: DecodedRecord<'_>,
        options: &ChangesOptions,
        changes: &mut Vec<Change>,
    ) {
        let container_name = |id: u64| {
            self.catalog
                .by_id(id)
                .map(|incarnation| incarnation.name.clone())
        };
        let wanted = |name: &str| options.container.as_deref().is_none_or(|only| only == name);
        match record {
            DecodedRecord::Items(items) => {
                for item in items {
                    let Some(name) = container_name(item.write.container_id) else {
                        continue;
                    };
                    if name.is_empty() || !wanted(&name) {
                        continue;
                    }
                    let kind = match (item.write.value, item.write.created) {
                        (None, _) if item.write.expired => ChangeKind::Expired,
                        (None, _) => ChangeKind::Deleted,
                        (Some(_), true) => ChangeKind::Created,
                        (Some(_), false) => ChangeKind::Updated,
                    };
                    changes.push(Change {
                        version,
                        kind,
                        container: name,
                        key: Some(item.write.key.to_vec()),
                        etag: item.write.value.map(|_| ETag(version)),
                        value: item
                            .write
                            .value
                            .filter(|_| options.include_values)
                            .map(<[u8]>::to_vec),
                    });
                }
            }
            DecodedRecord::ContainerCreate { name, .. } if wanted(name) => changes.push(Change {
                version,
                kind: ChangeKind::ContainerCreated,
                container: name.to_owned(),
                key: None,
                etag: Some(ETag(version)),
                value: None,
            }),
            DecodedRecord::ContainerDelete { container_id } => {
                if let Some(name) =
                    container_name(container_id).filter(|name| !name.is_empty() && wanted(name))
                {
                    changes.push(Change {
                        version,
                        kind: ChangeKind::ContainerDeleted,
                        container: name,
                        key: None,
                        etag: None,
                        value: None,
                    });
                }
            }
            _ => {}
        }
    }

    /// Blocks until a change newer than `since` is committed or `timeout` passes (no busy
    /// loop). Returns whether one is there.
    pub(crate) fn wait_for_changes(&self, since: Version, timeout: Duration) -> Result<bool> {
        self.check_open()?;
        if timeout > Duration::from_secs(24 * 3600) {
            return Err(Error::invalid("timeout", "at most 24 hours"));
        }
        Ok(self.log.wait_visible_after(since, timeout) > since)
    }
}
