//! Enable, Disable and the enabled list end to end: an in-process embedded kcp, the hub
//! reconciler provisioning provider workspaces, providers initialised by applying what a
//! provider's `init` applies (schema, APIExport, CatalogEntry), a tenant workspace with static-token
//! users, and the hub authenticating them by TokenReview against kcp.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use std::time::Duration;

use common::{WAIT, eventually};
use faros_core::catalog::{ApiExportRef, CatalogEntry, CatalogEntrySpec, Dependency, PermissionClaim};
use faros_core::client::ClientFactory;
use faros_core::conditions;
use faros_core::kcp::apis::v1alpha1::APIResourceSchema;
use faros_core::kcp::apis::v1alpha2::{
    self as apis, APIBinding, APIExport, APIExportSpec, AcceptablePermissionClaimState, ResourceSchema,
};
use faros_core::kcp::{Workspace, WorkspaceSpec, WorkspaceTypeReference};
use faros_core::names;
use faros_core::provider::{Provider, ProviderSpec};
use faros_core::wait::wait_for;
use faros_embedded_kcp::{Config as KcpConfig, Server};
use faros_hub_api::tenancy::Role;
use faros_hub_api::tenancy::rbac;
use faros_hub_api::{Config, Hub};
use faros_test_support::kubeconfig::config_from_yaml;
use faros_test_support::users::{static_token, write_token_file};
use k8s_openapi::api::rbac::v1::{ClusterRole, ClusterRoleBinding};
use kube::api::{ApiResource, DynamicObject, GroupVersionKind, Patch, PatchParams, PostParams};
use kube::{Api, ResourceExt};
use pretty_assertions::assert_eq;
use serde_json::{Value, json};
use tokio::net::TcpListener;
use tokio::sync::oneshot;

const ALICE: &str = "alice-token-0123456789abcdef"; // admin of acme/dev
const BOB: &str = "bob-token-0123456789abcdef"; // member of acme/dev
const CAROL: &str = "carol-token-0123456789abcdef"; // no membership
const GROUP: &str = "greeter.faros.sh";

struct Stack {
    kcp: Server,
    factory: ClientFactory,
    hub: String,
    _dir: tempfile::TempDir,
    stops: Vec<oneshot::Sender<()>>,
    tasks: Vec<tokio::task::JoinHandle<()>>,
}

impl Stack {
    async fn start() -> Self {
        common::init_tracing_and_crypto();
        let dir = tempfile::tempdir().unwrap();
        let tokens = dir.path().join("tokens.csv");
        write_token_file(
            &tokens,
            &[
                static_token(ALICE, "alice", "alice-uid", &["devs"]),
                static_token(BOB, "bob", "bob-uid", &[]),
                static_token(CAROL, "carol", "carol-uid", &[]),
            ],
        )
        .unwrap();
        let mut config = KcpConfig::new(dir.path().join("state"));
        config.token_file = Some(tokens);
        let kcp = Server::start(config).await.unwrap();
        let admin = config_from_yaml(&kcp.admin_kubeconfig()).await.unwrap();
        let factory = ClientFactory::new(admin.clone()).unwrap();

        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let hub = format!("http://{}", listener.local_addr().unwrap());
        let mut stops = Vec::new();
        let mut tasks = Vec::new();

        let mut rc = faros_hub_reconciler::Config::new(admin.clone());
        rc.hub_url = Some(hub.clone());
        let (tx, rx) = oneshot::channel::<()>();
        stops.push(tx);
        tasks.push(tokio::spawn(async move {
            faros_hub_reconciler::run(rc, async {
                let _ = rx.await;
            })
            .await
            .unwrap();
        }));

        let mut config = Config::new(admin);
        config.catalog.sweep_interval = Duration::from_millis(200);
        config.catalog.retry_delay = Duration::from_millis(200);
        config.tenancy.enable_wait = Some(Duration::from_secs(30));
        let app = Hub::new(config).unwrap();
        let (tx, rx) = oneshot::channel::<()>();
        stops.push(tx);
        tasks.push(tokio::spawn(async move {
            app.serve(listener, async {
                let _ = rx.await;
            })
            .await
            .unwrap();
        }));
        Self {
            kcp,
            factory,
            hub,
            _dir: dir,
            stops,
            tasks,
        }
    }

