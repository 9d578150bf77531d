//! The `--target kcp` plan: real kcp (built by `cargo xtask kcp build`, or `--kcp-binary`) as a
//! process on 127.0.0.1, the hub reconciler, the hub API and the quickstart provider as separate
//! processes with the flags and environment their charts give them, then the scenarios through the
//! external target.
//!
//! Built without IO from [`Input`] (ports and tokens are picked by the caller), so `--dry-run`
//! prints exactly what runs. What a deployment has, this has too, and nothing more:
//!
//! - one CA (openssl) signs kcp's and the hub's serving certificates, as cert-manager would;
//! - one static token file, read by kcp (once, at start: real kcp does not reload it) and the hub:
//!   kcp's admin (group `system:kcp:admin`), the readiness gates' user and the scenarios' pool
//!   ([`super::tokens`], `--users-file` mode of the external target);
//! - the hub and the reconciler run as their own kcp users (docs/install.md, "kcp identities"):
//!   `faros grant` gives them their permissions as kcp's admin once, then each gets a kubeconfig of
//!   `root` with its own token; the quickstart provider gets the kubeconfig from its Provider's
//!   Secret in `root:faros:system:providers`, the one the reconciler minted, exactly what the chart
//!   mounts.
//!
//! Every process logs to `<work>/logs/<name>.log`; when a step fails those go to `target/e2e-logs/`.
//!
//! With `--shards N` ([`sharded`]) kcp is a cache server, a root shard, N-1 more shards and a
//! front-proxy, and the hub, the reconciler and quickstart reach kcp through the front-proxy only.

mod sharded;
pub(crate) mod start;

use std::path::{Path, PathBuf};

use super::plan::{Action, Cmd, Gate, Plan, Step};
use super::scenarios;
use super::tokens::{ADMIN_USER, GATE_USER, HUB_USER, RECONCILER_USER, Tokens};

pub(crate) use sharded::{Server, Sharded};

/// The ports the processes listen on, all on 127.0.0.1.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Ports {
    /// kcp's front door: the one shard, or the front-proxy of a sharded kcp.
    pub kcp: u16,
    /// The one shard's embedded etcd (a sharded kcp's servers have theirs in [`Sharded`]).
    pub etcd_client: u16,
    pub etcd_peer: u16,
    pub hub: u16,
    pub reconciler: u16,
    pub quickstart: u16,
    /// The test OIDC issuer (`e2e/oidc/idp.mjs`) kcp and the hub trust.
    pub idp: u16,
}

impl Ports {
    /// The first six of `ports` in field order (kcp, its etcd client and peer, hub, reconciler,
    /// quickstart), and the test IdP's `idp`, which each target places after its own extra ports.
    pub(crate) fn from_list(ports: &[u16], idp: u16) -> Self {
        Ports {
            kcp: ports[0],
            etcd_client: ports[1],
            etcd_peer: ports[2],
            hub: ports[3],
            reconciler: ports[4],
            quickstart: ports[5],
            idp,
        }
    }
}

/// Everything a kcp plan depends on.
pub(crate) struct Input<'a> {
    /// Where the plan's files go (`target/e2e/kcp`).
    pub work: &'a Path,
    /// Where logs go when a step fails (`target/e2e-logs`).
    pub logs: &'a Path,
    /// The `kcp` binary (`kcp-front-proxy` and `cache-server` beside it).
    pub kcp: &'a Path,
    /// Build kcp at this release first (`cargo xtask kcp build`); `None` with `--kcp-binary`.
    pub build_kcp: Option<&'a str>,
    /// The faros binaries' directory (`target/debug`).
    pub faros_bin: &'a Path,
    pub ports: Ports,
    /// `--shards N` with N > 1: the cache server's and every shard's ports.
    pub sharded: Option<&'a Sharded>,
    pub tokens: &'a Tokens,
    /// Scenario filter passed to the test harness.
    pub filter: Option<&'a str>,
}

