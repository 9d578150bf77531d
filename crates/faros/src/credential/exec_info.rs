//! What kubectl tells an exec plugin (`KUBERNETES_EXEC_INFO`) and what the plugin answers (an
//! `ExecCredential` on stdout). IO-free.

use serde_json::{Value, json};

/// The variable kubectl sets for exec plugins.
pub const ENV: &str = "KUBERNETES_EXEC_INFO";
/// The API version answered when kubectl names none (the plugin run by hand).
pub const V1: &str = "client.authentication.k8s.io/v1";
const V1BETA1: &str = "client.authentication.k8s.io/v1beta1";

/// kubectl's request, as far as the plugin uses it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ExecInfo {
    /// Answered in the same version kubectl asked in.
    pub api_version: String,
    /// Whether kubectl handed the plugin its stdin (a terminal). The plugin never reads stdin; the
    /// device flow needs none, so this only changes how the sign-in prompt is worded.
    pub interactive: bool,
}

#[derive(Debug, PartialEq, Eq, thiserror::Error)]
pub enum ExecInfoError {
    #[error("{ENV} is not JSON: {0}")]
    NotJson(String),
    #[error("{ENV} has kind {0:?}; expected ExecCredential")]
    Kind(String),
    #[error("{ENV} asks for apiVersion {0:?}; this plugin speaks {V1} and {V1BETA1}")]
    Version(String),
}

/// Parses `KUBERNETES_EXEC_INFO` (`None`: unset, the plugin run by hand in a terminal).
pub fn parse(raw: Option<&str>) -> Result<ExecInfo, ExecInfoError> {
    let Some(raw) = raw.filter(|r| !r.trim().is_empty()) else {
        return Ok(ExecInfo {
            api_version: V1.to_string(),
            interactive: true,
        });
    };
    let doc: Value = serde_json::from_str(raw).map_err(|e| ExecInfoError::NotJson(e.to_string()))?;
    let kind = doc.get("kind").and_then(Value::as_str).unwrap_or_default();
    if kind != "ExecCredential" {
        return Err(ExecInfoError::Kind(kind.to_string()));
    }
    let api_version = doc.get("apiVersion").and_then(Value::as_str).unwrap_or_default();
    if api_version != V1 && api_version != V1BETA1 {
        return Err(ExecInfoError::Version(api_version.to_string()));
    }
    let interactive = doc
        .pointer("/spec/interactive")
        .and_then(Value::as_bool)
        .unwrap_or(false);
    Ok(ExecInfo {
        api_version: api_version.to_string(),
        interactive,
    })
}

/// The `ExecCredential` kubectl reads from stdout: the bearer token and when it stops working
/// (kubectl runs the plugin again after that, not before).
pub fn credential(api_version: &str, token: &str, expires: jiff::Timestamp) -> Value {
    // RFC 3339 in whole seconds, as kubectl parses it.
    let expires = jiff::Timestamp::from_second(expires.as_second()).unwrap_or(expires);
    json!({
        "apiVersion": api_version,
        "kind": "ExecCredential",
        "spec": {},
        "status": {"token": token, "expirationTimestamp": expires.to_string()},
    })
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    #[test]
    fn exec_info() {
        let v1 = |interactive| {
            Ok(ExecInfo {
                api_version: V1.into(),
                interactive,
            })
        };
        for (raw, want) in [
            (None, v1(true)),
            (Some(""), v1(true)),
            (
                Some(
                    r#"{"apiVersion":"client.authentication.k8s.io/v1","kind":"ExecCredential","spec":{"interactive":true}}"#,
                ),
                v1(true),
            ),
            (
                Some(
                    r#"{"apiVersion":"client.authentication.k8s.io/v1","kind":"ExecCredential","spec":{"interactive":false}}"#,
                ),
                v1(false),
            ),
            (
                Some(r#"{"apiVersion":"client.authentication.k8s.io/v1","kind":"ExecCredential","spec":{}}"#),
                v1(false),
            ),
            (
                Some(
                    r#"{"apiVersion":"client.authentication.k8s.io/v1beta1","kind":"ExecCredential","spec":{"interactive":true}}"#,
                ),
                Ok(ExecInfo {
                    api_version: V1BETA1.into(),
                    interactive: true,
                }),
            ),
            (
                Some(r#"{"apiVersion":"client.authentication.k8s.io/v1alpha1","kind":"ExecCredential"}"#),
                Err(ExecInfoError::Version("client.authentication.k8s.io/v1alpha1".into())),
            ),
            (
                Some(r#"{"apiVersion":"v1","kind":"Config"}"#),
                Err(ExecInfoError::Kind("Config".into())),
            ),
        ] {
            assert_eq!(parse(raw), want, "{raw:?}");
        }
        assert!(matches!(parse(Some("{")), Err(ExecInfoError::NotJson(_))));
    }

    #[test]
    fn credentials() {
        let at: jiff::Timestamp = "2026-12-02T05:38:44.750Z".parse().unwrap();
        assert_eq!(
            credential(V1, "tok", at),
            json!({"apiVersion": V1, "kind": "ExecCredential", "spec": {},
                   "status": {"token": "tok", "expirationTimestamp": "2026-12-02T05:38:44Z"}})
        );
    }
}
