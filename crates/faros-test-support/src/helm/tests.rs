use super::*;

/// A chart whose one template needs `name`, so helm both renders and refuses.
fn chart(dir: &Path) -> std::path::PathBuf {
    let chart = dir.join("tiny");
    std::fs::create_dir_all(chart.join("templates")).unwrap();
    std::fs::write(
        chart.join("Chart.yaml"),
        "apiVersion: v2\nname: tiny\nversion: 0.1.0\ndescription: a test chart\nicon: https://example.com/icon.png\n",
    )
    .unwrap();
    std::fs::write(chart.join("values.yaml"), "name: \"\"\n").unwrap();
    std::fs::write(
        chart.join("templates/configmap.yaml"),
        "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: {{ required \"name is required\" .Values.name }}\n",
    )
    .unwrap();
    chart
}

#[test]
fn a_command_is_described_as_typed() {
    let mut cmd = Command::new("helm");
    cmd.args(["template", "r"]).arg(Path::new("/charts/x"));
    values(&mut cmd, &[Path::new("a.yaml")], &["k=v"]);
    assert_eq!(describe(&cmd), "helm template r /charts/x -f a.yaml --set k=v");
}

#[test]
fn helm_renders_lints_and_refuses_with_its_own_words() {
    let helm = Helm::find().unwrap_or_else(|e| panic!("{e}"));
    let dir = tempfile::tempdir().unwrap();
    let chart = chart(dir.path());
    let values_file = dir.path().join("values.yaml");
    std::fs::write(&values_file, "name: from-file\n").unwrap();

    let yaml = helm.template("r", "ns", &chart, &[], &["name=from-set"]).unwrap();
    assert!(yaml.contains("name: from-set"), "{yaml}");
    // --set wins over a values file, as helm documents.
    let yaml = helm
        .template("r", "ns", &chart, &[&values_file], &["name=from-set"])
        .unwrap();
    assert!(yaml.contains("name: from-set"), "{yaml}");
    let yaml = helm.template("r", "ns", &chart, &[&values_file], &[]).unwrap();
    assert!(yaml.contains("name: from-file"), "{yaml}");
    helm.lint(&chart, true, &[&values_file], &[]).unwrap();

    let err = helm.template("r", "ns", &chart, &[], &[]).unwrap_err();
    assert!(matches!(err, HelmError::Failed { .. }), "{err}");
    assert!(err.output().contains("name is required"), "{err}");
    assert!(
        err.to_string().starts_with(&format!("{} template r ", helm.program())),
        "{err}"
    );
    assert!(helm.lint(&chart, true, &[], &[]).is_err());
}
