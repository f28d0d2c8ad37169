// Drives the dashboard's tool search and token costs in a real headless
// Chromium (run by tests/tests/dashboard_search.rs): the listing summary and
// a card's token estimate as the API gives them; results as you type (few
// requests while typing, a paraphrase finds the tool, a disabled tool shows
// off, nothing found says so, an older answer never replaces a newer one);
// the switch in a result turns a tool on; a config changed to the search
// listing shows in the summary at the next refresh.
//
// Env: LINK (a one-time link from `mcpool ui --no-open`), PLAYWRIGHT_CORE,
// USER_DATA_DIR, SCREENSHOT. Prints `STEP <name>` lines and `OK` at the end;
// after `STEP switched` waits for the line `search-mode` on stdin (the test
// switched the config to toolListing search; the reload's `config` event
// refreshes the dashboard). Any failure exits non-zero.

import { check, waitForTest, withBrowser } from './lib.mjs';

const { LINK, SCREENSHOT } = process.env;
const number = (n) => new Intl.NumberFormat('en-US').format(n);
const approx = (n) => `≈ ${number(n)} token${n === 1 ? '' : 's'}`;
const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms));

await withBrowser({}, async (page, problems) => {
  // Every search the page asks, by query; the one for `echo` is held back.
  const asked = [];
  await page.route('**/api/tools/search?**', async (route) => {
    const q = new URL(route.request().url()).searchParams.get('q');
    asked.push(q);
    if (q === 'echo') await sleep(1200);
    try {
      await route.continue();
    } catch {
      // The page aborted it meanwhile.
    }
  });
  await page.goto(LINK);
  const api = (path) => page.evaluate((p) => fetch(p).then((r) => r.json()), path);
  // Until the results shown are the answer to `q` (not an earlier query's).
  const answered = (q) => page.waitForFunction((want) => window.mcpool.state.search.query === want, q);

  const card = page.locator('article.card[data-server="a"]');
  await card.and(page.locator('[data-status="connected"]')).waitFor();

  // The listing summary says what /mcp sends, as /api/tools/listing does.
  const listing = await api('/api/tools/listing');
  const root = listing.endpoints.find((e) => e.path === '/mcp');
  check(root && root.mode === 'auto' && root.sent === 'all' && root.sent_tokens > 0, `the API's listing: ${JSON.stringify(listing)}`);
  const line = page.locator('#listing .listing[data-endpoint="/mcp"]');
  await line.waitFor();
  check((await line.getAttribute('data-mode')) === 'auto', 'the summary has the mode');
  const said = await line.textContent();
  const expected = `/mcp: toolListing auto (budget ${approx(root.budget)}): sends all ${number(root.sent_tools)} tools, ${approx(root.sent_tokens)}`;
  check(said === expected, `the summary: '${said}', not '${expected}'`);

  // The card's estimate is the server's tool_tokens.
  const servers = await api('/api/servers');
  const a = servers.find((s) => s.name === 'a');
  check(a.tool_tokens > 0, `a costs tokens: ${a.tool_tokens}`);
  const cardTokens = card.locator('[data-role="tool-tokens"]');
  check((await cardTokens.textContent()) === approx(a.tool_tokens), `the card's estimate: ${await cardTokens.textContent()}`);
  console.log('STEP listed');

  // Results as you type: a paraphrase finds add, with its server and state.
  const box = page.getByLabel("Search every server's tools by what they do");
  const results = page.locator('#tool-results');
  const typed = 'sum of two numbers';
  await box.pressSequentially(typed, { delay: 25 });
  await answered(typed);
  const add = results.locator('li.result[data-tool="a__add"]');
  await add.waitFor();
  check(asked.length >= 1 && asked.length <= 4, `${typed.length} keystrokes ask a few searches, not one each: ${JSON.stringify(asked)}`);
  check(asked.at(-1) === typed, `the last search is the whole query: ${JSON.stringify(asked)}`);
  check((await results.locator('li.result').first().getAttribute('data-tool')) === 'a__add', 'add comes first');
  check((await add.getAttribute('data-server')) === 'a', 'its server');
  check((await add.locator('.result-server').textContent()) === 'on a', 'its server shown');
  check((await add.locator('.badge').textContent()) === 'Connected', 'its server status shown');
  check((await add.locator('.tool-state').textContent()) === 'live', 'its state shown');
  check((await add.locator('.description').textContent()) === 'Returns the sum of a and b', 'its description');
  const found = (await api(`/api/tools/search?q=${encodeURIComponent(typed)}`)).tools.find((t) => t.name === 'a__add');
  check((await add.locator('.result-tokens').textContent()) === approx(found.tokens), 'its estimated tokens');
  check((await add.getByRole('switch').getAttribute('aria-checked')) === 'true', 'add is on');
  check((await page.locator('#tool-search-status').textContent()).endsWith('found'), 'the status line counts them');
  // mcpool's own tools are found too, with no switch (no server has them).
  await box.fill('status of every mcp server');
  await answered('status of every mcp server');
  const own = results.locator('li.result[data-tool="mcpool__status"]');
  await own.waitFor();
  check(!(await own.getByRole('switch').count()), 'mcpool__status has no switch');
  check((await own.locator('[data-role="builtin"]').textContent()) === 'built into mcpool', 'it says whose it is');
  console.log('STEP found');

  // A disabled tool is found too, marked off.
  await box.fill('sleep some milliseconds');
  await answered('sleep some milliseconds');
  const slow = results.locator('li.result[data-tool="a__slow"]');
  await slow.waitFor();
  check((await results.locator('li.result').first().getAttribute('data-tool')) === 'a__slow', 'slow comes first');
  check((await slow.getAttribute('data-enabled')) === 'false', 'slow is marked disabled');
  const slowSwitch = slow.getByRole('switch', { name: 'slow of a: off' });
  check((await slowSwitch.getAttribute('aria-checked')) === 'false', 'its switch is off');
  check((await slowSwitch.textContent()) === 'Off', 'its switch says Off');
  console.log('STEP disabled');

  // Nothing matches: said so, no items.
  await box.fill('qxzv wqpj');
  await page.locator('#tool-search-status', { hasText: 'No tool matches “qxzv wqpj”.' }).waitFor();
  check((await results.locator('li').count()) === 0, 'no items when nothing matches');
  console.log('STEP none');

  // A slow answer to an older query never replaces the newer one's.
  await box.fill('echo');
  await sleep(400);
  check(asked.includes('echo'), `the echo search was asked: ${JSON.stringify(asked)}`);
  await box.fill('sleep some milliseconds');
  await answered('sleep some milliseconds');
  await slow.waitFor();
  await sleep(1500);
  check((await page.evaluate(() => window.mcpool.state.search.query)) === 'sleep some milliseconds', 'the newer query stays');
  check(!(await results.locator('li.result[data-tool="a__echo"]').count()), 'the older answer (echo) was dropped');
  check(await slow.count(), 'the newer answer stays');
  console.log('STEP stale');

  // The switch in the result turns slow on: the result, the card and the
  // card's estimate follow, and the keyboard's place stays on the switch.
  await slow.getByRole('switch').click();
  await results.locator('li.result[data-tool="a__slow"][data-enabled="true"] [role="switch"][aria-checked="true"]').waitFor();
  await card.locator('li[data-tool="slow"][data-enabled="true"]').waitFor({ state: 'attached' });
  const after = (await api('/api/servers')).find((s) => s.name === 'a');
  check(after.tool_tokens > a.tool_tokens, `slow adds its tokens: ${a.tool_tokens} -> ${after.tool_tokens}`);
  await page.waitForFunction((text) => document.querySelector('article.card[data-server="a"] [data-role="tool-tokens"]').textContent === text,
    approx(after.tool_tokens));
  check((await page.evaluate(() => document.activeElement.dataset.key)) === 'result:a:slow', 'the focus stays on the switch');
  check(!(await page.locator('.action-error').count()), 'no action error');
  console.log('STEP switched');

  // The config now lists search: the summary follows at the next refresh,
  // without a reload of the page.
  await waitForTest('search-mode');
  const searchLine = page.locator('#listing .listing[data-endpoint="/mcp"][data-mode="search"][data-sent="search"]');
  await searchLine.waitFor();
  const now = (await api('/api/tools/listing')).endpoints.find((e) => e.path === '/mcp');
  const saidNow = await searchLine.textContent();
  const expectedNow = `/mcp: toolListing search: sends search: ${number(now.sent_tools)} tools, ${approx(now.sent_tokens)} `
    + `(full listing: ${number(now.full_tools)} tools, ${approx(now.full_tokens)})`;
  check(saidNow === expectedNow, `the summary: '${saidNow}', not '${expectedNow}'`);
  check(now.sent_tokens < now.full_tokens, 'search sends less than the full listing');
  if (SCREENSHOT) {
    await box.fill(typed);
    await answered(typed);
    await page.screenshot({ path: SCREENSHOT, fullPage: true });
  }
  console.log('STEP search-mode');

  check(problems.length === 0, `no console errors: ${problems.join('; ')}`);
  console.log('OK');
  // The stale search the page aborts on purpose is no problem.
}, { keep: (text) => !text.includes('net::ERR_ABORTED') });
