//! `cargo xtask images`: builds the container images from the repository's `Dockerfile`, one
//! `--target` per component, and with `--push` pushes them.
//!
//! The work is split so that everything but running the engine is decided without IO and tested:
//! [`plan`] turns engine, registry, tag, version, revision and components into the exact commands,
//! [`choose_engine`] turns what was found on the machine into an engine or one message naming what
//! is missing. `--dry-run` prints the plan (shell-quoted, one command per line) and needs no engine.
//!
//! With `--push`, every image is pushed only after all of them built, and each push leaves its
//! digest in a file under [`OUT_DIR`] ([`digests`] reads those and writes `digests.json`). Docker
//! pushes with `docker buildx build --push`, which attaches an SPDX SBOM and a provenance
//! attestation to each image; podman pushes with `podman push --digestfile`.
//!
//! This task never compiles Rust itself (the Dockerfile's builder stage does, once for all images)
//! and never decides image contents (the Dockerfile does; the tests below keep the two in step).
//! The component list and [`image_ref`] are shared with whatever deploys the images (the planned
//! `cargo xtask e2e --target kind`).

mod digests;

use std::fmt;
use std::path::Path;
use std::process::{Command, Stdio};

use anyhow::{Context, bail};
use clap::{Args, ValueEnum};
use xshell::{Shell, cmd};

/// Where images go unless `--registry` says otherwise.
pub(crate) const DEFAULT_REGISTRY: &str = "ghcr.io/faroshq";
/// The Dockerfile every image is built from, relative to the project root (also the build context).
pub(crate) const DOCKERFILE: &str = "Dockerfile";
/// Where pushes leave their digest files and where `digests.json` is written, relative to the
/// project root (inside target/, so outside the build context).
pub(crate) const OUT_DIR: &str = "target/images";
/// The package whose version is the default tag and the `org.opencontainers.image.version` label.
const VERSION_PACKAGE: &str = "faros";

/// One image: its name is also the Dockerfile target that builds it.
#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub(crate) enum Component {
    /// The embedded kcp alone (`faros kcp`).
    #[value(name = "faros-kcp")]
    Kcp,
    /// The hub API.
    #[value(name = "faros-hub-api")]
    HubApi,
    /// The hub reconciler.
    #[value(name = "faros-hub-reconciler")]
    HubReconciler,
    /// The quickstart provider, with its schemas and CatalogEntry.
    #[value(name = "faros-provider-quickstart")]
    ProviderQuickstart,
}

impl Component {
    /// Every image, in build order.
    pub(crate) const ALL: [Component; 4] = [
        Component::Kcp,
        Component::HubApi,
        Component::HubReconciler,
        Component::ProviderQuickstart,
    ];

    /// Image name and Dockerfile target.
    pub(crate) fn name(self) -> &'static str {
        match self {
            Component::Kcp => "faros-kcp",
            Component::HubApi => "faros-hub-api",
            Component::HubReconciler => "faros-hub-reconciler",
            Component::ProviderQuickstart => "faros-provider-quickstart",
        }
    }
}

/// `<registry>/<component>`.
pub(crate) fn repository(registry: &str, component: Component) -> String {
    format!("{}/{}", registry.trim_end_matches('/'), component.name())
}

/// `<registry>/<component>:<tag>`.
pub(crate) fn image_ref(registry: &str, component: Component, tag: &str) -> String {
    format!("{}:{tag}", repository(registry, component))
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub(crate) enum Engine {
    Docker,
    Podman,
}

impl Engine {
    /// Tried in this order when `--engine` is not given.
    const ALL: [Engine; 2] = [Engine::Docker, Engine::Podman];

    pub(crate) fn program(self) -> &'static str {
        match self {
            Engine::Docker => "docker",
            Engine::Podman => "podman",
        }
    }
}

/// What looking for an engine on this machine found.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Probe {
    /// The client is not on PATH.
    NotFound,
    /// The client runs but `<engine> info` fails (for docker: no daemon to talk to).
    Unreachable,
    Ready,
}

#[derive(Args)]
pub struct Images {
    /// Image tag. Default: the version of the `faros` package.
    #[arg(long)]
    tag: Option<String>,
    /// Registry (and namespace) the images are named under.
    #[arg(long, default_value = DEFAULT_REGISTRY)]
    registry: String,
    /// Push every image after all of them are built.
    #[arg(long)]
    push: bool,
    /// Print the commands instead of running them (no container engine needed; docker unless
    /// --engine says otherwise).
    #[arg(long)]
    dry_run: bool,
    /// Container engine. Default: docker if its daemon answers, else podman.
    #[arg(long, value_enum)]
    engine: Option<Engine>,
    /// Build only these images (repeatable). Default: all of them.
    #[arg(long = "component", value_enum)]
    components: Vec<Component>,
}

impl Images {
    pub fn run(self, root: &Path) -> anyhow::Result<()> {
        let sh = Shell::new()?;
        sh.change_dir(root);
        let engine = match (self.engine, self.dry_run) {
            (Some(engine), true) => engine,
            (None, true) => Engine::Docker,
            (requested, false) => choose_engine(requested, probe).map_err(anyhow::Error::msg)?,
        };
        let metadata = cmd!(sh, "cargo metadata --no-deps --format-version 1")
            .quiet()
            .read()
            .context("running cargo metadata for the workspace version")?;
        let version = package_version(&metadata, VERSION_PACKAGE)?;
        let revision = revision(&sh)?;
        let plan = self.plan(engine, &version, &revision)?;
        if self.dry_run {
            for line in plan.dry_run() {
                println!("{line}");
            }
            return Ok(());
        }
        let out = root.join(OUT_DIR);
        std::fs::create_dir_all(&out).with_context(|| format!("creating {}", out.display()))?;
        // A digest file left by an earlier run must not pass for this run's push.
        for push in &plan.pushes {
            let file = root.join(&push.file);
            if file.exists() {
                std::fs::remove_file(&file).with_context(|| format!("removing {}", file.display()))?;
            }
        }
        for step in &plan.steps {
            sh.cmd(&step.program)
                .args(&step.args)
                .run()
                .with_context(|| format!("`{step}` failed"))?;
        }
        if plan.pushes.is_empty() {
            return Ok(());
        }
        let mut pushed = Vec::new();
        for push in &plan.pushes {
            let text = std::fs::read_to_string(root.join(&push.file))
                .with_context(|| format!("reading the digest of {} from {}", push.image, push.file))?;
            pushed.push(digests::Pushed {
                name: push.component.name().into(),
                repository: push.repository.clone(),
                tag: push.tag.clone(),
                digest: digests::parse(push.format, &push.file, &text)?,
            });
        }
        let file = root.join(DIGESTS_FILE);
        std::fs::write(&file, digests::render(&pushed)).with_context(|| format!("writing {}", file.display()))?;
        for image in &pushed {
            println!("pushed {}", image.pinned());
        }
        println!("digests written to {DIGESTS_FILE}");
        Ok(())
    }

