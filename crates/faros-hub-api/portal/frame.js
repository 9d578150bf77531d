// The provider frame: the hub-owned document a provider's UI runs in (docs/portal.md, "Provider
// UIs"). The portal embeds it as <iframe sandbox="allow-scripts allow-forms">, and the hub serves it
// with `Content-Security-Policy: sandbox allow-scripts allow-forms; …`, so it always has an opaque
// origin of its own: no cookies, no storage of the hub, no access to the portal's DOM, and requests
// to the hub that carry no session (SameSite=Strict). Its CSP lets it load scripts, styles, images
// and fonts only from /ui/providers/<name>/.
//
// This script loads the provider's main.js, mounts its <faros-provider-<name>> element and gives it
// `farosContext`, whose `fetch` is a bridge: the request travels to the portal by postMessage, and
// the portal performs it with the session, only towards /services/providers/<name>/ (decide.js,
// bridgeRequest). The element never holds a credential and can call nothing else as the tenant.

const DEFINE_TIMEOUT_MS = 5000;
const NAME = /^[a-z0-9]([-a-z0-9]*[a-z0-9])?$/;

const name = new URLSearchParams(location.search).get('provider') || '';
const tag = `faros-provider-${name}`;
// The hub's origin: this document's own origin is opaque ("null"), its URL's is the hub's.
const hub = new URL(location.href).origin;
const pending = new Map();
let nextId = 1;
let element = null;
let context = null;

/** To the portal, and to nobody else: the parent is the hub's portal (frame-ancestors). */
function post(msg) {
  window.parent.postMessage({ faros: 1, ...msg }, hub);
}

function fail(message) {
  post({ type: 'error', message });
}

const NULL_BODY = new Set([101, 103, 204, 205, 304]);

/** `fetch` against the provider's backend, performed by the portal (see the file comment). */
function bridgeFetch(path, init = {}) {
  const id = nextId++;
  const headers = {};
  new Headers(init.headers || {}).forEach((v, k) => { headers[k] = v; });
  let body = init.body ?? null;
  if (body !== null && typeof body !== 'string') {
    return Promise.reject(new TypeError('farosContext.fetch: the body must be a string (e.g. JSON.stringify(…))'));
  }
  return new Promise((resolve, reject) => {
    pending.set(id, { resolve, reject });
    post({ type: 'fetch', id, path: String(path), method: init.method || 'GET', headers, body });
  }).then((r) => new Response(NULL_BODY.has(r.status) ? null : r.body, {
    status: r.status,
    statusText: r.statusText,
    headers: r.headers,
  }));
}

function contextFor(ctx) {
  return Object.freeze({ ...ctx, fetch: bridgeFetch });
}

// The frame's own page colors, the portal's (portal.css): the frame paints its background, so its
// text contrast holds by itself (and is measured by itself).
const base = new CSSStyleSheet();
base.replaceSync(`
:root { color-scheme: light; background: #ffffff; color: #111827; }
:root[data-theme="dark"] { color-scheme: dark; background: #111827; color: #f9fafb; }
html, body { margin: 0; font: 15px/1.5 system-ui, -apple-system, "Segoe UI", sans-serif; }
`);
document.adoptedStyleSheets = [base, ...document.adoptedStyleSheets];

function applyTheme(theme) {
  document.documentElement.dataset.theme = theme === 'dark' ? 'dark' : 'light';
}

async function mount(ctx) {
  if (!NAME.test(name)) return fail('This frame was opened for no valid provider.');
  applyTheme(ctx.theme);
  const src = `${hub}/ui/providers/${name}/main.js`;
  // Fetch first: a failing hub or provider answers with a Status the user should see.
  let resp;
  try {
    resp = await fetch(src, { cache: 'no-cache', credentials: 'omit' });
  } catch (e) {
    return fail(`the UI of provider "${name}" could not be loaded: ${e.message || e}`);
  }
  if (!resp.ok) {
    const text = await resp.text().catch(() => '');
    let message = `${resp.status} ${resp.statusText}`.trim();
    try { message = JSON.parse(text).message || message; } catch { /* not a Status */ }
    return fail(message);
  }
  try {
    await import(src);
  } catch (e) {
    return fail(`the UI of provider "${name}" failed to load: ${e.message || e}`);
  }
  const defined = customElements.whenDefined(tag);
  const timeout = new Promise((resolve) => setTimeout(() => resolve(false), DEFINE_TIMEOUT_MS));
  if (!(await Promise.race([defined.then(() => true), timeout]))) {
    return fail(`The provider’s UI did not define the element <${tag}> within ${DEFINE_TIMEOUT_MS / 1000} seconds.`);
  }
  element = document.createElement(tag);
  element.addEventListener('faros-navigate', (ev) => {
    post({ type: 'navigate', subPath: String(ev.detail?.subPath ?? ''), replace: Boolean(ev.detail?.replace) });
  });
  element.farosContext = contextFor(ctx);
  document.body.replaceChildren(element);
  post({ type: 'mounted' });
}

// Links the element renders with `portalPath` open in the portal, not inside this frame.
document.addEventListener('click', (ev) => {
  if (ev.defaultPrevented || ev.button !== 0 || ev.metaKey || ev.ctrlKey || ev.shiftKey || ev.altKey) return;
  const a = ev.composedPath().find((n) => n instanceof HTMLAnchorElement && n.href);
  if (!a) return;
  const url = new URL(a.href, location.href);
  if (url.origin === hub && url.pathname.startsWith('/portal/')) {
    ev.preventDefault();
    post({ type: 'open', path: url.pathname + url.search + url.hash });
  }
});

// The document's height, so the portal sizes the frame to its content.
new ResizeObserver(() => {
  post({ type: 'resize', height: Math.ceil(document.documentElement.scrollHeight) });
}).observe(document.documentElement);

window.addEventListener('message', (ev) => {
  if (ev.source !== window.parent || ev.origin !== hub) return;
  const msg = ev.data;
  if (!msg || msg.faros !== 1) return;
  if (msg.type === 'init' && !context) {
    context = msg.context;
    mount(context);
  } else if (msg.type === 'context') {
    context = msg.context;
    applyTheme(context.theme);
    if (element) element.farosContext = contextFor(context);
  } else if (msg.type === 'response') {
    const p = pending.get(msg.id);
    if (!p) return;
    pending.delete(msg.id);
    if (msg.error) p.reject(new TypeError(msg.error));
    else p.resolve(msg);
  }
});

post({ type: 'ready' });
