// The portal's entry: client-side routes under /portal/, the signed-in state, and the shell around
// every page. No build step: plain ES modules served by the hub.

import { api, onUnauthorized, wsPath } from './api.js';
import { parse } from './decide.js';
import { h, mount, banner } from './dom.js';
import { signinPage } from './signin.js';
import { renderShell, applyTheme } from './shell.js';
import { catalogPage } from './catalog.js';
import { providerPage, unmountProvider, carryFrame } from './provider.js';
import { membersPage, kubeconfigPage, mcpPage } from './workspace.js';

const SIGNED_IN = 'faros.signedIn';
const LAST_WS = 'faros.workspace';

/** What every page reads; replaced (not mutated) so pages compare cheaply. */
export const state = {
  session: null, // {user, groups, expiresAt}
  me: null, // /api/me
  providers: null, // /api/providers
  enabled: null, // {items} of the current workspace
  org: '',
  ws: '',
  error: '',
};

/** Client-side navigation (pushState) to a portal path. */
export function navigate(path, { replace = false } = {}) {
  if (replace) history.replaceState(null, '', path);
  else history.pushState(null, '', path);
  route();
}

export const wsUrl = (org, ws, rest = 'catalog') =>
  `/portal/orgs/${encodeURIComponent(org)}/workspaces/${encodeURIComponent(ws)}/${rest}`;

/** The signed-in user's role in the current workspace ('admin' | 'member' | ''). */
export function wsRole() {
  const org = state.me?.organizations?.find((o) => o.name === state.org);
  return org?.workspaces?.find((w) => w.name === state.ws)?.role || '';
}

export function orgRole() {
  return state.me?.organizations?.find((o) => o.name === state.org)?.role || '';
}

export function currentCluster() {
  const org = state.me?.organizations?.find((o) => o.name === state.org);
  return org?.workspaces?.find((w) => w.name === state.ws)?.cluster || '';
}

/** Re-reads /api/me (after creating an org or workspace, or a membership change). */
export async function reloadMe() {
  state.me = await api('GET', '/api/me');
}

/** Re-reads the catalog and this workspace's enabled providers. */
export async function reloadWorkspace() {
  const [providers, enabled] = await Promise.all([
    api('GET', '/api/providers'),
    state.org && state.ws ? api('GET', `${wsPath(state.org, state.ws)}/providers/enabled`) : { items: [] },
  ]);
  state.providers = providers;
  state.enabled = enabled;
}

onUnauthorized(() => {
  const here = location.pathname + location.search;
  if (location.pathname.startsWith('/portal/signin')) return;
  const wasSignedIn = localStorage.getItem(SIGNED_IN) === '1';
  localStorage.removeItem(SIGNED_IN);
  state.session = null;
  unmountProvider();
  const q = new URLSearchParams({ return: here });
  if (wasSignedIn) q.set('expired', '1');
  navigate(`/portal/signin?${q}`, { replace: true });
});

export function markSignedIn(on) {
  if (on) localStorage.setItem(SIGNED_IN, '1');
  else localStorage.removeItem(SIGNED_IN);
}

let routing = 0;

