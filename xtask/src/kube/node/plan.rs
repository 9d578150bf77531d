//! A Pod spec into the processes and files the node runs it as, without IO: each container's
//! program (from the image map), arguments, environment (`valueFrom`/`envFrom` resolved from the
//! Secrets and ConfigMaps the caller fetched), user and mounts, and each volume's files.
//!
//! What a container image would supply comes from [`Images`]: an image's repository names a
//! binary of the workspace build (its entrypoint) or a program of this machine (`curl`).

use std::collections::BTreeMap;
use std::path::PathBuf;

use k8s_openapi::api::core::v1::{Container, Pod};

#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub(crate) enum PlanError {
    #[error("container {container}: image {image} is not one the node runs (known: {known})")]
    UnknownImage {
        container: String,
        image: String,
        known: String,
    },
    #[error("container {container}: env {name}: {why}")]
    Env {
        container: String,
        name: String,
        why: String,
    },
    #[error("volume {volume}: {why}")]
    Volume { volume: String, why: String },
    #[error("container {container}: mount {path}: no volume {volume}")]
    Mount {
        container: String,
        path: String,
        volume: String,
    },
    #[error("the Pod has no {0}")]
    Missing(&'static str),
}

/// What an image runs: its entrypoint's program and leading arguments, and the files it carries
/// besides (a path on this machine, and where the image has it).
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct Entrypoint {
    pub program: PathBuf,
    pub args: Vec<String>,
    pub files: Vec<(PathBuf, String)>,
}

/// Image repository (no tag or digest) → entrypoint.
#[derive(Clone, Debug, Default)]
pub(crate) struct Images(pub BTreeMap<String, Entrypoint>);

impl Images {
    /// The repository of `image`: without `:tag` and `@digest`.
    pub fn repository(image: &str) -> &str {
        let image = image.split('@').next().unwrap_or(image);
        match image.rsplit_once(':') {
            // A colon after the last slash is a tag, before it a registry port.
            Some((repo, tag)) if !tag.contains('/') => repo,
            _ => image,
        }
    }
}

/// What the caller fetched for the Pod: Secrets and ConfigMaps of its namespace by name (`None`:
/// absent), and the ServiceAccount token of a projected volume.
#[derive(Clone, Debug, Default)]
pub(crate) struct Lookups {
    pub secrets: BTreeMap<String, Option<BTreeMap<String, Vec<u8>>>>,
    pub config_maps: BTreeMap<String, Option<BTreeMap<String, Vec<u8>>>>,
    pub token: Option<String>,
    /// The address the node gives the Pod (`status.podIP`).
    pub pod_ip: String,
    pub node_name: String,
}

/// One file of a volume, relative to the volume's root.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct File {
    pub path: String,
    pub contents: Vec<u8>,
    pub mode: u32,
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) enum VolumeKind {
    /// Files written once (Secret, ConfigMap, projected, downward API).
    Files(Vec<File>),
    /// An empty directory, writable by the Pod's user.
    EmptyDir,
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct Volume {
    pub name: String,
    pub kind: VolumeKind,
}

/// A volume mounted into a container.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct Mount {
    pub volume: String,
    /// Inside the volume (`subPath`), empty for all of it.
    pub sub_path: String,
    pub path: String,
    pub read_only: bool,
}

/// One container as a process.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct Process {
    pub name: String,
    pub program: PathBuf,
    pub args: Vec<String>,
    pub env: Vec<(String, String)>,
    pub uid: Option<i64>,
    pub gid: Option<i64>,
    pub groups: Vec<i64>,
    pub working_dir: Option<String>,
    /// The image's own files (mounted first: the Pod's volumes may cover them).
    pub image_files: Vec<(PathBuf, String)>,
    pub mounts: Vec<Mount>,
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct PodPlan {
    pub init: Vec<Process>,
    pub containers: Vec<Process>,
    pub volumes: Vec<Volume>,
}

