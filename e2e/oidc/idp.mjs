// A real OpenID Connect provider for the faros tests: panva's oidc-provider (OpenID Certified),
// configured with static users from a file and a login form of our own.
//
// Usage: node idp.mjs <config.json>
//   config: {
//     "port": 0, "cert": "server.pem", "key": "server-key.pem",      (TLS, paths relative to the config)
//     "users": "users.json",                                          (re-read on every login and token use)
//     "clients": [{ "client_id", "redirect_uris", "post_logout_redirect_uris", "application_type"? }],
//     "ttl": { "IdToken": 3600, "AccessToken": 3600, "RefreshToken": 86400, "Interaction": 600, "Session": 3600 },
//     "admin_token": "..."                                            (guards /admin/*)
//   }
//   users.json: [{ "username", "password", "email", "groups": [], "disabled"?: true }]
//
// The device authorization grant (RFC 8628) is on for clients that list its grant type: the user
// opens /device?user_code=…, confirms the code, and signs in with the same login form.
//
// Prints one line `listening <port>` on stdout once serving. The issuer is https://127.0.0.1:<port>.
// Admin endpoints (Bearer admin_token): POST /admin/rotate (a new signing key; the old one is no
// longer published, as after a real rotation) and POST /admin/reload (re-read the config's clients).
// Neither passwords nor tokens are logged.

import { randomBytes, generateKeyPairSync, createHash, timingSafeEqual } from 'node:crypto';
import { readFileSync } from 'node:fs';
import https from 'node:https';
import { dirname, resolve } from 'node:path';
import Provider from 'oidc-provider';

const configPath = resolve(process.argv[2] ?? '');
const baseDir = dirname(configPath);
const readConfig = () => JSON.parse(readFileSync(configPath, 'utf8'));
let config = readConfig();
const fromBase = (p) => resolve(baseDir, p);

// Users come from the file on every use, so a test disables a user by editing it.
function users() {
  return JSON.parse(readFileSync(fromBase(config.users), 'utf8'));
}
function findUser(username) {
  return users().find((u) => u.username === username);
}
function sameSecret(a, b) {
  const digest = (s) => createHash('sha256').update(String(s)).digest();
  return timingSafeEqual(digest(a), digest(b));
}

function newSigningKey() {
  const { privateKey } = generateKeyPairSync('rsa', { modulusLength: 2048 });
  const jwk = privateKey.export({ format: 'jwk' });
  return { ...jwk, kid: randomBytes(8).toString('hex'), use: 'sig', alg: 'RS256' };
}

const server = https.createServer({
  cert: readFileSync(fromBase(config.cert)),
  key: readFileSync(fromBase(config.key)),
});
let signingKey = newSigningKey();
let provider;

