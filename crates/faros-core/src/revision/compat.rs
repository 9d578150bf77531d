//! The compatibility gate: may tenants move from one published state of a provider to the next?
//!
//! kcp moves every tenant of an APIExport to a new schema at once and checks nothing, and stored
//! objects stay as they were written. So a new schema may only take over when every object valid
//! under the old one stays valid and keeps its fields. [`compare`] judges the schemas alone, rule by
//! rule ([`Rule`]); where the answer depends on what tenants actually store (a field removed, a bound
//! narrowed) it says [`Verdict::NeedsLiveCheck`], and [`live_check`] decides with the objects
//! themselves, validated and pruned by [`crate::structural`], the same code the embedded kcp serves
//! with. [`compare_claims`] finds what needs each tenant's consent.
//!
//! Pure: the callers (`faros provider schema check`, the hub reconciler) read the schemas and list
//! the objects. Every finding names the resource, the field path and the rule.

use std::collections::{BTreeMap, BTreeSet};
use std::fmt;

use serde_json::Value;

use crate::catalog::PermissionClaim;
use crate::kcp::apis::v1alpha1::{APIResourceSchemaSpec, APIResourceVersion};
use crate::structural::{ListType, Schema, SchemaError};

/// What a change means for tenants, from harmless to refused. Ordered: the worst finding decides.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Verdict {
    /// Every object valid before stays valid and keeps its fields.
    Compatible,
    /// The revision asks tenants for more (a claim, wider verbs): each tenant decides.
    NeedsConsent,
    /// Safe only if no live object is refused or loses fields under the new schema.
    NeedsLiveCheck,
    /// The storage version changed: every object must be rewritten first.
    NeedsMigration,
    /// Refused whatever tenants store.
    Incompatible,
}

impl fmt::Display for Verdict {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Self::Compatible => "compatible",
            Self::NeedsConsent => "needs each tenant's consent",
            Self::NeedsLiveCheck => "incompatible unless every live object validates under the new schema",
            Self::NeedsMigration => "needs a storage migration first",
            Self::Incompatible => "incompatible",
        })
    }
}

/// The rule a finding applies.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Rule {
    ResourceAdded,
    ResourceRemoved,
    /// Kind, plural, singular or list kind changed.
    NamesChanged,
    ScopeChanged,
    VersionAdded,
    ServedVersionRemoved,
    StorageVersionChanged,
    SubresourceRemoved,
    PrinterColumnsChanged,
    FieldAdded,
    FieldRemoved,
    TypeChanged,
    FormatChanged,
    EnumNarrowed,
    PatternChanged,
    BoundsNarrowed,
    NullableRemoved,
    RequiredAdded,
    ListTypeChanged,
    /// A schema that does not parse as a structural schema.
    InvalidSchema,
    /// Live objects the new schema refuses or prunes.
    LiveObjectsRefused,
    ClaimAdded,
    VerbsWidened,
    ClaimRemoved,
}

impl Rule {
    pub fn as_str(self) -> &'static str {
        match self {
            Self::ResourceAdded => "ResourceAdded",
            Self::ResourceRemoved => "ResourceRemoved",
            Self::NamesChanged => "NamesChanged",
            Self::ScopeChanged => "ScopeChanged",
            Self::VersionAdded => "VersionAdded",
            Self::ServedVersionRemoved => "ServedVersionRemoved",
            Self::StorageVersionChanged => "StorageVersionChanged",
            Self::SubresourceRemoved => "SubresourceRemoved",
            Self::PrinterColumnsChanged => "PrinterColumnsChanged",
            Self::FieldAdded => "FieldAdded",
            Self::FieldRemoved => "FieldRemoved",
            Self::TypeChanged => "TypeChanged",
            Self::FormatChanged => "FormatChanged",
            Self::EnumNarrowed => "EnumNarrowed",
            Self::PatternChanged => "PatternChanged",
            Self::BoundsNarrowed => "BoundsNarrowed",
            Self::NullableRemoved => "NullableRemoved",
            Self::RequiredAdded => "RequiredAdded",
            Self::ListTypeChanged => "ListTypeChanged",
            Self::InvalidSchema => "InvalidSchema",
            Self::LiveObjectsRefused => "LiveObjectsRefused",
            Self::ClaimAdded => "ClaimAdded",
            Self::VerbsWidened => "VerbsWidened",
            Self::ClaimRemoved => "ClaimRemoved",
        }
    }
}

