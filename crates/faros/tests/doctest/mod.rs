//! The documentation's runnable blocks, without IO: which fenced blocks run, the commands and
//! expected outputs in them, the addresses a doc names replaced by the run's, and whether an
//! output matches what the doc shows.
//!
//! A block runs when the line before its fence is a marker comment:
//!
//! - `<!-- doctest -->`: a ```` ```console ```` block run with bash against the `faros dev` of the
//!   test, in a directory where `.faros` is its state directory.
//! - `<!-- doctest: banner -->`: the block shows `faros dev`'s banner: compared with the banner of
//!   the test's `faros dev` (its command is not run again).
//! - `<!-- doctest: standalone -->`: run in a directory of its own, without `faros dev` (the
//!   separate binaries wired by hand).
//!
//! In a block, a line starting with `$ ` is a command (continued by a trailing `\` and by the body
//! of a heredoc), lines starting with `#` are comments, and other non-empty lines are the output
//! the command before them prints. In an output, `…` matches any text within a line, and a line
//! that is only `…` matches any number of lines.

#![allow(dead_code)] // each test binary uses part of it

/// How a block runs.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Mode {
    Dev,
    Banner,
    Standalone,
}

/// One command of a block and what the doc shows it print (empty: not checked).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Step {
    pub command: String,
    pub output: Vec<String>,
}

/// A runnable block.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Block {
    pub file: String,
    /// 1-based line of the opening fence.
    pub line: usize,
    pub mode: Mode,
    pub steps: Vec<Step>,
}

#[derive(Debug, PartialEq, Eq, thiserror::Error)]
pub enum DocError {
    #[error("{file}:{line}: unknown doctest marker {marker:?}")]
    Marker { file: String, line: usize, marker: String },
    #[error("{file}:{line}: a doctest marker must precede a ```console block")]
    NotConsole { file: String, line: usize },
    #[error("{file}:{line}: output before any command")]
    OutputFirst { file: String, line: usize },
    #[error("{file}:{line}: unterminated heredoc or block")]
    Unterminated { file: String, line: usize },
}

fn marker(line: &str) -> Option<&str> {
    let inner = line.trim().strip_prefix("<!--")?.strip_suffix("-->")?.trim();
    let rest = inner.strip_prefix("doctest")?;
    Some(rest.trim_start_matches(':').trim())
}

/// The runnable blocks of `text` (the file `file`).
pub fn blocks(file: &str, text: &str) -> Result<Vec<Block>, DocError> {
    let lines: Vec<&str> = text.lines().collect();
    let mut out = Vec::new();
    let mut i = 0;
    let mut pending: Option<(Mode, usize)> = None;
    while i < lines.len() {
        let line = lines[i];
        if let Some(m) = marker(line) {
            let mode = match m {
                "" => Mode::Dev,
                "banner" => Mode::Banner,
                "standalone" => Mode::Standalone,
                other => {
                    return Err(DocError::Marker {
                        file: file.into(),
                        line: i + 1,
                        marker: other.into(),
                    });
                }
            };
            pending = Some((mode, i + 1));
            i += 1;
            continue;
        }
        let fence = line.trim_start().starts_with("```");
        if let Some((mode, at)) = pending.take() {
            if line.trim() != "```console" {
                return Err(DocError::NotConsole {
                    file: file.into(),
                    line: at,
                });
            }
            let start = i + 1;
            let end = lines[start..]
                .iter()
                .position(|l| l.trim() == "```")
                .map(|p| start + p)
                .ok_or(DocError::Unterminated {
                    file: file.into(),
                    line: i + 1,
                })?;
            out.push(Block {
                file: file.into(),
                line: i + 1,
                mode,
                steps: steps(file, start, &lines[start..end])?,
            });
            i = end + 1;
            continue;
        }
        if fence {
            // Skip any other block whole, so a `$` or marker inside it means nothing.
            let end = lines[i + 1..].iter().position(|l| l.trim_start().starts_with("```"));
            i = end.map_or(lines.len(), |p| i + 1 + p + 1);
            continue;
        }
        i += 1;
    }
    Ok(out)
}

