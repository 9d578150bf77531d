//! The portal's OIDC sign-in in a real browser against a real identity provider: `faros dev
//! --oidc-…` as a child process, the test IdP (`e2e/oidc`, panva's oidc-provider) with its own TLS,
//! and Debian's chromium driven by Playwright (`e2e/browser/oidc.test.mjs`): the workspace's admin
//! grants IdP group `dev` a role on the portal's members page; then the redirect, the IdP's login
//! form, the callback, the session, the workspace reached through the group (and gone once the IdP
//! drops the group), quickstart enabled and a Greeting created in its UI and replied to, a session
//! that outlives its short-lived ID token through refresh (and still creates Greetings), sign-out
//! with the IdP's RP-initiated logout; bad paths: a wrong password, a wrong state, a replayed
//! callback, an expired login, a user the IdP disabled (at sign-in, and mid-session: the next
//! renewal ends the session).
//!
//! Needs chromium, `npm ci --prefix e2e/browser` and `npm ci --prefix e2e/oidc` (what `.ci/run`
//! does); without them the test fails saying so.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod browser;
mod devproc;

use browser::{prerequisites, repo_root};
use std::process::{Command, Stdio};

use faros_test_support::oidc::{Idp, IdpClient, IdpUser, Ttls};

/// Seconds an ID token lives (renewed after half of it).
const ID_TOKEN_TTL: u64 = 6;

#[test]
fn oidc_sign_in_in_a_real_browser() {
    let root = repo_root();
    let browser_dir = root.join("e2e/browser");
    let chromium = prerequisites(&browser_dir);
    let rt = tokio::runtime::Runtime::new().unwrap();
    let disabled = IdpUser {
        disabled: true,
        ..IdpUser::new("carol", "carols-password", &["dev"])
    };
    let mut idp = rt
        .block_on(Idp::start(
            vec![IdpUser::new("alice", "wonderland", &["dev", "ops"]), disabled],
            Vec::new(),
            // Short ID tokens: the walk outlives several of them.
            Ttls {
                id_token: ID_TOKEN_TTL,
                access_token: ID_TOKEN_TTL,
                ..Ttls::default()
            },
        ))
        .unwrap();
    let state = tempfile::tempdir().unwrap();
    let ca_file = idp.ca_file();
    let dev = devproc::start(
        &state.path().join("faros"),
        &[
            "--oidc-issuer-url",
            idp.issuer(),
            "--oidc-client-id",
            "faros-portal",
            "--oidc-username-claim",
            "email",
            "--oidc-groups-claim",
            "groups",
            "--oidc-ca-file",
            ca_file.to_str().unwrap(),
        ],
    );
    // The redirect URIs name the hub's port, known only now.
    let hub = dev.hub.trim_end_matches('/').to_string();
    rt.block_on(idp.add_client(IdpClient {
        post_logout_redirect_uris: vec![format!("{hub}/portal/signin?signedOut=1")],
        ..IdpClient::new("faros-portal", &format!("{hub}/api/session/oidc/callback"))
    }))
    .unwrap();

    let failures = root.join("target/portal-failures");
    std::fs::create_dir_all(&failures).unwrap();
    let out = Command::new("node")
        .arg(browser_dir.join("oidc.test.mjs"))
        .current_dir(&browser_dir)
        .env("FAROS_HUB_URL", &hub)
        .env("FAROS_IDP_URL", idp.issuer())
        .env("FAROS_IDP_USERS", idp.users_file())
        .env("FAROS_ID_TOKEN_TTL", ID_TOKEN_TTL.to_string())
        // The admin of `faros dev`'s workspace demo/default, who grants IdP group `dev` a role
        // there in the portal.
        .env("FAROS_DEV_TOKEN", dev.dev_token().unwrap())
        .env("FAROS_CHROMIUM", &chromium)
        .env("FAROS_PORTAL_FAILURES", &failures)
        .stdout(Stdio::inherit())
        .stderr(Stdio::inherit())
        .status()
        .expect("running node");
    assert!(
        out.success(),
        "the OIDC browser scenario failed (output above; failure screenshot in {})",
        failures.display()
    );
    rt.block_on(idp.stop());
}
