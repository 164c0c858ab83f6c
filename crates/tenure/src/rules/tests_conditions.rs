//! docs/spec.md §3 (conditions), §6 (`if_version`, `get_if_newer`) and §7 as tables: one named row per
//! rule. Every refusal of an existing item must carry its current ETag, every other none; the
//! runner checks that for every row.

use crate::clock::Timestamp;
use crate::error::{Error, ErrorCode, Result};
use crate::rules::conditions::*;
use crate::rules::etag::{ETagArg, ETagList};
use crate::types::ETag;

const CURRENT: ETag = ETag(0x10);
const STALE: ETag = ETag(0x05);
const OTHER: ETag = ETag(0x07);
const LAST_MODIFIED: Timestamp = 5_000_000;
const BEFORE: Timestamp = LAST_MODIFIED - 1;
const AFTER: Timestamp = LAST_MODIFIED + 1;

const PRESENT: Option<ItemFacts> = Some(ItemFacts {
    etag: CURRENT,
    version: 0x10,
    last_modified: LAST_MODIFIED,
});
const MISSING: Option<ItemFacts> = None;

fn list(etags: &[ETagArg]) -> ETagList {
    etags.into()
}

fn if_match_list(etags: &[ETagArg]) -> Conditions {
    Conditions {
        if_match: list(etags),
        ..Conditions::default()
    }
}

fn if_none_match_list(etags: &[ETagArg]) -> Conditions {
    Conditions {
        if_none_match: list(etags),
        ..Conditions::default()
    }
}

/// Checks one row: the code, and that the current ETag is reported exactly when the item exists
/// and the refusal is not an argument error.
fn row_failure(
    name: &str,
    result: Result<()>,
    item: Option<ItemFacts>,
    expected: Option<ErrorCode>,
) -> Option<String> {
    let actual = result.as_ref().err().map(Error::code);
    if actual != expected {
        return Some(format!("{name}: expected {expected:?}, got {result:?}"));
    }
    if let Err(error) = &result {
        let expected_etag = match error.code() {
            ErrorCode::InvalidArgument => None,
            _ => item.map(|facts| facts.etag),
        };
        if error.current_etag() != expected_etag {
            return Some(format!(
                "{name}: expected current ETag {expected_etag:?}, got {:?}",
                error.current_etag()
            ));
        }
    }
    None
}

type Row = (
    &'static str,
    Conditions,
    Option<ItemFacts>,
    Option<ErrorCode>,
);

fn run(
    table: &str,
    rows: Vec<Row>,
    decide: impl Fn(&Conditions, Option<&ItemFacts>) -> Result<()>,
) {
    let failures: Vec<String> = rows
        .into_iter()
        .filter_map(|(name, conditions, item, expected)| {
            row_failure(name, decide(&conditions, item.as_ref()), item, expected)
        })
        .collect();
    assert!(failures.is_empty(), "{table}:\n{}", failures.join("\n"));
}

use ErrorCode::{
    AlreadyExists, ConditionNotMet, InvalidArgument, NotFound, NotModified, VersionMismatch,
};

