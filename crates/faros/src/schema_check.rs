//! `faros provider schema check`: an author's run of the hub's compatibility gate
//! ([`faros_core::revision::compat`]) before publishing.
//!
//! Compares the schema directory `init` would publish with the last published state: the schemas
//! the provider's APIExport serves (`--kubeconfig` to the provider's workspace), or a directory or
//! file of the previous schemas (`--against`, offline). Prints every finding with the file it is
//! about; exits 1 when a change is refused outright or needs a storage migration, 2 when the hub
//! would accept it only if no tenant's object is refused (the live check the hub runs), 0 otherwise.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use anyhow::{Context, bail};
use faros_core::kcp::apis::v1alpha1::{APIResourceSchema, APIResourceSchemaSpec};
use faros_core::kcp::apis::v1alpha2::APIExport;
use faros_core::revision::compat::{self, Finding, Verdict};
use faros_sdk::bootstrap::inputs::schema_files;
use kube::api::{Api, ListParams};

/// Flags of `faros provider schema check`.
#[derive(clap::Args, Debug, Clone)]
pub struct SchemaCheckArgs {
    /// Directory of the provider's APIResourceSchema YAML, as `init` publishes it.
    #[arg(long, env = faros_core::names::ENV_SCHEMAS_DIR)]
    pub schemas: PathBuf,
    /// The previously published schemas, offline: a directory of YAML files or one file.
    #[arg(long, conflicts_with_all = ["kubeconfig", "context"])]
    pub against: Option<PathBuf>,
    /// Kubeconfig reaching the provider's workspace (the one `init` runs with): compare against the
    /// schemas its APIExport serves.
    #[arg(long)]
    pub kubeconfig: Option<PathBuf>,
    /// Context in that kubeconfig.
    #[arg(long)]
    pub context: Option<String>,
    /// The APIExport to compare against (with --kubeconfig); default: the workspace's only one.
    #[arg(long)]
    pub export: Option<String>,
}

/// A schema and the file (or server object) it came from.
#[derive(Clone, Debug)]
pub struct Sourced {
    pub source: String,
    pub spec: APIResourceSchemaSpec,
}

/// What the check found and the exit code it means.
#[derive(Debug)]
pub struct Outcome {
    /// One line per finding, naming the file.
    pub lines: Vec<String>,
    pub verdict: Verdict,
}

impl Outcome {
    pub fn exit_code(&self) -> i32 {
        match self.verdict {
            Verdict::Compatible | Verdict::NeedsConsent => 0,
            Verdict::NeedsLiveCheck => 2,
            Verdict::NeedsMigration | Verdict::Incompatible => 1,
        }
    }
}

/// Reads the schema YAML of `path`: every `*.yaml`/`*.yml` of a directory, or the file itself.
/// Templates see the process environment, as `init`'s do.
pub fn read_schemas(path: &Path) -> anyhow::Result<Vec<Sourced>> {
    let files = if path.is_dir() {
        schema_files(path)?
    } else if path.is_file() {
        vec![path.to_path_buf()]
    } else {
        bail!("{}: no such file or directory", path.display());
    };
    let env = faros_sdk::manifest::process_env();
    let mut out = Vec::new();
    for file in files {
        let schema: APIResourceSchema = faros_sdk::manifest::load(&file, &env)?;
        out.push(Sourced {
            source: file.display().to_string(),
            spec: schema.spec,
        });
    }
    if out.is_empty() {
        bail!("{}: no *.yaml or *.yml files", path.display());
    }
    Ok(out)
}

/// The schemas the provider's APIExport serves, read with `config`.
pub async fn published_schemas(config: kube::Config, export: Option<&str>) -> anyhow::Result<Vec<Sourced>> {
    let server = config.cluster_url.to_string();
    let client = kube::Client::try_from(config).with_context(|| format!("connecting to {server}"))?;
    let exports: Api<APIExport> = Api::all(client.clone());
    let export = match export {
        Some(name) => exports
            .get(name)
            .await
            .with_context(|| format!("reading APIExport {name:?} at {server}"))?,
        None => {
            let mut all = exports
                .list(&ListParams::default())
                .await
                .with_context(|| format!("listing APIExports at {server}"))?
                .items;
            if all.len() != 1 {
                bail!(
                    "{server} has {} APIExports; name the one to compare against with --export",
                    all.len()
                );
            }
            all.remove(0)
        }
    };
    let name = export.metadata.name.clone().unwrap_or_default();
    let schemas: Api<APIResourceSchema> = Api::all(client);
    let mut out = Vec::new();
    for r in export.spec.resources.unwrap_or_default() {
        let s = schemas
            .get(&r.schema)
            .await
            .with_context(|| format!("reading APIResourceSchema {:?} (APIExport {name:?})", r.schema))?;
        out.push(Sourced {
            source: format!("APIExport {name} → APIResourceSchema {}", r.schema),
            spec: s.spec,
        });
    }
    Ok(out)
}

