//! Writes: create, update (PUT), patch (merge, JSON, strategic, apply), delete and deletecollection.
//!
//! Every write runs the same admission pipeline (type check, metadata rules, unknown-field policy,
//! pruning, defaults, schema validation, managedFields) and commits through the store with a
//! resourceVersion precondition, so concurrent writers get 409 Conflict instead of lost updates.

use axum::response::Response;
use faros_core::status::Status;
use http::{HeaderValue, StatusCode, header};
use serde_json::{Value, json};

use super::RequestContext;
use super::params::FieldValidation;
use super::respond::json_response;
use crate::kcp::admission::Operation;
use crate::objects::{self, CLUSTER_ANNOTATION, DeleteOutcome, WritePart, meta_mut, meta_str};
use crate::patch;
use crate::registry::ResourceDef;
use crate::store::{ObjectKey, StoreError, WriteOp};

/// How many times a patch is re-applied when the object changed underneath it.
const PATCH_RETRIES: usize = 8;

/// Maps a store error onto the Kubernetes Status for this resource.
pub fn store_status(err: StoreError, def: &ResourceDef, name: &str) -> Status {
    match err {
        StoreError::AlreadyExists(k) => Status::already_exists(&def.group, &def.resource, &k.name),
        StoreError::NotFound(k) => Status::not_found(&def.group, &def.resource, &k.name),
        StoreError::Conflict { key, .. } => Status::conflict(&def.group, &def.resource, &key.name),
        StoreError::Expired { .. } => Status::expired(
            "The provided continue parameter is too old to display a consistent list result. You can start a new list without the continue parameter, or use the continue token in this response to retrieve the remainder of the results. Continuing with the provided token results in an inconsistent list - objects that were created, modified, or deleted between the time the first chunk was returned and now may show up in the list.",
        ),
        StoreError::TooOld { requested, oldest } => {
            Status::expired(format!("too old resource version: {requested} ({oldest})"))
        }
        StoreError::InvalidContinue(m) => Status::bad_request(format!("invalid continue token: {m}")),
        other => {
            tracing::error!(error = %other, resource = %def.resource, name, "storage failure");
            Status::internal(format!("storage failure: {other}"))
        }
    }
}

/// Decodes a request body: JSON, or YAML where the content type says so.
pub fn decode(body: &[u8], content_type: &str) -> Result<Value, Status> {
    if content_type.starts_with("application/vnd.kubernetes.protobuf") {
        return super::protobuf::decode(body);
    }
    if !(content_type.contains("json") || content_type.contains("yaml") || content_type.is_empty()) {
        return Err(Status::unsupported_media_type(format!(
            "the body of the request was in an unknown format - accepted media types include: application/json, application/yaml (got {content_type})"
        )));
    }
    if body.iter().all(u8::is_ascii_whitespace) {
        return Err(Status::bad_request("the request body is empty"));
    }
    let value = if content_type.contains("yaml") {
        let text = std::str::from_utf8(body).map_err(|_| Status::bad_request("the request body is not UTF-8"))?;
        serde_saphyr::from_str::<Value>(text).map_err(|e| Status::bad_request(format!("error decoding YAML: {e}")))?
    } else {
        serde_json::from_slice::<Value>(body)
            .map_err(|e| Status::bad_request(format!("error decoding request body as JSON: {e}")))?
    };
    Ok(value)
}

