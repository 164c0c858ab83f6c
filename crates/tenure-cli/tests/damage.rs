//! What goes wrong: bad arguments, a missing store, a store locked by another process, and
//! damaged stores (verify names the offset and exits 1; repair salvages).

mod support;

use std::path::Path;

use support::{scratch, store_with_items, tenure, text};

fn version_of(dir: &str) -> u64 {
    tenure(&["--json", "stat", dir]).expect(0).json()["version"]
        .as_u64()
        .expect("version")
}

#[test]
fn bad_arguments_exit_2_name_the_argument_and_change_nothing() {
    let dir = text(&store_with_items("bad-arguments", 2));
    let version = version_of(&dir);
    let cases: &[(&[&str], &str)] = &[
        (
            &[
                "put",
                &dir,
                "docs",
                "key-1",
                "x",
                "--lease-id",
                "not-a-uuid",
            ],
            "--lease-id",
        ),
        (
            &["put", &dir, "docs", "key-1", "x", "--if-match", "a\"b"],
            "--if-match",
        ),
        (
            &["put", &dir, "docs", "key-1", "x", "--if-match", ""],
            "--if-match",
        ),
        (
            &[
                "get",
                &dir,
                "docs",
                "key-1",
                "--if-modified-since",
                "yesterday",
            ],
            "--if-modified-since",
        ),
        (
            &["put", &dir, "docs", "key-1", "x", "--if-version", "-3"],
            "--if-version",
        ),
        (&["put", &dir, "docs", "key-1", "x", "--ttl", "0"], "--ttl"),
        (
            &["put", &dir, "docs", "key-1", "x", "--ttl", "soon"],
            "--ttl",
        ),
        (
            &["put", &dir, "docs", "key-1", "x", "--lock-handle", "xyz"],
            "--lock-handle",
        ),
        (
            &["put", &dir, "docs", "key-1", "x", "--metadata", "novalue"],
            "--metadata",
        ),
        (&["put", &dir, "docs", "key-1"], "VALUE"),
        (&["put", &dir, "docs", "", "x"], "key"),
        (&["put", &dir, "/bad", "k", "x"], "container"),
        (
            &[
                "lease",
                "acquire",
                &dir,
                "docs",
                "key-1",
                "--duration",
                "10",
            ],
            "--duration",
        ),
        (
            &[
                "lease",
                "break",
                &dir,
                "docs",
                "key-1",
                "--break-period",
                "61",
            ],
            "--break-period",
        ),
        (
            &["lease", "renew", &dir, "docs", "key-1", "--lease-id", "123"],
            "--lease-id",
        ),
        (
            &["lock", "get", &dir, "docs", "key-1", "--timeout", "0"],
            "--timeout",
        ),
        (
            &["lock", "get", &dir, "docs", "key-1", "--timeout", "NaN"],
            "--timeout",
        ),
        (&["changes", &dir, "--max", "0"], "--max"),
        (&["changes", &dir, "--since", "x"], "--since"),
        (
            &["get", &dir, "docs", "key-1", "--if-none-match", "*"],
            "if_none_match",
        ),
        (&["frobnicate", &dir], "frobnicate"),
        (&["get", &dir], "CONTAINER"),
        (&["stat"], "DIR"),
    ];
    for (args, named) in cases {
        let run = tenure(args);
        assert_eq!(
            run.code, 2,
            "{args:?}\nstdout: {}\nstderr: {}",
            run.stdout, run.stderr
        );
        assert!(
            run.stderr.contains(named),
            "{args:?} should name {named}: {}",
            run.stderr
        );
        assert!(!run.stderr.contains("panicked"), "{args:?}: {}", run.stderr);
    }
    assert_eq!(version_of(&dir), version, "nothing was written");
    let value = tenure(&["get", &dir, "docs", "key-1", "--value-only"]).expect(0);
    assert_eq!(value.stdout, "value-1");
}

