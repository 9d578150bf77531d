//! The IO-free judgements of the chart checks ([`super::charts`]): which lines of a command's output
//! are warnings that fail a check, whether the controllers have acted on a release's workloads, and
//! what is left in a namespace after an uninstall.

use serde_json::Value;

/// The server warnings in `output` (kubectl prints `Warning: …`, helm logs them through client-go as
/// `W… warnings.go:…] …`): unknown fields, Pod Security violations, deprecations — each is a
/// finding, because helm and kubectl still succeed and the Pods are then refused or the field lost.
pub(crate) fn warnings(output: &str) -> Vec<String> {
    output
        .lines()
        .map(str::trim)
        .filter(|l| l.starts_with("Warning:") || l.contains("warnings.go:") || l.contains("unknown field"))
        .map(str::to_string)
        .collect()
}

/// Where the controllers are with a release's workloads.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) enum Progress {
    /// Every Deployment and StatefulSet of the current generation has created its Pods.
    Settled,
    /// These have not yet.
    Waiting(Vec<String>),
    /// A controller could not create a Pod: the events' messages.
    Refused(Vec<String>),
}

/// From `kubectl get deployments,statefulsets -o json` and `kubectl get events -o json` of the
/// release's namespaces. Pods never become ready (no kubelet), so "acted" means a Pod of the current
/// generation's template exists: a rollout goes no further than its first new Pod while the old ones
/// are not ready, and a StatefulSet makes its next Pod only once the one before is Ready.
pub(crate) fn progress(workloads: &Value, events: &Value) -> Progress {
    let refused: Vec<String> = items(events)
        .filter(|e| e["reason"] == "FailedCreate")
        .map(|e| {
            format!(
                "{} {}: {}",
                e["involvedObject"]["kind"].as_str().unwrap_or("?"),
                e["involvedObject"]["name"].as_str().unwrap_or("?"),
                e["message"].as_str().unwrap_or("").trim()
            )
        })
        .collect();
    if !refused.is_empty() {
        return Progress::Refused(refused);
    }
    let waiting: Vec<String> = items(workloads)
        .filter(|w| !acted(w))
        .map(|w| {
            format!(
                "{}/{}",
                w["kind"].as_str().unwrap_or("?"),
                w["metadata"]["name"].as_str().unwrap_or("?")
            )
        })
        .collect();
    if waiting.is_empty() {
        Progress::Settled
    } else {
        Progress::Waiting(waiting)
    }
}

fn items(list: &Value) -> impl Iterator<Item = &Value> {
    list["items"].as_array().into_iter().flatten()
}

fn acted(w: &Value) -> bool {
    let int = |v: &Value| v.as_i64().unwrap_or(0);
    let generation = int(&w["metadata"]["generation"]);
    let status = &w["status"];
    if int(&status["observedGeneration"]) < generation {
        return false;
    }
    let want = w["spec"]["replicas"].as_i64().unwrap_or(1);
    let created = match w["kind"].as_str() {
        Some("StatefulSet") => int(&status["replicas"]),
        _ => int(&status["updatedReplicas"]),
    };
    want == 0 || created >= 1
}

/// What may stay in a namespace after everything of a release is deleted: what Kubernetes puts in
/// every namespace, Events, and the faros-kcp state volume claims Helm leaves on purpose
/// (docs/install.md, "Uninstalling").
pub(crate) fn left_behind(names: &str) -> Vec<String> {
    names
        .lines()
        .map(str::trim)
        .filter(|n| !n.is_empty())
        .filter(|n| {
            !matches!(*n, "serviceaccount/default" | "configmap/kube-root-ca.crt")
                && !n.starts_with("event/")
                && !n.starts_with("event.events.k8s.io/")
                && !n.starts_with("persistentvolumeclaim/state-")
        })
        .map(str::to_string)
        .collect()
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn warnings_are_found_in_both_tools_words() {
        let cases = [
            (
                "Warning: would violate PodSecurity \"restricted:latest\": runAsNonRoot != true",
                1,
            ),
            (
                "W1207 16:00:00.123456   123 warnings.go:70] unknown field \"spec.template.spec.foo\"",
                1,
            ),
            ("Error: INSTALLATION FAILED: unknown field \"spec.x\"", 1),
            ("NAME: faros\nSTATUS: deployed\nRelease \"faros\" has been upgraded.", 0),
            ("deployment.apps/x serverside-applied", 0),
        ];
        for (output, want) in cases {
            assert_eq!(warnings(output).len(), want, "{output}");
        }
    }

    fn deployment(generation: i64, observed: i64, replicas: i64, updated: i64) -> Value {
        json!({"kind": "Deployment", "metadata": {"name": "d", "generation": generation},
               "spec": {"replicas": replicas},
               "status": {"observedGeneration": observed, "updatedReplicas": updated}})
    }

    #[test]
    fn progress_of_workloads() {
        let no_events = json!({"items": []});
        let statefulset = |replicas: i64| {
            json!({"kind": "StatefulSet", "metadata": {"name": "s", "generation": 1},
                   "spec": {"replicas": 1}, "status": {"observedGeneration": 1, "replicas": replicas}})
        };
        let refused = json!({"items": [{"reason": "FailedCreate",
            "involvedObject": {"kind": "ReplicaSet", "name": "d-1"},
            "message": "pods \"d-1-x\" is forbidden: violates PodSecurity"}]});
        let other_event = json!({"items": [{"reason": "ScalingReplicaSet", "involvedObject": {}, "message": "m"}]});
        let cases = [
            (
                "all created",
                json!({"items": [deployment(2, 2, 2, 2), statefulset(1)]}),
                &no_events,
                Progress::Settled,
            ),
            ("no workloads", json!({"items": []}), &no_events, Progress::Settled),
            (
                "old generation",
                json!({"items": [deployment(2, 1, 2, 2)]}),
                &no_events,
                Progress::Waiting(vec!["Deployment/d".into()]),
            ),
            (
                "a rollout's first new pod",
                json!({"items": [deployment(2, 2, 2, 1)]}),
                &other_event,
                Progress::Settled,
            ),
            (
                "no new pod yet",
                json!({"items": [deployment(2, 2, 2, 0)]}),
                &other_event,
                Progress::Waiting(vec!["Deployment/d".into()]),
            ),
            (
                "scaled to zero",
                json!({"items": [deployment(1, 1, 0, 0)]}),
                &no_events,
                Progress::Settled,
            ),
            (
                "statefulset without its pod",
                json!({"items": [statefulset(0)]}),
                &no_events,
                Progress::Waiting(vec!["StatefulSet/s".into()]),
            ),
            (
                "refused",
                json!({"items": [deployment(1, 1, 1, 0)]}),
                &refused,
                Progress::Refused(vec![
                    "ReplicaSet d-1: pods \"d-1-x\" is forbidden: violates PodSecurity".into(),
                ]),
            ),
        ];
        for (name, workloads, events, want) in cases {
            assert_eq!(progress(&workloads, events), want, "{name}");
        }
    }

    #[test]
    fn what_may_stay_after_an_uninstall() {
        let names = "serviceaccount/default\nconfigmap/kube-root-ca.crt\nevent/x.123\n\
                     event.events.k8s.io/x.123\npersistentvolumeclaim/state-kcp-faros-kcp-0\n\
                     secret/kcp-faros-kcp-hub-kubeconfig\nserviceaccount/kcp-faros-kcp\n";
        assert_eq!(
            left_behind(names),
            ["secret/kcp-faros-kcp-hub-kubeconfig", "serviceaccount/kcp-faros-kcp"]
        );
    }
}
