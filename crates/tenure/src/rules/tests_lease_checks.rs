//! docs/spec.md §4 data-operation table (6 requests × 5 states) and docs/spec.md §5 container rules
//! (2 operations × 3 id cases × 5 states), every cell a named row; plus the parsing and range
//! checks of lease ids, durations, break periods and holder labels.

use crate::error::{Error, ErrorCode, Result};
use crate::rules::lease::*;
use crate::rules::tests_lease::{
    acquire, break_with, context, record_in, A, B, NOW, SECOND, STATES,
};

fn invalid_argument_name<T: std::fmt::Debug>(result: Result<T>) -> &'static str {
    match result {
        Err(Error::InvalidArgument { argument, .. }) => argument,
        other => panic!("expected InvalidArgument, got {other:?}"),
    }
}

#[test]
fn lease_id_text_forms_compare_by_value() {
    let expected = LeaseId(0x3f2504e0_4f89_11d3_9a0c_0305e82c3301);
    for text in [
        "3f2504e0-4f89-11d3-9a0c-0305e82c3301",
        "3F2504E0-4F89-11D3-9A0C-0305E82C3301",
        "3f2504e04f8911d39a0c0305e82c3301",
        "{3f2504e0-4f89-11d3-9a0c-0305e82c3301}",
        "{3F2504E04F8911D39A0C0305E82C3301}",
    ] {
        assert_eq!(
            LeaseId::parse("lease_id", text).unwrap(),
            expected,
            "{text}"
        );
    }
    assert_eq!(expected.to_string(), "3f2504e0-4f89-11d3-9a0c-0305e82c3301");
    assert_eq!(
        LeaseId(1).to_string(),
        "00000000-0000-0000-0000-000000000001"
    );
    assert_eq!(
        LeaseId::parse("x", &LeaseId(u128::MAX).to_string()).unwrap(),
        LeaseId(u128::MAX)
    );
}

#[test]
fn malformed_lease_ids_name_the_argument() {
    for bad in [
        "",
        "3f2504e0-4f89-11d3-9a0c-0305e82c330",
        "3f2504e0-4f89-11d3-9a0c-0305e82c33011",
        "3f2504e04f89-11d3-9a0c-0305e82c3301-",
        "3f2504e0-4f89-11d3-9a0c-0305e82c330g",
        "+f2504e04f8911d39a0c0305e82c3301",
        "{3f2504e0-4f89-11d3-9a0c-0305e82c3301",
        "3f2504e0-4f89-11d3-9a0c-0305e82c3301}",
        "urn:uuid:3f2504e0-4f89-11d3-9a0c-0305e82c3301",
        "3f2504e0-4f89-11d3-9a0c-0305e82c33é",
    ] {
        assert_eq!(
            invalid_argument_name(LeaseId::parse("proposed_lease_id", bad)),
            "proposed_lease_id",
            "{bad:?}"
        );
    }
}

#[test]
fn durations_are_15_to_60_seconds_or_infinite() {
    assert_eq!(
        LeaseDuration::from_seconds(-1).unwrap(),
        LeaseDuration::Infinite
    );
    assert_eq!(
        LeaseDuration::from_seconds(15).unwrap(),
        LeaseDuration::Fixed { seconds: 15 }
    );
    assert_eq!(
        LeaseDuration::from_seconds(60).unwrap(),
        LeaseDuration::Fixed { seconds: 60 }
    );
    for bad in [14, 61, 0, -2, i64::MIN, i64::MAX] {
        assert_eq!(
            invalid_argument_name(LeaseDuration::from_seconds(bad)),
            "duration",
            "{bad}"
        );
    }
    assert_eq!(invalid_argument_name(LeaseDuration::fixed(14)), "duration");
    assert_eq!(
        LeaseDuration::Fixed { seconds: 15 }.micros(),
        Some(15 * SECOND)
    );
    assert_eq!(LeaseDuration::Infinite.micros(), None);
}

#[test]
fn break_periods_are_0_to_60_seconds() {
    assert_eq!(break_period_seconds(0).unwrap(), 0);
    assert_eq!(break_period_seconds(60).unwrap(), 60);
    for bad in [61, -1, i64::MAX] {
        assert_eq!(
            invalid_argument_name(break_period_seconds(bad)),
            "break_period",
            "{bad}"
        );
    }
}

#[test]
fn arguments_are_checked_before_the_state() {
    let leased = record_in(LeaseState::Leased);
    let too_short = acquire(Some(A), 5);
    assert_eq!(
        invalid_argument_name(apply_lease_action(leased.as_ref(), too_short, context())),
        "duration"
    );
    let too_long_break = break_with(Some(61));
    assert_eq!(
        invalid_argument_name(apply_lease_action(None, too_long_break, context())),
        "break_period"
    );
    let long_holder = LeaseAction::Acquire {
        proposed_id: None,
        duration: LeaseDuration::Infinite,
        holder: Some("h".repeat(MAX_HOLDER_BYTES + 1)),
    };
    assert_eq!(
        invalid_argument_name(apply_lease_action(None, long_holder, context())),
        "holder"
    );
    let longest_holder = LeaseAction::Acquire {
        proposed_id: None,
        duration: LeaseDuration::Infinite,
        holder: Some("h".repeat(MAX_HOLDER_BYTES)),
    };
    assert!(apply_lease_action(None, longest_holder, context()).is_ok());
}

