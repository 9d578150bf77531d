//! The headers the hub's backend proxy adds to each request, for nginx to add the same.
//!
//! "Added latency" is measured at the client, so it includes the upstream's work, and an upstream
//! reads every header it is sent: through the hub, about 700 bytes more on `/healthz` (the
//! forwarding headers, the mount point, the user, a signed assertion and a request ID). An nginx forwarding none
//! of them leaves its upstream less to read, which is not a difference between the proxies: any
//! reverse proxy in front of an application forwards the client's address and scheme, and one in
//! front of an application that needs the caller's identity (nginx with `auth_request`) forwards
//! that too. So the baseline nginx sends the same header names with values of the same sizes:
//! `X-Forwarded-*` from its own variables; the mount point and the user as the hub sets them; and an
//! assertion signed for the same identity and audience by a throwaway key of the same kind (the hub's
//! own key never leaves it; `/healthz` does not verify assertions). nginx still does none of the
//! hub's work (authentication, tenancy, signing), only the forwarding.
//!
//! `cargo xtask bench proxy-instructions` uses the same configuration, so its count of what the
//! upstream does per request behind each proxy compares like with like.

use anyhow::{Context, bail};
use faros_core::identity::{self, Claims, Identity, SigningKey};
use faros_core::names;
use serde_json::Value;

use super::faros::Faros;

/// The provider whose backend the suites proxy to.
pub(super) const PROVIDER: &str = "quickstart";

/// The hub's `Via` (`faros_hub_api::proxy::headers::VIA`) is `1.1 faros-hub`; nginx names itself.
const VIA: &str = "1.1 nginx";

/// A header nginx sets on every proxied request: `proxy_set_header name value;`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) struct SetHeader {
    name: String,
    /// A string literal or one nginx variable (`$scheme`).
    value: String,
}

/// The headers the hub adds for a caller who names no tenant (what the suites send): forwarding,
/// mount point, user, assertion, `Via`, request ID.
pub(super) fn like_the_hub(user: &str, assertion: &str) -> Vec<SetHeader> {
    let set = |name: &str, value: &str| SetHeader {
        name: name.into(),
        value: value.into(),
    };
    vec![
        set("X-Forwarded-For", "$proxy_add_x_forwarded_for"),
        set("X-Forwarded-Proto", "$scheme"),
        set("X-Forwarded-Host", "$http_host"),
        set("X-Faros-Base-Path", &names::backend_proxy_prefix(PROVIDER)),
        set(names::HEADER_USER, user),
        set(names::HEADER_ASSERTION, assertion),
        set("Via", VIA),
        // The hub's request ID (`faros_hub_api::edge`: a counter run through a bijection, unique
        // per process), forwarded like every other end-to-end header. nginx's `$request_id` draws
        // 16 random bytes per request, about 8 000 instructions by callgrind, work the hub does
        // not do; its connection serial and request number are as unique and as cheap.
        set("X-Request-Id", "$connection-$connection_requests"),
    ]
}

/// The headers as nginx `proxy_set_header` directives; a value nginx would read as more than one
/// literal or variable is refused rather than escaped (none of the hub's values needs escaping).
pub(super) fn directives(headers: &[SetHeader]) -> anyhow::Result<String> {
    let mut out = String::new();
    for h in headers {
        let variable = is_variables(&h.value);
        if !variable
            && h.value
                .chars()
                .any(|c| matches!(c, '"' | '\\' | '$' | ';' | '{' | '}') || c.is_control())
        {
            bail!(
                "header {}: value {:?} would need escaping in nginx.conf",
                h.name,
                h.value
            );
        }
        out.push_str(&format!("proxy_set_header {} \"{}\"; ", h.name, h.value));
    }
    Ok(out)
}

