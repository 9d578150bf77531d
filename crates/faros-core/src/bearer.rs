//! The one reader of `Authorization: Bearer <token>` headers, with kube-apiserver's rules, so a
//! header the hub accepts is one kcp accepts and the other way round.
//!
//! kube-apiserver trims the value, splits it on single spaces into at most three parts, wants the
//! scheme `bearer` in any case and takes the second part as the token: `Bearer a b` carries `a`,
//! and `Bearer  a` (two spaces) carries the empty token, which is no token.

/// The token of an `Authorization` header value, or `None` when it carries none.
pub fn token(header: &str) -> Option<&str> {
    let (scheme, rest) = header.trim().split_once(' ')?;
    // The token runs to the next space, if any. A token is long (a JWT is a kilobyte), and every
    // request through the hub reads one: `memchr` scans it several times faster than `str::find`.
    let token = match memchr::memchr(b' ', rest.as_bytes()) {
        Some(end) => &rest[..end],
        None => rest,
    };
    (scheme.eq_ignore_ascii_case("bearer") && !token.is_empty()).then_some(token)
}

#[cfg(test)]
mod tests {
    use super::token;

    #[test]
    fn reads_headers_as_kube_apiserver_does() {
        for (header, want) in [
            ("Bearer abc", Some("abc")),
            ("bearer abc", Some("abc")),
            ("BEARER abc", Some("abc")),
            ("  Bearer abc  ", Some("abc")),
            ("Bearer abc def", Some("abc")),
            ("Bearer abc def ghi", Some("abc")),
            ("Bearer abc  def", Some("abc")),
            // Two spaces: the second part is empty, which kube-apiserver refuses.
            ("Bearer  abc", None),
            ("Bearer ", None),
            ("Bearer", None),
            ("Basic abc", None),
            ("Bearerabc", None),
            ("", None),
        ] {
            assert_eq!(token(header), want, "{header:?}");
        }
    }
}