    /// The plan for these flags, after checking them.
    fn plan(&self, engine: Engine, version: &str, revision: &str) -> anyhow::Result<Plan> {
        let tag = self.tag.as_deref().unwrap_or(version);
        check_tag(tag)?;
        check_registry(&self.registry)?;
        let components = if self.components.is_empty() {
            Component::ALL.to_vec()
        } else {
            self.components.clone()
        };
        let input = PlanInput {
            engine,
            registry: &self.registry,
            tag,
            version,
            revision,
            components: &components,
            push: self.push,
        };
        Ok(Plan {
            steps: plan(&input),
            pushes: pushes(&input),
        })
    }
}

/// `digests.json`, relative to the project root.
const DIGESTS_FILE: &str = "target/images/digests.json";

/// The commands, and where each push leaves its digest.
pub(crate) struct Plan {
    pub steps: Vec<Step>,
    pub pushes: Vec<Push>,
}

impl Plan {
    /// What `--dry-run` prints: the commands, then (with pushes) what happens to their digests.
    fn dry_run(&self) -> Vec<String> {
        let mut lines: Vec<String> = self.steps.iter().map(ToString::to_string).collect();
        if !self.pushes.is_empty() {
            let files: Vec<&str> = self.pushes.iter().map(|p| p.file.as_str()).collect();
            lines.push(format!(
                "# then the digests in {} are written to {DIGESTS_FILE}",
                files.join(" ")
            ));
        }
        lines
    }
}

/// One image push and the file its digest lands in.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct Push {
    pub component: Component,
    pub repository: String,
    pub tag: String,
    pub image: String,
    /// Relative to the project root.
    pub file: String,
    pub format: digests::DigestFormat,
}

/// The pushes a plan makes, in push order (empty without `push`).
pub(crate) fn pushes(input: &PlanInput<'_>) -> Vec<Push> {
    if !input.push {
        return Vec::new();
    }
    unique(input.components)
        .into_iter()
        .map(|component| {
            let (suffix, format) = match input.engine {
                Engine::Docker => ("metadata.json", digests::DigestFormat::BuildxMetadata),
                Engine::Podman => ("digest", digests::DigestFormat::DigestFile),
            };
            Push {
                component,
                repository: repository(input.registry, component),
                tag: input.tag.into(),
                image: image_ref(input.registry, component, input.tag),
                file: format!("{OUT_DIR}/{}.{suffix}", component.name()),
                format,
            }
        })
        .collect()
}

/// The components in the order given, once each.
fn unique(components: &[Component]) -> Vec<Component> {
    let mut once: Vec<Component> = Vec::new();
    for component in components {
        if !once.contains(component) {
            once.push(*component);
        }
    }
    once
}

/// Everything a plan depends on.
pub(crate) struct PlanInput<'a> {
    pub engine: Engine,
    pub registry: &'a str,
    pub tag: &'a str,
    pub version: &'a str,
    pub revision: &'a str,
    pub components: &'a [Component],
    pub push: bool,
}

/// One command to run from the project root.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct Step {
    pub program: String,
    pub args: Vec<String>,
}

impl fmt::Display for Step {
    /// The command as a POSIX shell would need it typed.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&shell_quote(&self.program))?;
        for arg in &self.args {
            write!(f, " {}", shell_quote(arg))?;
        }
        Ok(())
    }
}

/// Every build, then (with `push`) every push: a failing build never leaves a half-pushed set.
/// Components are built in the order given, once each.
///
/// Docker pushes by building again with `buildx build --push` (every layer is cached by then):
/// only a build can attach the SBOM and provenance attestations, and `--metadata-file` records the
/// pushed digest. Podman has no attestations; `push --digestfile` records the digest.
pub(crate) fn plan(input: &PlanInput<'_>) -> Vec<Step> {
    let program = input.engine.program().to_string();
    let build_args = |component: Component| -> Vec<String> {
        [
            "--target",
            component.name(),
            "-t",
            &image_ref(input.registry, component, input.tag),
            "--build-arg",
            &format!("VERSION={}", input.version),
            "--build-arg",
            &format!("REVISION={}", input.revision),
        ]
        .map(String::from)
        .to_vec()
    };
    let context = [String::from("-f"), DOCKERFILE.into(), ".".into()];
    let mut steps: Vec<Step> = unique(input.components)
        .into_iter()
        .map(|component| Step {
            program: program.clone(),
            args: std::iter::once("build".to_string())
                .chain(build_args(component))
                .chain(context.clone())
                .collect(),
        })
        .collect();
    steps.extend(pushes(input).into_iter().map(|push| {
        let args = match input.engine {
            Engine::Docker => ["buildx", "build"]
                .map(String::from)
                .into_iter()
                .chain(build_args(push.component))
                .chain(
                    [
                        "--sbom=true",
                        "--provenance=mode=max",
                        "--metadata-file",
                        &push.file,
                        "--push",
                    ]
                    .map(String::from),
                )
                .chain(context.clone())
                .collect(),
            Engine::Podman => ["push", "--digestfile", &push.file, &push.image]
                .map(String::from)
                .to_vec(),
        };
        Step {
            program: program.clone(),
            args,
        }
    }));
    steps
}

