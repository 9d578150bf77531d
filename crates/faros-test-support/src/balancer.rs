//! A round-robin load balancer on 127.0.0.1 in front of several HTTPS replicas of one server:
//! Debian's nginx ([`crate::tools::nginx`]) as a child process, for tests of a replicated service.
//!
//! nginx terminates TLS with the replicas' own certificate and re-encrypts to them, verifying
//! them against the test CA, and passes the client's `Host` on: a replica sees the same URL,
//! cookies, `Origin` and bearer a client sent, only over another TCP connection (as behind any
//! ingress). It opens a new upstream connection per request (no upstream keep-alive) and, on a
//! connection error or timeout before a request was sent, retries the next replica
//! (`proxy_next_upstream error timeout`; a request nginx already sent is never replayed, so a
//! non-idempotent one fails rather than runs twice). Replicas are never marked down
//! (`max_fails=0`): with one replica restarting and a second one's error counted against it, passive
//! health would leave nginx "no live upstreams" to answer 502 with; a refused connection on
//! 127.0.0.1 costs microseconds, so every request simply tries the replicas in turn. Responses are streamed (no buffering), so SSE and
//! `watch` pass through.
//!
//! nginx (open source) has no active health checks, so the test plays the part of Kubernetes'
//! endpoints controller: [`Balancer::set_down`] takes a replica out of rotation (before it is
//! stopped) and puts it back (once its `/readyz` answers), by rewriting the config and reloading
//! nginx (SIGHUP: new workers take the new config, old ones finish their requests), and waits
//! until the old workers have been told to quit (their idle client connections closed).

use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::time::Duration;

use crate::child::{ChildError, ChildProcess, Spec};
use crate::eventually::{TimedOut, eventually};
use crate::tools::{self, Missing};

/// How long [`Balancer::start`] waits for nginx to listen.
const START_TIMEOUT: Duration = Duration::from_secs(10);

