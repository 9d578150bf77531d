//! Matching provider proxy paths, IO-free.
//!
//! The raw (still percent-encoded) path is used, never axum's decoded `Path`, so `%2F` in a
//! provider path reaches the provider exactly as sent.

use faros_core::names;

/// `/ui/providers/`.
pub const UI_PREFIX: &str = "/ui/providers/";
/// `/services/providers/`.
pub const BACKEND_PREFIX: &str = "/services/providers/";

/// Why a provider path was rejected.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum RouteError {
    /// Not below the prefix, or the name is not a provider name.
    NotAProviderPath,
    /// The rest has `.`/`..` segments, which could climb out of the provider's mount upstream.
    DotSegment,
}

/// Splits `<prefix><name>[/rest]` into `(name, rest)`; the rest is at least `/`.
pub fn split<'a>(path: &'a str, prefix: &str) -> Result<(&'a str, &'a str), RouteError> {
    let tail = path.strip_prefix(prefix).ok_or(RouteError::NotAProviderPath)?;
    let (name, rest) = match tail.bytes().position(|b| b == b'/') {
        Some(i) => (&tail[..i], &tail[i..]),
        None => (tail, "/"),
    };
    names::validate_dns_label(name).map_err(|_| RouteError::NotAProviderPath)?;
    // Split as bytes: the segments are short, and `str::split` on a char would start a search
    // for each one.
    if rest.as_bytes().split(|b| *b == b'/').any(is_dot_segment) {
        return Err(RouteError::DotSegment);
    }
    Ok((name, rest))
}

/// `.` or `..`, spelled with dots or percent-encoded (`%2e`, `%2E`) ones.
fn is_dot_segment(seg: &[u8]) -> bool {
    let mut rest = seg;
    let mut dots = 0;
    while !rest.is_empty() {
        rest = match rest {
            [b'.', tail @ ..] => tail,
            [b'%', b'2', e, tail @ ..] if e.eq_ignore_ascii_case(&b'e') => tail,
            _ => return false,
        };
        dots += 1;
    }
    dots == 1 || dots == 2
}

/// `base` + `rest` (+ `?query`): the upstream URI of a proxied request.
pub fn join(base: &http::Uri, rest: &str, query: Option<&str>) -> Result<http::Uri, http::Error> {
    let base_path = base.path().trim_end_matches('/');
    let mut path_and_query = String::with_capacity(base_path.len() + rest.len() + 1);
    path_and_query.push_str(base_path);
    path_and_query.push_str(rest);
    if path_and_query.is_empty() {
        path_and_query.push('/');
    }
    if let Some(q) = query {
        path_and_query.push('?');
        path_and_query.push_str(q);
    }
    let mut parts = http::uri::Parts::default();
    parts.scheme = base.scheme().cloned();
    parts.authority = base.authority().cloned();
    // From the `String` itself: `parse` would copy it.
    parts.path_and_query = Some(http::uri::PathAndQuery::try_from(path_and_query)?);
    Ok(http::Uri::from_parts(parts)?)
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;
    use pretty_assertions::assert_eq;

    #[test]
    fn split_table() {
        for (path, want) in [
            ("/ui/providers/q", Ok(("q", "/"))),
            ("/ui/providers/q/", Ok(("q", "/"))),
            ("/ui/providers/q/main.js", Ok(("q", "/main.js"))),
            ("/ui/providers/q/a%2Fb/c", Ok(("q", "/a%2Fb/c"))),
            ("/ui/providers/q/.well/x", Ok(("q", "/.well/x"))),
            ("/ui/providers/", Err(RouteError::NotAProviderPath)),
            ("/ui/providers//x", Err(RouteError::NotAProviderPath)),
            ("/ui/providers/Q/x", Err(RouteError::NotAProviderPath)),
            ("/ui/providers/a%2Fb/x", Err(RouteError::NotAProviderPath)),
            ("/services/providers/q/x", Err(RouteError::NotAProviderPath)),
            ("/ui/providers/q/../x", Err(RouteError::DotSegment)),
            ("/ui/providers/q/%2E%2e/x", Err(RouteError::DotSegment)),
            ("/ui/providers/q/./x", Err(RouteError::DotSegment)),
        ] {
            assert_eq!(split(path, UI_PREFIX), want, "{path}");
        }
    }

    #[test]
    fn dot_segments() {
        for (seg, want) in [
            (".", true),
            ("..", true),
            ("%2e", true),
            ("%2E%2e", true),
            (".%2E", true),
            ("...", false),
            ("", false),
            ("%2", false),
            ("%2f", false),
            (".a", false),
            ("a.", false),
            ("%2e%2e%2e", false),
        ] {
            assert_eq!(is_dot_segment(seg.as_bytes()), want, "{seg:?}");
        }
    }

    #[test]
    fn join_table() {
        for (base, rest, query, want) in [
            ("http://q:8080", "/", None, "http://q:8080/"),
            ("http://q:8080/", "/main.js", None, "http://q:8080/main.js"),
            (
                "http://q:8080/ui",
                "/main.js",
                Some("v=1"),
                "http://q:8080/ui/main.js?v=1",
            ),
            ("http://q:8080/ui/", "/", None, "http://q:8080/ui/"),
            ("https://q/api/", "/a%2Fb", None, "https://q/api/a%2Fb"),
        ] {
            let base: http::Uri = base.parse().unwrap();
            assert_eq!(join(&base, rest, query).unwrap().to_string(), want, "{base} + {rest}");
        }
    }
}
