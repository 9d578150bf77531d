//! CPU time per proxied request, for the hub's connection threads and for nginx's workers, from the
//! kernel's per-thread accounts: part of the `proxy` suite's unloaded rounds.
//!
//! A latency mixes the proxy's own work with waiting: for the other CPU, for a wake-up, for the
//! upstream. This is the work alone, so it answers "which proxy does more per request" without the
//! tens of microseconds a round's placement moves latencies by. Two accounts are read:
//! - `/proc/<tid>/schedstat`: nanoseconds on a CPU, exact, user and kernel together;
//! - `/proc/<tid>/stat`: user and system time in clock ticks, sampled by the tick, so only their
//!   ratio over many requests means anything (it says whether a difference is the proxy's own code
//!   or the kernel's work for it).
//!
//! Where the kernel keeps no such count, the row says why and the rounds go on: it explains the
//! latency, it is not a target.

use std::ops::Sub;
use std::path::PathBuf;

use anyhow::{Context, anyhow};

/// A set of threads whose accounts are summed on each reading.
pub(super) struct Threads {
    tids: Vec<u32>,
}

/// What a set of threads spent, summed.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(super) struct Spent {
    pub on_cpu_ns: u64,
    pub user_ticks: u64,
    pub system_ticks: u64,
}

impl Sub for Spent {
    type Output = Spent;

    fn sub(self, earlier: Spent) -> Spent {
        Spent {
            on_cpu_ns: self.on_cpu_ns.saturating_sub(earlier.on_cpu_ns),
            user_ticks: self.user_ticks.saturating_sub(earlier.user_ticks),
            system_ticks: self.system_ticks.saturating_sub(earlier.system_ticks),
        }
    }
}

impl std::ops::AddAssign for Spent {
    fn add_assign(&mut self, other: Spent) {
        self.on_cpu_ns += other.on_cpu_ns;
        self.user_ticks += other.user_ticks;
        self.system_ticks += other.system_ticks;
    }
}

impl Spent {
    /// The share of the ticks spent in user space, if any tick was counted.
    pub(super) fn user_share(&self) -> Option<f64> {
        let ticks = self.user_ticks + self.system_ticks;
        (ticks > 0).then(|| self.user_ticks as f64 / ticks as f64)
    }
}

impl Threads {
    /// Threads `tids` (of any process: `/proc/<tid>` names a thread too).
    pub(super) fn of(tids: &[u32]) -> anyhow::Result<Self> {
        if tids.is_empty() {
            return Err(anyhow!("no threads to read"));
        }
        let threads = Self { tids: tids.to_vec() };
        // A kernel without scheduler statistics shows no file, or zeros for every thread.
        if threads.spent()?.on_cpu_ns == 0 {
            return Err(anyhow!("the kernel counts no CPU time in /proc/<tid>/schedstat"));
        }
        Ok(threads)
    }

    /// Every thread of processes `pids` (nginx's workers).
    pub(super) fn of_processes(pids: &[u32]) -> anyhow::Result<Self> {
        let mut tids = Vec::new();
        for pid in pids {
            for entry in std::fs::read_dir(format!("/proc/{pid}/task")).with_context(|| format!("process {pid}"))? {
                if let Some(tid) = entry?.file_name().to_str().and_then(|t| t.parse().ok()) {
                    tids.push(tid);
                }
            }
        }
        Self::of(&tids)
    }

    /// The threads' accounts so far, summed.
    pub(super) fn spent(&self) -> anyhow::Result<Spent> {
        let mut sum = Spent::default();
        for tid in &self.tids {
            let read = |name: &str| {
                let file = PathBuf::from(format!("/proc/{tid}/{name}"));
                std::fs::read_to_string(&file).with_context(|| format!("reading {}", file.display()))
            };
            let schedstat = read("schedstat")?;
            let stat = read("stat")?;
            let on_cpu_ns = run_ns(&schedstat).ok_or_else(|| anyhow!("thread {tid}: no run time in {schedstat:?}"))?;
            let (user_ticks, system_ticks) =
                user_system_ticks(&stat).ok_or_else(|| anyhow!("thread {tid}: no utime/stime in {stat:?}"))?;
            sum += Spent {
                on_cpu_ns,
                user_ticks,
                system_ticks,
            };
        }
        Ok(sum)
    }

    /// `load`'s result and what the threads spent while it ran; `load` also says how many requests
    /// it made, which is returned with it.
    pub(super) fn while_running<T>(
        &self,
        load: impl FnOnce() -> anyhow::Result<(T, u64)>,
    ) -> anyhow::Result<(T, Spent, u64)> {
        let before = self.spent()?;
        let (out, requests) = load()?;
        Ok((out, self.spent()? - before, requests))
    }
}

/// The first field of a `schedstat` line: nanoseconds spent on a CPU (then time waiting for one,
/// then timeslices).
fn run_ns(schedstat: &str) -> Option<u64> {
    schedstat.split_whitespace().next()?.parse().ok()
}

/// `utime` and `stime` (fields 14 and 15) of a `stat` line. The name (field 2) is in parentheses
/// and may itself hold spaces and parentheses, so fields are counted from the last `)`.
fn user_system_ticks(stat: &str) -> Option<(u64, u64)> {
    let after_name = &stat[stat.rfind(')')? + 1..];
    let mut fields = after_name.split_whitespace().skip(11);
    Some((fields.next()?.parse().ok()?, fields.next()?.parse().ok()?))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_the_run_time_of_a_schedstat_line() {
        for (text, want) in [
            ("1500007897 1554517 10\n", Some(1_500_007_897)),
            ("0 0 1", Some(0)),
            ("", None),
            ("x 1 2", None),
        ] {
            assert_eq!(run_ns(text), want, "{text:?}");
        }
    }

    #[test]
    fn reads_user_and_system_ticks_of_a_stat_line() {
        for (text, want) in [
            (
                "4242 (hub-http-0) S 1 4242 4242 0 -1 4194368 120 0 0 0 731 2488 0 0 20 0 9 0 5 0 0\n",
                Some((731, 2488)),
            ),
            // A name with spaces and parentheses of its own.
            ("7 (a) b (c)) R 1 7 7 0 -1 0 0 0 0 0 5 6 0 0", Some((5, 6))),
            ("7 (nginx) S 1 2 3", None),
            ("no parentheses at all", None),
        ] {
            assert_eq!(user_system_ticks(text), want, "{text:?}");
        }
    }

    #[test]
    fn shares_user_ticks_and_subtracts_readings() {
        let later = Spent {
            on_cpu_ns: 5_000,
            user_ticks: 13,
            system_ticks: 31,
        };
        let earlier = Spent {
            on_cpu_ns: 1_000,
            user_ticks: 3,
            system_ticks: 1,
        };
        let spent = later - earlier;
        assert_eq!(
            spent,
            Spent {
                on_cpu_ns: 4_000,
                user_ticks: 10,
                system_ticks: 30
            }
        );
        assert_eq!(spent.user_share(), Some(0.25));
        assert_eq!(Spent::default().user_share(), None);
    }
}
