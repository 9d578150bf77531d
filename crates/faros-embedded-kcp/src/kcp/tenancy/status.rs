//! Small IO-free edits of Workspace and LogicalCluster objects: phase with its label, kcp conditions.

use serde_json::{Value, json};

use crate::objects::meta;
use faros_core::kcp::LABEL_WORKSPACE_PHASE;

/// Sets `status.phase` and the `tenancy.kcp.io/phase` label that mirrors it.
pub fn set_phase(obj: &mut Value, phase: &str) {
    set_status_phase(obj, phase);
    if let Some(labels) = meta::labels_mut(obj) {
        labels.insert(LABEL_WORKSPACE_PHASE.into(), json!(phase));
    }
}

/// Sets `status.phase` alone: kcp's status write, before its metadata reconciler mirrors the
/// phase into the label.
pub fn set_status_phase(obj: &mut Value, phase: &str) {
    ensure_object(obj, "status");
    obj["status"]["phase"] = json!(phase);
}

fn ensure_object(obj: &mut Value, field: &str) {
    if !obj.get(field).is_some_and(Value::is_object) {
        obj[field] = json!({});
    }
}

/// A kcp condition to set.
pub struct Cond<'a> {
    pub type_: &'a str,
    pub status: bool,
    pub reason: &'a str,
    pub message: &'a str,
    /// Only used when `status` is false (kcp's `Error`, `Warning`, `Info`).
    pub severity: &'a str,
}

/// Sets a condition in `status.conditions`, keeping `lastTransitionTime` unless the status flips;
/// conditions stay sorted by type with `Ready` first, as kcp's condition helpers keep them.
pub fn set_condition(obj: &mut Value, cond: &Cond<'_>, now: &str) {
    ensure_object(obj, "status");
    let status = if cond.status { "True" } else { "False" };
    let mut list: Vec<Value> = obj["status"]
        .get("conditions")
        .and_then(Value::as_array)
        .cloned()
        .unwrap_or_default();
    let previous = list
        .iter()
        .position(|c| c.get("type").and_then(Value::as_str) == Some(cond.type_));
    let since = previous
        .and_then(|i| list.get(i))
        .filter(|c| c.get("status").and_then(Value::as_str) == Some(status))
        .and_then(|c| c.get("lastTransitionTime").cloned())
        .unwrap_or_else(|| json!(now));
    let mut c = json!({"type": cond.type_, "status": status});
    if !cond.status && !cond.severity.is_empty() {
        c["severity"] = json!(cond.severity);
    }
    c["lastTransitionTime"] = since;
    if !cond.reason.is_empty() {
        c["reason"] = json!(cond.reason);
    }
    if !cond.message.is_empty() {
        c["message"] = json!(cond.message);
    }
    match previous {
        Some(i) => list[i] = c,
        None => list.push(c),
    }
    list.sort_by_key(|c| {
        let t = c.get("type").and_then(Value::as_str).unwrap_or_default().to_string();
        (t != "Ready", t)
    });
    obj["status"]["conditions"] = Value::Array(list);
}

/// `status.initializers` as strings.
pub fn initializers(obj: &Value) -> Vec<String> {
    obj.pointer("/status/initializers")
        .and_then(Value::as_array)
        .map(|a| a.iter().filter_map(|v| v.as_str().map(String::from)).collect())
        .unwrap_or_default()
}

/// Go's `%v` of a string slice, as in kcp's condition messages.
pub fn go_list(items: &[String]) -> String {
    format!("[{}]", items.join(" "))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn phase_and_label_move_together() {
        let mut ws = json!({"metadata": {"name": "a"}, "spec": {}});
        set_phase(&mut ws, "Scheduling");
        assert_eq!(ws["status"]["phase"], "Scheduling");
        assert_eq!(ws["metadata"]["labels"]["tenancy.kcp.io/phase"], "Scheduling");
    }

    #[test]
    fn conditions_keep_transition_times_and_order() {
        let mut ws = json!({"metadata": {}});
        let scheduled = Cond {
            type_: "WorkspaceScheduled",
            status: true,
            reason: "",
            message: "",
            severity: "",
        };
        set_condition(&mut ws, &scheduled, "t1");
        let waiting = Cond {
            type_: "WorkspaceInitialized",
            status: false,
            reason: "InitializerExists",
            message: "Initializers still exist: [root:universal]",
            severity: "Info",
        };
        set_condition(&mut ws, &waiting, "t2");
        set_condition(&mut ws, &scheduled, "t3");
        assert_eq!(
            ws["status"]["conditions"],
            json!([
                {"type": "WorkspaceInitialized", "status": "False", "severity": "Info", "lastTransitionTime": "t2",
                 "reason": "InitializerExists", "message": "Initializers still exist: [root:universal]"},
                {"type": "WorkspaceScheduled", "status": "True", "lastTransitionTime": "t1"}
            ])
        );
        let done = Cond {
            type_: "WorkspaceInitialized",
            status: true,
            reason: "",
            message: "",
            severity: "Info",
        };
        set_condition(&mut ws, &done, "t4");
        assert_eq!(
            ws["status"]["conditions"][0],
            json!({"type": "WorkspaceInitialized", "status": "True", "lastTransitionTime": "t4"})
        );
        set_condition(
            &mut ws,
            &Cond {
                type_: "Ready",
                status: true,
                reason: "",
                message: "",
                severity: "",
            },
            "t5",
        );
        assert_eq!(ws["status"]["conditions"][0]["type"], "Ready");
    }
}
