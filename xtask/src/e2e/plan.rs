//! The steps of a run, as data: commands, files to write, secrets to extract, readiness gates.
//! Plans are built without IO ([`super::kind`], [`super::scenarios`]); [`super::exec`] runs them and
//! `--dry-run` prints them ([`Plan::render`]), so the printed plan is exactly what would run.

use std::fmt;
use std::path::PathBuf;

use crate::images;

/// One command, with extra environment.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct Cmd {
    pub env: Vec<(String, String)>,
    pub program: String,
    pub args: Vec<String>,
}

impl Cmd {
    pub(crate) fn new(program: &str, args: &[&str]) -> Self {
        Self {
            env: Vec::new(),
            program: program.into(),
            args: args.iter().map(|a| (*a).to_string()).collect(),
        }
    }

    pub(crate) fn arg(mut self, arg: impl Into<String>) -> Self {
        self.args.push(arg.into());
        self
    }

    pub(crate) fn args<S: Into<String>>(mut self, args: impl IntoIterator<Item = S>) -> Self {
        self.args.extend(args.into_iter().map(Into::into));
        self
    }

    pub(crate) fn env(mut self, key: &str, value: impl Into<String>) -> Self {
        self.env.push((key.into(), value.into()));
        self
    }
}

impl fmt::Display for Cmd {
    /// As a POSIX shell would need it typed (the images task's quoting).
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for (k, v) in &self.env {
            write!(f, "{k}={} ", images::shell_quote(v))?;
        }
        let step = images::Step {
            program: self.program.clone(),
            args: self.args.clone(),
        };
        write!(f, "{step}")
    }
}

/// A Secret to wrap a rendered kubeconfig in.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct SecretRef {
    pub namespace: String,
    pub name: String,
    pub key: String,
}

/// Something that must become true before the run goes on.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) enum Gate {
    /// Until the command exits 0.
    Command(Cmd),
    /// Until `GET <url>/readyz` answers 200 over TLS trusting `ca`.
    Readyz { url: String, ca: PathBuf },
    /// Until `GET <hub>/api/providers` lists `provider` with `ready: true`.
    ProviderReady {
        hub: String,
        ca: PathBuf,
        /// A token file line's user whose token authenticates the call (read from `tokens`).
        user: String,
        tokens: PathBuf,
        provider: String,
    },
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) enum Action {
    Run(Cmd),
    /// Runs `cmd` unless `list` prints a line equal to `item` (create-or-reuse).
    RunUnlessListed {
        cmd: Cmd,
        list: Cmd,
        item: String,
    },
    /// Writes a file the plan rendered; `private` files (tokens) get mode 0600 and are never printed
    /// outside `--dry-run`, which renders placeholder tokens.
    Write {
        path: PathBuf,
        contents: String,
        private: bool,
    },
    /// Key `key` of Secret `namespace/name`, base64-decoded, into `to` (mode 0600).
    ExtractSecret {
        kubeconfig: PathBuf,
        namespace: String,
        name: String,
        key: String,
        to: PathBuf,
    },
    /// A token kubeconfig for `server`, trusting the CA in file `ca` (extracted earlier), optionally
    /// wrapped in a Secret manifest; the token is the `user`'s in file `tokens`.
    Kubeconfig {
        ca: PathBuf,
        server: String,
        tls_server_name: Option<String>,
        user: String,
        tokens: PathBuf,
        secret: Option<SecretRef>,
        to: PathBuf,
    },
    /// Copies kubeconfig `from` to `to` with every cluster's server moved to `server` (keeping the
    /// URL path) and `tls-server-name` set, for reaching a Service through a host port.
    Reroute {
        from: PathBuf,
        server: String,
        tls_server_name: String,
        to: PathBuf,
    },
    /// Polls `gate` every second for at most `timeout_secs`.
    Wait {
        gate: Gate,
        timeout_secs: u64,
    },
    /// Starts `cmd` in the background, its stdout and stderr into `log`; it runs until the plan
    /// ends (stopped after the teardown), and a gate waiting while it has exited fails at once.
    Spawn {
        name: String,
        cmd: Cmd,
        log: PathBuf,
    },
    /// Runs `cmd` and writes its standard output to `to` (log collection; failures are reported, not fatal).
    Capture {
        cmd: Cmd,
        to: PathBuf,
    },
    /// Tenants on every shard of a sharded kcp, each served by the provider ([`ShardSpread`]).
    ShardSpread(ShardSpread),
}

/// Workspaces created through the hub until every one of `shards` hosts one (kcp places each at
/// random), then the provider enabled in one workspace per shard and a Greeting in each answered
/// by the provider's controller through that shard's virtual workspace.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct ShardSpread {
    pub hub: String,
    /// The front door to kcp (the front-proxy), where the admin reads Workspaces and writes Greetings.
    pub kcp: String,
    pub ca: PathBuf,
    pub tokens: PathBuf,
    /// kcp's admin (a token file user).
    pub admin: String,
    /// The tenant who creates the organization and its workspaces (a token file user).
    pub user: String,
    pub provider: String,
    pub shards: Vec<String>,
    /// Workspaces to create at most before giving up on a shard that never gets one.
    pub max_workspaces: u32,
    pub timeout_secs: u64,
}