impl fmt::Display for Rule {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// One change and what it means.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Finding {
    pub rule: Rule,
    pub verdict: Verdict,
    /// `<plural>.<group>` (`<plural>.core` for the core group), or the claim's resource.
    pub resource: String,
    /// The API version the field path is in, when there is one.
    pub version: Option<String>,
    /// JSON path within an object, e.g. `.spec.greeting` (`[*]` for list items); empty for
    /// resource-level findings.
    pub field: String,
    pub message: String,
    /// Logical cluster → objects concerned, for [`Rule::LiveObjectsRefused`].
    pub workspaces: BTreeMap<String, u64>,
}

impl fmt::Display for Finding {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}", self.resource)?;
        if let Some(v) = &self.version {
            write!(f, " {v}")?;
        }
        if !self.field.is_empty() {
            write!(f, " {}", self.field)?;
        }
        write!(f, ": {} ({}): {}", self.rule, self.verdict, self.message)?;
        if !self.workspaces.is_empty() {
            let list: Vec<String> = self.workspaces.iter().map(|(c, n)| format!("{c}: {n}")).collect();
            write!(f, " [objects per workspace: {}]", list.join(", "))?;
        }
        Ok(())
    }
}

/// The worst verdict of `findings`; [`Verdict::Compatible`] when there are none.
pub fn overall(findings: &[Finding]) -> Verdict {
    findings.iter().map(|f| f.verdict).max().unwrap_or(Verdict::Compatible)
}

/// `<plural>.<group>` of a schema, `core` standing in for the empty group.
pub fn resource_key(spec: &APIResourceSchemaSpec) -> String {
    let group = if spec.group.is_empty() { "core" } else { &spec.group };
    format!("{}.{group}", spec.names.plural)
}

struct Out<'a> {
    resource: &'a str,
    version: Option<&'a str>,
    findings: Vec<Finding>,
}

impl Out<'_> {
    fn push(&mut self, rule: Rule, verdict: Verdict, field: &str, message: impl Into<String>) {
        self.findings.push(Finding {
            rule,
            verdict,
            resource: self.resource.to_string(),
            version: self.version.map(str::to_string),
            field: field.to_string(),
            message: message.into(),
            workspaces: BTreeMap::new(),
        });
    }
}

/// Compares the schemas of two published states, matched by group and plural. A resource only in
/// `old` is removed, one only in `new` added.
pub fn compare(old: &[APIResourceSchemaSpec], new: &[APIResourceSchemaSpec]) -> Vec<Finding> {
    let mut findings = Vec::new();
    let new_by_key: BTreeMap<String, &APIResourceSchemaSpec> = new.iter().map(|s| (resource_key(s), s)).collect();
    let old_keys: BTreeSet<String> = old.iter().map(resource_key).collect();
    for o in old {
        let key = resource_key(o);
        match new_by_key.get(&key) {
            Some(n) => findings.extend(compare_resource(o, n)),
            None => {
                let mut out = Out {
                    resource: &key,
                    version: None,
                    findings: Vec::new(),
                };
                out.push(
                    Rule::ResourceRemoved,
                    Verdict::Incompatible,
                    "",
                    "the resource is no longer published; tenants' objects of it would lose their controller",
                );
                findings.extend(out.findings);
            }
        }
    }
    for n in new {
        let key = resource_key(n);
        if !old_keys.contains(&key) {
            let mut out = Out {
                resource: &key,
                version: None,
                findings: Vec::new(),
            };
            out.push(Rule::ResourceAdded, Verdict::Compatible, "", "new resource");
            findings.extend(out.findings);
        }
    }
    findings
}

fn storage_version(spec: &APIResourceSchemaSpec) -> Option<&str> {
    spec.versions.iter().find(|v| v.storage).map(|v| v.name.as_str())
}