/// The engine to use, or one message saying what was looked for and what is missing.
pub(crate) fn choose_engine(requested: Option<Engine>, probe: impl Fn(Engine) -> Probe) -> Result<Engine, String> {
    let candidates: Vec<Engine> = match requested {
        Some(engine) => vec![engine],
        None => Engine::ALL.to_vec(),
    };
    let mut findings = Vec::new();
    for engine in candidates {
        let name = engine.program();
        match probe(engine) {
            Probe::Ready => return Ok(engine),
            Probe::NotFound => findings.push(format!("{name} not found")),
            Probe::Unreachable if engine == Engine::Docker => findings.push(format!(
                "{name} is installed but its daemon is not reachable (`{name} info` failed)"
            )),
            Probe::Unreachable => findings.push(format!("{name} is installed but `{name} info` failed")),
        }
    }
    let what = match requested {
        Some(engine) => format!("--engine {}", engine.program()),
        None => "no container engine".into(),
    };
    Err(format!(
        "{what}: {}. Install one, or use --dry-run to see the commands",
        findings.join("; ")
    ))
}

/// Looks for `engine` on this machine: a client that is missing or whose `info` fails is no engine.
pub(crate) fn probe(engine: Engine) -> Probe {
    let status = Command::new(engine.program())
        .arg("info")
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status();
    match status {
        Ok(status) if status.success() => Probe::Ready,
        Ok(_) => Probe::Unreachable,
        Err(err) if err.kind() == std::io::ErrorKind::NotFound => Probe::NotFound,
        // Found but not runnable (permissions, …): as useless as an unreachable daemon.
        Err(_) => Probe::Unreachable,
    }
}

/// The version of `package` from `cargo metadata --format-version 1` output.
fn package_version(metadata: &str, package: &str) -> anyhow::Result<String> {
    let metadata: serde_json::Value = serde_json::from_str(metadata).context("parsing cargo metadata output")?;
    metadata["packages"]
        .as_array()
        .into_iter()
        .flatten()
        .find(|p| p["name"] == package)
        .and_then(|p| p["version"].as_str())
        .map(String::from)
        .with_context(|| format!("cargo metadata lists no package `{package}` with a version"))
}

/// `git rev-parse HEAD`, with `-dirty` when the work tree differs from it (untracked files count:
/// they are in the build context too).
fn revision(sh: &Shell) -> anyhow::Result<String> {
    let head = cmd!(sh, "git rev-parse HEAD")
        .quiet()
        .read()
        .context("`git rev-parse HEAD` failed: the image revision label comes from git")?;
    let status = cmd!(sh, "git status --porcelain")
        .quiet()
        .read()
        .context("`git status --porcelain` failed")?;
    Ok(with_dirty(&head, &status))
}

fn with_dirty(head: &str, porcelain_status: &str) -> String {
    let head = head.trim();
    if porcelain_status.trim().is_empty() {
        head.to_string()
    } else {
        format!("{head}-dirty")
    }
}

/// Docker's tag grammar: `[A-Za-z0-9_][A-Za-z0-9_.-]{0,127}`.
fn check_tag(tag: &str) -> anyhow::Result<()> {
    let mut chars = tag.chars();
    let first_ok = chars.next().is_some_and(|c| c.is_ascii_alphanumeric() || c == '_');
    let rest_ok = chars.all(|c| c.is_ascii_alphanumeric() || matches!(c, '_' | '.' | '-'));
    if !first_ok || !rest_ok || tag.len() > 128 {
        bail!(
            "--tag {tag:?} is not a valid image tag (letters, digits, `_`, `.`, `-`; not starting with `.` or \
             `-`; at most 128 characters)"
        );
    }
    Ok(())
}

fn check_registry(registry: &str) -> anyhow::Result<()> {
    let trimmed = registry.trim_end_matches('/');
    if trimmed.is_empty() || trimmed.ends_with(':') || trimmed.chars().any(char::is_whitespace) {
        bail!("--registry {registry:?} is not a registry name like `ghcr.io/faroshq` or `localhost:5000/faros`");
    }
    if trimmed.chars().any(|c| c.is_ascii_uppercase()) {
        bail!("--registry {registry:?}: image names must be lowercase");
    }
    Ok(())
}

/// Leaves words made of shell-safe characters alone, single-quotes everything else.
pub(crate) fn shell_quote(word: &str) -> String {
    let safe = !word.is_empty()
        && word.chars().all(|c| {
            c.is_ascii_alphanumeric() || matches!(c, '_' | '-' | '.' | '/' | ':' | '=' | '@' | '%' | '+' | ',')
        });
    if safe {
        word.to_string()
    } else {
        format!("'{}'", word.replace('\'', r"'\''"))
    }
}

#[cfg(test)]
mod tests {
    use std::collections::{BTreeMap, BTreeSet};

    use clap::Parser;

    use super::*;

    const REV: &str = "0123456789abcdef0123456789abcdef01234567";

    fn lines(steps: &[Step]) -> Vec<String> {
        steps.iter().map(ToString::to_string).collect()
    }

    fn build(engine: &str, component: &str, image: &str, version: &str, revision: &str) -> String {
        format!(
            "{engine} build --target {component} -t {image} --build-arg VERSION={version} --build-arg \
             REVISION={revision} -f Dockerfile ."
        )
    }

    fn buildx_push(component: &str, image: &str, version: &str, revision: &str) -> String {
        format!(
            "docker buildx build --target {component} -t {image} --build-arg VERSION={version} --build-arg \
             REVISION={revision} --sbom=true --provenance=mode=max --metadata-file \
             target/images/{component}.metadata.json --push -f Dockerfile ."
        )
    }

