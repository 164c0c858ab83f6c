//! Version chains: plain heads (`plain.rs`) and nodes, installs and prunes, and that a node is
//! freed only once nothing can reach it.

use std::collections::HashMap;
use std::sync::atomic::AtomicU64;
use std::sync::{Arc, Barrier};

use super::*;
use crate::error::Result;
use crate::log::RecordBytes;
use crate::record::{self, ItemWrite};
use crate::types::Version;
use crossbeam_epoch::{Guard, Owned, Shared};
use std::sync::atomic::Ordering;

fn node(version: Version, status: u8, properties: bool) -> VersionNode {
    VersionNode::new(NewVersion {
        version,
        etag_version: version,
        status,
        // The value's place is derived from the version, so a reader can tell a node that
        // changed under it: `check_node`.
        value: Some(ValueLocation::new(1_000 + version, version as u32)),
        last_modified: 0,
        expires_at: None,
        properties: properties.then(|| {
            Box::new(Properties {
                content_type: Some("text/plain".into()),
                metadata: vec![("owner".into(), format!("writer {version}"))],
            })
        }),
        coordination: None,
    })
}

fn check_node(node: &VersionNode) {
    let location = node.value().expect("these tests write no tombstones");
    assert_eq!(
        location.offset(),
        1_000 + node.version,
        "a node changed under its reader"
    );
    assert_eq!(u64::from(location.length), node.version);
}

fn slot() -> ItemSlot {
    ItemSlot::new(b"\0\0\0\0\0\0\0\x01key")
}

/// Plain entries as a log would hold them, by where their fields start: the fields
/// `encode_item_write` writes before a value of `version` bytes, at version `version`, and
/// the value. Lent as `'static` (as a log's map lends for a guard's life) and freed when the
/// `Entries` drops, which outlives every use in a test.
#[derive(Default)]
struct Entries(HashMap<u64, &'static [u8]>);

impl Drop for Entries {
    fn drop(&mut self) {
        for (_, bytes) in self.0.drain() {
            // SAFETY: each slice came from `Box::leak` in `add`, is freed once here, and no
            // test keeps one past the `Entries` it read it from.
            drop(unsafe { Box::from_raw(std::ptr::from_ref(bytes).cast_mut()) });
        }
    }
}

impl Entries {
    /// Adds version `version`'s entry and returns its value offset (where `node` puts it).
    fn add(&mut self, version: Version) -> u64 {
        let value = vec![7u8; version as usize];
        let mut payload = vec![record::OP_ITEM_WRITE];
        let write = ItemWrite {
            container_id: 1,
            key: b"key",
            value: Some(&value),
            last_modified: 0,
            expires_at: None,
            content_type: None,
            metadata: &[],
            etag_version: 0,
            coordination: None,
            created: true,
            expired: false,
        };
        let value_offset = record::encode_item_write(&mut payload, &write);
        plain::patch_version(&mut payload, value_offset, &write, version);
        let entry = payload[value_offset - plain::FIELDS_BYTES..].to_vec();
        let value_offset = 1_000 + version;
        self.0.insert(
            value_offset - plain::FIELDS_BYTES as u64,
            Box::leak(entry.into_boxed_slice()),
        );
        value_offset
    }
}

impl RecordBytes<'static> for Entries {
    fn bytes_from(&mut self, offset: u64) -> Result<&'static [u8]> {
        self.0
            .get(&offset)
            .copied()
            .ok_or_else(|| self.corruption(offset, "no entry there"))
    }

    fn corruption(&mut self, offset: u64, reason: &str) -> crate::error::Error {
        crate::error::Error::corruption("test", offset, reason)
    }
}

/// The versions of the chain from the head down, plain ones read through `entries`.
fn chain(slot: &ItemSlot, entries: &mut Entries, guard: &Guard) -> Vec<(Version, bool)> {
    let mut versions = Vec::new();
    let mut current = slot.head().load(Ordering::Acquire, guard);
    while let Some(version) = view(current, entries).unwrap() {
        let is_plain = matches!(version, VersionRef::Plain(..));
        versions.push((version.version, is_plain));
        let VersionRef::Node(node) = version else {
            break;
        };
        current = node.older.load(Ordering::Acquire, guard);
    }
    versions
}

