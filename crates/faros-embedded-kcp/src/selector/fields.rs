//! Field selectors: `fieldSelector=metadata.name=foo,status.phase!=Done`.
//!
//! Only exact comparisons exist (`=`, `==`, `!=`), joined by commas. Values may escape `\`, `,`
//! and `=` with a backslash, as Kubernetes' `fields.EscapeValue` produces. Which fields are
//! supported is the server's business: it walks [`FieldSelector::fields`] and refuses unknown ones.

use super::SelectorError;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum FieldOp {
    Equals,
    NotEquals,
}

#[derive(Debug, Clone, PartialEq, Eq)]
struct Term {
    field: String,
    op: FieldOp,
    value: String,
}

/// A parsed field selector. The empty selector matches everything.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct FieldSelector {
    terms: Vec<Term>,
}

impl FieldSelector {
    /// Parses a `fieldSelector` query value.
    pub fn parse(s: &str) -> Result<FieldSelector, SelectorError> {
        let mut terms = Vec::new();
        for part in split_unescaped(s, ',') {
            if part.trim().is_empty() {
                continue;
            }
            let bad_term = || SelectorError::FieldTerm {
                selector: s.to_string(),
                term: part.to_string(),
            };
            let (field, op, raw_value) = split_term(part).ok_or_else(bad_term)?;
            let field = field.trim();
            if field.is_empty() {
                return Err(bad_term());
            }
            let value = unescape(raw_value.trim())?;
            terms.push(Term {
                field: field.to_string(),
                op,
                value,
            });
        }
        Ok(FieldSelector { terms })
    }

    /// The field names the selector refers to, in order (a name may repeat).
    pub fn fields(&self) -> impl Iterator<Item = &str> {
        self.terms.iter().map(|t| t.field.as_str())
    }

    /// Whether every term holds. `get` returns a field's value; like Kubernetes' field sets,
    /// a field it does not know (`None`) compares as the empty string.
    pub fn matches(&self, get: impl Fn(&str) -> Option<String>) -> bool {
        self.terms.iter().all(|t| {
            let actual = get(&t.field).unwrap_or_default();
            match t.op {
                FieldOp::Equals => actual == t.value,
                FieldOp::NotEquals => actual != t.value,
            }
        })
    }

    /// The value `field` must equal for anything to match (a `=` term), so the server can turn
    /// `metadata.name=x` into a point lookup.
    pub fn exact_match(&self, field: &str) -> Option<&str> {
        self.terms
            .iter()
            .find(|t| t.field == field && t.op == FieldOp::Equals)
            .map(|t| t.value.as_str())
    }

    /// True when the selector has no terms and so matches everything.
    pub fn is_empty(&self) -> bool {
        self.terms.is_empty()
    }
}

/// Splits at every `sep` that is not preceded by an escaping backslash.
fn split_unescaped(s: &str, sep: char) -> Vec<&str> {
    let mut parts = Vec::new();
    let mut start = 0;
    let mut escaped = false;
    for (i, c) in s.char_indices() {
        if escaped {
            escaped = false;
        } else if c == '\\' {
            escaped = true;
        } else if c == sep {
            parts.push(&s[start..i]);
            start = i + c.len_utf8();
        }
    }
    parts.push(&s[start..]);
    parts
}

/// Finds the first unescaped operator; `!=` and `==` win over `=` at the same position.
fn split_term(term: &str) -> Option<(&str, FieldOp, &str)> {
    let mut escaped = false;
    for (i, c) in term.char_indices() {
        if escaped {
            escaped = false;
            continue;
        }
        if c == '\\' {
            escaped = true;
            continue;
        }
        let rest = &term[i..];
        if rest.starts_with("!=") {
            return Some((&term[..i], FieldOp::NotEquals, &term[i + 2..]));
        }
        if rest.starts_with("==") {
            return Some((&term[..i], FieldOp::Equals, &term[i + 2..]));
        }
        if c == '=' {
            return Some((&term[..i], FieldOp::Equals, &term[i + 1..]));
        }
    }
    None
}

