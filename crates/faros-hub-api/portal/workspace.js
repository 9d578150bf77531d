// Workspace pages: members (of the workspace or of its organization), the kubeconfig download, and
// the workspace's MCP endpoint with a client configuration to copy.

import { api, wsPath } from './api.js';
import { h, mount, modal, banner } from './dom.js';
import { state, wsRole, orgRole, reloadMe } from './app.js';

function membersBase(scope) {
  return scope === 'org' ? `/api/orgs/${encodeURIComponent(state.org)}` : wsPath(state.org, state.ws);
}

/** Members of the workspace (`scope: 'workspace'`) or the organization (`'org'`). */
export function membersPage({ scope }) {
  const base = membersBase(scope);
  const admin = (scope === 'org' ? orgRole() : wsRole()) === 'admin';
  const where = scope === 'org' ? `organization ${state.org}` : `workspace ${state.org}/${state.ws}`;
  const message = h('div', { class: 'messages' });
  const tbody = h('tbody');
  const show = (kind, text) => mount(message, banner(kind, text));

  async function load() {
    try {
      const list = await api('GET', `${base}/members`);
      mount(tbody, (list.items || []).map(row));
    } catch (e) {
      show('error', e.message);
    }
  }

  async function put(user, role) {
    try {
      await api('PUT', `${base}/members/${encodeURIComponent(user)}`, { role });
      show('info', `${user} is now ${role === 'admin' ? 'an admin' : 'a member'} of the ${where}.`);
      await reloadMe().catch(() => {});
    } catch (e) {
      show('error', e.message);
    }
    await load();
  }

  function row(m) {
    const id = `role-${m.user.replace(/[^a-zA-Z0-9_-]/g, '_')}`;
    return h('tr', { dataset: { user: m.user } },
      h('td', {}, m.user),
      h('td', {}, admin && !m.inherited
        ? [h('label', { for: id, class: 'visually-hidden' }, `Role of ${m.user}`),
          h('select', { id, onchange: (ev) => put(m.user, ev.target.value) },
            ['member', 'admin'].map((r) => h('option', { value: r, selected: r === m.role }, r)))]
        : m.role),
      h('td', {}, m.inherited ? 'from the organization' : 'direct'),
      h('td', {}, admin && !m.inherited && h('button', {
        type: 'button', class: 'danger', 'aria-label': `Remove ${m.user}`,
        onclick: async () => {
          const ok = await modal(`Remove ${m.user}?`, h('p', {}, `${m.user} loses access to the ${where}.`), { submitLabel: 'Remove', danger: true });
          if (!ok) return;
          try {
            await api('DELETE', `${base}/members/${encodeURIComponent(m.user)}`);
            show('info', `${m.user} was removed.`);
          } catch (e) {
            show('error', e.message);
          }
          await load();
        },
      }, 'Remove')));
  }

  load();
  const form = admin && h('form', {
    class: 'inline-form', 'aria-label': 'Add a member',
    onsubmit: (ev) => {
      ev.preventDefault();
      const user = ev.target.elements.user.value.trim();
      if (user) put(user, ev.target.elements.role.value);
      ev.target.reset();
    },
  },
  h('label', { for: 'member-user' }, 'User'), h('input', { id: 'member-user', name: 'user', required: true, autocomplete: 'off' }),
  h('label', { for: 'member-role' }, 'Role'), h('select', { id: 'member-role', name: 'role' }, h('option', { value: 'member' }, 'member'), h('option', { value: 'admin' }, 'admin')),
  h('button', { type: 'submit', class: 'primary' }, 'Add member'));
  return h('section', { class: 'page members' },
    h('h1', {}, scope === 'org' ? `Members of organization ${state.org}` : 'Members'),
    h('p', { class: 'muted' }, scope === 'org'
      ? 'Organization admins administer every workspace of the organization.'
      : 'Admins manage members and providers; members use the enabled providers.'),
    message,
    h('table', {}, h('caption', { class: 'visually-hidden' }, `Members of the ${where}`),
      h('thead', {}, h('tr', {}, h('th', { scope: 'col' }, 'User'), h('th', { scope: 'col' }, 'Role'), h('th', { scope: 'col' }, 'Membership'), h('th', { scope: 'col' }, h('span', { class: 'visually-hidden' }, 'Actions')))),
      tbody),
    form || h('p', { class: 'hint' }, 'Only admins can change members.'));
}

/** Kubeconfig download. */
export function kubeconfigPage() {
  const message = h('div', { class: 'messages' });
  const file = `${state.org}-${state.ws}.kubeconfig`;
  const user = state.session?.user || 'me';
  const download = async () => {
    try {
      const resp = await api('GET', `${wsPath(state.org, state.ws)}/kubeconfig`, undefined, { raw: true });
      const blob = await resp.blob();
      const url = URL.createObjectURL(blob);
      const a = h('a', { href: url, download: file, class: 'visually-hidden' }, 'download');
      document.body.append(a);
      a.click();
      a.remove();
      setTimeout(() => URL.revokeObjectURL(url), 10000);
      mount(message, banner('info', `Downloaded ${file}.`));
    } catch (e) {
      mount(message, banner('error', e.message));
    }
  };
  return h('section', { class: 'page kubeconfig' },
    h('h1', {}, 'Kubeconfig'),
    h('p', {}, `A kubeconfig for ${state.org}/${state.ws} through the hub: kubectl sees this workspace and the resources of its enabled providers.`),
    message,
    h('div', { class: 'actions' },
      h('button', { type: 'button', class: 'primary', id: 'download-kubeconfig', onclick: () => download() }, 'Download kubeconfig')),
    h('p', { class: 'hint' }, 'It carries no credential: the portal never hands your token back to the browser. Add the token you signed in with (or an OIDC ID token):'),
    h('pre', { class: 'code' }, `kubectl --kubeconfig ${file} config set-credentials ${user} --token="$TOKEN"\nkubectl --kubeconfig ${file} api-resources\nkubectl --kubeconfig ${file} get greetings -A`));
}

/** The workspace's MCP endpoint. */
export function mcpPage() {
  const url = `${location.origin}/api/orgs/${encodeURIComponent(state.org)}/workspaces/${encodeURIComponent(state.ws)}/mcp`;
  const config = JSON.stringify({
    mcpServers: {
      [`faros-${state.org}-${state.ws}`]: { type: 'http', url, headers: { Authorization: 'Bearer <your token>' } },
    },
  }, null, 2);
  const message = h('p', { class: 'muted', role: 'status', id: 'mcp-copied' });
  const copy = async (text, what) => {
    try {
      await navigator.clipboard.writeText(text);
      message.textContent = `Copied the ${what}.`;
    } catch {
      message.textContent = 'Copying is not allowed here; select the text instead.';
    }
  };
  return h('section', { class: 'page mcp' },
    h('h1', {}, 'MCP'),
    h('p', {}, 'One MCP endpoint for this workspace offers the tools of every provider enabled and ready here, acting in this workspace with your identity.'),
    h('h2', {}, 'Endpoint'),
    h('pre', { class: 'code', id: 'mcp-url' }, url),
    h('button', { type: 'button', onclick: () => copy(url, 'endpoint') }, 'Copy endpoint'),
    h('h2', {}, 'Client configuration'),
    h('pre', { class: 'code', id: 'mcp-config' }, config),
    h('button', { type: 'button', id: 'copy-mcp-config', onclick: () => copy(config, 'client configuration') }, 'Copy client configuration'),
    message,
    h('p', { class: 'hint' }, 'Replace <your token> with your token; the portal never shows credentials.'));
}
