//! The one error type faros returns over HTTP: a Kubernetes `v1 Status`.
//!
//! Every server in faros (the embedded kcp, the hub API, the SDK's backend helpers) answers
//! failures with this body, so kube-rs' `Error::Api` and kubectl print them the way they print
//! errors from a real API server. Messages say what was wrong and, where useful, what to do.

use serde::{Deserialize, Serialize};

/// A `v1 Status` describing a failed (or, for some deletes, successful) request.
///
/// `kind`, `apiVersion` and the empty `metadata` are constants written on serialization, which keeps
/// the value small enough to return by value from every handler.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("{message} ({reason}, {code})")]
pub struct Status {
    /// `Success` or `Failure`.
    pub status: Outcome,
    pub message: String,
    pub reason: String,
    pub details: Option<Box<StatusDetails>>,
    pub code: u16,
}

/// `Status.status`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub enum Outcome {
    Success,
    Failure,
}

/// The wire form of [`Status`].
#[derive(Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
struct Wire {
    #[serde(default)]
    kind: String,
    #[serde(default)]
    api_version: String,
    #[serde(default)]
    metadata: serde_json::Map<String, serde_json::Value>,
    status: Outcome,
    #[serde(default, skip_serializing_if = "String::is_empty")]
    message: String,
    #[serde(default, skip_serializing_if = "String::is_empty")]
    reason: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    details: Option<Box<StatusDetails>>,
    #[serde(default)]
    code: u16,
}

impl Serialize for Status {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        Wire {
            kind: "Status".into(),
            api_version: "v1".into(),
            metadata: Default::default(),
            status: self.status,
            message: self.message.clone(),
            reason: self.reason.clone(),
            details: self.details.clone(),
            code: self.code,
        }
        .serialize(serializer)
    }
}

impl<'de> Deserialize<'de> for Status {
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let w = Wire::deserialize(deserializer)?;
        Ok(Self {
            status: w.status,
            message: w.message,
            reason: w.reason,
            details: w.details,
            code: w.code,
        })
    }
}

/// `Status.details`: which object the failure is about and the individual causes.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct StatusDetails {
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub name: String,
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub group: String,
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub kind: String,
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub uid: String,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub causes: Vec<StatusCause>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub retry_after_seconds: Option<u32>,
}

/// One cause of a failure, e.g. a field that failed validation or a field-manager conflict.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct StatusCause {
    #[serde(default, rename = "reason", skip_serializing_if = "String::is_empty")]
    pub reason: String,
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub message: String,
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub field: String,
}

impl Status {
    /// A failure with the given HTTP code, machine-readable reason and human message.
    pub fn failure(code: u16, reason: &str, message: impl Into<String>) -> Self {
        Self {
            status: Outcome::Failure,
            message: message.into(),
            reason: reason.into(),
            details: None,
            code,
        }
    }

    /// A success Status (as returned by some DELETEs).
    pub fn success(details: StatusDetails) -> Self {
        Self {
            status: Outcome::Success,
            details: Some(Box::new(details)),
            ..Self::failure(200, "", "")
        }
    }

    pub fn with_details(mut self, details: StatusDetails) -> Self {
        self.details = Some(Box::new(details));
        self
    }

    /// 400 BadRequest.
    pub fn bad_request(message: impl Into<String>) -> Self {
        Self::failure(400, "BadRequest", message)
    }

    /// 401 Unauthorized.
    pub fn unauthorized(message: impl Into<String>) -> Self {
        Self::failure(401, "Unauthorized", message)
    }

    /// 403 Forbidden.
    pub fn forbidden(message: impl Into<String>) -> Self {
        Self::failure(403, "Forbidden", message)
    }

    /// 404 NotFound for `<resource>[.<group>] "<name>" not found`.
    pub fn not_found(group: &str, resource: &str, name: &str) -> Self {
        Self::failure(
            404,
            "NotFound",
            format!("{} \"{name}\" not found", qualified(group, resource)),
        )
        .with_details(StatusDetails {
            name: name.into(),
            group: group.into(),
            kind: resource.into(),
            ..Default::default()
        })
    }

