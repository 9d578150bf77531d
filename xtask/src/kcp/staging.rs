//! kcp's staging modules from a source archive of the release, for the ones a Go module proxy refuses.
//!
//! kcp's go.mod replaces its staging libraries with `./staging/...`; the wrapper module points those
//! replaces at the modules kcp publishes from them ([`super::gomod`]). A proxy may refuse some of
//! them (the one reachable here answers 403 for every version of
//! `github.com/kcp-dev/virtual-workspace-framework`). Then exactly those modules come from
//! `staging.tar.gz`, `git archive` of kcp's `staging/` at the release's tag: its sha256 checked
//! first, only the refused modules unpacked under `target/kcp/<version>/staging/`, and only their
//! replaces pointed there. Every other module still comes from the proxy, so the build stays as
//! close to a plain module build as the proxy allows. A proxy that serves every module needs no
//! archive at all.
//!
//! The IO-free half (which modules, the rewritten go.mod, the digest check) is here beside the IO
//! (hash and unpack the archive); [`super::build`] asks the proxy ([`crate::gocmd::refusals`]) and
//! decides when to call them.

use std::fmt::Write as _;
use std::io::Read as _;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use sha2::{Digest, Sha256};

use super::gomod::Refused;

/// The archives' digests this repository vouches for, by kcp release: an archive is used only when
/// its sha256 is listed here, or (another release) in the `SHA256SUMS` file beside it.
const PINNED_DIGESTS: [(&str, &str); 1] = [(
    "v0.32.3",
    "6b3d895c92cf9426ec5df5f25da2b1558e8d1176a855ce40e33812f4cec9118a",
)];

/// The archive's file name, and where kcp's modules sit inside it.
const ARCHIVE_NAME: &str = "staging.tar.gz";
const MODULES_IN_ARCHIVE: &str = "staging/src/github.com/kcp-dev";

#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub(crate) enum StagingError {
    #[error(
        "{archive}: sha256 is {got}, but {source_of_truth} says {want}; the archive is not the one this build trusts \
         (re-fetch it, or point --staging-archive at the right one)"
    )]
    DigestMismatch {
        archive: String,
        got: String,
        want: String,
        source_of_truth: String,
    },
    #[error(
        "{archive}: no sha256 to check it against (this repository pins only {pinned}; for kcp {version} \
         put a SHA256SUMS naming {ARCHIVE_NAME} beside it)"
    )]
    NoDigest {
        archive: String,
        version: String,
        pinned: String,
    },
}

/// One staging module of kcp's go.mod as the wrapper resolves it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct Module {
    /// The module path (`github.com/kcp-dev/apimachinery/v2`).
    pub path: String,
    /// Its directory under `staging/src/github.com/kcp-dev/` (`apimachinery`).
    pub dir: String,
    /// The version kcp publishes it under for the release (`v2.32.3`).
    pub published: String,
}

/// The expected sha256 of the archive of kcp `version`: pinned here, else from `sha256sums` (the
/// content of a `SHA256SUMS` file beside it), with where it came from.
pub(crate) fn expected_digest(version: &str, sha256sums: Option<&str>) -> Option<(String, &'static str)> {
    if let Some((_, digest)) = PINNED_DIGESTS.iter().find(|(v, _)| *v == version) {
        return Some((digest.to_string(), "xtask's pinned digest"));
    }
    sha256sums?.lines().find_map(|line| {
        let (digest, name) = line.split_once(char::is_whitespace)?;
        // `sha256sum` marks binary mode with a `*` before the name.
        let name = name.trim().trim_start_matches('*');
        (name == ARCHIVE_NAME && digest.len() == 64).then(|| (digest.to_ascii_lowercase(), "SHA256SUMS beside it"))
    })
}

