//! References to documentation that must resolve: a `docs/<name>.md` or `docs/<name>.md#<anchor>`
//! named in any `*.rs` or `*.md` file, and in Markdown files also relative links such as
//! `(hub-api.md#signing-keys)` or `(#kubeconfig-mirror)`. Each must name a file of the repository
//! and, with an anchor, a heading of that file under GitHub's slug rules.
//!
//! Everything but reading the tree ([`scan`]) is IO-free: [`check`] takes the files as text.
//! What this module must not do: follow URLs (`https://…/docs/x.md` is someone else's file) or
//! judge links to files that are not Markdown.

use std::collections::{BTreeMap, BTreeSet};
use std::fmt;
use std::path::{Component, Path, PathBuf};

use anyhow::Context;

/// A reference that does not resolve.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Finding {
    /// Repository-relative file holding the reference.
    pub file: PathBuf,
    /// 1-based line.
    pub line: usize,
    /// The reference as written (target and anchor).
    pub reference: String,
    pub problem: Problem,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Problem {
    /// The file it names does not exist (resolved, repository-relative).
    MissingFile(PathBuf),
    /// The file exists but has no heading with this anchor.
    MissingAnchor(PathBuf),
}

impl fmt::Display for Finding {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let file = self.file.display();
        match &self.problem {
            Problem::MissingFile(target) => {
                write!(
                    f,
                    "{file}:{}: `{}`: no such file {}",
                    self.line,
                    self.reference,
                    target.display()
                )
            }
            Problem::MissingAnchor(target) => write!(
                f,
                "{file}:{}: `{}`: {} has no heading with that anchor",
                self.line,
                self.reference,
                target.display()
            ),
        }
    }
}

/// One reference found in a file.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Reference {
    pub line: usize,
    /// As written, for messages.
    pub raw: String,
    /// Repository-relative path of the file it names (normalised; may start with `..` when it
    /// leaves the repository, which then never resolves).
    pub target: PathBuf,
    pub anchor: Option<String>,
}

/// Reads every `*.rs` and `*.md` file under `root`, skipping `target`, `node_modules` and hidden
/// directories (`.git`, `.faros`, …). Keys are repository-relative.
pub fn scan(root: &Path) -> anyhow::Result<BTreeMap<PathBuf, String>> {
    let mut files = BTreeMap::new();
    let mut dirs = vec![root.to_path_buf()];
    while let Some(dir) = dirs.pop() {
        let entries = std::fs::read_dir(&dir).with_context(|| format!("reading directory {}", dir.display()))?;
        for entry in entries {
            let entry = entry.with_context(|| format!("reading directory {}", dir.display()))?;
            let path = entry.path();
            let name = entry.file_name();
            let name = name.to_string_lossy();
            let kind = entry
                .file_type()
                .with_context(|| format!("reading {}", path.display()))?;
            if kind.is_dir() {
                if !(name.starts_with('.') || name == "target" || name == "node_modules") {
                    dirs.push(path);
                }
            } else if kind.is_file() && (name.ends_with(".rs") || name.ends_with(".md")) {
                let text = std::fs::read_to_string(&path).with_context(|| format!("reading {}", path.display()))?;
                let rel = path.strip_prefix(root).unwrap_or(&path).to_path_buf();
                files.insert(rel, text);
            }
        }
    }
    Ok(files)
}

/// Every unresolved reference in `files` (repository-relative path → text), in file and line order.
pub fn check(files: &BTreeMap<PathBuf, String>) -> Vec<Finding> {
    let mut anchor_cache: BTreeMap<&Path, BTreeSet<String>> = BTreeMap::new();
    let mut findings = Vec::new();
    for (file, text) in files {
        for reference in references(file, text) {
            let problem = match files.get_key_value(reference.target.as_path()) {
                None => Some(Problem::MissingFile(reference.target.clone())),
                Some((target, target_text)) => reference.anchor.as_ref().and_then(|anchor| {
                    let known = anchor_cache
                        .entry(target.as_path())
                        .or_insert_with(|| anchors(target_text));
                    (!known.contains(anchor)).then(|| Problem::MissingAnchor(reference.target.clone()))
                }),
            };
            if let Some(problem) = problem {
                findings.push(Finding {
                    file: file.clone(),
                    line: reference.line,
                    reference: reference.raw,
                    problem,
                });
            }
        }
    }
    findings
}

