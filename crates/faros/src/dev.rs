//! `faros dev`: the whole platform in one process on an embedded kcp: the kcp-compatible API server,
//! the hub API (HTTPS, same CA), the hub reconciler, the quickstart provider registered, initialised
//! and served the way a real provider is, and a dev user who administers organization `demo` with
//! workspace `default`. [`Stack::start`] brings it up (in-process users such as the e2e scenarios
//! call it directly); [`run`] adds the console output and waits for SIGINT/SIGTERM.

pub mod external;
pub mod lock;
mod quickstart;
pub mod registrar;
pub mod tenant;
pub mod tokens;

use std::net::SocketAddr;
use std::path::{Path, PathBuf};

use anyhow::Context;
use faros_embedded_kcp::{Config, Server};
use tokio::sync::watch;
use tokio::task::JoinHandle;

use crate::cli::DevArgs;

/// The reconciler's Lease identity in `faros dev`.
const DEV_LEASE_IDENTITY: &str = "faros-dev";

/// How long `faros dev` waits for its own components (kcp, hub, reconciler, demo tenant,
/// quickstart: all in this process) before giving up. `--provider` crates are not among them: they
/// are waited for as long as it takes (see [`external`]).
const READY_TIMEOUT: std::time::Duration = std::time::Duration::from_secs(120);
/// How often the hub's start-up hold is brought up to date (in-process state only).
const READY_POLL: std::time::Duration = std::time::Duration::from_millis(20);
/// How often `faros dev` says which `--provider` crates it still waits for.
const EXTERNAL_REMINDER: std::time::Duration = std::time::Duration::from_secs(30);

/// Resolves when `stop` flips to true.
pub(crate) async fn stopped(mut stop: watch::Receiver<bool>) {
    let _ = stop.wait_for(|s| *s).await;
}

/// A running platform.
pub struct Stack {
    pub kcp: Server,
    /// Admin access to kcp (`root`).
    pub admin: kube::Config,
    /// The hub API's base URL (`https://127.0.0.1:<port>`).
    pub hub_url: String,
    /// The CA that signs both kcp's and the hub's serving certificates.
    pub ca_pem: String,
    pub state_dir: PathBuf,
    /// The static token file shared by kcp and the hub (people; the components' own users are in
    /// [`crate::identities::TOKEN_FILE`], which only kcp reads).
    pub token_file: PathBuf,
    /// The dev user's name and token.
    pub dev_user: tokens::DevUser,
    /// Where the quickstart provider's backend listens, when it runs.
    pub quickstart: Option<SocketAddr>,
    /// The `--provider` crates, running beside the hub.
    pub external: Vec<external::External>,
    readiness: Readiness,
    stop: watch::Sender<bool>,
    hub: JoinHandle<Result<(), faros_hub_api::Error>>,
    reconciler: JoinHandle<Result<(), faros_hub_reconciler::Error>>,
    provider: Option<JoinHandle<anyhow::Result<()>>>,
    externals: Vec<JoinHandle<anyhow::Result<()>>>,
    tenant: JoinHandle<()>,
    hold: JoinHandle<()>,
    /// This run's hold on the state directory, let go when the stack has stopped.
    lock: lock::StateLock,
}

/// What `faros dev` waits for, read from in-process state.
#[derive(Clone)]
struct Readiness {
    hub_state: faros_hub_api::AppState,
    tenant_ready: watch::Receiver<bool>,
    /// The quickstart's provider name, when it runs.
    quickstart: Option<&'static str>,
    /// The `--provider` crates' names.
    external: Vec<String>,
}

impl Readiness {
    /// What the README's tenant flow still waits for: the hub serves (tree bootstrapped, catalog
    /// synced), the demo tenant exists, and quickstart (when it runs) is Ready.
    fn core(&self) -> Vec<String> {
        let mut pending = Vec::new();
        let st = &self.hub_state;
        if let Some(why) = faros_hub_api::readiness::startup_pending(&st.tree, st.registry.is_synced()) {
            pending.push(format!("hub API ({why})"));
        }
        if !*self.tenant_ready.borrow() {
            pending.push(format!("demo tenant {}/{}", tenant::DEMO_ORG, tenant::DEMO_WORKSPACE));
        }
        if let Some(name) = self.quickstart
            && let Some(why) = self.unready(name)
        {
            pending.push(format!("{name} ({why})"));
        }
        pending
    }

