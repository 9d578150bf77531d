//! [`ClusterKey`]: an object's identity across kcp logical clusters.

use std::fmt;

use faros_core::kcp::ANNOTATION_CLUSTER;
use kube::{Resource, ResourceExt};

/// An object's identity across logical clusters: a wildcard watch returns same-named objects of
/// different workspaces, and they must never merge.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct ClusterKey {
    /// Logical cluster name (`kcp.io/cluster`).
    pub cluster: String,
    /// `None` for cluster-scoped objects.
    pub namespace: Option<String>,
    pub name: String,
}

impl ClusterKey {
    /// The key of `obj`; `None` without a non-empty `kcp.io/cluster` annotation (such an object
    /// cannot be addressed through a virtual workspace).
    pub fn of<R: Resource>(obj: &R) -> Option<Self> {
        let cluster = obj.annotations().get(ANNOTATION_CLUSTER).filter(|c| !c.is_empty())?;
        Some(Self {
            cluster: cluster.clone(),
            namespace: obj.namespace(),
            name: obj.name_any(),
        })
    }
}

/// `cluster|namespace/name`, or `cluster|name` for cluster-scoped objects.
impl fmt::Display for ClusterKey {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match &self.namespace {
            Some(ns) => write!(f, "{}|{ns}/{}", self.cluster, self.name),
            None => write!(f, "{}|{}", self.cluster, self.name),
        }
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::expect_used)]
mod tests {
    use super::*;
    use kube::api::{ApiResource, DynamicObject};
    use pretty_assertions::assert_eq;

    fn obj(cluster: Option<&str>, namespace: Option<&str>, name: &str) -> DynamicObject {
        let ar = ApiResource::erase::<k8s_openapi::api::core::v1::ConfigMap>(&());
        let mut o = DynamicObject::new(name, &ar);
        o.metadata.namespace = namespace.map(str::to_string);
        o.metadata.annotations = cluster.map(|c| [(ANNOTATION_CLUSTER.to_string(), c.to_string())].into());
        o
    }

    #[test]
    fn key_table() {
        for (case, o, want) in [
            ("no annotation", obj(None, Some("default"), "a"), None),
            ("empty annotation", obj(Some(""), Some("default"), "a"), None),
            (
                "namespaced",
                obj(Some("c1"), Some("default"), "hello"),
                Some("c1|default/hello"),
            ),
            ("cluster-scoped", obj(Some("abc"), None, "q"), Some("abc|q")),
        ] {
            assert_eq!(ClusterKey::of(&o).map(|k| k.to_string()).as_deref(), want, "{case}");
        }
    }

    #[test]
    fn same_name_in_two_clusters_are_two_keys() {
        let a = ClusterKey::of(&obj(Some("c1"), Some("default"), "hello")).unwrap();
        let b = ClusterKey::of(&obj(Some("c2"), Some("default"), "hello")).unwrap();
        assert_ne!(a, b);
    }
}
