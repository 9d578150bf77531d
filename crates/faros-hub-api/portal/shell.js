// The frame around every signed-in page: organization and workspace switcher, create
// organization / workspace, theme, the user, sign-out, and the side-nav.

import { api } from './api.js';
import { h, modal } from './dom.js';
import { navigate } from './nav.js';
import { state, wsUrl, reloadMe, markSignedIn } from './state.js';
import { applyTheme, themePreference, setThemePreference } from './theme.js';
import { navProviders } from './catalog.js';
import { refreshProviderContext } from './provider.js';
import { sameSection } from './decide.js';

// A system theme change reaches the portal and the provider frame alike.
matchMedia('(prefers-color-scheme: dark)').addEventListener('change', () => {
  applyTheme();
  refreshProviderContext();
});

function nameField(id, label, hint) {
  return h('div', { class: 'field' },
    h('label', { for: id }, label),
    h('input', {
      id, name: 'name', required: true, maxlength: '63', pattern: '[a-z0-9]([\\-a-z0-9]*[a-z0-9])?',
      autocomplete: 'off', 'aria-describedby': `${id}-hint`,
    }),
    h('p', { class: 'hint', id: `${id}-hint` }, hint));
}

async function createOrg() {
  const created = await modal('New organization', nameField('new-org-name', 'Name', 'Lowercase letters, digits and dashes.'), {
    submitLabel: 'Create organization',
    onsubmit: async (form) => {
      const name = form.elements.name.value.trim();
      await api('POST', '/api/orgs', { name });
      return name;
    },
  });
  if (!created) return;
  await reloadMe();
  state.org = created;
  state.ws = '';
  await createWorkspace(created);
}

async function createWorkspace(org = state.org) {
  if (!org) return;
  const created = await modal(`New workspace in ${org}`, nameField('new-ws-name', 'Name', 'Lowercase letters, digits and dashes.'), {
    submitLabel: 'Create workspace',
    onsubmit: async (form) => {
      const name = form.elements.name.value.trim();
      await api('POST', `/api/orgs/${encodeURIComponent(org)}/workspaces`, { name });
      return name;
    },
  });
  await reloadMe();
  if (created) navigate(wsUrl(org, created));
  else navigate(location.pathname);
}

async function signOut() {
  let ended = null;
  try {
    ended = await api('DELETE', '/api/session', undefined, { quiet401: true });
  } catch { /* the cookie is cleared either way */ }
  markSignedIn(false);
  state.session = null;
  state.me = null;
  // An OIDC session: the identity provider ends its own session too (RP-initiated logout) and
  // sends the browser back to the sign-in page. The hub's path redirects there; only that path is
  // followed, so an answer can never send the browser elsewhere.
  if (ended?.logoutUrl === '/api/session/oidc/logout') {
    location.assign(ended.logoutUrl);
    return;
  }
  navigate('/portal/signin?signedOut=1', { replace: true });
}

function switcher(r) {
  const orgs = state.me?.organizations || [];
  const org = orgs.find((o) => o.name === state.org);
  const orgSelect = h('select', {
    id: 'org-select',
    onchange: (ev) => {
      const next = orgs.find((o) => o.name === ev.target.value);
      if (next?.workspaces?.length) navigate(wsUrl(next.name, next.workspaces[0].name));
      else { state.org = ev.target.value; state.ws = ''; createWorkspace(ev.target.value); }
    },
  },
  !org && h('option', { value: '' }, '—'),
  orgs.map((o) => h('option', { value: o.name, selected: o.name === state.org }, o.displayName || o.name)));
  const wsSelect = h('select', {
    id: 'ws-select',
    disabled: !org || org.workspaces.length === 0,
    onchange: (ev) => navigate(wsUrl(state.org, ev.target.value, sameSection(r))),
  },
  !state.ws && h('option', { value: '' }, '—'),
  (org?.workspaces || []).map((w) => h('option', { value: w.name, selected: w.name === state.ws }, w.displayName || w.name)));
  return h('div', { class: 'switcher' },
    h('label', { for: 'org-select' }, 'Organization'), orgSelect,
    h('label', { for: 'ws-select' }, 'Workspace'), wsSelect,
    h('button', { type: 'button', id: 'new-org', onclick: createOrg }, 'New organization'),
    h('button', { type: 'button', id: 'new-ws', disabled: !org || org.role !== 'admin', onclick: () => createWorkspace() }, 'New workspace'));
}

