//! Header rewriting for the three proxies, IO-free.
//!
//! Provider proxies (UI, backend) are a trust boundary: nothing the caller sends may speak for the
//! hub (`X-Faros-*`), and no caller credential (`Authorization`, cookies) may reach a provider,
//! which could otherwise replay it against kcp. The hub then adds what it verified. The kcp
//! pass-through is the opposite: kcp authenticates the caller, so the bearer goes through untouched.

use http::header::{self, HeaderMap, HeaderName, HeaderValue};

use faros_core::identity::Identity;
use faros_core::names;

/// Hop-by-hop headers (RFC 9110 §7.6.1 plus the legacy ones); never forwarded as-is.
const HOP_BY_HOP: &[&str] = &[
    "connection",
    "keep-alive",
    "proxy-connection",
    "transfer-encoding",
    "te",
    "trailer",
    "upgrade",
    "proxy-authenticate",
    "proxy-authorization",
];

/// `X-Faros-Base-Path`: where the provider is mounted on the hub (for URLs it renders).
pub const HEADER_BASE_PATH: &str = "x-faros-base-path";

// The names the proxies set, made once at compile time rather than parsed per request.
const X_FORWARDED_FOR: HeaderName = HeaderName::from_static("x-forwarded-for");
const X_FORWARDED_PROTO: HeaderName = HeaderName::from_static("x-forwarded-proto");
const X_FORWARDED_HOST: HeaderName = HeaderName::from_static("x-forwarded-host");
const X_FAROS_BASE_PATH: HeaderName = HeaderName::from_static(HEADER_BASE_PATH);
const X_FAROS_USER: HeaderName = HeaderName::from_static(names::HEADER_USER);
const X_FAROS_ORG: HeaderName = HeaderName::from_static(names::HEADER_ORG);
const X_FAROS_WORKSPACE: HeaderName = HeaderName::from_static(names::HEADER_WORKSPACE);
const X_FAROS_CLUSTER: HeaderName = HeaderName::from_static(names::HEADER_CLUSTER);
const X_FAROS_ASSERTION: HeaderName = HeaderName::from_static(names::HEADER_ASSERTION);

/// Which proxy is rewriting.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Mode {
    /// `/ui/providers/<name>/*`: anonymous, credential-free.
    Ui { base_path: HeaderValue },
    /// `/services/providers/<name>/*`: credential-free, plus the verified identity (and tenant,
    /// when the request acts in a workspace).
    Backend {
        base_path: HeaderValue,
        identity: Identity,
        assertion: HeaderValue,
    },
    /// `/clusters/*`, `/services/apiexport/*`: the caller's credentials go to kcp unchanged.
    Kcp,
}

/// What the hub knows about the inbound connection, for `X-Forwarded-*`: values shared with the
/// connection ([`crate::server::Peer`]) and the request, not copied.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Forwarded {
    pub client_ip: Option<HeaderValue>,
    /// `http` or `https`.
    pub proto: &'static str,
    pub host: Option<HeaderValue>,
}

/// Whether the request asks for a protocol upgrade (WebSocket, SPDY).
pub fn wants_upgrade(headers: &HeaderMap) -> bool {
    headers.contains_key(header::UPGRADE) && connection_tokens(headers).iter().any(|t| t == "upgrade")
}

fn connection_tokens(headers: &HeaderMap) -> Vec<String> {
    headers
        .get_all(header::CONNECTION)
        .iter()
        .filter_map(|v| v.to_str().ok())
        .flat_map(|v| v.split(','))
        .map(|t| t.trim().to_ascii_lowercase())
        .filter(|t| !t.is_empty())
        .collect()
}

fn is_hop_by_hop(name: &HeaderName, listed: &[String]) -> bool {
    HOP_BY_HOP.contains(&name.as_str()) || listed.iter().any(|l| l == name.as_str())
}

fn is_forwarding(name: &HeaderName) -> bool {
    name == header::FORWARDED || name.as_str().starts_with("x-forwarded-")
}

