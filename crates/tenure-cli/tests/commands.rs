//! Every subcommand through the real binary: containers, items with conditions as flags,
//! listing, leases, locks, the change feed, dump, stat, compact and bench.

mod support;

use std::path::Path;

use support::{scratch, store_with_items, tenure, tenure_with_stdin, text};

#[test]
fn container_create_list_show_delete() {
    let dir = scratch("containers").join("store");
    let dir = text(&dir);
    let created = tenure(&[
        "container",
        "create",
        &dir,
        "inventory",
        "--metadata",
        "team=ops",
    ]);
    assert!(created
        .expect(0)
        .stdout
        .contains("created container inventory"));
    tenure(&["container", "create", &dir, "inventory"]).expect(1);
    tenure(&["container", "create", &dir, "inventory", "--exist-ok"]).expect(0);
    tenure(&["container", "create", &dir, "orders", "--default-ttl", "60"]).expect(0);
    let list = tenure(&["--json", "container", "list", &dir])
        .expect(0)
        .json();
    assert_eq!(
        list["containers"],
        serde_json::json!(["inventory", "orders"])
    );
    let show = tenure(&["--json", "container", "show", &dir, "orders"])
        .expect(0)
        .json();
    assert_eq!(show["default_ttl_seconds"], 60);
    assert_eq!(show["lease"]["state"], "available");
    let show = tenure(&["container", "show", &dir, "inventory"]).expect(0);
    assert!(show.stdout.contains("team=ops"), "{}", show.stdout);
    tenure(&["container", "delete", &dir, "orders"]).expect(0);
    let names = tenure(&["list", &dir]).expect(0);
    assert_eq!(names.stdout, "inventory\n");
    let missing = tenure(&["container", "delete", &dir, "orders"]).expect(1);
    assert!(
        missing.stderr.contains("ContainerNotFound (404)"),
        "{}",
        missing.stderr
    );
}

#[test]
fn put_then_get_shows_value_etag_and_properties() {
    let dir = text(&store_with_items("get", 0));
    let put = tenure(&[
        "--json",
        "put",
        &dir,
        "docs",
        "RadioInventory",
        "count=10",
        "--content-type",
        "text/plain",
        "--metadata",
        "owner=alice",
    ])
    .expect(0)
    .json();
    let etag = put["etag"].as_str().expect("etag").to_owned();
    let item = tenure(&["--json", "get", &dir, "docs", "RadioInventory"])
        .expect(0)
        .json();
    assert_eq!(item["value"], "count=10");
    assert_eq!(item["etag"], etag.as_str());
    assert_eq!(item["version"], put["version"]);
    assert_eq!(item["content_type"], "text/plain");
    assert_eq!(item["metadata"]["owner"], "alice");
    let raw = tenure(&["get", &dir, "docs", "RadioInventory", "--value-only"]).expect(0);
    assert_eq!(raw.stdout, "count=10");
    let text_form = tenure(&["get", &dir, "docs", "RadioInventory"]).expect(0);
    assert!(
        text_form.stdout.contains(&format!("etag:          {etag}")),
        "{}",
        text_form.stdout
    );
    let properties = tenure(&[
        "--json",
        "get",
        &dir,
        "docs",
        "RadioInventory",
        "--properties",
    ])
    .expect(0)
    .json();
    assert!(properties.get("value").is_none());
    let missing = tenure(&["get", &dir, "docs", "nothing"]).expect(1);
    assert!(
        missing.stderr.contains("NotFound (404)"),
        "{}",
        missing.stderr
    );
}

