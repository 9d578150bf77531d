//! Federated MCP tool names (`<provider>__<tool>`) built and split by the hub.
#![no_main]

use faros_hub_api::properties;

libfuzzer_sys::fuzz_target!(|input: (&str, &str, &str)| {
    properties::mcp_tool_name(input.0, input.1);
    properties::mcp_call_name(input.2);
});
