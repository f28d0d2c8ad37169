// The dashboard's Activity view shows a code-mode run with its calls, in a
// real headless Chromium (run by tests/tests/code_mode.rs): the run's row
// says "run #ID", and each call the script made is its own row that names
// the run ("in run #ID") and carries it as data-parent.
//
// Env: LINK, PLAYWRIGHT_CORE, USER_DATA_DIR, RUN (the run's activity id),
// CALLS (how many calls it made). Prints `OK` at the end; any failure
// exits non-zero.

import { check, withBrowser } from './lib.mjs';

const { LINK, RUN, CALLS } = process.env;

await withBrowser({ viewport: { width: 1200, height: 900 } }, async (page, problems) => {
  await page.goto(LINK);
  const list = page.locator('#activity-list');
  const run = list.locator(`tr[data-entry="${RUN}"]`);
  await run.waitFor();
  check((await run.locator('[data-role="run"]').textContent()).includes(`run #${RUN}`), 'the run names itself');
  await page.waitForFunction(
    ([id, n]) => document.querySelectorAll(`#activity-list tr[data-parent="${id}"]`).length === n,
    [RUN, Number(CALLS)],
  );
  const calls = await list.locator(`tr[data-parent="${RUN}"]`).allTextContents();
  check(calls.every((t) => t.includes(`in run #${RUN}`)), `each call names its run: ${calls}`);
  check(calls.some((t) => t.includes('add')) && calls.some((t) => t.includes('echo')), `the calls: ${calls}`);
  check(problems.length === 0, `no console errors: ${problems.join('; ')}`);
  console.log('OK');
});