/// The Secrets and ConfigMaps `pod` reads (volumes, env, envFrom), for the caller to fetch.
pub(crate) fn references(pod: &Pod) -> (Vec<String>, Vec<String>) {
    let (mut secrets, mut maps) = (Vec::new(), Vec::new());
    let Some(spec) = &pod.spec else {
        return (secrets, maps);
    };
    for v in spec.volumes.iter().flatten() {
        if let Some(s) = v.secret.as_ref().and_then(|s| s.secret_name.clone()) {
            secrets.push(s);
        }
        if let Some(c) = &v.config_map {
            maps.push(c.name.clone());
        }
        for p in v.projected.iter().flat_map(|p| p.sources.iter().flatten()) {
            if let Some(s) = &p.secret {
                secrets.push(s.name.clone());
            }
            if let Some(c) = &p.config_map {
                maps.push(c.name.clone());
            }
        }
    }
    for c in spec.init_containers.iter().flatten().chain(&spec.containers) {
        for e in c.env.iter().flatten() {
            if let Some(from) = &e.value_from {
                if let Some(s) = &from.secret_key_ref {
                    secrets.push(s.name.clone());
                }
                if let Some(m) = &from.config_map_key_ref {
                    maps.push(m.name.clone());
                }
            }
        }
        for f in c.env_from.iter().flatten() {
            if let Some(s) = &f.secret_ref {
                secrets.push(s.name.clone());
            }
            if let Some(m) = &f.config_map_ref {
                maps.push(m.name.clone());
            }
        }
    }
    secrets.sort();
    secrets.dedup();
    maps.sort();
    maps.dedup();
    (secrets, maps)
}

/// Whether `pod` has a projected volume with a ServiceAccount token (the caller requests one).
pub(crate) fn wants_token(pod: &Pod) -> Option<(String, Option<i64>)> {
    let spec = pod.spec.as_ref()?;
    spec.volumes
        .iter()
        .flatten()
        .flat_map(|v| v.projected.iter().flat_map(|p| p.sources.iter().flatten()))
        .find_map(|s| s.service_account_token.as_ref())
        .map(|t| (t.audience.clone().unwrap_or_default(), t.expiration_seconds))
}

/// The plan of `pod`.
pub(crate) fn plan(pod: &Pod, images: &Images, lookups: &Lookups) -> Result<PodPlan, PlanError> {
    let spec = pod.spec.as_ref().ok_or(PlanError::Missing("spec"))?;
    let volumes = spec
        .volumes
        .iter()
        .flatten()
        .map(|v| volume(pod, v, lookups))
        .collect::<Result<Vec<_>, _>>()?;
    let process = |c: &Container| container(pod, c, images, lookups, &volumes);
    Ok(PodPlan {
        init: spec
            .init_containers
            .iter()
            .flatten()
            .map(process)
            .collect::<Result<_, _>>()?,
        containers: spec.containers.iter().map(process).collect::<Result<_, _>>()?,
        volumes,
    })
}

fn container(
    pod: &Pod,
    c: &Container,
    images: &Images,
    lookups: &Lookups,
    volumes: &[Volume],
) -> Result<Process, PlanError> {
    let image = c.image.clone().unwrap_or_default();
    let entry = images
        .0
        .get(Images::repository(&image))
        .ok_or_else(|| PlanError::UnknownImage {
            container: c.name.clone(),
            image: image.clone(),
            known: images.0.keys().cloned().collect::<Vec<_>>().join(", "),
        })?;
    let env = environment(pod, c, lookups)?;
    let expand = |s: &String| expand(s, &env);
    // `command` replaces the entrypoint: its program is the image's own when the names agree, else
    // the machine's program of that name (an image of a common tool).
    let (program, mut args) = match &c.command {
        Some(command) if !command.is_empty() => {
            let first = expand(&command[0]);
            let same = PathBuf::from(&first).file_name() == entry.program.file_name();
            let program = if same {
                entry.program.clone()
            } else {
                PathBuf::from(first)
            };
            (program, command[1..].iter().map(expand).collect::<Vec<_>>())
        }
        _ => (entry.program.clone(), entry.args.clone()),
    };
    args.extend(c.args.iter().flatten().map(expand));
    let pod_sc = pod.spec.as_ref().and_then(|s| s.security_context.as_ref());
    let sc = c.security_context.as_ref();
    let uid = sc.and_then(|s| s.run_as_user).or(pod_sc.and_then(|s| s.run_as_user));
    let gid = sc.and_then(|s| s.run_as_group).or(pod_sc.and_then(|s| s.run_as_group));
    let mut groups: Vec<i64> = pod_sc.and_then(|s| s.fs_group).into_iter().collect();
    groups.extend(pod_sc.and_then(|s| s.supplemental_groups.clone()).unwrap_or_default());
    let mounts = c
        .volume_mounts
        .iter()
        .flatten()
        .map(|m| {
            if !volumes.iter().any(|v| v.name == m.name) {
                return Err(PlanError::Mount {
                    container: c.name.clone(),
                    path: m.mount_path.clone(),
                    volume: m.name.clone(),
                });
            }
            Ok(Mount {
                volume: m.name.clone(),
                sub_path: m.sub_path.clone().unwrap_or_default(),
                path: m.mount_path.clone(),
                read_only: m.read_only.unwrap_or(false),
            })
        })
        .collect::<Result<_, _>>()?;
    Ok(Process {
        name: c.name.clone(),
        program,
        args,
        env,
        uid,
        gid,
        groups,
        working_dir: c.working_dir.clone(),
        image_files: entry.files.clone(),
        mounts,
    })
}

