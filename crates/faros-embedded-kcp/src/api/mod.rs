//! The HTTP face of the server: request parsing, authentication, authorization (`auth::authorize`)
//! and dispatch to the read, mutating (`mutate`), watch, discovery and review handlers.
//!
//! It owns nothing of the kernel: state, the write pipeline and the authorizer live below it
//! (`state`, `write`, `auth`), and nothing below imports from here.

use std::sync::Arc;

use axum::body::Body;
use axum::extract::{Request, State};
use axum::response::{IntoResponse, Response};
use faros_core::status::{Status, StatusDetails};
use http::{HeaderMap, Method, StatusCode};
use serde_json::json;

use crate::auth::{Attributes, CredentialSource, UserInfo, authorize};
use crate::registry::ResourceDef;
use crate::state::ServerState;
use crate::store::ObjectKey;

pub mod discovery;
pub mod mutate;
pub mod openapi;
pub mod params;
pub mod protobuf;
pub mod read;
pub mod request;
pub mod respond;
pub mod reviews;
pub mod virtual_workspace;
pub mod watch;

use crate::auth::Verb;
use crate::objects::meta;
use params::Params;
use request::{ResourcePath, Target};

/// The verb of a resource request, as RBAC names it.
pub fn verb(method: &Method, path: &ResourcePath, params: &Params) -> Result<Verb, Status> {
    Ok(match *method {
        Method::GET | Method::HEAD if path.name.is_some() => Verb::Get,
        Method::GET | Method::HEAD if params.watch() => Verb::Watch,
        Method::GET | Method::HEAD => Verb::List,
        Method::POST if path.name.is_none() => Verb::Create,
        Method::PUT if path.name.is_some() => Verb::Update,
        Method::PATCH if path.name.is_some() => Verb::Patch,
        Method::DELETE if path.name.is_some() => Verb::Delete,
        Method::DELETE => Verb::DeleteCollection,
        _ => {
            return Err(
                Status::method_not_allowed("the server does not allow this method on the requested resource")
                    .with_details(StatusDetails::default()),
            );
        }
    })
}

/// kube-apiserver's 404 for a path no API handler claims: a group/version not served in the
/// cluster, a custom resource's unknown resource, subresource or scope (kcp serves its own kinds
/// and bound APIs as custom resources), a path outside the API. Go's `http.NotFound`: plain text,
/// not a Status, which clients report as such.
pub fn page_not_found() -> Response {
    (
        StatusCode::NOT_FOUND,
        [(http::header::CONTENT_TYPE, "text/plain; charset=utf-8")],
        "404 page not found\n",
    )
        .into_response()
}

/// kube-apiserver's 404 Status for a typed built-in group/version that has no such resource
/// (its generic server response: empty `details` included).
pub fn resource_not_found() -> Status {
    Status::not_found_message("the server could not find the requested resource").with_details(StatusDetails::default())
}

/// The 404 of a request for `def` (or, without one, for its group/version in `cluster`) that no
/// handler serves: a Status where kube-apiserver's typed handlers answer, plain text where a
/// custom resource's handler hands the request on ([`page_not_found`]).
fn unserved(typed_builtin: bool) -> Result<Response, Status> {
    match typed_builtin {
        true => Err(resource_not_found()),
        false => Ok(page_not_found()),
    }
}

/// Entry point for every API request (after the health routes).
pub async fn handle(State(state): State<Arc<ServerState>>, req: Request) -> Response {
    let method = req.method().clone();
    let started = std::time::Instant::now();
    let accepts = respond::Accepts::from_headers(req.headers());
    // Watch streams are JSON lines whatever the client prefers (Go clients list JSON too).
    let watch = Params::parse(req.uri().query()).watch();
    // The OpenAPI v2 document has media types of its own and negotiates them itself.
    let path = req.uri().path();
    let openapi_v2 =
        path.ends_with("/openapi/v2") && request::parse(path).is_ok_and(|p| matches!(p.target, Target::OpenApiV2));
    let resp = if openapi_v2 {
        serve(&state, req).await.unwrap_or_else(IntoResponse::into_response)
    } else if !accepts.any() || (watch && !accepts.json) {
        respond::not_acceptable().into_response()
    } else {
        match serve(&state, req).await {
            Ok(r) if watch => r,
            Ok(r) => respond::negotiate_encoding(r, accepts).await,
            Err(status) => respond::negotiate_encoding(status.into_response(), accepts).await,
        }
    };
    state
        .metrics
        .observe_request(method.as_str(), resp.status().as_u16(), started.elapsed());
    resp
}

