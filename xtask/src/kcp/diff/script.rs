//! The request scripts of `e2e/kcp-diff/*.yaml`: their format, loading and the `${var}` substitution
//! a step's path, body, headers and user go through. No IO but [`load_dir`].

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use serde::Deserialize;
use serde_json::Value;

#[derive(Debug, thiserror::Error)]
pub enum ScriptError {
    #[error("cannot read {path}: {source}")]
    Read { path: PathBuf, source: std::io::Error },
    #[error("{path}: {message}")]
    Parse { path: PathBuf, message: String },
    #[error("{script}, step {step:?}: {message}")]
    Invalid {
        script: String,
        step: String,
        message: String,
    },
}

/// One script: a sequence of requests, each made as a named user.
#[derive(Clone, Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Script {
    /// Set from the file name, not the file.
    #[serde(skip)]
    pub name: String,
    /// What the script covers and where its expectations come from.
    pub description: String,
    pub steps: Vec<Step>,
}

#[derive(Clone, Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Step {
    /// Unique within the script; it keys the recording and the report (no `|`).
    pub name: String,
    /// `admin`, `kcp-admin`, `alice`, `bob`, `carol`, `anonymous` (no token), or `$var` for a bearer
    /// token captured earlier.
    #[serde(rename = "as", default = "admin")]
    pub user: String,
    #[serde(default = "get")]
    pub method: String,
    pub path: String,
    #[serde(default)]
    pub body: Option<Value>,
    /// Content type of the body (patches); JSON by default.
    #[serde(default, rename = "contentType")]
    pub content_type: Option<String>,
    #[serde(default)]
    pub headers: BTreeMap<String, String>,
    /// Variables taken from the (final) answer: name → JSON pointer into the body.
    #[serde(default)]
    pub capture: BTreeMap<String, String>,
    /// Repeat the request until the answer satisfies this (the engines converge at their own pace).
    #[serde(default)]
    pub wait: Option<Wait>,
    #[serde(default)]
    pub compare: CompareMode,
    /// JSON pointers removed from both answers before comparing (legitimately different parts).
    #[serde(default)]
    pub ignore: Vec<String>,
    /// The embedded kcp refuses this on purpose; the reason goes into the report.
    #[serde(default)]
    pub refused: Option<String>,
}

fn admin() -> String {
    "admin".into()
}

fn get() -> String {
    "GET".into()
}

#[derive(Clone, Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Wait {
    /// The status code to wait for (any when absent).
    #[serde(default)]
    pub code: Option<u16>,
    /// A JSON pointer that must exist, and equal `equals` when given.
    #[serde(default)]
    pub pointer: Option<String>,
    #[serde(default)]
    pub equals: Option<Value>,
}

impl Wait {
    /// Whether an answer satisfies the wait.
    pub fn satisfied(&self, code: u16, body: &Value) -> bool {
        if self.code.is_some_and(|want| want != code) {
            return false;
        }
        match (&self.pointer, &self.equals) {
            (None, _) => true,
            (Some(p), None) => body.pointer(p).is_some_and(|v| !v.is_null() && v != ""),
            (Some(p), Some(want)) => body.pointer(p) == Some(want),
        }
    }
}

#[derive(Clone, Copy, Debug, Default, Deserialize, PartialEq, Eq)]
#[serde(rename_all = "lowercase")]
pub enum CompareMode {
    /// Status code and normalised body.
    #[default]
    Full,
    /// Status code, and a Status body's reason (discovery, OpenAPI: bodies list what each serves).
    Code,
    /// Status code, and the set of a list's item names (the objects a server bootstraps: which
    /// exist; steps reading one by one compare how each looks).
    Names,
    /// Status code and `Content-Type` only (documents each server fills with what it serves, in
    /// an encoding the step's `Accept` negotiates: OpenAPI v2).
    ContentType,
}

/// The scripts of a directory, by file name, optionally only those whose name contains `filter`.
pub fn load_dir(dir: &Path, filter: Option<&str>) -> Result<Vec<Script>, ScriptError> {
    let read_err = |source| ScriptError::Read {
        path: dir.to_path_buf(),
        source,
    };
    let mut paths: Vec<PathBuf> = std::fs::read_dir(dir)
        .map_err(read_err)?
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.extension().is_some_and(|e| e == "yaml"))
        .collect();
    paths.sort();
    let mut scripts = Vec::new();
    for path in paths {
        let name = path
            .file_stem()
            .map(|s| s.to_string_lossy().into_owned())
            .unwrap_or_default();
        if filter.is_some_and(|f| !name.contains(f)) {
            continue;
        }
        let text = std::fs::read_to_string(&path).map_err(|source| ScriptError::Read {
            path: path.clone(),
            source,
        })?;
        scripts.push(parse(&name, &text).map_err(|e| match e {
            ScriptError::Parse { message, .. } => ScriptError::Parse { path, message },
            other => other,
        })?);
    }
    Ok(scripts)
}

