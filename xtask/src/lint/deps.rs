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
    /// `faros`, `faros-e2e`, `xtask`: put the others together.
    Composition,
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
        "faros" | "faros-e2e" | "xtask" => Some(Class::Composition),
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
        (EmbeddedKcp, _) if to == Core => Ok(()),
        (EmbeddedKcp, _) => Err("the embedded kcp depends on nothing of ours but faros-core"),
        (Shared, _) if to == Core => Ok(()),
        (Shared, Kind::Dev) if to == EmbeddedKcp => Ok(()),
        (Shared, _) => Err("a shared library depends only on faros-core (its tests also on the embedded kcp)"),
        (Composition, _) => Ok(()),
        (Hub | Sdk | Provider, Kind::Dev) if to == Composition => {
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
mod tests {
    use super::*;
    use std::path::PathBuf;

    /// Dependencies to add in a case: (crate, kind, features).
    type Extra = &'static [(&'static str, Kind, &'static [&'static str])];

    fn package(name: &str, dir: &str, deps: &[(&str, Kind, &[&str])]) -> Package {
        Package {
            name: name.into(),
            dir: PathBuf::from(dir),
            deps: deps
                .iter()
                .map(|(n, kind, features)| Dep {
                    name: n.to_string(),
                    kind: *kind,
                    features: features.iter().map(|f| f.to_string()).collect(),
                })
                .collect(),
        }
    }

    /// The workspace as it is, with `extra` dependencies added to crate `who` (or a new crate).
    fn workspace(who: &str, extra: &[(&str, Kind, &[&str])]) -> Vec<Package> {
        use Kind::*;
        let mut packages = vec![
            package("faros-core", "crates/faros-core", &[]),
            package("faros-runtime", "crates/faros-runtime", &[("faros-core", Normal, &[])]),
            package(
                "faros-embedded-kcp",
                "crates/faros-embedded-kcp",
                &[("faros-core", Normal, &["axum"])],
            ),
            package(
                "faros-hub-reconciler",
                "crates/faros-hub-reconciler",
                &[
                    ("faros-core", Normal, &[]),
                    ("faros-runtime", Normal, &[]),
                    ("faros-embedded-kcp", Dev, &["testing"]),
                ],
            ),
            package(
                "faros-hub-api",
                "crates/faros-hub-api",
                &[
                    ("faros-core", Normal, &["axum"]),
                    ("faros-embedded-kcp", Dev, &[]),
                    ("faros-hub-reconciler", Dev, &[]),
                    ("faros-sdk", Dev, &[]),
                ],
            ),
            package(
                "faros-sdk",
                "crates/faros-sdk",
                &[
                    ("faros-core", Normal, &["axum"]),
                    ("faros-runtime", Normal, &[]),
                    ("faros-embedded-kcp", Dev, &["testing"]),
                ],
            ),
            package(
                "faros-provider-quickstart",
                "providers/quickstart",
                &[
                    ("faros-core", Normal, &[]),
                    ("faros-sdk", Normal, &[]),
                    ("faros-embedded-kcp", Dev, &["testing"]),
                    ("faros-hub-reconciler", Dev, &[]),
                ],
            ),
            package(
                "faros",
                "crates/faros",
                &[
                    ("faros-core", Normal, &[]),
                    ("faros-embedded-kcp", Normal, &[]),
                    ("faros-hub-api", Normal, &[]),
                    ("faros-hub-reconciler", Normal, &[]),
                    ("faros-provider-quickstart", Normal, &[]),
                    ("faros-sdk", Normal, &[]),
                ],
            ),
            package("xtask", "xtask", &[("faros-core", Normal, &[])]),
            package(
                "faros-e2e",
                "e2e",
                &[("faros", Normal, &[]), ("faros-core", Normal, &[])],
            ),
        ];
        match packages.iter_mut().find(|p| p.name == who) {
            Some(p) => p.deps.extend(package(who, "", extra).deps),
            None => packages.push(package(who, "crates/new", extra)),
        }
        packages
    }

    #[test]
    fn the_workspace_as_it_is_passes() {
        assert_eq!(check(&workspace("faros-core", &[])), []);
    }

    #[test]
    fn each_break_of_the_rule_is_named() {
        use Kind::*;
        let cases: &[(&str, Extra, &str)] = &[
            (
                "faros-core",
                &[("faros-sdk", Normal, &[])],
                "faros-core: dependency on faros-sdk is forbidden: faros-core depends on no workspace crate",
            ),
            (
                "faros-core",
                &[("faros-embedded-kcp", Dev, &["testing"])],
                "faros-core: dev-dependency on faros-embedded-kcp is forbidden: faros-core depends on no workspace crate",
            ),
            (
                "faros-embedded-kcp",
                &[("faros-hub-api", Normal, &[])],
                "faros-embedded-kcp: dependency on faros-hub-api is forbidden: the embedded kcp depends on \
                 nothing of ours but faros-core",
            ),
            (
                "faros-embedded-kcp",
                &[("faros-sdk", Dev, &[])],
                "faros-embedded-kcp: dev-dependency on faros-sdk is forbidden: the embedded kcp depends on \
                 nothing of ours but faros-core",
            ),
            (
                "faros-hub-api",
                &[("faros-sdk", Normal, &[])],
                "faros-hub-api: dependency on faros-sdk is forbidden: no hub crate depends on the SDK",
            ),
            (
                "faros-hub-reconciler",
                &[("faros-sdk", Normal, &[])],
                "faros-hub-reconciler: dependency on faros-sdk is forbidden: no hub crate depends on the SDK",
            ),
            (
                "faros-sdk",
                &[("faros-hub-api", Normal, &[])],
                "faros-sdk: dependency on faros-hub-api is forbidden: the SDK depends on no hub crate",
            ),
            (
                "faros-hub-api",
                &[("faros-hub-reconciler", Normal, &[])],
                "faros-hub-api: dependency on faros-hub-reconciler is forbidden: the components meet only \
                 through faros-core and the shared libraries",
            ),
            (
                "faros-hub-api",
                &[("faros-embedded-kcp", Normal, &[])],
                "faros-hub-api: dependency on faros-embedded-kcp is forbidden: the components meet only \
                 through faros-core and the shared libraries",
            ),
            (
                "faros-provider-quickstart",
                &[("faros-hub-api", Normal, &[])],
                "faros-provider-quickstart: dependency on faros-hub-api is forbidden: a provider depends only \
                 on faros-core, faros-sdk and the shared libraries",
            ),
            (
                "faros-runtime",
                &[("faros-sdk", Normal, &[])],
                "faros-runtime: dependency on faros-sdk is forbidden: a shared library depends only on \
                 faros-core",
            ),
            (
                "faros-runtime",
                &[("faros-hub-api", Dev, &[])],
                "faros-runtime: dev-dependency on faros-hub-api is forbidden: a shared library depends only \
                 on faros-core",
            ),
            (
                "faros-embedded-kcp",
                &[("faros-runtime", Normal, &[])],
                "faros-embedded-kcp: dependency on faros-runtime is forbidden: the embedded kcp depends on \
                 nothing of ours but faros-core",
            ),
            (
                "faros-sdk",
                &[("faros", Dev, &[])],
                "faros-sdk: dev-dependency on faros is forbidden: whole-stack tests belong in e2e/; a \
                 component's tests compose components, not binaries",
            ),
            (
                "faros",
                &[("faros-embedded-kcp", Normal, &["testing"])],
                "faros: dependency on faros-embedded-kcp enables feature `testing`: only dev-dependencies may",
            ),
            (
                "faros-brand-new",
                &[("faros-core", Normal, &[])],
                "faros-brand-new: workspace crate in crates/new has no place in the dependency rule; give it a \
                 class in xtask/src/lint/deps.rs",
            ),
        ];
        for (who, extra, want) in cases {
            let got: Vec<String> = check(&workspace(who, extra)).iter().map(ToString::to_string).collect();
            assert_eq!(got.len(), 1, "{who} + {extra:?}: {got:?}");
            assert!(
                got[0].starts_with(want),
                "{who} + {extra:?}:\n got {}\nwant {want}",
                got[0]
            );
            assert!(got[0].ends_with("(docs/architecture.md#dependency-rule)"), "{}", got[0]);
        }
    }

    #[test]
    fn allowed_dev_dependencies_pass() {
        use Kind::*;
        let cases: &[(&str, Extra)] = &[
            ("faros-sdk", &[("faros-hub-api", Dev, &[])]),
            (
                "faros-hub-reconciler",
                &[("faros-sdk", Dev, &[]), ("faros-provider-quickstart", Dev, &[])],
            ),
            ("faros-embedded-kcp", &[("faros-core", Dev, &[])]),
            ("faros-runtime", &[("faros-embedded-kcp", Dev, &["testing"])]),
            ("faros-provider-quickstart", &[("faros-runtime", Normal, &[])]),
            ("faros-hub-api", &[("faros-runtime", Normal, &[])]),
            ("faros-e2e", &[("faros-embedded-kcp", Dev, &["testing"])]),
        ];
        for (who, extra) in cases {
            assert_eq!(check(&workspace(who, extra)), [], "{who} + {extra:?}");
        }
    }

    #[test]
    fn metadata_is_parsed_into_workspace_dependencies() {
        let json = r#"{"workspace_root": "/w", "packages": [
            {"name": "faros-core", "manifest_path": "/w/crates/faros-core/Cargo.toml", "dependencies": [
                {"name": "serde", "kind": null, "features": []}]},
            {"name": "faros-provider-x", "manifest_path": "/w/providers/x/Cargo.toml", "dependencies": [
                {"name": "faros-core", "kind": null, "features": ["axum"]},
                {"name": "faros-core", "kind": "build", "features": []},
                {"name": "faros-embedded-kcp", "kind": "dev", "features": ["testing"]}]},
            {"name": "faros-embedded-kcp", "manifest_path": "/w/crates/faros-embedded-kcp/Cargo.toml",
             "dependencies": []}]}"#;
        let packages = parse_metadata(json).unwrap();
        assert_eq!(
            packages[1],
            package(
                "faros-provider-x",
                "providers/x",
                &[
                    ("faros-core", Kind::Normal, &["axum"]),
                    ("faros-core", Kind::Normal, &[]),
                    ("faros-embedded-kcp", Kind::Dev, &["testing"]),
                ]
            )
        );
        assert_eq!(packages[0].deps, [], "only workspace crates are kept");
        assert_eq!(classify(&packages[1].name, &packages[1].dir), Some(Class::Provider));
        assert!(parse_metadata("{}").unwrap_err().to_string().contains("workspace_root"));
    }

    /// The repository itself keeps the rule.
    #[test]
    fn the_workspace_keeps_the_rule() {
        let packages = parse_metadata(&metadata(&crate::project_root()).unwrap()).unwrap();
        assert!(packages.iter().any(|p| p.name == "faros-core"), "{packages:?}");
        let findings: Vec<String> = check(&packages).iter().map(ToString::to_string).collect();
        assert!(findings.is_empty(), "dependency rule broken:\n{}", findings.join("\n"));
    }
}
