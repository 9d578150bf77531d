#![allow(clippy::unwrap_used)]

use std::collections::HashMap;

use super::*;

fn parse(pairs: &[(&str, &str)]) -> Result<Target, String> {
    let env: HashMap<String, String> = pairs.iter().map(|(k, v)| (k.to_string(), v.to_string())).collect();
    Target::from_lookup(|k| env.get(k).cloned()).map_err(|e| e.to_string())
}

const BASE: [(&str, &str); 4] = [
    (ENV_TARGET, "external"),
    (ENV_KUBECONFIG, "/k"),
    (ENV_HUB_URL, "https://localhost:8444/"),
    (ENV_CA, "/ca.crt"),
];

fn with(extra: &[(&'static str, &'static str)]) -> Vec<(&'static str, &'static str)> {
    BASE.iter().copied().chain(extra.iter().copied()).collect()
}

#[test]
fn targets_from_the_environment() {
    let external_with = |users, destructive, registrar: Option<&str>| {
        Ok(Target::External(External {
            kubeconfig: "/k".into(),
            hub_url: "https://localhost:8444".into(),
            ca: "/ca.crt".into(),
            users,
            destructive,
            registrar_kubeconfig: registrar.map(Into::into),
        }))
    };
    let external = |users, destructive| external_with(users, destructive, None);
    type Case<'a> = (&'a str, Vec<(&'a str, &'a str)>, Result<Target, String>);
    let cases: Vec<Case> = vec![
        ("default", vec![], Ok(Target::InProcess)),
        ("explicit", vec![(ENV_TARGET, "in-process")], Ok(Target::InProcess)),
        (
            "token file",
            with(&[(ENV_TOKEN_FILE, "/t.csv")]),
            external(UserSource::TokenFile("/t.csv".into()), false),
        ),
        (
            "pool, destructive",
            with(&[(ENV_USERS_FILE, "/u.csv"), (ENV_DESTRUCTIVE, "1")]),
            external(UserSource::Pool("/u.csv".into()), true),
        ),
        (
            "with the registrar kubeconfig",
            with(&[(ENV_TOKEN_FILE, "/t.csv"), (ENV_REGISTRAR_KUBECONFIG, "/r")]),
            external_with(UserSource::TokenFile("/t.csv".into()), false, Some("/r")),
        ),
        (
            "unknown target",
            vec![(ENV_TARGET, "kind")],
            Err("FAROS_E2E_TARGET=\"kind\": use `in-process` or `external`".into()),
        ),
        (
            "no users",
            with(&[]),
            Err(
                "FAROS_E2E_TARGET=external needs user tokens: FAROS_E2E_TOKEN_FILE (a static token file \
                 the platform reloads) or FAROS_E2E_USERS_FILE (pre-provisioned static tokens)"
                    .into(),
            ),
        ),
        (
            "both user sources",
            with(&[(ENV_TOKEN_FILE, "/t"), (ENV_USERS_FILE, "/u")]),
            Err("set one of FAROS_E2E_TOKEN_FILE and FAROS_E2E_USERS_FILE, not both".into()),
        ),
        (
            "missing CA",
            vec![
                (ENV_TARGET, "external"),
                (ENV_KUBECONFIG, "/k"),
                (ENV_HUB_URL, "https://h"),
                (ENV_TOKEN_FILE, "/t"),
            ],
            Err("FAROS_E2E_TARGET=external needs FAROS_E2E_CA".into()),
        ),
        (
            "plain http hub",
            vec![(ENV_TARGET, "external"), (ENV_HUB_URL, "http://h")],
            Err("FAROS_E2E_HUB_URL=\"http://h\" must be an https:// URL (the hub serves TLS only)".into()),
        ),
        (
            "bad destructive",
            with(&[(ENV_TOKEN_FILE, "/t"), (ENV_DESTRUCTIVE, "yes")]),
            Err("FAROS_E2E_DESTRUCTIVE=\"yes\": use 1 or 0".into()),
        ),
    ];
    for (name, env, want) in cases {
        assert_eq!(parse(&env), want, "{name}");
    }
}
