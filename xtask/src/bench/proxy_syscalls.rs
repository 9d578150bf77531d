//! System calls per proxied request, for the hub's connection threads and for nginx's workers,
//! counted by `strace -c` under a one-connection load: part of the `proxy` suite.
//!
//! A count, not a time: it does not move with the VM's scheduling, so a change that adds or
//! removes a system call on every request (a timer that wakes its own thread, a read that returns
//! `EAGAIN`) shows in one run. strace slows the traced threads many times over, which can change
//! how often a thread finds nothing to do and waits (`epoll_wait`); the two proxies are traced alike.
//! Without strace (or without the right to trace) the row says why and the suite goes on: the
//! figure explains the latency, it is not a target.

use std::collections::BTreeMap;
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use anyhow::{Context, anyhow, bail};

/// One traced run: requests served and the system calls the traced threads made, by name.
#[derive(Debug, Default, PartialEq)]
pub(super) struct Counted {
    pub requests: u64,
    pub calls: BTreeMap<String, u64>,
}

impl Counted {
    /// All the traced threads' system calls over the requests served.
    pub(super) fn per_request(&self) -> f64 {
        self.calls.values().sum::<u64>() as f64 / self.requests.max(1) as f64
    }

    /// `6.0 per request (epoll_wait 2.0, recvfrom 2.0, writev 2.0)`: the calls made at least once
    /// every ten requests, most frequent first.
    pub(super) fn describe(&self) -> String {
        let per = |n: u64| n as f64 / self.requests.max(1) as f64;
        let mut frequent: Vec<(&String, &u64)> = self.calls.iter().filter(|(_, n)| per(**n) >= 0.1).collect();
        frequent.sort_by(|a, b| b.1.cmp(a.1).then(a.0.cmp(b.0)));
        let parts: Vec<String> = frequent
            .iter()
            .map(|(name, n)| format!("{name} {:.1}", per(**n)))
            .collect();
        format!("{:.1} per request ({})", self.per_request(), parts.join(", "))
    }
}

/// The per-syscall rows of `strace -c`'s table (`% time, seconds, usecs/call, calls, [errors],
/// syscall`), without the `total` row.
pub(super) fn parse_summary(text: &str) -> BTreeMap<String, u64> {
    let mut calls = BTreeMap::new();
    for line in text.lines() {
        let fields: Vec<&str> = line.split_whitespace().collect();
        let [pct, _seconds, _usecs, count, .., name] = fields.as_slice() else {
            continue;
        };
        if *name == "total" || pct.parse::<f64>().is_err() {
            continue;
        }
        if let Ok(n) = count.parse::<u64>() {
            *calls.entry((*name).to_string()).or_default() += n;
        }
    }
    calls
}

/// The threads of process `pid` whose name starts with `prefix` (`hub-http-`).
pub(super) fn threads_named(pid: u32, prefix: &str) -> anyhow::Result<Vec<u32>> {
    let mut tids = Vec::new();
    for entry in std::fs::read_dir(format!("/proc/{pid}/task")).with_context(|| format!("process {pid}"))? {
        let entry = entry?;
        let comm = std::fs::read_to_string(entry.path().join("comm")).unwrap_or_default();
        if comm.trim_end().starts_with(prefix)
            && let Some(tid) = entry.file_name().to_str().and_then(|t| t.parse().ok())
        {
            tids.push(tid);
        }
    }
    Ok(tids)
}

/// strace attached to `tids`; stopped (and its table written) on [`Tracer::finish`].
struct Tracer {
    child: Child,
}

impl Drop for Tracer {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

impl Tracer {
    fn attach(tids: &[u32], out: &Path) -> anyhow::Result<Self> {
        let mut command = Command::new("strace");
        command.args(["-c", "-qq", "-o"]).arg(out);
        for t in tids {
            command.arg("-p").arg(t.to_string());
        }
        let child = command
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .context("starting strace (apt-get install -y strace)")?;
        let mut tracer = Self { child };
        // Traced once /proc says so for every thread; strace that exited could not attach.
        let started = Instant::now();
        while !tids.iter().all(|t| traced(*t)) {
            if let Some(status) = tracer.child.try_wait()? {
                bail!("strace exited ({status}): tracing may not be permitted here");
            }
            if started.elapsed() > Duration::from_secs(10) {
                bail!("strace did not attach within 10 s");
            }
            std::thread::yield_now();
        }
        Ok(tracer)
    }

    /// Detaches (SIGINT, as a user's Ctrl-C) and returns strace's table. strace writes it, then
    /// ends by the same signal, so its exit status says nothing: the table does.
    fn finish(mut self, out: &Path) -> anyhow::Result<String> {
        let pid = self.child.id().to_string();
        Command::new("kill").args(["-INT", &pid]).status()?;
        let status = self.child.wait()?;
        let table = std::fs::read_to_string(out).unwrap_or_default();
        if parse_summary(&table).is_empty() {
            bail!("strace ({status}) wrote no table to {}", out.display());
        }
        Ok(table)
    }
}

/// Whether thread `tid` has a tracer (`TracerPid` in its status is not 0).
fn traced(tid: u32) -> bool {
    std::fs::read_to_string(format!("/proc/{tid}/status")).is_ok_and(|s| {
        s.lines()
            .find_map(|l| l.strip_prefix("TracerPid:"))
            .is_some_and(|v| v.trim() != "0")
    })
}

/// Counts the system calls of `tids` while `load` runs (it returns the requests it made).
pub(super) fn count(tids: &[u32], dir: &Path, load: impl FnOnce() -> anyhow::Result<u64>) -> anyhow::Result<Counted> {
    if tids.is_empty() {
        return Err(anyhow!("no threads to trace"));
    }
    let out = dir.join(format!("strace-{}.txt", tids[0]));
    let tracer = Tracer::attach(tids, &out)?;
    let requests = load()?;
    let table = tracer.finish(&out)?;
    Ok(Counted {
        requests,
        calls: parse_summary(&table),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_the_summary_table() {
        let text = "\
% time     seconds  usecs/call     calls    errors syscall
------ ----------- ----------- --------- --------- ----------------
 40.12    0.012000           2      4000           epoll_wait
 30.00    0.009000           2      4000       100 recvfrom
 29.88    0.008900           2      4000           writev
------ ----------- ----------- --------- --------- ----------------
100.00    0.029900           2     12000       100 total
";
        let calls = parse_summary(text);
        assert_eq!(
            calls.into_iter().collect::<Vec<_>>(),
            vec![
                ("epoll_wait".to_string(), 4000),
                ("recvfrom".to_string(), 4000),
                ("writev".to_string(), 4000)
            ]
        );
        assert!(parse_summary("strace: Process 12 attached\n").is_empty());
    }

    #[test]
    fn describes_calls_per_request() {
        let counted = Counted {
            requests: 1000,
            calls: [("epoll_wait", 2000), ("writev", 2000), ("recvfrom", 2000), ("futex", 3)]
                .into_iter()
                .map(|(n, c)| (n.to_string(), c))
                .collect(),
        };
        assert_eq!(
            counted.describe(),
            "6.0 per request (epoll_wait 2.0, recvfrom 2.0, writev 2.0)"
        );
    }
}
