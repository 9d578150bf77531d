//! WorkspaceType semantics, IO-free: resolving a type reference, the alias chain a type stands for
//! (itself plus every type it transitively extends), the parent/child limits, and what a workspace
//! of a type gets during initialization (initializers, default APIBindings).

use faros_core::kcp::WorkspaceTypeSpec;
use faros_core::kcp::tenancy::{APIExportReference, WorkspaceTypeReference, WorkspaceTypeSelector};

/// The initializer kcp uses for default APIBindings.
pub const APIBINDINGS_INITIALIZER: &str = "system:apibindings";

/// A WorkspaceType as admission and the controller see it.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct TypeInfo {
    /// Canonical path of the workspace holding the type.
    pub path: String,
    /// Logical cluster name of that workspace: kcp names the type's initializer after it.
    pub cluster: String,
    pub name: String,
    pub spec: WorkspaceTypeSpec,
}

impl TypeInfo {
    /// `<path>:<name>`, e.g. `root:universal`.
    pub fn qualified(&self) -> String {
        format!("{}:{}", self.path, self.name)
    }
}

/// Why a type could not be resolved.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum TypeError {
    #[error("workspace type \"{0}\" cannot be resolved")]
    Unresolvable(String),
    /// A type named with its path that does not exist, as kcp's admission reports its failed lookup.
    #[error("Internal error occurred: workspacetypes.tenancy.kcp.io \"{0}\" not found")]
    NotFound(String),
    #[error("unable to find inherited workspace type {0}")]
    MissingBase(String),
    #[error("circular dependency detected in workspace type {name}: {chain}")]
    Cycle { name: String, chain: String },
}

fn qualified_ref(r: &WorkspaceTypeReference) -> String {
    r.qualified()
}

/// Resolves `reference` as seen from the workspace at `from_path`: an explicit path is looked up as
/// is; without one, the type is searched in `from_path` and then in each ancestor up to `root`.
pub fn resolve_ref(
    get: &dyn Fn(&str, &str) -> Option<TypeInfo>,
    from_path: &str,
    reference: &WorkspaceTypeReference,
) -> Result<TypeInfo, TypeError> {
    if let Some(path) = reference.path.as_deref().filter(|p| !p.is_empty()) {
        return get(path, &reference.name).ok_or_else(|| TypeError::NotFound(qualified_ref(reference)));
    }
    let mut path = from_path.to_string();
    loop {
        if let Some(t) = get(&path, &reference.name) {
            return Ok(t);
        }
        match path.rsplit_once(':') {
            Some((parent, _)) => path = parent.to_string(),
            None if path != "root" => path = "root".into(),
            None => return Err(TypeError::Unresolvable(qualified_ref(reference))),
        }
    }
}

/// The types `t` stands for: every type it transitively extends (depth first), then `t` itself.
pub fn aliases(get: &dyn Fn(&str, &str) -> Option<TypeInfo>, t: &TypeInfo) -> Result<Vec<TypeInfo>, TypeError> {
    let mut seen = Vec::new();
    let mut out = Vec::new();
    collect_bases(get, t, &mut seen, &mut Vec::new(), &mut out)?;
    out.push(t.clone());
    Ok(out)
}

fn collect_bases(
    get: &dyn Fn(&str, &str) -> Option<TypeInfo>,
    t: &TypeInfo,
    seen: &mut Vec<String>,
    chain: &mut Vec<String>,
    out: &mut Vec<TypeInfo>,
) -> Result<(), TypeError> {
    let me = t.qualified();
    seen.push(me.clone());
    chain.push(me);
    let bases = t.spec.extend.as_ref().and_then(|e| e.with.clone()).unwrap_or_default();
    for base in bases {
        let q = qualified_ref(&base);
        if let Some(i) = chain.iter().position(|c| *c == q) {
            let mut cycle = chain[i..].to_vec();
            cycle.push(q.clone());
            return Err(TypeError::Cycle {
                name: q,
                chain: cycle.join(" -> "),
            });
        }
        if seen.contains(&q) {
            continue;
        }
        let path = base.path.clone().unwrap_or_default();
        let found = get(&path, &base.name).ok_or_else(|| TypeError::MissingBase(q.clone()))?;
        out.push(found.clone());
        collect_bases(get, &found, seen, chain, out)?;
    }
    chain.pop();
    Ok(())
}

