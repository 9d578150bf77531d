//! The one wait-for-condition helper: watch an object until a predicate holds, or time out with an
//! error that names the object and the last state seen (so "timed out" is never a mystery).

use std::fmt::Debug;
use std::time::Duration;

use futures::TryStreamExt;
use kube::api::Api;
use kube::runtime::watcher::{self, Event};
use kube::{Resource, ResourceExt};
use serde::de::DeserializeOwned;

/// Errors from [`wait_for`].
#[derive(Debug, thiserror::Error)]
pub enum WaitError {
    #[error("timed out after {waited:?} waiting for {kind} {name:?}; last state seen: {last_state}")]
    Timeout {
        kind: String,
        name: String,
        waited: Duration,
        last_state: String,
    },
    #[error("watching {kind} {name:?} failed: {source}")]
    Watch {
        kind: String,
        name: String,
        #[source]
        source: watcher::Error,
    },
    #[error("{kind} {name:?} was deleted while waiting for it")]
    Deleted { kind: String, name: String },
}

/// Watches `name` through `api` until `predicate` returns true for it, and returns that object.
///
/// `predicate` sees `None` while the object does not exist, so "wait until gone" is
/// `wait_for(api, n, |o| o.is_none(), d)`; in that case `Ok(None)` is returned.
pub async fn wait_for<K>(
    api: Api<K>,
    name: &str,
    mut predicate: impl FnMut(Option<&K>) -> bool,
    timeout: Duration,
) -> Result<Option<K>, WaitError>
where
    K: Resource + Clone + Debug + DeserializeOwned + serde::Serialize + Send + Sync + 'static,
{
    // The resource's plural from its URL (`.../namespaces/ns/configmaps`): works for typed and dynamic objects.
    let kind = api.resource_url().rsplit('/').next().unwrap_or("object").to_string();
    let mut last: Option<K> = None;
    let config = watcher::Config::default().fields(&format!("metadata.name={name}"));
    let mut stream = std::pin::pin!(watcher::watcher(api, config));
    let work = async {
        // Until the initial list completes we cannot tell "absent" from "not listed yet".
        let mut initial: Vec<K> = Vec::new();
        loop {
            let event = stream.try_next().await.map_err(|source| WaitError::Watch {
                kind: kind.clone(),
                name: name.into(),
                source,
            })?;
            match event {
                Some(Event::Init) => initial.clear(),
                Some(Event::InitApply(o)) => initial.push(o),
                Some(Event::InitDone) => {
                    last = initial.drain(..).find(|o| o.name_any() == name);
                    if predicate(last.as_ref()) {
                        return Ok(last.clone());
                    }
                }
                Some(Event::Apply(o)) if o.name_any() == name => {
                    last = Some(o);
                    if predicate(last.as_ref()) {
                        return Ok(last.clone());
                    }
                }
                Some(Event::Delete(o)) if o.name_any() == name => {
                    last = None;
                    if predicate(None) {
                        return Ok(None);
                    }
                }
                Some(_) => {}
                None => {
                    return Err(WaitError::Deleted {
                        kind: kind.clone(),
                        name: name.into(),
                    });
                }
            }
        }
    };
    match tokio::time::timeout(timeout, work).await {
        Ok(result) => result,
        Err(_) => Err(WaitError::Timeout {
            kind: kind.clone(),
            name: name.into(),
            waited: timeout,
            last_state: describe(last.as_ref()),
        }),
    }
}

/// A short description of an object's state for error messages: its `status`, else "absent"
/// (what [`WaitError`]'s `last_state` says; shared by other waits so their messages match).
pub fn describe<K: serde::Serialize>(obj: Option<&K>) -> String {
    let Some(obj) = obj else { return "absent".into() };
    let value = serde_json::to_value(obj).unwrap_or_default();
    let status = value.get("status").cloned().unwrap_or(serde_json::Value::Null);
    let mut text = if status.is_null() {
        "exists, no status".to_string()
    } else {
        status.to_string()
    };
    if text.len() > 512 {
        let mut cut = 512;
        while !text.is_char_boundary(cut) {
            cut -= 1;
        }
        text.truncate(cut);
        text.push('…');
    }
    text
}

#[cfg(test)]
mod tests {
    use super::*;
    use k8s_openapi::api::core::v1::ConfigMap;

    #[test]
    fn describe_summarises_status() {
        assert_eq!(describe::<ConfigMap>(None), "absent");
        assert_eq!(describe(Some(&ConfigMap::default())), "exists, no status");
        let v = serde_json::json!({"status": {"phase": "Ready"}});
        assert_eq!(describe(Some(&v)), r#"{"phase":"Ready"}"#);
    }
}
