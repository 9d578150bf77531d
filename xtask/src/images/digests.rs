//! The digests of pushed images: read from what the engine leaves behind after a push, and written
//! to `target/images/digests.json` in the shape the charts' `image` values take (`repository`,
//! `tag`, `digest`), so a deployment can pin exactly what was pushed.
//!
//! Parsing and rendering are IO-free; [`super::Images::run`] reads and writes the files.

use serde_json::{Map, Value, json};

/// The file an engine writes the pushed digest to.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum DigestFormat {
    /// `docker buildx build --metadata-file`: a JSON object whose `containerimage.digest` is the
    /// digest of what was pushed (with attestations, the image index that carries them).
    BuildxMetadata,
    /// `podman push --digestfile`: the digest alone.
    DigestFile,
}

#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub(crate) enum DigestError {
    #[error("{file}: not JSON: {message}")]
    NotJson { file: String, message: String },
    #[error("{file}: no `containerimage.digest` (did the push run?)")]
    Missing { file: String },
    #[error("{file}: {value:?} is not a sha256 digest (`sha256:` and 64 lowercase hex digits)")]
    Invalid { file: String, value: String },
}

/// The digest in `text`, the content of `file` written in `format`.
pub(crate) fn parse(format: DigestFormat, file: &str, text: &str) -> Result<String, DigestError> {
    let value = match format {
        DigestFormat::DigestFile => text.trim().to_string(),
        DigestFormat::BuildxMetadata => {
            let metadata: Value = serde_json::from_str(text).map_err(|e| DigestError::NotJson {
                file: file.into(),
                message: e.to_string(),
            })?;
            metadata
                .get("containerimage.digest")
                .and_then(Value::as_str)
                .ok_or_else(|| DigestError::Missing { file: file.into() })?
                .to_string()
        }
    };
    let valid = value
        .strip_prefix("sha256:")
        .is_some_and(|hex| hex.len() == 64 && hex.chars().all(|c| matches!(c, '0'..='9' | 'a'..='f')));
    if !valid {
        return Err(DigestError::Invalid {
            file: file.into(),
            value,
        });
    }
    Ok(value)
}

/// One pushed image.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct Pushed {
    /// Image name (= Dockerfile target).
    pub name: String,
    pub repository: String,
    pub tag: String,
    pub digest: String,
}

impl Pushed {
    /// `repository@digest`: what a pod spec pins.
    pub(crate) fn pinned(&self) -> String {
        format!("{}@{}", self.repository, self.digest)
    }
}

/// `digests.json`: image name to its chart `image` values plus the pinned reference, in push order.
pub(crate) fn render(pushed: &[Pushed]) -> String {
    let mut images = Map::new();
    for image in pushed {
        images.insert(
            image.name.clone(),
            json!({
                "repository": image.repository,
                "tag": image.tag,
                "digest": image.digest,
                "pinned": image.pinned(),
            }),
        );
    }
    let mut text = serde_json::to_string_pretty(&Value::Object(images)).unwrap_or_default();
    text.push('\n');
    text
}

#[cfg(test)]
mod tests {
    use super::*;

    const D: &str = "sha256:0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef";

    #[test]
    fn parses_what_engines_write() {
        use DigestFormat::*;
        let buildx = format!(
            r#"{{"buildx.build.ref":"builder/builder0/abc","containerimage.descriptor":{{"mediaType":"application/vnd.oci.image.index.v1+json","digest":"{D}","size":856}},"containerimage.digest":"{D}","image.name":"ghcr.io/faroshq/faros-kcp:0.1.0"}}"#
        );
        let upper = D.to_uppercase().replace("SHA256", "sha256");
        let cases: Vec<(&str, DigestFormat, String, Result<String, DigestError>)> = vec![
            ("buildx metadata", BuildxMetadata, buildx, Ok(D.into())),
            ("podman digest file", DigestFile, D.into(), Ok(D.into())),
            ("digest file with a newline", DigestFile, format!("{D}\n"), Ok(D.into())),
            (
                "metadata of a build that did not push",
                BuildxMetadata,
                r#"{"buildx.build.ref":"x"}"#.into(),
                Err(DigestError::Missing { file: "f".into() }),
            ),
            (
                "empty metadata file",
                BuildxMetadata,
                String::new(),
                Err(DigestError::NotJson {
                    file: "f".into(),
                    message: "EOF while parsing a value at line 1 column 0".into(),
                }),
            ),
            (
                "empty digest file",
                DigestFile,
                String::new(),
                Err(DigestError::Invalid {
                    file: "f".into(),
                    value: String::new(),
                }),
            ),
            (
                "another algorithm",
                DigestFile,
                D.replace("sha256", "sha512"),
                Err(DigestError::Invalid {
                    file: "f".into(),
                    value: D.replace("sha256", "sha512"),
                }),
            ),
            (
                "short",
                DigestFile,
                "sha256:abc".into(),
                Err(DigestError::Invalid {
                    file: "f".into(),
                    value: "sha256:abc".into(),
                }),
            ),
            (
                "upper-case hex",
                DigestFile,
                upper.clone(),
                Err(DigestError::Invalid {
                    file: "f".into(),
                    value: upper,
                }),
            ),
        ];
        for (name, format, text, want) in cases {
            assert_eq!(parse(format, "f", &text), want, "{name}");
        }
    }

    #[test]
    fn renders_chart_values_in_push_order() {
        let pushed = [
            Pushed {
                name: "faros-kcp".into(),
                repository: "ghcr.io/faroshq/faros-kcp".into(),
                tag: "0.1.0".into(),
                digest: D.into(),
            },
            Pushed {
                name: "faros-hub-api".into(),
                repository: "localhost:5000/faros-hub-api".into(),
                tag: "dev".into(),
                digest: D.into(),
            },
        ];
        let want = format!(
            r#"{{
  "faros-kcp": {{
    "repository": "ghcr.io/faroshq/faros-kcp",
    "tag": "0.1.0",
    "digest": "{D}",
    "pinned": "ghcr.io/faroshq/faros-kcp@{D}"
  }},
  "faros-hub-api": {{
    "repository": "localhost:5000/faros-hub-api",
    "tag": "dev",
    "digest": "{D}",
    "pinned": "localhost:5000/faros-hub-api@{D}"
  }}
}}
"#
        );
        assert_eq!(render(&pushed), want);
        assert_eq!(render(&[]), "{}\n");
    }
}
