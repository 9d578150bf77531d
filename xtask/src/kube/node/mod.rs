//! `cargo xtask kube node`: a process node — the kubelet's part of a cluster without containers.
//! It registers a Node and renews its Lease ([`register`]), binds Pending Pods to itself, and runs
//! each Pod ([`pods`]) as local processes of the binaries its images name ([`plan`], the image map
//! from the workspace build), in network and mount namespaces of its own ([`sandbox`]), with its
//! volumes as files, its probes ([`probes`]) and its status written back ([`status`]). Services
//! resolve through each Pod's `/etc/hosts` to loopback addresses the node relays ([`services`],
//! [`relay`]): no Pod dials a ClusterIP or anything off loopback.
//!
//! It lives beside the control plane ([`super::plane`]) because it is the control plane's missing
//! kubelet: the e2e scenarios only ever see the platform it runs through the external target.
//!
//! What it does not emulate: images (the binaries of this workspace and of this machine stand in),
//! CNI and kube-proxy (the relay), cluster DNS (hosts files), cgroups and resources, read-only root
//! filesystems and capabilities (processes run with `no_new_privs` as their user), lifecycle hooks,
//! ephemeral containers, logs and exec through the API server, Events.

mod plan;
mod pods;
mod probes;
mod register;
mod relay;
mod sandbox;
mod services;
mod status;

use std::collections::{BTreeMap, BTreeSet};
use std::net::{Ipv4Addr, SocketAddrV4};
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use anyhow::Context as _;
use k8s_openapi::api::core::v1::{ConfigMap, Pod, Secret, Service};
use kube::Api;
use kube::api::{DeleteParams, ListParams, Patch, PatchParams, PostParams, Preconditions};
use serde_json::json;

use crate::images::{Component, DEFAULT_REGISTRY, repository};
use plan::{Entrypoint, Images, Lookups};
use pods::PodRun;
use relay::{Netns, SharedRoutes};
use services::Backend;

/// Between two passes over the Pods.
const TICK: Duration = Duration::from_millis(500);
/// Between two Lease renewals (a quarter of its duration, as the kubelet).
const HEARTBEAT: Duration = Duration::from_secs(10);
/// Before retrying a Pod that could not start (a Secret not there yet).
const RETRY: Duration = Duration::from_secs(2);
/// Each container's grace when the node itself is stopped.
const SHUTDOWN_GRACE: Duration = Duration::from_secs(5);
/// The curl image of the charts' `helm test` Pods.
pub(crate) const CURL_IMAGE: &str = "docker.io/curlimages/curl";

#[derive(clap::Args)]
pub struct NodeCmd {
    /// The cluster admin's kubeconfig (`kube up`'s `admin.kubeconfig`).
    #[arg(long)]
    kubeconfig: PathBuf,
    /// Where Pods' files, logs and the binary snapshot go (replaced).
    #[arg(long, default_value = "target/kube/node")]
    dir: PathBuf,
    /// The Node's name.
    #[arg(long, default_value = "faros-process-node")]
    name: String,
    /// The workspace binaries the faros images stand for.
    #[arg(long, default_value = "target/debug")]
    bin: PathBuf,
    /// A port on the host's 127.0.0.1 that every Pod reaches at its own 127.0.0.1 (real kcp, whose
    /// URLs name `127.0.0.1:<port>`). Repeatable.
    #[arg(long = "host-port")]
    host_ports: Vec<u16>,
    /// More images: `REPOSITORY=PROGRAM` (a program of this machine). Repeatable.
    #[arg(long = "image")]
    images: Vec<String>,
}