function buildProvider(issuer) {
  const ttl = config.ttl ?? {};
  const p = new Provider(issuer, {
    clients: config.clients.map((c) => ({
      grant_types: ['authorization_code', 'refresh_token'],
      response_types: ['code'],
      token_endpoint_auth_method: 'none',
      ...c,
    })),
    jwks: { keys: [signingKey] },
    pkce: { required: () => true },
    // Claims such as email and groups go into the ID token itself (kube reads only the ID token).
    conformIdTokenClaims: false,
    claims: {
      openid: ['sub'],
      email: ['email', 'email_verified'],
      profile: ['name', 'preferred_username'],
      groups: ['groups'],
    },
    scopes: ['openid', 'offline_access', 'email', 'profile', 'groups'],
    async findAccount(_ctx, sub) {
      const user = findUser(sub);
      // A disabled (or deleted) user has no account: refresh and userinfo fail from then on.
      if (!user || user.disabled) return undefined;
      return {
        accountId: sub,
        async claims() {
          return {
            sub,
            email: user.email,
            email_verified: true,
            name: user.username,
            preferred_username: user.username,
            groups: user.groups ?? [],
          };
        },
      };
    },
    // A first-party client: every scope it asks for is granted without a consent screen.
    async loadExistingGrant(ctx) {
      const grantId = ctx.oidc.result?.consent?.grantId
        || ctx.oidc.session.grantIdFor(ctx.oidc.client.clientId);
      if (grantId) {
        const grant = await ctx.oidc.provider.Grant.find(grantId);
        if (grant) return grant;
      }
      const grant = new ctx.oidc.provider.Grant({
        clientId: ctx.oidc.client.clientId,
        accountId: ctx.oidc.session.accountId,
      });
      grant.addOIDCScope(ctx.oidc.params.scope ?? 'openid');
      await grant.save();
      return grant;
    },
    features: {
      devInteractions: { enabled: false },
      // Plain pages of our own (the defaults fetch web fonts); the forms are oidc-provider's.
      deviceFlow: {
        enabled: true,
        async userCodeInputSource(ctx, form, _out, err) {
          const error = err ? `<p id="error" role="alert">${escape(err.message ?? 'invalid code')}</p>` : '';
          ctx.body = `<!doctype html><html><head><title>Test IdP device sign-in</title></head><body>
<h1>Enter the code shown on your device</h1>${error}${form}
<button type="submit" form="op.deviceInputForm">Continue</button></body></html>`;
        },
        async userCodeConfirmSource(ctx, form, client, _deviceInfo, userCode) {
          ctx.body = `<!doctype html><html><head><title>Test IdP device sign-in</title></head><body>
<h1>Sign in ${escape(client.clientId)} with code <code id="user-code">${escape(userCode)}</code>?</h1>${form}
<button type="submit" form="op.deviceConfirmForm">Continue</button></body></html>`;
        },
        async successSource(ctx) {
          ctx.body = '<!doctype html><html><body><h1 id="device-approved">Signed in: return to your device</h1></body></html>';
        },
      },
      rpInitiatedLogout: {
        enabled: true,
        // Logging out is confirmed without a page of its own: the RP asked for it. `logout=yes` is
        // "sign me out" (the whole IdP session), not only "forget this client".
        async logoutSource(ctx, form) {
          const confirmed = form.replace('</form>', '<input type="hidden" name="logout" value="yes"/></form>');
          ctx.body = `<!doctype html><html><body>${confirmed}<script>document.forms[0].submit()</script></body></html>`;
        },
        async postLogoutSuccessSource(ctx) {
          ctx.body = '<!doctype html><html><body><h1>Signed out</h1></body></html>';
        },
      },
    },
    interactions: { url: (_ctx, interaction) => `/interaction/${interaction.uid}` },
    ttl: {
      IdToken: ttl.IdToken ?? 3600,
      AccessToken: ttl.AccessToken ?? 3600,
      RefreshToken: ttl.RefreshToken ?? 86400,
      Interaction: ttl.Interaction ?? 600,
      Session: ttl.Session ?? 3600,
      Grant: ttl.Session ?? 3600,
      AuthorizationCode: 60,
    },
    cookies: { keys: [randomBytes(32).toString('hex')] },
    renderError(ctx, out) {
      ctx.type = 'html';
      ctx.body = `<!doctype html><html><body><h1>Sign-in error</h1><p id="error">${escape(out.error)}: ${escape(out.error_description ?? '')}</p></body></html>`;
    },
  });
  p.proxy = false;
  return p;
}