/// Compares one resource's old and new schema (same group and plural).
pub fn compare_resource(old: &APIResourceSchemaSpec, new: &APIResourceSchemaSpec) -> Vec<Finding> {
    let key = resource_key(old);
    let mut out = Out {
        resource: &key,
        version: None,
        findings: Vec::new(),
    };
    let (on, nn) = (&old.names, &new.names);
    for (what, a, b) in [
        ("kind", Some(&on.kind), Some(&nn.kind)),
        ("plural", Some(&on.plural), Some(&nn.plural)),
        ("singular", on.singular.as_ref(), nn.singular.as_ref()),
        ("listKind", on.list_kind.as_ref(), nn.list_kind.as_ref()),
    ] {
        if a != b {
            out.push(
                Rule::NamesChanged,
                Verdict::Incompatible,
                "",
                format!("{what} changed from {a:?} to {b:?}; clients address the resource by it"),
            );
        }
    }
    if old.scope != new.scope {
        out.push(
            Rule::ScopeChanged,
            Verdict::Incompatible,
            "",
            format!("scope changed from {:?} to {:?}", old.scope, new.scope),
        );
    }
    if let (Some(a), Some(b)) = (storage_version(old), storage_version(new))
        && a != b
    {
        out.push(
            Rule::StorageVersionChanged,
            Verdict::NeedsMigration,
            "",
            format!("storage version changed from {a} to {b}; every stored object must be rewritten first"),
        );
    }
    let mut findings = out.findings;
    for ov in &old.versions {
        let mut out = Out {
            resource: &key,
            version: Some(&ov.name),
            findings: Vec::new(),
        };
        match new.versions.iter().find(|nv| nv.name == ov.name) {
            Some(nv) if ov.served && !nv.served => out.push(
                Rule::ServedVersionRemoved,
                Verdict::Incompatible,
                "",
                "the version is no longer served",
            ),
            Some(nv) => compare_version(ov, nv, &mut out),
            None if ov.served => out.push(
                Rule::ServedVersionRemoved,
                Verdict::Incompatible,
                "",
                "the version was removed",
            ),
            None => {}
        }
        findings.extend(out.findings);
    }
    for nv in &new.versions {
        if !old.versions.iter().any(|ov| ov.name == nv.name) {
            let mut out = Out {
                resource: &key,
                version: Some(&nv.name),
                findings: Vec::new(),
            };
            out.push(Rule::VersionAdded, Verdict::Compatible, "", "new version");
            findings.extend(out.findings);
        }
    }
    findings
}

fn parse(v: &APIResourceVersion, out: &mut Out<'_>, which: &str) -> Option<Schema> {
    match Schema::from_openapi_v3(&v.schema) {
        Ok(s) => Some(s),
        Err(e) => {
            out.push(
                Rule::InvalidSchema,
                Verdict::Incompatible,
                "",
                format!("the {which} schema is not a structural schema: {e}"),
            );
            None
        }
    }
}

fn compare_version(old: &APIResourceVersion, new: &APIResourceVersion, out: &mut Out<'_>) {
    let had_status = old.subresources.as_ref().is_some_and(|s| s.status.is_some());
    let has_status = new.subresources.as_ref().is_some_and(|s| s.status.is_some());
    if had_status && !has_status {
        out.push(
            Rule::SubresourceRemoved,
            Verdict::Incompatible,
            "",
            "the status subresource was removed; controllers write status through it",
        );
    }
    let had_scale = old.subresources.as_ref().is_some_and(|s| s.scale.is_some());
    let has_scale = new.subresources.as_ref().is_some_and(|s| s.scale.is_some());
    if had_scale && !has_scale {
        out.push(
            Rule::SubresourceRemoved,
            Verdict::Incompatible,
            "",
            "the scale subresource was removed",
        );
    }
    if old.additional_printer_columns != new.additional_printer_columns {
        out.push(
            Rule::PrinterColumnsChanged,
            Verdict::Compatible,
            "",
            "printer columns changed",
        );
    }
    let (Some(o), Some(n)) = (parse(old, out, "old"), parse(new, out, "new")) else {
        return;
    };
    compare_node(&o, &n, "", out);
}

