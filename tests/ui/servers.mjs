// Drives the dashboard's server editing in a real headless Chromium (run by
// tests/tests/dashboard_servers.rs): field errors next to their fields (an
// empty command, a name clash, a bad URL) with everything typed kept; Add
// server with a secret env value, Test (progress, then its tools), Save
// (the card connects); Edit (the secret shown as set, the args changed);
// Duplicate (pre-filled as NAME-copy); Remove (confirmed, with its keyring
// entries). The secret is never on the page once typed.
//
// Env: LINK (a one-time link from `mcpool ui --no-open`), PLAYWRIGHT_CORE,
// USER_DATA_DIR, SCREENSHOT, COMMAND (the server to add: it starts only
// with SECRET as API_KEY), SECRET, EVERYTHING (server-everything's
// entry script, from npm: added last, with SECRET as a secret env value). Prints `STEP <name>` lines and `OK` at
// the end; after each STEP it waits for the line `checked` on stdin (the
// test read the config file and the keyring; after `STEP editing` it
// changed k's args in the file behind the open form). Any failure exits
// non-zero.

import { check, step, withBrowser } from './lib.mjs';

const { LINK, SCREENSHOT, COMMAND, SECRET, EVERYTHING } = process.env;
const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms));

await withBrowser({}, async (page, problems) => {
  // The test takes a moment, so that its progress shows.
  await page.route('**/api/servers/test', async (route) => {
    await sleep(800);
    await route.continue();
  });
  await page.goto(LINK);
  await page.locator('article.card[data-server="a"][data-status="connected"]').waitFor();

  // Nowhere on the page: not in its text, its markup or any input's value.
  const secretShown = () => page.evaluate((secret) => document.documentElement.outerHTML.includes(secret)
    || document.body.innerText.includes(secret)
    || [...document.querySelectorAll('input, textarea')].some((el) => el.value.includes(secret)), SECRET);

  const dialog = page.locator('#server-dialog');
  const input = (label) => dialog.getByLabel(label, { exact: true });
  const errorFor = (field) => dialog.locator(`.field-error[data-error-for="${field}"]`);

  // Field errors: each next to its field, nothing lost, nothing written.
  await page.getByRole('button', { name: 'Add server' }).click();
  await dialog.locator('form.server-form').waitFor();
  check((await page.evaluate(() => document.activeElement.dataset.field)) === 'name', 'the form opens at its name');
  await input('Name').fill('k');
  await dialog.getByRole('button', { name: 'Save' }).click();
  await errorFor('command').waitFor();
  const commandError = await errorFor('command').textContent();
  check(commandError.length > 10, `the command's sentence: ${commandError}`);
  check((await input('Command').getAttribute('aria-invalid')) === 'true', 'the command is marked invalid');
  check((await input('Command').evaluate((el, id) => el.getAttribute('aria-describedby').split(' ').includes(id),
    await errorFor('command').getAttribute('id'))), 'the command input is described by its error');
  check((await errorFor('command').evaluate((el) => el.previousElementSibling.contains(document.querySelector('[data-field="command"]')))),
    'the sentence is next to the command');
  check((await input('Name').inputValue()) === 'k', 'the name typed is kept');

  await input('Name').fill('a');
  await input('Command').fill(COMMAND);
  await dialog.getByRole('button', { name: 'Save' }).click();
  await errorFor('name').waitFor();
  check(!(await errorFor('command').count()), 'the old error is gone');
  const clash = await errorFor('name').textContent();
  check(clash.includes('a'), `the clash's sentence: ${clash}`);
  check((await input('Command').inputValue()) === COMMAND, 'the command typed is kept');

  await dialog.getByLabel('Remote (a URL)').check();
  await input('Name').fill('k');
  await input('URL').fill('not a url');
  await dialog.getByRole('button', { name: 'Save' }).click();
  await errorFor('url').waitFor();
  const urlError = await errorFor('url').textContent();
  check(urlError.length > 5, `the URL's sentence: ${urlError}`);
  check((await input('URL').getAttribute('aria-invalid')) === 'true', 'the URL is marked invalid');
  console.log(`SAID ${JSON.stringify({ command: commandError, name: clash, url: urlError })}`);
  await step('errors');

  // Add: a local server with a secret env value; Test shows its tools.
  await dialog.getByLabel('Local (a command)').check();
  check((await input('Command').inputValue()) === COMMAND, 'the local half kept its command');
  await input('Arguments').fill('--extra-tools\n1');
  check((await input('Sandbox').inputValue()) === 'standard', 'a new server is sandboxed (standard)');
  // This one is a wrapper script that runs a program from elsewhere (the
  // fault server in the build folder), which its sandbox would not let it.
  await input('Sandbox').selectOption('off');
  await dialog.getByRole('button', { name: 'Add variable' }).click();
  await input('env name').fill('API_KEY');
  await input('Keep the env value secret (in the keyring)').check();
  await input('env value').fill(SECRET);
  check((await input('env value').getAttribute('type')) === 'password', 'a secret value is typed masked');
  const testButton = dialog.getByRole('button', { name: 'Test' });
  await testButton.click();
  await dialog.locator('[data-role="testing"]').waitFor();
  check(await testButton.isDisabled(), 'Test is busy while it runs');
  const tools = dialog.locator('[data-role="test-result"] .test-tools');
  await dialog.locator('[data-role="test-ok"]').waitFor();
  const add = tools.locator('li[data-tool="add"]');
  check((await add.textContent()).includes('Returns the sum of a and b'), `add with its description: ${await add.textContent()}`);
  check(await tools.locator('li[data-tool="extra_0"]').count() === 1, 'the args reached the test');
  check(!(await page.locator('article.card[data-server="k"]').count()), 'the test adds nothing');
  if (SCREENSHOT) await page.screenshot({ path: SCREENSHOT });
  await dialog.getByRole('button', { name: 'Save' }).click();
  await dialog.waitFor({ state: 'hidden' });
  const status = page.locator('#servers-status');
  await status.waitFor();
  check((await status.textContent()).startsWith('Added k.'), `the status line: ${await status.textContent()}`);
  const card = page.locator('article.card[data-server="k"]');
  await card.and(page.locator('[data-status="connected"]')).waitFor();
  check(!(await secretShown()), 'the secret is not on the page after the save');
  await step('added');

  // Edit: the secret shows as set; the args change; the card follows.
  await card.getByRole('button', { name: 'Edit k' }).click();
  await dialog.locator('form.server-form').waitFor();
  check((await dialog.locator('#server-form-title').textContent()) === 'Edit k', 'the edit form says whose');
  check((await input('Arguments').inputValue()) === '--extra-tools\n1', `the args: ${await input('Arguments').inputValue()}`);
  const ref = dialog.locator('li.kv-row', { has: page.locator('.secret-status') });
  check((await ref.locator('.secret-status').textContent()) === 'Secret: set', 'the secret shows as set');
  check((await ref.locator('.row-key').inputValue()) === 'API_KEY', 'its key');
  check(!(await secretShown()), 'the secret is not in the edit form');
  await input('Arguments').fill('--extra-tools\n2');
  await dialog.getByRole('button', { name: 'Save changes' }).click();
  await dialog.waitFor({ state: 'hidden' });
  await page.locator('#servers-status', { hasText: 'Saved k.' }).waitFor();
  await card.locator('li[data-tool="extra_1"]').waitFor({ state: 'attached' });
  await card.and(page.locator('[data-status="connected"]')).waitFor();
  await step('edited');

  // Someone changes k while its form is open: the save is refused with
  // the sentence and a Reload, which brings the new entry.
  await card.getByRole('button', { name: 'Edit k' }).click();
  await dialog.locator('form.server-form').waitFor();
  await step('editing');
  await input('Arguments').fill('--extra-tools\n4');
  await dialog.getByRole('button', { name: 'Save changes' }).click();
  const conflict = dialog.locator('[data-role="form-error"]');
  await conflict.waitFor();
  check((await conflict.textContent()).length > 20, `the conflict's sentence: ${await conflict.textContent()}`);
  check((await input('Arguments').inputValue()) === '--extra-tools\n4', 'what was typed stays');
  await conflict.getByRole('button', { name: 'Reload the entry' }).click();
  await page.waitForFunction(() => document.querySelector('#server-dialog [data-field="args"]').value === '--extra-tools\n3');
  await dialog.getByRole('button', { name: 'Save changes' }).click();
  await dialog.waitFor({ state: 'hidden' });
  await page.locator('#servers-status', { hasText: 'Saved k.' }).waitFor();

  // Duplicate: the form pre-filled as k-copy, the secret still a reference.
  await card.getByRole('button', { name: 'Duplicate k' }).click();
  await dialog.locator('form.server-form').waitFor();
  check((await input('Name').inputValue()) === 'k-copy', 'the copy is named k-copy');
  check((await input('Arguments').inputValue()) === '--extra-tools\n3', 'the copy has the args');
  check(await dialog.locator('.secret-status').count() === 1, 'the copy keeps the reference');
  await dialog.getByRole('button', { name: 'Cancel' }).click();
  await dialog.waitFor({ state: 'hidden' });
  check(!(await page.locator('article.card[data-server="k-copy"]').count()), 'a cancelled copy adds nothing');

  // Remove: a dialog naming the server and its keyring entry.
  await card.getByRole('button', { name: 'Remove k' }).click();
  const confirm = page.locator('#remove-dialog');
  await confirm.getByRole('heading', { name: 'Remove k?' }).waitFor();
  const also = confirm.getByLabel(/Also remove its keyring entries: /);
  check((await also.count()) === 1, 'the keyring entries are offered');
  await also.check();
  await confirm.getByRole('button', { name: 'Remove k' }).click();
  await confirm.waitFor({ state: 'hidden' });
  await card.waitFor({ state: 'detached' });
  await page.locator('#servers-status', { hasText: 'Removed k.' }).waitFor();
  check(await page.locator('article.card[data-server="a"]').count() === 1, 'a stays');
  check(!(await secretShown()), 'the secret is not on the page');
  await step('removed');

  // A real server from npm (the official server-everything), with a
  // secret env value: tested, saved, connected.
  await page.getByRole('button', { name: 'Add server' }).click();
  await dialog.locator('form.server-form').waitFor();
  await input('Name').fill('everything');
  await dialog.getByLabel('Local (a command)').check();
  await input('Command').fill('node');
  await input('Arguments').fill(`${EVERYTHING}\nstdio`);
  await dialog.getByRole('button', { name: 'Add variable' }).click();
  await input('env name').fill('EVERYTHING_TOKEN');
  await input('Keep the env value secret (in the keyring)').check();
  await input('env value').fill(SECRET);
  await dialog.getByRole('button', { name: 'Test' }).click();
  await dialog.locator('[data-role="test-ok"]').waitFor({ timeout: 40_000 });
  check(await tools.locator('li[data-tool="echo"]').count() === 1, 'server-everything offers echo');
  await dialog.getByRole('button', { name: 'Save' }).click();
  await dialog.waitFor({ state: 'hidden' });
  await page.locator('article.card[data-server="everything"][data-status="connected"]').waitFor({ timeout: 40_000 });
  check(!(await secretShown()), 'the secret is not on the page');
  await step('everything');

  check(problems.length === 0, `no console errors: ${problems.join('; ')}`);
  console.log('OK');
  // A refused save is an HTTP 400 the page shows; the browser logs it too.
}, { keep: (text) => !/status of 4(00|09)/.test(text) });
