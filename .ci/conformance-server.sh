#!/usr/bin/env bash
# Runs the official conformance suite's *server* scenarios (0.2.0-alpha.12,
# every scenario, extensions included) in both eras, twice each: against the
# fixture server (gateway/tests/fixture/conformance_server.py, the Python
# SDK) directly, and against `mcp-connect serve` in front of it.
#
# The rules (issue 66):
# - every scenario that passes directly passes through the gateway;
# - the scenarios the gateway owns itself (OWNED) pass through it whatever
#   the fixture does;
# - a scenario whose checks never ran ("0 passed, 0 failed") passes nothing.
# A scenario in PENDING (with its reason) is run and reported but may fail;
# one that passes is reported so that the list shrinks.
#
# usage: .ci/conformance-server.sh   (with MCP_PEERS_DIR set by .ci/install-peers.sh)
# Logs: target/conformance-server/<era>-{direct,gateway}.log
set -euo pipefail

OWNED=" server-initialize server-session-lifecycle server-stateless ping dns-rebinding-protection http-header-validation http-custom-header-server-validation caching server-sse-multiple-streams server-sse-polling "
# scenario@era: why it may still fail through the gateway.
# (none now; a line is "scenario@era: reason")
PENDING=""

: "${MCP_PEERS_DIR:?run .ci/install-peers.sh and set MCP_PEERS_DIR}"
suite_dir="$MCP_PEERS_DIR/node-next"
export PATH="$suite_dir/node_modules/.bin:$PATH"
python="$MCP_PEERS_DIR/venv/bin/python"
cargo build -p mcp-connect-cli --quiet
command="$PWD/target/debug/mcp-connect"
logs="$PWD/target/conformance-server"
mkdir -p "$logs"

free_port() { "$python" -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'; }
wait_port() {
  for _ in $(seq 100); do
    if "$python" -c "import socket; socket.create_connection(('127.0.0.1', $1), 0.2)" 2>/dev/null; then return 0; fi
    sleep 0.1
  done
  echo "nothing listens on port $1"; return 1
}

pids=()
cleanup() { for pid in "${pids[@]}"; do kill "$pid" 2>/dev/null || true; done; }
trap cleanup EXIT

fixture_port=$(free_port)
"$python" gateway/tests/fixture/conformance_server.py "$fixture_port" > "$logs/fixture.log" 2>&1 &
pids+=($!)
wait_port "$fixture_port"

gateway_port=$(free_port)
config="$logs/servers.json"
printf '{"mcpServers": {"fixture": {"url": "http://127.0.0.1:%s/mcp"}}}\n' "$fixture_port" > "$config"
"$command" serve --config "$config" --listen "127.0.0.1:$gateway_port" > "$logs/gateway.log" 2>&1 &
pids+=($!)
wait_port "$gateway_port"

# The summary's lines, "✓ name: N passed, M failed", as "name passed failed".
summary() { sed -n '/=== SUMMARY ===/,$p' "$1" | sed -n 's/^[✓✗] \([^:]*\): \([0-9]*\) passed, \([0-9]*\) failed.*/\1 \2 \3/p'; }
passes() { [ "$2" -gt 0 ] && [ "$3" = 0 ]; }

failed=0
for era in 2025-11-25 2026-07-28; do
  for target in direct gateway; do
    port=$fixture_port; [ "$target" = gateway ] && port=$gateway_port
    # The run's own exit status says a scenario failed; the summary says which.
    timeout 1200 conformance server --url "http://127.0.0.1:$port/mcp" --suite all \
      --spec-version "$era" --timeout 30000 > "$logs/$era-$target.log" 2>&1 || true
    [ -n "$(summary "$logs/$era-$target.log")" ] || { cat "$logs/$era-$target.log"; echo "no summary ($era, $target)"; exit 1; }
  done
  declare -A direct=()
  while read -r name ok bad; do direct[$name]="$ok $bad"; done < <(summary "$logs/$era-direct.log")
  ran=0; through=0
  while read -r name ok bad; do
    ran=$((ran + 1))
    # shellcheck disable=SC2086
    if passes "$name" $ok $bad; then
      through=$((through + 1)); verdict="passes"
      if printf '%s\n' "$PENDING" | grep -q "^$name@$era:"; then verdict="passes (listed as pending: take it off PENDING)"; fi
      echo "$era $name: $verdict ($ok checks)"; continue
    fi
    # shellcheck disable=SC2086
    required=""; case "$OWNED" in *" $name "*) required="the gateway owns it";; esac
    # shellcheck disable=SC2086
    if [ -z "$required" ] && [ -n "${direct[$name]:-}" ] && passes "$name" ${direct[$name]}; then required="it passes directly"; fi
    if [ -z "$required" ]; then
      echo "$era $name: fails directly too (${direct[$name]:-not run}); through the gateway $ok passed, $bad failed"
    elif reason=$(printf '%s\n' "$PENDING" | grep "^$name@$era:"); then
      echo "$era $name: pending (${reason#*: }); $ok passed, $bad failed"
    else
      echo "$era $name: FAILED through the gateway ($required): $ok passed, $bad failed"; failed=1
    fi
  done < <(summary "$logs/$era-gateway.log")
  echo "$era: $through of $ran scenarios pass through the gateway"
  unset direct
done
if [ "$failed" = 1 ]; then
  echo "logs: $logs"; sed -n '/Failed Checks/,$p' "$logs"/*-gateway.log | head -200
fi
exit $failed