/// The headers to send upstream.
pub fn request_headers(inbound: &HeaderMap, mode: &Mode, forwarded: &Forwarded) -> HeaderMap {
    let listed = connection_tokens(inbound);
    let upgrade = wants_upgrade(inbound);
    let provider = !matches!(mode, Mode::Kcp);
    let mut out = HeaderMap::with_capacity(inbound.len() + 6);
    let ui = matches!(mode, Mode::Ui { .. });
    for (name, value) in inbound {
        if is_hop_by_hop(name, &listed) || name == header::HOST || is_forwarding(name) {
            continue;
        }
        // The UI proxy forwards what a static asset fetch needs and nothing else (no cookies, no
        // cloud-metadata headers a caller could aim at whatever `ui.url` names).
        if ui && !super::ui_assets::request_header_allowed(name) {
            continue;
        }
        if provider
            && (name == header::AUTHORIZATION
                || name == header::COOKIE
                || name.as_str().starts_with(names::HEADER_PREFIX))
        {
            continue;
        }
        out.append(name.clone(), value.clone());
    }
    // `te: trailers` is end-to-end in practice (gRPC needs it; static assets do not).
    if !ui
        && inbound.get_all(header::TE).iter().any(|v| {
            v.to_str()
                .is_ok_and(|s| s.split(',').any(|t| t.trim().eq_ignore_ascii_case("trailers")))
        })
    {
        out.insert(header::TE, HeaderValue::from_static("trailers"));
    }
    if upgrade && let Some(u) = inbound.get(header::UPGRADE) {
        out.insert(header::CONNECTION, HeaderValue::from_static("upgrade"));
        out.insert(header::UPGRADE, u.clone());
    }
    if let Some(ip) = &forwarded.client_ip {
        out.insert(X_FORWARDED_FOR, ip.clone());
    }
    out.insert(X_FORWARDED_PROTO, HeaderValue::from_static(forwarded.proto));
    if let Some(host) = &forwarded.host {
        out.insert(X_FORWARDED_HOST, host.clone());
    }

    match mode {
        Mode::Ui { base_path } => {
            out.insert(X_FAROS_BASE_PATH, base_path.clone());
        }
        Mode::Backend {
            base_path,
            identity,
            assertion,
        } => {
            out.insert(X_FAROS_BASE_PATH, base_path.clone());
            set(&mut out, X_FAROS_USER, &identity.user);
            if !identity.cluster.is_empty() {
                set(&mut out, X_FAROS_ORG, &identity.org);
                set(&mut out, X_FAROS_WORKSPACE, &identity.workspace);
                set(&mut out, X_FAROS_CLUSTER, &identity.cluster);
            }
            out.insert(X_FAROS_ASSERTION, assertion.clone());
        }
        Mode::Kcp => {}
    }
    if provider {
        // RFC 9110 §7.6.3: names this hop, so a provider URL that leads back to a hub is refused
        // there ([`passed_through_hub`]) instead of looping.
        out.append(header::VIA, HeaderValue::from_static(VIA));
    }
    out
}

/// Sets `name` to `value`; a value that is not a valid header value (no such identity can be
/// authenticated) is left out.
fn set(out: &mut HeaderMap, name: HeaderName, value: &str) {
    if let Ok(v) = HeaderValue::from_str(value) {
        out.insert(name, v);
    }
}

/// This hub's `Via` entry: protocol and pseudonym (RFC 9110 §7.6.3), the same on every replica.
pub const VIA: &str = "1.1 faros-hub";

/// Whether the request already passed through a faros hub's provider proxy: it came back to a hub
/// through a provider URL, a loop (`508 Loop Detected` rather than one more hop).
pub fn passed_through_hub(inbound: &HeaderMap) -> bool {
    inbound
        .get_all(header::VIA)
        .iter()
        .filter_map(|v| v.to_str().ok())
        .flat_map(|v| v.split(','))
        .any(|entry| {
            let mut parts = entry.split_whitespace();
            let _protocol = parts.next();
            parts.next() == Some("faros-hub")
        })
}