/// `$(VAR)` of earlier variables expanded as the kubelet does; `$$` escapes; unknown left as is.
fn expand(s: &str, env: &[(String, String)]) -> String {
    let mut out = String::new();
    let mut rest = s;
    while let Some(i) = rest.find('$') {
        out.push_str(&rest[..i]);
        let after = &rest[i + 1..];
        if let Some(tail) = after.strip_prefix('$') {
            out.push('$');
            rest = tail;
        } else if let Some(inner) = after.strip_prefix('(')
            && let Some(end) = inner.find(')')
            && let Some((_, v)) = env.iter().rev().find(|(k, _)| k == &inner[..end])
        {
            out.push_str(v);
            rest = &inner[end + 1..];
        } else {
            out.push('$');
            rest = after;
        }
    }
    out.push_str(rest);
    out
}

fn text(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}

/// The container's environment: `envFrom` first, then `env` in order (later wins, as in the kubelet).
fn environment(pod: &Pod, c: &Container, lookups: &Lookups) -> Result<Vec<(String, String)>, PlanError> {
    let err = |name: &str, why: String| PlanError::Env {
        container: c.name.clone(),
        name: name.to_string(),
        why,
    };
    let mut env: Vec<(String, String)> = Vec::new();
    let set = |env: &mut Vec<(String, String)>, k: String, v: String| {
        env.retain(|(key, _)| key != &k);
        env.push((k, v));
    };
    for from in c.env_from.iter().flatten() {
        let prefix = from.prefix.clone().unwrap_or_default();
        let (source, optional, kind) = if let Some(s) = &from.secret_ref {
            (lookups.secrets.get(&s.name), s.optional.unwrap_or(false), "Secret")
        } else if let Some(m) = &from.config_map_ref {
            (
                lookups.config_maps.get(&m.name),
                m.optional.unwrap_or(false),
                "ConfigMap",
            )
        } else {
            continue;
        };
        match source.and_then(|s| s.as_ref()) {
            Some(data) => {
                for (k, v) in data {
                    set(&mut env, format!("{prefix}{k}"), text(v));
                }
            }
            None if optional => {}
            None => return Err(err("envFrom", format!("the {kind} does not exist"))),
        }
    }
    for e in c.env.iter().flatten() {
        let value = match (&e.value, &e.value_from) {
            (Some(v), _) => Some(expand(v, &env)),
            (None, Some(from)) => {
                if let Some(f) = &from.field_ref {
                    Some(field(pod, &f.field_path, lookups).ok_or_else(|| {
                        err(
                            &e.name,
                            format!("fieldRef {} is not one the node resolves", f.field_path),
                        )
                    })?)
                } else if let Some(s) = &from.secret_key_ref {
                    key_ref(&lookups.secrets, &s.name, &s.key, s.optional, "Secret").map_err(|w| err(&e.name, w))?
                } else if let Some(m) = &from.config_map_key_ref {
                    key_ref(&lookups.config_maps, &m.name, &m.key, m.optional, "ConfigMap")
                        .map_err(|w| err(&e.name, w))?
                } else {
                    return Err(err(&e.name, "resourceFieldRef is not emulated (no resources)".into()));
                }
            }
            (None, None) => Some(String::new()),
        };
        if let Some(v) = value {
            set(&mut env, e.name.clone(), v);
        }
    }
    Ok(env)
}

