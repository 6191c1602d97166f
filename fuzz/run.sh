#!/usr/bin/env bash
# Runs every fuzz target for the given seconds (default 600) one after the
# other, then minimises each corpus to a set of inputs that still covers
# every edge reached (named regression inputs are kept as they are). Prints one line per target with the
# executions and the coverage libFuzzer reports; exits non-zero if any
# target found a crash (its reproducer is in fuzz/artifacts/<target>/).
#
#   bash fuzz/run.sh          # 10 minutes per target
#   bash fuzz/run.sh 30       # a smoke run
set -uo pipefail
cd "$(dirname "$0")/.."
seconds=${1:-600}
logs=fuzz/logs
mkdir -p "$logs"
failed=0

minimise() {
    local target=$1 corpus="fuzz/corpus/$1" smaller
    smaller=$(mktemp -d)
    "fuzz/target/x86_64-unknown-linux-gnu/release/$target" \
        -use_counters=0 -set_cover_merge=1 "$smaller" "$corpus"
    # Inputs named by hand (seeds, regressions) stay; the fuzzer's own
    # (named by their SHA-1) are replaced by the covering set.
    find "$corpus" -type f -regextype posix-extended -regex '.*/[0-9a-f]{40}' -delete
    cp "$smaller"/* "$corpus"/
    rm -rf "$smaller"
}

for target in $(cargo +nightly fuzz list); do
    log="$logs/$target.log"
    cargo +nightly fuzz run "$target" -- \
        -max_total_time="$seconds" -rss_limit_mb=2048 -max_len=8192 -print_final_stats=1 \
        >"$log" 2>&1
    status=$?
    done_line=$(grep -E '^#[0-9]+[[:space:]]+DONE' "$log" | tail -1)
    runs=$(grep -E '^stat::number_of_executed_units' "$log" | awk '{print $2}')
    echo "$target: status $status, executions ${runs:-?}, ${done_line:-no DONE line}"
    if [ "$status" -ne 0 ]; then
        failed=1
        grep -E 'panicked|ERROR|Test unit' "$log" | head -5
    fi
    minimise "$target" >>"$log" 2>&1 || true
done
exit "$failed"
