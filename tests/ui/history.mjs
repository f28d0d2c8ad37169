// Drives the dashboard's Activity view and plots in a real headless
// Chromium (run by tests/tests/dashboard_history.rs): the server's events
// from the activity log; after the test's calls, the rows arrive live
// (tool, agent, duration, outcome); the filters narrow them as the API
// does; each card has a sparkline of its calls and a 24-hour status band
// whose drop is marked after a crash; the per-tool table counts the calls.
//
// Env: LINK, PLAYWRIGHT_CORE, USER_DATA_DIR, SCREENSHOT, SECRET and
// ARGUMENT (texts that must never show). Prints `STEP <name>` lines; after
// `STEP ready` waits for `called` on stdin, after `STEP counted` for
// `crashed`. Prints `OK` at the end; any failure exits non-zero.

import { check, waitForTest, withBrowser } from './lib.mjs';

const { LINK, SCREENSHOT, SECRET, ARGUMENT } = process.env;

await withBrowser({ viewport: { width: 1200, height: 1000 } }, async (page, problems) => {
  await page.goto(LINK);

  // The server's own events are in the log before any call.
  const list = page.locator('#activity-list');
  await page.locator('article.card[data-server="f"][data-status="connected"]').waitFor();
  await list.locator('tr[data-kind="server"]').first().waitFor();
  const events = await list.locator('tr[data-kind="server"]').allTextContents();
  check(events.some((t) => t.includes('Status') && t.includes('connected')), `the connection is in the log: ${events}`);
  console.log('STEP ready');
  await waitForTest('called');

  // The calls arrive live, newest first, with the agent and an outcome.
  await page.waitForFunction(() => document.querySelectorAll('#activity-list tr[data-kind="tool"]').length >= 3);
  const newest = await list.locator('tr[data-kind="tool"]').first().locator('td').allTextContents();
  check(newest[1] === 'f' && newest[2] === 'add', `the newest call: ${newest}`);
  check(newest[3] === 'mcpool-test-agent 0', `the agent: ${newest[3]}`);
  check(newest[5].startsWith('Error'), `its outcome: ${newest[5]}`);
  check(/\d+ ms|\d(\.\d)? s/.test(newest[4]), `a duration: ${newest[4]}`);

  // Filters, as /api/activity has them.
  await page.selectOption('#activity-outcome', 'error');
  await page.waitForFunction(() => {
    const rows = [...document.querySelectorAll('#activity-list tbody tr')];
    return rows.length === 1 && rows[0].dataset.ok === 'false';
  });
  await page.selectOption('#activity-outcome', '');
  await page.selectOption('#activity-kind', 'tool');
  await page.fill('#activity-tool', 'echo');
  await page.waitForFunction(() => {
    const rows = [...document.querySelectorAll('#activity-list tbody tr')];
    return rows.length === 2 && rows.every((r) => r.dataset.kind === 'tool' && r.textContent.includes('echo'));
  });
  await page.fill('#activity-tool', '');
  await page.selectOption('#activity-kind', '');
  await page.waitForFunction(() => document.querySelectorAll('#activity-list tr[data-kind="server"]').length > 0);
  console.log('STEP filtered');

  // The card's sparkline counts the three calls; the per-tool table too.
  const card = page.locator('article.card[data-server="f"]');
  await page.waitForFunction(() => {
    const line = document.querySelector('article.card[data-server="f"] [data-role="sparkline"]');
    return line && Number(line.dataset.calls) === 3;
  });
  check(await card.locator('[data-role="band"] rect[data-status="connected"]').count() >= 1, 'the band shows connected');
  const summary = await card.locator('.plot-summary').textContent();
  check(summary.startsWith('3 calls in the last hour · p50 '), `the plot's summary: ${summary}`);
  await page.waitForFunction(() => {
    const row = document.querySelector('#tool-activity tr[data-tool="f/echo"]');
    return row && row.children[2].textContent === '2';
  }, null, { timeout: 20_000 });
  check(await page.locator('#tool-activity tr[data-tool="f/add"] td').nth(3).textContent() === '1', 'one failed add');
  console.log('STEP counted');
  await waitForTest('crashed');

  // After the crash and the reconnect, the band marks the drop.
  await page.waitForFunction(() => {
    const band = document.querySelector('article.card[data-server="f"] [data-role="band"]');
    return band && Number(band.dataset.drops) >= 1 && band.querySelector('rect[data-status="failed"]');
  }, null, { timeout: 20_000 });
  await page.waitForFunction(() => [...document.querySelectorAll('#activity-list tr[data-kind="server"]')]
    .some((r) => r.textContent.includes('Connecting') && r.textContent.includes('demand')));

  const all = await page.content();
  check(!all.includes(ARGUMENT), 'the argument never shows');
  check(!all.includes(SECRET), 'the secret never shows');
  if (SCREENSHOT) {
    await page.locator('#activity').scrollIntoViewIfNeeded();
    await page.screenshot({ path: SCREENSHOT, fullPage: true });
  }
  console.log('STEP crashed');
  check(problems.length === 0, `no console errors: ${problems.join('; ')}`);
  console.log('OK');
});
