// A headless relying party for tests that need a user's tokens without a browser: the
// authorization-code + PKCE flow through the IdP's own login form (as a browser would submit it),
// then the code exchange, or a refresh-token grant.
//
// Usage: node login.mjs <issuer> <client_id> <redirect_uri> <username> <password> [scope]
//        node login.mjs --refresh <issuer> <client_id> <refresh_token>
// Trust the IdP's CA with NODE_EXTRA_CA_CERTS. Prints the token response as JSON on stdout; on a
// refused login or grant prints the reason on stderr and exits 1.

import { createHash, randomBytes } from 'node:crypto';

const b64url = (buf) => Buffer.from(buf).toString('base64url');
const die = (msg) => {
  console.error(msg);
  process.exit(1);
};

async function discovery(issuer) {
  const res = await fetch(`${issuer}/.well-known/openid-configuration`);
  if (!res.ok) die(`discovery: ${res.status}`);
  return res.json();
}

async function tokenRequest(doc, form) {
  const res = await fetch(doc.token_endpoint, {
    method: 'POST',
    headers: { 'content-type': 'application/x-www-form-urlencoded' },
    body: new URLSearchParams(form),
  });
  const body = await res.json();
  if (!res.ok) die(`token endpoint: ${res.status} ${body.error}: ${body.error_description ?? ''}`);
  process.stdout.write(`${JSON.stringify(body)}\n`);
}

// A minimal cookie jar: the IdP's cookies are host-only and path-scoped, one host here.
const jar = new Map();
function remember(res) {
  for (const line of res.headers.getSetCookie()) {
    const [pair] = line.split(';');
    const eq = pair.indexOf('=');
    jar.set(pair.slice(0, eq).trim(), pair.slice(eq + 1));
  }
}
const cookieHeader = () => [...jar].map(([k, v]) => `${k}=${v}`).join('; ');

async function follow(url, init = {}) {
  let next = url;
  let options = init;
  for (let hops = 0; hops < 10; hops += 1) {
    const res = await fetch(next, {
      ...options,
      redirect: 'manual',
      headers: { ...(options.headers ?? {}), cookie: cookieHeader() },
    });
    remember(res);
    const location = res.headers.get('location');
    if (!location) return { res, url: next };
    next = new URL(location, next).toString();
    options = {};
    if (next.startsWith(redirectUri)) return { res, url: next };
  }
  die('too many redirects');
}

let redirectUri = '';

async function login([issuer, clientId, redirect, username, password, scope]) {
  redirectUri = redirect;
  const doc = await discovery(issuer);
  const verifier = b64url(randomBytes(32));
  const state = b64url(randomBytes(16));
  const auth = new URL(doc.authorization_endpoint);
  auth.search = new URLSearchParams({
    response_type: 'code',
    client_id: clientId,
    redirect_uri: redirect,
    scope: scope ?? 'openid email profile groups offline_access',
    state,
    nonce: b64url(randomBytes(16)),
    prompt: 'consent',
    code_challenge: b64url(createHash('sha256').update(verifier).digest()),
    code_challenge_method: 'S256',
  }).toString();
  const form = await follow(auth.toString());
  const action = form.url.replace(/\/?$/, '/login');
  const submitted = await follow(action, {
    method: 'POST',
    headers: { 'content-type': 'application/x-www-form-urlencoded' },
    body: new URLSearchParams({ username, password }),
  });
  if (!submitted.url.startsWith(redirect)) {
    die(`login refused: ${submitted.res.status} ${(await submitted.res.text()).match(/id="error"[^>]*>([^<]*)/)?.[1] ?? ''}`);
  }
  const params = new URL(submitted.url).searchParams;
  if (params.get('state') !== state) die('callback state mismatch');
  if (!params.get('code')) die(`authorization error: ${params.get('error')}: ${params.get('error_description')}`);
  await tokenRequest(doc, {
    grant_type: 'authorization_code',
    code: params.get('code'),
    redirect_uri: redirect,
    client_id: clientId,
    code_verifier: verifier,
  });
}

async function refresh([issuer, clientId, refreshToken]) {
  const doc = await discovery(issuer);
  await tokenRequest(doc, { grant_type: 'refresh_token', refresh_token: refreshToken, client_id: clientId });
}

const args = process.argv.slice(2);
if (args[0] === '--refresh') await refresh(args.slice(1));
else await login(args);
