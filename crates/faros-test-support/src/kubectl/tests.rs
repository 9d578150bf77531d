use super::*;

/// kubectl reads its input from stdin and answers without a server (`create configmap
/// --dry-run=client` needs none), and a failure's output says why.
#[test]
fn input_goes_through_stdin_and_failures_print_why() {
    let dir = tempfile::tempdir().unwrap();
    let kubeconfig = dir.path().join("k.kubeconfig");
    std::fs::write(
        &kubeconfig,
        "apiVersion: v1\nkind: Config\ncurrent-context: c\n\
         clusters: [{name: k, cluster: {server: 'https://127.0.0.1:1'}}]\n\
         users: [{name: u, user: {token: t}}]\n\
         contexts: [{name: c, context: {cluster: k, user: u, namespace: default}}]\n",
    )
    .unwrap();
    let dry_run = |from: &str| {
        [
            "create".to_string(),
            "configmap".into(),
            "c".into(),
            format!("--from-file=data={from}"),
            "--dry-run=client".into(),
            "-o".into(),
            "jsonpath={.data.data}".into(),
        ]
    };
    let args = dry_run("/dev/stdin");
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    let out = run(&kubeconfig, &args, Some("from stdin")).unwrap();
    assert!(out.status.success(), "{}", printed(&out));
    assert_eq!(String::from_utf8_lossy(&out.stdout), "from stdin");

    let missing = dir.path().join("missing");
    let args = dry_run(&missing.display().to_string());
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    let out = run(&kubeconfig, &args, None).unwrap();
    assert!(!out.status.success());
    assert!(printed(&out).contains("no such file or directory"), "{}", printed(&out));
}
