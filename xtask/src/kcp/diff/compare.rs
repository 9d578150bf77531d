//! One step's verdict from the two normalised answers: `same`, `different` (with the first
//! difference), or answered by one side only. Pure, table-tested.

use serde::{Deserialize, Serialize};
use serde_json::Value;

use super::script::CompareMode;

/// A server's normalised answer to one step.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Answer {
    pub code: u16,
    pub body: Value,
}

/// An answer, or why there was none (connection refused, timeout).
pub type Outcome = Result<Answer, String>;

#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Verdict {
    Same,
    Different(String),
    OnlyKcp(String),
    OnlyEmbedded(String),
}

impl Verdict {
    pub fn label(&self) -> &'static str {
        match self {
            Self::Same => "same",
            Self::Different(_) => "different",
            Self::OnlyKcp(_) => "only kcp answered",
            Self::OnlyEmbedded(_) => "only embedded answered",
        }
    }

    pub fn detail(&self) -> &str {
        match self {
            Self::Same => "",
            Self::Different(d) | Self::OnlyKcp(d) | Self::OnlyEmbedded(d) => d,
        }
    }
}

pub fn compare(mode: CompareMode, ignore: &[String], kcp: &Outcome, embedded: &Outcome) -> Verdict {
    let (k, e) = match (kcp, embedded) {
        (Ok(k), Ok(e)) => (k, e),
        (Ok(_), Err(why)) => return Verdict::OnlyKcp(format!("embedded: {why}")),
        (Err(why), Ok(_)) => return Verdict::OnlyEmbedded(format!("kcp: {why}")),
        (Err(a), Err(b)) => return Verdict::Different(format!("neither answered: kcp: {a}; embedded: {b}")),
    };
    if k.code != e.code {
        return Verdict::Different(format!("code {} vs {}{}", k.code, e.code, reasons(&k.body, &e.body)));
    }
    let (kb, eb) = (stripped(&k.body, ignore), stripped(&e.body, ignore));
    let difference = match mode {
        CompareMode::Full | CompareMode::ContentType => first_difference(&kb, &eb, ""),
        CompareMode::Code => first_difference(&status_reason(&kb), &status_reason(&eb), ""),
        CompareMode::Names => names_difference(&kb, &eb),
    };
    match difference {
        None => Verdict::Same,
        Some(d) => Verdict::Different(d),
    }
}

/// kcp refused and the embedded kcp accepted: the one kind of difference that must not exist.
pub fn looser(kcp: &Outcome, embedded: &Outcome) -> bool {
    matches!((kcp, embedded), (Ok(k), Ok(e)) if k.code >= 400 && e.code < 400)
}

fn reasons(k: &Value, e: &Value) -> String {
    let reason = |b: &Value| b.get("reason").and_then(Value::as_str).unwrap_or("-").to_string();
    if k.get("kind") == Some(&Value::from("Status")) || e.get("kind") == Some(&Value::from("Status")) {
        format!(" ({} vs {})", reason(k), reason(e))
    } else {
        String::new()
    }
}

fn status_reason(body: &Value) -> Value {
    match body.get("kind").and_then(Value::as_str) {
        Some("Status") => body.get("reason").cloned().unwrap_or(Value::Null),
        _ => Value::Null,
    }
}

/// The names of a list's items, sorted (a Status or other body has none).
fn item_names(body: &Value) -> std::collections::BTreeSet<String> {
    let items = body
        .get("items")
        .and_then(Value::as_array)
        .map(Vec::as_slice)
        .unwrap_or_default();
    items
        .iter()
        .filter_map(|i| i.pointer("/metadata/name").and_then(Value::as_str))
        .map(str::to_string)
        .collect()
}

/// Which names only one of two lists has, or for a Status its reason.
fn names_difference(k: &Value, e: &Value) -> Option<String> {
    if let Some(d) = first_difference(&status_reason(k), &status_reason(e), "") {
        return Some(d);
    }
    let (kn, en) = (item_names(k), item_names(e));
    let only = |a: &std::collections::BTreeSet<String>, b: &std::collections::BTreeSet<String>| {
        a.difference(b).cloned().collect::<Vec<_>>().join(", ")
    };
    let (only_kcp, only_embedded) = (only(&kn, &en), only(&en, &kn));
    match (only_kcp.is_empty(), only_embedded.is_empty()) {
        (true, true) => None,
        (false, true) => Some(format!("only kcp has {only_kcp}")),
        (true, false) => Some(format!("only embedded has {only_embedded}")),
        (false, false) => Some(format!("only kcp has {only_kcp}; only embedded has {only_embedded}")),
    }
}

fn stripped(body: &Value, ignore: &[String]) -> Value {
    let mut body = body.clone();
    untimed_managed_fields(&mut body);
    unordered_rules(&mut body);
    for pointer in ignore {
        let Some((parent, last)) = pointer.rsplit_once('/') else {
            continue;
        };
        // The last token unescaped as JSON pointers escape `/` and `~` in keys.
        let last = &last.replace("~1", "/").replace("~0", "~");
        match body.pointer_mut(parent) {
            Some(Value::Object(map)) => {
                map.remove(last);
            }
            Some(Value::Array(items)) => {
                if let Ok(i) = last.parse::<usize>()
                    && i < items.len()
                {
                    items.remove(i);
                }
            }
            _ => {}
        }
    }
    body
}