/// The references in one file's text: `docs/…md` anywhere (repository-relative, or relative to the
/// file when written `../docs/…` or `./docs/…`); in Markdown also relative links to `*.md` files
/// and `#anchor` links into the file itself. Duplicates on one line are reported once.
pub fn references(file: &Path, text: &str) -> Vec<Reference> {
    let dir = file.parent().unwrap_or(Path::new(""));
    let markdown = file.extension().is_some_and(|e| e == "md");
    let mut out: Vec<Reference> = Vec::new();
    for (index, line) in text.lines().enumerate() {
        let mut found = docs_paths(line, dir);
        if markdown {
            found.extend(markdown_links(line, file, dir));
        }
        for (raw, target, anchor) in found {
            let reference = Reference {
                line: index + 1,
                raw,
                target,
                anchor,
            };
            let duplicate = out
                .iter()
                .any(|r| r.line == reference.line && r.target == reference.target && r.anchor == reference.anchor);
            if !duplicate {
                out.push(reference);
            }
        }
    }
    out
}

type Found = (String, PathBuf, Option<String>);

fn is_path_char(c: char) -> bool {
    c.is_ascii_alphanumeric() || matches!(c, '_' | '-' | '/')
}

fn is_anchor_char(c: char) -> bool {
    c.is_alphanumeric() || matches!(c, '_' | '-')
}

/// `docs/<name>.md[#anchor]` not inside a longer path or URL.
fn docs_paths(line: &str, dir: &Path) -> Vec<Found> {
    const DOCS: &str = "docs/";
    let mut out = Vec::new();
    let mut from = 0;
    while let Some(pos) = line[from..].find(DOCS).map(|p| p + from) {
        from = pos + DOCS.len();
        let before = &line[..pos];
        // `../docs/` and `./docs/` are relative to the file; `x/docs/`, `mydocs/` and URLs are not ours.
        let relative_prefix = before.len() - before.trim_end_matches("../").trim_end_matches("./").len();
        let prefix_start = pos - relative_prefix;
        let prev = line[..prefix_start].chars().next_back();
        if prev.is_some_and(|c| is_path_char(c) || c == '.') {
            continue;
        }
        let rest = &line[from..];
        let name_len = rest.find(|c: char| !is_path_char(c)).unwrap_or(rest.len());
        let after_name = &rest[name_len..];
        if name_len == 0 || !after_name.starts_with(".md") {
            continue;
        }
        let after_md = &after_name[3..];
        if after_md.chars().next().is_some_and(|c| c.is_ascii_alphanumeric()) {
            continue; // `.mdx` and friends
        }
        let path_text = &line[prefix_start..from + name_len + 3];
        let (anchor, anchor_len) = anchor_after(after_md);
        let raw = &line[prefix_start..from + name_len + 3 + anchor_len];
        let target = if relative_prefix == 0 {
            normalise(Path::new(path_text))
        } else {
            normalise(&dir.join(path_text))
        };
        out.push((raw.to_string(), target, anchor));
    }
    out
}

/// `#anchor` at the start of `text`: the anchor and the bytes it takes (0 when absent).
fn anchor_after(text: &str) -> (Option<String>, usize) {
    let Some(rest) = text.strip_prefix('#') else {
        return (None, 0);
    };
    let len = rest.find(|c: char| !is_anchor_char(c)).unwrap_or(rest.len());
    (Some(rest[..len].to_string()), 1 + len)
}

