//! What must differ between two fresh servers, replaced by placeholders so the rest can be compared:
//! uids, timestamps, resourceVersions and continue tokens, generated names, logical-cluster ids,
//! identity hashes, certificate and token data, the server's own URL, and values captured into
//! variables by earlier steps (a created workspace's cluster id shows as `${ws}` on both sides).
//! Pure functions of the answer, table-tested.

use std::collections::BTreeMap;

use serde_json::{Map, Value};

/// Normalises a body; `vars` are the run's variables (the server's URL among them).
pub fn normalize(body: &Value, vars: &BTreeMap<String, String>) -> Value {
    // Longest values first, so a URL is replaced before the host inside it.
    let mut by_length: Vec<(&str, &str)> = vars
        .iter()
        .filter(|(_, v)| v.len() >= 4)
        .map(|(k, v)| (k.as_str(), v.as_str()))
        .collect();
    by_length.sort_by_key(|(_, v)| std::cmp::Reverse(v.len()));
    let hashes = export_hashes(body, &by_length);
    let mut replaced: Vec<(&str, &str)> = hashes.iter().map(|(h, p)| (p.as_str(), h.as_str())).collect();
    replaced.extend(by_length);
    value(body, &replaced)
}

/// kcp's export hashes (`internal.apis.kcp.io/export` values, `claimed.internal.apis.kcp.io/…`
/// keys: base62 sha224 of `<export's cluster>:<export>`) of an export in a captured cluster, which
/// differ between the servers only because the cluster names do: each becomes the variable's name
/// with the export's (`#{ws}:example.io`). Only a value that provably is that hash is replaced, so
/// a hash computed otherwise still shows as a difference. Candidate export names are the answer's
/// own strings.
fn export_hashes(body: &Value, vars: &[(&str, &str)]) -> Vec<(String, String)> {
    fn strings<'a>(v: &'a Value, out: &mut std::collections::BTreeSet<&'a str>) {
        match v {
            Value::String(s) if !s.is_empty() && s.len() <= 253 && !s.contains(' ') => {
                out.insert(s);
            }
            Value::Array(items) => items.iter().for_each(|i| strings(i, out)),
            Value::Object(map) => map.values().for_each(|i| strings(i, out)),
            _ => {}
        }
    }
    let mut names = std::collections::BTreeSet::new();
    strings(body, &mut names);
    let mut out = Vec::new();
    for (var, cluster) in vars {
        for name in &names {
            let hash = export_hash(cluster, name);
            out.push((hash, format!("#{{{var}}}:{name}")));
        }
    }
    out
}

fn value(v: &Value, vars: &[(&str, &str)]) -> Value {
    match v {
        Value::String(s) => Value::String(string(s, vars)),
        Value::Array(items) => Value::Array(items.iter().map(|i| value(i, vars)).collect()),
        Value::Object(map) => object(map, vars),
        other => other.clone(),
    }
}

fn object(map: &Map<String, Value>, vars: &[(&str, &str)]) -> Value {
    let mut out = Map::new();
    for (k, v) in map {
        let placeholder = match (k.as_str(), v) {
            ("resourceVersion", Value::String(s)) if !s.is_empty() => Some("<rv>"),
            ("continue", Value::String(s)) if !s.is_empty() => Some("<continue>"),
            ("uid", Value::String(s)) if !s.is_empty() => Some("<uid>"),
            _ => None,
        };
        let normalized = match placeholder {
            Some(p) => Value::String(p.into()),
            None => value(v, vars),
        };
        out.insert(string(k, vars), normalized);
    }
    // A generated name is the prefix the client asked for plus the server's random suffix.
    if let (Some(Value::String(prefix)), Some(Value::String(name))) = (map.get("generateName"), map.get("name"))
        && name.starts_with(prefix.as_str())
    {
        out.insert(
            "name".into(),
            Value::String(format!("{}<generated>", string(prefix, vars))),
        );
    }
    // Lists across logical clusters are ordered by cluster id, which differs between the servers.
    let is_list = map
        .get("kind")
        .and_then(Value::as_str)
        .is_some_and(|k| k.ends_with("List"));
    if is_list && let Some(Value::Array(items)) = out.get_mut("items") {
        items.sort_by_cached_key(canonical);
    }
    Value::Object(out)
}

