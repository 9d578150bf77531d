// Table tests of the portal's IO-free decisions (crates/faros-hub-api/portal/decide.js), run with
// `node --test` by crates/faros/tests/portal.rs.

import test from 'node:test';
import assert from 'node:assert/strict';
import { parse, providerState, navGroups, sameSection, returnTo } from '../../crates/faros-hub-api/portal/decide.js';

test('routes', () => {
  for (const [path, want] of [
    ['/portal/', { page: 'home' }],
    ['/portal', { page: 'home' }],
    ['/portal/signin', { page: 'signin' }],
    ['/portal/orgs/acme/members', { page: 'org-members', org: 'acme' }],
    ['/portal/orgs/acme/workspaces/dev/catalog', { page: 'catalog', org: 'acme', ws: 'dev' }],
    ['/portal/orgs/acme/workspaces/dev/members', { page: 'members', org: 'acme', ws: 'dev' }],
    ['/portal/orgs/acme/workspaces/dev/kubeconfig', { page: 'kubeconfig', org: 'acme', ws: 'dev' }],
    ['/portal/orgs/acme/workspaces/dev/mcp', { page: 'mcp', org: 'acme', ws: 'dev' }],
    ['/portal/orgs/acme/workspaces/dev/providers/q', { page: 'provider', org: 'acme', ws: 'dev', name: 'q', subPath: '' }],
    ['/portal/orgs/acme/workspaces/dev/providers/q/greetings/hi', { page: 'provider', org: 'acme', ws: 'dev', name: 'q', subPath: 'greetings/hi' }],
    ['/portal/orgs/acme/workspaces/dev/catalog/extra', { page: 'notfound' }],
    ['/portal/orgs/acme/workspaces/dev/providers', { page: 'notfound' }],
    ['/portal/orgs/acme', { page: 'notfound' }],
    ['/portal/nothing', { page: 'notfound' }],
  ]) {
    assert.deepEqual(parse(path), want, path);
  }
});

const p = (over = {}) => ({ name: 'q', ready: true, apiExportName: 'q.example', dependencies: [], ...over });

test('a provider’s state in a workspace', () => {
  const none = new Set();
  for (const [what, provider, row, enabled, key, detail] of [
    ['available', p(), null, none, 'available', ''],
    ['enabled', p(), { bound: true }, none, 'enabled', ''],
    ['binding', p(), { bound: false, phase: 'Binding' }, none, 'binding', 'Binding'],
    ['enabled but not ready', p({ ready: false, notReadyReason: 'HeartbeatStale' }), { bound: true }, none, 'notready', 'HeartbeatStale'],
    ['not ready', p({ ready: false, notReadyReason: 'BackendUnhealthy' }), null, none, 'notready', 'BackendUnhealthy'],
    ['blocked', p({ dependencies: [{ name: 'edges' }, { name: 'ai' }] }), null, new Set(['ai']), 'blocked', 'Enable edges first.'],
    ['dependencies met', p({ dependencies: [{ name: 'edges' }] }), null, new Set(['edges']), 'available', ''],
    ['disabling', p(), { bound: true, terminating: true, deletionBlocked: 'finalizers remain' }, none, 'disabling', 'finalizers remain'],
    ['nothing to enable', p({ apiExportName: undefined }), null, none, 'open', 'no APIs'],
    ['not ready wins over nothing to enable', p({ apiExportName: undefined, ready: false }), null, none, 'notready', 'not ready'],
  ]) {
    const got = providerState(provider, row, enabled);
    assert.equal(got.key, key, what);
    assert.ok(got.detail.includes(detail), `${what}: ${got.detail}`);
  }
});

test('the side-nav', () => {
  const items = [
    p({ name: 'q', displayName: 'Quickstart', category: 'Demo', hasUI: true }),
    p({ name: 'e', displayName: 'Edges', category: 'Edges', hasUI: true }),
    p({ name: 'nobind', category: 'Edges', hasUI: true }),
    p({ name: 'gone', category: 'Edges', hasUI: true }),
    p({ name: 'noui', category: 'Demo', hasUI: false }),
    p({ name: 'sick', category: 'Demo', hasUI: true, ready: false }),
    p({ name: 'static', displayName: 'Static', category: 'Tools', hasUI: true, apiExportName: undefined }),
  ];
  const categories = [{ name: 'Edges', order: 10 }, { name: 'Demo', order: 90 }];
  const rows = [
    { name: 'q', bound: true }, { name: 'e', bound: true }, { name: 'nobind', bound: false },
    { name: 'gone', bound: true, terminating: true }, { name: 'noui', bound: true }, { name: 'sick', bound: true },
  ];
  const got = navGroups(items, categories, rows).map((g) => [g.name, g.providers.map((x) => x.name)]);
  assert.deepEqual(got, [['Edges', ['e']], ['Demo', ['q']], ['Tools', ['static']]]);
});

test('where a workspace switch and a sign-in go', () => {
  assert.equal(sameSection({ page: 'provider', name: 'q', subPath: 'x/y' }), 'providers/q');
  assert.equal(sameSection({ page: 'members' }), 'members');
  assert.equal(sameSection({ page: 'org-members' }), 'catalog');
  assert.equal(sameSection({ page: 'catalog' }), 'catalog');
  for (const [input, want] of [
    [null, '/portal/'],
    ['/portal/orgs/a/workspaces/b/catalog', '/portal/orgs/a/workspaces/b/catalog'],
    ['/portal/signin?x', '/portal/'],
    ['https://evil.example/portal/', '/portal/'],
    ['//evil.example/portal/', '/portal/'],
    ['/portal//evil.example', '/portal/'],
    ['/portal/\\evil', '/portal/'],
  ]) {
    assert.equal(returnTo(input), want, String(input));
  }
});
