// Drives sandboxed servers' cards in a real headless Chromium (run by
// tests/tests/sandbox.rs): a refusal named in one sentence with its
// "Allow read", the click that writes the grant and restarts the server
// (connected, the refusal gone), a Unix socket refused and its "Allow
// socket" (the grant written, the server connected), and a server that
// stopped right after it
// started without a word: the sentence that says its sandbox may be why,
// with no button (nothing can say what to grant).
//
// Env: LINK (a one-time link from `mcpool ui --no-open`), PLAYWRIGHT_CORE,
// USER_DATA_DIR, NEEDED (the file the probe server is refused), SOCKET (the
// Unix socket the socketed one is kept from), SCREENSHOT.
// Prints `STEP <name>` lines and `OK` at the end; any failure exits non-zero.

import { check, withBrowser } from './lib.mjs';

const { LINK, NEEDED, SOCKET, SCREENSHOT } = process.env;
const SLOW = { timeout: 60_000 };

await withBrowser({}, async (page, problems) => {
  await page.goto(LINK);

  // The refusal, in the runtime's words turned into one sentence.
  const card = page.locator('article.card[data-server="probe"]');
  const denied = card.locator('[data-role="sandbox-denied"]');
  await denied.waitFor(SLOW);
  const sentence = await denied.locator('[role="status"]').textContent();
  check(sentence.includes(`Its sandbox refused to let it read ${NEEDED}.`), `the sentence: ${sentence}`);
  const allow = denied.locator('button[data-action="allow"]');
  check((await allow.textContent()) === 'Allow read', 'the button says what it grants');
  const label = await allow.getAttribute('aria-label');
  check(label === `Allow read of ${NEEDED} for probe`, `its label: ${label}`);
  if (SCREENSHOT) await page.screenshot({ path: SCREENSHOT, fullPage: true });
  console.log('STEP named');

  // Allow: the grant is written and the server restarts and connects.
  await allow.click();
  await card.and(page.locator('[data-status="connected"]')).waitFor(SLOW);
  await denied.waitFor({ state: 'detached' });
  const line = await card.locator('[data-role="sandbox"]').textContent();
  check(line.startsWith('Sandbox: standard · enforced'), `the sandbox line: ${line}`);
  check((await card.locator('[data-role="sandbox"]').getAttribute('title')).includes(`read: ${NEEDED}`), 'the grant is in its title');
  check(!(await card.locator('.action-error').count()), 'no action error');
  console.log('STEP allowed');

  // A socket no grant names: its own sentence and "Allow socket".
  const socketed = page.locator('article.card[data-server="socketed"]');
  const kept = socketed.locator('[data-role="sandbox-denied"]');
  await kept.waitFor(SLOW);
  const keptSays = await kept.locator('[role="status"]').textContent();
  check(keptSays.includes(`Its sandbox keeps it from the Unix socket ${SOCKET}.`), `the socket's sentence: ${keptSays}`);
  const allowSocket = kept.locator('button[data-action="allow"]');
  check((await allowSocket.textContent()) === 'Allow socket', 'the socket button says what it grants');
  await allowSocket.click();
  await socketed.and(page.locator('[data-status="connected"]')).waitFor(SLOW);
  await kept.waitFor({ state: 'detached' });
  const grants = await socketed.locator('[data-role="sandbox"]').getAttribute('title');
  check(grants.includes(`socket: ${SOCKET}`), `the socket grant is in its title: ${grants}`);
  check(!(await socketed.locator('.action-error').count()), 'no action error on the socketed card');
  console.log('STEP socket');

  // A server that stopped without naming anything: said, nothing offered.
  const quiet = page.locator('article.card[data-server="quiet"] [data-role="sandbox-denied"]');
  await quiet.waitFor(SLOW);
  const said = await quiet.locator('[role="status"]').textContent();
  check(said.startsWith('It stopped right after it started (the process exited with status 3)'), `the quiet one: ${said}`);
  check(!(await quiet.locator('button').count()), 'nothing to grant: no button');
  console.log('STEP quiet');

  check(problems.length === 0, `no console errors: ${problems.join('; ')}`);
  console.log('OK');
});
