//! GET of one object and LIST of collections (selectors, pagination, representations).

use std::sync::Arc;

use axum::response::Response;
use faros_core::status::Status;
use serde_json::Value;

use super::RequestContext;
use super::respond::{Representation, json_response, list_repr, object_repr};
use crate::objects::meta;
use crate::registry::ResourceDef;
use crate::selector::{FieldSelector, LabelSelector};
use crate::store::ListQuery;

pub fn get(ctx: &RequestContext, def: &ResourceDef, ns: Option<&str>, name: &str) -> Result<Response, Status> {
    let key = ctx.key(def, ns, name);
    let obj = ctx
        .state
        .store
        .get(&key)
        .map_err(|e| crate::write::store_status(e, def, name))?;
    let Some(obj) = obj.filter(|o| ctx.visible.as_ref().is_none_or(|v| v(o))) else {
        return Err(Status::not_found(&def.group, &def.resource, name));
    };
    let obj = def.served(obj)?;
    let repr = Representation::from_headers(&ctx.headers);
    let rv = ctx.state.store.current_rv();
    Ok(json_response(http::StatusCode::OK, &object_repr(def, obj, repr, rv)))
}

/// An object filter built from the label and field selectors of a request.
pub type ObjectFilter = Arc<dyn Fn(&Value) -> bool + Send + Sync>;

/// Parses `labelSelector` and `fieldSelector`; unsupported field labels are a 400 like Kubernetes'.
pub fn selector_filter(ctx: &RequestContext, def: &ResourceDef) -> Result<Option<ObjectFilter>, Status> {
    let labels = match ctx.params.label_selector() {
        Some(s) => Some(
            LabelSelector::parse(s).map_err(|e| Status::bad_request(format!("unable to parse requirement: {e}")))?,
        ),
        None => None,
    };
    let fields = match ctx.params.field_selector() {
        Some(s) => {
            let sel =
                FieldSelector::parse(s).map_err(|e| Status::bad_request(format!("invalid field selector: {e}")))?;
            for f in sel.fields() {
                let known =
                    f == "metadata.name" || f == "metadata.namespace" || def.selectable_fields.iter().any(|s| s == f);
                if !known {
                    return Err(Status::bad_request(format!("field label not supported: {f}")));
                }
            }
            Some(sel)
        }
        None => None,
    };
    let visible = ctx.visible.clone();
    if labels.as_ref().is_none_or(|l| l.is_empty()) && fields.as_ref().is_none_or(|f| f.is_empty()) {
        return Ok(visible);
    }
    Ok(Some(Arc::new(move |obj: &Value| {
        if visible.as_ref().is_some_and(|v| !v(obj)) {
            return false;
        }
        if let Some(l) = &labels
            && !l.matches(meta::labels(obj))
        {
            return false;
        }
        if let Some(f) = &fields {
            return f.matches(|field| field_value(obj, field));
        }
        true
    })))
}

/// The value of a selectable field; `metadata.namespace` of cluster-scoped objects is "".
pub fn field_value(obj: &Value, field: &str) -> Option<String> {
    let path = format!(".{field}");
    let found = super::respond::json_path(obj, &path);
    match found.first() {
        Some(Value::String(s)) => Some(s.clone()),
        Some(Value::Bool(b)) => Some(b.to_string()),
        Some(Value::Number(n)) => Some(n.to_string()),
        Some(_) => None,
        None if field == "metadata.namespace" => Some(String::new()),
        None => None,
    }
}

pub fn list(ctx: &RequestContext, def: &ResourceDef, ns: Option<&str>) -> Result<Response, Status> {
    let filter = selector_filter(ctx, def)?;
    let requested_rv = ctx.params.resource_version()?;
    let current = ctx.state.store.current_rv();
    if ctx.params.resource_version_match() == Some("Exact") {
        // Only the current state is kept, so an exact read of an older version cannot be served.
        if let Some(rv) = requested_rv.filter(|rv| *rv != current) {
            return Err(Status::expired(format!("too old resource version: {rv} ({current})")));
        }
    }
    let query = ListQuery {
        group: def.group.clone(),
        resource: def.resource.clone(),
        cluster: if ctx.is_wildcard() {
            None
        } else {
            Some(ctx.cluster.clone())
        },
        namespace: if def.namespaced { ns.map(String::from) } else { None },
        limit: ctx.params.limit()?,
        continue_token: ctx.params.continue_token().map(String::from),
        filter,
    };
    let repr = Representation::from_headers(&ctx.headers);
    if repr == Representation::Object && query.filter.is_none() && def.conversion.is_none() {
        let page = ctx
            .state
            .store
            .list_raw(&query)
            .map_err(|e| crate::write::store_status(e, def, ""))?;
        return Ok(raw_list(def, page));
    }
    let mut page = ctx
        .state
        .store
        .list(&query)
        .map_err(|e| crate::write::store_status(e, def, ""))?;
    if def.conversion.is_some() {
        page.items = page
            .items
            .into_iter()
            .map(|o| def.served(o))
            .collect::<Result<_, _>>()?;
    }
    let body = list_repr(
        def,
        page.items,
        page.resource_version,
        page.continue_token,
        page.remaining_item_count,
        repr,
    );
    Ok(json_response(http::StatusCode::OK, &body))
}

/// A list response assembled from stored JSON text without parsing it.
fn raw_list(def: &ResourceDef, page: crate::store::ListPage) -> Response {
    #[derive(serde::Serialize)]
    #[serde(rename_all = "camelCase")]
    struct Meta {
        resource_version: String,
        #[serde(rename = "continue", skip_serializing_if = "Option::is_none")]
        continue_token: Option<String>,
        #[serde(skip_serializing_if = "Option::is_none")]
        remaining_item_count: Option<u64>,
    }
    #[derive(serde::Serialize)]
    #[serde(rename_all = "camelCase")]
    struct Body<'a> {
        kind: &'a str,
        api_version: String,
        metadata: Meta,
        items: &'a [Box<serde_json::value::RawValue>],
    }
    let body = Body {
        kind: &def.list_kind,
        api_version: def.api_version(),
        metadata: Meta {
            resource_version: page.resource_version.to_string(),
            continue_token: page.continue_token,
            remaining_item_count: page.remaining_item_count,
        },
        items: &page.raw_items,
    };
    super::respond::json_bytes(http::StatusCode::OK, serde_json::to_vec(&body).unwrap_or_default())
}
