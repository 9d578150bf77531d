//! Resident memory and CPU time of a process and everything it started, from `/proc` (Linux only):
//! what the growth curves report after each step (CPU time, unlike wall time, holds on a machine
//! others share), and which processes a process started (the `proxy` suite traces nginx's workers).
//! It reads; it never signals or waits on a process.

use std::collections::HashMap;

#[derive(Debug, thiserror::Error)]
pub(in crate::bench) enum RssError {
    #[error("reading /proc: {0}")]
    Proc(#[from] std::io::Error),
    #[error("process {0} has no VmRSS in /proc/{0}/status")]
    NoRss(u32),
}

/// Clock ticks per second of `/proc/<pid>/stat`'s times (`USER_HZ`, 100 on Linux).
const TICKS_PER_SECOND: f64 = 100.0;

/// The fields after the command name of `/proc/<pid>/stat` (field 3, the state, first). The command
/// name (field 2, in parentheses) may itself contain spaces and parentheses, so the fields are
/// counted from the last `)`.
fn fields(stat: &str) -> Option<Vec<&str>> {
    Some(stat[stat.rfind(')')? + 1..].split_whitespace().collect())
}

/// The parent pid from the text of `/proc/<pid>/stat`.
fn parent_of(stat: &str) -> Option<u32> {
    fields(stat)?.get(1)?.parse().ok()
}

/// User plus system CPU ticks (fields 14 and 15) from the text of `/proc/<pid>/stat`.
fn cpu_ticks(stat: &str) -> Option<u64> {
    let f = fields(stat)?;
    Some(f.get(11)?.parse::<u64>().ok()? + f.get(12)?.parse::<u64>().ok()?)
}

/// `VmRSS` in KiB from the text of `/proc/<pid>/status`; kernel threads have none.
fn vm_rss_kib(status: &str) -> Option<u64> {
    status
        .lines()
        .find_map(|l| l.strip_prefix("VmRSS:"))?
        .split_whitespace()
        .next()?
        .parse()
        .ok()
}

/// Calls `f` with each process's pid and the text of its `/proc/<pid>/stat`; processes that exit
/// while /proc is read are skipped.
fn each_stat(mut f: impl FnMut(u32, &str)) -> std::io::Result<()> {
    for entry in std::fs::read_dir("/proc")? {
        let Some(pid) = entry?.file_name().to_str().and_then(|n| n.parse::<u32>().ok()) else {
            continue;
        };
        if let Ok(stat) = std::fs::read_to_string(format!("/proc/{pid}/stat")) {
            f(pid, &stat);
        }
    }
    Ok(())
}

/// The processes whose parent is `pid` (the proxy suite traces nginx's workers by it).
pub(in crate::bench) fn children_of(pid: u32) -> Result<Vec<u32>, RssError> {
    let mut children = Vec::new();
    each_stat(|child, stat| {
        if parent_of(stat) == Some(pid) {
            children.push(child);
        }
    })?;
    Ok(children)
}

/// `root` and its descendants, given every process's parent.
fn tree(root: u32, parents: &HashMap<u32, u32>) -> Vec<u32> {
    let mut members = vec![root];
    let mut i = 0;
    while i < members.len() {
        let p = members[i];
        members.extend(parents.iter().filter(|(_, pp)| **pp == p).map(|(c, _)| *c));
        i += 1;
    }
    members
}

/// What a process tree uses.
#[derive(Debug, Clone, Copy)]
pub(in crate::bench) struct Usage {
    pub rss_mib: f64,
    /// User plus system CPU time since the processes started.
    pub cpu_secs: f64,
}

/// Summed RSS and CPU time of `root` and its descendants. Processes that exit while /proc is read
/// are skipped; `root` itself must be readable.
pub(in crate::bench) fn tree_usage(root: u32) -> Result<Usage, RssError> {
    let mut parents = HashMap::new();
    let mut ticks = HashMap::new();
    each_stat(|pid, stat| {
        if let Some(parent) = parent_of(stat) {
            parents.insert(pid, parent);
        }
        ticks.insert(pid, cpu_ticks(stat).unwrap_or(0));
    })?;
    let root_status = std::fs::read_to_string(format!("/proc/{root}/status"))?;
    let mut kib = vm_rss_kib(&root_status).ok_or(RssError::NoRss(root))?;
    let members = tree(root, &parents);
    for pid in members.iter().skip(1) {
        kib += std::fs::read_to_string(format!("/proc/{pid}/status"))
            .ok()
            .as_deref()
            .and_then(vm_rss_kib)
            .unwrap_or(0);
    }
    let cpu: u64 = members.iter().filter_map(|p| ticks.get(p)).sum();
    Ok(Usage {
        rss_mib: kib as f64 / 1024.0,
        cpu_secs: cpu as f64 / TICKS_PER_SECOND,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parent_and_cpu_are_read_after_the_command_name() {
        let cases = [
            (
                "42 (faros) S 7 42 42 0 -1 4194560 1 0 0 0 250 50 0 0 20",
                Some(7),
                Some(300),
            ),
            (
                "43 (tokio (worker) 1) R 42 42 42 0 -1 0 0 0 0 0 3 4 0 0",
                Some(42),
                Some(7),
            ),
            ("44 (short) S 1 44", Some(1), None),
            ("garbage", None, None),
        ];
        for (stat, parent, cpu) in cases {
            assert_eq!(parent_of(stat), parent, "{stat}");
            assert_eq!(cpu_ticks(stat), cpu, "{stat}");
        }
    }

    #[test]
    fn rss_is_read_from_status() {
        assert_eq!(
            vm_rss_kib("Name:\tfaros\nVmRSS:\t  123456 kB\nThreads:\t9\n"),
            Some(123_456)
        );
        assert_eq!(vm_rss_kib("Name:\tkthreadd\n"), None);
    }

    #[test]
    fn the_tree_holds_descendants_only() {
        let parents = HashMap::from([(2, 1), (3, 2), (4, 1), (5, 9)]);
        let mut t = tree(1, &parents);
        t.sort_unstable();
        assert_eq!(t, vec![1, 2, 3, 4]);
    }

    #[test]
    fn this_process_has_a_resident_size() {
        assert!(tree_usage(std::process::id()).unwrap().rss_mib > 0.0);
    }
}
