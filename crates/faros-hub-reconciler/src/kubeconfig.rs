//! The kubeconfig a provider runs with: IO-free rendering, and the Secret that carries it.
//!
//! The server is `<base>/clusters/<logical cluster id>`: the cluster **name**, never the path, so the
//! kubeconfig keeps working if the workspace tree is ever re-parented and does not need kcp's path
//! index to resolve. TLS is verified against the hub/kcp CA unless the operator explicitly asked for
//! `insecure-skip-tls-verify` (the original always skipped verification; we do not).
use base64::Engine;
use base64::engine::general_purpose::STANDARD;
use faros_core::names;
use faros_core::path::ClusterName;
use k8s_openapi::ByteString;
use k8s_openapi::api::core::v1::Secret;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
use serde::Serialize;

/// Why a kubeconfig could not be rendered. Each message names the offending input.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum KubeconfigError {
    #[error("no server URL: set spec.serverURLOverride on the Provider or --hub-url (FAROS_HUB_URL) on the reconciler")]
    NoServer,
    #[error("server URL {url:?} is not an absolute http(s) URL: {reason}")]
    InvalidServer { url: String, reason: String },
    #[error("logical cluster id {id:?} is not a valid logical cluster name")]
    InvalidClusterId { id: String },
    #[error("the ServiceAccount token is empty")]
    EmptyToken,
}

/// Everything that goes into one provider kubeconfig.
#[derive(Debug, Clone, Copy)]
pub struct KubeconfigParams<'a> {
    /// `spec.serverURLOverride`, else the reconciler's hub URL.
    pub server_base: &'a str,
    /// The workspace's logical cluster name (`Workspace.spec.cluster`).
    pub cluster_id: &'a str,
    /// The provider ServiceAccount's long-lived token.
    pub token: &'a str,
    /// PEM of the CA that signs the hub's serving certificate; `None` trusts the system roots.
    pub ca_pem: Option<&'a str>,
    /// Write `insecure-skip-tls-verify: true` (and no CA, which kubectl would reject alongside it).
    pub insecure_skip_tls_verify: bool,
}

/// The base URL to use: the override when set and non-blank, else the hub URL.
pub fn server_base<'a>(override_url: Option<&'a str>, hub_url: &'a str) -> &'a str {
    match override_url.map(str::trim) {
        Some(url) if !url.is_empty() => url,
        _ => hub_url.trim(),
    }
}

/// `<base>/clusters/<id>`. A trailing slash or an existing `/clusters/...` suffix on `base` (someone
/// pasted a kcp kubeconfig server) is dropped rather than doubled.
pub fn server_url(base: &str, cluster_id: &str) -> Result<String, KubeconfigError> {
    let base = base.trim();
    if base.is_empty() {
        return Err(KubeconfigError::NoServer);
    }
    let uri: http::Uri = base
        .parse()
        .map_err(|e: http::uri::InvalidUri| KubeconfigError::InvalidServer {
            url: base.into(),
            reason: e.to_string(),
        })?;
    match uri.scheme_str() {
        Some("http" | "https") if uri.authority().is_some() => {}
        _ => {
            return Err(KubeconfigError::InvalidServer {
                url: base.into(),
                reason: "expected http:// or https:// followed by a host".into(),
            });
        }
    }
    let id = ClusterName::new(cluster_id).map_err(|_| KubeconfigError::InvalidClusterId { id: cluster_id.into() })?;
    Ok(format!(
        "{}/clusters/{}",
        faros_core::client::server_root(base),
        id.as_str()
    ))
}

