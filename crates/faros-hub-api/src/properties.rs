//! The properties the hub's parsers of provider and tenant input must keep, as plain functions
//! that panic when one breaks: shared by the property tests (`proptests.rs`) and the `cargo fuzz`
//! targets in `fuzz/`.

use crate::catalog::heartbeat::parse_beat;
use crate::mcp::naming::{MAX_NAME_LEN, federated_name, split};
use crate::tenancy::enable::plan::parse_request;

/// Federated MCP tool names: for a provider name that is a DNS label, any tool name either is
/// refused or federates to a valid MCP name that splits back into exactly that provider and
/// tool (so a call can never reach another provider's tool).
pub fn mcp_tool_name(provider: &str, tool: &str) {
    if faros_core::names::validate_dns_label(provider).is_err() {
        return;
    }
    let Ok(name) = federated_name(provider, tool) else {
        return;
    };
    assert!(name.len() <= MAX_NAME_LEN, "{name:?} is longer than MCP allows");
    assert!(
        name.chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '_' | '.' | '-')),
        "{name:?} has characters MCP does not allow"
    );
    assert_eq!(
        split(&name),
        Some((provider, tool)),
        "{name:?} does not split back into its provider and tool"
    );
}

/// Any federated name a client sends either names no tool or names one provider and a
/// non-empty tool.
pub fn mcp_call_name(name: &str) {
    if let Some((provider, tool)) = split(name) {
        assert!(
            !provider.is_empty() && !tool.is_empty(),
            "{name:?} split into an empty part"
        );
        assert!(
            !provider.contains("__"),
            "{name:?}: the provider part holds the separator"
        );
    }
}

/// Heartbeat and Enable bodies: parsing arbitrary bytes never panics, and blank bodies mean
/// "no fields" / "no claims".
pub fn request_bodies(body: &[u8]) {
    let beat = parse_beat(body);
    let enable = parse_request(body);
    if body.iter().all(u8::is_ascii_whitespace) {
        assert!(beat.is_ok() && enable.is_ok(), "a blank body was refused");
    }
}
