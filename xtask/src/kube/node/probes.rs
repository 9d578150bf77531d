//! Readiness, liveness and startup probes: what a Probe checks (IO-free from the container spec),
//! the check run inside the Pod's network namespace (`nsenter --net` and curl for HTTP, as the
//! kubelet dials the Pod's own address), and the thresholds that turn results into states.

use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use k8s_openapi::api::core::v1::{Container, Probe};
use k8s_openapi::apimachinery::pkg::util::intstr::IntOrString;

/// One probe's check.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) enum Check {
    Http { url: String },
    Tcp { port: u16 },
    Exec { command: Vec<String> },
}

/// A probe with its timing.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct Spec {
    pub check: Check,
    pub initial_delay: Duration,
    pub period: Duration,
    pub timeout: Duration,
    pub success_threshold: u32,
    pub failure_threshold: u32,
}

fn port(c: &Container, p: &IntOrString) -> Option<u16> {
    match p {
        IntOrString::Int(n) => u16::try_from(*n).ok(),
        IntOrString::String(name) => c
            .ports
            .iter()
            .flatten()
            .find(|p| p.name.as_deref() == Some(name))
            .and_then(|p| u16::try_from(p.container_port).ok()),
    }
}

/// The probe of `c`, or why the node cannot run it.
pub(crate) fn spec(c: &Container, probe: &Probe) -> Result<Spec, String> {
    let secs = |v: Option<i32>, default: u64| Duration::from_secs(v.map_or(default, |v| v.max(0) as u64));
    let check = if let Some(h) = &probe.http_get {
        let port = port(c, &h.port).ok_or_else(|| format!("httpGet port {:?} is not a container port", h.port))?;
        let scheme = h.scheme.as_deref().unwrap_or("HTTP").to_ascii_lowercase();
        let path = h.path.as_deref().unwrap_or("/");
        Check::Http {
            url: format!("{scheme}://127.0.0.1:{port}{path}"),
        }
    } else if let Some(t) = &probe.tcp_socket {
        Check::Tcp {
            port: port(c, &t.port).ok_or_else(|| format!("tcpSocket port {:?} is not a container port", t.port))?,
        }
    } else if let Some(e) = &probe.exec {
        Check::Exec {
            command: e.command.clone().unwrap_or_default(),
        }
    } else {
        return Err("only httpGet, tcpSocket and exec probes are emulated".into());
    };
    Ok(Spec {
        check,
        initial_delay: secs(probe.initial_delay_seconds, 0),
        period: secs(probe.period_seconds, 10),
        timeout: secs(probe.timeout_seconds, 1),
        success_threshold: probe.success_threshold.map_or(1, |v| v.max(1) as u32),
        failure_threshold: probe.failure_threshold.map_or(3, |v| v.max(1) as u32),
    })
}

/// Runs `check` in the network (and, for exec, mount) namespace of process `pid`.
pub(crate) fn run(pid: u32, check: &Check, timeout: Duration) -> bool {
    let mut cmd = Command::new("nsenter");
    cmd.arg("--target").arg(pid.to_string()).arg("--net");
    let secs = format!("{}", timeout.as_secs_f32().max(1.0));
    match check {
        Check::Http { url } => {
            // The kubelet does not verify a probe's certificate; 200-399 is success.
            cmd.args([
                "--",
                "curl",
                "-sk",
                "-o",
                "/dev/null",
                "-w",
                "%{http_code}",
                "--max-time",
                &secs,
                url,
            ]);
            let Ok(out) = cmd.stdin(Stdio::null()).stderr(Stdio::null()).output() else {
                return false;
            };
            let code: u16 = String::from_utf8_lossy(&out.stdout).trim().parse().unwrap_or(0);
            (200..400).contains(&code)
        }
        Check::Tcp { port } => {
            cmd.args(["--", "bash", "-c", &format!("exec 3<>/dev/tcp/127.0.0.1/{port}")]);
            cmd.stdin(Stdio::null())
                .stdout(Stdio::null())
                .stderr(Stdio::null())
                .status()
                .is_ok_and(|s| s.success())
        }
        Check::Exec { command } => {
            cmd.arg("--mount").arg("--").args(command);
            cmd.stdin(Stdio::null())
                .stdout(Stdio::null())
                .stderr(Stdio::null())
                .status()
                .is_ok_and(|s| s.success())
        }
    }
}

