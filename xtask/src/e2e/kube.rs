//! The `--target kube` plan: the platform installed by Helm on a real Kubernetes control plane
//! without containers. Real kcp runs as a host process exactly as `--target kcp` starts it
//! ([`super::kcp::startup`]'s preparation and kcp step); `cargo xtask kube up` is the control plane
//! and `cargo xtask kube node` its process node ([`crate::kube`]), which runs the Pods the charts
//! make as local processes of this workspace's binaries. Then, as an operator with real kcp would
//! (docs/install.md): the token Secret, kcp's admin kubeconfig and the hub's certificate as Secrets,
//! the umbrella chart (`helm install --wait`, `helm test`), the quickstart Provider into kcp, the
//! quickstart chart on the kubeconfig the reconciler mirrors (`helm install --wait`, `helm test`),
//! and the scenarios through the external target.
//!
//! Built without IO from [`Input`]. Topology, every packet on loopback:
//!
//! - Pods reach Services by name at `127.0.2.N` in their own network namespaces, relayed by the node,
//!   and kcp at `127.0.0.1:<kcp port>` in their namespaces (the node mirrors that host port), which is
//!   the address kcp puts in every URL it hands out;
//! - the hub is a NodePort Service: the node listens on the host's `127.0.0.1:<node port>`, and the
//!   scenarios and `publicURL` use `https://localhost:<node port>`;
//! - the hub's certificate (our CA) names its Service and `localhost`; its upstream policy admits
//!   `127.0.2.0/24`, where Services are (the hub refuses loopback upstreams by default, and Service
//!   addresses are loopback here).

use std::path::{Path, PathBuf};

use super::kcp;
use super::plan::{Action, Cmd, Gate, Plan, SecretRef, Step};
use super::scenarios;
use super::tokens::{ADMIN_USER, GATE_USER, Tokens};
use crate::images::{Component, DEFAULT_REGISTRY, repository};

const FAROS_NAMESPACE: &str = "faros";
const PROVIDERS_NAMESPACE: &str = "faros-providers";
const FAROS_RELEASE: &str = "faros";
const QUICKSTART_RELEASE: &str = "quickstart";
const TOKENS_SECRET: &str = "faros-e2e-tokens";
const KCP_ADMIN_SECRET: &str = "kcp-admin-kubeconfig";
/// The hub chart's default certificate Secret name, given as `tls.existingSecret` (no cert-manager
/// runs): the reconciler's and the providers' CA Secret default to it.
const HUB_TLS_SECRET: &str = "faros-faros-hub-api-tls";
const HUB_SERVICE: &str = "faros-faros-hub-api";
/// The hub's NodePort, on the host's loopback.
pub(crate) const HUB_NODE_PORT: u16 = 30443;
/// Where Services are in Pods (the node's loopback addresses).
const SERVICE_LOOPBACK: &str = "127.0.2.0/24";
/// How long `helm install --wait` waits.
const HELM_TIMEOUT: &str = "5m";

/// Everything a kube plan depends on.
pub(crate) struct Input<'a> {
    /// kcp's part, exactly as the kcp target's (its work directory is this plan's).
    pub kcp: kcp::Input<'a>,
    /// The running xtask, for `kube up` and `kube node`.
    pub xtask: &'a Path,
    /// The helm program (`FAROS_HELM` or `helm`).
    pub helm: &'a str,
    pub tokens: &'a Tokens,
    pub filter: Option<&'a str>,
}

impl Input<'_> {
    fn file(&self, name: &str) -> PathBuf {
        self.kcp.work.join(name)
    }
    fn path(&self, name: &str) -> String {
        self.file(name).display().to_string()
    }
    fn log(&self, name: &str) -> PathBuf {
        self.kcp.work.join("logs").join(format!("{name}.log"))
    }
    fn admin_kubeconfig(&self) -> PathBuf {
        self.file("plane/admin.kubeconfig")
    }
    fn kubectl(&self, args: &[&str]) -> Cmd {
        Cmd::new("kubectl", &["--kubeconfig"])
            .arg(self.admin_kubeconfig().display().to_string())
            .args(args.iter().copied())
    }
    fn helm(&self, args: &[&str]) -> Cmd {
        Cmd::new(self.helm, &["--kubeconfig"])
            .arg(self.admin_kubeconfig().display().to_string())
            .args(args.iter().copied())
    }
    fn xtask(&self, args: &[&str]) -> Cmd {
        Cmd::new(&self.xtask.display().to_string(), args)
    }
    fn hub_url(&self) -> String {
        format!("https://localhost:{HUB_NODE_PORT}")
    }
}

