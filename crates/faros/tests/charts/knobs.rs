//! The knobs operators expect of a well-kept chart, on every component chart: an opt-in
//! PodDisruptionBudget, NetworkPolicy and ServiceMonitor, priorityClassName and
//! topologySpreadConstraints, overridable pod and container security contexts that keep the strict
//! defaults, `image.digest` and a registry override (`image.registry`, `global.imageRegistry`),
//! extraArgs/extraEnv/extraVolumes/extraVolumeMounts, `resources` checked as quantities, and a
//! `helm test` Pod. Each is off (or the strict default) without values, and with values renders the
//! object with the fields asked for, linted, validated against every Kubernetes version the charts
//! are checked with, and rendered identically twice.

use serde_json::{Value, json};

use super::{KUBERNETES_VERSIONS, root, wiring::in_cluster_address};
use super::{NAMESPACE, charts, check_locked_down, containers, helm, kind, pod_specs, template, validate};

/// A component chart, as the table tests see it.
struct Component {
    chart: &'static str,
    /// `--set`s it needs to render at all (what a documented install passes).
    base: &'static [&'static str],
    /// The long-running container the extra* knobs go to.
    container: &'static str,
    /// Named ports its NetworkPolicy admits, each with the values key of its peers.
    policy_ports: &'static [(&'static str, &'static str)],
    /// Path the `helm test` Pod checks.
    test_path: &'static str,
    /// Values only this chart needs to turn every knob on.
    extra_on: &'static str,
}

const HUB_URL: &str = "hub.url=https://h-faros-hub-api.faros.svc:8443";

const COMPONENTS: [Component; 4] = [
    Component {
        chart: "faros-hub-api",
        base: &["kcp.kubeconfigSecret=k"],
        container: "hub-api",
        policy_ports: &[("https", "from"), ("metrics", "metricsFrom")],
        test_path: "/readyz",
        extra_on: "replicaCount: 2\nsigningKey: {existingSecret: hub-signing-key}\n",
    },
    Component {
        chart: "faros-hub-reconciler",
        base: &["kcp.kubeconfigSecret=k", HUB_URL, "hub.caSecret=h-faros-hub-api-tls"],
        container: "reconciler",
        policy_ports: &[("metrics", "from")],
        test_path: "/readyz",
        extra_on: "",
    },
    Component {
        chart: "faros-kcp",
        base: &[],
        container: "kcp",
        policy_ports: &[("https", "from")],
        test_path: "/readyz",
        // kcp refuses anonymous /metrics: its ServiceMonitor needs a token.
        extra_on: "serviceMonitor: {enabled: true, bearerTokenSecret: {name: prometheus-kcp-token}}\n",
    },
    Component {
        chart: "faros-provider-quickstart",
        base: &[HUB_URL],
        container: "serve",
        policy_ports: &[("http", "from")],
        test_path: "/healthz",
        extra_on: "",
    },
];

const DIGEST: &str = "sha256:0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef";
const REGISTRY: &str = "registry.example.com/mirror";