#[test]
#[rustfmt::skip]
fn read_rules_table() {
    let rows: Vec<Row> = vec![
        ("no condition, present: returned", Conditions::default(), PRESENT, None),
        ("no condition, missing: NotFound", Conditions::default(), MISSING, Some(NotFound)),
        ("if_match current", Conditions::if_match(CURRENT), PRESENT, None),
        ("if_match stale: 412", Conditions::if_match(STALE), PRESENT, Some(ConditionNotMet)),
        ("if_match *, present", Conditions::if_match(ETagArg::Any), PRESENT, None),
        ("if_match foreign: 412", Conditions::if_match(ETagArg::Foreign), PRESENT, Some(ConditionNotMet)),
        ("if_match list holding current", if_match_list(&[STALE.into(), CURRENT.into()]), PRESENT, None),
        ("if_match list without current: 412", if_match_list(&[STALE.into(), OTHER.into()]), PRESENT, Some(ConditionNotMet)),
        ("if_match, missing: NotFound", Conditions::if_match(CURRENT), MISSING, Some(NotFound)),
        ("if_match *, missing: NotFound", Conditions::if_match(ETagArg::Any), MISSING, Some(NotFound)),
        ("if_none_match current: 304", Conditions::if_none_match(CURRENT), PRESENT, Some(NotModified)),
        ("if_none_match stale", Conditions::if_none_match(STALE), PRESENT, None),
        ("if_none_match list with current: 304", if_none_match_list(&[STALE.into(), CURRENT.into()]), PRESENT, Some(NotModified)),
        ("if_none_match list without current", if_none_match_list(&[STALE.into(), OTHER.into()]), PRESENT, None),
        ("if_none_match, missing: NotFound", Conditions::if_none_match(STALE), MISSING, Some(NotFound)),
        ("if_modified_since before", Conditions::if_modified_since(BEFORE), PRESENT, None),
        ("if_modified_since equal: 304 (strictly after)", Conditions::if_modified_since(LAST_MODIFIED), PRESENT, Some(NotModified)),
        ("if_modified_since after: 304", Conditions::if_modified_since(AFTER), PRESENT, Some(NotModified)),
        ("if_modified_since, missing: NotFound", Conditions::if_modified_since(BEFORE), MISSING, Some(NotFound)),
        ("if_unmodified_since equal", Conditions::if_unmodified_since(LAST_MODIFIED), PRESENT, None),
        ("if_unmodified_since after", Conditions::if_unmodified_since(AFTER), PRESENT, None),
        ("if_unmodified_since before: 412", Conditions::if_unmodified_since(BEFORE), PRESENT, Some(ConditionNotMet)),
        ("if_unmodified_since, missing: NotFound", Conditions::if_unmodified_since(AFTER), MISSING, Some(NotFound)),
        // The group G holds when any given member holds.
        ("G: if_none_match fails, if_modified_since holds",
            Conditions::if_none_match(CURRENT).and(Conditions::if_modified_since(BEFORE)), PRESENT, None),
        ("G: if_none_match holds, if_modified_since fails",
            Conditions::if_none_match(STALE).and(Conditions::if_modified_since(AFTER)), PRESENT, None),
        ("G: both fail: 304",
            Conditions::if_none_match(CURRENT).and(Conditions::if_modified_since(AFTER)), PRESENT, Some(NotModified)),
        // 412 wins over 304.
        ("if_match fails and G fails: 412",
            Conditions::if_match(STALE).and(Conditions::if_none_match(CURRENT)), PRESENT, Some(ConditionNotMet)),
        ("if_unmodified_since fails and G fails: 412",
            Conditions::if_unmodified_since(BEFORE).and(Conditions::if_modified_since(AFTER)), PRESENT, Some(ConditionNotMet)),
        ("if_match holds, if_unmodified_since fails: 412",
            Conditions::if_match(CURRENT).and(Conditions::if_unmodified_since(BEFORE)), PRESENT, Some(ConditionNotMet)),
        ("if_match holds and G fails: 304",
            Conditions::if_match(CURRENT).and(Conditions::if_none_match(CURRENT)), PRESENT, Some(NotModified)),
        ("all four hold",
            Conditions::if_match(CURRENT)
                .and(Conditions::if_unmodified_since(AFTER))
                .and(Conditions::if_none_match(STALE))
                .and(Conditions::if_modified_since(BEFORE)), PRESENT, None),
        // Arguments are checked before the item is looked up.
        ("if_none_match *, present: 400", Conditions::if_none_match(ETagArg::Any), PRESENT, Some(InvalidArgument)),
        ("if_none_match *, missing: 400", Conditions::if_none_match(ETagArg::Any), MISSING, Some(InvalidArgument)),
        ("if_version on a read: 400", Conditions::if_version(0x10), PRESENT, Some(InvalidArgument)),
    ];
    run("reads (docs/spec.md §3)", rows, check_read);
}

#[test]
fn read_argument_errors_name_the_argument() {
    let named = |conditions: Conditions| match validate_read(&conditions) {
        Err(Error::InvalidArgument { argument, .. }) => argument,
        other => panic!("expected InvalidArgument, got {other:?}"),
    };
    assert_eq!(
        named(Conditions::if_none_match(ETagArg::Any)),
        "if_none_match"
    );
    assert_eq!(
        named(if_none_match_list(&[STALE.into(), ETagArg::Any])),
        "if_none_match"
    );
    assert_eq!(named(Conditions::if_version(3)), "if_version");
    assert!(validate_read(&Conditions::if_match(ETagArg::Any)).is_ok());
}

