//! The process node against the real control plane (needs root and `cargo xtask kube build`; run by
//! `cargo xtask e2e --target kube` first, or `cargo test -p xtask --bin xtask -- --ignored kube::node`).

use std::net::TcpListener;
use std::path::Path;
use std::process::Command;

use super::*;
use crate::kube::cli::Tool;
use crate::kube::plane::ControlPlane;

fn kubectl_ok(k: &Tool, args: &[&str]) -> String {
    match k.run(args) {
        Ok(out) => out.stdout,
        Err(e) => panic!("{e}"),
    }
}

/// A Deployment from `testdata/demo.yaml` rolls out with its probes and a Secret volume, a rollout
/// restart replaces its processes, and a client Pod reaches its Service by name and the API
/// server through `kubernetes`, and cannot connect to a ClusterIP or a host address.
#[test]
#[ignore = "needs root, unshare and the control plane of `cargo xtask kube build`"]
fn runs_a_deployment() {
    let root = crate::locate::project_root();
    let plane = ControlPlane::start(
        &crate::kube::build::bin_dir(&root),
        root.join("target/kube/node-test"),
        "kubectl",
    )
    .unwrap();
    let kubectl = plane.kubectl().clone();
    let args = NodeCmd {
        kubeconfig: plane.paths.admin_kubeconfig(),
        dir: "target/kube/node-test-node".into(),
        name: "faros-process-node".into(),
        bin: "target/debug".into(),
        host_ports: vec![],
        images: vec![
            "docker.io/library/python=/usr/bin/python3".into(),
            "docker.io/library/bash=/bin/bash".into(),
        ],
    };
    let (stop_tx, stop_rx) = tokio::sync::oneshot::channel::<()>();
    let node_root = root.clone();
    let node = std::thread::spawn(move || -> anyhow::Result<()> {
        let root = node_root;
        let dir = root.join(&args.dir);
        let _ = std::fs::remove_dir_all(&dir);
        let images = images(&root, &root.join(&args.bin), &dir.join("bin"), &args.images)?;
        let runtime = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(2)
            .enable_all()
            .build()?;
        runtime.block_on(async {
            let mut node = Node::new(&args, dir, images).await?;
            node.serve(async move {
                let _ = stop_rx.await;
            })
            .await
        })
    });

    let demo = Path::new(env!("CARGO_MANIFEST_DIR")).join("src/kube/node/testdata/demo.yaml");
    kubectl_ok(&kubectl, &["apply", "-f", &demo.display().to_string()]);
    kubectl_ok(
        &kubectl,
        &["-n", "demo", "rollout", "status", "deployment/web", "--timeout=90s"],
    );
    let pods = |k: &Tool| {
        let mut names: Vec<String> = kubectl_ok(k, &["-n", "demo", "get", "pods", "-l", "app=web", "-o", "name"])
            .lines()
            .map(String::from)
            .collect();
        names.sort();
        names
    };
    let before = pods(&kubectl);
    assert_eq!(before.len(), 2, "{before:?}");

    // A rollout restart replaces both Pods; the old ones' processes are stopped and the objects go.
    kubectl_ok(&kubectl, &["-n", "demo", "rollout", "restart", "deployment/web"]);
    kubectl_ok(
        &kubectl,
        &["-n", "demo", "rollout", "status", "deployment/web", "--timeout=90s"],
    );
    for old in &before {
        kubectl_ok(&kubectl, &["-n", "demo", "wait", "--for=delete", old, "--timeout=60s"]);
    }
    let after = pods(&kubectl);
    assert_eq!(after.len(), 2, "{after:?}");
    assert!(after.iter().all(|p| !before.contains(p)), "{before:?} → {after:?}");

    // Something every host address answers on: the client must not connect to it, nor to a ClusterIP.
    let listener = TcpListener::bind("0.0.0.0:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    let ips = Command::new("ip").args(["-o", "-4", "addr", "show"]).output().unwrap();
    let mut targets: Vec<String> = String::from_utf8_lossy(&ips.stdout)
        .lines()
        .filter_map(|l| l.split_whitespace().nth(3)?.split('/').next().map(String::from))
        .map(|ip| format!("{ip}:{port}"))
        .collect();
    for target in &targets {
        // From the host the port answers: a Pod's failure to connect is its namespace's doing.
        std::net::TcpStream::connect(target).unwrap_or_else(|e| panic!("{target} from the host: {e}"));
    }
    for svc in ["default/kubernetes", "demo/web"] {
        let (ns, name) = svc.split_once('/').unwrap();
        let yaml = kubectl_ok(
            &kubectl,
            &[
                "-n",
                ns,
                "get",
                "service",
                name,
                "-o",
                "jsonpath={.spec.clusterIP}:{.spec.ports[0].port}",
            ],
        );
        targets.push(yaml);
    }
    let client =
        std::fs::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join("src/kube/node/testdata/client.yaml"))
            .unwrap()
            .replace("TARGETS", &targets.join(" "));
    kubectl.run_with_stdin(&["apply", "-f", "-"], Some(&client)).unwrap();
    let waited = kubectl.run(&[
        "-n",
        "demo",
        "wait",
        "pod/client",
        "--for=jsonpath={.status.phase}=Succeeded",
        "--timeout=90s",
    ]);
    let log = std::fs::read_dir(root.join("target/kube/node-test-node/pods"))
        .unwrap()
        .filter_map(Result::ok)
        .find(|e| e.file_name().to_string_lossy().starts_with("demo_client_"))
        .and_then(|e| std::fs::read_to_string(e.path().join("logs/client.log")).ok())
        .unwrap_or_default();
    assert!(waited.is_ok(), "the client Pod did not succeed: {waited:?}\n{log}");
    assert!(log.contains("PASS"), "{log}");
    for target in &targets {
        assert!(log.contains(&format!("unreachable: {target}")), "{target}: {log}");
    }
    drop(listener);

    let _ = stop_tx.send(());
    node.join().unwrap().unwrap();
    drop(plane);
}
