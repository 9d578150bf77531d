// The catalog: a card per provider with its state in this workspace, the Enable dialog with the
// provider's permission claims, and Disable. Also decides what the side-nav lists.

import { api, wsPath } from './api.js';
import { h, mount, modal, banner } from './dom.js';
import { navigate } from './nav.js';
import { state, wsUrl, wsRole, reloadWorkspace } from './state.js';
import { providerState, navGroups } from './decide.js';

/** The enabled-row of `name` in this workspace, if any. */
function enabledRow(name) {
  return state.enabled?.items?.find((e) => e.name === name) || null;
}

function enabledSet() {
  return new Set((state.enabled?.items || []).filter((e) => e.bound && !e.terminating).map((e) => e.name));
}

/** Side-nav groups of the current workspace ([`navGroups`]). */
export function navProviders() {
  return navGroups(state.providers?.items || [], state.providers?.categories || [], state.enabled?.items || []);
}

function claimLabel(c) {
  return `${c.resource}${c.group ? `.${c.group}` : ''}`;
}

/** The Enable dialog; resolves when it closed. */
export async function enableDialog(p) {
  const claims = p.permissionClaims || [];
  const body = h('div', { class: 'enable-body' },
    h('p', {}, `${p.displayName || p.name} ${p.version ? `(${p.version}) ` : ''}will be bound into workspace ${state.org}/${state.ws}.`),
    claims.length === 0
      ? h('p', { class: 'no-claims' }, 'This provider requests no access to your workspace’s resources.')
      : h('fieldset', { class: 'claims' },
        h('legend', {}, 'Access it asks for'),
        claims.map((c, i) => {
          const id = `claim-${i}`;
          const tenant = c.tenantScoped === true;
          return h('div', { class: 'claim' },
            h('input', { type: 'checkbox', id, name: 'claim', checked: tenant, dataset: { group: c.group || '', resource: c.resource }, 'aria-describedby': `${id}-desc` }),
            h('label', { for: id }, h('code', {}, claimLabel(c)), ` (${c.group ? `group ${c.group}` : 'core group'})`),
            h('p', { class: 'hint', id: `${id}-desc` },
              h('span', { class: 'verbs' }, `Verbs: ${(c.verbs || []).join(', ')}`),
              !tenant && h('span', { class: 'warn' }, ' Warning: not limited to this workspace — the provider could reach objects beyond it.')));
        })),
    p.edgeProxyAccess && h('p', { class: 'notice', role: 'note' },
      'This provider asks to reach your edges through the edges proxy (verb proxy on edges) in this workspace.'));
  const result = await modal(`Enable ${p.displayName || p.name}`, body, {
    submitLabel: 'Enable',
    onsubmit: async (form) => {
      const accepted = [...form.querySelectorAll('input[name=claim]:checked')].map((el) => ({ group: el.dataset.group, resource: el.dataset.resource }));
      const resp = await api('POST', `${wsPath(state.org, state.ws)}/providers/${encodeURIComponent(p.name)}/enable`, { acceptedClaims: accepted });
      return resp || { phase: '' };
    },
  });
  return result;
}

async function disableDialog(p) {
  return modal(`Disable ${p.displayName || p.name}?`,
    h('p', {}, `Disabling removes the binding and deletes every ${p.displayName || p.name} object in ${state.org}/${state.ws}. This cannot be undone.`),
    {
      submitLabel: 'Disable',
      danger: true,
      onsubmit: async () => {
        const resp = await api('POST', `${wsPath(state.org, state.ws)}/providers/${encodeURIComponent(p.name)}/disable`);
        return resp || { gone: true };
      },
    });
}

/** Polls until `done()` or `ms` passed, redrawing each time. */
async function follow(done, ms = 60000) {
  const until = Date.now() + ms;
  while (Date.now() < until) {
    await new Promise((r) => setTimeout(r, 1000));
    try { await reloadWorkspace(); } catch { return; }
    if (done()) break;
    navigate(location.pathname, { replace: true });
  }
  navigate(location.pathname, { replace: true });
}

let filter = { text: '', category: '' };

