//! `cargo xtask kcp build`: kcp's commands built from its Go modules with `go build` in a wrapper
//! module, into `target/kcp/<version>/`, only when one is missing.
//!
//! The pinned release builds in the committed wrapper (`xtask/kcp/`: go.mod, go.sum, tools.go), which
//! must be exactly what [`gomod::wrapper_go_mod`] makes of kcp's go.mod (checked on every build, so
//! it cannot drift). Another `--version`, or `--kcp-checkout`, gets a generated wrapper under
//! `target/kcp/<version>/` and a `go mod tidy` seeded with kcp's own go.sum (whose hashes the
//! checksum database vouches for through kcp's module). Nothing fetched is ever written outside
//! `target/`.

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::Instant;

use anyhow::{Context, bail};

use super::gomod::{self, COMMANDS, KCP_MODULE, Staging};
use super::staging;
use crate::gocmd::{self, EXIT_REFUSED, GoError, Release};

/// The committed wrapper module of the pinned release, relative to the project root.
const WRAPPER_DIR: &str = "xtask/kcp";

#[derive(clap::Args)]
pub struct Build {
    /// The kcp release to build.
    #[arg(long, default_value = gomod::PINNED_VERSION)]
    version: String,
    /// Take kcp's staging modules (sdk, client-go, apimachinery, virtual-workspace-framework, ...)
    /// from this kcp git checkout at the release's tag instead of the Go module proxy: for modules
    /// the proxy does not serve. The checkout is read with `git archive`; nothing of it is copied
    /// outside `target/`.
    #[arg(long, env = "FAROS_KCP_CHECKOUT")]
    kcp_checkout: Option<PathBuf>,
    /// `git archive` of kcp's `staging/` at the release (`staging.tar.gz`), for the staging modules
    /// the Go module proxy refuses: only those are unpacked, under `target/kcp/<version>/staging/`,
    /// after its sha256 is checked. Default: `shared/third_party/kcp-<version>/staging.tar.gz`
    /// beside the repository, when it is there. Unused when the proxy serves every module.
    #[arg(long, env = "FAROS_KCP_STAGING_ARCHIVE", conflicts_with = "kcp_checkout")]
    staging_archive: Option<PathBuf>,
    /// Rebuild even if the binaries exist.
    #[arg(long)]
    force: bool,
    /// Rewrite the committed wrapper's go.mod (`xtask/kcp/go.mod`) from kcp's go.mod at --version,
    /// when moving the pin; then `go mod tidy` there records go.sum.
    #[arg(long)]
    write_wrapper: bool,
}

/// The binaries' directory for `version`.
pub(crate) fn bin_dir(root: &Path, version: &str) -> PathBuf {
    root.join("target/kcp").join(version)
}

impl Build {
    pub fn run(self, root: &Path) -> anyhow::Result<()> {
        let out = bin_dir(root, &self.version);
        if !self.force && COMMANDS.iter().all(|c| out.join(c).is_file()) {
            eprintln!("kcp {} is built in {} (--force rebuilds)", self.version, out.display());
            return check_version(&out, &self.version);
        }
        let started = Instant::now();
        let release = download(&self.version)?;
        let kcp_go_mod = read(&release.go_mod)?;
        let module = self.module_dir(root, &release, &kcp_go_mod)?;
        let commit = release.commit.as_deref().unwrap_or("unknown");
        let ldflags = gomod::ldflags(&kcp_go_mod, &self.version, commit, &release.time)?;
        std::fs::create_dir_all(&out).with_context(|| format!("creating {}", out.display()))?;
        let out_arg = format!("{}/", out.display());
        let packages: Vec<String> = COMMANDS.iter().map(|c| format!("{KCP_MODULE}/cmd/{c}")).collect();
        let mut build = vec!["build", "-trimpath", "-ldflags", &ldflags, "-o", &out_arg];
        build.extend(packages.iter().map(String::as_str));
        eprintln!(
            "building kcp {} ({}) in {} (cold: about 25 minutes on 2 cores; Go's build cache makes it fast after)",
            self.version,
            COMMANDS.join(", "),
            module.display()
        );
        run_go(&build, &module)?;
        eprintln!(
            "built kcp {} into {} in {:.0?}",
            self.version,
            out.display(),
            started.elapsed()
        );
        check_version(&out, &self.version)
    }

