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