/// `v` as JSON with every object's keys sorted: the sort key of list items, so the two servers'
/// items pair up whatever order each writes an object's fields in.
pub(super) fn canonical(v: &Value) -> String {
    match v {
        Value::Object(map) => {
            let mut keys: Vec<&String> = map.keys().collect();
            keys.sort();
            let fields: Vec<String> = keys
                .into_iter()
                .map(|k| format!("{}:{}", Value::String(k.clone()), canonical(&map[k])))
                .collect();
            format!("{{{}}}", fields.join(","))
        }
        Value::Array(items) => format!("[{}]", items.iter().map(canonical).collect::<Vec<_>>().join(",")),
        other => other.to_string(),
    }
}

/// kcp's export hash: base62 (Go's `big.Int.Text(62)`) of sha224(`<cluster>:<export>`).
fn export_hash(cluster: &str, export: &str) -> String {
    use sha2::Digest;
    const DIGITS: &[u8; 62] = b"0123456789abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ";
    let mut number: Vec<u8> = sha2::Sha224::digest(format!("{cluster}:{export}").as_bytes()).to_vec();
    let mut digits = Vec::new();
    while number.iter().any(|b| *b != 0) {
        // Long division of the big-endian number by 62; the remainder is the next digit.
        let mut remainder = 0u32;
        for byte in number.iter_mut() {
            let acc = (remainder << 8) | u32::from(*byte);
            *byte = (acc / 62) as u8;
            remainder = acc % 62;
        }
        digits.push(DIGITS[remainder as usize]);
    }
    digits.reverse();
    String::from_utf8_lossy(&digits).into_owned()
}

/// Placeholders inside one string.
fn string(s: &str, vars: &[(&str, &str)]) -> String {
    let mut s = s.to_string();
    for (name, v) in vars {
        if s.contains(v) {
            // Export hashes carry their whole placeholder (`#{ws}:name`); variables their name.
            let placeholder = match name.starts_with("#{") {
                true => name.to_string(),
                false => format!("${{{name}}}"),
            };
            s = s.replace(v, &placeholder);
        }
    }
    let s = runs(&s, is_data_char, |run| data(run).then(|| "<data>".into()));
    let s = timestamps(&s);
    let s = uuids(&s);
    runs(&s, |c| c.is_ascii_lowercase() || c.is_ascii_digit(), word)
}

/// Base64 and JWT characters (no `:`, so a URL breaks at its scheme).
fn is_data_char(c: char) -> bool {
    c.is_ascii_alphanumeric() || matches!(c, '+' | '/' | '=' | '_' | '.' | '-')
}

/// Certificates, keys and tokens: long, mixed case, with digits (paths are lowercase).
fn data(run: &str) -> bool {
    run.len() >= 100 && run.chars().any(|c| c.is_ascii_uppercase()) && run.chars().any(|c| c.is_ascii_digit())
}

/// kcp's logical-cluster names (16 lowercase letters and digits) and sha256 identity hashes.
fn word(run: &str) -> Option<String> {
    let digits = run.chars().any(|c| c.is_ascii_digit());
    let letters = run.chars().any(|c| c.is_ascii_lowercase());
    if run.len() == 16 && digits && letters {
        Some("<cluster>".into())
    } else if run.len() == 64 && run.chars().all(|c| c.is_ascii_hexdigit()) {
        Some("<hash>".into())
    } else {
        None
    }
}

