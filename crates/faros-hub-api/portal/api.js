// Calls to the hub. The session cookie (HttpOnly) goes along same-origin; scripts never see a
// credential. State-changing requests carry the CSRF header the hub requires of cookie sessions.

export const CSRF_HEADER = 'X-Faros-CSRF';

/** An error answer of the hub: `message` is the Kubernetes Status message. */
export class ApiError extends Error {
  constructor(status, message, reason) {
    super(message);
    this.status = status;
    this.reason = reason || '';
  }
}

let unauthorized = () => {};

/** Called on any 401 (the session expired, was revoked, or never existed). */
export function onUnauthorized(fn) {
  unauthorized = fn;
}

/** Status JSON of a failed response, as an ApiError. */
export async function errorOf(resp) {
  const text = await resp.text().catch(() => '');
  let body = null;
  try { body = JSON.parse(text); } catch { /* not JSON */ }
  const message = body?.message || `${resp.status} ${resp.statusText || ''}`.trim();
  return new ApiError(resp.status, message, body?.reason);
}

/** Headers every portal request sends: JSON, and the CSRF proof for changes. */
export function requestHeaders(method, extra = {}, json = false) {
  const h = { Accept: 'application/json', ...extra };
  if (!['GET', 'HEAD', 'OPTIONS'].includes(method)) h[CSRF_HEADER] = '1';
  if (json) h['Content-Type'] = 'application/json';
  return h;
}

/**
 * api('GET', '/api/me') → parsed JSON (null for 204). Throws ApiError with the hub's message.
 * `opts.quiet401`: a 401 is thrown without leaving the page (the sign-in page's own probe).
 */
export async function api(method, path, body, opts = {}) {
  const resp = await fetch(path, {
    method,
    headers: requestHeaders(method, opts.headers, body !== undefined),
    body: body !== undefined ? JSON.stringify(body) : undefined,
    credentials: 'same-origin',
    cache: 'no-store',
  });
  if (resp.status === 401 && !opts.quiet401) {
    const err = await errorOf(resp);
    unauthorized(err);
    throw err;
  }
  if (!resp.ok) throw await errorOf(resp);
  if (opts.raw) return resp;
  if (resp.status === 204) return null;
  const text = await resp.text();
  return text ? JSON.parse(text) : null;
}

export const wsPath = (org, ws) => `/api/orgs/${encodeURIComponent(org)}/workspaces/${encodeURIComponent(ws)}`;