/// One logged, timed step.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct Step {
    pub name: String,
    pub actions: Vec<Action>,
}

impl Step {
    pub(crate) fn new(name: &str, actions: Vec<Action>) -> Self {
        Self {
            name: name.into(),
            actions,
        }
    }
}

/// A whole run: the steps, what to collect when one fails, and what to do at the end either way.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub(crate) struct Plan {
    pub steps: Vec<Step>,
    pub on_failure: Vec<Step>,
    pub teardown: Vec<Step>,
    /// Leave the processes [`Action::Spawn`] started running at the end (`--keep`).
    pub keep_processes: bool,
}

impl Plan {
    /// The plan as `--dry-run` prints it: every command, and every file with its contents.
    pub(crate) fn render(&self) -> String {
        let mut out = String::new();
        let sections = [
            ("", &self.steps),
            ("on failure: ", &self.on_failure),
            ("at the end: ", &self.teardown),
        ];
        let mut n = 0;
        for (prefix, steps) in sections {
            for step in steps {
                n += 1;
                out.push_str(&format!("# {n}. {prefix}{}\n", step.name));
                for action in &step.actions {
                    render_action(&mut out, action);
                }
                out.push('\n');
            }
        }
        out
    }
}

fn indented(out: &mut String, text: &str) {
    for line in text.lines() {
        if line.is_empty() {
            out.push('\n');
        } else {
            out.push_str(&format!("    {line}\n"));
        }
    }
}

fn render_action(out: &mut String, action: &Action) {
    match action {
        Action::Run(cmd) => out.push_str(&format!("{cmd}\n")),
        Action::RunUnlessListed { cmd, list, item } => {
            out.push_str(&format!("{cmd}    # unless `{list}` lists {item}\n"));
        }
        Action::Write { path, contents, .. } => {
            out.push_str(&format!("write {}:\n", path.display()));
            indented(out, contents);
        }
        Action::ExtractSecret {
            kubeconfig,
            namespace,
            name,
            key,
            to,
        } => {
            let jsonpath = format!("jsonpath={{.data.{}}}", key.replace('.', "\\."));
            let cmd = Cmd::new("kubectl", &["--kubeconfig"])
                .arg(kubeconfig.display().to_string())
                .args(["-n", namespace, "get", "secret", name, "-o", &jsonpath]);
            out.push_str(&format!("{cmd} | base64 -d > {}\n", to.display()));
        }
        Action::Kubeconfig {
            ca,
            server,
            tls_server_name,
            user,
            secret,
            to,
            ..
        } => {
            let sni = tls_server_name
                .as_ref()
                .map(|n| format!(", tls-server-name {n}"))
                .unwrap_or_default();
            let wrapped = secret
                .as_ref()
                .map(|s| format!(" as Secret {}/{} key {}", s.namespace, s.name, s.key))
                .unwrap_or_default();
            out.push_str(&format!(
                "write {}: kubeconfig for {server}{sni}, CA {}, token of {user}{wrapped}\n",
                to.display(),
                ca.display()
            ));
        }
        Action::Reroute {
            from,
            server,
            tls_server_name,
            to,
        } => out.push_str(&format!(
            "write {}: {} with server {server}, tls-server-name {tls_server_name}\n",
            to.display(),
            from.display()
        )),
        Action::Wait { gate, timeout_secs } => {
            let what = match gate {
                Gate::Command(cmd) => format!("`{cmd}` succeeds"),
                Gate::Readyz { url, ca } => format!("GET {url}/readyz is 200 (CA {})", ca.display()),
                Gate::ProviderReady {
                    hub, provider, user, ..
                } => {
                    format!("GET {hub}/api/providers lists {provider} ready (as {user})")
                }
            };
            out.push_str(&format!("wait up to {timeout_secs}s until {what}\n"));
        }
        Action::Capture { cmd, to } => out.push_str(&format!("{cmd} > {}\n", to.display())),
        Action::ShardSpread(s) => out.push_str(&format!(
            "as {}: an organization and up to {} workspaces through {} until shards {} each host one \
             (kcp's Workspace annotation core.kcp.io/shard, read through {} as {}); {} enabled in one per \
             shard and a Greeting in each answered within {}s\n",
            s.user,
            s.max_workspaces,
            s.hub,
            s.shards.join(", "),
            s.kcp,
            s.admin,
            s.provider,
            s.timeout_secs
        )),
        Action::Spawn { name, cmd, log } => out.push_str(&format!(
            "start {name} in the background (stopped at the end): {cmd} > {} 2>&1\n",
            log.display()
        )),
    }
}
