//! Where the proxy suite's one-connection rounds run: wrk on one CPU, the proxies and the upstream
//! on another, for nginx as for the hub.
//!
//! Unpinned, one connection's p50 moved by up to ±20 µs between two runs seconds apart, as the
//! scheduler put the proxy's and the upstream's threads on the same CPU or on different ones (a
//! wake-up across CPUs costs an interrupt; one on the same CPU, a context switch): more than the
//! difference judged. Pinned, every path has the same placement.
//!
//! The CPUs are the first two this process may run on (`Cpus_allowed_list`, which a container's
//! cpuset narrows); with fewer, or where the kernel refuses a change of affinity, the rounds run
//! unpinned and the suite says why. Affinities are restored when the [`Placement`] is dropped.

use std::process::Command;

/// The processes pinned and the CPUs chosen.
pub(super) struct Placement {
    /// wrk's CPU (`taskset -c` list syntax).
    pub(super) client: String,
    /// The proxies' and the upstream's CPU.
    pub(super) servers: String,
    /// Each process pinned, with the affinity mask it had.
    pinned: Vec<(u32, String)>,
}

#[derive(Debug, thiserror::Error)]
pub(super) enum PlacementError {
    #[error("this process may run on {0} CPU(s); two are needed to keep wrk apart")]
    TooFewCpus(usize),
    #[error("reading the CPUs this process may run on: {0}")]
    Allowed(String),
    #[error("taskset {args}: {message}")]
    Taskset { args: String, message: String },
}

/// The CPUs of a `Cpus_allowed_list` value ("0-3,8,10-11"), in order.
fn parse_cpu_list(list: &str) -> Option<Vec<u32>> {
    let mut cpus = Vec::new();
    for part in list.trim().split(',').filter(|p| !p.is_empty()) {
        match part.split_once('-') {
            Some((a, b)) => {
                let (a, b): (u32, u32) = (a.parse().ok()?, b.parse().ok()?);
                if a > b {
                    return None;
                }
                cpus.extend(a..=b);
            }
            None => cpus.push(part.parse().ok()?),
        }
    }
    Some(cpus)
}

fn allowed_cpus() -> Result<Vec<u32>, PlacementError> {
    let status = std::fs::read_to_string("/proc/self/status").map_err(|e| PlacementError::Allowed(e.to_string()))?;
    status
        .lines()
        .find_map(|l| l.strip_prefix("Cpus_allowed_list:"))
        .and_then(parse_cpu_list)
        .ok_or_else(|| PlacementError::Allowed("no Cpus_allowed_list in /proc/self/status".into()))
}

fn taskset(args: &[&str]) -> Result<String, PlacementError> {
    let failed = |message: String| PlacementError::Taskset {
        args: args.join(" "),
        message,
    };
    let out = Command::new("taskset")
        .args(args)
        .output()
        .map_err(|e| failed(format!("{e} (taskset is util-linux's)")))?;
    if !out.status.success() {
        return Err(failed(String::from_utf8_lossy(&out.stderr).trim().to_string()));
    }
    Ok(String::from_utf8_lossy(&out.stdout).to_string())
}

impl Placement {
    /// Pins every thread of `pids` to the servers' CPU.
    pub(super) fn pin(pids: &[u32]) -> Result<Self, PlacementError> {
        let cpus = allowed_cpus()?;
        let [client, servers, ..] = cpus[..] else {
            return Err(PlacementError::TooFewCpus(cpus.len()));
        };
        let mut placement = Self {
            client: client.to_string(),
            servers: servers.to_string(),
            pinned: Vec::new(),
        };
        for &pid in pids {
            let pid_arg = pid.to_string();
            // "pid 42's current affinity mask: 3"
            let shown = taskset(&["-p", &pid_arg])?;
            let mask = shown.rsplit(':').next().unwrap_or_default().trim().to_string();
            taskset(&["-a", "-p", "-c", &placement.servers, &pid_arg])?;
            placement.pinned.push((pid, mask));
        }
        Ok(placement)
    }
}

impl Drop for Placement {
    fn drop(&mut self) {
        for (pid, mask) in &self.pinned {
            let _ = taskset(&["-a", "-p", mask, &pid.to_string()]);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cpu_lists() {
        let cases: &[(&str, Option<&[u32]>)] = &[
            ("0-1", Some(&[0, 1])),
            ("0", Some(&[0])),
            ("\t2-3,8,10-11\n", Some(&[2, 3, 8, 10, 11])),
            ("", Some(&[])),
            ("3-1", None),
            ("a", None),
            ("0-", None),
        ];
        for (list, want) in cases {
            assert_eq!(parse_cpu_list(list).as_deref(), *want, "{list:?}");
        }
    }
}
