// Drives the dashboard in a real headless Chromium (run by tests/tests/dashboard.rs).
//
// Env: LINK (a one-time link from `mcpool ui --no-open`), TOKEN (to check it
// never shows in the page), SCREENSHOT (where to save a PNG), PLAYWRIGHT_CORE
// (the module to import), USER_DATA_DIR (a fresh profile dir).
// Talks to the Rust test over stdio: prints `STEP <name>` lines and, where
// the test must act (crash the server through an agent), waits for one
// line on stdin. Prints `OK` at the end; any failure exits non-zero.

import { check, waitForTest, withBrowser } from './lib.mjs';

const { LINK, TOKEN, SCREENSHOT } = process.env;
const origin = new URL(LINK).origin;

function step(name) {
  console.log(`STEP ${name}`);
}

await withBrowser({ viewport: { width: 1100, height: 520 } }, async (page, problems, context) => {
  await context.grantPermissions(['clipboard-read', 'clipboard-write'], { origin });

  // The one-time link signs in and lands on /ui.
  const landed = await page.goto(LINK);
  check(landed.status() === 200, `the link lands on the dashboard (HTTP ${landed.status()})`);
  check(new URL(page.url()).pathname === '/ui', `redirected to /ui, at ${page.url()}`);
  const cookies = await context.cookies(origin);
  const session = cookies.find((c) => c.name.startsWith('mcpool_session'));
  check(session && session.httpOnly && session.sameSite === 'Strict', `an HttpOnly SameSite=Strict cookie: ${JSON.stringify(cookies)}`);
  check(!(await page.content()).includes(TOKEN), 'the page source never holds the token');

  const card = page.locator('article.card[data-server="f"]');
  await card.and(page.locator('[data-status="connected"]')).waitFor();
  check((await card.locator('.badge').textContent()) === 'Connected', 'status text');
  check(await card.locator('.tool-state[data-state="live"]').count() > 0, 'live tools listed');
  const meta = await card.locator('p.meta').first().textContent();
  check(meta.startsWith('stdio · MCP 2025-11-25 · '), `the negotiated protocol next to the transport: ${meta}`);
  const extensions = card.locator('[data-role="extensions"]');
  check((await extensions.textContent()) === 'tasks, MCP Apps', `the extensions it offers: ${await extensions.textContent()}`);
  check((await extensions.getAttribute('title')).includes('io.modelcontextprotocol/ui'), 'their ids on hover');
  check((await page.locator('#endpoint-url').textContent()) === `${origin}/mcp`, 'the endpoint URL');
  await page.evaluate(() => { window.__sameDocument = true; });
  step('connected');

  // The test crashes the server through an agent; the card follows without a reload.
  await waitForTest('crashed');
  await card.and(page.locator('[data-status="failed"]')).waitFor();
  check(await page.evaluate(() => window.__sameDocument === true), 'no reload');
  check((await card.locator('.badge').textContent()) === 'Failed', 'failed status text');
  const stderr = await card.locator('details.error pre.stderr').textContent();
  check(stderr.includes('disk on fire'), `the stderr tail: ${stderr}`);
  // The summary is the cause in one line: the excerpt's telling line, not its heading.
  const cause = await card.locator('details.error > summary[data-role="cause"]').textContent();
  check(cause.includes(': disk on fire') && !cause.includes('lines):'), `the cause: ${cause}`);
  check((await card.textContent()).includes('tools kept'), 'tools kept shown');
  check(await card.locator('.tool-state[data-state="kept"]').count() > 0, 'kept tools listed');
  // Keyboard: open the error and the tools with Enter, as a user would.
  await card.locator('details.error > summary').focus();
  await page.keyboard.press('Enter');
  check(await card.locator('details.error').evaluate((d) => d.open), 'the error opens from the keyboard');
  await page.evaluate(() => document.activeElement.blur());
  await page.screenshot({ path: SCREENSHOT, type: 'png' });
  await card.locator('details.tools > summary').focus();
  await page.keyboard.press('Enter');
  check(await card.locator('details.tools').evaluate((d) => d.open), 'the tools open from the keyboard');
  step('failed');

  // The copy-token button copies the token from /api/token.
  await page.locator('#copy-token').click();
  await page.locator('#copy-token', { hasText: 'Copied' }).waitFor();
  const copied = await page.evaluate(() => navigator.clipboard.readText());
  check(copied === TOKEN, 'the copied token');

  // Reconnect, from the keyboard: Tab order reaches the button, Enter presses it.
  const reconnect = card.locator('button[data-action="reconnect"]');
  await reconnect.focus();
  await page.keyboard.press('Enter');
  await card.and(page.locator('[data-status="connected"]')).waitFor();
  check(await card.locator('.tool-state[data-state="live"]').count() > 0, 'live again');
  check(await card.locator('details.error').count() === 0, 'the error is gone');
  check(await page.evaluate(() => window.__sameDocument === true), 'still no reload');
  step('reconnected');

  // Disconnect, then Enable.
  await card.locator('button[data-action="disconnect"]').click();
  await card.and(page.locator('[data-status="disabled"]')).waitFor();
  await card.locator('button[data-action="enable"]').click();
  await card.and(page.locator('[data-status="connected"]')).waitFor();
  step('enabled');

  // `#server=NAME` (how a tray notification opens the dashboard): that card
  // is marked, scrolled to and focused, and the page title names it; on a
  // fresh load and on a hash change alike.
  await page.goto('about:blank');
  await page.goto(`${origin}/ui#server=f`);
  await page.locator('article.card.targeted[data-server="f"]').waitFor();
  await page.waitForFunction(() => document.activeElement && document.activeElement.dataset.server === 'f');
  check((await page.title()) === 'mcpool — f', `the title names the server: ${await page.title()}`);
  check(await card.getAttribute('aria-current') === 'true', 'the card is marked current for screen readers');
  await page.evaluate(() => { window.location.hash = ''; });
  await page.waitForFunction(() => document.title === 'mcpool');
  check(await page.locator('article.card.targeted').count() === 0, 'no card marked without a target');
  step('targeted');

  // A config file that stops parsing shows at the top, live, naming the
  // file and the position; the servers keep running.
  check(await page.locator('#config').isHidden(), 'no config panel while the file is fine');
  await waitForTest('config-broken');
  const panel = page.locator('#config', { hasText: 'invalid JSON at line 1' });
  await panel.waitFor();
  check((await panel.textContent()).includes('config.json'), 'the panel names the file');
  check((await panel.textContent()).includes('keeps running the servers'), 'the panel says the servers stay');
  await card.and(page.locator('[data-status="connected"]')).waitFor();
  step('config');

  // The same link again, without the cookie: refused, and told what to do.
  await context.clearCookies();
  const again = await page.goto(LINK);
  check(again.status() === 401, `a used link is refused (HTTP ${again.status()})`);
  check((await page.textContent('body')).includes('mcpool ui'), 'the sign-in page says to run mcpool ui');
  const bare = await page.goto(`${origin}/ui`);
  check(bare.status() === 401, `no cookie, no dashboard (HTTP ${bare.status()})`);
  step('refused');

  const csp = problems.filter((p) => /Content Security Policy|Refused to/i.test(p));
  check(csp.length === 0, `no CSP violations: ${csp.join('; ')}`);
  const errors = problems.filter((p) => !/401|Unauthorized/.test(p));
  check(errors.length === 0, `no page errors: ${errors.join('; ')}`);
  console.log('OK');
});