    /// 404 NotFound with a free-form message (unknown paths, unknown resources).
    pub fn not_found_message(message: impl Into<String>) -> Self {
        Self::failure(404, "NotFound", message)
    }

    /// 405 MethodNotAllowed.
    pub fn method_not_allowed(message: impl Into<String>) -> Self {
        Self::failure(405, "MethodNotAllowed", message)
    }

    /// 409 AlreadyExists.
    pub fn already_exists(group: &str, resource: &str, name: &str) -> Self {
        Self::failure(
            409,
            "AlreadyExists",
            format!("{} \"{name}\" already exists", qualified(group, resource)),
        )
        .with_details(StatusDetails {
            name: name.into(),
            group: group.into(),
            kind: resource.into(),
            ..Default::default()
        })
    }

    /// 409 Conflict for a stale resourceVersion (optimistic concurrency).
    pub fn conflict(group: &str, resource: &str, name: &str) -> Self {
        Self::failure(
            409,
            "Conflict",
            format!(
                "Operation cannot be fulfilled on {} \"{name}\": the object has been modified; please apply your changes to the latest version and try again",
                qualified(group, resource)
            ),
        )
        .with_details(StatusDetails {
            name: name.into(),
            group: group.into(),
            kind: resource.into(),
            ..Default::default()
        })
    }

    /// 409 Conflict with a free-form message.
    pub fn conflict_message(message: impl Into<String>) -> Self {
        Self::failure(409, "Conflict", message)
    }

    /// 410 Expired (too-old resourceVersion or continue token).
    pub fn expired(message: impl Into<String>) -> Self {
        Self::failure(410, "Expired", message)
    }

    /// 413 RequestEntityTooLarge.
    pub fn too_large(message: impl Into<String>) -> Self {
        Self::failure(413, "RequestEntityTooLarge", message)
    }

    /// 415 UnsupportedMediaType.
    pub fn unsupported_media_type(message: impl Into<String>) -> Self {
        Self::failure(415, "UnsupportedMediaType", message)
    }

    /// 422 Invalid: `<Kind>.<group> "<name>" is invalid: <causes>`, the kind qualified by its group
    /// (bare for the core group) as kube-apiserver's `NewInvalid` writes it; causes with the same
    /// text appear once in the message (its aggregate) and each in the details.
    pub fn invalid(group: &str, kind: &str, name: &str, causes: Vec<StatusCause>) -> Self {
        let detail = causes
            .iter()
            .map(|c| {
                if c.field.is_empty() {
                    c.message.clone()
                } else {
                    format!("{}: {}", c.field, c.message)
                }
            })
            .fold(Vec::<String>::new(), |mut seen, d| {
                if !seen.contains(&d) {
                    seen.push(d);
                }
                seen
            });
        let detail = if detail.len() == 1 {
            detail[0].clone()
        } else {
            format!("[{}]", detail.join(", "))
        };
        let qualified_kind = match group {
            "" => kind.to_string(),
            g => format!("{kind}.{g}"),
        };
        Self::failure(
            422,
            "Invalid",
            format!("{qualified_kind} \"{name}\" is invalid: {detail}"),
        )
        .with_details(StatusDetails {
            name: name.into(),
            group: group.into(),
            kind: kind.into(),
            causes,
            ..Default::default()
        })
    }

    /// 500 InternalError. The message must not leak secrets.
    pub fn internal(message: impl Into<String>) -> Self {
        Self::failure(500, "InternalError", message)
    }

    /// 503 ServiceUnavailable.
    pub fn unavailable(message: impl Into<String>) -> Self {
        Self::failure(503, "ServiceUnavailable", message)
    }

    /// Tells the client when to retry (`details.retryAfterSeconds`, and a `Retry-After` header on
    /// HTTP), as the Kubernetes API server does for 429 and 503.
    pub fn retry_after(mut self, seconds: u32) -> Self {
        let mut details = self.details.take().map(|d| *d).unwrap_or_default();
        details.retry_after_seconds = Some(seconds);
        self.details = Some(Box::new(details));
        self
    }