/// A plain head reads as its entry, ends its chain under the nodes installed over it, and a
/// prune that detaches it frees nothing (a plain head owns no memory: freeing one would show
/// under the AddressSanitizer run).
#[test]
fn a_plain_head_reads_as_its_entry_and_ends_its_chain() {
    let mut entries = Entries::default();
    let slot = slot();
    let guard = crossbeam_epoch::pin();
    let offset = entries.add(1);
    let first = slot
        .install_plain(Shared::null(), offset, false, &guard)
        .unwrap();
    assert_eq!(plain::offset_of(first), Some(offset));
    let seen = slot.visible(1, &guard, &mut entries).unwrap().unwrap();
    check_node(&seen);
    assert!(matches!(seen, VersionRef::Plain(_, at) if at == offset));
    assert!(slot.visible(0, &guard, &mut entries).unwrap().is_none());
    let second = slot
        .install(first, node(2, COMMITTED, false), &guard)
        .unwrap();
    let third = slot
        .install(second, node(3, PENDING, true), &guard)
        .unwrap();
    assert_eq!(
        chain(&slot, &mut entries, &guard),
        [(3, false), (2, false), (1, true)]
    );
    assert_eq!(node_of(third).unwrap().chain_length(), 3);
    // A reader at version 1 passes the pending and newer nodes and lands on the entry.
    let at_one = slot.visible(1, &guard, &mut entries).unwrap().unwrap();
    assert_eq!(at_one.version, 1);
    assert_eq!(
        slot.visible(2, &guard, &mut entries)
            .unwrap()
            .unwrap()
            .version,
        2
    );
    // Pruning at 1 keeps everything (the entry is the newest at 1); at 2 it detaches it.
    assert_eq!(slot.prune(1, &guard), 3);
    assert_eq!(slot.prune(2, &guard), 2);
    assert_eq!(chain(&slot, &mut entries, &guard), [(3, false), (2, false)]);
    // A pending node taken back leaves its older head in place, a plain one included.
    let other = self::slot();
    let plain_first = other
        .install_plain(Shared::null(), offset, false, &guard)
        .unwrap();
    let pending = other
        .install(plain_first, node(5, PENDING, false), &guard)
        .unwrap();
    other.uninstall(pending, &guard);
    assert_eq!(chain(&other, &mut entries, &guard), [(1, true)]);
}

/// A plain write replaces a head that is a node, and the whole chain under it, outright
/// (while no snapshot is open, `plain.rs`): the chain is the new entry alone, and the nodes
/// it replaced are retired once each (a double free, or a leak, shows under the
/// AddressSanitizer run).
#[test]
fn a_plain_head_replaces_a_chain_of_nodes_outright() {
    let mut entries = Entries::default();
    let slot = slot();
    let guard = crossbeam_epoch::pin();
    let mut head = slot
        .install_plain(Shared::null(), entries.add(1), false, &guard)
        .unwrap();
    for version in 2..=4 {
        head = slot
            .install(head, node(version, COMMITTED, version == 3), &guard)
            .unwrap();
    }
    assert_eq!(chain(&slot, &mut entries, &guard).len(), 4);
    let replacing = entries.add(5);
    slot.install_plain(head, replacing, false, &guard).unwrap();
    assert_eq!(chain(&slot, &mut entries, &guard), [(5, true)]);
    assert!(slot.visible(4, &guard, &mut entries).unwrap().is_none());
}

/// A plain head never goes over a pending node: writers wait for a batch's version to
/// settle first.
#[test]
#[should_panic(expected = "a plain head goes over nothing, or replaces a settled head")]
fn a_plain_head_never_goes_over_a_pending_node() {
    let slot = slot();
    let guard = crossbeam_epoch::pin();
    let pending = slot
        .install(Shared::null(), node(1, PENDING, false), &guard)
        .unwrap();
    let _ = slot.install_plain(pending, 2_000, false, &guard);
}

