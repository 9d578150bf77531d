// The portal's decisions, free of DOM and network so they are table-tested
// (e2e/browser/decide.test.mjs): routes, a provider's state in a workspace, the side-nav, where to
// go after sign-in or a workspace switch.

/** Parses a portal path into a route. */
export function parse(pathname) {
  const parts = pathname.replace(/^\/portal\/?/, '').split('/').filter(Boolean).map(decodeURIComponent);
  if (parts.length === 0) return { page: 'home' };
  if (parts[0] === 'signin' && parts.length === 1) return { page: 'signin' };
  if (parts[0] === 'orgs' && parts.length === 3 && parts[2] === 'members') {
    return { page: 'org-members', org: parts[1] };
  }
  if (parts[0] === 'orgs' && parts[2] === 'workspaces' && parts.length >= 5) {
    const [, org, , ws, section, ...rest] = parts;
    if (section === 'providers' && rest.length >= 1) {
      return { page: 'provider', org, ws, name: rest[0], subPath: rest.slice(1).join('/') };
    }
    if (['catalog', 'members', 'kubeconfig', 'mcp'].includes(section) && rest.length === 0) {
      return { page: section, org, ws };
    }
  }
  return { page: 'notfound' };
}

/**
 * A provider's state in this workspace (decided from the catalog item and the enabled row):
 * {key, label, detail}. key: available | enabled | binding | notready | blocked | disabling | open.
 */
export function providerState(p, row, enabledNames) {
  if (row?.terminating) {
    return { key: 'disabling', label: 'Disabling', detail: row.deletionBlocked || 'Removing the provider’s objects from this workspace.' };
  }
  if (row) {
    if (!row.bound) return { key: 'binding', label: 'Binding', detail: `The binding is ${row.phase || 'being created'}.` };
    if (!p.ready) return { key: 'notready', label: 'Not ready', detail: reason(p) };
    return { key: 'enabled', label: 'Enabled', detail: '' };
  }
  if (!p.ready) return { key: 'notready', label: 'Not ready', detail: reason(p) };
  if (!p.apiExportName) return { key: 'open', label: 'Available', detail: 'Nothing to enable: this provider has no APIs.' };
  const missing = (p.dependencies || []).map((d) => d.name).filter((d) => !enabledNames.has(d));
  if (missing.length) {
    return { key: 'blocked', label: 'Blocked by dependencies', detail: `Enable ${missing.join(', ')} first.` };
  }
  return { key: 'available', label: 'Available', detail: '' };
}

function reason(p) {
  return p.notReadyReason ? `The hub reports: ${p.notReadyReason}.` : 'The hub reports it is not ready.';
}

/**
 * The side-nav: providers with a UI that are Ready and usable in the workspace (enabled and Bound,
 * or without APIs to enable), grouped by category in the hub's order, then by name.
 */
export function navGroups(items, categories, enabledRows) {
  const usable = items.filter((p) => {
    if (!p.hasUI || !p.ready) return false;
    if (!p.apiExportName) return true;
    const row = enabledRows.find((e) => e.name === p.name);
    return Boolean(row && row.bound && !row.terminating);
  });
  const order = new Map(categories.map((c) => [c.name, c.order]));
  const groups = new Map();
  for (const p of usable) {
    const cat = p.category || 'Other';
    if (!groups.has(cat)) groups.set(cat, []);
    groups.get(cat).push(p);
  }
  return [...groups.entries()]
    .sort(([a], [b]) => (order.get(a) ?? 1000) - (order.get(b) ?? 1000) || a.localeCompare(b))
    .map(([name, providers]) => ({
      name,
      providers: providers.sort((a, b) => (a.displayName || a.name).localeCompare(b.displayName || b.name)),
    }));
}

/** The same page in another workspace: a provider keeps its root, workspace pages their section. */
export function sameSection(r) {
  if (r.page === 'provider') return `providers/${encodeURIComponent(r.name)}`;
  if (['members', 'kubeconfig', 'mcp'].includes(r.page)) return r.page;
  return 'catalog';
}

/** Where sign-in returns to: a portal page other than sign-in itself, else the portal's root. */
export function returnTo(path) {
  const r = path || '';
  return r.startsWith('/portal/') && !r.startsWith('/portal/signin') && !r.includes('//') && !r.includes('\\') ? r : '/portal/';
}

/** Methods a provider's frame may ask the bridge to use towards its backend. */
export const BRIDGE_METHODS = ['GET', 'HEAD', 'POST', 'PUT', 'PATCH', 'DELETE'];
/** Request headers a provider's frame may set; the portal adds the rest (tenant, CSRF). */
export const BRIDGE_HEADERS = ['accept', 'content-type', 'if-match', 'if-none-match'];
/** Largest request body the bridge carries (bytes of the string). */
export const BRIDGE_MAX_BODY = 1024 * 1024;

