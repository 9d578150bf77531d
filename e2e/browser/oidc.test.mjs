// The portal's OIDC sign-in in a real browser against a real identity provider (started with
// `faros dev --oidc-…` by crates/faros/tests/portal_oidc.rs, which passes the environment below).
// Exit code 0 = every step passed.
//
// FAROS_HUB_URL, FAROS_IDP_URL (the test IdP, e2e/oidc: alice/wonderland in groups dev and ops;
// carol, whom the IdP has disabled), FAROS_IDP_USERS (the IdP's users file, re-read on every use:
// the walk edits it to take alice out of a group or disable her), FAROS_ID_TOKEN_TTL (seconds the
// IdP's ID tokens live), FAROS_DEV_TOKEN (faros dev's user, admin of workspace demo/default: the
// walk has them grant IdP group `dev` a role there on the members page), FAROS_PORTAL_FAILURES
// (where failure screenshots go), FAROS_PORTAL_SCREENSHOTS (optional: where screenshots go).
// alice is no member of anything herself: everything she reaches, she reaches through group `dev`.

import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { browser, page, accessible, tabTo, providerFrame, shot, until, assert, steps, cleanupProfiles } from './lib.mjs';

const HUB = need('FAROS_HUB_URL').replace(/\/$/, '');
const IDP = need('FAROS_IDP_URL').replace(/\/$/, '');
const STATE_COOKIE = '__Secure-faros-oidc';
const USERS = need('FAROS_IDP_USERS');
const TTL_MS = Number(need('FAROS_ID_TOKEN_TTL')) * 1000;
const DEV_TOKEN = need('FAROS_DEV_TOKEN');
const WS = `${HUB}/portal/orgs/demo/workspaces/default`;
// The hub accepts an ID token this long past its expiry (faros_core::oidc::LEEWAY_SECONDS).
const LEEWAY_MS = 30 * 1000;

function need(name) {
  const v = process.env[name];
  if (!v) throw new Error(`${name} is not set`);
  return v;
}

const ctx = await browser();
const pg = await page(ctx);
const tmp = fs.mkdtempSync(path.join(os.tmpdir(), 'faros-oidc-'));
// Every callback the IdP sent the browser to, in order, with the flow cookie the browser sent along
// (to replay one as the same browser: the callback clears that cookie).
const callbacks = [];
pg.on('request', async (r) => {
  if (!r.url().startsWith(`${HUB}/api/session/oidc/callback`)) return;
  const entry = { url: r.url(), flow: null };
  callbacks.push(entry);
  const cookie = (await r.allHeaders()).cookie ?? '';
  const pair = cookie.split(';').map((c) => c.trim()).find((c) => c.startsWith(`${STATE_COOKIE}=`));
  entry.flow = pair ? pair.slice(STATE_COOKIE.length + 1) : null;
});

/** Changes a user in the IdP's users file (written whole, then renamed: the IdP never reads half). */
function setUser(username, change) {
  const users = JSON.parse(fs.readFileSync(USERS, 'utf8'));
  const user = users.find((u) => u.username === username);
  Object.assign(user, change);
  fs.writeFileSync(`${USERS}.walk`, JSON.stringify(users));
  fs.renameSync(`${USERS}.walk`, USERS);
}

/** Polls `check` (node side) until it returns a value; fails naming `what` after `timeout`. */
async function waitFor(what, check, timeout = 60000) {
  const deadline = Date.now() + timeout;
  let last;
  while (Date.now() < deadline) {
    try {
      const v = await check();
      if (v) return v;
    } catch (e) {
      last = e;
    }
    await new Promise((r) => { setTimeout(r, 200); });
  }
  throw new Error(`timed out waiting for ${what}${last ? `: ${last.message}` : ''}`);
}

/** The workspaces /api/me lists for the signed-in user, as `org/ws`. */
async function workspaces() {
  return pg.evaluate(async () => {
    const r = await fetch('/api/me', { credentials: 'same-origin' });
    if (r.status !== 200) return null;
    const me = await r.json();
    return me.organizations.flatMap((o) => o.workspaces.map((w) => `${o.name}/${w.name}`));
  });
}

