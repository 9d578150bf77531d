//! Where a callgrind profile's instructions went, by kind of work: the proxy's own logic, HTTP,
//! TLS, the async runtime, allocation, memory copies. The `proxy-instructions` suite prints it for
//! the hub's connection threads and for nginx side by side, so "the hub runs 11 000 instructions
//! more" comes with what those instructions were doing.
//!
//! Only self cost counts (each instruction once, in the function that ran it). Callgrind's output
//! format names an object (`ob=`) and a function (`fn=`) once, as `(id) name`, and by `(id)` after
//! that, in the called-object and called-function lines (`cob=`, `cfn=`) too; a `calls=` line is
//! followed by the call's inclusive cost, which is the callee's and skipped here.

use std::collections::HashMap;

/// Instructions by object and function.
#[derive(Debug, Default, PartialEq)]
pub struct SelfCost {
    /// (object, function) → instructions run in the function itself.
    pub by_function: HashMap<(String, String), u64>,
}

impl SelfCost {
    /// Adds the self costs of one callgrind output file (format version 1, one event).
    pub fn add_file(&mut self, text: &str) {
        let mut objects: HashMap<String, String> = HashMap::new();
        let mut functions: HashMap<String, String> = HashMap::new();
        let (mut object, mut function) = (String::new(), String::new());
        let mut inclusive_next = false;
        for line in text.lines() {
            if let Some(spec) = line.strip_prefix("ob=") {
                object = resolve(&mut objects, spec);
            } else if let Some(spec) = line.strip_prefix("cob=") {
                resolve(&mut objects, spec);
            } else if let Some(spec) = line.strip_prefix("fn=") {
                function = resolve(&mut functions, spec);
            } else if let Some(spec) = line.strip_prefix("cfn=") {
                resolve(&mut functions, spec);
            } else if line.starts_with("calls=") {
                inclusive_next = true;
            } else if line.starts_with(|c: char| c.is_ascii_digit() || matches!(c, '+' | '-' | '*')) {
                if std::mem::take(&mut inclusive_next) {
                    continue;
                }
                let cost: u64 = line.split_whitespace().nth(1).and_then(|c| c.parse().ok()).unwrap_or(0);
                if cost > 0 {
                    *self.by_function.entry((object.clone(), function.clone())).or_default() += cost;
                }
            }
        }
    }

    /// Adds `other`'s self costs (another thread's).
    pub fn add(&mut self, other: &SelfCost) {
        for (key, cost) in &other.by_function {
            *self.by_function.entry(key.clone()).or_default() += cost;
        }
    }

    pub fn total(&self) -> u64 {
        self.by_function.values().sum()
    }

    /// Instructions by [`Group`], largest first.
    pub fn by_group(&self) -> Vec<(Group, u64)> {
        let mut groups: HashMap<Group, u64> = HashMap::new();
        for ((object, function), cost) in &self.by_function {
            *groups.entry(group(object, function)).or_default() += cost;
        }
        let mut out: Vec<(Group, u64)> = groups.into_iter().collect();
        out.sort_by(|a, b| b.1.cmp(&a.1).then(a.0.cmp(&b.0)));
        out
    }

    /// The `n` functions of `wanted` that ran the most instructions.
    pub fn top(&self, wanted: Group, n: usize) -> Vec<(&str, u64)> {
        let mut out: Vec<(&str, u64)> = self
            .by_function
            .iter()
            .filter(|((object, function), _)| group(object, function) == wanted)
            .map(|((_, function), cost)| (function.as_str(), *cost))
            .collect();
        out.sort_by(|a, b| b.1.cmp(&a.1).then(a.0.cmp(b.0)));
        out.truncate(n);
        out
    }
}

/// `(id) name` defines `id`; `(id)` refers to it; a bare name (uncompressed output) is itself.
fn resolve(names: &mut HashMap<String, String>, spec: &str) -> String {
    let spec = spec.trim();
    let Some(rest) = spec.strip_prefix('(') else {
        return spec.to_string();
    };
    let Some((id, name)) = rest.split_once(')') else {
        return spec.to_string();
    };
    let name = name.trim();
    if name.is_empty() {
        names.get(id).cloned().unwrap_or_default()
    } else {
        names.insert(id.to_string(), name.to_string());
        name.to_string()
    }
}