/// One script from its YAML text, checked.
pub fn parse(name: &str, text: &str) -> Result<Script, ScriptError> {
    let mut script: Script = serde_saphyr::from_str(text).map_err(|e| ScriptError::Parse {
        path: PathBuf::from(name),
        message: e.to_string(),
    })?;
    script.name = name.to_string();
    let mut seen = std::collections::BTreeSet::new();
    for step in &script.steps {
        let invalid = |message: &str| ScriptError::Invalid {
            script: name.to_string(),
            step: step.name.clone(),
            message: message.to_string(),
        };
        if step.name.contains('|') || step.name.trim().is_empty() {
            return Err(invalid(
                "a step name must be non-empty and hold no `|` (it is a table cell)",
            ));
        }
        if !seen.insert(step.name.as_str()) {
            return Err(invalid("duplicate step name"));
        }
        if !step.path.starts_with('/') {
            return Err(invalid("the path must start with /"));
        }
        let user = step.user.as_str();
        if !(USERS.contains(&user) || user.starts_with('$')) {
            return Err(invalid(
                "`as` must be admin, kcp-admin, alice, bob, carol, anonymous or $var",
            ));
        }
    }
    Ok(script)
}

/// The static users both engines know from the same token file.
pub const USERS: [&str; 6] = ["admin", "kcp-admin", "alice", "bob", "carol", "anonymous"];

/// Replaces every `${name}` in `text` by its value; an unknown variable stays as written (so the
/// request shows which capture failed).
pub fn substitute(text: &str, vars: &BTreeMap<String, String>) -> String {
    let mut out = String::with_capacity(text.len());
    let mut rest = text;
    while let Some(start) = rest.find("${") {
        out.push_str(&rest[..start]);
        let after = &rest[start + 2..];
        match after.find('}') {
            Some(end) if vars.contains_key(&after[..end]) => {
                out.push_str(&vars[&after[..end]]);
                rest = &after[end + 1..];
            }
            _ => {
                out.push_str("${");
                rest = after;
            }
        }
    }
    out.push_str(rest);
    out
}

/// [`substitute`] in every string of a JSON value.
pub fn substitute_value(value: &Value, vars: &BTreeMap<String, String>) -> Value {
    match value {
        Value::String(s) => Value::String(substitute(s, vars)),
        Value::Array(items) => Value::Array(items.iter().map(|v| substitute_value(v, vars)).collect()),
        Value::Object(map) => Value::Object(
            map.iter()
                .map(|(k, v)| (substitute(k, vars), substitute_value(v, vars)))
                .collect(),
        ),
        other => other.clone(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn vars() -> BTreeMap<String, String> {
        BTreeMap::from([("ws".to_string(), "abc123".to_string())])
    }

    #[test]
    fn substitution_replaces_known_variables_only() {
        for (input, want) in [
            ("/clusters/${ws}/api", "/clusters/abc123/api"),
            ("${ws}${ws}", "abc123abc123"),
            ("${nope}/x", "${nope}/x"),
            ("${unterminated", "${unterminated"),
            ("plain", "plain"),
        ] {
            assert_eq!(substitute(input, &vars()), want, "{input}");
        }
        assert_eq!(
            substitute_value(&json!({"a": ["${ws}", 1], "${ws}": true}), &vars()),
            json!({"a": ["abc123", 1], "abc123": true})
        );
    }

    #[test]
    fn scripts_are_checked() {
        let ok = "description: d\nsteps:\n- name: a\n  path: /x\n- name: b\n  as: $sa\n  method: POST\n  path: /y\n  body: {a: 1}\n- name: c\n  as: carol\n  path: /z\n";
        let script = parse("s", ok).unwrap();
        assert_eq!(script.steps[0].user, "admin");
        assert_eq!(script.steps[0].method, "GET");
        assert_eq!(script.steps[1].body, Some(json!({"a": 1})));
        assert_eq!(script.steps[2].user, "carol");
        for bad in [
            "description: d\nsteps:\n- name: a|b\n  path: /x\n",
            "description: d\nsteps:\n- name: a\n  path: /x\n- name: a\n  path: /y\n",
            "description: d\nsteps:\n- name: a\n  path: x\n",
            "description: d\nsteps:\n- name: a\n  as: mallory\n  path: /x\n",
            "description: d\nsteps:\n- name: a\n  path: /x\n  typo: 1\n",
        ] {
            assert!(parse("s", bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn waits_check_code_and_pointer() {
        let w = |code, pointer: Option<&str>, equals| Wait {
            code,
            pointer: pointer.map(str::to_string),
            equals,
        };
        let body = json!({"status": {"phase": "Ready"}, "data": {"token": ""}});
        assert!(w(Some(200), None, None).satisfied(200, &body));
        assert!(!w(Some(200), None, None).satisfied(404, &body));
        assert!(w(None, Some("/status/phase"), Some(json!("Ready"))).satisfied(200, &body));
        assert!(!w(None, Some("/status/phase"), Some(json!("Initializing"))).satisfied(200, &body));
        assert!(
            !w(None, Some("/data/token"), None).satisfied(200, &body),
            "empty is absent"
        );
        assert!(w(None, Some("/status"), None).satisfied(200, &body));
    }
}