/// Renders the kubeconfig YAML. Cluster, user and context are all named
/// [`names::KUBECONFIG_ENTRY_NAME`].
pub fn render(params: &KubeconfigParams<'_>) -> Result<String, KubeconfigError> {
    if params.token.is_empty() {
        return Err(KubeconfigError::EmptyToken);
    }
    let server = server_url(params.server_base, params.cluster_id)?;
    let (ca_data, insecure) = if params.insecure_skip_tls_verify {
        (None, Some(true))
    } else {
        (
            params
                .ca_pem
                .filter(|p| !p.trim().is_empty())
                .map(|p| STANDARD.encode(p)),
            None,
        )
    };
    let entry = names::KUBECONFIG_ENTRY_NAME;
    let doc = Kubeconfig {
        api_version: "v1",
        kind: "Config",
        clusters: vec![Named {
            name: entry,
            cluster: Some(Cluster {
                server,
                certificate_authority_data: ca_data,
                insecure_skip_tls_verify: insecure,
            }),
            context: None,
            user: None,
        }],
        contexts: vec![Named {
            name: entry,
            cluster: None,
            context: Some(Context {
                cluster: entry,
                user: entry,
            }),
            user: None,
        }],
        current_context: entry,
        users: vec![Named {
            name: entry,
            cluster: None,
            context: None,
            user: Some(User { token: params.token }),
        }],
    };
    // Serialising plain strings and lists cannot fail; map it anyway rather than panic.
    serde_saphyr::to_string(&doc).map_err(|e| KubeconfigError::InvalidServer {
        url: String::new(),
        reason: e.to_string(),
    })
}

/// Data key of the CA bundle in the kubeconfig Secret: the same PEM as the kubeconfig's
/// `certificate-authority-data`, as a file a provider pod mounts to trust the hub for its
/// heartbeats. It travels with the kubeconfig so that a provider in its own namespace (the mirror's)
/// needs no Secret of the hub's namespace.
pub const CA_SECRET_KEY: &str = "ca.crt";

/// What a kubeconfig Secret holds: the kubeconfig, and the CA bundle unless kubeconfigs trust the
/// system roots (no CA configured) or skip verification.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SecretData<'a> {
    pub kubeconfig: &'a [u8],
    pub ca: Option<&'a [u8]>,
}

impl<'a> SecretData<'a> {
    /// The data for a kubeconfig rendered from `params`: its CA unless it skips verification.
    pub fn of(kubeconfig: &'a [u8], params: &KubeconfigParams<'a>) -> Self {
        let ca = (!params.insecure_skip_tls_verify)
            .then_some(params.ca_pem)
            .flatten()
            .filter(|p| !p.trim().is_empty())
            .map(str::as_bytes);
        Self { kubeconfig, ca }
    }

    /// Each key faros writes with what it should hold (`None`: absent).
    pub fn entries(&self) -> [(&'static str, Option<&'a [u8]>); 2] {
        [
            (names::KUBECONFIG_SECRET_KEY, Some(self.kubeconfig)),
            (CA_SECRET_KEY, self.ca),
        ]
    }
}

/// The Secret carrying a provider kubeconfig under key `kubeconfig` (and its CA under `ca.crt`),
/// labelled for `provider`: the one in kcp (`system:providers`) and its mirror in the hosting
/// cluster have this same shape. `data`, not `stringData`: SSA tracks ownership of `stringData`
/// keys on a path that never prunes `data`.
pub fn secret(provider: &str, namespace: &str, secret_name: &str, data: SecretData<'_>) -> Secret {
    labelled_secret(names::managed_labels(provider), namespace, secret_name, data)
}

/// A kubeconfig Secret of [`secret`]'s shape with `labels` (the GitOps registrar's is no Provider's).
pub fn labelled_secret(
    labels: std::collections::BTreeMap<String, String>,
    namespace: &str,
    secret_name: &str,
    data: SecretData<'_>,
) -> Secret {
    Secret {
        metadata: ObjectMeta {
            name: Some(secret_name.into()),
            namespace: Some(namespace.into()),
            labels: Some(labels),
            ..Default::default()
        },
        type_: Some("Opaque".into()),
        data: Some(
            data.entries()
                .into_iter()
                .filter_map(|(k, v)| Some((k.to_string(), ByteString(v?.to_vec()))))
                .collect(),
        ),
        ..Default::default()
    }
}

