//! In-memory RBAC policy per logical cluster, evaluated like kube-apiserver's RBAC authorizer.
//!
//! The server feeds every Role, ClusterRole, RoleBinding and ClusterRoleBinding write into
//! [`RbacIndex::upsert`] / [`RbacIndex::remove`]. Bindings are indexed by subject (user name,
//! group, ServiceAccount user name) so a request only looks at bindings that name its user.
//! Aggregated ClusterRoles are recomputed whenever a ClusterRole of the same cluster changes,
//! as kube-controller-manager's aggregation controller would (transitively, sorted by name).
//!
//! Logical clusters are keyed by their name (what a ServiceAccount token's cluster claim holds),
//! not by workspace path. A ServiceAccount from another logical cluster matches only the
//! non-ServiceAccount groups it carries (in practice `system:authenticated`): its name and its
//! `system:serviceaccounts*` groups mean nothing outside its own workspace.
//!
//! Not thread-safe by itself: share it as `RwLock<RbacIndex>`; `authorize` takes `&self`.

use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::sync::Arc;

use serde::Deserialize;
use serde_json::{Map, Value};

use super::rbac::{Attributes, Decision, PolicyRule, null_as_empty};
use crate::selector::LabelSelector;

use super::{GROUP_MASTERS, GROUP_SERVICE_ACCOUNTS, SERVICE_ACCOUNT_USER_PREFIX, UserInfo};

#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum RbacKind {
    Role,
    ClusterRole,
    RoleBinding,
    ClusterRoleBinding,
}

impl RbacKind {
    /// From an object's `kind` (`Role`, `ClusterRoleBinding`, ...).
    #[cfg(test)]
    pub fn from_kind(kind: &str) -> Option<Self> {
        match kind {
            "Role" => Some(Self::Role),
            "ClusterRole" => Some(Self::ClusterRole),
            "RoleBinding" => Some(Self::RoleBinding),
            "ClusterRoleBinding" => Some(Self::ClusterRoleBinding),
            _ => None,
        }
    }

    /// From a resource of group `rbac.authorization.k8s.io` (`roles`, `clusterrolebindings`, ...).
    pub fn from_resource(resource: &str) -> Option<Self> {
        match resource {
            "roles" => Some(Self::Role),
            "clusterroles" => Some(Self::ClusterRole),
            "rolebindings" => Some(Self::RoleBinding),
            "clusterrolebindings" => Some(Self::ClusterRoleBinding),
            _ => None,
        }
    }

    fn namespaced(self) -> bool {
        matches!(self, Self::Role | Self::RoleBinding)
    }
}

#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum RbacError {
    #[error("{kind:?} object is not usable for authorization: {reason}")]
    Invalid { kind: RbacKind, reason: String },
}

/// The rules that apply to a user, for SelfSubjectRulesReview. Non-empty `errors` means the list is
/// incomplete (a binding references a role that does not exist).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct RulesFor {
    pub rules: Vec<PolicyRule>,
    pub errors: Vec<String>,
}

#[derive(Default, Debug)]
pub struct RbacIndex {
    clusters: HashMap<String, ClusterPolicy>,
}

#[derive(Default, Debug)]
struct ClusterPolicy {
    roles: HashMap<(String, String), Arc<[PolicyRule]>>,
    /// Sorted by name because aggregation visits roles in name order.
    cluster_roles: BTreeMap<String, ClusterRoleEntry>,
    role_bindings: HashMap<(String, String), Binding>,
    cluster_role_bindings: HashMap<String, Binding>,
    crb_by_subject: SubjectIndex<String>,
    /// Per namespace, because a RoleBinding applies only to requests in its namespace.
    rb_by_subject: HashMap<String, SubjectIndex<String>>,
}

#[derive(Debug)]
struct ClusterRoleEntry {
    labels: Map<String, Value>,
    rules: Arc<[PolicyRule]>,
    aggregation: Option<Vec<LabelMatcher>>,
    /// `rules`, or for aggregating roles the union computed from the selected roles.
    effective: Arc<[PolicyRule]>,
}

#[derive(Debug, Clone)]
enum RoleRef {
    Role(String),
    ClusterRole(String),
    Unsupported(String),
}

#[derive(Debug, Clone)]
struct Binding {
    role_ref: RoleRef,
    subjects: Vec<SubjectKey>,
}

/// A subject in the form a user is looked up by; ServiceAccounts by their user name, which is
/// exactly how Kubernetes compares them.
#[derive(Debug, Clone, PartialEq, Eq)]
enum SubjectKey {
    User(String),
    Group(String),
    ServiceAccount(String),
}

#[derive(Debug)]
struct SubjectIndex<K> {
    users: HashMap<String, BTreeSet<K>>,
    groups: HashMap<String, BTreeSet<K>>,
    service_accounts: HashMap<String, BTreeSet<K>>,
}

impl<K> Default for SubjectIndex<K> {
    fn default() -> Self {
        Self {
            users: HashMap::new(),
            groups: HashMap::new(),
            service_accounts: HashMap::new(),
        }
    }
}

