//! The dependency rule between workspace crates (docs/architecture.md#dependency-rule), checked
//! against `cargo metadata --format-version 1 --no-deps`.
//!
//! Every workspace crate has a [`Class`]; [`allowed`] says which classes a class may depend on,
//! separately for normal (and build) and for dev-dependencies. [`check`] is IO-free and
//! table-tested; [`metadata`] is the one place that runs cargo. A crate without a class is itself a
//! finding, so a new crate cannot slip past the rule.

use std::fmt;
use std::path::Path;
use std::process::Command;

use anyhow::{Context, bail};

/// The embedded kcp's feature that only tests may enable.
const TESTING_FEATURE: &str = "testing";

/// What a workspace crate is, as far as the rule is concerned.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Class {
    /// `faros-core`: depends on no workspace crate.
    Core,
    /// A library below the components that several of them share (`faros-runtime`, the controller
    /// runtime): depends on core only.
    Shared,
    /// `faros-embedded-kcp`: depends on nothing of ours but core.
    EmbeddedKcp,
    /// `faros-hub-api`, `faros-hub-reconciler`.
    Hub,
    /// `faros-sdk`.
    Sdk,
    /// A crate under `providers/`.
    Provider,
    /// `faros`, `xtask`: put the others together.
    Composition,
    /// `faros-e2e`: composes the whole platform like [`Class::Composition`], and is itself only a
    /// test harness (it ships nothing), so it may use the test support crate in its library.
    Harness,
    /// `faros-test-support`: what tests share; depends on core only, and nothing ships it: every
    /// other crate may have it as a dev-dependency, none (but the harness) as a dependency.
    TestSupport,
}

/// The class of a workspace crate, from its name and its manifest directory relative to the
/// workspace root; `None` for a crate nobody classified yet.
pub fn classify(name: &str, manifest_dir: &Path) -> Option<Class> {
    match name {
        "faros-core" => Some(Class::Core),
        "faros-runtime" => Some(Class::Shared),
        "faros-embedded-kcp" => Some(Class::EmbeddedKcp),
        "faros-hub-api" | "faros-hub-reconciler" => Some(Class::Hub),
        "faros-sdk" => Some(Class::Sdk),
        "faros" | "xtask" => Some(Class::Composition),
        "faros-e2e" => Some(Class::Harness),
        "faros-test-support" => Some(Class::TestSupport),
        _ if manifest_dir.starts_with("providers") => Some(Class::Provider),
        _ => None,
    }
}

/// Normal and build dependencies count alike: both end up in what the crate ships.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Kind {
    Normal,
    Dev,
}

impl fmt::Display for Kind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Kind::Normal => "dependency",
            Kind::Dev => "dev-dependency",
        })
    }
}

/// Whether `from` may depend on `to` with `kind`: `Ok`, or why not.
pub fn allowed(from: Class, to: Class, kind: Kind) -> Result<(), &'static str> {
    use Class::*;
    match (from, kind) {
        (Core, _) => Err("faros-core depends on no workspace crate"),
        (Harness, _) => Ok(()),
        (_, Kind::Normal) if to == TestSupport => Err(
            "faros-test-support is for tests: use it as a dev-dependency (only the e2e harness ships it in a library)",
        ),
        (_, Kind::Dev) if to == TestSupport => Ok(()),
        (TestSupport, _) if to == Core => Ok(()),
        (TestSupport, _) => Err("the test support crate depends on nothing of ours but faros-core"),
        (EmbeddedKcp, _) if to == Core => Ok(()),
        (EmbeddedKcp, _) => Err("the embedded kcp depends on nothing of ours but faros-core"),
        (Shared, _) if to == Core => Ok(()),
        (Shared, Kind::Dev) if to == EmbeddedKcp => Ok(()),
        (Shared, _) => Err("a shared library depends only on faros-core (its tests also on the embedded kcp)"),
        (Composition, _) => Ok(()),
        (Hub | Sdk | Provider, Kind::Dev) if to == Composition || to == Harness => {
            Err("whole-stack tests belong in e2e/; a component's tests compose components, not binaries")
        }
        (Hub | Sdk | Provider, Kind::Dev) => Ok(()),
        (_, Kind::Normal) if to == Core || to == Shared => Ok(()),
        (Provider, Kind::Normal) if to == Sdk => Ok(()),
        (Provider, Kind::Normal) => Err("a provider depends only on faros-core, faros-sdk and the shared libraries"),
        (Hub, Kind::Normal) if to == Sdk => Err("no hub crate depends on the SDK"),
        (Sdk, Kind::Normal) if to == Hub => Err("the SDK depends on no hub crate"),
        (Hub | Sdk, Kind::Normal) => Err("the components meet only through faros-core and the shared libraries"),
    }
}

