//! The Node object and its heartbeat: registered Ready with its capacity, its Lease in
//! `kube-node-lease` renewed (and its Ready condition refreshed) so the node lifecycle controller
//! neither taints it nor evicts its Pods.

use k8s_openapi::api::coordination::v1::Lease;
use k8s_openapi::api::core::v1::Node;
use k8s_openapi::jiff::Timestamp;
use kube::Api;
use kube::api::{Patch, PatchParams, PostParams};
use serde_json::json;

/// Seconds the Lease holds (the kubelet's default).
pub(crate) const LEASE_SECONDS: i32 = 40;

fn ready_status(now: Timestamp) -> serde_json::Value {
    json!({"status": {
        "conditions": [{
            "type": "Ready", "status": "True", "reason": "KubeletReady",
            "message": "the faros e2e process node runs Pods as local processes",
            "lastHeartbeatTime": now.to_string(), "lastTransitionTime": now.to_string(),
        }],
        "capacity": {"cpu": "64", "memory": "256Gi", "pods": "250"},
        "allocatable": {"cpu": "64", "memory": "256Gi", "pods": "250"},
        "nodeInfo": {
            "architecture": std::env::consts::ARCH, "operatingSystem": "linux",
            "kubeletVersion": "faros-process-node", "kubeProxyVersion": "",
            "containerRuntimeVersion": "process://", "bootID": "", "machineID": "", "systemUUID": "",
            "kernelVersion": "", "osImage": "",
        },
    }})
}

/// Creates the Node (if missing) and marks it Ready.
pub(crate) async fn register(client: &kube::Client, name: &str) -> Result<(), kube::Error> {
    let nodes: Api<Node> = Api::all(client.clone());
    let node: Node = serde_json::from_value(json!({
        "apiVersion": "v1", "kind": "Node",
        "metadata": {"name": name, "labels": {
            "kubernetes.io/hostname": name, "kubernetes.io/os": "linux",
            "kubernetes.io/arch": std::env::consts::ARCH,
        }},
    }))
    .map_err(kube::Error::SerdeError)?;
    match nodes.create(&PostParams::default(), &node).await {
        Ok(_) => {}
        Err(kube::Error::Api(s)) if s.code == 409 => {}
        Err(e) => return Err(e),
    }
    heartbeat(client, name).await
}

/// Renews the Lease and the Ready condition.
pub(crate) async fn heartbeat(client: &kube::Client, name: &str) -> Result<(), kube::Error> {
    let now = Timestamp::now();
    let nodes: Api<Node> = Api::all(client.clone());
    nodes
        .patch_status(name, &PatchParams::default(), &Patch::Merge(ready_status(now)))
        .await?;
    let leases: Api<Lease> = Api::namespaced(client.clone(), "kube-node-lease");
    let lease = json!({
        "apiVersion": "coordination.k8s.io/v1", "kind": "Lease",
        "metadata": {"name": name, "namespace": "kube-node-lease"},
        "spec": {"holderIdentity": name, "leaseDurationSeconds": LEASE_SECONDS,
                 "renewTime": now.strftime("%Y-%m-%dT%H:%M:%S%.6fZ").to_string()},
    });
    leases
        .patch(
            name,
            &PatchParams::apply("faros-process-node").force(),
            &Patch::Apply(lease),
        )
        .await?;
    Ok(())
}
