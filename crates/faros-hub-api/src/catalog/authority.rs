//! Which CatalogEntry may speak for a provider name.
//!
//! Every workspace that binds `providers.faros.sh` shows up in the virtual workspace, so an entry's
//! existence proves nothing. An entry counts only where it is authoritative: in the provider's own
//! workspace `root:faros:providers:<name>` under exactly that name, or admin-applied in
//! `root:faros:system:providers`. When both exist the provider's own workspace wins; the rule is a
//! pure function of (name, path, cluster), so every replica elects the same winner whatever order
//! the watch delivered the entries in.

use faros_core::names;

/// Where an authoritative entry lives; the order is the precedence (first wins).
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Authority {
    /// `root:faros:providers:<name>`, entry named `<name>`.
    ProviderWorkspace,
    /// `root:faros:system:providers`.
    Admin,
}

/// Why an entry does not count.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Rejection {
    /// The entry's workspace path is not known yet (kcp did not answer); retried.
    Unresolved,
    /// The entry lives somewhere that may not register providers.
    NotAuthoritative { path: String },
    /// Another authoritative entry for the same name wins.
    Conflict { winner_path: String },
}

impl Rejection {
    /// CatalogEntry `Ready` reason.
    pub fn reason(&self) -> &'static str {
        match self {
            Self::Unresolved => REASON_WORKSPACE_UNRESOLVED,
            Self::NotAuthoritative { .. } => REASON_NOT_AUTHORITATIVE,
            Self::Conflict { .. } => REASON_CONFLICT,
        }
    }

    /// CatalogEntry `Ready` message: what is wrong and what to do.
    pub fn message(&self, name: &str) -> String {
        match self {
            Self::Unresolved => "The hub could not resolve this entry's workspace yet; it retries.".into(),
            Self::NotAuthoritative { path } => format!(
                "CatalogEntry {name:?} in {path} is ignored: providers register only in {} (entry named after \
                 the provider) or {}.",
                names::provider_workspace_path(name),
                names::SYSTEM_PROVIDERS_PATH
            ),
            Self::Conflict { winner_path } => format!(
                "CatalogEntry {name:?} is ignored: the entry in {winner_path} takes precedence; delete one of them."
            ),
        }
    }
}

/// `Ready=False`: the entry lives in a workspace that may not register this provider.
pub const REASON_NOT_AUTHORITATIVE: &str = "NotAuthoritative";
/// `Ready=False`: another authoritative entry for the same name wins.
pub const REASON_CONFLICT: &str = "Conflict";
/// `Ready=False`: the hub has not resolved the entry's workspace path yet.
pub const REASON_WORKSPACE_UNRESOLVED: &str = "WorkspaceUnresolved";

/// The authority of entry `name` living at workspace `path` (`None` while unresolved).
pub fn authority(name: &str, path: Option<&str>) -> Result<Authority, Rejection> {
    let path = path.ok_or(Rejection::Unresolved)?;
    if names::provider_from_workspace_path(path) == Some(name) {
        return Ok(Authority::ProviderWorkspace);
    }
    if path == names::SYSTEM_PROVIDERS_PATH {
        return Ok(Authority::Admin);
    }
    Err(Rejection::NotAuthoritative { path: path.to_string() })
}

/// One entry competing for a name.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Contender<'a> {
    pub cluster: &'a str,
    pub path: Option<&'a str>,
}

/// The outcome of [`elect`]: index of the winner (if any) and every contender's standing.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Election {
    pub winner: Option<(usize, Authority)>,
    pub standings: Vec<Result<Authority, Rejection>>,
}

