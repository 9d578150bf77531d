// Small DOM helpers: elements are built with properties and text nodes, never from HTML strings,
// so nothing the hub or a provider returns is ever parsed as markup.

/**
 * h('button', {type: 'button', onclick: fn, class: 'x', 'aria-label': 'y'}, 'text', child, ...)
 * Attributes whose value is false/null/undefined are left out; `on*` functions become listeners.
 */
export function h(tag, attrs, ...children) {
  const el = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs || {})) {
    if (v === false || v === null || v === undefined) continue;
    if (k.startsWith('on') && typeof v === 'function') el.addEventListener(k.slice(2), v);
    else if (k === 'class') el.className = v;
    else if (k === 'dataset') Object.assign(el.dataset, v);
    else if (k in el && typeof v !== 'string') el[k] = v;
    else el.setAttribute(k, v === true ? '' : String(v));
  }
  append(el, children);
  return el;
}

function append(el, children) {
  for (const c of children.flat(Infinity)) {
    if (c === null || c === undefined || c === false) continue;
    el.append(c instanceof Node ? c : document.createTextNode(String(c)));
  }
}

/** Replaces the children of `el`. */
export function mount(el, ...children) {
  el.replaceChildren();
  append(el, children);
  return el;
}

/** A modal <dialog>: resolves with the value `onsubmit` returns, or null when cancelled. */
export function modal(title, body, { submitLabel = 'OK', cancelLabel = 'Cancel', danger = false, onsubmit } = {}) {
  return new Promise((resolve) => {
    const titleId = `dlg-${Math.random().toString(36).slice(2)}`;
    const error = h('p', { class: 'error', role: 'alert' });
    const submit = h('button', { type: 'submit', class: danger ? 'danger' : 'primary' }, submitLabel);
    const form = h('form', { class: 'dialog-form' },
      h('h2', { id: titleId }, title),
      body,
      error,
      h('div', { class: 'actions' },
        h('button', { type: 'button', onclick: () => { dlg.close(); } }, cancelLabel),
        submit));
    const dlg = h('dialog', { 'aria-labelledby': titleId }, form);
    let result = null;
    form.addEventListener('submit', async (ev) => {
      ev.preventDefault();
      error.textContent = '';
      submit.disabled = true;
      try {
        result = onsubmit ? await onsubmit(form) : true;
        if (result !== undefined) dlg.close();
      } catch (e) {
        error.textContent = e.message || String(e);
      } finally {
        submit.disabled = false;
      }
    });
    dlg.addEventListener('close', () => { dlg.remove(); resolve(result); });
    document.body.append(dlg);
    dlg.showModal();
  });
}

/** A visible status line for screen readers too. */
export function banner(kind, text) {
  return h('p', { class: `banner ${kind}`, role: kind === 'error' ? 'alert' : 'status' }, text);
}
