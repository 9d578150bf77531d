// Workspace pages: the kubeconfig download, and the workspace's MCP endpoint with a client
// configuration to copy (the members page is members.js).

import { api, wsPath } from './api.js';
import { h, mount, banner } from './dom.js';
import { state } from './state.js';

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
    ...credentialHint(file, user));
}

/** How the downloaded kubeconfig gets its credential: an OIDC session's runs `faros credential oidc`
 * (it signs in with the identity provider itself), a token session's needs the token added. */
function credentialHint(file, user) {
  const use = [`kubectl --kubeconfig ${file} api-resources`, ...exampleGets(file)].join('\n');
  if (state.session?.tokenExpiresAt) {
    return [
      h('p', { class: 'hint' }, 'It carries no credential: kubectl runs the faros CLI (faros credential oidc), which signs you in with your identity provider on first use and keeps the token fresh. Install faros on your PATH, then:'),
      h('pre', { class: 'code' }, use),
    ];
  }
  return [
    h('p', { class: 'hint' }, 'It carries no credential: the portal never hands your token back to the browser. Add the token you signed in with:'),
    h('pre', { class: 'code' }, `kubectl --kubeconfig ${file} config set-credentials ${user} --token="$TOKEN"\n${use}`),
  ];
}

/** One `kubectl get` per resource the workspace's enabled providers serve here (kcp's bound
 * resources), none in a workspace without any: a command that works where it is shown. */
function exampleGets(file) {
  const resources = (state.enabled?.items || [])
    .filter((e) => e.bound && !e.terminating)
    .flatMap((e) => e.resources || []);
  return [...new Set(resources)].map((r) => `kubectl --kubeconfig ${file} get ${r} -A`);
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
