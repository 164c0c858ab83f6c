//! docs/spec.md §4 (and §5, whose state machine is the same): every cell of the lease-action table, end
//! to end through the store, for item leases and container leases alike; break reporting the
//! time left; fencing; durability of leases across reopen and crash (§11); and the concurrency
//! guarantees of the lease (one holder at a time, fences in grant order, first-come first-served
//! waiting acquire).
//!
//! Every cell drives the item (or container) into its state with real store calls and the
//! manual clock, applies the action, and checks the result code (and 409) or the resulting
//! state through lease info. A failure names the cell: `item::renew_a_on_expired` etc.

mod common;

use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use rand::rngs::StdRng;
use rand::SeedableRng;
use tenure::{
    Clock, Durability, ETag, Error, ErrorCode, Lease, LeaseDuration, LeaseId, LeaseInfo,
    LeaseRequest, LeaseState, ManualClock, ReadOptions, Store, StoreOptions, Timestamp,
    WriteOptions, MICROS_PER_SECOND,
};
use tenure_testkit::{CrashPolicy, SimStorage};

const A: LeaseId = LeaseId(0xaaaa_aaaa_aaaa_4aaa_8aaa_aaaa_aaaa_aaaa);
const B: LeaseId = LeaseId(0xbbbb_bbbb_bbbb_4bbb_8bbb_bbbb_bbbb_bbbb);
const C: LeaseId = LeaseId(0xcccc_cccc_cccc_4ccc_8ccc_cccc_cccc_cccc);
const SECOND: u64 = MICROS_PER_SECOND;
const KEY: &[u8] = b"k";

fn sync_options(clock: &ManualClock) -> StoreOptions {
    StoreOptions {
        durability: Durability::Sync,
        ..common::options(clock)
    }
}