    /// The `--provider` crates that are not Ready yet: name and why.
    fn external(&self) -> Vec<(String, String)> {
        self.external
            .iter()
            .filter_map(|name| Some((name.clone(), self.unready(name)?)))
            .collect()
    }

    /// Why provider `name` is not Ready; None once it is.
    fn unready(&self, name: &str) -> Option<String> {
        match self.hub_state.registry.readiness(name) {
            Some((_, r)) if r.ready => None,
            Some((_, r)) => Some(r.message.into_owned()),
            None => Some("not registered yet".to_string()),
        }
    }
}

/// Holds the hub's tenant routes back (`503` with `Retry-After`, naming what is awaited) until
/// [`Readiness::core`] is empty, then releases them: what the README promises until the banner.
async fn hold_until_ready(readiness: Readiness, stop: watch::Receiver<bool>) {
    let tree = readiness.hub_state.tree.clone();
    loop {
        let pending = readiness.core();
        if pending.is_empty() {
            tree.release();
            return;
        }
        tree.hold(format!("starting: faros dev waits for {}", pending.join(", ")));
        if *stop.borrow() {
            return;
        }
        tokio::time::sleep(READY_POLL).await;
    }
}

/// Grants the reconciler's kcp user what it uses (with `admin`) and returns its client config; its
/// kubeconfig is kept in `<state-dir>/reconciler.kubeconfig` (owner-only, like every credential here).
async fn reconciler_identity(
    kcp: &Server,
    admin: &faros_core::client::ClientFactory,
    state_dir: &std::path::Path,
    token: &str,
) -> anyhow::Result<kube::Config> {
    let user = faros_hub_reconciler::identity::DEFAULT_USER;
    let granted = faros_hub_reconciler::identity::grant(admin, user, READY_TIMEOUT)
        .await
        .context("granting the reconciler its kcp identity")?;
    tracing::debug!(user, owned = ?granted.owned, "granted the reconciler its kcp identity");
    own_kubeconfig(kcp, state_dir, "reconciler.kubeconfig", user, token).await
}

/// Grants the hub API's kcp user what it uses (with `admin`: `root`, and whatever of the faros tree
/// a previous run left, organizations included; the reconciler grants the rest as it makes it) and
/// returns its client config; its kubeconfig is kept in `<state-dir>/hub.kubeconfig`.
async fn hub_identity(
    kcp: &Server,
    admin: &faros_core::client::ClientFactory,
    state_dir: &std::path::Path,
    token: &str,
) -> anyhow::Result<kube::Config> {
    let user = faros_hub_reconciler::identity::hub::DEFAULT_USER;
    let granted = faros_hub_reconciler::identity::grant_hub(admin, user, READY_TIMEOUT)
        .await
        .context("granting the hub API its kcp identity")?;
    tracing::debug!(user, ?granted, "granted the hub API its kcp identity");
    own_kubeconfig(kcp, state_dir, "hub.kubeconfig", user, token).await
}

/// Writes `<state-dir>/<file>`, a kubeconfig for `root` as `user`, and loads it.
async fn own_kubeconfig(
    kcp: &Server,
    state_dir: &std::path::Path,
    file: &str,
    user: &str,
    token: &str,
) -> anyhow::Result<kube::Config> {
    let yaml = kcp.kubeconfig("root", user, token);
    let path = state_dir.join(file);
    faros_embedded_kcp::server::write_private(&path, yaml.as_bytes())
        .with_context(|| format!("writing {}", path.display()))?;
    let kubeconfig = kube::config::Kubeconfig::from_yaml(&yaml).with_context(|| format!("reading {file}"))?;
    kube::Config::from_custom_kubeconfig(kubeconfig, &Default::default())
        .await
        .with_context(|| format!("loading {file}"))
}