impl<K: Ord + Clone> SubjectIndex<K> {
    fn map_for<'a>(&'a mut self, subject: &'a SubjectKey) -> (&'a mut HashMap<String, BTreeSet<K>>, &'a str) {
        match subject {
            SubjectKey::User(n) => (&mut self.users, n),
            SubjectKey::Group(n) => (&mut self.groups, n),
            SubjectKey::ServiceAccount(n) => (&mut self.service_accounts, n),
        }
    }

    fn insert(&mut self, subject: &SubjectKey, binding: &K) {
        let (map, key) = self.map_for(subject);
        map.entry(key.to_string()).or_default().insert(binding.clone());
    }

    fn remove(&mut self, subject: &SubjectKey, binding: &K) {
        let (map, key) = self.map_for(subject);
        if let Some(set) = map.get_mut(key) {
            set.remove(binding);
            if set.is_empty() {
                map.remove(key);
            }
        }
    }

    fn is_empty(&self) -> bool {
        self.users.is_empty() && self.groups.is_empty() && self.service_accounts.is_empty()
    }

    /// Bindings naming any of the user's identities, each once, in name order.
    fn lookup<'a>(&'a self, who: &Who<'_>) -> BTreeSet<&'a K> {
        let mut found = BTreeSet::new();
        let mut add = |map: &'a HashMap<String, BTreeSet<K>>, key: &str| {
            if let Some(set) = map.get(key) {
                found.extend(set.iter());
            }
        };
        if let Some(name) = who.username {
            add(&self.users, name);
            add(&self.service_accounts, name);
        }
        if let Some(global) = &who.global {
            add(&self.users, global);
        }
        for group in &who.groups {
            add(&self.groups, group);
        }
        found
    }
}

/// The identities of a user as seen from one logical cluster.
struct Who<'a> {
    username: Option<&'a str>,
    /// kcp's GlobalServiceAccount alias of a ServiceAccount,
    /// `system:kcp:serviceaccount:<cluster>:<namespace>:<name>`, matched against User subjects in
    /// every cluster: the one way to grant a ServiceAccount of another workspace access.
    global: Option<String>,
    groups: Vec<&'a str>,
}

/// The GlobalServiceAccount user name of a ServiceAccount user, if it is one.
pub fn global_service_account_name(user: &UserInfo) -> Option<String> {
    let (ns, name) = user.service_account()?;
    let cluster = user.cluster_name()?;
    Some(format!("system:kcp:serviceaccount:{cluster}:{ns}:{name}"))
}

impl<'a> Who<'a> {
    fn new(user: &'a UserInfo, cluster: &str) -> Self {
        let foreign_sa = user.service_account().is_some() && user.cluster_name().is_some_and(|c| c != cluster);
        let global = global_service_account_name(user);
        if !foreign_sa {
            return Self {
                username: Some(&user.username),
                global,
                groups: user.groups.iter().map(String::as_str).collect(),
            };
        }
        let groups = user
            .groups
            .iter()
            .map(String::as_str)
            .filter(|g| {
                *g != GROUP_SERVICE_ACCOUNTS
                    && !g
                        .strip_prefix(GROUP_SERVICE_ACCOUNTS)
                        .is_some_and(|rest| rest.starts_with(':'))
            })
            .collect();
        Self {
            username: None,
            global,
            groups,
        }
    }
}

// ---- object parsing -------------------------------------------------------------------------