    #[test]
    fn plans() {
        struct Case {
            name: &'static str,
            input: PlanInput<'static>,
            want: Vec<String>,
        }
        let all = &Component::ALL;
        let cases = [
            Case {
                name: "defaults",
                input: PlanInput {
                    engine: Engine::Docker,
                    registry: DEFAULT_REGISTRY,
                    tag: "0.1.0",
                    version: "0.1.0",
                    revision: REV,
                    components: all,
                    push: false,
                },
                want: vec![
                    build("docker", "faros-kcp", "ghcr.io/faroshq/faros-kcp:0.1.0", "0.1.0", REV),
                    build(
                        "docker",
                        "faros-hub-api",
                        "ghcr.io/faroshq/faros-hub-api:0.1.0",
                        "0.1.0",
                        REV,
                    ),
                    build(
                        "docker",
                        "faros-hub-reconciler",
                        "ghcr.io/faroshq/faros-hub-reconciler:0.1.0",
                        "0.1.0",
                        REV,
                    ),
                    build(
                        "docker",
                        "faros-provider-quickstart",
                        "ghcr.io/faroshq/faros-provider-quickstart:0.1.0",
                        "0.1.0",
                        REV,
                    ),
                ],
            },
            Case {
                name: "registry, tag and push: every build first, then every push",
                input: PlanInput {
                    engine: Engine::Docker,
                    registry: "localhost:5000/faros/",
                    tag: "dev",
                    version: "0.1.0",
                    revision: "abc-dirty",
                    components: all,
                    push: true,
                },
                want: vec![
                    build(
                        "docker",
                        "faros-kcp",
                        "localhost:5000/faros/faros-kcp:dev",
                        "0.1.0",
                        "abc-dirty",
                    ),
                    build(
                        "docker",
                        "faros-hub-api",
                        "localhost:5000/faros/faros-hub-api:dev",
                        "0.1.0",
                        "abc-dirty",
                    ),
                    build(
                        "docker",
                        "faros-hub-reconciler",
                        "localhost:5000/faros/faros-hub-reconciler:dev",
                        "0.1.0",
                        "abc-dirty",
                    ),
                    build(
                        "docker",
                        "faros-provider-quickstart",
                        "localhost:5000/faros/faros-provider-quickstart:dev",
                        "0.1.0",
                        "abc-dirty",
                    ),
                    buildx_push("faros-kcp", "localhost:5000/faros/faros-kcp:dev", "0.1.0", "abc-dirty"),
                    buildx_push(
                        "faros-hub-api",
                        "localhost:5000/faros/faros-hub-api:dev",
                        "0.1.0",
                        "abc-dirty",
                    ),
                    buildx_push(
                        "faros-hub-reconciler",
                        "localhost:5000/faros/faros-hub-reconciler:dev",
                        "0.1.0",
                        "abc-dirty",
                    ),
                    buildx_push(
                        "faros-provider-quickstart",
                        "localhost:5000/faros/faros-provider-quickstart:dev",
                        "0.1.0",
                        "abc-dirty",
                    ),
                ],
            },
            Case {
                name: "podman, a subset in the order given, duplicates once",
                input: PlanInput {
                    engine: Engine::Podman,
                    registry: DEFAULT_REGISTRY,
                    tag: "0.1.0",
                    version: "0.1.0",
                    revision: REV,
                    components: &[
                        Component::ProviderQuickstart,
                        Component::Kcp,
                        Component::ProviderQuickstart,
                    ],
                    push: true,
                },
                want: vec![
                    build(
                        "podman",
                        "faros-provider-quickstart",
                        "ghcr.io/faroshq/faros-provider-quickstart:0.1.0",
                        "0.1.0",
                        REV,
                    ),
                    build("podman", "faros-kcp", "ghcr.io/faroshq/faros-kcp:0.1.0", "0.1.0", REV),
                    "podman push --digestfile target/images/faros-provider-quickstart.digest \
                     ghcr.io/faroshq/faros-provider-quickstart:0.1.0"
                        .into(),
                    "podman push --digestfile target/images/faros-kcp.digest ghcr.io/faroshq/faros-kcp:0.1.0".into(),
                ],
            },
            Case {
                name: "a version needing quotes is quoted",
                input: PlanInput {
                    engine: Engine::Docker,
                    registry: DEFAULT_REGISTRY,
                    tag: "x",
                    version: "0.1.0 it's",
                    revision: REV,
                    components: &[Component::Kcp],
                    push: false,
                },
                want: vec![format!(
                    "docker build --target faros-kcp -t ghcr.io/faroshq/faros-kcp:x --build-arg 'VERSION=0.1.0 \
                     it'\\''s' --build-arg REVISION={REV} -f Dockerfile ."
                )],
            },
        ];
        for case in cases {
            assert_eq!(lines(&plan(&case.input)), case.want, "{}", case.name);
        }
    }

    /// `cargo xtask images`' own command line: the subcommand the crate root's `Cli` holds (its
    /// `images` variant is this same [`Images`]; the root is above this module, so the test
    /// declares that one subcommand itself).
    #[derive(clap::Parser)]
    #[command(name = "cargo xtask")]
    enum Xtask {
        Images(Images),
    }

    /// The real `images` flags, parsed by clap as `cargo xtask images` parses them, planned without
    /// an engine: what `--dry-run` prints.
    fn cli_plan(args: &[&str], engine: Engine) -> anyhow::Result<Vec<String>> {
        let argv = ["cargo xtask", "images"].iter().chain(args);
        let Xtask::Images(images) = Xtask::try_parse_from(argv)?;
        Ok(images.plan(engine, "0.1.0", REV)?.dry_run())
    }