/// The heredoc terminator a command line opens, if any (`<<'YAML'`, `<<EOF`, `<<-"X"`).
fn heredoc(line: &str) -> Option<String> {
    let at = line.find("<<")?;
    let rest = line[at + 2..].trim_start_matches('-').trim_start();
    let word: String = rest
        .trim_start_matches(['\'', '"'])
        .chars()
        .take_while(|c| c.is_ascii_alphanumeric() || *c == '_')
        .collect();
    (!word.is_empty()).then_some(word)
}

fn steps(file: &str, first: usize, lines: &[&str]) -> Result<Vec<Step>, DocError> {
    let mut steps: Vec<Step> = Vec::new();
    let mut i = 0;
    while i < lines.len() {
        let line = lines[i];
        if let Some(cmd) = line.strip_prefix("$ ") {
            let mut command = cmd.to_string();
            let mut last = cmd;
            // Continuations and heredoc bodies belong to the command.
            loop {
                if let Some(word) = heredoc(last) {
                    let end = lines[i + 1..]
                        .iter()
                        .position(|l| l.trim() == word)
                        .ok_or(DocError::Unterminated {
                            file: file.into(),
                            line: first + i + 1,
                        })?;
                    for l in &lines[i + 1..=i + 1 + end] {
                        command.push('\n');
                        command.push_str(l);
                    }
                    i += end + 1;
                    break;
                }
                if last.trim_end().ends_with('\\') && i + 1 < lines.len() {
                    i += 1;
                    last = lines[i];
                    command.push('\n');
                    command.push_str(last);
                    continue;
                }
                break;
            }
            steps.push(Step {
                command,
                output: Vec::new(),
            });
        } else if line.trim().is_empty() || line.trim_start().starts_with('#') {
            // Blank lines and comments say nothing about output.
        } else {
            match steps.last_mut() {
                Some(step) => step.output.push(line.trim_end().to_string()),
                None => {
                    return Err(DocError::OutputFirst {
                        file: file.into(),
                        line: first + i + 1,
                    });
                }
            }
        }
        i += 1;
    }
    Ok(steps)
}

/// `text` with each `(from, to)` replaced, longest `from` first.
pub fn substitute(text: &str, pairs: &[(String, String)]) -> String {
    let mut pairs: Vec<&(String, String)> = pairs.iter().collect();
    pairs.sort_by_key(|(from, _)| std::cmp::Reverse(from.len()));
    // Placeholders first, so a replacement is never replaced again.
    let mut out = text.to_string();
    for (n, (from, _)) in pairs.iter().enumerate() {
        out = out.replace(from.as_str(), &format!("\u{0}{n}\u{0}"));
    }
    for (n, (_, to)) in pairs.iter().enumerate() {
        out = out.replace(&format!("\u{0}{n}\u{0}"), to);
    }
    out
}

/// One line against its pattern (`…` matches any text).
pub fn line_matches(pattern: &str, line: &str) -> bool {
    let parts: Vec<&str> = pattern.split('…').collect();
    if parts.len() == 1 {
        return pattern == line;
    }
    let (first, last) = (parts[0], parts[parts.len() - 1]);
    if !line.starts_with(first) || line.len() < first.len() + last.len() || !line.ends_with(last) {
        return false;
    }
    let mut rest = &line[first.len()..line.len() - last.len()];
    for part in &parts[1..parts.len() - 1] {
        match rest.find(part) {
            Some(at) => rest = &rest[at + part.len()..],
            None => return false,
        }
    }
    true
}