/// Elects the entry that speaks for `name`: best [`Authority`], ties (impossible in kcp, where a
/// path has one cluster) broken by cluster name so the result never depends on input order.
pub fn elect(name: &str, contenders: &[Contender<'_>]) -> Election {
    let mut standings: Vec<Result<Authority, Rejection>> = contenders.iter().map(|c| authority(name, c.path)).collect();
    let winner = standings
        .iter()
        .enumerate()
        .filter_map(|(i, s)| s.as_ref().ok().map(|a| (i, *a)))
        .min_by(|(i, a), (j, b)| {
            a.cmp(b)
                .then_with(|| contenders[*i].cluster.cmp(contenders[*j].cluster))
        });
    if let Some((w, _)) = winner {
        let winner_path = contenders[w].path.unwrap_or_default().to_string();
        for (i, s) in standings.iter_mut().enumerate() {
            if i != w && s.is_ok() {
                *s = Err(Rejection::Conflict {
                    winner_path: winner_path.clone(),
                });
            }
        }
    }
    Election { winner, standings }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;
    use pretty_assertions::assert_eq;

    #[test]
    fn authority_table() {
        let not = |p: &str| Err(Rejection::NotAuthoritative { path: p.into() });
        for (name, path, want) in [
            ("q", Some("root:faros:providers:q"), Ok(Authority::ProviderWorkspace)),
            ("q", Some("root:faros:system:providers"), Ok(Authority::Admin)),
            ("q", None, Err(Rejection::Unresolved)),
            // Another provider's workspace cannot claim q.
            ("q", Some("root:faros:providers:evil"), not("root:faros:providers:evil")),
            // A tenant workspace never counts.
            (
                "q",
                Some("root:faros:tenants:acme:dev"),
                not("root:faros:tenants:acme:dev"),
            ),
            (
                "q",
                Some("root:faros:providers:q:child"),
                not("root:faros:providers:q:child"),
            ),
            (
                "q",
                Some("root:faros:system:controllers"),
                not("root:faros:system:controllers"),
            ),
            ("q", Some("root"), not("root")),
        ] {
            assert_eq!(authority(name, path), want, "{name} @ {path:?}");
        }
    }

    #[test]
    fn election_table() {
        let c = |cluster, path| Contender { cluster, path };
        let own = c("c-own", Some("root:faros:providers:q"));
        let admin = c("c-admin", Some("root:faros:system:providers"));
        let tenant = c("c-tenant", Some("root:faros:tenants:acme:dev"));
        let pending = c("c-pending", None);
        let conflict = |p: &str| Err(Rejection::Conflict { winner_path: p.into() });
        type Case<'a> = (
            &'a str,
            Vec<Contender<'a>>,
            Option<(usize, Authority)>,
            Vec<Result<Authority, Rejection>>,
        );
        let cases: Vec<Case<'_>> = vec![
            ("none", vec![], None, vec![]),
            (
                "own only",
                vec![own],
                Some((0, Authority::ProviderWorkspace)),
                vec![Ok(Authority::ProviderWorkspace)],
            ),
            (
                "admin only",
                vec![admin],
                Some((0, Authority::Admin)),
                vec![Ok(Authority::Admin)],
            ),
            (
                "own beats admin regardless of order",
                vec![admin, own],
                Some((1, Authority::ProviderWorkspace)),
                vec![conflict("root:faros:providers:q"), Ok(Authority::ProviderWorkspace)],
            ),
            (
                "tenant spoof never wins, even alone",
                vec![tenant],
                None,
                vec![Err(Rejection::NotAuthoritative {
                    path: "root:faros:tenants:acme:dev".into(),
                })],
            ),
            (
                "tenant spoof next to admin",
                vec![tenant, admin, pending],
                Some((1, Authority::Admin)),
                vec![
                    Err(Rejection::NotAuthoritative {
                        path: "root:faros:tenants:acme:dev".into(),
                    }),
                    Ok(Authority::Admin),
                    Err(Rejection::Unresolved),
                ],
            ),
        ];
        for (what, contenders, winner, standings) in cases {
            assert_eq!(elect("q", &contenders), Election { winner, standings }, "{what}");
        }
        // Same authority twice (cannot happen in kcp): the lower cluster name wins, in any order.
        let a = c("a", Some("root:faros:system:providers"));
        let b = c("b", Some("root:faros:system:providers"));
        assert_eq!(elect("q", &[b, a]).winner, Some((1, Authority::Admin)));
        assert_eq!(elect("q", &[a, b]).winner, Some((0, Authority::Admin)));
    }

    #[test]
    fn messages_say_what_to_do() {
        let m = Rejection::NotAuthoritative {
            path: "root:faros:tenants:a".into(),
        }
        .message("q");
        assert_eq!(
            m,
            "CatalogEntry \"q\" in root:faros:tenants:a is ignored: providers register only in \
             root:faros:providers:q (entry named after the provider) or root:faros:system:providers."
        );
        assert_eq!(
            Rejection::Conflict {
                winner_path: "x".into()
            }
            .reason(),
            "Conflict"
        );
    }
}
