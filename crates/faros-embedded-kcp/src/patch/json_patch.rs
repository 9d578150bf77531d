//! JSON patch (RFC 6902) with JSON pointers (RFC 6901).
//!
//! The whole document is checked before anything is applied, and operations run on a copy, so a
//! failing patch leaves the target untouched (RFC 6902 §5: a patch applies atomically).

use serde_json::{Number, Value};

use super::PatchError;

/// kube-apiserver refuses longer JSON patches (`maxJSONPatchOperations`).
const MAX_OPERATIONS: usize = 10_000;

/// A parsed RFC 6901 pointer, kept with its text for messages.
#[derive(Debug, Clone)]
struct Pointer {
    text: String,
    tokens: Vec<String>,
}

impl Pointer {
    fn parse(text: &str) -> Result<Pointer, String> {
        if text.is_empty() {
            return Ok(Pointer {
                text: String::new(),
                tokens: Vec::new(),
            });
        }
        let Some(rest) = text.strip_prefix('/') else {
            return Err(format!(
                "invalid JSON pointer {text:?}: it must be empty or start with '/'"
            ));
        };
        let mut tokens = Vec::new();
        for raw in rest.split('/') {
            let mut token = String::with_capacity(raw.len());
            let mut chars = raw.chars();
            while let Some(c) = chars.next() {
                if c != '~' {
                    token.push(c);
                    continue;
                }
                match chars.next() {
                    Some('0') => token.push('~'),
                    Some('1') => token.push('/'),
                    _ => {
                        return Err(format!(
                            "invalid JSON pointer {text:?}: '~' must be followed by '0' or '1'"
                        ));
                    }
                }
            }
            tokens.push(token);
        }
        Ok(Pointer {
            text: text.to_string(),
            tokens,
        })
    }

    fn parent_text(&self) -> String {
        self.text
            .rsplit_once('/')
            .map(|(p, _)| p.to_string())
            .unwrap_or_default()
    }

    /// Whether `self` names a value strictly inside `other`.
    fn is_inside(&self, other: &Pointer) -> bool {
        self.tokens.len() > other.tokens.len() && self.tokens.starts_with(&other.tokens)
    }
}

#[derive(Debug, Clone)]
enum Operation {
    Add { path: Pointer, value: Value },
    Remove { path: Pointer },
    Replace { path: Pointer, value: Value },
    Move { from: Pointer, path: Pointer },
    Copy { from: Pointer, path: Pointer },
    Test { path: Pointer, value: Value },
}

impl Operation {
    fn name(&self) -> &'static str {
        match self {
            Operation::Add { .. } => "add",
            Operation::Remove { .. } => "remove",
            Operation::Replace { .. } => "replace",
            Operation::Move { .. } => "move",
            Operation::Copy { .. } => "copy",
            Operation::Test { .. } => "test",
        }
    }
}

/// Applies the RFC 6902 operation list `ops` to `target`. On error `target` is unchanged.
pub fn json_patch(target: &mut Value, ops: &Value) -> Result<(), PatchError> {
    let ops = decode(ops)?;
    let mut doc = target.clone();
    for (index, op) in ops.iter().enumerate() {
        apply(&mut doc, op).map_err(|failure| match failure {
            Failure::Reason(reason) => PatchError::OperationFailed {
                index,
                op: op.name().to_string(),
                reason,
            },
            Failure::Test { path, expected } => PatchError::TestFailed { index, path, expected },
        })?;
    }
    *target = doc;
    Ok(())
}

fn decode(ops: &Value) -> Result<Vec<Operation>, PatchError> {
    let invalid = PatchError::InvalidJsonPatch;
    let Value::Array(list) = ops else {
        return Err(invalid("the body must be a JSON list of operations".to_string()));
    };
    if list.len() > MAX_OPERATIONS {
        return Err(PatchError::TooManyOperations {
            max: MAX_OPERATIONS,
            got: list.len(),
        });
    }
    list.iter()
        .enumerate()
        .map(|(i, op)| decode_one(op).map_err(|m| invalid(format!("operation {i}: {m}"))))
        .collect()
}