async fn serve(state: &Arc<ServerState>, req: Request) -> Result<Response, Status> {
    let (parts, body) = req.into_parts();
    if let Some(rest) = parts.uri.path().strip_prefix(virtual_workspace::PREFIX) {
        let user = authenticate(state, &parts.headers).await?;
        return virtual_workspace::serve(state, user, rest.to_string(), parts, body).await;
    }
    let mut path = request::parse(parts.uri.path())?;
    let user = authenticate_or_anonymous(state, &parts.headers).await?;
    // kcp rewrites a bare path of a ServiceAccount token to its own cluster (in-cluster clients).
    if let (false, Some(own)) = (path.explicit_cluster, user.cluster_name()) {
        path.cluster = own.to_string();
    }
    // kcp serves wildcard requests to privileged users only (everyone else uses virtual
    // workspaces); its authorizer refuses a resource request as any other it denies.
    if path.cluster == "*"
        && !user.in_group(crate::auth::GROUP_MASTERS)
        && let Target::Resource(rp) = &path.target
    {
        let params = Params::parse(parts.uri.query());
        let verb = verb(&parts.method, rp, &params)?;
        let attrs = Attributes {
            subresource: rp.subresource.as_deref().unwrap_or_default(),
            name: rp.name.as_deref().unwrap_or_default(),
            namespace: rp.namespace.as_deref().unwrap_or_default(),
            ..Attributes::resource(&user, verb.as_str(), &rp.group, &rp.resource)
        };
        return Err(crate::auth::rbac::forbidden_status(
            &attrs,
            crate::auth::authorize::ACCESS_DENIED,
        ));
    }
    let cluster = resolve_cluster(state, &path.cluster, &user)?;
    if impersonation_header(&parts.headers).is_some() {
        return Err(impersonation_refusal(state, &cluster, &user, &parts, &path.target));
    }
    let local = parts
        .uri
        .path()
        .strip_prefix("/clusters/")
        .map_or(parts.uri.path(), |r| r.find('/').map_or("/", |i| &r[i..]));
    crate::kcp::clusters::check_active(state, &cluster, local)?;
    if !matches!(path.target, Target::Resource(_) | Target::NonResource(_)) {
        // kcp: discovery and OpenAPI of a workspace need `access` to it like its content does.
        crate::auth::authorize_content(
            state,
            &cluster,
            &Attributes::non_resource(&user, Verb::Get.as_str(), local),
        )?;
    }
    let params = Params::parse(parts.uri.query());
    match path.target {
        Target::Resource(rp) => {
            let ctx = RequestContext {
                state: state.clone(),
                user,
                cluster,
                params,
                headers: parts.headers,
                method: parts.method,
                visible: None,
                claim: None,
            };
            let (group, resource_name, name) = (rp.group.clone(), rp.resource.clone(), rp.name.clone());
            // kube's admission and storage refusals are NewForbidden(resource, name): a 403
            // always names what it refused, whichever check wrote its message.
            resource(ctx, rp, body)
                .await
                .map_err(|status| match status.code == 403 && status.details.is_none() {
                    true => status.with_details(StatusDetails {
                        group,
                        kind: resource_name,
                        name: name.unwrap_or_default(),
                        ..Default::default()
                    }),
                    false => status,
                })
        }
        // Discovery is then readable by every user with access, like Kubernetes' system:discovery role.
        Target::LegacyVersions => Ok(discovery::legacy_versions()),
        Target::Groups => Ok(discovery::groups(state, &cluster)),
        Target::Group(g) => discovery::group(state, &cluster, &g),
        Target::ResourceList { group, version } => discovery::resources(state, &cluster, &group, &version),
        Target::OpenApiV3(None) => Ok(openapi::index(
            state,
            &cluster,
            path.explicit_cluster.then_some(&path.cluster),
        )),
        Target::OpenApiV3(Some(gv)) => openapi::document(state, &cluster, &gv),
        Target::OpenApiV2 => openapi::v2::serve(state, &cluster, &parts.headers),
        Target::NonResource(p) if p == "/version" => Ok(discovery::version()),
        Target::NonResource(p) => {
            let attrs = Attributes::non_resource(&user, Verb::Get.as_str(), &p);
            authorize(state, &cluster, &attrs)?;
            Ok(page_not_found())
        }
    }
}