/// Every knob on, the same for each chart (plus its `extra_on`, which may set the ServiceMonitor itself).
fn knobs_on(c: &Component) -> String {
    let monitor = if c.extra_on.contains("serviceMonitor:") {
        ""
    } else {
        "serviceMonitor: {enabled: true}\n"
    };
    let peers = c
        .policy_ports
        .iter()
        .map(|(port, key)| format!("  {key}: [{{podSelector: {{matchLabels: {{peer: {port}}}}}}}]\n"))
        .collect::<String>();
    format!(
        "global: {{imageRegistry: {REGISTRY}}}\n\
         image: {{digest: '{DIGEST}'}}\n\
         priorityClassName: faros-critical\n\
         topologySpreadConstraints:\n\
         \x20 - {{maxSkew: 1, topologyKey: topology.kubernetes.io/zone, whenUnsatisfiable: ScheduleAnyway}}\n\
         \x20 - {{maxSkew: 2, topologyKey: kubernetes.io/hostname, whenUnsatisfiable: DoNotSchedule, labelSelector: {{matchLabels: {{own: selector}}}}}}\n\
         podSecurityContext: {{runAsUser: 1000}}\n\
         securityContext: {{runAsUser: 1001}}\n\
         extraArgs: [--extra-flag=1]\n\
         extraEnv: [{{name: FAROS_EXTRA, value: '1'}}]\n\
         extraVolumes: [{{name: extra, emptyDir: {{}}}}]\n\
         extraVolumeMounts: [{{name: extra, mountPath: /extra}}]\n\
         podDisruptionBudget: {{enabled: true, minAvailable: 1}}\n\
         networkPolicy:\n  enabled: true\n{peers}\
         {monitor}\
         resources: {{requests: {{cpu: 250m, memory: 0.5Gi}}, limits: {{cpu: 2, memory: 1e9}}}}\n\
         {}",
        c.extra_on
    )
}

/// The chart's workload (its one Deployment or StatefulSet).
fn workload(docs: &[Value]) -> &Value {
    let mut workloads = docs.iter().filter(|d| d["spec"]["template"].is_object());
    let w = workloads.next().expect("a workload");
    assert!(workloads.next().is_none(), "more than one workload");
    w
}

/// The `helm test` Pods of a rendering.
fn test_pods(docs: &[Value]) -> Vec<&Value> {
    kind(docs, "Pod")
        .filter(|p| p["metadata"]["annotations"]["helm.sh/hook"] == "test")
        .collect()
}

fn main_container<'a>(pod: &'a Value, name: &str) -> &'a Value {
    containers(pod)
        .find(|(init, c)| !init && c["name"] == name)
        .unwrap_or_else(|| panic!("no container {name}"))
        .1
}

/// The strict container securityContext the charts are tested with.
fn assert_strict_container(label: &str, c: &Value) {
    let sc = &c["securityContext"];
    assert_eq!(sc["readOnlyRootFilesystem"], true, "{label}: read-only root");
    assert_eq!(sc["allowPrivilegeEscalation"], false, "{label}: privilege escalation");
    assert_eq!(sc["capabilities"]["drop"], json!(["ALL"]), "{label}: capabilities");
}

/// The `helm test` Pod: one, hooked on `helm test`, never selected by the workload's selector,
/// locked down, dialing `path` on a Service the rendering has (when the URL is in-cluster).
fn check_test_pod(label: &str, docs: &[Value], selector: &Value, path: &str) -> Value {
    let pods = test_pods(docs);
    assert_eq!(pods.len(), 1, "{label}: helm test Pods");
    let pod = pods[0];
    let labels = &pod["metadata"]["labels"];
    let selected = selector.as_object().unwrap().iter().all(|(k, v)| &labels[k] == v);
    assert!(
        !selected,
        "{label}: the workload's selector selects its test Pod ({labels})"
    );
    let spec = &pod["spec"];
    assert_eq!(spec["restartPolicy"], "Never", "{label}");
    assert_eq!(spec["automountServiceAccountToken"], false, "{label}");
    assert_eq!(spec["securityContext"]["runAsNonRoot"], true, "{label}");
    let c = &spec["containers"][0];
    assert_strict_container(label, c);
    assert!(
        c["resources"]["limits"]["memory"].is_string(),
        "{label}: test memory limit"
    );
    let url = c["args"].as_array().unwrap().last().unwrap().as_str().unwrap();
    assert!(url.ends_with(path), "{label}: the test dials {url}, not {path}");
    if let Some((service, namespace, port)) = in_cluster_address(url) {
        let found = kind(docs, "Service").any(|s| {
            s["metadata"]["name"] == service.as_str()
                && s["metadata"]["namespace"] == namespace.as_str()
                && s["spec"]["ports"].as_array().unwrap().iter().any(|p| p["port"] == port)
        });
        assert!(found, "{label}: the test dials {url}, which no rendered Service serves");
    }
    c.clone()
}

