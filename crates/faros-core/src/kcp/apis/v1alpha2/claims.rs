//! v1alpha2 permission claims: what an export asks for ([`PermissionClaim`]), what a binding
//! grants ([`ScopedPermissionClaim`]) and the consumer's decision ([`AcceptablePermissionClaim`]).
//!
//! kcp's Go types embed each other inline (`GroupResource` ⊂ `PermissionClaim` ⊂
//! `ScopedPermissionClaim` ⊂ `AcceptablePermissionClaim`, `LabelSelector` ⊂
//! `PermissionClaimSelector`). Here they are flat structs with the same JSON keys in the same
//! order, plus conversions between them, which keeps construction in hub code short.

use std::collections::BTreeMap;

use k8s_openapi::apimachinery::pkg::apis::meta::v1::LabelSelectorRequirement;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::kcp::Extra;
use crate::kcp::apis::common::{AcceptablePermissionClaimState, is_false, null_as_default};

/// The verb list meaning "all verbs"; the only one v1alpha1 can express.
pub const ALL_VERBS: &str = "*";

/// A label selector plus `matchAll`; kcp requires exactly one of `matchAll: true` or a non-empty selector.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct PermissionClaimSelector {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub match_labels: Option<BTreeMap<String, String>>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub match_expressions: Option<Vec<LabelSelectorRequirement>>,
    #[serde(default, skip_serializing_if = "is_false")]
    pub match_all: bool,
}

impl PermissionClaimSelector {
    /// `{matchAll: true}`.
    pub fn all() -> Self {
        Self {
            match_all: true,
            ..Default::default()
        }
    }

    /// `{matchLabels: labels}`.
    pub fn labels(labels: BTreeMap<String, String>) -> Self {
        Self {
            match_labels: Some(labels),
            ..Default::default()
        }
    }

    /// True when neither `matchAll` nor any label or expression is set (kcp rejects this).
    pub fn is_empty(&self) -> bool {
        !self.match_all
            && self.match_labels.as_ref().is_none_or(BTreeMap::is_empty)
            && self.match_expressions.as_ref().is_none_or(Vec::is_empty)
    }
}

/// True for exactly `["*"]`.
pub fn is_all_verbs(verbs: &[String]) -> bool {
    matches!(verbs, [v] if v == ALL_VERBS)
}

/// A claim an APIExport makes on resources in binding workspaces.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct PermissionClaim {
    /// `""` (or absent) is the core group.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub group: String,
    pub resource: String,
    /// Required, at least one; `["*"]` is all verbs.
    #[serde(default, deserialize_with = "null_as_default")]
    pub verbs: Vec<String>,
    /// Identity hash of the APIExport serving the resource; `""` for built-in types.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub identity_hash: String,
    /// kcp v0.31+: the selector used when a WorkspaceType default-binds the export.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub default_selector: Option<PermissionClaimSelector>,
    #[serde(flatten)]
    #[schemars(skip)]
    pub extra: Extra,
}

impl PermissionClaim {
    /// A claim on `group`/`resource` (built-in, so no identity hash) for `verbs`.
    pub fn new(group: &str, resource: &str, verbs: &[&str]) -> Self {
        Self {
            group: group.to_owned(),
            resource: resource.to_owned(),
            verbs: verbs.iter().map(|v| (*v).to_owned()).collect(),
            ..Default::default()
        }
    }

    /// Same group, resource and identity hash: the key kcp matches claims by.
    pub fn same_gri(&self, group: &str, resource: &str, identity_hash: &str) -> bool {
        self.group == group && self.resource == resource && self.identity_hash == identity_hash
    }

    /// The claim scoped by `selector`.
    pub fn scoped(&self, selector: PermissionClaimSelector) -> ScopedPermissionClaim {
        ScopedPermissionClaim {
            group: self.group.clone(),
            resource: self.resource.clone(),
            verbs: self.verbs.clone(),
            identity_hash: self.identity_hash.clone(),
            selector,
            extra: Extra::new(),
        }
    }
}

/// A claim with the selector of the objects it applies to (`APIBinding.status.appliedPermissionClaims`).
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ScopedPermissionClaim {
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub group: String,
    pub resource: String,
    #[serde(default, deserialize_with = "null_as_default")]
    pub verbs: Vec<String>,
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub identity_hash: String,
    /// Required and immutable.
    #[serde(default, deserialize_with = "null_as_default")]
    pub selector: PermissionClaimSelector,
    #[serde(flatten)]
    #[schemars(skip)]
    pub extra: Extra,
}

