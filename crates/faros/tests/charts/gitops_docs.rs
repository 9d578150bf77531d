//! docs/install.md's GitOps examples: every fenced `yaml` block of "Providers from a GitOps
//! repository" parses, and the Flux and Argo CD objects use the registrar's kubeconfig Secret
//! (name, key, namespace) the way the reconciler publishes it, so a renamed Secret or key breaks here
//! rather than in someone's cluster.

use faros_hub_reconciler::registrar;
use serde_json::Value;

use super::root;

/// The `yaml` blocks of the section starting at heading `## <title>`, up to the next `## `.
fn yaml_blocks(markdown: &str, title: &str) -> Vec<String> {
    let heading = format!("## {title}");
    let start = markdown
        .find(&heading)
        .unwrap_or_else(|| panic!("docs/install.md has no section {heading:?}"));
    let rest = &markdown[start + heading.len()..];
    let section = &rest[..rest.find("\n## ").unwrap_or(rest.len())];
    let mut blocks = Vec::new();
    // The block being read and its fence's indentation (inside a list item), which its lines share.
    let mut current: Option<(String, usize)> = None;
    for line in section.lines() {
        let indent = line.len() - line.trim_start().len();
        match (line.trim().strip_prefix("```"), current.as_mut()) {
            (Some(_), Some(_)) => blocks.extend(current.take().map(|(b, _)| b)),
            (Some(info), None) if info.trim() == "yaml" => current = Some((String::new(), indent)),
            (None, Some((block, fence))) => {
                block.push_str(line.get(*fence..).unwrap_or_default());
                block.push('\n');
            }
            _ => {}
        }
    }
    blocks
}

fn objects() -> Vec<Value> {
    let text = std::fs::read_to_string(root().join("docs/install.md")).unwrap();
    let blocks = yaml_blocks(&text, "Providers from a GitOps repository");
    assert!(
        blocks.len() >= 4,
        "Flux, the Argo CD Secret, Application and argocd-cm: {blocks:#?}"
    );
    blocks
        .iter()
        .flat_map(|b| {
            serde_saphyr::from_multiple::<Value>(b).unwrap_or_else(|e| panic!("a yaml block does not parse: {e}\n{b}"))
        })
        .collect()
}

fn find<'a>(objects: &'a [Value], kind: &str) -> &'a Value {
    objects
        .iter()
        .find(|o| o["kind"] == kind)
        .unwrap_or_else(|| panic!("no {kind} among {objects:#?}"))
}

/// The namespace the umbrella mirrors to for release `faros` in namespace `faros`.
const MIRROR_NAMESPACE: &str = "faros-providers";

#[test]
fn flux_applies_with_the_mirrored_registrar_kubeconfig() {
    let objects = objects();
    let kustomization = find(&objects, "Kustomization");
    assert_eq!(kustomization["apiVersion"], "kustomize.toolkit.fluxcd.io/v1");
    // kustomize-controller reads kubeConfig.secretRef from the Kustomization's own namespace.
    assert_eq!(kustomization["metadata"]["namespace"], MIRROR_NAMESPACE);
    let secret_ref = &kustomization["spec"]["kubeConfig"]["secretRef"];
    assert_eq!(secret_ref["name"], registrar::KUBECONFIG_SECRET);
    assert_eq!(secret_ref["key"], faros_core::names::KUBECONFIG_SECRET_KEY);
    assert_eq!(kustomization["spec"]["wait"], true, "health comes from Provider status");
    let source = find(&objects, "GitRepository");
    assert_eq!(source["apiVersion"], "source.toolkit.fluxcd.io/v1");
    assert_eq!(kustomization["spec"]["sourceRef"]["name"], source["metadata"]["name"]);
    assert_eq!(kustomization["spec"]["sourceRef"]["kind"], "GitRepository");
    assert_eq!(source["metadata"]["namespace"], kustomization["metadata"]["namespace"]);
}

#[test]
fn argo_cd_reaches_the_providers_workspace_through_a_cluster_secret() {
    let objects = objects();
    let secret = objects
        .iter()
        .find(|o| o["kind"] == "Secret" && o["metadata"]["labels"]["argocd.argoproj.io/secret-type"] == "cluster")
        .expect("an Argo CD cluster Secret");
    let data = &secret["stringData"];
    let server = data["server"].as_str().unwrap();
    let (_, cluster) = server
        .rsplit_once("/clusters/")
        .expect("the server addresses a logical cluster");
    assert!(
        faros_core::path::ClusterName::new(cluster).is_ok(),
        "a logical cluster name, not a path: {server}"
    );
    let config: Value = serde_json::from_str(data["config"].as_str().unwrap()).expect("config is JSON");
    assert!(config["bearerToken"].is_string(), "{config}");
    assert!(config["tlsClientConfig"]["caData"].is_string(), "{config}");

    let app = find(&objects, "Application");
    assert_eq!(app["apiVersion"], "argoproj.io/v1alpha1");
    assert_eq!(
        app["spec"]["destination"]["name"], data["name"],
        "the Application targets that cluster"
    );
    assert_eq!(app["metadata"]["namespace"], secret["metadata"]["namespace"]);

    let cm = objects
        .iter()
        .find(|o| o["data"]["resource.customizations.health.admin.faros.sh_Provider"].is_string())
        .expect("argocd-cm with the Provider health check");
    assert_eq!(
        cm["data"]["resource.respectRBAC"], "normal",
        "the registrar may list Providers only"
    );
}

#[test]
fn the_documented_sh_reads_the_registrar_secret_by_name() {
    let text = std::fs::read_to_string(root().join("docs/install.md")).unwrap();
    let wanted = format!(
        "kubectl -n {MIRROR_NAMESPACE} get secret {} -o jsonpath='{{.data.{}}}'",
        registrar::KUBECONFIG_SECRET,
        faros_core::names::KUBECONFIG_SECRET_KEY
    );
    assert!(
        text.replace("\\\n  ", "").contains(&wanted),
        "docs/install.md reads the mirrored registrar kubeconfig with `{wanted}`"
    );
}
