// The dashboard's "Add to CLIENT" button in a real headless Chromium (run by
// tests/tests/connect_dashboard.rs). Env: LINK (a one-time link), TOKEN (must
// never show in the page), PLAYWRIGHT_CORE, USER_DATA_DIR. Prints `OK` at
// the end; any failure exits non-zero.

import { check, withBrowser } from './lib.mjs';

const { LINK, TOKEN } = process.env;

await withBrowser({ viewport: { width: 1280, height: 720 } }, async (page, problems) => {
  await page.goto(LINK);

  // Cursor is on this machine (~/.cursor exists): it gets a button; VS Code is not.
  const cursor = page.locator('details[data-client="cursor"][data-found="true"]');
  await cursor.waitFor({ state: 'attached' });
  check(await page.locator('details[data-client="vscode"][data-found="false"]').count() === 1, 'VS Code is not found');
  check(await page.locator('button[data-key="add:vscode"]').count() === 0, 'no button for a client not found');
  await cursor.locator('summary').click();
  const button = cursor.locator('button[data-key="add:cursor"]');
  check((await button.textContent()) === 'Add to Cursor', `the button says ${await button.textContent()}`);
  await button.click();
  const result = cursor.locator('[data-result="cursor"]');
  await page.waitForFunction(() => document.querySelector('[data-result="cursor"]').textContent.length > 0);
  const said = await result.textContent();
  check(said.startsWith('Added mcpool to ') && said.includes('.mcpool-backup-'), `the result: ${said}`);
  // A second click: nothing left to do.
  await button.click();
  await page.waitForFunction(() => document.querySelector('[data-result="cursor"]').textContent.includes('already uses mcpool'));
  check(!(await page.content()).includes(TOKEN), 'the page never shows the token');
  check(problems.length === 0, `no page errors: ${problems.join('; ')}`);
  console.log('OK');
}, { keep: () => false });
