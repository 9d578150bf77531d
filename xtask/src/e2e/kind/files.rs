//! The files the kind plan writes: the kind config and the values files for kcp's chart, the
//! umbrella chart and the quickstart chart, and the namespace and token Secret manifest. Pure
//! rendering; the topology they encode is described in the parent module.

use super::super::tokens::Tokens;
use super::super::versions::KIND_NODE_IMAGE;
use super::topology::{
    FAROS_NAMESPACE, FAROS_RELEASE, FRONT_PROXY_HOST, FRONT_PROXY_IP, HUB_HOST_PORT, HUB_NODE_PORT, KCP_ADMIN_SECRET,
    KCP_HOST_PORT, KCP_NODE_PORT, Kcp, TOKENS_SECRET,
};
use crate::images::{Component, DEFAULT_REGISTRY, image_ref};

/// The kind cluster: one node, the two host ports on 127.0.0.1.
pub(crate) fn kind_config(cluster: &str) -> String {
    format!(
        "kind: Cluster
apiVersion: kind.x-k8s.io/v1alpha4
name: {cluster}
nodes:
  - role: control-plane
    image: {KIND_NODE_IMAGE}
    extraPortMappings:
      # kcp: the front-proxy (real kcp) or faros-kcp NodePort
      - containerPort: {KCP_NODE_PORT}
        hostPort: {KCP_HOST_PORT}
        listenAddress: 127.0.0.1
        protocol: TCP
      # the hub API NodePort
      - containerPort: {HUB_NODE_PORT}
        hostPort: {HUB_HOST_PORT}
        listenAddress: 127.0.0.1
        protocol: TCP
"
    )
}

/// Values for kcp's chart: kcp's documented kind setup (token auth, pinned front-proxy ClusterIP
/// with a hostAlias for the external hostname, NodePort), with the shared token file and the
/// front-proxy's Service name as the external hostname.
pub(crate) fn kcp_values(tokens: &Tokens) -> String {
    let token_lines: String = tokens
        .token_file()
        .lines()
        .filter(|l| !l.starts_with('#'))
        .map(|l| format!("      {l}\n"))
        .collect();
    format!(
        "externalHostname: {FRONT_PROXY_HOST}
externalPort: \"8443\"
etcd:
  resources:
    requests:
      memory: 256Mi
certificates:
  dnsNames:
    - localhost
    - {FRONT_PROXY_HOST}
kcp:
  volumeClassName: standard
  tokenAuth:
    enabled: true
    config: |
{token_lines}  hostAliases:
    enabled: true
    values:
      - ip: {FRONT_PROXY_IP}
        hostnames:
          - {FRONT_PROXY_HOST}
kcpFrontProxy:
  extraDNSNames:
    - {FRONT_PROXY_HOST}.cluster.local
  service:
    type: NodePort
    nodePort: {KCP_NODE_PORT}
    clusterIP: {FRONT_PROXY_IP}
"
    )
}

/// A component's image (loaded into kind, so never pulled) and an annotation naming this run's
/// build, so `--reuse` rolls pods onto the freshly loaded images although the tag stays the same.
fn pod_values(component: Component, tag: &str, build: &str) -> String {
    let image = image_ref(DEFAULT_REGISTRY, component, tag);
    let repository = image.rsplit_once(':').map_or(image.as_str(), |(r, _)| r);
    format!(
        "  image:\n    repository: {repository}\n    tag: {tag}\n    pullPolicy: Never\n  podAnnotations:\n    \
         e2e.faros.sh/build: \"{build}\"\n"
    )
}

/// Values for the umbrella chart in this topology (quickstart is installed on its own, later).
pub(crate) fn faros_values(kcp: Kcp, tag: &str, build: &str) -> String {
    let (kcp_section, kcp_secret) = match kcp {
        Kcp::Real => ("faros-kcp:\n  enabled: false\n".to_string(), Some(KCP_ADMIN_SECRET)),
        Kcp::Embedded => (
            format!(
                "faros-kcp:\n  enabled: true\n{}  service:\n    type: NodePort\n    nodePort: {KCP_NODE_PORT}\n  \
                 tokenAuth:\n    existingSecret: {TOKENS_SECRET}\n",
                pod_values(Component::Kcp, tag, build)
            ),
            None,
        ),
    };
    // On real kcp both run on its admin kubeconfig (the Secret's key is `admin.kubeconfig`), and
    // the reconciler grants no hub user; the embedded kcp publishes each one's own kubeconfig,
    // which the umbrella's defaults mount.
    let kcp_ref = |extra: &str| {
        kcp_secret
            .map(|s| format!("  kcp:\n    kubeconfigSecret: {s}\n    kubeconfigKey: admin.kubeconfig\n{extra}"))
            .unwrap_or_default()
    };
    let (hub_kcp, reconciler_kcp) = (kcp_ref(""), kcp_ref("    hubUser: \"\"\n"));
    format!(
        "{kcp_section}faros-hub-api:
{}{hub_kcp}  publicURL: https://localhost:{HUB_HOST_PORT}
  service:
    type: NodePort
    nodePort: {HUB_NODE_PORT}
  tls:
    extraDNSNames:
      - localhost
  auth:
    staticTokens:
      existingSecret: {TOKENS_SECRET}
faros-hub-reconciler:
{}{reconciler_kcp}  mirror:
    enabled: true
faros-provider-quickstart:
  enabled: false
",
        pod_values(Component::HubApi, tag, build),
        pod_values(Component::HubReconciler, tag, build),
    )
}

