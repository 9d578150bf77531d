//! The portal in a real browser: `faros dev` as a child process, Debian's chromium driven by
//! Playwright (`e2e/browser/portal.test.mjs`, playwright-core + axe-core pinned in
//! `e2e/browser/package-lock.json`). This test prepares what the scenario needs — a user who is a
//! member of nothing, admin-registered providers for the other states and bad paths (a UI that
//! never defines its element, a UI server that is down, a backend that is unhealthy, a provider
//! blocked by a dependency, one whose export does not exist) and another site serving a cross-site
//! form — runs node, and fails with its output.
//!
//! Needs `apt-get install -y chromium` and `npm ci --prefix e2e/browser` (what `.ci/run` does);
//! without them the test fails saying so. `FAROS_PORTAL_SCREENSHOTS=docs/portal` refreshes the
//! screenshots in docs/portal.md.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod browser;
mod devproc;

use browser::{prerequisites, repo_root};
use std::io::{BufRead, BufReader, Write};
use std::net::TcpListener;
use std::process::{Command, Stdio};
use std::time::Instant;

/// Another site (reached as `localhost`, the hub is `127.0.0.1`): `/csrf` is a form posting to the
/// hub, every other path is a provider UI whose `main.js` loads but never defines its element.
fn side_server() -> u16 {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    std::thread::spawn(move || {
        for stream in listener.incoming() {
            let Ok(mut stream) = stream else { continue };
            std::thread::spawn(move || {
                let mut reader = BufReader::new(stream.try_clone().unwrap());
                let mut request_line = String::new();
                if reader.read_line(&mut request_line).is_err() {
                    return;
                }
                loop {
                    let mut line = String::new();
                    if reader.read_line(&mut line).unwrap_or(0) == 0 || line == "\r\n" {
                        break;
                    }
                }
                let target = request_line.split(' ').nth(1).unwrap_or("/").to_string();
                let (ty, body) = if let Some(q) = target.strip_prefix("/csrf?target=") {
                    let action = percent_decode(q);
                    (
                        "text/html; charset=utf-8",
                        format!(
                            "<!doctype html><title>elsewhere</title><form method=post action=\"{action}\" \
                             enctype=text/plain><input type=hidden name='{{\"name\":\"csrf-evil\",\"x\":\"' \
                             value='\"}}'><button>win a prize</button></form>"
                        ),
                    )
                } else {
                    (
                        "text/javascript; charset=utf-8",
                        "// A provider UI that forgets customElements.define.\nexport const loaded = true;\n"
                            .to_string(),
                    )
                };
                let _ = write!(
                    stream,
                    "HTTP/1.1 200 OK\r\ncontent-type: {ty}\r\ncontent-length: {}\r\nconnection: close\r\n\r\n{body}",
                    body.len()
                );
            });
        }
    });
    port
}

fn percent_decode(s: &str) -> String {
    let mut out = Vec::new();
    let b = s.as_bytes();
    let mut i = 0;
    while i < b.len() {
        if b[i] == b'%' && i + 3 <= b.len() {
            out.push(u8::from_str_radix(&s[i + 1..i + 3], 16).unwrap_or(b'?'));
            i += 3;
        } else {
            out.push(b[i]);
            i += 1;
        }
    }
    String::from_utf8_lossy(&out).into_owned()
}

/// Applies CatalogEntries into `root:faros:system:providers` (admin-registered providers).
fn register_admin_providers(dev: &devproc::DevProcess, side_port: u16) {
    let base = dev.server.split("/clusters/").next().unwrap();
    let manifest = faros_test_support::portal_walk::admin_providers(side_port);
    let mut child = Command::new("kubectl")
        .arg("--kubeconfig")
        .arg(&dev.kubeconfig)
        .arg("--server")
        .arg(format!("{base}/clusters/root:faros:system:providers"))
        .args(["apply", "-f", "-"])
        .stdin(Stdio::piped())
        .spawn()
        .expect("kubectl");
    child.stdin.take().unwrap().write_all(manifest.as_bytes()).unwrap();
    assert!(
        child.wait().unwrap().success(),
        "kubectl apply of the test CatalogEntries failed"
    );
}

/// The portal's IO-free decisions (routes, provider states, side-nav, group roles), table-tested
/// with `node --test`, and its module graph (no import circle, every module embedded by the hub).
#[test]
fn portal_decisions() {
    let browser_dir = repo_root().join("e2e/browser");
    let out = Command::new("node")
        .args(["--test", "decide.test.mjs", "modules.test.mjs"])
        .current_dir(&browser_dir)
        .output()
        .expect("node is missing: the portal tests need Node.js 20+ (`apt-get install -y nodejs`)");
    assert!(
        out.status.success(),
        "node --test e2e/browser/{{decide,modules}}.test.mjs failed:\n{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
}

#[test]
fn portal_in_a_real_browser() {
    let root = repo_root();
    let browser_dir = root.join("e2e/browser");
    let chromium = prerequisites(&browser_dir);
    let state = tempfile::tempdir().unwrap();
    let started = Instant::now();
    let dev = devproc::start(&state.path().join("faros"), &[]);
    let state_dir = state.path().join("faros");
    let dev_token = std::fs::read_to_string(state_dir.join("dev-user.token")).unwrap();
    // A user who is a member of nothing (the token file is reloaded live).
    let outsider = "outsider-token-0123456789";
    let mut tokens = std::fs::OpenOptions::new()
        .append(true)
        .open(state_dir.join("tokens.csv"))
        .unwrap();
    writeln!(tokens, "{outsider},outsider,outsider-uid").unwrap();
    let side = side_server();
    register_admin_providers(&dev, side);
    let failures = root.join("target/portal-failures");
    std::fs::create_dir_all(&failures).unwrap();
    eprintln!(
        "faros dev ready after {:?}; running the browser scenario",
        started.elapsed()
    );

    let out = Command::new("node")
        .arg(browser_dir.join("portal.test.mjs"))
        .current_dir(&browser_dir)
        .env("FAROS_HUB_URL", &dev.hub)
        .env("FAROS_DEV_TOKEN", dev_token.trim())
        .env("FAROS_OUTSIDER_TOKEN", outsider)
        .env("FAROS_CROSS_SITE_URL", format!("http://localhost:{side}"))
        .env("FAROS_CHROMIUM", &chromium)
        .env("FAROS_PORTAL_FAILURES", &failures)
        .stdout(Stdio::inherit())
        .stderr(Stdio::inherit())
        .status()
        .expect("running node");
    assert!(
        out.success(),
        "the portal browser scenario failed (output above; failure screenshot in {})",
        failures.display()
    );
    eprintln!("portal browser test took {:?}", started.elapsed());
}
