//! The `--target kind` plan: a kind cluster, kcp (kcp's own Helm chart behind cert-manager, or the
//! `faros-kcp` chart), the images built by `cargo xtask images` and loaded into kind, the faros
//! charts, the quickstart Provider applied to kcp as a GitOps repository would and its chart
//! installed, readiness gates, then the scenarios through the external target.
//!
//! Built without IO from [`Input`], so the whole plan — commands, the kind config, every values file
//! — is snapshot-tested (`snapshots/`). Topology, all on 127.0.0.1 and without `/etc/hosts` edits:
//!
//! - kcp's front-proxy (or faros-kcp) is NodePort [`topology::KCP_NODE_PORT`], mapped to host port
//!   [`KCP_HOST_PORT`]; host clients dial `https://127.0.0.1:<port>` with the in-cluster name as SNI
//!   (`tls-server-name`), the name every pod resolves and the certificate covers;
//! - the hub is NodePort [`topology::HUB_NODE_PORT`] on host port [`HUB_HOST_PORT`], as `https://localhost:<port>`
//!   (its certificate gets `localhost`; it is also the `publicURL` in tenant kubeconfigs);
//! - real kcp: the front-proxy's ClusterIP is pinned ([`topology::FRONT_PROXY_IP`]) and kcp's pods get a
//!   hostAlias for its external hostname, as kcp's own kind setup does; every client, in the cluster
//!   or on the host, goes through the front-proxy.

use std::path::{Path, PathBuf};

mod files;
mod topology;

use files::{faros_values, kcp_values, kind_config, prerequisites, quickstart_values};
pub(crate) use topology::Kcp;
use topology::{
    FAROS_NAMESPACE, FAROS_RELEASE, FRONT_PROXY_HOST, HUB_HOST_PORT, KCP_ADMIN_SECRET, KCP_HOST_PORT, KCP_NAMESPACE,
};

use super::plan::{Action, Cmd, Gate, Plan, SecretRef, Step};
use super::scenarios;
use super::tokens::{ADMIN_USER, GATE_USER, Tokens};
use super::versions::{CERT_MANAGER_REPO, CERT_MANAGER_VERSION, KCP_CHART_REPO, KCP_CHART_VERSION};
use crate::images::{Component, DEFAULT_REGISTRY, Engine, image_ref};

const QUICKSTART_RELEASE: &str = "quickstart";

/// Everything a kind plan depends on.
pub(crate) struct Input<'a> {
    pub kcp: Kcp,
    pub cluster: &'a str,
    pub reuse: bool,
    pub keep: bool,
    pub engine: Engine,
    /// The helm program (`FAROS_HELM` or `helm`).
    pub helm: &'a str,
    /// Where the plan's files go (`target/e2e/kind`).
    pub work: &'a Path,
    /// Where logs go when a step fails (`target/e2e-logs`).
    pub logs: &'a Path,
    /// Image tag for this run's images.
    pub tag: &'a str,
    /// Names this run's images (any string that changes between builds).
    pub build: &'a str,
    pub tokens: &'a Tokens,
    /// Scenario filter passed to the test harness.
    pub filter: Option<&'a str>,
}

