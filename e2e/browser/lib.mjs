// Helpers of the portal browser tests: Debian's chromium through playwright-core (no downloaded
// browsers), axe-core, keyboard navigation, screenshots, and a tiny step runner.

import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { createRequire } from 'node:module';
import { chromium } from 'playwright-core';

const require = createRequire(import.meta.url);

export const CHROMIUM = process.env.FAROS_CHROMIUM || '/usr/bin/chromium';

/** Flags for a quiet, reproducible headless chromium (playwright adds --headless). */
export const CHROMIUM_ARGS = [
  '--no-sandbox',
  '--disable-gpu',
  '--disable-background-networking',
  '--disable-component-update',
  '--disable-sync',
  '--no-first-run',
];

const profiles = [];

/**
 * A fresh browser profile (its own --user-data-dir) trusting the hub's CA by ignoring certificate
 * errors (faros dev's CA is not in the system store). Collects CSP violations and page errors.
 */
export async function browser({ colorScheme = 'light' } = {}) {
  if (!fs.existsSync(CHROMIUM)) {
    throw new Error(`${CHROMIUM} not found: install Debian's chromium (apt-get install -y chromium) or set FAROS_CHROMIUM`);
  }
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'faros-portal-profile-'));
  profiles.push(dir);
  const context = await chromium.launchPersistentContext(dir, {
    executablePath: CHROMIUM,
    headless: true,
    args: CHROMIUM_ARGS,
    ignoreHTTPSErrors: true,
    viewport: { width: 1280, height: 800 },
    colorScheme,
    acceptDownloads: true,
  });
  context.problems = [];
  context.on('page', (page) => watch(context, page));
  for (const page of context.pages()) watch(context, page);
  return context;
}

function watch(context, page) {
  page.on('console', (msg) => {
    const text = msg.text();
    if (/Content.Security.Policy|Refused to (load|apply|execute)/i.test(text)) context.problems.push(`CSP: ${text}`);
  });
  page.on('pageerror', (err) => context.problems.push(`page error: ${err.message}`));
}

export function cleanupProfiles() {
  for (const dir of profiles) fs.rmSync(dir, { recursive: true, force: true });
}

export async function page(context) {
  return context.pages()[0] || context.newPage();
}

const AXE = fs.readFileSync(require.resolve('axe-core/axe.min.js'), 'utf8');

/**
 * Runs axe-core on the page (evaluated through the devtools protocol, which the page's CSP does
 * not govern) and fails on serious or critical violations; then checks that every control is
 * reachable with the keyboard alone ([`keyboardReachable`]).
 */
export async function accessible(pg, what) {
  const result = [];
  // The page, and each provider frame (an opaque origin axe cannot reach from the page) on its own.
  for (const target of [pg.mainFrame(), ...providerFrames(pg)]) {
    try {
      await target.evaluate(AXE);
      result.push(...await target.evaluate(async () => {
        // eslint-disable-next-line no-undef
        const r = await axe.run(document, { resultTypes: ['violations'], iframes: false });
        return r.violations.map((v) => ({ id: v.id, impact: v.impact, help: v.help, nodes: v.nodes.map((n) => n.target.join(' ')).slice(0, 5) }));
      }));
    } catch (e) {
      // A provider frame the portal removed meanwhile (a failed load) has nothing left to check.
      if (target !== pg.mainFrame() && target.isDetached()) continue;
      throw e;
    }
  }
  const bad = result.filter((v) => v.impact === 'serious' || v.impact === 'critical');
  if (bad.length) throw new Error(`axe: ${what}: ${JSON.stringify(bad, null, 1)}`);
  await keyboardReachable(pg, what);
  return result;
}

/** The provider frames of the page (the hub's sandboxed /portal/frame documents). */
export function providerFrames(pg) {
  return pg.frames().filter((f) => f !== pg.mainFrame() && !f.isDetached() && f.url().includes('/portal/frame?'));
}

/** The provider frame of the page, once it has mounted the provider's element `tag`. */
export async function providerFrame(pg, tag, timeout = 30000) {
  await pg.frameLocator('iframe.provider-frame').locator(tag).waitFor({ state: 'attached', timeout });
  const handle = await pg.$('iframe.provider-frame');
  return handle.contentFrame();
}

