//! Strategic merge patch, as Kubernetes' `apimachinery/pkg/util/strategicpatch` applies it.
//!
//! Maps merge like a JSON merge patch (`null` deletes). Lists are replaced, except where the
//! schema node of the list says `x-kubernetes-patch-strategy: merge`: lists of objects then merge
//! item by item on `x-kubernetes-patch-merge-key`, lists of scalars become a union. Directives
//! steer the rest: `$patch: replace|delete` on maps and list items, `$retainKeys`,
//! `$setElementOrder/<field>` and `$deleteFromPrimitiveList/<field>`. None of them reaches the
//! result.
//!
//! Order follows Kubernetes, which is not "append": items named in the patch keep the patch's
//! order and come first unless the live list orders them relative to the other items; an explicit
//! `$setElementOrder` list wins over both.

use serde_json::{Map, Value};

use super::PatchError;
use crate::schema::Schema;

const DIRECTIVE: &str = "$patch";
const RETAIN_KEYS: &str = "$retainKeys";
const SET_ELEMENT_ORDER: &str = "$setElementOrder/";
const DELETE_FROM_PRIMITIVE_LIST: &str = "$deleteFromPrimitiveList/";

type Result<T> = std::result::Result<T, PatchError>;

fn invalid(message: impl Into<String>) -> PatchError {
    PatchError::InvalidStrategicPatch(message.into())
}

/// Applies a strategic merge `patch` to `original` using the list semantics of `schema` (the
/// schema of the whole object). Lists under fields the schema does not know are replaced.
pub fn strategic_merge_patch(original: &Value, patch: &Value, schema: &Schema) -> Result<Value> {
    let Value::Object(patch) = patch else {
        return Err(invalid("the patch must be a JSON object"));
    };
    let original = match original {
        Value::Object(o) => o.clone(),
        _ => Map::new(),
    };
    merge_map(original, patch.clone(), Some(schema)).map(Value::Object)
}

/// The patch strategy of a field; `retainKeys` only matters when computing patches, not here.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Strategy {
    Default,
    Merge,
    Replace,
}

fn field_meta(schema: Option<&Schema>) -> Result<(Strategy, Option<&str>)> {
    let Some(schema) = schema else {
        return Ok((Strategy::Default, None));
    };
    let strategies: Vec<&str> = schema
        .patch_strategy
        .as_deref()
        .unwrap_or_default()
        .split(',')
        .map(str::trim)
        .filter(|s| !s.is_empty() && *s != "retainKeys")
        .collect();
    let strategy = match strategies.as_slice() {
        [] => Strategy::Default,
        ["merge"] => Strategy::Merge,
        ["replace"] => Strategy::Replace,
        [_] => Strategy::Default,
        _ => {
            return Err(invalid(format!(
                "unexpected patch strategy: {:?}",
                schema.patch_strategy
            )));
        }
    };
    let key = schema.patch_merge_key.as_deref().filter(|k| !k.is_empty());
    Ok((strategy, key))
}

fn child<'a>(schema: Option<&'a Schema>, name: &str) -> Option<&'a Schema> {
    schema.and_then(|s| s.field(name))
}

fn is_directive_key(k: &str) -> bool {
    k == DIRECTIVE || k == RETAIN_KEYS || k.starts_with(SET_ELEMENT_ORDER) || k.starts_with(DELETE_FROM_PRIMITIVE_LIST)
}

fn directive_of(m: &Map<String, Value>) -> Option<&Value> {
    m.get(DIRECTIVE)
}

fn merge_map(
    mut original: Map<String, Value>,
    mut patch: Map<String, Value>,
    schema: Option<&Schema>,
) -> Result<Map<String, Value>> {
    if let Some(directive) = patch.shift_remove(DIRECTIVE) {
        match directive.as_str() {
            Some("replace") => return merge_map(Map::new(), patch, schema),
            Some("delete") => return Ok(Map::new()),
            // Kubernetes refuses `merge` on maps; it is what happens anyway, so accept it.
            Some("merge") => {}
            _ => return Err(invalid(format!("unknown patch type: {directive} in map"))),
        }
    }

    if let Some(retain) = patch.shift_remove(RETAIN_KEYS) {
        apply_retain_keys(&mut original, &patch, &retain)?;
    }

    apply_set_element_order(&mut original, &mut patch, schema)?;

    // Deletions first: a value both deleted and added by one patch ends up present.
    let deletions: Vec<String> = patch
        .keys()
        .filter(|k| k.starts_with(DELETE_FROM_PRIMITIVE_LIST))
        .cloned()
        .collect();
    for key in deletions {
        let Some(Value::Array(to_delete)) = patch.shift_remove(&key) else {
            return Err(invalid(format!("{key}: the value must be a list")));
        };
        let field = &key[DELETE_FROM_PRIMITIVE_LIST.len()..];
        if let Some(Value::Array(list)) = original.get_mut(field) {
            list.retain(|v| !to_delete.contains(v));
        }
    }

    for (key, patch_value) in patch {
        if patch_value.is_null() {
            original.shift_remove(&key);
            continue;
        }
        let field_schema = child(schema, &key);
        let (strategy, merge_key) = field_meta(field_schema)?;
        // Taking the value out (leaving null in its slot) keeps the key's position.
        let current = original.get_mut(&key).map(std::mem::take);
        let merged = match (current, patch_value) {
            (Some(Value::Object(cur)), Value::Object(p)) => {
                let base = if strategy == Strategy::Replace { Map::new() } else { cur };
                Value::Object(merge_map(base, p, field_schema)?)
            }
            (Some(Value::Array(cur)), Value::Array(p)) => {
                Value::Array(merge_list(cur, p, field_schema, strategy, merge_key)?)
            }
            (_, Value::Object(p)) => {
                // Deleting a map that is not there (or is not a map) leaves nothing behind.
                if directive_of(&p).and_then(Value::as_str) == Some("delete") {
                    original.shift_remove(&key);
                    continue;
                }
                Value::Object(merge_map(Map::new(), p, field_schema)?)
            }
            (_, Value::Array(p)) => Value::Array(merge_list(Vec::new(), p, field_schema, strategy, merge_key)?),
            (_, scalar) => scalar,
        };
        original.insert(key, merged);
    }
    Ok(original)
}

