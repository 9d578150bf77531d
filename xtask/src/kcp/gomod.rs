//! The IO-free half of `cargo xtask kcp build`: the wrapper module's `go.mod` from kcp's own, the
//! `-ldflags` that stamp the version the way kcp's Makefile does, and what a failed `go` run means.
//!
//! kcp's go.mod carries two kinds of `replace`: `k8s.io/* => github.com/kcp-dev/kubernetes/...`
//! (kcp's fork of Kubernetes; copied verbatim) and `github.com/kcp-dev/<x> => ./staging/src/...`
//! (libraries developed in kcp's repository). The staging directories are not in kcp's module zip
//! (each has its own go.mod), so the wrapper points them at the modules kcp publishes from them,
//! tagged with the release's version (`v0.32.3`, or `v2.32.3` for a `/v2` module), or at a kcp
//! checkout's `staging/src` when the proxy does not serve one ([`Staging::Checkout`]).

use std::fmt::Write as _;
use std::path::Path;

/// The release `cargo xtask kcp build` builds by default: the one kcp's Helm chart 0.16.6 ships.
pub(crate) const PINNED_VERSION: &str = "v0.32.3";
/// kcp's module path.
pub(crate) const KCP_MODULE: &str = "github.com/kcp-dev/kcp";
/// The commands built: a shard, the front-proxy in front of shards, and the cache server that
/// shards share in a sharded setup.
pub(crate) const COMMANDS: [&str; 3] = ["kcp", "kcp-front-proxy", "cache-server"];

#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub(crate) enum GoModError {
    #[error("kcp's go.mod has no `go` directive")]
    NoGoDirective,
    #[error("kcp's go.mod requires no k8s.io/kubernetes (needed for the version stamp)")]
    NoKubernetes,
    #[error("kcp's go.mod replaces no k8s.io module with kcp's Kubernetes fork")]
    NoForkReplaces,
    #[error("{0} is not a release version (vMAJOR.MINOR.PATCH)")]
    NotARelease(String),
}

/// Where the wrapper takes kcp's staging modules from.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Staging<'a> {
    /// The modules kcp publishes from `staging/`, from the Go module proxy.
    Published,
    /// `<dir>/<module directory name>`: `staging/src/github.com/kcp-dev` of a kcp checkout at the release.
    Checkout(&'a Path),
}

/// One `replace` of a go.mod (also read for Kubernetes' by `kube build`).
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct Replace {
    pub(crate) from: String,
    pub(crate) to: String,
}

/// The `replace` lines of a go.mod, in blocks or alone.
pub(crate) fn replaces(go_mod: &str) -> Vec<Replace> {
    let mut out = Vec::new();
    let mut in_block = false;
    for line in go_mod.lines() {
        let line = line.split("//").next().unwrap_or_default().trim();
        let body = if in_block {
            if line == ")" {
                in_block = false;
                continue;
            }
            line
        } else if line == "replace (" {
            in_block = true;
            continue;
        } else if let Some(rest) = line.strip_prefix("replace ") {
            rest
        } else {
            continue;
        };
        if let Some((from, to)) = body.split_once("=>") {
            out.push(Replace {
                from: from.trim().to_string(),
                to: to.trim().to_string(),
            });
        }
    }
    out
}

/// The version a `require` line of `go_mod` gives `module` (in a block or alone).
pub(crate) fn required(go_mod: &str, module: &str) -> Option<String> {
    go_mod.lines().find_map(|line| {
        let line = line.trim();
        let line = line.strip_prefix("require ").unwrap_or(line);
        let mut words = line.split_whitespace();
        (words.next() == Some(module)).then(|| words.next().map(str::to_string))?
    })
}

/// `(major, minor, patch)` of a release version.
pub(crate) fn release(version: &str) -> Result<(u64, u64, u64), GoModError> {
    let bad = || GoModError::NotARelease(version.to_string());
    let mut parts = version.strip_prefix('v').ok_or_else(bad)?.split('.');
    let mut next = || parts.next().and_then(|p| p.parse::<u64>().ok()).ok_or_else(bad);
    let v = (next()?, next()?, next()?);
    if parts.next().is_some() {
        return Err(bad());
    }
    Ok(v)
}

/// The version kcp's release `version` publishes staging module `module` under: the release's
/// minor and patch behind the module's major (`github.com/kcp-dev/apimachinery/v2` → `v2.32.3`).
fn published_version(module: &str, version: &str) -> Result<String, GoModError> {
    let (_, minor, patch) = release(version)?;
    let major = module
        .rsplit_once("/v")
        .and_then(|(_, m)| m.parse::<u64>().ok())
        .unwrap_or(0);
    Ok(format!("v{major}.{minor}.{patch}"))
}

