//! The membership index on the real stack (docs/tenancy.md#the-membership-index): tenant workspaces
//! bind `tenancy.faros.sh` by default, `/api/me` is then answered without a SubjectAccessReview, and
//! a deleted binding is bound again by the hub.
//!
//! The "no review" check reads the hub's own `/metrics`: where the hub serves them on its listener
//! (in-process, the kcp target). Where they are on a separate port (the chart), the behaviour is
//! checked without it.

use faros_e2e::eventually::eventually;
use faros_e2e::{Platform, WAIT, kubectl};
use reqwest::Method;
use serde_json::{Value, json};

const EXPORT: &str = faros_core::names::TENANCY_EXPORT;

/// `faros_hub_api_membership_decisions_total{source="<source>"}` from the hub's `/metrics`, read with
/// `token` (on its public listener the hub serves them to authenticated callers only); `None` where
/// the hub serves them elsewhere (404 on its listener).
async fn decisions(p: &Platform, token: &str, source: &str) -> anyhow::Result<Option<u64>> {
    let metrics = p.call(Method::GET, "/metrics", Some(token), None).await?;
    if metrics.status == 404 {
        return Ok(None);
    }
    anyhow::ensure!(metrics.status == 200, "/metrics: {}", metrics.status);
    let line = format!("faros_hub_api_membership_decisions_total{{source=\"{source}\"}} ");
    Ok(Some(
        metrics
            .text
            .lines()
            .find_map(|l| l.strip_prefix(&line))
            .and_then(|n| n.trim().parse().ok())
            .unwrap_or(0),
    ))
}

/// The APIBindings of the tenancy export in the workspace at `path`, whatever their name: each
/// name with whether kcp applied its claims.
async fn export_bindings(p: &Platform, path: &str) -> anyhow::Result<Vec<(String, bool)>> {
    let kubeconfig = p.admin_kubeconfig_for(path)?;
    let out = kubectl(&kubeconfig, &["get", "apibindings", "-o", "json"], None).await?;
    anyhow::ensure!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let list: Value = serde_json::from_slice(&out.stdout)?;
    Ok(list["items"]
        .as_array()
        .into_iter()
        .flatten()
        .filter(|b| b["spec"]["reference"]["export"]["name"] == EXPORT)
        .filter_map(|b| {
            let applied = b["status"]["conditions"]
                .as_array()
                .into_iter()
                .flatten()
                .any(|c| c["type"] == faros_core::membership::CLAIMS_APPLIED && c["status"] == "True");
            Some((b["metadata"]["name"].as_str()?.to_string(), applied))
        })
        .collect())
}

/// The names of the tenancy export's bindings in the workspace at `path` whose claims are applied.
async fn tenancy_bindings(p: &Platform, path: &str) -> anyhow::Result<Vec<String>> {
    Ok(export_bindings(p, path)
        .await?
        .into_iter()
        .filter_map(|(name, applied)| applied.then_some(name))
        .collect())
}

pub async fn run(p: &Platform) {
    let dana = p.add_user("dana").await.unwrap();
    let org = p.unique("indexed");
    p.org_with_workspace(&dana, &org, "dev").await.unwrap();
    let dev = faros_core::names::team_workspace_path(&org, "dev");

    // kcp bound the export in both workspaces as they were initialized, accepting its claim.
    for path in [faros_core::names::org_workspace_path(&org), dev.clone()] {
        let bound = tenancy_bindings(p, &path).await.unwrap();
        assert_eq!(bound.len(), 1, "{path}: {bound:?}");
    }

    // Once the index covers them, dana's /api/me and lists ask kcp nothing.
    eventually(
        "dana's /api/me answered from the membership index alone",
        WAIT,
        || async {
            let reviews = decisions(p, &dana, "review").await?;
            let me = p.call(Method::GET, "/api/me", Some(&dana), None).await?;
            let orgs = p.call(Method::GET, "/api/orgs", Some(&dana), None).await?;
            let listed = me.body["organizations"]
                .as_array()
                .into_iter()
                .flatten()
                .any(|o| o["name"] == org.as_str() && o["role"] == "admin" && o["workspaces"][0]["name"] == "dev");
            let in_orgs = orgs.body["items"]
                .as_array()
                .into_iter()
                .flatten()
                .any(|o| o["name"] == org.as_str());
            Ok((listed && in_orgs && decisions(p, &dana, "review").await? == reviews).then_some(()))
        },
    )
    .await
    .unwrap();
    match decisions(p, &dana, "index").await.unwrap() {
        Some(n) => assert!(n > 0, "no decision came from the index"),
        None => eprintln!("the hub serves /metrics on another port: decisions not counted here"),
    }

    // A second organization, Ready a moment ago: kcp's initializer bound it, but its claims may
    // not be applied (nor the workspace covered) yet when the restore below starts a backfill pass.
    // The pass must count that binding, not add its own beside it.
    let second = p.unique("indexed");
    let created = p
        .call(Method::POST, "/api/orgs", Some(&dana), Some(json!({"name": second})))
        .await
        .unwrap();
    assert_eq!(created.status, 201, "{}", created.text);
    eventually("the second organization to be Ready", WAIT, || async {
        let got = p
            .call(Method::GET, &format!("/api/orgs/{second}"), Some(&dana), None)
            .await?;
        Ok((got.status == 200).then_some(()))
    })
    .await
    .unwrap();

    // A tenant admin deletes the binding: the hub binds the workspace again.
    let kubeconfig = p.admin_kubeconfig_for(&dev).unwrap();
    for name in tenancy_bindings(p, &dev).await.unwrap() {
        let out = kubectl(&kubeconfig, &["delete", "apibinding", &name], None)
            .await
            .unwrap();
        assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    }
    eventually("the hub to bind tenancy.faros.sh in dev again", WAIT, || async {
        Ok((!tenancy_bindings(p, &dev).await?.is_empty()).then_some(()))
    })
    .await
    .unwrap();
    let me = p.call(Method::GET, "/api/me", Some(&dana), None).await.unwrap();
    assert_eq!(
        me.body["organizations"][0]["workspaces"][0]["name"], "dev",
        "{}",
        me.text
    );

    assert_eq!(export_bindings(p, &dev).await.unwrap().len(), 1, "dev is bound once");
    let second_path = faros_core::names::org_workspace_path(&second);
    let bound = export_bindings(p, &second_path).await.unwrap();
    assert_eq!(bound.len(), 1, "{second_path} is bound once, by kcp: {bound:?}");

    p.delete_org(&second, &dana).await.unwrap();
    p.delete_org(&org, &dana).await.unwrap();
}