    /// 504 Timeout.
    pub fn timeout(message: impl Into<String>) -> Self {
        Self::failure(504, "Timeout", message)
    }

    /// The body as JSON bytes.
    pub fn to_json(&self) -> Vec<u8> {
        // Serializing a struct of strings and maps cannot fail.
        serde_json::to_vec(self).unwrap_or_default()
    }
}

impl From<&kube::Error> for Status {
    /// What a kcp call's failure means to the hub's own caller: kcp's Status passes through (its
    /// message names the object), a transport failure becomes 503 without internals.
    fn from(e: &kube::Error) -> Self {
        match e {
            kube::Error::Api(s) => {
                let code = s.code;
                Status::failure(code, &s.reason, s.message.clone())
            }
            other => {
                tracing::warn!(error = %other, "kcp request failed");
                Status::unavailable("kcp is not reachable right now; retry shortly")
            }
        }
    }
}

impl From<kube::Error> for Status {
    fn from(e: kube::Error) -> Self {
        Status::from(&e)
    }
}

/// `<resource>.<group>`, or just `<resource>` for the core group, as Kubernetes prints it.
pub fn qualified(group: &str, resource: &str) -> String {
    if group.is_empty() {
        resource.to_string()
    } else {
        format!("{resource}.{group}")
    }
}

#[cfg(feature = "axum")]
mod axum_impl {
    use super::Status;
    use axum::response::{IntoResponse, Response};

    impl IntoResponse for Status {
        fn into_response(self) -> Response {
            let code = http::StatusCode::from_u16(self.code).unwrap_or(http::StatusCode::INTERNAL_SERVER_ERROR);
            let retry = self.details.as_ref().and_then(|d| d.retry_after_seconds);
            let mut resp = (code, [(http::header::CONTENT_TYPE, "application/json")], self.to_json()).into_response();
            if let Some(seconds) = retry {
                resp.headers_mut()
                    .insert(http::header::RETRY_AFTER, http::HeaderValue::from(seconds));
            }
            resp
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn retry_after_keeps_other_details() {
        let s = Status::not_found("g", "r", "n").retry_after(2);
        let details = s.details.as_deref().unwrap();
        assert_eq!((details.name.as_str(), details.retry_after_seconds), ("n", Some(2)));
        let v: serde_json::Value = serde_json::from_slice(&Status::unavailable("x").retry_after(1).to_json()).unwrap();
        assert_eq!(v["details"]["retryAfterSeconds"], 1);
    }

    #[test]
    fn not_found_matches_kubernetes_text() {
        let s = Status::not_found("example.io", "widgets", "w1");
        assert_eq!(s.message, "widgets.example.io \"w1\" not found");
        assert_eq!(s.code, 404);
        let v: serde_json::Value = serde_json::from_slice(&s.to_json()).unwrap();
        assert_eq!(v["kind"], "Status");
        assert_eq!(v["details"]["kind"], "widgets");
        let core = Status::not_found("", "configmaps", "c");
        assert_eq!(core.message, "configmaps \"c\" not found");
    }

    #[test]
    fn invalid_lists_causes() {
        let s = Status::invalid(
            "",
            "ConfigMap",
            "x",
            vec![StatusCause {
                reason: "FieldValueRequired".into(),
                message: "Required value".into(),
                field: "metadata.name".into(),
            }],
        );
        assert_eq!(s.message, "ConfigMap \"x\" is invalid: metadata.name: Required value");
        let cause = |field: &str| StatusCause {
            reason: "FieldValueForbidden".into(),
            message: "Forbidden: no".into(),
            field: field.into(),
        };
        let s = Status::invalid("example.io", "Widget", "w", vec![cause("a"), cause("a"), cause("b")]);
        assert_eq!(
            s.message,
            "Widget.example.io \"w\" is invalid: [a: Forbidden: no, b: Forbidden: no]"
        );
        assert_eq!(s.details.unwrap().causes.len(), 3, "every cause stays in the details");
    }
}
