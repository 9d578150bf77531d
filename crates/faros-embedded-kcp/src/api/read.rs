//! GET of one object and LIST of collections (selectors, pagination, representations).

use std::sync::Arc;

use axum::body::Body;
use axum::response::Response;
use faros_core::status::Status;
use serde_json::Value;

mod list_body;

use super::RequestContext;
use super::protobuf;
use super::respond::{Accepts, Representation, json_response, list_repr, object_repr};
use crate::objects::meta;
use crate::registry::ResourceDef;
use crate::selector::{FieldSelector, LabelSelector};
use crate::store::{ListPage, ListQuery, RawItem};

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
            // The parser's error already reads "unable to parse requirement: …".
            LabelSelector::parse(s).map_err(|e| Status::bad_request(e.to_string()))?,
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
                    // kube's default field label conversion (built-in kinds with no fields of
                    // their own) says what it takes; custom conversions and CRDs do not.
                    return Err(Status::bad_request(
                        match def.typed_builtin() && def.selectable_fields.is_empty() {
                            true => format!(
                                "{} is not a known field selector: only \"metadata.name\", \"metadata.namespace\"",
                                crate::auth::rbac::go_quote(f)
                            ),
                            false => format!("field label not supported: {f}"),
                        },
                    ));
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

/// The one object name a list's field selector pins (`metadata.name=x`) when its key is known: in
/// one cluster, and in one namespace unless the resource is cluster-scoped. kube's storage reads
/// that key instead of the collection (`SelectionPredicate.MatchesSingle`); waiting for one object
/// by name (kube-rs' watcher, the hub's wait helper) would otherwise parse every object of its kind
/// in the cluster on each relist.
fn pinned_name(ctx: &RequestContext, def: &ResourceDef, ns: Option<&str>) -> Option<String> {
    if ctx.is_wildcard() || (def.namespaced && ns.is_none()) {
        return None;
    }
    let selector = FieldSelector::parse(ctx.params.field_selector()?).ok()?;
    let name = selector.exact_match("metadata.name")?;
    (!name.is_empty() && !name.contains('\0')).then(|| name.to_string())
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
    let pinned = pinned_name(ctx, def, ns);
    let query = ListQuery {
        group: def.group.clone(),
        resource: def.resource.clone(),
        cluster: if ctx.is_wildcard() {
            None
        } else {
            Some(ctx.cluster.clone())
        },
        namespace: match (def.namespaced, &pinned) {
            (true, _) => ns.map(String::from),
            // A cluster-scoped key's namespace is empty; it is part of a pinned key.
            (false, Some(_)) => Some(String::new()),
            (false, None) => None,
        },
        limit: ctx.params.limit()?,
        continue_token: ctx.params.continue_token().map(String::from),
        filter,
        name: pinned,
    };
    let repr = Representation::from_headers(&ctx.headers);
    if repr == Representation::Object && query.filter.is_none() && !def.converts_on_read() {
        let page = ctx
            .state
            .store
            .list_raw(&query)
            .map_err(|e| crate::write::store_status(e, def, ""))?;
        return Ok(raw_list(ctx, def, page));
    }
    let mut page = ctx
        .state
        .store
        .list(&query)
        .map_err(|e| crate::write::store_status(e, def, ""))?;
    if def.converts_on_read() {
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

/// A list response assembled from the stored JSON text of its items without parsing it, or from
/// their kept protobuf messages when the client prefers protobuf (as `negotiate_encoding` would
/// re-encode the JSON answer). Either body is streamed (see [`list_body`]).
fn raw_list(ctx: &RequestContext, def: &ResourceDef, page: ListPage) -> Response {
    let mut metadata = serde_json::Map::new();
    metadata.insert(
        "resourceVersion".into(),
        Value::String(page.resource_version.to_string()),
    );
    // As `list_repr`: a custom resource's list always says `continue`, empty on the last page.
    let typed = def.typed_builtin();
    match &page.continue_token {
        Some(c) => {
            metadata.insert("continue".into(), Value::String(c.clone()));
        }
        None if !typed => {
            metadata.insert("continue".into(), Value::String(String::new()));
        }
        None => {}
    }
    if let Some(n) = page.remaining_item_count {
        metadata.insert("remainingItemCount".into(), Value::from(n));
    }
    let mut head = serde_json::Map::new();
    head.insert("kind".into(), Value::String(def.list_kind.clone()));
    head.insert("apiVersion".into(), Value::String(def.api_version()));
    head.insert("metadata".into(), Value::Object(metadata));
    let accepts = Accepts::from_headers(&ctx.headers);
    if (!accepts.json || accepts.protobuf_first)
        && let Some(body) = protobuf_list(ctx, def, &head, &page.raw_items)
    {
        return with_content_type(body, protobuf::MEDIA_TYPE);
    }
    // `{"kind":…,"apiVersion":…,"metadata":{…},"items":[…]}` with the stored items spliced in.
    let mut opening = serde_json::to_vec(&Value::Object(head)).unwrap_or_default();
    opening.pop();
    opening.extend_from_slice(b",\"items\":[");
    let type_meta = TypeMetaPrefixes::new(def);
    let body = list_body::streamed(opening, page.raw_items, b"]}", move |out, i, item: &RawItem| {
        if i > 0 {
            out.push(b',');
        }
        match typed {
            // A built-in kind's list items carry no apiVersion/kind (kube writes them typed).
            true => type_meta.splice_without(out, item.json()),
            false => out.extend_from_slice(item.json()),
        }
    });
    with_content_type(body, "application/json")
}

/// Where stored text holds a built-in item's type meta, for cutting it out without parsing: the
/// store's opening `{"apiVersion":…,"kind":…,` (either order), or the closing
/// `,"apiVersion":…,"kind":…}` of objects stored before the store put them first (the API fills
/// them in last). Compact JSON from serde has no whitespace and escapes every quote inside strings,
/// so either text at the very start or end of an item can only be its own top-level members.
struct TypeMetaPrefixes {
    openings: [Vec<u8>; 2],
    closings: [Vec<u8>; 2],
}

impl TypeMetaPrefixes {
    fn new(def: &ResourceDef) -> Self {
        Self::of(&def.api_version(), &def.kind)
    }

    fn of(api_version: &str, kind: &str) -> Self {
        let v = Value::String(api_version.to_string());
        let k = Value::String(kind.to_string());
        Self {
            openings: [
                format!("{{\"apiVersion\":{v},\"kind\":{k},").into_bytes(),
                format!("{{\"kind\":{k},\"apiVersion\":{v},").into_bytes(),
            ],
            closings: [
                format!(",\"apiVersion\":{v},\"kind\":{k}}}").into_bytes(),
                format!(",\"kind\":{k},\"apiVersion\":{v}}}").into_bytes(),
            ],
        }
    }

    /// Appends `json` to `body` without its apiVersion and kind: by cutting them from its opening
    /// or closing, else (an object stored another way) by parsing it.
    fn splice_without(&self, body: &mut Vec<u8>, json: &[u8]) {
        if let Some(prefix) = self.openings.iter().find(|p| json.starts_with(p)) {
            body.push(b'{');
            body.extend_from_slice(&json[prefix.len()..]);
            return;
        }
        if let Some(suffix) = self
            .closings
            .iter()
            .find(|s| json.len() > s.len() + 1 && json.ends_with(s))
        {
            body.extend_from_slice(&json[..json.len() - suffix.len()]);
            body.push(b'}');
            return;
        }
        match serde_json::from_slice::<Value>(json) {
            Ok(mut obj) => {
                if let Some(map) = obj.as_object_mut() {
                    map.remove("apiVersion");
                    map.remove("kind");
                }
                body.extend_from_slice(&serde_json::to_vec(&obj).unwrap_or_default());
            }
            Err(_) => body.extend_from_slice(json),
        }
    }
}

/// The protobuf form of a list from its items' kept messages (encoded and kept on a first list).
/// `None` when the kind has no protobuf form or an item cannot be encoded: the JSON answer then
/// goes through `negotiate_encoding`, which decides between JSON and 406 as for any answer.
fn protobuf_list(
    ctx: &RequestContext,
    def: &ResourceDef,
    head: &serde_json::Map<String, Value>,
    items: &[RawItem],
) -> Option<Body> {
    let api_version = def.api_version();
    if !protobuf::supports(&api_version, &def.list_kind) {
        return None;
    }
    let messages = ctx
        .state
        .protobuf_items
        .get_or_derive(items.iter().map(|i| (&i.key[..], i.rv)), |i| {
            let item: Value = serde_json::from_slice(items[i].json()).map_err(|_| ())?;
            protobuf::encode_list_item(&api_version, &def.list_kind, &item).map_err(|_| ())
        })
        .ok()?;
    let opening = protobuf::encode_list_head(head, messages.iter().map(|m| m.len())).ok()?;
    Some(list_body::streamed(opening, messages, b"", |out, _, message| {
        protobuf::put_list_item(out, message)
    }))
}

fn with_content_type(body: Body, content_type: &'static str) -> Response {
    let mut resp = Response::new(body);
    resp.headers_mut()
        .insert(http::header::CONTENT_TYPE, http::HeaderValue::from_static(content_type));
    resp
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    #[test]
    fn a_built_in_items_type_meta_is_cut_from_its_stored_text() {
        let prefixes = TypeMetaPrefixes::of("v1", "ConfigMap");
        for (stored, want) in [
            (
                r#"{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"a"}}"#,
                r#"{"metadata":{"name":"a"}}"#,
            ),
            (r#"{"kind":"ConfigMap","apiVersion":"v1","data":{}}"#, r#"{"data":{}}"#),
            // Stored another way: parsed, and still without them.
            (
                r#"{"metadata":{"name":"b"},"kind":"ConfigMap","apiVersion":"v1"}"#,
                r#"{"metadata":{"name":"b"}}"#,
            ),
            (r#"{"apiVersion":"v1","kind":"ConfigMap"}"#, r#"{}"#),
            // Filled in last by an older build.
            (
                r#"{"metadata":{"name":"c"},"data":{"k":"v"},"apiVersion":"v1","kind":"ConfigMap"}"#,
                r#"{"metadata":{"name":"c"},"data":{"k":"v"}}"#,
            ),
            (
                r#"{"metadata":{"name":"d"},"kind":"ConfigMap","apiVersion":"v1"}"#,
                r#"{"metadata":{"name":"d"}}"#,
            ),
            // A nested object ending the same way is not the item's own type meta.
            (
                r#"{"data":{"x":{"a":1,"apiVersion":"v1","kind":"ConfigMap"}},"kind":"ConfigMap","apiVersion":"v1"}"#,
                r#"{"data":{"x":{"a":1,"apiVersion":"v1","kind":"ConfigMap"}}}"#,
            ),
        ] {
            let mut body = Vec::new();
            prefixes.splice_without(&mut body, stored.as_bytes());
            assert_eq!(String::from_utf8(body).unwrap(), want, "{stored}");
        }
    }
}
