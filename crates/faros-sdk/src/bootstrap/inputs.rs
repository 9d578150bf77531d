//! Reading and validating what `init` applies: the APIResourceSchema files and the CatalogEntry
//! manifest. Every rejection names the file and the field, because the person reading it is a
//! provider author looking at their YAML.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use faros_core::catalog::CatalogEntry;
use faros_core::kcp::apis::v1alpha1::{APIResourceSchema, split_schema_name};
use faros_core::names;
use kube::ResourceExt;
use serde_json::Value;

use crate::manifest::{self, ManifestError};

/// A rejected input file.
#[derive(Debug, thiserror::Error)]
pub enum InputError {
    #[error(transparent)]
    Manifest(#[from] ManifestError),
    #[error("reading schemas directory {dir}: {source}")]
    ReadDir {
        dir: String,
        #[source]
        source: std::io::Error,
    },
    /// A required input is not where its variable says.
    #[error("{var}={path}: {problem} (set {var} to {wants})")]
    Location {
        var: &'static str,
        /// The path, and a note when it is the default because the variable is unset.
        path: String,
        problem: &'static str,
        wants: &'static str,
    },
    #[error("{file}: {field}: {message}")]
    Field {
        file: String,
        field: String,
        message: String,
    },
}

fn field(file: &Path, field: &str, message: impl Into<String>) -> InputError {
    InputError::Field {
        file: file.display().to_string(),
        field: field.to_string(),
        message: message.into(),
    }
}

/// One schema with the file it came from.
#[derive(Clone, Debug)]
pub struct SchemaFile {
    pub file: PathBuf,
    pub schema: APIResourceSchema,
}

impl SchemaFile {
    pub fn name(&self) -> &str {
        self.schema.metadata.name.as_deref().unwrap_or_default()
    }
}

/// The `*.yaml`/`*.yml` files of `dir`, sorted by name. A missing directory lists nothing here;
/// [`require_schemas`] is what makes a missing or empty directory an error for `init`.
pub fn schema_files(dir: &Path) -> Result<Vec<PathBuf>, InputError> {
    let entries = match std::fs::read_dir(dir) {
        Ok(entries) => entries,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(Vec::new()),
        Err(source) => {
            return Err(InputError::ReadDir {
                dir: dir.display().to_string(),
                source,
            });
        }
    };
    let mut files = Vec::new();
    for entry in entries {
        let entry = entry.map_err(|source| InputError::ReadDir {
            dir: dir.display().to_string(),
            source,
        })?;
        let path = entry.path();
        let is_yaml = path
            .extension()
            .and_then(|e| e.to_str())
            .is_some_and(|e| e == "yaml" || e == "yml");
        if is_yaml && path.is_file() {
            files.push(path);
        }
    }
    files.sort();
    Ok(files)
}

/// Loads and validates every schema in `dir`; each schema's group must be one of `groups`.
pub fn load_schemas(
    dir: &Path,
    groups: &[String],
    env: &BTreeMap<String, String>,
) -> Result<Vec<SchemaFile>, InputError> {
    let mut out: Vec<SchemaFile> = Vec::new();
    for file in schema_files(dir)? {
        let value: Value = manifest::load(&file, env)?;
        let schema = validate_schema(&file, value, groups)?;
        if let Some(prev) = out.iter().find(|s| s.name() == schema.name()) {
            return Err(field(
                &file,
                "metadata.name",
                format!("{:?} is also defined in {}", schema.name(), prev.file.display()),
            ));
        }
        out.push(schema);
    }
    Ok(out)
}

/// What [`require_schemas`] and [`require_catalog_entry`] ask the author to point the variable at.
const SCHEMAS_WANTED: &str = "the directory holding the provider's APIResourceSchema YAML";
const CATALOG_ENTRY_WANTED: &str = "the provider's CatalogEntry manifest";

/// `path` as the variable's value, noting when it is only the default.
fn shown(var: &str, path: &Path, default: &str, env: &BTreeMap<String, String>) -> String {
    let unset = env.get(var).is_none_or(|v| v.is_empty());
    if unset && path == Path::new(default) {
        format!("{} (the default: {var} is unset)", path.display())
    } else {
        path.display().to_string()
    }
}

/// The schemas `init` publishes: `dir` must exist and hold at least one schema, because an export
/// without resources is never what an author wants, and on a published provider it would remove
/// every resource from its tenants.
pub fn require_schemas(
    dir: &Path,
    groups: &[String],
    env: &BTreeMap<String, String>,
) -> Result<Vec<SchemaFile>, InputError> {
    let location = |problem| InputError::Location {
        var: names::ENV_SCHEMAS_DIR,
        path: shown(names::ENV_SCHEMAS_DIR, dir, names::DEFAULT_SCHEMAS_DIR, env),
        problem,
        wants: SCHEMAS_WANTED,
    };
    if !dir.exists() {
        return Err(location("directory does not exist"));
    }
    if !dir.is_dir() {
        return Err(location("not a directory"));
    }
    let schemas = load_schemas(dir, groups, env)?;
    if schemas.is_empty() {
        return Err(location("no *.yaml or *.yml files in the directory"));
    }
    Ok(schemas)
}

/// The CatalogEntry `init` registers: `file` must exist (see [`load_catalog_entry`]).
pub fn require_catalog_entry(
    file: &Path,
    export: &str,
    env: &BTreeMap<String, String>,
) -> Result<CatalogEntry, InputError> {
    let location = |problem| InputError::Location {
        var: names::ENV_CATALOGENTRY_FILE,
        path: shown(
            names::ENV_CATALOGENTRY_FILE,
            file,
            names::DEFAULT_CATALOGENTRY_FILE,
            env,
        ),
        problem,
        wants: CATALOG_ENTRY_WANTED,
    };
    if !file.exists() {
        return Err(location("file does not exist"));
    }
    if !file.is_file() {
        return Err(location("not a file"));
    }
    load_catalog_entry(file, export, env)
}

/// The hub reads only the CatalogEntry named like the provider; any other name would be ignored
/// there, silently, so it is refused here.
pub fn check_catalog_entry_name(
    file: &Path,
    entry: &CatalogEntry,
    provider: &str,
    workspace: &str,
) -> Result<(), InputError> {
    let name = entry.name_any();
    if name == provider {
        return Ok(());
    }
    Err(field(
        file,
        "metadata.name",
        format!(
            "{name:?} is not this provider's name ({provider:?}, from its workspace {workspace}); the hub only reads \
             the CatalogEntry named like the provider"
        ),
    ))
}

/// Validates one parsed schema document.
pub fn validate_schema(file: &Path, value: Value, groups: &[String]) -> Result<SchemaFile, InputError> {
    expect_type(file, &value, "apis.kcp.io/v1alpha1", "APIResourceSchema")?;
    let name = required_str(file, &value, "/metadata/name", "metadata.name")?;
    let group = value.pointer("/spec/group").and_then(Value::as_str).unwrap_or_default();
    if !groups.iter().any(|g| g == group) {
        return Err(field(
            file,
            "spec.group",
            format!(
                "group {group:?} does not belong to this provider (allowed: {})",
                groups.join(", ")
            ),
        ));
    }
    let plural = required_str(file, &value, "/spec/names/plural", "spec.names.plural")?;
    match split_schema_name(&name) {
        Some((resource, g)) if resource == plural && g == group => {}
        _ => {
            return Err(field(
                file,
                "metadata.name",
                format!("{name:?} must be <version-prefix>.{plural}.{group}"),
            ));
        }
    }
    let schema: APIResourceSchema = serde_json::from_value(value).map_err(|e| field(file, "spec", e.to_string()))?;
    if schema.spec.versions.is_empty() {
        return Err(field(file, "spec.versions", "at least one version is required"));
    }
    Ok(SchemaFile {
        file: file.to_path_buf(),
        schema,
    })
}

/// Loads and validates the CatalogEntry manifest; its `spec.apiExport.name`, when set, must be `export`.
pub fn load_catalog_entry(
    file: &Path,
    export: &str,
    env: &BTreeMap<String, String>,
) -> Result<CatalogEntry, InputError> {
    let value: Value = manifest::load(file, env)?;
    validate_catalog_entry(file, value, export)
}

/// Validates one parsed CatalogEntry document.
pub fn validate_catalog_entry(file: &Path, value: Value, export: &str) -> Result<CatalogEntry, InputError> {
    expect_type(file, &value, "providers.faros.sh/v1alpha1", "CatalogEntry")?;
    required_str(file, &value, "/metadata/name", "metadata.name")?;
    required_str(file, &value, "/spec/displayName", "spec.displayName")?;
    if let Some(name) = value.pointer("/spec/apiExport/name").and_then(Value::as_str)
        && name != export
    {
        return Err(field(
            file,
            "spec.apiExport.name",
            format!("{name:?} differs from the export this provider publishes ({export:?})"),
        ));
    }
    serde_json::from_value(value).map_err(|e| field(file, "spec", e.to_string()))
}

fn expect_type(file: &Path, value: &Value, api_version: &str, kind: &str) -> Result<(), InputError> {
    let got_version = value.get("apiVersion").and_then(Value::as_str).unwrap_or_default();
    let got_kind = value.get("kind").and_then(Value::as_str).unwrap_or_default();
    if !value.is_object() {
        return Err(field(file, "(document)", "expected a YAML mapping"));
    }
    if got_version != api_version {
        return Err(field(
            file,
            "apiVersion",
            format!("expected {api_version:?}, got {got_version:?}"),
        ));
    }
    if got_kind != kind {
        return Err(field(file, "kind", format!("expected {kind:?}, got {got_kind:?}")));
    }
    Ok(())
}

fn required_str(file: &Path, value: &Value, pointer: &str, name: &str) -> Result<String, InputError> {
    match value.pointer(pointer).and_then(Value::as_str) {
        Some(s) if !s.trim().is_empty() => Ok(s.to_string()),
        _ => Err(field(file, name, "required")),
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::expect_used)]
mod tests {
    use super::*;
    use serde_json::json;

