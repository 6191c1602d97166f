#!/usr/bin/env bash
# The deterministic simulation (issue 47): same-seed determinism, the short
# mode (10,000 seeds plus the regression seeds), then each deliberately broken
# build in sim/mutants/ must be caught within 2,000 seeds, and its first
# failing seed must replay to the same violation.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root/sim"
cargo test --release
cargo build --release
./target/release/mcp-connect-sim run --seeds 10000
for patch in mutants/*.patch; do
  git -C "$root" apply "sim/$patch"
  restore() { git -C "$root" apply -R "sim/$patch"; }
  trap restore EXIT
  cargo build --release -q
  if ! out=$(./target/release/mcp-connect-sim run --seeds 2000 --expect-violation); then
    echo "$out" | tail -3
    echo "FAIL: the broken build $patch was not caught in 2,000 seeds"
    exit 1
  fi
  first=$(echo "$out" | grep -m1 '^VIOLATION seed')
  seed=$(echo "$first" | sed -E 's/^VIOLATION seed ([0-9]+):.*/\1/')
  echo "$patch caught: $first"
  echo "$out" | tail -1
  if ./target/release/mcp-connect-sim replay --seed "$seed" > "$root/sim/target/replay.txt"; then
    echo "FAIL: seed $seed of $patch replayed without a violation"
    exit 1
  fi
  if ! grep -qxF "$first" "$root/sim/target/replay.txt"; then
    echo "FAIL: seed $seed of $patch replayed to another failure"
    exit 1
  fi
  echo "  replayed seed $seed: the same violation"
  restore
  trap - EXIT
done
# Back to the real build.
cargo build --release -q