#[test]
fn a_stale_if_match_is_condition_not_met_and_changes_nothing() {
    let dir = text(&store_with_items("if-match", 0));
    let first = tenure(&["put", &dir, "docs", "k", "v1"])
        .expect(0)
        .stdout
        .trim()
        .to_owned();
    let second = tenure(&["put", &dir, "docs", "k", "v2", "--if-match", &first])
        .expect(0)
        .stdout
        .trim()
        .to_owned();
    assert_ne!(first, second);
    // The ETag without its quotes is accepted too.
    let stale = tenure(&[
        "put",
        &dir,
        "docs",
        "k",
        "v3",
        "--if-match",
        first.trim_matches('"'),
    ])
    .expect(1);
    assert!(
        stale.stderr.contains("ConditionNotMet (412)"),
        "{}",
        stale.stderr
    );
    assert!(
        stale.stderr.contains(&second),
        "reports the current ETag: {}",
        stale.stderr
    );
    let value = tenure(&["get", &dir, "docs", "k", "--value-only"]).expect(0);
    assert_eq!(value.stdout, "v2");
    let json_error = tenure(&[
        "--json",
        "put",
        &dir,
        "docs",
        "k",
        "v3",
        "--if-match",
        &first,
    ])
    .expect(1)
    .json();
    assert_eq!(json_error["error"]["code"], "ConditionNotMet");
    assert_eq!(json_error["error"]["status"], 412);
    // The current ETag, and what the error is about, as fields a script can read.
    assert_eq!(json_error["error"]["etag"], second.as_str(), "{json_error}");
    assert_eq!(json_error["error"]["container"], "docs");
    assert_eq!(json_error["error"]["key"], "k");
    assert!(
        stale.stderr.contains("key 'k' in container 'docs'"),
        "{}",
        stale.stderr
    );
    let missing = tenure(&["get", &dir, "docs", "nothing-here"]).expect(1);
    assert!(
        missing
            .stderr
            .contains("NotFound (404): key 'nothing-here' in container 'docs'"),
        "{}",
        missing.stderr
    );
}

#[test]
fn create_only_and_read_conditions() {
    let dir = text(&store_with_items("create-only", 0));
    let etag = tenure(&["put", &dir, "docs", "k", "v1", "--if-none-match", "*"])
        .expect(0)
        .stdout
        .trim()
        .to_owned();
    let again = tenure(&["put", &dir, "docs", "k", "v2", "--if-none-match", "*"]).expect(1);
    assert!(
        again.stderr.contains("AlreadyExists (409)"),
        "{}",
        again.stderr
    );
    let not_modified = tenure(&["get", &dir, "docs", "k", "--if-none-match", &etag]).expect(1);
    assert!(
        not_modified.stderr.contains("NotModified (304)"),
        "{}",
        not_modified.stderr
    );
    tenure(&[
        "get",
        &dir,
        "docs",
        "k",
        "--if-none-match",
        "\"0x00000000000000FF\"",
    ])
    .expect(0);
    let item = tenure(&["--json", "get", &dir, "docs", "k"])
        .expect(0)
        .json();
    let modified = item["last_modified_us"].as_u64().expect("µs");
    // At or before last_modified: not modified since; one µs earlier: modified since.
    let at = modified.to_string();
    let before = (modified - 1).to_string();
    tenure(&["get", &dir, "docs", "k", "--if-modified-since", &at]).expect(1);
    tenure(&["get", &dir, "docs", "k", "--if-modified-since", &before]).expect(0);
    tenure(&[
        "get",
        &dir,
        "docs",
        "k",
        "--if-modified-since",
        "2000-01-01T00:00:00Z",
    ])
    .expect(0);
    tenure(&[
        "put",
        &dir,
        "docs",
        "k",
        "v3",
        "--if-unmodified-since",
        "2000-01-01T00:00:00Z",
    ])
    .expect(1);
    tenure(&["put", &dir, "docs", "k", "v3", "--if-unmodified-since", &at]).expect(0);
}

#[test]
fn versioned_put_and_delete() {
    let dir = text(&store_with_items("if-version", 0));
    let put = tenure(&["--json", "put", &dir, "docs", "k", "v1"])
        .expect(0)
        .json();
    let version = put["version"].as_u64().expect("version").to_string();
    tenure(&["put", &dir, "docs", "k", "v2", "--if-version", &version]).expect(0);
    let stale = tenure(&["put", &dir, "docs", "k", "v3", "--if-version", &version]).expect(1);
    assert!(
        stale.stderr.contains("VersionMismatch (412)"),
        "{}",
        stale.stderr
    );
    let deleted = tenure(&["delete", &dir, "docs", "k", "--if-match", "*"]).expect(0);
    assert_eq!(deleted.stdout, "deleted\n");
    tenure(&["get", &dir, "docs", "k"]).expect(1);
    tenure(&["delete", &dir, "docs", "k"]).expect(1);
}

