//! The DNS name forms of Kubernetes' `util/validation` (RFC 1123 subdomains and labels, RFC 1035
//! labels) and the messages its `Is…` functions return, which refusals quote word for word.

const DNS1123_LABEL_FMT: &str = "[a-z0-9]([-a-z0-9]*[a-z0-9])?";
const DNS1123_SUBDOMAIN_MAX: usize = 253;
const DNS1035_LABEL_FMT: &str = "[a-z]([-a-z0-9]*[a-z0-9])?";
const DNS1035_LABEL_MAX: usize = 63;

fn lower_alnum(b: u8) -> bool {
    b.is_ascii_lowercase() || b.is_ascii_digit()
}

/// `[a-z0-9]([-a-z0-9]*[a-z0-9])?`, without the length limit.
pub fn matches_dns1123_label(s: &str) -> bool {
    let b = s.as_bytes();
    match (b.first(), b.last()) {
        (Some(&first), Some(&last)) => {
            lower_alnum(first) && lower_alnum(last) && b.iter().all(|&c| lower_alnum(c) || c == b'-')
        }
        _ => false,
    }
}

/// Dot-separated RFC 1123 labels, without the length limit.
pub fn matches_dns1123_subdomain(s: &str) -> bool {
    s.split('.').all(matches_dns1123_label)
}

/// `[a-z]([-a-z0-9]*[a-z0-9])?`, without the length limit.
pub fn matches_dns1035_label(s: &str) -> bool {
    matches_dns1123_label(s) && s.as_bytes().first().is_some_and(u8::is_ascii_lowercase)
}

fn max_len_error(max: usize) -> String {
    format!("must be no more than {max} characters")
}

/// Go's `RegexError`: the message, its examples and the pattern.
fn regex_error(message: &str, pattern: &str, examples: &[&str]) -> String {
    let examples: String = examples
        .iter()
        .enumerate()
        .map(|(i, e)| format!("{}'{e}', ", if i > 0 { " or " } else { "" }))
        .collect();
    format!("{message} (e.g. {examples}regex used for validation is '{pattern}')")
}

/// What `IsDNS1123Subdomain` says of `s` (nothing when it is one).
pub fn dns1123_subdomain_errors(s: &str) -> Vec<String> {
    let mut errors = Vec::new();
    if s.len() > DNS1123_SUBDOMAIN_MAX {
        errors.push(max_len_error(DNS1123_SUBDOMAIN_MAX));
    }
    if !matches_dns1123_subdomain(s) {
        errors.push(regex_error(
            "a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or '.', \
             and must start and end with an alphanumeric character",
            &format!("{DNS1123_LABEL_FMT}(\\.{DNS1123_LABEL_FMT})*"),
            &["example.com"],
        ));
    }
    errors
}

/// What `IsDNS1035Label` says of `s` (nothing when it is one).
pub fn dns1035_label_errors(s: &str) -> Vec<String> {
    let mut errors = Vec::new();
    if s.len() > DNS1035_LABEL_MAX {
        errors.push(max_len_error(DNS1035_LABEL_MAX));
    }
    if !matches_dns1035_label(s) {
        errors.push(regex_error(
            "a DNS-1035 label must consist of lower case alphanumeric characters or '-', start with an \
             alphabetic character, and end with an alphanumeric character",
            DNS1035_LABEL_FMT,
            &["my-name", "abc-123"],
        ));
    }
    errors
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn name_forms() {
        for (s, label1123, subdomain, label1035) in [
            ("a", true, true, true),
            ("a-b9", true, true, true),
            ("9a", true, true, false),
            ("example.io", false, true, false),
            ("-a", false, false, false),
            ("a-", false, false, false),
            ("A", false, false, false),
            ("a..b", false, false, false),
            ("", false, false, false),
            ("a_b", false, false, false),
        ] {
            assert_eq!(matches_dns1123_label(s), label1123, "{s:?}");
            assert_eq!(matches_dns1123_subdomain(s), subdomain, "{s:?}");
            assert_eq!(matches_dns1035_label(s), label1035, "{s:?}");
        }
    }

    #[test]
    fn messages_are_gos() {
        assert!(dns1123_subdomain_errors("example.io").is_empty());
        assert_eq!(
            dns1123_subdomain_errors("Example.io"),
            [
                "a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or '.', and must start and end with an alphanumeric character (e.g. 'example.com', regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*')"
            ]
        );
        assert_eq!(
            dns1035_label_errors("1a"),
            [
                "a DNS-1035 label must consist of lower case alphanumeric characters or '-', start with an alphabetic character, and end with an alphanumeric character (e.g. 'my-name',  or 'abc-123', regex used for validation is '[a-z]([-a-z0-9]*[a-z0-9])?')"
            ]
        );
        let long = "a".repeat(64);
        assert_eq!(dns1035_label_errors(&long), ["must be no more than 63 characters"]);
        let both = format!("{}-", "a".repeat(254));
        assert_eq!(dns1123_subdomain_errors(&both).len(), 2);
    }
}