/// Replaces each maximal run of characters matching `class` for which `replace` returns a value.
fn runs(s: &str, class: impl Fn(char) -> bool, replace: impl Fn(&str) -> Option<String>) -> String {
    let mut out = String::with_capacity(s.len());
    let mut start = None;
    for (i, c) in s.char_indices().chain([(s.len(), ' ')]) {
        let inside = i < s.len() && class(c);
        match (inside, start) {
            (true, None) => start = Some(i),
            (false, Some(b)) => {
                let run = &s[b..i];
                out.push_str(&replace(run).unwrap_or_else(|| run.to_string()));
                start = None;
                if i < s.len() {
                    out.push(c);
                }
            }
            (false, None) if i < s.len() => out.push(c),
            _ => {}
        }
    }
    out
}

/// Whether `bytes` at `at` match `pattern` (`d` a digit, `h` a hex digit, others literally).
fn matches_at(bytes: &[u8], at: usize, pattern: &str) -> bool {
    pattern.len() + at <= bytes.len()
        && pattern.bytes().zip(&bytes[at..]).all(|(p, &b)| match p {
            b'd' => b.is_ascii_digit(),
            b'h' => b.is_ascii_hexdigit(),
            _ => p == b,
        })
}

/// RFC 3339 times (`2026-12-01T21:25:51Z`, with fractions or an offset) become `<time>`.
fn timestamps(s: &str) -> String {
    let b = s.as_bytes();
    let mut out = String::with_capacity(s.len());
    let mut i = 0;
    let mut copied = 0;
    while i < b.len() {
        if matches_at(b, i, "dddd-dd-ddTdd:dd:dd") {
            let mut end = i + 19;
            if b.get(end) == Some(&b'.') {
                end += 1;
                while b.get(end).is_some_and(u8::is_ascii_digit) {
                    end += 1;
                }
            }
            if b.get(end) == Some(&b'Z') {
                end += 1;
            } else if matches_at(b, end, "+dd:dd") || matches_at(b, end, "-dd:dd") {
                end += 6;
            }
            out.push_str(&s[copied..i]);
            out.push_str("<time>");
            i = end;
            copied = end;
        } else {
            i += 1;
        }
    }
    out.push_str(&s[copied..]);
    out
}