fn request(seconds: Option<u32>, proposed_id: Option<LeaseId>) -> LeaseRequest {
    LeaseRequest {
        duration: seconds.map_or(LeaseDuration::Infinite, |seconds| {
            LeaseDuration::fixed(seconds).unwrap()
        }),
        proposed_id,
        holder: None,
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Target {
    Item,
    Container,
}

/// A store with container "c" holding item "k", on a simulated disk with a manual clock,
/// and the lease operations of one target (the item "k" or the container "c").
struct Fixture {
    store: Option<Store>,
    clock: ManualClock,
    disk: SimStorage,
    target: Target,
}

impl Fixture {
    fn new(target: Target) -> Fixture {
        let clock = ManualClock::new(common::START_MICROS);
        let disk = SimStorage::new();
        let store = Store::open_with_storage(Arc::new(disk.clone()), sync_options(&clock)).unwrap();
        store.create_container("c", &Default::default()).unwrap();
        store
            .put("c", KEY, b"value", &WriteOptions::default())
            .unwrap();
        Fixture {
            store: Some(store),
            clock,
            disk,
            target,
        }
    }

    fn store(&self) -> &Store {
        self.store.as_ref().expect("open")
    }

    fn acquire(&self, request: &LeaseRequest) -> tenure::Result<Lease> {
        match self.target {
            Target::Item => self.store().acquire_lease("c", KEY, request),
            Target::Container => self.store().acquire_container_lease("c", request),
        }
    }

    fn renew(&self, id: LeaseId) -> tenure::Result<Lease> {
        match self.target {
            Target::Item => self.store().renew_lease("c", KEY, id),
            Target::Container => self.store().renew_container_lease("c", id),
        }
    }

    fn change(&self, id: LeaseId, proposed: LeaseId) -> tenure::Result<Lease> {
        match self.target {
            Target::Item => self.store().change_lease("c", KEY, id, proposed),
            Target::Container => self.store().change_container_lease("c", id, proposed),
        }
    }

    fn release(&self, id: LeaseId) -> tenure::Result<()> {
        match self.target {
            Target::Item => self.store().release_lease("c", KEY, id),
            Target::Container => self.store().release_container_lease("c", id),
        }
    }

    fn break_lease(&self, period: Option<u32>) -> tenure::Result<Duration> {
        match self.target {
            Target::Item => self.store().break_lease("c", KEY, period),
            Target::Container => self.store().break_container_lease("c", period),
        }
    }

    fn info(&self) -> LeaseInfo {
        match self.target {
            Target::Item => self.store().lease_info("c", KEY).unwrap(),
            Target::Container => self.store().container_lease_info("c").unwrap(),
        }
    }

    /// What a lease operation must not change: ETag and last_modified.
    fn stamp(&self) -> (ETag, Timestamp) {
        match self.target {
            Target::Item => {
                let item = self.store().get("c", KEY, &ReadOptions::default()).unwrap();
                (item.etag, item.last_modified)
            }
            Target::Container => {
                let properties = self.store().container_properties("c").unwrap();
                (properties.etag, properties.last_modified)
            }
        }
    }

    /// A write without a lease id: a put of the item, or new container metadata.
    fn write_without_id(&self) -> tenure::Result<()> {
        match self.target {
            Target::Item => self
                .store()
                .put("c", KEY, b"written", &WriteOptions::default())
                .map(drop),
            Target::Container => self
                .store()
                .set_container_metadata("c", &[("m".into(), "1".into())], &Default::default())
                .map(drop),
        }
    }

    fn reopen(&mut self) {
        self.store.take().unwrap().close().unwrap();
        self.store = Some(
            Store::open_with_storage(Arc::new(self.disk.clone()), sync_options(&self.clock))
                .unwrap(),
        );
    }

    /// A power cut: every unsynced sector is lost (sync mode: every acknowledged write is kept).
    fn crash(&mut self) {
        let crashed = self
            .disk
            .crash(&mut StdRng::seed_from_u64(7), CrashPolicy::DropAll);
        drop(self.store.take());
        self.disk = crashed;
        self.store = Some(
            Store::open_with_storage(Arc::new(self.disk.clone()), sync_options(&self.clock))
                .unwrap(),
        );
    }
}

/// The five columns of the lease-action table.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Start {
    Available,
    Leased,
    Breaking,
    Broken,
    Expired,
}

impl Start {
    fn state(self) -> LeaseState {
        match self {
            Start::Available => LeaseState::Available,
            Start::Leased => LeaseState::Leased,
            Start::Breaking => LeaseState::Breaking,
            Start::Broken => LeaseState::Broken,
            Start::Expired => LeaseState::Expired,
        }
    }
}

/// Drives the target into `start` with lease A, granted at T0:
/// - Available: A acquired (60 s) and released; now T0+5 s.
/// - Leased: A for 60 s; now T0+5 s, 55 s left.
/// - Breaking: A for 60 s, broken at T0+5 s with a 10 s period; now T0+7 s, 8 s of break left.
/// - Broken: A for 60 s, broken at T0+5 s with period 0.
/// - Expired: A for 15 s; now T0+20 s.
///
/// Returns the fixture and A's fence.
fn enter(target: Target, start: Start) -> (Fixture, u64) {
    let fixture = Fixture::new(target);
    let seconds = if start == Start::Expired { 15 } else { 60 };
    let granted = fixture.acquire(&request(Some(seconds), Some(A))).unwrap();
    assert_eq!(granted.id, A);
    match start {
        Start::Available => {
            fixture.release(A).unwrap();
            fixture.clock.advance_seconds(5);
        }
        Start::Leased => fixture.clock.advance_seconds(5),
        Start::Breaking => {
            fixture.clock.advance_seconds(5);
            assert_eq!(
                fixture.break_lease(Some(10)).unwrap(),
                Duration::from_secs(10)
            );
            fixture.clock.advance_seconds(2);
        }
        Start::Broken => {
            fixture.clock.advance_seconds(5);
            assert_eq!(fixture.break_lease(Some(0)).unwrap(), Duration::ZERO);
        }
        Start::Expired => fixture.clock.advance_seconds(20),
    }
    let info = fixture.info();
    assert_eq!(info.state, start.state(), "{target:?}: setup of {start:?}");
    if start != Start::Available {
        assert_eq!(
            (info.id, info.fence),
            (Some(A), Some(granted.fence)),
            "{target:?}: setup of {start:?}"
        );
    }
    (fixture, granted.fence)
}

/// The rows of the lease-action table. Acquires ask for 30 s, so "new duration" shows.
#[derive(Debug, Clone, Copy)]
enum Action {
    AcquireNoId,
    AcquireA,
    AcquireB,
    RenewA,
    RenewB,
    ChangeAToB,
    ChangeBToA,
    ChangeBToC,
    ReleaseA,
    ReleaseB,
    Break0,
    /// Break with a period of 5 s.
    BreakP,
    BreakNone,
}

/// What the action returned.
#[derive(Debug)]
enum Returned {
    Lease(Lease),
    Nothing,
    TimeLeft(Duration),
}

fn apply(fixture: &Fixture, action: Action) -> tenure::Result<Returned> {
    let acquire = |id| fixture.acquire(&request(Some(30), id)).map(Returned::Lease);
    match action {
        Action::AcquireNoId => acquire(None),
        Action::AcquireA => acquire(Some(A)),
        Action::AcquireB => acquire(Some(B)),
        Action::RenewA => fixture.renew(A).map(Returned::Lease),
        Action::RenewB => fixture.renew(B).map(Returned::Lease),
        Action::ChangeAToB => fixture.change(A, B).map(Returned::Lease),
        Action::ChangeBToA => fixture.change(B, A).map(Returned::Lease),
        Action::ChangeBToC => fixture.change(B, C).map(Returned::Lease),
        Action::ReleaseA => fixture.release(A).map(|()| Returned::Nothing),
        Action::ReleaseB => fixture.release(B).map(|()| Returned::Nothing),
        Action::Break0 => fixture.break_lease(Some(0)).map(Returned::TimeLeft),
        Action::BreakP => fixture.break_lease(Some(5)).map(Returned::TimeLeft),
        Action::BreakNone => fixture.break_lease(None).map(Returned::TimeLeft),
    }
}

#[derive(Debug, Clone, Copy)]
enum Id {
    A,
    B,
    /// Generated by tenure: neither A, B nor C.
    Fresh,
}

#[derive(Debug, Clone, Copy)]
enum Fence {
    /// A's grant's fence.
    Kept,
    /// A new grant: above every earlier fence.
    New,
}

#[derive(Debug, Clone, Copy)]
enum Expect {
    /// Refused with this 409 code; nothing changes.
    Refused(ErrorCode),
    /// The lease becomes `state`; `remaining` in seconds (None: nothing runs out); a break
    /// reports `reports` seconds.
    Becomes {
        state: LeaseState,
        id: Id,
        fence: Fence,
        remaining: Option<u64>,
        reports: Option<u64>,
    },
    Available,
}

use Expect::Refused;

fn leased(id: Id, fence: Fence, remaining: u64) -> Expect {
    Expect::Becomes {
        state: LeaseState::Leased,
        id,
        fence,
        remaining: Some(remaining),
        reports: None,
    }
}

fn breaking(remaining: u64) -> Expect {
    Expect::Becomes {
        state: LeaseState::Breaking,
        id: Id::A,
        fence: Fence::Kept,
        remaining: Some(remaining),
        reports: Some(remaining),
    }
}

fn broken() -> Expect {
    Expect::Becomes {
        state: LeaseState::Broken,
        id: Id::A,
        fence: Fence::Kept,
        remaining: None,
        reports: Some(0),
    }
}

fn check_cell(target: Target, action: Action, start: Start, expect: Expect) {
    let cell = format!("cell [{target:?}] {action:?} on {start:?}");
    let (fixture, a_fence) = enter(target, start);
    let before = fixture.info();
    let stamp = fixture.stamp();
    let result = apply(&fixture, action);
    match expect {
        Refused(code) => {
            let error = match result {
                Ok(returned) => panic!("{cell}: expected {code:?}, got success {returned:?}"),
                Err(error) => error,
            };
            assert_eq!(error.code(), code, "{cell}: code");
            assert_eq!(error.status(), 409, "{cell}: status");
            assert_eq!(
                fixture.info(),
                before,
                "{cell}: a refused action changes nothing"
            );
        }
        Expect::Available => {
            let returned =
                result.unwrap_or_else(|error| panic!("{cell}: expected success: {error:?}"));
            assert!(
                matches!(returned, Returned::Nothing),
                "{cell}: {returned:?}"
            );
            let info = fixture.info();
            assert_eq!(
                info,
                LeaseInfo {
                    state: LeaseState::Available,
                    id: None,
                    fence: None,
                    remaining_micros: None,
                    holder: None,
                },
                "{cell}"
            );
        }
        Expect::Becomes {
            state,
            id,
            fence,
            remaining,
            reports,
        } => {
            let returned =
                result.unwrap_or_else(|error| panic!("{cell}: expected success: {error:?}"));
            let info = fixture.info();
            assert_eq!(info.state, state, "{cell}: state");
            let info_id = info
                .id
                .unwrap_or_else(|| panic!("{cell}: no id in {info:?}"));
            match id {
                Id::A => assert_eq!(info_id, A, "{cell}: id"),
                Id::B => assert_eq!(info_id, B, "{cell}: id"),
                Id::Fresh => assert!(
                    ![A, B, C].contains(&info_id),
                    "{cell}: a generated id, not {info_id}"
                ),
            }
            let info_fence = info.fence.unwrap_or_else(|| panic!("{cell}: no fence"));
            match fence {
                Fence::Kept => assert_eq!(info_fence, a_fence, "{cell}: fence kept"),
                Fence::New => assert!(
                    info_fence > a_fence,
                    "{cell}: a new grant's fence {info_fence} must exceed {a_fence}"
                ),
            }
            assert_eq!(
                info.remaining_micros,
                remaining.map(|seconds| seconds * SECOND),
                "{cell}: time left"
            );
            match (returned, reports) {
                (Returned::Lease(lease), None) => assert_eq!(
                    (Some(lease.id), Some(lease.fence)),
                    (info.id, info.fence),
                    "{cell}: the returned lease is the one lease info shows"
                ),
                (Returned::TimeLeft(left), Some(seconds)) => assert_eq!(
                    left,
                    Duration::from_secs(seconds),
                    "{cell}: break reports the time left"
                ),
                (returned, _) => panic!("{cell}: unexpected return {returned:?}"),
            }
        }
    }
    assert_eq!(
        fixture.stamp(),
        stamp,
        "{cell}: lease actions change neither ETag nor last_modified"
    );
}

/// One named test per cell, for item leases (`item::…`) and container leases
/// (`container::…`): docs/spec.md §5 gives containers the same state machine and codes.
macro_rules! lease_action_table {
    ($($name:ident: $action:ident on $start:ident => $expect:expr;)*) => {
        mod item {
            use super::*;
            $(
                #[test]
                fn $name() {
                    check_cell(Target::Item, Action::$action, Start::$start, $expect);
                }
            )*
        }
        mod container {
            use super::*;
            $(
                #[test]
                fn $name() {
                    check_cell(Target::Container, Action::$action, Start::$start, $expect);
                }
            )*
        }
    };
}

lease_action_table! {
    // acquire, no proposed id
    acquire_without_id_on_available: AcquireNoId on Available => leased(Id::Fresh, Fence::New, 30);
    acquire_without_id_on_leased: AcquireNoId on Leased => Refused(ErrorCode::LeaseAlreadyPresent);
    acquire_without_id_on_breaking: AcquireNoId on Breaking => Refused(ErrorCode::LeaseAlreadyPresent);
    acquire_without_id_on_broken: AcquireNoId on Broken => leased(Id::Fresh, Fence::New, 30);
    acquire_without_id_on_expired: AcquireNoId on Expired => leased(Id::Fresh, Fence::New, 30);
    // acquire(A)
    acquire_a_on_available: AcquireA on Available => leased(Id::A, Fence::New, 30);
    acquire_a_on_leased_sets_the_new_duration: AcquireA on Leased => leased(Id::A, Fence::Kept, 30);
    acquire_a_on_breaking: AcquireA on Breaking => Refused(ErrorCode::LeaseIsBreakingAndCannotBeAcquired);
    acquire_a_on_broken: AcquireA on Broken => leased(Id::A, Fence::New, 30);
    acquire_a_on_expired: AcquireA on Expired => leased(Id::A, Fence::New, 30);
    // acquire(B)
    acquire_b_on_available: AcquireB on Available => leased(Id::B, Fence::New, 30);
    acquire_b_on_leased: AcquireB on Leased => Refused(ErrorCode::LeaseAlreadyPresent);
    acquire_b_on_breaking: AcquireB on Breaking => Refused(ErrorCode::LeaseAlreadyPresent);
    acquire_b_on_broken: AcquireB on Broken => leased(Id::B, Fence::New, 30);
    acquire_b_on_expired: AcquireB on Expired => leased(Id::B, Fence::New, 30);
    // renew(A): deadline = now + duration (60 s; 15 s for the Expired column's lease)
    renew_a_on_available: RenewA on Available => Refused(ErrorCode::LeaseIdMismatchWithLeaseOperation);
    renew_a_on_leased: RenewA on Leased => leased(Id::A, Fence::Kept, 60);
    renew_a_on_breaking: RenewA on Breaking => Refused(ErrorCode::LeaseIsBrokenAndCannotBeRenewed);
    renew_a_on_broken: RenewA on Broken => Refused(ErrorCode::LeaseIsBrokenAndCannotBeRenewed);
    renew_a_on_expired_not_written_since: RenewA on Expired => leased(Id::A, Fence::Kept, 15);
    // renew(B)
    renew_b_on_available: RenewB on Available => Refused(ErrorCode::LeaseIdMismatchWithLeaseOperation);
    renew_b_on_leased: RenewB on Leased => Refused(ErrorCode::LeaseIdMismatchWithLeaseOperation);
    renew_b_on_breaking: RenewB on Breaking => Refused(ErrorCode::LeaseIdMismatchWithLeaseOperation);
    renew_b_on_broken: RenewB on Broken => Refused(ErrorCode::LeaseIdMismatchWithLeaseOperation);
    renew_b_on_expired: RenewB on Expired => Refused(ErrorCode::LeaseIdMismatchWithLeaseOperation);
    // change(A→B): same deadline (55 s left)
    change_a_to_b_on_available: ChangeAToB on Available => Refused(ErrorCode::LeaseNotPresentWithLeaseOperation);
    change_a_to_b_on_leased: ChangeAToB on Leased => leased(Id::B, Fence::Kept, 55);
    change_a_to_b_on_breaking: ChangeAToB on Breaking => Refused(ErrorCode::LeaseIsBreakingAndCannotBeChanged);
    change_a_to_b_on_broken: ChangeAToB on Broken => Refused(ErrorCode::LeaseNotPresentWithLeaseOperation);
    change_a_to_b_on_expired: ChangeAToB on Expired => Refused(ErrorCode::LeaseNotPresentWithLeaseOperation);
    // change(B→A), proposed = current: idempotent on a Leased lease
    change_b_to_a_on_available: ChangeBToA on Available => Refused(ErrorCode::LeaseNotPresentWithLeaseOperation);
    change_b_to_a_on_leased: ChangeBToA on Leased => leased(Id::A, Fence::Kept, 55);
    change_b_to_a_on_breaking: ChangeBToA on Breaking => Refused(ErrorCode::LeaseIdMismatchWithLeaseOperation);
    change_b_to_a_on_broken: ChangeBToA on Broken => Refused(ErrorCode::LeaseNotPresentWithLeaseOperation);
    change_b_to_a_on_expired: ChangeBToA on Expired => Refused(ErrorCode::LeaseNotPresentWithLeaseOperation);
    // change(B→C)
    change_b_to_c_on_available: ChangeBToC on Available => Refused(ErrorCode::LeaseNotPresentWithLeaseOperation);
    change_b_to_c_on_leased: ChangeBToC on Leased => Refused(ErrorCode::LeaseIdMismatchWithLeaseOperation);
    change_b_to_c_on_breaking: ChangeBToC on Breaking => Refused(ErrorCode::LeaseIdMismatchWithLeaseOperation);
    change_b_to_c_on_broken: ChangeBToC on Broken => Refused(ErrorCode::LeaseNotPresentWithLeaseOperation);
    change_b_to_c_on_expired: ChangeBToC on Expired => Refused(ErrorCode::LeaseNotPresentWithLeaseOperation);
    // release(A)
    release_a_on_available: ReleaseA on Available => Refused(ErrorCode::LeaseIdMismatchWithLeaseOperation);
    release_a_on_leased: ReleaseA on Leased => Expect::Available;
    release_a_on_breaking: ReleaseA on Breaking => Expect::Available;
    release_a_on_broken: ReleaseA on Broken => Expect::Available;
    release_a_on_expired: ReleaseA on Expired => Expect::Available;
    // release(B)
    release_b_on_available: ReleaseB on Available => Refused(ErrorCode::LeaseIdMismatchWithLeaseOperation);
    release_b_on_leased: ReleaseB on Leased => Refused(ErrorCode::LeaseIdMismatchWithLeaseOperation);
    release_b_on_breaking: ReleaseB on Breaking => Refused(ErrorCode::LeaseIdMismatchWithLeaseOperation);
    release_b_on_broken: ReleaseB on Broken => Refused(ErrorCode::LeaseIdMismatchWithLeaseOperation);
    release_b_on_expired: ReleaseB on Expired => Refused(ErrorCode::LeaseIdMismatchWithLeaseOperation);
    // break, period 0
    break_0_on_available: Break0 on Available => Refused(ErrorCode::LeaseNotPresentWithLeaseOperation);
    break_0_on_leased: Break0 on Leased => broken();
    break_0_on_breaking: Break0 on Breaking => broken();
    break_0_on_broken_is_idempotent: Break0 on Broken => broken();
    break_0_on_expired: Break0 on Expired => broken();
    // break, period 5 s: Leased (55 s left) → 5 s; Breaking (8 s left) → min(8, 5) = 5 s
    break_p_on_available: BreakP on Available => Refused(ErrorCode::LeaseNotPresentWithLeaseOperation);
    break_p_on_leased: BreakP on Leased => breaking(5);
    break_p_on_breaking_shortens_the_break: BreakP on Breaking => breaking(5);
    break_p_on_broken: BreakP on Broken => broken();
    break_p_on_expired: BreakP on Expired => broken();
    // break, no period: a fixed lease breaks until its deadline (55 s); Breaking unchanged (8 s)
    break_without_period_on_available: BreakNone on Available => Refused(ErrorCode::LeaseNotPresentWithLeaseOperation);
    break_without_period_on_leased_fixed: BreakNone on Leased => breaking(55);
    break_without_period_on_breaking_is_unchanged: BreakNone on Breaking => breaking(8);
    break_without_period_on_broken_is_unchanged: BreakNone on Broken => broken();
    break_without_period_on_expired: BreakNone on Expired => broken();
}

// ----- the table's side conditions, for items and containers -----

fn both(test: impl Fn(Target)) {
    test(Target::Item);
    test(Target::Container);
}

#[test]
fn break_with_a_period_longer_than_the_time_left_breaks_at_the_deadline() {
    both(|target| {
        let fixture = Fixture::new(target);
        fixture.acquire(&request(Some(15), Some(A))).unwrap();
        fixture.clock.advance_seconds(12);
        assert_eq!(
            fixture.break_lease(Some(10)).unwrap(),
            Duration::from_secs(3),
            "{target:?}: min(p, time left)"
        );
        let info = fixture.info();
        assert_eq!(info.state, LeaseState::Breaking, "{target:?}");
        assert_eq!(info.remaining_micros, Some(3 * SECOND), "{target:?}");
        fixture.clock.advance_seconds(3);
        assert_eq!(fixture.info().state, LeaseState::Broken, "{target:?}");
    });
}

#[test]
fn break_of_an_infinite_lease_with_a_period_breaks_for_the_period() {
    both(|target| {
        let fixture = Fixture::new(target);
        fixture.acquire(&request(None, Some(A))).unwrap();
        fixture.clock.advance_seconds(1000);
        assert_eq!(
            fixture.break_lease(Some(40)).unwrap(),
            Duration::from_secs(40),
            "{target:?}"
        );
        let info = fixture.info();
        assert_eq!(
            (info.state, info.remaining_micros),
            (LeaseState::Breaking, Some(40 * SECOND)),
            "{target:?}"
        );
        fixture.clock.advance_micros(40 * SECOND - 1);
        assert_eq!(fixture.info().state, LeaseState::Breaking, "{target:?}");
        fixture.clock.advance_micros(1);
        assert_eq!(fixture.info().state, LeaseState::Broken, "{target:?}");
    });
}

#[test]
fn break_of_an_infinite_lease_without_a_period_breaks_it_at_once() {
    both(|target| {
        let fixture = Fixture::new(target);
        fixture.acquire(&request(None, Some(A))).unwrap();
        assert_eq!(
            fixture.break_lease(None).unwrap(),
            Duration::ZERO,
            "{target:?}"
        );
        assert_eq!(fixture.info().state, LeaseState::Broken, "{target:?}");
        // A new lease can be taken at once.
        fixture.acquire(&request(Some(15), Some(B))).unwrap();
    });
}

#[test]
fn a_second_break_never_lengthens_a_break() {
    both(|target| {
        let fixture = Fixture::new(target);
        fixture.acquire(&request(Some(60), Some(A))).unwrap();
        fixture.break_lease(Some(10)).unwrap();
        fixture.clock.advance_seconds(4);
        assert_eq!(
            fixture.break_lease(Some(30)).unwrap(),
            Duration::from_secs(6),
            "{target:?}: deadline = min(old, now + p)"
        );
        assert_eq!(
            fixture.info().remaining_micros,
            Some(6 * SECOND),
            "{target:?}"
        );
    });
}

#[test]
fn time_moves_leased_to_expired_and_breaking_to_broken_exactly_at_the_deadline() {
    both(|target| {
        let fixture = Fixture::new(target);
        fixture.acquire(&request(Some(15), Some(A))).unwrap();
        fixture.clock.advance_micros(15 * SECOND - 1);
        let info = fixture.info();
        assert_eq!(
            (info.state, info.remaining_micros),
            (LeaseState::Leased, Some(1)),
            "{target:?}"
        );
        fixture.clock.advance_micros(1);
        let info = fixture.info();
        assert_eq!(
            (info.state, info.id, info.remaining_micros),
            (LeaseState::Expired, Some(A), None),
            "{target:?}"
        );
        fixture.release(A).unwrap();
        fixture.acquire(&request(Some(60), Some(A))).unwrap();
        fixture.break_lease(Some(7)).unwrap();
        fixture.clock.advance_micros(7 * SECOND - 1);
        assert_eq!(fixture.info().state, LeaseState::Breaking, "{target:?}");
        fixture.clock.advance_micros(1);
        assert_eq!(fixture.info().state, LeaseState::Broken, "{target:?}");
    });
}

#[test]
fn an_expired_lease_is_renewed_long_after_expiry_while_nothing_was_written() {
    both(|target| {
        let fixture = Fixture::new(target);
        let granted = fixture.acquire(&request(Some(20), Some(A))).unwrap();
        fixture.clock.advance_seconds(3600);
        assert_eq!(fixture.info().state, LeaseState::Expired, "{target:?}");
        let renewed = fixture.renew(A).unwrap();
        assert_eq!(renewed, granted, "{target:?}: same id, same fence");
        let info = fixture.info();
        assert_eq!(
            (info.state, info.remaining_micros),
            (LeaseState::Leased, Some(20 * SECOND)),
            "{target:?}"
        );
    });
}

#[test]
fn an_expired_item_lease_cannot_be_renewed_once_the_item_was_written_since_expiry() {
    let fixture = Fixture::new(Target::Item);
    fixture.acquire(&request(Some(15), Some(A))).unwrap();
    fixture.clock.advance_seconds(16);
    fixture.write_without_id().unwrap();
    let error = fixture.renew(A).unwrap_err();
    assert_eq!(error.code(), ErrorCode::LeaseIdMismatchWithLeaseOperation);
    assert_eq!(error.status(), 409);
}

#[test]
fn an_expired_container_lease_cannot_be_renewed_once_the_container_was_written_since_expiry() {
    let fixture = Fixture::new(Target::Container);
    let granted = fixture.acquire(&request(Some(15), Some(A))).unwrap();
    fixture.clock.advance_seconds(16);
    // A container write does not clear the Expired lease (docs/spec.md §5)…
    fixture.write_without_id().unwrap();
    let info = fixture.info();
    assert_eq!(
        (info.state, info.id, info.fence),
        (LeaseState::Expired, Some(A), Some(granted.fence))
    );
    // …but it was written since the lease expired: no renew.
    let error = fixture.renew(A).unwrap_err();
    assert_eq!(error.code(), ErrorCode::LeaseIdMismatchWithLeaseOperation);
    assert_eq!(fixture.info(), info, "the refused renew changed nothing");
}

#[test]
fn a_container_written_before_its_lease_expired_can_still_renew_it() {
    let fixture = Fixture::new(Target::Container);
    fixture.acquire(&request(Some(15), Some(A))).unwrap();
    fixture.clock.advance_seconds(10);
    fixture.write_without_id().unwrap();
    fixture.clock.advance_seconds(10);
    assert_eq!(fixture.info().state, LeaseState::Expired);
    fixture.renew(A).unwrap();
    assert_eq!(fixture.info().state, LeaseState::Leased);
}

#[test]
fn fences_strictly_increase_across_grants_and_are_kept_by_renew_change_and_reacquire() {
    both(|target| {
        let fixture = Fixture::new(target);
        let mut last = 0;
        let mut new_grant = |lease: Lease, how: &str| {
            assert!(
                lease.fence > last,
                "{target:?}: {how}: fence {} not above {last}",
                lease.fence
            );
            last = lease.fence;
            lease
        };
        // Available → new grant; re-acquire, renew, change keep it.
        let first = new_grant(fixture.acquire(&request(Some(15), None)).unwrap(), "first");
        let again = fixture.acquire(&request(Some(60), Some(first.id))).unwrap();
        assert_eq!(again, first, "{target:?}: re-acquire keeps the grant");
        assert_eq!(fixture.renew(first.id).unwrap().fence, first.fence);
        let changed = fixture.change(first.id, B).unwrap();
        assert_eq!((changed.id, changed.fence), (B, first.fence), "{target:?}");
        // Released → new grant.
        fixture.release(B).unwrap();
        let second = new_grant(
            fixture.acquire(&request(Some(15), Some(B))).unwrap(),
            "after release",
        );
        // Expired → new grant, even with the same id.
        fixture.clock.advance_seconds(15);
        let third = new_grant(
            fixture.acquire(&request(Some(15), Some(B))).unwrap(),
            "after expiry",
        );
        assert_eq!(third.id, second.id);
        // Broken → new grant.
        fixture.break_lease(Some(0)).unwrap();
        new_grant(
            fixture.acquire(&request(None, None)).unwrap(),
            "after break",
        );
        // Breaking then Broken by time → new grant.
        let current = fixture.info().id.unwrap();
        fixture.break_lease(Some(5)).unwrap();
        fixture.clock.advance_seconds(5);
        let fifth = new_grant(
            fixture.acquire(&request(None, Some(current))).unwrap(),
            "after break period",
        );
        // Other writes in between (other items, containers) never make a fence go back.
        fixture
            .store()
            .put("c", b"other", b"x", &WriteOptions::default())
            .unwrap();
        fixture.release(fifth.id).unwrap();
        new_grant(
            fixture.acquire(&request(Some(15), None)).unwrap(),
            "after other writes",
        );
    });
}

#[test]
fn each_item_has_its_own_lease() {
    let fixture = Fixture::new(Target::Item);
    let store = fixture.store();
    store
        .put("c", b"j", b"v", &WriteOptions::default())
        .unwrap();
    let on_k = store
        .acquire_lease("c", KEY, &request(Some(60), None))
        .unwrap();
    let on_j = store
        .acquire_lease("c", b"j", &request(Some(60), None))
        .unwrap();
    assert_ne!(on_k.id, on_j.id);
    assert_eq!(
        store.renew_lease("c", b"j", on_k.id).unwrap_err().code(),
        ErrorCode::LeaseIdMismatchWithLeaseOperation
    );
    store.release_lease("c", KEY, on_k.id).unwrap();
    assert_eq!(
        store.lease_info("c", b"j").unwrap().state,
        LeaseState::Leased
    );
}

#[test]
fn lease_ids_are_compared_by_value_whatever_their_text_form() {
    both(|target| {
        let fixture = Fixture::new(target);
        let lower = LeaseId::parse("lease_id", "3f2504e0-4f89-11d3-9a0c-0305e82c3301").unwrap();
        let upper = LeaseId::parse("lease_id", "3F2504E0-4F89-11D3-9A0C-0305E82C3301").unwrap();
        let braced = LeaseId::parse("lease_id", "{3f2504e0-4f89-11d3-9a0c-0305e82c3301}").unwrap();
        let plain = LeaseId::parse("lease_id", "3f2504e04f8911d39a0c0305e82c3301").unwrap();
        fixture.acquire(&request(Some(15), Some(lower))).unwrap();
        fixture.renew(upper).unwrap();
        fixture.change(braced, braced).unwrap();
        fixture.release(plain).unwrap();
        assert_eq!(fixture.info().state, LeaseState::Available, "{target:?}");
        assert_eq!(lower.to_string(), "3f2504e0-4f89-11d3-9a0c-0305e82c3301");
    });
}

fn assert_invalid(result: tenure::Result<impl std::fmt::Debug>, argument: &str, what: &str) {
    match result {
        Err(Error::InvalidArgument {
            argument: named, ..
        }) => assert_eq!(named, argument, "{what}: names the argument"),
        other => panic!("{what}: expected InvalidArgument naming {argument}, got {other:?}"),
    }
}

#[test]
fn out_of_range_durations_break_periods_and_malformed_ids_are_invalid_arguments() {
    both(|target| {
        let fixture = Fixture::new(target);
        for seconds in [0, 14, 61, 3600] {
            assert_invalid(
                LeaseDuration::fixed(seconds),
                "duration",
                &format!("{target:?}: {seconds} s"),
            );
            let bad = LeaseRequest {
                duration: LeaseDuration::Fixed { seconds },
                proposed_id: None,
                holder: None,
            };
            assert_invalid(
                fixture.acquire(&bad),
                "duration",
                &format!("{target:?}: acquire {seconds} s"),
            );
        }
        for seconds in [15, 60] {
            assert!(LeaseDuration::fixed(seconds).is_ok());
        }
        assert_eq!(
            LeaseDuration::from_seconds(-1).unwrap(),
            LeaseDuration::Infinite
        );
        assert_invalid(LeaseDuration::from_seconds(-2), "duration", "-2");
        fixture.acquire(&request(Some(60), Some(A))).unwrap();
        assert_invalid(
            fixture.break_lease(Some(61)),
            "break_period",
            &format!("{target:?}"),
        );
        assert_eq!(
            fixture.info().state,
            LeaseState::Leased,
            "{target:?}: nothing changed"
        );
        let holder = LeaseRequest {
            holder: Some("h".repeat(257)),
            ..request(Some(15), Some(A))
        };
        assert_invalid(fixture.acquire(&holder), "holder", &format!("{target:?}"));
        for text in [
            "",
            "not-a-uuid",
            "3f2504e0-4f89-11d3-9a0c-0305e82c330",
            "+f2504e04f8911d39a0c0305e82c3301",
        ] {
            assert_invalid(LeaseId::parse("lease_id", text), "lease_id", text);
        }
    });
}

#[test]
fn leasing_a_missing_item_or_container_is_not_found() {
    let fixture = Fixture::new(Target::Item);
    let store = fixture.store();
    assert_eq!(
        store
            .acquire_lease("c", b"missing", &request(Some(15), None))
            .unwrap_err()
            .code(),
        ErrorCode::NotFound
    );
    store.delete("c", KEY, &WriteOptions::default()).unwrap();
    assert_eq!(
        store
            .acquire_lease("c", KEY, &request(Some(15), None))
            .unwrap_err()
            .code(),
        ErrorCode::NotFound
    );
    assert_eq!(
        store.lease_info("c", KEY).unwrap_err().code(),
        ErrorCode::NotFound
    );
    assert_eq!(
        store
            .acquire_container_lease("nope", &request(Some(15), None))
            .unwrap_err()
            .code(),
        ErrorCode::ContainerNotFound
    );
    assert_eq!(
        store
            .acquire_lease("nope", KEY, &request(Some(15), None))
            .unwrap_err()
            .code(),
        ErrorCode::ContainerNotFound
    );
}

/// docs/spec.md §3 step 1 and §13: arguments are checked before anything is looked up, so an
/// out-of-range duration is `InvalidArgument` even on a missing item.
#[test]
fn a_bad_duration_is_an_invalid_argument_even_on_a_missing_item() {
    let fixture = Fixture::new(Target::Item);
    let bad = LeaseRequest {
        duration: LeaseDuration::Fixed { seconds: 5 },
        proposed_id: None,
        holder: None,
    };
    assert_invalid(
        fixture.store().acquire_lease("c", b"missing", &bad),
        "duration",
        "acquire on a missing item",
    );
    assert_invalid(
        fixture.store().break_lease("c", b"missing", Some(61)),
        "break_period",
        "break on a missing item",
    );
}

#[test]
fn lease_info_shows_holder_fence_and_the_time_left() {
    both(|target| {
        let fixture = Fixture::new(target);
        let granted = fixture
            .acquire(&LeaseRequest {
                holder: Some("worker-7".into()),
                ..request(Some(40), None)
            })
            .unwrap();
        fixture.clock.advance_micros(2_500_000);
        assert_eq!(
            fixture.info(),
            LeaseInfo {
                state: LeaseState::Leased,
                id: Some(granted.id),
                fence: Some(granted.fence),
                remaining_micros: Some(37_500_000),
                holder: Some("worker-7".into()),
            },
            "{target:?}"
        );
        // An infinite lease has no time left to show.
        fixture.release(granted.id).unwrap();
        fixture.acquire(&request(None, Some(A))).unwrap();
        let info = fixture.info();
        assert_eq!(
            (info.state, info.remaining_micros, info.holder),
            (LeaseState::Leased, None, None)
        );
    });
}

// ----- durability (docs/spec.md §11) -----

mod durability {
    use super::*;

    fn survives(target: Target, crash: bool) {
        let how = if crash { "crash" } else { "reopen" };
        for start in [
            Start::Available,
            Start::Leased,
            Start::Breaking,
            Start::Broken,
            Start::Expired,
        ] {
            let (mut fixture, a_fence) = enter(target, start);
            let before = fixture.info();
            if crash {
                fixture.crash();
            } else {
                fixture.reopen();
            }
            assert_eq!(fixture.info(), before, "[{target:?}] {start:?} after {how}");
            // Time keeps running on the recovered deadlines.
            if start == Start::Leased {
                fixture.clock.advance_seconds(55);
                assert_eq!(
                    fixture.info().state,
                    LeaseState::Expired,
                    "[{target:?}] {how}"
                );
            }
            if start == Start::Breaking {
                fixture.clock.advance_seconds(8);
                assert_eq!(
                    fixture.info().state,
                    LeaseState::Broken,
                    "[{target:?}] {how}"
                );
            }
            // Fences keep increasing across the reopen.
            let _ = fixture.release(A);
            let next = fixture.acquire(&request(Some(15), None)).unwrap();
            assert!(
                next.fence > a_fence,
                "[{target:?}] {start:?}: fence {} after {how} not above {a_fence}",
                next.fence
            );
        }
    }

    #[test]
    fn item_leases_in_every_state_survive_reopen() {
        survives(Target::Item, false);
    }

    #[test]
    fn container_leases_in_every_state_survive_reopen() {
        survives(Target::Container, false);
    }

    #[test]
    fn item_leases_in_every_state_survive_a_crash() {
        survives(Target::Item, true);
    }

    #[test]
    fn container_leases_in_every_state_survive_a_crash() {
        survives(Target::Container, true);
    }

    #[test]
    fn an_infinite_lease_and_its_holder_survive_reopen_and_crash() {
        both(|target| {
            let mut fixture = Fixture::new(target);
            let granted = fixture
                .acquire(&LeaseRequest {
                    holder: Some("me".into()),
                    ..request(None, None)
                })
                .unwrap();
            let before = fixture.info();
            fixture.reopen();
            fixture.clock.advance_seconds(1_000_000);
            assert_eq!(fixture.info(), before, "{target:?} reopen");
            fixture.crash();
            assert_eq!(fixture.info(), before, "{target:?} crash");
            assert_eq!(fixture.renew(granted.id).unwrap(), granted);
        });
    }

    #[test]
    fn a_reopen_in_the_middle_of_a_lease_keeps_it() {
        let mut fixture = Fixture::new(Target::Item);
        let lease = fixture.acquire(&request(Some(60), None)).unwrap();
        let with_id = WriteOptions {
            lease_id: Some(lease.id),
            ..WriteOptions::default()
        };
        fixture.store().put("c", KEY, b"one", &with_id).unwrap();
        fixture.clock.advance_seconds(10);
        fixture.reopen();
        assert_eq!(
            fixture
                .store()
                .put("c", KEY, b"intruder", &WriteOptions::default())
                .unwrap_err()
                .code(),
            ErrorCode::LeaseIdMissing,
            "the lease still guards the item"
        );
        fixture.store().put("c", KEY, b"two", &with_id).unwrap();
        fixture.crash();
        assert_eq!(fixture.renew(lease.id).unwrap(), lease);
        fixture.store().put("c", KEY, b"three", &with_id).unwrap();
        assert_eq!(
            fixture
                .store()
                .get("c", KEY, &ReadOptions::default())
                .unwrap()
                .value
                .unwrap(),
            b"three"
        );
        fixture.release(lease.id).unwrap();
        assert!(fixture.acquire(&request(Some(15), None)).unwrap().fence > lease.fence);
    }

    #[test]
    fn time_left_at_reopen_is_never_more_than_the_full_duration_after_the_clock_jumped_back() {
        both(|target| {
            let mut fixture = Fixture::new(target);
            let start = fixture.clock.now();
            let granted = fixture.acquire(&request(Some(30), None)).unwrap();
            fixture.clock.advance_seconds(10);
            fixture.store.take().unwrap().close().unwrap();
            // The wall clock jumps back an hour while the store is closed.
            fixture.clock.set(start - 3600 * SECOND);
            fixture.store = Some(
                Store::open_with_storage(
                    Arc::new(fixture.disk.clone()),
                    sync_options(&fixture.clock),
                )
                .unwrap(),
            );
            let info = fixture.info();
            assert_eq!(
                (info.state, info.id),
                (LeaseState::Leased, Some(granted.id)),
                "{target:?}"
            );
            let left = info.remaining_micros.unwrap();
            assert!(
                left <= 30 * SECOND,
                "{target:?}: {left} µs left of a 30 s lease"
            );
            fixture.clock.advance_seconds(30);
            assert_eq!(
                fixture.info().state,
                LeaseState::Expired,
                "{target:?}: the jump back did not stretch the lease"
            );
        });
    }

    #[test]
    fn a_breaking_lease_is_not_stretched_past_its_full_duration_by_a_clock_that_jumped_back() {
        both(|target| {
            let mut fixture = Fixture::new(target);
            let start = fixture.clock.now();
            fixture.acquire(&request(Some(15), Some(A))).unwrap();
            assert_eq!(
                fixture.break_lease(Some(10)).unwrap(),
                Duration::from_secs(10)
            );
            fixture.store.take().unwrap().close().unwrap();
            fixture.clock.set(start - 3600 * SECOND);
            fixture.store = Some(
                Store::open_with_storage(
                    Arc::new(fixture.disk.clone()),
                    sync_options(&fixture.clock),
                )
                .unwrap(),
            );
            let info = fixture.info();
            assert_eq!(info.state, LeaseState::Breaking, "{target:?}");
            let left = info.remaining_micros.unwrap();
            assert!(
                left <= 15 * SECOND,
                "{target:?}: a 15 s lease broken with a 10 s period blocks new leases for \
                 {left} µs after the clock jumped back"
            );
            fixture.clock.advance_seconds(15);
            assert_eq!(fixture.info().state, LeaseState::Broken, "{target:?}");
        });
    }

    #[test]
    fn fences_increase_across_compaction_and_reopen() {
        let mut fixture = Fixture::new(Target::Item);
        let first = fixture.acquire(&request(Some(15), None)).unwrap();
        fixture.release(first.id).unwrap();
        let filler = vec![7u8; 4096];
        for round in 0..600u32 {
            fixture
                .store()
                .put(
                    "c",
                    format!("f{}", round % 8).as_bytes(),
                    &filler,
                    &WriteOptions::default(),
                )
                .unwrap();
        }
        fixture.store().compact().unwrap();
        fixture.reopen();
        let second = fixture.acquire(&request(Some(15), None)).unwrap();
        assert!(second.fence > first.fence);
        fixture.crash();
        fixture.release(second.id).unwrap();
        let third = fixture.acquire(&request(Some(15), None)).unwrap();
        assert!(third.fence > second.fence);
    }
}

// ----- concurrency -----

mod concurrency {
    use super::*;

    /// 8 threads contend for one lease (the clock never moves, so only releases free it): no
    /// two holders at any instant, fences strictly increasing in acquisition order, every
    /// holder's write-then-read sees its own value, stale ids never write.
    #[test]
    fn eight_threads_contending_for_one_lease_never_hold_it_together() {
        const THREADS: usize = 8;
        const ATTEMPTS: usize = 400;
        let fixture = Fixture::new(Target::Item);
        let store = fixture.store();
        let held = AtomicBool::new(false);
        let violations = AtomicUsize::new(0);
        let fences = Mutex::new(Vec::new());
        let plain_writes = AtomicUsize::new(0);
        std::thread::scope(|scope| {
            for thread in 0..THREADS {
                let (held, violations, fences, plain_writes) =
                    (&held, &violations, &fences, &plain_writes);
                scope.spawn(move || {
                    let mut stale: Option<LeaseId> = None;
                    for attempt in 0..ATTEMPTS {
                        if attempt % 5 == 4 {
                            // A writer without an id: refused while the lease is held.
                            match store.put("c", KEY, b"plain", &WriteOptions::default()) {
                                Ok(_) => {
                                    plain_writes.fetch_add(1, Ordering::Relaxed);
                                }
                                Err(error) => {
                                    assert_eq!(error.code(), ErrorCode::LeaseIdMissing)
                                }
                            }
                            continue;
                        }
                        let lease = match store.acquire_lease("c", KEY, &request(Some(60), None)) {
                            Ok(lease) => lease,
                            Err(error) => {
                                assert_eq!(error.code(), ErrorCode::LeaseAlreadyPresent);
                                continue;
                            }
                        };
                        if held.swap(true, Ordering::SeqCst) {
                            violations.fetch_add(1, Ordering::SeqCst);
                        }
                        fences.lock().unwrap().push(lease.fence);
                        let with_id = WriteOptions {
                            lease_id: Some(lease.id),
                            ..WriteOptions::default()
                        };
                        let mine = format!("{thread}/{attempt}");
                        store.put("c", KEY, mine.as_bytes(), &with_id).unwrap();
                        let read = store
                            .get(
                                "c",
                                KEY,
                                &ReadOptions {
                                    lease_id: Some(lease.id),
                                    ..ReadOptions::default()
                                },
                            )
                            .unwrap();
                        if read.value.as_deref() != Some(mine.as_bytes()) {
                            violations.fetch_add(1, Ordering::SeqCst);
                        }
                        held.store(false, Ordering::SeqCst);
                        store.release_lease("c", KEY, lease.id).unwrap();
                        if let Some(old) = stale {
                            let with_old = WriteOptions {
                                lease_id: Some(old),
                                ..WriteOptions::default()
                            };
                            let error = store.put("c", KEY, b"stale", &with_old).unwrap_err();
                            assert!(
                                matches!(
                                    error.code(),
                                    ErrorCode::LeaseNotPresentWithBlobOperation
                                        | ErrorCode::LeaseIdMismatchWithBlobOperation
                                ),
                                "a released id wrote or failed oddly: {error:?}"
                            );
                        }
                        stale = Some(lease.id);
                    }
                });
            }
        });
        assert_eq!(violations.load(Ordering::SeqCst), 0, "two holders at once");
        let fences = fences.into_inner().unwrap();
        assert!(
            fences.len() > THREADS,
            "too little contention: {} grants",
            fences.len()
        );
        for pair in fences.windows(2) {
            assert!(
                pair[0] < pair[1],
                "fences out of acquisition order: {pair:?}"
            );
        }
        eprintln!(
            "{} grants, {} plain writes got through between leases",
            fences.len(),
            plain_writes.load(Ordering::Relaxed)
        );
    }

    /// Waiters arrive in a known order (staggered); each takes the lease in turn.
    #[test]
    fn the_waiting_acquire_serves_waiters_in_arrival_order() {
        const WAITERS: usize = 5;
        let fixture = Fixture::new(Target::Item);
        let store = fixture.store();
        let held = store
            .acquire_lease("c", KEY, &request(Some(60), None))
            .unwrap();
        let granted = Mutex::new(Vec::new());
        std::thread::scope(|scope| {
            for waiter in 0..WAITERS {
                let granted = &granted;
                scope.spawn(move || {
                    let lease = store
                        .acquire_lease_wait(
                            "c",
                            KEY,
                            &request(Some(60), None),
                            Duration::from_secs(20),
                        )
                        .unwrap_or_else(|error| panic!("waiter {waiter}: {error:?}"));
                    granted.lock().unwrap().push((waiter, lease.fence));
                    store.release_lease("c", KEY, lease.id).unwrap();
                });
                // Stagger the arrivals so their order is known.
                std::thread::sleep(Duration::from_millis(60));
            }
            // The plain acquire never waits, also while others wait.
            let started = std::time::Instant::now();
            assert_eq!(
                store
                    .acquire_lease("c", KEY, &request(Some(60), None))
                    .unwrap_err()
                    .code(),
                ErrorCode::LeaseAlreadyPresent
            );
            assert!(started.elapsed() < Duration::from_secs(1));
            store.release_lease("c", KEY, held.id).unwrap();
        });
        let granted = granted.into_inner().unwrap();
        let order: Vec<usize> = granted.iter().map(|(waiter, _)| *waiter).collect();
        assert_eq!(
            order,
            (0..WAITERS).collect::<Vec<_>>(),
            "first come, first served"
        );
        for pair in granted.windows(2) {
            assert!(pair[0].1 < pair[1].1, "fences in grant order: {granted:?}");
        }
        assert!(granted[0].1 > held.fence);
    }

    /// Threads contend while one lease is held; the store is closed and reopened in the middle
    /// (and crashes once); the lease still excludes them all, and its holder still writes.
    #[test]
    fn a_reopen_in_the_middle_of_contention_keeps_the_lease() {
        let mut fixture = Fixture::new(Target::Item);
        let lease = fixture.acquire(&request(Some(60), None)).unwrap();
        let contend = |store: &Store| {
            std::thread::scope(|scope| {
                for _ in 0..4 {
                    scope.spawn(|| {
                        for _ in 0..50 {
                            assert_eq!(
                                store
                                    .acquire_lease("c", KEY, &request(Some(15), None))
                                    .unwrap_err()
                                    .code(),
                                ErrorCode::LeaseAlreadyPresent
                            );
                            assert_eq!(
                                store
                                    .put("c", KEY, b"intruder", &WriteOptions::default())
                                    .unwrap_err()
                                    .code(),
                                ErrorCode::LeaseIdMissing
                            );
                        }
                    });
                }
            });
        };
        let with_id = WriteOptions {
            lease_id: Some(lease.id),
            ..WriteOptions::default()
        };
        contend(fixture.store());
        fixture.store().put("c", KEY, b"before", &with_id).unwrap();
        fixture.reopen();
        contend(fixture.store());
        fixture
            .store()
            .put("c", KEY, b"after reopen", &with_id)
            .unwrap();
        fixture.crash();
        contend(fixture.store());
        fixture
            .store()
            .put("c", KEY, b"after crash", &with_id)
            .unwrap();
        assert_eq!(fixture.info().fence, Some(lease.fence));
        fixture.release(lease.id).unwrap();
        let next = fixture.acquire(&request(Some(15), None)).unwrap();
        assert!(next.fence > lease.fence);
    }

    #[test]
    fn a_waiter_gets_the_lease_when_it_expires_by_the_store_clock() {
        let fixture = Fixture::new(Target::Item);
        let store = fixture.store();
        let held = store
            .acquire_lease("c", KEY, &request(Some(15), None))
            .unwrap();
        std::thread::scope(|scope| {
            let waiter = scope.spawn(|| {
                store.acquire_lease_wait(
                    "c",
                    KEY,
                    &request(Some(15), None),
                    Duration::from_secs(20),
                )
            });
            std::thread::sleep(Duration::from_millis(30));
            fixture.clock.advance_seconds(15);
            let lease = waiter.join().unwrap().unwrap();
            assert!(lease.fence > held.fence);
        });
    }

    #[test]
    fn a_waiter_gets_a_broken_lease_and_times_out_on_a_held_one() {
        let fixture = Fixture::new(Target::Item);
        let store = fixture.store();
        store.acquire_lease("c", KEY, &request(None, None)).unwrap();
        std::thread::scope(|scope| {
            let waiter = scope.spawn(|| {
                store.acquire_lease_wait(
                    "c",
                    KEY,
                    &request(Some(15), Some(B)),
                    Duration::from_secs(20),
                )
            });
            std::thread::sleep(Duration::from_millis(30));
            store.break_lease("c", KEY, Some(0)).unwrap();
            assert_eq!(waiter.join().unwrap().unwrap().id, B);
        });
        let timed_out = store
            .acquire_lease_wait(
                "c",
                KEY,
                &request(Some(15), None),
                Duration::from_millis(50),
            )
            .unwrap_err();
        assert_eq!(timed_out.code(), ErrorCode::LeaseAlreadyPresent);
        assert_eq!(
            store
                .acquire_lease_wait(
                    "c",
                    b"missing",
                    &request(Some(15), None),
                    Duration::from_secs(5)
                )
                .unwrap_err()
                .code(),
            ErrorCode::NotFound
        );
    }
}