/** Waits until a request renews the session's ID token past `after`; the new expiry (ms). */
async function renewedAfter(after) {
  return waitFor('the session to renew its ID token', async () => {
    const s = await session();
    assert(s.status === 200, `the session lives on: ${s.status} ${s.body}`);
    const t = Date.parse(s.body.tokenExpiresAt);
    return t > after ? t : null;
  });
}

async function session() {
  return pg.evaluate(async () => {
    const r = await fetch('/api/session', { credentials: 'same-origin' });
    return { status: r.status, body: r.status === 200 ? await r.json() : await r.text() };
  });
}

/** From the portal's sign-in page to the IdP's login form. */
async function toIdpForm() {
  await pg.goto(`${HUB}/portal/signin`);
  await pg.click('#signin-oidc');
  await pg.waitForURL((u) => u.toString().startsWith(`${IDP}/interaction/`));
  await pg.waitForSelector('input[name=username]');
}

async function submitIdpForm(username, password) {
  await pg.fill('input[name=username]', username);
  await pg.fill('input[name=password]', password);
  await pg.click('button[type=submit]');
}

/** Signed in: back on a portal page that is not the sign-in page, with a session. */
async function signedIn() {
  await pg.waitForURL((u) => u.toString().startsWith(`${HUB}/portal/`) && !u.pathname.startsWith('/portal/signin'));
  const s = await session();
  assert(s.status === 200, `a session after the callback: ${s.status}`);
  return s.body;
}

/** Back on the portal's sign-in page with an error banner containing `text`. */
async function refusedWith(text) {
  await pg.waitForURL(/\/portal\/signin\?error=/);
  await until(pg, `the sign-in error "${text}"`, (t) => document.querySelector('main [role=alert]')?.textContent.includes(t), text);
  assert((await session()).status === 401, 'no session');
}

async function portalSignOut() {
  await pg.click('#sign-out');
  await pg.waitForURL(/\/portal\/signin\?signedOut=1/);
  assert((await session()).status === 401, 'signed out');
  assert(!(await ctx.cookies(HUB)).some((c) => c.name === '__Host-faros-session'), 'the session cookie is cleared');
}

/** Waits for the URL and for the portal to have drawn that page (navigation is client-side). */
async function drawn(p, url, timeout = 30000) {
  await p.waitForURL(url, { timeout });
  await until(p, `the page ${url}`, () => document.getElementById('app')?.dataset.drawn === location.pathname, undefined, timeout);
}

/** Creates a Greeting for `who` in the quickstart UI (in its provider frame) and waits for the reply. */
async function greet(who) {
  await pg.goto(`${WS}/providers/quickstart/new`);
  const fr = await providerFrame(pg, 'faros-provider-quickstart form:not([hidden]) #qs-name');
  await fr.fill('#qs-name', who);
  await fr.fill('#qs-message', 'signed in through the IdP');
  await fr.click('button[type=submit]');
  await pg.waitForURL(/\/providers\/quickstart\/greetings\/greeting-[a-z0-9]+$/);
  await until(fr, `the reply to ${who}`, (w) => document.querySelector('faros-provider-quickstart .qs-reply')?.textContent.includes(`Hello, ${w}!`), who, 60000);
  return decodeURIComponent(pg.url().split('/').pop());
}

/** The role /api/me gives the signed-in user in demo/default ('' when none). */
async function demoRole() {
  return pg.evaluate(async () => {
    const r = await fetch('/api/me', { credentials: 'same-origin' });
    const me = r.status === 200 ? await r.json() : { organizations: [] };
    return me.organizations.find((o) => o.name === 'demo')?.workspaces.find((w) => w.name === 'default')?.role || '';
  });
}