fn decode_one(op: &Value) -> Result<Operation, String> {
    let Value::Object(obj) = op else {
        return Err("an operation must be a JSON object".to_string());
    };
    let string_member = |name: &str| -> Result<Pointer, String> {
        match obj.get(name) {
            Some(Value::String(s)) => Pointer::parse(s),
            Some(_) => Err(format!("member {name:?} must be a string")),
            None => Err(format!("member {name:?} is missing")),
        }
    };
    // `value` may legitimately be null, so presence is what counts.
    let value = || {
        obj.get("value")
            .cloned()
            .ok_or_else(|| "member \"value\" is missing".to_string())
    };
    let name = match obj.get("op") {
        Some(Value::String(s)) => s.as_str(),
        Some(_) => return Err("member \"op\" must be a string".to_string()),
        None => return Err("member \"op\" is missing".to_string()),
    };
    Ok(match name {
        "add" => Operation::Add {
            path: string_member("path")?,
            value: value()?,
        },
        "remove" => Operation::Remove {
            path: string_member("path")?,
        },
        "replace" => Operation::Replace {
            path: string_member("path")?,
            value: value()?,
        },
        "move" => Operation::Move {
            from: string_member("from")?,
            path: string_member("path")?,
        },
        "copy" => Operation::Copy {
            from: string_member("from")?,
            path: string_member("path")?,
        },
        "test" => Operation::Test {
            path: string_member("path")?,
            value: value()?,
        },
        other => {
            return Err(format!(
                "unknown op {other:?} (expected add, remove, replace, move, copy or test)"
            ));
        }
    })
}

enum Failure {
    Reason(String),
    Test { path: String, expected: String },
}

impl From<String> for Failure {
    fn from(reason: String) -> Self {
        Failure::Reason(reason)
    }
}

fn apply(doc: &mut Value, op: &Operation) -> Result<(), Failure> {
    match op {
        Operation::Add { path, value } => add(doc, path, value.clone())?,
        Operation::Remove { path } => {
            remove(doc, path)?;
        }
        Operation::Replace { path, value } => {
            let slot = get_mut(doc, &path.tokens).ok_or_else(|| missing(path))?;
            *slot = value.clone();
        }
        Operation::Move { from, path } => {
            if path.is_inside(from) {
                return Err(format!("cannot move {:?} into its own child {:?}", from.text, path.text).into());
            }
            if from.tokens == path.tokens {
                get(doc, &from.tokens).ok_or_else(|| missing(from))?;
                return Ok(());
            }
            let value = remove(doc, from)?;
            add(doc, path, value)?;
        }
        Operation::Copy { from, path } => {
            let value = get(doc, &from.tokens).cloned().ok_or_else(|| missing(from))?;
            add(doc, path, value)?;
        }
        Operation::Test { path, value } => {
            let actual = get(doc, &path.tokens).ok_or_else(|| missing(path))?;
            if !json_eq(actual, value) {
                return Err(Failure::Test {
                    path: path.text.clone(),
                    expected: brief(value),
                });
            }
        }
    }
    Ok(())
}

fn missing(p: &Pointer) -> String {
    format!("the path {:?} does not exist", p.text)
}

/// A short rendering of an expected value for error messages.
fn brief(v: &Value) -> String {
    let s = v.to_string();
    if s.chars().count() <= 120 {
        s
    } else {
        format!("{}...", s.chars().take(117).collect::<String>())
    }
}

fn add(doc: &mut Value, path: &Pointer, value: Value) -> Result<(), String> {
    let Some((last, parent_tokens)) = path.tokens.split_last() else {
        *doc = value;
        return Ok(());
    };
    let parent_missing = || format!("the parent {:?} of {:?} does not exist", path.parent_text(), path.text);
    match get_mut(doc, parent_tokens).ok_or_else(parent_missing)? {
        Value::Object(map) => {
            map.insert(last.clone(), value);
        }
        Value::Array(list) => {
            let at = array_index(last, list.len(), true)?;
            list.insert(at, value);
        }
        _ => return Err(format!("{:?} is neither an object nor a list", path.parent_text())),
    }
    Ok(())
}

