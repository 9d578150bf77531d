//! What `faros provider new` writes, short of building it (`provider_scaffold.rs` builds and runs
//! one): the chart is a working chart — `helm lint` passes, and it renders with the new provider's
//! names, its CatalogEntry and its `<NAME>_URL`, and nothing of the quickstart left — and the code
//! is rustfmt-clean in this repository's style, as an in-tree crate must be. Needs `helm` (or
//! `FAROS_HELM`), which `.ci/run` installs.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::path::{Path, PathBuf};
use std::process::Command;

use faros_test_support::helm::Helm;

fn scaffold(dir: &Path, name: &str) {
    let out = Command::new(env!("CARGO_BIN_EXE_faros"))
        .args(["provider", "new", name, "--dir"])
        .arg(dir)
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
}

#[test]
fn the_scaffolded_chart_lints_and_renders_for_the_new_provider() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("my-notes");
    scaffold(&dir, "my-notes");
    let chart = dir.join("chart");
    let helm = Helm::find().unwrap_or_else(|e| panic!("{e}"));
    // A provider chart names the hub it dials explicitly (its own release name says nothing about it).
    let values = chart.join("ci/default-values.yaml");
    helm.lint(&chart, false, &[&values], &[])
        .unwrap_or_else(|e| panic!("{e}"));
    let text = helm
        .template("notes", "faros", &chart, &[&values], &[])
        .unwrap_or_else(|e| panic!("{e}"));
    for want in [
        "name: notes-faros-provider-my-notes",
        "name: MY_NOTES_URL",
        "image: \"ghcr.io/faroshq/faros-provider-my-notes:0.1.0\"",
        "kind: CatalogEntry",
        "secretName: my-notes-kubeconfig",
    ] {
        assert!(text.contains(want), "missing {want:?} in\n{text}");
    }
    assert!(!text.to_lowercase().contains("quickstart"), "{text}");
    // The chart's README names the crate's own chart and Provider, which exist out of tree too.
    let readme = std::fs::read_to_string(chart.join("README.md")).unwrap();
    assert!(
        readme.contains("helm install my-notes ./chart -n faros-providers"),
        "{readme}"
    );
    assert!(readme.contains("`./provider.yaml`"), "{readme}");
    assert!(!readme.contains("charts/faros-provider-my-notes"), "{readme}");
    // The crate's own test keeps the chart's CatalogEntry equal to its manifest.
    assert_eq!(
        std::fs::read(chart.join("files/manifest.yaml")).unwrap(),
        std::fs::read(dir.join("manifest.yaml")).unwrap()
    );
}

#[test]
fn the_scaffolded_code_is_formatted_in_this_repositorys_style() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("a-provider-with-a-long-name");
    scaffold(&dir, "a-provider-with-a-long-name");
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
    let files: Vec<PathBuf> = [
        "src/lib.rs",
        "src/main.rs",
        "src/aproviderwithalongname.rs",
        "tests/backend.rs",
        "tests/chart_manifest.rs",
    ]
    .iter()
    .map(|f| dir.join(f))
    .collect();
    let check = Command::new("rustfmt")
        .args(["--edition", "2024", "--check", "--config-path"])
        .arg(root.join("rustfmt.toml"))
        .args(&files)
        .output()
        .unwrap();
    assert!(check.status.success(), "{}", String::from_utf8_lossy(&check.stdout));
}

/// The `helm install notes ./chart …` command of a Markdown text, its `\` continuations joined:
/// the namespace and the `--set`s.
fn chart_install(markdown: &str) -> (String, Vec<String>) {
    let command: String = markdown
        .lines()
        .map(str::trim)
        .skip_while(|l| !l.starts_with("helm install notes ./chart"))
        .scan(true, |more, l| {
            let this = more.then(|| l.trim_end_matches('\\').to_string());
            *more = l.ends_with('\\');
            this
        })
        .collect::<Vec<_>>()
        .join(" ");
    let words: Vec<&str> = command.split_whitespace().collect();
    assert_eq!(
        words.get(..4),
        Some(&["helm", "install", "notes", "./chart"][..]),
        "{command}"
    );
    let (mut namespace, mut sets) = (None, Vec::new());
    let mut rest = words[4..].iter();
    while let Some(word) = rest.next() {
        match *word {
            "-n" | "--namespace" => namespace = rest.next().map(|n| n.to_string()),
            "--set" => sets.extend(rest.next().map(|s| s.to_string())),
            other => panic!("the helm install has {other:?}, which this test does not read: {command}"),
        }
    }
    (namespace.expect("the install names its namespace"), sets)
}

/// docs/provider-authoring.md's and the scaffolded chart README's `helm install` of the scaffolded
/// chart, word for word but as `helm template`: each renders, mounts the kubeconfig Secret the hub
/// reconciler mirrors, and its namespace is the one the reconciler chart mirrors into for a
/// reconciler released in `faros` (the guide's premise), so the pod does not wait forever for a
/// Secret that never comes.
#[test]
fn the_documented_chart_installs_land_in_the_reconcilers_mirror_namespace() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
    let helm = Helm::find().unwrap_or_else(|e| panic!("{e}"));
    // The reconciler chart of the platform the guide installs into (released in `faros`, mirror on).
    let reconciler = helm
        .template(
            "reconciler",
            "faros",
            &root.join("charts/faros-hub-reconciler"),
            &[&root.join("charts/faros-hub-reconciler/ci/default-values.yaml")],
            &["mirror.enabled=true"],
        )
        .unwrap_or_else(|e| panic!("{e}"));
    let mirror = reconciler
        .lines()
        .find_map(|l| {
            l.trim()
                .trim_start_matches("- ")
                .trim_matches('"')
                .strip_prefix("--mirror-namespace=")
        })
        .unwrap_or_else(|| panic!("the reconciler chart mirrors nowhere:\n{reconciler}"));

    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("notes");
    scaffold(&dir, "notes");
    let guide = std::fs::read_to_string(root.join("docs/provider-authoring.md")).unwrap();
    let readme = std::fs::read_to_string(dir.join("chart/README.md")).unwrap();
    for (doc, text) in [
        ("docs/provider-authoring.md", guide),
        ("the scaffolded chart/README.md", readme),
    ] {
        let (namespace, sets) = chart_install(&text);
        let sets: Vec<&str> = sets.iter().map(String::as_str).collect();
        let rendered = helm
            .template("notes", &namespace, &dir.join("chart"), &[], &sets)
            .unwrap_or_else(|e| panic!("{doc}: {e}"));
        assert!(rendered.contains("secretName: notes-kubeconfig"), "{doc}: {rendered}");
        assert_eq!(
            namespace, mirror,
            "{doc} installs the provider where no kubeconfig is mirrored"
        );
    }
}
