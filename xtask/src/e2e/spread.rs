//! Runs [`ShardSpread`]: shows on a sharded kcp that tenants land on every shard and that the
//! provider's controller serves each of them through its shard's virtual workspace.
//!
//! kcp places a new Workspace on a shard at random (among the schedulable ones), so the check
//! creates workspaces until every shard hosts one, rather than steering them: what it shows is the
//! platform as tenants get it. The shard a workspace landed on is kcp's own record, the Workspace's
//! `core.kcp.io/shard` annotation; the endpoint slices of the provider's export list the shards'
//! virtual workspace URLs the provider's SDK watches.

use std::collections::BTreeMap;
use std::path::Path;
use std::time::{Duration, Instant};

use anyhow::{Context, bail};
use serde_json::{Value, json};

use super::plan::ShardSpread;

/// kcp's record of the shard a workspace's logical cluster lives on.
const SHARD_ANNOTATION: &str = "core.kcp.io/shard";
/// quickstart's resource, which its controller answers in `status.reply`.
const GREETINGS: &str = "apis/quickstart.providers.faros.sh/v1alpha1/namespaces/default/greetings";

/// One tenant workspace and where kcp put it.
struct Placed {
    workspace: String,
    cluster: String,
}

struct Client {
    http: reqwest::Client,
    user: String,
    admin: String,
}

impl Client {
    async fn call(
        &self,
        method: reqwest::Method,
        url: &str,
        token: &str,
        body: Option<Value>,
    ) -> anyhow::Result<(u16, Value)> {
        let mut req = self.http.request(method, url).bearer_auth(token);
        if let Some(b) = body {
            req = req.json(&b);
        }
        let resp = req.send().await.with_context(|| format!("calling {url}"))?;
        let status = resp.status().as_u16();
        let text = resp.text().await?;
        Ok((status, serde_json::from_str(&text).unwrap_or(Value::String(text))))
    }
}

/// Polls `check` every second until it yields a value or `timeout` passes.
async fn eventually<T, F, Fut>(what: &str, timeout: Duration, mut check: F) -> anyhow::Result<T>
where
    F: FnMut() -> Fut,
    Fut: std::future::Future<Output = anyhow::Result<Option<T>>>,
{
    let started = Instant::now();
    let mut last = String::new();
    loop {
        match check().await {
            Ok(Some(v)) => return Ok(v),
            Ok(None) => {}
            Err(e) => last = format!("; last error: {e:#}"),
        }
        if started.elapsed() > timeout {
            bail!("timed out after {timeout:?} waiting for {what}{last}");
        }
        tokio::time::sleep(Duration::from_secs(1)).await;
    }
}

pub(super) fn run(spread: &ShardSpread, root: &Path) -> anyhow::Result<()> {
    let runtime = tokio::runtime::Builder::new_current_thread().enable_all().build()?;
    runtime.block_on(check(spread, root))
}