/// Rewrites upstream response headers in place: hop-by-hop headers go (kept on a `101` so the
/// upgrade completes), and providers may not set cookies on the hub's origin.
pub fn response_headers(headers: &mut HeaderMap, mode: &Mode, switching_protocols: bool) {
    let listed = connection_tokens(headers);
    let drop: Vec<HeaderName> = headers
        .keys()
        .filter(|n| {
            let keep_for_upgrade = switching_protocols && (*n == header::CONNECTION || *n == header::UPGRADE);
            (is_hop_by_hop(n, &listed) && !keep_for_upgrade) || (!matches!(mode, Mode::Kcp) && *n == header::SET_COOKIE)
        })
        .cloned()
        .collect();
    for n in drop {
        headers.remove(n);
    }
    if matches!(mode, Mode::Ui { .. }) {
        super::ui_assets::rewrite_response(headers);
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;
    use crate::proxy::test_support::sorted;
    use pretty_assertions::assert_eq;

    fn map(pairs: &[(&str, &str)]) -> HeaderMap {
        let mut h = HeaderMap::new();
        for (k, v) in pairs {
            h.append(
                HeaderName::from_bytes(k.as_bytes()).unwrap(),
                HeaderValue::from_str(v).unwrap(),
            );
        }
        h
    }

    fn pairs(p: &[(&str, &str)]) -> Vec<(String, String)> {
        let mut v: Vec<(String, String)> = p.iter().map(|(a, b)| (a.to_string(), b.to_string())).collect();
        v.sort();
        v
    }

    #[test]
    fn request_rewrite_table() {
        let inbound = map(&[
            ("host", "hub.example"),
            ("authorization", "Bearer user-token"),
            ("cookie", "session=1"),
            ("X-Faros-User", "admin"),
            ("x-faros-assertion", "forged"),
            ("x-faros-org", "victim"),
            ("x-forwarded-for", "6.6.6.6"),
            ("connection", "keep-alive, x-secret"),
            ("x-secret", "hop"),
            ("keep-alive", "timeout=5"),
            ("te", "trailers, deflate"),
            ("accept", "text/html"),
            ("accept", "application/json"),
        ]);
        let fwd = Forwarded {
            client_ip: Some(HeaderValue::from_static("10.0.0.9")),
            proto: "https",
            host: Some(HeaderValue::from_static("hub.example")),
        };
        let common = [
            ("accept", "text/html"),
            ("accept", "application/json"),
            ("te", "trailers"),
            ("x-forwarded-for", "10.0.0.9"),
            ("x-forwarded-proto", "https"),
            ("x-forwarded-host", "hub.example"),
        ];
        let ui = Mode::Ui {
            base_path: HeaderValue::from_static("/ui/providers/q"),
        };
        let backend = Mode::Backend {
            base_path: HeaderValue::from_static("/services/providers/q"),
            identity: Identity {
                user: "alice".into(),
                ..Default::default()
            },
            assertion: HeaderValue::from_static("signed"),
        };
        let tenant_backend = Mode::Backend {
            base_path: HeaderValue::from_static("/services/providers/q"),
            identity: Identity {
                user: "alice".into(),
                groups: vec!["devs".into()],
                org: "acme".into(),
                workspace: "dev".into(),
                cluster: "c1".into(),
            },
            assertion: HeaderValue::from_static("signed"),
        };
        type Case<'a> = (&'a str, Mode, Vec<(&'a str, &'a str)>);
        let cases: Vec<Case<'_>> = vec![
            (
                // An allow-list: `te` is not a header a static asset needs.
                "ui",
                ui,
                [&common[..], &[("x-faros-base-path", "/ui/providers/q"), ("via", VIA)]]
                    .concat()
                    .into_iter()
                    .filter(|(k, _)| *k != "te")
                    .collect(),
            ),
            (
                "backend",
                backend,
                [
                    &common[..],
                    &[
                        ("x-faros-base-path", "/services/providers/q"),
                        ("x-faros-user", "alice"),
                        ("x-faros-assertion", "signed"),
                        ("via", VIA),
                    ],
                ]
                .concat(),
            ),
            (
                "backend in a workspace",
                tenant_backend,
                [
                    &common[..],
                    &[
                        ("via", VIA),
                        ("x-faros-base-path", "/services/providers/q"),
                        ("x-faros-user", "alice"),
                        ("x-faros-org", "acme"),
                        ("x-faros-workspace", "dev"),
                        ("x-faros-cluster", "c1"),
                        ("x-faros-assertion", "signed"),
                    ],
                ]
                .concat(),
            ),
            (
                "kcp keeps credentials and everything end-to-end",
                Mode::Kcp,
                [
                    &common[..],
                    &[
                        ("authorization", "Bearer user-token"),
                        ("cookie", "session=1"),
                        ("x-faros-user", "admin"),
                        ("x-faros-assertion", "forged"),
                        ("x-faros-org", "victim"),
                    ],
                ]
                .concat(),
            ),
        ];
        for (what, mode, want) in cases {
            assert_eq!(sorted(&request_headers(&inbound, &mode, &fwd)), pairs(&want), "{what}");
        }
    }

    #[test]
    fn loops_are_recognised_by_the_hub_pseudonym() {
        for (via, looped) in [
            (None, false),
            (Some("1.1 nginx"), false),
            (Some("1.1 faros-hub"), true),
            (Some("1.0 fred, 1.1 faros-hub"), true),
            (Some("HTTP/1.1 faros-hub (faros)"), true),
            (Some("1.1 faros-hubby"), false),
        ] {
            let inbound = via.map(|v| map(&[("via", v)])).unwrap_or_default();
            assert_eq!(passed_through_hub(&inbound), looped, "{via:?}");
        }
    }

    #[test]
    fn upgrades_keep_their_headers() {
        let inbound = map(&[
            ("connection", "Upgrade"),
            ("upgrade", "websocket"),
            ("sec-websocket-key", "k"),
        ]);
        assert!(wants_upgrade(&inbound));
        let out = request_headers(
            &inbound,
            &Mode::Kcp,
            &Forwarded {
                proto: "http",
                ..Default::default()
            },
        );
        assert_eq!(
            sorted(&out),
            pairs(&[
                ("connection", "upgrade"),
                ("upgrade", "websocket"),
                ("sec-websocket-key", "k"),
                ("x-forwarded-proto", "http")
            ])
        );
        assert!(!wants_upgrade(&map(&[("upgrade", "websocket")])));
        assert!(!wants_upgrade(&map(&[("connection", "upgrade")])));
    }

    #[test]
    fn response_rewrite_table() {
        for (what, mode, switching, want) in [
            (
                "ui keeps asset headers and adds its own (crate::proxy::ui_assets)",
                Mode::Ui {
                    base_path: HeaderValue::from_static(""),
                },
                false,
                vec![
                    ("access-control-allow-origin", "*"),
                    ("content-security-policy", super::super::ui_assets::ASSET_CSP),
                    ("content-type", "text/javascript"),
                    ("cross-origin-resource-policy", "cross-origin"),
                    ("referrer-policy", "no-referrer"),
                    ("x-content-type-options", "nosniff"),
                ],
            ),
            (
                "kcp keeps cookies",
                Mode::Kcp,
                false,
                vec![("content-type", "text/javascript"), ("set-cookie", "a=b")],
            ),
            (
                "101 keeps the upgrade",
                Mode::Kcp,
                true,
                vec![
                    ("connection", "upgrade"),
                    ("content-type", "text/javascript"),
                    ("set-cookie", "a=b"),
                    ("upgrade", "websocket"),
                ],
            ),
        ] {
            let mut h = map(&[
                ("content-type", "text/javascript"),
                ("set-cookie", "a=b"),
                ("connection", "upgrade"),
                ("upgrade", "websocket"),
                ("transfer-encoding", "chunked"),
                ("keep-alive", "timeout=5"),
            ]);
            response_headers(&mut h, &mode, switching);
            assert_eq!(sorted(&h), pairs(&want), "{what}");
        }
    }
}
