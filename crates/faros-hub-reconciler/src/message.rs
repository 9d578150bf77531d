//! Short messages of kube errors, for conditions, logs and error chains. A leaf every module uses.

/// A short, human message for a kube error: the API server's own message for API errors (kube's
/// Display adds a Debug dump of the whole Status).
pub fn kube_message(error: &kube::Error) -> String {
    match error {
        kube::Error::Api(s) => format!("{} ({} {})", s.message, s.code, s.reason),
        other => other.to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use pretty_assertions::assert_eq;

    #[test]
    fn kube_messages_are_short() {
        let status = kube::core::Status {
            message: "workspaces \"x\" is forbidden".into(),
            reason: "Forbidden".into(),
            code: 403,
            ..Default::default()
        };
        assert_eq!(
            kube_message(&kube::Error::Api(Box::new(status))),
            "workspaces \"x\" is forbidden (403 Forbidden)"
        );
    }
}
