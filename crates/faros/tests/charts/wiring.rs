//! Cross-chart wiring: the install sequences the documentation gives, rendered verbatim, point every
//! pod at things that will exist.
//!
//! Each fenced `sh` block of README.md and docs/install.md that runs `helm install` is one
//! sequence; its `helm install` commands are rendered with `helm template` (same release names,
//! namespaces, `--set` and `-f`). A chart README's `helm install` must be a command of such a
//! sequence, so the per-chart instructions are the tested ones. In every sequence, each
//! `<service>.<namespace>.svc:<port>` a container (of a workload or a `helm test` Pod) is handed
//! (flag or env) must be a rendered Service
//! with that port, and each Secret or ConfigMap a pod mounts (non-optional) must be rendered, be
//! published at runtime by a rendered pod (faros-kcp's admin and component kubeconfigs and the hub's
//! signing key, the reconciler's mirrored provider kubeconfigs), or be created by a documented `kubectl create secret` of the same document.

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;

use serde_json::Value;

use super::{NAMESPACE, charts, containers, helm, kind, pod_specs, root};

/// `helm install RELEASE CHART` with what it was given.
#[derive(Debug, Clone, PartialEq)]
pub struct Install {
    pub release: String,
    pub chart: String,
    pub namespace: String,
    pub sets: Vec<String>,
    pub values: Vec<String>,
}

/// Splits one shell command line into words: whitespace-separated, with `'…'` and `"…"` quoting
/// (no escapes inside single quotes, `\x` inside double quotes). Enough for the documentation's
/// commands, which never expand variables in `helm` arguments.
pub fn words(line: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut word = String::new();
    let mut in_word = false;
    let mut chars = line.chars();
    while let Some(c) = chars.next() {
        match c {
            '\'' => {
                in_word = true;
                word.extend(chars.by_ref().take_while(|&c| c != '\''));
            }
            '"' => {
                in_word = true;
                while let Some(c) = chars.next() {
                    match c {
                        '"' => break,
                        '\\' => word.extend(chars.next()),
                        c => word.push(c),
                    }
                }
            }
            '\\' => {
                in_word = true;
                word.extend(chars.next());
            }
            '#' if !in_word => break,
            c if c.is_whitespace() => {
                if in_word {
                    out.push(std::mem::take(&mut word));
                    in_word = false;
                }
            }
            c => {
                in_word = true;
                word.push(c);
            }
        }
    }
    if in_word {
        out.push(word);
    }
    out
}

/// The commands of every fenced `sh` block of a Markdown document, continuation lines joined, as
/// words; one inner list per block.
pub fn sh_blocks(markdown: &str) -> Vec<Vec<Vec<String>>> {
    let mut blocks = Vec::new();
    let mut current: Option<Vec<Vec<String>>> = None;
    let mut pending = String::new();
    for line in markdown.lines() {
        let trimmed = line.trim();
        if let Some(info) = trimmed.strip_prefix("```") {
            match current.take() {
                Some(block) => blocks.push(block),
                None if info.trim() == "sh" => current = Some(Vec::new()),
                None => {}
            }
            continue;
        }
        let Some(block) = current.as_mut() else { continue };
        if let Some(head) = trimmed.strip_suffix('\\') {
            pending.push_str(head);
            pending.push(' ');
            continue;
        }
        pending.push_str(trimmed);
        let command = words(&std::mem::take(&mut pending));
        if !command.is_empty() {
            block.push(command);
        }
    }
    blocks
}

/// Reads the flags of a `helm install`; a flag the test does not know fails, so the docs stay testable.
pub fn parse_install(command: &[String]) -> Option<Install> {
    let [helm, verb, rest @ ..] = command else { return None };
    if helm != "helm" || verb != "install" {
        return None;
    }
    let mut positional = Vec::new();
    let mut install = Install {
        release: String::new(),
        chart: String::new(),
        namespace: "default".into(),
        sets: Vec::new(),
        values: Vec::new(),
    };
    let mut args = rest.iter();
    while let Some(arg) = args.next() {
        let (flag, inline) = match arg.split_once('=') {
            Some((f, v)) if f.starts_with("--") => (f, Some(v.to_string())),
            _ => (arg.as_str(), None),
        };
        let mut value = || inline.clone().or_else(|| args.next().cloned()).unwrap();
        match flag {
            "-n" | "--namespace" => install.namespace = value(),
            "--set" | "--set-string" => install.sets.push(value()),
            "-f" | "--values" => install.values.push(value()),
            "--create-namespace" | "--wait" | "--atomic" => {}
            "--timeout" => {
                value();
            }
            f if f.starts_with('-') => panic!("{command:?}: the wiring test does not know helm flag {f}"),
            _ => positional.push(arg.clone()),
        }
    }
    let [release, chart] = positional.as_slice() else {
        panic!("{command:?}: expected RELEASE CHART")
    };
    install.release = release.clone();
    install.chart = chart.clone();
    Some(install)
}

