//! The tools and packages a target needs, checked before anything runs so a machine without them
//! fails at once with one message naming everything missing (not a stack trace halfway through).

use crate::images::Engine;

/// What the machine has, as found by the caller.
pub(crate) struct Found {
    /// The engine `choose_engine` picked, or its message.
    pub engine: Result<Engine, String>,
    pub kind: bool,
    pub helm: bool,
    pub kubectl: bool,
}

/// `Ok` with the engine, or one message listing every missing tool.
pub(crate) fn check(found: Found) -> Result<Engine, String> {
    let mut missing = Vec::new();
    let engine_msg = found.engine.as_ref().err().cloned();
    if let Some(msg) = &engine_msg {
        missing.push(format!("a container engine ({msg})"));
    }
    for (tool, ok, hint) in [
        ("kind", found.kind, "https://kind.sigs.k8s.io"),
        ("helm", found.helm, "helm 3 on PATH or FAROS_HELM"),
        ("kubectl", found.kubectl, "kubectl on PATH"),
    ] {
        if !ok {
            missing.push(format!("{tool} ({hint})"));
        }
    }
    match found.engine {
        Ok(engine) if missing.is_empty() => Ok(engine),
        _ => Err(format!(
            "--target kind needs docker or podman, kind, helm and kubectl; missing: {}. `--dry-run` prints the \
             plan without them; `--target in-process` needs none of them",
            missing.join(", ")
        )),
    }
}

/// One thing a target needs: what it is, whether the machine has it, and how to get it.
pub(crate) struct Need {
    pub what: &'static str,
    pub present: bool,
    pub hint: &'static str,
}

/// `Ok` when every need is present, else one message for `target` naming each missing one.
pub(crate) fn check_needs(target: &str, needs: &[Need]) -> Result<(), String> {
    let missing: Vec<String> = needs
        .iter()
        .filter(|n| !n.present)
        .map(|n| format!("{} ({})", n.what, n.hint))
        .collect();
    if missing.is_empty() {
        return Ok(());
    }
    Err(format!(
        "{target} is missing {}. `.ci/run` installs all of them; `--dry-run` prints the plan without them",
        missing.join(", ")
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn needs_are_named_together() {
        let need = |what, present| Need {
            what,
            present,
            hint: "how",
        };
        let cases: [(&str, Vec<Need>, Result<(), &str>); 3] = [
            ("none", vec![], Ok(())),
            ("all present", vec![need("kubectl", true), need("node", true)], Ok(())),
            (
                "two missing, in order",
                vec![
                    need("kubectl", false),
                    need("node", true),
                    need("e2e/oidc's packages", false),
                ],
                Err(
                    "--target kcp is missing kubectl (how), e2e/oidc's packages (how). `.ci/run` installs all of \
                     them; `--dry-run` prints the plan without them",
                ),
            ),
        ];
        for (name, needs, want) in cases {
            assert_eq!(
                check_needs("--target kcp", &needs),
                want.map_err(String::from),
                "{name}"
            );
        }
    }

    #[test]
    fn missing_tools_are_named_together() {
        let all = Found {
            engine: Ok(Engine::Docker),
            kind: true,
            helm: true,
            kubectl: true,
        };
        assert_eq!(check(all), Ok(Engine::Docker));
        let none = Found {
            engine: Err(
                "no container engine: docker not found; podman not found. Install one, or use --dry-run to \
                         see the commands"
                    .into(),
            ),
            kind: false,
            helm: true,
            kubectl: false,
        };
        assert_eq!(
            check(none),
            Err(
                "--target kind needs docker or podman, kind, helm and kubectl; missing: a container engine (no \
                 container engine: docker not found; podman not found. Install one, or use --dry-run to see the \
                 commands), kind (https://kind.sigs.k8s.io), kubectl (kubectl on PATH). `--dry-run` prints the plan \
                 without them; `--target in-process` needs none of them"
                    .into()
            )
        );
        let no_helm = Found {
            engine: Ok(Engine::Podman),
            kind: true,
            helm: false,
            kubectl: true,
        };
        assert!(
            check(no_helm)
                .unwrap_err()
                .contains("missing: helm (helm 3 on PATH or FAROS_HELM)")
        );
    }
}
