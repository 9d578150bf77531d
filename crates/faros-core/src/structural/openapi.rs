//! OpenAPI v3 (JSONSchemaProps) ⇄ [`Schema`].
//!
//! Parsing accepts what CRDs, APIResourceSchemas and schemars emit: `$ref` into `$defs`,
//! `definitions` or `components/schemas` (inlined, cycles cut), `type` as a string or a
//! `[T, "null"]` array, the `x-kubernetes-*` extensions, and `allOf` members whose structure
//! is merged into the node. `anyOf`/`oneOf`/`not` and CEL rules carry only value validations in
//! structural schemas; they are accepted and not enforced.

use serde_json::{Map, Value, json};

use super::{ListType, Schema, SchemaError};

/// A hook that may adjust the schema built from a named definition (`$ref` target), e.g. to
/// add the Kubernetes annotations k8s-openapi's schemas lack.
pub(super) type DefinitionHook<'a> = &'a dyn Fn(&str, &mut Schema);

impl Schema {
    /// Parses an `openAPIV3Schema` (or any JSON schema node with the Kubernetes extensions).
    pub fn from_openapi_v3(v: &Value) -> Result<Schema, SchemaError> {
        Self::from_openapi_v3_with(v, &|_, _| {})
    }

    pub(super) fn from_openapi_v3_with(v: &Value, hook: DefinitionHook<'_>) -> Result<Schema, SchemaError> {
        let mut parser = Parser {
            root: v,
            stack: Vec::new(),
            hook,
        };
        parser.node(v, "")
    }

    /// Prints the schema as an OpenAPI v3 schema object, all definitions inlined.
    pub fn to_openapi_v3(&self) -> Value {
        let mut m = Map::new();
        if let Some(d) = &self.description {
            m.insert("description".into(), d.clone().into());
        }
        if let Some(t) = &self.type_ {
            m.insert("type".into(), t.clone().into());
        }
        if let Some(f) = &self.format {
            m.insert("format".into(), f.clone().into());
        }
        if !self.properties.is_empty() {
            let props = self
                .properties
                .iter()
                .map(|(k, s)| (k.clone(), s.to_openapi_v3()))
                .collect();
            m.insert("properties".into(), Value::Object(props));
        }
        if let Some(ap) = &self.additional_properties {
            m.insert("additionalProperties".into(), ap.to_openapi_v3());
        }
        if let Some(items) = &self.items {
            m.insert("items".into(), items.to_openapi_v3());
        }
        if !self.required.is_empty() {
            m.insert("required".into(), json!(self.required));
        }
        if self.nullable {
            m.insert("nullable".into(), true.into());
        }
        if let Some(d) = &self.default {
            m.insert("default".into(), d.clone());
        }
        if !self.enum_.is_empty() {
            m.insert("enum".into(), Value::Array(self.enum_.clone()));
        }
        if let Some(p) = &self.pattern {
            m.insert("pattern".into(), p.clone().into());
        }
        let counts = [
            ("minLength", self.min_length),
            ("maxLength", self.max_length),
            ("minItems", self.min_items),
            ("maxItems", self.max_items),
            ("minProperties", self.min_properties),
            ("maxProperties", self.max_properties),
        ];
        for (k, v) in counts {
            if let Some(v) = v {
                m.insert(k.into(), v.into());
            }
        }
        let bounds = [
            ("minimum", self.minimum, "exclusiveMinimum", self.exclusive_minimum),
            ("maximum", self.maximum, "exclusiveMaximum", self.exclusive_maximum),
        ];
        for (k, v, ek, exclusive) in bounds {
            if let Some(v) = v {
                m.insert(k.into(), number(v));
                if exclusive {
                    m.insert(ek.into(), true.into());
                }
            }
        }
        if let Some(v) = self.multiple_of {
            m.insert("multipleOf".into(), number(v));
        }
        if self.int_or_string {
            m.insert("x-kubernetes-int-or-string".into(), true.into());
        }
        if self.embedded_resource {
            m.insert("x-kubernetes-embedded-resource".into(), true.into());
        }
        if self.preserve_unknown_fields {
            m.insert("x-kubernetes-preserve-unknown-fields".into(), true.into());
        }
        match &self.list_type {
            None => {}
            Some(ListType::Atomic) => {
                m.insert("x-kubernetes-list-type".into(), "atomic".into());
            }
            Some(ListType::Set) => {
                m.insert("x-kubernetes-list-type".into(), "set".into());
            }
            Some(ListType::Map(keys)) => {
                m.insert("x-kubernetes-list-type".into(), "map".into());
                m.insert("x-kubernetes-list-map-keys".into(), json!(keys));
            }
        }
        if self.map_atomic {
            m.insert("x-kubernetes-map-type".into(), "atomic".into());
        }
        if let Some(s) = &self.patch_strategy {
            m.insert("x-kubernetes-patch-strategy".into(), s.clone().into());
        }
        if let Some(k) = &self.patch_merge_key {
            m.insert("x-kubernetes-patch-merge-key".into(), k.clone().into());
        }
        Value::Object(m)
    }
}