    #[test]
    fn cli_dry_run_defaults_and_flags() {
        let defaults = cli_plan(&["--dry-run"], Engine::Docker).unwrap();
        let expected = plan(&PlanInput {
            engine: Engine::Docker,
            registry: DEFAULT_REGISTRY,
            tag: "0.1.0",
            version: "0.1.0",
            revision: REV,
            components: &Component::ALL,
            push: false,
        });
        assert_eq!(defaults, lines(&expected));

        let flags = cli_plan(
            &[
                "--dry-run",
                "--engine",
                "podman",
                "--registry",
                "quay.io/me",
                "--tag",
                "v1_rc.2",
                "--push",
                "--component",
                "faros-hub-api",
            ],
            Engine::Podman,
        )
        .unwrap();
        assert_eq!(
            flags,
            [
                build(
                    "podman",
                    "faros-hub-api",
                    "quay.io/me/faros-hub-api:v1_rc.2",
                    "0.1.0",
                    REV
                ),
                "podman push --digestfile target/images/faros-hub-api.digest quay.io/me/faros-hub-api:v1_rc.2".into(),
                "# then the digests in target/images/faros-hub-api.digest are written to \
                 target/images/digests.json"
                    .into(),
            ]
        );

        let docker_push = cli_plan(
            &[
                "--dry-run",
                "--push",
                "--component",
                "faros-kcp",
                "--component",
                "faros-hub-api",
            ],
            Engine::Docker,
        )
        .unwrap();
        assert_eq!(
            docker_push,
            [
                build("docker", "faros-kcp", "ghcr.io/faroshq/faros-kcp:0.1.0", "0.1.0", REV),
                build(
                    "docker",
                    "faros-hub-api",
                    "ghcr.io/faroshq/faros-hub-api:0.1.0",
                    "0.1.0",
                    REV
                ),
                buildx_push("faros-kcp", "ghcr.io/faroshq/faros-kcp:0.1.0", "0.1.0", REV),
                buildx_push("faros-hub-api", "ghcr.io/faroshq/faros-hub-api:0.1.0", "0.1.0", REV),
                "# then the digests in target/images/faros-kcp.metadata.json \
                 target/images/faros-hub-api.metadata.json are written to target/images/digests.json"
                    .into(),
            ]
        );
    }

    #[test]
    fn pushes_record_where_each_digest_lands() {
        let input = PlanInput {
            engine: Engine::Podman,
            registry: "localhost:5000/",
            tag: "dev",
            version: "0.1.0",
            revision: REV,
            components: &[Component::HubApi],
            push: true,
        };
        assert_eq!(
            pushes(&input),
            [Push {
                component: Component::HubApi,
                repository: "localhost:5000/faros-hub-api".into(),
                tag: "dev".into(),
                image: "localhost:5000/faros-hub-api:dev".into(),
                file: "target/images/faros-hub-api.digest".into(),
                format: digests::DigestFormat::DigestFile,
            }]
        );
        assert!(pushes(&PlanInput { push: false, ..input }).is_empty());
        // The digest files stay out of the build context, so writing them never invalidates it.
        let ignore = std::fs::read_to_string(crate::locate::project_root().join(".dockerignore")).unwrap();
        assert!(OUT_DIR.starts_with("target/") && ignore.lines().any(|l| l == "target/"));
    }

    #[test]
    fn cli_rejects_bad_flags_by_name() {
        for (args, needle) in [
            (&["--tag=-x"][..], "--tag"),
            (&["--tag", "a/b"][..], "--tag"),
            (&["--registry", ""][..], "--registry"),
            (&["--registry", "Ghcr.io/x"][..], "lowercase"),
            (&["--registry", "a b"][..], "--registry"),
        ] {
            let err = cli_plan(args, Engine::Docker).unwrap_err().to_string();
            assert!(err.contains(needle), "{args:?}: {err}");
        }
        assert!(cli_plan(&["--component", "faros"], Engine::Docker).is_err());
        assert!(cli_plan(&["--engine", "nerdctl"], Engine::Docker).is_err());
    }

    #[test]
    fn component_names_are_their_cli_values() {
        for component in Component::ALL {
            let value = component.to_possible_value().unwrap();
            assert_eq!(value.get_name(), component.name());
        }
        assert_eq!(Component::value_variants(), Component::ALL);
        assert_eq!(
            image_ref("ghcr.io/faroshq/", Component::Kcp, "0.1.0"),
            "ghcr.io/faroshq/faros-kcp:0.1.0"
        );
    }

    #[test]
    fn engine_choice() {
        use Probe::*;
        let machine = |docker: Probe, podman: Probe| {
            move |engine: Engine| match engine {
                Engine::Docker => docker,
                Engine::Podman => podman,
            }
        };
        assert_eq!(choose_engine(None, machine(Ready, Ready)), Ok(Engine::Docker));
        assert_eq!(choose_engine(None, machine(Unreachable, Ready)), Ok(Engine::Podman));
        assert_eq!(choose_engine(None, machine(NotFound, Ready)), Ok(Engine::Podman));
        assert_eq!(
            choose_engine(Some(Engine::Podman), machine(Ready, Ready)),
            Ok(Engine::Podman)
        );
        assert_eq!(
            choose_engine(None, machine(Unreachable, NotFound)),
            Err(
                "no container engine: docker is installed but its daemon is not reachable (`docker info` failed); \
                 podman not found. Install one, or use --dry-run to see the commands"
                    .into()
            )
        );
        assert_eq!(
            choose_engine(None, machine(NotFound, Unreachable)),
            Err(
                "no container engine: docker not found; podman is installed but `podman info` failed. Install one, \
                 or use --dry-run to see the commands"
                    .into()
            )
        );
        assert_eq!(
            choose_engine(Some(Engine::Docker), machine(Unreachable, Ready)),
            Err(
                "--engine docker: docker is installed but its daemon is not reachable (`docker info` failed). \
                 Install one, or use --dry-run to see the commands"
                    .into()
            )
        );
    }

    #[test]
    fn revision_and_version_inputs() {
        assert_eq!(with_dirty("abc\n", ""), "abc");
        assert_eq!(with_dirty("abc\n", "?? new-file\n"), "abc-dirty");
        let metadata = r#"{"packages":[{"name":"xtask","version":"9.9.9"},{"name":"faros","version":"0.1.0"}]}"#;
        assert_eq!(package_version(metadata, "faros").unwrap(), "0.1.0");
        let err = package_version(metadata, "nope").unwrap_err().to_string();
        assert!(err.contains("`nope`"), "{err}");
    }

    /// The default tag really is the `faros` package's version as its manifest states it.
    #[test]
    fn default_version_is_the_faros_package_version() {
        let root = crate::locate::project_root();
        let sh = Shell::new().unwrap();
        sh.change_dir(&root);
        let metadata = cmd!(sh, "cargo metadata --no-deps --format-version 1")
            .quiet()
            .read()
            .unwrap();
        let version = package_version(&metadata, VERSION_PACKAGE).unwrap();
        let manifest = std::fs::read_to_string(root.join("crates/faros/Cargo.toml")).unwrap();
        assert!(manifest.contains(&format!("version = \"{version}\"")), "{version}");
    }