/// Values for the quickstart chart, released on its own next to the umbrella release.
pub(crate) fn quickstart_values(tag: &str, build: &str) -> String {
    let image = pod_values(Component::ProviderQuickstart, tag, build);
    let image = image.lines().map(|l| &l[2..]).collect::<Vec<_>>().join("\n");
    format!(
        "{image}
hub:
  url: https://{FAROS_RELEASE}-faros-hub-api.{FAROS_NAMESPACE}.svc:8443
"
    )
}

/// The faros namespace and the token Secret, applied before the charts.
pub(super) fn prerequisites(tokens: &Tokens) -> String {
    let file = tokens.token_file();
    let data: String = file.lines().map(|l| format!("    {l}\n")).collect();
    format!(
        "apiVersion: v1
kind: Namespace
metadata:
  name: {FAROS_NAMESPACE}
---
apiVersion: v1
kind: Secret
metadata:
  name: {TOKENS_SECRET}
  namespace: {FAROS_NAMESPACE}
type: Opaque
stringData:
  tokens.csv: |
{data}"
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The values files render with the repository's charts (the same helm and checks as the chart
    /// tests; needs helm).
    #[test]
    fn values_render_with_the_charts() {
        let helm = std::env::var("FAROS_HELM").unwrap_or_else(|_| "helm".into());
        // A copy of charts/ with the umbrella's (git-ignored) dependencies vendored: the tree is never written.
        let dir = tempfile::tempdir().unwrap();
        let copied = std::process::Command::new("cp")
            .arg("-r")
            .arg(crate::locate::project_root().join("charts"))
            .arg(dir.path())
            .status()
            .unwrap();
        assert!(copied.success(), "copying charts/");
        let vendored = std::process::Command::new(&helm)
            .args(["dependency", "update", "--skip-refresh"])
            .arg(dir.path().join("charts/faros"))
            .output()
            .unwrap_or_else(|e| panic!("running {helm} (set FAROS_HELM): {e}"));
        assert!(
            vendored.status.success(),
            "{}",
            String::from_utf8_lossy(&vendored.stderr)
        );
        let root = dir.path();
        for kcp in [Kcp::Real, Kcp::Embedded] {
            let values = dir.path().join("faros.yaml");
            std::fs::write(&values, faros_values(kcp, "e2e", "1")).unwrap();
            let out = std::process::Command::new(&helm)
                .current_dir(root)
                .args(["template", "faros", "charts/faros", "--namespace", "faros", "--values"])
                .arg(&values)
                .output()
                .unwrap_or_else(|e| panic!("running {helm} (set FAROS_HELM): {e}"));
            assert!(
                out.status.success(),
                "{kcp:?}: {}",
                String::from_utf8_lossy(&out.stderr)
            );
            let manifests = String::from_utf8_lossy(&out.stdout);
            assert!(manifests.contains("nodePort: 30443"), "{kcp:?}");
            assert!(manifests.contains("imagePullPolicy: Never"), "{kcp:?}");
            assert!(manifests.contains("e2e.faros.sh/build: \"1\""), "{kcp:?}");
            assert_eq!(manifests.contains("kind: StatefulSet"), kcp == Kcp::Embedded, "{kcp:?}");
        }
        let values = dir.path().join("quickstart.yaml");
        std::fs::write(&values, quickstart_values("e2e", "1")).unwrap();
        let out = std::process::Command::new(&helm)
            .current_dir(root)
            .args([
                "template",
                "quickstart",
                "charts/faros-provider-quickstart",
                "--namespace",
                "faros-providers",
                "--values",
            ])
            .arg(&values)
            .output()
            .unwrap();
        assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
        let manifests = String::from_utf8_lossy(&out.stdout);
        assert!(
            manifests.contains("https://faros-faros-hub-api.faros.svc:8443"),
            "{manifests}"
        );
        // Nothing of the hub's namespace: the hub's CA comes with the mirrored kubeconfig Secret.
        assert!(!manifests.contains("faros-faros-hub-api-tls"), "{manifests}");
        assert!(manifests.contains("key: ca.crt"), "{manifests}");
    }
}