/// Markdown links `](target)` to a relative `*.md` file or to `#anchor` in this file.
fn markdown_links(line: &str, file: &Path, dir: &Path) -> Vec<Found> {
    let mut out = Vec::new();
    let mut from = 0;
    while let Some(pos) = line[from..].find("](").map(|p| p + from) {
        from = pos + 2;
        let rest = &line[from..];
        let Some(end) = rest.find(')') else { break };
        let link = rest[..end].split_whitespace().next().unwrap_or("");
        let (path_text, anchor) = match link.split_once('#') {
            Some((path, anchor)) => (path, Some(anchor.to_string())),
            None => (link, None),
        };
        if link.contains("://") || link.starts_with('/') || link.starts_with("mailto:") {
            continue;
        }
        let target = if path_text.is_empty() {
            if anchor.is_none() {
                continue;
            }
            file.to_path_buf()
        } else if path_text.ends_with(".md") {
            normalise(&dir.join(path_text))
        } else {
            continue;
        };
        out.push((link.to_string(), target, anchor));
    }
    out
}

/// `a/./b/../c` → `a/c`; a `..` above the start is kept (such a path never resolves).
fn normalise(path: &Path) -> PathBuf {
    let mut parts: Vec<Component> = Vec::new();
    for part in path.components() {
        match part {
            Component::CurDir => {}
            Component::ParentDir if parts.last().is_some_and(|p| matches!(p, Component::Normal(_))) => {
                parts.pop();
            }
            other => parts.push(other),
        }
    }
    parts.iter().collect()
}

/// The anchors GitHub gives the headings of a Markdown file (ATX headings outside code fences;
/// repeated headings get `-1`, `-2`, …).
pub fn anchors(markdown: &str) -> BTreeSet<String> {
    let mut seen: BTreeMap<String, usize> = BTreeMap::new();
    let mut out = BTreeSet::new();
    let mut fence: Option<&str> = None;
    for line in markdown.lines() {
        let trimmed = line.trim_start();
        if let Some(open) = fence {
            if trimmed.starts_with(open) {
                fence = None;
            }
            continue;
        }
        if trimmed.starts_with("```") {
            fence = Some("```");
            continue;
        }
        if trimmed.starts_with("~~~") {
            fence = Some("~~~");
            continue;
        }
        let Some(text) = heading_text(line) else { continue };
        let base = slug(text);
        let count = seen.entry(base.clone()).or_insert(0);
        let anchor = if *count == 0 { base } else { format!("{base}-{count}") };
        *count += 1;
        out.insert(anchor);
    }
    out
}

/// The text of an ATX heading (`## Text ##`), without the markers.
fn heading_text(line: &str) -> Option<&str> {
    let indent = line.len() - line.trim_start_matches(' ').len();
    if indent > 3 {
        return None;
    }
    let rest = &line[indent..];
    let level = rest.len() - rest.trim_start_matches('#').len();
    if !(1..=6).contains(&level) {
        return None;
    }
    let rest = &rest[level..];
    if !(rest.is_empty() || rest.starts_with(' ') || rest.starts_with('\t')) {
        return None;
    }
    let text = rest.trim();
    // A closing run of `#` preceded by a space is not part of the text.
    let without_close = text.trim_end_matches('#');
    let text = if without_close.is_empty() || without_close.ends_with(' ') {
        without_close.trim_end()
    } else {
        text
    };
    Some(text)
}

/// GitHub's heading anchor: the rendered text (code spans and links reduced to their text,
/// emphasis markers dropped), lower-cased, punctuation dropped (letters, digits, `-` and `_` stay),
/// each space a `-`.
pub fn slug(heading: &str) -> String {
    let rendered = render_inline(heading);
    let mut out = String::with_capacity(rendered.len());
    for c in rendered.chars() {
        if c == ' ' {
            out.push('-');
        } else if c.is_alphanumeric() || c == '-' || c == '_' {
            out.extend(c.to_lowercase());
        }
    }
    out
}

