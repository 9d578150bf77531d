//! The ServiceAccount token controller: fills Secrets of type `kubernetes.io/service-account-token`
//! with a signed token, the CA and the namespace, as kube-controller-manager does.

use base64::Engine;
use base64::engine::general_purpose::STANDARD;
use serde_json::{Value, json};

use crate::auth::SaClaims;
use crate::client::Client;
use crate::client::landed;
use crate::objects::meta;
use crate::state::ServerState;
use crate::store::ObjectKey;

pub const TOKEN_SECRET_TYPE: &str = "kubernetes.io/service-account-token";
const SA_NAME_ANNOTATION: &str = "kubernetes.io/service-account.name";
const SA_UID_ANNOTATION: &str = "kubernetes.io/service-account.uid";

pub async fn reconcile(state: &ServerState, key: &ObjectKey, secret: &Value) {
    if secret.get("type").and_then(Value::as_str) != Some(TOKEN_SECRET_TYPE) || meta::is_deleting(secret) {
        return;
    }
    if secret
        .pointer("/data/token")
        .and_then(Value::as_str)
        .is_some_and(|t| !t.is_empty())
    {
        return;
    }
    let Some(sa_name) = meta::annotation(secret, SA_NAME_ANNOTATION) else {
        return;
    };
    let sa_key = ObjectKey {
        group: String::new(),
        resource: "serviceaccounts".into(),
        cluster: key.cluster.clone(),
        namespace: key.namespace.clone(),
        name: sa_name.into(),
    };
    let sa = match state.store.get(&sa_key) {
        Ok(Some(sa)) => sa,
        Ok(None) => {
            // Like kube-controller-manager: a token secret for a missing ServiceAccount is removed.
            tracing::info!(secret = %key.name, namespace = %key.namespace, service_account = sa_name, "deleting token secret of a missing ServiceAccount");
            landed(
                Client::system(state)
                    .delete("", "secrets", secret, Some("Background"))
                    .await,
            );
            return;
        }
        Err(e) => {
            tracing::warn!(error = %e, "token controller could not read ServiceAccount");
            return;
        }
    };
    let sa_uid = meta::uid(&sa).unwrap_or_default();
    if let Some(want) = meta::annotation(secret, SA_UID_ANNOTATION)
        && want != sa_uid
    {
        return;
    }
    let claims = SaClaims::new(&key.cluster, &key.namespace, sa_name, sa_uid, &key.name);
    let token = state.sa_tokens.issue(&claims);
    let mut updated = secret.clone();
    updated["metadata"]["annotations"][SA_UID_ANNOTATION] = json!(sa_uid);
    if !updated.get("data").is_some_and(Value::is_object) {
        updated["data"] = json!({});
    }
    updated["data"]["token"] = json!(STANDARD.encode(token));
    updated["data"]["ca.crt"] = json!(STANDARD.encode(&state.ca_pem));
    updated["data"]["namespace"] = json!(STANDARD.encode(&key.namespace));
    landed(Client::system(state).update("", "secrets", secret, updated).await);
}

/// Fills token secrets created while the server was down (or before a crash).
pub async fn resume(state: &ServerState) {
    for secret in state.list_all("", "secrets", None, None) {
        let key = meta::key_of("", "secrets", &secret);
        reconcile(state, &key, &secret).await;
    }
}
