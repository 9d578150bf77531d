//! Label selectors: the `labelSelector` query string and `metav1.LabelSelector` objects.
//!
//! The string grammar follows Kubernetes' `labels.Parse`: comma-separated requirements, each one
//! of `k`, `!k`, `k=v`, `k==v`, `k!=v`, `k in (a,b)`, `k notin (a,b)`, `k>n`, `k<n`; every
//! requirement must hold. Keys and values are checked with the label syntax rules so that a typo
//! is a 400 instead of a selector that silently matches nothing.

use std::fmt;

use serde_json::{Map, Value};

use super::SelectorError;

const MAX_NAME_LEN: usize = 63;
const MAX_PREFIX_LEN: usize = 253;

/// How one requirement compares a label.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Operator {
    Equals,
    NotEquals,
    In,
    NotIn,
    Exists,
    DoesNotExist,
    GreaterThan,
    LessThan,
}

/// One clause of a selector. `values` is sorted and deduplicated (set semantics).
#[derive(Debug, Clone, PartialEq, Eq)]
struct Requirement {
    key: String,
    op: Operator,
    values: Vec<String>,
}

impl Requirement {
    fn new(key: &str, op: Operator, mut values: Vec<String>) -> Result<Self, String> {
        validate_label_key(key)?;
        match op {
            Operator::In | Operator::NotIn => {
                if values.is_empty() {
                    return Err("for 'in', 'notin' operators, values set can't be empty".to_string());
                }
            }
            Operator::Equals | Operator::NotEquals => {
                if values.len() != 1 {
                    return Err("exact-match compatibility requires one single value".to_string());
                }
            }
            Operator::Exists | Operator::DoesNotExist => {
                if !values.is_empty() {
                    return Err("values set must be empty for exists and does not exist".to_string());
                }
            }
            Operator::GreaterThan | Operator::LessThan => {
                if values.len() != 1 {
                    return Err("for 'Gt', 'Lt' operators, exactly one value is required".to_string());
                }
                if values[0].parse::<i64>().is_err() {
                    return Err(format!(
                        "for 'Gt', 'Lt' operators, the value must be an integer, got {:?}",
                        values[0]
                    ));
                }
            }
        }
        if !matches!(op, Operator::GreaterThan | Operator::LessThan) {
            for v in &values {
                validate_label_value(v)?;
            }
        }
        values.sort();
        values.dedup();
        Ok(Requirement {
            key: key.to_string(),
            op,
            values,
        })
    }

    fn matches(&self, labels: Option<&Map<String, Value>>) -> bool {
        let value = labels.and_then(|l| l.get(&self.key));
        // Label values are strings after validation; anything else can only be compared as absent-ish.
        let text = value.and_then(Value::as_str);
        let has = |v: &str| self.values.iter().any(|x| x == v);
        match self.op {
            Operator::Exists => value.is_some(),
            Operator::DoesNotExist => value.is_none(),
            Operator::Equals | Operator::In => text.is_some_and(has),
            // Absence satisfies the negative operators, as in Kubernetes.
            Operator::NotEquals | Operator::NotIn => !text.is_some_and(has),
            Operator::GreaterThan | Operator::LessThan => {
                let (Some(actual), Some(bound)) = (
                    text.and_then(|t| t.parse::<i64>().ok()),
                    self.values.first().and_then(|b| b.parse::<i64>().ok()),
                ) else {
                    return false;
                };
                if self.op == Operator::GreaterThan {
                    actual > bound
                } else {
                    actual < bound
                }
            }
        }
    }
}

impl fmt::Display for Requirement {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let one = self.values.first().map(String::as_str).unwrap_or_default();
        match self.op {
            Operator::Exists => write!(f, "{}", self.key),
            Operator::DoesNotExist => write!(f, "!{}", self.key),
            Operator::Equals => write!(f, "{}={one}", self.key),
            Operator::NotEquals => write!(f, "{}!={one}", self.key),
            Operator::GreaterThan => write!(f, "{}>{one}", self.key),
            Operator::LessThan => write!(f, "{}<{one}", self.key),
            Operator::In => write!(f, "{} in ({})", self.key, self.values.join(",")),
            Operator::NotIn => write!(f, "{} notin ({})", self.key, self.values.join(",")),
        }
    }
}

