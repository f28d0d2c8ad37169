// Drives the dashboard's tool controls in a real headless Chromium (run by
// tests/tests/dashboard_tools.rs): the changed tool's approved and current
// text side by side, a broken tool's warning, a tool's switch turned off,
// and Approve.
//
// Env: LINK (a one-time link from `mcpool ui --no-open`), PLAYWRIGHT_CORE,
// USER_DATA_DIR, SCREENSHOT. Prints `STEP <name>` lines and `OK` at the end;
// any failure exits non-zero.

import { check, withBrowser } from './lib.mjs';

const { LINK, SCREENSHOT } = process.env;

await withBrowser({}, async (page, problems) => {
  await page.goto(LINK);

  const card = page.locator('article.card[data-server="f"]');
  await card.and(page.locator('[data-status="connected"]')).waitFor();
  const change = card.locator('.change[data-changed="echo"]');
  await change.waitFor();
  const sides = change.locator('.compare .side');
  check((await sides.nth(0).locator('h4').textContent()) === 'Approved', 'the approved side comes first');
  check((await sides.nth(0).locator('.description').textContent()) === 'Returns the text', 'the approved text');
  const now = await sides.nth(1).locator('.description').textContent();
  check(now.includes('audit log'), `the current text: ${now}`);
  check((await sides.nth(1).locator('.schema-same').textContent()) === 'Input schema unchanged', 'an unchanged schema says so');
  check((await card.locator('[data-role="changed"]').textContent()).startsWith('1 tool changed'), 'the fact line');
  if (SCREENSHOT) await page.screenshot({ path: SCREENSHOT, fullPage: true });
  console.log('STEP changed');

  // A tool listed broken: left out, named with its field.
  const warnings = card.locator('details[data-role="tool-warnings"]');
  check((await warnings.locator('summary').textContent()) === '1 tool left out, broken as the server lists it', 'the warning line');
  await warnings.locator('summary').click();
  const warned = await warnings.locator('li[data-tool="arr"][data-left-out="true"]').textContent();
  check(warned.includes('inputSchema.type') && warned.includes('the tool was left out'), `the warning: ${warned}`);
  check(!(await card.locator('li[data-tool="arr"] button[role="switch"]').count()), 'arr is not among the tools');
  console.log('STEP warned');

  // A tool's switch: off, and it stays off after the re-render.
  await card.locator('details.tools > summary').click();
  const addSwitch = card.locator('li[data-tool="add"] button[role="switch"]');
  check((await addSwitch.getAttribute('aria-checked')) === 'true', 'add starts on');
  await addSwitch.click();
  await card.locator('li[data-tool="add"] button[role="switch"][aria-checked="false"]').waitFor();
  check((await card.locator('li[data-tool="add"]').getAttribute('data-enabled')) === 'false', 'add is off');
  console.log('STEP switched');

  // Approve: the comparison goes and the tool is live again.
  await change.locator('button[data-action="approve"]').click();
  await change.waitFor({ state: 'detached' });
  await card.locator('li[data-tool="echo"] .tool-state[data-state="live"]').waitFor();
  check(!(await card.locator('.action-error').count()), 'no action error');
  console.log('STEP approved');

  check(problems.length === 0, `no console errors: ${problems.join('; ')}`);
  console.log('OK');
});