/// The wrapper module's go.mod for kcp `version`, from kcp's go.mod at that version.
pub(crate) fn wrapper_go_mod(kcp_go_mod: &str, version: &str, staging: Staging<'_>) -> Result<String, GoModError> {
    release(version)?;
    let go = kcp_go_mod
        .lines()
        .find_map(|l| l.trim().strip_prefix("go ").map(str::trim))
        .ok_or(GoModError::NoGoDirective)?;
    let all = replaces(kcp_go_mod);
    let fork: Vec<&Replace> = all
        .iter()
        .filter(|r| r.from.starts_with("k8s.io/") && r.to.starts_with("github.com/kcp-dev/kubernetes"))
        .collect();
    if fork.is_empty() {
        return Err(GoModError::NoForkReplaces);
    }
    let mut out = String::new();
    // Infallible: writing to a String.
    let _ = writeln!(
        out,
        "// Generated by `cargo xtask kcp build` from kcp {version}'s go.mod: its k8s.io replaces verbatim,\n\
         // its ./staging replaces pointed at the modules kcp publishes from staging/. Do not edit by hand.\n\
         module faros-rs/kcp-build\n\ngo {go}\n\nrequire {KCP_MODULE} {version}\n\n\
         // kcp's Kubernetes fork, exactly as kcp {version} replaces it.\nreplace ("
    );
    for r in &fork {
        let _ = writeln!(out, "\t{} => {}", r.from, r.to);
    }
    out.push_str(")\n\n// kcp's staging modules.\nreplace (\n");
    for r in all.iter().filter(|r| r.to.starts_with("./staging/")) {
        let to = match staging {
            Staging::Published => format!("{} {}", r.from, published_version(&r.from, version)?),
            Staging::Checkout(dir) => {
                let name = r.to.rsplit('/').next().unwrap_or_default();
                dir.join(name).display().to_string()
            }
        };
        let _ = writeln!(out, "\t{} => {to}", r.from);
    }
    out.push_str(")\n");
    Ok(out)
}

/// kcp's staging modules (its `./staging/...` replaces) and the versions it publishes them under.
pub(crate) fn staging_modules(kcp_go_mod: &str, version: &str) -> Result<Vec<super::staging::Module>, GoModError> {
    replaces(kcp_go_mod)
        .into_iter()
        .filter(|r| r.to.starts_with("./staging/"))
        .map(|r| {
            Ok(super::staging::Module {
                published: published_version(&r.from, version)?,
                dir: r.to.rsplit('/').next().unwrap_or_default().to_string(),
                path: r.from,
            })
        })
        .collect()
}

/// Whether two go.mod files require the same kcp and replace the same modules the same way
/// (`go mod tidy` adds `require` blocks to the generated file; those may differ).
pub(crate) fn same_pins(a: &str, b: &str) -> bool {
    let pins = |go_mod: &str| {
        let mut r = replaces(go_mod);
        r.sort_by(|x, y| x.from.cmp(&y.from));
        (required(go_mod, KCP_MODULE), r)
    };
    pins(a) == pins(b)
}

/// The `-ldflags` kcp's Makefile builds with: Kubernetes' version variables in client-go and
/// component-base, `gitVersion` = `<k8s.io/kubernetes version>+kcp-<release>`, statically linked.
/// `build_date` is the release commit's time, so a rebuild is byte-identical.
pub(crate) fn ldflags(kcp_go_mod: &str, version: &str, commit: &str, build_date: &str) -> Result<String, GoModError> {
    let kube = required(kcp_go_mod, "k8s.io/kubernetes").ok_or(GoModError::NoKubernetes)?;
    let (major, minor, _) = release(kube.split(['-', '+']).next().unwrap_or_default())?;
    let short: String = commit.chars().take(12).collect();
    Ok(kube_version_ldflags(
        &format!("{kube}+kcp-{version}"),
        (major, minor),
        &short,
        build_date,
    ))
}

/// Kubernetes' version variables (`hack/lib/version.sh`) in client-go and component-base, as
/// `-ldflags`, statically linked; an empty `commit` is left out, as Kubernetes' build does.
pub(crate) fn kube_version_ldflags(
    git_version: &str,
    (major, minor): (u64, u64),
    commit: &str,
    build_date: &str,
) -> String {
    let mut flags = Vec::new();
    for pkg in ["k8s.io/client-go/pkg/version", "k8s.io/component-base/version"] {
        for (var, value) in [
            ("gitCommit", commit),
            ("gitTreeState", "clean"),
            ("gitVersion", git_version),
            ("gitMajor", &major.to_string()),
            ("gitMinor", &minor.to_string()),
            ("buildDate", build_date),
        ] {
            if !value.is_empty() {
                flags.push(format!("-X {pkg}.{var}={value}"));
            }
        }
    }
    flags.push("-extldflags '-static'".into());
    flags.join(" ")
}

