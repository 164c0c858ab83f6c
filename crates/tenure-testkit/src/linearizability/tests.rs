//! Hand-built histories for the checker: what must and must not linearize.
use super::*;

/// Builds histories by hand: `op(thread, invoke, ret, call, response)` on key "k".
fn op(thread: usize, invoke: u64, ret: u64, call: Call, response: Response) -> Operation {
    Operation {
        key: b"k".to_vec(),
        thread,
        invoke,
        ret,
        call,
        response,
    }
}

fn put(value: &str) -> Call {
    Call::Put {
        value: value.as_bytes().to_vec(),
    }
}

fn put_if(value: &str, if_match: Version) -> Call {
    Call::PutIfMatch {
        value: value.as_bytes().to_vec(),
        if_match,
    }
}

fn found(value: &str, version: Version) -> Response {
    Response::Found {
        value: value.as_bytes().to_vec(),
        version,
    }
}

fn written(version: Version) -> Response {
    Response::Written { version }
}

fn on_key(key: &str, mut operation: Operation) -> Operation {
    operation.key = key.as_bytes().to_vec();
    operation
}

#[test]
fn lease_rules_are_part_of_the_specification() {
    let acquire = |lease| Call::AcquireLease { lease };
    let refused = |code: &str| Response::Refused(code.to_owned());
    let sequential = [
        op(0, 1, 2, acquire(0), Response::NotFound),
        op(0, 3, 4, put("a"), written(1)),
        op(0, 5, 6, acquire(0), Response::LeaseGranted),
        op(1, 7, 8, acquire(1), refused("LeaseAlreadyPresent")),
        op(1, 9, 10, put("b"), refused("LeaseIdMissing")),
        op(1, 11, 12, put_if("b", 1), refused("LeaseIdMissing")),
        op(
            1,
            13,
            14,
            Call::ReleaseLease { lease: 1 },
            refused("LeaseIdMismatchWithLeaseOperation"),
        ),
        op(
            0,
            15,
            16,
            Call::PutWithLease {
                value: b"c".to_vec(),
                lease: 0,
            },
            written(2),
        ),
        op(
            1,
            17,
            18,
            Call::DeleteWithLease { lease: 1 },
            refused("LeaseIdMismatchWithBlobOperation"),
        ),
        op(
            0,
            19,
            20,
            Call::ReleaseLease { lease: 0 },
            Response::LeaseReleased,
        ),
        op(
            1,
            21,
            22,
            Call::PutWithLease {
                value: b"d".to_vec(),
                lease: 1,
            },
            refused("LeaseNotPresentWithBlobOperation"),
        ),
        op(1, 23, 24, acquire(1), Response::LeaseGranted),
        op(
            1,
            25,
            26,
            Call::DeleteWithLease { lease: 1 },
            Response::Deleted,
        ),
        // The delete ended the lease: a plain put creates the item again.
        op(0, 27, 28, put("e"), written(3)),
    ];
    assert!(check(&sequential).is_ok());
    // Two holders at once, or a write without the id while leased, have no linearization.
    let two_holders = [
        op(0, 1, 2, put("a"), written(1)),
        op(0, 3, 4, acquire(0), Response::LeaseGranted),
        op(1, 5, 6, acquire(1), Response::LeaseGranted),
    ];
    assert!(check(&two_holders).is_err());
    let unleased_write = [
        op(0, 1, 2, put("a"), written(1)),
        op(0, 3, 4, acquire(0), Response::LeaseGranted),
        op(1, 5, 6, put("b"), written(2)),
    ];
    assert!(check(&unleased_write).is_err());
    // Overlapping acquires: either may win, but only one.
    let racing = [
        op(0, 1, 2, put("a"), written(1)),
        op(0, 3, 8, acquire(0), Response::LeaseGranted),
        op(1, 4, 7, acquire(1), refused("LeaseAlreadyPresent")),
    ];
    assert!(check(&racing).is_ok());
}

#[test]
fn an_empty_history_and_a_sequential_one_are_linearizable() {
    assert!(check(&[]).is_ok());
    let history = [
        op(0, 1, 2, Call::Get, Response::NotFound),
        op(0, 3, 4, put("a"), written(5)),
        op(1, 5, 6, Call::Get, found("a", 5)),
        op(1, 7, 8, put_if("b", 5), written(9)),
        op(0, 9, 10, put_if("c", 5), Response::ConditionNotMet),
        op(0, 11, 12, Call::Get, found("b", 9)),
        op(1, 13, 14, Call::Delete, Response::Deleted),
        op(0, 15, 16, Call::Delete, Response::NotFound),
        op(0, 17, 18, put_if("d", 9), Response::ConditionNotMet),
        op(1, 19, 20, Call::Get, Response::NotFound),
    ];
    check(&history).unwrap();
}

