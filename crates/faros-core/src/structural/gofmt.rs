//! Go's renderings of JSON values, so validation messages read exactly like kube-apiserver's
//! (which formats decoded JSON with `%v`, `%q` and `json.Marshal`).

use serde_json::Value;

/// `%v` of a float64: the shortest digits that round-trip, in exponent form when the decimal
/// exponent is < -4 or >= 6 (Go's rule for shortest `%g`): `1e+06`, `123456.5`, `1.5e-05`.
pub(super) fn float(f: f64) -> String {
    if !f.is_finite() {
        return if f.is_nan() {
            "NaN".into()
        } else if f > 0.0 {
            "+Inf".into()
        } else {
            "-Inf".into()
        };
    }
    if f == 0.0 {
        return "0".into();
    }
    // Rust's `{:e}` gives the shortest round-trip digits, e.g. "1.23456789e8".
    let sci = format!("{:e}", f.abs());
    let (mantissa, exp) = sci.split_once('e').unwrap_or((sci.as_str(), "0"));
    let exp: i32 = exp.parse().unwrap_or(0);
    let digits: String = mantissa.chars().filter(char::is_ascii_digit).collect();
    let sign = if f < 0.0 { "-" } else { "" };
    if !(-4..6).contains(&exp) {
        let (first, rest) = digits.split_at(1);
        let frac = if rest.is_empty() {
            String::new()
        } else {
            format!(".{rest}")
        };
        let esign = if exp < 0 { '-' } else { '+' };
        return format!("{sign}{first}{frac}e{esign}{:02}", exp.abs());
    }
    let point = exp + 1;
    let s = if point <= 0 {
        format!("0.{}{digits}", "0".repeat(point.unsigned_abs() as usize))
    } else if point as usize >= digits.len() {
        format!("{digits}{}", "0".repeat(point as usize - digits.len()))
    } else {
        let (int, frac) = digits.split_at(point as usize);
        format!("{int}.{frac}")
    };
    format!("{sign}{s}")
}

/// `%v` of a JSON number as decoded by Kubernetes (int64 when integral, else float64).
pub(super) fn number(n: &serde_json::Number) -> String {
    if n.is_i64() || n.is_u64() {
        n.to_string()
    } else {
        float(n.as_f64().unwrap_or(0.0))
    }
}

/// `%q` of a string (Go and JSON escaping agree for everything a manifest normally holds).
pub(super) fn quote(s: &str) -> String {
    serde_json::to_string(s).unwrap_or_else(|_| format!("\"{s}\""))
}

/// The bad value as `field.Error.ErrorBody` prints it: `%q` for strings, `%v` for numbers and
/// booleans, `"null"` for null, Go's JSON encoding for maps and lists (keys sorted, `<`, `>`, `&`
/// escaped; kube before 1.33 printed them `%#v`).
pub(super) fn bad_value(v: &Value) -> String {
    match v {
        Value::Null => quote("null"),
        Value::String(s) => quote(s),
        Value::Number(n) => number(n),
        Value::Bool(b) => b.to_string(),
        Value::Array(_) | Value::Object(_) => go_json(v),
    }
}

/// Go's `json.Marshal` of decoded JSON: map keys sorted, HTML characters escaped.
fn go_json(v: &Value) -> String {
    fn sorted(v: &Value) -> Value {
        match v {
            Value::Object(map) => {
                let mut keys: Vec<&String> = map.keys().collect();
                keys.sort();
                Value::Object(keys.into_iter().map(|k| (k.clone(), sorted(&map[k]))).collect())
            }
            Value::Array(items) => Value::Array(items.iter().map(sorted).collect()),
            other => other.clone(),
        }
    }
    sorted(v)
        .to_string()
        .replace('<', "\\u003c")
        .replace('>', "\\u003e")
        .replace('&', "\\u0026")
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn floats_print_like_go_percent_v() {
        let cases = [
            (1.0, "1"),
            (1.5, "1.5"),
            (-2.25, "-2.25"),
            (100000.0, "100000"),
            (1000000.0, "1e+06"),
            (123456789.0, "1.23456789e+08"),
            (0.0001, "0.0001"),
            (0.00001, "1e-05"),
            (0.000015, "1.5e-05"),
            (0.0, "0"),
        ];
        for (f, want) in cases {
            assert_eq!(float(f), want, "{f}");
        }
    }

    #[test]
    fn bad_values_print_like_error_body() {
        let cases = [
            (json!("x"), r#""x""#),
            (json!(null), r#""null""#),
            (json!(3), "3"),
            (json!(2.5), "2.5"),
            (json!(true), "true"),
            (json!({"b": 1, "a": "x<"}), r#"{"a":"x\u003c","b":1}"#),
            (json!([1, null]), "[1,null]"),
        ];
        for (v, want) in cases {
            assert_eq!(bad_value(&v), want, "{v}");
        }
    }
}
