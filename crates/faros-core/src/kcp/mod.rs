//! kcp's API types, written by hand from kcp's Go SDK (v0.32, `apis.kcp.io/v1alpha2` primary).
//!
//! k8s-openapi does not ship kcp's groups, so this module has them as kube resources: every root
//! type implements [`kube::Resource`] with kcp's group, version, kind and plural, so hub code can use
//! `kube::Api<Workspace>`, `kube::Api<v1alpha2::APIBinding>` and friends against a
//! `/clusters/<x>`-scoped client.
//!
//! | group/version | kinds | module |
//! |---|---|---|
//! | `tenancy.kcp.io/v1alpha1` | Workspace, WorkspaceType | [`tenancy`] |
//! | `core.kcp.io/v1alpha1` | LogicalCluster | [`core`] |
//! | `apis.kcp.io/v1alpha1` | APIResourceSchema, APIExportEndpointSlice, APIExport, APIBinding | [`apis::v1alpha1`] |
//! | `apis.kcp.io/v1alpha2` | APIExport, APIBinding (kcp's storage version) | [`apis::v1alpha2`] |
//!
//! Wire rules the types follow, so that they round-trip what kcp serves:
//! - Field names are kcp's exactly, including the capitalised `spec.URL`, `status.URL` and `UID`.
//! - Every optional field is `Option` (or, for Go `omitempty` keys whose zero value means "absent",
//!   such as a claim's `group` and `identityHash`, a plain value that is skipped when empty) and is
//!   never serialised when unset, so server-side apply bodies claim only what the caller set.
//! - Specs, statuses and list items that kcp has grown over releases carry a flattened `extra`
//!   map: fields this crate does not model survive a read-modify-write unchanged.
//! - Phases and other kcp enums are open (`open_string_enum!`): an unknown value from a newer kcp
//!   is kept as `Other(String)` instead of failing the whole object (and the watch it came in).
//! - kcp uses its own [`Condition`] (with `severity`), not `metav1.Condition`.

/// An enum that (de)serialises as a string and keeps unknown values in `Other(String)`.
///
/// kcp adds enum values between releases (phases `Inactive`, `Terminating`, `Deleting` came with
/// v0.32); a closed Rust enum would make one new value break every list and watch.
macro_rules! open_string_enum {
    ($(#[$meta:meta])* $name:ident { $($(#[$vmeta:meta])* $variant:ident => $wire:literal),+ $(,)? }) => {
        $(#[$meta])*
        #[derive(Clone, Debug, PartialEq, Eq, Hash)]
        pub enum $name {
            $($(#[$vmeta])* $variant,)+
            /// A value this crate does not know (yet), kept verbatim.
            Other(String),
        }

        impl $name {
            pub fn as_str(&self) -> &str {
                match self {
                    $(Self::$variant => $wire,)+
                    Self::Other(s) => s,
                }
            }
        }

        impl From<&str> for $name {
            fn from(s: &str) -> Self {
                match s {
                    $($wire => Self::$variant,)+
                    other => Self::Other(other.to_owned()),
                }
            }
        }

        impl std::fmt::Display for $name {
            fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                f.write_str(self.as_str())
            }
        }

        impl serde::Serialize for $name {
            fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
                s.serialize_str(self.as_str())
            }
        }

        impl<'de> serde::Deserialize<'de> for $name {
            fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
                let s = <std::borrow::Cow<'de, str> as serde::Deserialize>::deserialize(d)?;
                Ok(Self::from(s.as_ref()))
            }
        }

        impl schemars::JsonSchema for $name {
            fn schema_name() -> std::borrow::Cow<'static, str> {
                stringify!($name).into()
            }

            fn inline_schema() -> bool {
                true
            }

            fn json_schema(_: &mut schemars::SchemaGenerator) -> schemars::Schema {
                schemars::json_schema!({ "type": "string" })
            }
        }
    };
}

pub mod apis;
mod condition;
pub mod core;
pub mod endpoints;
pub mod tenancy;

pub use condition::{Condition, ConditionStatus};
pub use core::{LogicalCluster, LogicalClusterPhase, LogicalClusterSpec, LogicalClusterStatus};
pub use tenancy::{
    Workspace, WorkspaceSpec, WorkspaceStatus, WorkspaceType, WorkspaceTypeReference, WorkspaceTypeSpec,
};

/// The rest of a JSON object that a type does not model; flattened into specs and statuses.
pub type Extra = serde_json::Map<String, serde_json::Value>;

