//! Field sets: which fields of an object a manager owns, in the `FieldsV1` wire format.
//!
//! A set is a tree of path elements. A node can be a *member* (the field itself is owned) and
//! have *children* (fields below it are owned) at the same time; `FieldsV1` writes the first as
//! `".": {}` inside the node. Path elements are `f:<name>` (object field), `k:<json>` (item of an
//! associative list, by its key fields), `v:<json>` (item of a set list, by value) and `i:<n>`
//! (item by index). Keys and values are stored as canonical JSON (object keys sorted, compact),
//! so equal items compare equal and serialisation is deterministic.

use std::collections::{BTreeMap, BTreeSet};
use std::fmt::Write as _;

use serde_json::{Map, Value};

/// Why a `FieldsV1` document could not be read.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum FieldPathError {
    #[error("{path}: a FieldsV1 node must be a JSON object")]
    NotAnObject { path: String },
    #[error("{path}: invalid FieldsV1 key {key:?}: {reason}")]
    InvalidKey { path: String, key: String, reason: String },
}

/// One step of a path into an object.
///
/// The variant order is the sort order (fields, then keys, then values, then indexes), as in
/// structured-merge-diff, so `FieldsV1` output lists names before list items.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum PathElement {
    /// A named field of an object (`f:name`).
    Field(String),
    /// An item of an associative list: canonical JSON object of its key fields (`k:{"name":"a"}`).
    Key(String),
    /// An item of a set list: canonical JSON of the value (`v:"a"`).
    Value(String),
    /// An item by position (`i:0`).
    Index(u64),
}

impl PathElement {
    /// The path element of an associative-list item with these key fields.
    pub fn key(fields: &BTreeMap<String, Value>) -> Self {
        let obj: Map<String, Value> = fields.iter().map(|(k, v)| (k.clone(), canonical(v))).collect();
        Self::Key(Value::Object(obj).to_string())
    }

    /// The path element of a set-list item.
    pub fn value(v: &Value) -> Self {
        Self::Value(canonical(v).to_string())
    }

    /// The `FieldsV1` key of this element.
    pub fn to_fields_v1_key(&self) -> String {
        match self {
            Self::Field(name) => format!("f:{name}"),
            Self::Key(json) => format!("k:{json}"),
            Self::Value(json) => format!("v:{json}"),
            Self::Index(i) => format!("i:{i}"),
        }
    }

    /// Parse a `FieldsV1` key (anything but `"."`).
    fn from_fields_v1_key(key: &str) -> Result<Self, String> {
        let (prefix, rest) = key
            .split_once(':')
            .ok_or_else(|| "expected a prefix f:, k:, v: or i:".to_string())?;
        match prefix {
            "f" => Ok(Self::Field(rest.to_string())),
            "k" => match serde_json::from_str::<Value>(rest) {
                Ok(Value::Object(obj)) => Ok(Self::key(&obj.into_iter().collect())),
                Ok(_) => Err("a k: key must be a JSON object".into()),
                Err(e) => Err(e.to_string()),
            },
            "v" => serde_json::from_str::<Value>(rest)
                .map(|v| Self::value(&v))
                .map_err(|e| e.to_string()),
            "i" => rest.parse::<u64>().map(Self::Index).map_err(|e| e.to_string()),
            _ => Err("expected a prefix f:, k:, v: or i:".into()),
        }
    }

    /// Append this element to a path string the way the apiserver prints conflict paths:
    /// `.name`, `[k1="a",k2=1]`, `[="v"]`, `[3]`.
    fn write_path(&self, out: &mut String) {
        match self {
            Self::Field(name) => {
                out.push('.');
                out.push_str(name);
            }
            Self::Key(json) => {
                out.push('[');
                if let Ok(Value::Object(obj)) = serde_json::from_str::<Value>(json) {
                    let parts: Vec<String> = obj.iter().map(|(k, v)| format!("{k}={v}")).collect();
                    out.push_str(&parts.join(","));
                }
                out.push(']');
            }
            Self::Value(json) => {
                // Infallible: writing to a String cannot fail.
                let _ = write!(out, "[={json}]");
            }
            Self::Index(i) => {
                let _ = write!(out, "[{i}]");
            }
        }
    }
}

