//! The official MCP SDKs as clients of the hub (the replicas test, and the clients scenario on every
//! target): `e2e/mcp-sdk/client.py` (Python, `mcp` from PyPI)
//! and `e2e/mcp-sdk/client.mjs` (TypeScript, `@modelcontextprotocol/sdk` from npm), each a child
//! process holding one streamable-HTTP session and following commands over JSON lines (the
//! protocol is in `e2e/mcp-sdk/README.md`). Every wait has a deadline; a failure quotes the
//! client's stderr.

use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::time::Duration;

use anyhow::{Context, bail};
use serde_json::{Value, json};
use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader};
use tokio::process::{Child, ChildStdin, Command};
use tokio::sync::{Mutex, mpsc};

/// Longest wait for the client to initialize, or for the answer to one command.
const ANSWER_TIMEOUT: Duration = Duration::from_secs(60);

/// Which SDK.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Sdk {
    Python,
    TypeScript,
}

impl Sdk {
    pub const ALL: [Sdk; 2] = [Sdk::Python, Sdk::TypeScript];

    pub fn name(self) -> &'static str {
        match self {
            Sdk::Python => "Python MCP SDK",
            Sdk::TypeScript => "TypeScript MCP SDK",
        }
    }

    /// The command running the client script in `dir` (`e2e/mcp-sdk`), and how to install what it
    /// needs when it is missing.
    fn command(self, dir: &Path, ca: &Path) -> anyhow::Result<Command> {
        let (mut cmd, missing) = match self {
            Sdk::Python => {
                let installed = std::process::Command::new("python3")
                    .args(["-c", "import mcp"])
                    .stderr(Stdio::null())
                    .status()
                    .is_ok_and(|s| s.success());
                let mut cmd = Command::new("python3");
                cmd.arg(dir.join("client.py"));
                (
                    cmd,
                    (!installed).then_some("python3 -m pip install mcp==<the version .ci/run pins>"),
                )
            }
            Sdk::TypeScript => {
                let mut cmd = Command::new("node");
                cmd.arg(dir.join("client.mjs"))
                    // Node reads extra trust at start; the SDK's fetch uses it.
                    .env("NODE_EXTRA_CA_CERTS", ca);
                let installed = dir.join("node_modules/@modelcontextprotocol/sdk/package.json");
                (cmd, (!installed.is_file()).then_some("npm ci --prefix e2e/mcp-sdk"))
            }
        };
        if let Some(install) = missing {
            bail!(
                "the {} is not installed: run `{install}` (what .ci/run does)",
                self.name()
            );
        }
        cmd.current_dir(dir);
        Ok(cmd)
    }
}

/// One SDK client process and its session.
pub struct SdkClient {
    pub sdk: Sdk,
    child: Child,
    /// Commands go one at a time: a command and its reply under one lock.
    io: Mutex<Io>,
    /// One `()` per `tools/list_changed`.
    changed: mpsc::UnboundedReceiver<()>,
    stderr: PathBuf,
}

struct Io {
    stdin: ChildStdin,
    /// Replies to commands, in order (and the `ready` event first).
    replies: mpsc::UnboundedReceiver<Value>,
}

impl SdkClient {
    /// Starts `sdk`'s client against `url` with bearer `token`, trusting `ca`; returns once it has
    /// initialized its session. Its stderr goes to `<log_dir>/<sdk>.log`.
    pub async fn start(sdk: Sdk, url: &str, token: &str, ca: &Path, log_dir: &Path) -> anyhow::Result<Self> {
        let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("mcp-sdk");
        let stderr = log_dir.join(format!("{sdk:?}-mcp-sdk.log").to_lowercase());
        let mut child = sdk
            .command(&dir, ca)?
            .env("FAROS_MCP_URL", url)
            // The token in the environment, not on the command line other users can read.
            .env("FAROS_MCP_TOKEN", token)
            .env("FAROS_MCP_CA", ca)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(std::fs::File::create(&stderr)?)
            .kill_on_drop(true)
            .spawn()
            .with_context(|| format!("starting the {} client", sdk.name()))?;
        let stdin = child.stdin.take().context("no stdin")?;
        let stdout = child.stdout.take().context("no stdout")?;
        let (reply_tx, replies) = mpsc::unbounded_channel();
        let (changed_tx, changed) = mpsc::unbounded_channel();
        tokio::spawn(async move {
            let mut lines = BufReader::new(stdout).lines();
            while let Ok(Some(line)) = lines.next_line().await {
                let value = serde_json::from_str(&line).unwrap_or(Value::String(line));
                if value["event"] == "tools/list_changed" {
                    let _ = changed_tx.send(());
                } else {
                    let _ = reply_tx.send(value);
                }
            }
        });
        let client = Self {
            sdk,
            child,
            io: Mutex::new(Io { stdin, replies }),
            changed,
            stderr,
        };
        let ready = client.reply(&mut *client.io.lock().await, "to initialize").await?;
        if ready["event"] != "ready" {
            bail!("{}: expected the ready event, got {ready}", sdk.name());
        }
        eprintln!(
            "{}: session initialized (protocol {})",
            sdk.name(),
            ready["protocolVersion"]
        );
        Ok(client)
    }