/// `(namespace, name)` of a `kubectl … create secret TYPE NAME …`.
pub fn parse_created_secret(command: &[String]) -> Option<(String, String)> {
    if command.first().map(String::as_str) != Some("kubectl") {
        return None;
    }
    let at = command.windows(2).position(|w| w[0] == "create" && w[1] == "secret")?;
    let namespace = command
        .windows(2)
        .find(|w| w[0] == "-n" || w[0] == "--namespace")
        .map(|w| w[1].clone())
        .unwrap_or_else(|| "default".into());
    Some((namespace, command.get(at + 3)?.clone()))
}

/// One sequence rendered: every object, with its namespace filled in.
pub struct Rendered {
    pub label: String,
    pub objects: Vec<Value>,
    pub prerequisites: BTreeSet<(String, String)>,
}

/// Renders `install` from the vendored copy of `charts/` (`charts_dir` is the copy's `charts/`).
pub fn render(charts_dir: &Path, install: &Install) -> Vec<Value> {
    let chart = install
        .chart
        .strip_prefix("charts/")
        .unwrap_or_else(|| panic!("{install:?}: the docs install charts from charts/"));
    let files: Vec<_> = install.values.iter().map(|v| root().join(v)).collect();
    let files: Vec<&Path> = files.iter().map(|f| f.as_path()).collect();
    let sets: Vec<&str> = install.sets.iter().map(String::as_str).collect();
    let text = helm()
        .template(
            &install.release,
            &install.namespace,
            &charts_dir.join(chart),
            &files,
            &sets,
        )
        .unwrap_or_else(|e| panic!("{install:?} does not render:\n{}", e.output()));
    let docs: Vec<Value> = serde_saphyr::from_multiple(&text).unwrap();
    docs.into_iter()
        .filter(Value::is_object)
        .map(|mut d| {
            if d["metadata"]["namespace"].is_null() {
                d["metadata"]["namespace"] = Value::String(install.namespace.clone());
            }
            d
        })
        .collect()
}

fn ns(o: &Value) -> String {
    o["metadata"]["namespace"].as_str().unwrap().to_string()
}

fn flag<'a>(c: &'a Value, name: &str) -> Option<&'a str> {
    let prefix = format!("{name}=");
    c["args"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(Value::as_str)
        .find_map(|a| a.strip_prefix(prefix.as_str()))
}

/// The kubeconfig Secret names the reconciler mints for the repository's providers.
fn provider_secret_names() -> Vec<String> {
    let mut names = Vec::new();
    for entry in std::fs::read_dir(root().join("providers")).unwrap().flatten() {
        let path = entry.path().join("provider.yaml");
        let Ok(text) = std::fs::read_to_string(&path) else {
            continue;
        };
        let p: Value = serde_saphyr::from_str(&text).unwrap();
        let name = p["metadata"]["name"].as_str().unwrap();
        names.push(
            p["spec"]["secretName"]
                .as_str()
                .map(str::to_string)
                .unwrap_or_else(|| format!("{name}-kubeconfig")),
        );
    }
    names
}