/// The image map: each faros image → its binary snapshotted from `bin` into `snapshot` (a hard
/// link, so a rebuild while Pods run changes nothing, as an image would not) with the files the
/// Dockerfile copies beside it (from the repository at `root`), and curl.
fn images(root: &Path, bin: &Path, snapshot: &Path, extra: &[String]) -> anyhow::Result<Images> {
    std::fs::create_dir_all(snapshot)?;
    let mut map = BTreeMap::new();
    for c in Component::ALL {
        let (binary, args, files) = match c {
            Component::Kcp => ("faros", vec!["kcp".to_string()], vec![]),
            Component::HubApi => ("faros-hub-api", vec![], vec![]),
            Component::HubReconciler => ("faros-hub-reconciler", vec![], vec![]),
            // The Dockerfile's COPY lines of its stage.
            Component::ProviderQuickstart => (
                "faros-provider-quickstart",
                vec![],
                vec![
                    (
                        root.join("providers/quickstart/schemas"),
                        "/etc/faros/schemas".to_string(),
                    ),
                    (
                        root.join("providers/quickstart/manifest.yaml"),
                        "/etc/faros/catalogentry/catalogentry.yaml".to_string(),
                    ),
                ],
            ),
        };
        let from = bin.join(binary);
        let to = snapshot.join(binary);
        if !from.is_file() {
            continue;
        }
        let _ = std::fs::remove_file(&to);
        if std::fs::hard_link(&from, &to).is_err() {
            std::fs::copy(&from, &to).with_context(|| format!("copying {}", from.display()))?;
        }
        map.insert(
            repository(DEFAULT_REGISTRY, c),
            Entrypoint {
                program: std::path::absolute(&to)?,
                args,
                files,
            },
        );
    }
    map.insert(
        CURL_IMAGE.to_string(),
        Entrypoint {
            program: "/usr/bin/curl".into(),
            args: vec![],
            files: vec![],
        },
    );
    for e in extra {
        let (repo, program) = e
            .split_once('=')
            .with_context(|| format!("--image {e}: expected REPOSITORY=PROGRAM"))?;
        map.insert(
            repo.to_string(),
            Entrypoint {
                program: program.into(),
                args: vec![],
                files: vec![],
            },
        );
    }
    Ok(Images(map))
}

impl NodeCmd {
    pub fn run(self, root: &Path) -> anyhow::Result<()> {
        let dir = root.join(&self.dir);
        if dir.exists() {
            std::fs::remove_dir_all(&dir).with_context(|| format!("removing {}", dir.display()))?;
        }
        let images = images(root, &root.join(&self.bin), &dir.join("bin"), &self.images)?;
        let runtime = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(2)
            .enable_all()
            .build()?;
        runtime.block_on(async {
            let mut node = Node::new(&self, dir, images).await?;
            let mut term = tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate())?;
            node.serve(async move {
                tokio::select! {
                    _ = term.recv() => {}
                    _ = tokio::signal::ctrl_c() => {}
                }
            })
            .await
        })
    }
}

/// The node's state.
struct Node {
    name: String,
    dir: PathBuf,
    client: kube::Client,
    images: Images,
    apiserver_port: u16,
    host_ports: Vec<u16>,
    routes: SharedRoutes,
    pods: BTreeMap<String, PodRun>,
    /// Pods that could not start, by uid: when to retry, and why.
    failed: BTreeMap<String, (Instant, String)>,
    /// NodePort listeners on the host's loopback.
    node_ports: BTreeMap<SocketAddrV4, tokio::task::JoinHandle<()>>,
    next_ip: u32,
}

/// The Pod addresses: 198.18.0.0/15 (RFC 2544, benchmarking; never routed), allocated but never
/// dialled, as ClusterIPs: Pods reach each other only through the relay.
fn pod_ip(n: u32) -> String {
    Ipv4Addr::from(u32::from(Ipv4Addr::new(198, 18, 0, 0)) + n).to_string()
}

