//! Citations of documents that are not in the repository: design notes and reference material
//! that lived next to it while it was written. A reader of the repository cannot follow them, so
//! code and docs cite `docs/<file>.md#<heading>` instead (checked by [`super::doc_refs`]) or say
//! what they mean in place.
//!
//! IO-free: [`check`] takes the files [`super::doc_refs::scan`] read.

use std::collections::BTreeMap;
use std::fmt;
use std::path::PathBuf;

/// How such citations were written. Each is assembled from parts so this file does not cite
/// them itself.
const PATTERNS: [&str; 5] = [
    concat!("DESIGN", " §"),
    concat!("DESIGN", ".md"),
    concat!("kcp-api", ".md"),
    concat!("shared/", "reference"),
    concat!("../", "shared/"),
];

/// A citation of a document outside the repository.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Finding {
    pub file: PathBuf,
    /// 1-based line.
    pub line: usize,
    /// The pattern that matched.
    pub citation: &'static str,
}

impl fmt::Display for Finding {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "{}:{}: `{}` cites a document that is not in the repository; cite docs/<file>.md#<heading> \
             or say it in place",
            self.file.display(),
            self.line,
            self.citation
        )
    }
}

/// Every such citation in `files`, in file and line order.
pub fn check(files: &BTreeMap<PathBuf, String>) -> Vec<Finding> {
    let mut findings = Vec::new();
    for (file, text) in files {
        for (index, line) in text.lines().enumerate() {
            for citation in PATTERNS.iter().filter(|p| line.contains(**p)) {
                findings.push(Finding {
                    file: file.clone(),
                    line: index + 1,
                    citation,
                });
            }
        }
    }
    findings
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::expect_used)]
mod tests {
    use super::*;

    #[test]
    fn each_kind_of_outside_citation_is_found() {
        let text = [
            "//! fine: docs/architecture.md#layout, RFC 7518 §3.4",
            &format!("//! see {}2-3", PATTERNS[0]),
            &format!("//! see {} and the {} note", PATTERNS[1], PATTERNS[2]),
            &format!(
                "[x](../{}/a.md) [y]({}/z.md)",
                PATTERNS[3],
                PATTERNS[4].trim_end_matches('/')
            ),
        ]
        .join("\n");
        let files = BTreeMap::from([(PathBuf::from("crates/x/src/lib.rs"), text)]);
        let got: Vec<(usize, &str)> = check(&files).iter().map(|f| (f.line, f.citation)).collect();
        assert_eq!(
            got,
            [
                (2, PATTERNS[0]),
                (3, PATTERNS[1]),
                (3, PATTERNS[2]),
                (4, PATTERNS[3]),
                (4, PATTERNS[4])
            ]
        );
        let message = check(&files)[0].to_string();
        assert!(message.starts_with("crates/x/src/lib.rs:2: `"), "{message}");
        assert!(message.contains("cite docs/<file>.md#<heading>"), "{message}");
    }

    /// The repository itself cites nothing outside it.
    #[test]
    fn the_tree_cites_nothing_outside_the_repository() {
        let files = super::super::doc_refs::scan(&crate::locate::project_root()).unwrap();
        let findings: Vec<String> = check(&files).iter().map(ToString::to_string).collect();
        assert!(
            findings.is_empty(),
            "citations of documents outside the repository:\n{}",
            findings.join("\n")
        );
    }
}