type Sources = BTreeMap<String, Option<BTreeMap<String, Vec<u8>>>>;

fn key_ref(
    sources: &Sources,
    name: &str,
    key: &str,
    optional: Option<bool>,
    kind: &str,
) -> Result<Option<String>, String> {
    match sources.get(name).and_then(|s| s.as_ref()).map(|d| d.get(key)) {
        Some(Some(v)) => Ok(Some(text(v))),
        _ if optional.unwrap_or(false) => Ok(None),
        Some(None) => Err(format!("{kind} {name} has no key {key}")),
        None => Err(format!("{kind} {name} does not exist")),
    }
}

/// The downward API's fields the node knows.
fn field(pod: &Pod, path: &str, lookups: &Lookups) -> Option<String> {
    let meta = &pod.metadata;
    let spec = pod.spec.as_ref();
    if let Some(rest) = path.strip_prefix("metadata.labels['") {
        let key = rest.strip_suffix("']")?;
        return meta.labels.as_ref()?.get(key).cloned();
    }
    if let Some(rest) = path.strip_prefix("metadata.annotations['") {
        let key = rest.strip_suffix("']")?;
        return meta.annotations.as_ref()?.get(key).cloned();
    }
    match path {
        "metadata.name" => meta.name.clone(),
        "metadata.namespace" => meta.namespace.clone(),
        "metadata.uid" => meta.uid.clone(),
        "spec.nodeName" => Some(lookups.node_name.clone()),
        "spec.serviceAccountName" => spec.and_then(|s| s.service_account_name.clone()),
        "status.podIP" | "status.hostIP" => Some(lookups.pod_ip.clone()),
        _ => None,
    }
}

/// Items of a Secret or ConfigMap: all keys, or the listed ones at their paths.
fn items(
    data: &BTreeMap<String, Vec<u8>>,
    wanted: Option<&Vec<k8s_openapi::api::core::v1::KeyToPath>>,
    mode: u32,
) -> Result<Vec<File>, String> {
    match wanted {
        None => Ok(data
            .iter()
            .map(|(k, v)| File {
                path: k.clone(),
                contents: v.clone(),
                mode,
            })
            .collect()),
        Some(list) => list
            .iter()
            .map(|i| {
                data.get(&i.key)
                    .map(|v| File {
                        path: i.path.clone(),
                        contents: v.clone(),
                        mode: i.mode.map_or(mode, |m| m as u32),
                    })
                    .ok_or_else(|| format!("no key {}", i.key))
            })
            .collect(),
    }
}