/// A parsed label selector. The empty selector matches everything.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct LabelSelector {
    /// Sorted by key, as Kubernetes does, so `Display` is canonical.
    requirements: Vec<Requirement>,
}

impl LabelSelector {
    /// Parses a `labelSelector` query value.
    pub fn parse(s: &str) -> Result<LabelSelector, SelectorError> {
        let tokens = lex(s);
        let mut parser = Parser { tokens, pos: 0 };
        let requirements = parser.parse().map_err(SelectorError::Requirement)?;
        Ok(LabelSelector::from_requirements(requirements))
    }

    /// Converts a `metav1.LabelSelector` object (`matchLabels` + `matchExpressions`).
    /// `null` and `{}` select everything; callers for whom an absent selector selects nothing
    /// must check for absence first.
    pub fn from_label_selector(v: &Value) -> Result<LabelSelector, SelectorError> {
        let err = SelectorError::LabelSelectorObject;
        let obj = match v {
            Value::Null => return Ok(LabelSelector::default()),
            Value::Object(o) => o,
            _ => return Err(err("must be an object".to_string())),
        };
        let mut requirements = Vec::new();
        match obj.get("matchLabels") {
            None | Some(Value::Null) => {}
            Some(Value::Object(labels)) => {
                for (k, v) in labels {
                    let Some(v) = v.as_str() else {
                        return Err(err(format!("matchLabels[{k}]: value must be a string")));
                    };
                    let r = Requirement::new(k, Operator::Equals, vec![v.to_string()])
                        .map_err(|m| err(format!("matchLabels: {m}")))?;
                    requirements.push(r);
                }
            }
            Some(_) => return Err(err("matchLabels must be an object".to_string())),
        }
        match obj.get("matchExpressions") {
            None | Some(Value::Null) => {}
            Some(Value::Array(exprs)) => {
                for (i, e) in exprs.iter().enumerate() {
                    let r = expression(e).map_err(|m| err(format!("matchExpressions[{i}]: {m}")))?;
                    requirements.push(r);
                }
            }
            Some(_) => return Err(err("matchExpressions must be a list".to_string())),
        }
        Ok(LabelSelector::from_requirements(requirements))
    }

    /// Whether every requirement holds for these labels (`None` = the object has no labels).
    pub fn matches(&self, labels: Option<&Map<String, Value>>) -> bool {
        self.requirements.iter().all(|r| r.matches(labels))
    }

    /// True when the selector has no requirements and so matches everything.
    pub fn is_empty(&self) -> bool {
        self.requirements.is_empty()
    }

    fn from_requirements(mut requirements: Vec<Requirement>) -> Self {
        requirements.sort_by(|a, b| a.key.cmp(&b.key));
        LabelSelector { requirements }
    }
}

impl fmt::Display for LabelSelector {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for (i, r) in self.requirements.iter().enumerate() {
            if i > 0 {
                f.write_str(",")?;
            }
            write!(f, "{r}")?;
        }
        Ok(())
    }
}

fn expression(e: &Value) -> Result<Requirement, String> {
    let key = e.get("key").and_then(Value::as_str).ok_or("key is required")?;
    let op = e
        .get("operator")
        .and_then(Value::as_str)
        .ok_or("operator is required")?;
    let op = match op {
        "In" => Operator::In,
        "NotIn" => Operator::NotIn,
        "Exists" => Operator::Exists,
        "DoesNotExist" => Operator::DoesNotExist,
        other => return Err(format!("{other:?} is not a valid label selector operator")),
    };
    let values = match e.get("values") {
        None | Some(Value::Null) => Vec::new(),
        Some(Value::Array(vs)) => vs
            .iter()
            .map(|v| v.as_str().map(str::to_string).ok_or("values must be strings"))
            .collect::<Result<Vec<_>, _>>()?,
        Some(_) => return Err("values must be a list".to_string()),
    };
    Requirement::new(key, op, values)
}

