// The provider page: a provider's UI runs in the hub's provider frame (frame.js), a sandboxed
// document with an opaque origin of its own, never in the portal's origin. The portal hands it
// `farosContext` by postMessage and performs, with the session, the one kind of call the frame may
// ask for: a request to /services/providers/<name>/… (decide.js, bridgeRequest). The provider's
// code therefore never sees a credential, cannot read the portal, and cannot call the hub's API,
// kcp or another provider as the tenant (docs/portal.md, "Provider UIs").

import { bridgeOpen, bridgeRequest } from './decide.js';
import { h, mount, banner } from './dom.js';
import { navigate } from './nav.js';
import { notFoundPage } from './notfound.js';
import { state, wsUrl, currentCluster } from './state.js';
import { resolvedTheme } from './theme.js';

/** Largest response body the bridge hands back to a frame (characters). */
const MAX_RESPONSE = 8 * 1024 * 1024;

// The mounted frame survives redraws of the shell (it is re-attached, not re-created) until the
// provider or the workspace changes. {key, name, frame, host, enabled}
let mounted = null;

export function unmountProvider() {
  if (mounted?.frame) mounted.frame.remove();
  mounted = null;
}

/** Whether the current workspace enabled provider `name` (a Bound binding). */
function enabledHere(name) {
  const row = state.enabled?.items?.find((e) => e.name === name);
  return Boolean(row && row.bound && !row.terminating);
}

function context(name, subPath, enabled) {
  return {
    subPath,
    basePath: `/ui/providers/${name}`,
    servicePath: `/services/providers/${name}`,
    portalPath: wsUrl(state.org, state.ws, `providers/${encodeURIComponent(name)}`),
    user: state.session?.user || '',
    org: state.org,
    workspace: state.ws,
    // The logical cluster is the workspace's identity towards providers: only where it was enabled.
    cluster: enabled ? currentCluster() : '',
    theme: resolvedTheme(),
  };
}

function send(frame, msg) {
  // The frame's origin is opaque: it cannot be named, so '*'. What goes there is the provider's
  // own context and its own backend's answers.
  frame.contentWindow?.postMessage({ faros: 1, ...msg }, '*');
}

/** Pushes a new context (theme change, sign-in user, sub-path) to the mounted frame. */
export function refreshProviderContext(subPath) {
  if (!mounted?.frame) return;
  const sp = subPath ?? mounted.subPath ?? '';
  mounted.subPath = sp;
  send(mounted.frame, { type: 'context', context: context(mounted.name, sp, mounted.enabled) });
}

async function bridge(m, msg) {
  const req = bridgeRequest(m.name, msg, {
    origin: location.origin, org: state.org, workspace: state.ws, enabled: m.enabled,
  });
  if (req.error) return { error: `farosContext.fetch refused: ${req.error}` };
  try {
    const resp = await fetch(req.url, { ...req.init, credentials: 'same-origin', cache: 'no-store', redirect: 'manual' });
    const body = await resp.text();
    const headers = {};
    for (const k of ['content-type', 'etag', 'location', 'retry-after']) {
      const v = resp.headers.get(k);
      if (v !== null) headers[k] = v;
    }
    return {
      status: resp.status || 502,
      statusText: resp.statusText,
      headers,
      body: body.length > MAX_RESPONSE ? '' : body,
    };
  } catch (e) {
    return { error: `farosContext.fetch failed: ${e.message || e}` };
  }
}