impl Node {
    async fn new(args: &NodeCmd, dir: PathBuf, images: Images) -> anyhow::Result<Self> {
        let config = faros_core::client::KcpArgs {
            kubeconfig: Some(args.kubeconfig.clone()),
            context: None,
        }
        .load()
        .await?;
        let factory = faros_core::client::ClientFactory::new(config)?;
        let server = factory.server().to_string();
        let apiserver_port = server
            .rsplit(':')
            .next()
            .and_then(|p| p.parse().ok())
            .with_context(|| format!("the API server's port in {server}"))?;
        let client = factory.at(&server)?;
        register::register(&client, &args.name).await?;
        Ok(Self {
            name: args.name.clone(),
            dir,
            client,
            images,
            apiserver_port,
            host_ports: args.host_ports.clone(),
            routes: SharedRoutes::default(),
            pods: BTreeMap::new(),
            failed: BTreeMap::new(),
            node_ports: BTreeMap::new(),
            next_ip: 2,
        })
    }

    /// Runs Pods until `stop` completes, then stops them all.
    async fn serve(&mut self, stop: impl std::future::Future<Output = ()>) -> anyhow::Result<()> {
        let mut beat = Instant::now();
        eprintln!("process node {} ready", self.name);
        tokio::pin!(stop);
        loop {
            tokio::select! {
                _ = tokio::time::sleep(TICK) => {}
                _ = &mut stop => break,
            }
            if beat.elapsed() >= HEARTBEAT {
                if let Err(e) = register::heartbeat(&self.client, &self.name).await {
                    eprintln!("heartbeat: {e}");
                }
                beat = Instant::now();
            }
            if let Err(e) = self.pass().await {
                eprintln!("{e:#}");
            }
        }
        // All at once, each container with a short grace: whoever stops the node (the e2e plan)
        // waits only seconds before SIGKILL, which would leave the Pods' processes behind.
        eprintln!("stopping every Pod");
        let stopping: Vec<_> = std::mem::take(&mut self.pods)
            .into_values()
            .map(|run| std::thread::spawn(move || run.stop_within(SHUTDOWN_GRACE)))
            .collect();
        for t in stopping {
            let _ = t.join();
        }
        Ok(())
    }