/// Markdown inline markup reduced to the text GitHub renders: `[text](url)` → `text`, backticks
/// and `*` removed.
fn render_inline(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut rest = text;
    while let Some(open) = rest.find('[') {
        out.push_str(&rest[..open]);
        let after = &rest[open + 1..];
        match after
            .find("](")
            .and_then(|close| after[close..].find(')').map(|end| (close, close + end)))
        {
            Some((close, end)) => {
                out.push_str(&after[..close]);
                rest = &after[end + 1..];
            }
            None => {
                out.push('[');
                rest = after;
            }
        }
    }
    out.push_str(rest);
    out.retain(|c| c != '`' && c != '*');
    out
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::expect_used)]
mod tests {
    use super::*;

    /// Fixture text naming a documentation file. Built at run time, so the fixtures in this file
    /// are not themselves references the real-tree test would check.
    fn docs(rest: &str) -> String {
        format!("{}{rest}", "docs/")
    }

    fn tree(files: &[(&str, &str)]) -> BTreeMap<PathBuf, String> {
        files.iter().map(|(p, t)| (PathBuf::from(p), t.to_string())).collect()
    }

    #[test]
    fn slugs_follow_github() {
        let cases = [
            ("Layout", "layout"),
            ("Dependency rule", "dependency-rule"),
            (
                "kcp: logical clusters, workspaces, exports, bindings",
                "kcp-logical-clusters-workspaces-exports-bindings",
            ),
            ("Heartbeats (`faros_sdk::heartbeat`)", "heartbeats-faros_sdkheartbeat"),
            ("`init` (`faros_sdk::bootstrap`)", "init-faros_sdkbootstrap"),
            ("Composing it (`faros dev`)", "composing-it-faros-dev"),
            ("Known gaps (refused loudly)", "known-gaps-refused-loudly"),
            (
                "Differences from the original Go faros",
                "differences-from-the-original-go-faros",
            ),
            ("A — B", "a--b"),
            ("See [the docs](x.md) **now**", "see-the-docs-now"),
            (
                "Tenancy: organizations, workspaces, membership",
                "tenancy-organizations-workspaces-membership",
            ),
            ("Émigré 2.0", "émigré-20"),
        ];
        for (heading, want) in cases {
            assert_eq!(slug(heading), want, "{heading}");
        }
    }

    #[test]
    fn anchors_skip_code_fences_and_number_repeats() {
        let md = "# Title\n\ntext\n\n## Part ##\n```sh\n# not a heading\n```\n~~~\n## nor this\n~~~\n\
                  ## Part\n### Part\n    # indented code\n#no-space\n####### seven\n";
        let got: Vec<String> = anchors(md).into_iter().collect();
        assert_eq!(got, ["part", "part-1", "part-2", "title"]);
    }