/// Writers replace a slot's chain with plain heads while others install nodes over it and
/// prune, and readers walk it: every node is retired exactly once, by the replacement's walk
/// or by a prune that detached it (a node freed twice, or under a reader, shows as a node
/// whose fields disagree here, or under the AddressSanitizer run).
#[test]
fn replacing_a_chain_races_prunes_and_readers_safely() {
    const ROUNDS: u64 = 300_000;
    let slot = slot();
    let done = Arc::new(std::sync::atomic::AtomicBool::new(false));
    let readers: Vec<_> = (0..2)
        .map(|_| {
            let (slot, done) = (slot.clone(), Arc::clone(&done));
            std::thread::spawn(move || {
                while !done.load(Ordering::Acquire) {
                    let guard = crossbeam_epoch::pin();
                    let mut current = slot.head().load(Ordering::Acquire, &guard);
                    while let Some(node) = node_of(current) {
                        check_node(node);
                        current = node.older.load(Ordering::Acquire, &guard);
                    }
                }
            })
        })
        .collect();
    let versions = Arc::new(AtomicU64::new(1));
    let barrier = Arc::new(Barrier::new(2));
    // The store's prunes hold its snapshots lock; replacements take none.
    let prunes = Arc::new(parking_lot::Mutex::new(()));
    let writers: Vec<_> = (0..2u64)
        .map(|writer| {
            let (slot, versions, barrier, prunes) = (
                slot.clone(),
                Arc::clone(&versions),
                Arc::clone(&barrier),
                Arc::clone(&prunes),
            );
            std::thread::spawn(move || {
                barrier.wait();
                for round in 0..ROUNDS {
                    let guard = crossbeam_epoch::pin();
                    let head = slot.settled_head(&guard);
                    let version = versions.fetch_add(1, Ordering::Relaxed);
                    // Writer 0 replaces the chain now and then; both install nodes and prune.
                    if writer == 0 && round % 5 == 0 {
                        // A plain offset no reader of this test follows (they walk nodes).
                        let _ = slot.install_plain(head, 8 * version, false, &guard);
                    } else if slot
                        .install(head, node(version, COMMITTED, round % 2 == 0), &guard)
                        .is_ok()
                    {
                        let _prune = prunes.lock();
                        slot.prune(version.saturating_sub(3), &guard);
                    }
                }
            })
        })
        .collect();
    for writer in writers {
        writer.join().unwrap();
    }
    done.store(true, Ordering::Release);
    for reader in readers {
        reader.join().unwrap();
    }
}

/// A batch's version links to what it covers until it commits: never a pending plain head
/// over a plain one.
#[test]
#[should_panic(expected = "a plain head goes over nothing, or replaces a settled head")]
fn a_pending_plain_head_never_replaces_a_plain_head() {
    let mut entries = Entries::default();
    let slot = slot();
    let guard = crossbeam_epoch::pin();
    let first = slot
        .install_plain(Shared::null(), entries.add(1), false, &guard)
        .unwrap();
    let _ = slot.install_plain(first, entries.add(2), true, &guard);
}

/// A write replaces a plain head outright (while no snapshot is open, `plain.rs`): the chain
/// is the new entry alone, a reader at the old version finds nothing in the slot (the store's
/// plain reads then wait for the new version instead), and a writer holding the old head
/// loses its compare-and-swap.
#[test]
fn a_plain_head_replaces_a_plain_head_outright() {
    let mut entries = Entries::default();
    let slot = slot();
    let guard = crossbeam_epoch::pin();
    let first = slot
        .install_plain(Shared::null(), entries.add(1), false, &guard)
        .unwrap();
    let second_offset = entries.add(2);
    let second = slot
        .install_plain(first, second_offset, false, &guard)
        .unwrap();
    assert_eq!(plain::offset_of(second), Some(second_offset));
    assert_eq!(chain(&slot, &mut entries, &guard), [(2, true)]);
    assert!(slot.visible(1, &guard, &mut entries).unwrap().is_none());
    assert_eq!(
        slot.visible(2, &guard, &mut entries)
            .unwrap()
            .unwrap()
            .version,
        2
    );
    let third_offset = entries.add(3);
    assert!(slot
        .install_plain(first, third_offset, false, &guard)
        .is_err());
    assert_eq!(chain(&slot, &mut entries, &guard), [(2, true)]);
}