    // ---------------------------------------------------------------------------------------
    // The Dockerfile, read as text: it and the component list above must not drift apart.
    // ---------------------------------------------------------------------------------------

    struct Stage {
        name: String,
        base: String,
        /// (instruction in upper case, the rest of the logical line)
        instructions: Vec<(String, String)>,
    }

    impl Stage {
        fn all(&self, keyword: &str) -> impl Iterator<Item = &str> {
            self.instructions
                .iter()
                .filter(move |(k, _)| k == keyword)
                .map(|(_, rest)| rest.as_str())
        }
    }

    struct Dockerfile {
        /// ARGs before the first FROM.
        global_args: Vec<String>,
        stages: Vec<Stage>,
    }

    impl Dockerfile {
        fn parse(text: &str) -> Self {
            let mut logical = Vec::new();
            let mut current = String::new();
            for line in text.lines() {
                let trimmed = line.trim();
                if trimmed.starts_with('#') || trimmed.is_empty() && current.is_empty() {
                    continue;
                }
                match trimmed.strip_suffix('\\') {
                    Some(part) => {
                        current.push_str(part);
                        current.push(' ');
                    }
                    None => {
                        current.push_str(trimmed);
                        logical.push(std::mem::take(&mut current));
                    }
                }
            }
            let mut file = Dockerfile {
                global_args: Vec::new(),
                stages: Vec::new(),
            };
            for line in logical {
                let (keyword, rest) = line.split_once(char::is_whitespace).unwrap_or((&line, ""));
                let (keyword, rest) = (keyword.to_ascii_uppercase(), rest.trim().to_string());
                if keyword == "FROM" {
                    let words: Vec<&str> = rest.split_whitespace().collect();
                    let name = match words.as_slice() {
                        [_, as_, name] if as_.eq_ignore_ascii_case("as") => name.to_string(),
                        _ => panic!("every stage is named: FROM {rest}"),
                    };
                    file.stages.push(Stage {
                        name,
                        base: words[0].to_string(),
                        instructions: Vec::new(),
                    });
                } else if let Some(stage) = file.stages.last_mut() {
                    stage.instructions.push((keyword, rest));
                } else {
                    assert_eq!(keyword, "ARG", "only ARG may precede the first FROM");
                    file.global_args.push(rest);
                }
            }
            file
        }

        fn stage(&self, name: &str) -> Option<&Stage> {
            self.stages.iter().find(|s| s.name == name)
        }

        /// The stage and the stages it is built FROM, nearest first.
        fn chain(&self, name: &str) -> Vec<&Stage> {
            let mut chain = Vec::new();
            let mut next = self.stage(name);
            while let Some(stage) = next {
                chain.push(stage);
                next = self.stage(&stage.base);
            }
            chain
        }
    }

    /// `a="x y" b=z` into pairs (LABEL, ENV).
    fn pairs(rest: &str) -> Vec<(String, String)> {
        let mut words = Vec::new();
        let (mut word, mut quoted) = (String::new(), false);
        for c in rest.chars() {
            match c {
                '"' => quoted = !quoted,
                c if c.is_whitespace() && !quoted => {
                    if !word.is_empty() {
                        words.push(std::mem::take(&mut word));
                    }
                }
                c => word.push(c),
            }
        }
        if !word.is_empty() {
            words.push(word);
        }
        words
            .into_iter()
            .map(|w| {
                let (k, v) = w.split_once('=').unwrap_or_else(|| panic!("not key=value: {w}"));
                (k.to_string(), v.to_string())
            })
            .collect()
    }

    fn dockerfile() -> Dockerfile {
        let text = std::fs::read_to_string(crate::locate::project_root().join(DOCKERFILE)).unwrap();
        Dockerfile::parse(&text)
    }

