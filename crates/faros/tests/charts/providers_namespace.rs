//! The providers namespace the reconciler chart creates for its kubeconfig mirror: labelled for Pod
//! Security (`mirror.podSecurity`, `restricted` by default) so the providers' pods are held to it
//! whatever the cluster's default, and left to an admin with `mirror.createNamespace=false` (Helm
//! refuses to adopt a namespace it did not create), in the component chart and through the umbrella.

use serde_json::Value;

use super::{charts, kind, template};

const BASE: [&str; 4] = [
    "kcp.kubeconfigSecret=k",
    "hub.url=https://h-faros-hub-api.faros.svc:8443",
    "hub.caSecret=h-faros-hub-api-tls",
    "mirror.enabled=true",
];

fn pod_security(ns: &Value) -> Vec<(String, String)> {
    ns["metadata"]["labels"]
        .as_object()
        .unwrap()
        .iter()
        .filter(|(k, _)| k.starts_with("pod-security.kubernetes.io/"))
        .map(|(k, v)| (k.clone(), v.as_str().unwrap().to_string()))
        .collect::<std::collections::BTreeSet<_>>()
        .into_iter()
        .collect()
}

/// Pod Security labels as (label, level) pairs; `None`: no Namespace rendered at all.
type Labels = Option<Vec<(String, String)>>;

fn levels(level: &str) -> Vec<(String, String)> {
    ["audit", "enforce", "warn"]
        .iter()
        .map(|m| (format!("pod-security.kubernetes.io/{m}"), level.to_string()))
        .collect()
}

#[test]
fn the_providers_namespace_carries_pod_security_labels() {
    let copy = charts();
    let chart = copy.path().join("charts/faros-hub-reconciler");
    let cases: [(&[&str], Labels); 5] = [
        (&[], Some(levels("restricted"))),
        (&["mirror.podSecurity=baseline"], Some(levels("baseline"))),
        (&["mirror.podSecurity=privileged"], Some(levels("privileged"))),
        (&["mirror.podSecurity="], Some(Vec::new())),
        (&["mirror.createNamespace=false"], None),
    ];
    for (sets, want) in cases {
        let all: Vec<&str> = BASE.iter().chain(sets).copied().collect();
        let (_, docs) = template(&chart, &[], &all).unwrap();
        let namespaces: Vec<&Value> = kind(&docs, "Namespace").collect();
        match &want {
            None => assert!(namespaces.is_empty(), "{sets:?}: {namespaces:?}"),
            Some(labels) => {
                assert_eq!(namespaces.len(), 1, "{sets:?}");
                assert_eq!(namespaces[0]["metadata"]["name"], "faros-providers", "{sets:?}");
                assert_eq!(&pod_security(namespaces[0]), labels, "{sets:?}");
            }
        }
        // The mirror's Role still goes to that namespace, made or not.
        assert!(
            kind(&docs, "Role").any(|r| r["metadata"]["namespace"] == "faros-providers"),
            "{sets:?}"
        );
    }
    let refused = template(&chart, &[], &[BASE.as_slice(), &["mirror.podSecurity=strict"]].concat()).unwrap_err();
    assert!(refused.contains("mirror.podSecurity"), "{refused}");
}

#[test]
fn the_umbrella_labels_or_leaves_the_providers_namespace() {
    let copy = charts();
    let chart = copy.path().join("charts/faros");
    let (_, docs) = template(&chart, &[], &[]).unwrap();
    let ns: Vec<&Value> = kind(&docs, "Namespace").collect();
    assert_eq!(ns.len(), 1);
    assert_eq!(pod_security(ns[0]), levels("restricted"));
    let (_, docs) = template(&chart, &[], &["faros-hub-reconciler.mirror.createNamespace=false"]).unwrap();
    assert_eq!(kind(&docs, "Namespace").count(), 0);
}