/// A kind of work.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Group {
    /// The proxy's own decisions: faros' crates, or nginx's own code.
    Proxy,
    /// Parsing and writing HTTP/1.1 and the types it uses (hyper, http, httparse, axum, tower).
    Http,
    /// Records, AES-GCM, the session (rustls and aws-lc; OpenSSL's libssl and libcrypto).
    Tls,
    /// SHA-2 of the bearer token (the hub's token check), in software under valgrind.
    Sha,
    /// The async runtime and its futures plumbing (tokio, futures).
    Runtime,
    /// malloc and free (jemalloc; glibc's for nginx).
    Allocator,
    /// memcpy, memmove, memset, memcmp.
    MemoryCopies,
    /// Buffers, hash maps, metrics and tracing: support crates.
    Support,
    /// Rust's core and alloc instantiated for anything (moves of futures, Vec, Option).
    RustCore,
    Other,
}

impl Group {
    pub fn label(self) -> &'static str {
        match self {
            Group::Proxy => "the proxy's own logic",
            Group::Http => "HTTP parsing and writing",
            Group::Tls => "TLS",
            Group::Sha => "SHA-2 (token hash; software in valgrind)",
            Group::Runtime => "async runtime",
            Group::Allocator => "allocator",
            Group::MemoryCopies => "memory copies and compares",
            Group::Support => "buffers, maps, metrics, tracing",
            Group::RustCore => "Rust core/alloc (moves, generics)",
            Group::Other => "other",
        }
    }
}

/// The group of `function` in `object` (see [`Group`]).
pub fn group(object: &str, function: &str) -> Group {
    let file = object.rsplit('/').next().unwrap_or(object);
    if function.starts_with("__mem") || matches!(function, "memcpy" | "memmove" | "memset" | "memcmp" | "bcmp") {
        return Group::MemoryCopies;
    }
    if file.starts_with("libssl") || file.starts_with("libcrypto") {
        return Group::Tls;
    }
    if file.starts_with("libc.so") {
        return match function {
            f if f.contains("malloc") || f.contains("free") || f.starts_with("_int_") || f.contains("calloc") => {
                Group::Allocator
            }
            _ => Group::Other,
        };
    }
    if file == "nginx" {
        return Group::Proxy;
    }
    if function.starts_with("_rjem_") || function.starts_with("je_") || function.contains("jemalloc") {
        return Group::Allocator;
    }
    // aws-lc's C symbols.
    if ["aws_lc_", "aead_", "gcm_", "aes_", "aes_hw_", "CRYPTO_", "EVP_"]
        .iter()
        .any(|p| function.starts_with(p))
    {
        return Group::Tls;
    }
    match crate_of(function) {
        "faros_hub_api" | "faros_core" | "faros" => Group::Proxy,
        "hyper" | "hyper_util" | "httparse" | "http" | "http_body" | "http_body_util" | "want" | "axum"
        | "axum_core" | "tower" | "tower_service" | "tower_layer" => Group::Http,
        "rustls" | "tokio_rustls" | "hyper_rustls" | "aws_lc_rs" | "rustls_pki_types" => Group::Tls,
        "sha2" | "digest" => Group::Sha,
        "tokio" | "tokio_util" | "mio" | "futures_util" | "futures_core" | "futures" => Group::Runtime,
        "bytes" | "hashbrown" | "foldhash" | "smallvec" | "indexmap" | "prometheus_client" | "tracing"
        | "tracing_core" | "tracing_subscriber" | "jiff" | "itoa" | "base64" => Group::Support,
        "core" | "alloc" | "std" => Group::RustCore,
        _ => Group::Other,
    }
}

