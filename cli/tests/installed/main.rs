//! Tests against components installed on the machine, each ignored in the
//! plain test run and run by CI, which installs the component first (a
//! missing one fails, never skips): `interop` against real MCP servers
//! (`MCP_PEERS_DIR`, `.ci/install-peers.sh`), `proxy` through tinyproxy,
//! `redis` through redis-server (with TLS). One binary, so the library and
//! the command's dependencies link once:
//! `cargo test -p mcp-connect-cli --test installed -- --ignored proxy::`.

#[path = "../../../tests/support/mod.rs"]
mod support;

mod interop;
mod proxy;
mod redis;
