//! The token file is re-read while serving: new users work without a restart, a bad edit keeps the
//! previous users.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use std::io::Write;
use std::time::Duration;

use common::{BOB_TOKEN, TestServer, USER_TOKEN, eventually};
use serde_json::{Value, json};

const CAROL_TOKEN: &str = "carol-token-0123456789abcdef";
const WAIT: Duration = Duration::from_secs(15);

/// Status of a SelfSubjectAccessReview in root as the bearer of `token`: open to every
/// authenticated user (201), 401 otherwise.
async fn self_review(server: &TestServer, token: &str) -> u16 {
    let body = json!({
        "apiVersion": "authorization.k8s.io/v1",
        "kind": "SelfSubjectAccessReview",
        "spec": {"resourceAttributes": {"verb": "get", "resource": "configmaps"}}
    });
    server
        .http()
        .post(server.url("/clusters/root/apis/authorization.k8s.io/v1/selfsubjectaccessreviews"))
        .bearer_auth(token)
        .json(&body)
        .send()
        .await
        .unwrap()
        .status()
        .as_u16()
}

/// Who kcp says `token` belongs to (TokenReview as admin).
async fn reviewed_user(server: &TestServer, token: &str) -> Value {
    let body = json!({
        "apiVersion": "authentication.k8s.io/v1",
        "kind": "TokenReview",
        "spec": {"token": token}
    });
    let review: Value = server
        .http()
        .post(server.url("/clusters/root/apis/authentication.k8s.io/v1/tokenreviews"))
        .bearer_auth(server.admin_token())
        .json(&body)
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    review["status"].clone()
}

#[tokio::test]
async fn token_file_edits_apply_while_serving_and_bad_edits_keep_old_users() {
    let server = TestServer::start().await;
    let path = server.dir.path().join("tokens.csv");
    assert_eq!(self_review(&server, CAROL_TOKEN).await, 401);

    let mut file = std::fs::OpenOptions::new().append(true).open(&path).unwrap();
    writeln!(file, "{CAROL_TOKEN},carol,carol-uid,\"ops\"").unwrap();
    drop(file);
    eventually("carol's token to authenticate", WAIT, || async {
        (self_review(&server, CAROL_TOKEN).await == 201).then_some(())
    })
    .await;
    assert_eq!(
        reviewed_user(&server, CAROL_TOKEN).await,
        json!({
            "authenticated": true,
            "user": {"username": "carol", "uid": "carol-uid", "groups": ["ops", "system:authenticated"]},
            "audiences": ["https://kcp.default.svc"]
        })
    );

    let rejected_before = server.server.token_file_reloads().rejected;
    std::fs::write(&path, "new-token,mallory,1\nthis line is garbage\n").unwrap();
    eventually("the garbage edit to be seen and refused", WAIT, || async {
        (server.server.token_file_reloads().rejected > rejected_before).then_some(())
    })
    .await;
    for token in [USER_TOKEN, BOB_TOKEN, CAROL_TOKEN] {
        assert_eq!(self_review(&server, token).await, 201, "a user of the previous file");
    }
    assert_eq!(
        self_review(&server, "new-token").await,
        401,
        "nothing of the bad file applies"
    );
    assert_eq!(reviewed_user(&server, CAROL_TOKEN).await["user"]["username"], "carol");

    server.server.shutdown().await;
}

#[tokio::test]
async fn extra_token_files_are_read_and_reloaded_with_the_token_file() {
    const HUB_TOKEN: &str = "hub-token-0123456789abcdef";
    let extra_dir = tempfile::tempdir().unwrap();
    let extra = extra_dir.path().join("components.csv");
    std::fs::write(&extra, format!("{HUB_TOKEN},faros-hub,hub-uid\n")).unwrap();
    let server = TestServer::start_with(|c| c.extra_token_files = vec![extra.clone()]).await;
    for token in [USER_TOKEN, BOB_TOKEN, HUB_TOKEN] {
        assert_eq!(self_review(&server, token).await, 201);
    }
    assert_eq!(reviewed_user(&server, HUB_TOKEN).await["user"]["username"], "faros-hub");

    // An edit of the extra file applies while serving, the token file's users stay.
    let mut file = std::fs::OpenOptions::new().append(true).open(&extra).unwrap();
    writeln!(file, "{CAROL_TOKEN},carol,carol-uid").unwrap();
    drop(file);
    eventually("carol's token to authenticate", WAIT, || async {
        (self_review(&server, CAROL_TOKEN).await == 201).then_some(())
    })
    .await;
    assert_eq!(self_review(&server, USER_TOKEN).await, 201);

    // A token in both files would be one token for two users: the edit is refused as a whole.
    let rejected_before = server.server.token_file_reloads().rejected;
    std::fs::write(&extra, format!("{USER_TOKEN},mallory,m\nnew-token,nobody,n\n")).unwrap();
    eventually("the conflicting edit to be seen and refused", WAIT, || async {
        (server.server.token_file_reloads().rejected > rejected_before).then_some(())
    })
    .await;
    assert_eq!(reviewed_user(&server, USER_TOKEN).await["user"]["username"], "alice");
    assert_eq!(self_review(&server, "new-token").await, 401);
    for token in [HUB_TOKEN, CAROL_TOKEN] {
        assert_eq!(
            self_review(&server, token).await,
            201,
            "a user of the previous extra file"
        );
    }
    server.server.shutdown().await;

    // The same conflict at start is an error, not a guess.
    let dir = tempfile::tempdir().unwrap();
    let mut config = faros_embedded_kcp::Config::new(dir.path().join("state"));
    config.token_file = Some(server.dir.path().join("tokens.csv"));
    config.extra_token_files = vec![extra];
    let err = faros_embedded_kcp::Server::start(config)
        .await
        .err()
        .expect("a token in two files");
    assert!(
        err.to_string()
            .contains("static token for user \"mallory\" is defined twice"),
        "{err}"
    );
}