    /// One pass: bind, stop what went, start what came, step every Pod, refresh Services, write
    /// statuses.
    async fn pass(&mut self) -> anyhow::Result<()> {
        let api: Api<Pod> = Api::all(self.client.clone());
        let all = api.list(&ListParams::default()).await?.items;
        for p in &all {
            let spec = p.spec.as_ref();
            let unbound = spec.is_some_and(|s| s.node_name.is_none())
                && spec
                    .and_then(|s| s.scheduler_name.as_deref())
                    .is_none_or(|s| s == "default-scheduler")
                && p.metadata.deletion_timestamp.is_none();
            if unbound {
                self.bind(p).await;
            }
        }
        let mine: BTreeMap<String, &Pod> = all
            .iter()
            .filter(|p| p.spec.as_ref().and_then(|s| s.node_name.as_deref()) == Some(self.name.as_str()))
            .filter_map(|p| Some((p.metadata.uid.clone()?, p)))
            .collect();

        // Gone or being deleted: stop, then remove the object as the kubelet does.
        let leaving: Vec<String> = self
            .pods
            .keys()
            .filter(|uid| mine.get(*uid).is_none_or(|p| p.metadata.deletion_timestamp.is_some()))
            .cloned()
            .collect();
        for uid in leaving {
            if let Some(run) = self.pods.remove(&uid) {
                let (ns, name) = (run.namespace.clone(), run.name.clone());
                if let Ok(mut r) = self.routes.write() {
                    r.pods.remove(&uid);
                }
                let client = self.client.clone();
                tokio::spawn(async move {
                    let _ = tokio::task::spawn_blocking(move || run.stop()).await;
                    let api: Api<Pod> = Api::namespaced(client, &ns);
                    let dp = DeleteParams {
                        grace_period_seconds: Some(0),
                        preconditions: Some(Preconditions {
                            uid: Some(uid),
                            resource_version: None,
                        }),
                        ..Default::default()
                    };
                    let _ = api.delete(&name, &dp).await;
                });
            }
        }
        for (uid, p) in &mine {
            if p.metadata.deletion_timestamp.is_some() && !self.pods.contains_key(uid) {
                // Never started (or stopped already): nothing to wait for.
                let api: Api<Pod> = Api::namespaced(self.client.clone(), p.metadata.namespace.as_deref().unwrap_or(""));
                let _ = api
                    .delete(
                        p.metadata.name.as_deref().unwrap_or(""),
                        &DeleteParams {
                            grace_period_seconds: Some(0),
                            ..Default::default()
                        },
                    )
                    .await;
            }
        }

        let svc_api: Api<Service> = Api::all(self.client.clone());
        let svcs = svc_api.list(&ListParams::default()).await?.items;
        let table = {
            let ready: Vec<services::Ready<'_>> = self
                .pods
                .iter()
                .filter_map(|(uid, run)| {
                    Some(services::Ready {
                        pod: mine.get(uid)?,
                        ready: run.ready(),
                    })
                })
                .collect();
            services::table(&svcs, &ready, self.apiserver_port)
        };
        let kubernetes = table
            .entries
            .iter()
            .find(|e| e.name == "kubernetes" && e.namespace == "default")
            .map(|e| (e.address, e.port));

        for (uid, p) in &mine {
            let done = p
                .status
                .as_ref()
                .and_then(|s| s.phase.as_deref())
                .is_some_and(|ph| ph == "Succeeded" || ph == "Failed");
            if self.pods.contains_key(uid) || p.metadata.deletion_timestamp.is_some() || done {
                continue;
            }
            if self.failed.get(uid).is_some_and(|(at, _)| Instant::now() < *at) {
                continue;
            }
            match self.start(p, &table, kubernetes).await {
                Ok(run) => {
                    self.failed.remove(uid);
                    if let Ok(mut r) = self.routes.write() {
                        r.pods.insert(uid.clone(), run.sandbox.pid());
                    }
                    self.pods.insert(uid.clone(), run);
                }
                Err(e) => {
                    let why = format!("{e:#}");
                    if self.failed.get(uid).is_none_or(|(_, w)| w != &why) {
                        eprintln!(
                            "{}/{}: {why}",
                            p.metadata.namespace.as_deref().unwrap_or(""),
                            p.metadata.name.as_deref().unwrap_or("")
                        );
                    }
                    self.failed.insert(uid.clone(), (Instant::now() + RETRY, why.clone()));
                    self.write_waiting(p, &why).await;
                }
            }
        }

        // The relays first: a Pod's containers start (in `tick`) with its Services already listening.
        self.route(&table)?;
        for run in self.pods.values_mut() {
            tokio::task::block_in_place(|| run.tick())?;
        }
        for (uid, run) in &mut self.pods {
            let s = status::status(&run.observed(), k8s_openapi::jiff::Timestamp::now());
            if run.last_status.as_ref().is_some_and(|l| status::same(l, &s)) {
                continue;
            }
            let api: Api<Pod> = Api::namespaced(self.client.clone(), &run.namespace);
            let patch = json!({"metadata": {"uid": uid}, "status": s});
            match api
                .patch_status(&run.name, &PatchParams::default(), &Patch::Merge(patch))
                .await
            {
                Ok(_) => run.last_status = Some(s),
                Err(e) => eprintln!("{}/{} status: {e}", run.namespace, run.name),
            }
        }
        Ok(())
    }

    async fn bind(&self, p: &Pod) {
        let (Some(ns), Some(name)) = (&p.metadata.namespace, &p.metadata.name) else {
            return;
        };
        let api: Api<Pod> = Api::namespaced(self.client.clone(), ns);
        let binding = json!({
            "apiVersion": "v1", "kind": "Binding",
            "metadata": {"name": name, "namespace": ns, "uid": p.metadata.uid},
            "target": {"apiVersion": "v1", "kind": "Node", "name": self.name},
        });
        if let Err(e) = api
            .create_subresource::<_, serde_json::Value>("binding", name, &PostParams::default(), &binding)
            .await
        {
            eprintln!("binding {ns}/{name}: {e}");
        }
    }