#[derive(Debug, thiserror::Error)]
pub enum BalancerError {
    #[error(transparent)]
    Missing(#[from] Missing),
    #[error("writing the nginx config {path}: {source}")]
    Write { path: String, source: std::io::Error },
    #[error(transparent)]
    Child(#[from] ChildError),
    #[error("nginx exited with {status} before listening; its log ends:\n{log}")]
    Exited {
        status: std::process::ExitStatus,
        log: String,
    },
    #[error("{source}; nginx's log ends:\n{log}")]
    Timeout { source: TimedOut, log: String },
}

/// What to balance.
#[derive(Clone, Debug)]
pub struct Settings {
    /// Where the balancer listens (HTTPS).
    pub listen: SocketAddr,
    /// The replicas (HTTPS).
    pub upstreams: Vec<SocketAddr>,
    /// Certificate and key the balancer serves: the replicas' own, so clients trust it alike.
    pub cert: PathBuf,
    pub key: PathBuf,
    /// CA the replicas' certificates chain to.
    pub upstream_ca: PathBuf,
    /// Name the replicas' certificates are checked for (nginx matches DNS names, not IP SANs).
    pub upstream_name: String,
}

/// nginx's configuration for `settings` with the upstreams in `down` out of rotation, with its
/// files under `dir`. IO-free.
pub fn nginx_config(settings: &Settings, down: &[SocketAddr], dir: &Path) -> String {
    let d = dir.display();
    let servers: String = settings
        .upstreams
        .iter()
        .map(|u| {
            let state = if down.contains(u) { " down" } else { "" };
            format!("    server {u} max_fails=0{state};\n")
        })
        .collect();
    format!(
        "worker_processes 1;\n\
         pid {d}/nginx.pid;\n\
         error_log stderr warn;\n\
         events {{ worker_connections 1024; }}\n\
         http {{\n\
         \x20 access_log off;\n\
         \x20 client_body_temp_path {d}/body;\n\
         \x20 proxy_temp_path {d}/proxy;\n\
         \x20 fastcgi_temp_path {d}/fastcgi;\n\
         \x20 uwsgi_temp_path {d}/uwsgi;\n\
         \x20 scgi_temp_path {d}/scgi;\n\
         \x20 client_max_body_size 32m;\n\
         \x20 upstream replicas {{\n{servers}\x20 }}\n\
         \x20 server {{\n\
         \x20   listen {listen} ssl;\n\
         \x20   ssl_certificate {cert};\n\
         \x20   ssl_certificate_key {key};\n\
         \x20   location / {{\n\
         \x20     proxy_pass https://replicas;\n\
         \x20     proxy_ssl_trusted_certificate {ca};\n\
         \x20     proxy_ssl_verify on;\n\
         \x20     proxy_ssl_server_name on;\n\
         \x20     proxy_ssl_name {name};\n\
         \x20     proxy_http_version 1.1;\n\
         \x20     proxy_set_header Host $http_host;\n\
         \x20     proxy_set_header Connection \"\";\n\
         \x20     proxy_buffering off;\n\
         \x20     proxy_request_buffering off;\n\
         \x20     proxy_read_timeout 300s;\n\
         \x20     proxy_next_upstream error timeout;\n\
         \x20     proxy_next_upstream_tries 0;\n\
         \x20   }}\n\
         \x20 }}\n\
         }}\n",
        listen = settings.listen,
        cert = settings.cert.display(),
        key = settings.key.display(),
        ca = settings.upstream_ca.display(),
        name = settings.upstream_name,
    )
}

/// nginx balancing the replicas; stopped when dropped.
pub struct Balancer {
    /// `https://<listen>`.
    pub url: String,
    settings: Settings,
    dir: PathBuf,
    process: ChildProcess,
}

impl Balancer {
    /// Writes `dir/nginx.conf`, starts nginx with it and waits until it accepts connections.
    pub async fn start(settings: &Settings, dir: &Path) -> Result<Self, BalancerError> {
        let nginx = tools::nginx()?;
        let conf = dir.join("nginx.conf");
        std::fs::write(&conf, nginx_config(settings, &[], dir)).map_err(|source| BalancerError::Write {
            path: conf.display().to_string(),
            source,
        })?;
        let mut process = Spec::new(nginx, dir.join("nginx.log"))
            .arg("-p")
            .arg(dir)
            .arg("-c")
            .arg(&conf)
            .arg("-g")
            .arg("daemon off;")
            .spawn()?;
        let listen = settings.listen;
        let waited = eventually("nginx to accept connections", START_TIMEOUT, || async move {
            Ok(tokio::net::TcpStream::connect(listen).await.ok().map(drop))
        })
        .await;
        if let Err(source) = waited {
            // Most often nginx could not start (a port taken, a bad file): say so with its log.
            if let Some(status) = process.exited()? {
                return Err(BalancerError::Exited {
                    status,
                    log: process.log_tail(),
                });
            }
            return Err(BalancerError::Timeout {
                source,
                log: process.log_tail(),
            });
        }
        Ok(Self {
            url: format!("https://{listen}"),
            settings: settings.clone(),
            dir: dir.to_path_buf(),
            process,
        })
    }

    /// Takes the upstreams in `down` out of rotation and puts every other one in, by rewriting
    /// the config and reloading nginx, and returns once the reload has taken effect (see
    /// [`reloaded`]). Requests nginx is handling finish on the old config.
    pub async fn set_down(&self, down: &[SocketAddr]) -> Result<(), BalancerError> {
        let conf = self.dir.join("nginx.conf");
        std::fs::write(&conf, nginx_config(&self.settings, down, &self.dir)).map_err(|source| {
            BalancerError::Write {
                path: conf.display().to_string(),
                source,
            }
        })?;
        let Some(master) = self.process.pid() else {
            return Ok(());
        };
        let before = workers(master);
        let _ = std::process::Command::new("kill")
            .arg("-HUP")
            .arg(master.to_string())
            .status();
        eventually("nginx to reload its config", RELOAD_TIMEOUT, || {
            let before = &before;
            async move { Ok(reloaded(before, &workers(master)).then_some(())) }
        })
        .await
        .map_err(|source| BalancerError::Timeout {
            source,
            log: self.process.log_tail(),
        })
    }

    /// The last lines of nginx's log (upstream errors and retries are logged as warnings).
    pub fn log_tail(&self) -> String {
        self.process.log_tail()
    }
}

/// nginx's master stops its workers only when it is stopped itself: killed outright (as a dropped
/// [`ChildProcess`] is), it leaves them serving, orphaned. So the master gets SIGTERM (fast
/// shutdown, workers included) and a bounded wait before the child's own kill.
impl Drop for Balancer {
    fn drop(&mut self) {
        let Some(pid) = self.process.pid() else { return };
        let _ = std::process::Command::new("kill")
            .arg("-TERM")
            .arg(pid.to_string())
            .status();
        let deadline = std::time::Instant::now() + STOP_TIMEOUT;
        while std::time::Instant::now() < deadline {
            if !matches!(self.process.exited(), Ok(None)) {
                return;
            }
            std::thread::sleep(std::time::Duration::from_millis(20));
        }
    }
}

/// How long [`Balancer::set_down`] waits for nginx's reload (a bad config never takes effect).
const RELOAD_TIMEOUT: Duration = Duration::from_secs(10);

/// One of nginx's worker processes: its pid and whether it is shutting down (a worker of an
/// earlier config, finishing its requests).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Worker {
    pub pid: u32,
    pub shutting_down: bool,
}

/// Whether a reload has taken effect, from the workers before it and now: some worker serves and
/// every serving one is new, so every worker of the old config has been told to quit, and such a
/// worker closes its idle client connections at once (it retitles itself "worker process is
/// shutting down" first). nginx's master tells them only after starting the new workers and a
/// pause, so returning at SIGHUP would leave a client's kept-alive connection to close under its
/// next request, a request a client may not replay (an MCP call). IO-free.
pub fn reloaded(before: &[Worker], now: &[Worker]) -> bool {
    let mut serving = now.iter().filter(|w| !w.shutting_down).peekable();
    serving.peek().is_some() && serving.all(|w| !before.iter().any(|b| b.pid == w.pid))
}

/// The worker processes of nginx's master `master`, from `/proc` (its children and their titles).
fn workers(master: u32) -> Vec<Worker> {
    let Ok(entries) = std::fs::read_dir("/proc") else {
        return Vec::new();
    };
    entries
        .filter_map(|e| e.ok()?.file_name().to_str()?.parse::<u32>().ok())
        .filter(|pid| parent(*pid) == Some(master))
        .map(|pid| {
            let title = std::fs::read(format!("/proc/{pid}/cmdline")).unwrap_or_default();
            Worker {
                pid,
                shutting_down: String::from_utf8_lossy(&title).contains("shutting down"),
            }
        })
        .collect()
}

/// A process's parent, from `/proc/<pid>/stat` (the field after the state, which follows the
/// parenthesised command name; the name may itself hold spaces and parentheses).
fn parent(pid: u32) -> Option<u32> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    let (_, rest) = stat.rsplit_once(')')?;
    rest.split_whitespace().nth(1)?.parse().ok()
}