/// A probe's state across its results.
#[derive(Clone, Debug)]
pub(crate) struct State {
    pub spec: Spec,
    pub next: Instant,
    successes: u32,
    failures: u32,
    /// The verdict: passed its success threshold (readiness, startup) / not yet failed past its
    /// failure threshold (liveness).
    pub passing: bool,
}

/// What a result changed.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Verdict {
    Unchanged,
    Passed,
    Failed,
}

impl State {
    /// A probe of a container started at `started`; `passing` is the state before any result
    /// (liveness: alive; readiness and startup: not yet).
    pub fn new(spec: Spec, started: Instant, passing: bool) -> Self {
        Self {
            next: started + spec.initial_delay,
            spec,
            successes: 0,
            failures: 0,
            passing,
        }
    }

    /// Records one result (and schedules the next run).
    pub fn record(&mut self, ok: bool, now: Instant) -> Verdict {
        self.next = now + self.spec.period;
        if ok {
            self.failures = 0;
            self.successes += 1;
            if !self.passing && self.successes >= self.spec.success_threshold {
                self.passing = true;
                return Verdict::Passed;
            }
        } else {
            self.successes = 0;
            self.failures += 1;
            if self.passing && self.failures >= self.spec.failure_threshold {
                self.passing = false;
                return Verdict::Failed;
            }
            if !self.passing && self.failures >= self.spec.failure_threshold {
                return Verdict::Failed;
            }
        }
        Verdict::Unchanged
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn container() -> Container {
        serde_saphyr::from_str("{name: c, ports: [{name: https, containerPort: 8443}, {name: m, containerPort: 9090}]}")
            .unwrap()
    }

    #[test]
    fn probes_become_checks() {
        for (probe, want) in [
            (
                "{httpGet: {path: /readyz, port: https, scheme: HTTPS}, periodSeconds: 5}",
                Ok((
                    Check::Http {
                        url: "https://127.0.0.1:8443/readyz".into(),
                    },
                    5,
                    3,
                )),
            ),
            (
                "{httpGet: {port: 9090}, failureThreshold: 6}",
                Ok((
                    Check::Http {
                        url: "http://127.0.0.1:9090/".into(),
                    },
                    10,
                    6,
                )),
            ),
            ("{tcpSocket: {port: m}}", Ok((Check::Tcp { port: 9090 }, 10, 3))),
            (
                "{exec: {command: [true]}}",
                Ok((
                    Check::Exec {
                        command: vec!["true".into()],
                    },
                    10,
                    3,
                )),
            ),
            ("{httpGet: {port: nope}}", Err("not a container port")),
            ("{grpc: {port: 1}}", Err("only httpGet, tcpSocket and exec")),
        ] {
            let probe: Probe = serde_saphyr::from_str(probe).unwrap();
            match (spec(&container(), &probe), want) {
                (Ok(s), Ok((check, period, failures))) => {
                    assert_eq!(s.check, check);
                    assert_eq!(s.period, Duration::from_secs(period));
                    assert_eq!(s.failure_threshold, failures);
                }
                (Err(e), Err(w)) => assert!(e.contains(w), "{e}"),
                (got, want) => panic!("got {got:?}, want {want:?}"),
            }
        }
    }

    #[test]
    fn thresholds_turn_results_into_verdicts() {
        let probe: Probe =
            serde_saphyr::from_str("{tcpSocket: {port: 1}, successThreshold: 2, failureThreshold: 2}").unwrap();
        let now = Instant::now();
        // Readiness: two successes to pass, two failures to fail again.
        let mut ready = State::new(spec(&container(), &probe).unwrap(), now, false);
        let got: Vec<Verdict> = [true, true, true, false, false, true]
            .iter()
            .map(|ok| ready.record(*ok, now))
            .collect();
        assert_eq!(
            got,
            [
                Verdict::Unchanged,
                Verdict::Passed,
                Verdict::Unchanged,
                Verdict::Unchanged,
                Verdict::Failed,
                Verdict::Unchanged
            ]
        );
        // Liveness starts alive: a single failure is tolerated, the second kills.
        let mut live = State::new(spec(&container(), &probe).unwrap(), now, true);
        assert_eq!(live.record(false, now), Verdict::Unchanged);
        assert_eq!(live.record(false, now), Verdict::Failed);
    }
}