    fn client(&self, cluster: &str) -> kube::Client {
        self.factory.cluster(cluster).unwrap()
    }

    /// A kube client for a static-token user, straight to kcp.
    async fn user_client(&self, token: &str, cluster: &str) -> kube::Client {
        let mut config = config_from_yaml(&self.kcp.admin_kubeconfig()).await.unwrap();
        config.auth_info = kube::config::AuthInfo {
            token: Some(token.to_string().into()),
            ..Default::default()
        };
        ClientFactory::new(config).unwrap().cluster(cluster).unwrap()
    }

    async fn stop(self) {
        for s in self.stops {
            let _ = s.send(());
        }
        for t in self.tasks {
            tokio::time::timeout(WAIT, t).await.unwrap().unwrap();
        }
        self.kcp.shutdown().await;
    }
}

/// The Provider, its workspace, and what `init` applies there: schema, APIExport, CatalogEntry.
async fn provider(stack: &Stack, name: &str, claims: &[(&str, &[&str])], deps: &[&str], edges: bool) -> String {
    let providers: Api<Provider> = Api::all(stack.client(names::SYSTEM_PROVIDERS_PATH));
    providers
        .create(&PostParams::default(), &Provider::new(name, ProviderSpec::default()))
        .await
        .unwrap();
    wait_for(
        providers,
        name,
        |p| {
            p.and_then(|p| p.status.as_ref())
                .is_some_and(|s| conditions::is_true(&s.conditions, names::CONDITION_READY))
        },
        WAIT,
    )
    .await
    .unwrap();
    let ws = stack.client(&names::provider_workspace_path(name));
    let group = format!("{name}.{GROUP}");
    let schema_name = format!("v1.greetings.{group}");
    let schema: APIResourceSchema = serde_json::from_value(json!({
        "apiVersion": "apis.kcp.io/v1alpha1", "kind": "APIResourceSchema",
        "metadata": {"name": schema_name},
        "spec": {"group": group, "scope": "Namespaced",
          "names": {"kind": "Greeting", "listKind": "GreetingList", "plural": "greetings", "singular": "greeting"},
          "versions": [{"name": "v1alpha1", "served": true, "storage": true,
            "schema": {"type": "object", "x-kubernetes-preserve-unknown-fields": true}}]}
    }))
    .unwrap();
    Api::<APIResourceSchema>::all(ws.clone())
        .create(&PostParams::default(), &schema)
        .await
        .unwrap();
    let export_name = format!("{name}.faros.sh");
    let export = APIExport::new(
        &export_name,
        APIExportSpec {
            resources: Some(vec![ResourceSchema::crd(&group, "greetings", &schema_name)]),
            permission_claims: Some(
                claims
                    .iter()
                    .map(|(resource, verbs)| apis::PermissionClaim::new("", resource, verbs))
                    .collect(),
            ),
            ..Default::default()
        },
    );
    Api::<APIExport>::all(ws.clone())
        .create(&PostParams::default(), &export)
        .await
        .unwrap();
    let entry = CatalogEntry::new(
        name,
        CatalogEntrySpec {
            display_name: name.into(),
            api_export: Some(ApiExportRef {
                name: export_name,
                permission_claims: Some(
                    claims
                        .iter()
                        .map(|(resource, verbs)| PermissionClaim {
                            resource: (*resource).into(),
                            verbs: verbs.iter().map(|v| (*v).to_string()).collect(),
                            ..Default::default()
                        })
                        .collect(),
                ),
            }),
            dependencies: Some(deps.iter().map(|d| Dependency { name: (*d).into() }).collect()),
            edge_proxy_access: Some(edges),
            ..Default::default()
        },
    );
    Api::<CatalogEntry>::all(ws)
        .create(&PostParams::default(), &entry)
        .await
        .unwrap();
    group
}

