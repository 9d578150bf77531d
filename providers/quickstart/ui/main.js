// The quickstart provider UI: one plain ES module, no build step — the example for provider authors.
//
// The portal runs it in the hub's provider frame (docs/portal.md, "Provider UIs"): a sandboxed
// document on an opaque origin of its own, which imports this file from
// /ui/providers/quickstart/main.js, waits for the custom element <faros-provider-quickstart>,
// creates it and sets `el.farosContext`:
//   {subPath, basePath, servicePath, portalPath, user, org, workspace, cluster, theme, fetch}
// and sets it again whenever any of it changes (a new object each time). The element
// - draws the view `subPath` names: '' (the list), 'new' (the create form; the catalog's
//   ui.children entry "New greeting"), 'greetings/<name>' (one greeting);
// - moves between views by dispatching `faros-navigate` with {subPath}, so the portal's URL follows
//   and deep links and reloads work;
// - calls its backend only with `farosContext.fetch('/api/greetings')`: the portal performs the
//   call to /services/providers/quickstart/... in this workspace with the tenant's session. The
//   element never holds a token, and nothing else on the hub is reachable from the frame;
// - polls while a greeting still waits for its reply, and only while it is connected;
// - follows `theme` ('light' | 'dark') with a constructable stylesheet.

const TAG = 'faros-provider-quickstart';
const POLL_MS = 1000;

const sheet = new CSSStyleSheet();
sheet.replaceSync(`
${TAG} { display: block; padding: 4px 0; --qs-fg: #111827; --qs-muted: #4b5563; --qs-line: #9ca3af; --qs-accent: #1d4ed8; --qs-on-accent: #fff; --qs-bad: #b91c1c; }
${TAG}[data-theme="dark"] { --qs-fg: #f9fafb; --qs-muted: #d1d5db; --qs-line: #6b7280; --qs-accent: #93c5fd; --qs-on-accent: #111827; --qs-bad: #fca5a5; }
${TAG} { color: var(--qs-fg); }
${TAG} h2 { margin: 0 0 8px; font-size: 18px; }
${TAG} .qs-muted { color: var(--qs-muted); }
${TAG} .qs-error { color: var(--qs-bad); }
${TAG} table { border-collapse: collapse; width: 100%; margin: 8px 0 16px; }
${TAG} th, ${TAG} td { text-align: left; padding: 6px 8px; border-bottom: 1px solid var(--qs-line); }
${TAG} form { display: grid; grid-template-columns: max-content minmax(12em, 24em); gap: 8px 12px; align-items: center; }
${TAG} form button { grid-column: 2; justify-self: start; }
${TAG} .qs-primary { background: var(--qs-accent); color: var(--qs-on-accent); border: 1px solid var(--qs-accent); border-radius: 6px; padding: 5px 10px; font: inherit; cursor: pointer; }
${TAG} .qs-reply { font-size: 20px; }
${TAG} form[hidden], ${TAG} .qs-error:empty { display: none; }
`);

if (!document.adoptedStyleSheets.includes(sheet)) {
  document.adoptedStyleSheets = [...document.adoptedStyleSheets, sheet];
}

/** A greeting's name: the backend's summary carries it at the top (`name`), objects in `metadata`. */
const nameOf = (g) => g?.name ?? g?.metadata?.name ?? '';

function el(tag, attrs = {}, ...children) {
  const node = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs)) {
    if (v === undefined || v === null || v === false) continue;
    if (k.startsWith('on')) node.addEventListener(k.slice(2), v);
    else node.setAttribute(k, v === true ? '' : String(v));
  }
  for (const c of children.flat()) {
    if (c !== null && c !== undefined && c !== false) node.append(c instanceof Node ? c : String(c));
  }
  return node;
}

class FarosProviderQuickstart extends HTMLElement {
  constructor() {
    super();
    this._ctx = null;
    this._items = [];
    this._error = '';
    this._loaded = false;
    this._timer = 0;
    this._scope = '';
  }

  set farosContext(ctx) {
    this._ctx = ctx || null;
    this.dataset.theme = ctx?.theme === 'dark' ? 'dark' : 'light';
    const scope = ctx ? `${ctx.org}/${ctx.workspace}` : '';
    if (scope !== this._scope) {
      // Another workspace: what was listed belongs to the old one.
      this._scope = scope;
      this._items = [];
      this._loaded = false;
      if (this.isConnected) this.refresh();
    }
    this.render();
  }

  get farosContext() {
    return this._ctx;
  }

  connectedCallback() {
    this.render();
    this.refresh();
  }

  disconnectedCallback() {
    clearTimeout(this._timer);
    this._timer = 0;
  }

  async call(path, init = {}) {
    const ctx = this._ctx;
    if (!ctx?.fetch) throw new Error('not connected to the portal yet');
    const resp = await ctx.fetch(path, init);
    const body = await resp.json().catch(() => ({}));
    if (!resp.ok) throw new Error(body.message || `HTTP ${resp.status}`);
    return body;
  }

