// Drives the dashboard's "Browse servers" in a real headless Chromium (run
// by tests/tests/dashboard_registry.rs): results as you type from a stub
// registry, the picked server's Add form with one input per variable, the
// save (the card connects), and the registry gone: the same search shows
// the last results under the "unreachable" line.
//
// Env: LINK, PLAYWRIGHT_CORE, USER_DATA_DIR, NAME (the registry's server),
// URL (its remote), TOKEN (the secret its header needs). Prints `STEP
// <name>` lines and `OK`; after each STEP waits for `checked` on stdin.

import { check, step, withBrowser } from './lib.mjs';

const { LINK, NAME, URL: REMOTE, TOKEN } = process.env;

await withBrowser({}, async (page, problems) => {
  await page.goto(LINK);
  await page.locator('#servers .empty').waitFor();

  // Browse: the panel opens at its box; results as you type.
  const browse = page.getByRole('button', { name: 'Browse servers' });
  await browse.click();
  check((await browse.getAttribute('aria-expanded')) === 'true', 'the button says the panel is open');
  check((await page.evaluate(() => document.activeElement.id)) === 'registry-search', 'the box has the focus');
  await page.keyboard.type('echo', { delay: 30 });
  const found = page.locator(`#registry-results li.registry-result[data-name="${NAME}"]`);
  await found.waitFor();
  check((await found.getAttribute('data-kind')) === 'remote', 'a remote server');
  const text = await found.textContent();
  for (const part of ['An echo server for the browse test', 'v1.2.3', 'remote', 'Needs: token']) {
    check(text.includes(part), `the result shows ${part}: ${text}`);
  }
  check(await page.locator('#registry-offline').isHidden(), 'no offline line while the registry answers');
  await step('found');

  // Pick it: the Add form, filled from the template, one input per variable.
  await found.getByRole('button', { name: `Add ${NAME}…` }).click();
  const dialog = page.locator('#server-dialog');
  await dialog.locator('form.server-form').waitFor();
  check((await dialog.getByLabel('Name', { exact: true }).inputValue()) === 'echo-remote', 'the suggested name');
  check((await dialog.getByLabel('Remote (a URL)').isChecked()), 'a remote entry');
  check((await dialog.getByLabel('URL', { exact: true }).inputValue()) === REMOTE, 'the URL');
  const tokenInput = dialog.locator('[data-variable="token"]');
  check((await tokenInput.getAttribute('type')) === 'password', 'the token is a secret field');
  check((await tokenInput.getAttribute('required')) !== null, 'the token is required');
  const label = await dialog.locator('label', { has: page.locator('.required') }).textContent();
  check(label.includes('token') && label.includes('required'), `the token is marked required: ${label}`);
  const hint = await dialog.locator(`#${await tokenInput.getAttribute('aria-describedby')}`).textContent();
  check(hint.includes('Your API token') && hint.includes('Authorization'), `the token's description: ${hint}`);
  check(!(await dialog.locator('.kv-rows[data-field="headers"] > li').count()), 'the header is the variable, not a row');
  // Required: Save does nothing while the token is empty.
  await dialog.getByRole('button', { name: 'Save' }).click();
  check(await dialog.evaluate((d) => d.open), 'the form stays open without the token');
  await tokenInput.fill(TOKEN);
  await dialog.getByRole('button', { name: 'Save' }).click();
  await dialog.waitFor({ state: 'hidden' });
  await page.locator('article.card[data-server="echo-remote"][data-status="connected"]').waitFor();
  check(!(await page.evaluate((t) => document.documentElement.outerHTML.includes(t), TOKEN)), 'the token is not on the page');
  await step('added');

  // The registry is gone: the same search shows the last results, said so.
  const box = page.getByLabel('Search the MCP registry for a server to add');
  await box.fill('');
  await box.fill('echo');
  const offline = page.locator('#registry-offline');
  await offline.waitFor();
  const said = await offline.textContent();
  check(said.startsWith('Registry unreachable: ') && said.endsWith('; showing the last results'), `the offline line: ${said}`);
  await found.waitFor();
  await step('offline');

  check(problems.length === 0, `no console errors: ${problems.join('; ')}`);
  console.log('OK');
}, { keep: (text) => !text.includes('net::ERR_ABORTED') });