    /// The sorted tool names `tools/list` answers.
    pub async fn list(&self) -> anyhow::Result<Vec<String>> {
        let reply = self.command(json!({"op": "list"})).await?;
        serde_json::from_value(reply["tools"].clone()).with_context(|| format!("{}: list: {reply}", self.sdk.name()))
    }

    /// Calls tool `name`; its text, or an error when the call failed or the tool said it failed.
    pub async fn call(&self, name: &str, arguments: Value) -> anyhow::Result<String> {
        let reply = self
            .command(json!({"op": "call", "name": name, "arguments": arguments}))
            .await?;
        if reply["isError"] != false {
            bail!("{}: {name} answered an error: {reply}", self.sdk.name());
        }
        Ok(reply["text"].as_str().unwrap_or_default().to_string())
    }

    /// Drops the `tools/list_changed` received so far.
    pub fn drain(&mut self) {
        while self.changed.try_recv().is_ok() {}
    }

    /// Waits up to `timeout` for the next `tools/list_changed`.
    pub async fn next_list_changed(&mut self, timeout: Duration) -> anyhow::Result<()> {
        match tokio::time::timeout(timeout, self.changed.recv()).await {
            Ok(Some(())) => Ok(()),
            Ok(None) => bail!(
                "{} exited before a tools/list_changed{}",
                self.sdk.name(),
                self.stderr_tail()
            ),
            Err(_) => bail!(
                "{}: no tools/list_changed within {timeout:?}{}",
                self.sdk.name(),
                self.stderr_tail()
            ),
        }
    }

    /// Ends the session (the SDK's own close) and waits for the process to exit.
    pub async fn close(mut self) -> anyhow::Result<()> {
        self.command(json!({"op": "close"})).await?;
        drop(self.io);
        let status = tokio::time::timeout(ANSWER_TIMEOUT, self.child.wait())
            .await
            .context("the client did not exit")??;
        if !status.success() {
            bail!("{} exited with {status}{}", self.sdk.name(), tail(&self.stderr));
        }
        Ok(())
    }

    /// Sends one command and returns its reply; a reply with `error` is an error.
    async fn command(&self, command: Value) -> anyhow::Result<Value> {
        let mut io = self.io.lock().await;
        let mut line = command.to_string();
        line.push('\n');
        io.stdin.write_all(line.as_bytes()).await?;
        io.stdin.flush().await?;
        let reply = self.reply(&mut io, &format!("to {command}")).await?;
        if let Some(error) = reply["error"].as_str() {
            bail!("{}: {command} failed: {error}{}", self.sdk.name(), self.stderr_tail());
        }
        Ok(reply)
    }

    async fn reply(&self, io: &mut Io, what: &str) -> anyhow::Result<Value> {
        match tokio::time::timeout(ANSWER_TIMEOUT, io.replies.recv()).await {
            Ok(Some(reply)) => Ok(reply),
            Ok(None) => bail!(
                "{} exited while waiting for its answer {what}{}",
                self.sdk.name(),
                self.stderr_tail()
            ),
            Err(_) => bail!(
                "{}: no answer {what} within {ANSWER_TIMEOUT:?}{}",
                self.sdk.name(),
                self.stderr_tail()
            ),
        }
    }

    fn stderr_tail(&self) -> String {
        tail(&self.stderr)
    }
}

fn tail(path: &Path) -> String {
    format!("; its stderr ends:\n{}", faros_test_support::child::tail(path))
}