    /// The wrapper module to build in, prepared.
    fn module_dir(&self, root: &Path, release: &Release, kcp_go_mod: &str) -> anyhow::Result<PathBuf> {
        let committed = root.join(WRAPPER_DIR);
        let pinned = self.kcp_checkout.is_none() && self.version == gomod::PINNED_VERSION;
        if self.write_wrapper || pinned {
            let want = gomod::wrapper_go_mod(kcp_go_mod, &self.version, Staging::Published)?;
            if self.write_wrapper {
                write(&committed.join("go.mod"), &want)?;
                run_go(&["mod", "tidy"], &committed)?;
                return Ok(committed);
            }
            if !gomod::same_pins(&read(&committed.join("go.mod"))?, &want) {
                bail!(
                    "{WRAPPER_DIR}/go.mod does not pin what kcp {}'s go.mod does; regenerate it with \
                     `cargo xtask kcp build --version {} --write-wrapper`",
                    self.version,
                    self.version
                );
            }
        }
        let dir = bin_dir(root, &self.version).join("module");
        let staging_dir = bin_dir(root, &self.version).join("staging");
        if let Some(checkout) = &self.kcp_checkout {
            extract_staging(checkout, &self.version, &staging_dir)?;
            let modules = staging_dir.join("staging/src/github.com/kcp-dev");
            let go_mod = gomod::wrapper_go_mod(kcp_go_mod, &self.version, Staging::Checkout(&modules))?;
            return generated_module(&dir, &go_mod, &committed, &release.dir);
        }
        // The published staging modules, but those the proxy refuses: from the release's archive.
        let modules = gomod::staging_modules(kcp_go_mod, &self.version)?;
        let published: Vec<String> = modules.iter().map(|m| format!("{}@{}", m.path, m.published)).collect();
        let refusals = gocmd::refusals(&published)?;
        let (local, others) = staging::split_refused(&modules, &refusals);
        if let Some(refusal) = others.first() {
            refused_exit(refusal, "no staging archive holds it");
        }
        let (wrapper, go_sum) = if pinned {
            (read(&committed.join("go.mod"))?, committed.join("go.sum"))
        } else {
            (
                gomod::wrapper_go_mod(kcp_go_mod, &self.version, Staging::Published)?,
                release.dir.join("go.sum"),
            )
        };
        if local.is_empty() {
            if pinned {
                return Ok(committed);
            }
            return generated_module(&dir, &wrapper, &committed, &release.dir);
        }
        let Some(archive) = self
            .staging_archive
            .clone()
            .or_else(|| staging::default_archive(root, &self.version))
        else {
            refused_exit(
                &refusals[0],
                "name an archive of kcp's staging/ at the release with --staging-archive (FAROS_KCP_STAGING_ARCHIVE)",
            );
        };
        staging::verify(&archive, &self.version)?;
        let modules_dir = staging::unpack(&archive, &local, &staging_dir)?;
        eprintln!(
            "the Go module proxy refuses {}: taken from {} (sha256 checked), unpacked in {}; every other module from the proxy",
            local.iter().map(|m| m.path.as_str()).collect::<Vec<_>>().join(", "),
            archive.display(),
            modules_dir.display()
        );
        let go_mod = staging::point_replaces_at(&wrapper, &local, &modules_dir);
        if !pinned {
            return generated_module(&dir, &go_mod, &committed, &release.dir);
        }
        // The committed wrapper, already tidied: only the refused modules' replaces move, and
        // `go build -mod=mod` records their dependencies' sums in this copy's go.sum.
        std::fs::create_dir_all(&dir).with_context(|| format!("creating {}", dir.display()))?;
        write(&dir.join("go.mod"), &go_mod)?;
        write(&dir.join("go.sum"), &read(&go_sum)?)?;
        write(&dir.join("tools.go"), &read(&committed.join("tools.go"))?)?;
        Ok(dir)
    }
}

/// A wrapper module of `go_mod` in `dir` (made), with the committed tools.go and kcp's own go.sum
/// (whose hashes the checksum database vouches for through kcp's module), tidied.
fn generated_module(dir: &Path, go_mod: &str, committed: &Path, kcp_dir: &Path) -> anyhow::Result<PathBuf> {
    std::fs::create_dir_all(dir).with_context(|| format!("creating {}", dir.display()))?;
    write(&dir.join("go.mod"), go_mod)?;
    write(&dir.join("tools.go"), &read(&committed.join("tools.go"))?)?;
    write(&dir.join("go.sum"), &read(&kcp_dir.join("go.sum"))?)?;
    run_go(&["mod", "tidy"], dir)?;
    Ok(dir.to_path_buf())
}