#[test]
fn values_from_a_file_and_from_stdin() {
    let scratch_dir = scratch("value-file");
    let dir = text(&store_with_items("value-file-store", 0));
    let file = scratch_dir.join("value.bin");
    std::fs::write(&file, [0u8, 159, 146, 150, 255]).expect("write");
    tenure(&["put", &dir, "docs", "binary", "--value-file", &text(&file)]).expect(0);
    let item = tenure(&["--json", "get", &dir, "docs", "binary"])
        .expect(0)
        .json();
    assert_eq!(item["value_hex"], "009f9296ff");
    tenure_with_stdin(
        &["put", &dir, "docs", "piped", "--value-file", "-"],
        Some(b"from stdin"),
    )
    .expect(0);
    let value = tenure(&["get", &dir, "docs", "piped", "--value-only"]).expect(0);
    assert_eq!(value.stdout, "from stdin");
}

#[test]
fn list_prints_one_page_and_its_token_unless_all() {
    let dir = text(&store_with_items("list-page", 25));
    let page = tenure(&["list", &dir, "docs", "--page-size", "10"]).expect(0);
    let lines: Vec<&str> = page.stdout.lines().collect();
    assert_eq!(lines.len(), 11, "ten items and the token: {}", page.stdout);
    assert!(lines[10].starts_with("continuation: "), "{}", page.stdout);
    assert!(page.stderr.contains("--all"), "{}", page.stderr);
    let default_page = tenure(&["--json", "list", &dir, "docs", "--page-size", "10"])
        .expect(0)
        .json();
    assert_eq!(default_page["items"].as_array().expect("items").len(), 10);
    assert!(default_page["continuation"].is_string(), "{default_page}");
    let everything = tenure(&["list", &dir, "docs", "--page-size", "10", "--all"]).expect(0);
    assert_eq!(
        everything.stdout.lines().count(),
        25,
        "{}",
        everything.stdout
    );
    // The old flag still works and means the default.
    let single = tenure(&["list", &dir, "docs", "--page-size", "10", "--single-page"]).expect(0);
    assert_eq!(single.stdout, page.stdout);
}

#[test]
fn list_follows_pages_or_prints_one_with_its_token() {
    let dir = text(&store_with_items("list", 7));
    let all = tenure(&["--json", "list", &dir, "docs", "--page-size", "3", "--all"])
        .expect(0)
        .json();
    let keys: Vec<&str> = all["items"]
        .as_array()
        .expect("items")
        .iter()
        .map(|item| item["key"].as_str().expect("key"))
        .collect();
    assert_eq!(
        keys,
        ["key-1", "key-2", "key-3", "key-4", "key-5", "key-6", "key-7"]
    );
    assert!(all["continuation"].is_null());
    let first = tenure(&[
        "--json",
        "list",
        &dir,
        "docs",
        "--page-size",
        "3",
        "--single-page",
    ])
    .expect(0)
    .json();
    assert_eq!(first["items"].as_array().expect("items").len(), 3);
    let token = first["continuation"].as_str().expect("a token").to_owned();
    let rest = tenure(&[
        "list",
        &dir,
        "docs",
        "--page-size",
        "3",
        "--continuation",
        &token,
        "--all",
    ])
    .expect(0);
    assert!(rest.stdout.starts_with("key-4"), "{}", rest.stdout);
    assert!(rest.stdout.contains("key-7"), "{}", rest.stdout);
    let prefixed = tenure(&["list", &dir, "docs", "--prefix", "key-5", "--values"]).expect(0);
    assert_eq!(prefixed.stdout.lines().count(), 1);
    assert!(prefixed.stdout.contains("= value-5"), "{}", prefixed.stdout);
    let bad = tenure(&["list", &dir, "docs", "--page-size", "0"]).expect(2);
    assert!(bad.stderr.contains("--page-size"), "{}", bad.stderr);
}

