//! The faros workspace tree in kcp: which structural workspaces exist, parents before children,
//! and the rounds bootstrap creates them in. Pure; [`crate::bootstrap`] creates them and
//! [`crate::identity`] grants in them.

use faros_core::names;

/// One workspace of the tree: created as `name` in `parent`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TreeWorkspace {
    pub parent: &'static str,
    pub name: &'static str,
}

impl TreeWorkspace {
    pub fn path(&self) -> String {
        format!("{}:{}", self.parent, self.name)
    }
}

/// The structural workspaces, parents before children.
pub fn workspace_tree() -> Vec<TreeWorkspace> {
    let ws = |parent, name| TreeWorkspace { parent, name };
    vec![
        ws(names::ROOT_PATH, "faros"),
        ws(names::FAROS_PATH, "system"),
        ws("root:faros:system", "controllers"),
        ws("root:faros:system", "providers"),
        ws(names::FAROS_PATH, "providers"),
        ws(names::FAROS_PATH, "tenants"),
    ]
}

/// The tree in creation rounds: every workspace's parent exists after the rounds before its
/// own, and the workspaces of one round are independent, so a round is created concurrently
/// (each workspace's phases take kcp a moment; doing them one by one made start-up slow).
pub fn creation_rounds(tree: &[TreeWorkspace]) -> Vec<Vec<TreeWorkspace>> {
    let mut rounds: Vec<Vec<TreeWorkspace>> = Vec::new();
    let mut round_of: Vec<(String, usize)> = Vec::new();
    for ws in tree {
        let round = round_of
            .iter()
            .find(|(path, _)| path == ws.parent)
            .map_or(0, |(_, r)| r + 1);
        if rounds.len() <= round {
            rounds.resize_with(round + 1, Vec::new);
        }
        rounds[round].push(ws.clone());
        round_of.push((ws.path(), round));
    }
    rounds
}

#[cfg(test)]
mod tests {
    use super::*;
    use pretty_assertions::assert_eq;

    #[test]
    fn tree_parents_come_first() {
        let tree = workspace_tree();
        let paths: Vec<String> = tree.iter().map(TreeWorkspace::path).collect();
        assert_eq!(
            paths,
            [
                "root:faros",
                "root:faros:system",
                "root:faros:system:controllers",
                "root:faros:system:providers",
                "root:faros:providers",
                "root:faros:tenants",
            ]
        );
        for (i, ws) in tree.iter().enumerate() {
            let parent_known = ws.parent == "root" || paths[..i].iter().any(|p| p == ws.parent);
            assert!(parent_known, "{} created before its parent", ws.path());
        }
        // The names the rest of faros uses must be in the tree.
        for p in [
            names::SYSTEM_CONTROLLERS_PATH,
            names::SYSTEM_PROVIDERS_PATH,
            names::PROVIDERS_PATH,
            names::TENANTS_PATH,
        ] {
            assert!(paths.iter().any(|x| x == p), "{p}");
        }
    }

    #[test]
    fn creation_rounds_put_parents_in_earlier_rounds() {
        let paths = |rounds: Vec<Vec<TreeWorkspace>>| -> Vec<Vec<String>> {
            rounds
                .into_iter()
                .map(|r| r.iter().map(TreeWorkspace::path).collect())
                .collect()
        };
        let ws = |parent, name| TreeWorkspace { parent, name };
        let cases: Vec<(Vec<TreeWorkspace>, Vec<Vec<&str>>)> = vec![
            (vec![], vec![]),
            (vec![ws("root", "a")], vec![vec!["root:a"]]),
            (vec![ws("root", "a"), ws("root", "b")], vec![vec!["root:a", "root:b"]]),
            (
                vec![ws("root", "a"), ws("root:a", "b"), ws("root:a:b", "c"), ws("root", "d")],
                vec![vec!["root:a", "root:d"], vec!["root:a:b"], vec!["root:a:b:c"]],
            ),
            (
                workspace_tree(),
                vec![
                    vec!["root:faros"],
                    vec!["root:faros:system", "root:faros:providers", "root:faros:tenants"],
                    vec!["root:faros:system:controllers", "root:faros:system:providers"],
                ],
            ),
        ];
        for (tree, want) in cases {
            assert_eq!(paths(creation_rounds(&tree)), want);
        }
    }
}