/// kcp's module at `version`.
fn download(version: &str) -> anyhow::Result<Release> {
    gocmd::download(&format!("{KCP_MODULE}@{version}")).map_err(refused_or)
}

/// `go ARGS` in `dir` ([`gocmd::run`]); a module the proxy refused ends the build with that module
/// named and [`EXIT_REFUSED`].
fn run_go(args: &[&str], dir: &Path) -> anyhow::Result<()> {
    gocmd::run(args, dir).map_err(refused_or)
}

/// Exits with [`EXIT_REFUSED`] naming the module when `e` is a proxy refusal, else `e`.
fn refused_or(e: GoError) -> anyhow::Error {
    match e {
        GoError::Refused(r) => refused_exit(&r, "no staging archive holds it"),
        other => other.into(),
    }
}

/// Ends the build with [`EXIT_REFUSED`]: kcp cannot be built here from the proxy and what it was
/// given, which is a "no" from outside (`why`), not a failure of the build.
fn refused_exit(refusal: &gomod::Refused, why: &str) -> ! {
    eprintln!(
        "error: the Go module proxy does not serve {}: {}\n\
         kcp cannot be built from its modules alone ({why}). For kcp's staging modules, \
         `--staging-archive PATH` takes them from an archive of kcp's staging/ at the release, or \
         `--kcp-checkout DIR` from a kcp git checkout; or run the e2e target on a kcp you have: \
         `cargo xtask e2e --target kcp --kcp-binary PATH`.",
        refusal.module, refusal.error
    );
    std::process::exit(EXIT_REFUSED);
}

/// `staging/src/github.com/kcp-dev` of `checkout` at tag `version`, into `to` (replaced).
fn extract_staging(checkout: &Path, version: &str, to: &Path) -> anyhow::Result<()> {
    if to.exists() {
        std::fs::remove_dir_all(to).with_context(|| format!("removing {}", to.display()))?;
    }
    std::fs::create_dir_all(to).with_context(|| format!("creating {}", to.display()))?;
    // A bare mirror or a work tree alike: git finds the repository from --git-dir or -C.
    let git_dir = if checkout.join(".git").exists() {
        checkout.join(".git")
    } else {
        checkout.to_path_buf()
    };
    let mut archive = Command::new("git")
        .arg("--git-dir")
        .arg(&git_dir)
        .args(["archive", "--format=tar", version, "staging/src/github.com/kcp-dev"])
        .stdout(Stdio::piped())
        .spawn()
        .context("starting git archive")?;
    let tar = Command::new("tar")
        .arg("-x")
        .arg("-C")
        .arg(to)
        .stdin(archive.stdout.take().context("git archive's stdout")?)
        .status()
        .context("running tar")?;
    let git = archive.wait().context("waiting for git archive")?;
    if !git.success() || !tar.success() {
        bail!(
            "extracting staging/src/github.com/kcp-dev at {version} from {} failed (git {git}, tar {tar}); \
             is it a kcp checkout with tag {version}?",
            checkout.display()
        );
    }
    Ok(())
}

/// `kcp --version` names the release (kcp prints `kcp version <gitVersion>`).
pub(crate) fn check_version(dir: &Path, version: &str) -> anyhow::Result<()> {
    let kcp = dir.join("kcp");
    let out = Command::new(&kcp)
        .arg("--version")
        .output()
        .with_context(|| format!("running {} --version", kcp.display()))?;
    let printed = String::from_utf8_lossy(&out.stdout).trim().to_string();
    if !printed.contains(&format!("+kcp-{version}")) {
        bail!(
            "{} --version printed {printed:?}, which does not name {version}",
            kcp.display()
        );
    }
    eprintln!("{printed}");
    Ok(())
}

fn read(path: &Path) -> anyhow::Result<String> {
    std::fs::read_to_string(path).with_context(|| format!("reading {}", path.display()))
}

fn write(path: &Path, contents: &str) -> anyhow::Result<()> {
    std::fs::write(path, contents).with_context(|| format!("writing {}", path.display()))
}
