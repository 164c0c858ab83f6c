//! Reads: one item, the pages of a listing or scan, containers, each with the timers of the
//! records that hold deadlines, settled at the caller's now (timers.rs).

use crate::cluster::rejected;
use crate::codec::Timer;
use crate::codec::{prefix_end, ContainerRecord, ItemRecord};
use crate::store::{check_read, decode_container, decode_item, timer_revisions, EtcdStore, Stored};
use crate::timers::{has_deadlines, item_deadlines};
use tenure::seam::conditions::{self};
use tenure::seam::{paging, validate};
use tenure::{ErrorCode, Item, Page, ReadOptions, Result, Timestamp};

impl EtcdStore {
    /// Reads the timers of every item of `items` that holds a deadline, at `revision`, and
    /// settles them at `now` (items without deadlines have nothing to settle).
    pub(crate) fn settle_items(
        &self,
        container: &str,
        items: &mut [(Vec<u8>, Stored<ItemRecord>)],
        revision: i64,
        now: Timestamp,
    ) -> Result<()> {
        // Each item's timers in one transaction's reads, within etcd's operations per
        // transaction (128 by default).
        const ITEMS_PER_READ: usize = 25;
        let timed: Vec<usize> = (0..items.len())
            .filter(|&index| has_deadlines(&item_deadlines(&items[index].1.record)))
            .collect();
        for chunk in timed.chunks(ITEMS_PER_READ) {
            let keys: Vec<Vec<u8>> = chunk
                .iter()
                .flat_map(|&index| Timer::ALL.iter().map(move |&timer| (timer, index)))
                .map(|(timer, index)| self.keys.item_timer(timer, container, &items[index].0))
                .collect();
            let (_, mut found) = self.get_keys(&keys, revision)?;
            for &index in chunk {
                items[index].1.timers = timer_revisions(&mut found, Timer::ALL.len());
            }
        }
        for (_, item) in items.iter_mut() {
            item.settle(now);
        }
        Ok(())
    }

    /// Every item of `container` whose key starts with `prefix`, from `start`, at `revision`,
    /// live at `now`, one etcd page at a time: `visit` returns false to stop.
    pub(crate) fn walk_items(
        &self,
        container: &str,
        prefix: &[u8],
        start: &[u8],
        revision: i64,
        now: Timestamp,
        visit: &mut dyn FnMut(&[u8], &Stored<ItemRecord>) -> Result<bool>,
    ) -> Result<i64> {
        const ETCD_PAGE: i64 = 512;
        let base = self.keys.items(container);
        let full_prefix = [&base[..], prefix].concat();
        let end = prefix_end(&full_prefix);
        let mut from = [&base[..], start].concat().max(full_prefix.clone());
        let mut revision = revision;
        loop {
            let (read_at, kvs, more) = self.get_range(&from, &end, ETCD_PAGE, revision)?;
            // Every page at the first page's revision: one consistent listing.
            if revision == 0 {
                revision = read_at;
            }
            let mut page = kvs
                .iter()
                .map(|kv| Ok((kv.key()[base.len()..].to_vec(), decode_item(kv)?)))
                .collect::<Result<Vec<_>>>()?;
            self.settle_items(container, &mut page, revision, now)?;
            for (key, stored) in &page {
                if !visit(key, stored)? {
                    return Ok(revision);
                }
            }
            match kvs.last() {
                Some(last) if more => {
                    from = last.key().to_vec();
                    from.push(0);
                }
                _ => return Ok(revision),
            }
        }
    }

    /// One page of a listing at `revision` (0: the newest).
    pub(crate) fn list_at(
        &self,
        revision: i64,
        container: &str,
        prefix: &[u8],
        page_size: usize,
        continuation: Option<&str>,
        include_values: bool,
    ) -> Result<Page> {
        let start =
            paging::listing_start(container, prefix, page_size, continuation, &self.limits)?;
        let (revision, _) = self.container_at(container, revision)?;
        let now = self.now();
        let mut items: Vec<Item> = Vec::new();
        let mut continuation = None;
        self.walk_items(
            container,
            prefix,
            &start,
            revision,
            now,
            &mut |key, stored| {
                if !stored.is_live_at(now) {
                    return Ok(true);
                }
                if items.len() == page_size {
                    continuation = Some(paging::encode_continuation(&items[page_size - 1].key));
                    return Ok(false);
                }
                items.push(stored.to_item(key, include_values));
                Ok(true)
            },
        )?;
        Ok(Page {
            items,
            continuation,
        })
    }

    /// The container at `revision` (0: the newest), and the revision it was read at.
    pub(crate) fn container_at(
        &self,
        name: &str,
        revision: i64,
    ) -> Result<(i64, Stored<ContainerRecord>)> {
        let (read_at, kv) = self.get_key(&self.keys.container(name), revision)?;
        let stored = kv
            .map(|kv| decode_container(&kv))
            .transpose()?
            .ok_or_else(|| rejected(ErrorCode::ContainerNotFound))?;
        Ok((if revision > 0 { revision } else { read_at }, stored))
    }

    /// A read of one item at `revision` (0: the newest), checked as docs/spec.md §3 says.
    pub(crate) fn read_at(
        &self,
        revision: i64,
        container: &str,
        key: &[u8],
        options: &ReadOptions,
    ) -> Result<Stored<ItemRecord>> {
        self.check_open()?;
        validate::container_name(container)?;
        validate::key(key, &self.limits)?;
        conditions::validate_read(&options.conditions)?;
        let item_key = self.keys.item(container, key);
        let (read_at, kv) = self.get_key(&item_key, revision)?;
        let mut item = kv.map(|kv| decode_item(&kv)).transpose()?;
        // One read for an item without deadlines; an item with some reads its timers as of
        // the same revision.
        let at = if revision > 0 { revision } else { read_at };
        if let Some(item) = item
            .as_mut()
            .filter(|item| has_deadlines(&item_deadlines(&item.record)))
        {
            let timers: Vec<Vec<u8>> = Timer::ALL
                .iter()
                .map(|&timer| self.keys.item_timer(timer, container, key))
                .collect();
            let (_, mut found) = self.get_keys(&timers, at)?;
            item.timers = timer_revisions(&mut found, Timer::ALL.len());
        }
        if revision == 0 {
            self.recent.remember_item(&item_key, item.as_ref());
        }
        if item.is_none() {
            // No item: is there a container?
            self.container_at(container, at)?;
        }
        let now = self.now();
        if let Some(item) = item.as_mut() {
            item.settle(now);
        }
        check_read(item.as_ref(), options, now).cloned()
    }

    pub(crate) fn container_names_at(&self, revision: i64) -> Result<Vec<String>> {
        let start = self.keys.containers();
        let end = prefix_end(&start);
        let (_, kvs, _) = self.get_range(&start, &end, 0, revision)?;
        Ok(kvs
            .iter()
            .filter_map(|kv| self.keys.container_name(kv.key()).map(str::to_owned))
            .collect())
    }
}