/// A request's resolved context.
pub struct RequestContext {
    pub state: Arc<ServerState>,
    pub user: UserInfo,
    /// The logical cluster name, or `*` for wildcard requests.
    pub cluster: String,
    pub params: Params,
    pub headers: HeaderMap,
    pub method: Method,
    /// Objects outside this filter do not exist for the request (virtual workspace views).
    pub visible: Option<read::ObjectFilter>,
    /// Writes must stay inside this accepted claim selector (virtual workspace views).
    pub claim: Option<Arc<crate::write::claim::ClaimGuard>>,
}

impl RequestContext {
    pub fn is_wildcard(&self) -> bool {
        self.cluster == "*"
    }

    pub fn key(&self, def: &ResourceDef, namespace: Option<&str>, name: &str) -> ObjectKey {
        def.key(&self.cluster, namespace, name)
    }
}

/// Bearer authentication. ServiceAccount tokens stay valid only while their Secret exists; OIDC ID
/// tokens (`--oidc-*`) are tried last, and any failure of theirs is the same bare 401 kube gives.
pub async fn authenticate(state: &ServerState, headers: &HeaderMap) -> Result<UserInfo, Status> {
    if let Some(h) = impersonation_header(headers) {
        return Err(impersonation_unsupported(h));
    }
    authenticate_bearer(state, headers).await
}

/// The first impersonation header of a request.
fn impersonation_header(headers: &HeaderMap) -> Option<&http::HeaderName> {
    headers.keys().find(|k| k.as_str().starts_with("impersonate-"))
}

/// kcp implements impersonation with its own RBAC checks and scoping; this server does not, and
/// acting as the caller instead would silently change who is authorized.
fn impersonation_unsupported(header: &http::HeaderName) -> Status {
    Status::forbidden(format!(
        "impersonation ({header} header) is not supported by the embedded kcp"
    ))
}

/// The refusal of a request carrying impersonation headers, after its caller was authenticated in
/// `cluster`. A caller RBAC does not let impersonate the user named (everyone but
/// `system:masters`, unless a role grants `impersonate` on `users`) is refused as kcp refuses it:
/// the request's own verb as constrained impersonation names it, on the request's resource. Any
/// other impersonation is refused as unsupported.
fn impersonation_refusal(
    state: &ServerState,
    cluster: &str,
    user: &UserInfo,
    parts: &http::request::Parts,
    target: &Target,
) -> Status {
    let headers = &parts.headers;
    let Some(header) = impersonation_header(headers) else {
        return impersonation_unsupported(&http::HeaderName::from_static("impersonate-user"));
    };
    let only_user = headers
        .keys()
        .filter(|k| k.as_str().starts_with("impersonate-"))
        .all(|k| k == "impersonate-user");
    let impersonated = headers
        .get("impersonate-user")
        .and_then(|v| v.to_str().ok())
        .unwrap_or_default();
    let Target::Resource(rp) = target else {
        return impersonation_unsupported(header);
    };
    if !only_user || user.in_group(crate::auth::GROUP_MASTERS) {
        return impersonation_unsupported(header);
    }
    let may = Attributes {
        name: impersonated,
        ..Attributes::resource(user, "impersonate", "", "users")
    };
    let Ok(verb) = verb(&parts.method, rp, &Params::parse(parts.uri.query())) else {
        return impersonation_unsupported(header);
    };
    if authorize(state, cluster, &may).is_ok() {
        return impersonation_unsupported(header);
    }
    let constrained = format!("impersonate-on:user-info:{}", verb.as_str());
    crate::auth::forbidden_status(
        &Attributes {
            subresource: rp.subresource.as_deref().unwrap_or_default(),
            name: rp.name.as_deref().unwrap_or_default(),
            namespace: rp.namespace.as_deref().unwrap_or_default(),
            ..Attributes::resource(user, &constrained, &rp.group, &rp.resource)
        },
        crate::auth::authorize::ACCESS_DENIED,
    )
}