/// Where two values first differ, as `pointer: kcp … vs embedded …` (short).
pub fn first_difference(k: &Value, e: &Value, at: &str) -> Option<String> {
    match (k, e) {
        (Value::Object(a), Value::Object(b)) => {
            let keys: std::collections::BTreeSet<&String> = a.keys().chain(b.keys()).collect();
            keys.into_iter().find_map(|key| match (a.get(key), b.get(key)) {
                (Some(x), Some(y)) => first_difference(x, y, &format!("{at}/{key}")),
                (Some(x), None) => Some(format!("{at}/{key}: only kcp has {}", short(x))),
                (None, Some(y)) => Some(format!("{at}/{key}: only embedded has {}", short(y))),
                (None, None) => None,
            })
        }
        (Value::Array(a), Value::Array(b)) if a.len() == b.len() => a
            .iter()
            .zip(b)
            .enumerate()
            .find_map(|(i, (x, y))| first_difference(x, y, &format!("{at}/{i}"))),
        (Value::Array(a), Value::Array(b)) => Some(format!("{at}: {} vs {} items", a.len(), b.len())),
        _ if k == e => None,
        _ => Some(format!(
            "{}: {} vs {}",
            if at.is_empty() { "/" } else { at },
            short(k),
            short(e)
        )),
    }
}

fn short(v: &Value) -> String {
    let text = v.to_string();
    match text.char_indices().nth(80) {
        Some((i, _)) => format!("{}…", &text[..i]),
        None => text,
    }
}

/// kube orders `managedFields` entries by operation, then the second of their time, then manager
/// and subresource. With times normalised, their order says only in which second each server
/// happened to write, which depends on its speed: entries are compared in one fixed order.
fn untimed_managed_fields(v: &mut Value) {
    match v {
        Value::Object(map) => {
            for (k, child) in map.iter_mut() {
                if let (true, Value::Array(entries)) = (k == "managedFields", &mut *child) {
                    entries.sort_by_cached_key(super::normalize::canonical);
                } else {
                    untimed_managed_fields(child);
                }
            }
        }
        Value::Array(items) => items.iter_mut().for_each(untimed_managed_fields),
        _ => {}
    }
}