function onMessage(ev) {
  const m = mounted;
  if (!m || ev.source !== m.frame.contentWindow || ev.origin !== 'null') return;
  const msg = ev.data;
  if (!msg || msg.faros !== 1) return;
  switch (msg.type) {
    case 'ready':
      send(m.frame, { type: 'init', context: context(m.name, m.subPath, m.enabled) });
      break;
    case 'mounted':
      m.status?.remove();
      m.frame.classList.add('loaded');
      break;
    case 'error':
      m.status?.remove();
      mount(m.host, banner('error', `Could not load ${m.title}: ${String(msg.message || 'unknown error')}`));
      m.frame.remove();
      break;
    case 'fetch':
      bridge(m, msg).then((r) => send(m.frame, { type: 'response', id: msg.id, ...r }));
      break;
    case 'navigate': {
      const next = String(msg.subPath ?? '').replace(/^\/+/, '');
      const url = `${wsUrl(state.org, state.ws, `providers/${encodeURIComponent(m.name)}`)}${next ? `/${next}` : ''}`;
      navigate(url, { replace: Boolean(msg.replace) });
      break;
    }
    case 'open': {
      const path = bridgeOpen(msg.path, location.origin);
      if (path) navigate(path);
      break;
    }
    case 'resize': {
      const px = Math.max(200, Math.min(Number(msg.height) || 0, 100000));
      m.frame.style.height = `${px}px`;
      break;
    }
    default:
      break;
  }
}

window.addEventListener('message', onMessage);

function createFrame(p, subPath, host, status) {
  const frame = h('iframe', {
    class: 'provider-frame',
    title: p.displayName || p.name,
    src: `/portal/frame?provider=${encodeURIComponent(p.name)}`,
    sandbox: 'allow-scripts allow-forms',
    referrerpolicy: 'no-referrer',
    allow: '',
    loading: 'eager',
  });
  unmountProvider();
  mounted = {
    key: `${state.org}/${state.ws}/${p.name}`,
    name: p.name,
    title: p.displayName || p.name,
    frame,
    host,
    status,
    subPath,
    enabled: enabledHere(p.name),
  };
  host.replaceChildren(frame);
}

/** The page of provider `r.name` at `r.subPath`. */
export function providerPage(r) {
  const p = (state.providers?.items || []).find((x) => x.name === r.name);
  if (!p) {
    unmountProvider();
    return notFoundPage(`There is no provider named “${r.name}” in the catalog.`);
  }
  const enabled = enabledHere(p.name);
  // Providers with APIs load only where the workspace enabled them; one without APIs has nothing
  // to enable and loads anywhere, but is never told the workspace (see context()).
  const usable = !p.apiExportName || enabled;
  const title = h('h1', { class: 'provider-title' }, p.displayName || p.name);
  if (!usable) {
    unmountProvider();
    return h('section', { class: 'page' }, title,
      banner('info', `${p.displayName || p.name} is not enabled in ${state.org}/${state.ws}.`),
      h('p', {}, h('a', { href: wsUrl(state.org, state.ws, 'catalog') }, 'Enable it from the catalog')));
  }
  if (!p.ready || !p.hasUI) {
    unmountProvider();
    return h('section', { class: 'page' }, title,
      banner('error', !p.hasUI ? `${p.displayName || p.name} has no UI.` : `${p.displayName || p.name} is not ready${p.notReadyReason ? `: ${p.notReadyReason}` : ''}.`));
  }
  const host = h('div', { class: 'provider-host', dataset: { provider: p.name } });
  const status = h('p', { class: 'muted', role: 'status' }, `Loading ${p.displayName || p.name}…`);
  const section = h('section', { class: 'page provider-page' }, title, status, host);
  if (mounted?.key === `${state.org}/${state.ws}/${p.name}` && mounted.frame.isConnected) {
    // Same provider, same workspace: the live frame moves into this page (carryFrame) and gets
    // the new sub-path; its UI keeps its state.
    status.remove();
    host.dataset.carry = '1';
    mounted.host = host;
    mounted.status = null;
    mounted.subPath = r.subPath;
    queueMicrotask(() => refreshProviderContext(r.subPath));
  } else {
    createFrame(p, r.subPath, host, status);
  }
  return section;
}

/**
 * Moves the live provider frame into the freshly drawn page `root` (already in the document), if
 * that page asked for it. Element.moveBefore keeps the frame's document alive; where a browser
 * lacks it, the frame reloads and initialises again (slower, same result).
 */
export function carryFrame(root) {
  const host = root.querySelector?.('.provider-host[data-carry="1"]');
  if (!host || !mounted?.frame) return;
  delete host.dataset.carry;
  if (typeof host.moveBefore === 'function' && mounted.frame.isConnected) host.moveBefore(mounted.frame, null);
  else host.append(mounted.frame);
}

