// The sign-in page: a token (static tokens, the dev user's token), or the hub's OIDC issuer
// (authorization code with PKCE, run by the hub). Both end in an HttpOnly session cookie.

import { api } from './api.js';
import { h, banner } from './dom.js';
import { navigate } from './nav.js';
import { state, markSignedIn } from './state.js';
import { returnTo } from './decide.js';

export function signinPage() {
  const q = new URLSearchParams(location.search);
  const notices = [];
  if (q.get('expired')) notices.push(banner('error', 'Your session has expired or was revoked. Sign in again.'));
  if (q.get('signedOut')) notices.push(banner('info', 'You have signed out.'));
  if (q.get('error')) notices.push(banner('error', q.get('error')));
  const error = h('p', { class: 'error', role: 'alert', id: 'signin-error' });
  const oidc = h('div', { class: 'oidc' });
  api('GET', '/api/session/options', undefined, { quiet401: true }).then((o) => {
    if (o?.oidc) {
      const host = (() => { try { return new URL(o.oidc.issuer).host; } catch { return o.oidc.issuer; } })();
      oidc.append(h('p', {}, 'or'),
        h('a', { class: 'button', id: 'signin-oidc', href: `/api/session/oidc?${new URLSearchParams({ return: returnTo(q.get('return')) })}` }, `Sign in with ${host}`));
    }
  }).catch(() => {});
  const form = h('form', {
    class: 'signin-form',
    onsubmit: async (ev) => {
      ev.preventDefault();
      error.textContent = '';
      const token = ev.target.elements.token.value.trim();
      try {
        state.session = await api('POST', '/api/session', { token }, { quiet401: true });
        state.me = null;
        markSignedIn(true);
        navigate(returnTo(q.get('return')), { replace: true });
      } catch (e) {
        error.textContent = e.message;
        ev.target.elements.token.focus();
      }
    },
  },
  h('label', { for: 'token' }, 'Access token'),
  h('input', { id: 'token', name: 'token', type: 'password', required: true, autocomplete: 'current-password', 'aria-describedby': 'token-hint signin-error' }),
  h('p', { class: 'hint', id: 'token-hint' }, 'A token of the hub’s token file; with faros dev, the dev user’s token from .faros/dev-user.token.'),
  h('button', { type: 'submit', class: 'primary' }, 'Sign in'));
  return h('main', { id: 'main', class: 'signin', tabindex: '-1' },
    h('div', { class: 'signin-box' },
      h('h1', {}, h('img', { src: '/portal/assets/logo.svg', alt: '', width: 32, height: 32 }), ' Sign in to faros'),
      notices, error, form, oidc));
}