#[derive(Deserialize)]
struct Meta {
    #[serde(default)]
    name: String,
    #[serde(default)]
    namespace: String,
    #[serde(default)]
    labels: Option<Map<String, Value>>,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct RoleObject {
    metadata: Meta,
    #[serde(default, deserialize_with = "null_as_empty")]
    rules: Vec<PolicyRule>,
    #[serde(default)]
    aggregation_rule: Option<AggregationRule>,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct AggregationRule {
    #[serde(default, deserialize_with = "null_as_empty")]
    cluster_role_selectors: Vec<Value>,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct BindingObject {
    metadata: Meta,
    role_ref: RoleRefObject,
    #[serde(default, deserialize_with = "null_as_empty")]
    subjects: Vec<SubjectObject>,
}

#[derive(Deserialize)]
struct RoleRefObject {
    kind: String,
    name: String,
}

#[derive(Deserialize)]
struct SubjectObject {
    kind: String,
    name: String,
    #[serde(default)]
    namespace: String,
}

/// Kubernetes' `appliesToUser`, resolved once at index time: ServiceAccount subjects without a
/// namespace take the binding's; one that still has none (in a ClusterRoleBinding) matches no one.
fn subject_key(subject: &SubjectObject, binding_namespace: &str) -> Option<SubjectKey> {
    match subject.kind.as_str() {
        "User" => Some(SubjectKey::User(subject.name.clone())),
        "Group" => Some(SubjectKey::Group(subject.name.clone())),
        "ServiceAccount" => {
            let ns = if subject.namespace.is_empty() {
                binding_namespace
            } else {
                &subject.namespace
            };
            if ns.is_empty() {
                return None;
            }
            Some(SubjectKey::ServiceAccount(format!(
                "{SERVICE_ACCOUNT_USER_PREFIX}{ns}:{}",
                subject.name
            )))
        }
        _ => None,
    }
}

fn invalid(kind: RbacKind, reason: impl Into<String>) -> RbacError {
    RbacError::Invalid {
        kind,
        reason: reason.into(),
    }
}

fn parse_meta(kind: RbacKind, meta: &Meta) -> Result<(), RbacError> {
    if meta.name.is_empty() {
        return Err(invalid(kind, "metadata.name is empty"));
    }
    if kind.namespaced() && meta.namespace.is_empty() {
        return Err(invalid(kind, "metadata.namespace is empty"));
    }
    Ok(())
}

// ---- label selectors for aggregation ----------------------------------------------------------

/// One `clusterRoleSelectors` entry. A `null` or malformed selector matches nothing (the
/// aggregation controller would refuse it; the role then aggregates no rules from it).
#[derive(Debug, Clone)]
struct LabelMatcher(Option<LabelSelector>);

impl LabelMatcher {
    fn parse(selector: &Value) -> Self {
        if selector.is_null() {
            return Self(None);
        }
        Self(LabelSelector::from_label_selector(selector).ok())
    }

    fn matches(&self, labels: &Map<String, Value>) -> bool {
        self.0.as_ref().is_some_and(|s| s.matches(Some(labels)))
    }
}

// ---- the index -------------------------------------------------------------------------------

impl RbacIndex {
    #[cfg(test)]
    pub fn new() -> Self {
        Self::default()
    }

    /// Adds or replaces one RBAC object of `cluster`. An object that cannot be used (no name, no
    /// roleRef, wrong shape) is refused and the previous version, if any, stays in force.
    pub fn upsert(&mut self, cluster: &str, kind: RbacKind, obj: &Value) -> Result<(), RbacError> {
        match kind {
            RbacKind::Role | RbacKind::ClusterRole => {
                let role = RoleObject::deserialize(obj).map_err(|e| invalid(kind, e.to_string()))?;
                parse_meta(kind, &role.metadata)?;
                let policy = self.clusters.entry(cluster.to_string()).or_default();
                let rules: Arc<[PolicyRule]> = role.rules.into();
                if kind == RbacKind::Role {
                    policy
                        .roles
                        .insert((role.metadata.namespace, role.metadata.name), rules);
                } else {
                    let aggregation = role
                        .aggregation_rule
                        .map(|a| a.cluster_role_selectors.iter().map(LabelMatcher::parse).collect());
                    let entry = ClusterRoleEntry {
                        labels: role.metadata.labels.unwrap_or_default(),
                        effective: rules.clone(),
                        rules,
                        aggregation,
                    };
                    policy.cluster_roles.insert(role.metadata.name, entry);
                    policy.recompute_aggregation();
                }
            }
            RbacKind::RoleBinding | RbacKind::ClusterRoleBinding => {
                let binding = BindingObject::deserialize(obj).map_err(|e| invalid(kind, e.to_string()))?;
                parse_meta(kind, &binding.metadata)?;
                let namespace = if kind == RbacKind::RoleBinding {
                    binding.metadata.namespace
                } else {
                    String::new()
                };
                let role_ref = match binding.role_ref.kind.as_str() {
                    "Role" => RoleRef::Role(binding.role_ref.name),
                    "ClusterRole" => RoleRef::ClusterRole(binding.role_ref.name),
                    other => RoleRef::Unsupported(other.to_string()),
                };
                let subjects = binding
                    .subjects
                    .iter()
                    .filter_map(|s| subject_key(s, &namespace))
                    .collect();
                let entry = Binding { role_ref, subjects };
                let name = binding.metadata.name;
                let policy = self.clusters.entry(cluster.to_string()).or_default();
                policy.remove_binding(kind, &namespace, &name);
                if kind == RbacKind::RoleBinding {
                    let index = policy.rb_by_subject.entry(namespace.clone()).or_default();
                    for s in &entry.subjects {
                        index.insert(s, &name);
                    }
                    policy.role_bindings.insert((namespace, name), entry);
                } else {
                    for s in &entry.subjects {
                        policy.crb_by_subject.insert(s, &name);
                    }
                    policy.cluster_role_bindings.insert(name, entry);
                }
            }
        }
        Ok(())
    }

    /// Forgets one object; `namespace` is ignored for cluster-scoped kinds.
    pub fn remove(&mut self, cluster: &str, kind: RbacKind, namespace: &str, name: &str) {
        let Some(policy) = self.clusters.get_mut(cluster) else {
            return;
        };
        match kind {
            RbacKind::Role => {
                policy.roles.remove(&(namespace.to_string(), name.to_string()));
            }
            RbacKind::ClusterRole => {
                if policy.cluster_roles.remove(name).is_some() {
                    policy.recompute_aggregation();
                }
            }
            RbacKind::RoleBinding => policy.remove_binding(kind, namespace, name),
            RbacKind::ClusterRoleBinding => policy.remove_binding(kind, "", name),
        }
    }

    /// Forgets everything of a deleted logical cluster.
    pub fn remove_cluster(&mut self, cluster: &str) {
        self.clusters.remove(cluster);
    }

    /// The rules of an aggregating ClusterRole as the aggregation controller would write them into
    /// the object (`None` for unknown or non-aggregating roles).
    #[cfg(test)]
    pub fn aggregated_rules(&self, cluster: &str, name: &str) -> Option<Vec<PolicyRule>> {
        let entry = self.clusters.get(cluster)?.cluster_roles.get(name)?;
        entry.aggregation.as_ref()?;
        Some(entry.effective.to_vec())
    }

    /// RBAC's decision for one request in one logical cluster. `system:masters` is always allowed.
    pub fn authorize(&self, cluster: &str, attrs: &Attributes<'_>) -> Decision {
        if attrs.user.in_group(GROUP_MASTERS) {
            return Decision::Allow;
        }
        if super::bootstrap_roles::bound_rules(&attrs.user.groups)
            .is_some_and(|rules| rules.iter().any(|r| r.allows(attrs)))
        {
            return Decision::Allow;
        }
        let Some(policy) = self.clusters.get(cluster) else {
            return Decision::Deny { reason: String::new() };
        };
        let mut errors = Vec::new();
        let allowed = policy.visit(
            &Who::new(attrs.user, cluster),
            attrs.namespace,
            &mut |rules| match rules {
                Ok(rules) => rules.iter().any(|r| r.allows(attrs)),
                Err(e) => {
                    errors.push(e);
                    false
                }
            },
        );
        if allowed {
            Decision::Allow
        } else {
            Decision::Deny {
                reason: rbac_reason(errors),
            }
        }
    }

    /// All rules that apply to `user` in `namespace` (cluster-wide ones included), in evaluation order.
    pub fn rules_for(&self, cluster: &str, user: &UserInfo, namespace: &str) -> RulesFor {
        let mut out = RulesFor::default();
        if user.in_group(GROUP_MASTERS) {
            let star = vec!["*".to_string()];
            out.rules.push(PolicyRule {
                verbs: star.clone(),
                api_groups: star.clone(),
                resources: star.clone(),
                ..Default::default()
            });
            out.rules.push(PolicyRule {
                verbs: star.clone(),
                non_resource_urls: star,
                ..Default::default()
            });
        }
        if let Some(rules) = super::bootstrap_roles::bound_rules(&user.groups) {
            out.rules.extend(rules.iter().cloned());
        }
        let Some(policy) = self.clusters.get(cluster) else {
            return out;
        };
        policy.visit(&Who::new(user, cluster), namespace, &mut |rules| {
            match rules {
                Ok(rules) => out.rules.extend(rules.iter().cloned()),
                Err(e) => out.errors.push(e),
            }
            false
        });
        out
    }
}

/// kube's RBAC authorizer reason: `RBAC: ` + an aggregate of the role lookup errors.
fn rbac_reason(mut errors: Vec<String>) -> String {
    let mut seen = BTreeSet::new();
    errors.retain(|e| seen.insert(e.clone()));
    match errors.len() {
        0 => String::new(),
        1 => format!("RBAC: {}", errors[0]),
        _ => format!("RBAC: [{}]", errors.join(", ")),
    }
}

impl ClusterPolicy {
    fn remove_binding(&mut self, kind: RbacKind, namespace: &str, name: &str) {
        let name = name.to_string();
        if kind == RbacKind::RoleBinding {
            let Some(old) = self.role_bindings.remove(&(namespace.to_string(), name.clone())) else {
                return;
            };
            if let Some(index) = self.rb_by_subject.get_mut(namespace) {
                for s in &old.subjects {
                    index.remove(s, &name);
                }
                if index.is_empty() {
                    self.rb_by_subject.remove(namespace);
                }
            }
        } else if let Some(old) = self.cluster_role_bindings.remove(&name) {
            for s in &old.subjects {
                self.crb_by_subject.remove(s, &name);
            }
        }
    }

    fn role_rules(&self, role_ref: &RoleRef, binding_namespace: &str) -> Result<Arc<[PolicyRule]>, String> {
        match role_ref {
            RoleRef::ClusterRole(name) => self
                .cluster_roles
                .get(name)
                .map(|e| e.effective.clone())
                .or_else(|| super::bootstrap_roles::rules(name))
                .ok_or_else(|| format!("clusterrole.rbac.authorization.k8s.io \"{name}\" not found")),
            RoleRef::Role(name) => self
                .roles
                .get(&(binding_namespace.to_string(), name.clone()))
                .cloned()
                .ok_or_else(|| format!("role.rbac.authorization.k8s.io \"{name}\" not found")),
            RoleRef::Unsupported(kind) => Err(format!("unsupported role reference kind: \"{kind}\"")),
        }
    }

    /// Feeds the rules of every binding that applies to `who` to `visitor` (ClusterRoleBindings,
    /// then RoleBindings of `namespace`) until it returns true; returns whether it did.
    fn visit(
        &self,
        who: &Who<'_>,
        namespace: &str,
        visitor: &mut dyn FnMut(Result<Arc<[PolicyRule]>, String>) -> bool,
    ) -> bool {
        for name in self.crb_by_subject.lookup(who) {
            if let Some(binding) = self.cluster_role_bindings.get(name)
                && visitor(self.role_rules(&binding.role_ref, ""))
            {
                return true;
            }
        }
        if namespace.is_empty() {
            return false;
        }
        let Some(index) = self.rb_by_subject.get(namespace) else {
            return false;
        };
        for name in index.lookup(who) {
            if let Some(binding) = self.role_bindings.get(&(namespace.to_string(), name.clone()))
                && visitor(self.role_rules(&binding.role_ref, namespace))
            {
                return true;
            }
        }
        false
    }

    fn recompute_aggregation(&mut self) {
        let aggregating: Vec<String> = self
            .cluster_roles
            .iter()
            .filter(|(_, e)| e.aggregation.is_some())
            .map(|(n, _)| n.clone())
            .collect();
        if aggregating.is_empty() {
            return;
        }
        let mut memo = HashMap::new();
        for name in &aggregating {
            self.effective_rules(name, &mut memo, &mut Vec::new());
        }
        for (name, rules) in memo {
            if let Some(entry) = self.cluster_roles.get_mut(&name)
                && entry.aggregation.is_some()
            {
                entry.effective = rules;
            }
        }
    }

    /// The aggregation controller's union, followed transitively through aggregating roles; a
    /// cycle contributes nothing beyond what the roles on it select elsewhere.
    fn effective_rules(
        &self,
        name: &str,
        memo: &mut HashMap<String, Arc<[PolicyRule]>>,
        stack: &mut Vec<String>,
    ) -> Arc<[PolicyRule]> {
        if let Some(rules) = memo.get(name) {
            return rules.clone();
        }
        let Some(entry) = self.cluster_roles.get(name) else {
            return Arc::from([]);
        };
        let Some(selectors) = &entry.aggregation else {
            return entry.rules.clone();
        };
        if stack.iter().any(|n| n == name) {
            return Arc::from([]);
        }
        stack.push(name.to_string());
        let mut rules: Vec<PolicyRule> = Vec::new();
        for selector in selectors {
            for (other, other_entry) in &self.cluster_roles {
                if other == name || !selector.matches(&other_entry.labels) {
                    continue;
                }
                for rule in self.effective_rules(other, memo, stack).iter() {
                    if !rules.contains(rule) {
                        rules.push(rule.clone());
                    }
                }
            }
        }
        stack.pop();
        let rules: Arc<[PolicyRule]> = rules.into();
        if stack.is_empty() {
            memo.insert(name.to_string(), rules.clone());
        }
        rules
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::expect_used)]
mod tests {
    use super::*;
    use crate::auth::{EXTRA_CLUSTER_NAME, SaClaims};
    use pretty_assertions::assert_eq;
    use serde_json::json;

    const C: &str = "c1";

    fn user(name: &str, groups: &[&str]) -> UserInfo {
        UserInfo {
            username: name.into(),
            groups: groups.iter().map(|g| g.to_string()).collect(),
            ..Default::default()
        }
    }

    fn cluster_role(name: &str, labels: Value, rules: Value) -> Value {
        json!({"kind": "ClusterRole", "metadata": {"name": name, "labels": labels}, "rules": rules})
    }

    fn binding(kind: &str, ns: &str, name: &str, role_kind: &str, role: &str, subjects: Value) -> Value {
        let mut metadata = json!({"name": name});
        if !ns.is_empty() {
            metadata["namespace"] = json!(ns);
        }
        json!({
            "kind": kind, "metadata": metadata,
            "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": role_kind, "name": role},
            "subjects": subjects
        })
    }

    /// One cluster's policy; every case in the tables below refers to it.
    fn index() -> RbacIndex {
        let crb = |name: &str, role: &str, subjects: Value| {
            binding("ClusterRoleBinding", "", name, "ClusterRole", role, subjects)
        };
        let rb = |name: &str, kind: &str, role: &str, subjects: Value| {
            binding("RoleBinding", "team", name, kind, role, subjects)
        };
        let objects = vec![
            cluster_role(
                "cluster-admin",
                json!({}),
                json!([
                    {"verbs": ["*"], "apiGroups": ["*"], "resources": ["*"]},
                    {"verbs": ["*"], "nonResourceURLs": ["*"]}
                ]),
            ),
            cluster_role(
                "cm-reader",
                json!({}),
                json!([
                    {"verbs": ["get", "list"], "apiGroups": [""], "resources": ["configmaps"]}
                ]),
            ),
            cluster_role(
                "bind-export",
                json!({}),
                json!([{
                    "verbs": ["bind"], "apiGroups": ["apis.kcp.io"], "resources": ["apiexports"],
                    "resourceNames": ["quickstart"]
                }]),
            ),
            cluster_role(
                "healthz",
                json!({}),
                json!([
                    {"verbs": ["get"], "nonResourceURLs": ["/healthz", "/readyz/*"]}
                ]),
            ),
            cluster_role(
                "status-writer",
                json!({}),
                json!([
                    {"verbs": ["update", "patch"], "apiGroups": ["example.io"], "resources": ["*/status"]}
                ]),
            ),
            // Aggregation: "aggregate" collects every role labelled agg=yes.
            json!({
                "kind": "ClusterRole", "metadata": {"name": "aggregate"},
                "aggregationRule": {"clusterRoleSelectors": [{"matchLabels": {"agg": "yes"}}]},
                "rules": null
            }),
            cluster_role(
                "part-b",
                json!({"agg": "yes"}),
                json!([
                    {"verbs": ["get"], "apiGroups": [""], "resources": ["secrets"]}
                ]),
            ),
            cluster_role(
                "part-a",
                json!({"agg": "yes"}),
                json!([
                    {"verbs": ["list"], "apiGroups": [""], "resources": ["secrets"]},
                    {"verbs": ["get"], "apiGroups": [""], "resources": ["secrets"]}
                ]),
            ),
            json!({
                "kind": "Role", "metadata": {"name": "pod-logs", "namespace": "team"},
                "rules": [{"verbs": ["get"], "apiGroups": [""], "resources": ["pods/log"]}]
            }),
            crb(
                "admins",
                "cluster-admin",
                json!([
                    {"kind": "User", "name": "root-user"},
                    {"kind": "ServiceAccount", "name": "provider", "namespace": "default"}
                ]),
            ),
            crb(
                "bind",
                "bind-export",
                json!([
                    {"kind": "Group", "name": "system:authenticated", "apiGroup": "rbac.authorization.k8s.io"}
                ]),
            ),
            crb("health", "healthz", json!([{"kind": "Group", "name": "monitoring"}])),
            crb("agg", "aggregate", json!([{"kind": "User", "name": "agg-user"}])),
            crb(
                "status",
                "status-writer",
                json!([{"kind": "User", "name": "statusbot"}]),
            ),
            // A ServiceAccount subject without namespace in a ClusterRoleBinding matches no one.
            crb(
                "no-ns-sa",
                "cluster-admin",
                json!([{"kind": "ServiceAccount", "name": "nobody"}]),
            ),
            // RoleBinding → ClusterRole is scoped to the binding's namespace.
            rb(
                "readers",
                "ClusterRole",
                "cm-reader",
                json!([
                    {"kind": "User", "name": "alice"}, {"kind": "ServiceAccount", "name": "builder"}
                ]),
            ),
            rb("logs", "Role", "pod-logs", json!([{"kind": "Group", "name": "devs"}])),
            rb(
                "dangling",
                "ClusterRole",
                "missing",
                json!([{"kind": "User", "name": "dangler"}]),
            ),
        ];
        let mut idx = RbacIndex::new();
        for obj in objects {
            let kind = RbacKind::from_kind(obj["kind"].as_str().unwrap()).unwrap();
            idx.upsert(C, kind, &obj).unwrap();
        }
        idx
    }

    fn sa_user(cluster: &str, ns: &str, name: &str) -> UserInfo {
        SaClaims::new(cluster, ns, name, "uid", "tok").user_info()
    }

    #[test]
    fn global_service_account_subjects_match_that_account_only() {
        let mut idx = RbacIndex::new();
        let role = cluster_role(
            "edges",
            json!({}),
            json!([{"apiGroups": ["*"], "resources": ["edges"], "verbs": ["proxy"]}]),
        );
        let grant = binding(
            "ClusterRoleBinding",
            "",
            "edges",
            "ClusterRole",
            "edges",
            json!([{"kind": "User", "apiGroup": "rbac.authorization.k8s.io", "name": "system:kcp:serviceaccount:other:default:provider"}]),
        );
        idx.upsert(C, RbacKind::ClusterRole, &role).unwrap();
        idx.upsert(C, RbacKind::ClusterRoleBinding, &grant).unwrap();
        for (who, want) in [
            (sa_user("other", "default", "provider"), true),
            // Same namespace and name, but another cluster's account (e.g. the tenant's own).
            (sa_user(C, "default", "provider"), false),
            (sa_user("other", "default", "builder"), false),
            (user("system:kcp:serviceaccount:other:default:provider", &[]), true),
        ] {
            let attrs = Attributes {
                name: "e1",
                ..Attributes::resource(&who, "proxy", "edges.example", "edges")
            };
            assert_eq!(idx.authorize(C, &attrs).is_allowed(), want, "{}", who.username);
        }
    }

    #[test]
    fn authorize_table() {
        let idx = index();
        let alice = user("alice", &["system:authenticated"]);
        let bob = user("bob", &["system:authenticated"]);
        let dev = user("dora", &["devs", "system:authenticated"]);
        let root = user("root-user", &[]);
        let masters = user("m", &["system:masters"]);
        let mon = user("prom", &["monitoring"]);
        let agg = user("agg-user", &[]);
        let statusbot = user("statusbot", &[]);
        let provider = sa_user(C, "default", "provider");
        let foreign_provider = sa_user("other", "default", "provider");
        let builder = sa_user(C, "team", "builder");
        let static_sa_name = user("system:serviceaccount:team:builder", &[]);
        let nobody = user("system:serviceaccount:default:nobody", &[]);

        let res = |u, verb, group, resource, ns, name| Attributes {
            namespace: ns,
            name,
            ..Attributes::resource(u, verb, group, resource)
        };
        let cases: Vec<(&str, Attributes<'_>, bool)> = vec![
            (
                "masters bypass",
                res(&masters, "delete", "", "namespaces", "", "x"),
                true,
            ),
            ("no binding", res(&bob, "get", "", "configmaps", "team", "c"), false),
            (
                "rb→clusterrole in its ns",
                res(&alice, "get", "", "configmaps", "team", "c"),
                true,
            ),
            (
                "rb→clusterrole list",
                res(&alice, "list", "", "configmaps", "team", ""),
                true,
            ),
            (
                "rb→clusterrole other ns",
                res(&alice, "get", "", "configmaps", "prod", "c"),
                false,
            ),
            (
                "rb→clusterrole cluster scope",
                res(&alice, "list", "", "configmaps", "", ""),
                false,
            ),
            (
                "rb verb not granted",
                res(&alice, "delete", "", "configmaps", "team", "c"),
                false,
            ),
            (
                "group rb→role subresource",
                Attributes {
                    subresource: "log",
                    ..res(&dev, "get", "", "pods", "team", "p")
                },
                true,
            ),
            (
                "role subresource only",
                res(&dev, "get", "", "pods", "team", "p"),
                false,
            ),
            (
                "user subject crb",
                res(&root, "delete", "apps", "deployments", "any", "d"),
                true,
            ),
            (
                "resourceNames match",
                res(&bob, "bind", "apis.kcp.io", "apiexports", "", "quickstart"),
                true,
            ),
            (
                "resourceNames mismatch",
                res(&bob, "bind", "apis.kcp.io", "apiexports", "", "other"),
                false,
            ),
            (
                "*/status",
                Attributes {
                    subresource: "status",
                    ..res(&statusbot, "patch", "example.io", "widgets", "ns", "w")
                },
                true,
            ),
            (
                "*/status not main",
                res(&statusbot, "patch", "example.io", "widgets", "ns", "w"),
                false,
            ),
            ("aggregated rule a", res(&agg, "list", "", "secrets", "ns", ""), true),
            ("aggregated rule b", res(&agg, "get", "", "secrets", "ns", "s"), true),
            (
                "aggregated not granted",
                res(&agg, "delete", "", "secrets", "ns", "s"),
                false,
            ),
            (
                "sa subject explicit ns",
                res(&provider, "create", "", "secrets", "default", ""),
                true,
            ),
            (
                "sa subject defaulted ns",
                res(&builder, "get", "", "configmaps", "team", "c"),
                true,
            ),
            (
                "sa by user name (static token)",
                res(&static_sa_name, "get", "", "configmaps", "team", "c"),
                true,
            ),
            (
                "sa of other cluster",
                res(&foreign_provider, "create", "", "secrets", "default", ""),
                false,
            ),
            (
                "foreign sa keeps authenticated",
                res(&foreign_provider, "bind", "apis.kcp.io", "apiexports", "", "quickstart"),
                true,
            ),
            (
                "crb sa subject without ns",
                res(&nobody, "get", "", "pods", "default", ""),
                false,
            ),
            (
                "non-resource allowed",
                Attributes::non_resource(&mon, "get", "/healthz"),
                true,
            ),
            (
                "non-resource prefix",
                Attributes::non_resource(&mon, "get", "/readyz/ping"),
                true,
            ),
            (
                "non-resource other path",
                Attributes::non_resource(&mon, "get", "/metrics"),
                false,
            ),
            (
                "non-resource cluster-admin",
                Attributes::non_resource(&root, "post", "/anything"),
                true,
            ),
        ];
        for (what, attrs, want) in cases {
            assert_eq!(idx.authorize(C, &attrs).is_allowed(), want, "{what}");
        }
        assert_eq!(
            idx.authorize("elsewhere", &res(&root, "get", "", "pods", "", "")),
            Decision::Deny { reason: String::new() }
        );
    }

    #[test]
    fn deny_reasons_report_missing_roles() {
        let idx = index();
        let dangler = user("dangler", &[]);
        let attrs = Attributes {
            namespace: "team",
            ..Attributes::resource(&dangler, "get", "", "pods")
        };
        assert_eq!(
            idx.authorize(C, &attrs),
            Decision::Deny {
                reason: r#"RBAC: clusterrole.rbac.authorization.k8s.io "missing" not found"#.into()
            }
        );
        assert_eq!(
            crate::auth::rbac::forbidden_message(
                &attrs,
                r#"RBAC: clusterrole.rbac.authorization.k8s.io "missing" not found"#
            ),
            r#"pods is forbidden: User "dangler" cannot get resource "pods" in API group "" in the namespace "team": RBAC: clusterrole.rbac.authorization.k8s.io "missing" not found"#
        );
        assert_eq!(rbac_reason(vec!["a".into(), "b".into(), "a".into()]), "RBAC: [a, b]");
        assert_eq!(rbac_reason(vec![]), "");
    }

    #[test]
    fn aggregation_follows_changes() {
        let mut idx = index();
        let agg = user("agg-user", &[]);
        let watch = Attributes {
            namespace: "ns",
            ..Attributes::resource(&agg, "watch", "", "secrets")
        };
        assert!(!idx.authorize(C, &watch).is_allowed());

        // Rules come in name order (part-a before part-b), deduplicated.
        let get_secrets = PolicyRule {
            verbs: vec!["get".into()],
            api_groups: vec!["".into()],
            resources: vec!["secrets".into()],
            ..Default::default()
        };
        let list_secrets = PolicyRule {
            verbs: vec!["list".into()],
            ..get_secrets.clone()
        };
        assert_eq!(
            idx.aggregated_rules(C, "aggregate"),
            Some(vec![list_secrets.clone(), get_secrets.clone()])
        );
        assert_eq!(idx.aggregated_rules(C, "part-a"), None);

        // A newly labelled role joins; an aggregating role selected by another aggregates transitively.
        idx.upsert(C, RbacKind::ClusterRole, &json!({
            "metadata": {"name": "nested", "labels": {"agg": "yes"}},
            "aggregationRule": {"clusterRoleSelectors": [{"matchExpressions": [{"key": "tier", "operator": "In", "values": ["watch"]}]}]}
        })).unwrap();
        idx.upsert(
            C,
            RbacKind::ClusterRole,
            &cluster_role(
                "watcher",
                json!({"tier": "watch"}),
                json!([
                    {"verbs": ["watch"], "apiGroups": [""], "resources": ["secrets"]}
                ]),
            ),
        )
        .unwrap();
        assert!(idx.authorize(C, &watch).is_allowed());

        idx.remove(C, RbacKind::ClusterRole, "", "watcher");
        assert!(!idx.authorize(C, &watch).is_allowed());
        idx.remove(C, RbacKind::ClusterRole, "", "part-a");
        assert_eq!(idx.aggregated_rules(C, "aggregate"), Some(vec![get_secrets]));
    }

    #[test]
    fn label_matcher_semantics() {
        let labels = json!({"a": "1"}).as_object().unwrap().clone();
        let cases = [
            (json!({}), true),
            (json!(null), false),
            (json!({"matchLabels": {"a": "1"}}), true),
            (json!({"matchLabels": {"a": "2"}}), false),
            (
                json!({"matchExpressions": [{"key": "a", "operator": "In", "values": ["1", "2"]}]}),
                true,
            ),
            (
                json!({"matchExpressions": [{"key": "a", "operator": "NotIn", "values": ["1"]}]}),
                false,
            ),
            (
                json!({"matchExpressions": [{"key": "b", "operator": "NotIn", "values": ["1"]}]}),
                true,
            ),
            (json!({"matchExpressions": [{"key": "a", "operator": "Exists"}]}), true),
            (
                json!({"matchExpressions": [{"key": "a", "operator": "DoesNotExist"}]}),
                false,
            ),
            (
                json!({"matchExpressions": [{"key": "a", "operator": "In", "values": []}]}),
                false,
            ),
            (json!({"matchExpressions": [{"key": "a", "operator": "Bogus"}]}), false),
        ];
        for (selector, want) in cases {
            assert_eq!(LabelMatcher::parse(&selector).matches(&labels), want, "{selector}");
        }
    }

    #[test]
    fn updates_and_removals_reindex_subjects() {
        let mut idx = index();
        let alice = user("alice", &[]);
        let carol = user("carol", &[]);
        let get = |u| Attributes {
            namespace: "team",
            name: "c",
            ..Attributes::resource(u, "get", "", "configmaps")
        };
        idx.upsert(
            C,
            RbacKind::RoleBinding,
            &binding(
                "RoleBinding",
                "team",
                "readers",
                "ClusterRole",
                "cm-reader",
                json!([{"kind": "User", "name": "carol"}]),
            ),
        )
        .unwrap();
        assert!(!idx.authorize(C, &get(&alice)).is_allowed());
        assert!(idx.authorize(C, &get(&carol)).is_allowed());
        idx.remove(C, RbacKind::RoleBinding, "team", "readers");
        assert!(!idx.authorize(C, &get(&carol)).is_allowed());
        assert!(!idx.clusters[C].rb_by_subject["team"].users.contains_key("carol"));

        idx.remove_cluster(C);
        let root = user("root-user", &[]);
        assert!(
            !idx.authorize(C, &Attributes::resource(&root, "get", "", "pods"))
                .is_allowed()
        );
    }

    #[test]
    fn invalid_objects_are_refused_and_keep_the_old_version() {
        let mut idx = index();
        let cases = [
            (
                RbacKind::Role,
                json!({"metadata": {"name": "r"}}),
                "metadata.namespace is empty",
            ),
            (RbacKind::ClusterRole, json!({"metadata": {}}), "metadata.name is empty"),
            (
                RbacKind::ClusterRoleBinding,
                json!({"metadata": {"name": "admins"}}),
                "missing field `roleRef`",
            ),
        ];
        for (kind, obj, want) in cases {
            let err = idx.upsert(C, kind, &obj).unwrap_err();
            assert!(err.to_string().contains(want), "{err}");
        }
        let root = user("root-user", &[]);
        assert!(
            idx.authorize(C, &Attributes::resource(&root, "get", "", "pods"))
                .is_allowed()
        );
    }

    #[test]
    fn rules_for_lists_applicable_rules() {
        let idx = index();
        let alice = user("alice", &["system:authenticated"]);
        let got = idx.rules_for(C, &alice, "team");
        let verbs: Vec<Vec<String>> = got.rules.iter().map(|r| r.verbs.clone()).collect();
        assert_eq!(
            verbs,
            vec![vec!["bind".to_string()], vec!["get".to_string(), "list".to_string()]]
        );
        assert!(got.errors.is_empty());

        let cluster_only = idx.rules_for(C, &alice, "");
        assert_eq!(cluster_only.rules.len(), 1);

        let dangler = idx.rules_for(C, &user("dangler", &[]), "team");
        assert_eq!(
            dangler.errors,
            vec![r#"clusterrole.rbac.authorization.k8s.io "missing" not found"#.to_string()]
        );

        let masters = idx.rules_for(C, &user("m", &["system:masters"]), "");
        assert_eq!(masters.rules[0].resources, vec!["*"]);
        assert_eq!(masters.rules[1].non_resource_urls, vec!["*"]);

        let mut foreign = sa_user("other", "team", "builder");
        foreign.extra.insert(EXTRA_CLUSTER_NAME.into(), vec!["other".into()]);
        assert_eq!(idx.rules_for(C, &foreign, "team").rules.len(), 1);
    }
}
