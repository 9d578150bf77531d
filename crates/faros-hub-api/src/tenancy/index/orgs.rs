//! The organizations (Workspaces of `root:faros:tenants`), kept by one watch: `/api/me` walks them
//! in memory instead of listing ten thousand workspaces per request.

use std::collections::HashMap;
use std::sync::{Arc, RwLock};

use faros_core::client::ClientFactory;
use faros_core::kcp::Workspace;
use faros_core::names;
use futures::StreamExt;
use kube::runtime::WatchStreamExt;
use kube::runtime::watcher::{self, Event};
use kube::{Api, ResourceExt};
use tokio_util::sync::CancellationToken;

use super::MembershipIndex;

/// Organizations by name; `None` until the first listing completed.
#[derive(Debug, Default)]
pub struct OrgCache {
    orgs: RwLock<Option<HashMap<String, Arc<Workspace>>>>,
}

impl OrgCache {
    /// Every organization, once listed.
    pub fn list(&self) -> Option<Vec<Arc<Workspace>>> {
        let orgs = self.orgs.read().unwrap_or_else(|p| p.into_inner());
        orgs.as_ref().map(|m| m.values().cloned().collect())
    }

    /// Organization `name`, once listed (`Some(None)`: there is none).
    pub fn get(&self, name: &str) -> Option<Option<Arc<Workspace>>> {
        let orgs = self.orgs.read().unwrap_or_else(|p| p.into_inner());
        orgs.as_ref().map(|m| m.get(name).cloned())
    }

    fn replace(&self, listed: HashMap<String, Arc<Workspace>>) {
        *self.orgs.write().unwrap_or_else(|p| p.into_inner()) = Some(listed);
    }

    fn apply(&self, ws: Workspace) {
        if let Some(m) = self.orgs.write().unwrap_or_else(|p| p.into_inner()).as_mut() {
            m.insert(ws.name_any(), Arc::new(ws));
        }
    }

    fn delete(&self, name: &str) {
        if let Some(m) = self.orgs.write().unwrap_or_else(|p| p.into_inner()).as_mut() {
            m.remove(name);
        }
    }
}

/// Watches `root:faros:tenants` into the index's organizations until `cancel`.
pub async fn watch(factory: ClientFactory, index: &MembershipIndex, cancel: CancellationToken) {
    let cache = &index.orgs;
    let client = match factory.cluster(names::TENANTS_PATH) {
        Ok(c) => c,
        Err(error) => {
            tracing::error!(%error, "cannot build the organization watch client");
            return;
        }
    };
    let api: Api<Workspace> = Api::all(client);
    let mut stream =
        std::pin::pin!(faros_core::wait::permitted_watcher(api, watcher::Config::default()).default_backoff());
    let mut listing: HashMap<String, Arc<Workspace>> = HashMap::new();
    loop {
        let event = tokio::select! {
            _ = cancel.cancelled() => return,
            e = stream.next() => match e {
                Some(e) => e,
                None => return,
            },
        };
        match event {
            Ok(Event::Init) => listing.clear(),
            Ok(Event::InitApply(ws)) => {
                listing.insert(ws.name_any(), Arc::new(ws));
            }
            Ok(Event::InitDone) => {
                tracing::info!(organizations = listing.len(), "organizations listed");
                cache.replace(std::mem::take(&mut listing));
                // The backfill waits for the organizations too.
                index.poke();
            }
            Ok(Event::Apply(ws)) => cache.apply(ws),
            Ok(Event::Delete(ws)) => cache.delete(&ws.name_any()),
            // Until the tree exists (or the hub's roles in it), the watch fails and is retried.
            Err(error) => tracing::debug!(%error, "organization watch failed; retrying"),
        }
    }
}