#[test]
fn an_item_lease_across_processes() {
    let dir = text(&store_with_items("lease", 1));
    let acquired = tenure(&[
        "--json",
        "lease",
        "acquire",
        &dir,
        "docs",
        "key-1",
        "--duration",
        "15",
        "--holder",
        "worker-a",
    ])
    .expect(0)
    .json();
    let id = acquired["lease_id"].as_str().expect("id").to_owned();
    let fence = acquired["fence"].as_u64().expect("fence");
    let refused = tenure(&["put", &dir, "docs", "key-1", "x"]).expect(1);
    assert!(
        refused.stderr.contains("LeaseIdMissing (412)"),
        "{}",
        refused.stderr
    );
    assert!(refused.stderr.contains("--lease-id"), "{}", refused.stderr);
    tenure(&["put", &dir, "docs", "key-1", "y", "--lease-id", &id]).expect(0);
    let other = tenure(&[
        "lease",
        "acquire",
        &dir,
        "docs",
        "key-1",
        "--duration",
        "15",
    ])
    .expect(1);
    assert!(
        other.stderr.contains("LeaseAlreadyPresent (409)"),
        "{}",
        other.stderr
    );
    let show = tenure(&["--json", "lease", "show", &dir, "docs", "key-1"])
        .expect(0)
        .json();
    assert_eq!(show["state"], "leased");
    assert_eq!(show["lease_id"], id.as_str());
    assert_eq!(show["holder"], "worker-a");
    assert_eq!(show["fence"].as_u64(), Some(fence));
    tenure(&["lease", "renew", &dir, "docs", "key-1", "--lease-id", &id]).expect(0);
    let new_id = "3f2504e0-4f89-11d3-9a0c-0305e82c3301";
    tenure(&[
        "lease",
        "change",
        &dir,
        "docs",
        "key-1",
        "--lease-id",
        &id,
        "--proposed-id",
        new_id,
    ])
    .expect(0);
    tenure(&["lease", "release", &dir, "docs", "key-1", "--lease-id", &id]).expect(1);
    tenure(&[
        "lease",
        "release",
        &dir,
        "docs",
        "key-1",
        "--lease-id",
        new_id,
    ])
    .expect(0);
    let show = tenure(&["lease", "show", &dir, "docs", "key-1"]).expect(0);
    assert_eq!(show.stdout, "available\n");
    tenure(&[
        "lease",
        "acquire",
        &dir,
        "docs",
        "key-1",
        "--duration",
        "-1",
    ])
    .expect(0);
    let broken = tenure(&[
        "--json",
        "lease",
        "break",
        &dir,
        "docs",
        "key-1",
        "--break-period",
        "0",
    ])
    .expect(0)
    .json();
    assert_eq!(broken["remaining_ms"], 0);
    let show = tenure(&["lease", "show", &dir, "docs", "key-1"]).expect(0);
    assert!(show.stdout.starts_with("broken"), "{}", show.stdout);
    tenure(&["put", &dir, "docs", "key-1", "z"]).expect(0);
}

#[test]
fn a_container_lease_guards_its_delete() {
    let dir = text(&store_with_items("container-lease", 1));
    let lease = tenure(&[
        "--json",
        "lease",
        "acquire",
        &dir,
        "docs",
        "--duration",
        "-1",
    ])
    .expect(0)
    .json();
    let id = lease["lease_id"].as_str().expect("id").to_owned();
    let refused = tenure(&["container", "delete", &dir, "docs"]).expect(1);
    assert!(
        refused.stderr.contains("LeaseIdMissing"),
        "{}",
        refused.stderr
    );
    let show = tenure(&["--json", "lease", "show", &dir, "docs"])
        .expect(0)
        .json();
    assert_eq!(show["state"], "leased");
    tenure(&["container", "delete", &dir, "docs", "--lease-id", &id]).expect(0);
}

