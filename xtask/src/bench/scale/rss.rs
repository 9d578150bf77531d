//! Resident memory of a process and everything it started, from `/proc` (Linux only): what the
//! growth curves report after each step. It reads; it never signals or waits on a process.

use std::collections::HashMap;

#[derive(Debug, thiserror::Error)]
pub(in crate::bench) enum RssError {
    #[error("reading /proc: {0}")]
    Proc(#[from] std::io::Error),
    #[error("process {0} has no VmRSS in /proc/{0}/status")]
    NoRss(u32),
}

/// The parent pid from the text of `/proc/<pid>/stat`. The command name (field 2, in parentheses)
/// may itself contain spaces and parentheses, so the fields are counted from the last `)`.
fn parent_of(stat: &str) -> Option<u32> {
    let rest = &stat[stat.rfind(')')? + 1..];
    rest.split_whitespace().nth(1)?.parse().ok()
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

/// Summed RSS of `root` and its descendants, in MiB. Processes that exit while /proc is read are
/// skipped; `root` itself must be readable.
pub(in crate::bench) fn tree_rss_mib(root: u32) -> Result<f64, RssError> {
    let mut parents = HashMap::new();
    for entry in std::fs::read_dir("/proc")? {
        let Some(pid) = entry?.file_name().to_str().and_then(|n| n.parse::<u32>().ok()) else {
            continue;
        };
        if let Some(parent) = std::fs::read_to_string(format!("/proc/{pid}/stat"))
            .ok()
            .as_deref()
            .and_then(parent_of)
        {
            parents.insert(pid, parent);
        }
    }
    let root_status = std::fs::read_to_string(format!("/proc/{root}/status"))?;
    let mut kib = vm_rss_kib(&root_status).ok_or(RssError::NoRss(root))?;
    for pid in tree(root, &parents).into_iter().skip(1) {
        kib += std::fs::read_to_string(format!("/proc/{pid}/status"))
            .ok()
            .as_deref()
            .and_then(vm_rss_kib)
            .unwrap_or(0);
    }
    Ok(kib as f64 / 1024.0)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parent_is_read_after_the_command_name() {
        let cases = [
            ("42 (faros) S 7 42 42 0 -1", Some(7)),
            ("43 (tokio (worker) 1) R 42 42 42 0 -1", Some(42)),
            ("garbage", None),
        ];
        for (stat, want) in cases {
            assert_eq!(parent_of(stat), want, "{stat}");
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
        assert!(tree_rss_mib(std::process::id()).unwrap() > 0.0);
    }
}
