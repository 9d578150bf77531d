//! The portal's browser walk (`e2e/browser/portal.test.mjs`: Debian's chromium through
//! playwright-core) with the balancer's URL as the hub's, and what the walk expects of its
//! platform besides `faros dev`'s demo organization: a user who is a member of nothing, the
//! admin-registered providers of its other states and bad paths, and another site serving a
//! cross-site form. The same preparation as `crates/faros/tests/portal.rs` (which walks one hub),
//! here asynchronous and on the replicas' `faros dev`.

use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::time::Duration;

use anyhow::{Context, bail};
use faros_test_support::devproc::DevProcess;
use faros_test_support::users::{append_token, static_token};
use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader};
use tokio::net::TcpListener;
use tokio::process::Command;

/// Longest the walk may take (it takes well under a minute; its own steps have deadlines).
const WALK_TIMEOUT: Duration = Duration::from_secs(300);

/// Runs the walk against `hub_url`; its output goes to the test's. Screenshots of a failed step go
/// to `failures`.
pub async fn walk(dev: &DevProcess, hub_url: &str, failures: &Path) -> anyhow::Result<()> {
    let browser = Path::new(env!("CARGO_MANIFEST_DIR")).join("browser");
    let chromium = prerequisites(&browser)?;
    let dev_token = std::fs::read_to_string(dev.state_dir.join("dev-user.token")).context("the dev user's token")?;
    // A user who is a member of nothing (every replica reads the token file live).
    let outsider = "outsider-token-0123456789";
    append_token(
        &dev.token_file,
        &static_token(outsider, "outsider", "outsider-uid", &[]),
    )?;
    let side = side_server().await?;
    register_admin_providers(dev, side).await?;
    std::fs::create_dir_all(failures)?;
    let mut node = Command::new("node")
        .arg(browser.join("portal.test.mjs"))
        .current_dir(&browser)
        .env("FAROS_HUB_URL", hub_url)
        .env("FAROS_DEV_TOKEN", dev_token.trim())
        .env("FAROS_OUTSIDER_TOKEN", outsider)
        .env("FAROS_CROSS_SITE_URL", format!("http://localhost:{side}"))
        .env("FAROS_CHROMIUM", &chromium)
        .env("FAROS_PORTAL_FAILURES", failures)
        .stdout(Stdio::inherit())
        .stderr(Stdio::inherit())
        .kill_on_drop(true)
        .spawn()
        .context("running node")?;
    let status = tokio::time::timeout(WALK_TIMEOUT, node.wait())
        .await
        .with_context(|| format!("the portal walk did not end within {WALK_TIMEOUT:?}"))??;
    if !status.success() {
        bail!(
            "the portal walk failed ({status}; its output above, a screenshot of the failed step in {})",
            failures.display()
        );
    }
    Ok(())
}

/// Debian's chromium (or `FAROS_CHROMIUM`), after checking `e2e/browser`'s packages.
fn prerequisites(browser: &Path) -> anyhow::Result<PathBuf> {
    let chromium = std::env::var_os("FAROS_CHROMIUM")
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from("/usr/bin/chromium"));
    if !chromium.is_file() {
        bail!(
            "{} is missing: the portal walk needs Debian's chromium (`apt-get install -y chromium`) or FAROS_CHROMIUM",
            chromium.display()
        );
    }
    for package in ["playwright-core", "axe-core"] {
        if !browser
            .join("node_modules")
            .join(package)
            .join("package.json")
            .is_file()
        {
            bail!("{package} is missing: run `npm ci --prefix e2e/browser`");
        }
    }
    Ok(chromium)
}

/// Another site (reached as `localhost`; the hub is `127.0.0.1`): `/csrf?target=<url>` is a form
/// posting to the hub, every other path a provider UI whose `main.js` loads but never defines its
/// element. Returns its port; it serves until the test ends.
async fn side_server() -> anyhow::Result<u16> {
    let listener = TcpListener::bind("127.0.0.1:0").await?;
    let port = listener.local_addr()?.port();
    tokio::spawn(async move {
        while let Ok((stream, _)) = listener.accept().await {
            tokio::spawn(async move {
                let (read, mut write) = stream.into_split();
                let mut reader = BufReader::new(read);
                let mut request_line = String::new();
                if reader.read_line(&mut request_line).await.is_err() {
                    return;
                }
                loop {
                    let mut line = String::new();
                    if reader.read_line(&mut line).await.unwrap_or(0) == 0 || line == "\r\n" {
                        break;
                    }
                }
                let target = request_line.split(' ').nth(1).unwrap_or("/");
                let (ty, body) = match target.strip_prefix("/csrf?target=") {
                    Some(q) => (
                        "text/html; charset=utf-8",
                        format!(
                            "<!doctype html><title>elsewhere</title><form method=post action=\"{}\" \
                             enctype=text/plain><input type=hidden name='{{\"name\":\"csrf-evil\",\"x\":\"' \
                             value='\"}}'><button>win a prize</button></form>",
                            percent_decode(q)
                        ),
                    ),
                    None => (
                        "text/javascript; charset=utf-8",
                        "// A provider UI that forgets customElements.define.\nexport const loaded = true;\n"
                            .to_string(),
                    ),
                };
                let response = format!(
                    "HTTP/1.1 200 OK\r\ncontent-type: {ty}\r\ncontent-length: {}\r\nconnection: close\r\n\r\n{body}",
                    body.len()
                );
                let _ = write.write_all(response.as_bytes()).await;
            });
        }
    });
    Ok(port)
}

fn percent_decode(s: &str) -> String {
    let b = s.as_bytes();
    let mut out = Vec::with_capacity(b.len());
    let mut i = 0;
    while i < b.len() {
        match (b[i], s.get(i + 1..i + 3).and_then(|h| u8::from_str_radix(h, 16).ok())) {
            (b'%', Some(byte)) => {
                out.push(byte);
                i += 3;
            }
            (c, _) => {
                out.push(c);
                i += 1;
            }
        }
    }
    String::from_utf8_lossy(&out).into_owned()
}

/// CatalogEntries in `root:faros:system:providers` (admin-registered providers) for the walk's
/// other provider states: a UI that never defines its element (served by the side server), a UI
/// server that is down, an unhealthy backend, a provider blocked by a dependency, one whose export
/// does not exist.
async fn register_admin_providers(dev: &DevProcess, side_port: u16) -> anyhow::Result<()> {
    let base = dev.server.split("/clusters/").next().unwrap_or(&dev.server);
    let manifest = faros_test_support::portal_walk::admin_providers(side_port);
    let mut kubectl = Command::new("kubectl")
        .arg("--kubeconfig")
        .arg(&dev.kubeconfig)
        .arg("--server")
        .arg(format!("{base}/clusters/root:faros:system:providers"))
        .args(["apply", "-f", "-"])
        .stdin(Stdio::piped())
        .stdout(Stdio::null())
        .kill_on_drop(true)
        .spawn()
        .context("kubectl")?;
    let mut stdin = kubectl.stdin.take().context("kubectl's stdin")?;
    stdin.write_all(manifest.as_bytes()).await?;
    drop(stdin);
    if !kubectl.wait().await?.success() {
        bail!("kubectl apply of the walk's CatalogEntries failed");
    }
    Ok(())
}
