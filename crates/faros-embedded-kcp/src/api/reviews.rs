//! Create-only review resources: TokenReview, SelfSubjectReview and the SubjectAccessReview family. They are never
//! stored; the response is the request with `status` filled in.

use std::collections::BTreeMap;

use axum::response::Response;
use faros_core::status::Status;
use serde_json::{Value, json};

use super::{RequestContext, authorize, mutate::decode};
use crate::auth::Verb;
use crate::auth::{Attributes, UserInfo};
use crate::registry::ResourceDef;

pub async fn create(
    ctx: &RequestContext,
    def: &ResourceDef,
    ns: Option<&str>,
    body: &[u8],
) -> Result<Response, Status> {
    let content_type = ctx
        .headers
        .get(http::header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .unwrap_or("application/json");
    let mut review = decode(body, content_type)?;
    crate::objects::check_type(def, &mut review)?;
    // Asking about yourself is open to every authenticated user (system:basic-user); the other reviews
    // reveal other identities' rights and need RBAC `create` on the review resource.
    if !matches!(
        def.resource.as_str(),
        "selfsubjectaccessreviews" | "selfsubjectreviews" | "selfsubjectrulesreviews"
    ) {
        let attrs = Attributes {
            namespace: ns.unwrap_or_default(),
            ..Attributes::resource(&ctx.user, Verb::Create.as_str(), &def.group, &def.resource)
        };
        authorize(&ctx.state, &ctx.cluster, &attrs)?;
    } else {
        // Still only inside a workspace the caller may enter, as every kcp request.
        let attrs = Attributes::resource(&ctx.user, Verb::Create.as_str(), &def.group, &def.resource);
        crate::auth::authorize_content(&ctx.state, &ctx.cluster, &attrs)?;
    }
    let status = match def.resource.as_str() {
        "tokenreviews" => token_review(ctx, &review).await,
        "subjectaccessreviews" => {
            let user = subject(&review)?;
            access_review(ctx, &review, &user, None)?
        }
        "localsubjectaccessreviews" => {
            let user = subject(&review)?;
            let ns = ns.unwrap_or_default();
            if review
                .pointer("/spec/resourceAttributes/namespace")
                .and_then(Value::as_str)
                .is_some_and(|n| n != ns)
            {
                return Err(Status::bad_request(
                    "spec.resourceAttributes.namespace must match the namespace of the request",
                ));
            }
            access_review(ctx, &review, &user, Some(ns))?
        }
        "selfsubjectaccessreviews" => access_review(ctx, &review, &ctx.user, None)?,
        "selfsubjectrulesreviews" => rules_review(ctx, &review),
        // `kubectl auth whoami`: the caller's own user info, as authenticated.
        "selfsubjectreviews" => {
            json!({"userInfo": serde_json::to_value(&ctx.user).map_err(|e| Status::internal(e.to_string()))?})
        }
        other => return Err(Status::not_found_message(format!("no review handler for {other}"))),
    };
    // What kube's review storages answer: SelfSubjectReview and SelfSubjectRulesReview are new
    // objects (the former stamped with its creation time); the others echo the request, which
    // the create handler has given its managedFields like any created object.
    match def.resource.as_str() {
        "selfsubjectreviews" => {
            review["metadata"] = json!({"creationTimestamp": crate::objects::now_rfc3339()});
        }
        "selfsubjectrulesreviews" => {
            review["metadata"] = json!({});
            review["spec"] = json!({});
        }
        _ => crate::patch::managed_fields::update_managed_fields(
            Some(&crate::objects::create_baseline(def)),
            &mut review,
            &super::mutate::manager(ctx),
            &def.schema,
            None,
            &def.api_version(),
            &crate::objects::now_rfc3339(),
        ),
    }
    review["status"] = status;
    Ok(super::respond::json_response(http::StatusCode::CREATED, &review))
}

/// `kubectl auth can-i --list`: the RBAC rules that apply to the caller in `spec.namespace` of this
/// logical cluster, split into resource and non-resource rules. A binding naming a role that does
/// not exist is reported in `evaluationError` only: kube's RBAC authorizer never calls its rules
/// incomplete (only authorizers such as webhooks can), and kcp's chain has no such authorizer.
fn rules_review(ctx: &RequestContext, review: &Value) -> Value {
    let ns = review
        .pointer("/spec/namespace")
        .and_then(Value::as_str)
        .unwrap_or_default();
    let found = ctx
        .state
        .rbac
        .read()
        .unwrap_or_else(|p| p.into_inner())
        .rules_for(&ctx.cluster, &ctx.user, ns);
    // What system:basic-user grants every authenticated user, as kube-apiserver lists it too.
    let mut resource_rules = vec![
        json!({"verbs": ["create"], "apiGroups": ["authorization.k8s.io"],
            "resources": ["selfsubjectaccessreviews", "selfsubjectrulesreviews"]}),
        json!({"verbs": ["create"], "apiGroups": ["authentication.k8s.io"], "resources": ["selfsubjectreviews"]}),
    ];
    // What system:discovery and system:public-info-viewer grant every authenticated user, as kcp
    // lists them in every workspace (the embedded kcp serves those paths to them too).
    let mut non_resource_rules = match ctx.user.in_group(crate::auth::GROUP_AUTHENTICATED) {
        true => vec![
            json!({"verbs": ["get"], "nonResourceURLs": ["/api", "/api/*", "/apis", "/apis/*", "/healthz", "/livez",
                "/openapi", "/openapi/*", "/readyz", "/version", "/version/"]}),
            json!({"verbs": ["get"], "nonResourceURLs": ["/healthz", "/livez", "/readyz", "/version", "/version/"]}),
        ],
        false => Vec::new(),
    };
    for r in found.rules {
        if r.non_resource_urls.is_empty() {
            let mut rule = json!({"verbs": r.verbs, "apiGroups": r.api_groups, "resources": r.resources});
            if !r.resource_names.is_empty() {
                rule["resourceNames"] = json!(r.resource_names);
            }
            resource_rules.push(rule);
        } else {
            non_resource_rules.push(json!({"verbs": r.verbs, "nonResourceURLs": r.non_resource_urls}));
        }
    }
    let mut status = json!({"resourceRules": resource_rules, "nonResourceRules": non_resource_rules,
        "incomplete": false});
    if !found.errors.is_empty() {
        status["evaluationError"] = json!(found.errors.join(", "));
    }
    status
}

async fn token_review(ctx: &RequestContext, review: &Value) -> Value {
    let token = review
        .pointer("/spec/token")
        .and_then(Value::as_str)
        .unwrap_or_default();
    let mut headers = http::HeaderMap::new();
    match http::HeaderValue::from_str(&format!("Bearer {token}")) {
        Ok(v) => {
            headers.insert(http::header::AUTHORIZATION, v);
        }
        Err(_) => return unauthenticated("invalid token"),
    }
    match super::authenticate(&ctx.state, &headers).await {
        Ok(user) => {
            // Every token this server takes is audience-agnostic (token file, legacy
            // ServiceAccount tokens, OIDC checked against its own client id), so, as kube does
            // for those, the token is good for the audiences asked for, or for the server's own.
            let audiences = match review.pointer("/spec/audiences") {
                Some(Value::Array(asked)) if !asked.is_empty() => Value::Array(asked.clone()),
                _ => json!([API_AUDIENCE]),
            };
            json!({"authenticated": true, "user": user, "audiences": audiences})
        }
        Err(_) => unauthenticated("invalid bearer token"),
    }
}

/// The audience kcp's API serves by default (`--api-audiences`, from its ServiceAccount issuer).
const API_AUDIENCE: &str = "https://kcp.default.svc";

/// A refused TokenReview's status as kube-apiserver writes it: `authenticated` false is omitted,
/// the user is present and empty.
fn unauthenticated(error: &str) -> Value {
    json!({"user": {}, "error": error})
}

fn subject(review: &Value) -> Result<UserInfo, Status> {
    let spec = review.get("spec").cloned().unwrap_or(json!({}));
    let user = spec.get("user").and_then(Value::as_str).unwrap_or_default().to_string();
    let groups: Vec<String> = spec
        .get("groups")
        .and_then(Value::as_array)
        .map(|a| a.iter().filter_map(|g| g.as_str().map(String::from)).collect())
        .unwrap_or_default();
    if user.is_empty() && groups.is_empty() {
        // kube's validation names no kind here (its message starts ".authorization.k8s.io").
        return Err(Status::invalid(
            "authorization.k8s.io",
            "",
            "",
            vec![faros_core::status::StatusCause {
                reason: "FieldValueInvalid".into(),
                message: "Invalid value: \"\": at least one of user or group must be specified".into(),
                field: "spec.user".into(),
            }],
        ));
    }
    let extra: BTreeMap<String, Vec<String>> = spec
        .get("extra")
        .and_then(|e| serde_json::from_value(e.clone()).ok())
        .unwrap_or_default();
    Ok(UserInfo {
        username: user,
        uid: spec.get("uid").and_then(Value::as_str).unwrap_or_default().into(),
        groups,
        extra,
    })
}

fn access_review(
    ctx: &RequestContext,
    review: &Value,
    user: &UserInfo,
    ns_override: Option<&str>,
) -> Result<Value, Status> {
    let spec = review.get("spec").cloned().unwrap_or(json!({}));
    let s = |v: &Value, k: &str| v.get(k).and_then(Value::as_str).unwrap_or_default().to_string();
    let (attrs_owned, resource_request) = if let Some(ra) = spec.get("resourceAttributes") {
        let ns = ns_override.map(String::from).unwrap_or_else(|| s(ra, "namespace"));
        (
            (
                s(ra, "verb"),
                s(ra, "group"),
                s(ra, "resource"),
                s(ra, "subresource"),
                s(ra, "name"),
                ns,
                String::new(),
            ),
            true,
        )
    } else if let Some(nra) = spec.get("nonResourceAttributes") {
        (
            (
                s(nra, "verb"),
                String::new(),
                String::new(),
                String::new(),
                String::new(),
                String::new(),
                s(nra, "path"),
            ),
            false,
        )
    } else {
        return Err(Status::bad_request(
            "exactly one of spec.resourceAttributes and spec.nonResourceAttributes must be set",
        ));
    };
    let (verb, group, resource, sub, name, ns, path) = &attrs_owned;
    let attrs = Attributes {
        user,
        verb,
        api_group: group,
        resource,
        subresource: sub,
        name,
        namespace: ns,
        path,
        resource_request,
    };
    Ok(match authorize(&ctx.state, &ctx.cluster, &attrs) {
        // kcp's authorizer chain says only this much either way (the RBAC rule is not named).
        Ok(()) => json!({"allowed": true, "reason": "access granted"}),
        Err(_) => json!({"allowed": false, "reason": "access denied"}),
    })
}