/// Checks `got` (lowercase hex) against what [`expected_digest`] says for `version`.
pub(crate) fn check_digest(
    archive: &Path,
    version: &str,
    got: &str,
    sha256sums: Option<&str>,
) -> Result<(), StagingError> {
    let Some((want, source_of_truth)) = expected_digest(version, sha256sums) else {
        return Err(StagingError::NoDigest {
            archive: archive.display().to_string(),
            version: version.to_string(),
            pinned: PINNED_DIGESTS.iter().map(|(v, _)| *v).collect::<Vec<_>>().join(", "),
        });
    };
    if got != want {
        return Err(StagingError::DigestMismatch {
            archive: archive.display().to_string(),
            got: got.to_string(),
            want,
            source_of_truth: source_of_truth.to_string(),
        });
    }
    Ok(())
}

/// The modules of `refused` (`module@version`, as the proxy named them) that are kcp staging
/// modules, in `modules`' order; the rest are refusals no archive can answer.
pub(crate) fn split_refused<'a>(modules: &'a [Module], refused: &[Refused]) -> (Vec<&'a Module>, Vec<Refused>) {
    let mut local = Vec::new();
    let mut other = Vec::new();
    for r in refused {
        let path = r.module.split('@').next().unwrap_or_default();
        match modules.iter().find(|m| m.path == path) {
            Some(m) if !local.contains(&m) => local.push(m),
            Some(_) => {}
            None => other.push(r.clone()),
        }
    }
    local.sort_by_key(|m| modules.iter().position(|x| x == *m));
    (local, other)
}

/// `go_mod` (a wrapper's) with the replace of each of `local` pointed at its directory under
/// `modules_dir`; every other line as it was.
pub(crate) fn point_replaces_at(go_mod: &str, local: &[&Module], modules_dir: &Path) -> String {
    let mut out = String::with_capacity(go_mod.len());
    for line in go_mod.lines() {
        let code = line.split("//").next().unwrap_or_default();
        let from = code
            .trim()
            .strip_prefix("replace ")
            .unwrap_or(code.trim())
            .split("=>")
            .next()
            .map(str::trim);
        match local
            .iter()
            .find(|m| code.contains("=>") && from == Some(m.path.as_str()))
        {
            Some(m) => {
                let indent = &line[..line.len() - line.trim_start().len()];
                let keyword = if line.trim_start().starts_with("replace ") {
                    "replace "
                } else {
                    ""
                };
                let _ = writeln!(
                    out,
                    "{indent}{keyword}{} => {}",
                    m.path,
                    modules_dir.join(&m.dir).display()
                );
            }
            None => {
                out.push_str(line);
                out.push('\n');
            }
        }
    }
    out
}

/// The archive `cargo xtask kcp build` uses when none is named: the shared third-party copy for
/// `version` in the directory that holds the repository (`shared/third_party/kcp-<version>/staging.tar.gz`),
/// if there.
pub(crate) fn default_archive(root: &Path, version: &str) -> Option<PathBuf> {
    let path = root
        .parent()?
        .join("shared/third_party")
        .join(format!("kcp-{version}"))
        .join(ARCHIVE_NAME);
    path.is_file().then_some(path)
}

/// Checks the archive's sha256 ([`check_digest`]) before anything is read from it.
pub(crate) fn verify(archive: &Path, version: &str) -> anyhow::Result<()> {
    let mut file = std::fs::File::open(archive).map_err(|e| anyhow::anyhow!("opening {}: {e}", archive.display()))?;
    let mut hasher = Sha256::new();
    let mut buf = vec![0u8; 1 << 16];
    loop {
        let n = file
            .read(&mut buf)
            .map_err(|e| anyhow::anyhow!("reading {}: {e}", archive.display()))?;
        if n == 0 {
            break;
        }
        hasher.update(&buf[..n]);
    }
    let got: String = hasher.finalize().iter().map(|b| format!("{b:02x}")).collect();
    let sums = archive
        .parent()
        .map(|dir| dir.join("SHA256SUMS"))
        .and_then(|p| std::fs::read_to_string(p).ok());
    check_digest(archive, version, &got, sums.as_deref())?;
    Ok(())
}