impl ScopedPermissionClaim {
    pub fn same_gri(&self, group: &str, resource: &str, identity_hash: &str) -> bool {
        self.group == group && self.resource == resource && self.identity_hash == identity_hash
    }

    /// The claim with the consumer's decision.
    pub fn with_state(self, state: AcceptablePermissionClaimState) -> AcceptablePermissionClaim {
        AcceptablePermissionClaim {
            group: self.group,
            resource: self.resource,
            verbs: self.verbs,
            identity_hash: self.identity_hash,
            selector: self.selector,
            state,
            extra: self.extra,
        }
    }
}

/// A claim the consumer accepted or rejected (`APIBinding.spec.permissionClaims`).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct AcceptablePermissionClaim {
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub group: String,
    pub resource: String,
    #[serde(default, deserialize_with = "null_as_default")]
    pub verbs: Vec<String>,
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub identity_hash: String,
    #[serde(default, deserialize_with = "null_as_default")]
    pub selector: PermissionClaimSelector,
    pub state: AcceptablePermissionClaimState,
    #[serde(flatten)]
    #[schemars(skip)]
    pub extra: Extra,
}

impl AcceptablePermissionClaim {
    pub fn same_gri(&self, group: &str, resource: &str, identity_hash: &str) -> bool {
        self.group == group && self.resource == resource && self.identity_hash == identity_hash
    }

    /// Accepts `claim` for the objects `selector` picks.
    pub fn accepted(claim: &PermissionClaim, selector: PermissionClaimSelector) -> Self {
        claim
            .scoped(selector)
            .with_state(AcceptablePermissionClaimState::Accepted)
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::expect_used)]
mod tests {
    use super::*;
    use crate::kcp::testutil::{roundtrip, serializes_to};
    use serde_json::json;

    #[test]
    fn export_claim_field_names() {
        let c: PermissionClaim = roundtrip(&json!({"group":"somegroup.kcp.io","resource":"things",
            "verbs":["*"],"identityHash":"5fdf7c7a","defaultSelector":{"matchLabels":{"env":"prod"}}}));
        assert!(is_all_verbs(&c.verbs));
        assert_eq!(c.default_selector.unwrap().match_labels.unwrap()["env"], "prod");
        let core: PermissionClaim = roundtrip(&json!({"resource":"configmaps","verbs":["get","list","create"]}));
        assert_eq!(core, PermissionClaim::new("", "configmaps", &["get", "list", "create"]));
    }

    #[test]
    fn acceptable_claim_is_flat_on_the_wire() {
        let c: AcceptablePermissionClaim = roundtrip(&json!({"group":"somegroup.kcp.io","resource":"things",
            "verbs":["*"],"identityHash":"5fdf7c7a","selector":{"matchLabels":{"env":"prod"},
            "matchExpressions":[{"key":"tier","operator":"In","values":["a"]}]},"state":"Accepted"}));
        assert_eq!(c.state, AcceptablePermissionClaimState::Accepted);
        assert_eq!(c.selector.match_expressions.as_ref().unwrap()[0].operator, "In");
        let built = AcceptablePermissionClaim::accepted(
            &PermissionClaim::new("", "configmaps", &["get", "list", "create"]),
            PermissionClaimSelector::all(),
        );
        serializes_to(
            &built,
            &json!({"resource":"configmaps","verbs":["get","list","create"],"selector":{"matchAll":true},"state":"Accepted"}),
        );
    }

    #[test]
    fn selector_emptiness_and_verbs() {
        assert!(PermissionClaimSelector::default().is_empty());
        assert!(!PermissionClaimSelector::all().is_empty());
        assert!(PermissionClaimSelector::labels(BTreeMap::new()).is_empty());
        assert!(!PermissionClaimSelector::labels(BTreeMap::from([("a".into(), "b".into())])).is_empty());
        assert!(is_all_verbs(&["*".to_owned()]));
        let nil: PermissionClaim = serde_json::from_value(json!({"resource":"x","verbs":null})).unwrap();
        assert!(nil.verbs.is_empty());
        assert!(!is_all_verbs(&["*".to_owned(), "get".to_owned()]));
        assert!(!is_all_verbs(&[]));
    }

    #[test]
    fn unknown_claim_fields_survive() {
        let c: ScopedPermissionClaim = roundtrip(&json!({"resource":"secrets","verbs":["get"],
            "selector":{"matchAll":true},"futureField":{"x":1}}));
        assert_eq!(c.extra.get("futureField"), Some(&json!({"x":1})));
    }
}
