//! The production [`Directory`]: enabled providers from the workspace's APIBindings.

use std::sync::Arc;

use faros_core::status::Status;
use futures::future::BoxFuture;

use super::Directory;
use crate::catalog::registry::Registry;
use crate::tenancy::Tenancy;
use crate::tenancy::bound::enabled;
use crate::workspace::WorkspaceRef;

pub struct TenancyDirectory {
    tenancy: Arc<Tenancy>,
    registry: Arc<Registry>,
}

impl TenancyDirectory {
    pub fn new(tenancy: Arc<Tenancy>, registry: Arc<Registry>) -> Self {
        Self { tenancy, registry }
    }
}

impl Directory for TenancyDirectory {
    fn enabled<'a>(&'a self, target: &'a WorkspaceRef) -> BoxFuture<'a, Result<Vec<String>, Status>> {
        Box::pin(async move {
            let rows = enabled(&self.tenancy.access, &self.registry, target).await?;
            Ok(rows.into_iter().filter(|r| r.bound).map(|r| r.provider).collect())
        })
    }
}