/// A path printed as in apiserver messages, e.g. `.spec.ports[name="http"].port`.
pub fn path_string(path: &[PathElement]) -> String {
    let mut out = String::new();
    for pe in path {
        pe.write_path(&mut out);
    }
    out
}

/// JSON with object keys sorted at every level: the canonical form of keys and set values.
fn canonical(v: &Value) -> Value {
    match v {
        Value::Object(obj) => {
            let sorted: BTreeMap<&String, Value> = obj.iter().map(|(k, v)| (k, canonical(v))).collect();
            Value::Object(sorted.into_iter().map(|(k, v)| (k.clone(), v)).collect())
        }
        Value::Array(items) => Value::Array(items.iter().map(canonical).collect()),
        other => other.clone(),
    }
}

/// A set of field paths (a tree; see the module docs).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct FieldSet {
    members: BTreeSet<PathElement>,
    children: BTreeMap<PathElement, FieldSet>,
}

impl FieldSet {
    pub fn new() -> Self {
        Self::default()
    }

    pub fn is_empty(&self) -> bool {
        self.members.is_empty() && self.children.is_empty()
    }

    /// Add `path` as a member. The empty path (the object itself) is never a member.
    pub fn insert(&mut self, path: &[PathElement]) {
        match path {
            [] => {}
            [last] => {
                self.members.insert(last.clone());
            }
            [first, rest @ ..] => self.children.entry(first.clone()).or_default().insert(rest),
        }
    }

    /// Whether `path` itself is a member.
    #[cfg(test)]
    pub fn contains(&self, path: &[PathElement]) -> bool {
        match path {
            [] => false,
            [last] => self.members.contains(last),
            [first, rest @ ..] => self.children.get(first).is_some_and(|c| c.contains(rest)),
        }
    }

    /// Whether `pe` is a member of this node (not looking below it).
    pub fn has_member(&self, pe: &PathElement) -> bool {
        self.members.contains(pe)
    }

    /// The set of paths below `pe`, if any.
    pub fn child(&self, pe: &PathElement) -> Option<&FieldSet> {
        self.children.get(pe)
    }

    /// Whether `pe` or anything below it is a member.
    pub fn owns_any_at(&self, pe: &PathElement) -> bool {
        self.members.contains(pe) || self.children.get(pe).is_some_and(|c| !c.is_empty())
    }

    pub fn union(&self, other: &FieldSet) -> FieldSet {
        let mut out = self.clone();
        out.members.extend(other.members.iter().cloned());
        for (pe, child) in &other.children {
            let merged = match out.children.get(pe) {
                Some(mine) => mine.union(child),
                None => child.clone(),
            };
            out.children.insert(pe.clone(), merged);
        }
        out
    }

    /// Paths in `self` that are not in `other` (path by path: a member of `other` does not
    /// remove the members below it from `self`).
    pub fn difference(&self, other: &FieldSet) -> FieldSet {
        let members = self.members.difference(&other.members).cloned().collect();
        let children = self
            .children
            .iter()
            .filter_map(|(pe, child)| {
                let rest = match other.children.get(pe) {
                    Some(o) => child.difference(o),
                    None => child.clone(),
                };
                (!rest.is_empty()).then(|| (pe.clone(), rest))
            })
            .collect();
        FieldSet { members, children }
    }

    pub fn intersection(&self, other: &FieldSet) -> FieldSet {
        let members = self.members.intersection(&other.members).cloned().collect();
        let children = self
            .children
            .iter()
            .filter_map(|(pe, child)| {
                let both = child.intersection(other.children.get(pe)?);
                (!both.is_empty()).then(|| (pe.clone(), both))
            })
            .collect();
        FieldSet { members, children }
    }

    /// Remove `path` and everything below it.
    pub fn remove_subtree(&mut self, path: &[PathElement]) {
        match path {
            [] => *self = FieldSet::new(),
            [last] => {
                self.members.remove(last);
                self.children.remove(last);
            }
            [first, rest @ ..] => {
                if let Some(child) = self.children.get_mut(first) {
                    child.remove_subtree(rest);
                    if child.is_empty() {
                        self.children.remove(first);
                    }
                }
            }
        }
    }