    /// (raw, target, anchor) of each reference expected on a line.
    type Expected = Vec<(String, String, Option<&'static str>)>;

    #[test]
    fn references_are_found_where_they_are_ours() {
        // (text, expected (raw, target, anchor) list)
        let cases: Vec<(String, Expected)> = vec![
            (
                format!("//! see {}.", docs("a.md#the-part")),
                vec![(docs("a.md#the-part"), docs("a.md"), Some("the-part"))],
            ),
            (format!("`{}`", docs("b.md")), vec![(docs("b.md"), docs("b.md"), None)]),
            (
                format!("({})", docs("sub/c.md")),
                vec![(docs("sub/c.md"), docs("sub/c.md"), None)],
            ),
            (
                format!("../../../{}", docs("d.md")),
                vec![(format!("../../../{}", docs("d.md")), docs("d.md"), None)],
            ),
            (format!("https://github.com/o/r/blob/main/{}", docs("e.md")), vec![]),
            (format!("crates/y/{}", docs("f.md")), vec![]),
            (format!("my{}", docs("g.md")), vec![]),
            (docs("h.mdx"), vec![]),
            (docs("i.rs"), vec![]),
            (docs("<name>.md"), vec![]),
            (
                format!("{} and {} and {}", docs("j.md"), docs("j.md"), docs("k.md#x")),
                vec![
                    (docs("j.md"), docs("j.md"), None),
                    (docs("k.md#x"), docs("k.md"), Some("x")),
                ],
            ),
        ];
        for (text, want) in cases {
            let got: Vec<(String, String, Option<String>)> = references(Path::new("crates/x/src/lib.rs"), &text)
                .into_iter()
                .map(|r| (r.raw, r.target.display().to_string(), r.anchor))
                .collect();
            let want: Vec<(String, String, Option<String>)> = want
                .into_iter()
                .map(|(raw, target, anchor)| (raw, target, anchor.map(str::to_string)))
                .collect();
            assert_eq!(got, want, "{text}");
        }
    }

    #[test]
    fn markdown_links_resolve_relative_to_the_file() {
        let text = "[a](hub-api.md#signing-keys) [b](#local) [c](../README.md) [d](https://x.io/y.md) \
                    [e](images.md) [f](../providers/quickstart/provider.yaml) [g](/abs.md)";
        let got: Vec<(String, Option<String>)> = references(&PathBuf::from(docs("install.md")), text)
            .into_iter()
            .map(|r| (r.target.display().to_string(), r.anchor))
            .collect();
        assert_eq!(
            got,
            [
                (docs("hub-api.md"), Some("signing-keys".to_string())),
                (docs("install.md"), Some("local".to_string())),
                ("README.md".to_string(), None),
                (docs("images.md"), None),
            ]
        );
        // Links in Rust files are not Markdown links.
        assert!(references(Path::new("src/lib.rs"), "[a](hub-api.md)").is_empty());
    }

    #[test]
    fn check_names_the_file_line_and_problem() {
        let (a, b) = (docs("a.md"), docs("b.md"));
        let files = tree(&[
            (
                a.as_str(),
                "# A\n\n## Part one\n\nsee [two](b.md#two) and [gone](b.md#gone)\n[self](#part-one)\n",
            ),
            (b.as_str(), "# B\n## Two\n"),
            (
                "crates/x/src/lib.rs",
                &format!(
                    "//! {}\n//! {}\n//! {}\n",
                    docs("a.md#part-one"),
                    docs("a.md#part-three"),
                    docs("c.md")
                ),
            ),
            ("README.md", &format!("[x]({a}) [y]({}) [z](#nope)\n", docs("b.md#two"))),
        ]);
        let got: Vec<String> = check(&files).iter().map(ToString::to_string).collect();
        assert_eq!(
            got,
            [
                "README.md:1: `#nope`: README.md has no heading with that anchor".to_string(),
                format!(
                    "crates/x/src/lib.rs:2: `{}`: {a} has no heading with that anchor",
                    docs("a.md#part-three")
                ),
                format!(
                    "crates/x/src/lib.rs:3: `{}`: no such file {}",
                    docs("c.md"),
                    docs("c.md")
                ),
                format!("{a}:5: `b.md#gone`: {b} has no heading with that anchor"),
            ]
        );
    }

    #[test]
    fn check_passes_when_everything_resolves() {
        let files = tree(&[
            (docs("a.md").as_str(), "## Part\n"),
            ("src/main.rs", &format!("// {} {}\n", docs("a.md"), docs("a.md#part"))),
        ]);
        assert_eq!(check(&files), []);
    }

    /// The repository itself: every documentation reference in code and docs resolves.
    #[test]
    fn the_tree_has_no_broken_doc_references() {
        let root = crate::locate::project_root();
        let files = scan(&root).unwrap();
        assert!(
            files.keys().any(|p| p == Path::new("docs/architecture.md")),
            "scan found the docs"
        );
        assert!(!files.keys().any(|p| p.starts_with("target")), "scan skips target/");
        let findings: Vec<String> = check(&files).iter().map(ToString::to_string).collect();
        assert!(
            findings.is_empty(),
            "broken documentation references:\n{}",
            findings.join("\n")
        );
    }
}
