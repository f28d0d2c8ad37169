// Drives a server's log panel in a real headless Chromium (run by
// tests/tests/dashboard_logs.rs): the card's Logs button opens the panel
// with the server's stderr and mcpool's own lines told apart, redacted; a
// line written afterwards arrives live; the filter narrows as you type;
// the Download link gives the whole log as a file.
//
// Env: LINK, PLAYWRIGHT_CORE, USER_DATA_DIR, SCREENSHOT, SECRET (must never
// show). Prints `STEP <name>` lines; after `STEP opened` waits for
// `written` on stdin (the test made the server write `live-marker`).
// Prints `OK` at the end; any failure exits non-zero.

import { readFile } from 'node:fs/promises';
import { check, waitForTest, withBrowser } from './lib.mjs';

const { LINK, SCREENSHOT, SECRET } = process.env;

await withBrowser({ viewport: { width: 1200, height: 860 }, acceptDownloads: true }, async (page, problems) => {
  await page.goto(LINK);

  // The card's Logs button opens the panel with both kinds of line.
  await page.locator('article.card[data-server="f"] button[data-key="logs:f"]').click();
  const dialog = page.locator('#logs-dialog');
  await dialog.waitFor({ state: 'visible' });
  check((await page.locator('#logs-title').textContent()) === 'Logs: f', 'the title names the server');
  const rows = dialog.locator('.log-line');
  await rows.filter({ hasText: 'listening on stdio' }).first().waitFor();
  const stderrRow = rows.filter({ hasText: 'listening on stdio' }).first();
  check((await stderrRow.getAttribute('data-source')) === 'stderr', 'a stderr line is marked as one');
  const mcpoolRow = dialog.locator('.log-line.log-mcpool').filter({ hasText: 'status connected' }).first();
  await mcpoolRow.waitFor();
  check((await mcpoolRow.locator('.log-source').textContent()) === 'mcpool info', 'an mcpool line shows its level');
  await rows.filter({ hasText: 'starting with SERVICE_TOKEN=[secret]' }).first().waitFor();
  check(!(await dialog.textContent()).includes(SECRET), 'the secret never shows');
  console.log('STEP opened');

  // A line written now arrives without a reload, and the panel follows it.
  await waitForTest('written');
  await rows.filter({ hasText: 'live-marker' }).first().waitFor();
  await dialog.locator('.log-line.log-mcpool').filter({ hasText: 'connection dropped' }).first().waitFor();
  const followed = await page.evaluate(() => {
    const el = document.getElementById('logs-lines');
    return el.scrollTop + el.clientHeight >= el.scrollHeight - 8;
  });
  check(followed, 'the panel scrolled to the new line');
  console.log('STEP live');

  // The filter narrows as you type.
  const total = await rows.count();
  await page.locator('#logs-search').fill('LISTENING');
  await page.waitForFunction(() => {
    const all = [...document.querySelectorAll('#logs-lines .log-line')];
    return all.length > 0 && all.every((r) => r.textContent.toLowerCase().includes('listening'));
  });
  const narrowed = await rows.count();
  check(narrowed < total, `the filter narrowed ${total} lines to ${narrowed}`);
  check((await page.locator('#logs-status').textContent()).includes('LISTENING'), 'the status names the filter');
  console.log('STEP filtered');

  // Download: the whole retained log as a file.
  const [download] = await Promise.all([page.waitForEvent('download'), page.locator('#logs-download').click()]);
  check(download.suggestedFilename() === 'f.log', `the file name: ${download.suggestedFilename()}`);
  const text = await readFile(await download.path(), 'utf8');
  check(text.includes(' stderr live-marker'), 'the download holds the live line');
  check(text.includes(' mcpool WARN connection dropped'), 'the download holds mcpool lines');
  check(!text.includes(SECRET), 'the download holds no secret');
  console.log('STEP downloaded');

  await page.locator('#logs-search').fill('');
  await page.waitForFunction((n) => document.querySelectorAll('#logs-lines .log-line').length >= n, total);
  if (SCREENSHOT) await page.screenshot({ path: SCREENSHOT });
  await page.locator('#logs-close').click();
  await dialog.waitFor({ state: 'hidden' });
  check(problems.length === 0, `no console errors: ${problems.join('; ')}`);
  console.log('OK');
});