    /// Remove only the member `path`, keeping what is below it.
    pub fn remove_member(&mut self, path: &[PathElement]) {
        match path {
            [] => {}
            [last] => {
                self.members.remove(last);
            }
            [first, rest @ ..] => {
                if let Some(child) = self.children.get_mut(first) {
                    child.remove_member(rest);
                    if child.is_empty() {
                        self.children.remove(first);
                    }
                }
            }
        }
    }

    /// Only the paths at or below `path` (the member `path` itself included).
    pub fn restricted_to(&self, path: &[PathElement]) -> FieldSet {
        match path {
            [] => self.clone(),
            [first, rest @ ..] => {
                let mut out = FieldSet::new();
                if rest.is_empty() && self.members.contains(first) {
                    out.members.insert(first.clone());
                }
                if let Some(child) = self.children.get(first) {
                    let below = child.restricted_to(rest);
                    if !below.is_empty() {
                        out.children.insert(first.clone(), below);
                    }
                }
                out
            }
        }
    }

    /// Every member path, in sort order (a node before the paths below it).
    pub fn paths(&self) -> Vec<Vec<PathElement>> {
        let mut out = Vec::new();
        self.collect_paths(&mut Vec::new(), &mut out);
        out
    }

    fn collect_paths(&self, prefix: &mut Vec<PathElement>, out: &mut Vec<Vec<PathElement>>) {
        for pe in self.elements() {
            prefix.push(pe.clone());
            if self.members.contains(pe) {
                out.push(prefix.clone());
            }
            if let Some(child) = self.children.get(pe) {
                child.collect_paths(prefix, out);
            }
            prefix.pop();
        }
    }

    /// Members and children merged in sort order.
    fn elements(&self) -> BTreeSet<&PathElement> {
        self.members.iter().chain(self.children.keys()).collect()
    }

    /// The `FieldsV1` JSON of this set.
    pub fn to_fields_v1(&self) -> Value {
        let mut obj = Map::new();
        for pe in self.elements() {
            let node = match self.children.get(pe).filter(|c| !c.is_empty()) {
                Some(child) => {
                    let mut inner = Map::new();
                    if self.members.contains(pe) {
                        inner.insert(".".into(), Value::Object(Map::new()));
                    }
                    if let Value::Object(rest) = child.to_fields_v1() {
                        inner.extend(rest);
                    }
                    Value::Object(inner)
                }
                None => Value::Object(Map::new()),
            };
            obj.insert(pe.to_fields_v1_key(), node);
        }
        Value::Object(obj)
    }

    /// Read a `FieldsV1` document.
    pub fn from_fields_v1(v: &Value) -> Result<FieldSet, FieldPathError> {
        Self::read_node(v, &mut Vec::new())
    }

    fn read_node(v: &Value, path: &mut Vec<PathElement>) -> Result<FieldSet, FieldPathError> {
        let obj = v.as_object().ok_or_else(|| FieldPathError::NotAnObject {
            path: path_string(path),
        })?;
        let mut set = FieldSet::new();
        for (key, inner) in obj {
            if key == "." {
                // Handled by the parent, which looks for "." in its child.
                continue;
            }
            let pe = PathElement::from_fields_v1_key(key).map_err(|reason| FieldPathError::InvalidKey {
                path: path_string(path),
                key: key.clone(),
                reason,
            })?;
            let inner_obj = inner.as_object().ok_or_else(|| FieldPathError::NotAnObject {
                path: path_string(path),
            })?;
            if inner_obj.is_empty() || inner_obj.contains_key(".") {
                set.members.insert(pe.clone());
            }
            path.push(pe.clone());
            let child = Self::read_node(inner, path)?;
            path.pop();
            if !child.is_empty() {
                set.children.insert(pe, child);
            }
        }
        Ok(set)
    }
}