/// Whether `value` is nginx variables joined by hyphens (`$scheme`, `$connection-$connection_requests`).
fn is_variables(value: &str) -> bool {
    value.split('-').all(|part| {
        part.strip_prefix('$')
            .is_some_and(|name| !name.is_empty() && name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_'))
    })
}

/// [`like_the_hub`] for the caller holding `f`'s token: its user as the hub authenticates it
/// (`/api/me`), and an assertion of the hub's shape for that identity and [`PROVIDER`].
pub(super) async fn for_the_admin(f: &Faros) -> anyhow::Result<Vec<SetHeader>> {
    let me: Value = f
        .http
        .get(format!("{}/api/me", f.hub))
        .bearer_auth(&f.token)
        .send()
        .await?
        .error_for_status()
        .context("GET /api/me")?
        .json()
        .await?;
    let user = me["user"].as_str().context("/api/me has no user")?.to_string();
    let groups = me["groups"]
        .as_array()
        .map(|g| g.iter().filter_map(|v| v.as_str().map(String::from)).collect())
        .unwrap_or_default();
    let identity = Identity {
        user: user.clone(),
        groups,
        ..Default::default()
    };
    // A key id as long as the hub's (12 characters).
    let key = SigningKey::generate("nginxbaseln0")?;
    let assertion = key.sign(&Claims::new(
        identity,
        PROVIDER,
        identity::now_unix(),
        identity::DEFAULT_TTL,
    ))?;
    Ok(like_the_hub(&user, &assertion))
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    #[test]
    fn directives_quote_literals_and_pass_variables() {
        let cases: Vec<(&str, Vec<SetHeader>, Result<&str, &str>)> = vec![
            ("none", vec![], Ok("")),
            (
                "variable",
                vec![SetHeader {
                    name: "X-Forwarded-Proto".into(),
                    value: "$scheme".into(),
                }],
                Ok("proxy_set_header X-Forwarded-Proto \"$scheme\"; "),
            ),
            (
                "literal with a space",
                vec![SetHeader {
                    name: "Via".into(),
                    value: "1.1 nginx".into(),
                }],
                Ok("proxy_set_header Via \"1.1 nginx\"; "),
            ),
            (
                "a quote",
                vec![SetHeader {
                    name: "x-faros-user".into(),
                    value: "a\"b".into(),
                }],
                Err("x-faros-user"),
            ),
            (
                "a dollar inside a literal",
                vec![SetHeader {
                    name: "x-faros-user".into(),
                    value: "me$you".into(),
                }],
                Err("escaping"),
            ),
            (
                "variables joined",
                vec![SetHeader {
                    name: "X-Request-Id".into(),
                    value: "$connection-$connection_requests".into(),
                }],
                Ok("proxy_set_header X-Request-Id \"$connection-$connection_requests\"; "),
            ),
            (
                "a variable and a literal",
                vec![SetHeader {
                    name: "X-Request-Id".into(),
                    value: "$connection-x".into(),
                }],
                Err("escaping"),
            ),
            (
                "a lone dollar",
                vec![SetHeader {
                    name: "x-faros-user".into(),
                    value: "$".into(),
                }],
                Err("escaping"),
            ),
        ];
        for (name, headers, want) in cases {
            match (directives(&headers), want) {
                (Ok(got), Ok(want)) => assert_eq!(got, want, "{name}"),
                (Err(e), Err(want)) => assert!(e.to_string().contains(want), "{name}: {e}"),
                (got, want) => panic!("{name}: got {got:?}, want {want:?}"),
            }
        }
    }

    #[test]
    fn an_assertion_of_the_hubs_shape_needs_no_escaping() {
        let key = SigningKey::generate("nginxbaseln0").unwrap();
        let identity = Identity {
            user: "admin".into(),
            groups: vec!["system:masters".into()],
            ..Default::default()
        };
        let jws = key
            .sign(&Claims::new(identity, PROVIDER, 1_700_000_000, identity::DEFAULT_TTL))
            .unwrap();
        let conf = directives(&like_the_hub("admin", &jws)).unwrap();
        assert!(
            conf.contains(&format!("proxy_set_header x-faros-assertion \"{jws}\"; ")),
            "{conf}"
        );
    }
}
