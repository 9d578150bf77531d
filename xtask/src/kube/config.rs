//! The IO-free half of the control plane ([`super::plane`]): the files its processes read (token
//! file, admission configuration, kubeconfigs, RBAC) and their command lines, from ports and paths.

use std::path::{Path, PathBuf};

/// The Service ClusterIP range: TEST-NET-2 (RFC 5737), reserved for documentation. No kube-proxy
/// runs: ClusterIPs are only allocated, never served, and the process node's Pods reach Services
/// at loopback addresses instead. TEST-NET-1 was the first choice, until a CI machine's own network
/// turned out to be 192.0.2.0/24: [`super::plane`] now refuses to start on a machine with an
/// address in this range ([`overlaps`]), where a ClusterIP would be a host's address.
pub(crate) const SERVICE_CIDR: &str = "198.51.100.0/24";
/// The first address of [`SERVICE_CIDR`], the `kubernetes` Service's, in the serving certificate.
pub(crate) const KUBERNETES_SERVICE_IP: &str = "198.51.100.1";
/// Where the process node's Pods reach the `kubernetes` Service (`127.0.2.<last octet of its
/// ClusterIP>`), also in the serving certificate: it is their `KUBERNETES_SERVICE_HOST`.
pub(crate) const KUBERNETES_SERVICE_LOOPBACK: &str = "127.0.2.1";

/// Whether networks `a` and `b` (`address/prefix`) share an address.
pub(crate) fn overlaps(a: &str, b: &str) -> bool {
    let parse = |n: &str| -> Option<(u32, u32)> {
        let (ip, prefix) = n.split_once('/')?;
        let ip: std::net::Ipv4Addr = ip.parse().ok()?;
        let prefix: u32 = prefix.parse().ok().filter(|p| *p <= 32)?;
        let mask = if prefix == 0 { 0 } else { u32::MAX << (32 - prefix) };
        Some((u32::from(ip) & mask, mask))
    };
    match (parse(a), parse(b)) {
        (Some((na, ma)), Some((nb, mb))) => {
            let mask = ma & mb;
            na & mask == nb & mask
        }
        _ => false,
    }
}
/// The namespaces `kube up` makes the namespace-only admin admin of (docs/install.md's).
pub(crate) const ADMIN_NAMESPACES: [&str; 2] = ["faros", "faros-providers"];
/// The users of the token file.
pub(crate) const CLUSTER_ADMIN: &str = "faros-cluster-admin";
pub(crate) const NAMESPACE_ADMIN: &str = "faros-namespace-admin";
const CONTROLLER_MANAGER: &str = "system:kube-controller-manager";

/// Ports, all on 127.0.0.1.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Ports {
    pub etcd_client: u16,
    pub etcd_peer: u16,
    pub apiserver: u16,
    pub controller_manager: u16,
}

/// The bearer tokens of the token file's users.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct Tokens {
    pub cluster_admin: String,
    pub namespace_admin: String,
    pub controller_manager: String,
}

/// Where the control plane's files are, under one directory.
#[derive(Clone, Debug)]
pub(crate) struct Paths {
    pub dir: PathBuf,
}

impl Paths {
    pub fn file(&self, name: &str) -> PathBuf {
        self.dir.join(name)
    }
    pub fn ca_cert(&self) -> PathBuf {
        self.file("ca.crt")
    }
    pub fn serving_cert(&self) -> PathBuf {
        self.file("apiserver.crt")
    }
    pub fn serving_key(&self) -> PathBuf {
        self.file("apiserver.key")
    }
    pub fn sa_key(&self) -> PathBuf {
        self.file("sa.key")
    }
    pub fn sa_pub(&self) -> PathBuf {
        self.file("sa.pub")
    }
    pub fn tokens(&self) -> PathBuf {
        self.file("tokens.csv")
    }
    pub fn admission(&self) -> PathBuf {
        self.file("admission.yaml")
    }
    pub fn etcd_data(&self) -> PathBuf {
        self.file("etcd")
    }
    pub fn admin_kubeconfig(&self) -> PathBuf {
        self.file("admin.kubeconfig")
    }
    pub fn namespace_admin_kubeconfig(&self) -> PathBuf {
        self.file("namespace-admin.kubeconfig")
    }
    pub fn controller_manager_kubeconfig(&self) -> PathBuf {
        self.file("controller-manager.kubeconfig")
    }
    pub fn log(&self, process: &str) -> PathBuf {
        self.file(&format!("{process}.log"))
    }
}

/// The static token file (`token,user,uid,"group,..."`): the cluster admin in `system:masters`,
/// the namespace-only admin in no group (RBAC grants it [`namespace_admin_rbac`]), and the
/// controller manager's own user, which the bootstrap RBAC policy knows.
pub(crate) fn token_file(tokens: &Tokens) -> String {
    format!(
        "{},{CLUSTER_ADMIN},uid-cluster-admin,\"system:masters\"\n\
         {},{NAMESPACE_ADMIN},uid-namespace-admin\n\
         {},{CONTROLLER_MANAGER},uid-kube-controller-manager\n",
        tokens.cluster_admin, tokens.namespace_admin, tokens.controller_manager
    )
}