/// The output's lines (trailing whitespace and trailing empty lines dropped) against the pattern
/// lines; a pattern line `…` matches any number of lines.
pub fn output_matches(pattern: &[String], output: &str) -> bool {
    let mut lines: Vec<&str> = output.lines().map(str::trim_end).collect();
    while lines.last().is_some_and(|l| l.is_empty()) {
        lines.pop();
    }
    let lines: Vec<&str> = lines.into_iter().filter(|l| !l.is_empty()).collect();
    fn go(p: &[String], l: &[&str]) -> bool {
        match p.split_first() {
            None => l.is_empty(),
            Some((first, rest)) if first.trim() == "…" => (0..=l.len()).any(|skip| go(rest, &l[skip..])),
            Some((first, rest)) => l
                .split_first()
                .is_some_and(|(line, more)| line_matches(first, line) && go(rest, more)),
        }
    }
    go(pattern, &lines)
}

#[cfg(test)]
mod tests {
    use super::*;

    const DOC: &str = r#"# Title

<!-- doctest -->
```console
$ A=1; export B=2
# a comment
$ curl -s $HUB/x \
    -d '{}'
{"a":1}
$ kubectl apply -f - <<'YAML'
kind: X
YAML
$ echo hi
hi
```

```sh
$ not run
```

<!-- doctest: banner -->
```console
$ faros dev
faros dev is running
…
```
"#;

    #[test]
    fn blocks_commands_and_outputs() {
        let got = blocks("d.md", DOC).unwrap();
        assert_eq!(got.len(), 2);
        assert_eq!((got[0].line, got[0].mode), (4, Mode::Dev));
        let steps: Vec<(&str, Vec<&str>)> = got[0]
            .steps
            .iter()
            .map(|s| (s.command.as_str(), s.output.iter().map(String::as_str).collect()))
            .collect();
        assert_eq!(
            steps,
            vec![
                ("A=1; export B=2", vec![]),
                ("curl -s $HUB/x \\\n    -d '{}'", vec![r#"{"a":1}"#]),
                ("kubectl apply -f - <<'YAML'\nkind: X\nYAML", vec![]),
                ("echo hi", vec!["hi"]),
            ]
        );
        assert_eq!(got[1].mode, Mode::Banner);
        assert_eq!(got[1].steps[0].output, vec!["faros dev is running", "…"]);
    }

    #[test]
    fn bad_markers_are_errors() {
        for (doc, want) in [
            ("<!-- doctest: nope -->\n```console\n```\n", "unknown doctest marker"),
            ("<!-- doctest -->\n```sh\n$ x\n```\n", "must precede"),
            ("<!-- doctest -->\n```console\nout\n```\n", "output before any command"),
            ("<!-- doctest -->\n```console\n$ cat <<EOF\nx\n```\n", "unterminated"),
        ] {
            let err = blocks("d.md", doc).unwrap_err().to_string();
            assert!(err.contains(want), "{doc:?}: {err}");
        }
    }

    #[test]
    fn matching() {
        for (pattern, line, want) in [
            ("abc", "abc", true),
            ("abc", "abd", false),
            ("a…c", "abbbc", true),
            ("a…c", "ac", true),
            ("a…c", "ab", false),
            ("…/x…y", "p/q/x-y", true),
            ("x…x", "x", false),
        ] {
            assert_eq!(line_matches(pattern, line), want, "{pattern} vs {line}");
        }
        let p = |v: &[&str]| v.iter().map(|s| (*s).to_string()).collect::<Vec<_>>();
        assert!(output_matches(&p(&["a", "…", "d"]), "a\nb\nc\nd\n\n"));
        assert!(output_matches(&p(&["a", "…"]), "a"));
        assert!(!output_matches(&p(&["a", "d"]), "a\nb\nd"));
        assert!(output_matches(&p(&["Hello, Ada!"]), "Hello, Ada!"));
    }

    #[test]
    fn substitution_is_simultaneous() {
        let pairs = vec![
            ("127.0.0.1:8443".to_string(), "127.0.0.1:6443".to_string()),
            ("127.0.0.1:6443".to_string(), "127.0.0.1:1".to_string()),
        ];
        assert_eq!(
            substitute("https://127.0.0.1:8443 https://127.0.0.1:6443", &pairs),
            "https://127.0.0.1:6443 https://127.0.0.1:1"
        );
    }
}