#[test]
fn cache_locks_get_and_lock_then_put_and_unlock() {
    let dir = text(&store_with_items("locks", 1));
    let locked = tenure(&[
        "--json",
        "lock",
        "get",
        &dir,
        "docs",
        "key-1",
        "--timeout",
        "30",
    ])
    .expect(0)
    .json();
    let handle = locked["lock_handle"].as_str().expect("handle").to_owned();
    assert_eq!(locked["item"]["value"], "value-1");
    let again = tenure(&["lock", "get", &dir, "docs", "key-1", "--timeout", "30"]).expect(1);
    assert!(
        again.stderr.contains("ObjectLocked (409)"),
        "{}",
        again.stderr
    );
    let stat = tenure(&["--json", "stat", &dir]).expect(0).json();
    assert_eq!(stat["active_locks"], 1);
    let wrong = "0123456789abcdef0123456789abcdef";
    let refused = tenure(&["put", &dir, "docs", "key-1", "v", "--lock-handle", wrong]).expect(1);
    assert!(
        refused.stderr.contains("InvalidLockHandle (412)"),
        "{}",
        refused.stderr
    );
    tenure(&[
        "put",
        &dir,
        "docs",
        "key-1",
        "new",
        "--lock-handle",
        &handle,
    ])
    .expect(0);
    let stat = tenure(&["--json", "stat", &dir]).expect(0).json();
    assert_eq!(stat["active_locks"], 0);
    let not_locked = tenure(&[
        "lock",
        "unlock",
        &dir,
        "docs",
        "key-1",
        "--lock-handle",
        &handle,
    ])
    .expect(1);
    assert!(
        not_locked.stderr.contains("ObjectNotLocked"),
        "{}",
        not_locked.stderr
    );
    let locked = tenure(&[
        "--json",
        "lock",
        "get",
        &dir,
        "docs",
        "key-1",
        "--timeout",
        "5",
    ])
    .expect(0)
    .json();
    let handle = locked["lock_handle"].as_str().expect("handle").to_owned();
    tenure(&[
        "lock",
        "unlock",
        &dir,
        "docs",
        "key-1",
        "--lock-handle",
        &handle,
    ])
    .expect(0);
    let value = tenure(&["get", &dir, "docs", "key-1", "--value-only"]).expect(0);
    assert_eq!(value.stdout, "new");
}

#[test]
fn changes_since_a_version_as_text_and_json_lines() {
    let dir = text(&store_with_items("changes", 3));
    tenure(&["delete", &dir, "docs", "key-2"]).expect(0);
    tenure(&["put", &dir, "docs", "key-3", "changed"]).expect(0);
    let all = tenure(&["--json", "changes", &dir, "--since", "0", "--values"]).expect(0);
    let changes: Vec<serde_json::Value> = all
        .stdout
        .lines()
        .map(|line| serde_json::from_str(line).expect("a JSON line"))
        .collect();
    let kinds: Vec<&str> = changes
        .iter()
        .map(|change| change["kind"].as_str().unwrap())
        .collect();
    assert_eq!(
        kinds,
        [
            "container_created",
            "created",
            "created",
            "created",
            "deleted",
            "updated"
        ]
    );
    assert_eq!(changes[5]["value"], "changed");
    let versions: Vec<u64> = changes
        .iter()
        .map(|change| change["version"].as_u64().unwrap())
        .collect();
    assert!(
        versions.windows(2).all(|pair| pair[0] < pair[1]),
        "{versions:?}"
    );
    let since = versions[3].to_string();
    let tail = tenure(&["changes", &dir, "--since", &since]).expect(0);
    assert_eq!(tail.stdout.lines().count(), 2, "{}", tail.stdout);
    assert!(
        tail.stdout.contains("deleted") && tail.stdout.contains("docs/key-2"),
        "{}",
        tail.stdout
    );
    let limited = tenure(&["changes", &dir, "--since", "0", "--max", "2"]).expect(0);
    assert_eq!(limited.stdout.lines().count(), 2);
}