impl Input<'_> {
    fn file(&self, name: &str) -> PathBuf {
        self.work.join(name)
    }

    fn kubeconfig(&self) -> PathBuf {
        self.file("kind.kubeconfig")
    }

    fn kubectl(&self, args: &[&str]) -> Cmd {
        Cmd::new("kubectl", &["--kubeconfig"])
            .arg(self.kubeconfig().display().to_string())
            .args(args.iter().copied())
    }

    /// helm with the cluster's kubeconfig (a global flag, so it may come first).
    fn helm(&self, args: &[&str]) -> Cmd {
        Cmd::new(self.helm, &["--kubeconfig"])
            .arg(self.kubeconfig().display().to_string())
            .args(args.iter().copied())
    }

    fn kind(&self, args: &[&str]) -> Cmd {
        let cmd = Cmd::new("kind", args);
        match self.engine {
            Engine::Docker => cmd,
            Engine::Podman => cmd.env("KIND_EXPERIMENTAL_PROVIDER", "podman"),
        }
    }

    /// The images this topology runs.
    fn components(&self) -> Vec<Component> {
        let mut components = vec![
            Component::HubApi,
            Component::HubReconciler,
            Component::ProviderQuickstart,
        ];
        if self.kcp == Kcp::Embedded {
            components.insert(0, Component::Kcp);
        }
        components
    }

    /// The in-cluster name host clients send as SNI to reach kcp.
    fn kcp_tls_name(&self) -> String {
        match self.kcp {
            Kcp::Real => FRONT_PROXY_HOST.into(),
            Kcp::Embedded => format!("{FAROS_RELEASE}-faros-kcp.{FAROS_NAMESPACE}.svc"),
        }
    }

    fn hub_url(&self) -> String {
        format!("https://localhost:{HUB_HOST_PORT}")
    }
}