/// Whole numbers print as JSON integers so `minimum: 1` survives a round trip unchanged.
fn number(v: f64) -> Value {
    // 2^53: beyond it f64 no longer holds every integer, so the cast could change the value.
    if v.fract() == 0.0 && v.abs() < 9_007_199_254_740_992.0 {
        Value::from(v as i64)
    } else {
        Value::from(v)
    }
}

struct Parser<'a> {
    root: &'a Value,
    /// `$ref`s being expanded, to cut recursive definitions.
    stack: Vec<String>,
    hook: DefinitionHook<'a>,
}

impl<'a> Parser<'a> {
    fn node(&mut self, v: &'a Value, path: &str) -> Result<Schema, SchemaError> {
        let obj = match v {
            Value::Object(o) => o,
            // `additionalProperties: true` and `{}`-like booleans: anything goes.
            Value::Bool(true) => {
                return Ok(Schema {
                    preserve_unknown_fields: true,
                    ..Schema::default()
                });
            }
            _ => return Err(SchemaError::NotAnObject { path: path.into() }),
        };
        let mut s = match obj.get("$ref") {
            Some(r) => self.reference(r, path)?,
            None => Schema::default(),
        };
        for (i, member) in obj
            .get("allOf")
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
            .enumerate()
        {
            let part = self.node(member, &format!("{path}.allOf[{i}]"))?;
            merge_missing(&mut s, part);
        }
        self.fill(&mut s, obj, path)?;
        Ok(s)
    }

    fn reference(&mut self, r: &'a Value, path: &str) -> Result<Schema, SchemaError> {
        let unresolved = || SchemaError::UnresolvedRef {
            path: path.into(),
            reference: r.to_string(),
        };
        let r = r.as_str().ok_or_else(unresolved)?;
        let pointer = r.strip_prefix('#').ok_or_else(unresolved)?;
        let target = self.root.pointer(pointer).ok_or_else(unresolved)?;
        if self.stack.iter().any(|s| s == r) {
            // A recursive definition (JSONSchemaProps and the like): below the first level the
            // value is accepted as is rather than expanded forever.
            return Ok(Schema {
                preserve_unknown_fields: true,
                ..Schema::default()
            });
        }
        self.stack.push(r.to_string());
        let parsed = self.node(target, pointer);
        self.stack.pop();
        let mut s = parsed?;
        let name = pointer.rsplit('/').next().unwrap_or(pointer);
        (self.hook)(name, &mut s);
        Ok(s)
    }

