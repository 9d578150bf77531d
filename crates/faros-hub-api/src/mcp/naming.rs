//! IO-free rules of the federated namespace: `<provider>__<tool>` names, titles, and how a
//! provider's tool is presented to the workspace's clients.

use rmcp::model::Tool;

/// Separates the provider from its tool in a federated name.
pub const SEPARATOR: &str = "__";

/// Longest tool name MCP allows.
pub const MAX_NAME_LEN: usize = 128;

/// Why a provider's tool cannot be federated.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum NameError {
    #[error("tool name is empty")]
    Empty,
    #[error("{name:?} contains {ch:?}; MCP tool names allow only A-Z a-z 0-9 _ . -")]
    Character { name: String, ch: char },
    #[error("{name:?} is {len} characters long; MCP allows at most {MAX_NAME_LEN}")]
    TooLong { name: String, len: usize },
}

fn allowed(ch: char) -> bool {
    ch.is_ascii_alphanumeric() || matches!(ch, '_' | '.' | '-')
}

/// The federated name of `tool` of `provider`. Provider names are DNS labels, so the name is
/// unambiguous: splitting at the first `__` gives the provider back.
pub fn federated_name(provider: &str, tool: &str) -> Result<String, NameError> {
    if tool.is_empty() {
        return Err(NameError::Empty);
    }
    let name = format!("{provider}{SEPARATOR}{tool}");
    if let Some(ch) = name.chars().find(|c| !allowed(*c)) {
        return Err(NameError::Character { name, ch });
    }
    let len = name.len();
    if len > MAX_NAME_LEN {
        return Err(NameError::TooLong { name, len });
    }
    Ok(name)
}

/// Splits a federated name into (provider, tool). `None` when it is not one.
pub fn split(name: &str) -> Option<(&str, &str)> {
    let (provider, tool) = name.split_once(SEPARATOR)?;
    (!provider.is_empty() && !tool.is_empty()).then_some((provider, tool))
}

/// `<tool title or name> — <provider display name>`, so clients listing tools from many
/// providers can tell them apart.
pub fn title(tool_title: Option<&str>, tool_name: &str, display_name: &str) -> String {
    let base = tool_title.filter(|t| !t.trim().is_empty()).unwrap_or(tool_name);
    format!("{base} — {display_name}")
}

/// The provider's display name, or its name when it declares none.
pub fn display_name<'a>(provider: &'a str, declared: &'a str) -> &'a str {
    if declared.trim().is_empty() { provider } else { declared }
}

/// `tool` as the workspace's clients see it: renamed and retitled; description, schemas,
/// annotations, icons and metadata passed through unchanged.
pub fn federate(provider: &str, display_name: &str, tool: &Tool) -> Result<Tool, NameError> {
    let name = federated_name(provider, &tool.name)?;
    let mut out = tool.clone();
    out.title = Some(title(tool.title.as_deref(), &tool.name, display_name));
    out.name = name.into();
    Ok(out)
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use std::sync::Arc;

    use super::*;
    use pretty_assertions::assert_eq;

    #[test]
    fn federated_names() {
        let long = "t".repeat(MAX_NAME_LEN - "quickstart__".len());
        let too_long = format!("{long}x");
        for (provider, tool, want) in [
            (
                "quickstart",
                "list_greetings",
                Ok("quickstart__list_greetings".to_string()),
            ),
            ("q", "a.b-c_D9", Ok("q__a.b-c_D9".to_string())),
            ("quickstart", long.as_str(), Ok(format!("quickstart__{long}"))),
            (
                "quickstart",
                too_long.as_str(),
                Err(NameError::TooLong {
                    name: format!("quickstart__{too_long}"),
                    len: MAX_NAME_LEN + 1,
                }),
            ),
            ("q", "", Err(NameError::Empty)),
            (
                "q",
                "has space",
                Err(NameError::Character {
                    name: "q__has space".into(),
                    ch: ' ',
                }),
            ),
            (
                "q",
                "slash/y",
                Err(NameError::Character {
                    name: "q__slash/y".into(),
                    ch: '/',
                }),
            ),
            (
                "q",
                "ünïcode",
                Err(NameError::Character {
                    name: "q__ünïcode".into(),
                    ch: 'ü',
                }),
            ),
        ] {
            assert_eq!(federated_name(provider, tool), want, "{provider} {tool:?}");
        }
    }

    #[test]
    fn splitting() {
        for (name, want) in [
            ("quickstart__list_greetings", Some(("quickstart", "list_greetings"))),
            // The tool may itself contain the separator: only the first one counts.
            ("q__a__b", Some(("q", "a__b"))),
            ("q-1__x", Some(("q-1", "x"))),
            ("noseparator", None),
            ("__tool", None),
            ("q__", None),
            ("", None),
        ] {
            assert_eq!(split(name), want, "{name:?}");
        }
    }

    #[test]
    fn round_trip() {
        for (provider, tool) in [("quickstart", "create_greeting"), ("a", "b__c"), ("x-y", "z.w")] {
            let name = federated_name(provider, tool).unwrap();
            assert_eq!(split(&name), Some((provider, tool)));
        }
    }

    #[test]
    fn titles() {
        for (tool_title, name, display, want) in [
            (
                Some("List greetings"),
                "list_greetings",
                "Quickstart",
                "List greetings — Quickstart",
            ),
            (None, "list_greetings", "Quickstart", "list_greetings — Quickstart"),
            (
                Some("  "),
                "list_greetings",
                "Quickstart",
                "list_greetings — Quickstart",
            ),
        ] {
            assert_eq!(title(tool_title, name, display), want);
        }
        assert_eq!(display_name("q", ""), "q");
        assert_eq!(display_name("q", "Quick"), "Quick");
    }

    #[test]
    fn federate_passes_everything_else_through() {
        let mut schema = serde_json::Map::new();
        schema.insert("type".into(), "object".into());
        let mut tool = Tool::new("create_greeting", "Create a Greeting", Arc::new(schema.clone()));
        tool.output_schema = Some(Arc::new(schema.clone()));
        tool.annotations = Some(rmcp::model::ToolAnnotations::new().read_only(false));
        let out = federate("quickstart", "Quickstart", &tool).unwrap();
        assert_eq!(out.name, "quickstart__create_greeting");
        assert_eq!(out.title.as_deref(), Some("create_greeting — Quickstart"));
        assert_eq!(out.description, tool.description);
        assert_eq!(out.input_schema, tool.input_schema);
        assert_eq!(out.output_schema, tool.output_schema);
        assert_eq!(out.annotations, tool.annotations);
        assert!(federate("q", "Q", &Tool::new("bad name", "d", Arc::new(schema))).is_err());
    }
}