/// The whole run.
pub(crate) fn plan(input: &Input<'_>) -> Plan {
    let kc = input.kubeconfig().display().to_string();
    let file = |name: &str| input.file(name);
    let path = |name: &str| file(name).display().to_string();
    let mut steps = Vec::new();

    // Files first: everything later reads them, and a dry run shows them.
    let mut writes = vec![
        Action::Write {
            path: file("kind-config.yaml"),
            contents: kind_config(input.cluster),
            private: false,
        },
        Action::Write {
            path: file("tokens.csv"),
            contents: input.tokens.token_file(),
            private: true,
        },
        Action::Write {
            path: file("users.csv"),
            contents: input.tokens.users_file(),
            private: true,
        },
        Action::Write {
            path: file("faros-prerequisites.yaml"),
            contents: prerequisites(input.tokens),
            private: true,
        },
    ];
    if input.kcp == Kcp::Real {
        writes.push(Action::Write {
            path: file("kcp-values.yaml"),
            contents: kcp_values(input.tokens),
            private: true,
        });
    }
    writes.push(Action::Write {
        path: file("faros-values.yaml"),
        contents: faros_values(input.kcp, input.tag, input.build),
        private: false,
    });
    writes.push(Action::Write {
        path: file("quickstart-values.yaml"),
        contents: quickstart_values(input.tag, input.build),
        private: false,
    });
    steps.push(Step::new("kind config, token files and values files", writes));

    let create = input
        .kind(&["create", "cluster", "--name", input.cluster, "--config"])
        .arg(path("kind-config.yaml"))
        .args(["--kubeconfig", kc.as_str()]);
    let mut cluster = if input.reuse {
        vec![Action::RunUnlessListed {
            cmd: create,
            list: input.kind(&["get", "clusters"]),
            item: input.cluster.into(),
        }]
    } else {
        vec![
            Action::Run(input.kind(&["delete", "cluster", "--name", input.cluster])),
            Action::Run(create),
        ]
    };
    cluster.push(Action::Run(
        input
            .kind(&["export", "kubeconfig", "--name", input.cluster, "--kubeconfig"])
            .arg(kc.clone()),
    ));
    let cluster_name = if input.reuse {
        "kind cluster (reused if it exists)"
    } else {
        "kind cluster (recreated)"
    };
    steps.push(Step::new(cluster_name, cluster));

    // Both targets: the hub chart's certificate comes from cert-manager (its default TLS mode), and
    // real kcp's chart needs it too.
    steps.push(Step::new(
        "cert-manager",
        vec![Action::Run(input.helm(&[
            "upgrade",
            "--install",
            "cert-manager",
            "cert-manager",
            "--repo",
            CERT_MANAGER_REPO,
            "--version",
            CERT_MANAGER_VERSION,
            "--namespace",
            "cert-manager",
            "--create-namespace",
            "--set",
            "crds.enabled=true",
            "--wait",
            "--timeout",
            "5m",
        ]))],
    ));
    if input.kcp == Kcp::Real {
        steps.push(Step::new(
            "kcp from kcp's Helm chart",
            vec![
                Action::Run(
                    input
                        .helm(&[
                            "upgrade",
                            "--install",
                            "kcp",
                            "kcp",
                            "--repo",
                            KCP_CHART_REPO,
                            "--version",
                            KCP_CHART_VERSION,
                            "--namespace",
                            KCP_NAMESPACE,
                            "--create-namespace",
                            "--values",
                        ])
                        .arg(path("kcp-values.yaml"))
                        .args(["--wait", "--timeout", "10m"]),
                ),
                Action::Run(input.kubectl(&[
                    "-n",
                    KCP_NAMESPACE,
                    "rollout",
                    "status",
                    "deployment/kcp-front-proxy",
                    "--timeout",
                    "5m",
                ])),
            ],
        ));
    }

    // Images: built by the images task, loaded into the node (pull policy Never in the values).
    let components = input.components();
    let mut build = Cmd::new(
        "cargo",
        &[
            "xtask",
            "images",
            "--engine",
            input.engine.program(),
            "--tag",
            input.tag,
        ],
    );
    for c in &components {
        build = build.args(["--component", c.name()]);
    }
    let mut images = vec![Action::Run(build)];
    for c in &components {
        let image = image_ref(DEFAULT_REGISTRY, *c, input.tag);
        match input.engine {
            Engine::Docker => images.push(Action::Run(input.kind(&[
                "load",
                "docker-image",
                &image,
                "--name",
                input.cluster,
            ]))),
            Engine::Podman => {
                let archive = path(&format!("{}.tar", c.name()));
                images.push(Action::Run(Cmd::new("podman", &["save", "-o", &archive, &image])));
                images.push(Action::Run(input.kind(&[
                    "load",
                    "image-archive",
                    &archive,
                    "--name",
                    input.cluster,
                ])));
            }
        }
    }
    steps.push(Step::new("images (cargo xtask images, kind load)", images));

    // The faros namespace, the token Secret and (real kcp) the front-proxy admin kubeconfig.
    let mut prereqs = Vec::new();
    if input.kcp == Kcp::Real {
        prereqs.push(Action::ExtractSecret {
            kubeconfig: input.kubeconfig(),
            namespace: KCP_NAMESPACE.into(),
            name: "kcp-ca".into(),
            key: "tls.crt".into(),
            to: file("kcp-ca.crt"),
        });
        prereqs.push(Action::Kubeconfig {
            ca: file("kcp-ca.crt"),
            server: format!("https://127.0.0.1:{KCP_HOST_PORT}/clusters/root"),
            tls_server_name: Some(FRONT_PROXY_HOST.into()),
            user: ADMIN_USER.into(),
            tokens: file("tokens.csv"),
            secret: None,
            to: file("kcp-admin.kubeconfig"),
        });
        prereqs.push(Action::Kubeconfig {
            ca: file("kcp-ca.crt"),
            server: format!("https://{FRONT_PROXY_HOST}:8443"),
            tls_server_name: None,
            user: ADMIN_USER.into(),
            tokens: file("tokens.csv"),
            secret: Some(SecretRef {
                namespace: FAROS_NAMESPACE.into(),
                name: KCP_ADMIN_SECRET.into(),
                key: "admin.kubeconfig".into(),
            }),
            to: file("kcp-admin-secret.yaml"),
        });
    }
    prereqs.push(Action::Run(input.kubectl(&[
        "apply",
        "-f",
        &path("faros-prerequisites.yaml"),
    ])));
    if input.kcp == Kcp::Real {
        prereqs.push(Action::Run(input.kubectl(&[
            "apply",
            "-f",
            &path("kcp-admin-secret.yaml"),
        ])));
    }
    let prereq_name = match input.kcp {
        Kcp::Real => "faros namespace, token Secret, kcp admin kubeconfig (front-proxy)",
        Kcp::Embedded => "faros namespace and token Secret",
    };
    steps.push(Step::new(prereq_name, prereqs));

    let mut charts = vec![
        Action::Run(Cmd::new(input.helm, &["dependency", "build", "charts/faros"])),
        Action::Run(
            input
                .helm(&[
                    "upgrade",
                    "--install",
                    FAROS_RELEASE,
                    "charts/faros",
                    "--namespace",
                    FAROS_NAMESPACE,
                    "--values",
                ])
                .arg(path("faros-values.yaml"))
                .args(["--wait", "--timeout", "10m"]),
        ),
    ];
    if input.kcp == Kcp::Embedded {
        charts.push(Action::ExtractSecret {
            kubeconfig: input.kubeconfig(),
            namespace: FAROS_NAMESPACE.into(),
            name: format!("{FAROS_RELEASE}-faros-kcp-admin-kubeconfig"),
            key: "admin.kubeconfig".into(),
            to: file("kcp-in-cluster.kubeconfig"),
        });
        charts.push(Action::Reroute {
            from: file("kcp-in-cluster.kubeconfig"),
            server: format!("https://127.0.0.1:{KCP_HOST_PORT}"),
            tls_server_name: input.kcp_tls_name(),
            to: file("kcp-admin.kubeconfig"),
        });
    }
    charts.push(Action::ExtractSecret {
        kubeconfig: input.kubeconfig(),
        namespace: FAROS_NAMESPACE.into(),
        name: format!("{FAROS_RELEASE}-faros-hub-api-tls"),
        key: "ca.crt".into(),
        to: file("hub-ca.crt"),
    });
    steps.push(Step::new("faros charts (hub API, hub reconciler)", charts));

    // GitOps: the Provider goes into kcp once the reconciler has bootstrapped its workspace.
    let providers = |args: &[&str]| {
        Cmd::new("kubectl", &["--kubeconfig"])
            .arg(path("kcp-admin.kubeconfig"))
            .args([
                "--server".to_string(),
                format!(
                    "https://127.0.0.1:{KCP_HOST_PORT}/clusters/{}",
                    faros_core::names::SYSTEM_PROVIDERS_PATH
                ),
                "--tls-server-name".to_string(),
                input.kcp_tls_name(),
            ])
            .args(args.iter().copied())
    };
    steps.push(Step::new(
        "quickstart Provider into root:faros:system:providers (as a GitOps repo would)",
        vec![
            Action::Wait {
                gate: Gate::Command(providers(&["get", "providers"])),
                timeout_secs: 300,
            },
            Action::Run(providers(&["apply", "-f", "providers/quickstart/provider.yaml"])),
        ],
    ));
    steps.push(Step::new(
        "quickstart chart (kubeconfig from the reconciler's mirror)",
        vec![Action::Run(
            input
                .helm(&[
                    "upgrade",
                    "--install",
                    QUICKSTART_RELEASE,
                    "charts/faros-provider-quickstart",
                    // The reconciler's mirror namespace (its chart's default), where the kubeconfig
                    // Secret, with the hub's CA beside it, is mirrored.
                    "--namespace",
                    &format!("{FAROS_NAMESPACE}-providers"),
                    "--values",
                ])
                .arg(path("quickstart-values.yaml")),
        )],
    ));
    steps.push(Step::new(
        "readiness gates",
        vec![
            Action::Wait {
                gate: Gate::Readyz {
                    url: input.hub_url(),
                    ca: file("hub-ca.crt"),
                },
                timeout_secs: 300,
            },
            Action::Wait {
                gate: Gate::ProviderReady {
                    hub: input.hub_url(),
                    ca: file("hub-ca.crt"),
                    user: GATE_USER.into(),
                    tokens: file("tokens.csv"),
                    provider: "quickstart".into(),
                },
                timeout_secs: 300,
            },
        ],
    ));
    let target = faros_e2e_env(input);
    steps.push(Step::new(
        "scenarios through the external target",
        scenarios::external(&target, input.filter)
            .into_iter()
            .map(Action::Run)
            .collect(),
    ));

    let logs = |name: &str| input.logs.join(name);
    let mut on_failure = vec![Action::Run(
        input
            .kind(&["export", "logs"])
            .arg(logs("kind").display().to_string())
            .args(["--name", input.cluster]),
    )];
    on_failure.push(Action::Capture {
        cmd: input.kubectl(&["get", "pods", "--all-namespaces", "-o", "wide"]),
        to: logs("pods.txt"),
    });
    // Each release's Pods where it was installed: quickstart in the reconciler's mirror namespace.
    let providers_namespace = format!("{FAROS_NAMESPACE}-providers");
    for (namespace, release, file_name) in [
        (FAROS_NAMESPACE, FAROS_RELEASE, "faros.log"),
        (providers_namespace.as_str(), QUICKSTART_RELEASE, "quickstart.log"),
    ] {
        on_failure.push(Action::Capture {
            cmd: input.kubectl(&[
                "-n",
                namespace,
                "logs",
                "-l",
                &format!("app.kubernetes.io/instance={release}"),
                "--all-containers",
                "--prefix",
                "--tail=-1",
            ]),
            to: logs(file_name),
        });
    }
    if input.kcp == Kcp::Real {
        on_failure.push(Action::Capture {
            cmd: input.kubectl(&[
                "-n",
                KCP_NAMESPACE,
                "logs",
                "-l",
                "app.kubernetes.io/instance=kcp",
                "--all-containers",
                "--prefix",
                "--tail=-1",
            ]),
            to: logs("kcp.log"),
        });
    }
    let teardown = if input.keep {
        Vec::new()
    } else {
        vec![Step::new(
            "delete the kind cluster (--keep leaves it)",
            vec![Action::Run(input.kind(&["delete", "cluster", "--name", input.cluster]))],
        )]
    };
    Plan {
        steps,
        on_failure: vec![Step::new("collect logs into target/e2e-logs", on_failure)],
        teardown,
        keep_processes: false,
    }
}

