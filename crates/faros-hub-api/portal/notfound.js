// The not-found page, shown by the router for an unknown path and by pages for an unknown name.

import { h, banner } from './dom.js';

export function notFoundPage(text) {
  return h('section', { class: 'page' },
    h('h1', {}, 'Not found'),
    banner('error', text || `Nothing is at ${location.pathname}.`),
    h('p', {}, h('a', { href: '/portal/' }, 'Back to the portal')));
}