/** Presses Tab until the focused element inside `frame` matches `selector`; fails after `max`. */
export async function tabToIn(pg, frame, selector, max = 80) {
  for (let i = 0; i < max; i++) {
    const hit = await frame.evaluate((sel) => {
      const a = document.activeElement;
      return Boolean(a && a.matches(sel) && document.hasFocus());
    }, selector).catch(() => false);
    if (hit) return;
    await pg.keyboard.press('Tab');
  }
  throw new Error(`keyboard: ${selector} (in the provider frame) not reached with ${max} Tab presses`);
}

/**
 * Every control of the page (or of the open modal dialog) is reached with Tab alone, each with a
 * visible focus indicator.
 */
export async function keyboardReachable(pg, what) {
  const count = await pg.evaluate(() => {
    const scope = document.querySelector('dialog[open]') || document;
    const sel = 'a[href], button, input, select, textarea, [tabindex]:not([tabindex="-1"])';
    let n = 0;
    for (const el of document.querySelectorAll('[data-kb]')) delete el.dataset.kb;
    for (const el of scope.querySelectorAll(sel)) {
      if (el.disabled || el.getAttribute('tabindex') === '-1' || el.closest('[hidden], dialog:not([open])')) continue;
      if (el.getClientRects().length === 0 && !el.classList.contains('skip-link')) continue;
      el.dataset.kb = String(n++);
    }
    return n;
  });
  const seen = new Set();
  for (let i = 0; i < count * 2 + 6 && seen.size < count; i++) {
    await pg.keyboard.press('Tab');
    const got = await pg.evaluate(() => {
      const a = document.activeElement;
      if (!a || a.dataset.kb === undefined) return null;
      return { kb: a.dataset.kb, ring: getComputedStyle(a).outlineStyle !== 'none', name: a.outerHTML.slice(0, 80) };
    });
    if (got) {
      if (!got.ring) throw new Error(`keyboard: ${what}: no visible focus on ${got.name}`);
      seen.add(got.kb);
    }
  }
  if (seen.size < count) {
    const missing = await pg.evaluate((s) => [...document.querySelectorAll('[data-kb]')]
      .filter((el) => !s.includes(el.dataset.kb)).map((el) => el.outerHTML.slice(0, 80)), [...seen]);
    throw new Error(`keyboard: ${what}: not reachable with Tab: ${missing.join(' | ')}`);
  }
}

/** Presses Tab until the focused element matches `selector` (keyboard-only use); fails after `max`. */
export async function tabTo(pg, selector, max = 80) {
  for (let i = 0; i < max; i++) {
    const hit = await pg.evaluate((sel) => {
      const a = document.activeElement;
      return Boolean(a && a.matches(sel));
    }, selector);
    if (hit) {
      const visible = await pg.evaluate(() => {
        const a = document.activeElement;
        const r = a.getBoundingClientRect();
        return r.width > 0 && r.height > 0 && getComputedStyle(a).outlineStyle !== 'none';
      });
      if (!visible) throw new Error(`keyboard: ${selector} has focus but no visible focus indicator`);
      return;
    }
    await pg.keyboard.press('Tab');
  }
  throw new Error(`keyboard: ${selector} not reached with ${max} Tab presses`);
}

/** Screenshots go to FAROS_PORTAL_SCREENSHOTS (docs/portal when refreshing the docs). */
export async function shot(pg, name) {
  const dir = process.env.FAROS_PORTAL_SCREENSHOTS;
  if (!dir) return;
  fs.mkdirSync(dir, { recursive: true });
  await pg.screenshot({ path: path.join(dir, `${name}.png`) });
}

/** Waits until `fn` (evaluated in the page) returns truthy. */
export async function until(pg, what, fn, arg, timeout = 30000) {
  try {
    await pg.waitForFunction(fn, arg, { timeout, polling: 100 });
  } catch (e) {
    throw new Error(`timed out waiting for ${what}: ${e.message.split('\n')[0]}`);
  }
}

export function assert(cond, message) {
  if (!cond) throw new Error(`assertion failed: ${message}`);
}

/** Runs named steps in order, printing each; the first failure ends the run with its step name. */
export async function steps(list, onFailure) {
  const started = Date.now();
  for (const [name, fn] of list) {
    const t = Date.now();
    try {
      await fn();
    } catch (e) {
      console.error(`FAIL ${name}: ${e.stack || e}`);
      if (onFailure) await onFailure(name).catch(() => {});
      return false;
    }
    console.log(`ok   ${name} (${Date.now() - t} ms)`);
  }
  console.log(`all ${list.length} steps passed in ${((Date.now() - started) / 1000).toFixed(1)} s`);
  return true;
}