/** Draws the page for the current URL. */
export async function route() {
  const mine = ++routing;
  const r = parse(location.pathname);
  const app = document.getElementById('app');
  if (r.page === 'signin') {
    unmountProvider();
    mount(app, signinPage());
    return;
  }
  try {
    if (!state.session) {
      state.session = await api('GET', '/api/session');
      markSignedIn(true);
    }
    if (!state.me) await reloadMe();
  } catch (e) {
    if (e.status === 401) return; // onUnauthorized moved us to sign-in
    mount(app, h('main', { id: 'main', tabindex: '-1' }, banner('error', e.message)));
    return;
  }
  if (mine !== routing) return;

  if (r.page === 'home') {
    const target = defaultWorkspace();
    if (target) navigate(wsUrl(target.org, target.ws), { replace: true });
    else drawShell(r, welcomePage());
    return;
  }
  const org = r.org || state.org;
  // The organization's pages keep the workspace the user came from.
  const ws = r.ws || (org === state.org ? state.ws : '');
  if (org !== state.org || ws !== state.ws) {
    state.org = org;
    state.ws = ws;
    state.enabled = null;
    if (ws) localStorage.setItem(LAST_WS, `${org}/${ws}`);
  }
  state.error = '';
  try {
    await reloadWorkspace();
  } catch (e) {
    if (e.status === 401) return;
    state.error = e.message;
    state.enabled = { items: [] };
    state.providers = state.providers || { items: [], categories: [] };
  }
  if (mine !== routing) return;
  let page;
  switch (r.page) {
    case 'catalog': page = catalogPage(); break;
    case 'provider': page = providerPage(r); break;
    case 'members': page = membersPage({ scope: 'workspace' }); break;
    case 'org-members': page = membersPage({ scope: 'org' }); break;
    case 'kubeconfig': page = kubeconfigPage(); break;
    case 'mcp': page = mcpPage(); break;
    default: page = notFoundPage();
  }
  if (r.page !== 'provider') unmountProvider();
  drawShell(r, page);
}

function drawShell(r, page) {
  const app = document.getElementById('app');
  // Redrawing replaces the elements; keyboard users keep their place (same id, or the same link),
  // else focus moves to the page's content.
  const active = document.activeElement && app.contains(document.activeElement) ? document.activeElement : null;
  const id = active?.id || '';
  const href = active?.getAttribute?.('href') || '';
  const inNav = Boolean(active?.closest?.('nav'));
  // The new shell goes in before the old one leaves, so a live provider frame can move into it
  // without its document being torn down (provider.js, carryFrame).
  const next = renderShell(r, page);
  const old = [...app.childNodes];
  app.append(...[next].flat(Infinity).filter(Boolean));
  carryFrame(app);
  for (const n of old) n.remove();
  // What is drawn (tests wait for it after a navigation).
  app.dataset.drawn = location.pathname;
  if (!active) return;
  const again = (id && document.getElementById(id))
    || (href && [...document.querySelectorAll(inNav ? 'nav a[href]' : 'main a[href]')].find((a) => a.getAttribute('href') === href));
  if (again) again.focus();
  else document.getElementById('main')?.focus();
}

function defaultWorkspace() {
  const orgs = state.me?.organizations || [];
  const remembered = (localStorage.getItem(LAST_WS) || '').split('/');
  for (const o of orgs) {
    if (o.name === remembered[0] && o.workspaces.some((w) => w.name === remembered[1])) {
      return { org: o.name, ws: remembered[1] };
    }
  }
  const first = orgs.find((o) => o.workspaces.length > 0);
  return first ? { org: first.name, ws: first.workspaces[0].name } : null;
}

function welcomePage() {
  return h('section', { class: 'page' },
    h('h1', {}, 'Welcome'),
    h('p', {}, state.me?.organizations?.length
      ? 'Your organizations have no workspaces you belong to yet. Create one with “New workspace”.'
      : 'You are not a member of any organization yet. Create one with “New organization”, or ask an admin to add you.'));
}

export function notFoundPage(text) {
  return h('section', { class: 'page' },
    h('h1', {}, 'Not found'),
    banner('error', text || `Nothing is at ${location.pathname}.`),
    h('p', {}, h('a', { href: '/portal/' }, 'Back to the portal')));
}

// Same-origin portal links navigate without a reload.
document.addEventListener('click', (ev) => {
  const a = ev.target instanceof Element ? ev.target.closest('a[href]') : null;
  if (!a || ev.defaultPrevented || ev.button !== 0 || ev.metaKey || ev.ctrlKey || ev.shiftKey || a.target || a.hasAttribute('download')) return;
  const url = new URL(a.href, location.href);
  if (url.origin !== location.origin || !url.pathname.startsWith('/portal/')) return;
  ev.preventDefault();
  navigate(url.pathname + url.search);
});
window.addEventListener('popstate', () => route());
applyTheme();
route();