/// Compares two schema nodes at `path`.
fn compare_node(old: &Schema, new: &Schema, path: &str, out: &mut Out<'_>) {
    let live = Verdict::NeedsLiveCheck;
    let shown = if path.is_empty() { "." } else { path };
    if old.type_ != new.type_ && new.type_.is_some() {
        out.push(
            Rule::TypeChanged,
            live,
            shown,
            format!(
                "type changed from {} to {}",
                old.type_.as_deref().unwrap_or("any"),
                new.type_.as_deref().unwrap_or("any")
            ),
        );
        // Below a changed type the old and new trees describe different values.
        return;
    }
    if old.int_or_string && !new.int_or_string {
        out.push(Rule::TypeChanged, live, shown, "no longer int-or-string");
    }
    if old.format != new.format && new.format.is_some() {
        out.push(
            Rule::FormatChanged,
            live,
            shown,
            format!("format changed from {:?} to {:?}", old.format, new.format),
        );
    }
    if old.nullable && !new.nullable {
        out.push(Rule::NullableRemoved, live, shown, "null is no longer allowed");
    }
    if !new.enum_.is_empty() {
        let dropped: Vec<String> = old
            .enum_
            .iter()
            .filter(|v| !new.enum_.contains(v))
            .map(Value::to_string)
            .collect();
        if old.enum_.is_empty() {
            out.push(Rule::EnumNarrowed, live, shown, "now restricted to an enum");
        } else if !dropped.is_empty() {
            out.push(
                Rule::EnumNarrowed,
                live,
                shown,
                format!("enum values removed: {}", dropped.join(", ")),
            );
        }
    }
    if new.pattern.is_some() && old.pattern != new.pattern {
        out.push(
            Rule::PatternChanged,
            live,
            shown,
            format!("pattern changed from {:?} to {:?}", old.pattern, new.pattern),
        );
    }
    bounds(old, new, shown, out);
    if old.list_type() != new.list_type() && new.list_type() != ListType::Atomic {
        out.push(
            Rule::ListTypeChanged,
            live,
            shown,
            format!("x-kubernetes-list-type changed to {:?}", new.list_type()),
        );
    }
    for r in &new.required {
        if old.required.contains(r) {
            continue;
        }
        let defaulted = new.properties.get(r).is_some_and(|p| p.default.is_some());
        let field = child(path, r);
        if defaulted {
            out.push(
                Rule::RequiredAdded,
                Verdict::Compatible,
                &field,
                "now required, with a default for objects without it",
            );
        } else {
            out.push(Rule::RequiredAdded, live, &field, "now required, without a default");
        }
    }
    // Fields: every field the old schema knew must still be known (else pruning drops it).
    let mut names: BTreeSet<&String> = old.properties.keys().collect();
    names.extend(new.properties.keys());
    for name in names {
        let field = child(path, name);
        match (old.field(name), new.field(name)) {
            (Some(o), Some(n)) => compare_node(o, n, &field, out),
            (Some(_), None) if new.preserve_unknown_fields => {}
            (Some(_), None) => out.push(
                Rule::FieldRemoved,
                live,
                &field,
                "field removed; stored values would be pruned",
            ),
            (None, Some(_)) if !new.required.contains(name) => {
                out.push(Rule::FieldAdded, Verdict::Compatible, &field, "optional field added")
            }
            // A required new field is reported by the required rule above.
            (None, Some(_)) => {}
            (None, None) => {}
        }
    }
    match (&old.additional_properties, &new.additional_properties) {
        (Some(o), Some(n)) => compare_node(o, n, &child(path, "*"), out),
        (Some(_), None) if !new.preserve_unknown_fields => out.push(
            Rule::FieldRemoved,
            live,
            &child(path, "*"),
            "map values (additionalProperties) no longer allowed; stored entries would be pruned",
        ),
        _ => {}
    }
    if old.preserve_unknown_fields && !new.preserve_unknown_fields {
        out.push(
            Rule::FieldRemoved,
            live,
            shown,
            "unknown fields are no longer preserved; stored ones would be pruned",
        );
    }
    match (&old.items, &new.items) {
        (Some(o), Some(n)) => compare_node(o, n, &format!("{path}[*]"), out),
        (None, Some(_)) if old.type_.as_deref() == Some("array") => out.push(
            Rule::TypeChanged,
            live,
            &format!("{path}[*]"),
            "list items now have a schema",
        ),
        _ => {}
    }
}