/// A batch's pending plain head: readers pass it, writers wait for it, and it resolves to
/// plain (committed) or to nothing (taken back).
#[test]
fn a_pending_plain_head_is_passed_by_readers_and_resolves_either_way() {
    let mut entries = Entries::default();
    let guard = crossbeam_epoch::pin();
    let slot = slot();
    let offset = entries.add(4);
    let pending = slot
        .install_plain(Shared::null(), offset, true, &guard)
        .unwrap();
    assert!(slot.visible(10, &guard, &mut entries).unwrap().is_none());
    assert!(node_of(pending).is_none());
    assert_eq!(slot.prune(10, &guard), 1, "a prune leaves it alone");
    slot.resolve_pending_plain(pending, true, &guard);
    assert_eq!(chain(&slot, &mut entries, &guard), [(4, true)]);
    assert_eq!(slot.settled_head(&guard), plain::head(offset));

    let aborted = self::slot();
    let pending = aborted
        .install_plain(Shared::null(), offset, true, &guard)
        .unwrap();
    // A writer waits for the batch to resolve (it is likely waiting by the time the batch
    // aborts; either way it must find the key absent).
    let waiter = {
        let slot = aborted.clone();
        std::thread::spawn(move || {
            let guard = crossbeam_epoch::pin();
            slot.settled_head(&guard).is_null()
        })
    };
    std::thread::sleep(std::time::Duration::from_millis(20));
    aborted.resolve_pending_plain(pending, false, &guard);
    assert!(
        waiter.join().unwrap(),
        "the writer saw the key absent again"
    );
    assert!(chain(&aborted, &mut entries, &guard).is_empty());
}

/// Two writers' first installs race: one plain, one a node. Exactly one wins, and the
/// chain is the winner alone.
#[test]
fn racing_first_installs_leave_one_version() {
    let mut entries = Entries::default();
    let offset = entries.add(1);
    for _ in 0..200 {
        let slot = slot();
        let barrier = Arc::new(Barrier::new(2));
        let wins: usize = (1..=2u64)
            .map(|version| {
                let slot = slot.clone();
                let barrier = Arc::clone(&barrier);
                std::thread::spawn(move || {
                    let guard = crossbeam_epoch::pin();
                    barrier.wait();
                    let installed = if version == 1 {
                        slot.install_plain(Shared::null(), offset, false, &guard)
                    } else {
                        slot.install(Shared::null(), node(version, COMMITTED, true), &guard)
                    };
                    usize::from(installed.is_ok())
                })
            })
            .collect::<Vec<_>>()
            .into_iter()
            .map(|thread| thread.join().unwrap())
            .sum();
        assert_eq!(wins, 1);
        let guard = crossbeam_epoch::pin();
        assert_eq!(chain(&slot, &mut entries, &guard).len(), 1);
    }
}

/// A writer replaces and prunes one slot's versions as fast as it can while readers follow
/// the head: a node freed while a reader still held it would show that reader a node whose
/// fields disagree, or a version going backwards.
#[test]
fn readers_never_see_a_node_freed_under_them() {
    const VERSIONS: u64 = 20_000;
    let slot = slot();
    let newest = Arc::new(AtomicU64::new(0));
    let readers: Vec<_> = (0..2)
        .map(|_| {
            let slot = slot.clone();
            let newest = Arc::clone(&newest);
            std::thread::spawn(move || {
                let mut last_seen = 0;
                while newest.load(Ordering::Acquire) < VERSIONS {
                    let guard = crossbeam_epoch::pin();
                    let Some(head) = node_of(slot.head().load(Ordering::Acquire, &guard)) else {
                        continue;
                    };
                    let version = head.version;
                    assert!(version >= last_seen, "version {version} after {last_seen}");
                    last_seen = version;
                    for _ in 0..8 {
                        check_node(head);
                        assert_eq!(head.version, version);
                    }
                }
            })
        })
        .collect();
    for version in 1..=VERSIONS {
        let guard = crossbeam_epoch::pin();
        let head = slot.head().load(Ordering::Acquire, &guard);
        slot.install(head, node(version, COMMITTED, version % 3 == 0), &guard)
            .unwrap();
        slot.prune(version, &guard);
        newest.store(version, Ordering::Release);
    }
    for reader in readers {
        reader.join().unwrap();
    }
}