#[test]
fn an_unreadable_value_file_is_io_exit_6() {
    let dir = text(&store_with_items("io", 1));
    let missing = scratch("io-file").join("no-such-file");
    let run = tenure(&[
        "put",
        &dir,
        "docs",
        "key-1",
        "--value-file",
        &text(&missing),
    ])
    .expect(6);
    assert!(run.stderr.contains("Io (500)"), "{}", run.stderr);
    assert!(run.stderr.contains("no-such-file"), "{}", run.stderr);
    let value = tenure(&["get", &dir, "docs", "key-1", "--value-only"]).expect(0);
    assert_eq!(value.stdout, "value-1");
}

#[test]
fn help_documents_the_exit_codes() {
    let help = tenure(&["--help"]).expect(0);
    for line in [
        "Exit codes:",
        "0  success",
        "1  verify found problems",
        "2  bad usage",
        "3  no tenure store",
        "4  StoreLocked",
        "5  Corruption",
        "6  Io",
        "7  Compacted",
    ] {
        assert!(help.stdout.contains(line), "{line}: {}", help.stdout);
    }
    for command in [
        "demo", "stat", "get", "put", "delete", "list", "lease", "verify", "repair", "compact",
        "changes", "dump", "bench",
    ] {
        assert!(help.stdout.contains(&format!("  {command} ")), "{command}");
    }
    let version = tenure(&["--version"]).expect(0);
    assert!(version.stdout.starts_with("tenure "), "{}", version.stdout);
}

#[test]
fn a_missing_store_exits_3_and_is_never_created() {
    let dir = scratch("missing").join("nowhere");
    let path = text(&dir);
    let commands: &[&[&str]] = &[
        &["stat", &path],
        &["get", &path, "docs", "k"],
        &["put", &path, "docs", "k", "v"],
        &["delete", &path, "docs", "k"],
        &["list", &path],
        &["lease", "show", &path, "docs", "k"],
        &["lock", "get", &path, "docs", "k", "--timeout", "1"],
        &["verify", &path],
        &["repair", &path],
        &["compact", &path],
        &["changes", &path],
        &["dump", &path],
        &["container", "list", &path],
    ];
    for args in commands {
        let run = tenure(args);
        assert_eq!(run.code, 3, "{args:?}: {}", run.stderr);
        assert!(
            run.stderr.contains("no tenure store at"),
            "{args:?}: {}",
            run.stderr
        );
        assert!(!dir.exists(), "{args:?} created the store");
    }
    // An existing directory without a store is not a store either.
    std::fs::create_dir_all(&dir).expect("directory");
    tenure(&["stat", &path]).expect(3);
    tenure(&["verify", &path]).expect(3);
    assert!(!dir.join("superblock").exists());
}

/// Commands that write refuse a store another process holds open (`StoreLocked`, exit 4);
/// the inspection commands open it read-only and work beside the application.
#[test]
fn a_store_open_in_another_process_is_store_locked() {
    let dir = store_with_items("locked", 2);
    let store = tenure::Store::open(&dir, tenure::StoreOptions::default()).expect("open");
    let path = text(&dir);
    let commands: &[&[&str]] = &[
        &["put", &path, "docs", "key-1", "v"],
        &["repair", &path],
        &[
            "lease",
            "acquire",
            &path,
            "docs",
            "key-1",
            "--duration",
            "15",
        ],
    ];
    for args in commands {
        let run = tenure(args);
        assert_eq!(run.code, 4, "{args:?}: {}", run.stderr);
        assert!(
            run.stderr.contains("StoreLocked (423)"),
            "{args:?}: {}",
            run.stderr
        );
        assert!(
            run.stderr.contains(&path),
            "{args:?} names the path: {}",
            run.stderr
        );
    }
    let json = tenure(&["--json", "put", &path, "docs", "key-1", "v"])
        .expect(4)
        .json();
    assert_eq!(json["error"]["code"], "StoreLocked");
    // The inspection commands work on the open store and see what it holds.
    for args in [
        &["verify", &path][..],
        &["stat", &path],
        &["dump", &path],
        &["list", &path, "docs"],
        &["container", "list", &path],
        &["changes", &path, "--since", "0"],
    ] {
        let run = tenure(args);
        assert_eq!(run.code, 0, "{args:?} on an open store: {}", run.stderr);
    }
    let run = tenure(&["get", &path, "docs", "key-1"]);
    assert_eq!(run.code, 0, "get on an open store: {}", run.stderr);
    assert!(run.stdout.contains("value-1"), "{}", run.stdout);
    // Nothing changed underneath the open store.
    let item = store
        .get("docs", b"key-1", &Default::default())
        .expect("get");
    assert_eq!(item.value.as_deref(), Some(&b"value-1"[..]));
    support::close(store);
    tenure(&["stat", &path]).expect(0);
}

