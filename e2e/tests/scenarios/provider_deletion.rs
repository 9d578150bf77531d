//! What a tenant sees when the platform admin deletes a provider it enabled: the provider leaves
//! the catalog and every hub route at once, the tenant's binding and objects stay (nothing a tenant
//! wrote is deleted behind their back), the binding reports the missing export, and Disable still
//! cleans up.
//!
//! Destructive: it deletes the platform's quickstart Provider, which every other scenario needs, and
//! leaves it deleted (re-apply `providers/quickstart/provider.yaml` and restart the provider to get
//! it back). In-process that is the test's own platform; against an external one it runs only when
//! the platform allows destructive scenarios (`FAROS_E2E_DESTRUCTIVE=1`), after every other scenario.

use faros_core::names;
use faros_core::provider::Provider;
use faros_e2e::{Platform, WAIT, eventually, kubectl};
use kube::Api;
use kube::api::DeleteParams;
use reqwest::Method;
use serde_json::{Value, json};

const GREETING: &str = "apiVersion: quickstart.providers.faros.sh/v1alpha1\nkind: Greeting\nmetadata:\n  name: kept\n  namespace: default\nspec:\n  name: Lin\n";

pub async fn run(p: &Platform) {
    if !p.destructive() {
        eprintln!(
            "provider deletion: not run; it deletes the quickstart Provider, which this platform does not \
             allow (FAROS_E2E_DESTRUCTIVE=1 does)"
        );
        return;
    }
    p.provider_ready("quickstart").await.unwrap();
    let alice = p.add_user("alice").await.unwrap();
    let acme = p.unique("acme");
    let workspaces = format!("/api/orgs/{acme}/workspaces");
    for (path, name) in [("/api/orgs", acme.as_str()), (workspaces.as_str(), "dev")] {
        let r = p
            .call(Method::POST, path, Some(&alice), Some(json!({"name": name})))
            .await
            .unwrap();
        assert_eq!(r.status, 201, "{}", r.text);
    }
    let ws = &format!("/api/orgs/{acme}/workspaces/dev");
    let enabled = p
        .call(
            Method::POST,
            &format!("{ws}/providers/quickstart/enable"),
            Some(&alice),
            Some(json!({})),
        )
        .await
        .unwrap();
    assert_eq!(enabled.status, 200, "{}", enabled.text);
    let kubeconfig = p.tenant_kubeconfig(&acme, "dev", &alice).await.unwrap();
    let created = kubectl(&kubeconfig, &["create", "-f", "-"], Some(GREETING))
        .await
        .unwrap();
    assert!(created.status.success(), "{}", String::from_utf8_lossy(&created.stderr));

    // The platform admin deletes the Provider.
    let factory = faros_core::client::ClientFactory::new(p.admin()).unwrap();
    let providers: Api<Provider> = Api::all(factory.cluster(names::SYSTEM_PROVIDERS_PATH).unwrap());
    providers.delete("quickstart", &DeleteParams::default()).await.unwrap();

    // It leaves the catalog, and with it the proxies and MCP.
    let token = alice.token.clone();
    eventually("quickstart to leave the catalog", WAIT, || async {
        let r = p.call(Method::GET, "/api/providers", Some(&token), None).await?;
        let listed = r.body["items"]
            .as_array()
            .is_some_and(|i| i.iter().any(|i| i["name"] == "quickstart"));
        Ok((!listed).then_some(()))
    })
    .await
    .unwrap();
    let proxied = p
        .call_with(
            Method::GET,
            "/services/providers/quickstart/api/hello",
            Some(&alice),
            None,
            &[("X-Faros-Org", acme.as_str()), ("X-Faros-Workspace", "dev")],
        )
        .await
        .unwrap();
    assert_eq!(proxied.status, 404, "{}", proxied.text);

    // The tenant's binding stays, marked: its export is gone, the provider not ready.
    let row = eventually("the binding to report the missing export", WAIT, || async {
        let r = p
            .call(Method::GET, &format!("{ws}/providers/enabled"), Some(&alice), None)
            .await?;
        let row = r.body["items"]
            .as_array()
            .and_then(|i| i.iter().find(|i| i["name"] == "quickstart").cloned());
        Ok(row.filter(|r| r["ready"] == false))
    })
    .await
    .unwrap();
    assert_eq!(row["ready"], false, "{row}");
    eventually("kcp to mark the binding's export missing", WAIT, || async {
        let out = kubectl(&kubeconfig, &["get", "apibinding", "quickstart", "-o", "json"], None).await?;
        let b: Value = serde_json::from_slice(&out.stdout)?;
        let invalid = b["status"]["conditions"].as_array().is_some_and(|c| {
            c.iter()
                .any(|c| c["type"] == "APIExportValid" && c["status"] == "False")
        });
        Ok(invalid.then_some(()))
    })
    .await
    .unwrap();

    // The tenant's data is still there.
    let kept = kubectl(
        &kubeconfig,
        &[
            "get",
            "greeting",
            "kept",
            "-n",
            "default",
            "-o",
            "jsonpath={.spec.name}",
        ],
        None,
    )
    .await
    .unwrap();
    assert!(kept.status.success(), "{}", String::from_utf8_lossy(&kept.stderr));
    assert_eq!(String::from_utf8_lossy(&kept.stdout), "Lin");

    // Disable still works, and removes the binding and the objects.
    eventually("Disable to remove the orphaned binding", WAIT, || async {
        let r = p
            .call(
                Method::POST,
                &format!("{ws}/providers/quickstart/disable"),
                Some(&alice),
                None,
            )
            .await?;
        Ok((r.status == 204).then_some(()))
    })
    .await
    .unwrap();
    let gone = kubectl(&kubeconfig, &["get", "greetings", "-A"], None).await.unwrap();
    assert!(!gone.status.success(), "greetings must be gone after Disable");

    p.delete_org(&acme, &alice).await.unwrap();
}