fn apply_retain_keys(original: &mut Map<String, Value>, patch: &Map<String, Value>, retain: &Value) -> Result<()> {
    let bad_format = || invalid("invalid patch format of retainKeys: $retainKeys must be a list of field names");
    let Value::Array(list) = retain else {
        return Err(bad_format());
    };
    let keep: Vec<&str> = list
        .iter()
        .map(|v| v.as_str().ok_or_else(bad_format))
        .collect::<Result<_>>()?;
    for (k, v) in patch {
        if !v.is_null() && !is_directive_key(k) && !keep.contains(&k.as_str()) {
            return Err(invalid(format!(
                "invalid patch format of retainKeys: the patch sets {k:?} but $retainKeys does not list it"
            )));
        }
    }
    original.retain(|k, _| keep.contains(&k.as_str()));
    Ok(())
}

/// Handles every `$setElementOrder/<field>` of one map together with the `<field>` list it
/// orders, then removes both from the patch.
fn apply_set_element_order(
    original: &mut Map<String, Value>,
    patch: &mut Map<String, Value>,
    schema: Option<&Schema>,
) -> Result<()> {
    let keys: Vec<String> = patch
        .keys()
        .filter(|k| k.starts_with(SET_ELEMENT_ORDER))
        .cloned()
        .collect();
    for key in keys {
        let field = key[SET_ELEMENT_ORDER.len()..].to_string();
        let Some(Value::Array(order)) = patch.shift_remove(&key) else {
            return Err(invalid(format!(
                "invalid patch format of setElementOrder list: {key} must be a list"
            )));
        };
        let field_schema = child(schema, &field);
        let (strategy, merge_key) = field_meta(field_schema)?;
        let patch_list = match patch.get(&field) {
            Some(Value::Array(p)) => Some(p.clone()),
            // A null or non-list value replaces the field; there is nothing to order.
            Some(_) => continue,
            None => None,
        };
        let server_order = match original.get(&field) {
            Some(Value::Array(o)) => Some(o.clone()),
            _ => None,
        };
        if let Some(p) = &patch_list {
            validate_order(&field, p, &order, merge_key)?;
        }
        let merged = match (server_order.clone(), patch_list) {
            (Some(o), None) => o,
            (o, Some(p)) => merge_list(o.unwrap_or_default(), p, field_schema, strategy, merge_key)?,
            (None, None) => continue,
        };
        patch.shift_remove(&field);
        let (listed, rest): (Vec<Value>, Vec<Value>) = merged
            .into_iter()
            .partition(|v| position(&order, v, merge_key).is_some());
        let server_order = server_order.unwrap_or_default();
        let listed = sorted_by(listed, &order, merge_key);
        let rest = sorted_by(rest, &server_order, merge_key);
        original.insert(
            field,
            Value::Array(merge_sorted(rest, listed, &server_order, merge_key)),
        );
    }
    Ok(())
}

/// Items of the patch list must appear in `$setElementOrder` in the same relative order.
fn validate_order(field: &str, patch_list: &[Value], order: &[Value], merge_key: Option<&str>) -> Result<()> {
    let items: Vec<&Value> = patch_list
        .iter()
        .filter(|v| !v.as_object().is_some_and(|m| m.contains_key(DIRECTIVE)))
        .collect();
    let mut next = 0;
    for o in order {
        if next < items.len() && identity(items[next], merge_key).is_some_and(|id| identity(o, merge_key) == Some(id)) {
            next += 1;
        }
    }
    if next < items.len() {
        return Err(invalid(format!(
            "the order of the items of {field:?} in the patch does not match its $setElementOrder list"
        )));
    }
    Ok(())
}

fn merge_list(
    original: Vec<Value>,
    patch: Vec<Value>,
    schema: Option<&Schema>,
    strategy: Strategy,
    merge_key: Option<&str>,
) -> Result<Vec<Value>> {
    if strategy != Strategy::Merge {
        return Ok(patch.into_iter().filter_map(remove_directives).collect());
    }
    let item_schema = schema.and_then(|s| s.items.as_deref());
    if original.is_empty() && patch.is_empty() {
        return Ok(original);
    }
    if all_objects(&original, &patch)? {
        merge_object_list(original, patch, item_schema, merge_key)
    } else {
        Ok(merge_scalar_list(original, patch))
    }
}