/// What exists once the rendered pods run: rendered Secrets and ConfigMaps (and cert-manager's
/// Secrets), plus what rendered pods publish at runtime, plus the documented prerequisites.
fn available(r: &Rendered) -> BTreeSet<(String, String, String)> {
    let mut have = BTreeSet::new();
    for o in &r.objects {
        let name = o["metadata"]["name"].as_str().unwrap_or_default().to_string();
        match o["kind"].as_str() {
            Some(k @ ("Secret" | "ConfigMap")) => {
                have.insert((k.to_string(), ns(o), name));
            }
            Some("Certificate") => {
                have.insert((
                    "Secret".into(),
                    ns(o),
                    o["spec"]["secretName"].as_str().unwrap().to_string(),
                ));
            }
            _ => {}
        }
    }
    for (pod_name, pod) in pod_specs(&r.objects) {
        let owner = r
            .objects
            .iter()
            .find(|o| o["metadata"]["name"] == pod_name.as_str() && o["spec"]["template"].is_object())
            .unwrap();
        for (_, c) in containers(pod) {
            // `faros kcp` publishes the admin kubeconfig, each component's and the hub's signing key,
            // all in one namespace.
            for published in [
                "--admin-kubeconfig-secret",
                "--hub-kubeconfig-secret",
                "--reconciler-kubeconfig-secret",
                "--hub-signing-key-secret",
            ] {
                if let Some(secret) = flag(c, published) {
                    let namespace = flag(c, "--admin-kubeconfig-secret-namespace")
                        .map(str::to_string)
                        .unwrap_or_else(|| ns(owner));
                    have.insert(("Secret".into(), namespace, secret.to_string()));
                }
            }
            if let Some(namespace) = flag(c, "--mirror-namespace") {
                for secret in provider_secret_names() {
                    have.insert(("Secret".into(), namespace.to_string(), secret));
                }
            }
        }
    }
    for (namespace, name) in &r.prerequisites {
        have.insert(("Secret".into(), namespace.clone(), name.clone()));
    }
    have
}

/// The checks of the module docs, on one rendered sequence.
pub fn check(r: &Rendered) {
    let have = available(r);
    let services: BTreeMap<(String, String), Vec<u64>> = kind(&r.objects, "Service")
        .map(|s| {
            let ports = s["spec"]["ports"]
                .as_array()
                .unwrap()
                .iter()
                .map(|p| p["port"].as_u64().unwrap());
            (
                (ns(s), s["metadata"]["name"].as_str().unwrap().to_string()),
                ports.collect(),
            )
        })
        .collect();
    let mut checked = 0;
    // Workloads' pod templates, and the `helm test` Pods, which must reach the same Services.
    let pods = r.objects.iter().filter_map(|o| {
        let pod = if o["kind"] == "Pod" {
            &o["spec"]
        } else {
            &o["spec"]["template"]["spec"]
        };
        pod.is_object().then_some((o, pod))
    });
    for (o, pod) in pods {
        let what = format!(
            "{}: {} {}/{}",
            r.label,
            o["kind"].as_str().unwrap(),
            ns(o),
            o["metadata"]["name"]
        );
        for v in pod["volumes"].as_array().into_iter().flatten() {
            let (k, source, name) = if v["secret"].is_object() {
                ("Secret", &v["secret"], v["secret"]["secretName"].as_str())
            } else if v["configMap"].is_object() {
                ("ConfigMap", &v["configMap"], v["configMap"]["name"].as_str())
            } else {
                continue;
            };
            if source["optional"] == true {
                continue;
            }
            let name = name.unwrap().to_string();
            assert!(
                have.contains(&(k.to_string(), ns(o), name.clone())),
                "{what} mounts {k} {}/{name}, which nothing rendered, published or documented creates",
                ns(o)
            );
            checked += 1;
        }
        for (_, c) in containers(pod) {
            let args = c["args"].as_array().into_iter().flatten().filter_map(Value::as_str);
            let env = c["env"]
                .as_array()
                .into_iter()
                .flatten()
                .filter_map(|e| e["value"].as_str());
            for value in args.chain(env) {
                let Some((service, namespace, port)) = in_cluster_address(value) else {
                    continue;
                };
                assert!(
                    services
                        .get(&(namespace.clone(), service.clone()))
                        .is_some_and(|p| p.contains(&port)),
                    "{what} is handed {value}, but the sequence renders no Service {namespace}/{service} with port {port}"
                );
                checked += 1;
            }
        }
    }
    assert!(checked > 0, "{}: nothing to check", r.label);
}