/// One workspace dependency of a workspace crate.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Dep {
    pub name: String,
    pub kind: Kind,
    pub features: Vec<String>,
}

/// A workspace crate and its dependencies on other workspace crates.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Package {
    pub name: String,
    /// Manifest directory relative to the workspace root (`crates/faros-sdk`).
    pub dir: std::path::PathBuf,
    pub deps: Vec<Dep>,
}

/// A broken rule, naming the crate and the dependency.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Finding {
    pub package: String,
    pub message: String,
}

impl fmt::Display for Finding {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}: {}", self.package, self.message)
    }
}

/// Every break of the rule among `packages`, in package order.
pub fn check(packages: &[Package]) -> Vec<Finding> {
    let class_of = |p: &Package| classify(&p.name, &p.dir);
    let mut findings = Vec::new();
    for package in packages {
        let finding = |message: String| Finding {
            package: package.name.clone(),
            message,
        };
        let Some(from) = class_of(package) else {
            findings.push(finding(format!(
                "workspace crate in {} has no place in the dependency rule; give it a class in \
                 xtask/src/lint/deps.rs (docs/architecture.md#dependency-rule)",
                package.dir.display()
            )));
            continue;
        };
        for dep in &package.deps {
            let Some(to) = packages.iter().find(|p| p.name == dep.name).and_then(class_of) else {
                continue; // unclassified: reported for that crate itself
            };
            if let Err(why) = allowed(from, to, dep.kind) {
                findings.push(finding(format!(
                    "{} on {} is forbidden: {why} (docs/architecture.md#dependency-rule)",
                    dep.kind, dep.name
                )));
            }
            if to == Class::EmbeddedKcp && dep.kind == Kind::Normal && dep.features.iter().any(|f| f == TESTING_FEATURE)
            {
                findings.push(finding(format!(
                    "{} on {} enables feature `{TESTING_FEATURE}`: only dev-dependencies may \
                     (docs/architecture.md#dependency-rule)",
                    dep.kind, dep.name
                )));
            }
        }
    }
    findings
}

/// The workspace crates and their workspace dependencies, from `cargo metadata` output.
pub fn parse_metadata(json: &str) -> anyhow::Result<Vec<Package>> {
    let metadata: serde_json::Value = serde_json::from_str(json).context("parsing cargo metadata output")?;
    let root = metadata["workspace_root"]
        .as_str()
        .context("cargo metadata output has no workspace_root")?;
    let packages = metadata["packages"]
        .as_array()
        .context("cargo metadata output has no packages list")?;
    let names: Vec<&str> = packages.iter().filter_map(|p| p["name"].as_str()).collect();
    let mut out = Vec::new();
    for package in packages {
        let name = package["name"]
            .as_str()
            .context("a package in cargo metadata has no name")?;
        let manifest = package["manifest_path"]
            .as_str()
            .with_context(|| format!("package {name} has no manifest_path"))?;
        let dir = Path::new(manifest).parent().unwrap_or(Path::new(""));
        let dir = dir.strip_prefix(root).unwrap_or(dir).to_path_buf();
        let mut deps = Vec::new();
        for dep in package["dependencies"]
            .as_array()
            .map(Vec::as_slice)
            .unwrap_or_default()
        {
            let dep_name = dep["name"]
                .as_str()
                .with_context(|| format!("a dependency of {name} has no name"))?;
            if !names.contains(&dep_name) {
                continue;
            }
            let kind = match dep["kind"].as_str() {
                None | Some("build") => Kind::Normal,
                Some("dev") => Kind::Dev,
                Some(other) => bail!("dependency {dep_name} of {name} has unknown kind {other:?}"),
            };
            let features = dep["features"]
                .as_array()
                .map(|fs| fs.iter().filter_map(|f| f.as_str().map(str::to_string)).collect())
                .unwrap_or_default();
            deps.push(Dep {
                name: dep_name.to_string(),
                kind,
                features,
            });
        }
        out.push(Package {
            name: name.to_string(),
            dir,
            deps,
        });
    }
    Ok(out)
}

/// Runs `cargo metadata --format-version 1 --no-deps` in `root` (the cargo that runs us, if any).
pub fn metadata(root: &Path) -> anyhow::Result<String> {
    let cargo = std::env::var_os("CARGO").unwrap_or_else(|| "cargo".into());
    let output = Command::new(cargo)
        .args(["metadata", "--format-version", "1", "--no-deps", "--offline"])
        .current_dir(root)
        .output()
        .context("running cargo metadata")?;
    if !output.status.success() {
        bail!(
            "cargo metadata failed: {}",
            String::from_utf8_lossy(&output.stderr).trim()
        );
    }
    String::from_utf8(output.stdout).context("cargo metadata printed non-UTF-8")
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::expect_used)]
mod tests;