fn remove(doc: &mut Value, path: &Pointer) -> Result<Value, String> {
    let Some((last, parent_tokens)) = path.tokens.split_last() else {
        return Err("cannot remove the whole document".to_string());
    };
    match get_mut(doc, parent_tokens).ok_or_else(|| missing(path))? {
        // shift_remove keeps the remaining keys in their stored order.
        Value::Object(map) => map.shift_remove(last).ok_or_else(|| missing(path)),
        Value::Array(list) => {
            let at = array_index(last, list.len(), false)?;
            Ok(list.remove(at))
        }
        _ => Err(missing(path)),
    }
}

/// Resolves a reference token against a list of `len` items. `-` (one past the end) and `len`
/// itself are only valid where a new item is inserted.
fn array_index(token: &str, len: usize, inserting: bool) -> Result<usize, String> {
    if token == "-" {
        return if inserting {
            Ok(len)
        } else {
            Err("index \"-\" (past the end of the list) can only be used to add".to_string())
        };
    }
    let well_formed =
        !token.is_empty() && token.bytes().all(|b| b.is_ascii_digit()) && (token == "0" || !token.starts_with('0'));
    let index = well_formed
        .then(|| token.parse::<usize>().ok())
        .flatten()
        .ok_or_else(|| format!("{token:?} is not a valid list index"))?;
    let limit = if inserting { len } else { len.saturating_sub(1) };
    if index > limit || (!inserting && len == 0) {
        return Err(format!("index {index} is out of range for a list of {len} items"));
    }
    Ok(index)
}

fn get<'a>(doc: &'a Value, tokens: &[String]) -> Option<&'a Value> {
    tokens.iter().try_fold(doc, |node, token| match node {
        Value::Object(map) => map.get(token),
        Value::Array(list) => array_index(token, list.len(), false).ok().and_then(|i| list.get(i)),
        _ => None,
    })
}

fn get_mut<'a>(doc: &'a mut Value, tokens: &[String]) -> Option<&'a mut Value> {
    tokens.iter().try_fold(doc, |node, token| match node {
        Value::Object(map) => map.get_mut(token),
        Value::Array(list) => {
            let len = list.len();
            array_index(token, len, false).ok().and_then(|i| list.get_mut(i))
        }
        _ => None,
    })
}

/// RFC 6902 §4.6 equality: numbers compare by value (1 equals 1.0), objects ignore key order.
fn json_eq(a: &Value, b: &Value) -> bool {
    match (a, b) {
        (Value::Number(x), Value::Number(y)) => number_eq(x, y),
        (Value::Array(x), Value::Array(y)) => x.len() == y.len() && x.iter().zip(y).all(|(p, q)| json_eq(p, q)),
        (Value::Object(x), Value::Object(y)) => {
            x.len() == y.len() && x.iter().all(|(k, v)| y.get(k).is_some_and(|w| json_eq(v, w)))
        }
        _ => a == b,
    }
}