impl Stack {
    /// Starts every component; returns once kcp and the hub listen (the reconciler, the quickstart
    /// provider and the demo tenant come up in the background: wait on their conditions).
    pub async fn start(mut args: DevArgs) -> anyhow::Result<Self> {
        // Absolute once, here: every path below is handed to children that run elsewhere (a
        // `--provider` crate runs in its own directory).
        args.state_dir = std::path::absolute(&args.state_dir)
            .with_context(|| format!("the state directory {}", args.state_dir.display()))?;
        if let Some(file) = &args.token_file {
            args.token_file =
                Some(std::path::absolute(file).with_context(|| format!("the token file {}", file.display()))?);
        }
        // Owner-only: it holds every credential of the platform (faros_embedded_kcp::state_dir).
        faros_embedded_kcp::state_dir::secure(&args.state_dir)?;
        // Before anything in it changes: a second run on a busy directory leaves the first intact.
        let lock = lock::StateLock::acquire(&args.state_dir)?;
        // What announced the last run is stale until this one is ready (`run` writes them anew).
        for stale in [HUB_URL_FILE, KCP_URL_FILE] {
            match std::fs::remove_file(args.state_dir.join(stale)) {
                Err(e) if e.kind() != std::io::ErrorKind::NotFound => {
                    return Err(e).with_context(|| format!("removing the last run's {stale}"));
                }
                _ => {}
            }
        }
        let token_file = args.token_file();
        let dev_user = tokens::ensure_dev_user(&args.state_dir, &token_file)?;
        // The components' own users in a file only kcp reads (the hub must not take their tokens
        // from callers), written before kcp starts so kcp reads it with the rest.
        let identities = crate::identities::ensure(&args.state_dir)?;
        crate::identities::unshare(&token_file, &identities)?;

        let mut config = Config::new(&args.state_dir);
        config.listen = args.listen();
        config.token_file = Some(token_file.clone());
        config.extra_token_files = vec![identities.token_file.clone()];
        config.max_body_bytes = args.kcp_max_body_bytes;
        config.history_capacity = args.kcp_watch_history;
        config.group_commit = !args.kcp_no_group_commit;
        // One issuer for kcp and the hub: a user's token works with kubectl and in the portal alike.
        let oidc = crate::oidc::settings(&args.oidc)?;
        config.oidc = oidc.clone();
        // As fast as kcp: no pause between workspace phases (the embedded kcp's own tests keep one).
        config.phase_delay = std::time::Duration::ZERO;
        let kcp = Server::start(config).await.context("starting the embedded kcp")?;
        let kubeconfig_path = args.state_dir.join("admin.kubeconfig");
        faros_embedded_kcp::server::write_private(&kubeconfig_path, kcp.admin_kubeconfig().as_bytes())
            .with_context(|| format!("writing {}", kubeconfig_path.display()))?;
        let admin = kcp.admin_config("root").await.context("loading the admin kubeconfig")?;
        let ca_pem = kcp.ca_pem().to_string();
        let (stop, stop_rx) = watch::channel(false);

        // The hub API, on the same CA as kcp so one kubeconfig CA works for both.
        let hub_listener = tokio::net::TcpListener::bind(SocketAddr::new(args.kcp_bind_address, args.hub_port))
            .await
            .with_context(|| format!("binding the hub API to port {}", args.hub_port))?;
        let hub_url = format!("https://{}", hub_listener.local_addr()?);
        // Each component on its own kcp user, not kcp's admin (docs/install.md#kcp-identities): the
        // admin grants them what they use, here on every start, as `faros grant` does for an
        // installed platform.
        let admin_factory =
            faros_core::client::ClientFactory::new(admin.clone()).context("a kcp client for the grants")?;
        let hub_kube = hub_identity(&kcp, &admin_factory, &args.state_dir, &identities.hub).await?;
        let mut hub_config = faros_hub_api::Config::new(hub_kube);
        hub_config.tls = Some(faros_hub_api::Tls::Config(kcp.tls_config()));
        hub_config.signing_key_file = Some(args.state_dir.join("hub-signing-key.json"));
        hub_config.token_file = Some(token_file.clone());
        hub_config.tenancy.public_url = Some(hub_url.clone());
        hub_config.tenancy.ca_pem = Some(ca_pem.clone());
        // Every provider of `faros dev` (quickstart, `--provider`) listens on this machine.
        hub_config.upstreams.allow = faros_hub_api::proxy::UpstreamPolicy::loopback();
        hub_config.session.ttl = std::time::Duration::from_secs(args.session_ttl);
        hub_config.oidc = oidc;
        let hub = faros_hub_api::Hub::new(hub_config).context("configuring the hub API")?;
        let tenancy = hub.state().tenancy.clone();
        let hub_state = hub.state().clone();
        // Before the first request can arrive: tenant routes wait for the demo tenant and
        // quickstart, not only for the hub's own start-up ([`hold_until_ready`] updates and ends it).
        hub_state
            .tree
            .hold("starting: faros dev is setting up its demo tenant and quickstart");
        let hub = tokio::spawn(hub.serve(hub_listener, stopped(stop_rx.clone())));
        faros_embedded_kcp::server::write_private(&args.state_dir.join("ca.crt"), ca_pem.as_bytes())
            .context("writing ca.crt")?;

        // The reconciler writes provider kubeconfigs that reach kcp through the hub's pass-through,
        // and grants the hub's user its roles in the workspaces it makes.
        let reconciler_kube =
            reconciler_identity(&kcp, &admin_factory, &args.state_dir, &identities.reconciler).await?;
        let mut reconciler_config = faros_hub_reconciler::Config::new(reconciler_kube);
        reconciler_config.hub_user = Some(faros_hub_reconciler::identity::hub::DEFAULT_USER.to_string());
        reconciler_config.hub_url = Some(hub_url.clone());
        reconciler_config.ca_pem = Some(ca_pem.clone());
        // One reconciler per state directory: a stable identity lets a restarted (or killed) `faros
        // dev` renew its own Lease at once instead of waiting out the previous process's.
        reconciler_config.lease.identity = DEV_LEASE_IDENTITY.to_string();
        let reconciler = tokio::spawn(faros_hub_reconciler::run(reconciler_config, stopped(stop_rx.clone())));

        let (provider, quickstart) = if args.no_quickstart {
            (None, None)
        } else {
            let listener = tokio::net::TcpListener::bind(SocketAddr::new(args.kcp_bind_address, args.quickstart_port))
                .await
                .with_context(|| format!("binding the quickstart backend to port {}", args.quickstart_port))?;
            let addr = listener.local_addr()?;
            let dev = quickstart::Dev {
                admin: admin.clone(),
                state_dir: args.state_dir.clone(),
                hub_url: hub_url.clone(),
                ca_pem: ca_pem.clone(),
                listener,
            };
            (Some(tokio::spawn(quickstart::run(dev, stop_rx.clone()))), Some(addr))
        };

        let mut external = Vec::new();
        for dir in &args.providers {
            // A port of its own, kept across restarts of the provider's process.
            let port = std::net::TcpListener::bind(SocketAddr::new(args.kcp_bind_address, 0))
                .and_then(|l| l.local_addr())
                .context("picking a port for a --provider backend")?;
            external.push(external::resolve(dir, port)?);
        }
        let externals = external
            .iter()
            .map(|ext| {
                let dev = external::Dev {
                    admin: admin.clone(),
                    state_dir: args.state_dir.clone(),
                    hub_url: hub_url.clone(),
                };
                tokio::spawn(external::run(ext.clone(), dev, stop_rx.clone()))
            })
            .collect();

        let (tenant_done, tenant_ready) = watch::channel(false);
        let tenant = tokio::spawn(tenant::seed(
            tenancy,
            dev_user.name.clone(),
            tenant_done,
            stop_rx.clone(),
        ));
        let readiness = Readiness {
            hub_state,
            tenant_ready,
            quickstart: quickstart.map(|_| faros_provider_quickstart::PROVIDER),
            external: external.iter().map(|e| e.name.clone()).collect(),
        };
        let hold = tokio::spawn(hold_until_ready(readiness.clone(), stop_rx));

        Ok(Self {
            kcp,
            admin,
            hub_url,
            ca_pem,
            state_dir: args.state_dir.clone(),
            token_file,
            dev_user,
            quickstart,
            external,
            readiness,
            stop,
            hub,
            reconciler,
            provider,
            externals,
            tenant,
            hold,
            lock,
        })
    }

