// Table tests of the portal's IO-free decisions (crates/faros-hub-api/portal/decide.js), run with
// `node --test` by crates/faros/tests/portal.rs.

import test from 'node:test';
import assert from 'node:assert/strict';
import { parse, providerState, navGroups, sameSection, returnTo, bridgeRequest, bridgeOpen, grantRows, groupNameProblem, grantedMessage } from '../../crates/faros-hub-api/portal/decide.js';

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

test('the provider frame bridge reaches only the provider backend', () => {
  const ws = { origin: 'https://hub.example', org: 'acme', workspace: 'dev', enabled: true };
  const ok = bridgeRequest('q', { path: '/api/greetings?x=1', method: 'post', headers: { 'Content-Type': 'application/json' }, body: '{}' }, ws);
  assert.deepEqual(ok, {
    url: '/services/providers/q/api/greetings?x=1',
    init: {
      method: 'POST',
      headers: { Accept: 'application/json', 'Content-Type': 'application/json', 'X-Faros-CSRF': '1', 'X-Faros-Org': 'acme', 'X-Faros-Workspace': 'dev' },
      body: '{}',
    },
  });
  // Not enabled in the workspace: the workspace is not named to the provider.
  const open = bridgeRequest('q', { path: '/' }, { ...ws, enabled: false });
  assert.deepEqual(open.init.headers, { Accept: 'application/json' });
  assert.equal(open.url, '/services/providers/q/');
  for (const [what, msg] of [
    ['escapes with ..', { path: '/../../../api/orgs' }],
    ['escapes with %2e%2e', { path: '/%2e%2e/%2e%2e/%2e%2e/api/orgs' }],
    ['another provider', { path: '/../other/x' }],
    ['a sibling prefix', { path: '2/x' }],
    ['protocol-relative', { path: '//evil.example/x' }],
    ['absolute URL', { path: 'https://evil.example/' }],
    ['backslash', { path: '/..\\..\\api' }],
    ['newline', { path: '/x\ny' }],
    ['no path', {}],
    ['CONNECT', { path: '/', method: 'CONNECT' }],
    ['TRACE', { path: '/', method: 'TRACE' }],
    ['Authorization', { path: '/', headers: { Authorization: 'Bearer x' } }],
    ['Cookie', { path: '/', headers: { Cookie: 'a=b' } }],
    ['tenant spoofing', { path: '/', headers: { 'X-Faros-Org': 'victim' } }],
    ['header injection', { path: '/', headers: { Accept: 'a\r\nX-Faros-Org: victim' } }],
    ['GET with a body', { path: '/', body: 'x' }],
    ['a non-string body', { path: '/', method: 'POST', body: { a: 1 } }],
    ['not an object', null],
  ]) {
    const got = bridgeRequest('q', msg, ws);
    assert.ok(got.error, `${what}: ${JSON.stringify(got)}`);
  }
});

test('the provider frame may open portal pages only', () => {
  const o = 'https://hub.example';
  assert.equal(bridgeOpen('/portal/orgs/a/workspaces/b/providers/q/x?y=1#z', o), '/portal/orgs/a/workspaces/b/providers/q/x?y=1#z');
  for (const bad of ['/api/orgs', '/portal/signin?return=/x', 'https://evil.example/portal/', '//evil.example/portal/', 'javascript:alert(1)', 42]) {
    assert.equal(bridgeOpen(bad, o), null, String(bad));
  }
});

test('rows of the members and group-roles tables', () => {
  const groups = [
    { group: 'ops', role: 'member', inherited: false },
    { group: 'admins', role: 'admin', inherited: true },
    { group: 'dev', role: 'admin' },
  ];
  for (const [what, items, key, admin, want] of [
    ['an admin may change direct grants, not inherited ones; sorted by name', groups, 'group', true, [
      { name: 'admins', role: 'admin', inherited: true, source: 'from the organization', editable: false },
      { name: 'dev', role: 'admin', inherited: false, source: 'direct', editable: true },
      { name: 'ops', role: 'member', inherited: false, source: 'direct', editable: true },
    ]],
    ['a member changes nothing', groups.slice(0, 1), 'group', false, [
      { name: 'ops', role: 'member', inherited: false, source: 'direct', editable: false },
    ]],
    ['users by their key', [{ user: 'bob', role: 'member' }, { user: 'alice', role: 'admin', inherited: true }], 'user', true, [
      { name: 'alice', role: 'admin', inherited: true, source: 'from the organization', editable: false },
      { name: 'bob', role: 'member', inherited: false, source: 'direct', editable: true },
    ]],
    ['rows of the other kind are left out', [{ user: 'bob', role: 'member' }], 'group', true, []],
    ['no list', undefined, 'group', true, []],
  ]) {
    assert.deepEqual(grantRows(items, key, admin), want, what);
  }
});

test('group names the hub would refuse', () => {
  for (const [name, problem] of [
    ['dev', ''],
    ['  dev  ', ''],
    ['oidc:ops', ''],
    ['Team Å', ''],
    ['g'.repeat(256), ''],
    ['', 'Enter'],
    ['   ', 'Enter'],
    [undefined, 'Enter'],
    ['g'.repeat(257), 'at most 256'],
    ['Å'.repeat(129), 'at most 256'], // 258 bytes: the hub counts bytes
    ['a\tb', 'control'],
    ['a\u0085b', 'control'],
    ['system:authenticated', 'System groups'],
    ['system:masters', 'System groups'],
  ]) {
    const got = groupNameProblem(name);
    if (problem) assert.ok(got.includes(problem), `${JSON.stringify(name)}: ${got}`);
    else assert.equal(got, '', JSON.stringify(name));
  }
});

test('what a grant says', () => {
  for (const [kind, name, role, where, want] of [
    ['group', 'dev', 'admin', 'workspace demo/default', 'Everyone in group dev is now an admin of the workspace demo/default.'],
    ['group', 'ops', 'member', 'organization demo', 'Everyone in group ops is now a member of the organization demo.'],
    ['user', 'carol', 'admin', 'workspace demo/default', 'carol is now an admin of the workspace demo/default.'],
    ['user', 'carol', 'member', 'organization demo', 'carol is now a member of the organization demo.'],
  ]) {
    assert.equal(grantedMessage(kind, name, role, where), want);
  }
});
