//! What each step of the growth curves creates, and how a step's cost compares with the first's.
//! IO-free: the steps are planned from the sizes and the table is formatted from measured rows here,
//! so the arithmetic is tested without a running `faros dev`; nothing here creates or measures.

use std::ops::Range;
use std::time::Duration;

#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub(in crate::bench) enum PlanError {
    #[error("no sizes given for the {0} steps")]
    Empty(&'static str),
    #[error("{what} sizes must grow step by step; {size} follows {previous}")]
    NotGrowing {
        what: &'static str,
        previous: usize,
        size: usize,
    },
    #[error("workspaces per organization must be at least 1")]
    NoWorkspacesPerOrg,
    #[error("{size} workspaces are not a whole number of organizations of {per_org}")]
    NotWholeOrgs { size: usize, per_org: usize },
}

/// One step of the tenant series: the organizations it adds, each with `per_org` team workspaces.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(in crate::bench) struct TenantStep {
    /// Team workspaces in total once the step is done.
    pub workspaces: usize,
    /// Indexes of the organizations this step creates.
    pub orgs: Range<usize>,
    pub per_org: usize,
}

impl TenantStep {
    /// kcp workspaces the step creates through the hub: its organizations and their team workspaces.
    pub fn created(&self) -> usize {
        self.orgs.len() * (1 + self.per_org)
    }
}

/// Cumulative team-workspace `sizes` (e.g. 1000, 5000, 10000) as steps of whole organizations.
pub(in crate::bench) fn tenant_steps(sizes: &[usize], per_org: usize) -> Result<Vec<TenantStep>, PlanError> {
    if per_org == 0 {
        return Err(PlanError::NoWorkspacesPerOrg);
    }
    growing("tenant", sizes)?;
    let mut previous_orgs = 0;
    sizes
        .iter()
        .map(|&size| {
            if size % per_org != 0 {
                return Err(PlanError::NotWholeOrgs { size, per_org });
            }
            let orgs = previous_orgs..size / per_org;
            previous_orgs = orgs.end;
            Ok(TenantStep {
                workspaces: size,
                orgs,
                per_org,
            })
        })
        .collect()
}

/// Cumulative Provider `sizes` as the index range each step applies.
pub(in crate::bench) fn provider_steps(sizes: &[usize]) -> Result<Vec<Range<usize>>, PlanError> {
    growing("provider", sizes)?;
    let mut previous = 0;
    Ok(sizes
        .iter()
        .map(|&size| {
            let step = previous..size;
            previous = size;
            step
        })
        .collect())
}

fn growing(what: &'static str, sizes: &[usize]) -> Result<(), PlanError> {
    if sizes.is_empty() {
        return Err(PlanError::Empty(what));
    }
    let mut previous = 0;
    for &size in sizes {
        if size <= previous {
            return Err(PlanError::NotGrowing { what, previous, size });
        }
        previous = size;
    }
    Ok(())
}

/// One measured step.
#[derive(Debug, Clone, PartialEq)]
pub(in crate::bench) struct Row {
    /// The size reached (what the step is named by).
    pub size: usize,
    /// Objects the step created.
    pub created: usize,
    pub wall: Duration,
    /// CPU time the `faros dev` process tree spent during the step: unlike wall time, what others
    /// running on a shared machine do not inflate.
    pub cpu: Duration,
    /// RSS of the `faros dev` process tree after the step.
    pub rss_mib: f64,
}

impl Row {
    pub fn per_item(&self) -> Duration {
        self.wall / self.created.max(1) as u32
    }

    pub fn cpu_per_item(&self) -> Duration {
        self.cpu / self.created.max(1) as u32
    }
}

/// Per-item time of each row divided by the first row's: ~1.0 throughout means the cost grows
/// linearly with the work, above 1 worse than linear.
pub(in crate::bench) fn growth(rows: &[Row]) -> Vec<f64> {
    let Some(first) = rows.first() else { return Vec::new() };
    let base = first.per_item().as_secs_f64().max(f64::MIN_POSITIVE);
    rows.iter().map(|r| r.per_item().as_secs_f64() / base).collect()
}

/// The growth table of one series: `unit` names what a size counts, `item` what a step creates.
pub(in crate::bench) fn table(unit: &str, item: &str, rows: &[Row]) -> String {
    let mut out = format!(
        "{unit:>12} {:>9} {:>10} {:>14} {:>12} {:>18} {:>10}\n",
        "created",
        "step",
        format!("ms/{item}"),
        "vs 1st step",
        format!("CPU ms/{item}"),
        "RSS MiB"
    );
    for (row, ratio) in rows.iter().zip(growth(rows)) {
        out.push_str(&format!(
            "{:>12} {:>9} {:>9.1}s {:>14.2} {:>11.2}x {:>18.2} {:>10.0}\n",
            row.size,
            row.created,
            row.wall.as_secs_f64(),
            row.per_item().as_secs_f64() * 1000.0,
            ratio,
            row.cpu_per_item().as_secs_f64() * 1000.0,
            row.rss_mib
        ));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tenant_steps_add_whole_organizations() {
        let steps = tenant_steps(&[1000, 5000, 10_000], 10).unwrap();
        assert_eq!(
            steps.iter().map(|s| (s.orgs.clone(), s.created())).collect::<Vec<_>>(),
            vec![(0..100, 1100), (100..500, 4400), (500..1000, 5500)]
        );
        assert_eq!(steps[2].workspaces, 10_000);
    }

    #[test]
    fn bad_sizes_are_refused() {
        let cases: &[(&[usize], usize, PlanError)] = &[
            (&[], 10, PlanError::Empty("tenant")),
            (&[10], 0, PlanError::NoWorkspacesPerOrg),
            (
                &[20, 20],
                10,
                PlanError::NotGrowing {
                    what: "tenant",
                    previous: 20,
                    size: 20,
                },
            ),
            (&[15], 10, PlanError::NotWholeOrgs { size: 15, per_org: 10 }),
        ];
        for (sizes, per_org, want) in cases {
            assert_eq!(
                tenant_steps(sizes, *per_org).unwrap_err(),
                *want,
                "{sizes:?} / {per_org}"
            );
        }
        assert_eq!(
            provider_steps(&[5, 3]).unwrap_err(),
            PlanError::NotGrowing {
                what: "provider",
                previous: 5,
                size: 3
            }
        );
    }

    #[test]
    fn provider_steps_are_the_increments() {
        assert_eq!(
            provider_steps(&[100, 500, 1000]).unwrap(),
            vec![0..100, 100..500, 500..1000]
        );
    }

    #[test]
    fn growth_is_per_item_time_against_the_first_step() {
        let row = |size, created, ms| Row {
            size,
            created,
            wall: Duration::from_millis(ms),
            cpu: Duration::from_millis(ms / 2),
            rss_mib: 100.0,
        };
        // 1 ms per item, then 1 ms (linear), then 2 ms (quadratic-ish).
        let rows = [row(100, 100, 100), row(500, 400, 400), row(1000, 500, 1000)];
        let ratios = growth(&rows);
        for (got, want) in ratios.iter().zip([1.0, 1.0, 2.0]) {
            assert!((got - want).abs() < 1e-9, "{ratios:?}");
        }
        let t = table("workspaces", "item", &rows);
        assert_eq!(t.lines().count(), 4, "{t}");
        assert!(t.lines().nth(3).unwrap().contains("2.00x"), "{t}");
        assert!(growth(&[]).is_empty());
    }
}