/// `changes --follow` on a store an application holds open prints the application's writes
/// as they are committed, and stops after `--max` of them.
#[test]
fn changes_follow_prints_an_open_stores_writes_as_they_come() {
    use std::io::{BufRead, BufReader};
    let dir = store_with_items("follow", 2);
    let store = tenure::Store::open(&dir, tenure::StoreOptions::default()).expect("open");
    let path = text(&dir);
    let since = store.version().to_string();
    let mut child = support::spawn_piped(&[
        "changes", &path, "--since", &since, "--follow", "--max", "3",
    ]);
    let mut lines = BufReader::new(child.stdout.take().expect("piped")).lines();
    for index in 0..3 {
        let key = format!("live-{index}");
        store
            .put(
                "docs",
                key.as_bytes(),
                b"v",
                &tenure::WriteOptions::default(),
            )
            .expect("put");
        let line = lines.next().expect("a line per change").expect("text");
        assert!(
            line.contains("created") && line.contains(&format!("docs/{key}")),
            "{line}"
        );
    }
    let status = child.wait().expect("the command ends after --max changes");
    assert!(status.success());
    support::close(store);
}

/// Flips one byte inside the value `marker` in the store's first segment; returns the byte's
/// offset in the file.
fn flip_byte_in(dir: &Path, marker: &[u8]) -> u64 {
    let segment = dir.join("segment-0000000000000000.log");
    let mut bytes = std::fs::read(&segment).expect("read segment");
    let at = bytes
        .windows(marker.len())
        .position(|window| window == marker)
        .expect("the marker is in the segment");
    bytes[at + 2] ^= 0x5A;
    std::fs::write(&segment, &bytes).expect("write segment");
    (at + 2) as u64
}

/// The record offsets `verify --json` names.
fn problem_offsets(report: &serde_json::Value) -> Vec<u64> {
    report["problems"]
        .as_array()
        .expect("problems")
        .iter()
        .map(|problem| problem["offset"].as_u64().expect("offset"))
        .collect()
}

#[test]
fn a_flipped_byte_is_found_by_verify_and_salvaged_by_repair() {
    let dir = store_with_items("corrupt", 8);
    let path = text(&dir);
    tenure(&["verify", &path]).expect(0);
    let flipped = flip_byte_in(&dir, b"value-5");

    // The store refuses to open, with the code name and the place.
    let open = tenure(&["get", &path, "docs", "key-1"]).expect(5);
    assert!(open.stderr.contains("Corruption (500)"), "{}", open.stderr);
    assert!(
        open.stderr.contains("segment-0000000000000000.log"),
        "{}",
        open.stderr
    );

    let report = tenure(&["--json", "verify", &path]).expect(1).json();
    assert_eq!(report["clean"], false);
    let offsets = problem_offsets(&report);
    assert_eq!(offsets.len(), 1, "{report}");
    // The damaged record starts before the flipped byte, within one small record of it.
    assert!(
        offsets[0] <= flipped && flipped - offsets[0] < 200,
        "{offsets:?} vs {flipped}"
    );
    assert_eq!(report["versions_lost"], 1);
    let text_report = tenure(&["verify", &path]).expect(1);
    let expected = format!(
        "segment-0000000000000000.log at offset {}: checksum mismatch",
        offsets[0]
    );
    assert!(
        text_report.stdout.contains(&expected),
        "{}",
        text_report.stdout
    );

    let repair = tenure(&["repair", &path]).expect(0);
    assert!(
        repair.stdout.contains("salvaged: kept 8 records"),
        "{}",
        repair.stdout
    );
    assert!(
        repair.stdout.contains("original files moved to"),
        "{}",
        repair.stdout
    );
    assert!(
        repair
            .stdout
            .contains("opens at version 9: 1 containers, 7 items"),
        "{}",
        repair.stdout
    );
    // Every record before and after the damage is back; the damaged one is gone.
    for index in [1, 2, 3, 4, 6, 7, 8] {
        let value = tenure(&[
            "get",
            &path,
            "docs",
            &format!("key-{index}"),
            "--value-only",
        ])
        .expect(0);
        assert_eq!(value.stdout, format!("value-{index}"));
    }
    tenure(&["get", &path, "docs", "key-5"]).expect(1);
    tenure(&["verify", &path]).expect(0);
    // A clean store is left alone.
    let again = tenure(&["--json", "repair", &path]).expect(0).json();
    assert_eq!(again["rewritten"], false);
    // The salvaged store takes writes, and versions keep increasing.
    let put = tenure(&["--json", "put", &path, "docs", "key-5", "rewritten"])
        .expect(0)
        .json();
    assert!(put["version"].as_u64().unwrap() > 9);
}

