//! Writes through the APIExport virtual workspace to a claimed resource whose accepted claim has a
//! label selector, as kcp's selector admission does it: a create or update gets the selector's
//! `matchLabels` stamped on (a different value for one of them is refused: the label is
//! protected), and the result must match the whole selector; an update or delete of an object
//! outside the selector is refused. IO-free.

use std::collections::BTreeMap;

use faros_core::status::Status;
use serde_json::{Value, json};

use crate::objects::meta;
use crate::registry::ResourceDef;
use crate::selector::LabelSelector;

/// The accepted selector of one consumer's claim (never `matchAll`: no guard is needed then).
#[derive(Clone, Debug)]
pub struct ClaimGuard {
    pub selector: LabelSelector,
    pub match_labels: BTreeMap<String, String>,
}

fn forbidden(def: &ResourceDef, name: &str, message: &str) -> Status {
    Status::forbidden(format!(
        "{} \"{name}\" is forbidden: {message}",
        faros_core::status::qualified(&def.group, &def.resource)
    ))
}

impl ClaimGuard {
    fn matches(&self, obj: &Value) -> bool {
        self.selector.matches(meta::labels(obj))
    }

    /// Stamps the selector's labels on a created or updated object and checks that it matches.
    pub fn admit(&self, def: &ResourceDef, obj: &mut Value) -> Result<(), Status> {
        let name = meta::name(obj).unwrap_or_default().to_string();
        let meta = meta::meta_mut(obj);
        let labels = meta.entry("labels").or_insert_with(|| json!({}));
        if !labels.is_object() {
            *labels = json!({});
        }
        if let Some(labels) = labels.as_object_mut() {
            for (k, want) in &self.match_labels {
                match labels.get(k).and_then(Value::as_str) {
                    None => {
                        labels.insert(k.clone(), Value::String(want.clone()));
                    }
                    Some(got) if got == want => {}
                    Some(_) => {
                        return Err(forbidden(
                            def,
                            &name,
                            &format!("protected label {k} must have value {want}"),
                        ));
                    }
                }
            }
        }
        if meta
            .get("labels")
            .is_some_and(|l| l.as_object().is_some_and(|m| m.is_empty()))
        {
            meta.remove("labels");
        }
        if !self.matches(obj) {
            return Err(forbidden(def, &name, "object does not match required labels"));
        }
        Ok(())
    }

    /// An existing object may be changed or deleted only inside the selector.
    pub fn check_existing(&self, def: &ResourceDef, old: &Value) -> Result<(), Status> {
        if self.matches(old) {
            Ok(())
        } else {
            let name = meta::name(old).unwrap_or_default();
            Err(forbidden(def, name, "object does not match required labels"))
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn guard(selector: &str, labels: &[(&str, &str)]) -> ClaimGuard {
        ClaimGuard {
            selector: LabelSelector::parse(selector).unwrap(),
            match_labels: labels.iter().map(|(k, v)| (k.to_string(), v.to_string())).collect(),
        }
    }

    fn cm_def() -> ResourceDef {
        crate::builtin::builtin_resources()
            .into_iter()
            .find(|d| d.resource == "configmaps")
            .unwrap()
    }

    #[test]
    fn admission_stamps_protects_and_validates() {
        let def = cm_def();
        let by_labels = guard("test=test", &[("test", "test")]);
        let by_expression = guard("test in (test1,test2)", &[]);
        let cases: Vec<(&ClaimGuard, Value, Result<Value, &str>)> = vec![
            // Missing selector labels are added (also when the client dropped them on update).
            (
                &by_labels,
                json!({"metadata": {"name": "a"}}),
                Ok(json!({"test": "test"})),
            ),
            (
                &by_labels,
                json!({"metadata": {"name": "a", "labels": {"tier": "x"}}}),
                Ok(json!({"test": "test", "tier": "x"})),
            ),
            (
                &by_labels,
                json!({"metadata": {"name": "a", "labels": {"test": "other"}}}),
                Err("configmaps \"a\" is forbidden: protected label test must have value test"),
            ),
            // Expressions cannot be stamped: the object must satisfy them itself.
            (
                &by_expression,
                json!({"metadata": {"name": "s", "labels": {"env": "prod"}}}),
                Err("configmaps \"s\" is forbidden: object does not match required labels"),
            ),
            (
                &by_expression,
                json!({"metadata": {"name": "s", "labels": {"test": "test1"}}}),
                Ok(json!({"test": "test1"})),
            ),
        ];
        for (g, mut obj, want) in cases {
            let got = g.admit(&def, &mut obj).map(|()| obj["metadata"]["labels"].clone());
            match want {
                Ok(labels) => assert_eq!(got.unwrap(), labels),
                Err(message) => assert_eq!(got.unwrap_err().message, message),
            }
        }
        let outside = json!({"metadata": {"name": "cm1", "labels": {"env": "random1"}}});
        assert_eq!(
            by_labels.check_existing(&def, &outside).unwrap_err().message,
            "configmaps \"cm1\" is forbidden: object does not match required labels"
        );
        assert!(
            by_labels
                .check_existing(&def, &json!({"metadata": {"labels": {"test": "test"}}}))
                .is_ok()
        );
    }
}