/// Bearer authentication alone (impersonation headers are the caller's business).
async fn authenticate_bearer(state: &ServerState, headers: &HeaderMap) -> Result<UserInfo, Status> {
    let Some(token) = headers
        .get(http::header::AUTHORIZATION)
        .and_then(|v| v.to_str().ok())
        .and_then(faros_core::bearer::token)
    else {
        return Err(Status::unauthorized("Unauthorized"));
    };
    let Some(authenticated) = state.authn.authenticate(token) else {
        return oidc_user(state, token).await;
    };
    if let CredentialSource::ServiceAccount(claims) = &authenticated.source {
        let key = ObjectKey {
            group: String::new(),
            resource: "secrets".into(),
            cluster: claims.cluster_name.clone(),
            namespace: claims.namespace.clone(),
            name: claims.secret_name.clone(),
        };
        let secret = state.store.get(&key).map_err(|e| Status::internal(e.to_string()))?;
        let valid = secret.is_some_and(|s| {
            meta::annotation(&s, "kubernetes.io/service-account.uid") == Some(claims.service_account_uid.as_str())
        });
        if !valid {
            return Err(Status::unauthorized("Unauthorized"));
        }
    }
    Ok(authenticated.user)
}

/// kube's anonymous authenticator, which kcp keeps on: a request without credentials is
/// `system:anonymous` in `system:unauthenticated` and meets authorization like any other, so it is
/// refused with a 403 naming that user unless RBAC grants it something. Presented credentials that
/// fail stay a 401 ([`authenticate`]).
pub async fn authenticate_or_anonymous(state: &ServerState, headers: &HeaderMap) -> Result<UserInfo, Status> {
    let credentials = headers
        .get(http::header::AUTHORIZATION)
        .and_then(|v| v.to_str().ok())
        .and_then(faros_core::bearer::token)
        .is_some();
    match credentials {
        true => authenticate_bearer(state, headers).await,
        false => Ok(crate::auth::anonymous()),
    }
}

/// The user of an OIDC ID token, with `system:authenticated` as kube's union authenticator adds it.
async fn oidc_user(state: &ServerState, token: &str) -> Result<UserInfo, Status> {
    let Some(verifier) = &state.oidc else {
        return Err(Status::unauthorized("Unauthorized"));
    };
    match verifier.check(token).await {
        faros_core::oidc::Outcome::Accepted(mut user) => {
            user.groups.push(crate::auth::GROUP_AUTHENTICATED.to_string());
            Ok(user)
        }
        faros_core::oidc::Outcome::Rejected(reason) => {
            // kube logs why and answers a bare 401; the reason names no token or claim value.
            tracing::debug!(%reason, "OIDC token rejected");
            Err(Status::unauthorized("Unauthorized"))
        }
        faros_core::oidc::Outcome::Unavailable | faros_core::oidc::Outcome::NotMine => {
            Err(Status::unauthorized("Unauthorized"))
        }
    }
}

/// Turns the cluster segment of the URL into a logical cluster name (kcp: a single segment is a name
/// taken as is, a multi-segment value is a workspace path that must exist, `*` is the wildcard).
fn resolve_cluster(state: &ServerState, segment: &str, user: &UserInfo) -> Result<String, Status> {
    if segment == "*" {
        // kcp serves wildcard requests to privileged users only; everyone else uses virtual workspaces.
        if !user.in_group(crate::auth::GROUP_MASTERS) {
            return Err(Status::forbidden(format!(
                "User \"{}\" cannot list across all logical clusters: wildcard requests are limited to system:masters",
                user.username
            )));
        }
        return Ok("*".into());
    }
    let clusters = state.clusters.read().unwrap_or_else(|p| p.into_inner());
    match clusters.resolve(segment) {
        Some(name) => Ok(name.to_string()),
        None => Err(Status::not_found("tenancy.kcp.io", "workspaces", segment)),
    }
}