fn allowed_names(selector: &WorkspaceTypeSelector) -> Vec<String> {
    let mut names: Vec<String> = selector.types.iter().flatten().map(qualified_ref).collect();
    names.sort();
    names.dedup();
    names
}

fn implemented(aliases: &[TypeInfo]) -> Vec<String> {
    let mut names: Vec<String> = aliases.iter().map(TypeInfo::qualified).collect();
    names.sort();
    names.dedup();
    names
}

/// Go's `%v` of a string slice.
fn go_list(items: &[String]) -> String {
    format!("[{}]", items.join(" "))
}

/// Go's aggregate error text: one message as is, several in brackets.
fn aggregate(errs: Vec<String>) -> Result<(), String> {
    match errs.len() {
        0 => Ok(()),
        1 => Err(errs.into_iter().next().unwrap_or_default()),
        _ => Err(format!("[{}]", errs.join(", "))),
    }
}

/// Every alias of the child with `limitAllowedParents` must accept one of the parent's aliases.
pub fn check_parents(
    parent_aliases: &[TypeInfo],
    child_aliases: &[TypeInfo],
    parent_type: &str,
    child_type: &str,
) -> Result<(), String> {
    let parents = implemented(parent_aliases);
    let mut errs = Vec::new();
    for alias in child_aliases {
        let Some(limit) = &alias.spec.limit_allowed_parents else {
            continue;
        };
        if limit.none == Some(true) {
            return Err(format!("workspace type {child_type} cannot have any parent"));
        }
        let allowed = allowed_names(limit);
        if allowed.is_empty() || parents.iter().any(|p| allowed.contains(p)) {
            continue;
        }
        let q = alias.qualified();
        let extending = if q == child_type {
            String::new()
        } else {
            format!(" extends {q}, which")
        };
        errs.push(format!(
            "workspace type {child_type}{extending} only allows {} parent workspaces, but parent type {parent_type} only implements {}",
            go_list(&allowed),
            go_list(&parents)
        ));
    }
    aggregate(errs)
}

/// Every alias of the parent with `limitAllowedChildren` must accept one of the child's aliases.
pub fn check_children(
    parent_aliases: &[TypeInfo],
    child_aliases: &[TypeInfo],
    parent_type: &str,
    child_type: &str,
) -> Result<(), String> {
    let children = implemented(child_aliases);
    let mut errs = Vec::new();
    for alias in parent_aliases {
        let Some(limit) = &alias.spec.limit_allowed_children else {
            continue;
        };
        if limit.none == Some(true) {
            return Err(format!("workspace type {parent_type} cannot have any children"));
        }
        let allowed = allowed_names(limit);
        if allowed.is_empty() || children.iter().any(|c| allowed.contains(c)) {
            continue;
        }
        let q = alias.qualified();
        let extending = if q == parent_type {
            String::new()
        } else {
            format!(" extends {q}, which")
        };
        errs.push(format!(
            "workspace type {parent_type}{extending} only allows {} child workspaces, but child type {child_type} only implements {}",
            go_list(&allowed),
            go_list(&children)
        ));
    }
    aggregate(errs)
}

/// The default APIBindings of a type chain, deduplicated, in chain order.
pub fn default_bindings(aliases: &[TypeInfo]) -> Vec<APIExportReference> {
    let mut out: Vec<APIExportReference> = Vec::new();
    for alias in aliases {
        for b in alias.spec.default_api_bindings.iter().flatten() {
            let mut b = b.clone();
            if b.path.as_deref().is_none_or(str::is_empty) {
                // An export without a path lives next to the type.
                b.path = Some(alias.path.clone());
            }
            if !out.contains(&b) {
                out.push(b);
            }
        }
    }
    out
}

