//! The `cargo test` invocations that run the e2e scenarios, per target. The environment variables
//! are the contract of `e2e/src/target.rs` (a test below keeps the two in step).

use std::path::PathBuf;

use super::plan::Cmd;

pub(crate) const ENV_TARGET: &str = "FAROS_E2E_TARGET";
pub(crate) const ENV_KUBECONFIG: &str = "FAROS_E2E_KUBECONFIG";
pub(crate) const ENV_HUB_URL: &str = "FAROS_E2E_HUB_URL";
pub(crate) const ENV_CA: &str = "FAROS_E2E_CA";
pub(crate) const ENV_TOKEN_FILE: &str = "FAROS_E2E_TOKEN_FILE";
pub(crate) const ENV_USERS_FILE: &str = "FAROS_E2E_USERS_FILE";
pub(crate) const ENV_DESTRUCTIVE: &str = "FAROS_E2E_DESTRUCTIVE";

/// The scenario test files that leave the platform as they found it (run together).
pub(crate) const SCENARIOS: [&str; 6] = ["lifecycle", "tenancy", "mcp", "gitops", "security", "clients"];
/// The one that deletes the quickstart Provider: run last, alone, and only when allowed.
pub(crate) const DESTRUCTIVE: &str = "provider_deletion";
/// kubectl through the OIDC exec plugin: needs the test IdP that only the kcp target starts (and
/// gives kcp and the hub), so that target runs it, with the IdP's address.
pub(crate) const OIDC: &str = "oidc_kubectl";

/// Where scenario users come from on an external platform.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) enum Users {
    TokenFile(PathBuf),
    Pool(PathBuf),
}

/// An installed platform.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct ExternalTarget {
    pub kubeconfig: PathBuf,
    pub hub_url: String,
    pub ca: PathBuf,
    pub users: Users,
    pub destructive: bool,
}

fn cargo_test(tests: &[&str], filter: Option<&str>) -> Cmd {
    let mut cmd = Cmd::new("cargo", &["test", "-p", "faros-e2e", "--locked"]);
    for t in tests {
        cmd = cmd.args(["--test", t]);
    }
    if let Some(f) = filter {
        cmd = cmd.args(["--", f]);
    }
    cmd
}

/// In-process: every scenario file, plus the one that runs them all against `faros dev` as a
/// separate process (whose binary is built first: the e2e crate depends on `faros`' library only).
pub(crate) fn in_process(filter: Option<&str>) -> Vec<Cmd> {
    // Explicit, so a FAROS_E2E_TARGET left in the caller's environment does not redirect them.
    let mut test = Cmd::new("cargo", &["test", "-p", "faros-e2e", "--locked"]).env(ENV_TARGET, "in-process");
    if let Some(f) = filter {
        test = test.args(["--", f]);
    }
    vec![
        Cmd::new("cargo", &["build", "-p", "faros", "--bin", "faros", "--locked"]),
        test,
    ]
}

/// Against `target`: the non-destructive scenarios, then (when allowed) the destructive one.
pub(crate) fn external(target: &ExternalTarget, filter: Option<&str>) -> Vec<Cmd> {
    let env = |cmd: Cmd| {
        let users = match &target.users {
            Users::TokenFile(f) => (ENV_TOKEN_FILE, f.display().to_string()),
            Users::Pool(f) => (ENV_USERS_FILE, f.display().to_string()),
        };
        cmd.env(ENV_TARGET, "external")
            .env(ENV_KUBECONFIG, target.kubeconfig.display().to_string())
            .env(ENV_HUB_URL, target.hub_url.clone())
            .env(ENV_CA, target.ca.display().to_string())
            .env(users.0, users.1)
            .env(ENV_DESTRUCTIVE, if target.destructive { "1" } else { "0" })
    };
    let mut cmds = vec![env(cargo_test(&SCENARIOS, filter))];
    if target.destructive {
        cmds.push(env(cargo_test(&[DESTRUCTIVE], filter)));
    }
    cmds
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The variables and scenario files named here are the e2e crate's.
    #[test]
    fn agrees_with_the_e2e_crate() {
        let root = crate::locate::project_root();
        let target = std::fs::read_to_string(root.join("e2e/src/target.rs")).unwrap();
        for var in [
            ENV_TARGET,
            ENV_KUBECONFIG,
            ENV_HUB_URL,
            ENV_CA,
            ENV_TOKEN_FILE,
            ENV_USERS_FILE,
            ENV_DESTRUCTIVE,
        ] {
            assert!(
                target.contains(&format!("&str = \"{var}\";")),
                "e2e/src/target.rs lacks {var}"
            );
        }
        let mut files: Vec<String> = std::fs::read_dir(root.join("e2e/tests"))
            .unwrap()
            .map(|e| e.unwrap().path())
            .filter(|p| p.extension().is_some_and(|e| e == "rs"))
            .map(|p| p.file_stem().unwrap().to_string_lossy().into_owned())
            // Harnesses that start their own platform (`faros dev` as a process; three hub
            // replicas behind a balancer) rather than scenarios an external platform runs.
            .filter(|n| n != "external_faros_dev" && n != "replicas" && n != OIDC)
            .collect();
        files.sort();
        let mut known: Vec<String> = SCENARIOS.iter().chain([&DESTRUCTIVE]).map(|s| s.to_string()).collect();
        known.sort();
        assert_eq!(files, known, "every scenario file runs on the external target");
    }

    #[test]
    fn commands_per_target() {
        let target = ExternalTarget {
            kubeconfig: "k".into(),
            hub_url: "https://h".into(),
            ca: "ca".into(),
            users: Users::TokenFile("t".into()),
            destructive: false,
        };
        let lines: Vec<String> = external(&target, Some("x")).iter().map(ToString::to_string).collect();
        assert_eq!(
            lines,
            [
                "FAROS_E2E_TARGET=external FAROS_E2E_KUBECONFIG=k FAROS_E2E_HUB_URL=https://h FAROS_E2E_CA=ca \
              FAROS_E2E_TOKEN_FILE=t FAROS_E2E_DESTRUCTIVE=0 cargo test -p faros-e2e --locked --test lifecycle \
              --test tenancy --test mcp --test gitops --test security --test clients -- x"
            ]
        );
        let destructive = ExternalTarget {
            destructive: true,
            ..target
        };
        let cmds = external(&destructive, None);
        assert_eq!(cmds.len(), 2);
        assert!(cmds[1].to_string().ends_with("--test provider_deletion"), "{}", cmds[1]);
        let local: Vec<String> = in_process(None).iter().map(ToString::to_string).collect();
        assert_eq!(
            local,
            [
                "cargo build -p faros --bin faros --locked",
                "FAROS_E2E_TARGET=in-process cargo test -p faros-e2e --locked"
            ]
        );
    }
}
