//! JSON merge patch (RFC 7386): objects merge recursively, `null` deletes, everything else
//! (lists included) replaces.

use serde_json::{Map, Value};

/// Applies `patch` to `target` in place. Cannot fail: every JSON value is a valid merge patch.
pub fn merge_patch(target: &mut Value, patch: &Value) {
    let Value::Object(patch) = patch else {
        *target = patch.clone();
        return;
    };
    if !target.is_object() {
        *target = Value::Object(Map::new());
    }
    let Value::Object(target) = target else {
        return; // just made an object above
    };
    for (key, value) in patch {
        if value.is_null() {
            // shift_remove keeps the order of the remaining keys stable in the stored object.
            target.shift_remove(key);
        } else {
            merge_patch(target.entry(key.clone()).or_insert(Value::Null), value);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    /// RFC 7386 Appendix A, row by row, plus nesting cases the apiserver meets.
    #[test]
    fn rfc7386_appendix_a() {
        let cases = [
            (json!({"a":"b"}), json!({"a":"c"}), json!({"a":"c"})),
            (json!({"a":"b"}), json!({"b":"c"}), json!({"a":"b","b":"c"})),
            (json!({"a":"b"}), json!({"a":null}), json!({})),
            (json!({"a":"b","b":"c"}), json!({"a":null}), json!({"b":"c"})),
            (json!({"a":["b"]}), json!({"a":"c"}), json!({"a":"c"})),
            (json!({"a":"c"}), json!({"a":["b"]}), json!({"a":["b"]})),
            (
                json!({"a":{"b":"c"}}),
                json!({"a":{"b":"d","c":null}}),
                json!({"a":{"b":"d"}}),
            ),
            (json!({"a":[{"b":"c"}]}), json!({"a":[1]}), json!({"a":[1]})),
            (json!(["a", "b"]), json!(["c", "d"]), json!(["c", "d"])),
            (json!({"a":"b"}), json!(["c"]), json!(["c"])),
            (json!({"a":"foo"}), json!(null), json!(null)),
            (json!({"a":"foo"}), json!("bar"), json!("bar")),
            (json!({"e":null}), json!({"a":1}), json!({"e":null,"a":1})),
            (json!([1, 2]), json!({"a":"b","c":null}), json!({"a":"b"})),
            (json!({}), json!({"a":{"bb":{"ccc":null}}}), json!({"a":{"bb":{}}})),
        ];
        for (target, patch, want) in cases {
            let mut got = target.clone();
            merge_patch(&mut got, &patch);
            assert_eq!(got, want, "target {target} patch {patch}");
        }
    }

    #[test]
    fn kubernetes_shaped_objects() {
        let mut cm = json!({
            "metadata": {"name": "c", "labels": {"a": "1", "b": "2"}, "finalizers": ["x"]},
            "data": {"k1": "v1", "k2": "v2"},
        });
        merge_patch(
            &mut cm,
            &json!({"metadata": {"labels": {"a": null, "c": "3"}, "finalizers": ["y"]}, "data": {"k2": null}}),
        );
        assert_eq!(
            cm,
            json!({
                "metadata": {"name": "c", "labels": {"b": "2", "c": "3"}, "finalizers": ["y"]},
                "data": {"k1": "v1"},
            })
        );
    }

    #[test]
    fn deleting_keeps_key_order() {
        let mut v = json!({"a": 1, "b": 2, "c": 3, "d": 4});
        merge_patch(&mut v, &json!({"b": null}));
        let keys: Vec<_> = v.as_object().map(|o| o.keys().cloned().collect()).unwrap_or_default();
        assert_eq!(keys, ["a", "c", "d"]);
    }
}
