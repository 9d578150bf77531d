//! `faros provider new <name>`: a provider crate to start from — its API (schema, controller), a
//! backend route, an MCP tool, a UI element, `provider.yaml`, `manifest.yaml`, a Helm chart (the
//! quickstart chart, renamed) and tests — rendered from the minijinja templates in
//! `crates/faros/templates/provider/`, either in-tree (`providers/<name>` of a faros checkout, a
//! workspace member) or anywhere (a crate of its own that depends on the SDK).
//!
//! [`plan`] decides every file without IO (table-tested); [`write()`] refuses to overwrite.

use std::path::{Path, PathBuf};

use clap::Args;

/// `faros provider new` arguments.
#[derive(Args, Debug, Clone)]
pub struct NewArgs {
    /// The provider's name: a DNS label (lowercase letters, digits, `-`), e.g. `notes`.
    pub name: String,
    /// Where to create the crate. Default: `providers/<name>` when run at the root of a faros
    /// checkout (an in-tree workspace member), else `./<name>`.
    #[arg(long)]
    pub dir: Option<PathBuf>,
    /// The resource kind (default: from the name, `notes` → `Note`).
    #[arg(long)]
    pub kind: Option<String>,
    /// The `faros-sdk` dependency of an out-of-tree crate: a path to `crates/faros-sdk`, or a git
    /// URL. Default: this faros checkout's SDK when it exists, else the faros-rs repository.
    #[arg(long)]
    pub sdk: Option<String>,
    /// The vendor shown in the catalog.
    #[arg(long, default_value = "me")]
    pub vendor: String,
}

/// Errors scaffolding a provider.
#[derive(Debug, thiserror::Error)]
pub enum ScaffoldError {
    #[error(
        "provider name {0:?}: must be a DNS label of at most 40 characters: lowercase letters, digits and '-', starting with a letter"
    )]
    Name(String),
    #[error("kind {0:?}: must start with an uppercase letter and hold only letters and digits")]
    Kind(String),
    #[error("{0}: already exists; choose another --dir or remove it")]
    Exists(PathBuf),
    #[error("template {file}: {source}")]
    Template {
        file: &'static str,
        #[source]
        source: minijinja::Error,
    },
    #[error("{path}: {source}")]
    Io {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
}

/// What the templates see.
#[derive(Debug, Clone, serde::Serialize)]
pub struct Vars {
    pub name: String,
    pub title: String,
    pub crate_name: String,
    pub crate_ident: String,
    pub group: String,
    pub kind: String,
    pub singular: String,
    pub plural: String,
    pub plural_ident: String,
    pub module: String,
    pub env_prefix: String,
    /// The APIResourceSchema name prefix (`v<yymmdd>`), bumped whenever the schema changes.
    pub prefix: String,
    pub vendor: String,
    pub in_tree: bool,
    /// The right-hand side of `faros-sdk = …` in Cargo.toml.
    pub sdk_dep: String,
}

/// A template, the path it renders to (itself a template) and whether it is rendered (chart files
/// are Helm templates: they are copied with the quickstart names replaced instead).
struct Template {
    file: &'static str,
    out: &'static str,
    body: &'static str,
}

macro_rules! template {
    ($file:literal, $out:literal) => {
        Template {
            file: $file,
            out: $out,
            body: include_str!(concat!("../templates/provider/", $file)),
        }
    };
}

const TEMPLATES: &[Template] = &[
    template!("Cargo.toml.j2", "Cargo.toml"),
    template!("src/main.rs.j2", "src/main.rs"),
    template!("src/lib.rs.j2", "src/lib.rs"),
    template!("src/resource.rs.j2", "src/{{ module }}.rs"),
    template!("tests/backend.rs.j2", "tests/backend.rs"),
    template!("tests/chart_manifest.rs.j2", "tests/chart_manifest.rs"),
    template!("ui/main.js.j2", "ui/main.js"),
    template!("ui/icon.svg.j2", "ui/icon.svg"),
    template!("provider.yaml.j2", "provider.yaml"),
    template!("manifest.yaml.j2", "manifest.yaml"),
    template!(
        "schemas/schema.yaml.j2",
        "schemas/{{ prefix }}.{{ plural }}.{{ group }}.yaml"
    ),
    template!("Dockerfile.j2", "Dockerfile"),
    template!("gitignore.j2", ".gitignore"),
    // Out of tree only: in-tree crates use the workspace's.
    template!("rustfmt.toml.j2", "rustfmt.toml"),
];