#[test]
fn dump_prints_every_container_and_item_as_json_lines() {
    let dir = text(&store_with_items("dump", 25));
    tenure(&["container", "create", &dir, "empty"]).expect(0);
    tenure(&[
        "lease",
        "acquire",
        &dir,
        "docs",
        "key-7",
        "--duration",
        "60",
    ])
    .expect(0);
    let dump = tenure(&["dump", &dir]).expect(0);
    let lines: Vec<serde_json::Value> = dump
        .stdout
        .lines()
        .map(|line| serde_json::from_str(line).expect("a JSON line"))
        .collect();
    assert_eq!(lines[0]["type"], "store");
    let containers: Vec<&str> = lines
        .iter()
        .filter(|line| line["type"] == "container")
        .map(|line| line["container"].as_str().unwrap())
        .collect();
    assert_eq!(containers, ["docs", "empty"]);
    let items: Vec<&serde_json::Value> =
        lines.iter().filter(|line| line["type"] == "item").collect();
    assert_eq!(items.len(), 25);
    let seven = items
        .iter()
        .find(|item| item["key"] == "key-7")
        .expect("key-7");
    assert_eq!(seven["value"], "value-7");
    assert_eq!(seven["lease"]["state"], "leased");
    let one = tenure(&["dump", &dir, "--container", "docs", "--no-values"]).expect(0);
    assert!(!one.stdout.contains("\"value\""), "{}", one.stdout);
}

#[test]
fn stat_counts_items_leases_and_dead_bytes() {
    let dir = text(&store_with_items("stat", 10));
    let before = tenure(&["--json", "stat", &dir]).expect(0).json();
    assert_eq!(before["items"], 10);
    assert_eq!(before["containers"][0]["name"], "docs");
    assert_eq!(before["containers"][0]["items"], 10);
    assert_eq!(before["active_leases"], 0);
    for _ in 0..3 {
        tenure(&["put", &dir, "docs", "key-1", "a longer value than before"]).expect(0);
    }
    tenure(&["delete", &dir, "docs", "key-2"]).expect(0);
    tenure(&[
        "lease",
        "acquire",
        &dir,
        "docs",
        "key-3",
        "--duration",
        "60",
    ])
    .expect(0);
    let after = tenure(&["--json", "stat", &dir]).expect(0).json();
    assert_eq!(after["items"], 9);
    assert_eq!(after["active_leases"], 1);
    assert_eq!(after["containers"][0]["active_leases"], 1);
    let dead = |stat: &serde_json::Value| stat["dead_bytes"].as_u64().unwrap();
    let live = |stat: &serde_json::Value| stat["live_bytes"].as_u64().unwrap();
    assert!(
        dead(&after) > dead(&before),
        "overwrites and a delete leave dead bytes"
    );
    assert!(live(&after) > 0);
    assert_eq!(
        live(&after) + dead(&after),
        after["log_bytes"].as_u64().unwrap()
    );
    let table = tenure(&["stat", &dir]).expect(0);
    assert!(
        table.stdout.contains("active leases:  1"),
        "{}",
        table.stdout
    );
}

#[test]
fn compact_removes_sealed_segments_and_keeps_every_item() {
    let dir = scratch("compact").join("store");
    {
        let options = tenure::StoreOptions {
            segment_size_bytes: 64 << 10,
            background_compaction_interval: None,
            ..tenure::StoreOptions::default()
        };
        let store = tenure::Store::open(&dir, options).expect("open");
        store
            .create_container("docs", &Default::default())
            .expect("container");
        let value = vec![b'x'; 2000];
        for round in 0..4 {
            for index in 0..40 {
                let key = format!("key-{index}");
                let _ = round;
                store
                    .put("docs", key.as_bytes(), &value, &Default::default())
                    .expect("put");
            }
        }
        support::close(store);
    }
    let dir = text(&dir);
    let before = tenure(&["--json", "stat", &dir]).expect(0).json();
    assert!(before["segments"].as_u64().unwrap() > 2, "{before}");
    assert_eq!(
        before["disk_bytes"].as_u64().unwrap(),
        disk_usage(Path::new(&dir))
    );
    let disk_before = disk_usage(Path::new(&dir));
    let report = tenure(&["--json", "compact", &dir]).expect(0).json();
    assert!(
        report["segments_removed"].as_u64().unwrap() >= 1,
        "{report}"
    );
    // Real disk usage, as `du` counts it (blocks), before and after.
    assert_eq!(
        report["disk_bytes_before"].as_u64().unwrap(),
        disk_before,
        "{report}"
    );
    assert_eq!(
        report["disk_bytes_after"].as_u64().unwrap(),
        disk_usage(Path::new(&dir)),
        "{report}"
    );
    assert!(
        report["disk_bytes_after"].as_u64().unwrap()
            < report["disk_bytes_before"].as_u64().unwrap(),
        "{report}"
    );
    let after = tenure(&["--json", "stat", &dir]).expect(0).json();
    assert_eq!(after["items"], 40);
    let text_report = tenure(&["compact", &dir]).expect(0);
    assert!(
        text_report.stdout.starts_with("compacted:"),
        "{}",
        text_report.stdout
    );
    assert!(
        text_report.stdout.contains("disk usage: "),
        "{}",
        text_report.stdout
    );
    tenure(&["verify", &dir]).expect(0);
}