#[derive(Serialize)]
#[serde(rename_all = "kebab-case")]
struct Kubeconfig<'a> {
    #[serde(rename = "apiVersion")]
    api_version: &'a str,
    kind: &'a str,
    clusters: Vec<Named<'a>>,
    contexts: Vec<Named<'a>>,
    current_context: &'a str,
    users: Vec<Named<'a>>,
}

#[derive(Serialize)]
struct Named<'a> {
    name: &'a str,
    #[serde(skip_serializing_if = "Option::is_none")]
    cluster: Option<Cluster>,
    #[serde(skip_serializing_if = "Option::is_none")]
    context: Option<Context<'a>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    user: Option<User<'a>>,
}

#[derive(Serialize)]
#[serde(rename_all = "kebab-case")]
struct Cluster {
    server: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    certificate_authority_data: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    insecure_skip_tls_verify: Option<bool>,
}

#[derive(Serialize)]
struct Context<'a> {
    cluster: &'a str,
    user: &'a str,
}

#[derive(Serialize)]
struct User<'a> {
    token: &'a str,
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::expect_used)]
mod tests {
    use super::*;
    use kube::config::Kubeconfig as KubeKubeconfig;
    use pretty_assertions::assert_eq;

    const CA: &str = "-----BEGIN CERTIFICATE-----\nMIIB\n-----END CERTIFICATE-----\n";

    #[test]
    fn server_base_prefers_override() {
        for (override_url, hub, want) in [
            (None, "https://hub", "https://hub"),
            (Some(""), "https://hub", "https://hub"),
            (Some("  "), "https://hub", "https://hub"),
            (Some("https://other:8443"), "https://hub", "https://other:8443"),
        ] {
            assert_eq!(server_base(override_url, hub), want, "{override_url:?}");
        }
    }

    #[test]
    fn server_url_table() {
        for (base, id, want) in [
            (
                "https://hub.example",
                "2cynbfy2m0wtjqcs",
                Ok("https://hub.example/clusters/2cynbfy2m0wtjqcs"),
            ),
            ("https://hub.example/", "abc", Ok("https://hub.example/clusters/abc")),
            (
                "http://127.0.0.1:6443/clusters/root:x",
                "abc",
                Ok("http://127.0.0.1:6443/clusters/abc"),
            ),
            (
                "https://hub.example/prefix",
                "abc",
                Ok("https://hub.example/prefix/clusters/abc"),
            ),
            ("", "abc", Err(KubeconfigError::NoServer)),
            (
                "hub.example",
                "abc",
                Err(KubeconfigError::InvalidServer {
                    url: "hub.example".into(),
                    reason: "expected http:// or https:// followed by a host".into(),
                }),
            ),
            (
                "ftp://hub.example",
                "abc",
                Err(KubeconfigError::InvalidServer {
                    url: "ftp://hub.example".into(),
                    reason: "expected http:// or https:// followed by a host".into(),
                }),
            ),
            (
                "https://hub",
                "root:faros",
                Err(KubeconfigError::InvalidClusterId {
                    id: "root:faros".into(),
                }),
            ),
            (
                "https://hub",
                "",
                Err(KubeconfigError::InvalidClusterId { id: String::new() }),
            ),
        ] {
            assert_eq!(server_url(base, id), want.map(str::to_string), "{base:?} {id:?}");
        }
    }