/// Checks a label key: an optional DNS-1123 subdomain prefix and `/`, then a name of at most
/// 63 alphanumerics, `-`, `_`, `.` that starts and ends alphanumeric.
pub fn validate_label_key(key: &str) -> Result<(), String> {
    let invalid = |why: &str| Err(format!("key: Invalid value: {key:?}: {why}"));
    let (prefix, name) = match key.split_once('/') {
        None => (None, key),
        Some((p, n)) => (Some(p), n),
    };
    if let Some(prefix) = prefix {
        if prefix.is_empty() {
            return invalid("prefix part must be non-empty");
        }
        if prefix.len() > MAX_PREFIX_LEN {
            return invalid("prefix part must be no more than 253 characters");
        }
        if !crate::objects::dns::matches_dns1123_subdomain(prefix) {
            return invalid(
                "prefix part a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, \
                 '-' or '.', and must start and end with an alphanumeric character (e.g. 'example.com')",
            );
        }
    }
    if name.is_empty() {
        return invalid("name part must be non-empty");
    }
    if name.len() > MAX_NAME_LEN {
        return invalid("name part must be no more than 63 characters");
    }
    if !is_qualified_name_part(name) {
        return invalid(
            "name part must consist of alphanumeric characters, '-', '_' or '.', and must start and end with \
             an alphanumeric character (e.g. 'MyName', or 'my.name', or '123-abc'); a key may have one optional \
             DNS subdomain prefix and '/' (e.g. 'example.com/MyName')",
        );
    }
    Ok(())
}

/// Checks a label value: empty, or at most 63 alphanumerics, `-`, `_`, `.` that starts and
/// ends alphanumeric.
pub fn validate_label_value(value: &str) -> Result<(), String> {
    if value.len() > MAX_NAME_LEN {
        return Err(format!(
            "values: Invalid value: {value:?}: must be no more than 63 characters"
        ));
    }
    if !value.is_empty() && !is_qualified_name_part(value) {
        return Err(format!(
            "values: Invalid value: {value:?}: a valid label must be an empty string or consist of alphanumeric \
             characters, '-', '_' or '.', and must start and end with an alphanumeric character"
        ));
    }
    Ok(())
}

fn is_qualified_name_part(s: &str) -> bool {
    let b = s.as_bytes();
    let (Some(first), Some(last)) = (b.first(), b.last()) else {
        return false;
    };
    first.is_ascii_alphanumeric()
        && last.is_ascii_alphanumeric()
        && b.iter()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, b'-' | b'_' | b'.'))
}

#[derive(Debug, Clone, PartialEq, Eq)]
enum Token {
    Ident(String),
    Not,
    Equals,
    DoubleEquals,
    NotEquals,
    GreaterThan,
    LessThan,
    Open,
    Close,
    Comma,
    End,
}

impl Token {
    /// The text Kubernetes quotes in "found '...'" messages.
    fn literal(&self) -> &str {
        match self {
            Token::Ident(s) => s,
            Token::Not => "!",
            Token::Equals => "=",
            Token::DoubleEquals => "==",
            Token::NotEquals => "!=",
            Token::GreaterThan => ">",
            Token::LessThan => "<",
            Token::Open => "(",
            Token::Close => ")",
            Token::Comma => ",",
            Token::End => "",
        }
    }
}

fn is_special(c: char) -> bool {
    matches!(c, '=' | '!' | '(' | ')' | ',' | '>' | '<')
}

fn lex(s: &str) -> Vec<Token> {
    let mut tokens = Vec::new();
    let mut chars = s.chars().peekable();
    while let Some(&c) = chars.peek() {
        if c.is_whitespace() {
            chars.next();
            continue;
        }
        if is_special(c) {
            chars.next();
            let two = |next: Option<&char>, want: char| next == Some(&want);
            let tok = match c {
                '=' if two(chars.peek(), '=') => {
                    chars.next();
                    Token::DoubleEquals
                }
                '!' if two(chars.peek(), '=') => {
                    chars.next();
                    Token::NotEquals
                }
                '=' => Token::Equals,
                '!' => Token::Not,
                '(' => Token::Open,
                ')' => Token::Close,
                ',' => Token::Comma,
                '>' => Token::GreaterThan,
                _ => Token::LessThan,
            };
            tokens.push(tok);
            continue;
        }
        let mut ident = String::new();
        while let Some(&c) = chars.peek() {
            if c.is_whitespace() || is_special(c) {
                break;
            }
            ident.push(c);
            chars.next();
        }
        tokens.push(Token::Ident(ident));
    }
    tokens.push(Token::End);
    tokens
}

struct Parser {
    tokens: Vec<Token>,
    pos: usize,
}