type WriteRow = (
    &'static str,
    WriteKind,
    Conditions,
    Option<ItemFacts>,
    Option<ErrorCode>,
);

fn run_writes(
    table: &str,
    rows: Vec<WriteRow>,
    decide: fn(WriteKind, &Conditions, Option<&ItemFacts>) -> Result<()>,
) {
    let failures: Vec<String> = rows
        .into_iter()
        .filter_map(|(name, kind, conditions, item, expected)| {
            row_failure(
                name,
                decide(kind, &conditions, item.as_ref()),
                item,
                expected,
            )
        })
        .collect();
    assert!(failures.is_empty(), "{table}:\n{}", failures.join("\n"));
}

#[test]
#[rustfmt::skip]
fn write_step_3_existence_table() {
    use WriteKind::*;
    run_writes("writes, step 3 (docs/spec.md §3)", vec![
        ("put, no condition, missing: creates", Put, Conditions::default(), MISSING, None),
        ("put if_match, missing: not decided in step 3", Put, Conditions::if_match(CURRENT), MISSING, None),
        ("put if_version, missing: NotFound", Put, Conditions::if_version(1), MISSING, Some(NotFound)),
        ("create, missing", Create, Conditions::default(), MISSING, None),
        ("create if_version, missing: NotFound", Create, Conditions::if_version(1), MISSING, Some(NotFound)),
        ("replace, missing: NotFound", Replace, Conditions::default(), MISSING, Some(NotFound)),
        ("replace if_match, missing: NotFound", Replace, Conditions::if_match(CURRENT), MISSING, Some(NotFound)),
        ("delete, missing: NotFound", Delete, Conditions::default(), MISSING, Some(NotFound)),
        ("delete if_match *, missing: NotFound", Delete, Conditions::if_match(ETagArg::Any), MISSING, Some(NotFound)),
        ("delete if_version, missing: NotFound", Delete, Conditions::if_version(1), MISSING, Some(NotFound)),
        ("set_metadata, missing: NotFound", SetMetadata, Conditions::default(), MISSING, Some(NotFound)),
        ("set_metadata if_match, missing: NotFound", SetMetadata, Conditions::if_match(CURRENT), MISSING, Some(NotFound)),
        ("check without conditions, missing: NotFound", Check, Conditions::default(), MISSING, Some(NotFound)),
        ("check if_none_match *, missing", Check, Conditions::if_none_match(ETagArg::Any), MISSING, None),
        ("check if_match, missing: left to step 5", Check, Conditions::if_match(CURRENT), MISSING, None),
        ("check if_version, missing: NotFound", Check, Conditions::if_version(1), MISSING, Some(NotFound)),
        ("replace, present", Replace, Conditions::default(), PRESENT, None),
        ("delete, present", Delete, Conditions::default(), PRESENT, None),
        ("set_metadata, present", SetMetadata, Conditions::default(), PRESENT, None),
        ("check, present", Check, Conditions::default(), PRESENT, None),
        ("put if_version stale, present: left to step 5", Put, Conditions::if_version(1), PRESENT, None),
    ], check_write_existence);
}