    const GROUP: &str = "quickstart.providers.faros.sh";

    fn schema() -> Value {
        json!({"apiVersion": "apis.kcp.io/v1alpha1", "kind": "APIResourceSchema",
            "metadata": {"name": "v1.greetings.quickstart.providers.faros.sh"},
            "spec": {"group": GROUP, "names": {"kind": "Greeting", "plural": "greetings"}, "scope": "Namespaced",
                "versions": [{"name": "v1alpha1", "served": true, "storage": true, "schema": {"type": "object"}}]}})
    }

    fn with(mut v: Value, pointer: &str, new: Value) -> Value {
        *v.pointer_mut(pointer).unwrap() = new;
        v
    }

    #[test]
    fn schema_validation_names_file_and_field() {
        let groups = vec![GROUP.to_string()];
        let file = Path::new("schemas/g.yaml");
        assert_eq!(
            validate_schema(file, schema(), &groups).unwrap().name(),
            "v1.greetings.quickstart.providers.faros.sh"
        );
        let cases = [
            (
                with(schema(), "/kind", json!("CustomResourceDefinition")),
                "schemas/g.yaml: kind: expected \"APIResourceSchema\", got \"CustomResourceDefinition\"",
            ),
            (
                with(schema(), "/apiVersion", json!("apis.kcp.io/v1alpha2")),
                "schemas/g.yaml: apiVersion: expected \"apis.kcp.io/v1alpha1\", got \"apis.kcp.io/v1alpha2\"",
            ),
            (
                with(schema(), "/metadata/name", json!("")),
                "schemas/g.yaml: metadata.name: required",
            ),
            (
                with(schema(), "/spec/group", json!("other.example.io")),
                "schemas/g.yaml: spec.group: group \"other.example.io\" does not belong to this provider (allowed: quickstart.providers.faros.sh)",
            ),
            (
                with(
                    schema(),
                    "/metadata/name",
                    json!("v1.hellos.quickstart.providers.faros.sh"),
                ),
                "schemas/g.yaml: metadata.name: \"v1.hellos.quickstart.providers.faros.sh\" must be <version-prefix>.greetings.quickstart.providers.faros.sh",
            ),
            (
                with(schema(), "/spec/versions", json!([])),
                "schemas/g.yaml: spec.versions: at least one version is required",
            ),
        ];
        for (value, want) in cases {
            assert_eq!(validate_schema(file, value, &groups).unwrap_err().to_string(), want);
        }
    }