fn number_eq(x: &Number, y: &Number) -> bool {
    if let (Some(p), Some(q)) = (x.as_i64(), y.as_i64()) {
        return p == q;
    }
    if let (Some(p), Some(q)) = (x.as_u64(), y.as_u64()) {
        return p == q;
    }
    matches!((x.as_f64(), y.as_f64()), (Some(p), Some(q)) if p == q)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn ok(doc: Value, ops: Value) -> Value {
        let mut d = doc;
        json_patch(&mut d, &ops).unwrap_or_else(|e| panic!("{ops}: {e}"));
        d
    }

    /// RFC 6902 Appendix A examples that must succeed.
    #[test]
    fn rfc6902_examples() {
        let cases = [
            // A.1 add an object member
            (
                json!({"foo":"bar"}),
                json!([{"op":"add","path":"/baz","value":"qux"}]),
                json!({"foo":"bar","baz":"qux"}),
            ),
            // A.2 add an array element
            (
                json!({"foo":["bar","baz"]}),
                json!([{"op":"add","path":"/foo/1","value":"qux"}]),
                json!({"foo":["bar","qux","baz"]}),
            ),
            // A.3 remove an object member
            (
                json!({"baz":"qux","foo":"bar"}),
                json!([{"op":"remove","path":"/baz"}]),
                json!({"foo":"bar"}),
            ),
            // A.4 remove an array element
            (
                json!({"foo":["bar","qux","baz"]}),
                json!([{"op":"remove","path":"/foo/1"}]),
                json!({"foo":["bar","baz"]}),
            ),
            // A.5 replace a value
            (
                json!({"baz":"qux","foo":"bar"}),
                json!([{"op":"replace","path":"/baz","value":"boo"}]),
                json!({"baz":"boo","foo":"bar"}),
            ),
            // A.6 move a value
            (
                json!({"foo":{"bar":"baz","waldo":"fred"},"qux":{"corge":"grault"}}),
                json!([{"op":"move","from":"/foo/waldo","path":"/qux/thud"}]),
                json!({"foo":{"bar":"baz"},"qux":{"corge":"grault","thud":"fred"}}),
            ),
            // A.7 move an array element
            (
                json!({"foo":["all","grass","cows","eat"]}),
                json!([{"op":"move","from":"/foo/1","path":"/foo/3"}]),
                json!({"foo":["all","cows","eat","grass"]}),
            ),
            // A.8 test a value: success
            (
                json!({"baz":"qux","foo":["a",2,"c"]}),
                json!([{"op":"test","path":"/baz","value":"qux"},{"op":"test","path":"/foo/1","value":2}]),
                json!({"baz":"qux","foo":["a",2,"c"]}),
            ),
            // A.10 add a nested member object
            (
                json!({"foo":"bar"}),
                json!([{"op":"add","path":"/child","value":{"grandchild":{}}}]),
                json!({"foo":"bar","child":{"grandchild":{}}}),
            ),
            // A.11 ignore unrecognised members
            (
                json!({"foo":"bar"}),
                json!([{"op":"add","path":"/baz","value":"qux","xyz":123}]),
                json!({"foo":"bar","baz":"qux"}),
            ),
            // A.14 ~ escape ordering
            (
                json!({"/":9,"~1":10}),
                json!([{"op":"test","path":"/~01","value":10}]),
                json!({"/":9,"~1":10}),
            ),
            // A.16 add an array value
            (
                json!({"foo":["bar"]}),
                json!([{"op":"add","path":"/foo/-","value":["abc","def"]}]),
                json!({"foo":["bar",["abc","def"]]}),
            ),
        ];
        for (doc, ops, want) in cases {
            assert_eq!(ok(doc, ops.clone()), want, "ops {ops}");
        }
    }

    #[test]
    fn more_successes() {
        let cases = [
            (
                json!({"a":1}),
                json!([{"op":"replace","path":"","value":[1]}]),
                json!([1]),
            ),
            (
                json!({"a":1}),
                json!([{"op":"add","path":"","value":{"b":2}}]),
                json!({"b":2}),
            ),
            (
                json!({"a":{"b":1}}),
                json!([{"op":"copy","from":"/a","path":"/c"}]),
                json!({"a":{"b":1},"c":{"b":1}}),
            ),
            (
                json!({"a":[1,2]}),
                json!([{"op":"copy","from":"/a/0","path":"/a/-"}]),
                json!({"a":[1,2,1]}),
            ),
            (
                json!({"a":[1,2]}),
                json!([{"op":"add","path":"/a/2","value":3}]),
                json!({"a":[1,2,3]}),
            ),
            (
                json!({"a":1}),
                json!([{"op":"move","from":"/a","path":"/a"}]),
                json!({"a":1}),
            ),
            (
                json!({"a/b":1,"m~n":2}),
                json!([{"op":"remove","path":"/a~1b"},{"op":"remove","path":"/m~0n"}]),
                json!({}),
            ),
            (
                json!({"": 1}),
                json!([{"op":"replace","path":"/","value":2}]),
                json!({"": 2}),
            ),
            (
                json!({"a":null}),
                json!([{"op":"test","path":"/a","value":null}]),
                json!({"a":null}),
            ),
            (
                json!({"a":1}),
                json!([{"op":"test","path":"/a","value":1.0}]),
                json!({"a":1}),
            ),
            (
                json!({"a":{"x":1,"y":2}}),
                json!([{"op":"test","path":"/a","value":{"y":2,"x":1}}]),
                json!({"a":{"x":1,"y":2}}),
            ),
            (
                json!({"a":1}),
                json!([{"op":"add","path":"/a","value":null}]),
                json!({"a":null}),
            ),
            (
                json!({"metadata":{"labels":{"app":"x"}}}),
                json!([{"op":"add","path":"/metadata/labels/example.com~1team","value":"t"}]),
                json!({"metadata":{"labels":{"app":"x","example.com/team":"t"}}}),
            ),
            (json!({"a":1}), json!([]), json!({"a":1})),
        ];
        for (doc, ops, want) in cases {
            assert_eq!(ok(doc, ops.clone()), want, "ops {ops}");
        }
    }

    #[test]
    fn failures() {
        let doc = json!({"baz":"qux","foo":"bar","list":[1,2],"/":9,"~1":10});
        let cases = [
            // A.9 test failure
            (
                json!([{"op":"test","path":"/baz","value":"bar"}]),
                "json patch test operation at index 0 failed: the value at \"/baz\" is not \"bar\"",
            ),
            // A.12 add to a non-existent target
            (
                json!([{"op":"add","path":"/baz/bat","value":"qux"}]),
                "json patch add operation at index 0 does not apply: \"/baz\" is neither an object nor a list",
            ),
            (
                json!([{"op":"add","path":"/nope/bat","value":"qux"}]),
                "json patch add operation at index 0 does not apply: the parent \"/nope\" of \"/nope/bat\" does not exist",
            ),
            // A.15 strings are not numbers
            (
                json!([{"op":"test","path":"/~01","value":"10"}]),
                "json patch test operation at index 0 failed: the value at \"/~01\" is not \"10\"",
            ),
            (
                json!([{"op":"test","path":"/foo","value":"bar"},{"op":"remove","path":"/missing"}]),
                "json patch remove operation at index 1 does not apply: the path \"/missing\" does not exist",
            ),
            (
                json!([{"op":"replace","path":"/missing","value":1}]),
                "json patch replace operation at index 0 does not apply: the path \"/missing\" does not exist",
            ),
            (
                json!([{"op":"add","path":"/list/3","value":1}]),
                "json patch add operation at index 0 does not apply: index 3 is out of range for a list of 2 items",
            ),
            (
                json!([{"op":"remove","path":"/list/2"}]),
                "json patch remove operation at index 0 does not apply: index 2 is out of range for a list of 2 items",
            ),
            (
                json!([{"op":"add","path":"/list/01","value":1}]),
                "json patch add operation at index 0 does not apply: \"01\" is not a valid list index",
            ),
            (
                json!([{"op":"remove","path":"/list/-"}]),
                "json patch remove operation at index 0 does not apply: index \"-\" (past the end of the list) can only be used to add",
            ),
            (
                json!([{"op":"remove","path":""}]),
                "json patch remove operation at index 0 does not apply: cannot remove the whole document",
            ),
            (
                json!([{"op":"move","from":"/list","path":"/list/0"}]),
                "json patch move operation at index 0 does not apply: cannot move \"/list\" into its own child \"/list/0\"",
            ),
            (
                json!([{"op":"copy","from":"/missing","path":"/x"}]),
                "json patch copy operation at index 0 does not apply: the path \"/missing\" does not exist",
            ),
            (
                json!([{"op":"test","path":"/missing","value":1}]),
                "json patch test operation at index 0 does not apply: the path \"/missing\" does not exist",
            ),
        ];
        for (ops, want) in cases {
            let mut d = doc.clone();
            let err = json_patch(&mut d, &ops).expect_err("must fail");
            assert_eq!(err.to_string(), want, "ops {ops}");
            assert_eq!(d, doc, "a failed patch must leave the target unchanged ({ops})");
            assert_eq!(err.to_status().code, 422, "ops {ops}");
        }
    }

    #[test]
    fn malformed_documents() {
        let cases = [
            (
                json!({"op":"add"}),
                "invalid JSON patch: the body must be a JSON list of operations",
            ),
            (
                json!(["add"]),
                "invalid JSON patch: operation 0: an operation must be a JSON object",
            ),
            (
                json!([{"path":"/a"}]),
                "invalid JSON patch: operation 0: member \"op\" is missing",
            ),
            (
                json!([{"op":1,"path":"/a"}]),
                "invalid JSON patch: operation 0: member \"op\" must be a string",
            ),
            (
                json!([{"op":"merge","path":"/a"}]),
                "invalid JSON patch: operation 0: unknown op \"merge\" (expected add, remove, replace, move, copy or test)",
            ),
            (
                json!([{"op":"add","value":1}]),
                "invalid JSON patch: operation 0: member \"path\" is missing",
            ),
            (
                json!([{"op":"add","path":"/a"}]),
                "invalid JSON patch: operation 0: member \"value\" is missing",
            ),
            (
                json!([{"op":"move","path":"/a"}]),
                "invalid JSON patch: operation 0: member \"from\" is missing",
            ),
            (
                json!([{"op":"remove","path":"/a"},{"op":"remove","path":"a"}]),
                "invalid JSON patch: operation 1: invalid JSON pointer \"a\": it must be empty or start with '/'",
            ),
            (
                json!([{"op":"remove","path":"/a~2"}]),
                "invalid JSON patch: operation 0: invalid JSON pointer \"/a~2\": '~' must be followed by '0' or '1'",
            ),
            (
                json!([{"op":"remove","path":"/a~"}]),
                "invalid JSON patch: operation 0: invalid JSON pointer \"/a~\": '~' must be followed by '0' or '1'",
            ),
        ];
        for (ops, want) in cases {
            let mut d = json!({"a": 1});
            let err = json_patch(&mut d, &ops).expect_err("must fail");
            assert_eq!(err.to_string(), want, "ops {ops}");
            assert_eq!(d, json!({"a": 1}), "nothing applied for {ops}");
            assert_eq!(err.to_status().code, 400, "ops {ops}");
        }
    }

    #[test]
    fn operation_limit() {
        let ops = Value::Array(vec![json!({"op":"test","path":"","value":{}}); MAX_OPERATIONS + 1]);
        let mut d = json!({});
        let err = json_patch(&mut d, &ops).expect_err("too many");
        assert_eq!(
            err.to_string(),
            "The allowed maximum operations in a JSON patch is 10000, got 10001"
        );
        assert_eq!(err.to_status().code, 413);
        let ops = Value::Array(vec![json!({"op":"test","path":"","value":{}}); MAX_OPERATIONS]);
        assert!(json_patch(&mut d, &ops).is_ok());
    }

    #[test]
    fn later_operations_see_earlier_ones() {
        let got = ok(
            json!({"spec":{"replicas":1}}),
            json!([
                {"op":"test","path":"/spec/replicas","value":1},
                {"op":"replace","path":"/spec/replicas","value":2},
                {"op":"add","path":"/spec/tags","value":[]},
                {"op":"add","path":"/spec/tags/-","value":"a"},
                {"op":"add","path":"/spec/tags/0","value":"b"},
                {"op":"test","path":"/spec/tags","value":["b","a"]},
            ]),
        );
        assert_eq!(got, json!({"spec":{"replicas":2,"tags":["b","a"]}}));
    }
}