/// The request rows of the docs/spec.md §4 data-operation table.
#[rustfmt::skip]
fn data_operation_table() -> Vec<(&'static str, Option<LeaseId>, Access, [Result<LeaseEffect, ErrorCode>; 5])> {
    use ErrorCode::*;
    use LeaseEffect::{Clear, Keep};
    // Columns: Available, Leased(A), Breaking(A), Broken(A), Expired(A).
    vec![
        ("write with A", Some(A), Access::Write,
            [Err(LeaseNotPresentWithBlobOperation), Ok(Keep), Ok(Keep), Err(LeaseLost), Err(LeaseLost)]),
        ("write with B", Some(B), Access::Write,
            [Err(LeaseNotPresentWithBlobOperation), Err(LeaseIdMismatchWithBlobOperation),
             Err(LeaseIdMismatchWithBlobOperation), Err(LeaseLost), Err(LeaseLost)]),
        ("write, no lease id", None, Access::Write,
            [Ok(Keep), Err(LeaseIdMissing), Err(LeaseIdMissing), Ok(Clear), Ok(Clear)]),
        ("read with A", Some(A), Access::Read,
            [Err(LeaseNotPresentWithBlobOperation), Ok(Keep), Ok(Keep), Err(LeaseLost), Err(LeaseLost)]),
        ("read with B", Some(B), Access::Read,
            [Err(LeaseNotPresentWithBlobOperation), Err(LeaseIdMismatchWithBlobOperation),
             Err(LeaseIdMismatchWithBlobOperation), Err(LeaseLost), Err(LeaseLost)]),
        ("read, no lease id", None, Access::Read,
            [Ok(Keep), Ok(Keep), Ok(Keep), Ok(Keep), Ok(Keep)]),
    ]
}

#[test]
fn data_operation_table_every_cell() {
    let mut failures = Vec::new();
    for (row, given, access, expected_per_state) in data_operation_table() {
        for (column, expected) in STATES.into_iter().zip(expected_per_state) {
            let record = record_in(column);
            let result = check_lease_for_item_operation(record.as_ref(), NOW, given, access);
            let actual = result.as_ref().copied().map_err(Error::code);
            let status_ok = result
                .as_ref()
                .err()
                .is_none_or(|error| error.status() == 412);
            if actual != expected || !status_ok {
                failures.push(format!(
                    "{row} on {column:?}: expected {expected:?}, got {result:?}"
                ));
            }
        }
    }
    assert!(
        failures.is_empty(),
        "data-operation cells:\n{}",
        failures.join("\n")
    );
}

#[test]
fn put_with_a_lease_id_on_a_missing_item_is_lease_not_present() {
    let error = check_lease_for_item_operation(None, NOW, Some(A), Access::Write).unwrap_err();
    assert_eq!(error.code(), ErrorCode::LeaseNotPresentWithBlobOperation);
}

#[test]
#[rustfmt::skip]
fn container_lease_rules_every_cell() {
    use ErrorCode::*;
    let ok = Ok(());
    // Columns: Available, Leased(A), Breaking(A), Broken(A), Expired(A).
    let id_a = [Err(LeaseNotPresentWithContainerOperation), ok, ok, Err(LeaseLost), Err(LeaseLost)];
    let id_b = [
        Err(LeaseNotPresentWithContainerOperation),
        Err(LeaseIdMismatchWithContainerOperation),
        Err(LeaseIdMismatchWithContainerOperation),
        Err(LeaseLost),
        Err(LeaseLost),
    ];
    let table: [(&str, ContainerOperation, Option<LeaseId>, [Result<(), ErrorCode>; 5]); 6] = [
        ("delete container, no id", ContainerOperation::Delete, None,
            [ok, Err(LeaseIdMissing), Err(LeaseIdMissing), ok, ok]),
        ("delete container with A", ContainerOperation::Delete, Some(A), id_a),
        ("delete container with B", ContainerOperation::Delete, Some(B), id_b),
        ("other container operation, no id", ContainerOperation::Other, None, [ok; 5]),
        ("other container operation with A", ContainerOperation::Other, Some(A), id_a),
        ("other container operation with B", ContainerOperation::Other, Some(B), id_b),
    ];
    let mut failures = Vec::new();
    for (row, operation, given, expected_per_state) in table {
        for (column, expected) in STATES.into_iter().zip(expected_per_state) {
            let record = record_in(column);
            let result = check_lease_for_container_operation(record.as_ref(), NOW, given, operation);
            let status_ok = result.as_ref().err().is_none_or(|error| error.status() == 412);
            if result.as_ref().map_err(Error::code) != expected.as_ref().map_err(|code| *code) || !status_ok {
                failures.push(format!("{row} on {column:?}: expected {expected:?}, got {result:?}"));
            }
        }
    }
    assert!(failures.is_empty(), "container cells:\n{}", failures.join("\n"));
}