    /// Applies the keywords of `obj` onto `s` (over whatever a `$ref`/`allOf` supplied).
    fn fill(&mut self, s: &mut Schema, obj: &'a Map<String, Value>, path: &str) -> Result<(), SchemaError> {
        let bad = |keyword: &str, reason: &str| SchemaError::InvalidKeyword {
            path: path.into(),
            keyword: keyword.into(),
            reason: reason.into(),
        };
        for (k, v) in obj {
            match k.as_str() {
                "type" => match v {
                    Value::String(t) => s.type_ = Some(t.clone()),
                    Value::Array(ts) => {
                        let mut non_null = Vec::new();
                        for t in ts {
                            match t.as_str() {
                                Some("null") => s.nullable = true,
                                Some(t) => non_null.push(t.to_string()),
                                None => return Err(bad(k, "must be a string or an array of strings")),
                            }
                        }
                        match non_null.as_slice() {
                            [] => {}
                            [t] => s.type_ = Some(t.clone()),
                            _ => return Err(bad(k, "more than one non-null type is not structural")),
                        }
                    }
                    _ => return Err(bad(k, "must be a string or an array of strings")),
                },
                "description" => s.description = Some(string(v).ok_or_else(|| bad(k, "must be a string"))?),
                "format" => s.format = Some(string(v).ok_or_else(|| bad(k, "must be a string"))?),
                "pattern" => {
                    let p = string(v).ok_or_else(|| bad(k, "must be a string"))?;
                    regex::Regex::new(&p).map_err(|e| bad(k, &e.to_string()))?;
                    s.pattern = Some(p);
                }
                "properties" => {
                    let props = v.as_object().ok_or_else(|| bad(k, "must be an object"))?;
                    for (name, p) in props {
                        let child = self.node(p, &format!("{path}.properties.{name}"))?;
                        s.properties.insert(name.clone(), child);
                    }
                }
                "additionalProperties" => {
                    s.additional_properties = match v {
                        Value::Bool(false) => None,
                        other => Some(Box::new(self.node(other, &format!("{path}.additionalProperties"))?)),
                    }
                }
                "items" => {
                    if v.is_array() {
                        return Err(bad(k, "tuple items (an array of schemas) are not structural"));
                    }
                    s.items = Some(Box::new(self.node(v, &format!("{path}.items"))?));
                }
                "required" => {
                    let names = v.as_array().ok_or_else(|| bad(k, "must be an array of strings"))?;
                    s.required = names
                        .iter()
                        .map(|n| n.as_str().map(str::to_string))
                        .collect::<Option<_>>()
                        .ok_or_else(|| bad(k, "must be an array of strings"))?;
                }
                "nullable" => s.nullable = flag(v).ok_or_else(|| bad(k, "must be a boolean"))?,
                "default" => s.default = Some(v.clone()),
                "enum" => s.enum_ = v.as_array().ok_or_else(|| bad(k, "must be an array"))?.clone(),
                "minLength" => s.min_length = Some(count(v).ok_or_else(|| bad(k, "must be a non-negative integer"))?),
                "maxLength" => s.max_length = Some(count(v).ok_or_else(|| bad(k, "must be a non-negative integer"))?),
                "minItems" => s.min_items = Some(count(v).ok_or_else(|| bad(k, "must be a non-negative integer"))?),
                "maxItems" => s.max_items = Some(count(v).ok_or_else(|| bad(k, "must be a non-negative integer"))?),
                "minProperties" => {
                    s.min_properties = Some(count(v).ok_or_else(|| bad(k, "must be a non-negative integer"))?)
                }
                "maxProperties" => {
                    s.max_properties = Some(count(v).ok_or_else(|| bad(k, "must be a non-negative integer"))?)
                }
                "minimum" => s.minimum = Some(v.as_f64().ok_or_else(|| bad(k, "must be a number"))?),
                "maximum" => s.maximum = Some(v.as_f64().ok_or_else(|| bad(k, "must be a number"))?),
                "multipleOf" => s.multiple_of = Some(v.as_f64().ok_or_else(|| bad(k, "must be a number"))?),
                "exclusiveMinimum" | "exclusiveMaximum" => {
                    let (bound, exclusive) = if k == "exclusiveMinimum" {
                        (&mut s.minimum, &mut s.exclusive_minimum)
                    } else {
                        (&mut s.maximum, &mut s.exclusive_maximum)
                    };
                    match v {
                        Value::Bool(b) => *exclusive = *b,
                        // JSON Schema 2020-12 form: the bound itself.
                        Value::Number(n) => {
                            *bound = n.as_f64();
                            *exclusive = true;
                        }
                        _ => return Err(bad(k, "must be a boolean or a number")),
                    }
                }
                "x-kubernetes-preserve-unknown-fields" => {
                    s.preserve_unknown_fields = flag(v).ok_or_else(|| bad(k, "must be a boolean"))?
                }
                "x-kubernetes-int-or-string" => s.int_or_string = flag(v).ok_or_else(|| bad(k, "must be a boolean"))?,
                "x-kubernetes-embedded-resource" => {
                    s.embedded_resource = flag(v).ok_or_else(|| bad(k, "must be a boolean"))?
                }
                "x-kubernetes-map-type" => {
                    s.map_atomic = match v.as_str() {
                        Some("atomic") => true,
                        Some("granular") => false,
                        _ => return Err(bad(k, "must be \"atomic\" or \"granular\"")),
                    }
                }
                "x-kubernetes-list-type" => {
                    s.list_type = Some(match v.as_str() {
                        Some("atomic") => ListType::Atomic,
                        Some("set") => ListType::Set,
                        Some("map") => {
                            let keys = obj
                                .get("x-kubernetes-list-map-keys")
                                .and_then(Value::as_array)
                                .map(|ks| {
                                    ks.iter()
                                        .map(|k| k.as_str().map(str::to_string))
                                        .collect::<Option<Vec<_>>>()
                                })
                                .unwrap_or_default()
                                .unwrap_or_default();
                            if keys.is_empty() {
                                return Err(bad(
                                    k,
                                    "\"map\" needs a non-empty x-kubernetes-list-map-keys array of strings",
                                ));
                            }
                            ListType::Map(keys)
                        }
                        _ => return Err(bad(k, "must be one of \"atomic\", \"set\", \"map\"")),
                    })
                }
                "x-kubernetes-list-map-keys"
                    if obj.get("x-kubernetes-list-type").and_then(Value::as_str) != Some("map") =>
                {
                    return Err(bad(k, "requires x-kubernetes-list-type: map"));
                }
                "x-kubernetes-patch-strategy" => {
                    s.patch_strategy = Some(string(v).ok_or_else(|| bad(k, "must be a string"))?)
                }
                "x-kubernetes-patch-merge-key" => {
                    s.patch_merge_key = Some(string(v).ok_or_else(|| bad(k, "must be a string"))?)
                }
                // Handled in `node`, or documentation/bookkeeping only, or value validations
                // this server does not enforce (see the module docs).
                _ => {}
            }
        }
        Ok(())
    }
}

