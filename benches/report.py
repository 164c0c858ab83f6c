#!/usr/bin/env python3
"""Turn criterion's estimates for `benches/benches/log.rs` into the figures of the issue
"Engine foundation" (section "Speed"): medians, the raw baselines, and each ratio against its
target.

    python3 benches/report.py [CRITERION_DIR]

CRITERION_DIR defaults to $CARGO_TARGET_DIR/criterion, else target/criterion. Every figure is
the median over criterion's samples of the time per iteration (per record, or per open/read).
"""

import json
import os
import sys


def criterion_dir():
    if len(sys.argv) > 1:
        return sys.argv[1]
    return os.path.join(os.environ.get("CARGO_TARGET_DIR", "target"), "criterion")


def throughput_bytes(root, group, bench):
    path = os.path.join(root, group, *bench.split("/"), "new", "benchmark.json")
    try:
        with open(path) as handle:
            throughput = json.load(handle).get("throughput") or {}
    except FileNotFoundError:
        return None
    return throughput.get("Bytes")


def median_ns(root, group, bench):
    path = os.path.join(root, group, *bench.split("/"), "new", "estimates.json")
    try:
        with open(path) as handle:
            estimate = json.load(handle)["median"]
    except FileNotFoundError:
        return None
    return (
        estimate["point_estimate"],
        estimate["confidence_interval"]["lower_bound"],
        estimate["confidence_interval"]["upper_bound"],
    )


def time(ns):
    for unit, scale in (("s", 1e9), ("ms", 1e6), ("µs", 1e3)):
        if ns >= scale:
            return f"{ns / scale:.3g} {unit}"
    return f"{ns:.3g} ns"


def rate(ns):
    per_second = 1e9 / ns
    if per_second >= 1e6:
        return f"{per_second / 1e6:.3g} M/s"
    if per_second >= 1e3:
        return f"{per_second / 1e3:.3g} k/s"
    return f"{per_second:.3g} /s"


def main():
    root = criterion_dir()
    rows = []

    def row(name, estimate, extra=""):
        if estimate is None:
            rows.append((name, "not measured", "", ""))
            return
        point, lower, upper = estimate
        rows.append((name, time(point), f"[{time(lower)}, {time(upper)}]", extra))

    durable = "durable_append_200B"
    tenure = median_ns(root, durable, "tenure_sync")
    row("durable append 200 B, tenure Sync", tenure, tenure and rate(tenure[0]))
    for raw in (
        "tenure_sync_written_segment",
        "raw_pwrite_fdatasync_fallocated",
        "raw_pwrite_fdatasync_prewritten",
        "raw_mmap_fdatasync_fallocated",
        "raw_mmap_fdatasync_prewritten",
    ):
        estimate = median_ns(root, durable, raw)
        extra = ""
        if tenure and estimate:
            extra = f"tenure / this = {tenure[0] / estimate[0]:.2f}×"
        row(f"  baseline {raw}", estimate, extra)

    group = "group_commit_sync_200B"
    # One iteration is one record per thread: per-record time = median / threads.
    def per_record(threads):
        estimate = median_ns(root, group, f"threads/{threads}")
        return estimate and tuple(value / threads for value in estimate)

    single = per_record(1)
    for threads in (1, 4, 16):
        estimate = per_record(threads)
        extra = ""
        if estimate:
            extra = f"aggregate {rate(estimate[0])}"
            if single:
                share = single[0] / (threads * estimate[0])
                extra += f"; = {share:.2f} × {threads} × single"
        row(f"group commit Sync, {threads} threads (per record)", estimate, extra)

    buffered = "buffered_append_200B"
    for threads in (1, 2):
        estimate = median_ns(root, buffered, f"threads/{threads}")
        extra = ""
        if estimate:
            extra = f"{rate(estimate[0])} = {1e9 / estimate[0] / 3e6:.2f} × 3 M/s"
        row(f"buffered append 200 B, {threads} threads (per record)", estimate, extra)

    recovery = "recovery_1GiB"
    read = median_ns(root, recovery, "read_page_cache_1MiB_buffer")
    opened = median_ns(root, recovery, "tenure_open")
    size = throughput_bytes(root, recovery, "tenure_open")
    label = f"{size / 2**30:.3g} GiB" if size else "the log"
    speed = ""
    if read and size:
        speed = f"{size / 2**30 / (read[0] / 1e9):.3g} GiB/s"
    row(f"read {label} from the page cache (1 MiB buffer)", read, speed)
    extra = ""
    if opened and read:
        extra = f"open / read = {opened[0] / read[0]:.2f}×"
    if opened and size:
        extra += f"; {size / 2**30 / (opened[0] / 1e9):.3g} GiB/s"
    row(f"open (recovery scan) of a {label} log", opened, extra)

    print(f"criterion medians from {root}\n")
    print("| benchmark | median | 95% CI of the median | figure |")
    print("| --- | --- | --- | --- |")
    for name, median, interval, extra in rows:
        print(f"| {name} | {median} | {interval} | {extra} |")

    print("\ntargets:")
    if tenure:
        for raw in ("raw_pwrite_fdatasync_fallocated", "raw_pwrite_fdatasync_prewritten"):
            estimate = median_ns(root, durable, raw)
            if estimate:
                ratio = tenure[0] / estimate[0]
                verdict = "met" if ratio <= 1.1 else "MISSED"
                print(f"  durable append ≤ 1.1 × {raw}: {ratio:.2f}× ({verdict})")
    sixteen = per_record(16)
    if sixteen and single:
        share = single[0] / (16 * sixteen[0])
        verdict = "met" if share >= 0.8 else "MISSED"
        print(f"  group commit 16 threads ≥ 0.8 × 16 × single: {share:.2f} ({verdict})")
    two = median_ns(root, buffered, "threads/2")
    if two:
        per_second = 1e9 / two[0]
        verdict = "met" if per_second >= 3e6 else "MISSED"
        print(f"  buffered 2 threads ≥ 3 M records/s: {per_second / 1e6:.2f} M/s ({verdict})")
    if opened and read:
        ratio = opened[0] / read[0]
        verdict = "met" if ratio <= 2 else "MISSED"
        print(f"  open of 1 GiB ≤ 2 × page-cache read: {ratio:.2f}× ({verdict})")


if __name__ == "__main__":
    main()
