//! Running one script against one server: each step's request as its user, waits repeated until
//! they hold, captures into the run's variables, answers normalised.

use std::collections::BTreeMap;
use std::time::{Duration, Instant};

use serde_json::Value;

use super::compare::{Answer, Outcome};
use super::normalize::normalize;
use super::script::{CompareMode, Script, Step, substitute, substitute_value};

/// How long a step's `wait` may take: kcp moves a workspace to Ready in about a second.
const WAIT_TIMEOUT: Duration = Duration::from_secs(30);
const POLL: Duration = Duration::from_millis(100);

/// A server and the bearer tokens of the static users.
pub struct Target {
    pub base: String,
    pub tokens: BTreeMap<String, String>,
    http: reqwest::Client,
}

impl Target {
    pub fn new(base: String, tokens: BTreeMap<String, String>) -> anyhow::Result<Self> {
        // Both servers are processes (or a task) this run started on loopback, each with a fresh
        // self-signed serving certificate: their identity is not in question.
        let http = reqwest::Client::builder()
            .tls_danger_accept_invalid_certs(true)
            .timeout(Duration::from_secs(30))
            .build()?;
        Ok(Self { base, tokens, http })
    }

    /// Whether `/readyz` answers 200.
    pub async fn ready(&self) -> bool {
        let r = self.http.get(format!("{}/readyz", self.base)).send().await;
        r.is_ok_and(|r| r.status().as_u16() == 200)
    }

    /// `path` read as `user`: its status code and JSON body, or None when there was no JSON answer.
    pub async fn get_json(&self, user: &str, path: &str) -> Option<(u16, Value)> {
        let mut req = self
            .http
            .get(format!("{}{path}", self.base))
            .header("Accept", "application/json");
        if let Some(token) = self.tokens.get(user) {
            req = req.bearer_auth(token);
        }
        let resp = req.send().await.ok()?;
        let code = resp.status().as_u16();
        Some((code, resp.json().await.ok()?))
    }
}

/// Every step's outcome, in order. `side` names the server in the notes of waits that ran out.
pub async fn run(target: &Target, script: &Script, side: &str) -> Vec<Outcome> {
    let host = target.base.trim_start_matches("https://").to_string();
    let mut vars = BTreeMap::from([("server".to_string(), target.base.clone()), ("host".to_string(), host)]);
    let mut outcomes = Vec::with_capacity(script.steps.len());
    for step in &script.steps {
        let outcome = step_outcome(target, step, &vars, side).await.map(|(code, body)| {
            for (name, pointer) in &step.capture {
                if let Some(text) = captured(&body, pointer) {
                    vars.insert(name.clone(), text);
                }
            }
            Answer {
                code,
                body: normalize(&body, &vars),
            }
        });
        outcomes.push(outcome);
    }
    outcomes
}

/// The value at `pointer`, as text; `base64:<pointer>` decodes it (a Secret's token).
fn captured(body: &Value, pointer: &str) -> Option<String> {
    use base64::Engine;
    let (decode, pointer) = match pointer.strip_prefix("base64:") {
        Some(p) => (true, p),
        None => (false, pointer),
    };
    let v = body.pointer(pointer)?;
    let text = v.as_str().map_or_else(|| v.to_string(), str::to_string);
    if !decode {
        return Some(text);
    }
    let bytes = base64::engine::general_purpose::STANDARD.decode(text).ok()?;
    String::from_utf8(bytes).ok()
}

/// The step's answer; with a `wait`, the first answer that satisfies it, or the last one once the
/// wait ran out. Running out is not an error (a step may wait for what kcp never does, to show it),
/// but it is said on stderr: the comparison is then of a state one side had not left yet.
async fn step_outcome(
    target: &Target,
    step: &Step,
    vars: &BTreeMap<String, String>,
    side: &str,
) -> Result<(u16, Value), String> {
    let started = Instant::now();
    loop {
        let (code, body) = request(target, step, vars).await?;
        match &step.wait {
            Some(wait) if !wait.satisfied(code, &body) => {
                if started.elapsed() >= WAIT_TIMEOUT {
                    eprintln!(
                        "  {side}: \"{}\": the wait did not hold within {}s (last answer {code})",
                        step.name,
                        WAIT_TIMEOUT.as_secs()
                    );
                    return Ok((code, body));
                }
                tokio::time::sleep(POLL).await;
            }
            _ => return Ok((code, body)),
        }
    }
}

async fn request(target: &Target, step: &Step, vars: &BTreeMap<String, String>) -> Result<(u16, Value), String> {
    let method = reqwest::Method::from_bytes(step.method.as_bytes()).map_err(|e| e.to_string())?;
    let url = format!("{}{}", target.base, substitute(&step.path, vars));
    let mut req = target.http.request(method, url);
    // JSON unless the step negotiates something else.
    if !step.headers.keys().any(|k| k.eq_ignore_ascii_case("accept")) {
        req = req.header("Accept", "application/json");
    }
    let token = match step.user.strip_prefix('$') {
        Some(var) => Some(
            vars.get(var)
                .cloned()
                .ok_or(format!("no variable {var} for the token"))?,
        ),
        None => target.tokens.get(&step.user).cloned(),
    };
    if let Some(token) = token {
        req = req.bearer_auth(token);
    }
    for (k, v) in &step.headers {
        req = req.header(k, substitute(v, vars));
    }
    if let Some(body) = &step.body {
        let content_type = step.content_type.as_deref().unwrap_or("application/json");
        req = req
            .header("Content-Type", content_type)
            .body(substitute_value(body, vars).to_string());
    }
    let resp = req.send().await.map_err(|e| format!("request failed: {e}"))?;
    let code = resp.status().as_u16();
    if step.compare == CompareMode::ContentType {
        let content_type = resp.headers().get("content-type").and_then(|v| v.to_str().ok());
        return Ok((code, serde_json::json!({"contentType": content_type})));
    }
    let text = resp.text().await.map_err(|e| format!("reading the body: {e}"))?;
    let body = serde_json::from_str(&text).unwrap_or_else(|_| Value::String(text.trim().to_string()));
    Ok((code, body))
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn captures_read_pointers_and_decode_base64() {
        let body = json!({"spec": {"cluster": "abc", "n": 3}, "data": {"token": "dG9rZW4="}});
        assert_eq!(captured(&body, "/spec/cluster").as_deref(), Some("abc"));
        assert_eq!(captured(&body, "/spec/n").as_deref(), Some("3"));
        assert_eq!(captured(&body, "base64:/data/token").as_deref(), Some("token"));
        assert_eq!(captured(&body, "/missing"), None);
        assert_eq!(captured(&body, "base64:/spec/cluster"), None);
    }
}