function themeSelect() {
  const pref = themePreference();
  return h('div', { class: 'theme' },
    h('label', { for: 'theme-select' }, 'Theme'),
    h('select', {
      id: 'theme-select',
      onchange: (ev) => {
        setThemePreference(ev.target.value);
        refreshProviderContext();
      },
    }, ['system', 'light', 'dark'].map((t) => h('option', { value: t, selected: t === pref }, t[0].toUpperCase() + t.slice(1)))));
}

function navLink(href, text, current) {
  return h('a', { href, 'aria-current': current ? 'page' : false }, text);
}

function sideNav(r) {
  if (!state.ws) return h('nav', { class: 'sidenav', 'aria-label': 'Portal' }, h('p', { class: 'muted' }, 'No workspace selected.'));
  const at = (section) => r.page === section;
  const groups = navProviders();
  return h('nav', { class: 'sidenav', 'aria-label': 'Portal' },
    h('h2', {}, 'Workspace'),
    h('ul', {},
      h('li', {}, navLink(wsUrl(state.org, state.ws, 'catalog'), 'Catalog', at('catalog'))),
      h('li', {}, navLink(wsUrl(state.org, state.ws, 'members'), 'Members', at('members'))),
      h('li', {}, navLink(wsUrl(state.org, state.ws, 'kubeconfig'), 'Kubeconfig', at('kubeconfig'))),
      h('li', {}, navLink(wsUrl(state.org, state.ws, 'mcp'), 'MCP', at('mcp')))),
    h('h2', {}, 'Organization'),
    h('ul', {}, h('li', {}, navLink(`/portal/orgs/${encodeURIComponent(state.org)}/members`, 'Organization members', at('org-members')))),
    groups.length > 0 && h('h2', { id: 'nav-providers' }, 'Providers'),
    groups.map((g) => h('section', { class: 'nav-category', 'aria-label': g.name },
      h('h3', {}, g.name),
      h('ul', {}, g.providers.map((p) => {
        const base = wsUrl(state.org, state.ws, `providers/${encodeURIComponent(p.name)}`);
        const open = r.page === 'provider' && r.name === p.name;
        return h('li', { dataset: { provider: p.name } },
          navLink(base, p.displayName || p.name, open && !r.subPath),
          p.children.length > 0 && h('ul', {}, p.children.map((c) =>
            h('li', {}, navLink(`${base}/${c.builtinRoute.replace(/^\/+/, '')}`, c.displayName, open && r.subPath === c.builtinRoute.replace(/^\/+/, ''))))));
      })))));
}

/** The shell around `page`. */
export function renderShell(r, page) {
  return [
    h('header', { class: 'topbar' },
      h('a', { class: 'brand', href: '/portal/' }, h('img', { src: '/portal/assets/logo.svg', alt: '', width: 24, height: 24 }), 'faros'),
      switcher(r),
      h('div', { class: 'spacer' }),
      themeSelect(),
      h('span', { class: 'user', id: 'signed-in-user' }, h('span', { class: 'visually-hidden' }, 'Signed in as '), state.session?.user || ''),
      h('button', { type: 'button', id: 'sign-out', onclick: signOut }, 'Sign out')),
    h('div', { class: 'layout' },
      sideNav(r),
      h('main', { id: 'main', tabindex: '-1' }, state.error && h('p', { class: 'banner error', role: 'alert' }, state.error), page)),
  ];
}