    /// What the Pod reads: its Secrets and ConfigMaps, and a ServiceAccount token bound to it.
    async fn lookups(&self, p: &Pod, ip: &str) -> anyhow::Result<Lookups> {
        let ns = p.metadata.namespace.as_deref().unwrap_or("default");
        let (secret_names, map_names) = plan::references(p);
        let mut lookups = Lookups {
            pod_ip: ip.to_string(),
            node_name: self.name.clone(),
            ..Default::default()
        };
        let secrets: Api<Secret> = Api::namespaced(self.client.clone(), ns);
        for name in secret_names {
            let data = secrets.get_opt(&name).await?.map(|s| {
                s.data
                    .unwrap_or_default()
                    .into_iter()
                    .map(|(k, v)| (k, v.0))
                    .collect::<BTreeMap<_, _>>()
            });
            lookups.secrets.insert(name, data);
        }
        let maps: Api<ConfigMap> = Api::namespaced(self.client.clone(), ns);
        for name in map_names {
            let data = maps.get_opt(&name).await?.map(|m| {
                let mut d: BTreeMap<String, Vec<u8>> = m
                    .data
                    .unwrap_or_default()
                    .into_iter()
                    .map(|(k, v)| (k, v.into_bytes()))
                    .collect();
                d.extend(m.binary_data.unwrap_or_default().into_iter().map(|(k, v)| (k, v.0)));
                d
            });
            lookups.config_maps.insert(name, data);
        }
        if let Some((audience, expiration)) = plan::wants_token(p) {
            let sa = p
                .spec
                .as_ref()
                .and_then(|s| s.service_account_name.clone())
                .unwrap_or_else(|| "default".into());
            let api: Api<k8s_openapi::api::core::v1::ServiceAccount> = Api::namespaced(self.client.clone(), ns);
            let mut spec = json!({
                "expirationSeconds": expiration.unwrap_or(3607).max(600),
                "boundObjectRef": {"apiVersion": "v1", "kind": "Pod", "name": p.metadata.name, "uid": p.metadata.uid},
            });
            if !audience.is_empty() {
                spec["audiences"] = json!([audience]);
            }
            let request = json!({"apiVersion": "authentication.k8s.io/v1", "kind": "TokenRequest", "spec": spec});
            let answer: serde_json::Value = api
                .create_subresource("token", &sa, &PostParams::default(), &request)
                .await
                .with_context(|| format!("a token for ServiceAccount {ns}/{sa}"))?;
            lookups.token = answer["status"]["token"].as_str().map(String::from);
        }
        Ok(lookups)
    }

    async fn start(
        &mut self,
        p: &Pod,
        table: &services::Table,
        kubernetes: Option<(Ipv4Addr, u16)>,
    ) -> anyhow::Result<PodRun> {
        let ip = pod_ip(self.next_ip);
        let lookups = self.lookups(p, &ip).await?;
        let plan = plan::plan(p, &self.images, &lookups)?;
        self.next_ip += 1;
        let ns = p.metadata.namespace.clone().unwrap_or_default();
        let name = p.metadata.name.clone().unwrap_or_default();
        let uid = p.metadata.uid.clone().unwrap_or_default();
        let dir = self
            .dir
            .join("pods")
            .join(format!("{ns}_{name}_{}", &uid[..uid.len().min(8)]));
        let mut env = Vec::new();
        if let Some((address, port)) = kubernetes {
            env.push(("KUBERNETES_SERVICE_HOST".to_string(), address.to_string()));
            env.push(("KUBERNETES_SERVICE_PORT".to_string(), port.to_string()));
            env.push(("KUBERNETES_SERVICE_PORT_HTTPS".to_string(), port.to_string()));
            env.push(("KUBERNETES_PORT".to_string(), format!("tcp://{address}:{port}")));
        }
        let hosts = services::hosts_file(table, &name, &ns);
        let run = tokio::task::block_in_place(|| PodRun::create(p, plan, dir, ip, env, hosts))?;
        Ok(run)
    }