#[test]
fn every_new_knob_is_off_or_strict_by_default() {
    let copy = charts();
    for c in &COMPONENTS {
        let dir = copy.path().join("charts").join(c.chart);
        let (_, docs) = template(&dir, &[], c.base).unwrap_or_else(|e| panic!("{}: {e}", c.chart));
        for k in ["NetworkPolicy", "PodDisruptionBudget", "ServiceMonitor"] {
            assert_eq!(kind(&docs, k).count(), 0, "{}: a {k} by default", c.chart);
        }
        let w = workload(&docs);
        let pod = &w["spec"]["template"]["spec"];
        check_locked_down(c.chart, c.chart, pod);
        for key in ["priorityClassName", "topologySpreadConstraints"] {
            assert!(pod[key].is_null(), "{}: {key} by default", c.chart);
        }
        for (_, container) in containers(pod) {
            assert_eq!(
                container["image"],
                format!("ghcr.io/faroshq/{}:0.1.0", c.chart),
                "{}: default image",
                c.chart
            );
            assert_strict_container(c.chart, container);
        }
        let main = main_container(pod, c.container);
        assert!(
            !main["args"]
                .as_array()
                .into_iter()
                .flatten()
                .any(|a| a == "--extra-flag=1"),
            "{}",
            c.chart
        );
        let test = check_test_pod(c.chart, &docs, &w["spec"]["selector"]["matchLabels"], c.test_path);
        assert_eq!(test["image"], "docker.io/curlimages/curl:8.11.1", "{}", c.chart);
        // The test is a hook: `tests.enabled=false` renders none.
        let mut sets = c.base.to_vec();
        sets.push("tests.enabled=false");
        let (_, docs) = template(&dir, &[], &sets).unwrap();
        assert!(test_pods(&docs).is_empty(), "{}: tests.enabled=false", c.chart);
    }
}