/// `(service, namespace, port)` of a `scheme://service.namespace.svc[.cluster.local][:port]…` value.
pub fn in_cluster_address(value: &str) -> Option<(String, String, u64)> {
    let (scheme, rest) = value
        .split_once("://")
        .map(|(s, r)| (s.rsplit(['=', ' ']).next().unwrap_or(s), r))?;
    let authority = rest.split('/').next()?;
    let (host, port) = match authority.rsplit_once(':') {
        Some((h, p)) => (h, p.parse().ok()?),
        None => (authority, if scheme == "https" { 443 } else { 80 }),
    };
    let host = host.strip_suffix(".cluster.local").unwrap_or(host);
    let mut parts = host.strip_suffix(".svc")?.splitn(2, '.');
    let service = parts.next()?.to_string();
    let namespace = parts.next()?.to_string();
    (!namespace.contains('.')).then_some((service, namespace, port))
}

const DOCUMENTS: [&str; 2] = ["README.md", "docs/install.md"];

/// Every documented install sequence, rendered.
fn documented_sequences(charts_dir: &Path) -> Vec<Rendered> {
    let mut out = Vec::new();
    for doc in DOCUMENTS {
        let text = std::fs::read_to_string(root().join(doc)).unwrap();
        let blocks = sh_blocks(&text);
        let prerequisites: BTreeSet<(String, String)> = blocks
            .iter()
            .flatten()
            .filter_map(|c| parse_created_secret(c))
            .collect();
        for (i, block) in blocks.iter().enumerate() {
            let installs: Vec<Install> = block.iter().filter_map(|c| parse_install(c)).collect();
            if installs.is_empty() {
                continue;
            }
            let releases: BTreeSet<(&str, &str)> = installs
                .iter()
                .map(|i| (i.namespace.as_str(), i.release.as_str()))
                .collect();
            assert_eq!(
                releases.len(),
                installs.len(),
                "{doc} block {i}: release names must differ"
            );
            out.push(Rendered {
                label: format!(
                    "{doc} block {i} ({})",
                    installs
                        .iter()
                        .map(|i| i.release.as_str())
                        .collect::<Vec<_>>()
                        .join(", ")
                ),
                objects: installs.iter().flat_map(|i| render(charts_dir, i)).collect(),
                prerequisites: prerequisites.clone(),
            });
        }
    }
    out
}

#[test]
fn words_split_like_a_shell() {
    for (line, want) in [
        (
            "helm install a b -n faros",
            vec!["helm", "install", "a", "b", "-n", "faros"],
        ),
        ("--set 'x=a b' \"y=c\\\"d\"", vec!["--set", "x=a b", "y=c\"d"]),
        (
            "cargo xtask images --push   # comment",
            vec!["cargo", "xtask", "images", "--push"],
        ),
        ("a=#b", vec!["a=#b"]),
        ("", vec![]),
    ] {
        assert_eq!(words(line), want, "{line:?}");
    }
}

#[test]
fn in_cluster_addresses_are_recognised() {
    for (value, want) in [
        (
            "--hub-url=https://hub-faros-hub-api.faros.svc:8443",
            Some(("hub-faros-hub-api", "faros", 8443)),
        ),
        (
            "https://k.ns.svc.cluster.local:6443/clusters/root",
            Some(("k", "ns", 6443)),
        ),
        ("http://q.ns.svc/x", Some(("q", "ns", 80))),
        ("https://hub.example.com", None),
        ("--log-level=info", None),
    ] {
        let got = in_cluster_address(value);
        assert_eq!(
            got.as_ref().map(|(s, n, p)| (s.as_str(), n.as_str(), *p)),
            want,
            "{value}"
        );
    }
}

#[test]
fn documented_install_sequences_wire_every_pod_to_something_that_exists() {
    let copy = charts();
    let charts_dir = copy.path().join("charts");
    let sequences = documented_sequences(&charts_dir);
    // README's umbrella install, install.md's umbrella, real-kcp and component-by-component installs.
    assert!(
        sequences.len() >= 4,
        "{:?}",
        sequences.iter().map(|s| &s.label).collect::<Vec<_>>()
    );
    let component = sequences
        .iter()
        .find(|s| s.label.contains("kcp, hub, reconciler, quickstart"))
        .expect("docs/install.md installs the charts one by one, each under its own release name");
    for s in &sequences {
        check(s);
    }
    assert!(!component.objects.is_empty());

    // A chart README's install command is one of the tested sequences' commands, verbatim.
    let tested: Vec<Install> = DOCUMENTS
        .iter()
        .flat_map(|d| sh_blocks(&std::fs::read_to_string(root().join(d)).unwrap()))
        .flatten()
        .filter_map(|c| parse_install(&c))
        .collect();
    for chart in super::chart_names() {
        let readme = std::fs::read_to_string(root().join("charts").join(&chart).join("README.md")).unwrap();
        for install in sh_blocks(&readme).iter().flatten().filter_map(|c| parse_install(c)) {
            assert!(
                tested.contains(&install),
                "charts/{chart}/README.md: {install:?} is not a command of README.md's or docs/install.md's install sequences"
            );
        }
    }
}

