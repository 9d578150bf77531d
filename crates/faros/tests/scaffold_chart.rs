//! The chart `faros provider new` writes is a working chart: `helm lint` passes, and it renders
//! with the new provider's names, its CatalogEntry and its `<NAME>_URL`, and nothing of the
//! quickstart left. Needs `helm` (or `FAROS_HELM`), which `.ci/run` installs.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::process::Command;

fn helm() -> String {
    let helm = std::env::var("FAROS_HELM").unwrap_or_else(|_| "helm".into());
    let ok = Command::new(&helm)
        .arg("version")
        .output()
        .is_ok_and(|o| o.status.success());
    assert!(
        ok,
        "helm not found as {helm:?}: install helm 3 (see .ci/run) or set FAROS_HELM"
    );
    helm
}

#[test]
fn the_scaffolded_chart_lints_and_renders_for_the_new_provider() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("my-notes");
    let out = Command::new(env!("CARGO_BIN_EXE_faros"))
        .args(["provider", "new", "my-notes", "--dir"])
        .arg(&dir)
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let chart = dir.join("chart");
    let helm = helm();
    let lint = Command::new(&helm).arg("lint").arg(&chart).output().unwrap();
    assert!(lint.status.success(), "{}", String::from_utf8_lossy(&lint.stdout));
    let rendered = Command::new(&helm)
        .args(["template", "notes", "--namespace", "faros"])
        .arg(&chart)
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&rendered.stdout);
    assert!(
        rendered.status.success(),
        "{}",
        String::from_utf8_lossy(&rendered.stderr)
    );
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
}