#[test]
fn every_knob_renders_what_it_asks_for() {
    let copy = charts();
    for c in &COMPONENTS {
        let dir = copy.path().join("charts").join(c.chart);
        let values = copy.path().join(format!("{}-knobs.yaml", c.chart));
        std::fs::write(&values, knobs_on(c)).unwrap();
        let label = format!("{} with every knob on", c.chart);
        helm()
            .lint(&dir, true, &[&values], c.base)
            .unwrap_or_else(|e| panic!("helm lint --strict {label}:\n{}", e.output()));
        let (yaml, docs) = template(&dir, &[&values], c.base).unwrap_or_else(|e| panic!("{label}: {e}"));
        let (again, _) = template(&dir, &[&values], c.base).unwrap();
        assert!(yaml == again, "{label}: two renders differ");
        validate(copy.path(), &label, &yaml);

        let w = workload(&docs);
        let selector = &w["spec"]["selector"]["matchLabels"];
        let namespace = w["metadata"]["namespace"].as_str().unwrap_or(NAMESPACE);
        let pod = &w["spec"]["template"]["spec"];

        // Images: the registry replaces the repository's, the digest pins it; the test Pod's too.
        for (_, container) in containers(pod) {
            assert_eq!(
                container["image"],
                format!("{REGISTRY}/{}@{DIGEST}", c.chart),
                "{label}: image"
            );
            // Overridden keys replace the chart's one by one; the rest stay strict.
            assert_eq!(container["securityContext"]["runAsUser"], 1001, "{label}");
            assert_strict_container(&label, container);
        }
        assert_eq!(pod["priorityClassName"], "faros-critical", "{label}");
        assert_eq!(pod["securityContext"]["runAsUser"], 1000, "{label}");
        assert_eq!(pod["securityContext"]["runAsNonRoot"], true, "{label}");
        assert_eq!(
            pod["securityContext"]["seccompProfile"]["type"], "RuntimeDefault",
            "{label}"
        );
        // A constraint without a selector spreads the chart's own pods; one with a selector keeps it.
        let spread = pod["topologySpreadConstraints"].as_array().unwrap();
        assert_eq!(spread.len(), 2, "{label}");
        assert_eq!(&spread[0]["labelSelector"]["matchLabels"], selector, "{label}");
        assert_eq!(spread[0]["topologyKey"], "topology.kubernetes.io/zone", "{label}");
        assert_eq!(
            spread[1]["labelSelector"]["matchLabels"],
            json!({"own": "selector"}),
            "{label}"
        );

        // extra*: after the chart's own, in the main container (extraEnv and mounts in every one).
        let main = main_container(pod, c.container);
        assert_eq!(
            main["args"].as_array().unwrap().last().unwrap(),
            "--extra-flag=1",
            "{label}: extraArgs"
        );
        for (_, container) in containers(pod) {
            let name = container["name"].as_str().unwrap();
            assert!(
                container["env"]
                    .as_array()
                    .unwrap()
                    .iter()
                    .any(|e| e["name"] == "FAROS_EXTRA"),
                "{label}/{name}: extraEnv"
            );
            assert!(
                container["volumeMounts"]
                    .as_array()
                    .unwrap()
                    .iter()
                    .any(|m| m["mountPath"] == "/extra"),
                "{label}/{name}: extraVolumeMounts"
            );
        }
        assert!(
            pod["volumes"].as_array().unwrap().iter().any(|v| v["name"] == "extra"),
            "{label}: extraVolumes"
        );
        assert_eq!(main["resources"]["requests"]["cpu"], "250m", "{label}");

        // PodDisruptionBudget: the workload's pods, minAvailable instead of maxUnavailable.
        let pdbs: Vec<&Value> = kind(&docs, "PodDisruptionBudget").collect();
        assert_eq!(pdbs.len(), 1, "{label}: PodDisruptionBudget");
        assert_eq!(&pdbs[0]["spec"]["selector"]["matchLabels"], selector, "{label}");
        assert_eq!(pdbs[0]["metadata"]["namespace"], namespace, "{label}");
        assert_eq!(pdbs[0]["spec"]["minAvailable"], 1, "{label}");
        assert!(pdbs[0]["spec"]["maxUnavailable"].is_null(), "{label}");

        // NetworkPolicy: the workload's pods, ingress on its named container ports, each from its peers.
        let policies: Vec<&Value> = kind(&docs, "NetworkPolicy").collect();
        assert_eq!(policies.len(), 1, "{label}: NetworkPolicy");
        let policy = &policies[0]["spec"];
        assert_eq!(&policy["podSelector"]["matchLabels"], selector, "{label}");
        assert_eq!(policies[0]["metadata"]["namespace"], namespace, "{label}");
        assert_eq!(policy["policyTypes"], json!(["Ingress"]), "{label}");
        let rules = policy["ingress"].as_array().unwrap();
        assert_eq!(rules.len(), c.policy_ports.len(), "{label}: {rules:?}");
        let container_ports: Vec<&Value> = main["ports"].as_array().unwrap().iter().map(|p| &p["name"]).collect();
        for (rule, (port, _)) in rules.iter().zip(c.policy_ports) {
            assert_eq!(rule["ports"][0]["port"], *port, "{label}");
            assert!(
                container_ports.contains(&&json!(port)),
                "{label}: no container port {port}"
            );
            assert_eq!(
                rule["from"],
                json!([{"podSelector": {"matchLabels": {"peer": port}}}]),
                "{label}: peers of {port}"
            );
        }

        // ServiceMonitor: selects exactly one rendered Service, by a port it has.
        let monitors: Vec<&Value> = kind(&docs, "ServiceMonitor").collect();
        assert_eq!(monitors.len(), 1, "{label}: ServiceMonitor");
        let sm = &monitors[0]["spec"];
        let endpoint = &sm["endpoints"][0];
        assert_eq!(endpoint["path"], "/metrics", "{label}");
        let scraped: Vec<&Value> = kind(&docs, "Service")
            .filter(|s| {
                let labels = &s["metadata"]["labels"];
                let matched = sm["selector"]["matchLabels"]
                    .as_object()
                    .unwrap()
                    .iter()
                    .all(|(k, v)| &labels[k] == v);
                let excluded = sm["selector"]["matchExpressions"]
                    .as_array()
                    .into_iter()
                    .flatten()
                    .any(|e| e["operator"] == "DoesNotExist" && !labels[e["key"].as_str().unwrap()].is_null());
                matched && !excluded
            })
            .collect();
        assert_eq!(scraped.len(), 1, "{label}: the ServiceMonitor selects {scraped:?}");
        assert!(
            scraped[0]["spec"]["ports"]
                .as_array()
                .unwrap()
                .iter()
                .any(|p| p["name"] == endpoint["port"]),
            "{label}: the scraped Service has no port {}",
            endpoint["port"]
        );
        if c.chart == "faros-kcp" {
            // kcp refuses anonymous /metrics.
            assert_eq!(endpoint["scheme"], "https", "{label}");
            assert_eq!(
                endpoint["authorization"]["credentials"]["name"], "prometheus-kcp-token",
                "{label}"
            );
            assert_eq!(
                endpoint["tlsConfig"]["serverName"],
                format!("r-faros-kcp.{NAMESPACE}.svc"),
                "{label}"
            );
        }

        let test = check_test_pod(&label, &docs, selector, c.test_path);
        assert_eq!(test["image"], format!("{REGISTRY}/curl:8.11.1"), "{label}: test image");
    }
}