/// Whether the list items are objects (else scalars); mixed kinds and nested lists are refused.
fn all_objects(original: &[Value], patch: &[Value]) -> Result<bool> {
    let mut kind = None;
    for v in original.iter().chain(patch) {
        if v.is_array() {
            return Err(invalid("lists of lists are not supported"));
        }
        match kind {
            None => kind = Some(v.is_object()),
            Some(k) if k != v.is_object() => return Err(invalid("list element types are not identical")),
            Some(_) => {}
        }
    }
    Ok(kind.unwrap_or(false))
}

fn merge_scalar_list(original: Vec<Value>, patch: Vec<Value>) -> Vec<Value> {
    let mut merged: Vec<Value> = Vec::with_capacity(original.len() + patch.len());
    for v in original.iter().chain(&patch) {
        if !merged.contains(v) {
            merged.push(v.clone());
        }
    }
    let (from_patch, rest): (Vec<Value>, Vec<Value>) = merged.into_iter().partition(|v| patch.contains(v));
    let from_patch = sorted_by(from_patch, &patch, None);
    let rest = sorted_by(rest, &original, None);
    merge_sorted(rest, from_patch, &original, None)
}

fn merge_object_list(
    mut original: Vec<Value>,
    patch: Vec<Value>,
    item_schema: Option<&Schema>,
    merge_key: Option<&str>,
) -> Result<Vec<Value>> {
    let Some(key) = merge_key else {
        return Err(invalid(
            "cannot merge a list of objects without a merge key (x-kubernetes-patch-merge-key)",
        ));
    };
    let mut items = Vec::with_capacity(patch.len());
    let mut replace = false;
    for p in patch {
        let Value::Object(p) = p else {
            continue; // all_objects guarantees objects
        };
        let Some(directive) = directive_of(&p) else {
            items.push(p);
            continue;
        };
        match directive.as_str() {
            Some("delete") => {
                let id = p.get(key).ok_or_else(|| no_merge_key(&p, key))?;
                original.retain(|o| o.get(key) != Some(id));
            }
            Some("replace") => replace = true,
            Some("merge") => return Err(invalid("merging lists cannot yet be specified in the patch")),
            _ => {
                return Err(invalid(format!(
                    "unknown patch type: {directive} in map: {}",
                    Value::Object(p.clone())
                )));
            }
        }
    }
    if replace {
        return items
            .into_iter()
            .map(|p| merge_map(Map::new(), p, item_schema).map(Value::Object))
            .collect();
    }

    let server_order = original.clone();
    let mut merged = original;
    for p in &items {
        let id = p.get(key).ok_or_else(|| no_merge_key(p, key))?;
        match merged.iter().position(|o| o.get(key) == Some(id)) {
            Some(at) => {
                let current = match std::mem::take(&mut merged[at]) {
                    Value::Object(m) => m,
                    _ => Map::new(),
                };
                merged[at] = Value::Object(merge_map(current, p.clone(), item_schema)?);
            }
            None => merged.push(Value::Object(merge_map(Map::new(), p.clone(), item_schema)?)),
        }
    }
    let patch_order: Vec<Value> = items.into_iter().map(Value::Object).collect();
    let (from_patch, rest): (Vec<Value>, Vec<Value>) = merged
        .into_iter()
        .partition(|v| position(&patch_order, v, Some(key)).is_some());
    let from_patch = sorted_by(from_patch, &patch_order, Some(key));
    let rest = sorted_by(rest, &server_order, Some(key));
    Ok(merge_sorted(rest, from_patch, &server_order, Some(key)))
}

fn no_merge_key(item: &Map<String, Value>, key: &str) -> PatchError {
    invalid(format!(
        "map: {} does not contain declared merge key: {key}",
        Value::Object(item.clone())
    ))
}

/// What identifies a list item: its merge key value, or the whole value for scalars.
fn identity<'v>(v: &'v Value, merge_key: Option<&str>) -> Option<&'v Value> {
    match merge_key {
        Some(k) => v.get(k),
        None => Some(v),
    }
}

fn position(list: &[Value], item: &Value, merge_key: Option<&str>) -> Option<usize> {
    let id = identity(item, merge_key)?;
    list.iter().position(|x| identity(x, merge_key) == Some(id))
}

/// Stable sort by position in `order`; items not in it go last.
fn sorted_by(mut items: Vec<Value>, order: &[Value], merge_key: Option<&str>) -> Vec<Value> {
    items.sort_by_cached_key(|v| position(order, v, merge_key).unwrap_or(usize::MAX));
    items
}

/// Interleaves the live-only items (`server_only`) into the patch items: a live-only item goes
/// before a patch item only when the live list already had it before that item. Both inputs
/// keep their relative order.
fn merge_sorted(
    server_only: Vec<Value>,
    from_patch: Vec<Value>,
    server_order: &[Value],
    key: Option<&str>,
) -> Vec<Value> {
    let mut out = Vec::with_capacity(server_only.len() + from_patch.len());
    let mut left = server_only.into_iter().peekable();
    let mut right = from_patch.into_iter().peekable();
    loop {
        let take_left = match (left.peek(), right.peek()) {
            (None, None) => break,
            (Some(_), None) => true,
            (None, Some(_)) => false,
            (Some(l), Some(r)) => matches!(
                (position(server_order, l, key), position(server_order, r, key)),
                (Some(a), Some(b)) if a < b
            ),
        };
        let next = if take_left { left.next() } else { right.next() };
        out.extend(next);
    }
    out
}