fn child(path: &str, name: &str) -> String {
    format!("{path}.{name}")
}

fn bounds(old: &Schema, new: &Schema, path: &str, out: &mut Out<'_>) {
    let mut narrowed = Vec::new();
    let lower = |o: Option<u64>, n: Option<u64>| n.is_some_and(|n| o.is_none_or(|o| n > o));
    let upper = |o: Option<u64>, n: Option<u64>| n.is_some_and(|n| o.is_none_or(|o| n < o));
    let flower = |o: Option<f64>, n: Option<f64>| n.is_some_and(|n| o.is_none_or(|o| n > o));
    let fupper = |o: Option<f64>, n: Option<f64>| n.is_some_and(|n| o.is_none_or(|o| n < o));
    for (name, is_narrower) in [
        ("minLength", lower(old.min_length, new.min_length)),
        ("maxLength", upper(old.max_length, new.max_length)),
        ("minItems", lower(old.min_items, new.min_items)),
        ("maxItems", upper(old.max_items, new.max_items)),
        ("minProperties", lower(old.min_properties, new.min_properties)),
        ("maxProperties", upper(old.max_properties, new.max_properties)),
        ("minimum", flower(old.minimum, new.minimum)),
        ("maximum", fupper(old.maximum, new.maximum)),
        (
            "exclusiveMinimum",
            new.exclusive_minimum && !old.exclusive_minimum && new.minimum.is_some(),
        ),
        (
            "exclusiveMaximum",
            new.exclusive_maximum && !old.exclusive_maximum && new.maximum.is_some(),
        ),
        (
            "multipleOf",
            new.multiple_of.is_some() && old.multiple_of != new.multiple_of,
        ),
    ] {
        if is_narrower {
            narrowed.push(name);
        }
    }
    if !narrowed.is_empty() {
        out.push(
            Rule::BoundsNarrowed,
            Verdict::NeedsLiveCheck,
            path,
            format!("narrowed: {}", narrowed.join(", ")),
        );
    }
}

/// Claims the new state asks for that the old did not (each needs each tenant's consent), verbs
/// widened, and claims dropped. Matched by group, resource and identity hash.
pub fn compare_claims(old: &[PermissionClaim], new: &[PermissionClaim]) -> Vec<Finding> {
    fn key(c: &PermissionClaim) -> (String, String, String) {
        (
            c.group.clone().unwrap_or_default(),
            c.resource.clone(),
            c.identity_hash.clone().unwrap_or_default(),
        )
    }
    fn name(c: &PermissionClaim) -> String {
        let group = c.group.as_deref().filter(|g| !g.is_empty()).unwrap_or("core");
        format!("{}.{group}", c.resource)
    }
    let mut findings = Vec::new();
    let mut push = |rule, verdict, c: &PermissionClaim, message: String| {
        findings.push(Finding {
            rule,
            verdict,
            resource: name(c),
            version: None,
            field: String::new(),
            message,
            workspaces: BTreeMap::new(),
        })
    };
    for n in new {
        match old.iter().find(|o| key(o) == key(n)) {
            None => push(
                Rule::ClaimAdded,
                Verdict::NeedsConsent,
                n,
                format!("new claim with verbs {}", n.verbs.join(", ")),
            ),
            Some(o) if !o.verbs.iter().any(|v| v == "*") => {
                let wider: Vec<&str> = n
                    .verbs
                    .iter()
                    .filter(|v| !o.verbs.contains(v))
                    .map(String::as_str)
                    .collect();
                if !wider.is_empty() {
                    push(
                        Rule::VerbsWidened,
                        Verdict::NeedsConsent,
                        n,
                        format!("verbs added: {}", wider.join(", ")),
                    );
                }
            }
            Some(_) => {}
        }
    }
    for o in old {
        if !new.iter().any(|n| key(n) == key(o)) {
            push(Rule::ClaimRemoved, Verdict::Compatible, o, "claim dropped".into());
        }
    }
    findings
}

