//! The faros schemas of each [`names::SCHEMA_PREFIX`], committed under `crates/faros-core/schemas/`,
//! and the test that keeps a schema from changing without a new prefix.
//!
//! kcp's APIResourceSchemas are immutable and named `<prefix>.<plural>.<group>`. An install upgraded
//! to a build whose schema changed under the same name keeps serving the old schema: the reconciler
//! finds the name taken and moves on, and kcp silently prunes every new field. So a changed schema
//! needs a new prefix, and this module's test fails until it gets one. With a new prefix the test
//! asks for the new revision to be recorded: `FAROS_RECORD_SCHEMAS=1 cargo test -p faros-core
//! schema_revision`, which writes the files to commit beside the old ones (kept: an upgrade test
//! and a reader of an older install may need them).

use std::path::PathBuf;

use serde_json::Value;

use crate::names;
use crate::schema_gen::{SchemaGenError, faros_api_resource_schemas};

/// Where the recorded schemas live (one JSON file per schema, named like the schema).
pub fn recorded_dir() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("schemas")
}

/// `(file name, schema)` of every faros schema this build generates.
pub fn generated() -> Result<Vec<(String, Value)>, SchemaGenError> {
    Ok(faros_api_resource_schemas()?
        .into_iter()
        .map(|s| {
            let name = s["metadata"]["name"].as_str().unwrap_or_default().to_string();
            (format!("{name}.json"), s)
        })
        .collect())
}

/// What the recorded revision says about one generated schema.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Verdict {
    Same,
    /// This prefix was recorded with another content: the prefix must change.
    ChangedUnderSamePrefix,
    /// Nothing recorded under this name: a new prefix (or a new type) to record.
    NotRecorded,
}

/// Compares a generated schema with what was recorded under its name.
pub fn verdict(generated: &Value, recorded: Option<&Value>) -> Verdict {
    match recorded {
        None => Verdict::NotRecorded,
        Some(r) if r == generated => Verdict::Same,
        Some(_) => Verdict::ChangedUnderSamePrefix,
    }
}

/// The instruction for a verdict, naming the schema.
pub fn instruction(file: &str, verdict: &Verdict) -> Option<String> {
    match verdict {
        Verdict::Same => None,
        Verdict::ChangedUnderSamePrefix => Some(format!(
            "{file}: the schema changed but its name did not. kcp schemas are immutable: an upgraded install \
             would keep the old one and drop the new fields. Bump faros_core::names::SCHEMA_PREFIX (now {:?}), \
             then record the new revision with FAROS_RECORD_SCHEMAS=1 cargo test -p faros-core schema_revision",
            names::SCHEMA_PREFIX
        )),
        Verdict::NotRecorded => Some(format!(
            "{file} is not recorded: record it with FAROS_RECORD_SCHEMAS=1 cargo test -p faros-core schema_revision \
             and commit crates/faros-core/schemas/"
        )),
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::expect_used)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn verdicts() {
        let a = json!({"spec": {"a": 1}});
        let b = json!({"spec": {"a": 1, "b": 2}});
        assert_eq!(verdict(&a, Some(&a)), Verdict::Same);
        assert_eq!(verdict(&b, Some(&a)), Verdict::ChangedUnderSamePrefix);
        assert_eq!(verdict(&a, None), Verdict::NotRecorded);
        assert!(instruction("x.json", &Verdict::Same).is_none());
        assert!(
            instruction("x.json", &Verdict::ChangedUnderSamePrefix)
                .unwrap()
                .contains("Bump faros_core::names::SCHEMA_PREFIX")
        );
    }

    /// The ratchet: every generated schema equals the one recorded under its name.
    #[test]
    fn schema_revision_is_recorded_and_unchanged() {
        let dir = recorded_dir();
        let record = std::env::var_os("FAROS_RECORD_SCHEMAS").is_some();
        let mut problems = Vec::new();
        for (file, schema) in generated().unwrap() {
            let path = dir.join(&file);
            let recorded: Option<Value> = std::fs::read(&path)
                .ok()
                .map(|bytes| serde_json::from_slice(&bytes).expect("a recorded schema is JSON"));
            let v = verdict(&schema, recorded.as_ref());
            if record && v == Verdict::NotRecorded {
                std::fs::create_dir_all(&dir).unwrap();
                let mut text = serde_json::to_string_pretty(&schema).unwrap();
                text.push('\n');
                std::fs::write(&path, text).unwrap();
                continue;
            }
            problems.extend(instruction(&file, &v));
        }
        assert!(problems.is_empty(), "{}", problems.join("\n"));
    }
}