const ok = await steps([
  ['the sign-in page offers the IdP', async () => {
    await pg.goto(`${HUB}/portal/signin`);
    await until(pg, 'the OIDC button', () => document.getElementById('signin-oidc')?.textContent.includes('127.0.0.1'));
  }],

  ['the workspace admin grants IdP group dev the admin role on the members page (keyboard; axe light and dark)', async () => {
    const adminCtx = await browser();
    try {
      const ap = await page(adminCtx);
      await ap.goto(`${HUB}/portal/signin?return=${encodeURIComponent('/portal/orgs/demo/workspaces/default/members')}`);
      await ap.fill('#token', DEV_TOKEN);
      await ap.press('#token', 'Enter');
      await drawn(ap, `${WS}/members`);
      await until(ap, 'the empty group roles', () => document.querySelector('.grants-group tbody')?.textContent.includes('No group has a role here.'));
      // The hub's own rule, said next to the field before any request.
      await ap.fill('#group-name', 'system:authenticated');
      await ap.click('button:text("Grant role")');
      await until(ap, 'the field error', () => document.getElementById('group-name-error')?.textContent.includes('System groups'));
      assert(await ap.getAttribute('#group-name', 'aria-invalid') === 'true', 'the field is marked invalid');
      await ap.fill('#group-name', '');
      // Keyboard alone: the name, the role, Grant.
      await ap.evaluate(() => document.activeElement?.blur());
      await tabTo(ap, '#group-name');
      await ap.keyboard.type('dev');
      await ap.keyboard.press('Tab');
      assert(await ap.evaluate(() => document.activeElement?.id) === 'group-grant-role', 'Tab reaches the role');
      await ap.keyboard.press('ArrowDown');
      assert(await ap.inputValue('#group-grant-role') === 'admin', 'the role chosen with the keyboard');
      await ap.keyboard.press('Tab');
      await ap.keyboard.press('Enter');
      await until(ap, 'group dev in the table', () => document.querySelector('tr[data-group=dev] select')?.value === 'admin');
      assert((await ap.innerText('#group-messages')).includes('Everyone in group dev is now an admin of the workspace demo/default.'), await ap.innerText('#group-messages'));
      assert(await ap.getAttribute('#group-name', 'aria-invalid') === 'false', 'the field is valid again');
      // Another group: granted, changed in its row, revoked after confirming.
      await ap.fill('#group-name', 'auditors');
      await ap.click('button:text("Grant role")');
      await ap.waitForSelector('tr[data-group=auditors]');
      assert(await ap.inputValue('tr[data-group=auditors] select') === 'member', 'granted as member');
      // Changed in its row and revoked with the keyboard too.
      await tabTo(ap, 'tr[data-group=auditors] select');
      await ap.keyboard.press('ArrowDown');
      await until(ap, 'auditors to be admin', () => document.getElementById('group-messages')?.textContent.includes('group auditors is now an admin'));
      const granted = await (await adminCtx.request.get(`${HUB}/api/orgs/demo/workspaces/default/groups`)).json();
      assert(JSON.stringify(granted.items.map((g) => [g.group, g.role]).sort()) === JSON.stringify([['auditors', 'admin'], ['dev', 'admin']]), `the hub's list: ${JSON.stringify(granted)}`);
      await accessible(ap, 'members with group roles');
      await shot(ap, 'group-roles');
      await tabTo(ap, 'tr[data-group=auditors] button[aria-label="Revoke group auditors"]');
      await ap.keyboard.press('Enter');
      await ap.waitForSelector('dialog[open]');
      assert((await ap.innerText('dialog[open]')).includes('Everyone in group auditors loses'), await ap.innerText('dialog[open]'));
      await accessible(ap, 'revoke dialog');
      await tabTo(ap, 'dialog[open] button[type=submit]');
      await ap.keyboard.press('Enter');
      await until(ap, 'auditors to be gone', () => !document.querySelector('tr[data-group=auditors]') && document.querySelector('tr[data-group=dev]'));
      await ap.selectOption('#theme-select', 'dark');
      await until(ap, 'the dark theme', () => document.documentElement.dataset.theme === 'dark');
      await accessible(ap, 'members with group roles, dark');
      // The organization's page has its own (empty) group roles.
      await ap.click('nav a:text-is("Organization members")');
      await drawn(ap, `${HUB}/portal/orgs/demo/members`);
      await until(ap, 'the organization’s group roles', () => document.querySelector('.grants-group tbody')?.textContent.includes('No group has a role here.'));
      await accessible(ap, 'organization members, dark');
      assert(adminCtx.problems.length === 0, adminCtx.problems.join('\n'));
    } finally {
      await adminCtx.close();
    }
  }],

  ['a wrong password is refused by the IdP form', async () => {
    await toIdpForm();
    await submitIdpForm('alice', 'not-her-password');
    await until(pg, 'the IdP error', () => document.getElementById('error')?.textContent.includes('Invalid username or password'));
    assert(pg.url().startsWith(`${IDP}/interaction/`), `still at the IdP: ${pg.url()}`);
  }],

  ['redirect, the IdP login form, callback, session', async () => {
    await submitIdpForm('alice', 'wonderland');
    const me = await signedIn();
    assert(me.user === 'alice@example.com', `the session's user: ${JSON.stringify(me)}`);
    assert(callbacks.length === 1, `one callback: ${callbacks.length}`);
    const cookies = await ctx.cookies(HUB);
    assert(cookies.some((c) => c.name === '__Host-faros-session' && c.httpOnly && c.secure), 'the session cookie');
    assert(!cookies.some((c) => c.name === STATE_COOKIE), 'the flow cookie is cleared');
  }],

  ['the session carries a short-lived ID token and the workspace granted to her group in the UI', async () => {
    const s = await session();
    const left = Date.parse(s.body.tokenExpiresAt) - Date.now();
    assert(left > 0 && left <= TTL_MS + 2000, `an ID token of ${TTL_MS} ms: ${JSON.stringify(s.body)}`);
    assert(s.body.groups.includes('dev'), JSON.stringify(s.body));
    // Not a direct member: IdP group `dev` holds the workspace's admin role (granted above).
    await waitFor('demo/default in /api/me', async () => (await workspaces())?.includes('demo/default'));
    assert(await demoRole() === 'admin', 'admin through group dev');
    const members = await pg.evaluate(async () => (await (await fetch('/api/orgs/demo/workspaces/default/members', { credentials: 'same-origin' })).json()).items.map((m) => m.user));
    assert(!members.includes('alice@example.com'), `alice is no member herself: ${members}`);
    await pg.goto(`${HUB}/portal/orgs/demo/workspaces/default/catalog`);
    await until(pg, 'the workspace in the switcher', () => document.getElementById('ws-select')?.value === 'default');
  }],

  ['she enables quickstart, creates a Greeting in its UI (the provider frame) and sees the reply', async () => {
    await pg.goto(`${WS}/catalog`);
    await pg.waitForSelector('.card[data-provider=quickstart] button[aria-label="Enable Quickstart"]:not([disabled])');
    await pg.click('.card[data-provider=quickstart] button[aria-label="Enable Quickstart"]');
    await pg.waitForSelector('dialog[open] input[data-resource=configmaps]');
    await pg.click('dialog[open] button[type=submit]');
    await until(pg, 'quickstart Enabled', () => document.querySelector('.card[data-provider=quickstart] .state')?.dataset.state === 'enabled', undefined, 60000);
    await pg.waitForSelector('nav li[data-provider=quickstart]');
    const greeting = await greet('Alice');
    const fr = await providerFrame(pg, 'faros-provider-quickstart');
    const user = await fr.evaluate(() => document.querySelector('faros-provider-quickstart').farosContext.user);
    assert(user === 'alice@example.com', `the provider sees the IdP user: ${user}`);
    console.log(`     ${greeting} replied`);
  }],

  ['the session outlives its ID token through refresh', async () => {
    const first = Date.parse((await session()).body.tokenExpiresAt);
    let current = first;
    // Renewal after renewal (each one observed as a new expiry) until the first token is refused.
    while (Date.now() <= first + LEEWAY_MS + 1000) current = await renewedAfter(current);
    console.log(`     the first ID token expired at ${new Date(first).toISOString()}; the session's now expires at ${new Date(current).toISOString()}`);
    await pg.reload();
    await until(pg, 'the portal still signed in', () => document.getElementById('signed-in-user')?.textContent.includes('alice@example.com'));
    assert((await workspaces())?.includes('demo/default'), 'the workspace after the first token expired');
    // The provider's backend, reached through the portal with the renewed session, still works.
    await greet('Alice again');
  }],

  ['the IdP takes alice out of group dev: the workspace goes with her next token', async () => {
    const before = Date.parse((await session()).body.tokenExpiresAt);
    setUser('alice', { groups: ['ops'] });
    await waitFor('demo/default to leave /api/me', async () => {
      const ws = await workspaces();
      return ws && !ws.includes('demo/default');
    });
    const s = await session();
    assert(Date.parse(s.body.tokenExpiresAt) > before, 'access ended with a renewal');
    assert(!s.body.groups.includes('dev'), JSON.stringify(s.body.groups));
    setUser('alice', { groups: ['dev', 'ops'] });
  }],

  ['a replayed callback is refused', async () => {
    const replay = new URL(callbacks[0].url);
    // Even with the flow's cookie back in place, the IdP spends a code once.
    assert(callbacks[0].flow, 'the first callback carried the flow cookie');
    await ctx.addCookies([{ name: STATE_COOKIE, value: callbacks[0].flow, domain: replay.hostname, path: '/api/session/oidc', secure: true, httpOnly: true, sameSite: 'Lax' }]);
    await portalSignOut();
    await pg.goto(replay.toString());
    await refusedWith('already used');
  }],

  ['sign-out performed RP-initiated logout: signing in again needs the IdP form', async () => {
    // portalSignOut went through the IdP's end_session_endpoint and back to the sign-in page.
    await toIdpForm();
    await submitIdpForm('alice', 'wonderland');
    const me = await signedIn();
    assert(me.user === 'alice@example.com', JSON.stringify(me));
  }],

  ['the IdP disables alice: her session ends at the next renewal', async () => {
    setUser('alice', { disabled: true });
    await waitFor('the session to end', async () => (await session()).status === 401);
    await pg.reload();
    await pg.waitForURL(/\/portal\/signin/);
    setUser('alice', { disabled: false });
    // Her session at the IdP outlived the hub's (the IdP only refuses her tokens): end it there,
    // with the IdP's logout for this client, so the next sign-in shows the form again.
    const doc = await (await ctx.request.get(`${IDP}/.well-known/openid-configuration`)).json();
    const logout = new URL(doc.end_session_endpoint);
    logout.search = new URLSearchParams({ client_id: 'faros-portal', post_logout_redirect_uri: `${HUB}/portal/signin?signedOut=1` }).toString();
    await pg.goto(logout.toString());
    await pg.waitForURL(/\/portal\/signin\?signedOut=1/);
  }],

  ['a wrong state is refused', async () => {
    // A sign-in is in flight (the IdP form is open); a callback with another state is not its own.
    await pg.goto(`${HUB}/api/session/oidc/callback?code=forged&state=not-the-flows-state`);
    await refusedWith('not started in this browser');
  }],

  ['an expired login at the IdP is refused', async () => {
    await toIdpForm();
    // The IdP's interaction cookies are what an expired login loses (their max-age is its TTL).
    const kept = (await ctx.cookies(IDP)).filter((c) => !c.name.startsWith('_interaction'));
    await ctx.clearCookies();
    await ctx.addCookies(kept);
    await submitIdpForm('alice', 'wonderland');
    await until(pg, 'the IdP saying the sign-in expired', () => document.getElementById('error')?.textContent.includes('expired'));
    assert((await ctx.request.get(`${HUB}/api/session`)).status() === 401, 'no hub session');
  }],

  ['a user the IdP disabled cannot sign in', async () => {
    await toIdpForm();
    await submitIdpForm('carol', 'carols-password');
    await until(pg, 'the IdP refusing a disabled account', () => document.getElementById('error')?.textContent.includes('disabled'));
    assert(pg.url().startsWith(`${IDP}/interaction/`), `still at the IdP: ${pg.url()}`);
  }],

  ['no CSP violations or page errors', async () => {
    assert(ctx.problems.length === 0, ctx.problems.join('\n'));
  }],
], async (name) => {
  const dir = process.env.FAROS_PORTAL_FAILURES || tmp;
  const file = path.join(dir, `oidc-failure-${name.replace(/[^a-z0-9]+/gi, '-').slice(0, 60)}.png`);
  await pg.screenshot({ path: file, fullPage: true });
  console.error(`screenshot of the failure: ${file}\nurl: ${pg.url()}\npage text:\n${(await pg.locator('body').innerText()).slice(0, 2000)}`);
});

await ctx.close();
cleanupProfiles();
process.exit(ok ? 0 : 1);