    fn params(insecure: bool, ca: Option<&'static str>) -> KubeconfigParams<'static> {
        KubeconfigParams {
            server_base: "https://hub.example:6443",
            cluster_id: "2cynbfy2m0wtjqcs",
            token: "tok.en",
            ca_pem: ca,
            insecure_skip_tls_verify: insecure,
        }
    }

    #[test]
    fn renders_exact_yaml_with_ca() {
        let yaml = render(&params(false, Some(CA))).unwrap();
        let ca_b64 = STANDARD.encode(CA);
        let want = format!(
            "apiVersion: v1\nkind: Config\nclusters:\n- name: faros\n  cluster:\n    server: https://hub.example:6443/clusters/2cynbfy2m0wtjqcs\n    certificate-authority-data: {ca_b64}\ncontexts:\n- name: faros\n  context:\n    cluster: faros\n    user: faros\ncurrent-context: faros\nusers:\n- name: faros\n  user:\n    token: tok.en\n"
        );
        assert_eq!(yaml, want);
    }

    #[test]
    fn kube_rs_reads_it_back() {
        struct Case {
            name: &'static str,
            insecure: bool,
            ca: Option<&'static str>,
            want_ca: Option<String>,
            want_insecure: Option<bool>,
        }
        for c in [
            Case {
                name: "ca",
                insecure: false,
                ca: Some(CA),
                want_ca: Some(STANDARD.encode(CA)),
                want_insecure: None,
            },
            Case {
                name: "system roots",
                insecure: false,
                ca: None,
                want_ca: None,
                want_insecure: None,
            },
            Case {
                name: "blank ca",
                insecure: false,
                ca: Some(" \n"),
                want_ca: None,
                want_insecure: None,
            },
            Case {
                name: "insecure drops ca",
                insecure: true,
                ca: Some(CA),
                want_ca: None,
                want_insecure: Some(true),
            },
        ] {
            let yaml = render(&params(c.insecure, c.ca)).unwrap();
            let kc = KubeKubeconfig::from_yaml(&yaml).unwrap();
            assert_eq!(kc.current_context.as_deref(), Some("faros"), "{}", c.name);
            let cluster = kc.clusters[0].cluster.as_ref().unwrap();
            assert_eq!(
                cluster.server.as_deref(),
                Some("https://hub.example:6443/clusters/2cynbfy2m0wtjqcs"),
                "{}",
                c.name
            );
            assert_eq!(cluster.certificate_authority_data, c.want_ca, "{}", c.name);
            assert_eq!(cluster.insecure_skip_tls_verify, c.want_insecure, "{}", c.name);
            assert_eq!(yaml.contains("insecure-skip-tls-verify"), c.insecure, "{}", c.name);
            let ctx = kc.contexts[0].context.as_ref().unwrap();
            assert_eq!(
                (ctx.cluster.as_str(), ctx.user.as_deref()),
                ("faros", Some("faros")),
                "{}",
                c.name
            );
            assert_eq!(kc.auth_infos[0].name, "faros", "{}", c.name);
        }
    }

    #[test]
    fn secret_body() {
        let data = |ca| SecretData {
            kubeconfig: b"yaml",
            ca,
        };
        let body = |data| serde_json::to_value(secret("q", "default", "q-kubeconfig", data)).unwrap();
        let expected = |data| {
            serde_json::json!({"apiVersion": "v1", "kind": "Secret",
                "metadata": {"name": "q-kubeconfig", "namespace": "default",
                    "labels": {"app.kubernetes.io/managed-by": "faros", "providers.faros.sh/provider": "q"}},
                "type": "Opaque", "data": data})
        };
        assert_eq!(
            body(data(None)),
            expected(serde_json::json!({"kubeconfig": "eWFtbA=="}))
        );
        assert_eq!(
            body(data(Some(b"pem"))),
            expected(serde_json::json!({"kubeconfig": "eWFtbA==", "ca.crt": "cGVt"}))
        );
    }

    #[test]
    fn secret_data_carries_the_kubeconfig_ca_unless_verification_is_skipped() {
        let cases = [
            ("a CA", params(false, Some("PEM")), Some(&b"PEM"[..])),
            ("system roots", params(false, None), None),
            ("a blank CA is none", params(false, Some(" \n")), None),
            ("insecure", params(true, Some("PEM")), None),
        ];
        for (name, p, want) in cases {
            assert_eq!(SecretData::of(b"kc", &p).ca, want, "{name}");
        }
    }

    #[test]
    fn rejects_empty_token() {
        let mut p = params(false, None);
        p.token = "";
        assert_eq!(render(&p), Err(KubeconfigError::EmptyToken));
    }
}
