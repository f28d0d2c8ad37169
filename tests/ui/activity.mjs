// Drives the dashboard's live parts in a real headless Chromium (run by
// tests/tests/dashboard_activity.rs): a config problem at the top naming
// file, server and field; "Last connected … ago"; the folded stderr tail,
// redacted; a retry countdown that ticks on its own; and a row in Recent
// calls after an agent's call, without its argument.
//
// Env: LINK, PLAYWRIGHT_CORE, USER_DATA_DIR, SCREENSHOT, SECRET and
// ARGUMENT (texts that must never show). Prints `STEP <name>` lines; after
// `STEP ready` waits for `called` on stdin. Prints `OK` at the end; any
// failure exits non-zero.

import { check, waitForTest, withBrowser } from './lib.mjs';

const { LINK, SCREENSHOT, SECRET, ARGUMENT } = process.env;

await withBrowser({}, async (page, problems) => {
  await page.goto(LINK);

  // The config's problem comes first on the page, by file, server and field.
  const config = page.locator('#config');
  await config.locator('li.problem').first().waitFor();
  const problem = await config.locator('li.problem').first().textContent();
  check(problem.includes('broken') && problem.includes('timeout'), `the problem names server and field: ${problem}`);
  check((await config.textContent()).includes('config.json'), 'the panel names the file');
  const first = await page.evaluate(() => {
    const c = document.getElementById('config');
    const s = document.getElementById('servers');
    return Boolean(c.compareDocumentPosition(s) & Node.DOCUMENT_POSITION_FOLLOWING);
  });
  check(first, 'the problems are above the servers');

  // A connected local server: when it connected, and its stderr folded.
  const card = page.locator('article.card[data-server="f"]');
  await card.and(page.locator('[data-status="connected"]')).waitFor();
  const connected = card.locator('[data-role="last-connected"]');
  const since = await connected.textContent();
  check(/^Connected (just now|\d+ s ago)$/.test(since), `when it connected: ${since}`);
  check(await connected.locator('time[datetime]').count() === 1, 'a machine-readable time');
  const stderr = card.locator('details.stderr-tail');
  check(!(await stderr.evaluate((d) => d.open)), 'the stderr tail starts folded');
  check(!(await stderr.locator('pre').isVisible()), 'folded: its lines are hidden');
  await stderr.locator('summary').click();
  const tail = await stderr.locator('pre.stderr-lines').textContent();
  check(tail.includes('starting with SERVICE_TOKEN=[secret]') && tail.includes('listening on stdio'), `the stderr tail: ${tail}`);
  check((await stderr.locator('summary').textContent()).startsWith('Stderr (last 2 lines)'), 'the summary counts the lines');

  // A server in backoff: the countdown ticks down without a refetch.
  const limited = page.locator('article.card[data-server="limited"]');
  await limited.and(page.locator('[data-status="failed"]')).waitFor();
  const countdown = limited.locator('[data-role="retry"] .countdown');
  const seconds = async () => Number((await countdown.textContent()).replace(/ s$/, ''));
  const before = await seconds();
  check((await limited.locator('[data-role="retry"]').textContent()).startsWith('Retry in '), 'the countdown line');
  check(before > 60 && before <= 120, `about two minutes left: ${before}`);
  await page.waitForFunction(
    (b) => Number(document.querySelector('[data-server="limited"] [data-role="retry"] .countdown').textContent.replace(/ s$/, '')) <= b - 2,
    before,
    { timeout: 6000 },
  );
  check(await limited.locator('[data-role="last-connected"]').count() === 0, 'never connected: no time shown');

  // No calls yet; then an agent's call shows up live.
  await page.locator('#calls [data-role="no-calls"]').waitFor();
  console.log('STEP ready');
  await waitForTest('called');
  const row = page.locator('#calls tbody tr').first();
  await row.waitFor();
  const cells = await row.locator('td').allTextContents();
  check(cells[1] === 'echo' && cells[2] === 'f', `tool and server: ${cells}`);
  check(/^\d+ ms$/.test(cells[3]), `a duration: ${cells[3]}`);
  check(cells[4] === 'OK', `the result: ${cells[4]}`);
  check(/just now|s ago/.test(cells[0]), `when: ${cells[0]}`);
  check(await row.getAttribute('data-ok') === 'true', 'ok');
  const all = await page.content();
  check(!all.includes(ARGUMENT), 'the argument never shows');
  check(!all.includes(SECRET), 'the secret never shows');
  if (SCREENSHOT) await page.screenshot({ path: SCREENSHOT, fullPage: true });
  console.log('STEP called');

  check(problems.length === 0, `no console errors: ${problems.join('; ')}`);
  console.log('OK');
});
