// The quickstart provider UI: a plain ES module, no build step.
//
// The portal loads this file from /ui/providers/quickstart/main.js, creates a
// <faros-provider-quickstart> element and sets `el.farosContext` =
// {subPath, basePath, user, org, workspace, theme}. The element lists and creates Greetings in the
// caller's workspace through the hub's backend route (/services/providers/quickstart/...), which
// adds the verified identity; the element never holds a token.

const TAG = 'faros-provider-quickstart';
const STYLE_ID = `${TAG}-css`;

const CSS = `
${TAG} { display: block; font: 14px/1.4 system-ui, sans-serif; padding: 16px; }
${TAG}[data-theme="dark"] { color: #e6e6e6; }
${TAG} h2 { margin: 0 0 12px; font-size: 18px; }
${TAG} table { border-collapse: collapse; width: 100%; margin: 12px 0; }
${TAG} th, ${TAG} td { text-align: left; padding: 4px 8px; border-bottom: 1px solid #8884; }
${TAG} form { display: flex; gap: 8px; flex-wrap: wrap; }
${TAG} input { padding: 4px 6px; }
${TAG} .error { color: #c0392b; }
${TAG} .muted { opacity: 0.7; }
`;

function escapeHtml(value) {
  return String(value ?? '').replace(/[&<>"']/g, (c) => ({
    '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;', "'": '&#39;',
  }[c]));
}

/** `/ui/providers/<name>` -> `/services/providers/<name>`. */
export function serviceBase(basePath) {
  return String(basePath || '').replace(/^\/ui\/providers\//, '/services/providers/');
}

class FarosProviderQuickstart extends HTMLElement {
  constructor() {
    super();
    this._ctx = null;
    this._items = [];
    this._error = '';
    this._loading = false;
  }

  set farosContext(ctx) {
    const before = this._ctx;
    this._ctx = ctx || null;
    this.render();
    const moved = !before || !ctx || before.org !== ctx.org || before.workspace !== ctx.workspace;
    if (this.isConnected && moved) this.refresh();
  }

  get farosContext() {
    return this._ctx;
  }

  connectedCallback() {
    if (!document.getElementById(STYLE_ID)) {
      const style = document.createElement('style');
      style.id = STYLE_ID;
      style.textContent = CSS;
      document.head.appendChild(style);
    }
    this.render();
    this.refresh();
  }

  headers(json) {
    const h = { Accept: 'application/json' };
    if (json) h['Content-Type'] = 'application/json';
    if (this._ctx?.org) h['X-Faros-Org'] = this._ctx.org;
    if (this._ctx?.workspace) h['X-Faros-Workspace'] = this._ctx.workspace;
    return h;
  }

  url(path) {
    return `${serviceBase(this._ctx?.basePath)}${path}`;
  }

  async refresh() {
    if (!this._ctx?.basePath) return;
    this._loading = true;
    this.render();
    try {
      const resp = await fetch(this.url('/api/greetings'), { headers: this.headers(false), credentials: 'same-origin' });
      const body = await resp.json().catch(() => ({}));
      if (!resp.ok) throw new Error(body.message || `HTTP ${resp.status}`);
      this._items = body.items || [];
      this._error = '';
    } catch (e) {
      this._error = e.message || String(e);
    } finally {
      this._loading = false;
      this.render();
    }
  }

  async create(name, message) {
    try {
      const resp = await fetch(this.url('/api/greetings'), {
        method: 'POST',
        headers: this.headers(true),
        credentials: 'same-origin',
        body: JSON.stringify({ name, message: message || undefined }),
      });
      const body = await resp.json().catch(() => ({}));
      if (!resp.ok) throw new Error(body.message || `HTTP ${resp.status}`);
      this._error = '';
    } catch (e) {
      this._error = e.message || String(e);
    }
    await this.refresh();
  }

  render() {
    const ctx = this._ctx || {};
    this.dataset.theme = ctx.theme || 'light';
    const rows = this._items.map((g) => `
      <tr>
        <td>${escapeHtml(g.name)}</td>
        <td>${escapeHtml(g.spec?.name)}</td>
        <td>${escapeHtml(g.status?.reply || '…')}</td>
      </tr>`).join('');
    this.innerHTML = `
      <h2>Greetings</h2>
      <p class="muted">${escapeHtml(ctx.user || 'anonymous')} in ${escapeHtml(ctx.org || '?')}/${escapeHtml(ctx.workspace || '?')}</p>
      ${this._error ? `<p class="error">${escapeHtml(this._error)}</p>` : ''}
      <table>
        <thead><tr><th>Greeting</th><th>For</th><th>Reply</th></tr></thead>
        <tbody>${rows || `<tr><td colspan="3" class="muted">${this._loading ? 'Loading…' : 'No greetings yet.'}</td></tr>`}</tbody>
      </table>
      <form>
        <input name="name" placeholder="Who to greet" required maxlength="128">
        <input name="message" placeholder="Message (optional)" maxlength="256">
        <button type="submit">Create greeting</button>
      </form>`;
    const form = this.querySelector('form');
    form.addEventListener('submit', (ev) => {
      ev.preventDefault();
      const data = new FormData(form);
      this.create(String(data.get('name') || ''), String(data.get('message') || ''));
    });
  }
}

if (!customElements.get(TAG)) {
  customElements.define(TAG, FarosProviderQuickstart);
}
