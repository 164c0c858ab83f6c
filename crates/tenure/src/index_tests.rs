//! The slot's room for a node: which installs take it, and that it is handed out again only
//! once nothing can reach its last node.

use std::sync::atomic::AtomicU64;
use std::sync::{Arc, Barrier};

use crossbeam_epoch::{Collector, LocalHandle};

use super::*;

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

/// Advances `handle`'s private collector until the room is free again. With one participant
/// each flush can move the epoch on, and two moves run every callback deferred before them.
fn collect_until_room_is_free(slot: &ItemSlot, handle: &LocalHandle) {
    for _ in 0..64 {
        if !slot.room_is_taken() {
            return;
        }
        handle.pin().flush();
    }
    panic!("the room was not released after 64 collections");
}

#[test]
fn the_first_install_takes_the_room_and_a_retired_room_is_taken_again() {
    let collector = Collector::new();
    let handle = collector.register();
    let slot = slot();
    let guard = handle.pin();
    let first = slot
        .install(Shared::null(), node(1, COMMITTED, true), &guard)
        .unwrap();
    assert!(slot.is_room_node(first));
    let second = slot
        .install(first, node(2, COMMITTED, false), &guard)
        .unwrap();
    assert!(!slot.is_room_node(second), "the room still holds version 1");
    slot.prune(2, &guard);
    assert!(
        slot.room_is_taken(),
        "a guard that may still read version 1 is pinned"
    );
    drop(guard);
    collect_until_room_is_free(&slot, &handle);

    let guard = handle.pin();
    let head = slot.head().load(Ordering::Acquire, &guard);
    let third = slot
        .install(head, node(3, COMMITTED, false), &guard)
        .unwrap();
    assert!(slot.is_room_node(third));
    let versions: Vec<Version> = std::iter::successors(
        // SAFETY: reachable under `guard`.
        unsafe { slot.head().load(Ordering::Acquire, &guard).as_ref() },
        |node| unsafe { node.older.load(Ordering::Acquire, &guard).as_ref() },
    )
    .map(|node| node.version)
    .collect();
    assert_eq!(versions, [3, 2]);
    assert_eq!(slot.visible(2, &guard).map(|node| node.version), Some(2));
}

#[test]
fn an_install_that_loses_its_race_gives_the_room_back_at_once() {
    let collector = Collector::new();
    let handle = collector.register();
    let slot = slot();
    let guard = handle.pin();
    let first = slot
        .install(Shared::null(), node(1, COMMITTED, false), &guard)
        .unwrap();
    slot.uninstall(first, &guard);
    drop(guard);
    collect_until_room_is_free(&slot, &handle);

    let guard = handle.pin();
    let winner = Owned::new(node(2, COMMITTED, false)).into_shared(&guard);
    slot.head().store(winner, Ordering::Release);
    // Expects an empty slot, claims the room, loses the exchange: the room is free again
    // without waiting for the epoch, since no one ever saw the node in it.
    assert!(slot
        .install(Shared::null(), node(3, COMMITTED, true), &guard)
        .is_err());
    assert!(!slot.room_is_taken());
    let third = slot
        .install(winner, node(3, COMMITTED, true), &guard)
        .unwrap();
    assert!(slot.is_room_node(third));
}

#[test]
fn racing_first_installs_leave_one_node_and_a_consistent_room() {
    for _ in 0..200 {
        let slot = slot();
        let barrier = Arc::new(Barrier::new(2));
        let wins: usize = (1..=2)
            .map(|version| {
                let slot = slot.clone();
                let barrier = Arc::clone(&barrier);
                std::thread::spawn(move || {
                    let guard = crossbeam_epoch::pin();
                    barrier.wait();
                    usize::from(
                        slot.install(Shared::null(), node(version, COMMITTED, true), &guard)
                            .is_ok(),
                    )
                })
            })
            .collect::<Vec<_>>()
            .into_iter()
            .map(|thread| thread.join().unwrap())
            .sum();
        assert_eq!(wins, 1);
        let guard = crossbeam_epoch::pin();
        let head = slot.head().load(Ordering::Acquire, &guard);
        // SAFETY: reachable under `guard`.
        assert!(unsafe { head.deref() }
            .older
            .load(Ordering::Acquire, &guard)
            .is_null());
        assert_eq!(
            slot.room_is_taken(),
            slot.is_room_node(head),
            "the room is taken exactly when the winner's node is in it"
        );
    }
}

/// A writer replaces and prunes one slot's versions as fast as it can while readers follow
/// the head: a room handed out again while a reader still held its node would show that
/// reader a node whose fields disagree, or a version going backwards.
#[test]
fn readers_never_see_the_room_reused_under_them() {
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
                    let Some(head) =
                        (unsafe { slot.head().load(Ordering::Acquire, &guard).as_ref() })
                    else {
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
    let mut inline_installs = 0;
    for version in 1..=VERSIONS {
        let guard = crossbeam_epoch::pin();
        let head = slot.head().load(Ordering::Acquire, &guard);
        let installed = slot
            .install(head, node(version, COMMITTED, version % 3 == 0), &guard)
            .unwrap();
        inline_installs += usize::from(slot.is_room_node(installed));
        slot.prune(version, &guard);
        newest.store(version, Ordering::Release);
    }
    for reader in readers {
        reader.join().unwrap();
    }
    assert!(inline_installs > 0);
}

#[test]
fn dropping_a_slot_frees_its_chain_and_its_room() {
    // Leaks and double frees show under the AddressSanitizer run of `.ci/run`.
    let guard = crossbeam_epoch::pin();
    let slot = slot();
    let mut head = Shared::null();
    for version in 1..=4 {
        head = slot
            .install(head, node(version, COMMITTED, true), &guard)
            .unwrap();
    }
    assert_eq!(slot.reference_count(), 1);
    drop(slot);
    let claimed_but_lost = self::slot();
    let winner = Owned::new(node(1, COMMITTED, true)).into_shared(&guard);
    claimed_but_lost.head().store(winner, Ordering::Release);
    assert!(claimed_but_lost
        .install(Shared::null(), node(2, COMMITTED, true), &guard)
        .is_err());
    drop(claimed_but_lost);
}

#[test]
fn a_lookup_prefetches_where_the_keys_last_value_was_written_in_any_log_window() {
    let index = Index::new();
    let key = b"\0\0\0\0\0\0\0\x01item";
    let offsets_seen = |index: &Index| {
        let mut offsets = Vec::new();
        let guard = crossbeam_epoch::pin();
        let found = index
            .get_prefetching(key, &guard, |offset| offsets.push(offset))
            .is_some();
        (found, offsets)
    };
    assert_eq!(offsets_seen(&index), (false, vec![]));
    index.get_or_insert(key);
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
        .get_with_hint_cell(key, &guard)
        .expect("the key has a slot");
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