/// Every `helm install` the documentation shows is rendered by a test: README.md's and
/// docs/install.md's here, docs/provider-authoring.md's (a scaffolded provider's own chart) by
/// `scaffold_files.rs`, which renders it and the scaffolded chart README's against the reconciler's
/// mirror namespace. A new doc with an install block must join one of them.
#[test]
fn every_documented_helm_install_is_rendered_by_a_test() {
    const SCAFFOLD_FILES: [&str; 1] = ["docs/provider-authoring.md"];
    let mut docs = vec!["README.md".to_string()];
    let mut pages: Vec<String> = std::fs::read_dir(root().join("docs"))
        .unwrap()
        .flatten()
        .map(|e| e.path())
        .filter(|p| p.extension().is_some_and(|e| e == "md"))
        .map(|p| format!("docs/{}", p.file_name().unwrap().to_string_lossy()))
        .collect();
    pages.sort();
    docs.extend(pages);
    for doc in docs {
        let text = std::fs::read_to_string(root().join(&doc)).unwrap();
        let installs = sh_blocks(&text).iter().flatten().any(|c| parse_install(c).is_some());
        assert!(
            !installs || DOCUMENTS.contains(&doc.as_str()) || SCAFFOLD_FILES.contains(&doc.as_str()),
            "{doc} shows a helm install no test renders: add it to DOCUMENTS or to scaffold_files.rs"
        );
    }
}

#[test]
fn the_umbrella_follows_a_renamed_hub_on_another_port() {
    let copy = charts();
    let charts_dir = copy.path().join("charts");
    for (release, sets) in [
        (
            "platform",
            vec!["global.faros.hub.fullname=front-door", "global.faros.hub.port=9443"],
        ),
        ("faros-hub-api", vec!["global.faros.hub.port=10443"]),
        (
            "x",
            vec![
                "faros-hub-api.tls.mode=existingSecret",
                "faros-hub-api.tls.existingSecret=my-tls",
                "global.faros.hub.caSecret=my-tls",
            ],
        ),
    ] {
        let mut sets: Vec<String> = sets.iter().map(|s| s.to_string()).collect();
        sets.push("faros-provider-quickstart.enabled=true".into());
        let install = Install {
            release: release.into(),
            chart: "charts/faros".into(),
            namespace: NAMESPACE.into(),
            sets: sets.clone(),
            values: Vec::new(),
        };
        let objects = render(&charts_dir, &install);
        let prerequisites = BTreeSet::from([(NAMESPACE.to_string(), "my-tls".to_string())]);
        let r = Rendered {
            label: format!("umbrella {release} {sets:?}"),
            objects,
            prerequisites,
        };
        check(&r);
        // The non-default name and port really are what the components dial.
        let port = sets
            .iter()
            .find_map(|s| s.strip_prefix("global.faros.hub.port="))
            .unwrap_or("8443");
        let hub_urls: Vec<String> = pod_specs(&r.objects)
            .iter()
            .flat_map(|(_, pod)| containers(pod).map(|(_, c)| c.clone()).collect::<Vec<_>>())
            .flat_map(|c| {
                let mut v: Vec<String> = flag(&c, "--hub-url").map(str::to_string).into_iter().collect();
                v.extend(
                    c["env"]
                        .as_array()
                        .into_iter()
                        .flatten()
                        .filter(|e| e["name"] == "FAROS_HUB_URL")
                        .filter_map(|e| e["value"].as_str().map(str::to_string)),
                );
                v
            })
            .collect();
        assert_eq!(hub_urls.len(), 2, "{}: {hub_urls:?}", r.label);
        for url in hub_urls {
            assert!(url.ends_with(&format!(".{NAMESPACE}.svc:{port}")), "{}: {url}", r.label);
        }
    }
}