/// Runs the gate on `old` → `new` and words each finding with the file it concerns (the new file,
/// or the old source for a removed resource).
pub fn check(old: &[Sourced], new: &[Sourced]) -> Outcome {
    let old_specs: Vec<APIResourceSchemaSpec> = old.iter().map(|s| s.spec.clone()).collect();
    let new_specs: Vec<APIResourceSchemaSpec> = new.iter().map(|s| s.spec.clone()).collect();
    let findings = compat::compare(&old_specs, &new_specs);
    let source_of = |sources: &[Sourced]| -> BTreeMap<String, String> {
        sources
            .iter()
            .map(|s| (compat::resource_key(&s.spec), s.source.clone()))
            .collect()
    };
    let (old_src, new_src) = (source_of(old), source_of(new));
    let lines = findings
        .iter()
        .map(|f: &Finding| {
            let file = new_src
                .get(&f.resource)
                .or_else(|| old_src.get(&f.resource))
                .cloned()
                .unwrap_or_default();
            format!("{file}: {f}")
        })
        .collect();
    Outcome {
        lines,
        verdict: compat::overall(&findings),
    }
}

/// The command: prints the findings and a summary; returns the exit code.
pub async fn run(args: &SchemaCheckArgs) -> anyhow::Result<i32> {
    let new = read_schemas(&args.schemas)?;
    let old = match (&args.against, &args.kubeconfig) {
        (Some(path), _) => read_schemas(path)?,
        (None, Some(path)) => {
            let config = faros_core::client::KcpArgs {
                kubeconfig: Some(path.clone()),
                context: args.context.clone(),
            }
            .load()
            .await?;
            published_schemas(config, args.export.as_deref()).await?
        }
        (None, None) => {
            bail!("compare against what: pass --against <dir or file> or --kubeconfig <provider workspace>")
        }
    };
    let outcome = check(&old, &new);
    for line in &outcome.lines {
        println!("{line}");
    }
    println!("verdict: {}", outcome.verdict);
    Ok(outcome.exit_code())
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::expect_used)]
mod tests {
    use super::*;

    fn write(dir: &Path, file: &str, spec_props: &str) {
        let yaml = format!(
            "apiVersion: apis.kcp.io/v1alpha1\nkind: APIResourceSchema\nmetadata:\n  name: v1.greetings.q.io\n\
             spec:\n  group: q.io\n  names: {{kind: Greeting, listKind: GreetingList, plural: greetings, singular: greeting}}\n\
             \x20 scope: Namespaced\n  versions:\n  - name: v1\n    served: true\n    storage: true\n\
             \x20   schema: {{type: object, properties: {{spec: {{type: object, properties: {spec_props}}}}}}}\n"
        );
        std::fs::write(dir.join(file), yaml).unwrap();
    }

    #[test]
    fn findings_name_the_file_and_field_and_set_the_exit_code() {
        let tmp = tempfile::tempdir().unwrap();
        let (v1, v2, v3) = (tmp.path().join("v1"), tmp.path().join("v2"), tmp.path().join("v3"));
        for d in [&v1, &v2, &v3] {
            std::fs::create_dir(d).unwrap();
        }
        write(&v1, "greetings.yaml", "{name: {type: string}}");
        write(&v2, "greetings.yaml", "{name: {type: string}, color: {type: string}}");
        write(&v3, "greetings.yaml", "{color: {type: string}}");
        let (old, added, removed) = (
            read_schemas(&v1).unwrap(),
            read_schemas(&v2).unwrap(),
            read_schemas(&v3).unwrap(),
        );

        let ok = check(&old, &added);
        assert_eq!(ok.exit_code(), 0);
        let file = v2.join("greetings.yaml").display().to_string();
        assert_eq!(
            ok.lines,
            vec![format!(
                "{file}: greetings.q.io v1 .spec.color: FieldAdded (compatible): optional field added"
            )]
        );

        let refused = check(&old, &removed);
        assert_eq!(refused.exit_code(), 2);
        let file = v3.join("greetings.yaml").display().to_string();
        assert!(
            refused
                .lines
                .iter()
                .any(|l| l.starts_with(&format!("{file}: greetings.q.io v1 .spec.name: FieldRemoved"))),
            "{:?}",
            refused.lines
        );

        let gone = check(&old, &[]);
        assert_eq!(gone.exit_code(), 1);
        assert!(gone.lines[0].contains("ResourceRemoved"), "{:?}", gone.lines);

        // A single file works as --against too; a missing path is named.
        assert_eq!(read_schemas(&v1.join("greetings.yaml")).unwrap().len(), 1);
        let missing = read_schemas(&tmp.path().join("nope")).unwrap_err().to_string();
        assert!(missing.contains("nope: no such file or directory"), "{missing}");
    }
}