/// The faros processes, in start order after kcp's (their log files are `<name>.log`).
const FAROS_PROCESSES: [&str; 3] = ["hub-reconciler", "hub-api", "quickstart"];
const PROVIDER: &str = "quickstart";
/// Seconds a gate waits for a process that is starting.
const START_TIMEOUT: u64 = 180;
/// The test IdP's client: the audience kcp and the hub accept (`--oidc-client-id`), and the public
/// client the `faros credential oidc` plugin signs in as (device flow).
const OIDC_CLIENT: &str = "faros";
/// The IdP's user for the exec-plugin scenario: `user:password:group` (a password of this local,
/// throw-away IdP only).
const OIDC_USER: (&str, &str, &str) = ("oidc-alice", "e2e-oidc-password", "e2e-oidc");
/// Short ID tokens, so the scenario sees a refresh.
const OIDC_ID_TOKEN_TTL: u64 = 20;

impl Input<'_> {
    /// `cargo xtask kcp build` of the pinned version, unless a kcp binary was given.
    pub(crate) fn kcp_build(&self) -> Option<Action> {
        self.build_kcp
            .map(|version| Action::Run(Cmd::new("cargo", &["xtask", "kcp", "build", "--version", version])))
    }

    fn file(&self, name: &str) -> PathBuf {
        self.work.join(name)
    }

    fn path(&self, name: &str) -> String {
        self.file(name).display().to_string()
    }

    fn log(&self, name: &str) -> PathBuf {
        self.work.join("logs").join(format!("{name}.log"))
    }

    /// The test IdP's issuer URL, exactly as its tokens carry it.
    fn idp_url(&self) -> String {
        format!("https://127.0.0.1:{}", self.ports.idp)
    }

    /// The `--oidc-*` flags kcp and the hub both get, as `faros dev --oidc-…` gives the embedded
    /// kcp and the hub: users by `email` (no prefix, kube's default for it), groups unprefixed.
    fn oidc_flags(&self) -> Vec<String> {
        vec![
            format!("--oidc-issuer-url={}", self.idp_url()),
            format!("--oidc-client-id={OIDC_CLIENT}"),
            format!("--oidc-ca-file={}", self.path("ca.crt")),
            "--oidc-username-claim=email".into(),
            "--oidc-groups-claim=groups".into(),
        ]
    }

    /// `e2e/oidc/idp.mjs`'s configuration: TLS from our CA, one device-flow client (its loopback
    /// redirect lets the scenario fetch a first ID token with the code flow), one user.
    fn idp_files(&self) -> Vec<Action> {
        let (user, password, group) = OIDC_USER;
        let config = serde_json::json!({
            "port": self.ports.idp, "cert": self.path("idp.crt"), "key": self.path("idp.key"),
            "users": self.path("idp-users.json"),
            "clients": [{
                "client_id": OIDC_CLIENT, "redirect_uris": ["http://127.0.0.1:1/callback"],
                "post_logout_redirect_uris": [], "application_type": "native",
                "grant_types": ["urn:ietf:params:oauth:grant-type:device_code", "refresh_token", "authorization_code"],
                "response_types": ["code"],
            }],
            "ttl": {"IdToken": OIDC_ID_TOKEN_TTL, "AccessToken": OIDC_ID_TOKEN_TTL},
        });
        let users = serde_json::json!([{
            "username": user, "password": password, "email": format!("{user}@example.com"), "groups": [group],
        }]);
        let mut actions = self.serving_cert("idp");
        actions.push(Action::Write {
            path: self.file("idp-config.json"),
            contents: config.to_string(),
            private: true,
        });
        actions.push(Action::Write {
            path: self.file("idp-users.json"),
            contents: users.to_string(),
            private: true,
        });
        actions
    }

    /// The test IdP, started before kcp (which fetches its discovery document lazily, but needs
    /// its URL at start).
    fn idp_step(&self) -> Step {
        let discovery = format!("{}/.well-known/openid-configuration", self.idp_url());
        Step::new(
            "test OIDC issuer (e2e/oidc/idp.mjs) for the exec-plugin scenario",
            vec![
                Action::Spawn {
                    name: "idp".into(),
                    cmd: Cmd::new("node", &["e2e/oidc/idp.mjs"]).arg(self.path("idp-config.json")),
                    log: self.log("idp"),
                },
                Action::Wait {
                    gate: Gate::Command(
                        Cmd::new("curl", &["-sf", "-o", "/dev/null", "--cacert"])
                            .arg(self.path("ca.crt"))
                            .arg(discovery),
                    ),
                    timeout_secs: START_TIMEOUT,
                },
            ],
        )
    }

    fn kcp_url(&self) -> String {
        format!("https://127.0.0.1:{}", self.ports.kcp)
    }

    /// `localhost`, as in the kind target: the hub's certificate and `publicURL` name it.
    fn hub_url(&self) -> String {
        format!("https://localhost:{}", self.ports.hub)
    }

    /// The processes, in start order (their log files are `<name>.log`).
    fn processes(&self) -> Vec<String> {
        let kcp = match self.sharded {
            Some(s) => s.processes(),
            None => vec!["kcp".to_string()],
        };
        std::iter::once("idp".to_string())
            .chain(kcp)
            .chain(FAROS_PROCESSES.map(String::from))
            .collect()
    }

    fn openssl(&self, args: &[&str]) -> Cmd {
        Cmd::new("openssl", args)
    }

    /// A self-signed CA `<name>.crt`/`<name>.key`.
    fn ca(&self, name: &str, common_name: &str) -> Action {
        Action::Run(
            self.openssl(&["req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "7", "-keyout"])
                .args([
                    self.path(&format!("{name}.key")),
                    "-out".into(),
                    self.path(&format!("{name}.crt")),
                ])
                .args(["-subj", &format!("/CN={common_name}")])
                .args([
                    "-addext",
                    "basicConstraints=critical,CA:TRUE",
                    "-addext",
                    "keyUsage=critical,keyCertSign,cRLSign",
                ]),
        )
    }

    /// A certificate `<name>.crt`/`<name>.key` with `subject`, signed by CA `<ca>.crt`, with the
    /// extensions in file `<ext>`.
    fn cert(&self, name: &str, subject: &str, ca: &str, ext: &str) -> Vec<Action> {
        let (key, csr, crt) = (
            self.path(&format!("{name}.key")),
            self.path(&format!("{name}.csr")),
            self.path(&format!("{name}.crt")),
        );
        vec![
            Action::Run(self.openssl(&[
                "req", "-newkey", "rsa:2048", "-nodes", "-keyout", &key, "-out", &csr, "-subj", subject,
            ])),
            Action::Run(
                self.openssl(&["x509", "-req", "-in", &csr, "-CA"])
                    .args([
                        self.path(&format!("{ca}.crt")),
                        "-CAkey".into(),
                        self.path(&format!("{ca}.key")),
                    ])
                    .args(["-CAcreateserial", "-days", "7", "-out", &crt, "-extfile"])
                    .arg(self.path(ext)),
            ),
        ]
    }

    /// A serving certificate `<name>.crt`/`<name>.key` for localhost and 127.0.0.1, signed by the CA.
    fn serving_cert(&self, name: &str) -> Vec<Action> {
        self.cert(name, &format!("/CN={name}"), "ca", "serving.ext")
    }

    /// The kubeconfigs of kcp: the admin's (`root`, and the Providers' workspace for applying the
    /// Provider and reading its Secret) and the hub's and the reconciler's own (`root`).
    fn kcp_kubeconfigs(&self) -> Vec<Action> {
        use faros_core::names::{ROOT_PATH, SYSTEM_PROVIDERS_PATH};
        [
            ("admin.kubeconfig", ROOT_PATH, ADMIN_USER),
            ("providers.kubeconfig", SYSTEM_PROVIDERS_PATH, ADMIN_USER),
            ("hub.kubeconfig", ROOT_PATH, HUB_USER),
            ("reconciler.kubeconfig", ROOT_PATH, RECONCILER_USER),
        ]
        .into_iter()
        .map(|(file, path, user)| Action::Kubeconfig {
            ca: self.file("ca.crt"),
            server: format!("{}/clusters/{path}", self.kcp_url()),
            tls_server_name: None,
            user: user.into(),
            tokens: self.file("tokens.csv"),
            secret: None,
            to: self.file(file),
        })
        .collect()
    }
}

/// The build of the platform's binaries every kcp-backed target runs.
pub(crate) fn faros_binaries() -> Action {
    Action::Run(Cmd::new(
        "cargo",
        &[
            "build",
            "--locked",
            "-p",
            "faros-hub-api",
            "-p",
            "faros-hub-reconciler",
            "-p",
            "faros-provider-quickstart",
            "-p",
            "faros",
            "--bins",
        ],
    ))
}

/// The whole run.
pub(crate) fn plan(input: &Input<'_>) -> Plan {
    let mut steps = Vec::new();

    let mut build: Vec<Action> = input.kcp_build().into_iter().collect();
    build.push(faros_binaries());
    steps.push(Step::new("binaries (kcp, hub API, hub reconciler, quickstart)", build));
    let Startup { prepare, start } = startup(input);
    steps.extend(prepare);
    steps.extend(start);

    if let Some(s) = input.sharded {
        steps.push(s.spread(input));
    }

    let target = scenarios::ExternalTarget {
        kubeconfig: input.file("admin.kubeconfig"),
        hub_url: input.hub_url(),
        ca: input.file("ca.crt"),
        users: scenarios::Users::Pool(input.file("users.csv")),
        destructive: true,
    };
    // Before the scenarios: the last of them deletes the quickstart Provider. One shard only: a
    // sharded kcp's front-proxy would need the issuer too.
    if input.sharded.is_none()
        && input
            .filter
            .is_none_or(|f| "kubectl_lists_greetings_through_the_oidc_exec_plugin".contains(f))
    {
        steps.push(Step::new(
            "kubectl through the faros credential oidc exec plugin (device flow, cache, refresh)",
            vec![Action::Run(oidc_scenario(input, &target))],
        ));
    }
    steps.push(Step::new(
        "scenarios through the external target",
        scenarios::external(&target, input.filter)
            .into_iter()
            .map(Action::Run)
            .collect(),
    ));

    let on_failure = vec![Step::new(
        "every process's log into target/e2e-logs/",
        input
            .processes()
            .iter()
            .map(|name| Action::Capture {
                cmd: Cmd::new("cat", &[]).arg(input.log(name).display().to_string()),
                to: input.logs.join(format!("{name}.log")),
            })
            .collect(),
    )];
    Plan {
        steps,
        on_failure,
        teardown: Vec::new(),
        keep_processes: false,
    }
}

/// The platform as the plan starts it, in two parts: what a deployment has before anything starts
/// (fresh directories, token files, certificates, the test IdP), then kcp, the components' kcp
/// identities, the hub reconciler and hub API, the quickstart Provider and the quickstart provider,
/// until the hub reports quickstart Ready. [`plan`] runs both before the scenarios; `cargo xtask
/// bench kcp-vs-real` ([`start::platform`]) times `start` against `faros dev`.
pub(crate) struct Startup {
    pub prepare: Vec<Step>,
    pub start: Vec<Step>,
}

pub(crate) fn startup(input: &Input<'_>) -> Startup {
    let path = |name: &str| input.path(name);
    let (mut prepare, mut start) = (Vec::new(), Vec::new());
    // A fresh kcp every run: its root directory (etcd's data, generated keys) goes first.
    let mut files = vec![
        Action::Run(
            Cmd::new("rm", &["-rf"])
                .args(match input.sharded {
                    Some(s) => s.fresh_dirs(input),
                    None => vec![path("kcp-root")],
                })
                .arg(path("logs")),
        ),
        Action::Write {
            path: input.file("tokens.csv"),
            contents: input.tokens.token_file(),
            private: true,
        },
        Action::Write {
            path: input.file("users.csv"),
            contents: input.tokens.users_file(),
            private: true,
        },
        Action::Write {
            path: input.file("serving.ext"),
            contents: "subjectAltName=DNS:localhost,IP:127.0.0.1\nextendedKeyUsage=serverAuth\n".into(),
            private: false,
        },
        input.ca("ca", "faros-e2e-ca"),
    ];
    files.extend(input.serving_cert("kcp"));
    files.extend(input.serving_cert("hub"));
    files.extend(input.idp_files());
    match input.sharded {
        Some(s) => {
            files.extend(s.files(input));
            prepare.push(Step::new(
                "token files, CAs, serving and client certificates, kcp's kubeconfigs",
                files,
            ));
            prepare.push(input.idp_step());
            start.extend(s.servers(input));
        }
        None => {
            prepare.push(Step::new("token files, CA and serving certificates", files));
            prepare.push(input.idp_step());
            let mut kcp = vec![
                Action::Spawn {
                    name: "kcp".into(),
                    cmd: kcp_start(input, &input.path("kcp-root"), input.ports.kcp)
                        .arg(format!("--embedded-etcd-client-port={}", input.ports.etcd_client))
                        .arg(format!("--embedded-etcd-peer-port={}", input.ports.etcd_peer)),
                    log: input.log("kcp"),
                },
                Action::Wait {
                    gate: Gate::Readyz {
                        url: input.kcp_url(),
                        ca: input.file("ca.crt"),
                    },
                    timeout_secs: START_TIMEOUT,
                },
            ];
            kcp.extend(input.kcp_kubeconfigs());
            start.push(Step::new("kcp (one shard, embedded etcd)", kcp));
        }
    }

    // The one step run as kcp's admin: the components' own users get their permissions.
    start.push(Step::new(
        "kcp identities of the hub and the reconciler (faros grant, as kcp's admin)",
        vec![Action::Run(
            Cmd::new(&faros_bin(input, "faros"), &["grant"])
                .arg(format!("--kubeconfig={}", input.path("admin.kubeconfig")))
                .arg(format!("--reconciler-user={RECONCILER_USER}"))
                .arg(format!("--hub-user={HUB_USER}")),
        )],
    ));
    start.push(Step::new(
        "hub reconciler and hub API (the charts' flags)",
        vec![
            Action::Spawn {
                name: "hub-reconciler".into(),
                cmd: reconciler(input),
                log: input.log("hub-reconciler"),
            },
            Action::Spawn {
                name: "hub-api".into(),
                cmd: hub_api(input),
                log: input.log("hub-api"),
            },
            Action::Wait {
                gate: Gate::Readyz {
                    url: input.hub_url(),
                    ca: input.file("ca.crt"),
                },
                timeout_secs: START_TIMEOUT,
            },
        ],
    ));

    let providers = |args: &[&str]| {
        Cmd::new("kubectl", &["--kubeconfig"])
            .arg(path("providers.kubeconfig"))
            .args(args.iter().copied())
    };
    let secret = format!("{PROVIDER}-kubeconfig");
    start.push(Step::new(
        "quickstart Provider into root:faros:system:providers, its kubeconfig from its Secret",
        vec![
            Action::Wait {
                gate: Gate::Command(providers(&["get", "providers"])),
                timeout_secs: START_TIMEOUT,
            },
            Action::Run(providers(&["apply", "-f", "providers/quickstart/provider.yaml"])),
            Action::Wait {
                gate: Gate::Command(providers(&["-n", "default", "get", "secret", &secret])),
                timeout_secs: START_TIMEOUT,
            },
            Action::ExtractSecret {
                kubeconfig: input.file("providers.kubeconfig"),
                namespace: "default".into(),
                name: secret.clone(),
                key: "kubeconfig".into(),
                to: input.file("quickstart.kubeconfig"),
            },
        ],
    ));

    start.push(Step::new(
        "quickstart provider (init, then serve)",
        vec![
            Action::Run(quickstart(input, "init")),
            Action::Spawn {
                name: "quickstart".into(),
                cmd: quickstart(input, "serve"),
                log: input.log("quickstart"),
            },
            Action::Wait {
                gate: Gate::ProviderReady {
                    hub: input.hub_url(),
                    ca: input.file("ca.crt"),
                    user: GATE_USER.into(),
                    tokens: input.file("tokens.csv"),
                    provider: PROVIDER.into(),
                },
                timeout_secs: START_TIMEOUT,
            },
        ],
    ));
    Startup { prepare, start }
}

/// `kcp start` as kcp's own e2e servers run a shard: its files in `root_dir`, every listener on
/// 127.0.0.1, static tokens, our CA's serving certificate (the etcd ports are the caller's).
fn kcp_start(input: &Input<'_>, root_dir: &str, port: u16) -> Cmd {
    Cmd::new(&input.kcp.display().to_string(), &["start"])
        .arg(format!("--root-directory={root_dir}"))
        .arg("--bind-address=127.0.0.1")
        .arg(format!("--secure-port={port}"))
        .arg(format!("--external-hostname=127.0.0.1:{port}"))
        .arg(format!("--tls-cert-file={}", input.path("kcp.crt")))
        .arg(format!("--tls-private-key-file={}", input.path("kcp.key")))
        .arg(format!("--token-auth-file={}", input.path("tokens.csv")))
        .args(input.oidc_flags())
}

/// `e2e/tests/oidc_kubectl.rs` through the external target, told where the IdP is and the
/// plugin's binary.
fn oidc_scenario(input: &Input<'_>, target: &scenarios::ExternalTarget) -> Cmd {
    let (user, password, group) = OIDC_USER;
    let users = match &target.users {
        scenarios::Users::TokenFile(f) => (scenarios::ENV_TOKEN_FILE, f.display().to_string()),
        scenarios::Users::Pool(f) => (scenarios::ENV_USERS_FILE, f.display().to_string()),
    };
    Cmd::new(
        "cargo",
        &["test", "-p", "faros-e2e", "--locked", "--test", scenarios::OIDC],
    )
    .env(scenarios::ENV_TARGET, "external")
    .env(scenarios::ENV_KUBECONFIG, target.kubeconfig.display().to_string())
    .env(scenarios::ENV_HUB_URL, target.hub_url.clone())
    .env(scenarios::ENV_CA, target.ca.display().to_string())
    .env(users.0, users.1)
    .env("FAROS_E2E_OIDC_ISSUER", input.idp_url())
    .env("FAROS_E2E_OIDC_CA", input.path("ca.crt"))
    .env("FAROS_E2E_OIDC_CLIENT", OIDC_CLIENT)
    .env("FAROS_E2E_OIDC_USER", format!("{user}:{password}:{group}"))
    .env("FAROS_E2E_OIDC_ID_TOKEN_TTL", OIDC_ID_TOKEN_TTL.to_string())
    .env("FAROS_E2E_FAROS_BIN", input.faros_bin.display().to_string())
}

fn faros_bin(input: &Input<'_>, name: &str) -> String {
    input.faros_bin.join(name).display().to_string()
}

/// charts/faros-hub-reconciler's args (its default values), without the kubeconfig mirror: there
/// is no hosting cluster; the provider's kubeconfig is read from kcp instead.
fn reconciler(input: &Input<'_>) -> Cmd {
    Cmd::new(&faros_bin(input, "faros-hub-reconciler"), &[])
        .arg(format!("--kubeconfig={}", input.path("reconciler.kubeconfig")))
        .arg(format!("--hub-user={HUB_USER}"))
        .arg(format!("--hub-url={}", input.hub_url()))
        .arg(format!("--ca-file={}", input.path("ca.crt")))
        .arg(format!("--listen=127.0.0.1:{}", input.ports.reconciler))
        .args([
            "--lease-duration-seconds=15",
            "--lease-renew-deadline-seconds=10",
            "--lease-retry-period-seconds=2",
            "--concurrency=64",
            "--resync-seconds=300",
            "--log-format=text",
            "--log-level=info,kube=warn,hyper=warn,rustls=error",
        ])
        .env("FAROS_LEASE_IDENTITY", "e2e-hub-reconciler")
}

/// charts/faros-hub-api's args (its default values, static tokens from the shared file).
fn hub_api(input: &Input<'_>) -> Cmd {
    Cmd::new(&faros_bin(input, "faros-hub-api"), &[])
        .arg(format!("--kubeconfig={}", input.path("hub.kubeconfig")))
        .arg(format!("--listen=127.0.0.1:{}", input.ports.hub))
        .arg(format!("--tls-cert-file={}", input.path("hub.crt")))
        .arg(format!("--tls-key-file={}", input.path("hub.key")))
        .arg(format!("--public-ca-file={}", input.path("ca.crt")))
        .arg(format!("--signing-key-file={}", input.path("signing-key.json")))
        .arg(format!("--public-url={}", input.hub_url()))
        .arg(format!("--token-auth-file={}", input.path("tokens.csv")))
        // Quickstart serves on this machine's loopback, which the hub refuses provider URLs on by
        // default (in a cluster it is a Service address, which the default admits).
        .arg("--allow-upstream=127.0.0.1/32")
        .args(input.oidc_flags())
        .args([
            "--upstream-timeout=30",
            "--kcp-timeout=30",
            "--enable-wait=10",
            "--body-limit=10485760",
            "--log-format=text",
            "--log-level=info,kube=warn,hyper=warn,rustls=error",
        ])
}

/// charts/faros-provider-quickstart's containers: `init` (schemas and CatalogEntry, which the
/// image and the chart's ConfigMap carry, here from the repository) and `serve`.
fn quickstart(input: &Input<'_>, command: &str) -> Cmd {
    let cmd = Cmd::new(&faros_bin(input, "faros-provider-quickstart"), &[command])
        .env("FAROS_PROVIDER_KUBECONFIG", input.path("quickstart.kubeconfig"))
        .env("FAROS_PROVIDER_NAME", PROVIDER)
        .env("FAROS_LOG_FORMAT", "text")
        .env("FAROS_LOG_LEVEL", "info,kube=warn,hyper=warn,rustls=error");
    match command {
        "init" => cmd
            .env("FAROS_SCHEMAS_DIR", "providers/quickstart/schemas")
            .env("FAROS_CATALOGENTRY_FILE", "providers/quickstart/manifest.yaml")
            .env("QUICKSTART_URL", format!("http://127.0.0.1:{}", input.ports.quickstart))
            .env("QUICKSTART_VERSION", "0.1.0"),
        _ => cmd
            .env("FAROS_LISTEN", format!("127.0.0.1:{}", input.ports.quickstart))
            .env("FAROS_HUB_URL", input.hub_url())
            .env("FAROS_HUB_CA_FILE", input.path("ca.crt")),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn input<'a>(tokens: &'a Tokens, build: Option<&'a str>) -> Input<'a> {
        Input {
            work: Path::new("/w"),
            logs: Path::new("/logs"),
            kcp: Path::new("/kcp/kcp"),
            build_kcp: build,
            faros_bin: Path::new("/bin"),
            ports: Ports {
                kcp: 1,
                etcd_client: 2,
                etcd_peer: 3,
                hub: 4,
                reconciler: 5,
                quickstart: 6,
                idp: 7,
            },
            sharded: None,
            tokens,
            filter: None,
        }
    }

    #[test]
    fn the_plan_runs_the_charts_processes_against_kcp() {
        let tokens = Tokens::placeholder(crate::e2e::tokens::Holders::Kcp);
        let text = plan(&input(&tokens, Some("v0.32.3"))).render();
        for want in [
            "cargo xtask kcp build --version v0.32.3",
            "/kcp/kcp start --root-directory=/w/kcp-root --bind-address=127.0.0.1 --secure-port=1",
            "--token-auth-file=/w/tokens.csv",
            "GET https://127.0.0.1:1/readyz is 200",
            "/bin/faros grant --kubeconfig=/w/admin.kubeconfig --reconciler-user=faros-hub-reconciler --hub-user=faros-hub-api",
            "/bin/faros-hub-reconciler --kubeconfig=/w/reconciler.kubeconfig --hub-user=faros-hub-api --hub-url=https://localhost:4",
            "/bin/faros-hub-api --kubeconfig=/w/hub.kubeconfig --listen=127.0.0.1:4",
            "kubectl --kubeconfig /w/providers.kubeconfig apply -f providers/quickstart/provider.yaml",
            "get secret quickstart-kubeconfig -o 'jsonpath={.data.kubeconfig}' | base64 -d > /w/quickstart.kubeconfig",
            "FAROS_PROVIDER_KUBECONFIG=/w/quickstart.kubeconfig",
            "FAROS_E2E_USERS_FILE=/w/users.csv",
            "--test provider_deletion",
            "cat /w/logs/kcp.log > /logs/kcp.log",
        ] {
            assert!(text.contains(want), "{want:?} missing in\n{text}");
        }
        let given = plan(&input(&tokens, None)).render();
        assert!(!given.contains("cargo xtask kcp build"), "--kcp-binary builds no kcp");
    }
}
