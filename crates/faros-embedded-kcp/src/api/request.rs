//! Parsing a request path into what it addresses (Kubernetes' `RequestInfo`), with kcp's
//! `/clusters/<name>` prefix.

use faros_core::status::Status;

/// The logical cluster a bare path (no `/clusters/` prefix) addresses.
pub const ROOT_CLUSTER: &str = "root";

/// What a request path addresses within one logical cluster.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Target {
    /// `/api`
    LegacyVersions,
    /// `/apis`
    Groups,
    /// `/apis/<group>`
    Group(String),
    /// `/api/v1` or `/apis/<group>/<version>`
    ResourceList { group: String, version: String },
    /// A resource collection, object or subresource.
    Resource(ResourcePath),
    /// `/openapi/v3` (None) or `/openapi/v3/<gv path>` (Some)
    OpenApiV3(Option<String>),
    /// `/openapi/v2`
    OpenApiV2,
    /// Anything else: `/version`, `/healthz`, unknown paths.
    NonResource(String),
}

/// A resource request path.
#[derive(Clone, Debug, PartialEq, Eq, Default)]
pub struct ResourcePath {
    pub group: String,
    pub version: String,
    pub namespace: Option<String>,
    pub resource: String,
    pub name: Option<String>,
    pub subresource: Option<String>,
}

/// A parsed request path.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RequestPath {
    /// The cluster segment as given: a name, a `root:a:b` path, or `*`.
    pub cluster: String,
    /// Whether the path carried a `/clusters/` prefix.
    pub explicit_cluster: bool,
    pub target: Target,
}

/// Splits `/clusters/<c>/rest` and parses `rest`.
pub fn parse(path: &str) -> Result<RequestPath, Status> {
    let (cluster, explicit, rest) = match path.strip_prefix("/clusters/") {
        Some(after) => {
            let (c, rest) = after
                .split_once('/')
                .map(|(c, r)| (c, format!("/{r}")))
                .unwrap_or((after, "/".into()));
            if c.is_empty() {
                return Err(Status::not_found_message(
                    "the server could not find the requested resource",
                ));
            }
            (c.to_string(), true, rest)
        }
        None => (ROOT_CLUSTER.to_string(), false, path.to_string()),
    };
    Ok(RequestPath {
        cluster,
        explicit_cluster: explicit,
        target: parse_target(&rest),
    })
}

fn parse_target(path: &str) -> Target {
    let trimmed = path.trim_end_matches('/');
    let parts: Vec<&str> = trimmed.split('/').filter(|p| !p.is_empty()).collect();
    match parts.as_slice() {
        ["api"] => Target::LegacyVersions,
        ["apis"] => Target::Groups,
        ["apis", g] => Target::Group(g.to_string()),
        ["api", v] => Target::ResourceList {
            group: String::new(),
            version: v.to_string(),
        },
        ["apis", g, v] => Target::ResourceList {
            group: g.to_string(),
            version: v.to_string(),
        },
        ["api", v, rest @ ..] => resource_target("", v, rest, trimmed),
        ["apis", g, v, rest @ ..] => resource_target(g, v, rest, trimmed),
        ["openapi", "v3"] => Target::OpenApiV3(None),
        ["openapi", "v3", rest @ ..] => Target::OpenApiV3(Some(rest.join("/"))),
        ["openapi", "v2"] => Target::OpenApiV2,
        _ => Target::NonResource(if trimmed.is_empty() {
            "/".into()
        } else {
            trimmed.to_string()
        }),
    }
}

fn resource_target(group: &str, version: &str, rest: &[&str], whole: &str) -> Target {
    let mut p = ResourcePath {
        group: group.into(),
        version: version.into(),
        ..Default::default()
    };
    // Mirrors Kubernetes' RequestInfoFactory: `namespaces/<ns>/<resource>...` scopes to a namespace,
    // while `namespaces/<name>[/<sub>]` addresses the Namespace object itself.
    let rest: Vec<String> = rest.iter().map(|s| decode(s)).collect();
    match rest.as_slice() {
        // `status` and `finalize` after a namespace name are subresources of the Namespace itself.
        [ns, name, sub] if ns == "namespaces" && (sub == "status" || sub == "finalize") => {
            p.resource = "namespaces".into();
            p.name = Some(name.clone());
            p.subresource = Some(sub.clone());
        }
        [ns, name, resource, tail @ ..] if ns == "namespaces" => {
            p.namespace = Some(name.clone());
            p.resource = resource.clone();
            match tail {
                [] => {}
                [n] => p.name = Some(n.clone()),
                [n, sub] => {
                    p.name = Some(n.clone());
                    p.subresource = Some(sub.clone());
                }
                _ => return Target::NonResource(whole.to_string()),
            }
        }
        [resource] => p.resource = resource.clone(),
        [resource, name] => {
            p.resource = resource.clone();
            p.name = Some(name.clone());
        }
        [resource, name, sub] => {
            p.resource = resource.clone();
            p.name = Some(name.clone());
            p.subresource = Some(sub.clone());
        }
        _ => return Target::NonResource(whole.to_string()),
    }
    Target::Resource(p)
}

