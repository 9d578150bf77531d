//! What this crate's browser tests (the portal, its OIDC sign-in) need: the repository's root and
//! the installed browser, Node.js and the pinned npm packages of `e2e/browser`, each checked with
//! how to install it.
#![allow(dead_code, clippy::unwrap_used, clippy::expect_used)]

use std::path::{Path, PathBuf};
use std::process::Command;

pub fn repo_root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../..")
        .canonicalize()
        .unwrap()
}

/// Debian's chromium (or `FAROS_CHROMIUM`), after checking Node.js and `e2e/browser`'s packages.
pub fn prerequisites(browser_dir: &Path) -> PathBuf {
    let chromium = std::env::var_os("FAROS_CHROMIUM")
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from("/usr/bin/chromium"));
    assert!(
        chromium.is_file(),
        "{} is missing: the browser tests need Debian's chromium (`apt-get install -y chromium`) or FAROS_CHROMIUM",
        chromium.display()
    );
    assert!(
        Command::new("node")
            .arg("--version")
            .output()
            .is_ok_and(|o| o.status.success()),
        "node is missing: the browser tests need Node.js 20+ (`apt-get install -y nodejs npm`)"
    );
    for package in ["playwright-core", "axe-core"] {
        assert!(
            browser_dir
                .join("node_modules")
                .join(package)
                .join("package.json")
                .is_file(),
            "{package} is missing in {}: run `npm ci --prefix e2e/browser`",
            browser_dir.display()
        );
    }
    chromium
}