async fn check(s: &ShardSpread, root: &Path) -> anyhow::Result<()> {
    let tokens = root.join(&s.tokens);
    let c = Client {
        http: super::platform::http(&root.join(&s.ca))?,
        user: super::platform::token_of(&tokens, &s.user)?,
        admin: super::platform::token_of(&tokens, &s.admin)?,
    };
    let timeout = Duration::from_secs(s.timeout_secs);
    let org = format!("shards-{}", super::tokens::random_hex(3)?);
    let (status, body) = c
        .call(
            reqwest::Method::POST,
            &format!("{}/api/orgs", s.hub),
            &c.user,
            Some(json!({"name": org, "displayName": "Shards"})),
        )
        .await?;
    if status != 201 {
        bail!("creating organization {org}: {status} {body}");
    }

    let mut placed: BTreeMap<String, Placed> = BTreeMap::new();
    for i in 1..=s.max_workspaces {
        if s.shards.iter().all(|shard| placed.contains_key(shard)) {
            break;
        }
        let workspace = format!("w{i}");
        let (status, body) = c
            .call(
                reqwest::Method::POST,
                &format!("{}/api/orgs/{org}/workspaces", s.hub),
                &c.user,
                Some(json!({"name": workspace})),
            )
            .await?;
        if status != 201 {
            bail!("creating workspace {org}/{workspace}: {status} {body}");
        }
        let cluster = body["cluster"].as_str().unwrap_or_default().to_string();
        let url = format!(
            "{}/clusters/{}/apis/tenancy.kcp.io/v1alpha1/workspaces/{workspace}",
            s.kcp,
            faros_core::names::org_workspace_path(&org)
        );
        let shard = eventually(&format!("{url} to name its shard"), timeout, || async {
            let (status, ws) = c.call(reqwest::Method::GET, &url, &c.admin, None).await?;
            if status != 200 {
                bail!("{status} {ws}");
            }
            Ok(ws["metadata"]["annotations"][SHARD_ANNOTATION]
                .as_str()
                .map(str::to_string))
        })
        .await?;
        eprintln!("    {org}/{workspace} (logical cluster {cluster}) is on shard {shard}");
        placed.entry(shard).or_insert(Placed { workspace, cluster });
    }
    let missing: Vec<&String> = s.shards.iter().filter(|shard| !placed.contains_key(*shard)).collect();
    if !missing.is_empty() {
        bail!(
            "after {} workspaces, no tenant on shard(s) {missing:?} (kcp placed them all elsewhere)",
            s.max_workspaces
        );
    }

    for (shard, p) in &placed {
        let enable = format!(
            "{}/api/orgs/{org}/workspaces/{}/providers/{}/enable",
            s.hub, p.workspace, s.provider
        );
        let (status, body) = c
            .call(
                reqwest::Method::POST,
                &enable,
                &c.user,
                Some(json!({"acceptedClaims": [{"group": "", "resource": "configmaps"}]})),
            )
            .await?;
        if status != 200 || body["phase"] != "Bound" {
            bail!("enabling {} in {org}/{}: {status} {body}", s.provider, p.workspace);
        }
        let greetings = format!("{}/clusters/{}/{GREETINGS}", s.kcp, p.cluster);
        let name = format!("shard {shard}");
        let greeting = json!({
            "apiVersion": "quickstart.providers.faros.sh/v1alpha1",
            "kind": "Greeting",
            "metadata": {"name": "hi", "namespace": "default"},
            "spec": {"name": name},
        });
        // The binding is Bound; the API can still take a moment to be served in the workspace.
        eventually(&format!("creating a Greeting at {greetings}"), timeout, || async {
            let (status, body) = c
                .call(reqwest::Method::POST, &greetings, &c.admin, Some(greeting.clone()))
                .await?;
            match status {
                201 | 409 => Ok(Some(())),
                _ => bail!("{status} {body}"),
            }
        })
        .await?;
        let want = format!("Hello, {name}!");
        eventually(&format!("{greetings}/hi to be answered {want:?}"), timeout, || async {
            let (status, body) = c
                .call(reqwest::Method::GET, &format!("{greetings}/hi"), &c.admin, None)
                .await?;
            if status != 200 {
                bail!("{status} {body}");
            }
            Ok((body["status"]["reply"] == want.as_str()).then_some(()))
        })
        .await?;
        eprintln!(
            "    shard {shard}: {org}/{} (logical cluster {}) has {} enabled; its Greeting is answered {want:?}",
            p.workspace, p.cluster, s.provider
        );
    }

    // The URLs the provider's SDK watches: one per shard hosting a tenant of the export.
    let slices = format!(
        "{}/clusters/{}/apis/apis.kcp.io/v1alpha1/apiexportendpointslices",
        s.kcp,
        faros_core::names::provider_workspace_path(&s.provider)
    );
    let urls = eventually(
        &format!("an endpoint slice at {slices} to list {} URLs", s.shards.len()),
        timeout,
        || async {
            let (status, body) = c.call(reqwest::Method::GET, &slices, &c.admin, None).await?;
            if status != 200 {
                bail!("{status} {body}");
            }
            let widest = body["items"]
                .as_array()
                .into_iter()
                .flatten()
                .map(|slice| {
                    slice["status"]["endpoints"]
                        .as_array()
                        .into_iter()
                        .flatten()
                        .filter_map(|e| e["url"].as_str().map(str::to_string))
                        .collect::<Vec<_>>()
                })
                .max_by_key(Vec::len)
                .unwrap_or_default();
            Ok((widest.len() >= s.shards.len()).then_some(widest))
        },
    )
    .await?;
    eprintln!("    {}'s endpoint slice lists {}", s.provider, urls.join(", "));
    Ok(())
}
