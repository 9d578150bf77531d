// What every page reads: the session, the user's organizations and workspaces (/api/me), the
// catalog and the current workspace's enabled providers, and questions answered from them. A leaf
// module (it imports only api.js), so pages read it without importing the page that routes them.

import { api, wsPath } from './api.js';

const SIGNED_IN = 'faros.signedIn';

/** The portal's state; pages replace its fields (not mutate them) so comparisons stay cheap. */
export const state = {
  session: null, // {user, groups, expiresAt}
  me: null, // /api/me
  providers: null, // /api/providers
  enabled: null, // {items} of the current workspace
  org: '',
  ws: '',
  error: '',
};

/** The portal URL of a workspace page. */
export const wsUrl = (org, ws, rest = 'catalog') =>
  `/portal/orgs/${encodeURIComponent(org)}/workspaces/${encodeURIComponent(ws)}/${rest}`;

function currentWorkspace() {
  const org = state.me?.organizations?.find((o) => o.name === state.org);
  return org?.workspaces?.find((w) => w.name === state.ws);
}

/** The signed-in user's role in the current workspace ('admin' | 'member' | ''). */
export function wsRole() {
  return currentWorkspace()?.role || '';
}

/** The signed-in user's role in the current organization ('admin' | 'member' | ''). */
export function orgRole() {
  return state.me?.organizations?.find((o) => o.name === state.org)?.role || '';
}

/** The current workspace's logical cluster ('' when unknown). */
export function currentCluster() {
  return currentWorkspace()?.cluster || '';
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

/**
 * Remembers in this browser that a session was started, so a later 401 can say the session
 * expired rather than ask for a first sign-in.
 */
export function markSignedIn(on) {
  if (on) localStorage.setItem(SIGNED_IN, '1');
  else localStorage.removeItem(SIGNED_IN);
}

/** Whether this browser had a session (see markSignedIn). */
export function wasSignedIn() {
  return localStorage.getItem(SIGNED_IN) === '1';
}