/// Creates a Workspace of `type_` under `parent` and waits until it is Ready.
async fn workspace(stack: &Stack, parent: &str, name: &str, type_: &str) {
    let api: Api<Workspace> = Api::all(stack.client(parent));
    let ws = Workspace::new(
        name,
        WorkspaceSpec {
            type_: Some(WorkspaceTypeReference {
                name: type_.into(),
                path: Some(names::WORKSPACE_TYPES_PATH.into()),
            }),
            ..Default::default()
        },
    );
    // The reconciler bootstraps the WorkspaceTypes after the tree; until then kcp refuses the type.
    eventually("the workspace is accepted", WAIT, || async {
        match api.create(&PostParams::default(), &ws).await {
            Ok(_) => Some(()),
            Err(kube::Error::Api(s)) if s.code == 409 => Some(()),
            Err(_) => None,
        }
    })
    .await;
    wait_for(api, name, |w| w.is_some_and(|w| w.is_ready()), WAIT)
        .await
        .unwrap();
}

async fn call(stack: &Stack, token: Option<&str>, path: &str, body: Option<&str>) -> (u16, Value) {
    let url = format!("{}{path}", stack.hub);
    let client = common::http();
    let mut req = if path.ends_with("/enabled") {
        client.get(url)
    } else {
        client.post(url)
    };
    if let Some(t) = token {
        req = req.bearer_auth(t);
    }
    if let Some(b) = body {
        req = req.header("content-type", "application/json").body(b.to_string());
    }
    let resp = req.send().await.unwrap();
    let code = resp.status().as_u16();
    let text = resp.text().await.unwrap();
    (code, serde_json::from_str(&text).unwrap_or(Value::String(text)))
}

