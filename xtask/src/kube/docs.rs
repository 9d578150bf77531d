//! The install commands of docs/install.md that the chart checks run verbatim: the `sh` blocks of
//! its install sections, each with the user it runs as. Blocks that need running Pods (reading a
//! Secret a Pod publishes, a port-forward, `helm test`) are left out: nothing runs Pods here.

/// The sections of docs/install.md installed on the control plane, in order.
pub(crate) const SECTIONS: [&str; 4] = [
    "One node: the umbrella chart on the embedded kcp",
    "Component by component",
    "With real kcp",
    "Without cluster admin: a split install",
];
/// Blocks below this heading run as the namespace-only admin.
const NAMESPACE_ADMIN_HEADING: &str = "The namespace admin's part";

#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub(crate) enum DocsError {
    #[error("docs/install.md has no section \"## {0}\"")]
    NoSection(&'static str),
    #[error("docs/install.md, section \"{0}\": no `sh` block installs a chart")]
    NoInstall(&'static str),
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum User {
    ClusterAdmin,
    NamespaceAdmin,
}

/// One `sh` block.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct Step {
    /// Its first line in the file (1-based).
    pub line: usize,
    pub user: User,
    pub script: String,
}

/// A section's blocks to run.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct Scenario {
    pub section: &'static str,
    pub steps: Vec<Step>,
}

/// Whether a block needs Pods that run.
fn needs_running_pods(script: &str) -> bool {
    ["port-forward", "get secret", "helm test", "--kubeconfig "]
        .iter()
        .any(|w| script.contains(w))
}

/// [`SECTIONS`] of `markdown`, each with its runnable blocks.
pub(crate) fn scenarios(markdown: &str) -> Result<Vec<Scenario>, DocsError> {
    // (section, subsection, line, block) of every sh block.
    let mut blocks: Vec<(String, String, usize, String)> = Vec::new();
    let (mut section, mut subsection) = (String::new(), String::new());
    let mut open: Option<(usize, String)> = None;
    for (i, line) in markdown.lines().enumerate() {
        match &mut open {
            Some((start, text)) => {
                if line.trim_start().starts_with("```") {
                    blocks.push((section.clone(), subsection.clone(), *start, std::mem::take(text)));
                    open = None;
                } else {
                    text.push_str(line);
                    text.push('\n');
                }
            }
            None => {
                if let Some(h) = line.strip_prefix("## ") {
                    section = h.trim().to_string();
                    subsection.clear();
                } else if let Some(h) = line.strip_prefix("### ") {
                    subsection = h.trim().to_string();
                } else if line.trim() == "```sh" {
                    open = Some((i + 2, String::new()));
                }
            }
        }
    }
    SECTIONS
        .iter()
        .map(|&name| {
            if !markdown
                .lines()
                .any(|l| l.strip_prefix("## ").map(str::trim) == Some(name))
            {
                return Err(DocsError::NoSection(name));
            }
            let steps: Vec<Step> = blocks
                .iter()
                .filter(|(s, _, _, script)| s == name && !needs_running_pods(script))
                .map(|(_, sub, line, script)| Step {
                    line: *line,
                    user: if sub == NAMESPACE_ADMIN_HEADING {
                        User::NamespaceAdmin
                    } else {
                        User::ClusterAdmin
                    },
                    script: script.clone(),
                })
                .collect();
            if !steps.iter().any(|s| s.script.contains("helm install")) {
                return Err(DocsError::NoInstall(name));
            }
            Ok(Scenario { section: name, steps })
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    const DOC: &str = "# Installing\n\n## One node: the umbrella chart on the embedded kcp\n\n```sh\nhelm install faros charts/faros\n```\n\n\
```sh\nkubectl -n faros port-forward svc/x 6443 &\n```\n\n## Component by component\n\n```sh\nhelm install kcp charts/faros-kcp\n```\n\n\
## With real kcp\n\n```sh\nkubectl create namespace faros\n```\n\n```yaml\nhelm install not: sh\n```\n\n```sh\nhelm install faros charts/faros\n```\n\n\
### kcp identities\n\n```sh\nhelm test faros\n```\n\n## Without cluster admin: a split install\n\n### The cluster admin's part\n\n\
```sh\nkubectl create namespace faros\n```\n\n### The namespace admin's part\n\n```sh\nhelm install kcp charts/faros-kcp -n faros\n```\n";

    #[test]
    fn sections_with_their_runnable_blocks() {
        let got = scenarios(DOC).unwrap();
        // (section, [(line, user, script)]).
        type Summary<'a> = (&'a str, Vec<(usize, User, &'a str)>);
        let summary: Vec<Summary> = got
            .iter()
            .map(|s| {
                (
                    s.section,
                    s.steps.iter().map(|st| (st.line, st.user, st.script.trim())).collect(),
                )
            })
            .collect();
        assert_eq!(
            summary,
            [
                (
                    SECTIONS[0],
                    vec![(6, User::ClusterAdmin, "helm install faros charts/faros")]
                ),
                (
                    SECTIONS[1],
                    vec![(16, User::ClusterAdmin, "helm install kcp charts/faros-kcp")]
                ),
                (
                    SECTIONS[2],
                    vec![
                        (22, User::ClusterAdmin, "kubectl create namespace faros"),
                        (30, User::ClusterAdmin, "helm install faros charts/faros"),
                    ]
                ),
                (
                    SECTIONS[3],
                    vec![
                        (44, User::ClusterAdmin, "kubectl create namespace faros"),
                        (50, User::NamespaceAdmin, "helm install kcp charts/faros-kcp -n faros"),
                    ]
                ),
            ]
        );
    }

    #[test]
    fn install_md_has_every_section_and_both_users() {
        let path = crate::locate::project_root().join("docs/install.md");
        let got = scenarios(&std::fs::read_to_string(&path).unwrap()).unwrap();
        assert_eq!(got.iter().map(|s| s.section).collect::<Vec<_>>(), SECTIONS);
        let split = &got[3];
        assert!(
            split
                .steps
                .iter()
                .any(|s| s.user == User::ClusterAdmin && s.script.contains("create rolebinding"))
        );
        assert!(
            split
                .steps
                .iter()
                .all(|s| s.user == User::ClusterAdmin || !s.script.contains("--create-namespace")),
            "the namespace admin cannot create namespaces"
        );
        assert!(
            split
                .steps
                .iter()
                .any(|s| s.user == User::NamespaceAdmin && s.script.contains("helm install"))
        );
    }

    #[test]
    fn a_renamed_or_emptied_section_is_an_error() {
        let cases = [
            (
                DOC.replace("## Component by component", "## Components"),
                DocsError::NoSection(SECTIONS[1]),
            ),
            (
                DOC.replace("helm install kcp charts/faros-kcp\n", "echo\n"),
                DocsError::NoInstall(SECTIONS[1]),
            ),
        ];
        for (doc, want) in cases {
            assert_eq!(scenarios(&doc), Err(want));
        }
    }
}
