#!/usr/bin/env bash
# Installs the pinned interop peers (../shared/peers/README.md) into target/peers.
# Idempotent: a peer already installed at the pinned version is kept.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
peers="${MCP_PEERS_DIR:-$root/target/peers}"
mkdir -p "$peers"

if [ ! -f "$peers/node/node_modules/@modelcontextprotocol/server-everything/dist/index.js" ]; then
  mkdir -p "$peers/node"
  (cd "$peers/node" && [ -f package.json ] || echo '{"private":true}' > package.json)
  (cd "$peers/node" && npm install --no-audit --no-fund --loglevel=error \
    @modelcontextprotocol/server-everything@2026.8.31 \
    @modelcontextprotocol/conformance@0.1.16 node@22.23.3)
fi

# The prerelease suite (2026-07-28 scenarios) beside the pinned release.
if [ ! -f "$peers/node-next/node_modules/@modelcontextprotocol/conformance/package.json" ]; then
  mkdir -p "$peers/node-next"
  (cd "$peers/node-next" && [ -f package.json ] || echo '{"private":true}' > package.json)
  (cd "$peers/node-next" && npm install --no-audit --no-fund --loglevel=error \
    @modelcontextprotocol/conformance@0.2.0-alpha.12 node@22.23.3)
fi

# The TypeScript SDK v2 client, for the round-trip benchmark (issue 29).
if [ ! -f "$peers/node-client/node_modules/@modelcontextprotocol/client/package.json" ]; then
  mkdir -p "$peers/node-client"
  (cd "$peers/node-client" && [ -f package.json ] || echo '{"private":true}' > package.json)
  (cd "$peers/node-client" && npm install --no-audit --no-fund --loglevel=error \
    @modelcontextprotocol/client@2.4.0)
fi

if [ ! -x "$peers/venv/bin/python" ] || ! "$peers/venv/bin/python" -c 'import mcp.server.mcpserver, opentelemetry.sdk' 2>/dev/null; then
  python3 -m venv "$peers/venv"
  # The OpenTelemetry SDK: the peer records its own spans (issue 28).
  "$peers/venv/bin/pip" install --quiet --disable-pip-version-check mcp==2.3.0 opentelemetry-sdk==1.45.2
fi
echo "peers installed in $peers"