function card(p, admin, enabledNames, results) {
  const row = enabledRow(p.name);
  const st = providerState(p, row, enabledNames);
  const titleId = `card-${p.name}-title`;
  const openHref = wsUrl(state.org, state.ws, `providers/${encodeURIComponent(p.name)}`);
  const actions = [];
  if ((st.key === 'enabled' || st.key === 'open') && p.hasUI) {
    actions.push(h('a', { class: 'button', href: openHref, 'aria-label': `Open ${p.displayName || p.name}` }, 'Open'));
  }
  if (st.key === 'available' || st.key === 'blocked') {
    actions.push(h('button', {
      type: 'button', class: 'primary', disabled: !admin || st.key === 'blocked',
      'aria-label': `Enable ${p.displayName || p.name}`,
      onclick: async () => {
        const res = await enableDialog(p);
        if (!res) return;
        results.set(p.name, res.phase === 'Bound' ? `Enabled: the binding is Bound.` : `Enabling: the binding is ${res.phase || 'being created'}; this page follows it.`);
        await reloadWorkspace().catch(() => {});
        navigate(location.pathname, { replace: true });
        if (res.phase !== 'Bound') follow(() => enabledRow(p.name)?.bound);
      },
    }, 'Enable'));
  }
  if (row && !row.terminating) {
    actions.push(h('button', {
      type: 'button', class: 'danger', disabled: !admin, 'aria-label': `Disable ${p.displayName || p.name}`,
      onclick: async () => {
        const res = await disableDialog(p);
        if (!res) return;
        results.set(p.name, res.gone ? 'Disabled.' : 'Disabling: kcp is deleting the provider’s objects.');
        await reloadWorkspace().catch(() => {});
        navigate(location.pathname, { replace: true });
        if (!res.gone) follow(() => !enabledRow(p.name));
      },
    }, 'Disable'));
  }
  const meta = [p.vendor, p.version && `v${p.version}`, p.category].filter(Boolean).join(' · ');
  return h('li', { class: `card state-${st.key}`, dataset: { provider: p.name }, 'aria-labelledby': titleId },
    h('div', { class: 'card-head' },
      p.iconURL && h('img', { src: p.iconURL, alt: '', width: 40, height: 40, class: 'icon', onerror: (ev) => ev.target.remove() }),
      h('div', {},
        h('h2', { id: titleId }, p.displayName || p.name),
        meta && h('p', { class: 'meta' }, meta))),
    p.description && h('p', { class: 'description' }, p.description),
    h('p', { class: `state state-${st.key}`, dataset: { state: st.key } }, h('strong', {}, st.label), st.detail && ` — ${st.detail}`),
    results.has(p.name) && h('p', { class: 'result', role: 'status' }, results.get(p.name)),
    !admin && (st.key === 'available') && h('p', { class: 'hint' }, 'Only workspace admins can enable providers.'),
    h('div', { class: 'actions' }, actions));
}

const results = new Map();

/** The catalog page of the current workspace. */
export function catalogPage() {
  const items = state.providers?.items || [];
  const admin = wsRole() === 'admin';
  const enabledNames = enabledSet();
  const categories = [...new Set(items.map((p) => p.category).filter(Boolean))].sort();
  const list = h('ul', { class: 'cards', 'aria-label': 'Providers' });
  const count = h('p', { class: 'muted', role: 'status', id: 'catalog-count' });
  const draw = () => {
    const text = filter.text.toLowerCase();
    const shown = items.filter((p) => (!filter.category || p.category === filter.category)
      && (!text || [p.name, p.displayName, p.description, p.vendor].some((f) => (f || '').toLowerCase().includes(text))));
    mount(list, shown.map((p) => card(p, admin, enabledNames, results)));
    count.textContent = `${shown.length} of ${items.length} providers`;
  };
  draw();
  return h('section', { class: 'page catalog' },
    h('h1', {}, 'Catalog'),
    h('div', { class: 'filters' },
      h('label', { for: 'catalog-search' }, 'Search'),
      h('input', { id: 'catalog-search', type: 'search', value: filter.text, oninput: (ev) => { filter.text = ev.target.value; draw(); } }),
      h('label', { for: 'catalog-category' }, 'Category'),
      h('select', { id: 'catalog-category', onchange: (ev) => { filter.category = ev.target.value; draw(); } },
        h('option', { value: '' }, 'All'),
        categories.map((c) => h('option', { value: c, selected: c === filter.category }, c)))),
    count,
    items.length === 0 ? banner('info', 'No providers are registered yet.') : list);
}