#[test]
fn a_stale_read_after_a_completed_write_is_rejected() {
    let history = [
        op(0, 1, 2, put("a"), written(1)),
        op(0, 3, 4, put("b"), written(2)),
        op(1, 5, 6, Call::Get, found("a", 1)),
    ];
    let violation = check(&history).unwrap_err();
    assert_eq!(violation.key, b"k");
    assert_eq!(violation.longest_prefix, vec![0, 1]);
    let report = violation.to_string();
    assert!(report.contains("found \"a\" v1"), "{report}");
}

#[test]
fn a_read_of_nothing_after_a_completed_write_is_rejected() {
    let history = [
        op(0, 1, 2, put("a"), written(1)),
        op(1, 3, 4, Call::Get, Response::NotFound),
    ];
    assert!(check(&history).is_err());
}

#[test]
fn a_read_overlapping_a_write_may_see_either_state() {
    for response in [Response::NotFound, found("a", 1)] {
        let history = [
            op(0, 1, 4, put("a"), written(1)),
            op(1, 2, 3, Call::Get, response),
        ];
        check(&history).unwrap();
    }
    // But not a value nobody wrote, nor the right value with the wrong version.
    for response in [found("z", 1), found("a", 2)] {
        let history = [
            op(0, 1, 4, put("a"), written(1)),
            op(1, 2, 3, Call::Get, response),
        ];
        assert!(check(&history).is_err());
    }
}

#[test]
fn overlapping_operations_are_accepted_in_either_order() {
    // Two overlapping puts: a read afterwards may see either, as long as the one it sees
    // is the one with the higher version (it came last).
    for (first, second) in [(1, 2), (2, 1)] {
        let last = if first > second { "a" } else { "b" };
        let history = [
            op(0, 1, 4, put("a"), written(first)),
            op(1, 2, 3, put("b"), written(second)),
            op(2, 5, 6, Call::Get, found(last, first.max(second))),
        ];
        check(&history).unwrap();
        // Reading the lower version afterwards is a lost update.
        let stale = if first > second { "b" } else { "a" };
        let history = [
            op(0, 1, 4, put("a"), written(first)),
            op(1, 2, 3, put("b"), written(second)),
            op(2, 5, 6, Call::Get, found(stale, first.min(second))),
        ];
        assert!(check(&history).is_err());
    }
    // A delete overlapping a put: either order, as the read afterwards says.
    for response in [Response::NotFound, found("a", 2)] {
        let history = [
            op(0, 1, 2, put("x"), written(1)),
            op(0, 3, 6, put("a"), written(2)),
            op(1, 4, 5, Call::Delete, Response::Deleted),
            op(2, 7, 8, Call::Get, response),
        ];
        check(&history).unwrap();
    }
    // Two overlapping conditional puts on one ETag: either may be the winner.
    for (b, c, winner) in [
        (written(2), Response::ConditionNotMet, found("b", 2)),
        (Response::ConditionNotMet, written(3), found("c", 3)),
    ] {
        let history = [
            op(0, 1, 2, put("a"), written(1)),
            op(1, 3, 8, put_if("b", 1), b),
            op(2, 4, 7, put_if("c", 1), c),
            op(0, 9, 10, Call::Get, winner),
        ];
        check(&history).unwrap();
    }
}

#[test]
fn two_successful_if_match_writes_on_one_etag_are_rejected() {
    let history = [
        op(0, 1, 2, put("a"), written(1)),
        op(1, 3, 8, put_if("b", 1), written(2)),
        op(2, 4, 7, put_if("c", 1), written(3)),
    ];
    assert!(check(&history).is_err());
    // Nor one after the other.
    let history = [
        op(0, 1, 2, put("a"), written(1)),
        op(1, 3, 4, put_if("b", 1), written(2)),
        op(2, 5, 6, put_if("c", 1), written(3)),
    ];
    assert!(check(&history).is_err());
}