    fn entry() -> Value {
        json!({"apiVersion": "providers.faros.sh/v1alpha1", "kind": "CatalogEntry", "metadata": {"name": "quickstart"},
            "spec": {"displayName": "Quickstart", "apiExport": {"name": GROUP}}})
    }

    #[test]
    fn catalog_entry_validation() {
        let file = Path::new("manifest.yaml");
        assert_eq!(
            validate_catalog_entry(file, entry(), GROUP).unwrap().spec.display_name,
            "Quickstart"
        );
        let no_display = {
            let mut v = entry();
            v["spec"].as_object_mut().unwrap().remove("displayName");
            v
        };
        let cases = [
            (no_display, "manifest.yaml: spec.displayName: required"),
            (
                with(entry(), "/spec/apiExport/name", json!("other")),
                "manifest.yaml: spec.apiExport.name: \"other\" differs from the export this provider publishes (\"quickstart.providers.faros.sh\")",
            ),
            (
                with(entry(), "/kind", json!("Provider")),
                "manifest.yaml: kind: expected \"CatalogEntry\", got \"Provider\"",
            ),
        ];
        for (value, want) in cases {
            assert_eq!(
                validate_catalog_entry(file, value, GROUP).unwrap_err().to_string(),
                want
            );
        }
    }

    #[test]
    fn loads_sorted_yaml_files_and_rejects_duplicates() {
        let dir = tempfile::tempdir().unwrap();
        let groups = vec![GROUP.to_string()];
        let env = BTreeMap::new();
        assert!(
            load_schemas(&dir.path().join("missing"), &groups, &env)
                .unwrap()
                .is_empty()
        );
        let yaml = serde_saphyr::to_string(&schema()).unwrap();
        std::fs::write(dir.path().join("b.yml"), &yaml).unwrap();
        std::fs::write(dir.path().join("README.md"), "not a schema").unwrap();
        let files = schema_files(dir.path()).unwrap();
        assert_eq!(files, vec![dir.path().join("b.yml")]);
        assert_eq!(load_schemas(dir.path(), &groups, &env).unwrap().len(), 1);
        std::fs::write(dir.path().join("a.yaml"), &yaml).unwrap();
        let err = load_schemas(dir.path(), &groups, &env).unwrap_err().to_string();
        assert_eq!(
            err,
            format!(
                "{}: metadata.name: \"v1.greetings.quickstart.providers.faros.sh\" is also defined in {}",
                dir.path().join("b.yml").display(),
                dir.path().join("a.yaml").display()
            )
        );
        std::fs::write(dir.path().join("a.yaml"), "kind: [").unwrap();
        let err = load_schemas(dir.path(), &groups, &env).unwrap_err().to_string();
        assert!(
            err.starts_with(&format!("{}: invalid YAML", dir.path().join("a.yaml").display())),
            "{err}"
        );
    }
}