macro_rules! chart {
    ($($file:literal),* $(,)?) => {
        &[$(($file, include_str!(concat!("../../../charts/faros-provider-quickstart/", $file)))),*]
    };
}

/// The quickstart chart, the template every provider chart copies (its generated
/// `files/manifest.yaml` is replaced by the new provider's manifest).
const CHART: &[(&str, &str)] = chart!(
    "Chart.yaml",
    "README.md",
    "values.yaml",
    "values.schema.json",
    "ci/default-values.yaml",
    "ci/custom-values.yaml",
    "templates/NOTES.txt",
    "templates/_helpers.tpl",
    "templates/configmap.yaml",
    "templates/deployment.yaml",
    "templates/service.yaml",
    "templates/serviceaccount.yaml",
);

/// Checks `name` and derives every variable; `sdk_dep` and `prefix` come from the caller (they
/// depend on where the crate goes and on the date).
pub fn vars(
    name: &str,
    kind: Option<&str>,
    vendor: &str,
    in_tree: bool,
    sdk_dep: &str,
    prefix: &str,
) -> Result<Vars, ScaffoldError> {
    let valid = name.len() <= 40
        && name.starts_with(|c: char| c.is_ascii_lowercase())
        && !name.ends_with('-')
        && name
            .chars()
            .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '-');
    if !valid {
        return Err(ScaffoldError::Name(name.into()));
    }
    let kind = match kind {
        Some(k) if k.starts_with(|c: char| c.is_ascii_uppercase()) && k.chars().all(|c| c.is_ascii_alphanumeric()) => {
            k.to_string()
        }
        Some(k) => return Err(ScaffoldError::Kind(k.into())),
        None => kind_of(name),
    };
    let singular = kind.to_lowercase();
    let plural = plural_of(&singular);
    Ok(Vars {
        title: name.split('-').map(capitalize).collect::<Vec<_>>().join(" "),
        crate_name: format!("faros-provider-{name}"),
        crate_ident: format!("faros_provider_{}", name.replace('-', "_")),
        group: format!("{name}.providers.faros.sh"),
        module: singular.clone(),
        plural_ident: plural.clone(),
        singular,
        plural,
        kind,
        env_prefix: name.to_uppercase().replace('-', "_"),
        prefix: prefix.into(),
        vendor: vendor.into(),
        in_tree,
        sdk_dep: sdk_dep.into(),
        name: name.into(),
    })
}

fn capitalize(word: &str) -> String {
    let mut chars = word.chars();
    chars
        .next()
        .map(|c| c.to_ascii_uppercase().to_string() + chars.as_str())
        .unwrap_or_default()
}

/// `notes` → `Note`, `my-app` → `MyApp`, `glass` → `Glass`.
fn kind_of(name: &str) -> String {
    let camel: String = name.split('-').map(capitalize).collect();
    match camel.strip_suffix('s') {
        Some(stem) if !stem.ends_with('s') && stem.len() > 1 => stem.to_string(),
        _ => camel,
    }
}

/// English plural of a lowercase kind, as Kubernetes resources are named.
fn plural_of(singular: &str) -> String {
    if let Some(stem) = singular.strip_suffix('y')
        && !stem.ends_with(['a', 'e', 'o', 'u'])
    {
        return format!("{stem}ies");
    }
    if singular.ends_with(['s', 'x']) || singular.ends_with("ch") || singular.ends_with("sh") {
        format!("{singular}es")
    } else {
        format!("{singular}s")
    }
}

