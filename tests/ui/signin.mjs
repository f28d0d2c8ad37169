// The dashboard's "Sign in" in a real headless Chromium (run by
// tests/tests/dashboard_signin.rs): the card of a server that needs sign-in
// has the button; clicking it opens the server's authorization page in a
// new tab, which (an authorization server that approves at once) sends the
// browser back to mcpool's loopback redirect; the card turns connected, and
// "Sign out" brings it back to needs sign-in.
//
// Env: LINK (a one-time link from `mcpool ui --no-open`), PLAYWRIGHT_CORE,
// USER_DATA_DIR, SERVER (the server's name). Prints `STEP <name>` lines and
// `OK` at the end; any failure exits non-zero.

import { check, withBrowser } from './lib.mjs';

const { LINK, SERVER } = process.env;

function step(name) {
  console.log(`STEP ${name}`);
}

await withBrowser({ viewport: { width: 1280, height: 720 } }, async (page, problems, context) => {
  await page.goto(LINK);
  const card = page.locator(`article.card[data-server="${SERVER}"]`);
  await card.and(page.locator('[data-status="needs_auth"]')).waitFor();
  check(await card.locator('button[data-action="reconnect"]').count() === 0, 'no Reconnect while sign-in is needed');
  step('needs-sign-in');

  const [tab] = await Promise.all([
    context.waitForEvent('page'),
    card.locator('button[data-action="login"]').click(),
  ]);
  // The new tab goes to the authorization server, which redirects back to
  // mcpool's loopback listener; that page says it is done.
  await tab.waitForURL(/^http:\/\/127\.0\.0\.1:\d+\/callback/, { timeout: 20_000 });
  await tab.waitForLoadState('domcontentloaded');
  const said = (await tab.textContent('body')) || '';
  check(/got the sign-in/i.test(said), `the redirect page says so: ${said.slice(0, 200)}`);
  step('redirected');

  await card.and(page.locator('[data-status="connected"]')).waitFor();
  check(await card.locator('button[data-action="logout"]').count() === 1, 'a signed-in server offers Sign out');
  step('connected');

  await card.locator('button[data-action="logout"]').click();
  await card.and(page.locator('[data-status="needs_auth"]')).waitFor();
  step('signed-out');

  check(problems.length === 0, `no page errors: ${problems.join('; ')}`);
  console.log('OK');
}, { keep: () => false, defaultTimeout: 20_000 });
