//! One manifest for every environment: YAML files (the CatalogEntry manifest, schemas) may contain
//! minijinja expressions over the process environment, e.g.
//!
//! ```yaml
//! backend:
//!   url: {{ env.QUICKSTART_URL | default("http://localhost:8081") }}
//! ```
//!
//! Rendering is strict (a variable that is not set and has no `default` is an error naming the file
//! and line) and YAML-safe: every interpolated string is written as a double-quoted scalar with JSON
//! escaping, so a value containing `: `, `#`, quotes or newlines stays one string and can never add
//! YAML structure. Write each expression as a whole scalar (not inside quotes); build composite
//! strings inside the expression with `~`.

use std::collections::BTreeMap;
use std::path::Path;

use minijinja::{AutoEscape, Environment, UndefinedBehavior, context};
use serde::de::DeserializeOwned;

/// Errors rendering or parsing a templated YAML file.
#[derive(Debug, thiserror::Error)]
pub enum ManifestError {
    #[error("reading {file}: {source}")]
    Read {
        file: String,
        #[source]
        source: std::io::Error,
    },
    #[error("{file}: template error: {message}")]
    Template { file: String, message: String },
    #[error("{file}: invalid YAML: {message}")]
    Yaml { file: String, message: String },
}

/// The environment as the `env` map templates see.
pub fn process_env() -> BTreeMap<String, String> {
    std::env::vars().collect()
}

/// Renders `source` (named `file` in errors) with `env` bound to the variable `env`.
pub fn render(file: &str, source: &str, env: &BTreeMap<String, String>) -> Result<String, ManifestError> {
    // Files without any template syntax are returned as they are, byte for byte.
    if !source.contains("{{") && !source.contains("{%") && !source.contains("{#") {
        return Ok(source.to_string());
    }
    let mut jinja = Environment::new();
    jinja.set_undefined_behavior(UndefinedBehavior::Strict);
    // JSON escaping of every interpolated value is what makes the output YAML-safe: a JSON string is
    // a YAML double-quoted scalar, and numbers and booleans are the same in both.
    jinja.set_auto_escape_callback(|_| AutoEscape::Json);
    let template_error = |e: minijinja::Error| ManifestError::Template {
        file: file.to_string(),
        message: describe(&e),
    };
    jinja
        .template_from_named_str(file, source)
        .map_err(template_error)?
        .render(context! { env => env })
        .map_err(template_error)
}

/// Reads, renders and parses one YAML document from `path` into `T`.
pub fn load<T: DeserializeOwned>(path: &Path, env: &BTreeMap<String, String>) -> Result<T, ManifestError> {
    let file = path.display().to_string();
    let source = std::fs::read_to_string(path).map_err(|source| ManifestError::Read {
        file: file.clone(),
        source,
    })?;
    parse(&file, &source, env)
}

/// Renders and parses `source` (named `file` in errors) into `T`.
pub fn parse<T: DeserializeOwned>(
    file: &str,
    source: &str,
    env: &BTreeMap<String, String>,
) -> Result<T, ManifestError> {
    let rendered = render(file, source, env)?;
    serde_saphyr::from_str(&rendered).map_err(|e| ManifestError::Yaml {
        file: file.to_string(),
        message: e.to_string(),
    })
}

fn describe(e: &minijinja::Error) -> String {
    match e.line() {
        Some(line) => format!("line {line}: {}", e.detail().unwrap_or(&e.kind().to_string())),
        None => e.to_string(),
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::expect_used)]
mod tests {
    use super::*;
    use pretty_assertions::assert_eq;
    use serde_json::{Value, json};

    fn env(pairs: &[(&str, &str)]) -> BTreeMap<String, String> {
        pairs.iter().map(|(k, v)| (k.to_string(), v.to_string())).collect()
    }

    const MANIFEST: &str = "spec:\n  url: {{ env.URL | default(\"http://localhost:8081\") }}\n  ui: {{ (env.URL | default(\"http://localhost:8081\")) ~ \"/ui\" }}\n";

    #[test]
    fn renders_defaults_and_overrides() {
        let cases = [
            (
                env(&[]),
                json!({"spec": {"url": "http://localhost:8081", "ui": "http://localhost:8081/ui"}}),
            ),
            (
                env(&[("URL", "https://q.example:9443")]),
                json!({"spec": {"url": "https://q.example:9443", "ui": "https://q.example:9443/ui"}}),
            ),
        ];
        for (vars, want) in cases {
            let got: Value = parse("manifest.yaml", MANIFEST, &vars).unwrap();
            assert_eq!(got, want);
        }
    }

    #[test]
    fn values_cannot_inject_yaml() {
        let hostile = "x\"\nadmin: true # : {a: b}";
        let got: Value = parse("m.yaml", MANIFEST, &env(&[("URL", hostile)])).unwrap();
        assert_eq!(got["spec"]["url"], json!(hostile));
        assert_eq!(got["spec"].as_object().unwrap().len(), 2);
        assert!(got.get("admin").is_none());
    }

    #[test]
    fn strict_undefined_names_file_and_line() {
        let err = render("m.yaml", "a: 1\nb: {{ env.NOPE }}\n", &env(&[])).unwrap_err();
        let text = err.to_string();
        assert!(text.starts_with("m.yaml: template error: line 2"), "{text}");
    }

    #[test]
    fn plain_files_pass_through_and_yaml_errors_name_the_file() {
        assert_eq!(render("a.yaml", "a: 1\n", &env(&[])).unwrap(), "a: 1\n");
        let err = parse::<Value>("bad.yaml", "a: [1\n", &env(&[])).unwrap_err();
        assert!(err.to_string().starts_with("bad.yaml: invalid YAML"), "{err}");
    }
}