  async refresh() {
    clearTimeout(this._timer);
    if (!this._ctx || !this.isConnected) return;
    const scope = this._scope;
    try {
      const body = await this.call('/api/greetings', { headers: { Accept: 'application/json' } });
      if (scope !== this._scope) return;
      this._items = body.items || [];
      this._error = '';
    } catch (e) {
      this._error = e.message || String(e);
    }
    this._loaded = true;
    this.render();
    const waiting = this._items.some((g) => !g.status?.reply);
    if (waiting && this.isConnected) this._timer = setTimeout(() => this.refresh(), POLL_MS);
  }

  async create(name, message) {
    try {
      const created = await this.call('/api/greetings', {
        method: 'POST',
        headers: { 'Content-Type': 'application/json', Accept: 'application/json' },
        body: JSON.stringify({ name, message: message || undefined }),
      });
      this._error = '';
      this.go(nameOf(created) ? `greetings/${encodeURIComponent(nameOf(created))}` : '');
    } catch (e) {
      this._error = e.message || String(e);
      this.render();
    }
    await this.refresh();
  }

  go(subPath) {
    this.dispatchEvent(new CustomEvent('faros-navigate', { detail: { subPath }, bubbles: true }));
  }

  link(subPath, text) {
    const href = `${this._ctx?.portalPath || ''}${subPath ? `/${subPath}` : ''}`;
    return el('a', { href, onclick: (ev) => { ev.preventDefault(); this.go(subPath); } }, text);
  }

  // The form lives outside the redrawn part, so polling never takes away what the user is typing
  // (or the focus).
  layout() {
    if (this._view) return;
    this._who = el('p', { class: 'qs-muted' });
    this._err = el('p', { class: 'qs-error', role: 'alert' });
    this._view = el('div');
    this._form = this.form();
    this._after = el('p');
  }

  render() {
    this.layout();
    if (!this._view.isConnected) this.replaceChildren(this._who, this._err, this._view, this._form, this._after);
    const ctx = this._ctx || {};
    const sub = (ctx.subPath || '').replace(/^\/+|\/+$/g, '');
    this._who.textContent = `${ctx.user || '?'} in ${ctx.org || '?'}/${ctx.workspace || '?'}`;
    this._err.textContent = this._error;
    let view;
    let form = false;
    let back = true;
    if (sub === 'new') { view = [el('h2', {}, 'New greeting')]; form = true; }
    else if (sub.startsWith('greetings/')) view = this.detailView(decodeURIComponent(sub.slice('greetings/'.length)));
    else if (sub === '') { view = this.listView(); form = true; back = false; }
    else view = [el('h2', {}, 'Not found'), el('p', {}, `Quickstart has no page “${sub}”.`)];
    this._view.replaceChildren(...view);
    this._form.hidden = !form;
    this._after.replaceChildren(back ? this.link('', 'All greetings') : '');
  }

  listView() {
    const rows = this._items.map((g) => el('tr', { 'data-greeting': nameOf(g) },
      el('td', {}, this.link(`greetings/${encodeURIComponent(nameOf(g))}`, nameOf(g))),
      el('td', {}, g.spec?.name || ''),
      el('td', { class: 'qs-reply-cell' }, g.status?.reply || 'Waiting for the reply…')));
    return [
      el('h2', {}, 'Greetings'),
      el('table', {},
        el('caption', { class: 'qs-muted' }, 'Greetings in this workspace; the quickstart controller writes each reply.'),
        el('thead', {}, el('tr', {}, el('th', { scope: 'col' }, 'Greeting'), el('th', { scope: 'col' }, 'For'), el('th', { scope: 'col' }, 'Reply'))),
        el('tbody', {}, rows.length ? rows : el('tr', {}, el('td', { colspan: '3', class: 'qs-muted' }, this._loaded ? 'No greetings yet.' : 'Loading…')))),
    ];
  }

  detailView(name) {
    const g = this._items.find((x) => nameOf(x) === name);
    if (!g) {
      return [el('h2', {}, name), el('p', { class: 'qs-muted' }, this._loaded ? 'No such greeting in this workspace.' : 'Loading…')];
    }
    return [
      el('h2', {}, `Greeting ${name}`),
      el('p', {}, `For ${g.spec?.name || '?'}${g.spec?.message ? ` — “${g.spec.message}”` : ''}`),
      el('p', { class: 'qs-reply', role: 'status' }, g.status?.reply || 'Waiting for the reply…'),
    ];
  }

  form() {
    const form = el('form', {
      'aria-label': 'Create a greeting',
      onsubmit: (ev) => {
        ev.preventDefault();
        const data = new FormData(form);
        form.reset();
        this.create(String(data.get('name') || '').trim(), String(data.get('message') || '').trim());
      },
    },
    el('label', { for: 'qs-name' }, 'Who to greet'),
    el('input', { id: 'qs-name', name: 'name', required: true, maxlength: '128', autocomplete: 'off' }),
    el('label', { for: 'qs-message' }, 'Message (optional)'),
    el('input', { id: 'qs-message', name: 'message', maxlength: '256', autocomplete: 'off' }),
    el('button', { type: 'submit', class: 'qs-primary' }, 'Create greeting'));
    return form;
  }
}

if (!customElements.get(TAG)) {
  customElements.define(TAG, FarosProviderQuickstart);
}
