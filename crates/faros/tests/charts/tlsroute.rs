//! The hub's TLSRoute in the Gateway API version the cluster serves: `v1` where it is (the standard
//! channel since Gateway API v1.5 serves nothing else), `v1alpha2` on clusters that serve only that,
//! decided from the API versions helm reads from the cluster (`--api-versions` here).

use std::process::Command;

use serde_json::Value;

use super::{NAMESPACE, RELEASE, charts, helm, kind};

/// The hub with its ci TLSRoute values, rendered as for a cluster serving `api_versions`.
fn render(api_versions: &[&str], sets: &[&str]) -> Result<Vec<Value>, String> {
    let copy = charts();
    let chart = copy.path().join("charts/faros-hub-api");
    let mut cmd = Command::new(helm().program());
    cmd.args(["template", RELEASE])
        .arg(&chart)
        .args(["--namespace", NAMESPACE, "-f"])
        .arg(chart.join("ci/ingress-values.yaml"));
    for v in api_versions {
        cmd.args(["--api-versions", v]);
    }
    for s in sets {
        cmd.args(["--set", s]);
    }
    let out = cmd.output().unwrap();
    if !out.status.success() {
        return Err(String::from_utf8_lossy(&out.stderr).into_owned());
    }
    let docs: Vec<Value> = serde_saphyr::from_multiple(&String::from_utf8_lossy(&out.stdout)).unwrap();
    Ok(docs.into_iter().filter(Value::is_object).collect())
}

#[test]
fn tlsroute_follows_the_served_version() {
    let cases: [(&str, &[&str], &str); 3] = [
        (
            "standard channel v1.5+",
            &["gateway.networking.k8s.io/v1/TLSRoute"],
            "gateway.networking.k8s.io/v1",
        ),
        (
            "experimental channel (v1 and v1alpha2)",
            &[
                "gateway.networking.k8s.io/v1/TLSRoute",
                "gateway.networking.k8s.io/v1alpha2/TLSRoute",
            ],
            "gateway.networking.k8s.io/v1",
        ),
        ("before v1.5, or no cluster", &[], "gateway.networking.k8s.io/v1alpha2"),
    ];
    for (name, served, want) in cases {
        let docs = render(served, &[]).unwrap();
        let routes: Vec<&Value> = kind(&docs, "TLSRoute").collect();
        assert_eq!(routes.len(), 1, "{name}");
        assert_eq!(routes[0]["apiVersion"], want, "{name}");
        assert_eq!(routes[0]["spec"]["hostnames"][0], "hub.example.com", "{name}");
    }
}

#[test]
fn tlsroute_v1_needs_hostnames() {
    let err = render(&["gateway.networking.k8s.io/v1/TLSRoute"], &["tlsRoute.hostnames=null"]).unwrap_err();
    assert!(err.contains("tlsRoute.hostnames is required"), "{err}");
    let docs = render(&[], &["tlsRoute.hostnames=null"]).unwrap();
    let route = kind(&docs, "TLSRoute").next().unwrap();
    assert!(
        route["spec"].get("hostnames").is_none(),
        "v1alpha2 may omit them: {route}"
    );
}