#[test]
fn damage_in_two_places_is_reported_twice() {
    let dir = store_with_items("corrupt-twice", 8);
    let path = text(&dir);
    flip_byte_in(&dir, b"value-2");
    flip_byte_in(&dir, b"value-7");
    let report = tenure(&["--json", "verify", &path]).expect(1).json();
    assert_eq!(problem_offsets(&report).len(), 2, "{report}");
    assert_eq!(report["versions_lost"], 2);
    tenure(&["repair", &path]).expect(0);
    let stat = tenure(&["--json", "stat", &path]).expect(0).json();
    assert_eq!(stat["items"], 6);
}

#[test]
fn a_destroyed_superblock_is_reported_and_rebuilt() {
    let dir = store_with_items("superblock", 5);
    let path = text(&dir);
    std::fs::write(dir.join("superblock"), vec![0xEE; 1024]).expect("overwrite");
    tenure(&["stat", &path]).expect(5);
    let report = tenure(&["--json", "verify", &path]).expect(1).json();
    let reasons = report["problems"].to_string();
    assert!(reasons.contains("neither superblock copy"), "{reasons}");
    tenure(&["repair", &path]).expect(0);
    let stat = tenure(&["--json", "stat", &path]).expect(0).json();
    assert_eq!(stat["items"], 5);
}

#[test]
fn hostile_bytes_never_crash_verify_or_repair() {
    let dir = store_with_items("hostile", 3);
    let path = text(&dir);
    let segment = dir.join("segment-0000000000000000.log");
    let mut bytes = std::fs::read(&segment).expect("read");
    // A pseudo-random pattern over the start of the log, including its first record.
    let mut state = 0x2545_F491_4F6C_DD1Du64;
    for byte in bytes.iter_mut().take(4096) {
        state ^= state << 13;
        state ^= state >> 7;
        state ^= state << 17;
        *byte = state as u8;
    }
    std::fs::write(&segment, &bytes).expect("write");
    let verify = tenure(&["verify", &path]).expect(1);
    assert!(verify.stdout.contains("problem:"), "{}", verify.stdout);
    let repair = tenure(&["repair", &path]);
    assert!(!repair.stderr.contains("panicked"), "{}", repair.stderr);
    assert_eq!(repair.code, 0, "{}", repair.stderr);
    tenure(&["verify", &path]).expect(0);
    tenure(&["stat", &path]).expect(0);
}

#[test]
fn a_truncated_segment_is_a_problem_with_its_file_named() {
    let dir = store_with_items("truncated", 3);
    let path = text(&dir);
    let segment = dir.join("segment-0000000000000000.log");
    let file = std::fs::OpenOptions::new()
        .write(true)
        .open(&segment)
        .expect("open");
    file.set_len(1000).expect("truncate");
    drop(file);
    let report = tenure(&["--json", "verify", &path]).expect(1).json();
    let problems = report["problems"].to_string();
    assert!(
        problems.contains("segment-0000000000000000.log"),
        "{problems}"
    );
    assert!(problems.contains("not a positive multiple"), "{problems}");
}
