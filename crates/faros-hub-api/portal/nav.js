// Client-side navigation. A leaf module: pages navigate through it, and app.js, which draws the
// page for a URL, registers itself here (onNavigate) rather than being imported back by the pages.

let draw = () => {};

/** Sets what draws the page after a navigation (app.js's router). */
export function onNavigate(fn) {
  draw = fn;
}

/** Client-side navigation (pushState, or replaceState with `replace`) to a portal path. */
export function navigate(path, { replace = false } = {}) {
  if (replace) history.replaceState(null, '', path);
  else history.pushState(null, '', path);
  draw();
}
