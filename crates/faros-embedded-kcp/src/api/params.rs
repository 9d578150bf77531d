//! Query parameters of Kubernetes API requests.

use std::collections::HashMap;

use faros_core::status::Status;

/// `fieldValidation`: how unknown fields in a body are treated.
pub use crate::write::FieldValidation;

/// The query parameters the server understands. Unknown parameters are ignored, as Kubernetes does.
#[derive(Clone, Debug, Default)]
pub struct Params {
    raw: HashMap<String, String>,
}

impl Params {
    /// Parses a query string; kube-rs sends `?&watch=true`, so empty pairs are skipped.
    pub fn parse(query: Option<&str>) -> Self {
        let mut raw = HashMap::new();
        for pair in query.unwrap_or_default().split('&').filter(|p| !p.is_empty()) {
            let (k, v) = pair.split_once('=').unwrap_or((pair, ""));
            let decode = |s: &str| {
                percent_encoding::percent_decode_str(&s.replace('+', " "))
                    .decode_utf8_lossy()
                    .into_owned()
            };
            raw.insert(decode(k), decode(v));
        }
        Self { raw }
    }

    pub fn get(&self, key: &str) -> Option<&str> {
        self.raw.get(key).map(String::as_str).filter(|s| !s.is_empty())
    }

    fn flag(&self, key: &str) -> bool {
        matches!(self.raw.get(key).map(String::as_str), Some("true" | "1" | "")) && self.raw.contains_key(key)
    }

    pub fn watch(&self) -> bool {
        self.flag("watch")
    }

    /// `dryRun`; any value but `All` is kube's validation error of the request's options kind
    /// (`CreateOptions`, `UpdateOptions`, `PatchOptions`, `DeleteOptions`).
    pub fn dry_run(&self, options_kind: &str) -> Result<bool, Status> {
        match self.get("dryRun") {
            None => Ok(false),
            Some("All") => Ok(true),
            Some(other) => Err(Status::invalid(
                "meta.k8s.io",
                options_kind,
                "",
                vec![faros_core::status::StatusCause {
                    reason: "FieldValueNotSupported".into(),
                    message: format!("Unsupported value: [{other:?}]: supported values: \"All\""),
                    field: "dryRun".into(),
                }],
            )),
        }
    }

    pub fn force(&self) -> bool {
        self.get("force") == Some("true")
    }

    pub fn field_manager(&self) -> Option<&str> {
        self.get("fieldManager")
    }

    pub fn field_validation(&self) -> Result<FieldValidation, Status> {
        match self.get("fieldValidation") {
            None | Some("Warn") => Ok(FieldValidation::Warn),
            Some("Ignore") => Ok(FieldValidation::Ignore),
            Some("Strict") => Ok(FieldValidation::Strict),
            Some(other) => Err(Status::bad_request(format!(
                "fieldValidation must be one of \"Ignore\", \"Warn\" or \"Strict\", got {other:?}"
            ))),
        }
    }

    pub fn label_selector(&self) -> Option<&str> {
        self.get("labelSelector")
    }

    pub fn field_selector(&self) -> Option<&str> {
        self.get("fieldSelector")
    }

    pub fn limit(&self) -> Result<Option<usize>, Status> {
        match self.get("limit") {
            None => Ok(None),
            Some(l) => match l.parse::<i64>() {
                Ok(n) if n > 0 => Ok(Some(n as usize)),
                Ok(_) => Ok(None),
                Err(_) => Err(Status::bad_request(format!("invalid limit {l:?}: must be an integer"))),
            },
        }
    }

    pub fn continue_token(&self) -> Option<&str> {
        self.get("continue")
    }

    /// `resourceVersion` as a number; "0" and absence both mean "any/most recent".
    pub fn resource_version(&self) -> Result<Option<u64>, Status> {
        match self.get("resourceVersion") {
            None => Ok(None),
            Some(rv) => rv.parse::<u64>().map(Some).map_err(|_| {
                Status::bad_request(format!("invalid resource version {rv:?}: must be a decimal integer"))
            }),
        }
    }

    pub fn resource_version_match(&self) -> Option<&str> {
        self.get("resourceVersionMatch")
    }

    pub fn timeout_seconds(&self) -> Result<Option<u64>, Status> {
        match self.get("timeoutSeconds") {
            None => Ok(None),
            Some(t) => t.parse::<u64>().map(Some).map_err(|_| {
                Status::bad_request(format!("invalid timeoutSeconds {t:?}: must be a non-negative integer"))
            }),
        }
    }

    pub fn allow_bookmarks(&self) -> bool {
        self.get("allowWatchBookmarks") == Some("true")
    }

    pub fn send_initial_events(&self) -> bool {
        self.get("sendInitialEvents") == Some("true")
    }

    pub fn propagation_policy(&self) -> Option<&str> {
        self.get("propagationPolicy")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_kube_rs_queries() {
        let p = Params::parse(Some(
            "&watch=true&timeoutSeconds=290&allowWatchBookmarks=true&resourceVersion=12&labelSelector=a%3Db%2Cc",
        ));
        assert!(p.watch());
        assert_eq!(p.timeout_seconds().unwrap(), Some(290));
        assert!(p.allow_bookmarks());
        assert_eq!(p.resource_version().unwrap(), Some(12));
        assert_eq!(p.label_selector(), Some("a=b,c"));
        assert!(!Params::parse(Some("watch=false")).watch());
        assert!(Params::parse(Some("watch=1")).watch());
        assert_eq!(Params::parse(Some("limit=abc")).limit().unwrap_err().code, 400);
        assert_eq!(
            Params::parse(Some("fieldValidation=Strict"))
                .field_validation()
                .unwrap(),
            FieldValidation::Strict
        );
        assert_eq!(Params::parse(None).field_validation().unwrap(), FieldValidation::Warn);
        assert!(Params::parse(Some("dryRun=All")).dry_run("CreateOptions").unwrap());
    }
}