/// Logical cluster **name** an object lives in; stamped by kcp on every object it returns.
pub const ANNOTATION_CLUSTER: &str = "kcp.io/cluster";
/// Canonical workspace path, on LogicalCluster `cluster`, APIExports, APIBindings and WorkspaceTypes.
pub const ANNOTATION_PATH: &str = "kcp.io/path";
/// Shard name, only on objects from shard-wildcard requests.
pub const ANNOTATION_SHARD: &str = "kcp.io/shard";
/// `<type-path>:<type-name>` of a LogicalCluster's workspace type, e.g. `root:universal`.
pub const ANNOTATION_LOGICALCLUSTER_TYPE: &str = "internal.tenancy.kcp.io/type";
/// Shard a LogicalCluster and its Workspace are scheduled on.
pub const ANNOTATION_CORE_SHARD: &str = "core.kcp.io/shard";
/// On Workspace: the same value as `spec.cluster`.
pub const ANNOTATION_WORKSPACE_CLUSTER: &str = "internal.tenancy.kcp.io/cluster";
/// On Workspace: a short hash of the shard name.
pub const ANNOTATION_WORKSPACE_SHARD: &str = "internal.tenancy.kcp.io/shard";
/// JSON `authentication.k8s.io/v1 UserInfo` of a workspace's creator.
pub const ANNOTATION_OWNER: &str = "experimental.tenancy.kcp.io/owner";
/// `"true"` on an inactive LogicalCluster.
pub const ANNOTATION_INACTIVE: &str = "core.kcp.io/inactive";
/// Any value on an APIExport suppresses kcp's default APIExportEndpointSlice.
pub const ANNOTATION_SKIP_ENDPOINTSLICE: &str = "apiexports.apis.kcp.io/skip-endpointslice";

/// Label on Workspace mirroring `status.phase`.
pub const LABEL_WORKSPACE_PHASE: &str = "tenancy.kcp.io/phase";
/// Label on APIBinding: `base62(sha224("<exportClusterName>:<exportName>"))`.
pub const LABEL_APIBINDING_EXPORT: &str = "internal.apis.kcp.io/export";
/// Prefix of the label kcp puts on objects claimed through an accepted permission claim.
pub const LABEL_CLAIMED_PREFIX: &str = "claimed.internal.apis.kcp.io/";

/// Finalizer kcp puts on a Workspace while its LogicalCluster exists.
pub const FINALIZER_LOGICALCLUSTER: &str = "core.kcp.io/logicalcluster";
/// The name of the singleton LogicalCluster in every workspace.
pub const LOGICALCLUSTER_NAME: &str = "cluster";

/// kcp's summary condition type (set on APIBinding and WorkspaceType).
pub const CONDITION_READY: &str = "Ready";

#[cfg(test)]
pub(crate) mod testutil;

#[cfg(test)]
mod tests {
    use super::apis::{v1alpha1, v1alpha2};
    use super::core::LogicalCluster;
    use super::tenancy::{Workspace, WorkspaceType};

    /// Compile-time proof that hub code can build typed, cluster-scoped APIs for every kind.
    #[allow(dead_code)]
    fn typed_apis(client: kube::Client) {
        let _: kube::Api<Workspace> = kube::Api::all(client.clone());
        let _: kube::Api<WorkspaceType> = kube::Api::all(client.clone());
        let _: kube::Api<LogicalCluster> = kube::Api::all(client.clone());
        let _: kube::Api<v1alpha1::APIResourceSchema> = kube::Api::all(client.clone());
        let _: kube::Api<v1alpha1::APIExportEndpointSlice> = kube::Api::all(client.clone());
        let _: kube::Api<v1alpha2::APIExport> = kube::Api::all(client.clone());
        let _: kube::Api<v1alpha2::APIBinding> = kube::Api::all(client);
    }

    #[test]
    fn kcp_kinds_are_cluster_scoped_resources() {
        use kube::Resource;
        fn url<K: Resource<DynamicType = ()>>() -> String {
            K::url_path(&(), None)
        }
        assert_eq!(url::<Workspace>(), "/apis/tenancy.kcp.io/v1alpha1/workspaces");
        assert_eq!(url::<LogicalCluster>(), "/apis/core.kcp.io/v1alpha1/logicalclusters");
        assert_eq!(url::<v1alpha2::APIBinding>(), "/apis/apis.kcp.io/v1alpha2/apibindings");
        assert_eq!(
            url::<v1alpha1::APIExportEndpointSlice>(),
            "/apis/apis.kcp.io/v1alpha1/apiexportendpointslices"
        );
    }
}