    /// The Cargo package whose binary the image runs (built by the Dockerfile's builder stage).
    fn package(component: Component) -> &'static str {
        match component {
            Component::Kcp => "faros",
            Component::HubApi => "faros-hub-api",
            Component::HubReconciler => "faros-hub-reconciler",
            Component::ProviderQuickstart => "faros-provider-quickstart",
        }
    }

    /// What each image runs; the binaries are named by the crates' `[[bin]]` (or package) names.
    fn entrypoint(component: Component) -> Vec<&'static str> {
        match component {
            Component::Kcp => vec!["/usr/local/bin/faros", "kcp"],
            Component::HubApi => vec!["/usr/local/bin/faros-hub-api"],
            Component::HubReconciler => vec!["/usr/local/bin/faros-hub-reconciler"],
            Component::ProviderQuickstart => vec!["/usr/local/bin/faros-provider-quickstart"],
        }
    }

    #[test]
    fn dockerfile_has_a_hardened_labelled_target_per_component() {
        let file = dockerfile();
        let root = crate::locate::project_root();
        let builder = file.stage("builder").expect("a `builder` stage");
        let build = builder.all("RUN").collect::<Vec<_>>().join(" ");
        assert!(
            build.contains("cargo auditable build --profile image --locked"),
            "{build}"
        );

        for component in Component::ALL {
            let name = component.name();
            let stage = file
                .stage(name)
                .unwrap_or_else(|| panic!("no `FROM … AS {name}` in the Dockerfile"));
            let chain = file.chain(name);

            // One cargo build makes every binary.
            assert!(
                build.contains(&format!("-p {}", package(component))),
                "{name}: package not built"
            );

            // Runs as the distroless non-root user.
            let user = chain.iter().find_map(|s| s.all("USER").last());
            assert_eq!(user, Some("65532:65532"), "{name}: USER");

            // OCI labels, the nearest stage winning as in the engine.
            let mut labels = BTreeMap::new();
            for s in chain.iter().rev() {
                labels.extend(s.all("LABEL").flat_map(pairs));
            }
            let label = |key: &str| {
                labels
                    .get(&format!("org.opencontainers.image.{key}"))
                    .map(String::as_str)
            };
            assert_eq!(label("title"), Some(name), "{name}: title");
            assert_eq!(label("licenses"), Some("Apache-2.0"), "{name}: licenses");
            assert_eq!(label("version"), Some("${VERSION}"), "{name}: version");
            assert_eq!(label("revision"), Some("${REVISION}"), "{name}: revision");
            assert!(
                label("source").is_some_and(|s| s.starts_with("https://")),
                "{name}: source"
            );
            assert!(
                label("description").is_some_and(|d| !d.is_empty()),
                "{name}: description"
            );
            // ${VERSION} and ${REVISION} are empty unless the stage using them declares the ARG.
            for arg in ["VERSION", "REVISION"] {
                let using = chain
                    .iter()
                    .find(|s| s.all("LABEL").any(|l| l.contains(&format!("${{{arg}}}"))))
                    .unwrap();
                assert!(
                    using.all("ARG").any(|a| a.split('=').next() == Some(arg)),
                    "{name}: stage `{}` uses ${{{arg}}} without ARG {arg}",
                    using.name
                );
            }

            // The entrypoint, and the binary it names is copied out of the builder.
            let entry: Vec<String> = serde_json::from_str(stage.all("ENTRYPOINT").last().unwrap()).unwrap();
            assert_eq!(entry, entrypoint(component), "{name}: ENTRYPOINT");
            let copied = stage.all("COPY").any(|c| {
                let words: Vec<&str> = c.split_whitespace().collect();
                words.first() == Some(&"--from=builder") && words.last() == Some(&entry[0].as_str())
            });
            assert!(copied, "{name}: {} is not copied from the builder", entry[0]);
            let bin = entry[0].rsplit('/').next().unwrap();
            assert!(
                build.contains(&format!("target/image/{bin}")),
                "{name}: {bin} not copied to /out"
            );

            // Built on the pinned runtime base.
            let base = &chain.last().unwrap().base;
            assert_eq!(base, "${RUNTIME_IMAGE}", "{name}: base");

            // Every file copied from the context exists.
            for s in &chain {
                for copy in s.all("COPY").filter(|c| !c.starts_with("--from=")) {
                    let words: Vec<&str> = copy.split_whitespace().collect();
                    for src in &words[..words.len() - 1] {
                        let src = Path::new(src);
                        let exists = match src.file_name().and_then(|f| f.to_str()) {
                            Some(pattern) if pattern.starts_with("*.") => {
                                std::fs::read_dir(root.join(src.parent().unwrap()))
                                    .unwrap()
                                    .any(|e| e.unwrap().file_name().to_string_lossy().ends_with(&pattern[1..]))
                            }
                            _ => root.join(src).exists(),
                        };
                        assert!(exists, "{name}: COPY {} matches nothing", src.display());
                    }
                }
            }
        }

        // No target is built that the xtask does not know about.
        for stage in &file.stages {
            let known = ["builder", "runtime"].contains(&stage.name.as_str())
                || Component::ALL.iter().any(|c| c.name() == stage.name);
            assert!(known, "Dockerfile stage `{}` is not in Component::ALL", stage.name);
        }

        // Both bases pinned by tag.
        for arg in ["RUST_IMAGE", "RUNTIME_IMAGE"] {
            let value = file
                .global_args
                .iter()
                .find_map(|a| a.strip_prefix(&format!("{arg}=")))
                .unwrap_or_else(|| panic!("no global ARG {arg}=…"));
            let tag = value.rsplit_once(':').map(|(_, tag)| tag);
            assert!(tag.is_some_and(|t| t != "latest"), "{arg}={value} is not pinned by tag");
        }
    }

    /// Every workspace member's manifest, relative to `root`, from `cargo metadata --no-deps`.
    fn workspace_manifests(metadata: &str, root: &str) -> BTreeSet<String> {
        let metadata: serde_json::Value = serde_json::from_str(metadata).unwrap();
        let members: Vec<&str> = metadata["workspace_members"]
            .as_array()
            .unwrap()
            .iter()
            .filter_map(|m| m.as_str())
            .collect();
        metadata["packages"]
            .as_array()
            .unwrap()
            .iter()
            .filter(|p| members.contains(&p["id"].as_str().unwrap_or_default()))
            .map(|p| {
                let path = p["manifest_path"].as_str().unwrap();
                let relative = path.strip_prefix(root).unwrap_or(path);
                relative.trim_start_matches('/').to_string()
            })
            .collect()
    }

    /// (source, destination) of COPY instructions.
    type Copies = Vec<(String, String)>;

    /// The dependency layer's manifest COPYs: (source, destination) before the first `COPY . .`.
    fn dependency_layer(stage: &Stage) -> Copies {
        stage
            .instructions
            .iter()
            .take_while(|(k, rest)| !(k == "COPY" && rest == ". ."))
            .filter(|(k, _)| k == "COPY")
            .flat_map(|(_, rest)| {
                let words: Vec<&str> = rest.split_whitespace().collect();
                let (dest, sources) = words.split_last().unwrap();
                sources
                    .iter()
                    .map(|s| (s.to_string(), dest.to_string()))
                    .collect::<Vec<_>>()
            })
            .collect()
    }

    /// What the dependency layer copies that is not a workspace manifest in place, and what it
    /// misses (`Cargo.lock` and the root manifest included).
    fn layer_problems(copies: &[(String, String)], manifests: &BTreeSet<String>) -> Vec<String> {
        let mut problems = Vec::new();
        let mut copied = BTreeSet::new();
        for (source, dest) in copies {
            let dir = source.rsplit_once('/').map_or("./", |(dir, _)| dir);
            let in_place = dest.trim_end_matches('/') == dir.trim_end_matches('/') || (dest == "./" && dir == "./");
            if !in_place {
                problems.push(format!(
                    "COPY {source} lands in {dest}, not beside where cargo looks for it"
                ));
            }
            copied.insert(source.clone());
        }
        for needed in manifests.iter().map(String::as_str).chain(["Cargo.lock"]) {
            if !copied.contains(needed) {
                problems.push(format!("{needed} is not copied into the dependency layer"));
            }
        }
        for source in &copied {
            if source != "Cargo.lock" && !manifests.contains(source) {
                problems.push(format!("{source} is not a workspace manifest"));
            }
        }
        problems
    }

    #[test]
    fn dependency_layer_problems() {
        let manifests: BTreeSet<String> = ["Cargo.toml", "crates/a/Cargo.toml", "xtask/Cargo.toml"]
            .map(String::from)
            .into();
        let copies =
            |pairs: &[(&str, &str)]| -> Copies { pairs.iter().map(|(s, d)| (s.to_string(), d.to_string())).collect() };
        let all = [
            ("Cargo.toml", "./"),
            ("Cargo.lock", "./"),
            ("crates/a/Cargo.toml", "crates/a/"),
            ("xtask/Cargo.toml", "xtask/"),
        ];
        let cases: [(&str, Copies, Vec<&str>); 4] = [
            ("complete", copies(&all), vec![]),
            (
                "a new crate",
                copies(&all[..3]),
                vec!["xtask/Cargo.toml is not copied into the dependency layer"],
            ),
            (
                "flattened by a wrong destination, and no lock file",
                copies(&[
                    ("Cargo.toml", "./"),
                    ("crates/a/Cargo.toml", "crates/"),
                    ("xtask/Cargo.toml", "xtask"),
                ]),
                vec![
                    "COPY crates/a/Cargo.toml lands in crates/, not beside where cargo looks for it",
                    "Cargo.lock is not copied into the dependency layer",
                ],
            ),
            (
                "a removed crate still copied",
                copies(&[&all[..], &[("crates/gone/Cargo.toml", "crates/gone/")]].concat()),
                vec!["crates/gone/Cargo.toml is not a workspace manifest"],
            ),
        ];
        for (name, copies, want) in cases {
            assert_eq!(layer_problems(&copies, &manifests), want, "{name}");
        }
    }

    /// A new workspace member cannot silently fall out of the dependency layer (cargo would refuse
    /// the workspace there), and the layer is built before the sources are copied.
    #[test]
    fn dependency_layer_copies_every_workspace_manifest() {
        let root = crate::locate::project_root();
        let sh = Shell::new().unwrap();
        sh.change_dir(&root);
        let metadata = cmd!(sh, "cargo metadata --no-deps --format-version 1")
            .quiet()
            .read()
            .unwrap();
        let mut manifests = workspace_manifests(&metadata, root.to_str().unwrap());
        assert!(manifests.contains("crates/faros/Cargo.toml"), "{manifests:?}");
        manifests.insert("Cargo.toml".into()); // the workspace root, a virtual manifest
        let file = dockerfile();
        let builder = file.stage("builder").unwrap();
        let problems = layer_problems(&dependency_layer(builder), &manifests);
        assert!(problems.is_empty(), "{problems:#?}");

        // Order: the tool, the manifests, a build of them, then the sources and the real build.
        let order: Vec<&str> = builder
            .instructions
            .iter()
            .filter_map(|(k, rest)| match (k.as_str(), rest.as_str()) {
                ("RUN", r) if r.contains("cargo install --locked") => Some("install"),
                ("RUN", r) if r.contains("cargo auditable build") && r.contains("cp target/image/") => Some("build"),
                ("RUN", r) if r.contains("cargo auditable build") => Some("dependencies"),
                ("COPY", ". .") => Some("sources"),
                _ => None,
            })
            .collect();
        assert_eq!(order, ["install", "dependencies", "sources", "build"]);

        // cargo-auditable pinned to an exact version.
        let pinned = builder
            .all("ARG")
            .find_map(|a| a.strip_prefix("CARGO_AUDITABLE_VERSION="))
            .expect("ARG CARGO_AUDITABLE_VERSION=<version>");
        assert!(
            pinned.split('.').count() == 3 && pinned.split('.').all(|p| p.parse::<u32>().is_ok()),
            "{pinned}"
        );
        let install = builder.all("RUN").find(|r| r.contains("cargo install")).unwrap();
        assert!(
            install.contains("cargo-auditable@${CARGO_AUDITABLE_VERSION}"),
            "{install}"
        );
    }

    /// The profile the Dockerfile builds with exists and strips the binaries.
    #[test]
    fn image_profile_is_declared() {
        let manifest = std::fs::read_to_string(crate::locate::project_root().join("Cargo.toml")).unwrap();
        let section = manifest
            .split("\n[")
            .find(|s| s.starts_with("profile.image]"))
            .expect("[profile.image] in the workspace Cargo.toml");
        for line in ["inherits = \"release\"", "strip = \"symbols\""] {
            assert!(
                section.lines().any(|l| l.trim() == line),
                "[profile.image] lacks {line}"
            );
        }
    }

    #[test]
    fn quickstart_image_bakes_what_init_reads() {
        let file = dockerfile();
        let stage = file.stage(Component::ProviderQuickstart.name()).unwrap();
        let env: BTreeMap<String, String> = stage.all("ENV").flat_map(pairs).collect();
        let dests: Vec<&str> = stage
            .all("COPY")
            .filter(|c| !c.starts_with("--from="))
            .filter_map(|c| c.split_whitespace().last())
            .collect();
        let schemas = &env[faros_core::names::ENV_SCHEMAS_DIR];
        assert_eq!(schemas, faros_core::names::DEFAULT_SCHEMAS_DIR);
        assert!(dests.contains(&format!("{schemas}/").as_str()), "{dests:?}");
        let catalog_entry = &env[faros_core::names::ENV_CATALOGENTRY_FILE];
        assert_eq!(catalog_entry, faros_core::names::DEFAULT_CATALOGENTRY_FILE);
        assert!(dests.contains(&catalog_entry.as_str()), "{dests:?}");
    }

    #[test]
    fn dockerignore_keeps_build_output_and_state_out() {
        let text = std::fs::read_to_string(crate::locate::project_root().join(".dockerignore")).unwrap();
        let patterns: Vec<&str> = text.lines().map(str::trim).filter(|l| !l.starts_with('#')).collect();
        for needed in ["target/", ".faros/", ".git/", "*.redb", "**/node_modules/"] {
            assert!(patterns.contains(&needed), ".dockerignore lacks {needed}");
        }
        // The builder needs every workspace member.
        for kept in ["crates", "providers", "xtask", "e2e", "Cargo.lock"] {
            assert!(
                !patterns.iter().any(|p| p.trim_end_matches('/') == kept),
                "{kept} is ignored"
            );
        }
    }
}