/// Pod Security `restricted` enforced (and warned and audited) everywhere but kube-system, as a
/// cluster hardened the way the Pod Security Standards recommend.
pub(crate) fn admission_configuration() -> &'static str {
    "apiVersion: apiserver.config.k8s.io/v1
kind: AdmissionConfiguration
plugins:
  - name: PodSecurity
    configuration:
      apiVersion: pod-security.admission.config.k8s.io/v1
      kind: PodSecurityConfiguration
      defaults:
        enforce: restricted
        enforce-version: latest
        audit: restricted
        audit-version: latest
        warn: restricted
        warn-version: latest
      exemptions:
        usernames: []
        runtimeClasses: []
        namespaces: [kube-system]
"
}

/// A RoleBinding in `namespace` granting [`NAMESPACE_ADMIN`] the built-in `admin` ClusterRole
/// there: what a cluster admin gives a team that installs into namespaces it does not create.
pub(crate) fn namespace_admin_rbac(namespace: &str) -> String {
    format!(
        "apiVersion: rbac.authorization.k8s.io/v1
kind: RoleBinding
metadata:
  name: {NAMESPACE_ADMIN}
  namespace: {namespace}
roleRef:
  apiGroup: rbac.authorization.k8s.io
  kind: ClusterRole
  name: admin
subjects:
  - apiGroup: rbac.authorization.k8s.io
    kind: User
    name: {NAMESPACE_ADMIN}
"
    )
}

/// A kubeconfig for `server` with a bearer token, trusting `ca`.
pub(crate) fn kubeconfig(server: &str, ca: &Path, user: &str, token: &str) -> String {
    format!(
        "apiVersion: v1
kind: Config
clusters:
  - name: kube
    cluster:
      server: {server}
      certificate-authority: {ca}
users:
  - name: {user}
    user:
      token: {token}
contexts:
  - name: {user}
    context:
      cluster: kube
      user: {user}
current-context: {user}
",
        ca = ca.display()
    )
}

/// The API server's URL.
pub(crate) fn server(ports: &Ports) -> String {
    format!("https://127.0.0.1:{}", ports.apiserver)
}

fn flag(name: &str, value: impl std::fmt::Display) -> String {
    format!("--{name}={value}")
}

/// etcd, one member, plain HTTP on loopback (only the API server talks to it).
pub(crate) fn etcd_args(paths: &Paths, ports: &Ports) -> Vec<String> {
    let client = format!("http://127.0.0.1:{}", ports.etcd_client);
    let peer = format!("http://127.0.0.1:{}", ports.etcd_peer);
    vec![
        flag("name", "kube"),
        flag("data-dir", paths.etcd_data().display()),
        flag("listen-client-urls", &client),
        flag("advertise-client-urls", &client),
        flag("listen-peer-urls", &peer),
        flag("initial-advertise-peer-urls", &peer),
        flag("initial-cluster", format!("kube={peer}")),
        flag("listen-metrics-urls", ""),
        flag("log-level", "warn"),
    ]
}

/// kube-apiserver on 127.0.0.1: tokens from the file, RBAC, ServiceAccount tokens signed with
/// `sa.key`, Pod Security from [`admission_configuration`]. No endpoint reconciler: the
/// `kubernetes` Service's endpoint would be 127.0.0.1, which endpoint validation refuses.
pub(crate) fn apiserver_args(paths: &Paths, ports: &Ports) -> Vec<String> {
    vec![
        flag("etcd-servers", format!("http://127.0.0.1:{}", ports.etcd_client)),
        flag("bind-address", "127.0.0.1"),
        flag("advertise-address", "127.0.0.1"),
        flag("secure-port", ports.apiserver),
        flag("tls-cert-file", paths.serving_cert().display()),
        flag("tls-private-key-file", paths.serving_key().display()),
        flag("client-ca-file", paths.ca_cert().display()),
        flag("token-auth-file", paths.tokens().display()),
        flag("authorization-mode", "RBAC"),
        flag("service-account-issuer", "https://kubernetes.default.svc"),
        flag("service-account-key-file", paths.sa_pub().display()),
        flag("service-account-signing-key-file", paths.sa_key().display()),
        flag("service-cluster-ip-range", SERVICE_CIDR),
        flag("admission-control-config-file", paths.admission().display()),
        flag("endpoint-reconciler-type", "none"),
        flag("cert-dir", paths.file("apiserver-certs").display()),
        flag("profiling", false),
    ]
}

/// kube-controller-manager: every default controller, each with its own ServiceAccount's
/// credentials as in a real cluster (so RBAC applies to what they do), no leader election.
pub(crate) fn controller_manager_args(paths: &Paths, ports: &Ports) -> Vec<String> {
    let kubeconfig = paths.controller_manager_kubeconfig();
    vec![
        flag("kubeconfig", kubeconfig.display()),
        flag("authentication-kubeconfig", kubeconfig.display()),
        flag("authorization-kubeconfig", kubeconfig.display()),
        flag("bind-address", "127.0.0.1"),
        flag("secure-port", ports.controller_manager),
        flag("cert-dir", paths.file("controller-manager-certs").display()),
        flag("leader-elect", false),
        flag("use-service-account-credentials", true),
        flag("service-account-private-key-file", paths.sa_key().display()),
        flag("root-ca-file", paths.ca_cert().display()),
        flag("service-cluster-ip-range", SERVICE_CIDR),
        flag("profiling", false),
    ]
}