fn content_type(ctx: &RequestContext) -> String {
    ctx.headers
        .get(header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .unwrap_or("application/json")
        .to_ascii_lowercase()
}

/// The field manager of a non-apply write: `fieldManager`, else the user agent's product name.
fn manager(ctx: &RequestContext) -> String {
    if let Some(m) = ctx.params.field_manager() {
        return m.chars().take(128).collect();
    }
    let ua = ctx
        .headers
        .get(header::USER_AGENT)
        .and_then(|v| v.to_str().ok())
        .unwrap_or("unknown");
    ua.split('/').next().unwrap_or("unknown").chars().take(128).collect()
}

/// Unknown-field policy, pruning, defaulting and schema validation. Returns warnings.
fn admit(ctx: &RequestContext, def: &ResourceDef, obj: &mut Value) -> Result<Vec<String>, Status> {
    let mut warnings = Vec::new();
    let unknown = def.schema.unknown_fields(obj);
    if !unknown.is_empty() {
        match ctx.params.field_validation()? {
            FieldValidation::Strict => {
                let list = unknown
                    .iter()
                    .map(|f| format!("unknown field {:?}", f.trim_start_matches('.')))
                    .collect::<Vec<_>>();
                return Err(Status::bad_request(format!(
                    "strict decoding error: {}",
                    list.join(", ")
                )));
            }
            FieldValidation::Warn => {
                warnings.extend(
                    unknown
                        .iter()
                        .map(|f| format!("unknown field {:?}", f.trim_start_matches('.'))),
                );
            }
            FieldValidation::Ignore => {}
        }
        def.schema.prune(obj);
    }
    def.schema.apply_defaults(obj);
    let causes = def.schema.validate(obj);
    if !causes.is_empty() {
        let name = meta_str(obj, "name").unwrap_or_default().to_string();
        return Err(Status::invalid(&def.group, &def.kind, &name, causes));
    }
    Ok(warnings)
}

fn kcp_admit(
    ctx: &RequestContext,
    def: &ResourceDef,
    operation: Operation,
    old: Option<&Value>,
    subresource: Option<&str>,
    obj: &mut Value,
) -> Result<(), Status> {
    let req = crate::kcp::admission::Request {
        operation,
        user: &ctx.user,
        cluster: &ctx.cluster,
        def,
        old,
        subresource,
    };
    crate::kcp::admission::admit(&ctx.state, &req, obj)
}

fn respond(code: StatusCode, body: &Value, warnings: &[String]) -> Response {
    let mut resp = json_response(code, body);
    for w in warnings {
        if let Ok(v) = HeaderValue::from_str(&format!("299 - {:?}", w)) {
            resp.headers_mut().append(header::WARNING, v);
        }
    }
    resp
}

fn stamp_cluster(obj: &mut Value, cluster: &str) {
    let meta = meta_mut(obj);
    let ann = meta.entry("annotations").or_insert_with(|| json!({}));
    if let Some(a) = ann.as_object_mut() {
        a.insert(CLUSTER_ANNOTATION.into(), Value::String(cluster.into()));
    }
}

/// Namespaced creates need an existing, non-terminating namespace.
fn check_namespace(ctx: &RequestContext, def: &ResourceDef, ns: &str, name: &str) -> Result<(), Status> {
    let key = ObjectKey {
        group: String::new(),
        resource: "namespaces".into(),
        cluster: ctx.cluster.clone(),
        namespace: String::new(),
        name: ns.into(),
    };
    let found = ctx.state.store.get(&key).map_err(|e| store_status(e, def, name))?;
    match found {
        None => Err(Status::not_found("", "namespaces", ns)),
        Some(n) if n.pointer("/metadata/deletionTimestamp").is_some() => Err(Status::forbidden(format!(
            "{} \"{name}\" is forbidden: unable to create new content in namespace {ns} because it is being terminated",
            faros_core::status::qualified(&def.group, &def.resource)
        ))),
        Some(_) => Ok(()),
    }
}

async fn commit(ctx: &RequestContext, def: &ResourceDef, name: &str, op: WriteOp) -> Result<Value, Status> {
    let events = ctx
        .state
        .store
        .write(vec![op])
        .await
        .map_err(|e| store_status(e, def, name))?;
    let object = events.first().map(|e| (*e.object).clone()).unwrap_or(Value::Null);
    ctx.state.committed(&events);
    Ok(object)
}

/// Creates `obj` (already decoded) after admission; shared by POST and apply-creates.
async fn create_object(
    ctx: &RequestContext,
    def: &ResourceDef,
    ns: Option<&str>,
    mut obj: Value,
    managed: Option<&str>,
) -> Result<Response, Status> {
    let now = objects::now_rfc3339();
    // Server-side apply computed managedFields already; metadata rules would otherwise drop them.
    let applied_fields = if managed.is_none() {
        obj.pointer("/metadata/managedFields").cloned()
    } else {
        None
    };
    objects::prepare_create(def, ns, &mut obj, &now)?;
    if let Some(fields) = applied_fields {
        meta_mut(&mut obj).insert("managedFields".into(), fields);
    }
    let warnings = admit(ctx, def, &mut obj)?;
    let name = meta_str(&obj, "name").unwrap_or_default().to_string();
    if def.namespaced {
        check_namespace(ctx, def, ns.unwrap_or_default(), &name)?;
    }
    if let Some(m) = managed {
        patch::managed_fields::update_managed_fields(None, &mut obj, m, &def.schema, None, &def.api_version(), &now);
    }
    kcp_admit(ctx, def, Operation::Create, None, None, &mut obj)?;
    stamp_cluster(&mut obj, &ctx.cluster);
    if ctx.params.dry_run()? {
        return Ok(respond(StatusCode::CREATED, &obj, &warnings));
    }
    let key = ctx.key(def, ns, &name);
    let stored = commit(ctx, def, &name, WriteOp::Create { key, object: obj }).await?;
    Ok(respond(StatusCode::CREATED, &stored, &warnings))
}

pub async fn create(
    ctx: &RequestContext,
    def: &ResourceDef,
    ns: Option<&str>,
    body: &[u8],
) -> Result<Response, Status> {
    let obj = decode(body, &content_type(ctx))?;
    let m = manager(ctx);
    create_object(ctx, def, ns, obj, Some(&m)).await
}

fn part(sub: Option<&str>) -> WritePart {
    match sub {
        Some("status") => WritePart::Status,
        Some("finalize") => WritePart::Finalize,
        _ => WritePart::Main,
    }
}

/// Commits `new` as the successor of `old` (or deletes it when its deletion completes).
async fn commit_update(
    ctx: &RequestContext,
    def: &ResourceDef,
    old: &Value,
    mut new: Value,
    sub: Option<&str>,
    require_rv: bool,
    manager: Option<&str>,
) -> Result<(Value, Vec<String>), Status> {
    let name = meta_str(old, "name").unwrap_or_default().to_string();
    let ns = meta_str(old, "namespace").map(String::from);
    let expected_rv = match meta_str(&new, "resourceVersion").filter(|s| !s.is_empty()) {
        Some(rv) => Some(
            rv.parse::<u64>()
                .map_err(|_| Status::bad_request(format!("invalid resourceVersion {rv:?}")))?,
        ),
        None => None,
    };
    let remove = objects::prepare_update(def, old, &mut new, part(sub), require_rv)?;
    let warnings = admit(ctx, def, &mut new)?;
    let now = objects::now_rfc3339();
    if let Some(m) = manager {
        patch::managed_fields::update_managed_fields(
            Some(old),
            &mut new,
            m,
            &def.schema,
            sub,
            &def.api_version(),
            &now,
        );
    }
    kcp_admit(ctx, def, Operation::Update, Some(old), sub, &mut new)?;
    stamp_cluster(&mut new, &ctx.cluster);
    let key = ctx.key(def, ns.as_deref(), &name);
    // Like kube-apiserver, an update that changes nothing is not written: no new resourceVersion, no event.
    if !remove && unchanged(old, &new) {
        if let Some(expected) = expected_rv
            && meta_str(old, "resourceVersion") != Some(expected.to_string().as_str())
        {
            return Err(Status::conflict(&def.group, &def.resource, &name));
        }
        return Ok((old.clone(), warnings));
    }
    if ctx.params.dry_run()? {
        return Ok((new, warnings));
    }
    let stored = if remove {
        commit(ctx, def, &name, WriteOp::Delete { key, expected_rv }).await?
    } else {
        commit(
            ctx,
            def,
            &name,
            WriteOp::Update {
                key,
                object: new,
                expected_rv,
            },
        )
        .await?
    };
    Ok((stored, warnings))
}

/// Whether `new` equals `old` apart from the resourceVersion it carries.
fn unchanged(old: &Value, new: &Value) -> bool {
    let strip = |v: &Value| {
        let mut v = v.clone();
        if let Some(m) = v.get_mut("metadata").and_then(Value::as_object_mut) {
            m.remove("resourceVersion");
        }
        v
    };
    strip(old) == strip(new)
}

fn load(ctx: &RequestContext, def: &ResourceDef, ns: Option<&str>, name: &str) -> Result<Value, Status> {
    let key = ctx.key(def, ns, name);
    ctx.state
        .store
        .get(&key)
        .map_err(|e| store_status(e, def, name))?
        .ok_or_else(|| Status::not_found(&def.group, &def.resource, name))
}

pub async fn update(
    ctx: &RequestContext,
    def: &ResourceDef,
    ns: Option<&str>,
    name: &str,
    sub: Option<&str>,
    body: &[u8],
) -> Result<Response, Status> {
    let new = decode(body, &content_type(ctx))?;
    if let Some(body_name) = meta_str(&new, "name").filter(|n| !n.is_empty() && *n != name) {
        return Err(Status::bad_request(format!(
            "the name of the object ({body_name}) does not match the name on the URL ({name})"
        )));
    }
    let old = load(ctx, def, ns, name)?;
    let m = manager(ctx);
    // CR-like kinds demand optimistic concurrency on PUT; built-ins allow unconditional updates.
    let (stored, warnings) = commit_update(ctx, def, &old, new, sub, def.generation, Some(&m)).await?;
    Ok(respond(StatusCode::OK, &stored, &warnings))
}

/// The patch formats, by Content-Type.
enum PatchKind {
    Merge,
    Json,
    Strategic,
    Apply,
}

fn patch_kind(content_type: &str, def: &ResourceDef) -> Result<PatchKind, Status> {
    let ct = content_type.split(';').next().unwrap_or_default().trim();
    match ct {
        "application/merge-patch+json" => Ok(PatchKind::Merge),
        "application/json-patch+json" => Ok(PatchKind::Json),
        "application/strategic-merge-patch+json" if def.strategic_merge => Ok(PatchKind::Strategic),
        "application/apply-patch+yaml" | "application/apply-patch+json" | "application/apply-patch+cbor" => {
            Ok(PatchKind::Apply)
        }
        _ => Err(Status::unsupported_media_type(if def.strategic_merge {
            "the body of the request was in an unknown format - accepted media types include: application/json-patch+json, application/merge-patch+json, application/apply-patch+yaml, application/strategic-merge-patch+json"
        } else {
            "the body of the request was in an unknown format - accepted media types include: application/json-patch+json, application/merge-patch+json, application/apply-patch+yaml"
        })),
    }
}

/// PATCH. `served` is the version the client addressed when it differs from the stored `def`: the patch
/// then applies to the object converted to that version, and the result is converted back.
pub async fn patch(
    ctx: &RequestContext,
    def: &ResourceDef,
    served: Option<&ResourceDef>,
    ns: Option<&str>,
    name: &str,
    sub: Option<&str>,
    body: &[u8],
) -> Result<Response, Status> {
    let ct = content_type(ctx);
    let kind = patch_kind(&ct, def)?;
    if let (Some(v), PatchKind::Apply) = (served, &kind) {
        return Err(Status::unsupported_media_type(format!(
            "server-side apply is served for {}/{} only in its storage version {}; use that version",
            v.group,
            v.resource,
            def.api_version()
        )));
    }
    let patch_body = match kind {
        PatchKind::Apply => decode(body, "yaml")?,
        _ => decode(body, "json")?,
    };
    if let PatchKind::Apply = kind {
        return apply(ctx, def, ns, name, sub, patch_body).await;
    }
    let m = manager(ctx);
    let explicit_rv = matches!(kind, PatchKind::Merge | PatchKind::Strategic)
        && patch_body
            .pointer("/metadata/resourceVersion")
            .and_then(Value::as_str)
            .is_some();
    let mut attempt = 0;
    loop {
        attempt += 1;
        let old = load(ctx, def, ns, name)?;
        let mut new = match served {
            Some(v) => v.served(old.clone())?,
            None => old.clone(),
        };
        match kind {
            PatchKind::Merge => patch::merge_patch(&mut new, &patch_body),
            PatchKind::Json => {
                patch::json_patch(&mut new, &patch_body).map_err(|e| Status::failure(422, "Invalid", e.to_string()))?
            }
            PatchKind::Strategic => {
                new = patch::strategic_merge_patch(&old, &patch_body, &def.schema)
                    .map_err(|e| Status::failure(422, "Invalid", e.to_string()))?
            }
            PatchKind::Apply => unreachable!("handled above"),
        }
        if meta_str(&new, "name").is_some_and(|n| n != name) || meta_str(&new, "uid") != meta_str(&old, "uid") {
            return Err(Status::bad_request(
                "metadata.name and metadata.uid cannot be changed by a patch",
            ));
        }
        if let Some(v) = served {
            new = v.stored(new)?;
        }
        if !explicit_rv {
            // The patch applies to the version just read; a concurrent write means re-applying it.
            let rv = meta_str(&old, "resourceVersion").unwrap_or_default().to_string();
            meta_mut(&mut new).insert("resourceVersion".into(), Value::String(rv));
        }
        match commit_update(ctx, def, &old, new, sub, false, Some(&m)).await {
            Err(s) if s.code == 409 && s.reason == "Conflict" && !explicit_rv && attempt < PATCH_RETRIES => continue,
            Err(s) => return Err(s),
            Ok((stored, warnings)) => return Ok(respond(StatusCode::OK, &stored, &warnings)),
        }
    }
}

async fn apply(
    ctx: &RequestContext,
    def: &ResourceDef,
    ns: Option<&str>,
    name: &str,
    sub: Option<&str>,
    applied: Value,
) -> Result<Response, Status> {
    let Some(manager) = ctx.params.field_manager().map(String::from) else {
        return Err(Status::bad_request(
            "PATCH, application/apply-patch+yaml requests must have a fieldManager query parameter",
        ));
    };
    let api_version = def.api_version();
    if applied.get("apiVersion").and_then(Value::as_str) != Some(api_version.as_str()) {
        return Err(Status::bad_request(format!(
            "Incorrect version specified in apply patch. Specified patch version: {}, expected: {api_version}",
            applied.get("apiVersion").and_then(Value::as_str).unwrap_or_default()
        )));
    }
    if applied.get("kind").and_then(Value::as_str) != Some(def.kind.as_str()) {
        return Err(Status::bad_request(format!(
            "Incorrect kind specified in apply patch. Specified patch kind: {}, expected: {}",
            applied.get("kind").and_then(Value::as_str).unwrap_or_default(),
            def.kind
        )));
    }
    if let Some(n) = meta_str(&applied, "name").filter(|n| *n != name) {
        return Err(Status::bad_request(format!(
            "the name of the object ({n}) does not match the name on the URL ({name})"
        )));
    }
    let mut attempt = 0;
    loop {
        attempt += 1;
        let now = objects::now_rfc3339();
        let key = ctx.key(def, ns, name);
        let live = ctx.state.store.get(&key).map_err(|e| store_status(e, def, name))?;
        let opts = patch::apply::ApplyOptions {
            manager: &manager,
            force: ctx.params.force(),
            schema: &def.schema,
            subresource: sub,
            api_version: &api_version,
            now: &now,
        };
        let mut merged = patch::apply::server_side_apply(live.as_ref(), &applied, &opts).map_err(|e| match e {
            patch::apply::ApplyError::Conflicts(c) => {
                patch::apply::conflict_status(&def.group, &def.resource, name, &c)
            }
            other => Status::failure(422, "Invalid", other.to_string()),
        })?;
        let result = match &live {
            None => {
                if sub.is_some() {
                    return Err(Status::not_found(&def.group, &def.resource, name));
                }
                meta_mut(&mut merged).insert("name".into(), Value::String(name.into()));
                create_object(ctx, def, ns, merged, None).await
            }
            Some(old) => {
                let rv = meta_str(old, "resourceVersion").unwrap_or_default().to_string();
                meta_mut(&mut merged).insert("resourceVersion".into(), Value::String(rv));
                commit_update(ctx, def, old, merged, sub, false, None)
                    .await
                    .map(|(stored, warnings)| respond(StatusCode::OK, &stored, &warnings))
            }
        };
        match result {
            Err(s)
                if s.code == 409
                    && (s.reason == "Conflict" || s.reason == "AlreadyExists")
                    && attempt < PATCH_RETRIES =>
            {
                continue;
            }
            other => return other,
        }
    }
}

/// `DeleteOptions` as clients send them (body or query).
#[derive(Default, serde::Deserialize)]
#[serde(rename_all = "camelCase")]
struct DeleteOptions {
    propagation_policy: Option<String>,
    orphan_dependents: Option<bool>,
    preconditions: Option<Preconditions>,
    #[serde(default)]
    dry_run: Vec<String>,
}

#[derive(Default, serde::Deserialize)]
#[serde(rename_all = "camelCase")]
struct Preconditions {
    uid: Option<String>,
    resource_version: Option<String>,
}

fn delete_options(ctx: &RequestContext, body: &[u8]) -> Result<DeleteOptions, Status> {
    let mut opts: DeleteOptions = if body.iter().all(u8::is_ascii_whitespace) {
        DeleteOptions::default()
    } else {
        serde_json::from_slice(body).map_err(|e| Status::bad_request(format!("invalid DeleteOptions: {e}")))?
    };
    if opts.propagation_policy.is_none() {
        opts.propagation_policy = ctx.params.propagation_policy().map(String::from);
    }
    if opts.propagation_policy.is_none() && opts.orphan_dependents == Some(true) {
        opts.propagation_policy = Some("Orphan".into());
    }
    if let Some(p) = opts.propagation_policy.as_deref()
        && !matches!(p, "Background" | "Foreground" | "Orphan")
    {
        return Err(Status::bad_request(format!(
            "unsupported propagationPolicy {p:?}: supported values: \"Background\", \"Foreground\", \"Orphan\""
        )));
    }
    Ok(opts)
}

/// Deletes (or marks for deletion) one object; returns the response body and status code.
async fn delete_one(
    ctx: &RequestContext,
    def: &ResourceDef,
    obj: Value,
    opts: &DeleteOptions,
    dry_run: bool,
) -> Result<(StatusCode, Value), Status> {
    let name = meta_str(&obj, "name").unwrap_or_default().to_string();
    let ns = meta_str(&obj, "namespace").map(String::from);
    if let Some(p) = &opts.preconditions {
        if p.uid.as_deref().is_some_and(|u| Some(u) != meta_str(&obj, "uid")) {
            return Err(Status::conflict_message(format!(
                "Precondition failed: UID in precondition: {}, UID in object meta: {}",
                p.uid.as_deref().unwrap_or_default(),
                meta_str(&obj, "uid").unwrap_or_default()
            )));
        }
        if p.resource_version
            .as_deref()
            .is_some_and(|r| Some(r) != meta_str(&obj, "resourceVersion"))
        {
            return Err(Status::conflict_message(format!(
                "Precondition failed: ResourceVersion in precondition: {}, ResourceVersion in object meta: {}",
                p.resource_version.as_deref().unwrap_or_default(),
                meta_str(&obj, "resourceVersion").unwrap_or_default()
            )));
        }
    }
    let rv = meta_str(&obj, "resourceVersion").and_then(|r| r.parse::<u64>().ok());
    let mut admitted = obj.clone();
    kcp_admit(ctx, def, Operation::Delete, Some(&obj), None, &mut admitted)?;
    let key = ctx.key(def, ns.as_deref(), &name);
    match objects::prepare_delete(def, &obj, opts.propagation_policy.as_deref(), &objects::now_rfc3339()) {
        DeleteOutcome::AlreadyDeleting => Ok((StatusCode::OK, obj)),
        DeleteOutcome::Mark(marked) => {
            if dry_run {
                return Ok((StatusCode::OK, marked));
            }
            let stored = commit(
                ctx,
                def,
                &name,
                WriteOp::Update {
                    key,
                    object: marked,
                    expected_rv: rv,
                },
            )
            .await?;
            Ok((StatusCode::OK, stored))
        }
        DeleteOutcome::Remove => {
            if !dry_run {
                commit(ctx, def, &name, WriteOp::Delete { key, expected_rv: rv }).await?;
            }
            // CR-like kinds return the deleted object, built-ins a success Status (both parse in kube-rs).
            let body = if def.generation {
                obj
            } else {
                super::success_status(def, &name, meta_str(&obj, "uid").unwrap_or_default())
            };
            Ok((StatusCode::OK, body))
        }
    }
}

pub async fn delete(
    ctx: &RequestContext,
    def: &ResourceDef,
    ns: Option<&str>,
    name: &str,
    body: &[u8],
) -> Result<Response, Status> {
    let opts = delete_options(ctx, body)?;
    let dry_run = ctx.params.dry_run()? || opts.dry_run.iter().any(|d| d == "All");
    let mut attempt = 0;
    loop {
        attempt += 1;
        let obj = load(ctx, def, ns, name)?;
        match delete_one(ctx, def, obj, &opts, dry_run).await {
            Err(s)
                if s.code == 409
                    && s.reason == "Conflict"
                    && opts.preconditions.is_none()
                    && attempt < PATCH_RETRIES =>
            {
                continue;
            }
            Err(s) => return Err(s),
            Ok((code, body)) => return Ok(json_response(code, &body)),
        }
    }
}

pub async fn delete_collection(
    ctx: &RequestContext,
    def: &ResourceDef,
    ns: Option<&str>,
    body: &[u8],
) -> Result<Response, Status> {
    let opts = delete_options(ctx, body)?;
    let dry_run = ctx.params.dry_run()? || opts.dry_run.iter().any(|d| d == "All");
    let filter = super::read::selector_filter(ctx, def)?;
    let query = crate::store::ListQuery {
        group: def.group.clone(),
        resource: def.resource.clone(),
        cluster: Some(ctx.cluster.clone()),
        namespace: if def.namespaced { ns.map(String::from) } else { None },
        limit: None,
        continue_token: None,
        filter,
    };
    let page = ctx.state.store.list(&query).map_err(|e| store_status(e, def, ""))?;
    let mut deleted = Vec::new();
    for obj in page.items {
        match delete_one(ctx, def, obj.clone(), &opts, dry_run).await {
            Ok(_) => deleted.push(obj),
            // Removed concurrently: nothing left to do for this one.
            Err(s) if s.code == 404 || s.code == 409 => {}
            Err(s) => return Err(s),
        }
    }
    let rv = ctx.state.store.current_rv();
    Ok(json_response(
        StatusCode::OK,
        &json!({"kind": def.list_kind, "apiVersion": def.api_version(), "metadata": {"resourceVersion": rv.to_string()}, "items": deleted}),
    ))
}
