//! Service resolution without kube-proxy or DNS, without IO: every Service gets a loopback address
//! inside each Pod's network namespace, derived from its ClusterIP (`198.51.100.N` → `127.0.2.N`), and
//! the Pod's `/etc/hosts` maps the Service's names to it; the node's relay ([`super::relay`])
//! listens there on the Service's ports and carries each connection to a ready endpoint Pod's
//! `127.0.0.1:<targetPort>` inside that Pod's own namespace. The `kubernetes` Service relays to the
//! API server on the host's loopback. ClusterIPs are allocated but never dialled.

use std::collections::BTreeMap;
use std::net::Ipv4Addr;

use k8s_openapi::api::core::v1::{Pod, Service};
use k8s_openapi::apimachinery::pkg::util::intstr::IntOrString;

/// Where a Service port's connections go.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) enum Backend {
    /// A Pod the node runs: its uid and the port inside its namespace.
    Pod { uid: String, port: u16 },
    /// A port on the host's loopback (the API server).
    Host(u16),
}

/// One Service port as Pods reach it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct Entry {
    pub namespace: String,
    pub name: String,
    pub address: Ipv4Addr,
    pub port: u16,
    pub node_port: Option<u16>,
    /// Ready endpoints, in a stable order (the relay takes them round-robin).
    pub backends: Vec<Backend>,
}

/// Every Service port the Pods can reach, and the names of each address.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub(crate) struct Table {
    pub entries: Vec<Entry>,
    pub names: BTreeMap<Ipv4Addr, Vec<String>>,
}

/// The address inside Pods of a Service with ClusterIP `cluster_ip` (in the /24 the control plane
/// allocates from): `127.0.2.<last octet>`. `None` for headless or not-yet-allocated Services.
pub(crate) fn loopback_address(cluster_ip: &str) -> Option<Ipv4Addr> {
    let ip: Ipv4Addr = cluster_ip.parse().ok()?;
    let [_, _, _, last] = ip.octets();
    Some(Ipv4Addr::new(127, 0, 2, last))
}

/// The DNS names of Service `name` in `namespace`, as cluster DNS answers them.
pub(crate) fn dns_names(name: &str, namespace: &str) -> Vec<String> {
    vec![
        format!("{name}.{namespace}"),
        format!("{name}.{namespace}.svc"),
        format!("{name}.{namespace}.svc.cluster.local"),
    ]
}

/// A ready Pod the node runs, for endpoint selection.
pub(crate) struct Ready<'a> {
    pub pod: &'a Pod,
    pub ready: bool,
}