#[test]
fn resources_and_images_are_checked_by_the_schemas() {
    let copy = charts();
    for c in &COMPONENTS {
        let dir = copy.path().join("charts").join(c.chart);
        for (set, needle) in [
            ("resources.limits.memory=1GB", "resources.limits.memory"),
            ("resources.requests.cpu=lots", "resources.requests.cpu"),
            ("resources.limit.cpu=1", "limit"),
            ("tests.resources.limits.memory=64MB", "tests.resources.limits.memory"),
            ("image.digest=latest", "image.digest"),
            ("image.registry=https://registry.example.com", "image.registry"),
            (
                "podDisruptionBudget.maxUnavailable=one",
                "podDisruptionBudget.maxUnavailable",
            ),
            ("priorityClassName=Not_A_Name", "priorityClassName"),
        ] {
            let mut sets = c.base.to_vec();
            sets.push(set);
            let err = template(&dir, &[], &sets)
                .err()
                .unwrap_or_else(|| panic!("{} {set} rendered", c.chart));
            assert!(
                err.contains(needle),
                "{} {set}: expected {needle:?} in:\n{err}",
                c.chart
            );
        }
        for ok in [
            "resources.limits.cpu=1.5",
            "resources.requests.memory=512Mi",
            "resources.requests.cpu=100m",
        ] {
            let mut sets = c.base.to_vec();
            sets.push(ok);
            template(&dir, &[], &sets).unwrap_or_else(|e| panic!("{} {ok}: {e}", c.chart));
        }
    }
    // kcp refuses anonymous /metrics: its ServiceMonitor needs a token.
    let err = template(
        &copy.path().join("charts/faros-kcp"),
        &[],
        &["serviceMonitor.enabled=true"],
    )
    .unwrap_err();
    assert!(err.contains("serviceMonitor.bearerTokenSecret.name"), "{err}");
}

