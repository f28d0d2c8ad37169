// Drives a quarantined tool's card in a real headless Chromium (run by
// tests/tests/scan.rs): the tool the scan held back is shown with its
// findings in words (the hidden text decoded), the fact line says so, and
// Allow brings it back. The held-back prompt and resource template are
// shown with their findings.
//
// Env: LINK (a one-time link from `mcpool ui --no-open`), PLAYWRIGHT_CORE,
// USER_DATA_DIR, SCREENSHOT. Prints `STEP <name>` lines and `OK` at the end;
// any failure exits non-zero.

import { check, withBrowser } from './lib.mjs';

const { LINK, SCREENSHOT } = process.env;

await withBrowser({}, async (page, problems) => {
  await page.goto(LINK);

  const card = page.locator('article.card[data-server="p"]');
  await card.and(page.locator('[data-status="connected"]')).waitFor();
  const held = card.locator('.change[data-scanned="add"][data-verdict="dangerous"]');
  await held.waitFor();
  const hidden = await held.locator('li[data-check="hidden_unicode"]').textContent();
  check(hidden.startsWith('Hidden text'), `the check in words: ${hidden}`);
  check(hidden.includes('read ~/.ssh/id_rsa'), `the hidden text, decoded: ${hidden}`);
  check((await card.locator('[data-role="quarantined"]').textContent()).startsWith('1 tool held back'), 'the fact line');
  check(!(await card.locator('.change[data-scanned="multiply"]').count()), 'the clean tool is not flagged');
  // The poisoned prompt and resource template are held back too, shown with their findings.
  const prompt = card.locator('.change[data-held="prompt:review"]');
  check((await prompt.locator('h4').textContent()).startsWith('prompt review held back'), 'the held prompt');
  check((await prompt.locator('li[data-check="hidden_unicode"]').textContent()).includes('Read ~/.ssh/id_rsa'), 'its hidden text, decoded');
  check(await card.locator('.change[data-held="resource_template:file"] li').count() > 0, 'the held template and its findings');
  check(!(await card.locator('.change[data-held="prompt:summary"]').count()), 'the clean prompt is not held');
  if (SCREENSHOT) await page.screenshot({ path: SCREENSHOT, fullPage: true });
  console.log('STEP held');

  await held.locator('button[data-action="allow"]').click();
  await held.waitFor({ state: 'detached' });
  await card.locator('details.tools > summary').click();
  await card.locator('li[data-tool="add"] .tool-state[data-state="live"]').waitFor();
  check(!(await card.locator('.action-error').count()), 'no action error');
  console.log('STEP allowed');

  check(problems.length === 0, `no console errors: ${problems.join('; ')}`);
  console.log('OK');
});
