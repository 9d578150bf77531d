//! `cargo xtask lint`: repository rules no compiler checks. `cargo test -p xtask` runs each on the
//! real tree too, so CI (`cargo test --workspace`) enforces them.
//!
//! - [`doc_refs`]: every documentation reference (`docs/<name>.md`, `…#<anchor>`, relative Markdown
//!   links) names an existing file and heading.
//! - [`citations`]: nothing cites a document outside the repository (design notes, reference
//!   material); code and docs cite `docs/` instead.
//! - [`deps`]: the dependency rule between workspace crates (docs/architecture.md#dependency-rule).
//!
//! Each check reports every finding, naming the file and line or the crate and dependency, and the
//! command fails when there is any.

pub mod citations;
pub mod deps;
pub mod doc_refs;

use std::path::Path;

use anyhow::bail;
use clap::Args;

#[derive(Args)]
pub struct Lint {}

impl Lint {
    pub fn run(self, root: &Path) -> anyhow::Result<()> {
        let mut problems: Vec<String> = Vec::new();
        let files = doc_refs::scan(root)?;
        problems.extend(doc_refs::check(&files).iter().map(ToString::to_string));
        problems.extend(citations::check(&files).iter().map(ToString::to_string));
        let packages = deps::parse_metadata(&deps::metadata(root)?)?;
        problems.extend(deps::check(&packages).iter().map(ToString::to_string));
        if !problems.is_empty() {
            for problem in &problems {
                eprintln!("{problem}");
            }
            bail!("cargo xtask lint: {} problem(s)", problems.len());
        }
        println!(
            "cargo xtask lint: {} files cite only what exists in the repository; {} crates keep the dependency rule",
            files.len(),
            packages.len()
        );
        Ok(())
    }
}