/// Every file of the new crate, relative to its directory, with its content.
pub fn plan(vars: &Vars) -> Result<Vec<(PathBuf, String)>, ScaffoldError> {
    let mut env = minijinja::Environment::new();
    let syntax = minijinja::syntax::SyntaxConfig::builder()
        .keep_trailing_newline(true)
        .build()
        .map_err(|source| ScaffoldError::Template {
            file: "(syntax)",
            source,
        })?;
    env.set_syntax(syntax);
    env.set_undefined_behavior(minijinja::UndefinedBehavior::Strict);
    let ctx = minijinja::Value::from(minijinja::value::Serde(vars));
    let render = |file: &'static str, source: &str| {
        env.render_str(source, ctx.clone())
            .map_err(|source| ScaffoldError::Template { file, source })
    };
    let mut files = Vec::new();
    let mut manifest = String::new();
    for t in TEMPLATES {
        if vars.in_tree && t.out == "rustfmt.toml" {
            continue;
        }
        let body = render(t.file, t.body)?;
        if t.out == "manifest.yaml" {
            manifest = body.clone();
        }
        files.push((PathBuf::from(render(t.file, t.out)?), body));
    }
    for (file, body) in CHART {
        let body = match *file {
            "README.md" => crate_relative_readme(body),
            _ => body.to_string(),
        };
        files.push((Path::new("chart").join(file), rename_chart(&body, vars)));
    }
    files.push((PathBuf::from("chart/files/manifest.yaml"), manifest));
    Ok(files)
}

/// The quickstart chart's README as the new crate's: its commands name the crate's own files (run from
/// the crate, in tree or out), not the repository's paths of quickstart's, and the CatalogEntry copy
/// is kept by the crate's own test rather than by this repository's codegen.
fn crate_relative_readme(body: &str) -> String {
    body.replace(
        "which `cargo xtask codegen` copies from `providers/quickstart/manifest.yaml`",
        "a copy of the crate's `manifest.yaml` (its test `tests/chart_manifest.rs` keeps them equal)",
    )
    .replace("charts/faros-provider-quickstart", "./chart")
    .replace("providers/quickstart/provider.yaml", "./provider.yaml")
}

/// The quickstart chart's names replaced by the new provider's.
fn rename_chart(body: &str, vars: &Vars) -> String {
    body.replace("faros-provider-quickstart", &vars.crate_name)
        .replace("QUICKSTART", &vars.env_prefix)
        .replace("Quickstart", &vars.title)
        .replace("Greetings", &format!("{}s", vars.kind))
        .replace("Greeting", &vars.kind)
        .replace("quickstart", &vars.name)
}

/// Writes `files` under `dir`, which must not exist yet.
pub fn write(dir: &Path, files: &[(PathBuf, String)]) -> Result<(), ScaffoldError> {
    if dir.exists() {
        return Err(ScaffoldError::Exists(dir.to_path_buf()));
    }
    for (rel, body) in files {
        let path = dir.join(rel);
        let io = |source| ScaffoldError::Io {
            path: path.clone(),
            source,
        };
        if let Some(parent) = path.parent() {
            std::fs::create_dir_all(parent).map_err(io)?;
        }
        std::fs::write(&path, body).map_err(io)?;
    }
    Ok(())
}

/// The faros checkout this binary was built from, when it is still there.
fn checkout() -> Option<PathBuf> {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
    root.join("crates/faros-sdk/Cargo.toml")
        .exists()
        .then(|| root.canonicalize().unwrap_or(root))
}

/// Whether `dir` is `<root>/providers/<name>` of a faros checkout (a workspace whose members
/// include `providers/*`).
fn in_tree(dir: &Path) -> bool {
    let Some(root) = dir.parent().filter(|p| p.ends_with("providers")).and_then(Path::parent) else {
        return false;
    };
    std::fs::read_to_string(root.join("Cargo.toml")).is_ok_and(|s| s.contains("\"providers/*\""))
}

/// `faros provider new`: returns the new crate's directory.
pub fn run(args: &NewArgs) -> anyhow::Result<PathBuf> {
    let cwd = std::env::current_dir()?;
    let dir = match &args.dir {
        Some(d) => cwd.join(d),
        None if in_tree(&cwd.join("providers").join(&args.name)) => cwd.join("providers").join(&args.name),
        None => cwd.join(&args.name),
    };
    let tree = in_tree(&dir);
    let sdk_dep = if tree {
        "{ workspace = true }".to_string()
    } else {
        match args
            .sdk
            .clone()
            .or_else(|| checkout().map(|c| c.join("crates/faros-sdk").display().to_string()))
        {
            Some(s) if s.contains("://") => format!("{{ git = {s:?} }}"),
            Some(path) => format!("{{ path = {path:?} }}"),
            None => "{ git = \"https://github.com/faroshq/faros-rs\" }".to_string(),
        }
    };
    let today = jiff::Zoned::now().strftime("v%y%m%d").to_string();
    let vars = vars(&args.name, args.kind.as_deref(), &args.vendor, tree, &sdk_dep, &today)?;
    let files = plan(&vars)?;
    write(&dir, &files)?;
    format(&dir, &files);
    Ok(dir)
}