#[test]
fn bench_runs_its_workloads_as_a_table_and_as_json() {
    let table = tenure(&[
        "bench",
        "--duration-ms",
        "40",
        "--keys",
        "20",
        "--durability",
        "buffered",
    ])
    .expect(0);
    for workload in [
        "get",
        "conditional put",
        "lease acquire+release",
        "get-and-lock+unlock",
        "batch of 10 puts",
        "list page of 100",
    ] {
        assert!(
            table.stdout.contains(workload),
            "{workload}: {}",
            table.stdout
        );
    }
    let dir = scratch("bench").join("store");
    let json = tenure(&[
        "--json",
        "bench",
        "--dir",
        &text(&dir),
        "--duration-ms",
        "30",
        "--workloads",
        "get,put",
        "--keys",
        "10",
    ])
    .expect(0)
    .json();
    let results = json["results"].as_array().expect("results");
    assert_eq!(results.len(), 2);
    assert!(results[0]["operations"].as_u64().unwrap() > 0);
    assert!(results[0]["ops_per_second"].as_f64().unwrap() > 0.0);
    // The named directory is kept, and a second run refuses to reuse it.
    assert!(dir.join("superblock").is_file());
    tenure(&["bench", "--dir", &text(&dir), "--duration-ms", "10"]).expect(2);
    tenure(&["bench", "--workloads", "nonsense"]).expect(2);
}

#[test]
fn a_reader_that_stops_early_ends_the_tool_quietly() {
    use std::io::{BufRead, BufReader};
    use std::os::unix::process::ExitStatusExt;

    let dir = scratch("sigpipe").join("store");
    let store = tenure::Store::open(&dir, tenure::StoreOptions::default()).expect("open");
    store
        .create_container("docs", &Default::default())
        .expect("container");
    for chunk in 0..2 {
        let mut batch = store.batch();
        for index in 0..1000 {
            let key = format!("key-{chunk}-{index:04}");
            batch.put("docs", key.as_bytes(), &[b'v'; 200], Default::default());
        }
        batch.commit().expect("batch");
    }
    support::close(store);
    // More than a pipe buffer of output; the reader takes one line and goes away.
    let mut child = support::spawn_piped(&["dump", &text(&dir)]);
    let mut stdout = BufReader::new(child.stdout.take().expect("stdout"));
    let mut first = String::new();
    stdout.read_line(&mut first).expect("a line");
    assert!(first.contains("\"store\""), "{first}");
    drop(stdout);
    let output = child.wait_with_output().expect("wait");
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(!stderr.contains("panicked"), "{stderr}");
    assert_eq!(
        output.status.signal(),
        Some(13),
        "ended by SIGPIPE: {:?}",
        output.status
    );
}

/// Blocks in use under `directory`, as `du` counts them.
fn disk_usage(directory: &Path) -> u64 {
    use std::os::unix::fs::MetadataExt;
    std::fs::read_dir(directory)
        .expect("the store directory")
        .map(|entry| {
            let path = entry.expect("an entry").path();
            if path.is_dir() {
                disk_usage(&path)
            } else {
                std::fs::metadata(&path).expect("metadata").blocks() * 512
            }
        })
        .sum()
}