/// The external target the kind platform is, for the scenarios.
fn faros_e2e_env(input: &Input<'_>) -> scenarios::ExternalTarget {
    scenarios::ExternalTarget {
        kubeconfig: input.file("kcp-admin.kubeconfig"),
        hub_url: input.hub_url(),
        ca: input.file("hub-ca.crt"),
        users: scenarios::Users::Pool(input.file("users.csv")),
        destructive: true,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn input<'a>(kcp: Kcp, engine: Engine, reuse: bool, keep: bool, tokens: &'a Tokens) -> Input<'a> {
        Input {
            kcp,
            cluster: "faros-e2e",
            reuse,
            keep,
            engine,
            helm: "helm",
            work: Path::new("target/e2e/kind"),
            logs: Path::new("target/e2e-logs"),
            tag: "e2e",
            build: "<build>",
            tokens,
            filter: None,
        }
    }

    /// The dry-run plans, compared with `snapshots/`: a change to the plan is a visible diff there.
    /// `FAROS_UPDATE_SNAPSHOTS=1 cargo test -p xtask` rewrites them.
    #[test]
    fn dry_run_plans_match_the_snapshots() {
        let tokens = Tokens::placeholder(crate::e2e::tokens::Holders::Kind);
        let dir = crate::locate::project_root().join("xtask/src/e2e/snapshots");
        let mut stale = Vec::new();
        for (name, kcp) in [("kind-real.txt", Kcp::Real), ("kind-embedded.txt", Kcp::Embedded)] {
            let rendered = plan(&input(kcp, Engine::Docker, false, false, &tokens)).render();
            let path = dir.join(name);
            if std::env::var_os("FAROS_UPDATE_SNAPSHOTS").is_some() {
                std::fs::create_dir_all(&dir).unwrap();
                std::fs::write(&path, &rendered).unwrap();
                continue;
            }
            let want = std::fs::read_to_string(&path).unwrap_or_default();
            if want != rendered {
                stale.push(format!("{}:\n{rendered}", path.display()));
            }
        }
        assert!(
            stale.is_empty(),
            "the kind plan changed; review and run `FAROS_UPDATE_SNAPSHOTS=1 cargo test -p xtask` to accept:\n{}",
            stale.join("\n")
        );
    }

    #[test]
    fn plan_variants() {
        let tokens = Tokens::placeholder(crate::e2e::tokens::Holders::Kind);
        let lines = |i: &Input<'_>| plan(i).render();

        // --reuse creates only when missing and never deletes first.
        let reused = lines(&input(Kcp::Embedded, Engine::Docker, true, true, &tokens));
        assert!(
            reused.contains("# unless `kind get clusters` lists faros-e2e"),
            "{reused}"
        );
        assert!(
            !reused.contains("kind delete cluster"),
            "--reuse --keep deletes nothing: {reused}"
        );

        // Embedded: cert-manager (the hub's certificate), no kcp chart, the faros-kcp image and chart;
        // the quickstart in the mirror namespace.
        let embedded = lines(&input(Kcp::Embedded, Engine::Docker, false, false, &tokens));
        assert!(
            embedded.contains(&format!("--repo {CERT_MANAGER_REPO} --version {CERT_MANAGER_VERSION}")),
            "{embedded}"
        );
        assert!(
            embedded.contains("charts/faros-provider-quickstart --namespace faros-providers"),
            "{embedded}"
        );
        assert!(!embedded.contains(KCP_CHART_REPO), "{embedded}");
        assert!(
            embedded.contains("kind load docker-image ghcr.io/faroshq/faros-kcp:e2e"),
            "{embedded}"
        );
        assert!(
            embedded.contains("tls-server-name faros-faros-kcp.faros.svc"),
            "{embedded}"
        );

        // Real: pinned chart versions, one kcp pass, no faros-kcp image.
        let real = lines(&input(Kcp::Real, Engine::Docker, false, false, &tokens));
        assert!(
            real.contains(&format!("--repo {KCP_CHART_REPO} --version {KCP_CHART_VERSION}")),
            "{real}"
        );
        assert_eq!(real.matches("upgrade --install kcp kcp").count(), 1, "{real}");
        assert!(!real.contains("faros-kcp:e2e"), "{real}");

        // Podman: archives and the experimental kind provider.
        let podman = lines(&input(Kcp::Real, Engine::Podman, false, false, &tokens));
        assert!(
            podman.contains("KIND_EXPERIMENTAL_PROVIDER=podman kind create cluster"),
            "{podman}"
        );
        assert!(
            podman.contains("podman save -o target/e2e/kind/faros-hub-api.tar"),
            "{podman}"
        );
        assert!(podman.contains("kind load image-archive"), "{podman}");
    }

    /// Real tokens never reach the printed plan's commands (only files marked private hold them).
    #[test]
    fn tokens_only_in_private_files() {
        let tokens = Tokens::generate(crate::e2e::tokens::Holders::Kind).unwrap();
        for kcp in [Kcp::Real, Kcp::Embedded] {
            let plan = plan(&input(kcp, Engine::Docker, false, false, &tokens));
            for step in plan.steps.iter().chain(&plan.on_failure).chain(&plan.teardown) {
                for action in &step.actions {
                    let leaks = match action {
                        Action::Write { contents, private, .. } => !private && tokens.appear_in(contents),
                        other => tokens.appear_in(&format!("{other:?}")),
                    };
                    assert!(!leaks, "{}: {action:?}", step.name);
                }
            }
        }
    }
}
