//! kcp's mutating permission-claims admission: objects in a consumer cluster carry the label of
//! every accepted claim whose selector matches them. The APIBinding controller relabels stored
//! objects with the same function when claims change.

use faros_core::status::Status;
use serde_json::{Value, json};

use crate::kcp::admission::{Operation, Request};
use crate::kcp::apis::claims;
use crate::kcp::apis::view::ClaimLabel;
use crate::objects::meta;
use crate::state::ServerState;

/// Claim labels on an object being created or updated in a consumer cluster (kcp's mutating
/// permission-claims admission): for every accepted claim on its resource, label
/// `claimed.internal.apis.kcp.io/<export hash>` is set when the claim's selector matches the object
/// and removed when it does not. Meant to be called by kcp admission for non-kcp resources.
pub fn admit_claimed_object(state: &ServerState, req: &Request<'_>, obj: &mut Value) -> Result<(), Status> {
    if req.operation == Operation::Delete || req.subresource.is_some() {
        return Ok(());
    }
    let claims = state.apis.claims_for(req.cluster, &req.def.group, &req.def.resource);
    if claims.is_empty() {
        return Ok(());
    }
    apply_claim_labels(obj, &claims);
    Ok(())
}

/// Sets `labels` for every claim on `obj`: present when the claim's selector matches, absent when not.
pub fn apply_claim_labels(obj: &mut Value, claims: &[ClaimLabel]) -> bool {
    let mut changed = false;
    for c in claims {
        let wanted = claims::selects(&c.claim, obj);
        let meta = meta::meta_mut(obj);
        let labels = meta.entry("labels").or_insert_with(|| json!({}));
        let Some(labels) = labels.as_object_mut() else { continue };
        let current = labels.get(&c.label_key).and_then(Value::as_str);
        if wanted && current != Some(c.label_value.as_str()) {
            labels.insert(c.label_key.clone(), Value::String(c.label_value.clone()));
            changed = true;
        } else if !wanted && current == Some(c.label_value.as_str()) {
            labels.remove(&c.label_key);
            changed = true;
        }
        if labels.is_empty() {
            meta.remove("labels");
        }
    }
    changed
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::kcp::apis::view::AcceptedClaim;

    #[test]
    fn claim_labels_follow_the_selector() {
        let selector = crate::selector::LabelSelector::parse("app=x").ok();
        let claims = [ClaimLabel {
            claim: AcceptedClaim {
                group: String::new(),
                resource: "configmaps".into(),
                verbs: vec!["get".into()],
                selector,
                match_labels: Default::default(),
            },
            label_key: "claimed.internal.apis.kcp.io/abc".into(),
            label_value: "v".into(),
        }];
        let mut matching = json!({"metadata": {"name": "a", "labels": {"app": "x"}}});
        assert!(apply_claim_labels(&mut matching, &claims));
        assert_eq!(matching["metadata"]["labels"]["claimed.internal.apis.kcp.io/abc"], "v");
        assert!(!apply_claim_labels(&mut matching, &claims), "idempotent");
        let mut other =
            json!({"metadata": {"name": "b", "labels": {"app": "y", "claimed.internal.apis.kcp.io/abc": "v"}}});
        assert!(apply_claim_labels(&mut other, &claims));
        assert_eq!(other["metadata"]["labels"], json!({"app": "y"}));
        let mut unlabelled = json!({"metadata": {"name": "c"}});
        assert!(!apply_claim_labels(&mut unlabelled, &claims));
        assert_eq!(unlabelled, json!({"metadata": {"name": "c"}}));
    }
}
