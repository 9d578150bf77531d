//! `cargo xtask kube build`: kube-apiserver and kube-controller-manager from `k8s.io/kubernetes`, and
//! etcd from `go.etcd.io/etcd/server/v3`, each built with `go build` in a committed wrapper module,
//! into `target/kube/<version>/`, only when one is missing.
//!
//! The Kubernetes wrapper (`xtask/kube/`: go.mod, go.sum, tools.go) must be exactly what
//! [`gomod::wrapper_go_mod`] makes of Kubernetes' go.mod (checked on every build, so it cannot
//! drift); etcd's (`xtask/kube/etcd/`) is a `main` calling `etcdmain.Main`. Go's module cache stays
//! where Go keeps it (GOMODCACHE), outside the repository.

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Instant;

use anyhow::{Context, bail};

use super::gomod::{self, COMMANDS, ETCD_MODULE, ETCD_VERSION, KUBE_MODULE};
use crate::gocmd::{self, EXIT_REFUSED, GoError};

/// The committed wrapper modules, relative to the project root.
const KUBE_WRAPPER: &str = "xtask/kube";
const ETCD_WRAPPER: &str = "xtask/kube/etcd";

#[derive(clap::Args)]
pub struct Build {
    /// Rebuild even if the binaries exist.
    #[arg(long)]
    force: bool,
    /// Rewrite the committed wrapper's go.mod (`xtask/kube/go.mod`) from Kubernetes' go.mod, when
    /// moving the pin (`gomod::PINNED_VERSION`); then `go mod tidy` there records go.sum.
    #[arg(long)]
    write_wrapper: bool,
}

/// The binaries' directory of the pinned release.
pub(crate) fn bin_dir(root: &Path) -> PathBuf {
    root.join("target/kube").join(gomod::PINNED_VERSION)
}

/// The binaries, all in [`bin_dir`].
pub(crate) const BINARIES: [&str; 3] = ["etcd", COMMANDS[0], COMMANDS[1]];

impl Build {
    pub fn run(self, root: &Path) -> anyhow::Result<()> {
        match self.build(root) {
            Err(e) => match e.downcast_ref::<GoError>() {
                Some(GoError::Refused(r)) => {
                    eprintln!(
                        "error: the Go module proxy does not serve {}: {}\n\
                         The control plane cannot be built from modules alone; the chart checks need it.",
                        r.module, r.error
                    );
                    std::process::exit(EXIT_REFUSED);
                }
                _ => Err(e),
            },
            ok => ok,
        }
    }

    fn build(&self, root: &Path) -> anyhow::Result<()> {
        let out = bin_dir(root);
        let version = gomod::PINNED_VERSION;
        if !self.force && BINARIES.iter().all(|c| out.join(c).is_file()) {
            eprintln!("kube {version} is built in {} (--force rebuilds)", out.display());
            return check_versions(&out);
        }
        let started = Instant::now();
        let release = gocmd::download(&format!("{KUBE_MODULE}@{version}"))?;
        let kube_go_mod = read(&release.go_mod)?;
        let wrapper = root.join(KUBE_WRAPPER);
        let want = gomod::wrapper_go_mod(&kube_go_mod, version)?;
        if self.write_wrapper {
            write(&wrapper.join("go.mod"), &want)?;
            gocmd::run(&["mod", "tidy"], &wrapper)?;
        } else if !gomod::same_pins(&read(&wrapper.join("go.mod"))?, &want) {
            bail!(
                "{KUBE_WRAPPER}/go.mod does not pin what k8s.io/kubernetes {version}'s go.mod does; \
                 regenerate it with `cargo xtask kube build --write-wrapper`"
            );
        }
        let etcd_go_mod = read(&root.join(ETCD_WRAPPER).join("go.mod"))?;
        if crate::kcp::gomod::required(&etcd_go_mod, ETCD_MODULE).as_deref() != Some(ETCD_VERSION) {
            bail!("{ETCD_WRAPPER}/go.mod does not require {ETCD_MODULE} {ETCD_VERSION}");
        }
        std::fs::create_dir_all(&out).with_context(|| format!("creating {}", out.display()))?;
        let ldflags = gomod::ldflags(version, &release.time)?;
        let out_arg = format!("{}/", out.display());
        let packages: Vec<String> = COMMANDS.iter().map(|c| format!("{KUBE_MODULE}/cmd/{c}")).collect();
        let mut args = vec!["build", "-trimpath", "-ldflags", &ldflags, "-o", &out_arg];
        args.extend(packages.iter().map(String::as_str));
        eprintln!(
            "building Kubernetes {version} ({}) in {} (cold: about 13 minutes on 2 cores; Go's build cache makes it seconds after)",
            COMMANDS.join(", "),
            wrapper.display()
        );
        gocmd::run(&args, &wrapper)?;
        let etcd = out.join("etcd");
        let etcd_arg = etcd.display().to_string();
        eprintln!("building etcd {ETCD_VERSION} in {ETCD_WRAPPER}");
        gocmd::run(&["build", "-trimpath", "-o", &etcd_arg, "."], &root.join(ETCD_WRAPPER))?;
        eprintln!(
            "built Kubernetes {version} and etcd {ETCD_VERSION} into {} in {:.0?}",
            out.display(),
            started.elapsed()
        );
        check_versions(&out)
    }
}

/// Each binary's `--version` names its release.
pub(crate) fn check_versions(dir: &Path) -> anyhow::Result<()> {
    let etcd_version = ETCD_VERSION.trim_start_matches('v');
    for (binary, want) in [
        ("kube-apiserver", gomod::PINNED_VERSION),
        ("kube-controller-manager", gomod::PINNED_VERSION),
        ("etcd", etcd_version),
    ] {
        let path = dir.join(binary);
        let out = Command::new(&path)
            .arg("--version")
            .output()
            .with_context(|| format!("running {} --version", path.display()))?;
        let printed = String::from_utf8_lossy(&out.stdout).trim().to_string();
        let first = printed.lines().next().unwrap_or_default();
        if !first.split_whitespace().any(|w| w == want) {
            bail!(
                "{} --version printed {printed:?}, which does not name {want}",
                path.display()
            );
        }
        eprintln!("{first}");
    }
    Ok(())
}

fn read(path: &Path) -> anyhow::Result<String> {
    std::fs::read_to_string(path).with_context(|| format!("reading {}", path.display()))
}

fn write(path: &Path, contents: &str) -> anyhow::Result<()> {
    std::fs::write(path, contents).with_context(|| format!("writing {}", path.display()))
}
