#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| mcp_connect::fuzzing::mcpb_bundle(data));
