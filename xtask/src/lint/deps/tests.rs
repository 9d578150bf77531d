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
                ("faros-test-support", Dev, &[]),
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
            &[
                ("faros", Normal, &[]),
                ("faros-core", Normal, &[]),
                ("faros-test-support", Normal, &[]),
            ],
        ),
        package(
            "faros-test-support",
            "crates/faros-test-support",
            &[("faros-core", Normal, &[])],
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
            "faros-hub-api",
            &[("faros-test-support", Normal, &[])],
            "faros-hub-api: dependency on faros-test-support is forbidden: faros-test-support is for tests: \
             use it as a dev-dependency",
        ),
        (
            "faros",
            &[("faros-test-support", Normal, &[])],
            "faros: dependency on faros-test-support is forbidden: faros-test-support is for tests",
        ),
        (
            "faros-embedded-kcp",
            &[("faros-test-support", Normal, &[])],
            "faros-embedded-kcp: dependency on faros-test-support is forbidden: faros-test-support is for \
             tests",
        ),
        (
            "faros-test-support",
            &[("faros-embedded-kcp", Normal, &[])],
            "faros-test-support: dependency on faros-embedded-kcp is forbidden: the test support crate \
             depends on nothing of ours but faros-core",
        ),
        (
            "faros-test-support",
            &[("faros", Dev, &[])],
            "faros-test-support: dev-dependency on faros is forbidden: the test support crate depends on \
             nothing of ours but faros-core",
        ),
        (
            "faros-core",
            &[("faros-test-support", Dev, &[])],
            "faros-core: dev-dependency on faros-test-support is forbidden: faros-core depends on no \
             workspace crate",
        ),
        (
            "faros-sdk",
            &[("faros-e2e", Dev, &[])],
            "faros-sdk: dev-dependency on faros-e2e is forbidden: whole-stack tests belong in e2e/",
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
        // Every crate's tests may share the test support crate, the embedded kcp's too.
        ("faros-embedded-kcp", &[("faros-test-support", Dev, &[])]),
        ("faros-runtime", &[("faros-test-support", Dev, &[])]),
        ("faros-hub-api", &[("faros-test-support", Dev, &[])]),
        ("faros-provider-quickstart", &[("faros-test-support", Dev, &[])]),
        ("xtask", &[("faros-test-support", Dev, &[])]),
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
    let packages = parse_metadata(&metadata(&crate::locate::project_root()).unwrap()).unwrap();
    assert!(packages.iter().any(|p| p.name == "faros-core"), "{packages:?}");
    let findings: Vec<String> = check(&packages).iter().map(ToString::to_string).collect();
    assert!(findings.is_empty(), "dependency rule broken:\n{}", findings.join("\n"));
}
