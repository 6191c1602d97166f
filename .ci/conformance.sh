#!/usr/bin/env bash
# Runs every client scenario of the installed official conformance suites
# through examples/conformance_client.rs, reading the list from each suite
# (`conformance list --client`) so that a scenario added upstream cannot go
# unrun. Every scenario runs, extensions included. A scenario listed in
# PENDING is run and reported but may fail (its issue is still open); one
# that passes is reported so the list can shrink.
#
# usage: .ci/conformance.sh   (with MCP_PEERS_DIR set by .ci/install-peers.sh)
# Logs: target/conformance/<suite>/<scenario>.log
set -euo pipefail

PENDING=" "   # none at the moment

: "${MCP_PEERS_DIR:?run .ci/install-peers.sh and set MCP_PEERS_DIR}"
cargo build -p mcp-connect --features schema,skills,signing --example conformance_client --quiet
client="$PWD/target/debug/examples/conformance_client"
failed=0
for suite in node node-next; do
  suite_dir="$MCP_PEERS_DIR/$suite"
  node_bin="$suite_dir/node_modules/.bin"
  version=$(grep -m1 '"version"' "$suite_dir/node_modules/@modelcontextprotocol/conformance/package.json" | cut -d'"' -f4)
  logs="$PWD/target/conformance/$suite"
  mkdir -p "$logs"
  listing=$(cd "$suite_dir" && PATH="$node_bin:$PATH" npx --no-install conformance list --client)
  scenarios=$(printf '%s\n' "$listing" | sed -n 's/^  - \([^ ]*\) \[.*\]$/\1/p')
  [ -n "$scenarios" ] || { printf '%s\n' "$listing"; echo "conformance $version: no scenarios listed"; exit 1; }
  echo "conformance $version: $(echo $scenarios | wc -w) client scenarios: $(echo $scenarios)"
  for scenario in $scenarios; do
    log="$logs/$scenario.log"
    mkdir -p "$(dirname "$log")"
    # The suite's mock servers bind every interface: keep them in a private
    # network namespace with only loopback.
    status=0
    (cd "$suite_dir" && timeout 300 unshare -n sh -c \
        "ip link set lo up && PATH='$node_bin':\$PATH npx --no-install conformance client --command '$client' --scenario $scenario --timeout 30000" \
        >"$log" 2>&1) || status=$?
    passed=$(grep -E "^Passed:" "$log" || echo "Passed: none")
    # A scenario whose checks never ran ("Passed: 0/0") proves nothing: the
    # suite passes a client that did none of the work in some of them.
    if [ "$status" = 0 ] && grep -q "OVERALL: PASSED" "$log" && ! grep -q "^Passed: 0/" "$log"; then
      echo "$version $scenario: $passed"
      case "$PENDING" in *" $scenario "*) echo "  (listed as pending but passes: take it off PENDING)";; esac
    else
      case "$PENDING" in
        *" $scenario "*) echo "$version $scenario: pending, not passing ($passed)";;
        *) cat "$log"; echo "conformance $version scenario $scenario FAILED ($passed)"; failed=1;;
      esac
    fi
  done
done
exit $failed