function escape(s) {
  return String(s).replace(/[&<>"']/g, (c) => `&#${c.charCodeAt(0)};`);
}

function loginPage(uid, error) {
  return `<!doctype html><html><head><title>Test IdP sign-in</title></head><body>
<h1>Sign in to the test identity provider</h1>
${error ? `<p id="error" role="alert">${escape(error)}</p>` : ''}
<form method="post" action="/interaction/${escape(uid)}/login">
<label>Username <input name="username" autocomplete="username" autofocus></label>
<label>Password <input name="password" type="password" autocomplete="current-password"></label>
<button type="submit">Sign in</button>
</form></body></html>`;
}

async function readForm(req) {
  let body = '';
  for await (const chunk of req) {
    body += chunk;
    if (body.length > 64 * 1024) throw new Error('form too large');
  }
  return new URLSearchParams(body);
}

function send(res, status, html) {
  res.writeHead(status, { 'content-type': 'text/html; charset=utf-8', 'cache-control': 'no-store' });
  res.end(html);
}

async function interaction(req, res, url) {
  const match = url.pathname.match(/^\/interaction\/([^/]+)(\/login)?$/);
  let details;
  try {
    details = await provider.interactionDetails(req, res);
  } catch {
    return send(res, 400, '<!doctype html><p id="error">This sign-in has expired or is unknown; start again.</p>');
  }
  if (details.uid !== match[1]) return send(res, 400, '<p id="error">interaction mismatch</p>');
  if (details.session?.accountId && details.prompt.name === 'consent') {
    // A first-party client: what it asks for is granted without a consent screen (also when it
    // asks for `prompt=consent`, as it must to get `offline_access`).
    return provider.interactionFinished(req, res, { consent: { grantId: await grantAll(details) } }, {
      mergeWithLastSubmission: true,
    });
  }
  if (req.method === 'GET' && !match[2]) return send(res, 200, loginPage(details.uid));
  if (req.method === 'POST' && match[2]) {
    const form = await readForm(req);
    const user = findUser(form.get('username') ?? '');
    const ok = user && sameSecret(user.password, form.get('password') ?? '');
    if (!ok) return send(res, 401, loginPage(details.uid, 'Invalid username or password.'));
    if (user.disabled) return send(res, 403, loginPage(details.uid, 'This account is disabled.'));
    return provider.interactionFinished(req, res, { login: { accountId: user.username } }, {
      mergeWithLastSubmission: false,
    });
  }
  return send(res, 405, 'method not allowed');
}

async function grantAll({ grantId, params, session, prompt: { details } }) {
  const grant = (grantId && (await provider.Grant.find(grantId)))
    || new provider.Grant({ accountId: session.accountId, clientId: params.client_id });
  if (details.missingOIDCScope) grant.addOIDCScope(details.missingOIDCScope.join(' '));
  if (details.missingOIDCClaims) grant.addOIDCClaims(details.missingOIDCClaims);
  for (const [indicator, scopes] of Object.entries(details.missingResourceScopes ?? {})) {
    grant.addResourceScope(indicator, scopes.join(' '));
  }
  return grant.save();
}

function admin(req, res, url) {
  const auth = req.headers.authorization ?? '';
  if (!config.admin_token || !sameSecret(auth, `Bearer ${config.admin_token}`)) {
    res.writeHead(401).end();
    return;
  }
  if (req.method !== 'POST') {
    res.writeHead(405).end();
    return;
  }
  if (url.pathname === '/admin/rotate') signingKey = newSigningKey();
  else if (url.pathname === '/admin/reload') config = readConfig();
  else {
    res.writeHead(404).end();
    return;
  }
  provider = buildProvider(provider.issuer);
  res.writeHead(204).end();
}

server.on('request', (req, res) => {
  const url = new URL(req.url, 'https://127.0.0.1');
  const fail = (e) => {
    console.error(`idp: ${req.method} ${url.pathname}: ${e.message}`);
    if (!res.headersSent) send(res, 500, '<p id="error">internal error</p>');
  };
  try {
    if (url.pathname.startsWith('/interaction/')) return interaction(req, res, url).catch(fail);
    if (url.pathname.startsWith('/admin/')) return admin(req, res, url);
    return provider.callback()(req, res);
  } catch (e) {
    return fail(e);
  }
});

server.listen(config.port ?? 0, '127.0.0.1', () => {
  const { port } = server.address();
  provider = buildProvider(`https://127.0.0.1:${port}`);
  console.log(`listening ${port}`);
});
process.on('SIGTERM', () => process.exit(0));