#[test]
fn a_failed_condition_must_have_seen_another_state() {
    // Nothing else happened: the ETag matched, so ConditionNotMet is wrong.
    let history = [
        op(0, 1, 2, put("a"), written(1)),
        op(1, 3, 4, put_if("b", 1), Response::ConditionNotMet),
    ];
    assert!(check(&history).is_err());
    // A concurrent write explains it.
    let history = [
        op(0, 1, 2, put("a"), written(1)),
        op(1, 3, 6, put_if("b", 1), Response::ConditionNotMet),
        op(2, 4, 5, put("c"), written(2)),
    ];
    check(&history).unwrap();
    // if_match on a missing item fails (docs/spec.md §3); succeeding would be wrong.
    let history = [op(0, 1, 2, put_if("b", 7), written(8))];
    assert!(check(&history).is_err());
    let history = [op(0, 1, 2, put_if("b", 7), Response::ConditionNotMet)];
    check(&history).unwrap();
}

#[test]
fn a_failed_condition_then_a_read_of_the_old_state_is_rejected() {
    // The failed conditional write saw the new value, so a read after it must too, even
    // though the write that made the new value had not returned yet.
    let history = [
        op(0, 1, 2, put("a"), written(1)),
        op(1, 3, 20, put("b"), written(2)),
        op(2, 4, 5, put_if("c", 1), Response::ConditionNotMet),
        op(3, 6, 7, Call::Get, found("a", 1)),
    ];
    assert!(check(&history).is_err());
    // The same with a delete that found nothing.
    let history = [
        op(0, 1, 2, put("a"), written(1)),
        op(1, 3, 20, Call::Delete, Response::Deleted),
        op(2, 4, 5, Call::Delete, Response::NotFound),
        op(3, 6, 7, Call::Get, found("a", 1)),
    ];
    assert!(check(&history).is_err());
}

#[test]
fn versions_must_increase_along_the_order() {
    // A write that returned before another was invoked took a smaller version.
    let history = [
        op(0, 1, 2, put("a"), written(5)),
        op(1, 3, 4, put("b"), written(3)),
    ];
    assert!(check(&history).is_err());
    // Also across a delete.
    let history = [
        op(0, 1, 2, put("a"), written(5)),
        op(0, 3, 4, Call::Delete, Response::Deleted),
        op(1, 5, 6, put("b"), written(3)),
    ];
    assert!(check(&history).is_err());
}

#[test]
fn deletes_and_errors_follow_the_specification() {
    let history = [op(0, 1, 2, Call::Delete, Response::Deleted)];
    assert!(check(&history).is_err());
    let history = [
        op(0, 1, 2, put("a"), written(1)),
        op(1, 3, 4, Call::Delete, Response::NotFound),
    ];
    assert!(check(&history).is_err());
    let history = [op(0, 1, 2, put("a"), Response::Failed("Io".into()))];
    assert!(check(&history).is_err());
    let history = [op(0, 1, 2, put("a"), Response::ConditionNotMet)];
    assert!(check(&history).is_err());
    let history = [op(0, 1, 2, Call::Get, written(1))];
    assert!(check(&history).is_err());
}

#[test]
fn keys_are_checked_independently() {
    let history = [
        on_key("x", op(0, 1, 2, put("a"), written(1))),
        on_key("y", op(0, 3, 4, put("b"), written(2))),
        on_key("x", op(1, 5, 6, Call::Get, found("a", 1))),
        on_key("y", op(1, 7, 8, Call::Get, found("b", 2))),
    ];
    check(&history).unwrap();
    let history = [
        on_key("x", op(0, 1, 2, put("a"), written(1))),
        on_key("y", op(1, 3, 4, Call::Get, found("a", 1))),
    ];
    let violation = check(&history).unwrap_err();
    assert_eq!(violation.key, b"y");
}

#[test]
fn many_overlapping_operations_are_searched_quickly() {
    // 8 threads, 40 rounds: each round every thread puts concurrently, then every thread
    // reads the winner — the last version of the round. 640 operations on one key.
    let mut history = Vec::new();
    let mut clock = 0;
    let mut version = 0;
    for round in 0..40 {
        let start = clock;
        for thread in 0..8 {
            version += 1;
            history.push(op(
                thread,
                start + thread as u64,
                start + 20 - thread as u64,
                put(&format!("r{round}t{thread}")),
                written(version),
            ));
        }
        let last = format!("r{round}t7");
        for thread in 0..8 {
            history.push(op(
                thread,
                start + 21 + thread as u64,
                start + 40 - thread as u64,
                Call::Get,
                found(&last, version),
            ));
        }
        clock += 41;
    }
    let started = std::time::Instant::now();
    check(&history).unwrap();
    // A stale read at the end of the last round cannot be explained.
    let last = history.len() - 1;
    history[last].response = found("r39t6", version - 1);
    assert!(check(&history).is_err());
    assert!(started.elapsed() < std::time::Duration::from_secs(5));
}