fn image(component: Component) -> String {
    // The tag is only a name here: the node runs the workspace's binary whatever it says.
    format!(
        "  image:\n    repository: {}\n    tag: e2e\n    pullPolicy: Never\n",
        repository(DEFAULT_REGISTRY, component)
    )
}

/// The umbrella chart's values: real kcp's admin kubeconfig for both components (docs/install.md,
/// "With real kcp"), the hub's certificate from a Secret, one hub replica signing with its own key,
/// the hub on a NodePort, the mirror into the providers namespace the control plane made.
pub(crate) fn faros_values() -> String {
    format!(
        "faros-kcp:
  enabled: false
faros-hub-api:
{}  replicaCount: 1
  signingKey:
    existingSecret: \"\"
  kcp:
    kubeconfigSecret: {KCP_ADMIN_SECRET}
    kubeconfigKey: admin.kubeconfig
  publicURL: https://localhost:{HUB_NODE_PORT}
  service:
    type: NodePort
    nodePort: {HUB_NODE_PORT}
  tls:
    mode: existingSecret
    existingSecret: {HUB_TLS_SECRET}
  auth:
    staticTokens:
      existingSecret: {TOKENS_SECRET}
  extraArgs:
    - --allow-upstream={SERVICE_LOOPBACK}
faros-hub-reconciler:
{}  kcp:
    kubeconfigSecret: {KCP_ADMIN_SECRET}
    kubeconfigKey: admin.kubeconfig
    hubUser: \"\"
  mirror:
    enabled: true
    createNamespace: false
faros-provider-quickstart:
  enabled: false
",
        image(Component::HubApi),
        image(Component::HubReconciler),
    )
}

/// The quickstart chart's values, released on its own in the mirror namespace.
pub(crate) fn quickstart_values() -> String {
    let image = image(Component::ProviderQuickstart);
    let image: String = image.lines().map(|l| format!("{}\n", &l[2..])).collect();
    format!("{image}hub:\n  url: https://{HUB_SERVICE}.{FAROS_NAMESPACE}.svc:8443\n")
}

/// The token Secret the hub reads (the kcp target's token file, which kcp reads too).
fn tokens_secret(tokens: &Tokens) -> String {
    let data: String = tokens.token_file().lines().map(|l| format!("    {l}\n")).collect();
    format!(
        "apiVersion: v1\nkind: Secret\nmetadata:\n  name: {TOKENS_SECRET}\n  namespace: {FAROS_NAMESPACE}\n\
         type: Opaque\nstringData:\n  tokens.csv: |\n{data}"
    )
}

/// The hub's serving certificate from the kcp target's CA: its Service's names and `localhost`.
fn hub_certificate(input: &Input<'_>) -> Vec<Action> {
    let names = [
        HUB_SERVICE.to_string(),
        format!("{HUB_SERVICE}.{FAROS_NAMESPACE}"),
        format!("{HUB_SERVICE}.{FAROS_NAMESPACE}.svc"),
        format!("{HUB_SERVICE}.{FAROS_NAMESPACE}.svc.cluster.local"),
        "localhost".to_string(),
    ];
    let san: Vec<String> = names.iter().map(|n| format!("DNS:{n}")).collect();
    let (key, csr, crt) = (
        input.path("hub-kube.key"),
        input.path("hub-kube.csr"),
        input.path("hub-kube.crt"),
    );
    vec![
        Action::Write {
            path: input.file("hub-kube.ext"),
            contents: format!("subjectAltName={}\nextendedKeyUsage=serverAuth\n", san.join(",")),
            private: false,
        },
        Action::Run(Cmd::new(
            "openssl",
            &[
                "req",
                "-newkey",
                "rsa:2048",
                "-nodes",
                "-keyout",
                &key,
                "-out",
                &csr,
                "-subj",
                "/CN=faros-hub",
            ],
        )),
        Action::Run(
            Cmd::new("openssl", &["x509", "-req", "-in", &csr, "-CA"])
                .args([input.path("ca.crt"), "-CAkey".into(), input.path("ca.key")])
                .args(["-CAcreateserial", "-days", "7", "-out", &crt, "-extfile"])
                .arg(input.path("hub-kube.ext")),
        ),
        // The key is readable by the hub's user through the Secret volume, as any Secret.
        Action::Run(Cmd::new("chmod", &["0644", &key])),
    ]
}

