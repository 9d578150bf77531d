//! Real kcp's normalised answers, one file per script (`e2e/kcp-diff/recorded/<script>.json`), so
//! the comparison runs where real kcp is not available (CI, `cargo test`).

use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};
use serde_json::Value;

use super::compare::{Answer, Outcome};
use super::script::Script;

#[derive(Debug, thiserror::Error)]
pub enum RecordingError {
    #[error("cannot read or write {path}: {source}")]
    Io { path: PathBuf, source: std::io::Error },
    #[error("{path}: {source}")]
    Json { path: PathBuf, source: serde_json::Error },
}

#[derive(Debug, Serialize, Deserialize)]
struct Recording {
    kcp: String,
    steps: Vec<RecordedStep>,
}

#[derive(Debug, Serialize, Deserialize)]
struct RecordedStep {
    name: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    code: Option<u16>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    body: Option<Value>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    error: Option<String>,
}

fn file(dir: &Path, script: &str) -> PathBuf {
    dir.join(format!("{script}.json"))
}

pub fn write(dir: &Path, script: &Script, kcp_version: &str, outcomes: &[Outcome]) -> Result<(), RecordingError> {
    let steps = script
        .steps
        .iter()
        .zip(outcomes)
        .map(|(step, outcome)| match outcome {
            Ok(a) => RecordedStep {
                name: step.name.clone(),
                code: Some(a.code),
                body: Some(a.body.clone()),
                error: None,
            },
            Err(e) => RecordedStep {
                name: step.name.clone(),
                code: None,
                body: None,
                error: Some(e.clone()),
            },
        })
        .collect();
    let recording = Recording {
        kcp: kcp_version.to_string(),
        steps,
    };
    let path = file(dir, &script.name);
    let text = serde_json::to_string_pretty(&recording).map_err(|source| RecordingError::Json {
        path: path.clone(),
        source,
    })?;
    std::fs::write(&path, text + "\n").map_err(|source| RecordingError::Io { path, source })
}

/// The recorded outcome of every step of `script`, by step name: a step added after the recording
/// is `Err("not recorded")`.
pub fn read(dir: &Path, script: &Script) -> Result<(String, Vec<Outcome>), RecordingError> {
    let path = file(dir, &script.name);
    let text = std::fs::read_to_string(&path).map_err(|source| RecordingError::Io {
        path: path.clone(),
        source,
    })?;
    let recording: Recording = serde_json::from_str(&text).map_err(|source| RecordingError::Json { path, source })?;
    let outcomes = script
        .steps
        .iter()
        .map(|step| match recording.steps.iter().find(|r| r.name == step.name) {
            Some(RecordedStep {
                code: Some(code), body, ..
            }) => Ok(Answer {
                code: *code,
                body: body.clone().unwrap_or(Value::Null),
            }),
            Some(RecordedStep { error, .. }) => Err(error.clone().unwrap_or_default()),
            None => Err("not recorded".into()),
        })
        .collect();
    Ok((recording.kcp, outcomes))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::kcp::diff::script::parse;
    use serde_json::json;

    #[test]
    fn recordings_round_trip_by_step_name() {
        let dir = tempfile::tempdir().unwrap();
        let old = parse(
            "s",
            "description: d\nsteps:\n- name: a\n  path: /a\n- name: b\n  path: /b\n",
        )
        .unwrap();
        let outcomes = vec![
            Ok(Answer {
                code: 200,
                body: json!({"x": 1}),
            }),
            Err("refused".to_string()),
        ];
        write(dir.path(), &old, "v1", &outcomes).unwrap();
        let new = parse(
            "s",
            "description: d\nsteps:\n- name: new\n  path: /n\n- name: b\n  path: /b\n- name: a\n  path: /a\n",
        )
        .unwrap();
        let (version, got) = read(dir.path(), &new).unwrap();
        assert_eq!(version, "v1");
        assert_eq!(
            got,
            vec![
                Err("not recorded".to_string()),
                Err("refused".into()),
                outcomes[0].clone()
            ]
        );
    }
}