impl Parser {
    fn peek(&self) -> &Token {
        self.tokens.get(self.pos).unwrap_or(&Token::End)
    }

    fn next(&mut self) -> Token {
        let t = self.peek().clone();
        if self.pos < self.tokens.len() {
            self.pos += 1;
        }
        t
    }

    fn parse(&mut self) -> Result<Vec<Requirement>, String> {
        let mut out = Vec::new();
        if *self.peek() == Token::End {
            return Ok(out);
        }
        loop {
            out.push(self.requirement()?);
            match self.next() {
                Token::End => return Ok(out),
                Token::Comma => {}
                other => return Err(format!("found '{}', expected: ',' or 'end of string'", other.literal())),
            }
        }
    }

    fn requirement(&mut self) -> Result<Requirement, String> {
        let mut tok = self.next();
        let negated = tok == Token::Not;
        if negated {
            tok = self.next();
        }
        let Token::Ident(key) = tok else {
            return Err(format!("found '{}', expected: identifier", tok.literal()));
        };
        validate_label_key(&key)?;
        if negated {
            return Requirement::new(&key, Operator::DoesNotExist, Vec::new());
        }
        if matches!(self.peek(), Token::End | Token::Comma) {
            return Requirement::new(&key, Operator::Exists, Vec::new());
        }
        let op = match self.next() {
            Token::Ident(w) if w == "in" => Operator::In,
            Token::Ident(w) if w == "notin" => Operator::NotIn,
            Token::Equals | Token::DoubleEquals => Operator::Equals,
            Token::NotEquals => Operator::NotEquals,
            Token::GreaterThan => Operator::GreaterThan,
            Token::LessThan => Operator::LessThan,
            other => {
                return Err(format!(
                    "found '{}', expected: in, notin, =, ==, !=, gt, lt",
                    other.literal()
                ));
            }
        };
        let values = match op {
            Operator::In | Operator::NotIn => self.set_values()?,
            _ => vec![self.exact_value()?],
        };
        Requirement::new(&key, op, values)
    }

    fn exact_value(&mut self) -> Result<String, String> {
        // `k=` (followed by end or comma) selects the empty value.
        if matches!(self.peek(), Token::End | Token::Comma) {
            return Ok(String::new());
        }
        match self.next() {
            Token::Ident(v) => Ok(v),
            other => Err(format!("found '{}', expected: identifier", other.literal())),
        }
    }