/// The whole run.
pub(crate) fn plan(input: &Input<'_>) -> Plan {
    let mut steps = vec![Step::new(
        "the process node's own check (a Deployment, a rollout restart, nothing off loopback)",
        vec![Action::Run(Cmd::new(
            "cargo",
            &[
                "test",
                "-p",
                "xtask",
                "--bin",
                "xtask",
                "--locked",
                "--",
                "--ignored",
                "--exact",
                "kube::node::tests::runs_a_deployment",
            ],
        ))],
    )];
    let mut build: Vec<Action> = input.kcp.kcp_build().into_iter().collect();
    build.push(Action::Run(Cmd::new("cargo", &["xtask", "kube", "build"])));
    build.push(kcp::faros_binaries());
    steps.push(Step::new(
        "binaries (kcp, the control plane, hub API, hub reconciler, quickstart)",
        build,
    ));
    // kcp as the kcp target starts it: its files, the test IdP, then kcp itself (the hub and the rest
    // of that target's processes are the charts' business here).
    let kcp::Startup { prepare, start } = kcp::startup(&input.kcp);
    steps.extend(prepare);
    steps.extend(start.into_iter().take(1));

    let kc = input.admin_kubeconfig().display().to_string();
    steps.push(Step::new(
        "the control plane (kube up) and its process node (kube node)",
        vec![
            Action::Spawn {
                name: "kube-up".into(),
                cmd: input.xtask(&["kube", "up", "--dir"]).arg(input.path("plane")),
                log: input.log("kube-up"),
            },
            // `kube up` makes the namespaces last, once the plane is ready.
            Action::Wait {
                gate: Gate::Command(input.kubectl(&["get", "namespace", PROVIDERS_NAMESPACE])),
                timeout_secs: 120,
            },
            Action::Spawn {
                name: "kube-node".into(),
                cmd: input
                    .xtask(&["kube", "node", "--kubeconfig", &kc, "--dir"])
                    .arg(input.path("node"))
                    .arg(format!("--host-port={}", input.kcp.ports.kcp)),
                log: input.log("kube-node"),
            },
            Action::Wait {
                gate: Gate::Command(input.kubectl(&[
                    "wait",
                    "--for=condition=Ready",
                    "node/faros-process-node",
                    "--timeout=5s",
                ])),
                timeout_secs: 60,
            },
        ],
    ));

    let mut secrets = hub_certificate(input);
    secrets.extend([
        Action::Write {
            path: input.file("tokens-secret.yaml"),
            contents: tokens_secret(input.tokens),
            private: true,
        },
        Action::Kubeconfig {
            ca: input.file("ca.crt"),
            server: format!("https://127.0.0.1:{}", input.kcp.ports.kcp),
            tls_server_name: None,
            user: ADMIN_USER.into(),
            tokens: input.file("tokens.csv"),
            secret: Some(SecretRef {
                namespace: FAROS_NAMESPACE.into(),
                name: KCP_ADMIN_SECRET.into(),
                key: "admin.kubeconfig".into(),
            }),
            to: input.file("kcp-admin-secret.yaml"),
        },
        Action::Write {
            path: input.file("faros-values.yaml"),
            contents: faros_values(),
            private: false,
        },
        Action::Write {
            path: input.file("quickstart-values.yaml"),
            contents: quickstart_values(),
            private: false,
        },
        Action::Run(input.kubectl(&["apply", "-f", &input.path("tokens-secret.yaml")])),
        Action::Run(input.kubectl(&["apply", "-f", &input.path("kcp-admin-secret.yaml")])),
        Action::Run(input.kubectl(&[
            "-n",
            FAROS_NAMESPACE,
            "create",
            "secret",
            "generic",
            HUB_TLS_SECRET,
            &format!("--from-file=tls.crt={}", input.path("hub-kube.crt")),
            &format!("--from-file=tls.key={}", input.path("hub-kube.key")),
            &format!("--from-file=ca.crt={}", input.path("ca.crt")),
        ])),
    ]);
    steps.push(Step::new(
        "Secrets: the token file, kcp's admin kubeconfig, the hub's certificate",
        secrets,
    ));
    steps.push(Step::new(
        "faros chart (hub API, hub reconciler): helm install --wait, helm test",
        vec![
            Action::Run(Cmd::new(input.helm, &["dependency", "build", "charts/faros"])),
            Action::Run(
                input
                    .helm(&[
                        "install",
                        FAROS_RELEASE,
                        "charts/faros",
                        "--namespace",
                        FAROS_NAMESPACE,
                        "--values",
                    ])
                    .arg(input.path("faros-values.yaml"))
                    .args(["--wait", "--timeout", HELM_TIMEOUT]),
            ),
            Action::Run(input.helm(&["test", FAROS_RELEASE, "--namespace", FAROS_NAMESPACE, "--timeout", "2m"])),
        ],
    ));
    let providers = |args: &[&str]| {
        Cmd::new("kubectl", &["--kubeconfig"])
            .arg(input.path("providers.kubeconfig"))
            .args(args.iter().copied())
    };
    steps.push(Step::new(
        "quickstart Provider into root:faros:system:providers (as a GitOps repo would)",
        vec![
            Action::Wait {
                gate: Gate::Command(providers(&["get", "providers"])),
                timeout_secs: 180,
            },
            Action::Run(providers(&["apply", "-f", "providers/quickstart/provider.yaml"])),
            // The reconciler's mirror: the kubeconfig Secret the quickstart Pod mounts.
            Action::Wait {
                gate: Gate::Command(input.kubectl(&[
                    "-n",
                    PROVIDERS_NAMESPACE,
                    "get",
                    "secret",
                    "quickstart-kubeconfig",
                ])),
                timeout_secs: 180,
            },
        ],
    ));
    steps.push(Step::new(
        "quickstart chart (kubeconfig from the reconciler's mirror): helm install --wait, helm test",
        vec![
            Action::Run(
                input
                    .helm(&[
                        "install",
                        QUICKSTART_RELEASE,
                        "charts/faros-provider-quickstart",
                        "--namespace",
                        PROVIDERS_NAMESPACE,
                        "--values",
                    ])
                    .arg(input.path("quickstart-values.yaml"))
                    .args(["--wait", "--timeout", HELM_TIMEOUT]),
            ),
            Action::Run(input.helm(&[
                "test",
                QUICKSTART_RELEASE,
                "--namespace",
                PROVIDERS_NAMESPACE,
                "--timeout",
                "2m",
            ])),
            Action::Wait {
                gate: Gate::ProviderReady {
                    hub: input.hub_url(),
                    ca: input.file("ca.crt"),
                    user: GATE_USER.into(),
                    tokens: input.file("tokens.csv"),
                    provider: "quickstart".into(),
                },
                timeout_secs: 180,
            },
        ],
    ));
    let target = scenarios::ExternalTarget {
        kubeconfig: input.file("admin.kubeconfig"),
        hub_url: input.hub_url(),
        ca: input.file("ca.crt"),
        users: scenarios::Users::Pool(input.file("users.csv")),
        destructive: true,
    };
    steps.push(Step::new(
        "scenarios through the external target",
        scenarios::external(&target, input.filter)
            .into_iter()
            .map(Action::Run)
            .collect(),
    ));

    let mut on_failure: Vec<Action> = ["kcp", "kube-up", "kube-node"]
        .iter()
        .map(|name| Action::Capture {
            cmd: Cmd::new("cat", &[]).arg(input.log(name).display().to_string()),
            to: input.kcp.logs.join(format!("{name}.log")),
        })
        .collect();
    on_failure.push(Action::Capture {
        cmd: input.kubectl(&["get", "pods,events", "--all-namespaces", "-o", "wide"]),
        to: input.kcp.logs.join("pods.txt"),
    });
    // Every container's output, as the node keeps it (there is no `kubectl logs` without a kubelet API).
    on_failure.push(Action::Capture {
        cmd: Cmd::new("sh", &["-c"]).arg(format!(
            "for f in {}/pods/*/logs/*.log; do echo \"=== $f\"; cat \"$f\"; done",
            input.path("node")
        )),
        to: input.kcp.logs.join("containers.log"),
    });
    Plan {
        steps,
        on_failure: vec![Step::new("logs into target/e2e-logs/", on_failure)],
        teardown: Vec::new(),
        keep_processes: false,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_plan_installs_the_charts_on_the_control_plane_with_real_kcp() {
        let tokens = Tokens::placeholder(crate::e2e::tokens::Holders::Kcp);
        let kcp = kcp::Input {
            work: Path::new("/w"),
            logs: Path::new("/logs"),
            kcp: Path::new("/kcp/kcp"),
            build_kcp: Some("v0.32.3"),
            faros_bin: Path::new("/bin"),
            ports: kcp::Ports {
                kcp: 1,
                etcd_client: 2,
                etcd_peer: 3,
                hub: 4,
                reconciler: 5,
                quickstart: 6,
                idp: 7,
            },
            sharded: None,
            tokens: &tokens,
            filter: None,
        };
        let text = plan(&Input {
            kcp,
            xtask: Path::new("/x/xtask"),
            helm: "helm",
            tokens: &tokens,
            filter: None,
        })
        .render();
        for want in [
            "--ignored --exact kube::node::tests::runs_a_deployment",
            "cargo xtask kube build",
            "/kcp/kcp start --root-directory=/w/kcp-root",
            "/x/xtask kube up --dir /w/plane",
            "/x/xtask kube node --kubeconfig /w/plane/admin.kubeconfig --dir /w/node --host-port=1",
            "helm --kubeconfig /w/plane/admin.kubeconfig install faros charts/faros --namespace faros --values /w/faros-values.yaml --wait",
            "helm --kubeconfig /w/plane/admin.kubeconfig test faros",
            "install quickstart charts/faros-provider-quickstart --namespace faros-providers",
            "FAROS_E2E_HUB_URL=https://localhost:30443",
            "--test provider_deletion",
        ] {
            assert!(text.contains(want), "{want:?} missing in\n{text}");
        }
        // None of the kcp target's own hub, reconciler or quickstart processes: the charts run those.
        for absent in [
            "/bin/faros-hub-api",
            "/bin/faros-hub-reconciler --kubeconfig",
            "/bin/faros grant",
        ] {
            assert!(!text.contains(absent), "{absent:?} in\n{text}");
        }
    }

    /// The values render with the charts (needs helm, as the kind target's check).
    #[test]
    fn values_name_what_the_node_and_the_plan_provide() {
        let faros: serde_json::Value = serde_saphyr::from_str(&faros_values()).unwrap();
        assert_eq!(faros["faros-hub-api"]["tls"]["existingSecret"], HUB_TLS_SECRET);
        assert_eq!(faros["faros-hub-api"]["service"]["nodePort"], HUB_NODE_PORT);
        assert_eq!(faros["faros-hub-reconciler"]["mirror"]["createNamespace"], false);
        let quickstart: serde_json::Value = serde_saphyr::from_str(&quickstart_values()).unwrap();
        assert_eq!(
            quickstart["image"]["repository"],
            "ghcr.io/faroshq/faros-provider-quickstart"
        );
        assert_eq!(quickstart["hub"]["url"], "https://faros-faros-hub-api.faros.svc:8443");
    }
}