fn string(v: &Value) -> Option<String> {
    v.as_str().map(str::to_string)
}

fn flag(v: &Value) -> Option<bool> {
    v.as_bool()
}

fn count(v: &Value) -> Option<u64> {
    v.as_u64()
}

/// Fills what `into` lacks from an `allOf` member; the node's own keywords are applied after.
fn merge_missing(into: &mut Schema, from: Schema) {
    macro_rules! take {
        ($($f:ident),*) => {$( if into.$f.is_none() { into.$f = from.$f; } )*};
    }
    take!(
        type_,
        description,
        format,
        additional_properties,
        items,
        list_type,
        patch_strategy,
        patch_merge_key,
        default,
        pattern,
        min_length,
        max_length,
        minimum,
        maximum,
        multiple_of,
        min_items,
        max_items,
        min_properties,
        max_properties
    );
    for (k, v) in from.properties {
        into.properties.entry(k).or_insert(v);
    }
    for r in from.required {
        if !into.required.contains(&r) {
            into.required.push(r);
        }
    }
    if into.enum_.is_empty() {
        into.enum_ = from.enum_;
    }
    into.nullable |= from.nullable;
    into.preserve_unknown_fields |= from.preserve_unknown_fields;
    into.int_or_string |= from.int_or_string;
    into.embedded_resource |= from.embedded_resource;
    into.map_atomic |= from.map_atomic;
    into.exclusive_minimum |= from.exclusive_minimum;
    into.exclusive_maximum |= from.exclusive_maximum;
}
