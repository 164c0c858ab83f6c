//! `tenure demo`: every scenario runs, the story is the same on every run, and it never
//! touches a directory it did not make.

mod support;

use support::{scratch, tenure, text};

/// The story part: everything before the throughput run (whose figures vary).
fn story(stdout: &str) -> String {
    stdout
        .split("\n7. Throughput")
        .next()
        .expect("a story")
        .to_owned()
}

#[test]
fn the_demo_runs_every_scenario_and_tells_what_happened() {
    let dir = scratch("demo").join("tenure-demo");
    let run = tenure(&["demo", &text(&dir), "--quick"]).expect(0);
    let out = &run.stdout;
    for expected in [
        "Bob:   put count=9 --if-match \"0x0000000000000002\" -> ConditionNotMet (412), current ETag \"0x0000000000000003\"",
        "writer without the lease id: put count=0           -> LeaseIdMissing (412)",
        "operator: break the lease, break period 0          -> broken, 0 s until it can be acquired again",
        "holder, unaware: put count=6 --lease-id <its id>   -> LeaseLost (412)",
        "client 2: put radios=11 --if-version 10            -> VersionMismatch (412)",
        "client 2: get-and-lock                             -> ObjectLocked (409)",
        "client 1: put-and-unlock radios=10                 -> ok, version 13, unlocked",
        "page 3: order-007                                  -> last page",
        "resumes from its token",
        "worker B: acquire                                  -> LeaseAlreadyPresent (409)",
        "(clock +10 s) lease show                           -> broken",
        "-> ok: C's lock timed out by itself",
        "50 rounds: both put --if-match the same ETag       -> 50 wins, 50 ConditionNotMet, 0 rounds with two winners",
        "counter = 100 (no lost update)",
        "7. Throughput",
        "conditional put",
        "lease acquire+release",
    ] {
        assert!(out.contains(expected), "missing {expected:?} in:\n{out}");
    }
    let rates = out
        .lines()
        .filter(|line| line.trim_end().ends_with("ops/s"))
        .count();
    assert_eq!(rates, 3, "{out}");
    // The store it leaves is a real, clean store the other commands can look at.
    tenure(&["verify", &text(&dir)]).expect(0);
    let stat = tenure(&["--json", "stat", &text(&dir)]).expect(0).json();
    assert_eq!(stat["active_locks"], 0);
    let item = tenure(&[
        "get",
        &text(&dir),
        "cache",
        "RadioInventory",
        "--value-only",
    ])
    .expect(0);
    assert_eq!(item.stdout, "radios=10");
}

#[test]
fn the_story_is_the_same_on_every_run() {
    let dir = scratch("demo-twice").join("tenure-demo");
    let first = tenure(&["demo", &text(&dir), "--quick"]).expect(0);
    let second = tenure(&["demo", &text(&dir), "--quick", "--duration-ms", "50"]).expect(0);
    assert_eq!(story(&first.stdout), story(&second.stdout));
    assert!(story(&first.stdout).lines().count() > 40);
}

#[test]
fn the_demo_never_replaces_a_directory_it_did_not_make() {
    let dir = scratch("demo-foreign");
    std::fs::write(dir.join("precious.txt"), "keep me").expect("write");
    let run = tenure(&["demo", &text(&dir), "--quick"]).expect(2);
    assert!(
        run.stderr.contains("was not made by `tenure demo`"),
        "{}",
        run.stderr
    );
    assert_eq!(
        std::fs::read_to_string(dir.join("precious.txt")).expect("kept"),
        "keep me"
    );
    tenure(&["demo", &text(&dir.join("d")), "--duration-ms", "0"]).expect(2);
}

#[test]
fn the_demo_refuses_while_its_store_is_open() {
    let dir = scratch("demo-locked").join("tenure-demo");
    tenure(&["demo", &text(&dir), "--quick"]).expect(0);
    let store = tenure::Store::open(&dir, tenure::StoreOptions::default()).expect("open");
    let run = tenure(&["demo", &text(&dir), "--quick"]).expect(4);
    assert!(run.stderr.contains("StoreLocked"), "{}", run.stderr);
    assert!(store.list_containers().expect("still there").len() >= 4);
    support::close(store);
}
