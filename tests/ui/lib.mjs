// What every dashboard script (tests/ui/*.mjs) shares: the headless
// Chromium (Debian's, driven by npm playwright-core), `check`, the test's
// replies on stdin (`waitForTest`, `step`), and the page's errors.
//
// Env: PLAYWRIGHT_CORE (the playwright-core module), USER_DATA_DIR.

import { createInterface } from 'node:readline';

const { chromium } = await import(process.env.PLAYWRIGHT_CORE || 'playwright-core');

/** Throws with `what` unless `cond` holds. */
export function check(cond, what) {
  if (!cond) throw new Error(`check failed: ${what}`);
}

const rl = createInterface({ input: process.stdin });
const lines = rl[Symbol.asyncIterator]();

/** Waits for the test's line `expected` on stdin. */
export async function waitForTest(expected) {
  const { value, done } = await lines.next();
  if (done || value.trim() !== expected) throw new Error(`expected '${expected}' from the test, got '${value}'`);
}

/** Prints `STEP name` and waits for the test's `checked` on stdin. */
export async function step(name) {
  console.log(`STEP ${name}`);
  await waitForTest('checked');
}

/**
 * Runs `body(page, problems, context)` in a fresh persistent Chromium
 * context (`options` added to the launch: a viewport, acceptDownloads, ...).
 * `problems` collects the page's errors and those console errors `keep`
 * takes (all by default; `() => false` for page errors alone).
 * `defaultTimeout` is each wait's. Closes everything after.
 */
export async function withBrowser(options, body, { keep = () => true, defaultTimeout = 15_000 } = {}) {
  const context = await chromium.launchPersistentContext(process.env.USER_DATA_DIR, {
    executablePath: '/usr/bin/chromium',
    headless: true,
    args: ['--headless', '--no-sandbox', '--disable-gpu', '--disable-quic', '--no-first-run',
      '--disable-background-networking', '--disable-component-update', '--disable-sync'],
    viewport: { width: 1100, height: 900 },
    colorScheme: 'light',
    // A loaded machine (a build beside the tests) can take a while to start it.
    timeout: 90_000,
    ...options,
  });
  context.setDefaultTimeout(defaultTimeout);
  try {
    const page = context.pages()[0] || (await context.newPage());
    const problems = [];
    page.on('console', (m) => { if (m.type() === 'error' && keep(m.text())) problems.push(m.text()); });
    page.on('pageerror', (e) => problems.push(String(e)));
    try {
      await body(page, problems, context);
    } catch (e) {
      // What the page said helps more than a timeout alone.
      if (problems.length) console.error(`the page's errors: ${problems.join('; ')}`);
      throw e;
    }
  } finally {
    rl.close();
    await context.close();
  }
}
