//! The recorded runs of docs/benchmarks.md: a measuring run (not `--smoke`) appends its summary
//! with the date, the commit and the machine, so the lab notes say what was measured where.
//!
//! [`entry`] and [`append`] are IO-free and table-tested; [`record`] reads the clock, git and the
//! machine and writes the file.

use std::path::Path;

use anyhow::{Context, bail};

/// Where the entries go: the last section of docs/benchmarks.md, after this line.
pub const MARKER: &str = "<!-- cargo xtask bench appends below this line -->";

/// One measuring run.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Run {
    /// UTC, to the minute.
    pub date: String,
    pub suite: String,
    /// Short hash, `+dirty` when tracked files differed from it.
    pub commit: String,
    pub machine: String,
    /// The suite's summary line(s), as printed.
    pub summary: String,
}

/// The Markdown of one run.
pub fn entry(run: &Run) -> String {
    format!(
        "### {} · `{}` · `{}`\n\n*Machine: {}.*\n\n```text\n{}\n```\n",
        run.date,
        run.suite,
        run.commit,
        run.machine,
        run.summary.trim_end()
    )
}

/// `doc` with `entry` appended after the recorded runs so far; an error when `doc` has no
/// [`MARKER`] (the file is not the benchmarks page, or its section was removed).
pub fn append(doc: &str, entry: &str) -> anyhow::Result<String> {
    if !doc.contains(MARKER) {
        bail!("docs/benchmarks.md has no line {MARKER:?}: where should the run be recorded?");
    }
    Ok(format!("{}\n\n{entry}", doc.trim_end()))
}

/// Appends the run of `suite` that printed `summary` to docs/benchmarks.md under `root`.
pub fn record(root: &Path, suite: &str, summary: &str) -> anyhow::Result<()> {
    let run = Run {
        date: k8s_openapi::jiff::Timestamp::now()
            .strftime("%Y-%m-%d %H:%M UTC")
            .to_string(),
        suite: suite.to_string(),
        commit: commit(root)?,
        machine: machine(),
        summary: summary.to_string(),
    };
    let path = root.join("docs/benchmarks.md");
    let doc = std::fs::read_to_string(&path).with_context(|| format!("reading {}", path.display()))?;
    std::fs::write(&path, append(&doc, &entry(&run))?).with_context(|| format!("writing {}", path.display()))?;
    println!("recorded in {}", path.display());
    Ok(())
}

fn commit(root: &Path) -> anyhow::Result<String> {
    let sh = xshell::Shell::new()?;
    sh.change_dir(root);
    let head = xshell::cmd!(sh, "git rev-parse --short HEAD").read()?;
    let dirty = !xshell::cmd!(sh, "git status --porcelain --untracked-files=no")
        .read()?
        .is_empty();
    Ok(if dirty { format!("{head}+dirty") } else { head })
}

/// CPU model, CPUs, memory and OS, as far as /proc tells (Linux); what it cannot read it leaves out.
fn machine() -> String {
    let read = |p: &str| std::fs::read_to_string(p).unwrap_or_default();
    let field = |text: &str, key: &str| {
        text.lines()
            .find(|l| l.starts_with(key))
            .and_then(|l| l.split_once(':'))
            .map(|(_, v)| v.trim().to_string())
    };
    let mut parts = Vec::new();
    if let Some(model) = field(&read("/proc/cpuinfo"), "model name") {
        parts.push(model);
    }
    if let Ok(n) = std::thread::available_parallelism() {
        parts.push(format!("{n} CPUs"));
    }
    if let Some(kib) =
        field(&read("/proc/meminfo"), "MemTotal").and_then(|v| v.trim_end_matches("kB").trim().parse::<u64>().ok())
    {
        parts.push(format!("{:.1} GiB RAM", kib as f64 / 1024.0 / 1024.0));
    }
    parts.push(format!("{} {}", std::env::consts::OS, std::env::consts::ARCH));
    parts.join(", ")
}

#[cfg(test)]
mod tests {
    use super::*;

    fn run() -> Run {
        Run {
            date: "2026-12-07 20:00 UTC".into(),
            suite: "kcp".into(),
            commit: "abc1234+dirty".into(),
            machine: "Some CPU, 2 CPUs, 7.8 GiB RAM, linux x86_64".into(),
            summary: "kcp: creates/s 5462 (21.75x redb)\n".into(),
        }
    }

    #[test]
    fn an_entry_names_date_suite_commit_and_machine() {
        assert_eq!(
            entry(&run()),
            "### 2026-12-07 20:00 UTC · `kcp` · `abc1234+dirty`\n\n\
             *Machine: Some CPU, 2 CPUs, 7.8 GiB RAM, linux x86_64.*\n\n\
             ```text\nkcp: creates/s 5462 (21.75x redb)\n```\n"
        );
    }

    #[test]
    fn entries_are_appended_after_the_marker_and_earlier_runs() {
        let e = entry(&run());
        for (doc, want) in [
            (format!("# B\n\n{MARKER}\n"), Some(format!("# B\n\n{MARKER}\n\n{e}"))),
            (
                format!("# B\n\n{MARKER}\n\n### earlier\n\n\n"),
                Some(format!("# B\n\n{MARKER}\n\n### earlier\n\n{e}")),
            ),
            ("# B\n".to_string(), None),
        ] {
            assert_eq!(append(&doc, &e).ok(), want, "{doc:?}");
        }
    }

    #[test]
    #[allow(clippy::unwrap_used)]
    fn the_benchmarks_page_has_the_marker() {
        // xtask is a directory of the repository's root.
        let root = Path::new(env!("CARGO_MANIFEST_DIR")).parent().unwrap();
        let doc = std::fs::read_to_string(root.join("docs/benchmarks.md")).unwrap();
        assert!(append(&doc, "x").is_ok());
    }
}
