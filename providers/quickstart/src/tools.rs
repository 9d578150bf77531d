//! MCP tools `list_greetings` and `create_greeting`, acting only in the caller's workspace (the
//! logical cluster named by the verified identity, never by a tool argument).

use faros_sdk::prelude::*;

use crate::greeting::{self, NewGreeting};

pub fn list_greetings() -> Tool {
    Tool::no_input(
        "list_greetings",
        "List the Greetings in the caller's workspace, with their replies.",
        |caller: Caller| async move { Ok(json!({"items": greeting::list(caller.client).await?})) },
    )
}

pub fn create_greeting() -> Tool {
    Tool::new(
        "create_greeting",
        "Create a Greeting for `name` in the caller's workspace; the provider replies in its status.",
        |caller: Caller, new: NewGreeting| async move { greeting::create(caller.client, &new).await },
    )
}