#[test]
fn faros_kcp_internal_url_sits_beside_the_external_one() {
    let copy = charts();
    let dir = copy.path().join("charts/faros-kcp");
    let service = format!("https://r-faros-kcp.{NAMESPACE}.svc:6443");
    // (internalURL, externalURL, --external-url, extra --hostname, what the test Pod dials)
    for (internal, external, want_external, want_host, want_test) in [
        ("", "", service.as_str(), None, service.as_str()),
        (
            "",
            "https://kcp.example.com",
            "https://kcp.example.com",
            None,
            service.as_str(),
        ),
        (
            "https://kcp.faros.internal:6443/",
            "",
            "https://kcp.faros.internal:6443",
            Some("kcp.faros.internal"),
            "https://kcp.faros.internal:6443",
        ),
        (
            "https://kcp-lb.faros:6443",
            "https://kcp.example.com",
            "https://kcp.example.com",
            Some("kcp-lb.faros"),
            "https://kcp-lb.faros:6443",
        ),
    ] {
        let sets = [format!("internalURL={internal}"), format!("externalURL={external}")];
        let sets: Vec<&str> = sets.iter().map(String::as_str).collect();
        let label = format!("faros-kcp {sets:?}");
        let (_, docs) = template(&dir, &[], &sets).unwrap_or_else(|e| panic!("{label}: {e}"));
        let pod = &workload(&docs)["spec"]["template"]["spec"];
        let args: Vec<&str> = pod["containers"][0]["args"]
            .as_array()
            .unwrap()
            .iter()
            .map(|a| a.as_str().unwrap())
            .collect();
        assert!(
            args.contains(&format!("--external-url={want_external}").as_str()),
            "{label}: {args:?}"
        );
        let hosts: Vec<&str> = args.iter().filter_map(|a| a.strip_prefix("--hostname=")).collect();
        assert_eq!(hosts.len(), 4 + usize::from(want_host.is_some()), "{label}: {hosts:?}");
        if let Some(host) = want_host {
            assert!(hosts.contains(&host), "{label}: {hosts:?}");
        }
        let test = &test_pods(&docs)[0]["spec"]["containers"][0];
        let url = test["args"].as_array().unwrap().last().unwrap();
        assert_eq!(*url, format!("{want_test}/readyz"), "{label}");
    }
    let err = template(&dir, &[], &["internalURL=http://kcp:6443"]).unwrap_err();
    assert!(err.contains("internalURL"), "{err}");
}

#[test]
fn the_umbrella_passes_the_registry_to_every_image() {
    let copy = charts();
    let (_, docs) = template(
        &copy.path().join("charts/faros"),
        &[],
        &[
            &format!("global.imageRegistry={REGISTRY}"),
            "faros-provider-quickstart.enabled=true",
        ],
    )
    .unwrap();
    let mut images: Vec<String> = pod_specs(&docs)
        .iter()
        .flat_map(|(_, pod)| {
            containers(pod)
                .map(|(_, c)| c["image"].as_str().unwrap().to_string())
                .collect::<Vec<_>>()
        })
        .chain(
            test_pods(&docs)
                .iter()
                .map(|p| p["spec"]["containers"][0]["image"].as_str().unwrap().to_string()),
        )
        .collect();
    images.sort();
    images.dedup();
    assert_eq!(
        images,
        [
            format!("{REGISTRY}/curl:8.11.1"),
            format!("{REGISTRY}/faros-hub-api:0.1.0"),
            format!("{REGISTRY}/faros-hub-reconciler:0.1.0"),
            format!("{REGISTRY}/faros-kcp:0.1.0"),
            format!("{REGISTRY}/faros-provider-quickstart:0.1.0"),
        ]
    );
}

#[test]
fn every_chart_declares_the_oldest_validated_kubernetes() {
    let oldest = KUBERNETES_VERSIONS[0];
    for chart in super::chart_names() {
        let text = std::fs::read_to_string(root().join("charts").join(&chart).join("Chart.yaml")).unwrap();
        let meta: Value = serde_saphyr::from_str(&text).unwrap();
        assert_eq!(
            meta["kubeVersion"],
            format!(">={oldest}-0"),
            "{chart}: kubeVersion must be the oldest version the tests validate against"
        );
    }
}