/// A store whose first segments hold overwritten versions: compaction removes them.
fn compactable_store(name: &str) -> String {
    let dir = scratch(name).join("store");
    let options = tenure::StoreOptions {
        segment_size_bytes: 64 << 10,
        background_compaction_interval: None,
        ..tenure::StoreOptions::default()
    };
    let store = tenure::Store::open(&dir, options).expect("open");
    store
        .create_container("docs", &Default::default())
        .expect("container");
    for _round in 0..4 {
        for index in 0..40 {
            store
                .put(
                    "docs",
                    format!("key-{index}").as_bytes(),
                    &[b'x'; 2000],
                    &Default::default(),
                )
                .expect("put");
        }
    }
    support::close(store);
    text(&dir)
}

#[test]
fn changes_after_compaction_exit_7_naming_the_oldest_version() {
    let dir = compactable_store("changes-compacted");
    tenure(&["compact", &dir]).expect(0);
    let refused = tenure(&["changes", &dir, "--since", "0"]).expect(7);
    assert!(
        refused.stderr.contains("Compacted (410)"),
        "{}",
        refused.stderr
    );
    let json = tenure(&["--json", "changes", &dir, "--since", "0"]).expect(7);
    let error = serde_json::from_str::<serde_json::Value>(json.stdout.trim()).expect("JSON");
    let oldest = error["error"]["oldest_available"].as_u64().expect("oldest");
    assert!(oldest > 1, "{error}");
    assert!(
        refused.stderr.contains(&format!("--since {}", oldest - 1)),
        "{}",
        refused.stderr
    );
    tenure(&["changes", &dir, "--since", &(oldest - 1).to_string()]).expect(0);
}

#[test]
fn compact_keeps_the_change_feed_it_is_asked_to_keep() {
    let dir = compactable_store("changes-retained");
    let kept = tenure(&[
        "--json",
        "compact",
        &dir,
        "--change-feed-retention-versions",
        "100000",
    ])
    .expect(0)
    .json();
    assert_eq!(kept["retained_for_change_feed"], true, "{kept}");
    let all = tenure(&["changes", &dir, "--since", "0"]).expect(0);
    assert_eq!(all.stdout.lines().count(), 1 + 160, "{}", all.stdout);
    tenure(&["compact", &dir, "--change-feed-retention-bytes", "0"]).expect(2);
}

/// `--quota-bytes`: a write that needs space past the quota fails with StorageFull (exit 8)
/// and changes nothing; `stat` shows the full state; deletes and compaction still work.
#[test]
fn a_full_quota_refuses_puts_with_exit_8_and_stat_shows_it() {
    let dir = scratch("quota").join("store");
    let dir = text(&dir);
    tenure(&["container", "create", &dir, "c"]).expect(0);
    tenure(&["put", &dir, "c", "small", "fits"]).expect(0);
    let large = scratch("quota-value").join("large");
    std::fs::write(&large, vec![7u8; 16 << 20]).unwrap();
    let refused = tenure(&[
        "--quota-bytes",
        "1",
        "put",
        &dir,
        "c",
        "large",
        "--value-file",
        &text(&large),
    ])
    .expect(8);
    assert!(refused.stderr.contains("StorageFull"), "{}", refused.stderr);
    tenure(&["get", &dir, "c", "large"]).expect(1);
    let stat = tenure(&["--quota-bytes", "1", "--json", "stat", &dir])
        .expect(0)
        .json();
    assert_eq!(stat["storage_full"], true);
    assert_eq!(stat["quota_bytes"], 1);
    let stat = tenure(&["stat", &dir]).expect(0);
    assert!(stat.stdout.contains("writes accepted"), "{}", stat.stdout);
    tenure(&["--quota-bytes", "1", "delete", &dir, "c", "small"]).expect(0);
    tenure(&["--quota-bytes", "1", "compact", &dir]).expect(0);
    tenure(&["--quota-bytes", "0", "stat", &dir]).expect(2);
}