async fn resource(ctx: RequestContext, rp: ResourcePath, body: Body) -> Result<Response, Status> {
    let state = ctx.state.clone();
    let lookup = if ctx.is_wildcard() {
        state.registry.lookup_any(&rp.group, &rp.version, &rp.resource)
    } else {
        state
            .registry
            .lookup(&ctx.cluster, &rp.group, &rp.version, &rp.resource)
    };
    let Some(def) = lookup else {
        // A typed built-in group/version answers for its unknown resources; anything else is
        // not served at all.
        let served = |d: &ResourceDef| d.group == rp.group && d.version == rp.version && d.typed_builtin();
        let typed = match ctx.is_wildcard() {
            true => crate::builtin::builtin_resources().iter().any(served),
            false => state.registry.resources(&ctx.cluster).iter().any(|d| served(d)),
        };
        return unserved(typed);
    };
    if !def.namespaced && rp.namespace.is_some() {
        return unserved(def.typed_builtin());
    }
    match rp.subresource.as_deref() {
        None => {}
        Some("status") if def.status_subresource => {}
        Some("finalize") if def.group.is_empty() && def.resource == "namespaces" => {}
        Some(_) => return unserved(def.typed_builtin()),
    }
    serve_resource(ctx, def, rp, body, true).await
}

/// Serves a resource request for an already resolved definition. `check_rbac` is false when the caller
/// (the virtual workspace) has authorized the request itself.
pub async fn serve_resource(
    ctx: RequestContext,
    def: Arc<ResourceDef>,
    rp: ResourcePath,
    body: Body,
    check_rbac: bool,
) -> Result<Response, Status> {
    let state = ctx.state.clone();
    let verb = verb(&ctx.method, &rp, &ctx.params)?;
    if def.create_only && verb != Verb::Create {
        return Err(Status::method_not_allowed(format!(
            "the server does not allow this method on the requested resource ({}.{} is create-only)",
            def.resource, def.group
        )));
    }
    if ctx.is_wildcard() && !matches!(verb, Verb::List | Verb::Watch) {
        // kcp's wildcard guard: kube's MethodNotSupported for the verb, with the cluster said.
        return Err(Status::method_not_allowed(format!(
            "{} is not supported on resources of kind \"{}\" in the `*` logical cluster",
            verb.as_str(),
            faros_core::status::qualified(&def.group, &def.resource)
        ))
        .with_details(faros_core::status::StatusDetails {
            group: def.group.clone(),
            kind: def.resource.clone(),
            ..Default::default()
        }));
    }
    // kube's RequestInfo puts a Namespace addressed by name in its own namespace, so RBAC (a
    // RoleBinding there) and the 403's wording see it as kcp does.
    let namespace = match (def.group.as_str(), def.resource.as_str(), &rp.name) {
        ("", "namespaces", Some(name)) => name.as_str(),
        _ => rp.namespace.as_deref().unwrap_or_default(),
    };
    let attrs = Attributes {
        subresource: rp.subresource.as_deref().unwrap_or_default(),
        name: rp.name.as_deref().unwrap_or_default(),
        namespace,
        ..Attributes::resource(&ctx.user, verb.as_str(), &def.group, &def.resource)
    };
    // Reviews answer about their caller, who must be someone: kube binds the roles allowing them
    // to `system:authenticated` only, so an anonymous review meets RBAC (and is refused).
    if check_rbac && (!def.create_only || crate::auth::is_anonymous(&ctx.user)) {
        authorize(&state, &ctx.cluster, &attrs)?;
    }
    let body = match verb {
        Verb::Create | Verb::Update | Verb::Patch | Verb::Delete | Verb::DeleteCollection => {
            read_body(body, state.max_body_bytes).await?
        }
        _ => bytes::Bytes::new(),
    };
    let ns = rp.namespace.as_deref();
    let name = rp.name.as_deref().unwrap_or_default();
    let sub = rp.subresource.as_deref();
    if def.conversion.is_some() && matches!(verb, Verb::Create | Verb::Update | Verb::Patch | Verb::Delete) {
        return converted_write(&ctx, &def, verb, ns, name, sub, body).await;
    }
    match verb {
        Verb::Get => read::get(&ctx, &def, ns, name),
        Verb::List => read::list(&ctx, &def, ns),
        Verb::Watch => watch::watch(ctx, def, rp.namespace.clone()),
        Verb::Create if def.create_only => reviews::create(&ctx, &def, ns, &body).await,
        Verb::Create => mutate::create(&ctx, &def, ns, &body).await,
        Verb::Update => mutate::update(&ctx, &def, ns, name, sub, &body).await,
        Verb::Patch => mutate::patch(&ctx, &def, None, ns, name, sub, &body).await,
        Verb::Delete => mutate::delete(&ctx, &def, ns, name, &body).await,
        Verb::DeleteCollection => mutate::delete_collection(&ctx, &def, ns, &body).await,
        _ => Err(Status::method_not_allowed(
            "the server does not allow this method on the requested resource",
        )),
    }
}