/// `rustfmt` over the Rust files written (line breaks depend on the names' lengths, which the
/// templates cannot know); a missing rustfmt leaves them as rendered.
fn format(dir: &Path, files: &[(PathBuf, String)]) {
    let rust: Vec<PathBuf> = files
        .iter()
        .filter(|(p, _)| p.extension().is_some_and(|e| e == "rs"))
        .map(|(p, _)| dir.join(p))
        .collect();
    let ran = std::process::Command::new("rustfmt")
        .args(["--edition", "2024"])
        .args(&rust)
        .status();
    if !ran.is_ok_and(|s| s.success()) {
        tracing::warn!("rustfmt did not run on the new crate; run cargo fmt in it");
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::expect_used)]
mod tests {
    use super::*;
    use pretty_assertions::assert_eq;

    #[test]
    fn names_kinds_and_plurals() {
        for (name, kind, plural) in [
            ("notes", "Note", "notes"),
            ("my-app", "MyApp", "myapps"),
            ("glass", "Glass", "glasses"),
            ("policy", "Policy", "policies"),
            ("gateway", "Gateway", "gateways"),
        ] {
            let v = vars(name, None, "me", false, "{ path = \"sdk\" }", "v1").unwrap();
            assert_eq!((v.kind.as_str(), v.plural.as_str()), (kind, plural), "{name}");
        }
        let v = vars("my-app", Some("Widget"), "me", true, "{ workspace = true }", "v1").unwrap();
        assert_eq!(
            (
                v.crate_ident.as_str(),
                v.group.as_str(),
                v.env_prefix.as_str(),
                v.title.as_str()
            ),
            ("faros_provider_my_app", "my-app.providers.faros.sh", "MY_APP", "My App")
        );
        for bad in ["Notes", "1notes", "notes-", "no_tes", ""] {
            assert!(
                matches!(vars(bad, None, "me", false, "", "v1"), Err(ScaffoldError::Name(_))),
                "{bad}"
            );
        }
        assert!(matches!(
            vars("notes", Some("note"), "me", false, "", "v1"),
            Err(ScaffoldError::Kind(_))
        ));
    }

    #[test]
    fn the_plan_names_every_file_and_leaves_no_quickstart_behind() {
        let v = vars("notes", None, "me", false, "{ path = \"/sdk\" }", "v261201").unwrap();
        let files = plan(&v).unwrap();
        let paths: Vec<String> = files.iter().map(|(p, _)| p.display().to_string()).collect();
        for want in [
            "Cargo.toml",
            "src/lib.rs",
            "src/note.rs",
            "schemas/v261201.notes.notes.providers.faros.sh.yaml",
            "manifest.yaml",
            "provider.yaml",
            "ui/main.js",
            "tests/backend.rs",
            "tests/chart_manifest.rs",
            "chart/Chart.yaml",
            "chart/templates/deployment.yaml",
            "chart/files/manifest.yaml",
        ] {
            assert!(paths.contains(&want.to_string()), "{want} missing from {paths:?}");
        }
        for (path, body) in &files {
            assert!(
                !body.to_lowercase().contains("quickstart"),
                "{}: {body}",
                path.display()
            );
        }
        let cargo = &files.iter().find(|(p, _)| p == Path::new("Cargo.toml")).unwrap().1;
        assert!(cargo.contains("faros-sdk = { path = \"/sdk\" }\n"), "{cargo}");
        assert!(cargo.contains("[workspace]"), "out of tree: a workspace of its own");
        let manifest = &files.iter().find(|(p, _)| p == Path::new("manifest.yaml")).unwrap().1;
        assert!(
            manifest.contains("url: {{ env.NOTES_URL | default(\"http://localhost:8081\") }}"),
            "{manifest}"
        );
        let in_tree = plan(&vars("notes", None, "me", true, "{ workspace = true }", "v1").unwrap()).unwrap();
        let cargo = &in_tree[0].1;
        assert!(
            cargo.contains("edition.workspace = true") && !cargo.contains("[workspace]"),
            "{cargo}"
        );
    }
}
