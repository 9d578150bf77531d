use super::*;

const YAML: &str = "apiVersion: v1\nkind: Config\ncurrent-context: c\n\
    clusters: [{name: k, cluster: {server: 'https://127.0.0.1:6443/clusters/root'}}]\n\
    users: [{name: u, user: {token: t}}]\n\
    contexts: [{name: c, context: {cluster: k, user: u}}]\n";

#[tokio::test]
async fn the_current_context_is_loaded_from_yaml_and_from_a_file() {
    let config = config_from_yaml(YAML).await.unwrap();
    assert_eq!(config.cluster_url.to_string(), "https://127.0.0.1:6443/clusters/root");
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("k.kubeconfig");
    std::fs::write(&path, YAML).unwrap();
    assert_eq!(config_from_file(&path).await.unwrap().cluster_url, config.cluster_url);
}

#[tokio::test]
async fn errors_say_what_failed() {
    let err = config_from_yaml("clusters: 3").await.unwrap_err();
    assert!(err.to_string().starts_with("parsing kubeconfig YAML: "), "{err}");
    let err = config_from_file(Path::new("/nonexistent/k")).await.unwrap_err();
    assert!(
        err.to_string().starts_with("reading kubeconfig /nonexistent/k: "),
        "{err}"
    );
}

#[tokio::test]
async fn a_written_kubeconfig_is_waited_for() {
    faros_core::telemetry::install_crypto_provider();
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("admin.kubeconfig");
    let Err(err) = client_once_written(&path, Duration::from_millis(50)).await else {
        panic!("a client without a kubeconfig");
    };
    assert!(
        err.to_string().starts_with(&format!(
            "timed out after 50ms waiting for a kubeconfig at {}",
            path.display()
        )),
        "{err}"
    );
    // Half a file is read again, and its parse error is the one a timeout reports.
    std::fs::write(&path, &YAML[..40]).unwrap();
    let Err(err) = client_once_written(&path, Duration::from_millis(50)).await else {
        panic!("a client without a kubeconfig");
    };
    assert!(err.to_string().contains("last error: parsing kubeconfig YAML"), "{err}");
    std::fs::write(&path, YAML).unwrap();
    client_once_written(&path, Duration::from_secs(5)).await.unwrap();
}
