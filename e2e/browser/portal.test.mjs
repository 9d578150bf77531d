// The portal in a real browser against `faros dev` (started by crates/faros/tests/portal.rs, which
// passes the environment below). Happy path, bad paths, CSRF, axe-core on every page, and the main
// flow with the keyboard alone. Exit code 0 = every step passed.
//
// FAROS_HUB_URL, FAROS_DEV_TOKEN, FAROS_OUTSIDER_TOKEN (a user who is a member of nothing),
// FAROS_CROSS_SITE_URL (another site serving /csrf, a form that posts to the hub),
// FAROS_KUBECTL (default kubectl), FAROS_PORTAL_SCREENSHOTS (optional: where screenshots go).

import { execFileSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { browser, page, accessible, tabTo, tabToIn, providerFrame, shot, until, assert, steps, cleanupProfiles } from './lib.mjs';

const HUB = need('FAROS_HUB_URL').replace(/\/$/, '');
const TOKEN = need('FAROS_DEV_TOKEN');
const OUTSIDER = need('FAROS_OUTSIDER_TOKEN');
const CROSS = need('FAROS_CROSS_SITE_URL').replace(/\/$/, '');
const KUBECTL = process.env.FAROS_KUBECTL || 'kubectl';
const WS = `${HUB}/portal/orgs/demo/workspaces/default`;

function need(name) {
  const v = process.env[name];
  if (!v) throw new Error(`${name} is not set`);
  return v;
}

const ctx = await browser();
const pg = await page(ctx);
let greeting = '';
const tmp = fs.mkdtempSync(path.join(os.tmpdir(), 'faros-portal-'));

/** The hub's answer to a same-origin call made by the page with its session. */
async function pageFetch(url, init = {}) {
  return pg.evaluate(async ([u, i]) => {
    const r = await fetch(u, { credentials: 'same-origin', ...i });
    return { status: r.status, body: await r.text() };
  }, [url, init]);
}

const text = (sel) => pg.locator(sel).first().innerText();

/** Waits for the URL and for the portal to have drawn that page (navigation is client-side). */
async function drawn(p, url, timeout = 30000) {
  await p.waitForURL(url, { timeout });
  await until(p, `the page ${url}`, () => document.getElementById('app')?.dataset.drawn === location.pathname, undefined, timeout);
}

const ok = await steps([
  ['the sign-in page, its headers and accessibility', async () => {
    const resp = await pg.goto(`${HUB}/`);
    await pg.waitForSelector('#token');
    assert(pg.url() === `${HUB}/portal/signin?return=%2Fportal%2F`, `redirected to sign-in: ${pg.url()}`);
    const h = resp.headers();
    const csp = h['content-security-policy'] || '';
    const scriptSrc = csp.split(';').map((d) => d.trim()).find((d) => d.startsWith('script-src')) || '';
    assert(scriptSrc === "script-src 'self'", `script-src without unsafe-inline: ${csp}`);
    assert(csp.includes("frame-ancestors 'none'"), csp);
    assert(h['x-content-type-options'] === 'nosniff' && h['referrer-policy'] === 'no-referrer', JSON.stringify(h));
    assert(h['cache-control'] === 'no-cache', h['cache-control']);
    await accessible(pg, 'sign-in');
    await shot(pg, 'signin');
  }],

  ['sign in with the dev token, keyboard only', async () => {
    await tabTo(pg, '#token');
    await pg.keyboard.type(TOKEN);
    await pg.keyboard.press('Enter');
    await drawn(pg, `${WS}/catalog`);
    await until(pg, 'the signed-in user', () => document.querySelector('#signed-in-user')?.textContent.includes('dev'));
    const cookie = (await ctx.cookies(HUB)).find((c) => c.name === '__Host-faros-session');
    assert(cookie && cookie.httpOnly && cookie.secure && cookie.sameSite === 'Strict' && cookie.expires > Date.now() / 1000,
      `session cookie: ${JSON.stringify(cookie && { ...cookie, value: '…' })}`);
    assert(!(await pg.evaluate(() => document.cookie)).includes('faros-session'), 'scripts cannot read the session');
  }],

  ['the catalog shows quickstart Ready and Available', async () => {
    await pg.waitForSelector('.card[data-provider=quickstart]');
    const state = await pg.getAttribute('.card[data-provider=quickstart] .state', 'data-state');
    assert(state === 'available', `quickstart state ${state}`);
    const card = await text('.card[data-provider=quickstart]');
    for (const want of ['Quickstart', 'faros', 'Demo', 'Reference provider']) assert(card.includes(want), `card shows ${want}: ${card}`);
    await until(pg, 'the icon through the UI proxy', () => {
      const img = document.querySelector('.card[data-provider=quickstart] img');
      return img && img.complete && img.naturalWidth > 0 && img.src.includes('/ui/providers/quickstart/');
    });
    // Filter by text and category.
    await pg.fill('#catalog-search', 'reference');
    await until(pg, 'the text filter', () => document.querySelectorAll('.card').length === 1);
    await pg.fill('#catalog-search', '');
    await pg.selectOption('#catalog-category', 'Testing');
    await until(pg, 'the category filter', () => !document.querySelector('.card[data-provider=quickstart]') && document.querySelector('.card[data-provider=neverdefines]'));
    await pg.selectOption('#catalog-category', '');
    const unhealthy = await text('.card[data-provider=unhealthy] .state');
    assert(unhealthy.startsWith('Not ready') && unhealthy.includes('BackendUnhealthy'), `not ready with the hub's reason: ${unhealthy}`);
    const blocked = await text('.card[data-provider=dependent] .state');
    assert(blocked.startsWith('Blocked by dependencies') && blocked.includes('quickstart'), `blocked, naming the dependency: ${blocked}`);
    assert(await pg.isDisabled('.card[data-provider=dependent] button[aria-label="Enable Dependent"]'), 'a blocked provider cannot be enabled');
    await accessible(pg, 'catalog');
    await shot(pg, 'catalog');
  }],

  ['the Enable dialog lists the configmaps claim with its verbs, checked; Enable (keyboard)', async () => {
    await tabTo(pg, '.card[data-provider=quickstart] button[aria-label="Enable Quickstart"]');
    await pg.keyboard.press('Enter');
    await pg.waitForSelector('dialog[open] fieldset.claims');
    const body = await text('dialog[open]');
    assert(body.includes('configmaps') && body.includes('core group') && body.includes('Verbs: get, list, watch'), body);
    assert(await pg.isChecked('dialog[open] input[data-resource=configmaps]'), 'the tenant-scoped claim is checked');
    await accessible(pg, 'enable dialog');
    await shot(pg, 'enable-dialog');
    await tabTo(pg, 'dialog[open] button[type=submit]');
    await pg.keyboard.press('Enter');
    await pg.waitForSelector('nav section[aria-label=Demo] li[data-provider=quickstart]', { timeout: 30000 });
    await until(pg, 'the card to say Enabled', () => document.querySelector('.card[data-provider=quickstart] .state')?.dataset.state === 'enabled');
    assert((await text('.card[data-provider=quickstart] .result')).includes('Bound'), 'the result says Bound');
  }],

  ['the Enable dialog: claims beyond the tenant unchecked with a warning, edge access, no claims, the hub\'s error', async () => {
    await until(pg, 'dependent to be unblocked', () => document.querySelector('.card[data-provider=dependent] .state')?.dataset.state === 'available');
    await pg.click('.card[data-provider=dependent] button[aria-label="Enable Dependent"]');
    await pg.waitForSelector('dialog[open] input[data-resource=secrets]');
    assert(!(await pg.isChecked('dialog[open] input[data-resource=secrets]')), 'a claim that is not tenant-scoped starts unchecked');
    const body = await text('dialog[open]');
    assert(body.includes('could reach objects beyond it') && body.includes('Verbs: get, list'), body);
    assert(body.includes('reach your edges'), `the edge-access notice: ${body}`);
    await accessible(pg, 'enable dialog with warnings');
    await pg.keyboard.press('Escape');
    await until(pg, 'the dialog to close', () => !document.querySelector('dialog[open]'));
    await pg.click('.card[data-provider=noaccess] button[aria-label="Enable No Access"]');
    await pg.waitForSelector('dialog[open] .no-claims');
    assert((await text('dialog[open] .no-claims')).includes('requests no access'), 'no claims');
    await pg.click('dialog[open] button[type=submit]');
    await until(pg, 'the hub\'s Status message in the dialog', () => (document.querySelector('dialog[open] [role=alert]')?.textContent || '').length > 10);
    const err = await text('dialog[open] [role=alert]');
    console.log(`     the hub refused: ${err}`);
    assert(!err.startsWith('4') && !err.startsWith('5'), `the Status message, not just a code: ${err}`);
    await pg.click('dialog[open] button:text("Cancel")');
    assert(!(await pg.$('nav li[data-provider=noaccess]')), 'a failed Enable enables nothing');
  }],

  ['the quickstart UI renders in its sandboxed frame, creates a Greeting (keyboard) and the reply appears', async () => {
    await tabTo(pg, 'nav li[data-provider=quickstart] > a');
    await pg.keyboard.press('Enter');
    await drawn(pg, `${WS}/providers/quickstart`);
    const fr = await providerFrame(pg, 'faros-provider-quickstart form');
    const context = await fr.evaluate(() => {
      const c = document.querySelector('faros-provider-quickstart').farosContext;
      return { keys: Object.keys(c).sort(), json: JSON.stringify(c), theme: c.theme, basePath: c.basePath, cluster: c.cluster, origin: self.origin };
    });
    assert(JSON.stringify(context.keys) === JSON.stringify(['basePath', 'cluster', 'fetch', 'org', 'portalPath', 'servicePath', 'subPath', 'theme', 'user', 'workspace']), context.keys.join());
    assert(!context.json.includes(TOKEN), 'the element never receives a token');
    assert(context.basePath === '/ui/providers/quickstart' && context.cluster, JSON.stringify(context));
    assert(context.origin === 'null', `the provider runs on an opaque origin: ${context.origin}`);
    await tabToIn(pg, fr, '#qs-name');
    await pg.keyboard.type('Ada');
    await pg.keyboard.press('Tab');
    await pg.keyboard.type('welcome aboard');
    await pg.keyboard.press('Enter');
    await pg.waitForURL(/\/providers\/quickstart\/greetings\/greeting-[a-z0-9]+$/);
    greeting = decodeURIComponent(pg.url().split('/').pop());
    await until(fr, 'the reply', () => document.querySelector('faros-provider-quickstart .qs-reply')?.textContent.includes('Hello, Ada!'));
    await accessible(pg, 'provider page');
    await fr.click('faros-provider-quickstart a:text("All greetings")');
    await pg.waitForURL(`${WS}/providers/quickstart`);
    await until(fr, 'the list row', (g) => document.querySelector(`tr[data-greeting="${g}"] .qs-reply-cell`)?.textContent.includes('Hello, Ada!'), greeting);
    await shot(pg, 'provider-quickstart');
  }],

  ['a provider UI cannot act as the tenant: no session, no hub API, no portal, only its own backend', async () => {
    const fr = await providerFrame(pg, 'faros-provider-quickstart');
    const before = ctx.problems.length;
    const probe = await fr.evaluate(async (ws) => {
      const out = {};
      // A provider's UI reaching for the tenant's static token through the kubeconfig route.
      try {
        const r = await fetch(`/api/orgs/${ws}/kubeconfig?includeToken=true`, { credentials: 'include' });
        out.direct = `${r.status}`;
      } catch (e) { out.direct = `refused: ${e.name}`; }
      try {
        const r = await fetch('/clusters/root/api/v1/namespaces', { credentials: 'include' });
        out.clusters = `${r.status}`;
      } catch (e) { out.clusters = `refused: ${e.name}`; }
      const c = document.querySelector('faros-provider-quickstart').farosContext;
      for (const [k, path] of [['escape', `/../../../api/orgs/${ws}/kubeconfig?includeToken=true`], ['encoded', '/%2e%2e/%2e%2e/%2e%2e/api/me']]) {
        try { out[k] = `${(await c.fetch(path)).status}`; } catch (e) { out[k] = `refused: ${e.message}`; }
      }
      try { out.auth = `${(await c.fetch('/api/greetings', { headers: { Authorization: 'Bearer x' } })).status}`; } catch (e) { out.auth = `refused: ${e.message}`; }
      try { out.parent = typeof window.parent.document; } catch (e) { out.parent = `refused: ${e.name}`; }
      try { out.cookie = document.cookie; } catch (e) { out.cookie = `refused: ${e.name}`; }
      try { out.storage = typeof localStorage.getItem('faros.workspace'); } catch (e) { out.storage = `refused: ${e.name}`; }
      try { await navigator.serviceWorker.register('/ui/providers/quickstart/main.js'); out.sw = 'registered'; } catch (e) { out.sw = `refused: ${e.name}`; }
      out.own = (await c.fetch('/api/greetings')).status;
      return out;
    }, 'demo/workspaces/default');
    for (const k of ['direct', 'clusters', 'parent', 'cookie', 'storage', 'sw']) {
      assert(String(probe[k]).startsWith('refused'), `${k}: ${JSON.stringify(probe)}`);
    }
    assert(probe.escape.includes('leaves /services/providers/quickstart/') && probe.encoded.includes('leaves'), JSON.stringify(probe));
    assert(probe.auth.toLowerCase().includes('header authorization is not allowed'), JSON.stringify(probe));
    assert(probe.own === 200, `its own backend still works: ${JSON.stringify(probe)}`);
    // The blocked fetches are violations of the frame's CSP, proof it is in force: this step's
    // own, not the portal's.
    const mine = ctx.problems.splice(before);
    assert(mine.some((m) => m.includes('connect-src')), `the frame's CSP reported the probes: ${mine.join(' | ')}`);
    assert(mine.every((m) => m.startsWith('CSP:')), mine.join(' | '));
  }],

  ['the UI proxy serves assets only: no documents, no service workers on the hub origin', async () => {
    const p4 = await ctx.newPage();
    try {
      // neverdefines' UI server answers this path with an HTML page (crates/faros/tests/portal.rs).
      const resp = await p4.goto(`${HUB}/ui/providers/neverdefines/csrf?target=x`);
      assert(resp.status() === 502 && resp.headers()['content-type'].startsWith('application/json'), `a provider document: ${resp.status()} ${resp.headers()['content-type']}`);
      assert(!(await p4.content()).includes('<form'), 'the provider page was not rendered');
      const icon = await p4.goto(`${HUB}/ui/providers/quickstart/icon.svg`);
      const h = icon.headers();
      assert(h['content-security-policy'] === "sandbox; default-src 'none'" && h['x-content-type-options'] === 'nosniff', JSON.stringify(h));
      assert(await p4.evaluate(() => self.origin) === 'null', 'an SVG opened directly is sandboxed');
      await p4.goto(`${HUB}/portal/signin`);
      const sw = await p4.evaluate(async () => {
        try { await navigator.serviceWorker.register('/ui/providers/quickstart/main.js', { scope: '/ui/providers/quickstart/' }); return 'registered'; } catch (e) { return `refused: ${e.name}`; }
      });
      assert(sw.startsWith('refused'), `a provider script as a service worker on the hub origin: ${sw}`);
    } finally {
      await p4.close();
    }
  }],

  ['a deep link with a hard reload works, and the ui.children sub-view', async () => {
    await pg.goto(`${WS}/providers/quickstart/greetings/${greeting}`);
    let fr = await providerFrame(pg, 'faros-provider-quickstart');
    await until(fr, 'the deep-linked reply', () => document.querySelector('faros-provider-quickstart .qs-reply')?.textContent.includes('Hello, Ada!'));
    await pg.reload();
    fr = await providerFrame(pg, 'faros-provider-quickstart');
    await until(fr, 'the reply after reload', () => document.querySelector('faros-provider-quickstart .qs-reply')?.textContent.includes('Hello, Ada!'));
    await fr.evaluate(() => { document.querySelector('faros-provider-quickstart').kept = true; });
    await pg.click('nav li[data-provider=quickstart] ul a:text("New greeting")');
    await pg.waitForURL(`${WS}/providers/quickstart/new`);
    await until(fr, 'the sub-view', () => document.querySelector('faros-provider-quickstart h2')?.textContent === 'New greeting'
      && document.querySelector('faros-provider-quickstart').farosContext.subPath === 'new');
    assert(await fr.evaluate(() => document.querySelector('faros-provider-quickstart').kept === true), 'a sub-path change keeps the element (and its frame) alive');
    assert(await pg.getAttribute('nav li[data-provider=quickstart] ul a', 'aria-current') === 'page', 'the child is current');
  }],

  ['the same Greeting is visible with kubectl through the downloaded kubeconfig', async () => {
    await pg.click('nav a:text-is("Kubeconfig")');
    await pg.waitForSelector('#download-kubeconfig');
    await accessible(pg, 'kubeconfig');
    await shot(pg, 'kubeconfig');
    const [download] = await Promise.all([pg.waitForEvent('download'), pg.click('#download-kubeconfig')]);
    const file = path.join(tmp, 'demo.kubeconfig');
    await download.saveAs(file);
    assert(!fs.readFileSync(file, 'utf8').includes(TOKEN), 'a browser session never gets its credential back');
    const echoed = await pageFetch(`${HUB}/api/orgs/demo/workspaces/default/kubeconfig?includeToken=true`);
    assert(echoed.status === 400 && echoed.body.includes('never sent back'), `includeToken with the session: ${echoed.status} ${echoed.body}`);
    execFileSync(KUBECTL, ['--kubeconfig', file, 'config', 'set-credentials', 'dev', `--token=${TOKEN}`], { encoding: 'utf8' });
    // The page suggests a `kubectl get` of what this workspace's providers serve, and it works as shown.
    const hint = await pg.$$eval('section.kubeconfig pre.code', (els) => els.map((e) => e.textContent).join('\n'));
    const get = hint.split('\n').find((line) => line.includes(' get '));
    assert(get?.endsWith(' get greetings.quickstart.providers.faros.sh -A'), `the page's kubectl get: ${hint}`);
    const listed = execFileSync(KUBECTL, ['--kubeconfig', file, ...get.split(' ').slice(3)], { encoding: 'utf8' });
    assert(listed.includes(greeting), listed);
    const out = execFileSync(KUBECTL, ['--kubeconfig', file, 'get', 'greetings', '-n', 'default', greeting, '-o', 'json'], { encoding: 'utf8' });
    const obj = JSON.parse(out);
    assert(obj.spec.name === 'Ada' && obj.status.reply.startsWith('Hello, Ada!'), out);
  }],

  ['members: add, change role, remove; the last org admin is refused (409)', async () => {
    await pg.click('nav a:text-is("Members")');
    await pg.waitForSelector('tr[data-user=dev]');
    await pg.fill('#member-user', 'carol');
    await pg.selectOption('#member-role', 'member');
    await pg.click('button:text("Add member")');
    await pg.waitForSelector('tr[data-user=carol]');
    await pg.selectOption('tr[data-user=carol] select', 'admin');
    await until(pg, 'carol to be admin', () => document.querySelector('.messages')?.textContent.includes('carol is now an admin'));
    await accessible(pg, 'members');
    await shot(pg, 'members');
    await pg.click('tr[data-user=carol] button[aria-label="Remove carol"]');
    await pg.click('dialog[open] button[type=submit]');
    await until(pg, 'carol to be gone', () => !document.querySelector('tr[data-user=carol]'));
    await pg.click('nav a:text-is("Organization members")');
    await pg.waitForSelector('tr[data-user=dev] button[aria-label="Remove dev"]');
    await pg.click('tr[data-user=dev] button[aria-label="Remove dev"]');
    await pg.click('dialog[open] button[type=submit]');
    await until(pg, 'the 409 message', () => document.querySelector('.messages [role=alert]')?.textContent.includes('last admin'));
    await accessible(pg, 'organization members');
  }],

  ['the MCP page shows the endpoint and a client config without a credential', async () => {
    await pg.click('nav a:text-is("MCP")');
    await pg.waitForSelector('#mcp-config');
    const config = JSON.parse(await text('#mcp-config'));
    const server = config.mcpServers['faros-demo-default'];
    assert(server.url === `${HUB}/api/orgs/demo/workspaces/default/mcp` && server.headers.Authorization === 'Bearer <your token>', JSON.stringify(config));
    assert(!(await pg.content()).includes(TOKEN), 'no token on the page');
    await accessible(pg, 'mcp');
    await shot(pg, 'mcp');
  }],

  ['create an organization and its first workspace', async () => {
    await pg.click('#new-org');
    await pg.waitForSelector('dialog[open] #new-org-name');
    await accessible(pg, 'new organization dialog');
    await pg.fill('#new-org-name', 'acme');
    await pg.keyboard.press('Enter');
    await pg.waitForSelector('dialog[open] #new-ws-name', { timeout: 60000 });
    await pg.fill('#new-ws-name', 'dev');
    await pg.keyboard.press('Enter');
    await drawn(pg, `${HUB}/portal/orgs/acme/workspaces/dev/catalog`, 60000);
    await pg.waitForSelector('.card[data-provider=quickstart]');
    const orgs = await pg.$$eval('#org-select option', (os) => os.map((o) => o.value));
    assert(orgs.includes('acme') && orgs.includes('demo'), `both organizations in the switcher: ${orgs}`);
    await pg.selectOption('#org-select', 'demo');
    await drawn(pg, `${WS}/catalog`);
  }],

  ['create a workspace; switching there removes quickstart from the nav; back again', async () => {
    await pg.click('#new-ws');
    await pg.waitForSelector('dialog[open] #new-ws-name');
    await accessible(pg, 'new workspace dialog');
    await pg.fill('#new-ws-name', 'second');
    await pg.keyboard.press('Enter');
    await drawn(pg, `${HUB}/portal/orgs/demo/workspaces/second/catalog`, 60000);
    await pg.waitForSelector('.card[data-provider=quickstart]');
    assert(!(await pg.$('nav li[data-provider=quickstart]')), 'quickstart is not in the nav of workspace second');
    assert(await pg.getAttribute('.card[data-provider=quickstart] .state', 'data-state') === 'available', 'quickstart is Available in second');
    await pg.selectOption('#ws-select', 'default');
    await drawn(pg, `${WS}/catalog`);
    await pg.waitForSelector('nav li[data-provider=quickstart]');
  }],

  ['the workspace is remembered; dark theme reaches the provider', async () => {
    await pg.goto(`${HUB}/portal/orgs/demo/workspaces/second/catalog`);
    await pg.waitForSelector('.card');
    await pg.goto(`${HUB}/portal/`);
    await drawn(pg, `${HUB}/portal/orgs/demo/workspaces/second/catalog`);
    await pg.goto(`${WS}/providers/quickstart`);
    const fr = await providerFrame(pg, 'faros-provider-quickstart table');
    await pg.selectOption('#theme-select', 'dark');
    await until(pg, 'the dark theme in the portal', () => document.documentElement.dataset.theme === 'dark');
    await until(fr, 'the dark theme in the provider', () => document.querySelector('faros-provider-quickstart').farosContext.theme === 'dark'
      && document.querySelector('faros-provider-quickstart').dataset.theme === 'dark');
    await until(fr, 'the list', () => document.querySelector('faros-provider-quickstart tbody a'));
    await accessible(pg, 'provider page, dark');
    await shot(pg, 'provider-quickstart-dark');
    await pg.goto(`${WS}/catalog`);
    await pg.waitForSelector('.card');
    await accessible(pg, 'catalog, dark');
    await pg.selectOption('#theme-select', 'system');
  }],

  ['switching the workspace re-mounts the provider in the other workspace', async () => {
    const enabled = await pageFetch(`${HUB}/api/orgs/demo/workspaces/second/providers/quickstart/enable`, {
      method: 'POST',
      headers: { 'Content-Type': 'application/json', 'X-Faros-CSRF': '1' },
      body: JSON.stringify({ acceptedClaims: [{ group: '', resource: 'configmaps' }] }),
    });
    assert(enabled.status === 200 || enabled.status === 202, `enable in second: ${enabled.status} ${enabled.body}`);
    await pg.goto(`${WS}/providers/quickstart`);
    let fr = await providerFrame(pg, 'faros-provider-quickstart');
    await until(fr, 'the greeting in default', (g) => document.querySelector(`faros-provider-quickstart tr[data-greeting="${g}"]`), greeting);
    await fr.evaluate(() => { document.querySelector('faros-provider-quickstart').mountedIn = 'default'; });
    await pg.selectOption('#ws-select', 'second');
    await drawn(pg, `${HUB}/portal/orgs/demo/workspaces/second/providers/quickstart`);
    fr = await providerFrame(pg, 'faros-provider-quickstart');
    await until(fr, 'a new element for workspace second', () => {
      const el = document.querySelector('faros-provider-quickstart');
      return el && el.mountedIn === undefined && el.farosContext.workspace === 'second'
        && el.textContent.includes('No greetings yet.');
    });
    await pg.selectOption('#ws-select', 'default');
    await drawn(pg, `${WS}/providers/quickstart`);
    fr = await providerFrame(pg, 'faros-provider-quickstart');
    await until(fr, 'default’s greeting again', (g) => {
      const el = document.querySelector('faros-provider-quickstart');
      return el && el.mountedIn === undefined && el.farosContext.workspace === 'default' && el.querySelector(`tr[data-greeting="${g}"]`);
    }, greeting);
  }],

  ['bad paths: an element that never defines, an unknown provider, a hub 5xx, an unknown page', async () => {
    await pg.goto(`${WS}/providers/neverdefines`);
    await until(pg, 'the timeout error', () => document.querySelector('.provider-host [role=alert]')?.textContent.includes('did not define the element <faros-provider-neverdefines> within 5 seconds'), undefined, 15000);
    await accessible(pg, 'provider timeout');
    await shot(pg, 'provider-timeout');
    await pg.goto(`${WS}/providers/nosuch`);
    await until(pg, 'not found', () => document.querySelector('main h1')?.textContent === 'Not found'
      && document.querySelector('main [role=alert]')?.textContent.includes('no provider named “nosuch”'));
    await accessible(pg, 'provider not found');
    await pg.goto(`${WS}/providers/unreachable`);
    await until(pg, 'the hub’s 502 Status message', () => document.querySelector('.provider-host [role=alert]')?.textContent.includes('the UI of provider "unreachable" is unreachable'));
    await shot(pg, 'provider-5xx');
    await pg.goto(`${HUB}/portal/nothing/here`);
    await until(pg, 'the portal’s not-found page', () => document.querySelector('main h1')?.textContent === 'Not found');
  }],

  ['a second user who is not a member sees neither workspace', async () => {
    const other = await browser();
    try {
      const p2 = await page(other);
      await p2.goto(`${HUB}/portal/signin`);
      await p2.fill('#token', OUTSIDER);
      await p2.press('#token', 'Enter');
      await p2.waitForSelector('main h1:text("Welcome")');
      const options = await p2.$$eval('#org-select option', (os) => os.map((o) => o.value).filter(Boolean));
      assert(options.length === 0, `no organizations: ${options}`);
      assert(!(await p2.$('nav li[data-provider]')), 'no providers in the nav');
      await accessible(p2, 'welcome');
      for (const ws of ['default', 'second']) {
        await p2.goto(`${HUB}/portal/orgs/demo/workspaces/${ws}/catalog`);
        await p2.waitForSelector('main [role=alert]');
        const msg = await p2.locator('main [role=alert]').first().innerText();
        assert(/not found|forbidden|not a member|access/i.test(msg), `outsider in ${ws}: ${msg}`);
        assert(!(await p2.$('nav li[data-provider=quickstart]')), `no quickstart for the outsider in ${ws}`);
      }
      assert(other.problems.length === 0, other.problems.join('\n'));
    } finally {
      await other.close();
    }
  }],

  ['CSRF: a cross-site form POST and a foreign Origin with the session cookie are refused', async () => {
    const p3 = await ctx.newPage();
    await p3.goto(`${CROSS}/csrf?target=${encodeURIComponent(`${HUB}/api/orgs`)}`);
    const [resp] = await Promise.all([p3.waitForNavigation(), p3.click('button')]);
    assert(resp && !resp.ok(), `the forged POST failed: ${resp && resp.status()}`);
    await p3.close();
    const orgs = JSON.parse((await pageFetch(`${HUB}/api/orgs`)).body);
    assert(!orgs.items.some((o) => o.name === 'csrf-evil'), 'no org was created');
    // The same forgery with the cookie attached (as an older browser without SameSite would send it).
    const forged = await ctx.request.post(`${HUB}/api/orgs`, {
      headers: { Origin: CROSS, 'Content-Type': 'application/x-www-form-urlencoded' },
      data: 'name=csrf-evil',
    });
    assert(forged.status() === 403 && (await forged.text()).includes('cross-site'), `cookie + foreign Origin: ${forged.status()}`);
    const noHeader = await ctx.request.post(`${HUB}/api/orgs`, { headers: { Origin: HUB, 'Content-Type': 'application/json' }, data: { name: 'csrf-evil' } });
    assert(noHeader.status() === 403, `cookie + same Origin without X-Faros-CSRF: ${noHeader.status()}`);
  }],

  ['Disable with confirmation removes quickstart', async () => {
    await pg.goto(`${WS}/catalog`);
    await tabTo(pg, '.card[data-provider=quickstart] button[aria-label="Disable Quickstart"]');
    await pg.keyboard.press('Enter');
    await pg.waitForSelector('dialog[open]');
    await accessible(pg, 'disable dialog');
    await pg.click('dialog[open] button[type=submit]');
    await until(pg, 'quickstart to be Available again', () => document.querySelector('.card[data-provider=quickstart] .state')?.dataset.state === 'available', undefined, 60000);
    assert(!(await pg.$('nav li[data-provider=quickstart]')), 'gone from the nav');
  }],

  ['an expired session returns to sign-in with a message', async () => {
    await ctx.addCookies([{ name: '__Host-faros-session', value: 'expired-or-unknown', url: `${HUB}/`, secure: true, httpOnly: true, sameSite: 'Strict' }]);
    await pg.goto(`${WS}/catalog`);
    await pg.waitForURL(/\/portal\/signin\?/);
    await until(pg, 'the expiry message', () => document.querySelector('main [role=alert]')?.textContent.includes('expired'));
    await accessible(pg, 'sign-in, expired');
    await shot(pg, 'signin-expired');
  }],

  ['sign in again, sign out', async () => {
    await pg.fill('#token', TOKEN);
    await pg.press('#token', 'Enter');
    await pg.waitForURL(`${WS}/catalog`);
    await pg.click('#sign-out');
    await pg.waitForURL(/\/portal\/signin\?signedOut=1/);
    await until(pg, 'the signed-out message', () => document.querySelector('main [role=status]')?.textContent.includes('signed out'));
    const after = await pageFetch(`${HUB}/api/session`);
    assert(after.status === 401, `after sign-out: ${after.status}`);
    assert(!(await ctx.cookies(HUB)).some((c) => c.name === '__Host-faros-session'), 'the cookie is cleared');
  }],

  ['no CSP violations or page errors', async () => {
    assert(ctx.problems.length === 0, ctx.problems.join('\n'));
  }],
], async (name) => {
  const dir = process.env.FAROS_PORTAL_FAILURES || tmp;
  const file = path.join(dir, `failure-${name.replace(/[^a-z0-9]+/gi, '-').slice(0, 60)}.png`);
  await pg.screenshot({ path: file, fullPage: true });
  console.error(`screenshot of the failure: ${file}\nurl: ${pg.url()}\npage text:\n${(await pg.locator('body').innerText()).slice(0, 2000)}`);
});

await ctx.close();
cleanupProfiles();
process.exit(ok ? 0 : 1);