    /// What the README's tenant flow still waits for; empty once it works: the hub serves (tree
    /// bootstrapped, catalog synced), the demo tenant exists, and quickstart (when it runs) is
    /// Ready. Until then the hub answers tenant routes `503` with `Retry-After`.
    pub fn pending(&self) -> Vec<String> {
        self.readiness.core()
    }

    /// The `--provider` crates that are not Ready (yet): name and why.
    pub fn external_pending(&self) -> Vec<(String, String)> {
        self.readiness.external()
    }

    /// Waits until [`Stack::pending`] is empty, or fails after `timeout` naming what is missing.
    pub async fn wait_ready(&self, timeout: std::time::Duration) -> anyhow::Result<()> {
        let deadline = tokio::time::Instant::now() + timeout;
        loop {
            let pending = self.pending();
            if pending.is_empty() {
                return Ok(());
            }
            if tokio::time::Instant::now() >= deadline {
                anyhow::bail!(
                    "faros dev did not become ready within {timeout:?}; waiting for: {}",
                    pending.join(", ")
                );
            }
            // In-process state only: a short poll costs nothing and needs no wiring into every component.
            tokio::time::sleep(READY_POLL).await;
        }
    }

    /// Stops every component (provider first, kcp last) and waits for them.
    pub async fn stop(self) {
        let _ = self.stop.send(true);
        self.tenant.abort();
        self.hold.abort();
        if let Some(p) = self.provider {
            log_end(
                "quickstart provider",
                p.await.map_err(anyhow::Error::from).and_then(|r| r),
            );
        }
        for p in self.externals {
            log_end("provider", p.await.map_err(anyhow::Error::from).and_then(|r| r));
        }
        log_end(
            "hub reconciler",
            self.reconciler
                .await
                .map_err(anyhow::Error::from)
                .and_then(|r| r.map_err(Into::into)),
        );
        log_end(
            "hub API",
            self.hub
                .await
                .map_err(anyhow::Error::from)
                .and_then(|r| r.map_err(Into::into)),
        );
        self.kcp.shutdown().await;
        // What announced this run is stale now (the next run writes them once it is ready); removed
        // while the lock is held, so a run that starts meanwhile never loses its own.
        for announced in [HUB_URL_FILE, KCP_URL_FILE] {
            match std::fs::remove_file(self.state_dir.join(announced)) {
                Err(e) if e.kind() != std::io::ErrorKind::NotFound => {
                    tracing::warn!(file = announced, error = %e, "could not remove this run's announcement");
                }
                _ => {}
            }
        }
        drop(self.lock);
    }
}

