//! Field errors as kcp's admission plugins print them: Go's `field.Error` (`<path>: <type>: <value>:
//! <detail>`), and a list of them in brackets, separated by spaces, as `fmt` prints an ErrorList.

use std::fmt;

/// The offending value, as Go's `ErrorBody` prints it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Value {
    /// A Go string, printed `%q`.
    Text(String),
    /// Any other value, printed as its JSON encoding (already rendered the way Go encodes it).
    Json(String),
}

/// One field error.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum FieldError {
    Invalid {
        field: String,
        value: Value,
        detail: String,
    },
    Required {
        field: String,
        detail: String,
    },
}

impl FieldError {
    pub fn invalid(field: impl Into<String>, value: &str, detail: impl Into<String>) -> Self {
        Self::Invalid {
            field: field.into(),
            value: Value::Text(value.to_string()),
            detail: detail.into(),
        }
    }

    pub fn invalid_json(field: impl Into<String>, json: String, detail: impl Into<String>) -> Self {
        Self::Invalid {
            field: field.into(),
            value: Value::Json(json),
            detail: detail.into(),
        }
    }

    pub fn required(field: impl Into<String>, detail: impl Into<String>) -> Self {
        Self::Required {
            field: field.into(),
            detail: detail.into(),
        }
    }
}

impl fmt::Display for FieldError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let (field, body, detail) = match self {
            Self::Invalid { field, value, detail } => {
                let value = match value {
                    Value::Text(s) => go_quote(s),
                    Value::Json(j) => j.clone(),
                };
                (field, format!("Invalid value: {value}"), detail)
            }
            Self::Required { field, detail } => (field, "Required value".to_string(), detail),
        };
        write!(f, "{field}: {body}")?;
        if !detail.is_empty() {
            write!(f, ": {detail}")?;
        }
        Ok(())
    }
}

/// The list as `fmt.Errorf("%v", errs)` prints it.
pub fn list(errors: &[FieldError]) -> String {
    let items: Vec<String> = errors.iter().map(ToString::to_string).collect();
    format!("[{}]", items.join(" "))
}

/// Go's `strconv.Quote`: printable characters as they are, the rest escaped.
pub fn go_quote(s: &str) -> String {
    let mut out = String::with_capacity(s.len() + 2);
    out.push('"');
    for c in s.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\n' => out.push_str("\\n"),
            '\t' => out.push_str("\\t"),
            '\r' => out.push_str("\\r"),
            '\u{7}' => out.push_str("\\a"),
            '\u{8}' => out.push_str("\\b"),
            '\u{c}' => out.push_str("\\f"),
            '\u{b}' => out.push_str("\\v"),
            c if (c as u32) < 0x20 || c as u32 == 0x7f => out.push_str(&format!("\\x{:02x}", c as u32)),
            c if c.is_control() => out.push_str(&format!("\\u{:04x}", c as u32)),
            c => out.push(c),
        }
    }
    out.push('"');
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn errors_print_as_go_prints_them() {
        for (error, want) in [
            (
                FieldError::invalid("metadata.name", "wrong", "must end in .widgets.example.io"),
                "metadata.name: Invalid value: \"wrong\": must end in .widgets.example.io",
            ),
            (
                FieldError::required("spec.names.singular", ""),
                "spec.names.singular: Required value",
            ),
            (
                FieldError::required("metadata.annotations[a]", "needs one"),
                "metadata.annotations[a]: Required value: needs one",
            ),
            (
                FieldError::invalid_json("spec.versions", "[{\"name\":\"v1\"}]".into(), "must be unique"),
                "spec.versions: Invalid value: [{\"name\":\"v1\"}]: must be unique",
            ),
            (
                FieldError::invalid("spec.group", "", ""),
                "spec.group: Invalid value: \"\"",
            ),
        ] {
            assert_eq!(error.to_string(), want);
        }
        let two = [FieldError::required("a", ""), FieldError::required("b", "")];
        assert_eq!(list(&two), "[a: Required value b: Required value]");
    }

    #[test]
    fn quoting_is_strconv_quote() {
        for (s, want) in [
            ("plain", "\"plain\""),
            ("a\"b\\c", "\"a\\\"b\\\\c\""),
            ("tab\there\n", "\"tab\\there\\n\""),
            ("\u{1}", "\"\\x01\""),
            ("é", "\"é\""),
        ] {
            assert_eq!(go_quote(s), want, "{s:?}");
        }
    }
}