#[test]
fn dropping_a_slot_frees_its_nodes_and_not_its_plain_tail() {
    // Leaks, double frees and frees of a plain head show under the AddressSanitizer run.
    let guard = crossbeam_epoch::pin();
    let slot = slot();
    let mut head = slot
        .install_plain(Shared::null(), 1_001, false, &guard)
        .unwrap();
    for version in 2..=4 {
        head = slot
            .install(head, node(version, COMMITTED, true), &guard)
            .unwrap();
    }
    assert_eq!(slot.reference_count(), 1);
    drop(slot);
    let lost = self::slot();
    let winner = Owned::new(node(1, COMMITTED, true)).into_shared(&guard);
    lost.head().store(winner, Ordering::Release);
    assert!(lost
        .install(Shared::null(), node(2, COMMITTED, true), &guard)
        .is_err());
    drop(lost);
}

#[test]
fn a_lookup_prefetches_where_the_keys_last_value_was_written_in_any_log_window() {
    let index = Index::new();
    let key = b"\0\0\0\0\0\0\0\x01item";
    let offsets_seen = |index: &Index| {
        let mut offsets = Vec::new();
        let guard = crossbeam_epoch::pin();
        let restored = index.ready_for(key).unwrap();
        let found = index
            .get_prefetching(restored, key, &guard, |offset| offsets.push(offset))
            .is_some();
        (found, offsets)
    };
    assert_eq!(offsets_seen(&index), (false, vec![]));
    index.get_or_insert(key).unwrap();
    assert_eq!(offsets_seen(&index), (true, vec![]), "no value written yet");
    // A hint keeps the value's cache line, so the offset comes back rounded down to it.
    index.note_value_location(key, None, ValueLocation::new(64 * 1_000 + 17, 150));
    assert_eq!(offsets_seen(&index), (true, vec![64 * 1_000]));
    // Past 2^32 lines (256 GiB of log) the reader completes hints with the newest window.
    let far = (5u64 << 38) + 64 * 3 + 5;
    index.note_value_location(key, None, ValueLocation::new(far, 150));
    assert_eq!(offsets_seen(&index), (true, vec![far - 5]));
    // A writer that found the key's bucket sets the hint through it.
    let guard = crossbeam_epoch::pin();
    let (_, cell) = index
        .get_or_insert_with_hint_cell(key, &guard)
        .expect("an index made by writes has every shard");
    index.note_value_location(key, Some(cell), ValueLocation::new(64 * 7, 150));
    assert_eq!(offsets_seen(&index), (true, vec![(5u64 << 38) + 64 * 7]));
}

/// The length every node records (`VersionNode::chain_length`) never falls below the chain
/// really below it, through any mix of installs and prunes: `maybe_prune` trusts it to say
/// when a chain has grown to 4. Random installs and prunes at random horizons (the way
/// `maybe_prune` calls them), checking every node of the chain after each step.
#[test]
fn a_nodes_recorded_chain_length_bounds_its_chain_through_installs_and_prunes() {
    fn real_length<'g>(mut current: Shared<'g, VersionNode>, guard: &'g Guard) -> usize {
        let mut length = 0;
        while let Some(node) = unsafe { current.as_ref() } {
            length += 1;
            current = node.older.load(Ordering::Acquire, guard);
        }
        length
    }
    let mut state = 0x9E37_79B9_7F4A_7C15u64;
    let mut random = move |bound: u64| {
        state ^= state << 13;
        state ^= state >> 7;
        state ^= state << 17;
        state % bound
    };
    let slot = slot();
    let guard = crossbeam_epoch::pin();
    let mut pruned_to_one = 0;
    for version in 1..=3_000u64 {
        let head = slot.head().load(Ordering::Acquire, &guard);
        let installed = slot
            .install(head, node(version, COMMITTED, false), &guard)
            .unwrap();
        if random(3) == 0 {
            // A horizon anywhere from far behind (an old snapshot) to the newest version.
            let keep_from = version.saturating_sub(random(40));
            let kept = slot.prune(keep_from, &guard);
            // SAFETY: installed above under `guard`.
            unsafe { installed.deref() }.note_pruned_chain(kept);
            pruned_to_one += usize::from(kept == 1);
        }
        let mut current = slot.head().load(Ordering::Acquire, &guard);
        while let Some(node) = unsafe { current.as_ref() } {
            let real = real_length(current, &guard);
            assert!(
                usize::from(node.chain_length()) >= real.min(255),
                "version {}: records {} with {real} below and including it",
                node.version,
                node.chain_length()
            );
            current = node.older.load(Ordering::Acquire, &guard);
        }
    }
    assert!(pruned_to_one > 0, "some prunes cut the chain to its head");
}