/// Written once the stack is ready: the hub's URL (scripts and tests wait for it).
pub const HUB_URL_FILE: &str = "hub.url";
/// Written once the stack is ready: the embedded kcp's URL.
pub const KCP_URL_FILE: &str = "kcp.url";
/// The MCP client configuration for the dev user (with its token, so owner-only like the token).
pub const MCP_CLIENT_CONFIG_FILE: &str = "mcp-client.json";

pub async fn run(args: DevArgs) -> anyhow::Result<()> {
    let no_quickstart = args.no_quickstart;
    let stack = Stack::start(args).await?;
    // Announce (banner, hub.url) only once the README's tenant flow works.
    if let Err(e) = stack.wait_ready(READY_TIMEOUT).await {
        stack.stop().await;
        return Err(e);
    }
    // The GitOps registrar's kubeconfig is in place before hub.url announces the run.
    if let Err(e) = registrar::write_kubeconfig(&stack.admin, &stack.hub_url, &stack.state_dir, READY_TIMEOUT).await {
        stack.stop().await;
        return Err(e);
    }
    // The hold ends with readiness: the flow works once the banner is out, without a retry.
    while stack.readiness.hub_state.tree.held().is_some() {
        tokio::time::sleep(READY_POLL).await;
    }
    let write = |name: &str, text: &str| {
        faros_embedded_kcp::server::write_private(&stack.state_dir.join(name), text.as_bytes())
            .with_context(|| format!("writing {name}"))
    };
    write(KCP_URL_FILE, &stack.kcp.url())?;
    write(HUB_URL_FILE, &stack.hub_url)?;
    let kubeconfig = display(&stack.state_dir.join("admin.kubeconfig"));
    let mcp_url = format!(
        "{}{}",
        stack.hub_url,
        faros_core::names::mcp_path(tenant::DEMO_ORG, tenant::DEMO_WORKSPACE)
    );

    // Printed on stdout (not the log) so scripts and people can find things.
    println!("faros dev is running");
    println!("  embedded kcp:      {}/clusters/root", stack.kcp.url());
    println!("  hub API:           {}", stack.hub_url);
    println!("  admin kubeconfig:  {kubeconfig}");
    println!("  try:               KUBECONFIG={kubeconfig} kubectl get namespaces");
    println!(
        "  GitOps kubeconfig: {} (Providers only)",
        display(&stack.state_dir.join(registrar::KUBECONFIG_FILE))
    );
    if let Some(addr) = stack.quickstart.filter(|_| !no_quickstart) {
        println!("  quickstart:        provider `quickstart` (root:faros:providers:quickstart), backend on {addr}");
    }
    let waiting = stack.external_pending();
    for ext in &stack.external {
        // `--provider` crates are not waited for: the author may not have built one yet.
        let state = if waiting.iter().any(|(name, _)| *name == ext.name) {
            "not Ready yet (see the log)"
        } else {
            "Ready"
        };
        println!(
            "  provider:          `{}` ({}), backend on {}, binary {}, {state}",
            ext.name,
            faros_core::names::provider_workspace_path(&ext.name),
            ext.addr,
            ext.bin.display()
        );
    }
    // Credentials stay in their owner-only files: a banner ends up in terminals, logs and CI output.
    println!(
        "  dev user:          {} (token in {})",
        stack.dev_user.name,
        display(&stack.dev_user.token_path)
    );
    println!(
        "  tenant:            organization `{}`, workspace `{}` (dev user is admin); more users: edit {}",
        tenant::DEMO_ORG,
        tenant::DEMO_WORKSPACE,
        display(&stack.token_file)
    );
    let mcp_config = stack.state_dir.join(MCP_CLIENT_CONFIG_FILE);
    faros_embedded_kcp::server::write_private(
        &mcp_config,
        tenant::mcp_client_config(&mcp_url, &stack.dev_user.token).as_bytes(),
    )
    .with_context(|| format!("writing {}", mcp_config.display()))?;
    println!("  MCP endpoint:      {mcp_url}");
    println!(
        "  MCP client config: {} (it holds the dev user's token)",
        display(&mcp_config)
    );
    println!("  state directory:   {}", display(&stack.state_dir));
    println!("Press Ctrl-C to stop.");

    tokio::select! {
        () = faros_core::telemetry::shutdown_signal() => {}
        () = report_external(&stack) => faros_core::telemetry::shutdown_signal().await,
    }
    stack.stop().await;
    Ok(())
}

