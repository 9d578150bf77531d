// The portal's entry and the top of its module graph: it draws the page for each client-side route
// under /portal/ inside the shell. Pages import only leaf modules (state.js, nav.js, theme.js, …),
// never this one, so no module imports a module that imports it back. No build step: plain ES
// modules served by the hub.

import { api, onUnauthorized } from './api.js';
import { parse } from './decide.js';
import { h, mount, banner } from './dom.js';
import { navigate, onNavigate } from './nav.js';
import { state, wsUrl, reloadMe, reloadWorkspace, markSignedIn, wasSignedIn } from './state.js';
import { applyTheme } from './theme.js';
import { notFoundPage } from './notfound.js';
import { signinPage } from './signin.js';
import { renderShell } from './shell.js';
import { catalogPage } from './catalog.js';
import { providerPage, unmountProvider, carryFrame } from './provider.js';
import { membersPage } from './members.js';
import { kubeconfigPage, mcpPage } from './workspace.js';

const LAST_WS = 'faros.workspace';

onUnauthorized(() => {
  const here = location.pathname + location.search;
  if (location.pathname.startsWith('/portal/signin')) return;
  const expired = wasSignedIn();
  markSignedIn(false);
  state.session = null;
  unmountProvider();
  const q = new URLSearchParams({ return: here });
  if (expired) q.set('expired', '1');
  navigate(`/portal/signin?${q}`, { replace: true });
});

let routing = 0;

/** Draws the page for the current URL. */
async function route() {
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

// Same-origin portal links navigate without a reload.
document.addEventListener('click', (ev) => {
  const a = ev.target instanceof Element ? ev.target.closest('a[href]') : null;
  if (!a || ev.defaultPrevented || ev.button !== 0 || ev.metaKey || ev.ctrlKey || ev.shiftKey || a.target || a.hasAttribute('download')) return;
  const url = new URL(a.href, location.href);
  if (url.origin !== location.origin || !url.pathname.startsWith('/portal/')) return;
  ev.preventDefault();
  navigate(url.pathname + url.search);
});
onNavigate(route);
window.addEventListener('popstate', () => route());
applyTheme();
route();