#[test]
#[rustfmt::skip]
fn write_step_5_conditions_table() {
    use WriteKind::*;
    run_writes("writes, step 5 (docs/spec.md §3)", vec![
        ("put, no condition, present: last writer wins", Put, Conditions::default(), PRESENT, None),
        ("put if_match current", Put, Conditions::if_match(CURRENT), PRESENT, None),
        ("put if_match stale: 412", Put, Conditions::if_match(STALE), PRESENT, Some(ConditionNotMet)),
        ("put if_match *, present", Put, Conditions::if_match(ETagArg::Any), PRESENT, None),
        ("put if_match list holding current", Put, if_match_list(&[OTHER.into(), CURRENT.into()]), PRESENT, None),
        ("put if_match, missing: 412 (differs from Cosmos)", Put, Conditions::if_match(CURRENT), MISSING, Some(ConditionNotMet)),
        ("put if_match *, missing: 412", Put, Conditions::if_match(ETagArg::Any), MISSING, Some(ConditionNotMet)),
        ("put if_none_match *, present: AlreadyExists", Put, Conditions::if_none_match(ETagArg::Any), PRESENT, Some(AlreadyExists)),
        ("put if_none_match *, missing: creates", Put, Conditions::if_none_match(ETagArg::Any), MISSING, None),
        ("put if_none_match current: 412", Put, Conditions::if_none_match(CURRENT), PRESENT, Some(ConditionNotMet)),
        ("put if_none_match stale", Put, Conditions::if_none_match(STALE), PRESENT, None),
        ("put if_none_match, missing: creates", Put, Conditions::if_none_match(CURRENT), MISSING, None),
        ("put if_none_match [current, *], present: AlreadyExists", Put,
            if_none_match_list(&[CURRENT.into(), ETagArg::Any]), PRESENT, Some(AlreadyExists)),
        ("create, present: AlreadyExists", Create, Conditions::default(), PRESENT, Some(AlreadyExists)),
        ("create, missing", Create, Conditions::default(), MISSING, None),
        ("put if_modified_since before", Put, Conditions::if_modified_since(BEFORE), PRESENT, None),
        ("put if_modified_since equal: 412", Put, Conditions::if_modified_since(LAST_MODIFIED), PRESENT, Some(ConditionNotMet)),
        ("put if_modified_since, missing: creates", Put, Conditions::if_modified_since(AFTER), MISSING, None),
        ("put if_unmodified_since equal", Put, Conditions::if_unmodified_since(LAST_MODIFIED), PRESENT, None),
        ("put if_unmodified_since before: 412", Put, Conditions::if_unmodified_since(BEFORE), PRESENT, Some(ConditionNotMet)),
        ("put if_unmodified_since, missing: creates", Put, Conditions::if_unmodified_since(BEFORE), MISSING, None),
        ("put if_version current", Put, Conditions::if_version(0x10), PRESENT, None),
        ("put if_version stale: VersionMismatch", Put, Conditions::if_version(0x05), PRESENT, Some(VersionMismatch)),
        ("put if_version, missing: NotFound", Put, Conditions::if_version(0x10), MISSING, Some(NotFound)),
        ("delete if_version stale: VersionMismatch", Delete, Conditions::if_version(0x05), PRESENT, Some(VersionMismatch)),
        ("delete if_match stale: 412", Delete, Conditions::if_match(STALE), PRESENT, Some(ConditionNotMet)),
        ("delete if_match current", Delete, Conditions::if_match(CURRENT), PRESENT, None),
        ("delete if_none_match *, present: AlreadyExists", Delete, Conditions::if_none_match(ETagArg::Any), PRESENT, Some(AlreadyExists)),
        ("replace if_match stale: 412", Replace, Conditions::if_match(STALE), PRESENT, Some(ConditionNotMet)),
        ("replace, missing: NotFound (step 3 repeated)", Replace, Conditions::default(), MISSING, Some(NotFound)),
        ("set_metadata if_unmodified_since before: 412", SetMetadata, Conditions::if_unmodified_since(BEFORE), PRESENT, Some(ConditionNotMet)),
        ("check if_match current", Check, Conditions::if_match(CURRENT), PRESENT, None),
        ("check if_match stale: 412", Check, Conditions::if_match(STALE), PRESENT, Some(ConditionNotMet)),
        ("check if_match, missing: 412", Check, Conditions::if_match(CURRENT), MISSING, Some(ConditionNotMet)),
        ("check if_none_match *, present: AlreadyExists", Check, Conditions::if_none_match(ETagArg::Any), PRESENT, Some(AlreadyExists)),
        ("check if_none_match *, missing: holds", Check, Conditions::if_none_match(ETagArg::Any), MISSING, None),
        ("check without conditions, missing: NotFound", Check, Conditions::default(), MISSING, Some(NotFound)),
        ("check if_version stale: VersionMismatch", Check, Conditions::if_version(1), PRESENT, Some(VersionMismatch)),
        ("all five hold", Put,
            Conditions::if_match(CURRENT)
                .and(Conditions::if_none_match(STALE))
                .and(Conditions::if_modified_since(BEFORE))
                .and(Conditions::if_unmodified_since(AFTER))
                .and(Conditions::if_version(0x10)), PRESENT, None),
    ], check_write_conditions);
}