/// `kube-controller-manager`'s token user, for its kubeconfig.
pub(crate) fn controller_manager_user() -> &'static str {
    CONTROLLER_MANAGER
}

#[cfg(test)]
mod tests {
    use super::*;

    fn paths() -> Paths {
        Paths { dir: "/p".into() }
    }
    const PORTS: Ports = Ports {
        etcd_client: 1,
        etcd_peer: 2,
        apiserver: 3,
        controller_manager: 4,
    };

    #[test]
    fn token_file_has_one_line_per_user() {
        let tokens = Tokens {
            cluster_admin: "a".into(),
            namespace_admin: "n".into(),
            controller_manager: "c".into(),
        };
        let file = token_file(&tokens);
        let lines: Vec<&str> = file.lines().collect();
        assert_eq!(
            lines,
            [
                "a,faros-cluster-admin,uid-cluster-admin,\"system:masters\"",
                "n,faros-namespace-admin,uid-namespace-admin",
                "c,system:kube-controller-manager,uid-kube-controller-manager",
            ]
        );
    }

    #[test]
    fn processes_listen_on_loopback_only() {
        let cases: [(&str, Vec<String>, &[&str]); 3] = [
            (
                "etcd",
                etcd_args(&paths(), &PORTS),
                &[
                    "--listen-client-urls=http://127.0.0.1:1",
                    "--listen-peer-urls=http://127.0.0.1:2",
                ],
            ),
            (
                "kube-apiserver",
                apiserver_args(&paths(), &PORTS),
                &[
                    "--bind-address=127.0.0.1",
                    "--secure-port=3",
                    "--etcd-servers=http://127.0.0.1:1",
                    "--service-cluster-ip-range=198.51.100.0/24",
                    "--admission-control-config-file=/p/admission.yaml",
                    "--token-auth-file=/p/tokens.csv",
                ],
            ),
            (
                "kube-controller-manager",
                controller_manager_args(&paths(), &PORTS),
                &[
                    "--bind-address=127.0.0.1",
                    "--secure-port=4",
                    "--use-service-account-credentials=true",
                    "--service-account-private-key-file=/p/sa.key",
                ],
            ),
        ];
        for (name, args, want) in cases {
            for w in want {
                assert!(args.iter().any(|a| a == w), "{name}: {w} missing in {args:?}");
            }
        }
    }

    #[test]
    fn networks_overlap_when_they_share_an_address() {
        for (a, b, want) in [
            ("198.51.100.0/24", "192.0.2.2/24", false),
            ("192.0.2.0/24", "192.0.2.2/24", true),
            ("198.51.100.0/24", "198.0.0.1/8", true),
            ("198.51.100.0/24", "198.51.100.77/32", true),
            ("198.51.100.0/24", "127.0.0.1/8", false),
            ("198.51.100.0/24", "garbage", false),
        ] {
            assert_eq!(overlaps(a, b), want, "{a} {b}");
        }
    }

    #[test]
    fn pod_security_restricted_but_kube_system() {
        let config: serde_json::Value = serde_saphyr::from_str(admission_configuration()).unwrap();
        let ps = &config["plugins"][0]["configuration"];
        for mode in ["enforce", "warn", "audit"] {
            assert_eq!(ps["defaults"][mode], "restricted", "{mode}");
        }
        assert_eq!(ps["exemptions"]["namespaces"], serde_json::json!(["kube-system"]));
    }

    #[test]
    fn namespace_admin_is_admin_of_the_namespace_only() {
        let binding: serde_json::Value = serde_saphyr::from_str(&namespace_admin_rbac("faros")).unwrap();
        assert_eq!(binding["kind"], "RoleBinding");
        assert_eq!(binding["metadata"]["namespace"], "faros");
        assert_eq!(binding["roleRef"]["kind"], "ClusterRole");
        assert_eq!(binding["roleRef"]["name"], "admin");
        assert_eq!(binding["subjects"][0]["name"], NAMESPACE_ADMIN);
    }

    #[test]
    fn kubeconfig_names_server_ca_and_token() {
        let k: serde_json::Value =
            serde_saphyr::from_str(&kubeconfig("https://127.0.0.1:3", Path::new("/p/ca.crt"), "u", "t")).unwrap();
        assert_eq!(k["clusters"][0]["cluster"]["server"], "https://127.0.0.1:3");
        assert_eq!(k["clusters"][0]["cluster"]["certificate-authority"], "/p/ca.crt");
        assert_eq!(k["users"][0]["user"]["token"], "t");
        assert_eq!(k["current-context"], "u");
    }
}