fn volume(pod: &Pod, v: &k8s_openapi::api::core::v1::Volume, lookups: &Lookups) -> Result<Volume, PlanError> {
    let err = |why: String| PlanError::Volume {
        volume: v.name.clone(),
        why,
    };
    let source = |sources: &Sources, name: &str, kind: &str, optional: Option<bool>| match sources
        .get(name)
        .and_then(|s| s.as_ref())
    {
        Some(d) => Ok(Some(d.clone())),
        None if optional.unwrap_or(false) => Ok(None),
        None => Err(format!("{kind} {name} does not exist")),
    };
    let kind = if v.empty_dir.is_some() {
        VolumeKind::EmptyDir
    } else if let Some(s) = &v.secret {
        let name = s.secret_name.clone().unwrap_or_default();
        let mode = s.default_mode.map_or(0o644, |m| m as u32);
        let files = match source(&lookups.secrets, &name, "Secret", s.optional).map_err(err)? {
            Some(d) => items(&d, s.items.as_ref(), mode).map_err(|w| err(format!("Secret {name}: {w}")))?,
            None => Vec::new(),
        };
        VolumeKind::Files(files)
    } else if let Some(c) = &v.config_map {
        let mode = c.default_mode.map_or(0o644, |m| m as u32);
        let files = match source(&lookups.config_maps, &c.name, "ConfigMap", c.optional).map_err(err)? {
            Some(d) => items(&d, c.items.as_ref(), mode).map_err(|w| err(format!("ConfigMap {}: {w}", c.name)))?,
            None => Vec::new(),
        };
        VolumeKind::Files(files)
    } else if let Some(p) = &v.projected {
        let mode = p.default_mode.map_or(0o644, |m| m as u32);
        let mut files = Vec::new();
        for s in p.sources.iter().flatten() {
            if let Some(t) = &s.service_account_token {
                let token = lookups
                    .token
                    .clone()
                    .ok_or_else(|| err("no ServiceAccount token was issued".into()))?;
                files.push(File {
                    path: t.path.clone(),
                    contents: token.into_bytes(),
                    mode,
                });
            } else if let Some(c) = &s.config_map {
                if let Some(d) = source(&lookups.config_maps, &c.name, "ConfigMap", c.optional).map_err(err)? {
                    files.extend(items(&d, c.items.as_ref(), mode).map_err(err)?);
                }
            } else if let Some(sec) = &s.secret {
                if let Some(d) = source(&lookups.secrets, &sec.name, "Secret", sec.optional).map_err(err)? {
                    files.extend(items(&d, sec.items.as_ref(), mode).map_err(err)?);
                }
            } else if let Some(d) = &s.downward_api {
                for i in d.items.iter().flatten() {
                    let f = i
                        .field_ref
                        .as_ref()
                        .ok_or_else(|| err("downwardAPI resourceFieldRef is not emulated".into()))?;
                    let value = field(pod, &f.field_path, lookups)
                        .ok_or_else(|| err(format!("downwardAPI {} is not one the node resolves", f.field_path)))?;
                    files.push(File {
                        path: i.path.clone(),
                        contents: value.into_bytes(),
                        mode: i.mode.map_or(mode, |m| m as u32),
                    });
                }
            } else {
                return Err(err("a projected source the node does not emulate".into()));
            }
        }
        VolumeKind::Files(files)
    } else {
        return Err(err(
            "only emptyDir, secret, configMap and projected volumes are emulated".into(),
        ));
    };
    Ok(Volume {
        name: v.name.clone(),
        kind,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn pod(yaml: &str) -> Pod {
        serde_saphyr::from_str(yaml).unwrap()
    }

    fn images() -> Images {
        Images(BTreeMap::from([
            (
                "ghcr.io/faroshq/faros-hub-api".to_string(),
                Entrypoint {
                    program: "/t/faros-hub-api".into(),
                    args: vec![],
                    files: vec![],
                },
            ),
            (
                "ghcr.io/faroshq/faros-kcp".to_string(),
                Entrypoint {
                    program: "/t/faros".into(),
                    args: vec!["kcp".into()],
                    files: vec![],
                },
            ),
            (
                "docker.io/curlimages/curl".to_string(),
                Entrypoint {
                    program: "/usr/bin/curl".into(),
                    args: vec![],
                    files: vec![],
                },
            ),
        ]))
    }

    fn lookups() -> Lookups {
        let data = |pairs: &[(&str, &str)]| {
            Some(
                pairs
                    .iter()
                    .map(|(k, v)| (k.to_string(), v.as_bytes().to_vec()))
                    .collect::<BTreeMap<_, _>>(),
            )
        };
        Lookups {
            secrets: BTreeMap::from([
                (
                    "tls".into(),
                    data(&[("tls.crt", "CRT"), ("tls.key", "KEY"), ("ca.crt", "CA")]),
                ),
                ("gone".into(), None),
            ]),
            config_maps: BTreeMap::from([
                ("settings".into(), data(&[("LEVEL", "debug"), ("MODE", "x")])),
                ("kube-root-ca.crt".into(), data(&[("ca.crt", "ROOT")])),
            ]),
            token: Some("TOKEN".into()),
            pod_ip: "198.18.0.7".into(),
            node_name: "n".into(),
        }
    }

    const BASE: &str = "metadata: {name: p-1, namespace: ns, uid: u1, labels: {app: a}}\nspec:\n";

    /// Program, arguments and environment.
    type Want = (PathBuf, Vec<&'static str>, Vec<(&'static str, &'static str)>);

    #[test]
    fn containers_become_processes() {
        struct Case {
            name: &'static str,
            spec: &'static str,
            want: Result<Want, &'static str>,
        }
        let cases = [
            Case {
                name: "entrypoint of the image, args after it, tag and digest ignored",
                spec: "  containers: [{name: c, image: 'ghcr.io/faroshq/faros-kcp:0.1@sha256:ab', args: [--x]}]",
                want: Ok(("/t/faros".into(), vec!["kcp", "--x"], vec![])),
            },
            Case {
                name: "command of another program: the machine's",
                spec: "  containers: [{name: c, image: 'docker.io/curlimages/curl:8', command: [sh], args: [-f]}]",
                want: Ok(("sh".into(), vec!["-f"], vec![])),
            },
            Case {
                name: "command naming the image's binary: the build's",
                spec: "  containers: [{name: c, image: ghcr.io/faroshq/faros-hub-api, command: [/usr/local/bin/faros-hub-api, a]}]",
                want: Ok(("/t/faros-hub-api".into(), vec!["a"], vec![])),
            },
            Case {
                name: "env: value, fieldRef, secretKeyRef, envFrom with prefix, $(VAR) in args",
                spec: "  containers:\n  - name: c\n    image: ghcr.io/faroshq/faros-hub-api\n    args: ['--id=$(ID)', '$$(ID)']\n    envFrom: [{prefix: S_, configMapRef: {name: settings}}]\n    env:\n    - {name: ID, valueFrom: {fieldRef: {fieldPath: metadata.name}}}\n    - {name: IP, valueFrom: {fieldRef: {fieldPath: status.podIP}}}\n    - {name: APP, valueFrom: {fieldRef: {fieldPath: \"metadata.labels['app']\"}}}\n    - {name: K, valueFrom: {secretKeyRef: {name: tls, key: tls.key}}}\n    - {name: O, valueFrom: {secretKeyRef: {name: gone, key: k, optional: true}}}\n    - {name: S_MODE, value: y}",
                want: Ok((
                    "/t/faros-hub-api".into(),
                    vec!["--id=p-1", "$(ID)"],
                    vec![
                        ("S_LEVEL", "debug"),
                        ("ID", "p-1"),
                        ("IP", "198.18.0.7"),
                        ("APP", "a"),
                        ("K", "KEY"),
                        ("S_MODE", "y"),
                    ],
                )),
            },
            Case {
                name: "unknown image",
                spec: "  containers: [{name: c, image: nginx}]",
                want: Err("container c: image nginx is not one the node runs"),
            },
            Case {
                name: "missing Secret for env",
                spec: "  containers: [{name: c, image: ghcr.io/faroshq/faros-hub-api, env: [{name: K, valueFrom: {secretKeyRef: {name: gone, key: k}}}]}]",
                want: Err("container c: env K: Secret gone does not exist"),
            },
            Case {
                name: "resources fields are not emulated",
                spec: "  containers: [{name: c, image: ghcr.io/faroshq/faros-hub-api, env: [{name: M, valueFrom: {resourceFieldRef: {resource: limits.memory}}}]}]",
                want: Err("resourceFieldRef is not emulated"),
            },
        ];
        for case in cases {
            let got = plan(&pod(&format!("{BASE}{}", case.spec)), &images(), &lookups());
            match (got, case.want) {
                (Ok(p), Ok((program, args, env))) => {
                    let c = &p.containers[0];
                    assert_eq!(c.program, program, "{}", case.name);
                    assert_eq!(c.args, args, "{}", case.name);
                    let env: Vec<(String, String)> = env.iter().map(|(k, v)| (k.to_string(), v.to_string())).collect();
                    assert_eq!(c.env, env, "{}", case.name);
                }
                (Err(e), Err(want)) => assert!(e.to_string().contains(want), "{}: {e}", case.name),
                (got, want) => panic!("{}: got {got:?}, want {want:?}", case.name),
            }
        }
    }

    #[test]
    fn volumes_become_files_and_users_are_honoured() {
        let p = pod(&format!(
            "{BASE}  securityContext: {{runAsUser: 65532, runAsGroup: 65532, fsGroup: 2000}}
  containers:
  - name: c
    image: ghcr.io/faroshq/faros-hub-api
    securityContext: {{runAsUser: 1000}}
    volumeMounts:
    - {{name: tls, mountPath: /etc/faros/tls, readOnly: true}}
    - {{name: scratch, mountPath: /var/lib/x}}
    - {{name: api, mountPath: /var/run/secrets/kubernetes.io/serviceaccount, readOnly: true}}
  volumes:
  - {{name: tls, secret: {{secretName: tls, items: [{{key: ca.crt, path: ca.crt}}]}}}}
  - {{name: scratch, emptyDir: {{}}}}
  - name: api
    projected:
      defaultMode: 420
      sources:
      - serviceAccountToken: {{path: token, expirationSeconds: 3607}}
      - configMap: {{name: kube-root-ca.crt, items: [{{key: ca.crt, path: ca.crt}}]}}
      - downwardAPI: {{items: [{{path: namespace, fieldRef: {{fieldPath: metadata.namespace}}}}]}}
"
        ));
        let got = plan(&p, &images(), &lookups()).unwrap();
        let c = &got.containers[0];
        assert_eq!((c.uid, c.gid, c.groups.clone()), (Some(1000), Some(65532), vec![2000]));
        assert_eq!(c.mounts.len(), 3);
        assert!(c.mounts[0].read_only);
        let files = |i: usize| match &got.volumes[i].kind {
            VolumeKind::Files(f) => f
                .iter()
                .map(|f| (f.path.clone(), text(&f.contents), f.mode))
                .collect::<Vec<_>>(),
            VolumeKind::EmptyDir => vec![],
        };
        assert_eq!(files(0), vec![("ca.crt".to_string(), "CA".to_string(), 0o644)]);
        assert_eq!(got.volumes[1].kind, VolumeKind::EmptyDir);
        assert_eq!(
            files(2),
            vec![
                ("token".to_string(), "TOKEN".to_string(), 0o644),
                ("ca.crt".to_string(), "ROOT".to_string(), 0o644),
                ("namespace".to_string(), "ns".to_string(), 0o644),
            ]
        );
        assert_eq!(wants_token(&p), Some((String::new(), Some(3607))));
        assert_eq!(
            references(&p),
            (vec!["tls".to_string()], vec!["kube-root-ca.crt".to_string()])
        );

        // A volume of a kind the node does not emulate, and a missing Secret, are refused by name.
        for (spec, want) in [
            (
                "  volumes: [{name: h, hostPath: {path: /}}]\n  containers: [{name: c, image: ghcr.io/faroshq/faros-hub-api}]",
                "volume h: only emptyDir",
            ),
            (
                "  volumes: [{name: s, secret: {secretName: gone}}]\n  containers: [{name: c, image: ghcr.io/faroshq/faros-hub-api}]",
                "volume s: Secret gone does not exist",
            ),
            (
                "  containers: [{name: c, image: ghcr.io/faroshq/faros-hub-api, volumeMounts: [{name: x, mountPath: /x}]}]",
                "mount /x: no volume x",
            ),
        ] {
            let err = plan(&pod(&format!("{BASE}{spec}")), &images(), &lookups()).unwrap_err();
            assert!(err.to_string().contains(want), "{err}");
        }
    }

    #[test]
    fn repositories_drop_tag_and_digest_but_keep_a_registry_port() {
        for (image, want) in [
            ("a/b:1", "a/b"),
            ("a/b@sha256:x", "a/b"),
            ("a/b:1@sha256:x", "a/b"),
            ("reg:5000/b", "reg:5000/b"),
            ("reg:5000/b:2", "reg:5000/b"),
            ("b", "b"),
        ] {
            assert_eq!(Images::repository(image), want, "{image}");
        }
    }
}