fn claim_states(b: &APIBinding) -> Vec<(String, Vec<String>, AcceptablePermissionClaimState, bool)> {
    b.spec
        .permission_claims
        .iter()
        .flatten()
        .map(|c| {
            (
                c.resource.clone(),
                c.verbs.clone(),
                c.state.clone(),
                c.selector.match_all,
            )
        })
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn enable_disable_and_the_enabled_list() {
    let stack = Stack::start().await;
    let (org, ws) = ("acme", "dev");
    let team = names::team_workspace_path(org, ws);
    let enable = |p: &str| names::enable_path(org, ws, p);
    let disable = |p: &str| names::disable_path(org, ws, p);
    let enabled = names::enabled_path(org, ws);

    // Tenant: org and team workspace, membership RBAC as the tenancy API writes it.
    eventually("root:faros:tenants", WAIT, || async {
        Api::<Workspace>::all(stack.client(names::FAROS_PATH))
            .get_opt("tenants")
            .await
            .ok()
            .flatten()
            .filter(|w| w.is_ready())
    })
    .await;
    workspace(&stack, names::TENANTS_PATH, org, names::WORKSPACE_TYPE_ORGANIZATION).await;
    workspace(
        &stack,
        &names::org_workspace_path(org),
        ws,
        names::WORKSPACE_TYPE_WORKSPACE,
    )
    .await;
    let tenant = stack.client(&team);
    let roles: Api<ClusterRole> = Api::all(tenant.clone());
    for r in rbac::workspace_roles() {
        roles.create(&PostParams::default(), &r).await.unwrap();
    }
    let crbs: Api<ClusterRoleBinding> = Api::all(tenant.clone());
    for b in [
        rbac::member_binding("alice", Role::Admin),
        rbac::member_binding("bob", Role::Member),
    ] {
        crbs.create(&PostParams::default(), &b).await.unwrap();
    }

    // Providers: `greeter` with two claims, `fan` needing greeter and edge proxy access.
    let greeter_group = provider(
        &stack,
        "greeter",
        &[("configmaps", &["get", "list", "watch"]), ("secrets", &["get"])],
        &[],
        false,
    )
    .await;
    provider(&stack, "fan", &[], &["greeter"], true).await;
    eventually("both providers in the catalog", WAIT, || async {
        let r = common::http()
            .get(format!("{}/api/providers", stack.hub))
            .bearer_auth(ALICE)
            .send()
            .await
            .ok()?;
        let list: Value = r.json().await.ok()?;
        let ready: Vec<&str> = list["items"]
            .as_array()?
            .iter()
            .filter(|i| i["ready"] == true)
            .filter_map(|i| i["name"].as_str())
            .collect();
        (ready.contains(&"greeter") && ready.contains(&"fan")).then_some(())
    })
    .await;

    // Who may enable.
    let (code, _) = call(&stack, None, &enable("greeter"), None).await;
    assert_eq!(code, 401);
    let (code, body) = call(&stack, Some(BOB), &enable("greeter"), None).await;
    assert_eq!(code, 403, "{body}");
    assert_eq!(
        body["message"],
        "user \"bob\" is a member of workspace \"dev\" of organization \"acme\" but this needs the admin role"
    );
    // Not a member: the workspace is not there for her (as if it did not exist).
    let (code, _) = call(&stack, Some(CAROL), &enable("greeter"), None).await;
    assert_eq!(code, 404);
    let (code, _) = call(&stack, Some(ALICE), &names::enable_path(org, "nope", "greeter"), None).await;
    assert_eq!(code, 404);

    // What may be enabled.
    let (code, body) = call(&stack, Some(ALICE), &enable("unknown"), None).await;
    assert_eq!(
        (code, body["message"].clone()),
        (404, json!("provider \"unknown\" not found"))
    );
    let (code, body) = call(&stack, Some(ALICE), &enable("greeter"), Some("{not json")).await;
    assert_eq!(code, 400, "{body}");
    assert!(
        body["message"].as_str().unwrap().starts_with("invalid JSON body"),
        "{body}"
    );
    let (code, body) = call(
        &stack,
        Some(ALICE),
        &enable("greeter"),
        Some(r#"{"acceptedClaims":[{"resource":"configmaps"},{"group":"apps","resource":"deployments"}]}"#),
    )
    .await;
    assert_eq!(code, 400, "{body}");
    assert_eq!(
        body["message"],
        "provider \"greeter\" does not declare the permission claim(s) deployments.apps; it declares: configmaps, secrets"
    );
    let (code, body) = call(&stack, Some(ALICE), &enable("fan"), None).await;
    assert_eq!(code, 409, "{body}");
    assert_eq!(
        body["message"],
        "provider \"fan\" requires provider(s) to be enabled first: greeter"
    );
    let bindings: Api<APIBinding> = Api::all(tenant.clone());
    assert!(bindings.get_opt("greeter").await.unwrap().is_none());
    assert!(bindings.get_opt("fan").await.unwrap().is_none());

    // Enable: verbs from the catalog, whatever the request says.
    let (code, body) = call(
        &stack,
        Some(ALICE),
        &enable("greeter"),
        Some(r#"{"acceptedClaims":[{"group":"","resource":"configmaps","verbs":["*","delete"]}]}"#),
    )
    .await;
    assert_eq!(
        (code, body.clone()),
        (200, json!({"bindingName": "greeter", "phase": "Bound"}))
    );
    let b = bindings.get("greeter").await.unwrap();
    let export = b.spec.reference.export.clone().unwrap();
    assert_eq!(
        (export.path.as_deref(), export.name.as_str()),
        (Some("root:faros:providers:greeter"), "greeter.faros.sh")
    );
    assert_eq!(
        claim_states(&b),
        vec![
            (
                "configmaps".into(),
                vec!["get".into(), "list".into(), "watch".into()],
                AcceptablePermissionClaimState::Accepted,
                true
            ),
            (
                "secrets".into(),
                vec!["get".into()],
                AcceptablePermissionClaimState::Rejected,
                true
            ),
        ]
    );
    assert_eq!(
        b.labels().get(names::LABEL_PROVIDER).map(String::as_str),
        Some("greeter")
    );

    // Members may now use the provider's resources (aggregated member role).
    let role = roles.get(&names::provider_member_role("greeter")).await.unwrap();
    assert_eq!(
        serde_json::to_value(&role.rules).unwrap(),
        json!([{"apiGroups": [greeter_group], "resources": ["greetings"], "verbs": ["*"]}])
    );
    let gvk = GroupVersionKind::gvk(&greeter_group, "v1alpha1", "Greeting");
    let ar = ApiResource::from_gvk_with_plural(&gvk, "greetings");
    let bob_greetings: Api<DynamicObject> = Api::namespaced_with(stack.user_client(BOB, &team).await, "default", &ar);
    let mut greeting = DynamicObject::new("hello", &ar).within("default");
    greeting.metadata.finalizers = Some(vec!["greeter.faros.sh/keep".into()]);
    greeting.data = json!({"spec": {"name": "world"}});
    eventually("bob creates a Greeting", WAIT, || async {
        bob_greetings.create(&PostParams::default(), &greeting).await.ok()
    })
    .await;

    // Re-enable with other claims: states change, verbs stay the catalog's.
    let (code, _) = call(
        &stack,
        Some(ALICE),
        &enable("greeter"),
        Some(r#"{"acceptedClaims":[{"resource":"secrets"}]}"#),
    )
    .await;
    assert_eq!(code, 200);
    let b = bindings.get("greeter").await.unwrap();
    assert_eq!(
        claim_states(&b)
            .into_iter()
            .map(|(r, _, s, _)| (r, s))
            .collect::<Vec<_>>(),
        vec![
            ("configmaps".to_string(), AcceptablePermissionClaimState::Rejected),
            ("secrets".to_string(), AcceptablePermissionClaimState::Accepted),
        ]
    );

    // The dependency is Bound now; fan gets its edge proxy grant for its own ServiceAccount.
    let (code, body) = call(&stack, Some(ALICE), &enable("fan"), Some("")).await;
    assert_eq!((code, body), (200, json!({"bindingName": "fan", "phase": "Bound"})));
    let fan_cluster = Api::<Workspace>::all(stack.client(names::PROVIDERS_PATH))
        .get("fan")
        .await
        .unwrap()
        .spec
        .cluster
        .unwrap();
    let grant = crbs.get(&names::edges_proxy_grant("fan")).await.unwrap();
    assert_eq!(
        serde_json::to_value(&grant.subjects).unwrap(),
        json!([{"apiGroup": "rbac.authorization.k8s.io", "kind": "User",
                "name": format!("system:kcp:serviceaccount:{fan_cluster}:default:provider")}])
    );
    let grant_role = roles.get(&names::edges_proxy_grant("fan")).await.unwrap();
    assert_eq!(
        serde_json::to_value(&grant_role.rules).unwrap(),
        json!([{"nonResourceURLs": ["/"], "verbs": ["access"]},
               {"apiGroups": ["*"], "resources": ["edges"], "verbs": ["proxy"]}])
    );

    // The enabled list: members read it, outsiders do not.
    let (code, body) = call(&stack, Some(CAROL), &enabled, None).await;
    assert_eq!(code, 404, "{body}");
    let (code, body) = call(&stack, Some(BOB), &enabled, None).await;
    assert_eq!(code, 200, "{body}");
    assert_eq!(
        body,
        json!({"items": [
            {"name": "fan", "bindingName": "fan", "phase": "Bound", "bound": true, "problem": null, "acceptedClaims": [],
             "resources": ["greetings.fan.greeter.faros.sh"],
             "terminating": false, "deletionBlocked": null, "ready": true},
            {"name": "greeter", "bindingName": "greeter", "phase": "Bound", "bound": true, "problem": null,
             "acceptedClaims": [{"group": "", "resource": "secrets"}],
             "resources": ["greetings.greeter.greeter.faros.sh"],
             "terminating": false, "deletionBlocked": null, "ready": true},
        ]})
    );

    // Disable: admins only, and not while an enabled provider depends on it.
    let (code, _) = call(&stack, Some(BOB), &disable("greeter"), None).await;
    assert_eq!(code, 403);
    let (code, body) = call(&stack, Some(ALICE), &disable("greeter"), None).await;
    assert_eq!(code, 409, "{body}");
    assert_eq!(
        body["message"],
        "provider \"greeter\" is required by fan enabled in this workspace; disable it first"
    );
    assert!(bindings.get_opt("greeter").await.unwrap().is_some());

    // fan: no bound objects, so gone at once or shortly; its grant goes with it.
    let (code, _) = call(&stack, Some(ALICE), &disable("fan"), None).await;
    assert!(code == 202 || code == 204, "{code}");
    wait_for(bindings.clone(), "fan", |b| b.is_none(), WAIT).await.unwrap();
    assert!(crbs.get_opt(&names::edges_proxy_grant("fan")).await.unwrap().is_none());
    assert!(roles.get_opt(&names::edges_proxy_grant("fan")).await.unwrap().is_none());

    // The Greeting's finalizer holds greeter's binding (202, blocked), then it goes.
    let (code, body) = call(&stack, Some(ALICE), &disable("greeter"), None).await;
    assert_eq!(code, 202, "{body}");
    assert_eq!(body["bindingName"], "greeter");
    assert_eq!(body["terminating"], true);
    assert!(
        roles
            .get_opt(&names::provider_member_role("greeter"))
            .await
            .unwrap()
            .is_none()
    );
    let row = eventually("deletion reported as blocked", WAIT, || async {
        let (_, body) = call(&stack, Some(BOB), &enabled, None).await;
        let row = body["items"]
            .as_array()?
            .iter()
            .find(|i| i["name"] == "greeter")?
            .clone();
        row["deletionBlocked"].is_string().then_some(row)
    })
    .await;
    assert_eq!(row["terminating"], true);
    assert!(
        row["deletionBlocked"]
            .as_str()
            .unwrap()
            .contains("greeter.faros.sh/keep"),
        "{row}"
    );
    let admin_greetings: Api<DynamicObject> = Api::namespaced_with(tenant.clone(), "default", &ar);
    admin_greetings
        .patch(
            "hello",
            &PatchParams::default(),
            &Patch::Merge(json!({"metadata": {"finalizers": null}})),
        )
        .await
        .unwrap();
    wait_for(bindings.clone(), "greeter", |b| b.is_none(), WAIT)
        .await
        .unwrap();
    let (code, body) = call(&stack, Some(ALICE), &disable("greeter"), None).await;
    assert_eq!((code, body), (204, json!("")));

    let (code, body) = call(&stack, Some(BOB), &enabled, None).await;
    assert_eq!((code, body), (200, json!({"items": []})));
    // Disabling what is not enabled is a no-op.
    let (code, _) = call(&stack, Some(ALICE), &disable("fan"), None).await;
    assert_eq!(code, 204);

    // The tenant kubeconfig over HTTP/2 and without a configured public URL: HTTP/2 clients name
    // the hub in `:authority`, not `Host` (it was 400 "no valid Host header" for curl and browsers).
    let h2 = reqwest::Client::builder().http2_prior_knowledge().build().unwrap();
    let resp = h2
        .get(format!("{}/api/orgs/{org}/workspaces/{ws}/kubeconfig", stack.hub))
        .bearer_auth(ALICE)
        .send()
        .await
        .unwrap();
    assert_eq!(resp.version(), reqwest::Version::HTTP_2);
    let code = resp.status().as_u16();
    let text = resp.text().await.unwrap();
    assert_eq!(code, 200, "{text}");
    assert!(text.contains(&format!("server: {}/clusters/", stack.hub)), "{text}");

    stack.stop().await;
}