/// Why the live check could not run.
#[derive(Debug, thiserror::Error)]
pub enum LiveCheckError {
    #[error("{resource} {version}: the new schema is not a structural schema: {source}")]
    Schema {
        resource: String,
        version: String,
        #[source]
        source: SchemaError,
    },
}

/// Per (version, field): the reasons given, and objects per logical cluster.
type Refused = (BTreeSet<String>, BTreeMap<String, u64>);

/// Validates every live object of `new`'s resource under `new`, the way the server will treat it
/// once the export moves: pruned (a field it drops is data lost), defaulted, validated. `objects`
/// are `(logical cluster, object)`; each object is judged under the version its `apiVersion` names
/// (the storage version when it names none). Returns one [`Rule::LiveObjectsRefused`] finding per
/// field path with the objects counted per workspace; empty when every object passes.
pub fn live_check<'a>(
    new: &APIResourceSchemaSpec,
    objects: impl IntoIterator<Item = (&'a str, &'a Value)>,
) -> Result<Vec<Finding>, LiveCheckError> {
    let resource = resource_key(new);
    let mut schemas: BTreeMap<&str, Schema> = BTreeMap::new();
    for v in &new.versions {
        let s = Schema::from_openapi_v3(&v.schema).map_err(|source| LiveCheckError::Schema {
            resource: resource.clone(),
            version: v.name.clone(),
            source,
        })?;
        schemas.insert(&v.name, s);
    }
    let storage = storage_version(new);
    let mut refused: BTreeMap<(String, String), Refused> = BTreeMap::new();
    for (cluster, obj) in objects {
        let version = obj
            .get("apiVersion")
            .and_then(Value::as_str)
            .and_then(|av| av.rsplit('/').next())
            .filter(|v| schemas.contains_key(v))
            .or(storage);
        let Some(schema) = version.and_then(|v| schemas.get(v)) else {
            continue;
        };
        let version = version.unwrap_or_default();
        let mut problems: BTreeMap<String, String> = BTreeMap::new();
        for path in schema.unknown_fields(obj) {
            problems
                .entry(path)
                .or_insert_with(|| "the new schema prunes this field".into());
        }
        let mut judged = obj.clone();
        schema.prune(&mut judged);
        schema.apply_defaults(&mut judged);
        for cause in schema.validate(&judged) {
            let path = if cause.field.starts_with('.') {
                cause.field.clone()
            } else {
                format!(".{}", cause.field)
            };
            problems.entry(path).or_insert(cause.message);
        }
        for (path, reason) in problems {
            let entry = refused.entry((version.to_string(), generalize(&path))).or_default();
            entry.0.insert(reason);
            *entry.1.entry(cluster.to_string()).or_default() += 1;
        }
    }
    Ok(refused
        .into_iter()
        .map(|((version, field), (reasons, workspaces))| {
            let total: u64 = workspaces.values().sum();
            let first = reasons.iter().next().cloned().unwrap_or_default();
            Finding {
                rule: Rule::LiveObjectsRefused,
                verdict: Verdict::Incompatible,
                resource: resource.clone(),
                version: Some(version),
                field,
                message: format!(
                    "{total} live object{} in {} workspace{} would be refused or lose data: {first}",
                    if total == 1 { "" } else { "s" },
                    workspaces.len(),
                    if workspaces.len() == 1 { "" } else { "s" },
                ),
                workspaces,
            }
        })
        .collect())
}

/// `.spec.items[3].name` → `.spec.items[*].name`, so one finding counts every item.
fn generalize(path: &str) -> String {
    let mut out = String::with_capacity(path.len());
    let mut in_index = false;
    for c in path.chars() {
        match c {
            '[' => {
                in_index = true;
                out.push_str("[*]");
            }
            ']' => in_index = false,
            _ if in_index => {}
            _ => out.push(c),
        }
    }
    out
}

/// Resources whose findings need the live check, and the findings the live check settles.
pub fn needs_live_check(findings: &[Finding]) -> BTreeSet<String> {
    findings
        .iter()
        .filter(|f| f.verdict == Verdict::NeedsLiveCheck)
        .map(|f| f.resource.clone())
        .collect()
}

#[cfg(test)]
#[path = "compat_tests.rs"]
mod tests;
