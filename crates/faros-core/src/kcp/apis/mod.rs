//! `apis.kcp.io`: how APIs are published (APIResourceSchema, APIExport, APIExportEndpointSlice)
//! and consumed (APIBinding).
//!
//! APIExport and APIBinding exist in two versions. kcp stores v1alpha2 and converts on the fly;
//! [`conversion`] does the same mapping (with kcp's park-annotations for lossy fields) so the
//! embedded server can serve both and round-trip v1alpha1 clients. Hub code uses [`v1alpha2`].
//!
//! The schemas carry kcp's list and map markers (`x-kubernetes-list-type`, `…-list-map-keys`,
//! `x-kubernetes-map-type`) and defaults where kcp's CRDs have them, because they decide
//! server-side apply's merges and managedFields: a list kcp keys by name merges item by item, and
//! is owned so, on both servers. Permission claims keep the default (atomic) for now: their keys
//! need kcp's key defaults (`group`, `identityHash`) in the schema first.

mod common;
pub mod conversion;
pub mod v1alpha1;
pub mod v1alpha2;

#[cfg(test)]
mod tests {
    use kube::CustomResourceExt;

    #[test]
    fn crds_generate_with_kcp_names() {
        let cases = [
            (
                super::v1alpha1::APIResourceSchema::crd(),
                "apiresourceschemas.apis.kcp.io",
                "v1alpha1",
            ),
            (
                super::v1alpha1::APIExportEndpointSlice::crd(),
                "apiexportendpointslices.apis.kcp.io",
                "v1alpha1",
            ),
            (super::v1alpha1::APIExport::crd(), "apiexports.apis.kcp.io", "v1alpha1"),
            (
                super::v1alpha1::APIBinding::crd(),
                "apibindings.apis.kcp.io",
                "v1alpha1",
            ),
            (super::v1alpha2::APIExport::crd(), "apiexports.apis.kcp.io", "v1alpha2"),
            (
                super::v1alpha2::APIBinding::crd(),
                "apibindings.apis.kcp.io",
                "v1alpha2",
            ),
        ];
        for (crd, name, version) in cases {
            assert_eq!(crd.metadata.name.as_deref(), Some(name));
            assert_eq!(crd.spec.scope, "Cluster");
            assert_eq!(crd.spec.versions[0].name, version);
        }
    }
}