/// Cleans a value that replaces a field wholesale: maps carrying `$patch` are dropped and
/// other directive keys removed, at any depth.
fn remove_directives(v: Value) -> Option<Value> {
    match v {
        Value::Object(m) => {
            if m.contains_key(DIRECTIVE) {
                return None;
            }
            let cleaned = m
                .into_iter()
                .filter(|(k, _)| !is_directive_key(k))
                .filter_map(|(k, v)| remove_directives(v).map(|v| (k, v)))
                .collect();
            Some(Value::Object(cleaned))
        }
        Value::Array(items) => Some(Value::Array(items.into_iter().filter_map(remove_directives).collect())),
        other => Some(other),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn string() -> Schema {
        Schema {
            type_: Some("string".into()),
            ..Default::default()
        }
    }

    fn object(props: Vec<(&str, Schema)>) -> Schema {
        Schema {
            type_: Some("object".into()),
            properties: props.into_iter().map(|(k, v)| (k.to_string(), v)).collect(),
            ..Default::default()
        }
    }

    fn map_of(values: Schema) -> Schema {
        Schema {
            type_: Some("object".into()),
            additional_properties: Some(Box::new(values)),
            ..Default::default()
        }
    }

    fn list(items: Schema, strategy: Option<&str>, key: Option<&str>) -> Schema {
        Schema {
            type_: Some("array".into()),
            items: Some(Box::new(items)),
            patch_strategy: strategy.map(Into::into),
            patch_merge_key: key.map(Into::into),
            ..Default::default()
        }
    }

    /// A Pod/Deployment-shaped schema with the patch metadata Kubernetes declares.
    fn schema() -> Schema {
        let env = object(vec![("name", string()), ("value", string())]);
        let container = object(vec![
            ("name", string()),
            ("image", string()),
            ("env", list(env, Some("merge"), Some("name"))),
            ("args", list(string(), None, None)),
            (
                "resources",
                object(vec![("limits", map_of(string())), ("requests", map_of(string()))]),
            ),
        ]);
        let volume = object(vec![
            ("name", string()),
            ("emptyDir", object(vec![])),
            ("configMap", object(vec![])),
        ]);
        let mut strategy = object(vec![("type", string()), ("rollingUpdate", object(vec![]))]);
        strategy.patch_strategy = Some("retainKeys".into());
        let mut replaced = object(vec![]);
        replaced.patch_strategy = Some("replace".into());
        replaced.additional_properties = Some(Box::new(string()));
        object(vec![
            (
                "metadata",
                object(vec![
                    ("labels", map_of(string())),
                    ("annotations", map_of(string())),
                    ("finalizers", list(string(), Some("merge"), None)),
                    (
                        "ownerReferences",
                        list(object(vec![("uid", string())]), Some("merge"), Some("uid")),
                    ),
                ]),
            ),
            (
                "spec",
                object(vec![
                    ("containers", list(container, Some("merge"), Some("name"))),
                    ("volumes", list(volume, Some("merge,retainKeys"), Some("name"))),
                    ("tolerations", list(object(vec![]), None, None)),
                    ("strategy", strategy),
                    ("replaced", replaced),
                ]),
            ),
        ])
    }

    fn apply(original: Value, patch: Value) -> Value {
        strategic_merge_patch(&original, &patch, &schema()).unwrap_or_else(|e| panic!("patch {patch}: {e}"))
    }

    fn containers(v: Value) -> Value {
        json!({"spec": {"containers": v}})
    }

    #[test]
    fn maps_merge_and_null_deletes() {
        let cases = [
            (
                json!({"metadata": {"labels": {"a": "1", "b": "2"}}}),
                json!({"metadata": {"labels": {"a": null, "c": "3"}}}),
                json!({"metadata": {"labels": {"b": "2", "c": "3"}}}),
            ),
            // Nulls for fields that are not there vanish, at any depth.
            (
                json!({}),
                json!({"spec": {"x": {"y": null, "z": 1}}}),
                json!({"spec": {"x": {"z": 1}}}),
            ),
            (json!({"a": 1}), json!({"b": null}), json!({"a": 1})),
            (
                json!({"spec": {"x": {"keep": 1, "drop": 2}}}),
                json!({"spec": {"x": {"drop": null, "deep": {"n": null, "m": 1}}}}),
                json!({"spec": {"x": {"keep": 1, "deep": {"m": 1}}}}),
            ),
            // Type changes replace, and the replacement is cleaned.
            (
                json!({"spec": {"x": "s"}}),
                json!({"spec": {"x": {"a": null, "b": 1}}}),
                json!({"spec": {"x": {"b": 1}}}),
            ),
            (
                json!({"spec": {"x": {"a": 1}}}),
                json!({"spec": {"x": 5}}),
                json!({"spec": {"x": 5}}),
            ),
            (json!({"data": {"k": "v"}}), json!({}), json!({"data": {"k": "v"}})),
        ];
        for (original, patch, want) in cases {
            assert_eq!(apply(original, patch.clone()), want, "patch {patch}");
        }
    }

    #[test]
    fn merge_lists_by_key() {
        let a = json!({"name": "a", "image": "a1"});
        let b = json!({"name": "b", "image": "b1"});
        let cases = [
            // Existing items merge in place.
            (
                containers(json!([a, b])),
                containers(json!([{"name": "b", "image": "b2"}])),
                containers(json!([a, {"name": "b", "image": "b2"}])),
            ),
            // New items come before the live-only ones, as in Kubernetes.
            (
                containers(json!([a, b])),
                containers(json!([{"name": "c", "image": "c1"}])),
                containers(json!([{"name": "c", "image": "c1"}, a, b])),
            ),
            // Null inside an item deletes that field of the matched item.
            (
                containers(json!([a, b])),
                containers(json!([{"name": "a", "image": null}])),
                containers(json!([{"name": "a"}, b])),
            ),
            // Lists nested inside merged items merge by their own key.
            (
                containers(json!([{"name": "a", "env": [{"name": "E1", "value": "1"}, {"name": "E2", "value": "2"}]}])),
                containers(json!([{"name": "a", "env": [{"name": "E1", "value": "9"}]}])),
                containers(json!([{"name": "a", "env": [{"name": "E1", "value": "9"}, {"name": "E2", "value": "2"}]}])),
            ),
            // Lists without a strategy inside merged items are replaced.
            (
                containers(json!([{"name": "a", "args": ["x", "y"]}])),
                containers(json!([{"name": "a", "args": ["z"]}])),
                containers(json!([{"name": "a", "args": ["z"]}])),
            ),
            // The patch's order wins for the items it names (Kubernetes test "preserve the order").
            (
                containers(json!([{"name": "1"}, {"name": "2", "image": "b"}, {"name": "3"}])),
                containers(
                    json!([{"name": "3", "image": "c"}, {"name": "1", "image": "a"}, {"name": "2", "args": ["x"]}]),
                ),
                containers(json!([
                    {"name": "3", "image": "c"},
                    {"name": "1", "image": "a"},
                    {"name": "2", "image": "b", "args": ["x"]}
                ])),
            ),
            (
                containers(json!([{"name": "1"}, {"name": "2", "image": "b"}, {"name": "3"}])),
                containers(json!([{"name": "3", "image": "c"}, {"name": "1", "image": "a"}])),
                containers(
                    json!([{"name": "2", "image": "b"}, {"name": "3", "image": "c"}, {"name": "1", "image": "a"}]),
                ),
            ),
            // Into a missing list.
            (json!({}), containers(json!([a])), containers(json!([a]))),
        ];
        for (original, patch, want) in cases {
            assert_eq!(apply(original, patch.clone()), want, "patch {patch}");
        }
    }

    #[test]
    fn list_directives() {
        let a = json!({"name": "a", "image": "a1"});
        let b = json!({"name": "b", "image": "b1"});
        let cases = [
            (
                containers(json!([a, b])),
                containers(json!([{"name": "a", "$patch": "delete"}])),
                containers(json!([b])),
            ),
            // Deleting something absent is fine.
            (
                containers(json!([a])),
                containers(json!([{"name": "zz", "$patch": "delete"}])),
                containers(json!([a])),
            ),
            // Every duplicate goes (Kubernetes test "delete all duplicate entries").
            (
                containers(
                    json!([{"name": "1"}, {"name": "1"}, {"name": "2", "image": "a"}, {"name": "3"}, {"name": "3"}]),
                ),
                containers(json!([{"name": "1", "$patch": "delete"}, {"name": "3", "$patch": "delete"}])),
                containers(json!([{"name": "2", "image": "a"}])),
            ),
            (
                containers(json!([a, b])),
                containers(json!([{"name": "z", "image": "z1"}, {"$patch": "replace"}])),
                containers(json!([{"name": "z", "image": "z1"}])),
            ),
            (
                containers(json!([a, b])),
                containers(json!([{"$patch": "replace"}])),
                containers(json!([])),
            ),
            // Delete and merge in one patch.
            (
                containers(json!([a, b])),
                containers(json!([{"name": "a", "$patch": "delete"}, {"name": "b", "image": "b2"}])),
                containers(json!([{"name": "b", "image": "b2"}])),
            ),
        ];
        for (original, patch, want) in cases {
            assert_eq!(apply(original, patch.clone()), want, "patch {patch}");
        }
    }

    #[test]
    fn map_directives() {
        let cases = [
            (
                json!({"spec": {"containers": [{"name": "a", "resources": {"limits": {"cpu": "1"}, "requests": {"cpu": "1"}}}]}}),
                json!({"spec": {"containers": [{"name": "a", "resources": {"$patch": "replace", "limits": {"cpu": "2"}}}]}}),
                json!({"spec": {"containers": [{"name": "a", "resources": {"limits": {"cpu": "2"}}}]}}),
            ),
            // Kubernetes leaves an empty map behind (test "delete map from nested map").
            (
                json!({"metadata": {"annotations": {"a": "1"}, "labels": {"l": "1"}}}),
                json!({"metadata": {"annotations": {"$patch": "delete"}}}),
                json!({"metadata": {"annotations": {}, "labels": {"l": "1"}}}),
            ),
            // Deleting a map that does not exist adds nothing.
            (
                json!({"metadata": {}}),
                json!({"metadata": {"annotations": {"$patch": "delete"}}}),
                json!({"metadata": {}}),
            ),
            (
                json!({"a": 1, "b": 2}),
                json!({"$patch": "replace", "c": 3}),
                json!({"c": 3}),
            ),
            (json!({"a": 1, "b": 2}), json!({"$patch": "delete"}), json!({})),
            (
                json!({"a": 1}),
                json!({"$patch": "merge", "b": 2}),
                json!({"a": 1, "b": 2}),
            ),
            // A replace-strategy field takes the patch's map as is.
            (
                json!({"spec": {"replaced": {"a": "1"}}}),
                json!({"spec": {"replaced": {"b": "2"}}}),
                json!({"spec": {"replaced": {"b": "2"}}}),
            ),
            // A new map that asks for replace keeps its content.
            (
                json!({}),
                json!({"spec": {"x": {"$patch": "replace", "k": "v"}}}),
                json!({"spec": {"x": {"k": "v"}}}),
            ),
        ];
        for (original, patch, want) in cases {
            assert_eq!(apply(original, patch.clone()), want, "patch {patch}");
        }
    }

    #[test]
    fn finalizers_and_owner_references() {
        let cases = [
            (
                json!({"metadata": {"finalizers": ["a", "b"]}}),
                json!({"metadata": {"finalizers": ["b", "c"]}}),
                json!({"metadata": {"finalizers": ["a", "b", "c"]}}),
            ),
            // A new finalizer comes first, as kube-apiserver does it.
            (
                json!({"metadata": {"finalizers": ["a"]}}),
                json!({"metadata": {"finalizers": ["b"]}}),
                json!({"metadata": {"finalizers": ["b", "a"]}}),
            ),
            (
                json!({"metadata": {"finalizers": ["a", "b"]}}),
                json!({"metadata": {"finalizers": ["a"]}}),
                json!({"metadata": {"finalizers": ["a", "b"]}}),
            ),
            (
                json!({"metadata": {}}),
                json!({"metadata": {"finalizers": ["a", "a"]}}),
                json!({"metadata": {"finalizers": ["a"]}}),
            ),
            (
                json!({"metadata": {"finalizers": ["a"]}}),
                json!({"metadata": {"finalizers": null}}),
                json!({"metadata": {}}),
            ),
            (
                json!({"metadata": {"ownerReferences": [{"uid": "1", "name": "x"}]}}),
                json!({"metadata": {"ownerReferences": [{"uid": "1", "controller": true}]}}),
                json!({"metadata": {"ownerReferences": [{"uid": "1", "name": "x", "controller": true}]}}),
            ),
            (
                json!({"metadata": {"ownerReferences": [{"uid": "1", "name": "x"}]}}),
                json!({"metadata": {"ownerReferences": [{"uid": "2", "name": "y"}]}}),
                json!({"metadata": {"ownerReferences": [{"uid": "2", "name": "y"}, {"uid": "1", "name": "x"}]}}),
            ),
            (
                json!({"metadata": {"ownerReferences": [{"uid": "1"}, {"uid": "2"}]}}),
                json!({"metadata": {"ownerReferences": [{"uid": "1", "$patch": "delete"}]}}),
                json!({"metadata": {"ownerReferences": [{"uid": "2"}]}}),
            ),
        ];
        for (original, patch, want) in cases {
            assert_eq!(apply(original, patch.clone()), want, "patch {patch}");
        }
    }

    #[test]
    fn atomic_lists() {
        let cases = [
            (
                containers(json!([{"name": "a", "args": ["x"]}])),
                containers(json!([{"name": "a", "args": ["y", "z"]}])),
                containers(json!([{"name": "a", "args": ["y", "z"]}])),
            ),
            (
                json!({"spec": {"tolerations": [{"key": "a"}, {"key": "b"}]}}),
                json!({"spec": {"tolerations": [{"key": "c"}]}}),
                json!({"spec": {"tolerations": [{"key": "c"}]}}),
            ),
            // No schema for the field: atomic.
            (
                json!({"spec": {"unknown": [1, 2]}}),
                json!({"spec": {"unknown": [3]}}),
                json!({"spec": {"unknown": [3]}}),
            ),
            (
                json!({"other": [{"name": "a"}]}),
                json!({"other": [{"name": "b"}]}),
                json!({"other": [{"name": "b"}]}),
            ),
            // Directives inside atomic replacements are dropped, not stored.
            (
                json!({}),
                json!({"spec": {"tolerations": [{"key": "a", "$retainKeys": ["key"]}, {"$patch": "replace"}]}}),
                json!({"spec": {"tolerations": [{"key": "a"}]}}),
            ),
        ];
        for (original, patch, want) in cases {
            assert_eq!(apply(original, patch.clone()), want, "patch {patch}");
        }
    }

    #[test]
    fn set_element_order() {
        let cases = [
            (
                containers(json!([{"name": "a"}, {"name": "b"}, {"name": "c"}])),
                json!({"spec": {
                    "$setElementOrder/containers": [{"name": "c"}, {"name": "a"}, {"name": "b"}],
                    "containers": [{"name": "a", "image": "a2"}],
                }}),
                containers(json!([{"name": "c"}, {"name": "a", "image": "a2"}, {"name": "b"}])),
            ),
            // Kubernetes test: the order list names an item that exists nowhere.
            (
                containers(json!([{"name": "1"}, {"name": "3"}])),
                json!({"spec": {
                    "$setElementOrder/containers": [{"name": "3"}, {"name": "2"}, {"name": "1"}],
                    "containers": [{"name": "3", "image": "3"}, {"name": "1", "image": "1"}],
                }}),
                containers(json!([{"name": "3", "image": "3"}, {"name": "1", "image": "1"}])),
            ),
            // Order alone, on scalars.
            (
                json!({"metadata": {"finalizers": ["x", "y", "z"]}}),
                json!({"metadata": {"$setElementOrder/finalizers": ["z", "y", "x"]}}),
                json!({"metadata": {"finalizers": ["z", "y", "x"]}}),
            ),
            // New items are placed where the order says.
            (
                json!({"metadata": {"finalizers": ["a", "c"]}}),
                json!({"metadata": {"$setElementOrder/finalizers": ["a", "b", "c"], "finalizers": ["b"]}}),
                json!({"metadata": {"finalizers": ["a", "b", "c"]}}),
            ),
            // Into an absent list.
            (
                json!({}),
                json!({"spec": {"$setElementOrder/containers": [{"name": "b"}, {"name": "a"}], "containers": [{"name": "b"}, {"name": "a"}]}}),
                containers(json!([{"name": "b"}, {"name": "a"}])),
            ),
            // Nothing to order.
            (
                json!({"spec": {}}),
                json!({"spec": {"$setElementOrder/containers": []}}),
                json!({"spec": {}}),
            ),
        ];
        for (original, patch, want) in cases {
            assert_eq!(apply(original, patch.clone()), want, "patch {patch}");
        }
    }

    #[test]
    fn delete_from_primitive_list() {
        let cases = [
            (
                json!({"metadata": {"finalizers": ["x", "y", "z"]}}),
                json!({"metadata": {"$deleteFromPrimitiveList/finalizers": ["y"]}}),
                json!({"metadata": {"finalizers": ["x", "z"]}}),
            ),
            // What kubectl apply sends after removing an item (Kubernetes test "delete items in lists of scalars").
            (
                json!({"metadata": {"finalizers": ["1", "2", "3"]}}),
                json!({"metadata": {"$setElementOrder/finalizers": ["1", "2"], "$deleteFromPrimitiveList/finalizers": ["3"]}}),
                json!({"metadata": {"finalizers": ["1", "2"]}}),
            ),
            // Delete one, add another.
            (
                json!({"metadata": {"finalizers": ["a", "b"]}}),
                json!({"metadata": {"$deleteFromPrimitiveList/finalizers": ["a"], "finalizers": ["c"]}}),
                json!({"metadata": {"finalizers": ["c", "b"]}}),
            ),
            // Absent list: nothing to do, and nothing leaks.
            (
                json!({"metadata": {}}),
                json!({"metadata": {"$deleteFromPrimitiveList/finalizers": ["a"]}}),
                json!({"metadata": {}}),
            ),
        ];
        for (original, patch, want) in cases {
            assert_eq!(apply(original, patch.clone()), want, "patch {patch}");
        }
    }

    #[test]
    fn retain_keys() {
        let cases = [
            (
                json!({"spec": {"strategy": {"type": "RollingUpdate", "rollingUpdate": {"maxSurge": 1}}}}),
                json!({"spec": {"strategy": {"$retainKeys": ["type"], "type": "Recreate"}}}),
                json!({"spec": {"strategy": {"type": "Recreate"}}}),
            ),
            (
                json!({"spec": {"strategy": {"type": "Recreate"}}}),
                json!({"spec": {"strategy": {"$retainKeys": ["type", "rollingUpdate"], "type": "RollingUpdate", "rollingUpdate": {"maxSurge": 2}}}}),
                json!({"spec": {"strategy": {"type": "RollingUpdate", "rollingUpdate": {"maxSurge": 2}}}}),
            ),
            // Without the directive retainKeys fields merge normally.
            (
                json!({"spec": {"strategy": {"type": "RollingUpdate", "rollingUpdate": {"maxSurge": 1}}}}),
                json!({"spec": {"strategy": {"rollingUpdate": {"maxSurge": null}}}}),
                json!({"spec": {"strategy": {"type": "RollingUpdate", "rollingUpdate": {}}}}),
            ),
            // On items of a merge list ("merge,retainKeys").
            (
                json!({"spec": {"volumes": [{"name": "v", "emptyDir": {}}]}}),
                json!({"spec": {"volumes": [{"name": "v", "$retainKeys": ["name", "configMap"], "configMap": {"name": "c"}}]}}),
                json!({"spec": {"volumes": [{"name": "v", "configMap": {"name": "c"}}]}}),
            ),
        ];
        for (original, patch, want) in cases {
            assert_eq!(apply(original, patch.clone()), want, "patch {patch}");
        }
    }

    #[test]
    fn directives_never_leak() {
        let got = apply(
            json!({"spec": {"containers": [{"name": "a"}]}}),
            json!({"spec": {"containers": [{
                "name": "c",
                "env": [{"name": "x", "$patch": "delete"}, {"name": "y", "value": null, "extra": "1"}],
                "resources": {"$retainKeys": ["limits"], "limits": {"$patch": "replace", "cpu": "1"}},
                "$setElementOrder/env": [{"name": "y"}],
            }]}}),
        );
        assert_eq!(
            got,
            json!({"spec": {"containers": [
                {"name": "c", "env": [{"name": "y", "extra": "1"}], "resources": {"limits": {"cpu": "1"}}},
                {"name": "a"}
            ]}})
        );
        fn has_directive(v: &Value) -> bool {
            match v {
                Value::Object(m) => m.iter().any(|(k, v)| k.starts_with('$') || has_directive(v)),
                Value::Array(a) => a.iter().any(has_directive),
                _ => false,
            }
        }
        assert!(!has_directive(&got));
    }

    #[test]
    fn errors() {
        let cases = [
            (
                containers(json!([{"name": "a"}])),
                containers(json!([{"image": "x"}])),
                "invalid strategic merge patch: map: {\"image\":\"x\"} does not contain declared merge key: name",
            ),
            (
                containers(json!([{"name": "a"}])),
                containers(json!([{"$patch": "delete"}])),
                "invalid strategic merge patch: map: {\"$patch\":\"delete\"} does not contain declared merge key: name",
            ),
            (
                json!({}),
                json!({"$patch": "explode"}),
                "invalid strategic merge patch: unknown patch type: \"explode\" in map",
            ),
            (
                containers(json!([{"name": "a"}])),
                containers(json!([{"$patch": "merge"}])),
                "invalid strategic merge patch: merging lists cannot yet be specified in the patch",
            ),
            (
                json!({"metadata": {"finalizers": ["a"]}}),
                json!({"metadata": {"finalizers": [["b"]]}}),
                "invalid strategic merge patch: lists of lists are not supported",
            ),
            (
                json!({"metadata": {"finalizers": ["a"]}}),
                json!({"metadata": {"finalizers": [{"b": 1}]}}),
                "invalid strategic merge patch: list element types are not identical",
            ),
            (
                containers(json!([{"name": "a"}, {"name": "b"}])),
                json!({"spec": {"$setElementOrder/containers": [{"name": "a"}, {"name": "b"}], "containers": [{"name": "b"}, {"name": "a"}]}}),
                "invalid strategic merge patch: the order of the items of \"containers\" in the patch does not match its $setElementOrder list",
            ),
            (
                json!({"spec": {"strategy": {"type": "Recreate"}}}),
                json!({"spec": {"strategy": {"$retainKeys": ["type"], "rollingUpdate": {}}}}),
                "invalid strategic merge patch: invalid patch format of retainKeys: the patch sets \"rollingUpdate\" but $retainKeys does not list it",
            ),
            (
                json!({}),
                json!({"$retainKeys": "type"}),
                "invalid strategic merge patch: invalid patch format of retainKeys: $retainKeys must be a list of field names",
            ),
            (
                json!({}),
                json!({"$setElementOrder/x": {}}),
                "invalid strategic merge patch: invalid patch format of setElementOrder list: $setElementOrder/x must be a list",
            ),
            (
                json!({}),
                json!({"$deleteFromPrimitiveList/x": "a"}),
                "invalid strategic merge patch: $deleteFromPrimitiveList/x: the value must be a list",
            ),
            (
                json!({}),
                json!([1]),
                "invalid strategic merge patch: the patch must be a JSON object",
            ),
        ];
        for (original, patch, want) in cases {
            let err = strategic_merge_patch(&original, &patch, &schema()).expect_err("must fail");
            assert_eq!(err.to_string(), want, "patch {patch}");
            assert_eq!(err.to_status().code, 400);
        }
    }

    #[test]
    fn merge_strategy_without_key_on_objects_is_refused() {
        let s = object(vec![("items", list(object(vec![]), Some("merge"), None))]);
        let err = strategic_merge_patch(&json!({"items": [{"a": 1}]}), &json!({"items": [{"a": 2}]}), &s)
            .expect_err("needs a key");
        assert_eq!(
            err.to_string(),
            "invalid strategic merge patch: cannot merge a list of objects without a merge key (x-kubernetes-patch-merge-key)"
        );
    }

    /// The built-in ConfigMap schema carries the ObjectMeta list annotations this module relies on.
    #[test]
    fn builtin_config_map_schema() {
        let Some(cm) = crate::schema::builtin_schema("", "ConfigMap") else {
            panic!("no built-in ConfigMap schema");
        };
        let original = json!({
            "metadata": {"name": "c", "finalizers": ["a"], "ownerReferences": [{"uid": "1", "name": "x"}]},
            "data": {"k": "v"},
        });
        let patch = json!({
            "metadata": {"finalizers": ["a", "b"], "ownerReferences": [{"uid": "1", "controller": true}]},
            "data": {"k": null, "n": "m"},
        });
        let got = strategic_merge_patch(&original, &patch, &cm).unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(
            got,
            json!({
                "metadata": {
                    "name": "c",
                    "finalizers": ["a", "b"],
                    "ownerReferences": [{"uid": "1", "name": "x", "controller": true}],
                },
                "data": {"n": "m"},
            })
        );
    }

    #[test]
    fn behaves_like_merge_patch_without_list_strategies() {
        let original = json!({"data": {"a": "1", "b": "2"}, "metadata": {"name": "cm", "labels": {"x": "y"}}});
        let patch = json!({"data": {"a": null, "c": "3"}, "metadata": {"labels": null}, "binaryData": {"k": "dg=="}});
        let mut by_merge = original.clone();
        super::super::merge_patch(&mut by_merge, &patch);
        let by_smp = strategic_merge_patch(&original, &patch, &Schema::default()).unwrap_or_default();
        assert_eq!(by_smp, by_merge);
    }
}