/// The table from the Services, the Pods the node runs and the API server's host port.
pub(crate) fn table(services: &[Service], pods: &[Ready<'_>], apiserver_port: u16) -> Table {
    let mut table = Table::default();
    for svc in services {
        let (Some(name), Some(namespace), Some(spec)) = (&svc.metadata.name, &svc.metadata.namespace, &svc.spec) else {
            continue;
        };
        let Some(address) = spec.cluster_ip.as_deref().and_then(loopback_address) else {
            continue;
        };
        let is_api = name == "kubernetes" && namespace == "default";
        table.names.insert(address, {
            let mut n = dns_names(name, namespace);
            if is_api {
                n.push("kubernetes".into());
            }
            n
        });
        for port in spec.ports.iter().flatten() {
            let Ok(number) = u16::try_from(port.port) else { continue };
            let backends = if is_api {
                vec![Backend::Host(apiserver_port)]
            } else {
                let Some(selector) = spec.selector.as_ref().filter(|s| !s.is_empty()) else {
                    continue;
                };
                pods.iter()
                    .filter(|p| p.ready && p.pod.metadata.namespace.as_deref() == Some(namespace))
                    .filter(|p| {
                        let labels = p.pod.metadata.labels.clone().unwrap_or_default();
                        selector.iter().all(|(k, v)| labels.get(k) == Some(v))
                    })
                    .filter_map(|p| {
                        let target = target_port(p.pod, port.target_port.as_ref(), number)?;
                        Some(Backend::Pod {
                            uid: p.pod.metadata.uid.clone()?,
                            port: target,
                        })
                    })
                    .collect()
            };
            table.entries.push(Entry {
                namespace: namespace.clone(),
                name: name.clone(),
                address,
                port: number,
                node_port: port.node_port.and_then(|p| u16::try_from(p).ok()),
                backends,
            });
        }
    }
    table
}

/// A Service port's target in `pod`: a number, or a container port's name.
fn target_port(pod: &Pod, target: Option<&IntOrString>, port: u16) -> Option<u16> {
    match target {
        None => Some(port),
        Some(IntOrString::Int(n)) => u16::try_from(*n).ok(),
        Some(IntOrString::String(name)) => pod
            .spec
            .as_ref()?
            .containers
            .iter()
            .flat_map(|c| c.ports.iter().flatten())
            .find(|p| p.name.as_deref() == Some(name))
            .and_then(|p| u16::try_from(p.container_port).ok()),
    }
}

/// A Pod's `/etc/hosts`: its own name on 127.0.0.1, then every Service address with its names, the
/// short name (`svc`) only for Services of the Pod's namespace, as the search path resolves it.
pub(crate) fn hosts_file(table: &Table, pod_name: &str, pod_namespace: &str) -> String {
    let mut out = format!("127.0.0.1\tlocalhost {pod_name}\n::1\tlocalhost ip6-localhost\n");
    for (address, names) in &table.names {
        let mut names = names.clone();
        if let Some(short) = names[0].strip_suffix(&format!(".{pod_namespace}")) {
            names.insert(0, short.to_string());
        }
        out.push_str(&format!("{address}\t{}\n", names.join(" ")));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn svc(yaml: &str) -> Service {
        serde_saphyr::from_str(yaml).unwrap()
    }
    fn pod(yaml: &str) -> Pod {
        serde_saphyr::from_str(yaml).unwrap()
    }

    #[test]
    fn services_resolve_to_loopback_and_ready_endpoints() {
        let services = [
            svc(
                "metadata: {name: kubernetes, namespace: default}\nspec: {clusterIP: 198.51.100.1, ports: [{port: 443, targetPort: 6443}]}",
            ),
            svc(
                "metadata: {name: hub, namespace: faros}\nspec: {type: NodePort, clusterIP: 198.51.100.17, selector: {app: hub}, ports: [{port: 8443, targetPort: https, nodePort: 30443}, {port: 9090}]}",
            ),
            svc(
                "metadata: {name: headless, namespace: faros}\nspec: {clusterIP: None, selector: {app: hub}, ports: [{port: 1}]}",
            ),
            svc(
                "metadata: {name: other, namespace: elsewhere}\nspec: {clusterIP: 198.51.100.30, selector: {app: hub}, ports: [{port: 80}]}",
            ),
        ];
        let ready = pod(
            "metadata: {name: h1, namespace: faros, uid: u1, labels: {app: hub}}\nspec: {containers: [{name: c, ports: [{name: https, containerPort: 9443}]}]}",
        );
        let unready =
            pod("metadata: {name: h2, namespace: faros, uid: u2, labels: {app: hub}}\nspec: {containers: [{name: c}]}");
        let pods = [
            Ready {
                pod: &ready,
                ready: true,
            },
            Ready {
                pod: &unready,
                ready: false,
            },
        ];
        let t = table(&services, &pods, 6443);
        type Row = (String, Ipv4Addr, u16, Option<u16>, Vec<Backend>);
        let got: Vec<Row> = t
            .entries
            .iter()
            .map(|e| (e.name.clone(), e.address, e.port, e.node_port, e.backends.clone()))
            .collect();
        let pod_backend = |port| vec![Backend::Pod { uid: "u1".into(), port }];
        assert_eq!(
            got,
            vec![
                (
                    "kubernetes".into(),
                    Ipv4Addr::new(127, 0, 2, 1),
                    443,
                    None,
                    vec![Backend::Host(6443)]
                ),
                (
                    "hub".into(),
                    Ipv4Addr::new(127, 0, 2, 17),
                    8443,
                    Some(30443),
                    pod_backend(9443)
                ),
                (
                    "hub".into(),
                    Ipv4Addr::new(127, 0, 2, 17),
                    9090,
                    None,
                    pod_backend(9090)
                ),
                // Another namespace's Pods are never its endpoints.
                ("other".into(), Ipv4Addr::new(127, 0, 2, 30), 80, None, vec![]),
            ]
        );
        let hosts = hosts_file(&t, "h1", "faros");
        assert!(
            hosts.contains(
                "127.0.2.1\tkubernetes.default kubernetes.default.svc kubernetes.default.svc.cluster.local kubernetes\n"
            ),
            "{hosts}"
        );
        assert!(
            hosts.contains("127.0.2.17\thub hub.faros hub.faros.svc hub.faros.svc.cluster.local\n"),
            "{hosts}"
        );
        assert!(
            hosts.contains("127.0.2.30\tother.elsewhere other.elsewhere.svc"),
            "{hosts}"
        );
        assert!(
            !hosts.contains("198.51.100."),
            "no ClusterIP in any Pod's hosts file: {hosts}"
        );
    }

    #[test]
    fn loopback_addresses_follow_cluster_ips() {
        for (ip, want) in [
            ("198.51.100.1", Some(Ipv4Addr::new(127, 0, 2, 1))),
            ("198.51.100.254", Some(Ipv4Addr::new(127, 0, 2, 254))),
            ("None", None),
            ("", None),
        ] {
            assert_eq!(loopback_address(ip), want, "{ip}");
        }
    }
}