/// kube's rule resolver walks the ClusterRoleBindings in its informer's order, a Go map's: kcp
/// answers the same SelfSubjectRulesReview with its rules in another order from one run to the next
/// (the v0.32.3 recordings have both). Its rules are compared as sets.
fn unordered_rules(v: &mut Value) {
    if v.get("kind").and_then(Value::as_str) != Some("SelfSubjectRulesReview") {
        return;
    }
    if let Some(Value::Object(status)) = v.get_mut("status") {
        for key in ["resourceRules", "nonResourceRules"] {
            if let Some(Value::Array(rules)) = status.get_mut(key) {
                rules.sort_by_cached_key(super::normalize::canonical);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn a(code: u16, body: Value) -> Outcome {
        Ok(Answer { code, body })
    }

    #[test]
    fn managed_fields_are_compared_whatever_second_each_entry_was_written_in() {
        let entry = |manager: &str| json!({"manager": manager, "operation": "Update", "time": "<time>"});
        let kcp = a(
            200,
            json!({"metadata": {"managedFields": [entry("unknown"), entry("kcp")]}}),
        );
        let embedded = a(
            200,
            json!({"metadata": {"managedFields": [entry("kcp"), entry("unknown")]}}),
        );
        assert_eq!(compare(CompareMode::Full, &[], &kcp, &embedded), Verdict::Same);
        let missing = a(200, json!({"metadata": {"managedFields": [entry("kcp")]}}));
        assert!(matches!(
            compare(CompareMode::Full, &[], &kcp, &missing),
            Verdict::Different(_)
        ));
    }

    #[test]
    fn a_rules_review_is_compared_whatever_order_its_rules_come_in() {
        let rule = |url: &str| json!({"verbs": ["get"], "nonResourceURLs": [url]});
        let review = |kind: &str, rules: Vec<Value>| {
            a(
                201,
                json!({"kind": kind, "status": {"resourceRules": [], "nonResourceRules": rules}}),
            )
        };
        let kcp = review("SelfSubjectRulesReview", vec![rule("/healthz"), rule("/api")]);
        let embedded = review("SelfSubjectRulesReview", vec![rule("/api"), rule("/healthz")]);
        assert_eq!(compare(CompareMode::Full, &[], &kcp, &embedded), Verdict::Same);
        let fewer = review("SelfSubjectRulesReview", vec![rule("/api")]);
        assert!(matches!(
            compare(CompareMode::Full, &[], &kcp, &fewer),
            Verdict::Different(_)
        ));
        let other = review("SomethingElse", vec![rule("/api"), rule("/healthz")]);
        assert!(matches!(
            compare(
                CompareMode::Full,
                &[],
                &review("SomethingElse", vec![rule("/healthz"), rule("/api")]),
                &other
            ),
            Verdict::Different(_)
        ));
    }

    #[test]
    fn verdicts() {
        let status = |reason: &str, message: &str| json!({"kind": "Status", "reason": reason, "message": message});
        let cases: Vec<(CompareMode, Vec<String>, Outcome, Outcome, Verdict)> = vec![
            (
                CompareMode::Full,
                vec![],
                a(200, json!({"a": 1})),
                a(200, json!({"a": 1})),
                Verdict::Same,
            ),
            (
                CompareMode::Full,
                vec![],
                a(200, json!({"a": 1})),
                a(200, json!({"a": 2})),
                Verdict::Different("/a: 1 vs 2".into()),
            ),
            (
                CompareMode::Full,
                vec![],
                a(403, status("Forbidden", "x")),
                a(404, status("NotFound", "y")),
                Verdict::Different("code 403 vs 404 (Forbidden vs NotFound)".into()),
            ),
            (
                CompareMode::Full,
                vec![],
                a(200, json!({"a": {"b": 1}})),
                a(200, json!({"a": {}})),
                Verdict::Different("/a/b: only kcp has 1".into()),
            ),
            (
                CompareMode::Full,
                vec!["/a/b".into(), "/c/0".into()],
                a(200, json!({"a": {"b": 1}, "c": [1, 2]})),
                a(200, json!({"a": {}, "c": [3, 2]})),
                Verdict::Same,
            ),
            (
                CompareMode::Full,
                vec!["/a/x.io~1b".into()],
                a(200, json!({"a": {"x.io/b": 1, "c": 2}})),
                a(200, json!({"a": {"x.io/b": 3, "c": 2}})),
                Verdict::Same,
            ),
            (
                CompareMode::Code,
                vec![],
                a(200, json!({"resources": [1, 2]})),
                a(200, json!({"resources": [1]})),
                Verdict::Same,
            ),
            (
                CompareMode::Code,
                vec![],
                a(403, status("Forbidden", "x")),
                a(403, status("Forbidden", "other words")),
                Verdict::Same,
            ),
            (
                CompareMode::Full,
                vec![],
                a(403, status("Forbidden", "x")),
                a(403, status("Forbidden", "y")),
                Verdict::Different("/message: \"x\" vs \"y\"".into()),
            ),
            (
                CompareMode::Full,
                vec![],
                a(200, json!([1])),
                a(200, json!([1, 2])),
                Verdict::Different(": 1 vs 2 items".into()),
            ),
            (
                CompareMode::Names,
                vec![],
                a(
                    200,
                    json!({"items": [{"metadata": {"name": "b", "uid": 1}}, {"metadata": {"name": "a"}}]}),
                ),
                a(
                    200,
                    json!({"items": [{"metadata": {"name": "a"}}, {"metadata": {"name": "b", "uid": 2}}]}),
                ),
                Verdict::Same,
            ),
            (
                CompareMode::Names,
                vec![],
                a(
                    200,
                    json!({"items": [{"metadata": {"name": "a"}}, {"metadata": {"name": "b"}}]}),
                ),
                a(
                    200,
                    json!({"items": [{"metadata": {"name": "a"}}, {"metadata": {"name": "c"}}]}),
                ),
                Verdict::Different("only kcp has b; only embedded has c".into()),
            ),
            (
                CompareMode::Names,
                vec![],
                a(
                    200,
                    json!({"items": [{"metadata": {"name": "a"}}, {"metadata": {"name": "x"}}, {"metadata": {"name": "y"}}]}),
                ),
                a(200, json!({"items": [{"metadata": {"name": "a"}}]})),
                Verdict::Different("only kcp has x, y".into()),
            ),
            (
                CompareMode::Names,
                vec![],
                a(403, status("Forbidden", "x")),
                a(403, status("Forbidden", "y")),
                Verdict::Same,
            ),
            (
                CompareMode::Full,
                vec![],
                a(200, json!(1)),
                Err("connection refused".into()),
                Verdict::OnlyKcp("embedded: connection refused".into()),
            ),
            (
                CompareMode::Full,
                vec![],
                Err("timeout".into()),
                a(200, json!(1)),
                Verdict::OnlyEmbedded("kcp: timeout".into()),
            ),
        ];
        for (mode, ignore, k, e, want) in cases {
            assert_eq!(compare(mode, &ignore, &k, &e), want, "{k:?} {e:?}");
        }
    }

    #[test]
    fn looser_is_a_kcp_refusal_the_embedded_kcp_accepted() {
        assert!(looser(&a(403, json!({})), &a(201, json!({}))));
        assert!(!looser(&a(201, json!({})), &a(403, json!({}))));
        assert!(!looser(&a(404, json!({})), &a(403, json!({}))));
        assert!(!looser(&a(403, json!({})), &Err("x".into())));
    }
}