/// When several conditions fail, the first in the order if_match, if_none_match,
/// if_modified_since, if_unmodified_since, if_version is reported. Codes differ only at the
/// boundaries with if_none_match=* (409) and if_version (VersionMismatch), so each pair below
/// puts two differently-coded failures against each other.
#[test]
#[rustfmt::skip]
fn write_failure_order_table() {
    use WriteKind::*;
    let stale_version = || Conditions::if_version(0x05);
    run_writes("write failure order", vec![
        ("if_match before if_none_match *", Put,
            Conditions::if_match(STALE).and(Conditions::if_none_match(ETagArg::Any)), PRESENT, Some(ConditionNotMet)),
        ("if_match before create's implied *", Create, Conditions::if_match(STALE), PRESENT, Some(ConditionNotMet)),
        ("if_match before if_version", Put, Conditions::if_match(STALE).and(stale_version()), PRESENT, Some(ConditionNotMet)),
        ("if_none_match * before if_modified_since", Put,
            Conditions::if_none_match(ETagArg::Any).and(Conditions::if_modified_since(AFTER)), PRESENT, Some(AlreadyExists)),
        ("if_none_match * before if_version", Put,
            Conditions::if_none_match(ETagArg::Any).and(stale_version()), PRESENT, Some(AlreadyExists)),
        ("if_none_match ETag before if_version", Put,
            Conditions::if_none_match(CURRENT).and(stale_version()), PRESENT, Some(ConditionNotMet)),
        ("if_modified_since before if_version", Put,
            Conditions::if_modified_since(AFTER).and(stale_version()), PRESENT, Some(ConditionNotMet)),
        ("if_unmodified_since before if_version", Put,
            Conditions::if_unmodified_since(BEFORE).and(stale_version()), PRESENT, Some(ConditionNotMet)),
        ("only if_version fails", Put,
            Conditions::if_match(CURRENT).and(Conditions::if_unmodified_since(AFTER)).and(stale_version()),
            PRESENT, Some(VersionMismatch)),
        ("all five fail: if_match reported", Put,
            Conditions::if_match(STALE)
                .and(Conditions::if_none_match(ETagArg::Any))
                .and(Conditions::if_modified_since(AFTER))
                .and(Conditions::if_unmodified_since(BEFORE))
                .and(stale_version()), PRESENT, Some(ConditionNotMet)),
        ("missing, if_match and if_version: step 3's NotFound comes first", Put,
            Conditions::if_match(STALE).and(stale_version()), MISSING, Some(NotFound)),
    ], check_write_conditions);
}

#[test]
fn statuses_of_condition_refusals() {
    assert_eq!(NotModified.status(), 304);
    assert_eq!(AlreadyExists.status(), 409);
    assert_eq!(ConditionNotMet.status(), 412);
    assert_eq!(VersionMismatch.status(), 412);
    let refusal =
        check_write_conditions(WriteKind::Put, &Conditions::if_version(1), PRESENT.as_ref())
            .unwrap_err();
    assert_eq!(refusal.status(), 412);
    assert_eq!(refusal.current_etag(), Some(CURRENT));
}

#[test]
fn get_if_newer_returns_the_item_only_when_the_version_differs() {
    assert!(!get_if_newer(0x10, PRESENT.as_ref()).unwrap());
    assert!(get_if_newer(0x05, PRESENT.as_ref()).unwrap());
    assert!(get_if_newer(0x11, PRESENT.as_ref()).unwrap());
    let missing = get_if_newer(0x10, None).unwrap_err();
    assert_eq!(missing.code(), NotFound);
    assert_eq!(missing.current_etag(), None);
}

#[test]
fn builders_and_is_empty() {
    assert!(Conditions::default().is_empty());
    for single in [
        Conditions::if_match(ETagArg::Any),
        Conditions::if_none_match(STALE),
        Conditions::if_modified_since(1),
        Conditions::if_unmodified_since(1),
        Conditions::if_version(1),
    ] {
        assert!(!single.is_empty(), "{single:?}");
    }
    let joined = Conditions::if_match(STALE)
        .and(Conditions::if_match(CURRENT))
        .and(Conditions::if_modified_since(1))
        .and(Conditions::if_modified_since(2));
    assert_eq!(
        joined.if_match,
        ETagList::from(vec![ETagArg::Exact(STALE), ETagArg::Exact(CURRENT)])
    );
    assert_eq!(joined.if_modified_since, Some(2));
    assert_eq!(
        Conditions::if_version(4)
            .and(Conditions::default())
            .if_version,
        Some(4)
    );
}
