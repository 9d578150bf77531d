// The members page of a workspace or an organization: its users' roles, and the roles granted to
// identity-provider groups (held by whoever's token lists the group). Admins grant, change and
// revoke both; everyone who may see the page sees both lists.

import { api, wsPath } from './api.js';
import { h, mount, modal, banner } from './dom.js';
import { state, wsRole, orgRole, reloadMe } from './state.js';
import { grantRows, groupNameProblem, grantedMessage } from './decide.js';

const ROLES = ['member', 'admin'];

// What differs between a user's role and a group's: the hub's path, the words, the test hooks.
const KINDS = {
  user: {
    path: 'members',
    heading: 'Users',
    column: 'User',
    noun: (n) => n,
    removeLabel: (n) => `Remove ${n}`,
    removeText: 'Remove',
    removed: (n) => `${n} was removed.`,
    removeTitle: (n) => `Remove ${n}?`,
    removeBody: (n, where) => `${n} loses access to the ${where}.`,
    empty: 'No members.',
    formLabel: 'Add a member',
    field: { id: 'member-user', name: 'user', label: 'User', role: 'member-role', submit: 'Add member' },
    selectId: (n) => `role-${n.replace(/[^a-zA-Z0-9_-]/g, '_')}`,
    rowData: (n) => ({ user: n }),
    adminsOnly: 'Only admins can change members.',
  },
  group: {
    path: 'groups',
    heading: 'Group roles',
    column: 'Group',
    noun: (n) => `group ${n}`,
    removeLabel: (n) => `Revoke group ${n}`,
    removeText: 'Revoke',
    removed: (n) => `Group ${n} no longer has a role here.`,
    removeTitle: (n) => `Revoke the role of group ${n}?`,
    removeBody: (n, where) => `Everyone in group ${n} loses the access it gives them to the ${where}, unless they have a role of their own.`,
    empty: 'No group has a role here.',
    formLabel: 'Grant a role to a group',
    field: { id: 'group-name', name: 'group', label: 'Group', role: 'group-grant-role', submit: 'Grant role' },
    selectId: (n) => `group-role-${[...n].map((c) => (/[a-zA-Z0-9_-]/.test(c) ? c : `_${c.codePointAt(0).toString(16)}`)).join('')}`,
    rowData: (n) => ({ group: n }),
    adminsOnly: 'Only admins can change group roles.',
  },
};

/** One list (users or groups) with its grant form: a section of the members page. */
function grants(kind, { base, admin, where }) {
  const k = KINDS[kind];
  const message = h('div', { class: 'messages', id: `${kind}-messages` });
  const tbody = h('tbody');
  const show = (type, text) => mount(message, banner(type, text));
  const url = (name) => `${base}/${k.path}/${encodeURIComponent(name)}`;

  async function load() {
    try {
      const list = await api('GET', `${base}/${k.path}`);
      const rows = grantRows(list.items, kind, admin);
      mount(tbody, rows.length ? rows.map(row) : h('tr', {}, h('td', { colspan: '4', class: 'muted' }, k.empty)));
    } catch (e) {
      show('error', e.message);
    }
  }

  async function put(name, role) {
    try {
      await api('PUT', url(name), { role });
      show('info', grantedMessage(kind, name, role, where));
      await reloadMe().catch(() => {});
    } catch (e) {
      show('error', e.message);
    }
    await load();
  }

  async function remove(name) {
    const ok = await modal(k.removeTitle(name), h('p', {}, k.removeBody(name, where)), { submitLabel: k.removeText, danger: true });
    if (!ok) return;
    try {
      await api('DELETE', url(name));
      show('info', k.removed(name));
      await reloadMe().catch(() => {});
    } catch (e) {
      show('error', e.message);
    }
    await load();
  }

  function row(r) {
    const id = k.selectId(r.name);
    return h('tr', { dataset: k.rowData(r.name) },
      h('td', {}, r.name),
      h('td', {}, r.editable
        ? [h('label', { for: id, class: 'visually-hidden' }, `Role of ${k.noun(r.name)}`),
          h('select', { id, onchange: (ev) => put(r.name, ev.target.value) },
            ROLES.map((role) => h('option', { value: role, selected: role === r.role }, role)))]
        : r.role),
      h('td', {}, r.source),
      h('td', {}, r.editable && h('button', {
        type: 'button', class: 'danger', 'aria-label': k.removeLabel(r.name), onclick: () => remove(r.name),
      }, k.removeText)));
  }

  load();
  const f = k.field;
  const fieldError = h('p', { class: 'error', role: 'alert', id: `${f.id}-error` });
  const form = admin && h('form', {
    class: 'inline-form', 'aria-label': k.formLabel, novalidate: kind === 'group',
    onsubmit: (ev) => {
      ev.preventDefault();
      const input = ev.target.elements[f.name];
      const name = input.value.trim();
      const problem = kind === 'group' ? groupNameProblem(name) : '';
      fieldError.textContent = problem;
      input.setAttribute('aria-invalid', problem ? 'true' : 'false');
      if (problem) { input.focus(); return; }
      if (name) put(name, ev.target.elements.role.value);
      ev.target.reset();
    },
  },
  h('label', { for: f.id }, f.label),
  h('input', { id: f.id, name: f.name, required: true, autocomplete: 'off', 'aria-describedby': kind === 'group' ? `${f.id}-error ${f.id}-hint` : false }),
  h('label', { for: f.role }, 'Role'),
  h('select', { id: f.role, name: 'role' }, ROLES.map((role) => h('option', { value: role }, role))),
  h('button', { type: 'submit', class: 'primary' }, f.submit));

  const headingId = `${kind}-grants`;
  return h('section', { class: `grants grants-${kind}`, 'aria-labelledby': headingId },
    h('h2', { id: headingId }, k.heading),
    kind === 'group' && h('p', { class: 'hint', id: `${f.id}-hint` },
      'A role granted to a group of your identity provider is held by everyone whose sign-in says they are in it; '
      + 'the provider decides who is, and a user it removes from the group loses the role with their next token.'),
    message,
    h('table', {}, h('caption', { class: 'visually-hidden' }, `${k.heading} of the ${where}`),
      h('thead', {}, h('tr', {},
        h('th', { scope: 'col' }, k.column), h('th', { scope: 'col' }, 'Role'), h('th', { scope: 'col' }, 'Granted'),
        h('th', { scope: 'col' }, h('span', { class: 'visually-hidden' }, 'Actions')))),
      tbody),
    form ? [form, fieldError] : h('p', { class: 'hint' }, k.adminsOnly));
}

/** Members of the workspace (`scope: 'workspace'`) or the organization (`'org'`). */
export function membersPage({ scope }) {
  const org = scope === 'org';
  const base = org ? `/api/orgs/${encodeURIComponent(state.org)}` : wsPath(state.org, state.ws);
  const admin = (org ? orgRole() : wsRole()) === 'admin';
  const where = org ? `organization ${state.org}` : `workspace ${state.org}/${state.ws}`;
  return h('section', { class: 'page members' },
    h('h1', {}, org ? `Members of organization ${state.org}` : 'Members'),
    h('p', { class: 'muted' }, org
      ? 'Organization admins, users and groups alike, administer every workspace of the organization.'
      : 'Admins manage members and providers; members use the enabled providers.'),
    grants('user', { base, admin, where }),
    grants('group', { base, admin, where }));
}