/// A module the Go module proxy (or checksum database) would not serve, from `go`'s stderr.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct Refused {
    /// `module@version`.
    pub module: String,
    /// The proxy's answer as `go` printed it.
    pub error: String,
}

/// The first module `go` says the proxy refused (`403`, `404`, `410`: a "no", not a network
/// failure), if any.
pub(crate) fn refused(stderr: &str) -> Option<Refused> {
    stderr.lines().find_map(|line| {
        let (head, error) = line.split_once(": reading http")?;
        let status = error.split_once(": ")?.1;
        if !["403", "404", "410"].iter().any(|code| status.starts_with(code)) {
            return None;
        }
        // `...imports\n\tpkg: module@version: reading ...` or `verifying module: module@version: reading ...`.
        let module = head.rsplit(": ").next()?.trim();
        let module = module.split_whitespace().last()?;
        module.contains('@').then(|| Refused {
            module: module.to_string(),
            error: format!("reading http{error}"),
        })
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    const KCP_GO_MOD: &str = "module github.com/kcp-dev/kcp\n\n// go-build-version 1.26.4\ngo 1.26.0\n\n\
require (\n\tgithub.com/kcp-dev/sdk v0.0.0\n\tk8s.io/kubernetes v1.36.0\n)\n\n\
replace (\n\tk8s.io/api => github.com/kcp-dev/kubernetes/staging/src/k8s.io/api v0.0.0-20260602065202-e006560fc76a\n\
\tk8s.io/kubernetes => github.com/kcp-dev/kubernetes v1.37.0-alpha.0.0.20260602065202-e006560fc76a\n)\n\n\
replace (\n\tgithub.com/kcp-dev/apimachinery/v2 => ./staging/src/github.com/kcp-dev/apimachinery\n\
\tgithub.com/kcp-dev/sdk => ./staging/src/github.com/kcp-dev/sdk // the SDK\n)\n\n\
replace example.com/other => example.com/other v1.0.0\n";

    #[test]
    fn wrapper_copies_the_fork_and_maps_staging() {
        let published = wrapper_go_mod(KCP_GO_MOD, "v0.32.3", Staging::Published).unwrap();
        for line in [
            "go 1.26.0",
            "require github.com/kcp-dev/kcp v0.32.3",
            "\tk8s.io/api => github.com/kcp-dev/kubernetes/staging/src/k8s.io/api v0.0.0-20260602065202-e006560fc76a",
            "\tk8s.io/kubernetes => github.com/kcp-dev/kubernetes v1.37.0-alpha.0.0.20260602065202-e006560fc76a",
            "\tgithub.com/kcp-dev/apimachinery/v2 => github.com/kcp-dev/apimachinery/v2 v2.32.3",
            "\tgithub.com/kcp-dev/sdk => github.com/kcp-dev/sdk v0.32.3",
        ] {
            assert!(published.lines().any(|l| l == line), "{line:?} missing in\n{published}");
        }
        assert!(
            !published.contains("example.com/other"),
            "only kcp's fork and staging replaces"
        );
        let checkout = wrapper_go_mod(KCP_GO_MOD, "v0.32.3", Staging::Checkout(Path::new("/src/kcp-dev"))).unwrap();
        assert!(
            checkout.contains("\tgithub.com/kcp-dev/sdk => /src/kcp-dev/sdk\n"),
            "{checkout}"
        );
        assert!(checkout.contains("\tgithub.com/kcp-dev/apimachinery/v2 => /src/kcp-dev/apimachinery\n"));
    }

    #[test]
    fn tidied_wrappers_keep_their_pins() {
        let generated = wrapper_go_mod(KCP_GO_MOD, "v0.32.3", Staging::Published).unwrap();
        let tidied = format!("{generated}\nrequire (\n\tcel.dev/expr v0.25.1 // indirect\n)\n");
        assert!(same_pins(&generated, &tidied));
        let moved = generated.replace("sdk v0.32.3", "sdk v0.32.2");
        assert!(!same_pins(&generated, &moved), "a changed replace is drift");
        let bumped = generated.replace(
            "require github.com/kcp-dev/kcp v0.32.3",
            "require github.com/kcp-dev/kcp v0.32.2",
        );
        assert!(!same_pins(&generated, &bumped), "a changed kcp is drift");
    }

    #[test]
    fn wrapper_refuses_what_it_cannot_build() {
        let cases = [
            (
                "go.mod without go",
                KCP_GO_MOD.replace("go 1.26.0", ""),
                "v0.32.3",
                GoModError::NoGoDirective,
            ),
            (
                "no fork",
                KCP_GO_MOD.replace("github.com/kcp-dev/kubernetes", "k8s.io"),
                "v0.32.3",
                GoModError::NoForkReplaces,
            ),
            (
                "a branch",
                KCP_GO_MOD.to_string(),
                "main",
                GoModError::NotARelease("main".into()),
            ),
            (
                "a prerelease",
                KCP_GO_MOD.to_string(),
                "v0.33.0-rc.1",
                GoModError::NotARelease("v0.33.0-rc.1".into()),
            ),
        ];
        for (name, go_mod, version, want) in cases {
            assert_eq!(
                wrapper_go_mod(&go_mod, version, Staging::Published),
                Err(want),
                "{name}"
            );
        }
    }

    #[test]
    fn staging_modules_with_their_published_versions() {
        let got = staging_modules(KCP_GO_MOD, "v0.32.3").unwrap();
        let got: Vec<(&str, &str, &str)> = got
            .iter()
            .map(|m| (m.path.as_str(), m.dir.as_str(), m.published.as_str()))
            .collect();
        assert_eq!(
            got,
            [
                ("github.com/kcp-dev/apimachinery/v2", "apimachinery", "v2.32.3"),
                ("github.com/kcp-dev/sdk", "sdk", "v0.32.3"),
            ]
        );
    }

    #[test]
    fn published_versions() {
        for (module, want) in [
            ("github.com/kcp-dev/sdk", "v0.32.3"),
            ("github.com/kcp-dev/apimachinery/v2", "v2.32.3"),
            ("github.com/kcp-dev/code-generator/v3", "v3.32.3"),
        ] {
            assert_eq!(published_version(module, "v0.32.3").unwrap(), want, "{module}");
        }
    }

    #[test]
    fn ldflags_stamp_like_kcps_makefile() {
        let flags = ldflags(
            KCP_GO_MOD,
            "v0.32.3",
            "08be0a1c8de29f5ec6fc27d3563288be970bd3b4",
            "2026-07-02T13:22:08Z",
        )
        .unwrap();
        for want in [
            "-X k8s.io/component-base/version.gitVersion=v1.36.0+kcp-v0.32.3",
            "-X k8s.io/client-go/pkg/version.gitVersion=v1.36.0+kcp-v0.32.3",
            "-X k8s.io/component-base/version.gitCommit=08be0a1c8de2",
            "-X k8s.io/component-base/version.gitMajor=1",
            "-X k8s.io/component-base/version.gitMinor=36",
            "-X k8s.io/component-base/version.buildDate=2026-07-02T13:22:08Z",
            "-X k8s.io/component-base/version.gitTreeState=clean",
            "-extldflags '-static'",
        ] {
            assert!(flags.contains(want), "{want:?} missing in {flags}");
        }
        assert_eq!(
            ldflags("module x\ngo 1.26\n", "v0.32.3", "abc", "d"),
            Err(GoModError::NoKubernetes)
        );
    }

    #[test]
    fn refusals_name_the_module() {
        let cases = [
            (
                "go: faros-rs/kcp-build imports\n\tgithub.com/kcp-dev/kcp/cmd/kcp imports\n\t\
                 k8s.io/klog/v2/ktesting: github.com/kcp-dev/virtual-workspace-framework@v0.32.3: reading \
                 https://proxy.golang.org/github.com/kcp-dev/virtual-workspace-framework/@v/v0.32.3.mod: 403 Forbidden\n\
                 \tserver response: This module version is not available.",
                Some((
                    "github.com/kcp-dev/virtual-workspace-framework@v0.32.3",
                    "403 Forbidden",
                )),
            ),
            (
                "k8s.io/kubernetes/pkg/apis/core/install: github.com/kcp-dev/kubernetes@v1.37.0-alpha.0: verifying \
                 module: github.com/kcp-dev/kubernetes@v1.37.0-alpha.0: reading \
                 https://proxy.golang.org/sumdb/sum.golang.org/lookup/github.com/kcp-dev/kubernetes@v1.37.0-alpha.0: 404 Not Found",
                Some(("github.com/kcp-dev/kubernetes@v1.37.0-alpha.0", "404 Not Found")),
            ),
            (
                "go: example.com/m@v1.0.0: reading https://proxy.golang.org/example.com/m/@v/v1.0.0.mod: \
                 dial tcp: lookup proxy.golang.org: no such host",
                None,
            ),
            ("# github.com/kcp-dev/kcp/pkg/server\nundefined: x", None),
        ];
        for (stderr, want) in cases {
            let got = refused(stderr);
            match want {
                None => assert_eq!(got, None, "{stderr}"),
                Some((module, status)) => {
                    let got = got.unwrap_or_else(|| panic!("no refusal found in {stderr}"));
                    assert_eq!(got.module, module);
                    assert!(got.error.contains(status), "{}", got.error);
                }
            }
        }
    }
}