/// The crate a demangled Rust symbol's code belongs to: its first path segment, or for a trait
/// implemented on a generic or standard type (`<D as digest::Digest>::digest`), the trait's.
fn crate_of(symbol: &str) -> &str {
    let first = |s: &str| -> usize { s.find([':', '<', ' ', '>']).unwrap_or(s.len()) };
    let s = symbol
        .trim_start_matches(['<', '&', '*'])
        .trim_start_matches("mut ")
        .trim_start_matches("dyn ")
        .trim_start_matches("const ");
    let head = &s[..first(s)];
    let generic = head.len() == 1 && head.starts_with(|c: char| c.is_ascii_uppercase());
    let standard = matches!(head, "core" | "alloc" | "std") || head.is_empty() || head.starts_with(['[', '(']);
    if (generic || standard)
        && let Some(i) = symbol.find(" as ")
    {
        let trait_path = &symbol[i + 4..];
        let t = &trait_path[..first(trait_path)];
        if !matches!(t, "core" | "alloc" | "std") {
            return t;
        }
    }
    head
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_crate_of_a_symbol() {
        for (symbol, want) in [
            ("faros_hub_api::proxy::forward::{{closure}}", "faros_hub_api"),
            (
                "<hyper::proto::h1::role::Client as hyper::proto::h1::Http1Transaction>::parse",
                "hyper",
            ),
            ("<D as digest::digest::Digest>::digest", "digest"),
            ("<core::pin::Pin<P> as core::future::future::Future>::poll", "core"),
            ("<core::pin::Pin<P> as tokio::io::AsyncRead>::poll_read", "tokio"),
            ("<&mut T as bytes::buf::Buf>::advance", "bytes"),
            ("<alloc::vec::Vec<T,A> as core::clone::Clone>::clone", "alloc"),
            ("http::header::map::hash_elem_using", "http"),
            ("_rjem_malloc", "_rjem_malloc"),
        ] {
            assert_eq!(crate_of(symbol), want, "{symbol}");
        }
    }

    #[test]
    fn the_group_of_a_function() {
        let faros = "/work/target/image-symbols/faros";
        let libc = "/usr/lib/x86_64-linux-gnu/libc.so.6";
        for (object, function, want) in [
            (faros, "faros_hub_api::edge::HubService::call", Group::Proxy),
            (
                faros,
                "<faros_hub_api::auth::chain::Chain as faros_hub_api::auth::Authenticator>::authenticate_shared::{{closure}}",
                Group::Proxy,
            ),
            (faros, "httparse::parse_headers_iter_uninit", Group::Http),
            (faros, "tokio_rustls::common::Stream<IO,C>::read_io", Group::Tls),
            (faros, "aws_lc_0_47_0_EVP_AEAD_CTX_open", Group::Tls),
            (faros, "aead_aes_gcm_open_gather_impl", Group::Tls),
            (faros, "sha2::sha256::compress256", Group::Sha),
            (faros, "tokio::runtime::task::raw::poll", Group::Runtime),
            (faros, "_rjem_sdallocx", Group::Allocator),
            (faros, "bytes::bytes::shared_drop", Group::Support),
            (
                faros,
                "<core::pin::Pin<P> as core::future::future::Future>::poll",
                Group::RustCore,
            ),
            (libc, "__memcpy_avx_unaligned_erms", Group::MemoryCopies),
            (libc, "malloc", Group::Allocator),
            (libc, "_int_free", Group::Allocator),
            (libc, "epoll_wait", Group::Other),
            ("/usr/sbin/nginx", "ngx_http_proxy_handler", Group::Proxy),
            ("/usr/lib/x86_64-linux-gnu/libssl.so.3", "SSL_read", Group::Tls),
            (
                "/usr/lib/x86_64-linux-gnu/libcrypto.so.3",
                "EVP_EncryptUpdate",
                Group::Tls,
            ),
            ("???", "0x000000000022eb00", Group::Other),
        ] {
            assert_eq!(group(object, function), want, "{object} {function}");
        }
    }

    /// Names defined once and referred to by id (in `cob=`/`cfn=` lines too); a call's inclusive
    /// cost is not the caller's.
    #[test]
    fn self_cost_of_a_compressed_file() {
        let text = "\
# callgrind format
version: 1
positions: line
events: Ir
summary: 175
ob=(1) /usr/sbin/nginx
fl=(1) ngx.c
fn=(1) ngx_main
10 20
+1 5
cob=(2) /usr/lib/x86_64-linux-gnu/libc.so.6
cfi=(2) memcpy.S
cfn=(2) __memcpy_avx_unaligned_erms
calls=3 +4
* 100
* 1
ob=(2)
fl=(2)
fn=(2)
4 100
ob=(1)
fl=(1)
fn=(1)
-3
totals: 175
";
        let mut cost = SelfCost::default();
        cost.add_file(text);
        assert_eq!(cost.total(), 126);
        assert_eq!(cost.by_group(), vec![(Group::MemoryCopies, 100), (Group::Proxy, 26)]);
        assert_eq!(cost.top(Group::Proxy, 5), vec![("ngx_main", 26)]);
        // A second file adds to the first.
        cost.add_file(text);
        assert_eq!(cost.total(), 252);
    }
}