fn uuids(s: &str) -> String {
    const UUID: &str = "hhhhhhhh-hhhh-hhhh-hhhh-hhhhhhhhhhhh";
    let b = s.as_bytes();
    let mut out = String::with_capacity(s.len());
    let (mut i, mut copied) = (0, 0);
    while i < b.len() {
        let boundary = i == 0 || !b[i - 1].is_ascii_alphanumeric();
        if boundary && matches_at(b, i, UUID) && !b.get(i + UUID.len()).is_some_and(u8::is_ascii_alphanumeric) {
            out.push_str(&s[copied..i]);
            out.push_str("<uid>");
            i += UUID.len();
            copied = i;
        } else {
            i += 1;
        }
    }
    out.push_str(&s[copied..]);
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn vars() -> BTreeMap<String, String> {
        BTreeMap::from([
            ("server".to_string(), "https://127.0.0.1:6443".to_string()),
            ("ws".to_string(), "2h7k9x0ab1cd3ef4".to_string()),
            ("x".to_string(), "ab".to_string()),
        ])
    }

    #[test]
    fn strings_lose_what_differs_between_servers() {
        let cert = format!("LS0tLS1CRUdJTi{}", "Ab3".repeat(40));
        for (input, want) in [
            (
                "https://127.0.0.1:6443/clusters/2h7k9x0ab1cd3ef4",
                "${server}/clusters/${ws}",
            ),
            ("root:orgs:2abcdefghij4klmn", "root:orgs:<cluster>"),
            ("root:kubernetesclients", "root:kubernetesclients"),
            ("created 2026-12-01T21:25:51Z", "created <time>"),
            ("2026-12-01T21:25:51.123456Z", "<time>"),
            ("2026-12-01T21:25:51+01:00!", "<time>!"),
            ("uid 0f8fad5b-d9cb-469f-a165-70867728950e.", "uid <uid>."),
            (
                "x0f8fad5b-d9cb-469f-a165-70867728950e",
                "x0f8fad5b-d9cb-469f-a165-70867728950e",
            ),
            (&cert, "<data>"),
            (&"a".repeat(120), &"a".repeat(120)),
            (
                "claimed.internal.apis.kcp.io/0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef",
                "claimed.internal.apis.kcp.io/<hash>",
            ),
            ("ab", "ab"),
            ("", ""),
        ] {
            assert_eq!(normalize(&json!(input), &vars()), json!(want), "{input}");
        }
    }

    #[test]
    fn export_hashes_are_kcps() {
        // As kcp v0.32.3 labels bindings of root's exports (e2e/kcp-diff/recorded/workspaces.json).
        assert_eq!(
            export_hash("root", "tenancy.kcp.io"),
            "bmCdly9xXiUpEHe3ypvDwvXMTfoVZUE92mqAQf"
        );
        assert_eq!(
            export_hash("root", "topology.kcp.io"),
            "7QHLqjz8KlhjPddt8MECYq0OLDUNvLAO5v9x4x"
        );
        for (cluster, export) in [("2h7k9x0ab1cd3ef4", "example.io"), ("root", "shards.core.kcp.io")] {
            assert_eq!(
                export_hash(cluster, export),
                faros_embedded_kcp::testing::export_hash(cluster, export)
            );
        }
    }

    #[test]
    fn export_hashes_of_a_captured_cluster_name_their_export() {
        let hash = export_hash("2h7k9x0ab1cd3ef4", "example.io");
        let other = export_hash("2h7k9x0ab1cd3ef4", "other");
        let body = json!({"metadata": {"labels": {
            format!("claimed.internal.apis.kcp.io/{hash}"): "v",
            "internal.apis.kcp.io/export": hash,
            "unrelated": other,
        }}, "spec": {"reference": {"export": {"name": "example.io"}}}});
        let got = normalize(&body, &vars());
        assert_eq!(
            got["metadata"]["labels"],
            json!({
                "claimed.internal.apis.kcp.io/#{ws}:example.io": "v",
                "internal.apis.kcp.io/export": "#{ws}:example.io",
                // Not the hash of a name the answer holds: left as it is.
                "unrelated": other,
            })
        );
    }

    #[test]
    fn objects_lose_server_chosen_fields() {
        let got = normalize(
            &json!({
                "kind": "ConfigMapList",
                "metadata": {"resourceVersion": "12", "continue": ""},
                "items": [
                    {"metadata": {"name": "b", "uid": "u-1", "resourceVersion": "9"}},
                    {"metadata": {"name": "gen-x7k2p", "generateName": "gen-", "resourceVersion": ""}},
                ]
            }),
            &vars(),
        );
        assert_eq!(
            got,
            json!({
                "kind": "ConfigMapList",
                "metadata": {"resourceVersion": "<rv>", "continue": ""},
                "items": [
                    {"metadata": {"name": "gen-<generated>", "generateName": "gen-", "resourceVersion": ""}},
                    {"metadata": {"name": "b", "uid": "<uid>", "resourceVersion": "<rv>"}},
                ]
            })
        );
    }

    #[test]
    fn list_items_are_ordered_independently_of_cluster_ids() {
        let a = json!({"kind": "XList", "items": [{"n": 2}, {"n": 1}]});
        let b = json!({"kind": "XList", "items": [{"n": 1}, {"n": 2}]});
        assert_eq!(normalize(&a, &vars()), normalize(&b, &vars()));
        let not_a_list = json!({"kind": "X", "items": [2, 1]});
        assert_eq!(normalize(&not_a_list, &vars()), not_a_list);
        // Items pair up whatever order each server writes an object's fields in.
        let kcp = json!({"kind": "XList", "items": [{"a": "y", "b": 1}, {"a": "x", "b": 2}]});
        let embedded = json!({"kind": "XList", "items": [{"b": 2, "a": "x"}, {"b": 1, "a": "y"}]});
        let (k, e) = (normalize(&kcp, &vars()), normalize(&embedded, &vars()));
        assert_eq!(k["items"][0]["a"], "x");
        assert_eq!(e["items"][0]["a"], "x");
    }
}
