// The provider frame: loads /ui/providers/<name>/main.js, waits for its custom element
// <faros-provider-<name>>, and hands it `farosContext`. The element never receives a credential:
// it calls /services/providers/<name>/... same-origin, where the hub authenticates the session.

import { api, requestHeaders, errorOf } from './api.js';
import { h, mount, banner } from './dom.js';
import { state, navigate, wsUrl, currentCluster, notFoundPage } from './app.js';
import { resolvedTheme } from './shell.js';

/** How long the element may take to define itself after main.js loaded. */
export const DEFINE_TIMEOUT_MS = 5000;

/** The custom element's name for a provider. */
export const tagOf = (name) => `faros-provider-${name}`;

// The mounted element survives redraws of the shell (it is re-attached, not re-created) until the
// provider or the workspace changes.
let mounted = null; // {key, el, name, host}

export function unmountProvider() {
  if (mounted?.el) mounted.el.remove();
  mounted = null;
}

function context(name, subPath) {
  const servicePath = `/services/providers/${name}`;
  const org = state.org;
  const workspace = state.ws;
  return Object.freeze({
    subPath,
    basePath: `/ui/providers/${name}`,
    servicePath,
    portalPath: wsUrl(org, workspace, `providers/${encodeURIComponent(name)}`),
    user: state.session?.user || '',
    org,
    workspace,
    cluster: currentCluster(),
    theme: resolvedTheme(),
    /** fetch() against the provider's backend in this workspace, with the session. */
    fetch: (path, init = {}) => {
      const method = (init.method || 'GET').toUpperCase();
      const headers = {
        ...requestHeaders(method, {}, false),
        'X-Faros-Org': org,
        'X-Faros-Workspace': workspace,
        ...(init.headers || {}),
      };
      return fetch(`${servicePath}${path.startsWith('/') ? '' : '/'}${path}`, { ...init, method, headers, credentials: 'same-origin' });
    },
  });
}

/** Pushes a new context (theme change, sign-in user, sub-path) to the mounted element. */
export function refreshProviderContext(subPath) {
  if (!mounted?.el) return;
  const sp = subPath ?? mounted.el.farosContext?.subPath ?? '';
  mounted.el.farosContext = context(mounted.name, sp);
}

function timeout(ms) {
  return new Promise((_, reject) => setTimeout(() => reject(new Error('timeout')), ms));
}

async function load(name, subPath, host, status) {
  const key = `${state.org}/${state.ws}/${name}`;
  const tag = tagOf(name);
  const src = `/ui/providers/${encodeURIComponent(name)}/main.js`;
  // Fetch first: a failing hub or provider answers with a Status the user should see.
  const resp = await fetch(src, { credentials: 'same-origin', cache: 'no-cache' });
  if (!resp.ok) throw await errorOf(resp);
  await import(src);
  try {
    await Promise.race([customElements.whenDefined(tag), timeout(DEFINE_TIMEOUT_MS)]);
  } catch {
    throw new Error(`The provider’s UI did not define the element <${tag}> within ${DEFINE_TIMEOUT_MS / 1000} seconds.`);
  }
  if (mounted?.key !== key) {
    const el = document.createElement(tag);
    el.addEventListener('faros-navigate', (ev) => {
      const next = String(ev.detail?.subPath ?? '').replace(/^\/+/, '');
      const url = `${wsUrl(state.org, state.ws, `providers/${encodeURIComponent(name)}`)}${next ? `/${next}` : ''}`;
      navigate(url, { replace: Boolean(ev.detail?.replace) });
    });
    unmountProvider();
    mounted = { key, el, name };
  }
  mounted.el.farosContext = context(name, subPath);
  status.remove();
  host.replaceChildren(mounted.el);
}

/** The page of provider `r.name` at `r.subPath`. */
export function providerPage(r) {
  const p = (state.providers?.items || []).find((x) => x.name === r.name);
  if (!p) {
    unmountProvider();
    return notFoundPage(`There is no provider named “${r.name}” in the catalog.`);
  }
  const row = state.enabled?.items?.find((e) => e.name === p.name);
  const usable = !p.apiExportName || (row && row.bound && !row.terminating);
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
  if (mounted?.key === `${state.org}/${state.ws}/${p.name}`) {
    // Same element, new sub-path: re-attach it and tell it.
    status.remove();
    host.append(mounted.el);
    mounted.el.farosContext = context(p.name, r.subPath);
  } else {
    load(p.name, r.subPath, host, status).catch((e) => {
      unmountProvider();
      mount(host, banner('error', `Could not load ${p.displayName || p.name}: ${e.message || e}`));
      status.remove();
    });
  }
  return section;
}
