//! Property tests: [`crate::properties`] driven by proptest.

use proptest::prelude::*;

use crate::properties;

proptest! {
    #[test]
    fn mcp_tool_names(provider in "[a-z0-9]([a-z0-9-]{0,20}[a-z0-9])?", tool in "[A-Za-z0-9_.\\- ]{0,40}|.{0,20}") {
        properties::mcp_tool_name(&provider, &tool);
    }

    #[test]
    fn mcp_tool_names_from_arbitrary_text(provider in ".{0,20}", tool in ".{0,40}") {
        properties::mcp_tool_name(&provider, &tool);
    }

    #[test]
    fn mcp_call_names(name in "([a-z_]{0,4}(__)?){0,4}|.{0,40}") {
        properties::mcp_call_name(&name);
    }

    #[test]
    fn request_bodies(body in prop::collection::vec(any::<u8>(), 0..64)) {
        properties::request_bodies(&body);
    }

    #[test]
    fn request_bodies_shaped(body in "[ \\t\\n]*(null|\\{\\}|\\[\\]|\\{\"(version|status|claims|acceptedClaims)\": ?(\"[a-z]{0,4}\"|null|1|\\[\\]|\\{\\})\\})?[ \\t\\n]*") {
        properties::request_bodies(body.as_bytes());
    }
}