fn unescape(raw: &str) -> Result<String, SelectorError> {
    let bad = |reason: String| SelectorError::FieldValue {
        value: raw.to_string(),
        reason,
    };
    let mut out = String::with_capacity(raw.len());
    let mut chars = raw.chars();
    while let Some(c) = chars.next() {
        match c {
            '\\' => match chars.next() {
                Some(e @ ('\\' | ',' | '=')) => out.push(e),
                Some(other) => return Err(bad(format!("invalid escape sequence '\\{other}'"))),
                None => return Err(bad("trailing backslash".to_string())),
            },
            // A second operator in the value is a typo far more often than an intended literal.
            '=' | ',' => return Err(bad(format!("unescaped '{c}' (write '\\{c}')"))),
            c => out.push(c),
        }
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::BTreeMap;

    fn terms(s: &FieldSelector) -> Vec<(String, &'static str, String)> {
        s.terms
            .iter()
            .map(|t| {
                (
                    t.field.clone(),
                    if t.op == FieldOp::Equals { "=" } else { "!=" },
                    t.value.clone(),
                )
            })
            .collect()
    }

    fn t(f: &str, op: &'static str, v: &str) -> (String, &'static str, String) {
        (f.to_string(), op, v.to_string())
    }

    #[test]
    fn parse_valid() {
        let cases = [
            ("", vec![]),
            ("   ", vec![]),
            ("metadata.name=foo", vec![t("metadata.name", "=", "foo")]),
            ("metadata.name==foo", vec![t("metadata.name", "=", "foo")]),
            ("metadata.name!=foo", vec![t("metadata.name", "!=", "foo")]),
            ("a=", vec![t("a", "=", "")]),
            ("a=1,b!=2", vec![t("a", "=", "1"), t("b", "!=", "2")]),
            ("a=1,", vec![t("a", "=", "1")]),
            (" a = 1 , b == 2 ", vec![t("a", "=", "1"), t("b", "=", "2")]),
            ("a=x\\,y", vec![t("a", "=", "x,y")]),
            ("a=x\\=y", vec![t("a", "=", "x=y")]),
            ("a=x\\\\y", vec![t("a", "=", "x\\y")]),
            ("a!=!x", vec![t("a", "!=", "!x")]),
        ];
        for (input, want) in cases {
            let s = FieldSelector::parse(input).unwrap_or_else(|e| panic!("{input:?}: {e}"));
            assert_eq!(terms(&s), want, "input {input:?}");
            assert_eq!(s.is_empty(), want.is_empty(), "input {input:?}");
        }
    }

    #[test]
    fn parse_invalid() {
        let cases = [
            ("foo", "invalid selector: 'foo'; can't understand 'foo'"),
            ("a=1,foo", "invalid selector: 'a=1,foo'; can't understand 'foo'"),
            ("=x", "invalid selector: '=x'; can't understand '=x'"),
            ("a in (x)", "invalid selector: 'a in (x)'; can't understand 'a in (x)'"),
            (
                "a=x\\y",
                "invalid field selector value \"x\\\\y\": invalid escape sequence '\\y'",
            ),
            (
                "a=x=y",
                "invalid field selector value \"x=y\": unescaped '=' (write '\\=')",
            ),
            ("a=x\\", "invalid field selector value \"x\\\\\": trailing backslash"),
        ];
        for (input, want) in cases {
            let err = FieldSelector::parse(input).expect_err(input);
            assert_eq!(err.to_string(), want, "input {input:?}");
        }
    }

    #[test]
    fn fields_lists_every_term() {
        let s = FieldSelector::parse("metadata.name=a,spec.foo!=b,metadata.name!=c").unwrap_or_default();
        assert_eq!(
            s.fields().collect::<Vec<_>>(),
            vec!["metadata.name", "spec.foo", "metadata.name"]
        );
        assert_eq!(s.exact_match("metadata.name"), Some("a"));
        assert_eq!(s.exact_match("spec.foo"), None);
    }

    #[test]
    fn matching() {
        let obj: BTreeMap<&str, &str> = [("metadata.name", "foo"), ("metadata.namespace", "ns1")].into();
        let get = |f: &str| obj.get(f).map(|v| v.to_string());
        let cases: &[(&str, bool)] = &[
            ("", true),
            ("metadata.name=foo", true),
            ("metadata.name==foo", true),
            ("metadata.name=bar", false),
            ("metadata.name!=bar", true),
            ("metadata.name!=foo", false),
            ("metadata.name=foo,metadata.namespace=ns1", true),
            ("metadata.name=foo,metadata.namespace=ns2", false),
            ("spec.unknown=", true),
            ("spec.unknown!=x", true),
            ("spec.unknown=x", false),
        ];
        for (sel, want) in cases {
            let s = FieldSelector::parse(sel).unwrap_or_else(|e| panic!("{sel:?}: {e}"));
            assert_eq!(s.matches(get), *want, "selector {sel:?}");
        }
    }
}