/// How long a dropped balancer's nginx may take to stop its workers and exit.
const STOP_TIMEOUT: std::time::Duration = std::time::Duration::from_secs(5);

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_replica_is_an_upstream_and_retries_never_replay_a_sent_request() {
        let settings = Settings {
            listen: SocketAddr::from(([127, 0, 0, 1], 8440)),
            upstreams: vec![
                SocketAddr::from(([127, 0, 0, 1], 8441)),
                SocketAddr::from(([127, 0, 0, 1], 8442)),
            ],
            cert: "/s/tls.crt".into(),
            key: "/s/tls.key".into(),
            upstream_ca: "/s/ca.crt".into(),
            upstream_name: "localhost".into(),
        };
        let conf = nginx_config(&settings, &[settings.upstreams[1]], Path::new("/run/lb"));
        for line in [
            "server 127.0.0.1:8441 max_fails=0;",
            "server 127.0.0.1:8442 max_fails=0 down;",
            "listen 127.0.0.1:8440 ssl;",
            "proxy_ssl_verify on;",
            "proxy_ssl_name localhost;",
            "proxy_set_header Host $http_host;",
            "proxy_next_upstream error timeout;",
            "pid /run/lb/nginx.pid;",
        ] {
            assert!(conf.contains(line), "{line} missing from:\n{conf}");
        }
        // `non_idempotent` would let nginx send a POST (an MCP call, a heartbeat) twice.
        assert!(!conf.contains("non_idempotent"), "{conf}");
        // Upstream keep-alive would hand a request to a connection a stopping replica closes.
        assert!(!conf.contains("keepalive"), "{conf}");
    }

    #[test]
    fn a_reload_has_taken_effect_once_every_serving_worker_is_new() {
        let serving = |pid| Worker {
            pid,
            shutting_down: false,
        };
        let quitting = |pid| Worker {
            pid,
            shutting_down: true,
        };
        let before = [serving(10)];
        for (now, want, why) in [
            (vec![serving(10)], false, "the signal not handled yet"),
            (
                vec![serving(10), serving(11)],
                false,
                "a new worker, the old one not told to quit",
            ),
            (vec![quitting(10), serving(11)], true, "the old one shutting down"),
            (vec![serving(11)], true, "the old one gone"),
            (vec![quitting(10)], false, "no worker serving"),
            (vec![], false, "no worker at all"),
        ] {
            assert_eq!(reloaded(&before, &now), want, "{why}: {now:?}");
        }
        // A worker still shutting down from an earlier reload is not one to wait for.
        assert!(reloaded(
            &[quitting(9), serving(10)],
            &[quitting(9), quitting(10), serving(11)]
        ));
    }
}