    /// `( v1, v2, ... )`; empty members (`(a,,b)`, `(,a)`) are the empty label value.
    fn set_values(&mut self) -> Result<Vec<String>, String> {
        match self.next() {
            Token::Open => {}
            other => return Err(format!("found '{}', expected: '('", other.literal())),
        }
        let mut values = Vec::new();
        // Kubernetes reads `()` as the set holding the empty value (`k in ()` selects objects
        // whose `k` is ""), which is also how such a set prints. Found by the property tests.
        if *self.peek() == Token::Close {
            self.next();
            return Ok(vec![String::new()]);
        }
        loop {
            let value = match self.peek() {
                Token::Ident(v) => {
                    let v = v.clone();
                    self.next();
                    v
                }
                Token::Comma | Token::Close => String::new(),
                other => return Err(format!("found '{}', expected: ',', ')' or identifier", other.literal())),
            };
            values.push(value);
            match self.next() {
                Token::Comma => {}
                Token::Close => return Ok(values),
                other => return Err(format!("found '{}', expected: ',' or ')'", other.literal())),
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn labels(v: Value) -> Map<String, Value> {
        match v {
            Value::Object(m) => m,
            _ => panic!("labels must be an object"),
        }
    }

    #[test]
    fn parse_valid_canonical_form() {
        let cases = [
            ("", ""),
            ("   ", ""),
            ("a=b", "a=b"),
            ("a==b", "a=b"),
            ("a!=b", "a!=b"),
            ("a", "a"),
            ("!a", "!a"),
            (" ! a ", "!a"),
            ("a in (x,y)", "a in (x,y)"),
            ("a in (y, x, y)", "a in (x,y)"),
            ("a notin (x)", "a notin (x)"),
            ("a  in  ( x , y )", "a in (x,y)"),
            ("b=c,a=d", "a=d,b=c"),
            ("a=", "a="),
            ("a=,b", "a=,b"),
            ("a in (,x)", "a in (,x)"),
            ("a in ()", "a in ()"),
            ("a notin ( )", "a notin ()"),
            ("a in (x,,y)", "a in (,x,y)"),
            ("a in (x,)", "a in (,x)"),
            ("example.com/app=web", "example.com/app=web"),
            ("in=notin", "in=notin"),
            ("a>1", "a>1"),
            ("a<-5", "a<-5"),
            (
                "app.kubernetes.io/name in (web),tier!=db,!legacy",
                "app.kubernetes.io/name in (web),!legacy,tier!=db",
            ),
        ];
        for (input, want) in cases {
            let got = LabelSelector::parse(input).unwrap_or_else(|e| panic!("{input:?}: {e}"));
            assert_eq!(got.to_string(), want, "input {input:?}");
        }
    }

    #[test]
    fn parse_invalid() {
        let cases = [
            ("a in b", "unable to parse requirement: found 'b', expected: '('"),
            ("a in (b", "unable to parse requirement: found '', expected: ',' or ')'"),
            ("a=b,", "unable to parse requirement: found '', expected: identifier"),
            (",a", "unable to parse requirement: found ',', expected: identifier"),
            ("=b", "unable to parse requirement: found '=', expected: identifier"),
            (
                "a b",
                "unable to parse requirement: found 'b', expected: in, notin, =, ==, !=, gt, lt",
            ),
            (
                "a=b c",
                "unable to parse requirement: found 'c', expected: ',' or 'end of string'",
            ),
            (
                "!a=b",
                "unable to parse requirement: found '=', expected: ',' or 'end of string'",
            ),
            ("a=(", "unable to parse requirement: found '(', expected: identifier"),
            (
                "a>x",
                "unable to parse requirement: for 'Gt', 'Lt' operators, the value must be an integer, got \"x\"",
            ),
            (
                "a in (x y)",
                "unable to parse requirement: found 'y', expected: ',' or ')'",
            ),
        ];
        for (input, want) in cases {
            let err = LabelSelector::parse(input).expect_err(input);
            assert_eq!(err.to_string(), want, "input {input:?}");
        }
    }

    #[test]
    fn parse_rejects_bad_keys_and_values() {
        let bad = [
            "a b=c",
            "-a=b",
            "a-=b",
            "/a=b",
            "Example.com/a=b",
            "a/b/c=d",
            "a=-b",
            "a=b c",
            "a in (-x)",
        ];
        for input in bad {
            assert!(LabelSelector::parse(input).is_err(), "{input:?} should be rejected");
        }
        let long_name = format!("{}=x", "a".repeat(64));
        let err = LabelSelector::parse(&long_name).expect_err("long key");
        assert!(
            err.to_string().contains("name part must be no more than 63 characters"),
            "{err}"
        );
        let long_value = format!("a={}", "v".repeat(64));
        let err = LabelSelector::parse(&long_value).expect_err("long value");
        assert!(err.to_string().contains("must be no more than 63 characters"), "{err}");
        assert!(LabelSelector::parse(&format!("a={}", "v".repeat(63))).is_ok());
        let err = LabelSelector::parse("a/=b").expect_err("empty name");
        assert_eq!(
            err.to_string(),
            "unable to parse requirement: key: Invalid value: \"a/\": name part must be non-empty"
        );
    }

    #[test]
    fn matching() {
        let l = labels(json!({"app": "web", "tier": "frontend", "n": "7", "empty": ""}));
        let cases: &[(&str, bool)] = &[
            ("", true),
            ("app=web", true),
            ("app==web", true),
            ("app=db", false),
            ("app!=db", true),
            ("app!=web", false),
            ("missing!=x", true),
            ("app in (db,web)", true),
            ("app in (db)", false),
            ("missing in (x)", false),
            ("app notin (db)", true),
            ("app notin (web)", false),
            ("missing notin (x)", true),
            ("app", true),
            ("missing", false),
            ("!missing", true),
            ("!app", false),
            ("app=web,tier=frontend", true),
            ("app=web,tier=backend", false),
            ("empty=", true),
            ("empty", true),
            ("missing=", false),
            ("n>5", true),
            ("n>7", false),
            ("n<8", true),
            ("app>1", false),
            ("missing<1", false),
        ];
        for (sel, want) in cases {
            let s = LabelSelector::parse(sel).unwrap_or_else(|e| panic!("{sel:?}: {e}"));
            assert_eq!(s.matches(Some(&l)), *want, "selector {sel:?}");
        }
    }

    #[test]
    fn matching_without_labels() {
        let cases: &[(&str, bool)] = &[
            ("", true),
            ("a", false),
            ("!a", true),
            ("a=b", false),
            ("a!=b", true),
            ("a notin (b)", true),
        ];
        for (sel, want) in cases {
            let s = LabelSelector::parse(sel).unwrap_or_else(|e| panic!("{sel:?}: {e}"));
            assert_eq!(s.matches(None), *want, "selector {sel:?}");
            assert_eq!(s.matches(Some(&Map::new())), *want, "selector {sel:?} on empty labels");
        }
    }

    #[test]
    fn is_empty() {
        assert!(LabelSelector::parse("").map(|s| s.is_empty()).unwrap_or(false));
        assert!(!LabelSelector::parse("a").map(|s| s.is_empty()).unwrap_or(true));
        assert!(
            LabelSelector::from_label_selector(&json!({}))
                .map(|s| s.is_empty())
                .unwrap_or(false)
        );
    }

    #[test]
    fn from_label_selector_object() {
        let cases = [
            (json!(null), ""),
            (json!({}), ""),
            (json!({"matchLabels": {"b": "2", "a": "1"}}), "a=1,b=2"),
            (
                json!({"matchLabels": {"a": "1"}, "matchExpressions": [
                    {"key": "c", "operator": "In", "values": ["y", "x"]},
                    {"key": "d", "operator": "NotIn", "values": ["z"]},
                    {"key": "e", "operator": "Exists"},
                    {"key": "f", "operator": "DoesNotExist", "values": []},
                ]}),
                "a=1,c in (x,y),d notin (z),e,!f",
            ),
        ];
        for (input, want) in cases {
            let s = LabelSelector::from_label_selector(&input).unwrap_or_else(|e| panic!("{input}: {e}"));
            assert_eq!(s.to_string(), want, "input {input}");
        }
    }

    #[test]
    fn from_label_selector_errors() {
        let cases = [
            (json!("a=b"), "invalid label selector: must be an object"),
            (
                json!({"matchLabels": {"a": 1}}),
                "invalid label selector: matchLabels[a]: value must be a string",
            ),
            (
                json!({"matchExpressions": [{"key": "a", "operator": "In", "values": []}]}),
                "invalid label selector: matchExpressions[0]: for 'in', 'notin' operators, values set can't be empty",
            ),
            (
                json!({"matchExpressions": [{"key": "a", "operator": "Exists", "values": ["x"]}]}),
                "invalid label selector: matchExpressions[0]: values set must be empty for exists and does not exist",
            ),
            (
                json!({"matchExpressions": [{"key": "a", "operator": "Gt", "values": ["1"]}]}),
                "invalid label selector: matchExpressions[0]: \"Gt\" is not a valid label selector operator",
            ),
            (
                json!({"matchExpressions": [{"operator": "Exists"}]}),
                "invalid label selector: matchExpressions[0]: key is required",
            ),
        ];
        for (input, want) in cases {
            let err = LabelSelector::from_label_selector(&input).expect_err("must fail");
            assert_eq!(err.to_string(), want, "input {input}");
        }
        let err = LabelSelector::from_label_selector(&json!({"matchLabels": {"a b": "x"}})).expect_err("bad key");
        assert!(
            err.to_string()
                .starts_with("invalid label selector: matchLabels: key: Invalid value: \"a b\""),
            "{err}"
        );
    }

    #[test]
    fn from_label_selector_matches() {
        let s = LabelSelector::from_label_selector(&json!({
            "matchLabels": {"app": "web"},
            "matchExpressions": [{"key": "tier", "operator": "NotIn", "values": ["db"]}],
        }))
        .unwrap_or_else(|e| panic!("{e}"));
        assert!(s.matches(Some(&labels(json!({"app": "web"})))));
        assert!(s.matches(Some(&labels(json!({"app": "web", "tier": "fe"})))));
        assert!(!s.matches(Some(&labels(json!({"app": "web", "tier": "db"})))));
        assert!(!s.matches(Some(&labels(json!({"app": "db"})))));
    }
}