/// The initializer of a type with `initializer: true`: `<logical cluster name>:<type name>` of the
/// type's workspace (kcp's `InitializerForType`), e.g. `root:universal` or `2x9kq7…:provider` —
/// not its path.
pub fn initializer_name(t: &TypeInfo) -> String {
    format!("{}:{}", t.cluster, t.name)
}

/// The initializers a new workspace of this chain starts with: [`initializer_name`] of every type
/// with `initializer: true`, plus `system:apibindings` when the chain has default APIBindings.
pub fn initializers(aliases: &[TypeInfo]) -> Vec<String> {
    let mut out: Vec<String> = Vec::new();
    for alias in aliases {
        if alias.spec.initializer == Some(true) {
            let q = initializer_name(alias);
            if !out.contains(&q) {
                out.push(q);
            }
        }
    }
    if !default_bindings(aliases).is_empty() {
        out.push(APIBINDINGS_INITIALIZER.into());
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    /// Types outside root live in a logical cluster named after their path here (`root:x` → `x-lc`).
    fn ty(path: &str, name: &str, spec: serde_json::Value) -> TypeInfo {
        TypeInfo {
            cluster: if path == "root" {
                path.into()
            } else {
                format!("{}-lc", path.rsplit(':').next().unwrap())
            },
            path: path.into(),
            name: name.into(),
            spec: serde_json::from_value(spec).unwrap(),
        }
    }

    fn catalog() -> Vec<TypeInfo> {
        vec![
            ty("root", "universal", json!({"initializer": true})),
            ty(
                "root",
                "root",
                json!({"limitAllowedParents": {"none": true}, "extend": {"with": [{"name": "universal", "path": "root"}]}}),
            ),
            ty(
                "root:faros",
                "organization",
                json!({"extend": {"with": [{"name": "universal", "path": "root"}]},
                "limitAllowedChildren": {"types": [{"name": "workspace", "path": "root:faros"}]},
                "defaultAPIBindings": [{"path": "root:faros:system:controllers", "export": "tenants.faros.sh"}]}),
            ),
            ty(
                "root:faros",
                "workspace",
                json!({"limitAllowedParents": {"types": [{"name": "organization", "path": "root:faros"}]}}),
            ),
            ty(
                "root:faros",
                "provider",
                json!({"limitAllowedChildren": {"none": true},
                "defaultAPIBindings": [{"path": "root:faros:system:controllers", "export": "providers.faros.sh"}, {"export": "local"}]}),
            ),
            ty(
                "root:x",
                "a",
                json!({"extend": {"with": [{"name": "b", "path": "root:x"}]}}),
            ),
            ty(
                "root:x",
                "b",
                json!({"extend": {"with": [{"name": "a", "path": "root:x"}]}}),
            ),
            ty(
                "root:x",
                "broken",
                json!({"extend": {"with": [{"name": "gone", "path": "root"}]}}),
            ),
        ]
    }

    fn get(path: &str, name: &str) -> Option<TypeInfo> {
        catalog().into_iter().find(|t| t.path == path && t.name == name)
    }

    fn t(q: &str) -> TypeInfo {
        let (p, n) = q.rsplit_once(':').unwrap();
        get(p, n).unwrap()
    }

    fn names(a: &[TypeInfo]) -> Vec<String> {
        a.iter().map(TypeInfo::qualified).collect()
    }

    #[test]
    fn resolves_references() {
        let r = |name: &str, path: Option<&str>| WorkspaceTypeReference {
            name: name.into(),
            path: path.map(String::from),
        };
        let cases = [
            ("root:faros:tenants", r("workspace", None), Ok("root:faros:workspace")),
            ("root:faros", r("universal", None), Ok("root:universal")),
            (
                "root:other",
                r("workspace", Some("root:faros")),
                Ok("root:faros:workspace"),
            ),
            (
                "root:other",
                r("workspace", None),
                Err(TypeError::Unresolvable("workspace".into())),
            ),
            (
                "root",
                r("nope", Some("root")),
                Err(TypeError::NotFound("root:nope".into())),
            ),
        ];
        for (from, reference, want) in cases {
            let got = resolve_ref(&get, from, &reference).map(|t| t.qualified());
            assert_eq!(got, want.map(String::from), "{from} {reference:?}");
        }
    }

    #[test]
    fn alias_chains() {
        assert_eq!(
            names(&aliases(&get, &t("root:root")).unwrap()),
            ["root:universal", "root:root"]
        );
        assert_eq!(
            names(&aliases(&get, &t("root:faros:provider")).unwrap()),
            ["root:faros:provider"]
        );
        assert_eq!(
            aliases(&get, &t("root:x:a")).unwrap_err().to_string(),
            "circular dependency detected in workspace type root:x:a: root:x:a -> root:x:b -> root:x:a"
        );
        assert_eq!(
            aliases(&get, &t("root:x:broken")).unwrap_err(),
            TypeError::MissingBase("root:gone".into())
        );
    }

    #[test]
    fn limits() {
        let chain = |q: &str| aliases(&get, &t(q)).unwrap();
        let check = |parent: &str, child: &str| {
            let (p, c) = (chain(parent), chain(child));
            check_parents(&p, &c, parent, child).and_then(|_| check_children(&p, &c, parent, child))
        };
        let cases: [(&str, &str, Result<(), &str>); 6] = [
            ("root:root", "root:universal", Ok(())),
            ("root:faros:organization", "root:faros:workspace", Ok(())),
            (
                "root:universal",
                "root:root",
                Err("workspace type root:root cannot have any parent"),
            ),
            (
                "root:faros:provider",
                "root:universal",
                Err("workspace type root:faros:provider cannot have any children"),
            ),
            (
                "root:universal",
                "root:faros:workspace",
                Err(
                    "workspace type root:faros:workspace only allows [root:faros:organization] parent workspaces, but parent type root:universal only implements [root:universal]",
                ),
            ),
            (
                "root:faros:organization",
                "root:universal",
                Err(
                    "workspace type root:faros:organization only allows [root:faros:workspace] child workspaces, but child type root:universal only implements [root:universal]",
                ),
            ),
        ];
        for (parent, child, want) in cases {
            assert_eq!(check(parent, child), want.map_err(String::from), "{parent} -> {child}");
        }
    }

    #[test]
    fn limits_of_extended_types_apply() {
        let child = ty(
            "root:y",
            "team",
            json!({"extend": {"with": [{"name": "workspace", "path": "root:faros"}]}}),
        );
        let c = aliases(&get, &child).unwrap();
        let p = aliases(&get, &t("root:universal")).unwrap();
        assert_eq!(
            check_parents(&p, &c, "root:universal", "root:y:team"),
            Err("workspace type root:y:team extends root:faros:workspace, which only allows [root:faros:organization] parent workspaces, but parent type root:universal only implements [root:universal]".into())
        );
        // A parent accepting an alias of the child accepts the child.
        let org = aliases(&get, &t("root:faros:organization")).unwrap();
        assert_eq!(
            check_children(&org, &c, "root:faros:organization", "root:y:team"),
            Ok(())
        );
    }

    #[test]
    fn initialization_work() {
        let chain = |q: &str| aliases(&get, &t(q)).unwrap();
        assert_eq!(initializers(&chain("root:universal")), ["root:universal"]);
        assert_eq!(
            initializers(&chain("root:faros:organization")),
            ["root:universal", "system:apibindings"]
        );
        assert_eq!(initializers(&chain("root:faros:provider")), ["system:apibindings"]);
        // Named after the logical cluster of the type's workspace, not its path.
        let mut gated = t("root:faros:workspace");
        gated.spec.initializer = Some(true);
        assert_eq!(initializers(&[gated]), ["faros-lc:workspace"]);
        assert!(initializers(&chain("root:faros:workspace")).is_empty());
        let b = default_bindings(&chain("root:faros:provider"));
        assert_eq!(
            b.iter()
                .map(|r| format!("{}:{}", r.path.clone().unwrap(), r.export))
                .collect::<Vec<_>>(),
            ["root:faros:system:controllers:providers.faros.sh", "root:faros:local"]
        );
    }
}