/**
 * The one call a provider's sandboxed frame may have the portal make for it (docs/portal.md):
 * `{path, method, headers, body}` from the frame's message becomes a same-origin request to
 * `/services/providers/<name>/<path>` and nothing else — never the hub's API, another provider, or
 * kcp — or `{error}`. `enabled` says whether the workspace enabled the provider: only then is the
 * workspace named to it (the hub would refuse the workspace otherwise).
 * Returns `{url, init}` with `url` a path and `init` for fetch() minus credentials.
 */
export function bridgeRequest(name, msg, { origin, org, workspace, enabled }) {
  const fail = (error) => ({ error });
  if (!msg || typeof msg !== 'object') return fail('not a request');
  const { path, method = 'GET', headers = {}, body = null } = msg;
  if (typeof path !== 'string' || !path.startsWith('/') || path.startsWith('//') || path.length > 2048) {
    return fail('the path must start with a single "/"');
  }
  // eslint-disable-next-line no-control-regex
  if (/[\u0000-\u001f\u007f\\]/.test(path)) return fail('the path has control characters or backslashes');
  const base = `/services/providers/${name}`;
  let url;
  try {
    url = new URL(base + path, origin);
  } catch {
    return fail('the path is not a URL path');
  }
  // The URL parser resolves `..` and `%2e%2e`: what is left must still be this provider's backend.
  if (url.origin !== origin || !(url.pathname === base || url.pathname.startsWith(`${base}/`))) {
    return fail(`the path leaves ${base}/`);
  }
  const m = String(method).toUpperCase();
  if (!BRIDGE_METHODS.includes(m)) return fail(`method ${m} is not allowed`);
  if (!headers || typeof headers !== 'object' || Array.isArray(headers)) return fail('headers must be an object');
  const out = { Accept: 'application/json' };
  for (const [k, v] of Object.entries(headers)) {
    if (!BRIDGE_HEADERS.includes(k.toLowerCase())) return fail(`header ${k} is not allowed`);
    if (typeof v !== 'string' || /[\r\n]/.test(v)) return fail(`header ${k} must be a one-line string`);
    out[k] = v;
  }
  if (body !== null && body !== undefined) {
    if (typeof body !== 'string') return fail('the body must be a string');
    if (m === 'GET' || m === 'HEAD') return fail(`${m} has no body`);
    if (body.length > BRIDGE_MAX_BODY) return fail('the body is too large');
  }
  if (m !== 'GET' && m !== 'HEAD') out['X-Faros-CSRF'] = '1';
  if (enabled) {
    out['X-Faros-Org'] = org;
    out['X-Faros-Workspace'] = workspace;
  }
  return { url: url.pathname + url.search, init: { method: m, headers: out, body: body ?? undefined } };
}

/**
 * A portal path a provider's frame asks to open (a link it rendered with `portalPath`): portal
 * pages only, never the API or another origin; `null` otherwise.
 */
export function bridgeOpen(path, origin) {
  if (typeof path !== 'string') return null;
  let url;
  try {
    url = new URL(path, origin);
  } catch {
    return null;
  }
  if (url.origin !== origin || !url.pathname.startsWith('/portal/') || url.pathname.startsWith('/portal/signin')) return null;
  return url.pathname + url.search + url.hash;
}

/**
 * The rows of a members table (`key: 'user'`) or a group-roles table (`key: 'group'`) from the
 * hub's list: by name, each with where its role comes from and whether an admin may change it
 * here (a role inherited from the organization is changed there).
 */
export function grantRows(items, key, admin) {
  return (items || [])
    .filter((i) => typeof i?.[key] === 'string')
    .map((i) => ({
      name: i[key],
      role: i.role,
      inherited: Boolean(i.inherited),
      source: i.inherited ? 'from the organization' : 'direct',
      editable: Boolean(admin) && !i.inherited,
    }))
    .sort((a, b) => a.name.localeCompare(b.name));
}

/**
 * Why the hub would refuse to grant a role to identity-provider group `name` ('' when it would
 * not): 1-256 printable characters, and no `system:` group (it would grant the role to everyone of
 * a kind). The hub checks again; this only spares a round trip and says it next to the field.
 */
export function groupNameProblem(name) {
  const g = typeof name === 'string' ? name.trim() : '';
  if (!g) return 'Enter the group’s name as your identity provider sends it.';
  if (new TextEncoder().encode(g).length > 256) return 'A group name has at most 256 characters.';
  // eslint-disable-next-line no-control-regex
  if (/[\u0000-\u001f\u007f-\u009f]/.test(g)) return 'A group name has no control characters.';
  if (g.startsWith('system:')) return 'System groups cannot be granted roles.';
  return '';
}

/** What the page says after a role was granted or changed. `kind`: 'user' | 'group'. */
export function grantedMessage(kind, name, role, where) {
  const article = role === 'admin' ? 'an admin' : 'a member';
  return kind === 'group'
    ? `Everyone in group ${name} is now ${article} of the ${where}.`
    : `${name} is now ${article} of the ${where}.`;
}