/// Logs each `--provider` crate once it is Ready, and every [`EXTERNAL_REMINDER`] which ones are
/// still awaited; returns once all are Ready.
async fn report_external(stack: &Stack) {
    let mut waiting = stack.external_pending();
    let mut reminded = tokio::time::Instant::now();
    while !waiting.is_empty() {
        tokio::time::sleep(std::time::Duration::from_millis(250)).await;
        let now = stack.external_pending();
        for (name, _) in &waiting {
            if !now.iter().any(|(n, _)| n == name) {
                tracing::info!(provider = %name, "provider is Ready");
            }
        }
        if !now.is_empty() && reminded.elapsed() >= EXTERNAL_REMINDER {
            let list: Vec<String> = now.iter().map(|(n, why)| format!("{n} ({why})")).collect();
            tracing::warn!(waiting = %list.join(", "), "still waiting for --provider crates");
            reminded = tokio::time::Instant::now();
        }
        waiting = now;
    }
}

fn display(path: &Path) -> String {
    std::fs::canonicalize(path)
        .unwrap_or(path.to_path_buf())
        .display()
        .to_string()
}

fn log_end(component: &str, result: anyhow::Result<()>) {
    if let Err(e) = result {
        tracing::warn!(component, error = format!("{e:#}"), "stopped with an error");
    }
}
