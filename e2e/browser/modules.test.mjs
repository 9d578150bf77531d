// The portal's module graph (crates/faros-hub-api/portal/*.js), checked without a browser by
// `node --test` (run by crates/faros/tests/portal.rs): no module imports a module that imports it
// back (directly or around a longer circle), every import names a file and an export that exist,
// and every module is one the hub embeds and serves (src/portal/assets.rs).

import test from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

const here = path.dirname(fileURLToPath(import.meta.url));
const PORTAL = path.join(here, '../../crates/faros-hub-api/portal');
const ASSETS = path.join(here, '../../crates/faros-hub-api/src/portal/assets.rs');

const modules = fs.readdirSync(PORTAL).filter((f) => f.endsWith('.js')).sort();
const source = Object.fromEntries(modules.map((m) => [m, fs.readFileSync(path.join(PORTAL, m), 'utf8')]));

/** `import { a, b as c } from './x.js'` statements of `src`: [{from, names}]. */
function importsOf(src) {
  const out = [];
  for (const m of src.matchAll(/^import\s+(?:\{([^}]*)\}\s+from\s+)?'([^']+)';/gm)) {
    const names = (m[1] || '').split(',').map((n) => n.trim().split(/\s+as\s+/)[0]).filter(Boolean);
    out.push({ from: m[2], names });
  }
  return out;
}

/** Names `src` exports: declarations (`export function f`, `export const x`) and lists (`export { a, b as c }`). */
function exportsOf(src) {
  const declared = [...src.matchAll(/^export\s+(?:async\s+)?(?:function\*?|const|let|class)\s+([A-Za-z_$][\w$]*)/gm)].map((m) => m[1]);
  const listed = [...src.matchAll(/^export\s*\{([^}]*)\}/gm)]
    .flatMap((m) => m[1].split(',').map((n) => n.trim().split(/\s+as\s+/).pop()).filter(Boolean));
  return new Set([...declared, ...listed]);
}

test('exports are read from declarations and lists', () => {
  assert.deepEqual([...exportsOf('export function f() {}\nexport async function g() {}\nexport const x = 1;\nexport { a, b as c };\nconst y = 2;')].sort(), ['a', 'c', 'f', 'g', 'x']);
  assert.deepEqual(importsOf("import { a, b as c } from './x.js';\nimport './y.js';\nimport {\n  d,\n} from './z.js';"),
    [{ from: './x.js', names: ['a', 'b'] }, { from: './y.js', names: [] }, { from: './z.js', names: ['d'] }]);
});

/** The graph among the portal's own modules (frame.js is loaded by the provider frame, alone). */
const graph = Object.fromEntries(modules.map((m) => [m, importsOf(source[m]).map((i) => i.from.replace(/^\.\//, ''))]));

/** A circle through the graph as a list of modules, or null. */
function findCycle(g) {
  const state = new Map(); // 1: on the current path, 2: done
  const pathStack = [];
  function visit(n) {
    state.set(n, 1);
    pathStack.push(n);
    for (const next of g[n] || []) {
      if (state.get(next) === 1) return [...pathStack.slice(pathStack.indexOf(next)), next];
      if (!state.has(next)) {
        const c = visit(next);
        if (c) return c;
      }
    }
    pathStack.pop();
    state.set(n, 2);
    return null;
  }
  for (const n of Object.keys(g)) {
    if (!state.has(n)) {
      const c = visit(n);
      if (c) return c;
    }
  }
  return null;
}

test('the circle finder finds circles (so its silence below means something)', () => {
  assert.deepEqual(findCycle({ 'a.js': ['b.js'], 'b.js': ['c.js'], 'c.js': ['a.js'] }), ['a.js', 'b.js', 'c.js', 'a.js']);
  assert.deepEqual(findCycle({ 'a.js': ['a.js'] }), ['a.js', 'a.js']);
  assert.equal(findCycle({ 'a.js': ['b.js', 'c.js'], 'b.js': ['c.js'], 'c.js': [] }), null);
});

test('no portal module imports a module that imports it back', () => {
  const cycle = findCycle(graph);
  assert.equal(cycle, null, `import circle: ${cycle?.join(' → ')}`);
});

test('app.js is the top: nothing imports it', () => {
  for (const [m, deps] of Object.entries(graph)) assert.ok(!deps.includes('app.js'), `${m} imports app.js`);
});

test('every import names an existing module and an export of it', () => {
  for (const m of modules) {
    for (const { from, names } of importsOf(source[m])) {
      const target = from.replace(/^\.\//, '');
      assert.ok(from.startsWith('./') && modules.includes(target), `${m} imports ${from}, which is not a portal module`);
      const exported = exportsOf(source[target]);
      for (const n of names) assert.ok(exported.has(n), `${m} imports ${n} from ${from}, which does not export it`);
    }
  }
});

test('the hub embeds every portal module', () => {
  const embedded = new Set([...fs.readFileSync(ASSETS, 'utf8').matchAll(/asset!\("([^"]+)"/g)].map((m) => m[1]));
  for (const m of modules) assert.ok(embedded.has(m), `${m} is not in ${ASSETS}'s FILES: the hub would answer 404 for it`);
});
