#!/usr/bin/env node
// A stand-in for the user's browser during sign-in: `mcpool login` runs it as
// BROWSER with the authorization URL as its one argument. It does what a
// user clicking "Allow" makes a browser do: GET the authorization URL and
// follow the redirects until the loopback redirect to mcpool's listener has
// been answered. Exits 0 when the last page answered 2xx, 1 otherwise.
//
// Only origins and paths are printed: the query holds the code and state.

const MAX_HOPS = 10;

function where(url) {
  const u = new URL(url);
  return `${u.origin}${u.pathname}`;
}

async function main() {
  let url = process.argv[2];
  if (!url) {
    console.error('browser.mjs: no URL given');
    return 1;
  }
  for (let hop = 0; hop < MAX_HOPS; hop++) {
    const res = await fetch(url, { redirect: 'manual', signal: AbortSignal.timeout(15_000) });
    const location = res.headers.get('location');
    console.error(`browser.mjs: GET ${where(url)} -> ${res.status}`);
    await res.arrayBuffer().catch(() => {});
    if (res.status >= 300 && res.status < 400 && location) {
      url = new URL(location, url).toString();
      continue;
    }
    return res.status >= 200 && res.status < 300 ? 0 : 1;
  }
  console.error(`browser.mjs: more than ${MAX_HOPS} redirects`);
  return 1;
}

main().then(
  (code) => process.exit(code),
  (e) => {
    console.error(`browser.mjs: ${e.message}`);
    process.exit(1);
  },
);