/// A Go `time.Duration` string as clients put in `?timeout=` (`32s`, `1m0s`, `1.5h`, `250ms`).
pub fn go_duration(s: &str) -> Option<std::time::Duration> {
    if s == "0" {
        return Some(std::time::Duration::ZERO);
    }
    let mut rest = s;
    let mut total = 0f64;
    if rest.is_empty() {
        return None;
    }
    while !rest.is_empty() {
        let digits = rest
            .find(|c: char| !(c.is_ascii_digit() || c == '.'))
            .unwrap_or(rest.len());
        let number: f64 = rest[..digits].parse().ok()?;
        rest = &rest[digits..];
        let unit_len = rest
            .find(|c: char| c.is_ascii_digit() || c == '.')
            .unwrap_or(rest.len());
        let seconds = match &rest[..unit_len] {
            "ns" => 1e-9,
            "us" | "µs" => 1e-6,
            "ms" => 1e-3,
            "s" => 1.0,
            "m" => 60.0,
            "h" => 3600.0,
            _ => return None,
        };
        rest = &rest[unit_len..];
        total += number * seconds;
    }
    std::time::Duration::try_from_secs_f64(total).ok()
}

fn decode(segment: &str) -> String {
    percent_encoding::percent_decode_str(segment)
        .decode_utf8_lossy()
        .into_owned()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn res(g: &str, v: &str, ns: Option<&str>, r: &str, n: Option<&str>, s: Option<&str>) -> Target {
        Target::Resource(ResourcePath {
            group: g.into(),
            version: v.into(),
            namespace: ns.map(Into::into),
            resource: r.into(),
            name: n.map(Into::into),
            subresource: s.map(Into::into),
        })
    }

    #[test]
    fn parses_paths() {
        let cases: Vec<(&str, &str, Target)> = vec![
            ("/api", "root", Target::LegacyVersions),
            ("/clusters/root:org/apis", "root:org", Target::Groups),
            (
                "/apis/rbac.authorization.k8s.io",
                "root",
                Target::Group("rbac.authorization.k8s.io".into()),
            ),
            (
                "/api/v1",
                "root",
                Target::ResourceList {
                    group: "".into(),
                    version: "v1".into(),
                },
            ),
            (
                "/clusters/*/api/v1/configmaps",
                "*",
                res("", "v1", None, "configmaps", None, None),
            ),
            (
                "/api/v1/namespaces",
                "root",
                res("", "v1", None, "namespaces", None, None),
            ),
            (
                "/api/v1/namespaces/default",
                "root",
                res("", "v1", None, "namespaces", Some("default"), None),
            ),
            (
                "/api/v1/namespaces/x/status",
                "root",
                res("", "v1", None, "namespaces", Some("x"), Some("status")),
            ),
            (
                "/api/v1/namespaces/default/configmaps/a",
                "root",
                res("", "v1", Some("default"), "configmaps", Some("a"), None),
            ),
            (
                "/apis/coordination.k8s.io/v1/namespaces/d/leases/l/status",
                "root",
                res(
                    "coordination.k8s.io",
                    "v1",
                    Some("d"),
                    "leases",
                    Some("l"),
                    Some("status"),
                ),
            ),
            (
                "/apis/g/v1/widgets/w/status/",
                "root",
                res("g", "v1", None, "widgets", Some("w"), Some("status")),
            ),
            ("/openapi/v3", "root", Target::OpenApiV3(None)),
            (
                "/openapi/v3/apis/g/v1",
                "root",
                Target::OpenApiV3(Some("apis/g/v1".into())),
            ),
            ("/version", "root", Target::NonResource("/version".into())),
            ("/api/v1/a/b/c/d", "root", Target::NonResource("/api/v1/a/b/c/d".into())),
        ];
        for (path, cluster, want) in cases {
            let got = parse(path).unwrap();
            assert_eq!(got.cluster, cluster, "{path}");
            assert_eq!(got.target, want, "{path}");
        }
    }

    #[test]
    fn parses_go_durations() {
        use std::time::Duration;
        let cases = [
            ("32s", Some(Duration::from_secs(32))),
            ("1m0s", Some(Duration::from_secs(60))),
            ("1h2m3s", Some(Duration::from_secs(3723))),
            ("1.5h", Some(Duration::from_secs(5400))),
            ("250ms", Some(Duration::from_millis(250))),
            ("0", Some(Duration::ZERO)),
            ("", None),
            ("10", None),
            ("5x", None),
            ("s", None),
            ("-1s", None),
        ];
        for (input, want) in cases {
            assert_eq!(go_duration(input), want, "{input}");
        }
    }

    #[test]
    fn rejects_empty_cluster() {
        assert_eq!(parse("/clusters//api").unwrap_err().code, 404);
    }
}
