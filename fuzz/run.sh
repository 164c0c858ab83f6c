#!/usr/bin/env bash
# Runs every cargo-fuzz target for SECONDS (default 60) each, two at a time (the CI machine
# has two cores), from the committed seed corpora (fuzz/corpus/<target>/, read-only: new
# inputs go to a temporary directory). Fails if any target finds a crash; the crashing input
# is kept under fuzz/artifacts/<target>/ and the replay command is printed.
#
# cargo-fuzz needs nightly flags (-Zsanitizer=address …); on the stable toolchain they are
# allowed by RUSTC_BOOTSTRAP=1, set here. Installs cargo-fuzz if it is missing.
#
#   bash fuzz/run.sh            # the CI tier: 60 s per target
#   bash fuzz/run.sh 86400      # the long tier: 24 h per target
set -euo pipefail
cd "$(dirname "$0")"
seconds=${1:-60}
parallel=${TENURE_FUZZ_JOBS:-2}
export RUSTC_BOOTSTRAP=1
# 0.13.2 builds with the stable toolchain (1.95).
if ! cargo fuzz --version >/dev/null 2>&1; then
  cargo install cargo-fuzz --locked --version 0.13.2
fi

targets=(record_decoder open_directory model_ops io_faults lease_schedule ffi_calls)
echo "building ${#targets[@]} fuzz targets (release, AddressSanitizer)"
build_started=$(date +%s)
nice -n 5 cargo fuzz build --release
echo "build: $(( $(date +%s) - build_started )) s"

scratch=$(mktemp -d)
trap 'rm -rf "$scratch"' EXIT
run_target() {
  local target=$1
  # Leak checks run LeakSanitizer whenever an input's mallocs and frees differ, which the
  # engine's epoch-deferred frees make almost every input: 10x slower. They stay on for the
  # C ABI target (docs/spec.md §13: a call never leaks); the others trade them for executions.
  local leaks=0
  [[ $target == ffi_calls ]] && leaks=1
  mkdir -p "$scratch/corpus/$target" artifacts/"$target"
  # New inputs go to the scratch corpus (first directory); the committed one is only read.
  if cargo fuzz run --release "$target" "$scratch/corpus/$target" "corpus/$target" -- \
      -max_total_time="$seconds" -timeout=60 -rss_limit_mb=3072 -detect_leaks="$leaks" \
      -print_final_stats=1 \
      >"$scratch/$target.log" 2>&1; then
    local runs
    runs=$(grep -E '^stat::number_of_executed_units' "$scratch/$target.log" | awk '{print $2}' | tail -1)
    echo "fuzz $target: ${seconds} s, ${runs:-?} executions, no crash"
  else
    echo "fuzz $target: FAILED"
    tail -60 "$scratch/$target.log"
    echo "replay: RUSTC_BOOTSTRAP=1 cargo fuzz run --release $target fuzz/artifacts/$target/<crash file> (from fuzz/)"
    return 1
  fi
}

failed=0
pids=()
names=()
for target in "${targets[@]}"; do
  run_target "$target" &
  pids+=($!)
  names+=("$target")
  if (( ${#pids[@]} >= parallel )); then
    wait "${pids[0]}" || failed=$((failed + 1))
    pids=("${pids[@]:1}")
    names=("${names[@]:1}")
  fi
done
for pid in "${pids[@]}"; do
  wait "$pid" || failed=$((failed + 1))
done
if (( failed > 0 )); then
  echo "$failed fuzz target(s) failed"
  exit 1
fi
echo "${#targets[@]} fuzz targets passed, 0 failed"