/// `f:` path elements from field names, e.g. `fields(&["spec", "replicas"])`.
#[cfg(test)]
pub fn fields(names: &[&str]) -> Vec<PathElement> {
    names.iter().map(|n| PathElement::Field((*n).to_string())).collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use pretty_assertions::assert_eq;
    use serde_json::json;

    fn set(v: Value) -> FieldSet {
        FieldSet::from_fields_v1(&v).unwrap()
    }

    #[test]
    fn fields_v1_round_trips_in_sorted_order() {
        let cases = [
            json!({"f:metadata":{"f:labels":{"f:app":{}}}}),
            json!({"f:spec":{"f:items":{"k:{\"name\":\"a\"}":{".":{},"f:name":{},"f:x":{}}}}}),
            json!({"f:metadata":{"f:finalizers":{"v:\"a\"":{},"v:\"b\"":{}}}}),
            json!({"f:a":{".":{},"f:b":{}},"f:list":{"i:0":{}}}),
        ];
        for case in cases {
            assert_eq!(set(case.clone()).to_fields_v1(), case);
            assert_eq!(set(case.clone()).to_fields_v1().to_string(), case.to_string());
        }
        // Input order does not matter; output is sorted, "." first, fields before keys.
        let unsorted = json!({"f:z":{},"f:items":{"k:{\"b\":1,\"a\":2}":{"f:y":{},".":{}}},"f:a":{}});
        assert_eq!(
            set(unsorted).to_fields_v1().to_string(),
            r#"{"f:a":{},"f:items":{"k:{\"a\":2,\"b\":1}":{".":{},"f:y":{}}},"f:z":{}}"#
        );
    }

    #[test]
    fn fields_v1_rejects_malformed_documents() {
        let cases = [
            (json!([]), "FieldsV1 node must be a JSON object"),
            (json!({"x:a":{}}), "invalid FieldsV1 key \"x:a\""),
            (json!({"f:a":1}), "FieldsV1 node must be a JSON object"),
            (json!({"k:[1]":{}}), "a k: key must be a JSON object"),
            (json!({"i:x":{}}), "invalid FieldsV1 key \"i:x\""),
        ];
        for (doc, want) in cases {
            let err = FieldSet::from_fields_v1(&doc).unwrap_err().to_string();
            assert!(err.contains(want), "{doc}: {err}");
        }
    }

    #[test]
    fn set_algebra() {
        let a = set(json!({"f:spec":{".":{},"f:x":{},"f:y":{}}}));
        let b = set(json!({"f:spec":{"f:y":{},"f:z":{}},"f:status":{}}));
        assert_eq!(
            a.union(&b).to_fields_v1(),
            json!({"f:spec":{".":{},"f:x":{},"f:y":{},"f:z":{}},"f:status":{}})
        );
        assert_eq!(a.difference(&b).to_fields_v1(), json!({"f:spec":{".":{},"f:x":{}}}));
        assert_eq!(
            b.difference(&a).to_fields_v1(),
            json!({"f:spec":{"f:z":{}},"f:status":{}})
        );
        assert_eq!(a.intersection(&b).to_fields_v1(), json!({"f:spec":{"f:y":{}}}));
        assert!(a.difference(&a).is_empty());
        assert_eq!(a.difference(&a).to_fields_v1(), json!({}));
    }

    #[test]
    fn paths_and_path_strings() {
        let s = set(json!({
            "f:metadata":{"f:labels":{"f:app":{}}},
            "f:spec":{"f:ports":{"k:{\"port\":80,\"protocol\":\"TCP\"}":{".":{},"f:name":{}}},
                      "f:tags":{"v:\"a\"":{}},"f:list":{"i:2":{}}}
        }));
        let printed: Vec<String> = s.paths().iter().map(|p| path_string(p)).collect();
        assert_eq!(
            printed,
            vec![
                ".metadata.labels.app",
                ".spec.list[2]",
                ".spec.ports[port=80,protocol=\"TCP\"]",
                ".spec.ports[port=80,protocol=\"TCP\"].name",
                ".spec.tags[=\"a\"]",
            ]
        );
        assert!(s.contains(&fields(&["metadata", "labels", "app"])));
        assert!(!s.contains(&fields(&["metadata", "labels"])));
    }

    #[test]
    fn remove_and_restrict() {
        let mut s = set(json!({"f:spec":{".":{},"f:x":{}},"f:status":{"f:phase":{}}}));
        assert_eq!(
            s.restricted_to(&fields(&["status"])).to_fields_v1(),
            json!({"f:status":{"f:phase":{}}})
        );
        s.remove_member(&fields(&["spec"]));
        assert_eq!(s.to_fields_v1(), json!({"f:spec":{"f:x":{}},"f:status":{"f:phase":{}}}));
        s.remove_subtree(&fields(&["status"]));
        assert_eq!(s.to_fields_v1(), json!({"f:spec":{"f:x":{}}}));
        s.remove_member(&fields(&["spec", "x"]));
        assert!(s.is_empty());
    }
}