/// Writes through a version that is converted to another stored version: the body is converted to the
/// stored version, the write runs against the storage definition, and the response is converted back.
async fn converted_write(
    ctx: &RequestContext,
    def: &Arc<ResourceDef>,
    verb: Verb,
    ns: Option<&str>,
    name: &str,
    sub: Option<&str>,
    body: bytes::Bytes,
) -> Result<Response, Status> {
    let sdef = ctx.state.registry.storage_def(&ctx.cluster, def);
    let content_type = ctx
        .headers
        .get(http::header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .unwrap_or("application/json")
        .to_string();
    let resp = match verb {
        Verb::Create | Verb::Update => {
            let mut obj = mutate::decode(&body, &content_type)?;
            crate::objects::check_type(def, &mut obj)?;
            let stored = serde_json::to_vec(&def.stored(obj)?).unwrap_or_default();
            if verb == Verb::Create {
                mutate::create(ctx, &sdef, ns, &stored).await?
            } else {
                mutate::update(ctx, &sdef, ns, name, sub, &stored).await?
            }
        }
        Verb::Patch => mutate::patch(ctx, &sdef, Some(def), ns, name, sub, &body).await?,
        _ => mutate::delete(ctx, &sdef, ns, name, &body).await?,
    };
    let (mut parts, body) = resp.into_parts();
    parts.headers.remove(http::header::CONTENT_LENGTH);
    let bytes = axum::body::to_bytes(body, usize::MAX)
        .await
        .map_err(|e| Status::internal(e.to_string()))?;
    let value: serde_json::Value = serde_json::from_slice(&bytes).map_err(|e| Status::internal(e.to_string()))?;
    let value = if value.get("kind").and_then(|k| k.as_str()) == Some(sdef.kind.as_str()) {
        def.served(value)?
    } else {
        value
    };
    Ok(Response::from_parts(
        parts,
        Body::from(serde_json::to_vec(&value).unwrap_or_default()),
    ))
}

async fn read_body(body: Body, limit: usize) -> Result<bytes::Bytes, Status> {
    axum::body::to_bytes(body, limit).await.map_err(|_| {
        Status::too_large(format!(
            "the request body is larger than the server's limit of {limit} bytes"
        ))
    })
}

/// 200 OK with a JSON value.
pub fn ok(body: &serde_json::Value) -> Response {
    respond::json_response(StatusCode::OK, body)
}

/// The JSON `Status` Kubernetes returns for a successful delete of built-in kinds.
pub fn success_status(def: &ResourceDef, name: &str, uid: &str) -> serde_json::Value {
    let mut details = json!({"name": name, "kind": def.resource, "uid": uid});
    // Go omits the core group's empty name.
    if !def.group.is_empty() {
        details["group"] = json!(def.group);
    }
    json!({"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Success", "details": details})
}