    /// A Pod that cannot start says why in its container statuses, as a kubelet would.
    async fn write_waiting(&self, p: &Pod, why: &str) {
        let (Some(ns), Some(name)) = (&p.metadata.namespace, &p.metadata.name) else {
            return;
        };
        let statuses: Vec<serde_json::Value> = p
            .spec
            .iter()
            .flat_map(|s| &s.containers)
            .map(|c| {
                json!({"name": c.name, "image": c.image, "imageID": "", "ready": false, "restartCount": 0,
                       "state": {"waiting": {"reason": "CreateContainerConfigError", "message": why}}})
            })
            .collect();
        let api: Api<Pod> = Api::namespaced(self.client.clone(), ns);
        let patch = json!({"status": {"phase": "Pending", "containerStatuses": statuses}});
        let _ = api
            .patch_status(name, &PatchParams::default(), &Patch::Merge(patch))
            .await;
    }

    /// The relays: every Service port in every Pod's namespace, the host ports at each Pod's
    /// 127.0.0.1, NodePorts on the host's loopback; and every Pod's hosts file.
    fn route(&mut self, table: &services::Table) -> anyhow::Result<()> {
        let mut backends: BTreeMap<SocketAddrV4, Vec<Backend>> = BTreeMap::new();
        let mut node_ports: BTreeMap<SocketAddrV4, Vec<Backend>> = BTreeMap::new();
        for e in &table.entries {
            backends.insert(SocketAddrV4::new(e.address, e.port), e.backends.clone());
            if let Some(np) = e.node_port {
                node_ports.insert(SocketAddrV4::new(Ipv4Addr::LOCALHOST, np), e.backends.clone());
            }
        }
        for port in &self.host_ports {
            backends.insert(
                SocketAddrV4::new(Ipv4Addr::LOCALHOST, *port),
                vec![Backend::Host(*port)],
            );
        }
        let wanted: BTreeSet<SocketAddrV4> = backends.keys().copied().collect();
        if let Ok(mut r) = self.routes.write() {
            r.backends = backends;
            r.backends.extend(node_ports.clone());
        }
        for run in self.pods.values_mut() {
            run.listeners.retain(|addr, task| {
                let keep = wanted.contains(addr);
                if !keep {
                    task.abort();
                }
                keep
            });
            let ns = Netns::Of(run.sandbox.pid());
            for addr in &wanted {
                // A Service on a port the Pod itself listens on: its wildcard bind answers that
                // address (the Pod reaches itself, one of the Service's endpoints when it selects it).
                if run.listeners.contains_key(addr) || run.own_ports.contains(&addr.port()) {
                    continue;
                }
                let listener = tokio::task::block_in_place(|| ns.listen((*addr).into()));
                match listener {
                    Ok(l) => {
                        let task = tokio::spawn(relay::serve(l, *addr, self.routes.clone()));
                        run.listeners.insert(*addr, task);
                    }
                    Err(e) => eprintln!("{}/{}: {e}", run.namespace, run.name),
                }
            }
            run.set_hosts(services::hosts_file(table, &run.name, &run.namespace))?;
        }
        self.node_ports.retain(|addr, task| {
            let keep = node_ports.contains_key(addr);
            if !keep {
                task.abort();
            }
            keep
        });
        for addr in node_ports.keys() {
            if self.node_ports.contains_key(addr) {
                continue;
            }
            match tokio::task::block_in_place(|| Netns::Host.listen((*addr).into())) {
                Ok(l) => {
                    let task = tokio::spawn(relay::serve(l, *addr, self.routes.clone()));
                    self.node_ports.insert(*addr, task);
                }
                Err(e) => eprintln!("NodePort {addr}: {e}"),
            }
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests;
