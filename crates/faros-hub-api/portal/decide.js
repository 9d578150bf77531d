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