/// Unpacks the directories of `local` from `archive` into `to` (emptied first) and returns the
/// directory their replaces point into (`<to>/staging/src/github.com/kcp-dev`). A module the
/// archive does not hold is an error naming it.
pub(crate) fn unpack(archive: &Path, local: &[&Module], to: &Path) -> anyhow::Result<PathBuf> {
    if to.exists() {
        std::fs::remove_dir_all(to).map_err(|e| anyhow::anyhow!("removing {}: {e}", to.display()))?;
    }
    std::fs::create_dir_all(to).map_err(|e| anyhow::anyhow!("creating {}: {e}", to.display()))?;
    let out = Command::new("tar")
        .arg("-xzf")
        .arg(archive)
        .arg("-C")
        .arg(to)
        .args(local.iter().map(|m| format!("{MODULES_IN_ARCHIVE}/{}", m.dir)))
        .stdin(Stdio::null())
        .output()
        .map_err(|e| anyhow::anyhow!("running tar: {e}"))?;
    let modules_dir = to.join(MODULES_IN_ARCHIVE);
    let missing: Vec<&str> = local
        .iter()
        .filter(|m| !modules_dir.join(&m.dir).join("go.mod").is_file())
        .map(|m| m.path.as_str())
        .collect();
    if !out.status.success() || !missing.is_empty() {
        anyhow::bail!(
            "{} does not hold {} under {MODULES_IN_ARCHIVE}/ ({}): {}",
            archive.display(),
            missing.join(", "),
            out.status,
            String::from_utf8_lossy(&out.stderr).trim()
        );
    }
    Ok(modules_dir)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn module(path: &str, dir: &str, published: &str) -> Module {
        Module {
            path: path.into(),
            dir: dir.into(),
            published: published.into(),
        }
    }

    fn refusal(module: &str) -> Refused {
        Refused {
            module: module.into(),
            error: "reading https://proxy.golang.org/...: 403 Forbidden".into(),
        }
    }

    const PINNED: &str = "6b3d895c92cf9426ec5df5f25da2b1558e8d1176a855ce40e33812f4cec9118a";

    #[test]
    fn digests() {
        let other = "a".repeat(64);
        let sums = format!("{other}  staging.tar.gz\n{}  LICENSE\n", "b".repeat(64));
        let archive = Path::new("/x/staging.tar.gz");
        // name, release, the archive's digest, SHA256SUMS beside it, Ok or a word of the error.
        type Case<'a> = (&'a str, &'a str, &'a str, Option<&'a str>, Result<(), &'a str>);
        let cases: [Case<'_>; 6] = [
            ("pinned release, pinned digest", "v0.32.3", PINNED, None, Ok(())),
            (
                "the pin wins over a SHA256SUMS beside it",
                "v0.32.3",
                &other,
                Some(&sums),
                Err("xtask's pinned digest"),
            ),
            (
                "another release, from SHA256SUMS",
                "v0.33.0",
                &other,
                Some(&sums),
                Ok(()),
            ),
            (
                "binary-mode marker",
                "v0.33.0",
                &other,
                Some(&sums.replace("  staging", " *staging")),
                Ok(()),
            ),
            (
                "another release, wrong digest",
                "v0.33.0",
                PINNED,
                Some(&sums),
                Err("SHA256SUMS beside it"),
            ),
            (
                "another release, nothing to check against",
                "v0.33.0",
                PINNED,
                None,
                Err("no sha256"),
            ),
        ];
        for (name, version, got, sums, want) in cases {
            let result = check_digest(archive, version, got, sums);
            match want {
                Ok(()) => assert_eq!(result, Ok(()), "{name}"),
                Err(needle) => {
                    let message = result.expect_err(name).to_string();
                    assert!(message.contains(needle), "{name}: {message}");
                }
            }
        }
    }

    #[test]
    fn only_refused_staging_modules_come_from_the_archive() {
        let modules = [
            module("github.com/kcp-dev/apimachinery/v2", "apimachinery", "v2.32.3"),
            module("github.com/kcp-dev/sdk", "sdk", "v0.32.3"),
            module(
                "github.com/kcp-dev/virtual-workspace-framework",
                "virtual-workspace-framework",
                "v0.32.3",
            ),
        ];
        // name, the proxy's refusals, the modules taken from the archive, the refusals left.
        type Case<'a> = (&'a str, Vec<Refused>, Vec<&'a str>, Vec<&'a str>);
        let cases: [Case<'_>; 4] = [
            ("nothing refused", vec![], vec![], vec![]),
            (
                "one staging module",
                vec![refusal("github.com/kcp-dev/virtual-workspace-framework@v0.32.3")],
                vec!["github.com/kcp-dev/virtual-workspace-framework"],
                vec![],
            ),
            (
                "twice, and out of order: once, in go.mod's order",
                vec![
                    refusal("github.com/kcp-dev/virtual-workspace-framework@v0.32.3"),
                    refusal("github.com/kcp-dev/apimachinery/v2@v2.32.3"),
                    refusal("github.com/kcp-dev/virtual-workspace-framework@v0.32.3"),
                ],
                vec![
                    "github.com/kcp-dev/apimachinery/v2",
                    "github.com/kcp-dev/virtual-workspace-framework",
                ],
                vec![],
            ),
            (
                "a module no archive holds",
                vec![
                    refusal("github.com/kcp-dev/kubernetes@v1.37.0-alpha.0"),
                    refusal("github.com/kcp-dev/sdk@v0.32.3"),
                ],
                vec!["github.com/kcp-dev/sdk"],
                vec!["github.com/kcp-dev/kubernetes@v1.37.0-alpha.0"],
            ),
        ];
        for (name, refused, want_local, want_other) in cases {
            let (local, other) = split_refused(&modules, &refused);
            let local: Vec<&str> = local.iter().map(|m| m.path.as_str()).collect();
            let other: Vec<&str> = other.iter().map(|r| r.module.as_str()).collect();
            assert_eq!((local, other), (want_local, want_other), "{name}");
        }
    }

    #[test]
    fn only_the_named_replaces_move() {
        let go_mod = "module faros-rs/kcp-build\n\nrequire (\n\
            \tgithub.com/kcp-dev/virtual-workspace-framework v0.0.0 // indirect\n)\n\n\
            // kcp's staging modules.\nreplace (\n\
            \tgithub.com/kcp-dev/sdk => github.com/kcp-dev/sdk v0.32.3\n\
            \tgithub.com/kcp-dev/virtual-workspace-framework => github.com/kcp-dev/virtual-workspace-framework v0.32.3\n)\n\
            replace github.com/kcp-dev/client-go => github.com/kcp-dev/client-go v0.32.3 // alone\n";
        let vwf = module(
            "github.com/kcp-dev/virtual-workspace-framework",
            "virtual-workspace-framework",
            "v0.32.3",
        );
        let client = module("github.com/kcp-dev/client-go", "client-go", "v0.32.3");
        let dir = Path::new("/t/kcp/v0.32.3/staging/staging/src/github.com/kcp-dev");
        let cases: [(&str, Vec<&Module>, Vec<&str>); 3] = [
            ("none", vec![], vec![]),
            (
                "one in a block; its require line stays",
                vec![&vwf],
                vec![
                    "\tgithub.com/kcp-dev/virtual-workspace-framework => /t/kcp/v0.32.3/staging/staging/src/github.com/kcp-dev/virtual-workspace-framework",
                ],
            ),
            (
                "one alone",
                vec![&client],
                vec![
                    "replace github.com/kcp-dev/client-go => /t/kcp/v0.32.3/staging/staging/src/github.com/kcp-dev/client-go",
                ],
            ),
        ];
        for (name, local, want_new) in cases {
            let got = point_replaces_at(go_mod, &local, dir);
            let changed: Vec<&str> = got.lines().filter(|l| !go_mod.lines().any(|o| o == *l)).collect();
            assert_eq!(changed, want_new, "{name}:\n{got}");
            assert_eq!(got.lines().count(), go_mod.lines().count(), "{name}");
            assert!(
                got.contains("\tgithub.com/kcp-dev/sdk => github.com/kcp-dev/sdk v0.32.3\n"),
                "{name}: served modules stay published"
            );
        }
    }
}
