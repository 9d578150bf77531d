//! `cargo xtask upgrade-fixture`: writes `crates/faros/tests/fixtures/upgrade/` anew, the state
//! directory of a `faros dev` that ran the README's tenant flow and the manifest of what it holds.
//!
//! The upgrade test (`crates/faros/tests/upgrade.rs`) starts every later build on that directory,
//! so the fixture is what "the previous release" means to the test suite. Rewrite it when the state
//! format changes on purpose (and in each release, so the next one is tested against it), then
//! commit both files. The recording itself is that test file's ignored `record_upgrade_fixture`,
//! run here with the variable that lets it overwrite the committed files.

use std::path::Path;

use xshell::{Shell, cmd};

#[derive(clap::Args)]
pub struct UpgradeFixture {}

impl UpgradeFixture {
    pub fn run(&self, root: &Path) -> anyhow::Result<()> {
        let sh = Shell::new()?;
        sh.change_dir(root);
        let _record = sh.push_env("FAROS_RECORD_UPGRADE_FIXTURE", "1");
        // Which build wrote it, for the upgrade test's messages (a dirty tree says so).
        let commit = cmd!(sh, "git describe --always --dirty")
            .read()
            .unwrap_or_else(|_| "unknown".into());
        let _commit = sh.push_env("FAROS_UPGRADE_FIXTURE_COMMIT", commit);
        cmd!(
            sh,
            "cargo test -p faros --test upgrade -- --ignored --exact record_upgrade_fixture"
        )
        .run()?;
        println!("wrote crates/faros/tests/fixtures/upgrade/ (state.tar.gz, manifest.json): commit both");
        Ok(())
    }
}
